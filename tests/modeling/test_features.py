"""Multiple-choice features: pairing, truncation of the passage only, dynamic padding."""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset

from xlt.config.model import ModelConfig
from xlt.modeling.features import MCCollator, encode_batch, tokenize_mc, tokenizer_fingerprint
from xlt.modeling.load import load_tokenizer


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(ModelConfig())


def test_four_pairs_per_question_with_the_passage_first(tok):
    batch = {"passage": ["Anna went to the market."], "question": ["Where did Anna go?"],
             "options": [["the market", "the park", "the beach", "the school"]], "label": [0]}
    out = encode_batch(batch, tok, max_length=64)
    seqs = out["input_ids"][0]
    assert len(seqs) == 4 and out["labels"] == [0]
    text = tok.decode(seqs[1])
    assert text.index("market") < text.index("Where") < text.index("park")
    assert seqs[1][0] == tok.bos_token_id  # the <s> the MC head pools
    assert out["length"] == [max(len(s) for s in seqs)]


def test_only_the_passage_is_truncated(tok):
    long_passage = " ".join(["Anna went to the market."] * 40)
    batch = {"passage": [long_passage], "question": ["Where did Anna go?"],
             "options": [["the market", "the park", "the beach", "the school"]], "label": [2]}
    seqs = encode_batch(batch, tok, max_length=32)["input_ids"][0]
    assert all(len(s) == 32 for s in seqs)
    for seq, option in zip(seqs, ["market", "park", "beach", "school"], strict=True):
        tail = tok.decode(seq[-12:])
        assert "Where did Anna go?" in tail and option in tail


def test_items_without_passage_pair_question_and_option(tok):
    batch = {"passage": [""], "question": ["What did Anna buy?"], "options": [["apples", "pears", "figs", "plums"]],
             "label": [0]}
    seqs = encode_batch(batch, tok, max_length=32)["input_ids"][0]
    toks = tok.convert_ids_to_tokens(seqs[0])
    sep = toks.index("</s>")
    assert toks[sep + 1] == "</s>"  # (question, option) as the sentence pair
    assert "▁Anna" in toks[:sep] and "▁apples" in toks[sep + 2 :]


def test_overlong_question_and_option_are_cut_to_max_length(tok):
    """A question + option longer than max_length on its own is cut too (tokenizers refuses only_first)."""
    batch = {"passage": ["short", "Anna went home."], "question": [" ".join(["why"] * 80), "Where?"],
             "options": [["a", "b", "c", "d"], ["home", "school", "park", "beach"]], "label": [0, 0]}
    out = encode_batch(batch, tok, max_length=16)["input_ids"]
    assert all(len(s) == 16 and s[-1] == tok.eos_token_id for s in out[0])
    assert tok.decode(out[1][0]).count("Anna") == 1  # the other item is encoded as usual


def test_collator_pads_to_the_longest_in_the_batch(tok):
    ds = Dataset.from_list([
        {"passage": "A b c d e f g h.", "question": "Q?", "options": ["a", "b", "c", "d"], "label": 1},
        {"passage": "A.", "question": "Q?", "options": ["a", "b", "c", "d"], "label": 3},
    ])
    feats = tokenize_mc(ds, tok, 64)
    batch = MCCollator(tok)([feats[0], feats[1]])
    longest = max(feats["length"])
    assert batch["input_ids"].shape == (2, 4, longest)
    assert batch["labels"].tolist() == [1, 3]
    short = len(feats[1]["input_ids"][0])
    assert batch["attention_mask"][1, 0].sum().item() == short
    assert torch.all(batch["input_ids"][1, 0, short:] == tok.pad_token_id)


def test_tokenization_cache_key_follows_data_tokenizer_and_length(tok, tmp_path):
    ds = Dataset.from_list([{"passage": "p", "question": "q", "options": ["a", "b", "c", "d"], "label": 0}])
    a = tokenize_mc(ds, tok, 64)
    b = tokenize_mc(ds, tok, 64)
    c = tokenize_mc(ds, tok, 32)
    assert a._fingerprint == b._fingerprint != c._fingerprint
    assert tokenizer_fingerprint(tok) == tokenizer_fingerprint(load_tokenizer(ModelConfig()))


def test_over_long_texts_are_cut_before_tokenization_without_changing_ids(tok):
    from xlt.modeling.features import max_chars

    prose = " ".join(["Anna went to the market with her little brother."] * 40)  # ~2k characters
    huge = prose + " " + "x" * 2_000_000  # a pathological 2 MB passage
    batch = {"passage": [prose, huge], "question": ["Where?", "Where?"],
             "options": [["a", "b", "c", "d"]] * 2, "label": [0, 1]}
    out = encode_batch(batch, tok, max_length=32)
    assert out["input_ids"][0] == out["input_ids"][1]  # the cut is far beyond what 32 tokens hold
    assert max_chars(32) == 32 * 32 < len(prose)
    seen = []

    class Spy:
        def __call__(self, first, second, **kwargs):
            seen.append(max(len(t) for t in first + second))
            return tok(first, second, **kwargs)

    encode_batch(batch, Spy(), max_length=32)
    assert seen == [max_chars(32)]  # the tokenizer never sees more than the cut


