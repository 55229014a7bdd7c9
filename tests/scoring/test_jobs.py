"""The evaluation job resolved once (:class:`xlt.scoring.jobs.EvalJob`), the scorer's declaration
(:mod:`xlt.scoring.declaration`) and the ``eval_before/`` view of a run directory (issue 43)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.fixtures.benchmarks import write_belebele, write_global_mmlu
from xlt import config as xcfg
from xlt.registry import SCORERS
from xlt.run.layout import RunDir
from xlt.scoring import before, declaration
from xlt.scoring.declaration import UNDECLARED, ScorerDeclaration
from xlt.scoring.jobs import MACHINE_TRANSLATED, TRANSLATE_TEST, job_settings, plan_jobs, resolve
from xlt.scoring.scorers import FixedScorer, GoldScorer


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("jobs")
    write_belebele(root / "bele", ["fra_Latn", "eng_Latn"], n=4)
    write_global_mmlu(root / "gm", ["en", "de"], n=4)
    return root


def _cfg(data, **ev):
    e = {
        "scorer": "gold",
        "model": "run",
        "bootstrap_samples": 20,
        **ev,
        "benchmarks": {
            "bele_tt": {"kind": "belebele", "path": str(data / "bele"), "translate_test": True},
            "gm_mt": {
                "kind": "global_mmlu",
                "path": str(data / "gm"),
                "languages": ["de"],
                "machine_translate_from": "en",
            },
            "gm": {"kind": "global_mmlu", "path": str(data / "gm")},
        },
    }
    return xcfg.validate(
        {"model": {"name": "tiny", "name_or_path": "xlt-tiny"}, "translate": {"kind": "echo"}, "eval": e},
        stages=["evaluate"],
    )


def test_a_job_carries_what_it_reads_and_how_it_is_translated(data):
    cfg = _cfg(data)
    jobs = {j.key: j for j in plan_jobs(cfg.eval)}
    assert list(jobs) == ["bele_tt/eng_Latn", "bele_tt/fra_Latn", "gm/de", "gm/en", "gm_mt/de"]  # sorted
    tt, mt, plain = jobs["bele_tt/fra_Latn"], jobs["gm_mt/de"], jobs["gm/de"]
    assert (tt.translation, tt.read, tt.translated) == (TRANSLATE_TEST, "fra_Latn", True)
    assert (mt.translation, mt.read, mt.translated) == (MACHINE_TRANSLATED, "en", True)  # the source's items
    assert (plain.translation, plain.read, plain.translated) == (None, "de", False)
    assert mt.definition.kind == "global_mmlu" and mt.entry.machine_translate_from == "en"
    assert mt.settings == job_settings(cfg.eval, "gm_mt") and mt.settings["machine_translate_from"] == "en"
    assert "eval.benchmarks.gm_mt.machine_translate_from" in mt.config and not any(
        "bele_tt" in k for k in mt.config
    )
    # equal, ordered and hashed by (benchmark, language, kind): a job planned again is the same job
    assert resolve(cfg.eval, "gm_mt", "de") == mt and len({mt, resolve(cfg.eval, "gm_mt", "de")}) == 1


def test_its_paths_follow_the_view_it_is_given(data, tmp_path):
    job = resolve(_cfg(data).eval, "gm_mt", "de")
    run = RunDir(tmp_path / "run")
    view = run.before_training()
    assert job.result_path(run) == run.path / "eval" / "gm_mt" / "de.json"
    assert job.result_path(view) == run.path / "eval_before" / "gm_mt" / "de.json"
    assert job.predictions_path(view) == run.path / "eval_before" / "gm_mt" / "predictions" / "de.jsonl"
    assert job.plan_path(view) == run.path / "eval_before" / "gm_mt" / "plan.json"
    # the view is the same run directory otherwise (the translation cache, the model, the markers)
    assert (view.path, view.model, view.data, view.marker("evaluate")) == (
        run.path,
        run.model,
        run.data,
        run.marker("evaluate"),
    )
    assert view.eval.name == "eval_before" and run.eval.name == "eval" and "eval_before" in repr(view)


def test_the_scorer_declares_its_version_and_settings(data, monkeypatch):
    """The job's settings take the scorer's version and recorded settings from its declaration: bumping the
    version or declaring another setting changes exactly what the scorer declares."""
    assert job_settings(_cfg(data).eval, "gm")["versions"]["scorer"] == GoldScorer.declaration.version == 1
    fixed = _cfg(data, scorer="fixed", fixed_option=2)
    assert list(job_settings(fixed.eval, "gm"))[-3:] == [
        "model",
        "scorer",
        "fixed_option",
    ]  # written last, in order
    assert job_settings(fixed.eval, "gm")["fixed_option"] == 2
    monkeypatch.setattr(FixedScorer, "declaration", replace(FixedScorer.declaration, version=4))
    assert job_settings(fixed.eval, "gm")["versions"]["scorer"] == 4


def test_a_plug_in_scorer_declares_or_has_no_version(data):
    """A scorer registered without a declaration (a package written before them) has no version and reads
    nothing, as it had before; one with a declaration is asked like xlt's own."""

    class Plain(GoldScorer):
        declaration = None  # type: ignore[assignment]

    class Declared(GoldScorer):
        declaration = ScorerDeclaration(version=3, settings=lambda e: {"extra": e.fixed_option})

    SCORERS["plain_scorer"], SCORERS["declared_scorer"] = Plain, Declared
    plain, declared = _cfg(data, scorer="plain_scorer"), _cfg(data, scorer="declared_scorer")
    assert (
        declaration.of(plain.eval) is UNDECLARED and declaration.declaration("not_registered") is UNDECLARED
    )
    assert job_settings(plain.eval, "gm")["versions"]["scorer"] is None
    assert "extra" not in job_settings(plain.eval, "gm")
    assert job_settings(declared.eval, "gm")["versions"]["scorer"] == 3
    assert job_settings(declared.eval, "gm")["extra"] == declared.eval.fixed_option


def test_which_model_a_scorer_scores_comes_from_its_declaration(data):
    from xlt.scoring.llm.scorer import LLMScorer
    from xlt.scoring.mc import MCScorer

    mc, gold = _cfg(data, scorer="mc", before_training=True), _cfg(data, before_training=True)
    external = _cfg(data, scorer="mc", model="org/other", before_training=True)
    assert declaration.declaration("mc") is MCScorer.declaration  # found through the factory method's class
    assert declaration.declaration("llm") is LLMScorer.declaration and LLMScorer.declaration.scores_llm
    assert declaration.scores_run_model(mc.eval) and before.wanted(mc.eval)
    assert not declaration.scores_run_model(gold.eval) and not before.wanted(gold.eval)
    assert not declaration.scores_run_model(external.eval) and not before.wanted(external.eval)
    assert MCScorer.declaration.external_model_reads(mc.eval) == ()
    assert MCScorer.declaration.external_model_reads(external.eval) == MCScorer.declaration.model_reads
    assert declaration.names_run_model("run") and not declaration.names_run_model("org/run")
