"""Every schema field either changes the hash of what it changes, or is declared neutral with its reason.

The walk covers every leaf of the config schema (each dict-of-entries section with one entry or two), so a
field added later cannot slip past the hashes: it must be declared (``xlt.config.fields``) and this test
holds the declaration to what the hashes do.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import typing
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from tests.fixtures.benchmarks import write_belebele
from xlt import config as xcfg
from xlt.config.fields import choices_of, dataclass_of
from xlt.config.keys import declared_exceptions, key_info, leaves, schema_keys
from xlt.run.layout import RunDir
from xlt.scoring.jobs import resolve
from xlt.stages import STAGES, call_stage, context

PLAIN, TT = "bele", "bele_tt"  # a benchmark scored as it is, and one scored through translate-test


def _base(tmp_path: Path, **translate: Any) -> Any:
    bench = {"kind": "belebele", "path": str(tmp_path / "bele")}
    return xcfg.validate({
        "data": {"sources": {"race": {"path": str(tmp_path / "race")}}},
        # A translator that is never loaded here: the hashes are computed without loading it.
        "translate": {"kind": "echo", "languages": ["fra_Latn"], "model_name_or_path": str(tmp_path / "no-mt"),
                      **translate},
        "eval": {"scorer": "gold", "bootstrap_samples": 20, "benchmarks": {
            PLAIN: bench, TT: {**bench, "translate_test": True}}},
    })


def _schema_field(key: str) -> tuple[dataclasses.Field, Any]:
    """The dataclass field of a dotted leaf key and its type hint (dict entries: any name)."""
    cls: Any = xcfg.XltConfig
    parts = key.split(".")
    i = 0
    while True:
        hints = typing.get_type_hints(cls)
        f = {f.name: f for f in dataclasses.fields(cls)}[parts[i]]
        sub = dataclass_of(hints[f.name])
        if sub is None or i == len(parts) - 1:
            return f, hints[f.name]
        i += 2 if getattr(hints[f.name], "__origin__", None) is dict else 1
        cls = sub


def _other_value(key: str, value: Any) -> Any:
    """A value of ``key``'s type other than ``value``."""
    f, tp = _schema_field(key)
    if OmegaConf.is_config(value):
        value = OmegaConf.to_container(value)
    choices = choices_of(dict(f.metadata))
    if choices:
        return next(c for c in choices if c != value)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 0.5
    if isinstance(value, str):
        return value + "_x"
    if isinstance(value, list):
        return [*value, "fra_Latn"]
    if isinstance(value, dict):
        return {**value, "fra_Latn": "fr"}
    assert value is None, key
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if not args:
        return "x"
    inner = args[0]
    origin = typing.get_origin(inner)
    if origin is list:
        return ["fra_Latn"]
    return {bool: True, int: 3, float: 0.5, str: "x"}[inner]


def _hashes(cfg: Any, run: RunDir) -> dict[str, str]:
    """Every stage's input hash, and the job hash of French in each benchmark."""
    out = {stage: context(cfg, run, stage).inputs for stage in STAGES}
    ctx = context(cfg, run, "evaluate")
    for name in (PLAIN, TT):
        out[f"job {name}"] = resolve(cfg.eval, name, "fra_Latn").provenance(ctx)["job"]
    return out


def _set_condition(cfg: Any, when: tuple[str, str] | None) -> None:
    if when is not None:
        OmegaConf.update(cfg, when[0], when[1])


def _changed(cfg: Any, key: str, run: RunDir, before: dict[str, str] | None = None) -> set[str]:
    """The hashes that change when ``key`` changes in ``cfg`` (``before``: ``cfg``'s, if known)."""
    before = before or _hashes(cfg, run)
    other = copy.deepcopy(cfg)
    OmegaConf.update(other, key, _other_value(key, OmegaConf.select(cfg, key)), merge=False)
    after = _hashes(other, run)
    return {name for name in before if before[name] != after[name]}


