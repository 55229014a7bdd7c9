"""The translate config group and the translate-train-all recipes compose and validate."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

import xlt.cli
from xlt import config as xcfg
from xlt import languages
from xlt.training.data import translate_train_all

CONF = Path(xlt.cli.CONF_DIR)


def _compose(overrides):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return xcfg.validate(compose("config", overrides=overrides))


@pytest.mark.parametrize("option", ["nllb", "nllb_gmmlu", "echo", "none"])
def test_translate_options_validate(option):
    cfg = _compose(["+recipe=demo_tiny", f"translate={option}"])
    codes = set(languages.codes())
    assert all(c in codes and c != "eng_Latn" for c in cfg.translate.languages)
    if option == "nllb":
        from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

        assert len(cfg.translate.languages) == 115
        assert set(cfg.translate.languages) <= set(FAIRSEQ_LANGUAGE_CODES)
        assert cfg.translate.model_name_or_path == "facebook/nllb-200-distilled-600M"
    if option == "none":
        assert list(cfg.translate.languages) == []


@pytest.mark.parametrize("recipe", ["xlmr_translate_train_all", "xlmv_translate_train_all", "infoxlm_translate_train_all"])
def test_translate_train_all_recipes(recipe):
    needed = [CONF / "training" / "base.yaml", CONF / "eval" / "full.yaml", CONF / "data" / "six_sources.yaml"]
    needed.append(CONF / "model" / f"{recipe.split('_')[0]}_base.yaml")
    missing = [str(p.relative_to(CONF)) for p in needed if not p.exists()]
    if missing:
        pytest.skip(f"groups written by other parts are not there yet: {missing}")
    cfg = _compose([f"+recipe={recipe}"])
    assert translate_train_all(cfg)  # decided by the translate group and the stages, not a second flag
    assert list(cfg.stages) == ["build_data", "translate", "train", "evaluate", "report"]
    assert cfg.translate.kind == "hf" and len(cfg.translate.languages) == 115


@pytest.mark.parametrize("settings,message", [
    ({"engine": "hf", "compute_type": "int8"}, "translate.compute_type=int8 applies to engine=ctranslate2 only"),
    ({"precision": "fp16", "compute_type": "int8"}, "both set the number format"),
    ({"engine": "hf", "device": "cuda:0,1"}, "a list of GPUs needs engine=ctranslate2"),
    ({"engine": "ctranslate2", "device": "gpu"}, "translate.device='gpu': use auto, cpu, cuda"),
    ({"engine": "ct2"}, "translate.engine='ct2' is not allowed; use one of auto, transformers, ctranslate2"),
    ({"compute_type": "int4"}, "translate.compute_type='int4' is not allowed"),
], ids=["compute_type_hf", "two_formats", "gpu_list_hf", "bad_device", "bad_engine", "bad_compute_type"])
def test_engine_settings_that_cannot_be_honoured_are_config_errors(settings, message):
    from tests.translation.conftest import make_cfg
    from xlt import config as xcfg
    from xlt.errors import ConfigError

    with pytest.raises(ConfigError, match=re.escape(message)):
        xcfg.validate(make_cfg(kind="hf", **settings), ["translate"])
