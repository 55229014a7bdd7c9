"""Import ready translations (``translate.import_dir``) instead of translating.

Accepted layouts, per FLORES code ``<code>`` (the first one found wins):

* ``<import_dir>/<code>.jsonl``: one row per line, each with a ``split`` of ``train`` or ``dev``;
* ``<import_dir>/<code>/train.jsonl`` and optionally ``<code>/dev.jsonl``;
* ``<import_dir>/<code>/``: a ``DatasetDict`` saved with ``save_to_disk`` (splits train, dev).

Rows follow the training-set schema (``TRAIN_FEATURES``: dataset, split, passage_id, question_id,
passage, question, options[4], label 0-based, license) plus an optional ``language`` that must equal
``<code>``. Every row is checked (:func:`xlt.data.schema.check_record`); a bad row stops the import with
a :class:`DataError` naming the file, the line and the field. The result is written exactly like a
translation: ``run/data/translated/<code>`` and the report.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from datasets import Dataset, DatasetDict, load_from_disk

from xlt import languages as langtab
from xlt.config.translate import TranslateConfig
from xlt.data.schema import TRAIN_FEATURES, TRANSLATED_FEATURES, check_record
from xlt.errors import ConfigError, DataError
from xlt.run.files import atomic_dir
from xlt.run.layout import MERGED_FILE, RunDir
from xlt.run.state import seal
from xlt.translation.quality import QualityStats
from xlt.translation.report import write_report
from xlt.translation.storage import save_dataset

log = logging.getLogger(__name__)

SPLITS = ("train", "dev")
_STRING_FIELDS = ("dataset", "passage_id", "question_id", "passage", "question", "license")


def find_languages(import_dir: Path) -> list[str]:
    """FLORES codes present in ``import_dir`` (``<code>.jsonl`` files and ``<code>/`` folders)."""
    codes = {p.stem for p in import_dir.glob("*.jsonl")} | {p.name for p in import_dir.iterdir() if p.is_dir()}
    return sorted(c for c in codes if not c.startswith("."))


def check_row(row: Any, where: str, language: str, split: str | None = None) -> dict[str, Any]:
    """Validate one imported row; return it in TRANSLATED_FEATURES shape. ``where`` names file and line."""
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(row).__name__}")
    missing = [k for k in TRAIN_FEATURES if k not in row and not (k == "split" and split)]
    if missing:
        raise DataError(f"{where}: missing field(s) {missing} (expected the training-set schema {list(TRAIN_FEATURES)})")
    for k in _STRING_FIELDS:
        if not isinstance(row[k], str):
            raise DataError(f"{where}: field '{k}' must be a string, got {row[k]!r}")
    row_split = row.get("split", split)
    if row_split not in SPLITS:
        raise DataError(f"{where}: field 'split' must be 'train' or 'dev', got {row_split!r}")
    if split is not None and row_split != split:
        raise DataError(f"{where}: field 'split' is {row_split!r} in the {split!r} file")
    if "language" in row and row["language"] != language:
        raise DataError(f"{where}: field 'language' is {row['language']!r} in the file of {language!r}")
    if not row["question"].strip():
        raise DataError(f"{where}: field 'question' is empty")
    check_record(row, where)
    out = {k: row[k] for k in TRAIN_FEATURES}
    out["split"] = row_split
    out["options"] = list(row["options"])
    out["language"] = language
    return out


def _read_jsonl(path: Path, language: str, split: str | None) -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    with path.open("rb") as f:
        for n, raw in enumerate(f, 1):
            where = f"{path}, line {n}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataError(f"{where}: bytes that are not UTF-8 at column {err.start + 1} ({raw[err.start:err.start + 4]!r}); "
                                "save the file as UTF-8") from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{where}: not valid JSON ({err.msg})") from None
            row = check_row(obj, where, language, split)
            rows[row["split"]].append(row)
    return rows


def drop_duplicates(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """``rows`` without repeats of an identical row (first kept, order kept) and the number dropped."""
    seen: set[str] = set()
    out = []
    for row in rows:
        key = json.dumps(row, sort_keys=True, ensure_ascii=False)
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out, len(rows) - len(out)


def check_language(code: str, source: str) -> None:
    """An imported language must be a FLORES-200 code of the language table, and not the source language."""
    lang = langtab.lookup(code)
    if lang is None or lang.code != code:
        hint = f" (the FLORES-200 code of that language is {lang.code!r}: rename the file)" if lang else ""
        err = langtab.unknown_code_error(code, langtab.codes(), "FLORES-200 code")
        raise DataError(f"translate.import_dir: {code!r} is not a FLORES-200 code{hint}; {err}")
    if code == source:
        raise DataError(f"translate.import_dir: {code} is the source language (translate.source_language={source}): "
                        "the English training set comes from build_data and is not imported; remove or rename "
                        f"the {code} file or folder")


def read_language(import_dir: Path, language: str, dropped: dict[str, int] | None = None) -> DatasetDict:
    """Read and validate the translation of ``language`` from ``import_dir`` (see module docstring).

    Identical rows repeated in a split are dropped; their number per split goes into ``dropped``."""
    rows: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    flat = import_dir / f"{language}.jsonl"
    folder = import_dir / language
    if flat.is_file():
        rows = _read_jsonl(flat, language, None)
    elif (folder / "train.jsonl").is_file():
        for split in SPLITS:
            if (folder / f"{split}.jsonl").is_file():
                rows[split] = _read_jsonl(folder / f"{split}.jsonl", language, split)[split]
    elif (folder / "dataset_dict.json").is_file():
        dd = load_from_disk(str(folder))
        for split in SPLITS:
            if split not in dd:
                continue
            for i, rec in enumerate(dd[split]):
                rows[split].append(check_row(dict(rec), f"{folder} (split {split}, row {i})", language, split))
    else:
        raise DataError(
            f"{import_dir}: no translation of {language!r}; expected {flat.name}, {language}/train.jsonl "
            f"or a save_to_disk folder {language}/"
        )
    for split in SPLITS:
        rows[split], n = drop_duplicates(rows[split])
        if dropped is not None:
            dropped[split] = n
        if n:
            log.warning("%s: %d duplicate %s row(s) of %s dropped", import_dir, n, split, language)
    if not rows["train"]:
        raise DataError(f"{import_dir}: the translation of {language!r} has no train rows")
    return DatasetDict(
        {s: Dataset.from_list(rows[s], features=TRANSLATED_FEATURES) if rows[s] else _empty() for s in SPLITS}
    )


def _empty() -> Dataset:
    return Dataset.from_dict({k: [] for k in TRANSLATED_FEATURES}, features=TRANSLATED_FEATURES)


def import_translations(translate: TranslateConfig, run: RunDir, provenance: dict[str, Any] | None = None) -> dict[str, Any]:
    """The translate stage with ``translate.import_dir``: validate, store, report."""

    import_dir = Path(translate.import_dir).expanduser()
    if not import_dir.is_dir():
        raise ConfigError(f"translate.import_dir: {import_dir} is not a folder")
    languages = [str(c) for c in translate.languages] or find_languages(import_dir)
    if not languages:
        raise DataError(f"{import_dir}: no <code>.jsonl files or <code>/ folders to import")
    per_language: dict[str, dict[str, QualityStats]] = {}
    rows = {}
    for lang in languages:
        check_language(lang, str(translate.source_language))
    for lang in languages:
        dropped: dict[str, int] = {}
        dd = read_language(import_dir, lang, dropped)
        per_language[lang] = {}
        for split in SPLITS:
            st = QualityStats()
            st.add("rows_in", n=dd[split].num_rows + dropped[split])
            if dropped[split]:
                st.add("duplicate_rows", n=dropped[split])
            st.add("rows_out", n=dd[split].num_rows)
            per_language[lang][split] = st
        with atomic_dir(run.translated_language(lang)) as tmp:
            save_dataset(dd, tmp)
            seal(tmp, MERGED_FILE, {"units": [f"imported from {import_dir}"],
                                    "stats": {s: st.to_json() for s, st in per_language[lang].items()}})
        rows[lang] = {s: dd[s].num_rows for s in SPLITS}
        log.info("imported %s: %s", lang, rows[lang])
    meta = {"translator": f"imported from {import_dir}", "source_language": translate.source_language, "imported": True,
            "provenance": provenance}
    write_report(run, meta, per_language)
    return {"languages": languages, "rows": rows, "imported_from": str(import_dir)}
