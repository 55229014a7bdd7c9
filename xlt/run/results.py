"""The evaluate stage's results and predictions (``eval/<benchmark>/``, and the same layout under ``eval_before/``
through :meth:`xlt.run.layout.RunDir.before_training`): the one builder of a result record (:func:`result_record`)
and their checked readers.

A result is read back only through :func:`verified_result`: its file is checked against its schema
(:mod:`xlt.run.state`) and against its own predictions (count, right answers, accuracy, chance level, the
job hash each prediction carries), so a damaged or half-written pair is never reported. Reports and the
evaluate stage read results, predictions and plans from here; what a job is and how it is hashed is
:mod:`xlt.scoring.jobs`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xlt.errors import DataError
from xlt.metrics import chance_level
from xlt.run.layout import PLAN_FILE, RunDir
from xlt.run.state import (
    PLAN,
    PREDICTION,
    RESULT,
    Damaged,
    check_schema,
    read_jsonl_state,
    read_or_redo,
    read_state,
    redo,
)


class NoPerQuestionData(DataError):
    """A result without predictions by design (an lm-evaluation-harness folder read without sample logs):
    what needs per-question data (paired tests, findings, the item report) says so and leaves it out."""


def result_record(*, benchmark: str, kind: str, language: str, code: str | None, split: str, scorer: str,
                  model: str, translate_test: bool, settings: dict[str, Any], accuracy: dict[str, Any],
                  chance: float | None, ties: int, data_checks: dict[str, Any], truncated: int | None = None,
                  machine_translated_from: str | None = None, **extra: Any) -> dict[str, Any]:
    """One language's result record, as every writer writes it (the evaluate stage; an lm-evaluation-harness folder
    read as a system, :mod:`xlt.reporting.harness.imported`) and :func:`verified_result` reads it back: its fields
    in this order, ``accuracy`` the fields of :func:`xlt.metrics.accuracy_with_ci` (accuracy, n, correct, interval),
    then ``extra`` in the order given (``per_question``, ``scorer_meta``, ``subsets``, ``provenance``, ...).
    ``machine_translated_from``: the language whose items were machine-translated into this one (omitted when
    None); ``truncated``: items cut to fit the model (None: the scorer does not say)."""
    record = {
        "benchmark": benchmark,
        "kind": kind,
        "language": language,
        "code": code,  # the language table's code
        "split": split,
        "scorer": scorer,
        "model": model,
        "translate_test": translate_test,
        **({"machine_translated_from": machine_translated_from} if machine_translated_from is not None else {}),
        "settings": settings,
        **accuracy,
        "chance": chance,  # % right when guessing among each item's own options
        "ties": ties,  # predictions whose top score is shared by several options (argmax picks the first)
        "truncated": truncated,
        "data_checks": data_checks,  # odd items in the benchmark file (xlt.data.benchmarks.loading.data_checks)
        **extra,
    }
    problem = check_schema(record, RESULT)
    if problem:
        raise ValueError(f"result record of {benchmark}/{language}: {problem}")
    return record


def per_question(result: dict[str, Any] | None) -> bool:
    """Whether a result has per-question predictions (every result xlt computes has; one read from an
    lm-evaluation-harness folder without sample logs, ``per_question: false``, has not)."""
    return (result or {}).get("per_question", True) is not False


def verified_result(run: RunDir, benchmark: str, language: str) -> dict[str, Any] | None:
    """The result file of ``benchmark``/``language``, checked (:mod:`xlt.run.state`): None when there is none.

    Raises :class:`xlt.run.state.Damaged` when the result or its predictions file is damaged: not JSON of
    the result's shape, predictions missing, truncated or unreadable, or the result no longer agrees
    with its own predictions (count, correct, accuracy, chance level from each prediction's number of
    scores, the job hash each prediction carries). ``chance`` is optional (results of older xlt lack it).
    """
    path = run.result(benchmark, language)
    result = read_state(path, RESULT)
    if result is None:
        return None
    preds_file = run.predictions(benchmark, language)
    if not per_question(result):  # no predictions by design: its count and accuracy are all there is to check
        if preds_file.exists() or not 0 <= result["correct"] <= result["n"]:
            raise Damaged(path, "says it has no per-question data, yet has predictions or impossible counts")
        return result
    preds = read_jsonl_state(preds_file, PREDICTION)
    if preds is None:
        raise Damaged(preds_file, f"missing, while its result {path.name} exists")
    draws = result.get("draws")
    k = int(draws["k"]) if isinstance(draws, dict) and isinstance(draws.get("k"), int) else None
    if k is not None and any(not isinstance(p.get("draws"), list) or len(p["draws"]) != k for p in preds):
        raise Damaged(
            preds_file, f"a prediction lacks the {k} draws its result {path.name} says it was scored over"
        )
    # Right answers: over every draw (protocol=paper), else over the predictions.
    correct = sum(right_answers(p) for p in preds)
    acc = 100.0 * correct / (len(preds) * (k or 1)) if preds else None
    if (
        len(preds) != result["n"]
        or correct != result["correct"]
        or (acc is not None and not math.isclose(acc, result["accuracy"], rel_tol=1e-9, abs_tol=1e-9))
    ):
        raise Damaged(
            path,
            f"disagrees with its predictions {preds_file.name} (result: n={result['n']}, correct="
            f"{result['correct']}, accuracy={result['accuracy']}; predictions: n={len(preds)}, "
            f"correct={correct})",
        )
    if "chance" in result:
        problem = _chance_problem(result["chance"], preds)
        if problem:
            raise Damaged(path, f"disagrees with its predictions {preds_file.name}: {problem}")
    tag = result_job(result)
    if tag is not None and any(p.get("job") != tag for p in preds):
        raise Damaged(
            preds_file, "holds predictions of another computation than its result (job hash differs)"
        )
    return result


def result_job(result: dict[str, Any] | None) -> str | None:
    """The job hash a result records in its provenance (None: no result, or written by an older xlt)."""
    prov = (result or {}).get("provenance")
    return prov.get("job") if isinstance(prov, dict) else None


def result_problem(run: RunDir, benchmark: str, language: str, current: str | None = None) -> str | None:
    """Why the result of ``benchmark``/``language`` must be (re)computed: None when it is sound (and, given the
    ``current`` job hash, was computed under it)."""
    try:
        result = verified_result(run, benchmark, language)
    except Damaged as err:
        return f"damaged: {err}"
    if result is None:
        return "missing"
    if current is not None and (
        not isinstance(result.get("provenance"), dict) or result_job(result) != current
    ):
        return "computed for another model, data or settings"
    return None


def right_answers(p: dict[str, Any]) -> int:
    """How many times a prediction row answered right: over its draws (``draws``: an LLM under
    ``eval.llm.protocol=paper``), else 0 or 1."""
    draws = p.get("draws")
    if isinstance(draws, list):
        return sum(d == p["gold"] for d in draws)
    return int(p["prediction"] == p["gold"])


def item_correct(p: dict[str, Any]) -> float:
    """A prediction row's correctness: 0 or 1, or the share of its draws that answered right (``draws``:
    protocol=paper, whose accuracy is the mean over draws). Paired comparisons use it."""
    draws = p.get("draws")
    if isinstance(draws, list) and draws:
        return right_answers(p) / len(draws)
    return float(p["prediction"] == p["gold"])


def _chance_problem(chance: Any, preds: list[dict[str, Any]]) -> str | None:
    """Why a result's ``chance`` does not match its predictions (each holds one score per option)."""
    counts = [len(p["scores"]) if isinstance(p.get("scores"), list) else 0 for p in preds]
    if 0 in counts:
        return "a prediction has no option scores"
    want = chance_level(counts)
    if chance is None or want is None:
        return None if chance is want else f"chance is {chance}, expected {want} ({len(preds)} predictions)"
    if (
        isinstance(chance, bool)
        or not isinstance(chance, (int, float))
        or not math.isclose(chance, want, rel_tol=1e-9, abs_tol=1e-9)
    ):
        return f"chance is {chance!r}, its predictions' option counts give {want}"
    return None


