"""The tokenizer measures (xlt/scoring/tokenizer_measures.py) on hand-computed cases: a WordPiece tokenizer
built here with a known vocabulary, so every count below is worked out by hand."""

from __future__ import annotations

import json

import pytest
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast

from tests.scoring.sample_tokenizers import VOCAB, varied_texts
from xlt.scoring import tokenizer_measures as tm


def item(i: str, question: str, options: list[str], passage: str = "") -> dict:
    return {"id": i, "passage": passage, "question": question, "options": options}


def test_word_spans_split_punctuation_at_the_edges():
    text = "«Hello,» he said: don't!"
    assert [text[a:b] for a, b in tm.word_spans(text)] == [
        "«",
        "Hello",
        ",",
        "»",
        "he",
        "said",
        ":",
        "don't",
        "!",
    ]
    assert tm.word_spans("  ") == []


def test_fertility_and_continued_words(tok):
    # "hello world, cats sat." -> hello | wor ##ld | , | ca ##t ##s | sat | .  : 8 tokens, 6 words,
    # two words in two or more pieces (world, cats)
    counts = tm.count_texts(tok, ["hello world, cats sat."])
    assert (counts["tokens"], counts["words"], counts["continued"], counts["unknown"]) == (8, 6, 2, 0)
    m = tm.measures(
        tm.language_counts(tok, [item("1", "hello world, cats sat.", [])], "eng_Latn"), None, "eng_Latn"
    )
    assert m["fertility"] == pytest.approx(8 / 6) and m["continued_words"] == pytest.approx(2 / 6)


def test_unknown_pieces_are_counted(tok):
    # "hello ሰላም ነው" -> hello [UNK] [UNK]: 2 of 3 tokens unknown (Amharic is not in the vocabulary)
    c = tm.language_counts(tok, [item("1", "hello ሰላም ነው", [])], "amh_Ethi")
    m = tm.measures(c, None, "amh_Ethi")
    assert m["unk_rate"] == pytest.approx(2 / 3)
    assert m["fertility"] == pytest.approx(1.0)  # unknown words look cheap: the reason for the unk rate


def test_script_without_spaces_has_no_fertility(tok):
    c = tm.language_counts(tok, [item("1", "猫坐", [])], "zho_Hans")
    m = tm.measures(c, c, "zho_Hans")
    assert m["fertility"] is None and m["continued_words"] is None
    assert "without spaces" in m["notes"] and "Chinese" in m["notes"]
    assert m["premium"] == pytest.approx(1.0) and m["unk_rate"] == 0.0
    for code in ("jpn_Jpan", "tha_Thai", "khm_Khmr", "lao_Laoo", "mya_Mymr", "bod_Tibt", "zh", "ja"):
        assert not tm.spaced(code)[0], code
    for code in ("eng_Latn", "amh_Ethi", "arb_Arab", "de"):
        assert tm.spaced(code)[0], code


def test_premium_on_the_parallel_items_only(tok):
    eng = [item("a", "the cat sat.", ["hello"]), item("b", "hello", ["cat"]), item("c", "cat", ["cat"])]
    deu = [item("a", "die katze saß.", ["hello"]), item("b", "hello", ["katze"])]  # no item c
    # English on a and b: (the cat sat . = 4) + hello 1 + hello 1 + cat 1 = 7;
    # German: (die katze sa ##ß . = 5) + hello 1 + hello 1 + katze 1 = 8
    e, d = tm.language_counts(tok, eng, "eng_Latn"), tm.language_counts(tok, deu, "deu_Latn")
    m = tm.measures(d, e, "deu_Latn")
    assert m["premium"] == pytest.approx(8 / 7) and m["parallel_items"] == 2
    assert tm.measures(d, None, "deu_Latn", "no English")["premium"] is None


def test_a_shared_passage_counts_once_in_the_pooled_measures(tok):
    items = [
        item("1", "cat", ["sat"], passage="hello world"),
        item("2", "sat", ["cat"], passage="hello world"),
    ]
    c = tm.language_counts(tok, items, "eng_Latn")
    # distinct texts: "hello world" (3 tokens, 2 words), "cat", "sat"
    assert (c["tokens"], c["words"]) == (5, 4)
    assert c["per_item"] == {"1": 5, "2": 5}  # each item with its passage (the premium's unit)


