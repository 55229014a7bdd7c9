"""Translate-test: benchmark items into English."""

from __future__ import annotations

import pytest
from datasets import Dataset, Features, Value

from xlt.data.schema import EVAL_FEATURES
from xlt.errors import ConfigError
from xlt.translation.cache import TranslationCache
from xlt.translation.engines.base import EchoTranslator
from xlt.translation.quality import QualityStats
from xlt.translation.translate_test import to_flores, translate_items


def items() -> Dataset:
    feats = Features({**EVAL_FEATURES, "subject": Value("string")})
    rows = []
    for i, lang in enumerate(["fra_Latn", "de", "fra_Latn", "eng_Latn", "de"]):
        rows.append(
            {
                "id": f"q{i}",
                "language": lang,
                "passage": "" if lang == "de" else "Le chat dort. Il fait beau.",
                "question": f"Question {i}?",
                "options": ["A", "B", "C", "C"] if i == 4 else [f"o{i}a", f"o{i}b", f"o{i}c", f"o{i}d"],
                "label": i % 4,
                "subject": "anatomy",
            }
        )
    return Dataset.from_list(rows, features=feats)


def test_translate_items_into_english(tmp_path):
    stats: dict[str, QualityStats] = {}
    with TranslationCache(tmp_path / "translation_cache") as cache:
        out = translate_items(items(), EchoTranslator(batch_size=3), cache, stats=stats)
    assert out["id"] == ["q0", "q1", "q2", "q3", "q4"]  # original order
    assert out["language"] == ["fra_Latn", "de", "fra_Latn", "eng_Latn", "de"]  # kept for per-language results
    assert out.features == items().features
    assert out[0]["passage"] == "[eng_Latn] Le chat dort. [eng_Latn] Il fait beau."
    assert out[1]["passage"] == ""  # empty passages (Global-MMLU) stay empty
    assert out[1]["question"] == "[eng_Latn] Question 1?"
    assert out[3]["question"] == "Question 3?"  # already English: untouched
    assert out[2]["options"] == [f"[eng_Latn] o2{c}" for c in "abcd"]
    assert out["label"] == [0, 1, 2, 3, 0] and out["subject"] == ["anatomy"] * 5
    # No item is dropped; a duplicate option is only flagged.
    assert stats["de"].counts["flagged_duplicate_options"] == 1
    assert set(stats) == {"fra_Latn", "de"}


def test_translate_items_uses_cache(tmp_path):
    class Counting(EchoTranslator):
        n = 0

        def _generate(self, texts, src, tgt):
            Counting.n += len(texts)
            return super()._generate(texts, src, tgt)

    with TranslationCache(tmp_path / "translation_cache") as cache:
        translate_items(items(), Counting(), cache)
        first = Counting.n
        again = translate_items(items(), Counting(), cache)
    assert first > 0 and Counting.n == first
    assert again[0]["question"] == "[eng_Latn] Question 0?"


def test_to_flores():
    assert to_flores("fra_Latn") == "fra_Latn"
    assert to_flores("de") == "deu_Latn"
    assert to_flores("zh") == "zho_Hans"
    assert to_flores("xx", {"xx": "fra_Latn"}) == "fra_Latn"
    with pytest.raises(ConfigError, match="'qq'"):
        to_flores("qq")


def test_translate_test_runner_writes_quality(run):
    import json

    from tests.translation.conftest import make_cfg
    from xlt.translation.translate_test import TranslateTestRunner

    runner = TranslateTestRunner(make_cfg().translate, run)  # translate.kind=echo
    out = runner(items(), "belebele", "mixed")
    assert out[0]["question"] == "[eng_Latn] Question 0?"
    info = json.loads((run.data / "translate_test" / "belebele" / "mixed.json").read_text())
    assert info["translator"] == "echo/v1" and info["counts"]["flagged_duplicate_options"] == 1
