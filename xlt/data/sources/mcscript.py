"""MCScript2.0 (original XML; no Hub copy): script-knowledge questions with two answers each.

XML layout: ``<data><instance id=..><text>..</text><questions><question id=.. text=..>
<answer id=.. text=.. correct="True|False"/>`` x2 ``</question>..</questions></instance>..</data>``.
``data.sources.mcscript.path`` is ``train-data.xml``, the release zip, or a folder holding either;
``url`` downloads the release zip into the Hugging Face cache. Only the train file is used.

Rules: drop passages of more than ``max_passage_sentences`` sentences; add two distractors drawn (seeded
per question) from the answers of *other questions on the same passage*, never an option the question
already has; when the passage has too few, fill from the pool of all correct answers; shuffle the four.
"""

from __future__ import annotations

import io
import logging
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from xlt.data.sources.base import BuildContext, Row, Source, SourceStats
from xlt.errors import ConfigError, DataError
from xlt.hub import hub_resource

log = logging.getLogger(__name__)

XML_NAMES = {"train": "train-data.xml", "validation": "dev-data.xml"}
DISTRACTORS = 2


def _open_xml(path: Path, split: str) -> tuple[bytes, str]:
    """The XML bytes of ``split`` from an .xml file, a release zip or a folder; and a label for errors."""
    name = XML_NAMES[split]
    if path.is_dir():
        found = sorted(path.rglob(name)) or sorted(path.rglob("*.zip"))
        if not found:
            raise DataError(f"MCScript2.0 local copy {path}: no {name} (or release zip) found in it")
        path = found[0]
    if not path.is_file():
        raise DataError(f"MCScript2.0 local copy {path} does not exist")
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            members = sorted(m for m in z.namelist() if Path(m).name == name)
            if not members:
                raise DataError(f"{path}: the zip holds no {name}")
            return z.read(members[0]), f"{path}!{members[0]}"
    return path.read_bytes(), str(path)


def _attr(el: ET.Element, name: str, where: str) -> str:
    value = el.get(name)
    if value is None:
        raise DataError(f"{where}: missing attribute '{name}' on <{el.tag}>")
    return value


def parse_questions(data: bytes, label: str) -> Iterator[Row]:
    """One :class:`Row` per question: instance id, passage text, question id/text and its answers."""
    try:
        root = ET.parse(io.BytesIO(data)).getroot()
    except ET.ParseError as err:
        line, col = err.position
        raise DataError(f"{label}:line {line}: invalid XML ({err.msg if hasattr(err, 'msg') else err}), column {col}") from None
    for n, inst in enumerate(root.iter("instance")):
        iid = _attr(inst, "id", f"{label}: instance #{n}")
        where_inst = f"{label}: instance {iid}"
        text_el = inst.find("text")
        if text_el is None or text_el.text is None:
            raise DataError(f"{where_inst}: missing field 'text' (the passage)")
        questions = inst.find("questions")
        for q in questions if questions is not None else []:
            qid = _attr(q, "id", where_inst)
            where = f"{where_inst} question {qid}"
            answers = []
            for a in q.iter("answer"):
                correct = _attr(a, "correct", where)
                if correct not in ("True", "False"):
                    raise DataError(f"{where}: field 'answer@correct' must be True or False, got {correct!r}")
                answers.append((_attr(a, "text", where), correct == "True"))
            yield Row(
                {"instance_id": iid, "passage": text_el.text, "question_id": qid,
                 "question": _attr(q, "text", where), "answers": answers},
                where,
            )


class MCScript(Source):
    name = "mcscript"
    dataset = "MCScript2.0"
    default_license = "MCScript2.0: research use under the MCScript2.0 release terms (non-commercial)"
    splits = ("train",)

    def rows(self, split: str) -> Iterator[Row]:
        cfg = self.cfg
        if cfg.path:
            path = Path(cfg.path).expanduser()
        elif cfg.url:
            from datasets.utils.file_utils import cached_path

            with hub_resource("dataset", cfg.url, None, config_key=f"data.sources.{self.name}.path"):
                path = Path(cached_path(cfg.url))
        else:
            raise ConfigError(f"data.sources.{self.name}: set 'path' (train-data.xml or the zip) or 'url'")
        yield from parse_questions(*_open_xml(path, split))

    def convert_split(self, split: str, rows: Iterable[Row], ctx: BuildContext, stats: SourceStats) -> list[dict[str, Any]]:
        passages: dict[str, list[Row]] = {}
        for row in rows:
            passages.setdefault(row.data["instance_id"], []).append(row)
        kept: dict[str, list[Row]] = {}
        for iid, qs in passages.items():
            stats.candidates[split] += len(qs)
            # Semantic problems drop the question; the sentence filter drops the passage.
            good = []
            for row in qs:
                answers = row.data["answers"]
                if len(answers) != 2:
                    stats.drop(split, "not_two_answers")
                elif sum(c for _, c in answers) != 1:
                    stats.drop(split, "not_exactly_one_correct")
                elif not all(t.strip() for t, _ in answers):
                    stats.drop(split, "empty_option")
                elif answers[0][0] == answers[1][0]:
                    stats.drop(split, "duplicate_options")
                else:
                    good.append(row)
            problem = self.passage_problem(split, good[0].data["passage"], ctx) if good else None
            if problem:
                stats.drop(split, problem, len(good))
            elif good:
                kept[iid] = good
        pool = sorted({t for qs in kept.values() for row in qs for t, c in row.data["answers"] if c})
        records = []
        for iid, qs in kept.items():
            for row in qs:
                result = self._convert(split, iid, row, qs, pool, ctx, stats)
                self.keep(split, result, records)
        return records

    def _convert(
        self, split: str, iid: str, row: Row, siblings: list[Row], pool: list[str], ctx: BuildContext, stats: SourceStats
    ) -> dict[str, Any] | str:
        d = row.data
        own = [t for t, _ in d["answers"]]
        correct = next(t for t, c in d["answers"] if c)
        rng = ctx.rng(self.name, split, iid, d["question_id"])
        candidates = list(dict.fromkeys(
            t for other in siblings if other is not row for t, _ in other.data["answers"] if t not in own and t.strip()
        ))
        picked = rng.sample(candidates, DISTRACTORS) if len(candidates) >= DISTRACTORS else candidates
        if len(picked) < DISTRACTORS:
            stats.notes["questions_with_distractors_from_global_pool"] += 1
            picked += self._from_pool(pool, set(own) | set(picked), DISTRACTORS - len(picked), rng, row.where)
        options = own + picked
        rng.shuffle(options)
        return self.record(
            split, row.where, iid, f"{iid}-{d['question_id']}", d["passage"], d["question"], options,
            options.index(correct), correct,
        )

    @staticmethod
    def _from_pool(pool: list[str], exclude: set[str], k: int, rng: Any, where: str) -> list[str]:
        """``k`` distinct pool answers not in ``exclude`` (rejection sampling: the pool is large)."""
        picked: list[str] = []
        for _ in range(50 * k + 50):
            if len(picked) == k:
                return picked
            t = rng.choice(pool) if pool else None
            if t is not None and t not in exclude and t not in picked and t.strip():
                picked.append(t)
        rest = [t for t in pool if t not in exclude and t not in picked and t.strip()]
        if len(rest) < k - len(picked):
            raise DataError(f"{where}: not enough distinct answers in the whole file to add MCScript distractors")
        return picked + rng.sample(rest, k - len(picked))