def test_every_schema_field_changes_its_hash_or_says_why_not(tmp_path):
    run = RunDir(tmp_path / "run")
    base = _base(tmp_path)
    keys = list(leaves(base))
    # Every field of every schema dataclass is walked (dict entries through their example entries).
    def generic(key: str) -> str:
        parts = key.split(".")
        for section in ("sources", "benchmarks"):
            if section in parts[:-1]:
                parts[parts.index(section) + 1] = "*"
        return ".".join(parts)

    assert set(schema_keys()) == {generic(k) for k in keys}

    neutral: dict[str, str] = {}
    before: dict[Any, dict[str, str]] = {}  # the unchanged config's hashes, per condition set
    for key in keys:
        info = key_info(key)
        assert info is not None, key
        cfg = copy.deepcopy(base)
        _set_condition(cfg, info.when)
        if info.when not in before:
            before[info.when] = _hashes(cfg, run)
        changed = _changed(cfg, key, run, before[info.when])
        in_entry = key.startswith("eval.benchmarks.")
        mine = {f"job {key.split('.')[2]}"} if in_entry else {f"job {PLAIN}", f"job {TT}"}
        if info.affects is None:
            assert info.why, f"{key} changes no result, so it must say why (neutral(..., why=...))"
            assert not changed, f"{key} is declared neutral ({info.why}) but changes {changed}"
            neutral[key] = info.why
        elif info.affects == "evaluate" and info.per_job:
            assert changed == {"evaluate", *mine}, f"{key}: changes {changed}"
            if info.when is not None:  # while its condition does not hold, no result depends on it
                off = copy.deepcopy(base)
                assert OmegaConf.select(off, info.when[0]) != info.when[1]
                assert _changed(off, key, run, before[None]) == {"evaluate"}, key
        elif info.affects == "evaluate":
            assert info.why, f"{key} selects jobs without changing them: it must say why"
            assert changed == {"evaluate"}, f"{key}: changes {changed}"
        elif info.translator:  # translations: the translate stage and every translate-test result
            assert changed == {"translate", "evaluate", f"job {TT}"}, f"{key}: changes {changed}"
        elif info.affects == "translate":
            assert info.why, f"{key} changes translations but not translate-test: it must say why"
            assert changed == {"translate"}, f"{key}: changes {changed}"
        else:
            assert info.affects in changed, f"{key} affects {info.affects} but changes {changed}"
            assert not changed & {f"job {PLAIN}", f"job {TT}"}, f"{key}: changes {changed} directly"
    # The declared neutral fields, with their reasons (the list in docs/weights-and-hashes.md).
    print(json.dumps(neutral, indent=1))
    assert neutral == declared_exceptions()["neutral"]
    assert {"translate.batch_size", "translate.device", "eval.num_shards", "logger.kind"} <= set(neutral)


def test_the_docs_list_every_declared_exception_with_its_reason():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "weights-and-hashes.md").read_text()
    for kind, keys in declared_exceptions().items():
        for key, why in keys.items():
            assert f"| `{key}` | {kind} | {why} |" in doc, f"docs/weights-and-hashes.md lacks {key} ({kind})"


@pytest.mark.parametrize(("key", "value"), [("translate.max_new_tokens_ratio", 3.0),
                                            ("translate.lang_code_map", {"fra_Latn": "fr"})])
def test_translator_setting_recomputes_exactly_the_translate_test_results(tmp_path, key, value):
    write_belebele(tmp_path / "bele", ["fra_Latn", "deu_Latn"], n=4)
    run = RunDir(tmp_path / "run")
    cfg = _base(tmp_path)
    OmegaConf.update(cfg, "stages", ["evaluate"])
    call_stage("evaluate", cfg, run)

    def results() -> dict[str, Any]:
        return {f"{b}/{lang}": json.loads((run.eval / b / f"{lang}.json").read_text())["provenance"]["job"]
                for b in (PLAIN, TT) for lang in ("fra_Latn", "deu_Latn")}

    first = results()
    OmegaConf.update(cfg, key, value, merge=False)
    assert _hashes(cfg, run)["job bele"] == first["bele/fra_Latn"]
    call_stage("evaluate", cfg, run)
    second = results()
    assert {k for k in first if first[k] != second[k]} == {f"{TT}/fra_Latn", f"{TT}/deu_Latn"}


