"""xlt.cluster.sweep_configs: the config of each run, one composition per structure, equal to composing each run."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from xlt.cluster.sweep_configs import SweepConfigs
from xlt.config.compose import compose
from xlt.config.keys import leaves
from xlt.errors import ConfigError

RUNS = [
    ["+recipe=demo_tiny", "seed=1"],
    ["+recipe=demo_tiny", "seed=2", "training.learning_rate=1e-4"],
    ["+recipe=demo_tiny", "training.learning_rate=0.001", "seed=3"],
    ["+recipe=demo_tiny"],  # the leaves of the runs before are restored: the recipe's own values
    ["+recipe=demo_tiny", "seed=4", "model.lora.enabled=true", "model.lora.r=4"],
    ["+recipe=demo_tiny", "seed=5", "model.lora.target_modules=[query]"],  # a list: structural
    ["+recipe=demo_tiny", "seed=6", "model.lora={r:2}", "model.lora.r=16"],  # the order of the two decides
    ["+recipe=demo_tiny", "seed=7", "run_root=/elsewhere", "translate.engine=hf"],  # rewritten by validation
    ["+recipe=demo_tiny", "data.sources.race.path=/elsewhere/race", "seed=8"],  # an interpolation, frozen
    ["+recipe=demo_tiny", "seed=9"],  # ... frozen again for the next run
]


def _plain(cfg):
    """What a reader of the config sees (an interpolation resolved once for the runs that cannot change it)."""
    return OmegaConf.to_container(cfg, resolve=True)


@pytest.mark.filterwarnings("ignore:translate.engine=hf is deprecated")
def test_each_runs_config_is_what_composing_it_gives():
    configs = SweepConfigs()
    got = [configs.with_config(run, lambda cfg: (_plain(cfg), leaves(cfg))) for run in RUNS]
    assert configs.compositions < len(RUNS)  # the seed and learning-rate runs share one
    for run, (cached, resolved) in zip(RUNS, got, strict=True):
        composed = compose(None, run)
        assert cached == _plain(composed), run
        # what every stage's hash walks: the shared container with the run's values, as resolving it gives
        assert resolved == leaves(composed), run


def test_what_is_a_leaf():
    configs = SweepConfigs()
    assert configs.split(["+recipe=demo_tiny", "seed=3", "training.learning_rate=1e-4"]) == (
        ("+recipe=demo_tiny",), {"seed": 3, "training.learning_rate": 1e-4})
    structural, leaves = configs.split(["+recipe=x", "model=tiny", "seed=${x}", "hydra.job.name=a", "+a.b=1",
                                        "seed=1", "eval.include_path=a", "k='a b'"])
    # by its text "model=tiny" could be a value; the composed config says it is a group (not a scalar): composed
    assert leaves == {"k": "a b", "model": "tiny"} and "seed=1" in structural and "seed=${x}" in structural
    assert configs.with_config(["+recipe=demo_tiny", "model=tiny"], lambda c: c.model.name) == "tiny"
    assert configs.with_config(["+recipe=demo_tiny", "seed=9"], lambda c: c.seed) == 9


def test_a_bad_leaf_value_is_the_error_composing_gives():
    configs = SweepConfigs()
    for bad in (["+recipe=demo_tiny", "seed=abc"], ["+recipe=demo_tiny", "training.precision=fp8"]):
        with pytest.raises(ConfigError):
            compose(None, bad)
        with pytest.raises(ConfigError):
            configs.with_config(bad, _plain)
    assert configs.with_config(["+recipe=demo_tiny", "seed=1"], lambda c: c.seed) == 1  # restored after the error
    assert configs.with_config(["+recipe=demo_tiny"], lambda c: c.training.precision) == \
        compose(None, ["+recipe=demo_tiny"]).training.precision
