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
from typing import Any

from datasets import Features, Value
from datasets import Sequence as HFSequence

from xlt import languages as langtab
from xlt.data.benchmarks.base import Claim, ConfigPerLanguage, HarnessTasks, Prompt, Report, Subset, text
from xlt.data.schema import EVAL_FEATURES, LETTERS
from xlt.errors import DataError

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


def convert_row(row: dict[str, Any], *, language: str, where: str) -> dict[str, Any]:
    """One upstream Global-MMLU row -> an evaluation record (see :func:`~xlt.data.benchmarks.base.convert_split`)."""
    sid = str(row["sample_id"])
    subject = row.get("subject") or sid.split("/", 1)[0]
    category = row.get("subject_category")
    if not category:
        if subject not in SUBJECT_CATEGORY:
            raise DataError(f"{where}: field 'subject_category' is missing and subject {subject!r} is not an MMLU subject")
        category = SUBJECT_CATEGORY[subject]
    cs = str(row["cultural_sensitivity_label"]).strip()
    if cs not in CS_LABELS:
        raise DataError(f"{where}: field 'cultural_sensitivity_label' must be one of {CS_LABELS}, "
                        f"got {row['cultural_sensitivity_label']!r}")
    return {"id": sid, "language": language, "passage": "", "question": text(row["question"]),
            "options": [text(row[f"option_{c}"]) for c in "abcd"], "label": parse_letter(row["answer"], where),
            "sample_id": sid, "subject": str(subject), "subject_category": str(category),
            "cultural_sensitivity_label": cs, "is_annotated": parse_bool(row["is_annotated"], where),
            **{col: parse_list(row.get(col), col, where) for col in LIST_COLUMNS}}



# MA: the annotated questions; CS / CA: culturally sensitive / agnostic (and per category, finer).
SUBSETS = (Subset("MA", "is_annotated"), Subset("CS", "cultural_sensitivity_label", "CS"),
           Subset("CA", "cultural_sensitivity_label", "CA"), Subset("category", "subject_category", per_value=True))
# Quoted verbatim from the paper's text (arXiv 2412.03304; checked in tests/test_paper_quotes.py against
# the reference copy, its Markdown emphasis and emoji left out).
CLAIMS = (
    Claim("rank_changes_per_language", "rankings_change_cs_ca",
          "model rankings move more on the culturally sensitive (CS) than on the culturally agnostic (CA) "
          "subset, each ranked against the annotated set (MA), per language",
          {"base": "MA", "a": "CA", "b": "CS"},
          quote="On average, across all languages, CA datasets see 3.4 rank changes and 3.7 position changes, "
                "whereas CS datasets experience markedly higher volatility, with 5.7 rank changes and 7.3 "
                "position changes.", section="4.2 Results", verbatim=True,
          needs="at least three systems evaluated on Global-MMLU with MA, CS and CA results, ranked on the "
                "languages they all have (the paper: rank changes and position shifts per language, CA vs MA "
                "and CS vs MA, averaged over languages; CS moves more)"),
    Claim("human_above_machine_same_language", "human_translated_above_machine_translated",
          "on high-resource languages accuracy is higher on the human-translated (HT) Global-MMLU test set "
          "than on a machine-translated (MT) version of the same language",
          {"tiers": ("high", "mid", "low"), "expect": {"high": "human"}},
          quote="The key finding is that models generally perform better on human-translated data for "
                "high-resource languages.", section="4.2 Results, Human Translated vs. Machine Translated",
          verbatim=True,
          needs="one system evaluated on a human-translated Global-MMLU language and on a machine-translated "
                "version of the same language (a benchmark entry of kind global_mmlu with "
                "machine_translated: true), per resource tier"),
)