def test_what_the_translator_resolves_to_is_recorded_and_recomputes_on_the_evaluate_stage(tmp_path, monkeypatch):
    """engine=auto and compute_type=auto resolve on the machine: a result translated by another engine is
    recomputed by the evaluate stage, while a report elsewhere (same settings) does not call it stale."""
    from xlt.scoring.jobs import plan_jobs
    from xlt.scoring.results import current_jobs
    from xlt.translation import engines

    write_belebele(tmp_path / "bele", ["fra_Latn"], n=4)
    run = RunDir(tmp_path / "run")
    cfg = _base(tmp_path)
    ran = {"engine": "hf", "dtype": "float32"}
    monkeypatch.setattr(engines, "resolved_settings", lambda tcfg: dict(ran))
    call_stage("evaluate", cfg, run)
    tt = run.eval / TT / "fra_Latn.json"
    first = json.loads(tt.read_text())["provenance"]
    assert first["translator"] == ran
    jobs = plan_jobs(cfg.eval)
    before = current_jobs(jobs, context(cfg, run, "evaluate"))
    ran.update(engine="ctranslate2", dtype="int8")  # ctranslate2 installed since
    assert current_jobs(jobs, context(cfg, run, "evaluate")) == before  # the report's check: not stale
    plain = (run.eval / PLAIN / "fra_Latn.json").stat().st_mtime_ns
    call_stage("evaluate", cfg, run)
    assert json.loads(tt.read_text())["provenance"]["translator"] == {"engine": "ctranslate2", "dtype": "int8"}
    assert (run.eval / PLAIN / "fra_Latn.json").stat().st_mtime_ns == plain  # the plain result is kept


class _Reads:
    """A config node that records the dotted key of every leaf read through it."""

    def __init__(self, node: Any, prefix: str, seen: set[str]):
        self._node, self._prefix, self._seen = node, prefix, seen

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._node, name)
        key = f"{self._prefix}{name}"
        if OmegaConf.is_config(value) and not OmegaConf.is_list(value):
            return _Reads(value, key + ".", self._seen)
        self._seen.add(key)
        return value


def _external(tmp_path: Path) -> Any:
    cfg = _base(tmp_path)
    OmegaConf.update(cfg, "eval.scorer", "mc")
    OmegaConf.update(cfg, "eval.model", "org/another-model")  # a Hub id: never loaded here
    return cfg


def test_what_the_scorer_reads_of_an_external_model_enters_the_job_hash(tmp_path, monkeypatch):
    """eval.model != run: every config key the MC scorer reads to load and score the model changes every job
    hash (or is declared neutral); a read the hashes do not account for fails here (issue 35)."""
    from xlt.config.keys import key_info
    from xlt.modeling import load as modeling_load
    from xlt.scoring import mc

    run = RunDir(tmp_path / "run")
    cfg = _external(tmp_path)
    seen: set[str] = set()
    monkeypatch.setattr(modeling_load, "load_trained", lambda *a, **k: ("model", "tokenizer"))
    monkeypatch.setattr(mc.MCScorer, "__init__", lambda self, *a, **k: None)
    mc.MCScorer.from_config(_Reads(cfg, "", seen), run)
    assert {"model.max_length", "model.revision", "model.trust_remote_code"} <= seen
    assert set(mc.MCScorer.declaration.model_reads) == {k for k in seen if k.startswith("model.")}  # declared: all it reads
    before = _hashes(cfg, run)
    for key in sorted(seen):
        info = key_info(key)
        assert info is not None, key
        changed = _changed(cfg, key, run, before)
        if info.affects is None:
            assert not changed, f"{key} is declared neutral but changes {changed}"
            continue
        assert {"evaluate", f"job {PLAIN}", f"job {TT}"} <= changed, (
            f"the MC scorer reads {key} for an external eval.model, but it changes only {changed}")
    # the same keys change nothing while the run scores its own model (they reach it through training)
    own = _base(tmp_path)
    OmegaConf.update(own, "eval.scorer", "mc")
    for key in mc.MCScorer.declaration.model_reads:
        assert not _changed(own, key, run) & {"evaluate", f"job {PLAIN}", f"job {TT}"}, key


def test_an_external_model_is_recorded_at_the_revision_loaded(tmp_path):
    from xlt.stages import context

    run = RunDir(tmp_path / "run")
    cfg = _external(tmp_path)
    OmegaConf.update(cfg, "model.revision", "v2")
    ctx = context(cfg, run, "evaluate")
    assert resolve(cfg.eval, PLAIN, "fra_Latn").provenance(ctx)["model"] == "hub:org/another-model@v2"
    assert ctx.record()["data"]["model settings"] == {"model.max_length": cfg.model.max_length,
                                                      "model.revision": "v2", "model.trust_remote_code": False}