def test_bert_segment_ids_and_truncation_flags():
    """A WordPiece tokenizer with token_type_ids (all-MiniLM-L6-v2): 0 for [CLS] passage [SEP], 1 for
    question + option [SEP], padded by the collator; items whose passage was cut are flagged."""
    from transformers import AutoTokenizer

    from tests.pretrained import minilm_dir

    bert = AutoTokenizer.from_pretrained(minilm_dir())
    batch = {"passage": ["Anna went to the market.", " ".join(["Anna went to the market."] * 20)],
             "question": ["Where did Anna go?"] * 2, "options": [["the market", "the park", "the beach", "the school"]] * 2,
             "label": [0, 1]}
    out = encode_batch(batch, bert, max_length=32)
    assert out["truncated"] == [False, True]
    ids, types = out["input_ids"][0][1], out["token_type_ids"][0][1]
    sep = ids.index(bert.sep_token_id)
    assert types == [0] * (sep + 1) + [1] * (len(ids) - sep - 1)
    assert bert.decode(ids[sep + 1 : -1]) == "where did anna go? the park"
    feats = Dataset.from_dict(out)
    collated = MCCollator(bert)([feats[0], feats[1]])
    assert collated["token_type_ids"].shape == collated["input_ids"].shape == (2, 4, 32)
    short = len(ids)
    assert collated["token_type_ids"][0, 1, :short].tolist() == types
    assert collated["token_type_ids"][0, 1, short:].eq(bert.pad_token_type_id).all()
    assert collated["labels"].tolist() == [0, 1]


def test_xlmr_features_have_no_segment_ids_and_padding_to_a_multiple(tok):
    batch = {"passage": ["Anna went to the market."], "question": ["Where did Anna go?"],
             "options": [["the market", "the park", "the beach", "the school"]], "label": [0]}
    out = encode_batch(batch, tok, max_length=64)
    assert "token_type_ids" not in out and out["truncated"] == [False]
    feats = Dataset.from_dict(out)
    collated = MCCollator(tok, pad_to_multiple_of=8)([feats[0]])
    assert collated["input_ids"].shape[-1] % 8 == 0 and set(collated) == {"input_ids", "attention_mask", "labels"}


def test_items_keep_their_own_number_of_options(tok):
    """2-, 5- and 3-option items in one batch: each gets one pair per own option, in order; only the item
    whose passage was cut is flagged."""
    long_passage = " ".join(["Anna went to the market."] * 40)
    options = [["yes", "no"], ["red", "green", "blue", "white", "black"], ["one", "two", "three"]]
    batch = {"passage": ["Anna went home.", long_passage, ""], "question": ["Did she?", "Which colour?", "How many?"],
             "options": options, "label": [1, 4, 2]}
    out = encode_batch(batch, tok, max_length=32)
    assert [len(seqs) for seqs in out["input_ids"]] == [2, 5, 3]
    assert [len(m) for m in out["attention_mask"]] == [2, 5, 3]
    for seqs, opts in zip(out["input_ids"], options, strict=True):
        for seq, opt in zip(seqs, opts, strict=True):
            assert tok.decode(seq, skip_special_tokens=True).strip().endswith(opt)
    assert out["truncated"] == [False, True, False] and out["labels"] == [1, 4, 2]
    assert out["length"] == [max(len(s) for s in seqs) for seqs in out["input_ids"]]


def test_collator_batches_one_option_count_and_refuses_a_mix(tok):
    ds = Dataset.from_list([
        {"passage": "A b c.", "question": "Q?", "options": ["a", "b", "c"], "label": 2},
        {"passage": "A.", "question": "Q?", "options": ["x", "y", "z"], "label": 0},
        {"passage": "A.", "question": "Q?", "options": ["a", "b", "c", "d", "e"], "label": 4},
    ])
    feats = tokenize_mc(ds, tok, 64)
    batch = MCCollator(tok)([feats[0], feats[1]])
    assert batch["input_ids"].shape == (2, 3, max(feats["length"][:2])) and batch["labels"].tolist() == [2, 0]
    assert MCCollator(tok)([feats[2]])["input_ids"].shape[:2] == (1, 5)
    # transformers' collator would take the first item's count for all (dropping options silently)
    with pytest.raises(ValueError, match=r"mixes items with \[3, 5\] options"):
        MCCollator(tok)([feats[0], feats[2]])
