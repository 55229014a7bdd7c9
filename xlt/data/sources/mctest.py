"""MCTest (``sagnikrayc/mctest``, config ``mc500``): children's stories, one row per question.

Upstream fields: ``idx``, ``story`` (with literal ``\\newline`` escapes), ``question`` (may start with
``one:`` / ``multiple:``), ``answer_options`` {A, B, C, D}, ``answer`` (a letter). Rules: strip the
``one:``/``multiple:`` prefix, splitting on the first colon only; drop passages of more than
``max_passage_sentences`` sentences, counted on the raw story (as the reference does, before
unescaping); replace ``\\newline`` by a newline; options keep their order.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from xlt.data.schema import TRAIN_LETTERS
from xlt.data.sources.base import BuildContext, Row, Source, get, get_letter, get_str, option_problem, text_id
from xlt.errors import DataError
from xlt.hub import hub_resource

log = logging.getLogger(__name__)

PREFIXES = ("one", "multiple")


def strip_prefix(question: str) -> str:
    """``"multiple: Why: really?"`` -> ``"Why: really?"`` (only a known prefix, only the first colon)."""
    head, sep, rest = question.partition(":")
    if sep and head.strip().lower() in PREFIXES:
        return rest.strip()
    return question.strip()


def unescape_story(story: str) -> str:
    return story.replace("\\newline", "\n").replace("\\tab", "\t")


class MCTest(Source):
    name = "mctest"
    dataset = "MCTest_500"
    default_license = "MCTest: Microsoft Research license, non-commercial research use"

    def load_hub_split(self, split: str) -> Iterable[dict[str, Any]]:
        try:
            return super().load_hub_split(split)
        except RuntimeError as err:
            # sagnikrayc/mctest is a loading-script repository; datasets>=4 refuses scripts but the
            # Hub's automatic Parquet export (refs/convert/parquet, one folder per config) still works.
            if "scripts are no longer supported" not in str(err):
                raise
            from datasets import load_dataset

            cfg = self.cfg
            log.info("%s is a script dataset; reading its Parquet export (refs/convert/parquet)", cfg.hub_id)
            with hub_resource("dataset", cfg.hub_id, "refs/convert/parquet", config_key=f"data.sources.{self.name}.path"):
                return load_dataset(cfg.hub_id, revision="refs/convert/parquet", data_dir=cfg.config_name, split=split)

    def convert_row(self, split: str, index: int, row: Row, ctx: BuildContext) -> dict[str, Any] | str:
        idx = get(row, "idx", (str, int, dict), "a string, int or struct")
        raw_story = get_str(row, "story")
        question = strip_prefix(get_str(row, "question"))
        answer_options = get(row, "answer_options", dict, "a struct {A, B, C, D}")
        options = []
        for letter in TRAIN_LETTERS:
            opt = answer_options.get(letter)
            if not isinstance(opt, str):
                raise DataError(f"{row.where}: field 'answer_options.{letter}' must be a string, got {opt!r:.80}")
            options.append(opt)
        label = get_letter(row, "answer")
        # Sentences are counted on the raw story, before "\\newline" is unescaped (as the reference does).
        reason = self.passage_problem(split, raw_story, ctx) or option_problem(options)
        if reason:
            return reason
        story = unescape_story(raw_story)
        question_id = ".".join(str(v) for v in idx.values()) if isinstance(idx, dict) else str(idx)
        return self.record(split, row.where, text_id(story), question_id, story, question, options, label)
