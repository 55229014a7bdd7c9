"""The one language table: counts as published, Global-MMLU mapping, tiers, lookups, grouping files."""

from __future__ import annotations

from collections import Counter

import pytest

from xlt import languages as L
from xlt.errors import ConfigError, DataError


def test_belebele_variants_as_published():
    rows = L.table()
    assert len(rows) == 122 and len({r.code for r in rows}) == 122
    scripts = Counter(r.script for r in rows)
    assert scripts["Latn"] == 73 and scripts["Arab"] == 11 and scripts["Cyrl"] == 9 and scripts["Deva"] == 3
    assert scripts["Beng"] == scripts["Ethi"] == scripts["Mymr"] == 2
    # kept as published, even where the family label looks wrong
    assert L.lookup("nya_Latn").family == "Afro-Asiatic" and L.lookup("pbt_Arab").family == "Indo-Aryan"
    assert L.lookup("ary_arab").code == "ary_Arab"


def test_global_mmlu_languages_mapped():
    codes = L.gmmlu_codes()
    assert len(codes) == 42
    expected = {"zh": "zho_Hans", "fa": "pes_Arab", "ms": "zsm_Latn", "sw": "swh_Latn", "fil": "tgl_Latn",
                "ne": "npi_Deva", "ny": "nya_Latn", "mg": "plt_Latn", "ar": "arb_Arab"}
    assert {g: L.lookup(g).code for g in expected} == expected
    tiers = Counter(L.lookup(c).gmmlu_tier for c in codes)
    assert tiers == {"high": 18, "mid": 11, "low": 13}
    sources = Counter(L.lookup(c).translation for c in codes)
    assert sources == {"human": 26, "machine": 16}
    assert sum(L.lookup(c).gmmlu_lite for c in codes) == 15


def test_resource_levels_default_and_user_groups(tmp_path):
    # NLLB's levels (>= 1M public bitext samples: high); a romanized variant NLLB counts nothing for is low
    assert L.resource_level("hin_Deva") == "high" and L.resource_level("hin_Latn") == "low"
    assert L.resource_level("yor_Latn") == "low" and L.resource_level("eus_Latn") == "high"
    assert L.resource_level("xx_Yyyy") == L.UNGROUPED
    f = tmp_path / "groups.tsv"
    f.write_text("# my taxonomy\ncode\tgroup\neus_Latn\tlow\nde\thigh\n")
    groups = L.read_groups(f)
    assert groups == {"eus_Latn": "low", "deu_Latn": "high"}
    assert L.resource_level("eus_Latn", groups) == "low" and L.resource_level("hin_Deva", groups) == L.UNGROUPED
    f.write_text("eus_Latn\tlow\nxx_Yyyy\thigh\n")
    with pytest.raises(DataError, match=r"groups.tsv:2: field 'code'"):
        L.read_groups(f)
    f.write_text("eus_Latn low\n")
    with pytest.raises(DataError, match=r"groups.tsv:1: expected"):
        L.read_groups(f)


def test_unknown_code_suggests_closest():
    with pytest.raises(ConfigError, match="did you mean 'swh_Latn'"):
        L.get("swh_Latm")


def test_machine_translation_coverage_is_in_the_table():
    assert L.m2m100_code("deu_Latn") == "de" and L.m2m100_code("eng_Latn") == "en" and L.m2m100_code("zho_Hans") == "zh"
    assert L.m2m100_code("acm_Arab") is None and L.m2m100_code("xx_Yyyy") is None
    nllb = L.mt_codes("nllb", exclude=["eng_Latn"])
    assert len(nllb) == 115 and not {"eng_Latn", "hin_Latn", "arb_Latn"} & set(nllb) and nllb == sorted(nllb)
    gmmlu = L.mt_codes("nllb", "global_mmlu", exclude=["en"])  # a Global-MMLU code is accepted too
    assert len(gmmlu) == 41 and "zho_Hans" in gmmlu and set(gmmlu) <= set(nllb)
    assert len(L.mt_codes("m2m100")) == 87 and "acm_Arab" not in L.mt_codes("m2m100")
    with pytest.raises(ConfigError, match="unknown MT model family 'marian'"):
        L.mt_codes("marian")


