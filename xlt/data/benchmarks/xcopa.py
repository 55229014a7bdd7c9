"""XCOPA (``cambridgeltl/xcopa``; Ponti et al., 2020): causal commonsense reasoning in 11 languages, 2 options.

Everything xlt knows about XCOPA is in this file (registered in :mod:`xlt.data.benchmarks`).

Upstream: one Hub config per language (``et ht id it qu sw ta th tr vi zh``; the ``translation-<code>``
configs hold English machine translations and are not languages), splits ``validation`` (100) and
``test`` (500), columns ``premise``, ``choice1``, ``choice2``, ``question`` (``cause`` / ``effect``),
``label`` (0 / 1), ``idx`` and ``changed``. The items are parallel across languages: the id is ``idx``.

The uniform item has no passage; its question is the premise joined to the language's word for
"because" / "therefore" (the connectors of lm-evaluation-harness's ``xcopa_<code>`` tasks, so the
encoder reads what a causal LLM is prompted with) and its two options are the alternatives. For causal
LLMs the definition is the harness's task: the prompt is that question (premise without its final
punctuation mark + connector), the continuations are the alternatives with a lower-cased first letter,
and few-shot examples are seeded random draws from ``validation``. XCOPA has no English config, so
translate-test few-shot prompting has no pool (``pivot_language`` None).

Subsets: ``cause`` and ``effect`` questions. Reports: script, family and resource level as for any
benchmark; the finding checked on comparisons is the paper's "translation-based transfer beats zero-shot
multilingual transfer" (translate-test against in-language, for any system).
"""

from __future__ import annotations

from typing import Any

from datasets import Features, Value

from xlt import languages as langtab
from xlt.config.eval import BenchmarkConfig
from xlt.data.benchmarks.base import Claim, ConfigPerLanguage, HarnessTasks, Prompt, Report, Subset, text
from xlt.data.schema import EVAL_FEATURES
from xlt.errors import DataError

FIELDS = ("premise", "choice1", "choice2", "question", "label", "idx")
KEY_FIELDS = ("question", "label", "idx")
FEATURES = Features({**EVAL_FEATURES, "premise": Value("string"), "question_type": Value("string"),
                     "idx": Value("int64"), "changed": Value("bool")})

# XCOPA's language codes -> xlt's language table (FLORES-200 codes: name, script, family in reports)
# and the connectors of lm-evaluation-harness's xcopa tasks (lm_eval/tasks/xcopa/utils.py).
LANGUAGES: dict[str, tuple[str, dict[str, str]]] = {
    "et": ("est_Latn", {"cause": "sest", "effect": "seetõttu"}),
    "ht": ("hat_Latn", {"cause": "poukisa", "effect": "donk sa"}),
    "id": ("ind_Latn", {"cause": "karena", "effect": "maka"}),
    "it": ("ita_Latn", {"cause": "perché", "effect": "quindi"}),
    "qu": ("quy_Latn", {"cause": "imataq", "effect": "chaymi"}),
    "sw": ("swh_Latn", {"cause": "kwa sababu", "effect": "kwa hiyo"}),
    "ta": ("tam_Taml", {"cause": "காரணமாக", "effect": "எனவே"}),
    "th": ("tha_Thai", {"cause": "เพราะ", "effect": "ดังนั้น"}),
    "tr": ("tur_Latn", {"cause": "çünkü", "effect": "bu yüzden"}),
    "vi": ("vie_Latn", {"cause": "bởi vì", "effect": "vì vậy"}),
    "zh": ("zho_Hans", {"cause": "因为", "effect": "所以"}),
}


def question_text(premise: str, question: str, language: str, where: str) -> str:
    """The premise without its final punctuation mark, then the connector (the harness's ``doc_to_text``)."""
    connectors = LANGUAGES[language][1] if language in LANGUAGES else None
    if connectors is None:
        raise DataError(f"{where}: no connector words for XCOPA language {language!r} (known: {sorted(LANGUAGES)})")
    if question not in connectors:
        raise DataError(f"{where}: field 'question' must be 'cause' or 'effect', got {question!r}")
    return premise.strip()[:-1] + f" {connectors[question]}"