class GlobalMMLU(ConfigPerLanguage):
    has_passage = False  # items have no passage: an empty one is not counted as odd
    kind = "global_mmlu"
    fields, key_fields, features, convert_row = FIELDS, KEY_FIELDS, FEATURES, staticmethod(convert_row)
    default_hub_id = "CohereLabs/Global-MMLU"
    fewshot_split = "dev"
    pivot_language = "en"
    paper = "Global-MMLU (Singh et al., 2024)"

    def __init__(self, kind: str = "global_mmlu", default_hub_id: str = "CohereLabs/Global-MMLU", lite: bool = False):
        self.kind = kind
        self.default_hub_id = default_hub_id
        self.lite = lite
        # The LLM prompt is the default lettered template, which is the harness's Global-MMLU one
        # (``lm_eval/tasks/global_mmlu/*/_*_template_yaml``): question, ``A. option`` lines, ``Answer:``. The
        # harness's tasks: Full has one per subject (``first_n`` on dev), Lite one per category (its default
        # seeded random sampler on dev); few-shot rows come from the same subject (``first_n``) or category
        # (``random``).
        self.prompt = Prompt(sampler="random" if lite else "first_n",
                             fewshot_groups={"first_n": "subject", "random": "subject_category"},
                             harness_task_unit="category" if lite else "subject")
        # The harness's tasks: global_mmlu_<lang>_<category> (Lite; the group global_mmlu_<lang>) and
        # global_mmlu_full_<lang>_<subject> (Full); the sample's target is the gold letter (doc_to_target: answer).
        self.harness = (HarnessTasks("global_mmlu_{language}_{subject_category}", target="letter",
                                     dataset_path="CohereLabs/Global-MMLU-Lite", group="global_mmlu_{language}",
                                     group_of="language") if lite else
                        HarnessTasks("global_mmlu_full_{language}_{subject}", target="letter",
                                     dataset_path="CohereForAI/Global-MMLU"))
        # Grouped by the paper's resource tier and how each language's test set was made (human or machine
        # translated); CS and CA side by side; systems ranked on full, MA, CS and CA as the paper compares
        # them. Finding ids gmmlu_*, gmmlu_lite_*: the ids README and tests cite.
        self.report = Report(
            title="Global-MMLU-Lite" if lite else "Global-MMLU", subsets=SUBSETS,
            language_groupings=("tier", "translation"), thresholds=(),
            labels={"tier": "resource tier", "translation": "translation", "full": "full", "MA": "MA (annotated)",
                    "CS": "CS (culturally sensitive)", "CA": "CA (culturally agnostic)", "category": "category"},
            rank_subsets=("full", "MA", "CS", "CA"), rank_pairs=(("full", "MA"), ("MA", "CS"), ("MA", "CA"), ("CS", "CA")),
            contrast=("CS", "CA"), claims=CLAIMS, finding_prefix=kind.replace("global_mmlu", "gmmlu"))

    def known_languages(self) -> tuple[str, ...]:
        # Lite's language list grows upstream: ask the source.
        return () if self.lite else tuple(langtab.gmmlu_codes())

    def canonical(self, code: str) -> str:
        lang = langtab.lookup(code)
        return lang.gmmlu_code if lang is not None and lang.gmmlu_code else code

    def offline_languages(self) -> list[str]:
        # Offline, datasets answers the config list from its cache as ["default"]: use the language
        # table (42 languages; the 15 of the original Lite release for Lite).
        return sorted(langtab.gmmlu_codes(lite=self.lite))

    def language_info(self, code: str, groups: dict[str, str] | None = None) -> dict[str, Any]:
        """The default columns, plus the paper's resource ``tier`` and ``translation`` (human / machine)."""
        lang = langtab.lookup(code)
        return {**super().language_info(code, groups),
                "tier": lang.gmmlu_tier if lang and lang.gmmlu_tier else langtab.UNGROUPED,
                "translation": lang.translation if lang and lang.translation else langtab.UNGROUPED}


# The registry's entries (xlt/registry.py): the full benchmark and its Lite subset.
GLOBAL_MMLU = GlobalMMLU("global_mmlu", "CohereLabs/Global-MMLU")
GLOBAL_MMLU_LITE = GlobalMMLU("global_mmlu_lite", "CohereLabs/Global-MMLU-Lite", lite=True)
