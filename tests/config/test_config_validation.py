"""The whole config is checked before any stage runs: ranges, choices, cross-field rules, unknown keys,
secrets on the command line, run_root; and the one key table behind run names, stage inputs and
comparison."""

from __future__ import annotations

import pytest

from tests.cli import xlt
from xlt import config as xcfg
from xlt.config.compose import compose
from xlt.config.keys import key_info, names_run, result_values, stage_values
from xlt.errors import ConfigError

BAD = [
    ("training.per_device_train_batch_size=0", "training.per_device_train_batch_size=0 is out of range; it must be >= 1"),
    ("training.per_device_train_batch_size=-4", "must be >= 1"),
    ("training.gradient_accumulation_steps=0", "training.gradient_accumulation_steps=0 is out of range"),
    ("training.learning_rate=-1e-5", "training.learning_rate=-1e-05 is out of range; it must be >= 0"),
    ("model.max_length=0", "model.max_length=0 is out of range"),
    ("training.num_train_epochs=0", "training.num_train_epochs=0.0 is out of range; it must be > 0"),
    ("training.max_steps=0", "training.max_steps=0 would save an untrained model"),
    ("training.warmup_ratio=1.5", "training.warmup_ratio=1.5 is out of range"),
    ("training.save_steps=7", "training.save_steps (7) must equal training.eval_steps"),
    ("eval.benchmarks.belebele.max_questions=-3", "eval.benchmarks.belebele.max_questions=-3 is out of range"),
    ("eval.bootstrap_samples=0", "eval.bootstrap_samples=0 is out of range; it must be >= 1"),
    ("eval.batch_size=0", "eval.batch_size=0 is out of range"),
    ("seed=-1", "seed=-1 is out of range; it must be >= 0"),
    ("seed=4294967296", "seed=4294967296 is out of range"),
    ("data.seed=-5", "data.seed=-5 is out of range"),
    ("eval.bootstrap_seed=99999999999", "eval.bootstrap_seed=99999999999 is out of range"),
    ("eval.shard_index=4", "eval.shard_index=4 must be in 0..eval.num_shards-1"),
    ("translate.num_shards=0", "translate.num_shards=0 is out of range"),
    ("training.precision=bf17", "training.precision='bf17' is not allowed; use one of auto, bf16, fp16, fp32"),
    ("translate.sampling.strategy=temprature", "translate.sampling.strategy='temprature' is not allowed; use one of all, cap, temperature"),
    ("translate.precision=fp8", "translate.precision='fp8' is not allowed"),
    ("translate.kind=google", "translate.kind='google' is not allowed; use one of hf, echo"),
    ("eval.benchmarks.belebele.kind=belebel", "eval.benchmarks.belebele.kind='belebel' is not allowed; use one of belebele, global_mmlu, global_mmlu_lite"),
    ("eval.scorer=nope", "eval.scorer='nope' is not allowed; use one of mc, gold, fixed, llm"),
    ("eval.llm.dtype=bf16", "eval.llm.dtype='bf16' is not allowed; use one of auto, float32, bfloat16, float16"),
    ("eval.llm.mode=chat", "eval.llm.mode='chat' is not allowed"),
    ("logger.mode=sometimes", "logger.mode='sometimes' is not allowed"),
    ("training.lr_scheduler_type=linaer", "training.lr_scheduler_type='linaer' is not allowed"),
    ("stages=[build_data,trian]", "unknown stage(s) ['trian'] in stages"),
    ("stages=[train,train]", "lists a stage twice"),
    ("translate.languages=[french]", "translate.languages: ['french'] are not FLORES-200 codes"),
    ("translate.sampling.strategy=cap", "translate.sampling.strategy=cap needs translate.sampling.max_rows_per_language"),
    ("training.deepspeed=zero9", "training.deepspeed='zero9': no such file"),
]


@pytest.mark.parametrize("override,message", BAD, ids=[b[0] for b in BAD])
def test_bad_values_are_rejected_before_any_stage(override, message):
    with pytest.raises(ConfigError) as err:
        cfg = compose("demo_tiny", [override])
        xcfg.validate(cfg, list(cfg.stages))
    assert message in str(err.value)


def test_stage_requirements_depend_on_the_stages_that_run():
    cfg = compose("demo_tiny", ["stages=[build_data,translate]"])
    with pytest.raises(ConfigError, match="nothing to translate"):
        xcfg.validate(cfg, ["build_data", "translate"])
    xcfg.validate(cfg, ["build_data"])  # the same config is fine for a stage that needs no languages
    cfg = compose("llm_5shot")
    with pytest.raises(ConfigError, match="eval.scorer=llm needs eval.llm.model"):
        xcfg.validate(cfg, ["evaluate"])


