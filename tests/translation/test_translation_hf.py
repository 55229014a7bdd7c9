"""The NLLB / M2M100 engines (transformers' generate and CTranslate2) on a tiny random NLLB-shaped model
built offline. Tests of the stage, cache, shards, resume and translate-test take the engine as a
parameter; the ``ctranslate2`` cases are skipped where the extra is not installed."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from datasets import Dataset, Features, load_from_disk

from tests.translation.conftest import PASSAGES, make_cfg, make_run
from xlt.data.schema import EVAL_FEATURES, TRANSLATED_FEATURES
from xlt.errors import ConfigError, HubUnavailableError
from xlt.stages import call_stage
from xlt.stages import translate as stage
from xlt.translation.cache import TranslationCache
from xlt.translation.engines import build_translator, ct2
from xlt.translation.engines.hf import HFSeq2SeqTranslator
from xlt.translation.tiny import build_tiny_nllb

ENGINES = ["hf", pytest.param("ctranslate2", marks=pytest.mark.skipif(not ct2.available(), reason="no ctranslate2"))]


@pytest.fixture(scope="module")
def tiny_mt(tmp_path_factory):
    corpus = PASSAGES + ["What is true about item 3?", "Answer one two four", "None of the above"]
    return build_tiny_nllb(tmp_path_factory.mktemp("mt") / "tiny-nllb", corpus * 3)


@pytest.fixture(scope="module", autouse=True)
def xlt_cache(tmp_path_factory):
    """One XLT_CACHE (CTranslate2 conversions) for the module: each model is converted once."""
    old = os.environ.get("XLT_CACHE")
    os.environ["XLT_CACHE"] = str(tmp_path_factory.mktemp("xlt_cache"))
    yield os.environ["XLT_CACHE"]
    if old is None:
        del os.environ["XLT_CACHE"]
    else:
        os.environ["XLT_CACHE"] = old


def mt_cfg(tiny_mt, engine, **kw):
    extra = {"compute_type": "float32"} if engine == "ctranslate2" else {}
    return make_cfg(kind="hf", engine=engine, model_name_or_path=str(tiny_mt), **{**extra, **kw})


def test_language_tokens_and_forced_bos(tiny_mt, monkeypatch):
    tr = build_translator(make_cfg(kind="hf", engine="hf", model_name_or_path=str(tiny_mt), max_new_tokens=6).translate)
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


@pytest.mark.parametrize("engine", ENGINES)
def test_identity_changes_with_generation_settings(tiny_mt, engine):
    a = build_translator(mt_cfg(tiny_mt, engine).translate)
    b = build_translator(mt_cfg(tiny_mt, engine, num_beams=2).translate)
    assert a.identity != b.identity and "num_beams" in a.identity


def test_generation_limit_follows_input_length(tiny_mt, monkeypatch):
    tr = build_translator(
        make_cfg(kind="hf", engine="hf", model_name_or_path=str(tiny_mt), max_new_tokens=200, max_new_tokens_ratio=1.0, batch_size=1).translate
    )
    limits = []
    generate = tr.model.generate
    monkeypatch.setattr(tr.model, "generate", lambda **kw: limits.append(kw["max_new_tokens"]) or generate(**kw))
    tr.translate(["Hi", PASSAGES[0] * 3], "eng_Latn", "deu_Latn")
    assert limits[0] > limits[-1]  # longest batch first, each with its own limit
    assert max(limits) <= 200


@pytest.mark.parametrize("engine", ENGINES)
def test_stage_with_tiny_model(run, tiny_mt, engine):
    cfg = mt_cfg(tiny_mt, engine, max_new_tokens=8, languages=["fra_Latn"], quality={"drop_runaway": False})
    summary = call_stage("translate", cfg, run)
    dd = load_from_disk(str(run.translated_language("fra_Latn")))
    report = json.loads((run.data / "translation_report.json").read_text())
    counts = report["languages"]["fra_Latn"]["counts"]
    assert report["translator"].startswith({"hf": "hf/", "ctranslate2": "ct2/"}[engine])
    assert "tiny-nllb" in report["translator"]
    assert dd["train"].features == TRANSLATED_FEATURES
    # Every input row is either in the output or counted as dropped (random models repeat themselves).
    assert counts["rows_in"] == 19
    assert counts["rows_out"] + counts.get("dropped_duplicate_options", 0) == 19
    assert summary["rows"]["fra_Latn"]["train"] + summary["rows"]["fra_Latn"]["dev"] == counts["rows_out"]
    assert counts["rows_out"] > 10
    # Later units find segments of earlier ones in the cache.
    assert counts["segments_translated"] + counts["segments_cached"] == counts["segments_unique"]
    # Rerun after deleting the outputs: the cache answers everything.
    shutil.rmtree(run.translated)
    call_stage("translate", cfg, run)
    counts2 = json.loads((run.data / "translation_report.json").read_text())["languages"]["fra_Latn"]["counts"]
    assert counts2["segments_translated"] == 0
    assert load_from_disk(str(run.translated_language("fra_Latn")))["train"].to_list() == dd["train"].to_list()


@pytest.mark.parametrize("engine", ENGINES)
def test_unknown_target_language_fails_before_translating(run, tiny_mt, engine):
    cfg = mt_cfg(tiny_mt, engine, languages=["zul_Latn"])
    with pytest.raises(ConfigError, match="zul_Latn"):
        call_stage("translate", cfg, run)


def test_hub_model_offline_is_a_clear_error(run, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cfg = make_cfg(kind="hf", model_name_or_path="facebook/nllb-200-distilled-600M")
    with pytest.raises(HubUnavailableError, match="translate.model_name_or_path"):
        call_stage("translate", cfg, run)


@pytest.mark.parametrize("engine", ENGINES)
def test_long_inputs_are_truncated_and_counted(tiny_mt, engine):
    tr = build_translator(mt_cfg(tiny_mt, engine, max_input_tokens=8).translate)
    tr.translate(["Hi", PASSAGES[0]], "eng_Latn", "fra_Latn")
    assert tr.stats["truncated_inputs"] == 1


TEXTS = [s for p in PASSAGES for s in p.replace("\n", " ").split(". ")] + ["What is true about item 3?", "Hi"]


@pytest.mark.skipif(not ct2.available(), reason="no ctranslate2")
@pytest.mark.parametrize("settings", [{}, {"num_beams": 2}, {"max_new_tokens_ratio": None, "max_new_tokens": 7},
                                      {"max_batch_tokens": 40}], ids=["greedy", "beam2", "limit7", "token_batches"])
def test_ctranslate2_float32_output_equals_generate(tiny_mt, settings):
    hf = build_translator(mt_cfg(tiny_mt, "hf", **settings).translate)
    fast = build_translator(mt_cfg(tiny_mt, "ctranslate2", **settings).translate)
    assert isinstance(fast, ct2.CT2Translator) and fast.compute_type == "float32"
    assert fast.translate(TEXTS, "eng_Latn", "fra_Latn") == hf.translate(TEXTS, "eng_Latn", "fra_Latn")


@pytest.mark.skipif(not ct2.available(), reason="no ctranslate2")
def test_ctranslate2_batches_in_flight_on_several_workers_give_the_same_batches_in_order(tiny_mt):
    """inter_threads=2: two batches translated at once by CTranslate2's workers, yielded in the order and
    with the contents of the one-at-a-time path, each with its own generation limit."""
    from xlt.translation.engines.base import EngineSettings

    settings = EngineSettings(batch_size=3, max_new_tokens=12, device="cpu")
    one = ct2.CT2Translator(str(tiny_mt), settings, compute_type="float32", intra_threads=1)
    two = ct2.CT2Translator(str(tiny_mt), settings, compute_type="float32", intra_threads=1, inter_threads=2)
    assert two.model.num_translators == 2 and two.inter_threads == 2 and one.inter_threads == 1
    serial = list(one.translate_batches(TEXTS, "eng_Latn", "fra_Latn"))
    parallel = list(two.translate_batches(TEXTS, "eng_Latn", "fra_Latn"))
    assert len(serial) > 3 and parallel == serial
    assert two.stats["generate_calls"] == len(serial)
    hf = build_translator(mt_cfg(tiny_mt, "hf", batch_size=3, max_new_tokens=12).translate)
    assert two.translate(TEXTS, "eng_Latn", "fra_Latn") == hf.translate(TEXTS, "eng_Latn", "fra_Latn")



def test_cpu_thread_plan():
    """The CPU thread policy (docs/speed-benchmarks.md): one thread one batch; from two threads on two
    batches at once, the threads shared between them; explicit settings kept."""
    plan = ct2.cpu_thread_plan
    assert [plan(n) for n in (1, 2, 3, 4, 8, 16)] == [(1, 1), (2, 1), (2, 1), (2, 2), (2, 4), (2, 8)]
    assert plan(4, intra_threads=4) == (1, 4)  # threads asked for one batch stay on one batch
    assert plan(4, inter_threads=4) == (4, 1) and plan(8, inter_threads=3) == (3, 2) and plan(1, inter_threads=2) == (2, 1)
    assert plan(2, intra_threads=1, inter_threads=2) == (2, 1)
    for bad in ({"threads": 0}, {"threads": 2, "inter_threads": 0}):
        with pytest.raises(ConfigError):
            plan(**bad)


def test_batches_split_for_idle_workers():
    """A batch is split among CTranslate2's workers only when the input has fewer batches than workers."""
    split = ct2.split_for_workers
    assert split(32, 5, 2) == 32 and split(32, 2, 2) == 32  # enough batches: each whole
    assert split(32, 1, 2) == 16 and split(31, 1, 2) == 16 and split(10, 1, 4) == 3
    assert split(1, 1, 2) == 1 and split(3, 1, 8) == 1 and split(7, 1, 1) == 7