def convert_row(row: dict[str, Any], *, language: str, where: str) -> dict[str, Any]:
    """One upstream XCOPA row -> an evaluation record (see :func:`~xlt.data.benchmarks.base.convert_split`)."""
    label = row["label"]
    if isinstance(label, bool) or label not in (0, 1):
        raise DataError(f"{where}: field 'label' must be 0 or 1, got {label!r}")
    premise, kind = text(row["premise"]), str(row["question"]).strip()
    return {"id": str(int(row["idx"])), "language": language, "passage": "",
            "question": question_text(premise, kind, language, where) if premise.strip() else "",
            "options": [text(row["choice1"]), text(row["choice2"])], "label": int(label), "premise": premise,
            "question_type": kind, "idx": int(row["idx"]), "changed": bool(row.get("changed") or False)}


class XCOPA(ConfigPerLanguage):
    kind = "xcopa"
    default_hub_id = "cambridgeltl/xcopa"
    version = 1
    paper = "XCOPA (Ponti et al., 2020)"
    has_passage = False
    pivot_language = None  # no English config
    fields, key_fields, features, convert_row = FIELDS, KEY_FIELDS, FEATURES, staticmethod(convert_row)
    fewshot_split = "validation"
    # LLMs: lm-evaluation-harness's xcopa_<code> tasks: the prompt is the question (premise and connector),
    # the continuations the alternatives with a lower-cased first letter, few-shot examples drawn by the
    # harness's default sampler (one Random(1234) per language task).
    prompt = Prompt(text="{question}", raw=("question",), choices="lowercased_options", sampler="random",
                    instruction="Given the following premise and two alternatives, output the letter of the "
                                "alternative that is its more plausible cause or effect, as the premise's last word says.")

    # The harness's tasks xcopa_<code> (version 1.0) and their group `xcopa`.
    harness = HarnessTasks("xcopa_{language}", options=2, version=1.0, dataset_path="cambridgeltl/xcopa", group="xcopa",
                           group_version=1.0)

    def known_languages(self) -> tuple[str, ...]:
        return tuple(LANGUAGES)

    def languages(self, bcfg: BenchmarkConfig) -> list[str]:
        # The translation-<code> configs are English machine translations, not languages.
        return [c for c in super().languages(bcfg) if not c.startswith("translation-")]

    def canonical(self, code: str) -> str:
        """``it`` or ``ita_Latn`` -> ``it``."""
        for own, (table, _) in LANGUAGES.items():
            if code == table:
                return own
        lang = langtab.lookup(code)
        return next((own for own, (table, _) in LANGUAGES.items() if lang is not None and lang.code == table), code)

    def table_code(self, code: str) -> str:
        return LANGUAGES[code][0] if code in LANGUAGES else code

    # --- reporting ---------------------------------------------------------------------------------------
    # Grouped by script, family and resource level (the defaults); chance is 50%, so the 50/70 counts of
    # the defaults would say little: none. The paper's finding: translation-based transfer beats
    # multilingual zero-shot transfer.
    report = Report(title="XCOPA", subsets=(Subset("cause", "question_type", "cause"), Subset("effect", "question_type", "effect")),
                    thresholds=(), claims=(
        Claim("translate_test_beats_in_language_llm", "translate_test_beats_in_language",
              "translate-test beats in-language evaluation on most XCOPA languages", {"systems": "any"},
              quote="translation-based transfer (translating the test data into English) outperforms "
                    "multilingual zero-shot transfer", section="results; the paper's text is not at hand",
              needs="one system (encoder or LLM) evaluated on XCOPA both in-language and translate-test, on the "
                    "languages both evaluated"),
    ))
