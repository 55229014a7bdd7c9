"""The transformers seq2seq backend on a tiny random NLLB-shaped model built offline."""

from __future__ import annotations

import json

import pytest
from datasets import load_from_disk

from tests.translation.conftest import PASSAGES, make_cfg
from xlt.data.schema import TRANSLATED_FEATURES
from xlt.errors import ConfigError, HubUnavailableError
from xlt.translation import stage
from xlt.translation.tiny import build_tiny_nllb
from xlt.translation.translator import HFSeq2SeqTranslator, build_translator


@pytest.fixture(scope="module")
def tiny_mt(tmp_path_factory):
    corpus = PASSAGES + ["What is true about item 3?", "Answer one two four", "None of the above"]
    return build_tiny_nllb(tmp_path_factory.mktemp("mt") / "tiny-nllb", corpus * 3)


def test_language_tokens_and_forced_bos(tiny_mt, monkeypatch):
    tr = build_translator(make_cfg(kind="hf", model_name_or_path=str(tiny_mt), max_new_tokens=6).translate)
    assert isinstance(tr, HFSeq2SeqTranslator)
    fra = tr.tokenizer.convert_tokens_to_ids("fra_Latn")
    assert tr.lang_token_id("fra_Latn") == fra != tr.tokenizer.unk_token_id
    with pytest.raises(ConfigError, match="not a language token"):
        tr.lang_token_id("zul_Latn")
    seen = {}
    generate = tr.model.generate

    def spy(**kw):
        seen.update(kw)
        out = generate(**kw)
        seen["out"] = out
        return out

    monkeypatch.setattr(tr.model, "generate", spy)
    outs = tr.translate(["The river is long.", "Hello there, Tom."], "eng_Latn", "fra_Latn")
    assert len(outs) == 2 and all(isinstance(o, str) for o in outs)
    assert seen["forced_bos_token_id"] == fra and seen["do_sample"] is False
    assert seen["max_new_tokens"] <= 6
    assert (seen["out"][:, 1] == fra).all()  # the target language token is the first generated token
    # The source language is set on the tokenizer: inputs start with its token.
    assert tr.tokenizer.src_lang == "eng_Latn"
    assert seen["input_ids"][0, 0].item() == tr.tokenizer.convert_tokens_to_ids("eng_Latn")


def test_identity_changes_with_generation_settings(tiny_mt):
    a = build_translator(make_cfg(kind="hf", model_name_or_path=str(tiny_mt)).translate)
    b = build_translator(make_cfg(kind="hf", model_name_or_path=str(tiny_mt), num_beams=2).translate)
    assert a.identity != b.identity and "num_beams" in a.identity


def test_generation_limit_follows_input_length(tiny_mt, monkeypatch):
    tr = build_translator(
        make_cfg(kind="hf", model_name_or_path=str(tiny_mt), max_new_tokens=200, max_new_tokens_ratio=1.0, batch_size=1).translate
    )
    limits = []
    generate = tr.model.generate
    monkeypatch.setattr(tr.model, "generate", lambda **kw: limits.append(kw["max_new_tokens"]) or generate(**kw))
    tr.translate(["Hi", PASSAGES[0] * 3], "eng_Latn", "deu_Latn")
    assert limits[0] > limits[-1]  # longest batch first, each with its own limit
    assert max(limits) <= 200


def test_stage_with_tiny_model(run, tiny_mt):
    cfg = make_cfg(kind="hf", model_name_or_path=str(tiny_mt), max_new_tokens=8, languages=["fra_Latn"],
                   quality={"drop_runaway": False})
    summary = stage.run_stage(cfg, run)
    dd = load_from_disk(str(stage.language_dir(run, "fra_Latn")))
    report = json.loads((run.data / "translation_report.json").read_text())
    counts = report["languages"]["fra_Latn"]["counts"]
    assert report["translator"].startswith("hf/") and "tiny-nllb" in report["translator"]
    assert dd["train"].features == TRANSLATED_FEATURES
    # Every input row is either in the output or counted as dropped (random models repeat themselves).
    assert counts["rows_in"] == 19
    assert counts["rows_out"] + counts.get("dropped_duplicate_options", 0) == 19
    assert summary["rows"]["fra_Latn"]["train"] + summary["rows"]["fra_Latn"]["dev"] == counts["rows_out"]
    assert counts["rows_out"] > 10
    # Later units find segments of earlier ones in the cache.
    assert counts["segments_translated"] + counts["segments_cached"] == counts["segments_unique"]
    # Rerun after deleting the outputs: the cache answers everything.
    import shutil

    shutil.rmtree(stage.translated_dir(run))
    stage.run_stage(cfg, run)
    counts2 = json.loads((run.data / "translation_report.json").read_text())["languages"]["fra_Latn"]["counts"]
    assert counts2["segments_translated"] == 0
    assert load_from_disk(str(stage.language_dir(run, "fra_Latn")))["train"].to_list() == dd["train"].to_list()


def test_unknown_target_language_fails_before_translating(run, tiny_mt):
    cfg = make_cfg(kind="hf", model_name_or_path=str(tiny_mt), languages=["zul_Latn"])
    with pytest.raises(ConfigError, match="zul_Latn"):
        stage.run_stage(cfg, run)


def test_hub_model_offline_is_a_clear_error(run, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cfg = make_cfg(kind="hf", model_name_or_path="facebook/nllb-200-distilled-600M")
    with pytest.raises(HubUnavailableError, match="translate.model_name_or_path"):
        stage.run_stage(cfg, run)


def test_long_inputs_are_truncated_and_counted(tiny_mt):
    tr = build_translator(make_cfg(kind="hf", model_name_or_path=str(tiny_mt), max_input_tokens=8).translate)
    tr.translate(["Hi", PASSAGES[0]], "eng_Latn", "fra_Latn")
    assert tr.stats["truncated_inputs"] == 1
