"""The offline tokenizer: reproducible from the bundled texts, XLM-R's special tokens and pair template."""

from __future__ import annotations

from xlt.modeling import tiny


def test_tokenizer_is_rebuilt_identically(tmp_path, monkeypatch):
    monkeypatch.setenv("XLT_CACHE", str(tmp_path / "a"))
    a = tiny.tiny_tokenizer()
    monkeypatch.setenv("XLT_CACHE", str(tmp_path / "b"))
    b = tiny.tiny_tokenizer()
    files_a = sorted(p.name for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files_a and (tmp_path / "a").rglob("tokenizer.json")
    ja = next((tmp_path / "a").rglob("tokenizer.json")).read_bytes()
    jb = next((tmp_path / "b").rglob("tokenizer.json")).read_bytes()
    assert ja == jb and len(ja) < 1_000_000
    assert a.get_vocab() == b.get_vocab()


def test_special_tokens_and_pair_template_follow_xlmr():
    tok = tiny.tiny_tokenizer()
    assert (tok.bos_token_id, tok.pad_token_id, tok.eos_token_id) == (0, 1, 2)
    ids = tok("Anna went home.", "Where?")["input_ids"]
    toks = tok.convert_ids_to_tokens(ids)
    assert toks[0] == "<s>" and toks[-1] == "</s>" and "</s></s>" in "".join(toks)
    # Words stay whole (punctuation split off), so a passage word can match an option.
    assert "▁bananas" in tok.convert_ids_to_tokens(tok("Anna bought bananas.")["input_ids"])


def test_corpus_covers_every_bundled_language():
    text = "".join(tiny.corpus_texts())
    for sample in ("market", "marché", "Markt", "рынок", "市场", "السوق"):
        assert sample in text, sample
