"""A user's own recipes in their own folder (``hydra.searchpath``), the ``own`` model group and the
``xlt`` console command; trainer names (optimizer, scheduler) checked against transformers' enums at
config time."""

from __future__ import annotations

import pytest
import yaml

from tests.cli import xlt
from xlt import config as xcfg
from xlt.errors import ConfigError

RECIPE = """# @package _global_
defaults:
  - override /model: own
  - override /data: demo
  - override /training: demo
  - override /eval: demo
recipe_name: {name}
description: a user's recipe outside the checkout
training:
  optim: {optim}
"""


@pytest.mark.slow  # over 10 s of full runs through the CLI: the slow tier, docs/testing.md
def test_user_recipe_from_searchpath_names_run_after_the_checkpoint_and_bad_optim_fails_first(tmp_path):
    folder = tmp_path / "my_recipes"
    (folder / "recipe").mkdir(parents=True)
    (folder / "recipe" / "typo.yaml").write_text(RECIPE.format(name="typo", optim="adamw_torchh"))
    (folder / "recipe" / "mine.yaml").write_text(RECIPE.format(name="mine", optim="adafactor"))
    checkpoint = tmp_path / "my-bert"  # build_data does not load it
    checkpoint.mkdir()
    root = tmp_path / "runs"
    search = f"hydra.searchpath=[file://{folder}]"

    bad = xlt("xlt", "train", "+recipe=typo", search, f"model.name_or_path={checkpoint}", f"run_root={root}")
    assert bad.returncode == 2, bad.stderr[-2000:]
    assert "xlt: error:" in bad.stderr and "training.optim='adamw_torchh' is not allowed" in bad.stderr
    assert "adamw_torch_fused" in bad.stderr  # the allowed names are transformers' own
    assert not list(root.rglob("train_set")) and not list(root.rglob("stages"))  # stopped before build_data

    ok = xlt("xlt", "train", "+recipe=mine", search, f"model.name_or_path={checkpoint}", "stages=[build_data]",
             f"run_root={root}")
    assert ok.returncode == 0, ok.stderr[-2000:]
    (run,) = (root / "mine").iterdir()
    assert "my-bert" in run.name
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["model"]["name"] == "my-bert" and saved["training"]["optim"] == "adafactor"
    assert (run / "data" / "train_set" / "dataset_dict.json").is_file()


@pytest.mark.parametrize(("key", "value"), [("training.optim", "adamw_torchh"),
                                            ("training.lr_scheduler_type", "cosine_with_restart")])
def test_trainer_names_are_checked_against_transformers(key, value):
    from transformers.trainer_utils import SchedulerType
    from transformers.training_args import OptimizerNames

    with pytest.raises(ConfigError, match=f"{key}='{value}' is not allowed"):
        xcfg.validate({key.split(".")[0]: {key.split(".")[1]: value}})
    # Every name transformers knows is accepted, including ones a hand-written list had missed.
    for name in [s.value for s in SchedulerType][-3:] + [o.value for o in OptimizerNames][-3:]:
        field = "lr_scheduler_type" if name in {s.value for s in SchedulerType} else "optim"
        xcfg.validate({"training": {field: name}})


def test_own_model_without_a_checkpoint_is_a_config_error():
    from xlt.config.model import UNSET_CHECKPOINT

    with pytest.raises(ConfigError, match="model.name_or_path is not set"):
        xcfg.validate({"model": {"name_or_path": UNSET_CHECKPOINT}})