CLI_BAD = [
    (["training.per_device_train_batch_size=0"], "training.per_device_train_batch_size=0 is out of range"),
    (["translate.sampling.strategy=temprature"], "translate.sampling.strategy='temprature' is not allowed"),
    (["+training.lerning_rate=1"], "unknown config key 'training.lerning_rate'"),
    (["+data.sources.foo.path=/x"], "data.sources.foo: unknown source; known sources:"),
    (["+model.hf_token=hf_abcdefghijklmnopqrstuvwxyz"], "override 'model.hf_token=***' passes a secret"),
]


@pytest.mark.parametrize("overrides,message", CLI_BAD, ids=[c[0][0].split("=")[0] for c in CLI_BAD])
def test_cli_names_the_key_and_starts_no_stage(tmp_path, overrides, message):
    proc = xlt("xlt.train", "+recipe=demo_tiny", *overrides, f"run_root={tmp_path}")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "xlt: error:" in proc.stderr and message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list(tmp_path.rglob("stages"))  # nothing ran
    assert "hf_abcdefghijklmnopqrstuvwxyz" not in "".join(p.name for p in tmp_path.rglob("*"))


def test_the_key_table():
    assert key_info("data.sources.race.path").affects == "build_data"
    assert key_info("translate.sampling.strategy").affects == "train"  # sampling happens when training reads
    assert key_info("translate.shard_index").split and key_info("translate.shard_index").affects is None
    assert key_info("translate.cache_dir").affects is None and not names_run("translate.cache_dir")
    assert key_info("eval.resource_groups").affects == "report"
    assert key_info("logger.project").affects is None
    assert names_run("eval.llm.model") and names_run("eval.model") and not names_run("eval.batch_size")
    assert key_info("no.such.key") is None


def test_stage_values_split_the_config_by_stage():
    cfg = compose("demo_tiny")
    build = stage_values(cfg, "build_data")
    train = stage_values(cfg, "train")
    assert "data.sources.race.path" in build and "training.learning_rate" not in build
    assert "training.learning_rate" in train and "seed" in train and "translate.sampling.strategy" in train
    assert not any(k.startswith(("logger", "run_root", "eval.shard")) for k in {**build, **train})
    values = result_values(cfg, drop=("seed",))
    assert "seed" not in values and "logger.kind" not in values and "eval.num_shards" not in values


def test_the_config_layer_asks_the_registries(monkeypatch):
    """What a config may select is what the registries hold: no hand copy to keep in step."""
    from xlt.config.data import source_names
    from xlt.data import benchmarks
    from xlt.data.sources import SOURCES, Source
    from xlt.registry import BENCHMARKS, SCORERS

    assert benchmarks.BENCHMARKS is BENCHMARKS  # one registry, below the config layer
    assert list(source_names()) == ["race", "sciq", "multirc", "mctest", "mcscript", "reclor"]  # the build order
    # Each name loads (on first use) a definition that carries that name.
    assert {k: BENCHMARKS[k].kind for k in BENCHMARKS} == {k: k for k in BENCHMARKS}
    assert all(issubclass(SOURCES[n], Source) and SOURCES[n].name == n for n in SOURCES)
    assert all(callable(SCORERS[n]) for n in SCORERS)
    with pytest.raises(ConfigError, match="kind='my_bench' is not allowed"):
        compose("demo_tiny", ["eval.benchmarks.belebele.kind=my_bench"])  # composing validates
    # Registering a benchmark is all it takes for a config to select it.
    monkeypatch.setitem(benchmarks.BENCHMARKS, "my_bench", benchmarks.BENCHMARKS["belebele"])
    assert compose("demo_tiny", ["eval.benchmarks.belebele.kind=my_bench"]).eval.benchmarks.belebele.kind == "my_bench"


def test_transformers_names_read_from_source_equal_the_enums():
    """training.optim / lr_scheduler_type choices come from transformers' source without importing it (which
    imports torch: seconds before any config error); they are exactly the installed enums' values."""
    from transformers.trainer_utils import SchedulerType
    from transformers.training_args import OptimizerNames

    from xlt.config.training import lr_schedulers, optimizers

    assert optimizers() == tuple(o.value for o in OptimizerNames) and "adamw_torch" in optimizers()
    assert lr_schedulers() == tuple(s.value for s in SchedulerType) and "linear" in lr_schedulers()
