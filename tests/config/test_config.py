"""Config composition and validation: recipes compose, unknown keys are rejected with their name."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from xlt import cli  # noqa: F401 - registers the schema and resolvers
from xlt import config as xcfg
from xlt.errors import ConfigError

CONF = str(Path(cli.CONF_DIR))
# conf/recipe is the recipe group (a link to recipes/ in the checkout, a folder in the wheel).
RECIPES = sorted(p.stem for p in (Path(cli.CONF_DIR) / "recipe").glob("*.yaml"))
# Recipes that train the user's own checkpoint need one named.
NEEDS_CHECKPOINT = {"my_encoder": "model.name_or_path=org/my-encoder"}


def _compose(overrides: list[str]):
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


@pytest.mark.parametrize("recipe", RECIPES)
def test_every_recipe_composes_and_validates(recipe: str) -> None:
    assert len(RECIPES) > 10
    cfg = xcfg.validate(_compose([f"+recipe={recipe}", *([NEEDS_CHECKPOINT[recipe]] if recipe in NEEDS_CHECKPOINT else [])]))
    if recipe in NEEDS_CHECKPOINT:
        assert cfg.model.name == "my-encoder"  # the model's name follows the checkpoint
    assert cfg.recipe_name == recipe, "a recipe must set recipe_name to its own file name"
    assert cfg.model.trust_remote_code is False


def test_demo_recipe_picks_offline_components() -> None:
    cfg = xcfg.validate(_compose(["+recipe=demo_tiny"]))
    assert cfg.model.name_or_path == "xlt-tiny"
    assert set(cfg.data.sources) == {"race", "sciq"}
    assert all(Path(s.path).is_dir() for s in cfg.data.sources.values())
    assert {"belebele", "global_mmlu"} <= set(cfg.eval.benchmarks)


def test_misspelled_key_is_rejected_by_hydra() -> None:
    with pytest.raises(Exception, match="no_such_key"):
        _compose(["+recipe=demo_tiny", "training.no_such_key=1"])


def test_added_key_is_rejected_by_validate() -> None:
    cfg = _compose(["+recipe=demo_tiny", "+training.no_such_key=1"])
    with pytest.raises(ConfigError, match=r"training\.no_such_key"):
        xcfg.validate(cfg)


def test_wrong_type_is_rejected() -> None:
    with pytest.raises(Exception, match="learning_rate"):
        _compose(["+recipe=demo_tiny", "training.learning_rate=fast"])


def test_unknown_stage_is_rejected() -> None:
    cfg = _compose(["+recipe=demo_tiny", "stages=[build_data,trian]"])
    with pytest.raises(ConfigError, match="trian"):
        xcfg.validate(cfg)


def test_validate_keeps_values() -> None:
    cfg = xcfg.validate(_compose(["+recipe=demo_tiny", "training.learning_rate=0.5", "seed=7"]))
    assert cfg.training.learning_rate == 0.5 and cfg.seed == 7
    assert OmegaConf.is_config(cfg)
