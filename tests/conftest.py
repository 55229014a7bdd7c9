"""Test-wide settings: never touch the network, never log to W&B, one thread per process; each pytest
process (each xdist worker) with a cache of its own; tests that share a module's fixture on one worker."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

import xlt.startup  # noqa: F401 - the entry points' garbage-collector thresholds, in every test process too

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["WANDB_MODE"] = "disabled"
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
# The user's cache: where `python tests/pretrained.py` put the pretrained test model (only read by tests).
os.environ.setdefault("XLT_USER_CACHE", os.environ.get("XLT_CACHE", str(Path.home() / ".cache" / "xlt")))
# Every pytest process (each xdist worker) writes its own XLT_CACHE (tiny tokenizers, fingerprint memo,
# CTranslate2 conversions), set before any test module reads the environment; removed at the end.
_CACHE = tempfile.mkdtemp(prefix=f"xlt-test-cache-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-")
os.environ["XLT_CACHE"] = _CACHE
# Models xlt converts from an installed package (model=me5_small: ~15 s and 470 MB) are converted once,
# into the user's cache, and shared by every process (atomically written; the same bytes every time).
_USER_MODELS = Path(os.environ["XLT_USER_CACHE"]) / "models"
_USER_MODELS.mkdir(parents=True, exist_ok=True)
os.symlink(_USER_MODELS, Path(_CACHE) / "models")


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE, ignore_errors=True)


# tryfirst: before xdist's own hook, which reads the xdist_group marks to group the tests.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` are skipped, saying so, where no CUDA device is visible. Tests that use a fixture
    scoped to their module (or class) go to one xdist worker together (``xdist_group``; the README's
    command runs ``--dist loadgroup``), so that fixture (a trained run, a browser) is built once; every other
    test is distributed on its own. Slow tests and those groups come first, so no long test starts last."""
    gpu = [item for item in items if item.get_closest_marker("gpu")]
    if gpu:
        import torch

        if not torch.cuda.is_available():
            skip = pytest.mark.skip(reason="GPU check: no CUDA device here (run benchmarks/gpu_check.sh on a GPU)")
            for item in gpu:
                item.add_marker(skip)
    heavy = set()
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        scopes = {defs[-1].scope for defs in (info.name2fixturedefs.values() if info else ()) if defs}
        if scopes & {"module", "class", "package"}:
            if not item.get_closest_marker("xdist_group"):  # a group of its own (modules sharing a session fixture)
                item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
            heavy.add(item.nodeid.split("::")[0])
        if item.get_closest_marker("slow"):
            heavy.add(item.nodeid.split("::")[0])
    first = [i for i in items if i.nodeid.split("::")[0] in heavy]
    items[:] = first + [i for i in items if i.nodeid.split("::")[0] not in heavy]


@pytest.fixture(autouse=True)
def _registrations_stay_in_their_test():
    """Definitions a test registers (``eval.include_path`` folders, ``BENCHMARKS[...] = ...``) are gone after
    it, as they would be in the next process: no kind leaks into another test of the same worker."""
    from xlt import registry

    saved = [(reg, dict(reg._added), dict(reg._origin)) for reg in registry.REGISTRIES]
    included = dict(registry._included)
    yield
    for reg, added, origin in saved:
        reg._added.clear()
        reg._added.update(added)
        reg._origin.clear()
        reg._origin.update(origin)
    registry._included.clear()
    registry._included.update(included)


def _cpu_s() -> float:
    """CPU seconds of this process and its reaped children (the subprocesses a test starts and waits for)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


# XLT_TEST_CPU_LOG=FILE: one JSON line per test phase (setup, call, teardown) with its wall and CPU seconds, appended
# by every xdist worker (.ci/run prints where the slow tier's CPU goes from it: a wall time on a loaded machine
# says little, the CPU a set-up spends says what sharing it saves).
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield from _timed(item, "setup")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield from _timed(item, "call")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    yield from _timed(item, "teardown")


def _timed(item, phase: str):
    log = os.environ.get("XLT_TEST_CPU_LOG")
    wall, cpu = time.monotonic(), _cpu_s()
    yield
    if log:
        line = {"test": item.nodeid, "phase": phase, "wall_s": round(time.monotonic() - wall, 2),
                "cpu_s": round(_cpu_s() - cpu, 2), "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")}
        with open(log, "a") as fh:
            fh.write(json.dumps(line) + "\n")
