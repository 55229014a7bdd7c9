"""translate.precision=auto (and engine / compute_type) resolved once per run (xlt.translation.resolution): shards
on a GPU with bf16 and on a CPU hash the same, keep each other's parts and hit the same cache entries; a node
that cannot run the recorded dtype says so; xlt status's check on a login node (no GPU) agrees."""

from __future__ import annotations

import json

import pytest
import torch

from tests.translation.conftest import make_cfg, make_run
from xlt.contract import context, stale_reason
from xlt.errors import ConfigError
from xlt.stages import STAGES, run_stages
from xlt.stages import translate as stage
from xlt.translation import resolution
from xlt.translation.engines.base import EchoTranslator


class PinnedStub(EchoTranslator):
    """Stands for the transformers translator: its identity (the cache key) holds the precision it is built
    with, as HFSeq2SeqTranslator's holds its dtype."""

    built: list[str] = []
    translated = 0

    def __init__(self, tcfg):
        super().__init__(batch_size=4)
        self.identity = f"hf/stub/{tcfg.engine}/{tcfg.precision}"
        PinnedStub.built.append(str(tcfg.precision))

    def _generate(self, texts, src_lang, tgt_lang):
        PinnedStub.translated += len(texts)
        return super()._generate(texts, src_lang, tgt_lang)


def node(monkeypatch, gpu: str | None, bf16: bool = False) -> None:
    """This process as a node: a GPU (bf16 or not), or none (a CPU node, a login node)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu is not None)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: bf16)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a, **k: gpu or "")


@pytest.fixture
def model(tmp_path):
    folder = tmp_path / "nllb"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "m2m_100"}')
    return str(folder)


def cfg_of(model: str, **kw):
    return make_cfg(**{"kind": "hf", "engine": "transformers", "model_name_or_path": model, **kw})


def test_shards_on_a_bf16_gpu_and_on_a_cpu_agree(tmp_path, monkeypatch, model):
    PinnedStub.built, PinnedStub.translated = [], 0
    monkeypatch.setattr(stage, "build_translator", PinnedStub)
    run = make_run(tmp_path / "run")
    shard = [cfg_of(model, num_shards=2, shard_index=i) for i in (0, 1)]

    node(monkeypatch, "NVIDIA A100-SXM4-80GB", bf16=True)  # the first shard to start resolves and records
    run_stages(shard[0], run, ["translate"])
    record = json.loads((run.data / resolution.RECORD).read_text())
    assert record["resolved"] == {"engine": "hf", "dtype": "bfloat16"}
    parts = sorted(p.name for p in run.translation_parts.rglob("*-*-*"))
    assert parts and PinnedStub.built == ["bf16"]
    inputs_a = context(shard[0], run, STAGES["translate"]).inputs

    node(monkeypatch, "Tesla K80", bf16=False)  # cannot run the recorded dtype: says so, deletes nothing
    with pytest.raises(ConfigError, match=r"K80.*does not support bfloat16.*translate.precision"):
        run_stages(shard[1], run, ["translate"])
    assert sorted(p.name for p in run.translation_parts.rglob("*-*-*")) == parts

    node(monkeypatch, None)  # a CPU node: the same hash, the other shard's parts kept, the same translator
    assert context(shard[1], run, STAGES["translate"]).inputs == inputs_a
    first = PinnedStub.translated
    run_stages(shard[1], run, ["translate"])
    assert PinnedStub.built[-1] == "bf16"
    assert run.is_done("translate")  # merged: shard 0's parts were kept (not discarded as "other inputs")
    assert PinnedStub.translated > first

    # xlt status on a login node (no GPU): done, not stale, with or without the shard settings.
    for cfg in (shard[1], cfg_of(model)):
        spec = STAGES["translate"]
        assert stale_reason(run, spec, context(cfg, run, spec, force=False, table=STAGES), cfg) is None

    # Redone on the CPU node from scratch: every segment is a cache hit (the same cache keys as on the GPU).
    done = PinnedStub.translated
    run_stages(_forced(cfg_of(model)), run, ["translate"])
    assert PinnedStub.translated == done
    assert run.is_done("translate")


def _forced(cfg):
    cfg.force = True
    return cfg


def test_a_run_finished_before_the_record_is_not_stale_on_another_node(tmp_path, monkeypatch, model):
    monkeypatch.setattr(stage, "build_translator", PinnedStub)
    run = make_run(tmp_path / "run")
    node(monkeypatch, "NVIDIA H100", bf16=True)
    run_stages(cfg_of(model), run, ["translate"])
    (run.data / resolution.RECORD).unlink()  # as an earlier xlt left it: only the done-marker's record
    node(monkeypatch, None)
    spec = STAGES["translate"]
    assert stale_reason(run, spec, context(cfg_of(model), run, spec), cfg_of(model)) is None
    assert resolution.pin(cfg_of(model).translate, run) == {"engine": "hf", "dtype": "bfloat16"}  # adopted, not re-resolved
    assert json.loads((run.data / resolution.RECORD).read_text())["how"].startswith("adopted")


def test_other_settings_are_resolved_again(tmp_path, monkeypatch, model):
    run = make_run(tmp_path / "run")
    node(monkeypatch, "NVIDIA A100", bf16=True)
    assert resolution.pin(cfg_of(model).translate, run)["dtype"] == "bfloat16"
    node(monkeypatch, None)
    assert resolution.pin(cfg_of(model).translate, run)["dtype"] == "bfloat16"  # kept
    assert resolution.pin(cfg_of(model, precision="fp32").translate, run)["dtype"] == "float32"  # another translator
    assert resolution.resolve(cfg_of(model).translate, run)["dtype"] == "float32"  # this machine's, until it runs here


def test_a_second_host_finds_the_first_record(tmp_path, monkeypatch, model):
    """Two shards starting together: the one that links the record second takes the first's."""
    run = make_run(tmp_path / "run")
    node(monkeypatch, None)
    real_read = resolution.read
    calls = []

    def read_late(r, translate):  # the other host records between this one's check and its own write
        calls.append(1)
        if len(calls) == 1:
            other = {"settings": resolution.settings(translate), "resolved": {"engine": "hf", "dtype": "bfloat16"},
                     "host": "gpu-a100-03"}
            (r.data / resolution.RECORD).write_text(json.dumps(other))
            return None
        return real_read(r, translate)

    monkeypatch.setattr(resolution, "read", read_late)
    assert resolution.pin(cfg_of(model).translate, run) == {"engine": "hf", "dtype": "bfloat16"}
    assert json.loads((run.data / resolution.RECORD).read_text())["host"] == "gpu-a100-03"


