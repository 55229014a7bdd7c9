"""The one language table of xlt: Belebele variants and Global-MMLU languages, joined per language.

The data lives in ``xlt/languages.tsv`` (one row per Belebele variant; 122 rows). Each row carries the
variant's FLORES-200-style code, name, script and family *as published in the Belebele README*, and,
where the language is also in Global-MMLU, its Global-MMLU config code, resource tier and translation
source. Every Global-MMLU language maps to exactly one Belebele code (``zh`` -> ``zho_Hans``,
``fil`` -> ``tgl_Latn``, ...), so results join across the two benchmarks on :attr:`Language.code`.
It also says which machine-translation models cover a language: its M2M100 tokenizer code and whether
NLLB-200 has it (:func:`m2m100_code`, :func:`mt_codes`; the ``translate`` configs list their languages
through :func:`mt_codes`).

Resource-level taxonomy
-----------------------
Belebele publishes no resource level per language. xlt's default is NLLB's (NLLB Team, 2022, "No
Language Left Behind", arXiv 2207.04672): a language is ``low`` resource when it has fewer than 1M publicly
available de-duplicated bitext samples, else ``high``. The levels are read from the NLLB release's
per-language public training counts (facebookresearch/fairseq, branch ``nllb``; the header of
``languages.tsv`` names the files and commit), which are keyed by the FLORES-200 codes Belebele uses: 116 of
the 122 variants are read directly, and the six romanized ones, which NLLB counts no bitext for, are ``low``.
Global-MMLU reports also show that paper's own tiers (Singh et al., 2024, section 4.1: high / mid / low;
:attr:`Language.gmmlu_tier`), which measure something else and differ on some languages (Swahili: NLLB
high, Global-MMLU low). A grouping file (``eval.resource_groups``: a TSV of ``code<TAB>group`` lines; codes
may be Belebele or Global-MMLU codes; ``#`` starts a comment) replaces the default levels entirely.
"""

from __future__ import annotations

import csv
import difflib
import functools
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from xlt.errors import ConfigError, DataError

TABLE_PATH = Path(__file__).resolve().parent / "languages.tsv"
UNGROUPED = "n/a"
HUMAN_SOURCES = ("original", "post_edited_professional", "human_translation_mmmlu", "post_edited_community")


@dataclass(frozen=True)
class Language:
    """One row of the language table."""

    code: str  # Belebele / FLORES-200-style code, e.g. "deu_Latn"
    name: str
    script: str
    family: str
    gmmlu_code: str | None  # Global-MMLU config code, e.g. "de"
    gmmlu_tier: str | None  # "high" | "mid" | "low"
    gmmlu_source: str | None  # see languages.tsv header
    gmmlu_lite: bool
    m2m100: str | None = None  # the M2M100 tokenizer's code, e.g. "de"
    nllb: bool = False  # NLLB-200 has the language
    resource: str | None = None  # NLLB's resource level: "high" | "low" (see the module docstring)

    @property
    def translation(self) -> str | None:
        """``human`` or ``machine`` for Global-MMLU languages (how their test set was made)."""
        if not self.gmmlu_source:
            return None
        return "human" if self.gmmlu_source in HUMAN_SOURCES else "machine"

    @property
    def human_translated(self) -> bool:
        """Whether the language's Global-MMLU test set was translated or post-edited by people (not English,
        the original)."""
        return self.translation == "human" and self.gmmlu_source != "original"


@functools.lru_cache(maxsize=1)
def table() -> tuple[Language, ...]:
    """All rows of ``languages.tsv``, in file order."""
    lines = [ln for ln in TABLE_PATH.read_text(encoding="utf-8").splitlines() if ln and not ln.startswith("#")]
    rows = list(csv.DictReader(lines, delimiter="\t"))
    out = []
    for r in rows:
        out.append(
            Language(
                code=r["code"],
                name=r["name"],
                script=r["script"],
                family=r["family"],
                gmmlu_code=r["gmmlu_code"] or None,
                gmmlu_tier=r["gmmlu_tier"] or None,
                gmmlu_source=r["gmmlu_source"] or None,
                gmmlu_lite=r["gmmlu_lite"] == "yes",
                m2m100=r["m2m100"] or None,
                nllb=r["nllb"] == "yes",
                resource=r["resource"] or None,
            )
        )
    return tuple(out)


def table_digest() -> str:
    """A digest of the table's content (the report stage's input: its levels and names shape the report)."""
    return hashlib.sha256(TABLE_PATH.read_bytes()).hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def _index() -> dict[str, Language]:
    idx: dict[str, Language] = {}
    for lang in table():
        idx[lang.code] = lang
        if lang.gmmlu_code:
            idx[lang.gmmlu_code] = lang
    return idx


def codes() -> list[str]:
    """Every code of the table (FLORES-200 style, ``deu_Latn``), in table order."""
    return [lang.code for lang in table()]


