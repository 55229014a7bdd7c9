"""``report --compare`` runs no code of the runs it compares unless the user names the folder (issue 35)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.reporting.fake_runs import MODELS, write_run
from xlt.errors import DataError
from xlt.registry import BENCHMARKS
from xlt.reporting.compare_runs import compare_runs

KIND = "marker_pairs_issue35"

DEFINITION = f'''
from pathlib import Path
Path(__file__).with_name("EXECUTED").write_text("this file ran")
from xlt.data.benchmarks.base import Benchmark, Report

class MarkerPairs(Benchmark):
    kind = "{KIND}"
    has_passage = False
    paper = "marker"
    report = Report(title="Marker")

    def languages(self, bcfg):
        return ["deu_Latn"]

    def load_all(self, bcfg, language, split="test"):
        raise NotImplementedError("never loaded by a comparison")
'''


def _runs(tmp_path: Path) -> tuple[Path, list[Path]]:
    folder = tmp_path / "defs"
    folder.mkdir()
    (folder / "marker.py").write_text(DEFINITION)
    runs = []
    for name, model in (("a", "XLM-R"), ("b", "XLM-V")):
        run = write_run(tmp_path / name, MODELS[model], 1,
                        others={"pairs": {"kind": KIND, "n_options": 2, "accuracies": {"deu_Latn": 60.0}}}, n=10)
        cfg = yaml.safe_load((run / "config.yaml").read_text())
        cfg["eval"]["include_path"] = [str(folder)]
        (run / "config.yaml").write_text(yaml.safe_dump(cfg))
        runs.append(run)
    return folder, runs


def test_a_compared_runs_include_path_is_not_executed_without_consent(tmp_path):
    folder, runs = _runs(tmp_path)
    with pytest.raises(DataError) as err:
        compare_runs(runs, tmp_path / "cmp")
    assert not (folder / "EXECUTED").exists() and KIND not in BENCHMARKS
    msg = str(err.value)
    assert f"kind {KIND!r}" in msg and str(folder) in msg and f"--include-path {folder}" in msg
    # the command line says the same, and exits 2 without running the file
    proc = subprocess.run([sys.executable, "-m", "xlt.report", "--compare", *map(str, runs), "--out",
                           str(tmp_path / "cmp2")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "--include-path" in proc.stderr and not (folder / "EXECUTED").exists()


def test_the_folder_named_by_the_user_is_run(tmp_path):
    folder, runs = _runs(tmp_path)
    payload = compare_runs(runs, tmp_path / "cmp", samples=50, include_paths=[folder])
    assert (folder / "EXECUTED").exists() and "pairs" in payload["benchmarks"]