def test_counts_are_cached_by_the_tokenizers_fingerprint(tok, tmp_path, monkeypatch):
    monkeypatch.setenv("XLT_CACHE", str(tmp_path))
    tm._MEMO.clear()
    fp = tm.tokenizer_fingerprint(tok)
    c = tm.language_counts(tok, [item("1", "hello", [])], "eng_Latn")
    files = list((tmp_path / "tokenizer_measures" / fp).glob("eng_Latn-*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["tokens"] == c["tokens"] == 1
    tm._MEMO.clear()
    stored = json.loads(files[0].read_text())
    files[0].write_text(json.dumps({**stored, "tokens": 99}))  # read back, not recounted
    assert tm.language_counts(tok, [item("1", "hello", [])], "eng_Latn")["tokens"] == 99


@pytest.mark.parametrize("damage", ["", "{trunc", "[1, 2]", '{"key": "other"}', "{}"])
def test_a_damaged_cache_file_is_recounted_not_used(tok, tmp_path, monkeypatch, damage):
    monkeypatch.setenv("XLT_CACHE", str(tmp_path))
    tm._MEMO.clear()
    first = tm.language_counts(tok, [item("1", "hello", [])], "eng_Latn")
    (path,) = (tmp_path / "tokenizer_measures" / tm.tokenizer_fingerprint(tok)).glob("eng_Latn-*.json")
    stored = json.loads(path.read_text())
    path.write_text(damage if damage != "{}" else json.dumps({"key": stored["key"]}))  # "{}": fields missing
    tm._MEMO.clear()
    assert tm.language_counts(tok, [item("1", "hello", [])], "eng_Latn")["tokens"] == first["tokens"] == 1
    assert json.loads(path.read_text())["tokens"] == 1  # rewritten whole


def test_the_fingerprint_follows_the_vocabulary(tok):
    other = models.WordPiece({w: i for i, w in enumerate([*VOCAB, "dog"])}, unk_token="[UNK]")
    assert tm.tokenizer_fingerprint(tok) == tm.tokenizer_fingerprint(tok)
    assert tm.tokenizer_fingerprint(tok) != tm.tokenizer_fingerprint(
        PreTrainedTokenizerFast(tokenizer_object=Tokenizer(other), unk_token="[UNK]")
    )


def test_the_evaluate_stage_records_the_measures_in_each_result(tok, tmp_path, monkeypatch):
    """A scorer with a tokenizer: every result carries its measures, the premium against the copy's English
    (absent from a copy without English, with the reason), and the report's per-language rows show them."""
    from tests.fixtures.benchmarks import write_belebele
    from xlt import config as xcfg
    from xlt.reporting.tables import load_run_results
    from xlt.run.layout import RunDir
    from xlt.scoring.scorers import GoldScorer
    from xlt.stages import call_stage

    class TokenizingGold(GoldScorer):
        tokenizer = tok

    monkeypatch.setattr("xlt.stages.evaluate.build_scorer", lambda cfg, run: TokenizingGold())
    for name, langs in (("with_en", ["eng_Latn", "deu_Latn", "zho_Hans"]), ("no_en", ["deu_Latn"])):
        write_belebele(tmp_path / name, langs, n=6)
        cfg = xcfg.validate(
            {
                "eval": {
                    "bootstrap_samples": 50,
                    "scorer": "gold",
                    "benchmarks": {"belebele": {"kind": "belebele", "path": str(tmp_path / name)}},
                }
            }
        )
        run = RunDir(tmp_path / f"run_{name}")
        call_stage("evaluate", cfg, run)
        res = {lang: json.loads(run.result("belebele", lang).read_text())["tokenizer"] for lang in langs}
        assert all(
            r["tokenizer"] == tm.tokenizer_fingerprint(tok) and r["unk_rate"] is not None
            for r in res.values()
        )
        if name == "with_en":
            assert res["eng_Latn"]["premium"] == 1.0 and res["deu_Latn"]["premium"] > 0
            assert res["zho_Hans"]["fertility"] is None and "without spaces" in res["zho_Hans"]["notes"]
            df = load_run_results(run.path)["belebele"].per_language.set_index("language")
            assert df.loc["deu_Latn", "premium"] == pytest.approx(res["deu_Latn"]["premium"])
        else:
            assert res["deu_Latn"]["premium"] is None and "could not be read" in res["deu_Latn"]["notes"]
            assert res["deu_Latn"]["fertility"] > 0


def test_an_english_vocabulary_collapses_amharic_and_tibetan_to_unknown_pieces():
    """The English MiniLM's WordPiece vocabulary: every Amharic word is one [UNK] (fertility 1.0, as cheap as
    English; the unknown rate says why), Tibetan is written without spaces (no fertility) and loses its
    last syllable to [UNK] (1 of བ ##ད ་ [UNK])."""
    from transformers import AutoTokenizer

    from tests.pretrained import minilm_dir

    bert = AutoTokenizer.from_pretrained(minilm_dir())
    amh = tm.measures(tm.language_counts(bert, [item("1", "ሰላም ነው ዛሬ", [])], "amh_Ethi"), None, "amh_Ethi")
    assert (amh["fertility"], amh["continued_words"], amh["unk_rate"]) == (1.0, 0.0, 1.0)
    bod = tm.measures(tm.language_counts(bert, [item("1", "བོད་ཡིག", [])], "bod_Tibt"), None, "bod_Tibt")
    assert bod["fertility"] is None and bod["unk_rate"] == pytest.approx(1 / 4)


# Words of several scripts and the characters that make cutting a text hard: a combining mark after a
class Recording:
    """A tokenizer that records the texts of each call (``tokenizer(...)``, ``backend_tokenizer.encode`` and
    ``backend_tokenizer.encode_batch``)."""

    def __init__(self, tokenizer):
        self.tokenizer, self.calls = tokenizer, []
        outer = self

        class Backend:
            def __getattr__(self, name):
                return getattr(tokenizer.backend_tokenizer, name)

            def encode(self, text, **kw):
                outer.calls.append([text])
                return tokenizer.backend_tokenizer.encode(text, **kw)

            def encode_batch(self, texts, **kw):
                outer.calls.append(list(texts))
                return tokenizer.backend_tokenizer.encode_batch(texts, **kw)

        self.backend_tokenizer = Backend()

    def __call__(self, texts, **kw):
        self.calls.append(list(texts) if isinstance(texts, list) else [texts])
        return self.tokenizer(texts, **kw)

    def __getattr__(self, name):
        return getattr(self.tokenizer, name)


def _one_call(tokenizer, texts, with_words):
    return tm.count_texts(tokenizer, texts, with_words=with_words, max_texts=10**9, max_chars=10**12)


@pytest.mark.parametrize("with_words", [True, False])
def test_counting_in_chunks_gives_the_one_call_counts(any_tok, with_words):
    """Short texts and long ones (cut into parts, each encoded with a little context) in calls of bounded
    size: every count equals that of all texts in one call where the counts say they are not estimated,
    and no call holds more than its bound of texts, nor more characters than a part, its context and a
    checked cut's neighbourhood, however long the text."""
    texts = varied_texts(1, 60, 12) + varied_texts(2, 4, 400) + ["hello " * 50 + "cat"] + [
        " ".join(varied_texts(4, 400, 60))]  # ~100 KB
    one = Recording(any_tok)
    whole = _one_call(one, texts, with_words)
    assert len(one.calls) == 1 and whole["tokens"] > 0 and (whole["words"] > 0) == with_words
    assert whole["estimated"] == ""
    chunked = Recording(any_tok)
    got = tm.count_texts(chunked, texts, with_words=with_words, max_texts=7, max_chars=300, context=50)
    if got["estimated"]:  # cuts after a character the whole-text BPE merges with the space marker
        assert "not at a space between two letters or digits" in got["estimated"]
    assert {**got, "estimated": ""} == whole
    assert len(chunked.calls) > len(texts) // 7 and all(len(c) <= 7 for c in chunked.calls)
    for call in chunked.calls:  # a batch of short texts, a part with its context, or a checked cut's text
        assert sum(map(len, call)) <= 300 or (len(call) == 1 and len(call[0]) <= 2 * tm.CHECK_CHARS + 100), call
    assert max(len(t) for c in chunked.calls for t in c) < len(texts[-1]) // 5