def gmmlu_codes(lite: bool = False) -> list[str]:
    """Global-MMLU language codes (42), or those of the original Lite release (15)."""
    return [lang.gmmlu_code for lang in table() if lang.gmmlu_code and (lang.gmmlu_lite or not lite)]


MT_MODELS = ("nllb", "m2m100")
# belebele: every variant; global_mmlu: the Global-MMLU languages; global_mmlu_human: those whose Global-MMLU
# test set was translated or post-edited by people (not English, the original; not the machine-translated ones).
LANGUAGE_SETS = ("belebele", "global_mmlu", "global_mmlu_human")


def mt_codes(model: str, languages: str = "belebele", exclude: Iterable[str] = ()) -> list[str]:
    """The codes of ``languages`` (every Belebele variant, or the Global-MMLU languages as Belebele codes)
    that the MT ``model`` family (``nllb`` or ``m2m100``) covers, in table order, without ``exclude``
    (the source language): e.g. the targets of translate-train-all."""
    if model not in MT_MODELS:
        raise ConfigError(f"unknown MT model family {model!r}; the language table knows {list(MT_MODELS)}")
    if languages not in LANGUAGE_SETS:
        raise ConfigError(f"unknown language set {languages!r}; one of {list(LANGUAGE_SETS)}")
    skip = {lookup(c).code if lookup(c) else c for c in exclude}
    return [lang.code for lang in table()
            if (lang.nllb if model == "nllb" else lang.m2m100 is not None)
            and _in_set(lang, languages) and lang.code not in skip]


def _in_set(lang: Language, languages: str) -> bool:
    if languages == "belebele":
        return True
    if languages == "global_mmlu_human":
        return lang.human_translated
    return lang.gmmlu_code is not None


def m2m100_code(code: str) -> str | None:
    """The M2M100 tokenizer's code of a FLORES-200 / Belebele ``code`` (None: not in the table or not in M2M100)."""
    lang = lookup(code)
    return lang.m2m100 if lang else None


def lookup(code: str) -> Language | None:
    """The row for a Belebele or Global-MMLU code (``ary_arab`` is accepted for ``ary_Arab``), or None."""
    idx = _index()
    if code in idx:
        return idx[code]
    if "_" in code:  # the Belebele GitHub table spells one code ary_arab
        base, _, script = code.partition("_")
        return idx.get(f"{base}_{script[:1].upper()}{script[1:].lower()}")
    return None


def get(code: str, valid: Sequence[str] | None = None, what: str = "language code") -> Language:
    """Like :func:`lookup` but raise a :class:`ConfigError` with the closest valid code on a miss."""
    lang = lookup(code)
    if lang is None:
        raise unknown_code_error(code, valid if valid is not None else list(_index()), what)
    return lang


def unknown_code_error(code: str, valid: Iterable[str], what: str = "language code") -> ConfigError:
    """A ConfigError for ``code`` naming the closest entries of ``valid`` (difflib)."""
    valid = list(valid)
    close = difflib.get_close_matches(code, valid, n=3, cutoff=0.5)
    if not close:  # case-insensitive / prefix matches help with e.g. "DEU" or "deu"
        low = code.lower()
        close = [v for v in valid if v.lower() == low or v.lower().startswith(low[:3])][:3]
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return ConfigError(f"unknown {what} {code!r}{hint} ({len(valid)} valid codes)")


def read_groups(path: str | Path) -> dict[str, str]:
    """Read a user grouping file (``code<TAB>group`` per line) into {Belebele code: group}.

    Codes may be Belebele or Global-MMLU codes; both are normalised to the Belebele code. A malformed
    line or an unknown code raises :class:`DataError` naming the file and line.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: resource grouping file not found (eval.resource_groups)")
    out: dict[str, str] = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) != 2 or not all(parts):
            raise DataError(f"{path}:{lineno}: expected 'code<TAB>group', got {line!r}")
        if not out and parts[0].lower() == "code":  # optional header line
            continue
        lang = lookup(parts[0])
        if lang is None:
            err = unknown_code_error(parts[0], list(_index()))
            raise DataError(f"{path}:{lineno}: field 'code': {err}")
        out[lang.code] = parts[1]
    return out


def resource_level(code: str, groups: dict[str, str] | None = None) -> str:
    """The resource level of a language: from ``groups`` when given, else NLLB's (the table's ``resource``)."""
    lang = lookup(code)
    if groups is not None:
        return groups.get(lang.code if lang else code, UNGROUPED)
    if lang is None or not lang.resource:
        return UNGROUPED
    return lang.resource


TAXONOMY = ("NLLB resource levels (NLLB Team, 2022): low = fewer than 1M public bitext samples, else high; "
            "from the NLLB release's per-language counts")


def resource_taxonomy(groups: dict[str, str] | None = None) -> str:
    """Where :func:`resource_level` takes the levels from (said beside every table grouped by them)."""
    if groups is not None:
        return "user grouping file"
    return TAXONOMY
