"""Global-MMLU (``CohereLabs/Global-MMLU``, 42 languages) and Global-MMLU-Lite.

Upstream columns (identical in every config and split): ``sample_id``, ``subject``, ``subject_category``,
``question``, ``option_a..d``, ``answer`` (letter A-D), six string-encoded Python lists
(``required_knowledge``, ``time_sensitive``, ``reference``, ``culture``, ``region``, ``country``; parsed
with :func:`ast.literal_eval`, never ``eval``), ``cultural_sensitivity_label`` (``CS``, ``CA`` or ``-``)
and ``is_annotated``. There is no passage (``passage = ""``); the id is ``sample_id``, parallel across
languages. A newer Lite config lacks ``subject``/``subject_category``: they are then derived from
``sample_id`` (``<subject>/<split>/<idx>``) and :data:`SUBJECT_CATEGORY`.

Sources: a local copy in the Hub's layout (``<path>/<lang>/<split>-00000-of-00001.parquet``, also
``<lang>/<split>.parquet`` or ``<lang>/<split>.jsonl``), or the Hub (``CohereForAI/`` names work too).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from datasets import Dataset, Features, Value, get_dataset_config_names, load_dataset
from datasets import Sequence as HFSequence

from xlt import languages as langtab
from xlt.data.benchmarks.base import Benchmark, check_not_null, convert_split, load_local_file, text
from xlt.data.schema import EVAL_FEATURES, LETTERS
from xlt.errors import DataError
from xlt.hub import hub_resource, offline

LIST_COLUMNS = ("required_knowledge", "time_sensitive", "reference", "culture", "region", "country")
FIELDS = ("sample_id", "question", "option_a", "option_b", "option_c", "option_d", "answer",
          "cultural_sensitivity_label", "is_annotated")
# Fields without which an item cannot be identified, scored or put in a subset: a null is an error naming
# the row. A null question or option is an odd item: read as "" and counted by the data checks.
KEY_FIELDS = ("sample_id", "answer", "cultural_sensitivity_label", "is_annotated")
CS_LABELS = ("CS", "CA", "-")
ANSWER_LETTERS = LETTERS[:4]  # the answers of option_a..option_d

FEATURES = Features(
    {
        **EVAL_FEATURES,
        "sample_id": Value("string"),
        "subject": Value("string"),
        "subject_category": Value("string"),
        "cultural_sensitivity_label": Value("string"),
        "is_annotated": Value("bool"),
        **{c: HFSequence(Value("string")) for c in LIST_COLUMNS},
    }
)

_CATEGORIES = {
    "STEM": "abstract_algebra anatomy astronomy college_biology college_chemistry college_computer_science "
    "college_mathematics college_physics computer_security conceptual_physics electrical_engineering "
    "elementary_mathematics high_school_biology high_school_chemistry high_school_computer_science "
    "high_school_mathematics high_school_physics high_school_statistics machine_learning",
    "Humanities": "formal_logic high_school_european_history high_school_us_history high_school_world_history "
    "international_law jurisprudence logical_fallacies moral_disputes moral_scenarios philosophy prehistory "
    "professional_law world_religions",
    "Social Sciences": "econometrics high_school_geography high_school_government_and_politics "
    "high_school_macroeconomics high_school_microeconomics high_school_psychology human_sexuality "
    "professional_psychology public_relations security_studies sociology us_foreign_policy",
    "Medical": "clinical_knowledge college_medicine human_aging medical_genetics nutrition "
    "professional_medicine virology",
    "Business": "business_ethics management marketing professional_accounting",
    "Other": "global_facts miscellaneous",
}
# The 57 MMLU subjects -> Global-MMLU's 6 categories (used only when a config lacks the columns).
SUBJECT_CATEGORY: dict[str, str] = {s: cat for cat, subs in _CATEGORIES.items() for s in subs.split()}


def parse_letter(value: Any, where: str) -> int:
    """``answer`` letter A-D -> 0-based label; anything else raises DataError."""
    text = str(value).strip() if isinstance(value, str) else None
    if text is None or len(text) != 1 or text not in ANSWER_LETTERS:
        raise DataError(f"{where}: field 'answer' must be a letter A-D, got {value!r}")
    return ANSWER_LETTERS.index(text)


def parse_list(value: Any, field: str, where: str) -> list[str]:
    """A string-encoded Python list (``"['a', 'b']"``, ``"[]"``) -> list of strings, via literal_eval."""
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    try:
        parsed = ast.literal_eval(str(value))
    except (ValueError, SyntaxError):
        raise DataError(f"{where}: field {field!r} is not a Python list literal: {value!r}") from None
    if not isinstance(parsed, (list, tuple)):
        raise DataError(f"{where}: field {field!r} is not a list: {value!r}")
    return [str(v) for v in parsed]


def parse_bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    raise DataError(f"{where}: field 'is_annotated' must be a boolean, got {value!r}")


def convert_batch(batch: dict[str, list], indices: list[int], *, language: str, where: str) -> dict[str, list]:
    """Upstream Global-MMLU rows -> evaluation records (batched ``Dataset.map`` function)."""
    start = indices[0] if indices else 0
    check_not_null(batch, KEY_FIELDS, where, start)
    out: dict[str, list] = {k: [] for k in FEATURES}
    for i, idx in enumerate(indices):
        row_where = f"{where}: row {idx + 1}"
        sid = str(batch["sample_id"][i])
        subject = batch["subject"][i] if "subject" in batch else None
        subject = subject or sid.split("/", 1)[0]
        category = batch["subject_category"][i] if "subject_category" in batch else None
        if not category:
            if subject not in SUBJECT_CATEGORY:
                raise DataError(f"{row_where}: field 'subject_category' is missing and subject {subject!r} "
                                "is not an MMLU subject")
            category = SUBJECT_CATEGORY[subject]
        cs = str(batch["cultural_sensitivity_label"][i]).strip()
        if cs not in CS_LABELS:
            raise DataError(f"{row_where}: field 'cultural_sensitivity_label' must be one of {CS_LABELS}, "
                            f"got {batch['cultural_sensitivity_label'][i]!r}")
        out["id"].append(sid)
        out["language"].append(language)
        out["passage"].append("")
        out["question"].append(text(batch["question"][i]))
        out["options"].append([text(batch[f"option_{c}"][i]) for c in "abcd"])
        out["label"].append(parse_letter(batch["answer"][i], row_where))
        out["sample_id"].append(sid)
        out["subject"].append(str(subject))
        out["subject_category"].append(str(category))
        out["cultural_sensitivity_label"].append(cs)
        out["is_annotated"].append(parse_bool(batch["is_annotated"][i], row_where))
        for col in LIST_COLUMNS:
            value = batch[col][i] if col in batch else None
            out[col].append(parse_list(value, col, row_where))
    return out



class GlobalMMLU(Benchmark):
    has_passage = False  # items have no passage: an empty one is not counted as odd
    kind = "global_mmlu"
    default_hub_id = "CohereLabs/Global-MMLU"
    family = "global_mmlu"
    fewshot_split = "dev"
    pivot_language = "en"
    paper = "Global-MMLU (Singh et al., 2024)"
    # MA: the annotated questions; CS / CA: culturally sensitive / agnostic (and per category, finer).
    subsets = ("MA", "CS", "CA")
    subset_columns = ("is_annotated", "cultural_sensitivity_label", "subject_category")

    def __init__(self, kind: str = "global_mmlu", default_hub_id: str = "CohereLabs/Global-MMLU"):
        self.kind = kind
        self.default_hub_id = default_hub_id

    def subset_masks(self, meta: Any) -> dict[str, Any]:
        """``MA`` (``is_annotated``), ``CS``, ``CA`` and ``category/<subject_category>``."""
        masks = {
            "MA": meta["is_annotated"].to_numpy(dtype=bool),
            "CS": (meta["cultural_sensitivity_label"] == "CS").to_numpy(),
            "CA": (meta["cultural_sensitivity_label"] == "CA").to_numpy(),
        }
        for cat in sorted(meta["subject_category"].unique()):
            masks[f"category/{cat}"] = (meta["subject_category"] == cat).to_numpy()
        return masks

    @property
    def lite(self) -> bool:
        return self.kind == "global_mmlu_lite"

    def known_languages(self) -> tuple[str, ...]:
        # Lite's language list grows upstream: ask the source.
        return () if self.lite else tuple(langtab.gmmlu_codes())

    def canonical(self, code: str) -> str:
        lang = langtab.lookup(code)
        return lang.gmmlu_code if lang is not None and lang.gmmlu_code else code

    def _local_file(self, root: Path, language: str, split: str) -> Path | None:
        folder = root / language
        for name in (f"{split}-00000-of-00001.parquet", f"{split}.parquet", f"{split}.jsonl"):
            if (folder / name).is_file():
                return folder / name
        shards = sorted(folder.glob(f"{split}-*.parquet"))
        return shards[0] if len(shards) == 1 else None

    def languages(self, bcfg: Any) -> list[str]:
        root = self.local_path(bcfg)
        if root is not None:
            return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
        hub_id = self.hub_id(bcfg)
        if offline():
            # Offline, datasets answers the config list from its cache as ["default"]: use the language
            # table (42 languages; the 15 of the original Lite release for Lite).
            return sorted(langtab.gmmlu_codes(lite=self.lite))
        with hub_resource("dataset", hub_id, bcfg.revision, f"eval.benchmarks.{self.kind}.path"):
            return sorted(get_dataset_config_names(hub_id, revision=bcfg.revision))

    def load_all(self, bcfg: Any, language: str, split: str = "test") -> tuple[Dataset, str]:
        code = self.canonical(language)
        root = self.local_path(bcfg)
        if root is not None:
            if not (root / code).is_dir():
                raise langtab.unknown_code_error(code, self.languages(bcfg), f"{self.kind} language code (in {root})")
            file = self._local_file(root, code, split)
            if file is None:
                raise DataError(f"{root / code}: no '{split}' split file ({split}-00000-of-00001.parquet, "
                                f"{split}.parquet or {split}.jsonl)")
            raw = load_local_file(file)
            where = str(file)
        else:
            hub_id = self.hub_id(bcfg)
            with hub_resource("dataset", hub_id, bcfg.revision, f"eval.benchmarks.{self.kind}.path"):
                raw = load_dataset(hub_id, code, split=split, revision=bcfg.revision)
            where = f"{hub_id}[{code}/{split}]"
        ds = convert_split(raw, code, where, fields=FIELDS, features=FEATURES, convert_batch=convert_batch,
                           desc=f"global_mmlu {code}")
        return ds, where
