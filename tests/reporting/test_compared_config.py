"""A compared run's ``config.yaml`` is read as the values it records (issue 40, item 6): no resolver that acts
runs for it — ``${xlt_run_root:...}`` creates no folder and exits nothing, ``${oc.env:...}`` reads nothing of
the comparing user's environment — and one that cannot be read is an error naming that run."""

from __future__ import annotations

import pytest
import yaml
from omegaconf import OmegaConf

from tests.reporting.fake_runs import MODELS, write_run
from xlt import config as xcfg
from xlt.config.keys import stage_values
from xlt.errors import DataError
from xlt.reporting.compare_runs import compare_runs
from xlt.reporting.run_tables import read_config
from xlt.run.layout import RunDir

LANGS = {"deu_Latn": 60.0, "fra_Latn": 55.0}


def _set(run, key: str, value: str) -> None:
    """Write ``key: value`` into the run's config.yaml as text (an interpolation stays one)."""
    path = run / "config.yaml"
    cfg = yaml.safe_load(path.read_text())
    node = cfg
    *parents, last = key.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    path.write_text(yaml.safe_dump(cfg))


def test_xlt_run_root_in_a_compared_config_creates_no_folder(tmp_path):
    target = tmp_path / "made-by-the-comparison"
    runs = [write_run(tmp_path / name, MODELS[fam], 1, belebele=LANGS) for name, fam in (("a", "XLM-R"), ("b", "XLM-V"))]
    _set(runs[1], "run_root", f"${{xlt_run_root:{target}}}")
    compare_runs(runs, tmp_path / "cmp", samples=50)
    assert not target.exists()
    assert read_config(runs[1])["run_root"] == f"${{xlt_run_root:{target}}}"  # the text the file holds


def test_xlt_run_root_that_cannot_hold_runs_does_not_end_the_comparison(tmp_path):
    """``checked_run_root`` exits 2 for a run_root it cannot create: the comparison used to end there, with
    another run's error."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    runs = [write_run(tmp_path / name, MODELS[fam], 1, belebele=LANGS) for name, fam in (("a", "XLM-R"), ("b", "XLM-V"))]
    _set(runs[1], "run_root", f"${{xlt_run_root:{blocker}/runs}}")
    payload = compare_runs(runs, tmp_path / "cmp", samples=50)  # no SystemExit
    assert len(payload["runs"]) == 2


def test_oc_env_in_a_compared_config_reads_no_environment(tmp_path, monkeypatch):
    """An edited value naming an environment variable: the error names the text, never the variable's value."""
    monkeypatch.setenv("XLT_I40_SECRET", "value-of-the-comparing-user")
    cfg = xcfg.validate({"seed": 2})
    (tmp_path / "config.yaml").write_text(OmegaConf.to_yaml(cfg))
    RunDir(tmp_path).mark_done("train", {"provenance": {"inputs": "x", "output_id": "y",
                                                         "detail": {"config": stage_values(cfg, "train")}}})
    _set(tmp_path, "model.name_or_path", "${oc.env:XLT_I40_SECRET}")
    with pytest.raises(DataError, match=r"edited after the run") as err:
        read_config(tmp_path)
    assert "value-of-the-comparing-user" not in str(err.value) and "${oc.env:XLT_I40_SECRET}" in str(err.value)
    _set(tmp_path, "model.name_or_path", cfg.model.name_or_path)
    _set(tmp_path, "logger.note", "${oc.env:XLT_I40_SECRET}")  # a key no stage records: read as its text
    assert "value-of-the-comparing-user" not in str(read_config(tmp_path))


def test_an_interpolation_that_cannot_resolve_names_the_run(tmp_path):
    runs = [write_run(tmp_path / name, MODELS[fam], 1, belebele=LANGS) for name, fam in (("a", "XLM-R"), ("b", "XLM-V"))]
    _set(runs[1], "model.name_or_path", "${no_such.key}")
    with pytest.raises(DataError, match=rf"{runs[1] / 'config.yaml'}: an interpolation cannot be resolved"):
        compare_runs(runs, tmp_path / "cmp", samples=50)


def test_inert_interpolations_still_resolve(tmp_path):
    """``${xlt_assets:}`` (what an older or hand-written config.yaml holds) is compared as what it resolves to."""
    xcfg.register()
    cfg = xcfg.validate({"seed": 2, "model": {"name_or_path": "${xlt_assets:}/some-model"}})
    resolved = OmegaConf.to_container(cfg, resolve=True)
    (tmp_path / "config.yaml").write_text(OmegaConf.to_yaml(cfg))
    assert "${xlt_assets:}/some-model" in (tmp_path / "config.yaml").read_text()
    RunDir(tmp_path).mark_done("train", {"provenance": {"inputs": "x", "output_id": "y",
                                                         "detail": {"config": stage_values(resolved, "train")}}})
    assert read_config(tmp_path)["seed"] == 2  # not "edited": the interpolation resolves to what train ran with
    _set(tmp_path, "model.name_or_path", "${xlt_assets:}/another-model")
    with pytest.raises(DataError, match=r"edited after the run \(model.name_or_path='.*another-model' there"):
        read_config(tmp_path)
