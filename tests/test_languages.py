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
    assert L.resource_level("hin_Deva") == "high" and L.resource_level("hin_Latn") == L.UNGROUPED
    assert L.resource_level("yor_Latn") == "low" and L.resource_level("eus_Latn") == L.UNGROUPED
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