def _read_or_name_the_fix(read: Callable[[], Any], path: Path, damaged_fix: str, missing: str) -> Any:
    """``read()``, or a :class:`DataError` naming ``path`` and the fix when it is damaged or missing (None)."""
    try:
        value = read()
    except Damaged as err:
        raise DataError(f"{err}; {damaged_fix}") from None
    if value is None:
        raise DataError(f"{path}: {missing}")
    return value


def read_result(run: RunDir, benchmark: str, language: str) -> dict[str, Any]:
    """The sound result of ``benchmark``/``language`` (:func:`verified_result`); missing or damaged: a
    :class:`DataError` naming the file and the fix."""
    return _read_or_name_the_fix(
        lambda: verified_result(run, benchmark, language),
        run.result(benchmark, language),
        "rerun the evaluate stage (it recomputes exactly this result)",
        "missing; rerun the evaluate stage",
    )


def read_predictions(run: RunDir, benchmark: str, language: str) -> list[dict[str, Any]]:
    """The prediction rows of ``benchmark``/``language``, checked line by line; missing or damaged: a
    :class:`DataError` naming the file and the fix (:class:`NoPerQuestionData` for a result that has none by
    design)."""
    path = run.predictions(benchmark, language)
    fix = f"rerun the evaluate stage for {benchmark}/{language}"
    if not path.exists():
        try:
            result = read_state(run.result(benchmark, language), RESULT)
        except Damaged:
            result = None  # the missing predictions are named below
        if result is not None and not per_question(result):
            raise NoPerQuestionData(f"{run.path}: {benchmark}/{language} has no per-question data "
                                    f"({result.get('per_question_note') or 'results only'})")
    return _read_or_name_the_fix(
        lambda: read_jsonl_state(path, PREDICTION), path, fix, f"predictions missing; {fix}"
    )


def first_result(run_path: str | Path, benchmark: str) -> tuple[str, dict[str, Any]] | None:
    """``(language, result)`` of the first sound result of ``benchmark`` in a run folder (checked by
    :func:`verified_result`; damaged ones are skipped), for reports that show one language's provenance."""
    run = RunDir(run_path)
    folder = run.bench_dir(benchmark)
    for lang in sorted(f.stem for f in folder.glob("*.json") if f.name != PLAN_FILE):
        try:
            result = verified_result(run, benchmark, lang)
        except Damaged:
            continue
        if result is not None:
            return lang, result
    return None


def read_plan(run: RunDir, benchmark: str) -> dict[str, Any] | None:
    """A benchmark's ``plan.json``, checked; None when absent or damaged (logged: it is planned again)."""
    plan = read_or_redo(run.plan(benchmark), PLAN, what="planned again from the config")
    if plan is not None and not all(isinstance(x, str) for x in plan["languages"]):
        redo(
            Damaged(run.plan(benchmark), "field 'languages' holds a non-string"),
            "planned again from the config",
        )
        return None
    return plan


def plan_problem(run: RunDir, benchmark: str) -> str | None:
    """Why a benchmark's ``plan.json`` is not there as written (``missing``, ``damaged (...)``); None when sound."""
    try:
        return "missing" if read_state(run.plan(benchmark), PLAN) is None else None
    except Damaged as err:
        return f"damaged ({err.why})"