@pytest.mark.skipif(not ct2.available(), reason="no ctranslate2")
def test_ctranslate2_one_batch_split_between_workers_gives_the_same_output(tiny_mt, monkeypatch):
    """An input of one batch with two workers is translated in two parts at once (CTranslate2's
    max_batch_size), with the batch's generation limit: the output of the one-at-a-time path and of
    transformers."""
    from xlt.translation.engines.base import EngineSettings

    settings = EngineSettings(batch_size=64, max_new_tokens=12, device="cpu")
    one = ct2.CT2Translator(str(tiny_mt), settings, compute_type="float32", intra_threads=1)
    two = ct2.CT2Translator(str(tiny_mt), settings, compute_type="float32", intra_threads=1, inter_threads=2)
    sizes = []
    submit = two._submit
    monkeypatch.setattr(two, "_submit", lambda *a, **kw: sizes.append(kw.get("parts")) or submit(*a, **kw))
    serial = list(one.translate_batches(TEXTS, "eng_Latn", "fra_Latn"))
    parallel = list(two.translate_batches(TEXTS, "eng_Latn", "fra_Latn"))
    assert len(serial) == 1 and parallel == serial and sizes == [(len(TEXTS) + 1) // 2]
    hf = build_translator(mt_cfg(tiny_mt, "hf", batch_size=64, max_new_tokens=12).translate)
    assert parallel[0][1] == hf.translate([TEXTS[i] for i in parallel[0][0]], "eng_Latn", "fra_Latn")


@pytest.mark.skipif(not ct2.available(), reason="no ctranslate2")
def test_ctranslate2_on_cpu_runs_two_batches_at_once_from_two_threads_on(tiny_mt):
    import torch

    from xlt.translation.engines.base import EngineSettings

    before = torch.get_num_threads()
    try:
        for threads, inter in ((1, 1), (2, 2), (4, 2)):
            torch.set_num_threads(threads)
            tr = ct2.CT2Translator(str(tiny_mt), EngineSettings(device="cpu"), compute_type="float32")
            assert (tr.inter_threads, tr.model.num_translators) == (inter, inter), threads
        tr = ct2.CT2Translator(str(tiny_mt), EngineSettings(device="cpu"), compute_type="float32", intra_threads=4)
        assert tr.inter_threads == 1  # threads asked for one batch stay on one batch
    finally:
        torch.set_num_threads(before)


@pytest.mark.skipif(not ct2.available(), reason="no ctranslate2")
def test_ctranslate2_conversion_is_cached_per_checkpoint_and_quantization(tiny_mt, monkeypatch, xlt_cache):
    first = ct2.converted_model(str(tiny_mt), None, "float32")
    assert first.parent == ct2._cache_root() and str(first).startswith(xlt_cache)
    assert json.loads((first / "xlt_conversion.json").read_text())["quantization"] == "float32"
    import ctranslate2

    def no_conversion(*a, **k):
        raise AssertionError("converted twice")

    monkeypatch.setattr(ctranslate2.converters, "TransformersConverter", no_conversion)
    assert ct2.converted_model(str(tiny_mt), None, "float32") == first
    with pytest.raises(AssertionError, match="converted twice"):
        ct2.converted_model(str(tiny_mt), None, "int8")  # another quantization: another conversion
    assert not [p for p in first.parent.iterdir() if p.name.endswith(".tmp")]  # no half-written folder left
    monkeypatch.undo()
    # Engine and compute type are part of the identity: the segment cache never mixes them.
    ids = {build_translator(mt_cfg(tiny_mt, "hf").translate).identity,
           build_translator(mt_cfg(tiny_mt, "ctranslate2").translate).identity,
           build_translator(mt_cfg(tiny_mt, "ctranslate2", compute_type="int8").translate).identity}
    assert len(ids) == 3


@pytest.mark.skipif(not ct2.available(), reason="no ctranslate2")
def test_auto_engine_is_ctranslate2_for_nllb_when_installed(tiny_mt, monkeypatch):
    auto = build_translator(make_cfg(kind="hf", model_name_or_path=str(tiny_mt)).translate)
    assert isinstance(auto, ct2.CT2Translator) and auto.compute_type == "int8"  # CPU default
    monkeypatch.setattr(ct2, "available", lambda: False)
    assert isinstance(build_translator(make_cfg(kind="hf", model_name_or_path=str(tiny_mt)).translate),
                      HFSeq2SeqTranslator)
    with pytest.raises(ConfigError, match="compute_type=int8 needs engine ctranslate2"):
        build_translator(make_cfg(kind="hf", model_name_or_path=str(tiny_mt), compute_type="int8").translate)


def test_ctranslate2_rejects_other_architectures(tmp_path):
    pytest.importorskip("ctranslate2")
    from transformers import BertConfig

    BertConfig(vocab_size=10, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
               intermediate_size=8).save_pretrained(tmp_path / "bert")
    assert ct2.resolve_engine("auto", str(tmp_path / "bert")) == "transformers"  # "hf" before it was renamed
    with pytest.raises(ConfigError, match="supports NLLB / M2M100"):
        ct2.CT2Translator(str(tmp_path / "bert"), tokenizer=object())


@pytest.mark.parametrize("engine", ENGINES)
def test_shards_and_resume_after_kill_under_the_engine(tmp_path, tiny_mt, engine, monkeypatch):
    cfg = dict(max_new_tokens=8, languages=["fra_Latn"], quality={"drop_runaway": False})
    tr = build_translator(mt_cfg(tiny_mt, engine, **cfg).translate)
    monkeypatch.setattr(stage, "build_translator", lambda tcfg: tr)
    one = make_run(tmp_path / "one")
    call_stage("translate", mt_cfg(tiny_mt, engine, **cfg), one)
    ref = load_from_disk(str(one.translated_language("fra_Latn")))
    # Shards (each with its own cache), merged by the last one: the same result as one run.
    sharded = make_run(tmp_path / "sharded")
    for i in (1, 0):
        call_stage("translate", mt_cfg(tiny_mt, engine, shard_index=i, num_shards=2, **cfg), sharded)
    got = load_from_disk(str(sharded.translated_language("fra_Latn")))
    assert all(got[s].to_list() == ref[s].to_list() for s in ("train", "dev"))
    # Killed after two batches: they are in the cache, and the resumed run translates only the rest.
    killed = make_run(tmp_path / "killed")
    generate, calls = tr._generate, []

    def dies_after_two(texts, src, tgt):
        if len(calls) == 2:
            raise KeyboardInterrupt("simulated kill -9")
        calls.append(len(texts))
        return generate(texts, src, tgt)

    monkeypatch.setattr(tr, "_generate", dies_after_two)
    with pytest.raises(KeyboardInterrupt):
        call_stage("translate", mt_cfg(tiny_mt, engine, **cfg), killed)
    with TranslationCache(killed.translation_cache(mt_cfg(tiny_mt, engine).translate.cache_dir)) as cache:
        assert len(cache) == sum(calls)
    monkeypatch.setattr(tr, "_generate", generate)
    call_stage("translate", mt_cfg(tiny_mt, engine, **cfg), killed)
    counts = json.loads((killed.data / "translation_report.json").read_text())["languages"]["fra_Latn"]["counts"]
    assert counts["segments_cached"] >= sum(calls)
    got = load_from_disk(str(killed.translated_language("fra_Latn")))
    assert all(got[s].to_list() == ref[s].to_list() for s in ("train", "dev"))


@pytest.mark.parametrize("engine", ENGINES)
def test_translate_test_uses_the_engine(run, tiny_mt, engine):
    from tests.translation.test_translation_test import items
    from xlt.translation.translate_test import TranslateTestRunner

    runner = TranslateTestRunner(mt_cfg(tiny_mt, engine, max_new_tokens=6).translate, run)
    out = runner(items(), "belebele", "mixed")
    assert out["id"] == items()["id"] and out[3]["question"] == "Question 3?"  # English stays as it is
    assert out[0]["question"] != items()[0]["question"]
    info = json.loads((run.data / "translate_test" / "belebele" / "mixed.json").read_text())
    assert info["translator"].startswith({"hf": "hf/", "ctranslate2": "ct2/"}[engine])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_machine_translated_test_set_uses_the_engine_and_the_target_language(run, tiny_mt, engine):
    """``machine_translate_from``: English items translated into the job's language (Global-MMLU ``de`` ->
    NLLB's ``deu_Latn``) by the engine the translate group selects, ids and labels kept."""
    from xlt.translation.translate_test import TranslateTestRunner

    english = Dataset.from_list([{"id": f"q{i}", "language": "en", "passage": "", "question": f"What is true about item {i}?",
                                  "options": ["Answer one two four", "None of the above", "one", "two"], "label": i % 4}
                                 for i in range(3)], features=Features(EVAL_FEATURES))
    runner = TranslateTestRunner(mt_cfg(tiny_mt, engine, max_new_tokens=6).translate, run)
    out = runner.into(english, "gm_mt", "de")
    assert out["id"] == english["id"] and out["label"] == english["label"] and set(out["language"]) == {"de"}
    assert out[0]["question"] != english[0]["question"]
    info = json.loads((run.data / "machine_translated" / "gm_mt" / "de.json").read_text())
    assert info["target"] == "deu_Latn" and info["sources"] == ["en"]
    assert info["translator"].startswith({"hf": "hf/", "ctranslate2": "ct2/"}[engine])
