"""Segmenting, batching, the cache and the quality rules."""

from __future__ import annotations

import pytest
from datasets import Dataset

from tests.translation.conftest import english_rows
from xlt.data.schema import TRAIN_FEATURES
from xlt.errors import ConfigError
from xlt.translation.cache import TranslationCache, segment_key
from xlt.translation.dataset import QualityRules, translate_dataset
from xlt.translation.engines.base import EchoTranslator, Translator, length_sorted_batches
from xlt.translation.quality import has_runaway
from xlt.translation.segment import join_sentences, segment_passage


def test_segment_and_join_keep_layout():
    text = "Tom went home. He slept!\n\nThe next day, Dr. Lee called.  He said hi."
    seg = segment_passage(text)
    assert seg.sentences == ("Tom went home.", "He slept!", "The next day, Dr. Lee called.", "He said hi.")
    assert seg.separators == (" ", "\n\n", "  ")
    assert join_sentences(list(seg.sentences), seg.separators, "fra_Latn") == text.replace("  ", " ")
    # Scripts without spaces join without one; line breaks survive.
    assert join_sentences(["你好。", "再见。", "好"], (" ", "\n"), "zho_Hans") == "你好。再见。\n好"
    assert segment_passage("   ").sentences == ()


def test_segment_splits_non_latin_sentence_ends():
    assert segment_passage("我爱你。你好吗？很好").sentences == ("我爱你。", "你好吗？", "很好")


def test_length_sorted_batches():
    lengths = [3, 10, 1, 7, 7, 2]
    batches = length_sorted_batches(lengths, batch_size=2)
    assert batches == [[1, 3], [4, 0], [5, 2]]
    assert sorted(i for b in batches for i in b) == list(range(6))
    # Token budget: 2 x 10 > 12, so the longest item is alone.
    assert length_sorted_batches(lengths, batch_size=4, max_batch_tokens=12)[0] == [1]
    with pytest.raises(ConfigError):
        length_sorted_batches(lengths, batch_size=0)


def test_translate_keeps_order():
    tr = EchoTranslator(batch_size=2)
    texts = ["a", "bbbb", "cc", "ddd"]
    assert tr.translate(texts, "eng_Latn", "fra_Latn") == [f"[fra_Latn] {t}" for t in texts]


def test_cache_roundtrip_and_keys(tmp_path):
    path = tmp_path / "translation_cache"
    with TranslationCache(path) as cache:
        cache.put_many("m1", "eng_Latn", "fra_Latn", [("hello", "bonjour"), ("cat", "chat")])
        assert cache.get_many("m1", "eng_Latn", "fra_Latn", ["hello", "dog"]) == {"hello": "bonjour"}
        # Another model, setting or target language never reuses the entry.
        assert cache.get_many("m2", "eng_Latn", "fra_Latn", ["hello"]) == {}
        assert cache.get_many("m1", "eng_Latn", "deu_Latn", ["hello"]) == {}
    with TranslationCache(path) as cache:  # persisted
        assert len(cache) == 2
        assert cache.get_many("m1", "eng_Latn", "fra_Latn", ["cat"]) == {"cat": "chat"}
    assert segment_key("m", "a", "b", "x") != segment_key("m", "a", "b", "x ")


def test_has_runaway():
    assert has_runaway("The cat.", "Le chat chat chat chat chat.", min_repeats=4)
    assert not has_runaway("The cat.", "Le chat chat.", min_repeats=4)
    assert not has_runaway("Wait...", "Attends........", min_repeats=4)  # punctuation only
    assert has_runaway("Hi", "x" * 40 + "yz", max_ratio=4.0)
    assert not has_runaway("ha ha ha ha ha", "ha ha ha ha ha", min_repeats=4)  # already in the source


class ScriptedTranslator(Translator):
    """Translates by a fixed table (identity for unknown texts)."""

    def __init__(self, table):
        super().__init__()
        self.identity = "scripted"
        self.table = table

    def _generate(self, texts, src_lang, tgt_lang):
        return [self.table.get(t, t) for t in texts]


def test_quality_rules_count_and_drop():
    rows = english_rows(4, "train")
    ds = Dataset.from_list(rows, features=TRAIN_FEATURES)
    table = {
        "What is true about item 0?": "",  # empty -> source text, row kept
        "Answer 1 one": "Same",  # options 1 and 2 of row 1 become identical -> row dropped
        "Answer 1 two": "Same",
        "What is true about item 2?": "la la la la la la",  # runaway -> row dropped
    }
    res = translate_dataset(ds, ScriptedTranslator(table), None, "eng_Latn", "fra_Latn", set_language="fra_Latn")
    c = res.stats.counts
    assert res.dataset["question_id"] == ["train-q0", "train-q3"]
    assert res.dataset[0]["question"] == "What is true about item 0?"
    assert c["empty_fallback"] == 1
    assert c["dropped_duplicate_options"] == 1 and res.stats.examples["dropped_duplicate_options"] == ["sciQ/train-q1"]
    assert c["dropped_runaway"] == 1
    assert c["unchanged"] > 0  # the scripted translator leaves other texts unchanged: counted
    assert c["rows_in"] == 4 and c["rows_out"] == 2
    # With drop_runaway off, the runaway row stays but is counted.
    res2 = translate_dataset(ds, ScriptedTranslator(table), None, "eng_Latn", "fra_Latn",
                             rules=QualityRules(drop_runaway=False), set_language="fra_Latn")
    assert res2.dataset.num_rows == 3 and res2.stats.counts["runaway"] == 1