def test_pinned_config_fixes_what_auto_leaves_open(model):
    t = cfg_of(model, engine="auto").translate
    hf = resolution.pinned_config(t, {"engine": "hf", "dtype": "bfloat16"})
    assert (hf.engine, hf.precision, t.engine, t.precision) == ("transformers", "bf16", "auto", "auto")
    ct = resolution.pinned_config(t, {"engine": "ctranslate2", "compute_type": "int8_float16", "ctranslate2": "4.5"})
    assert (ct.engine, ct.compute_type, ct.precision) == ("ctranslate2", "int8_float16", "auto")
    assert resolution.pinned_config(t, {"unresolved": "no GPU"}) is t
    echo = make_cfg().translate
    assert resolution.pinned_config(echo, {"kind": "echo"}) is echo


def test_runs_sharing_a_cache_resolve_as_the_first_did(tmp_path, monkeypatch, model):
    """The paper sweep: one run translates on an A100 into the shared cache; another run, on a CPU node, adopts
    the cache's record and translates nothing (every segment a hit)."""
    PinnedStub.built, PinnedStub.translated = [], 0
    monkeypatch.setattr(stage, "build_translator", PinnedStub)
    shared = str(tmp_path / "shared")
    node(monkeypatch, "NVIDIA A100", bf16=True)
    run_stages(cfg_of(model, cache_dir=shared), make_run(tmp_path / "a"), ["translate"])
    assert list((tmp_path / "shared" / "translation_cache" / "translators").glob("*.json"))
    done = PinnedStub.translated
    node(monkeypatch, None)
    other = make_run(tmp_path / "b")
    run_stages(cfg_of(model, cache_dir=shared), other, ["translate"])
    assert PinnedStub.translated == done and PinnedStub.built[-1] == "bf16"
    assert "shared cache" in json.loads((other.data / resolution.RECORD).read_text())["how"]


def test_translate_test_reads_the_record(tmp_path, monkeypatch, model):
    """The evaluate stage's translate-test hashes (translator_inputs) read the run's record too."""
    from xlt.stages.inputs import translator_inputs

    run = make_run(tmp_path / "run")
    node(monkeypatch, "NVIDIA H100", bf16=True)
    resolution.pin(cfg_of(model).translate, run)
    node(monkeypatch, None)
    assert translator_inputs(cfg_of(model), run)["resolved"] == {"engine": "hf", "dtype": "bfloat16"}
    assert translator_inputs(cfg_of(model))["resolved"] == {"engine": "hf", "dtype": "float32"}  # no run: this machine


def test_engines_that_resolve_nothing_are_not_pinned(tmp_path):
    """echo and plug-in engines: their code's identity enters the hashes and must follow an upgrade."""
    run = make_run(tmp_path / "run")
    assert resolution.pin(make_cfg().translate, run) == {"kind": "echo"}
    assert not (run.data / resolution.RECORD).exists()
