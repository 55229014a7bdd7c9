"""MultiRC (``aps/super_glue``, config ``multirc``): one upstream row per answer option.

Upstream fields: ``paragraph`` (with ``<b>Sent N: </b>...<br>`` markup), ``question``, ``answer``,
``idx`` {``paragraph``, ``question``, ``answer``}, ``label`` (0/1). The original SuperGLUE release
(``MultiRC/train.jsonl``: one line per passage, ``passage.text`` and ``passage.questions[].answers[]``)
is read too, flattened to the same rows.

Rules: regroup the options by (``idx.paragraph``, ``idx.question``); options whose text is empty (real
SuperGLUE copies have some, all wrong answers) are left out of the question and counted
(``repaired.empty_option_skipped``); keep a question only if exactly one remaining option is correct and
it has at least four distinct ones; with more than four, sample the correct one and three others from the
non-empty options with a generator seeded from (seed, source, split, question) and shuffle them; strip the
markup and count the passage's sentences from it; drop passages of more than ``max_passage_sentences``
sentences.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from xlt.data.anomalies import MAX_PASSAGE_CHARS
from xlt.data.schema import TRAIN_OPTIONS
from xlt.data.sources.base import BuildContext, OddRow, Row, Source, SourceStats, get, get_str
from xlt.errors import DataError

_SENT = re.compile(r"<b>\s*Sent\s+\d+\s*:\s*</b>(.*?)(?:<br\s*/?>|$)", re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


def strip_markup(paragraph: str) -> tuple[str, list[str]]:
    """The plain passage and its sentences, from MultiRC's ``<b>Sent N: </b>text<br>`` markup.

    Without markup the passage is returned with tags removed and its sentences are counted by the
    regex splitter by the caller (the sentence list is then empty).
    """
    sentences = [_TAG.sub("", s).strip() for s in _SENT.findall(paragraph)]
    sentences = [s for s in sentences if s]
    if sentences:
        return " ".join(sentences), sentences
    return _TAG.sub(" ", paragraph).strip(), []


def flatten_superglue(row: Row) -> Iterator[Row]:
    """One original SuperGLUE line (a passage with its questions) -> one row per answer option."""
    passage = get(row, "passage", dict, "a struct {text, questions}")
    pid = get(row, "idx", (int, str), "an int")
    text = passage.get("text")
    questions = passage.get("questions")
    if not isinstance(text, str) or not isinstance(questions, list):
        raise DataError(f"{row.where}: field 'passage' must hold 'text' (a string) and 'questions' (a list)")
    for qn, q in enumerate(questions):
        if not isinstance(q, dict) or not isinstance(q.get("answers"), list):
            raise DataError(f"{row.where}: field 'passage.questions[{qn}].answers' must be a list")
        for an, a in enumerate(q["answers"]):
            if not isinstance(a, dict):
                raise DataError(f"{row.where}: field 'passage.questions[{qn}].answers[{an}]' must be an object")
            yield Row(
                {"paragraph": text, "question": q.get("question"), "answer": a.get("text"),
                 "idx": {"paragraph": pid, "question": q.get("idx", qn), "answer": a.get("idx", an)},
                 "label": a.get("label")},
                f"{row.where} (questions[{qn}].answers[{an}])",
            )


@dataclass
class _Question:
    where: str  # the first option row's location
    paragraph: str
    question: str
    options: list[tuple[str, int]] = field(default_factory=list)  # (text, label) in upstream order
    empty_options: int = 0  # wrong options with empty text, left out
    empty_correct: int = 0  # correct options with empty text


class MultiRC(Source):
    name = "multirc"
    dataset = "MultiRC"
    default_license = "MultiRC: research use under the MultiRC/SuperGLUE terms"

    def rows(self, split: str) -> Iterator[Row]:
        for row in super().rows(split):
            if isinstance(row.data.get("passage"), dict) and "paragraph" not in row.data:
                yield from flatten_superglue(row)
            else:
                yield row

    def convert_split(self, split: str, rows: Iterable[Row], ctx: BuildContext, stats: SourceStats) -> list[dict[str, Any]]:
        groups: dict[tuple[Any, Any], _Question] = {}
        odd: dict[tuple[Any, Any], str] = {}  # questions with an odd row (null text): dropped whole
        fixes = stats.repairs(split)
        for row in rows:
            idx = get(row, "idx", dict, "a struct {paragraph, question, answer}")
            for key in ("paragraph", "question"):
                if key not in idx:
                    raise DataError(f"{row.where}: field 'idx.{key}' is missing")
            key = (idx["paragraph"], idx["question"])
            label = get(row, "label", int)
            if label not in (0, 1):
                raise DataError(f"{row.where}: field 'label' must be 0 or 1, got {label!r}")
            try:
                paragraph = get_str(row, "paragraph")
                question = get_str(row, "question")
                answer = get_str(row, "answer")
            except OddRow as err:
                odd.setdefault(key, err.reason)
                groups.setdefault(key, _Question(row.where, "", ""))
                continue
            q = groups.get(key)
            if q is None:
                q = groups[key] = _Question(row.where, paragraph, question)
            if not answer.strip():
                fixes["empty_option_skipped"] += 1
                q.empty_options += label == 0
                q.empty_correct += label == 1
                continue
            q.options.append((answer, label))

        passages: dict[str, tuple[str, int]] = {}
        records = []
        for (pid, qid), q in groups.items():
            stats.candidates[split] += 1
            result = odd.get((pid, qid)) or self._convert(split, str(pid), str(qid), q, ctx, passages)
            self.keep(split, result, records)
        return records

    def _convert(
        self, split: str, pid: str, qid: str, q: _Question, ctx: BuildContext, passages: dict[str, tuple[str, int]]
    ) -> dict[str, Any] | str:
        if not q.question.strip():
            return "empty_question"
        if q.empty_correct:
            return "empty_option"
        n_correct = sum(label for _, label in q.options)
        if n_correct != 1:
            return "not_exactly_one_correct"
        if len(q.options) < TRAIN_OPTIONS:
            return "fewer_than_4_options"
        # Identical option texts would make two options indistinguishable: keep the first of each.
        unique: dict[str, int] = {}
        for text, label in q.options:
            if text in unique and unique[text] != label:
                return "duplicate_options"
            unique.setdefault(text, label)
        if len(unique) < TRAIN_OPTIONS:
            return "duplicate_options"
        if q.paragraph not in passages:
            passage, sentences = strip_markup(q.paragraph)
            if len(passage) > MAX_PASSAGE_CHARS:
                passages[q.paragraph] = (passage, -1)
            else:
                passages[q.paragraph] = (passage, len(sentences) if sentences else ctx.sentences(passage))
        passage, n_sent = passages[q.paragraph]
        self.stats.saw_passage(split, passage)
        if n_sent < 0:
            return "field_too_long"
        if n_sent > ctx.max_passage_sentences:
            return "passage_too_long"
        options = list(unique)
        correct = next(t for t, label in unique.items() if label == 1)
        if len(options) > TRAIN_OPTIONS:
            rng = ctx.rng(self.name, split, pid, qid)
            wrong = [t for t in options if t != correct]
            options = [correct, *rng.sample(wrong, TRAIN_OPTIONS - 1)]
            rng.shuffle(options)
        return self.record(
            split, q.where, pid, f"{pid}-{qid}", passage, q.question, options, options.index(correct), correct
        )