def test_the_m2m100_engine_reads_its_codes_from_the_table():
    from xlt.translation.engines.base import EngineSettings, LanguageTokens

    class M2M100Tokens(LanguageTokens):  # what _model_code looks at in an M2M100 tokenizer
        tokenizer = type("Tok", (), {"get_lang_id": None, "lang_code_to_token": {"__fr__": 1}})()
        settings = EngineSettings(lang_code_map={"oci_Latn": "oc"})

    tokens = M2M100Tokens.__new__(M2M100Tokens)
    assert tokens._model_code("fra_Latn") == "fr" and tokens._model_code("oci_Latn") == "oc"
    with pytest.raises(ConfigError, match="translate.lang_code_map.acm_Arab"):
        tokens._model_code("acm_Arab")


@pytest.mark.parametrize(("option", "expected"), [("nllb", ("nllb", "belebele")), ("nllb_gmmlu", ("nllb", "global_mmlu"))])
def test_the_translate_configs_take_their_languages_from_the_table(option, expected):
    from pathlib import Path

    from omegaconf import OmegaConf

    import xlt
    from xlt.config import register
    from xlt.config.translate import TranslateConfig

    register()  # the resolvers, as every entry point does
    group = OmegaConf.load(Path(xlt.__file__).resolve().parent / "conf" / "translate" / f"{option}.yaml")
    cfg = OmegaConf.merge(OmegaConf.structured(TranslateConfig), group)
    assert list(cfg.languages) == L.mt_codes(*expected, exclude=[cfg.source_language])
    assert len(cfg.languages) == {"nllb": 115, "nllb_gmmlu": 41}[option]
    cfg.source_language = "fra_Latn"  # the source is never a target
    assert "fra_Latn" not in cfg.languages and "eng_Latn" in cfg.languages
    assert list(OmegaConf.merge(cfg, {"languages": ["deu_Latn"]}).languages) == ["deu_Latn"]  # a user's list wins


def test_every_belebele_variant_has_the_nllb_resource_level():
    """All 122 variants: NLLB's high / low (its per-language public bitext counts, threshold 1M), the six
    romanized variants low. Where NLLB and the Global-MMLU paper's tiers disagree, each keeps its own."""
    levels = {c: L.resource_level(c) for c in L.codes()}
    assert len(levels) == 122 and set(levels.values()) == {"high", "low"}
    assert sum(v == "high" for v in levels.values()) == 53
    assert all(levels[c] == "low" for c in ("arb_Latn", "ben_Latn", "hin_Latn", "npi_Latn", "sin_Latn", "urd_Latn"))
    # Swahili: 2.2M NLLB bitext samples (high), a low tier in Global-MMLU; Serbian: 0.76M (low), mid there
    assert levels["swh_Latn"] == "high" and L.lookup("sw").gmmlu_tier == "low"
    assert levels["srp_Cyrl"] == "low" and L.lookup("sr").gmmlu_tier == "mid"
    header = [ln for ln in L.TABLE_PATH.read_text().splitlines() if ln.startswith("# resource:")]
    assert header and "NLLB" in header[0] and L.resource_taxonomy().startswith("NLLB resource levels")


def test_the_report_stage_depends_on_the_language_table(tmp_path, monkeypatch):
    """Another language table (e.g. other resource levels) is another report: the report stage's inputs change,
    so a done report is rewritten instead of showing the old levels."""
    from xlt import config as xcfg
    from xlt.run.layout import RunDir
    from xlt.stages import context

    cfg = xcfg.validate({"eval": {"benchmarks": {"b": {"kind": "belebele", "path": str(tmp_path)}}}})
    run = RunDir(tmp_path / "run")
    before = context(cfg, run, "report").inputs
    assert context(cfg, run, "report").inputs == before  # the same table: the same inputs
    edited = tmp_path / "languages.tsv"
    edited.write_text(L.TABLE_PATH.read_text().replace("\tyes\thigh\n", "\tyes\tlow\n", 1))
    monkeypatch.setattr(L, "TABLE_PATH", edited)
    assert context(cfg, run, "report").inputs != before
