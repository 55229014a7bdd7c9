"""Benchmarks from outside xlt's tree, with no file of xlt edited: a definition file in a folder given by
``eval.include_path``, and a throw-away installed package's entry point (group ``xlt.benchmarks``) seen by
a wheel-installed xlt in its own virtual environment, outside the checkout. Both are put into a run from
the command line (``+eval.benchmarks.xcsqa.kind=xcsqa``) and evaluated with the tiny encoder."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.cli import ENV, REPO
from tests.fixtures.plugin.xcsqa import write_data
from xlt.config.compose import compose
from xlt.errors import ConfigError
from xlt.registry import BENCHMARKS, SCORERS, SOURCES, _entry_point_dists, _entry_points, include
from xlt.run.layout import RunDir
from xlt.stages import call_stage

FOLDER = REPO / "tests" / "fixtures" / "plugin"  # one definition file: xcsqa.py
# The demo's own benchmarks left out, so only the new one is evaluated.
ONLY_NEW = ["eval.benchmarks.belebele.enabled=false", "eval.benchmarks.global_mmlu.enabled=false",
            "eval.benchmarks.xcopa.enabled=false", "eval.bootstrap_samples=20"]


def new_benchmark(data: Path, model: Path) -> list[str]:
    return ["+eval.benchmarks.xcsqa.kind=xcsqa", f"eval.benchmarks.xcsqa.path={data}", "eval.scorer=mc",
            f"eval.model={model}", *ONLY_NEW]


def test_a_definition_file_in_a_folder_is_evaluated(tmp_path, tiny_mc, monkeypatch):
    data = write_data(tmp_path / "xcsqa")
    cfg = compose("demo_tiny", [f"eval.include_path=[{FOLDER}]", *new_benchmark(data, tiny_mc[0])])
    assert [n for n, b in cfg.eval.benchmarks.items() if b.enabled] == ["xcsqa"]
    monkeypatch.chdir(FOLDER.parent)  # a relative folder is kept absolute (config.yaml finds it from anywhere)
    assert compose("demo_tiny", ["eval.include_path=[plugin]"]).eval.include_path == [str(FOLDER)]
    assert BENCHMARKS["xcsqa"].title == "X-CSQA" and type(BENCHMARKS["xcsqa"]).__name__ == "XCSQA"
    run = RunDir(tmp_path / "run")
    summary = call_stage("evaluate", cfg, run)
    assert summary["xcsqa"]["n_languages"] == 2 and summary["xcsqa"]["n_questions"] == 12
    res = json.loads((run.eval / "xcsqa" / "fr.json").read_text())
    assert res["kind"] == "xcsqa" and res["n"] == 6 and res["chance"] == pytest.approx(20.0)
    preds = [json.loads(x) for x in (run.eval / "xcsqa" / "predictions" / "fr.jsonl").read_text().splitlines()]
    assert [p["gold"] for p in preds] == [i % 5 for i in range(6)] and all(len(p["scores"]) == 5 for p in preds)
    assert include([str(FOLDER)]) == ["xcsqa"]  # each file runs once per process: no second registration
    call_stage("report", cfg, run)  # the definition's title names it for people
    report = (run.path / "report.md").read_text()
    assert "\n## X-CSQA\n" in report and "(xcsqa)" not in report
    assert "X-CSQA" in (run.path / "report.html").read_text()


def test_a_new_benchmark_entry_is_checked_like_any(tmp_path):
    with pytest.raises(ConfigError, match=r"kind='xcsqb' is not allowed; use one of belebele, .*eval.include_path"):
        compose("demo_tiny", ["+eval.benchmarks.xcsqa.kind=xcsqb"])
    with pytest.raises(ConfigError, match=r"eval.benchmarks.belebel has no kind: add eval.benchmarks.belebel.kind="):
        compose("demo_tiny", ["eval.benchmarks.belebel.path=/data/belebele"])  # a misspelled entry is a new one
    with pytest.raises(ConfigError, match=r"eval.benchmarks.xcsqa.max_questions=0 is out of range"):
        compose("demo_tiny", ["+eval.benchmarks.xcsqa.kind=xcopa", "eval.benchmarks.xcsqa.max_questions=0"])


def test_bad_definition_folders_are_named(tmp_path):
    with pytest.raises(ConfigError, match=r"eval.include_path: .*nowhere is not a folder"):
        include([str(tmp_path / "nowhere")])
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "broken.py").write_text("import math\n\nx = math.nope\n")
    with pytest.raises(ConfigError, match=r"broken.py line 3: AttributeError: .*nope"):
        include([str(bad)])
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "mine.py").write_text((FOLDER / "xcsqa.py").read_text().replace('kind = "xcsqa"', 'kind = "belebele"'))
    with pytest.raises(ConfigError, match=r"mine.py: benchmark kind 'belebele' is already registered by "
                                          r"xlt.data.benchmarks.belebele:Belebele; give it another name"):
        include([str(taken)])
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.py").write_text("X = 1\n")
    with pytest.raises(ConfigError, match=r"notes.py defines no benchmark or source"):
        include([str(empty)])


def test_entry_points_of_the_sources_and_scorers_groups_register(tmp_path, monkeypatch):
    """An installed distribution's entry points (read by importlib.metadata from its dist-info) add a
    training source and a scorer by name, loaded only when used."""
    dist = tmp_path / "site" / "extra-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: extra\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[xlt.sources]\nrace_copy = xlt.data.sources.race:Race\n\n"
                                           "[xlt.scorers]\nalways_gold = xlt.scoring.scorers:GoldScorer\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    _entry_points.cache_clear()
    _entry_point_dists.cache_clear()
    try:
        from xlt.data.sources.race import Race
        from xlt.scoring.scorers import GoldScorer

        assert SOURCES.names()[-1] == "race_copy" and SOURCES["race_copy"] is Race  # after xlt's own, in order
        assert SCORERS["always_gold"] is GoldScorer
        assert compose("demo_tiny", ["eval.scorer=always_gold"]).eval.scorer == "always_gold"
        # its distribution's version enters the job hash of every result it scores (issue 35)
        assert SCORERS.identity("always_gold") == "dist:extra==0.1" and SCORERS.identity("gold") is None
    finally:
        monkeypatch.undo()
        _entry_points.cache_clear()
        _entry_point_dists.cache_clear()
    assert "always_gold" not in SCORERS and "race_copy" not in SOURCES.names()


PYPROJECT = """[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "xcsqa-plugin"
version = "0.1"

[tool.setuptools]
py-modules = ["xcsqa_plugin"]

[project.entry-points."xlt.benchmarks"]
xcsqa = "xcsqa_plugin:XCSQA"
"""


@pytest.mark.slow  # over 15 s (several full runs, a wheel, a sweep): the slow tier, docs/testing.md
def test_an_installed_package_adds_a_benchmark_to_a_wheel_installed_xlt(tmp_path, tiny_mc):
    """As .ci/run installs xlt: its wheel in a virtual environment whose .pth file points at the installed
    dependencies; beside it a package with one definition and an entry point. Run outside the checkout."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "pyproject.toml").write_text(PYPROJECT)
    shutil.copy(FOLDER / "xcsqa.py", pkg / "xcsqa_plugin.py")
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(REPO), str(pkg)],
                   check=True, cwd=tmp_path, timeout=300)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True, timeout=120)
    python = str(tmp_path / "venv" / "bin" / "python")
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    installed = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    Path(purelib, "installed-dependencies.pth").write_text("\n".join(installed) + "\n")
    subprocess.run([*pip, "--python", python, "install", "--no-deps", "--ignore-installed", *map(str, sorted(wheels.glob("*.whl")))],
                   check=True, timeout=300)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}
    data = write_data(tmp_path / "xcsqa")
    out = subprocess.run([python, "-m", "xlt.evaluate", "+recipe=demo_tiny", f"run_root={tmp_path / 'runs'}",
                          *new_benchmark(data, tiny_mc[0])], cwd=elsewhere, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    [result] = (tmp_path / "runs").glob("demo_tiny/*/eval/xcsqa/en.json")
    res = json.loads(result.read_text())
    assert res["kind"] == "xcsqa" and res["n"] == 6 and res["chance"] == pytest.approx(20.0)
    where = subprocess.run([python, "-c", "import xlt, xcsqa_plugin; print(xlt.__file__, xcsqa_plugin.__file__)"],
                           cwd=elsewhere, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert all(Path(p).is_relative_to(tmp_path / "venv") for p in where), where  # not the checkout's xlt


def test_a_definition_file_enters_the_job_hash_by_its_content(tmp_path):
    """Editing a definition file of eval.include_path without bumping its version recomputes its results:
    its content is in the job hash (issue 35). Each process runs a file once, so the next process is
    simulated by forgetting the registration (as tests/conftest.py does after every test)."""
    import shutil

    from xlt import registry
    from xlt.scoring.jobs import job_settings

    folder = tmp_path / "defs"
    folder.mkdir()
    shutil.copy(FOLDER / "xcsqa.py", folder / "xcsqa.py")
    data = write_data(tmp_path / "xcsqa")

    def versions() -> dict:
        cfg = compose("demo_tiny", [f"eval.include_path=[{folder}]", *new_benchmark(data, tmp_path / "m")])
        return job_settings(cfg.eval, "xcsqa")["versions"]

    first = versions()
    assert first["benchmark definition"].startswith("file:xcsqa.py@sha256:")
    assert versions() == first  # the same file: the same results
    for reg, name in registry._included.pop(folder / "xcsqa.py"):  # the next process
        del reg._added[name], reg._origin[name]
    (folder / "xcsqa.py").write_text((folder / "xcsqa.py").read_text() + "\n# edited, version not bumped\n")
    second = versions()
    assert second["benchmark"] == first["benchmark"] and second["benchmark definition"] != first["benchmark definition"]
    # xlt's own definitions keep their hashes: identified by their version only
    assert BENCHMARKS.identity("belebele") is None and SCORERS.identity("mc") is None
