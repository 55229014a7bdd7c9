"""lm-evaluation-harness 0.4's output folder as data: its file names, its per-sample records and its per-task
and per-group results, computed as the harness computes them (``lm_eval/loggers/evaluation_tracker.py``,
``lm_eval/evaluator_utils.py``, ``lm_eval/api/task.py``, ``lm_eval/api/metrics.py``, ``lm_eval/utils.py``).

Pure functions, no I/O and no import of the harness (xlt writes its files without it installed); the tests
check each against the harness itself. What it writes:

* ``<output_path>/<model name, sanitized>/results_<date>.json``: ``results`` (per task ``acc,none``,
  ``acc_stderr,none``, ``alias``, ``name``, ``sample_len``), ``groups``, ``group_subtasks``, ``configs``,
  ``versions``, ``n-shot``, ``higher_is_better``, ``n-samples``, ``config`` (model and settings), the
  tokenizer's special tokens, ``task_hashes`` and the general tracker's fields;
* ``samples_<task>_<date>.jsonl``: one line per document (``doc_id``, ``doc``, ``target``, ``arguments``,
  ``resps``, ``filtered_resps``, ``filter``, ``metrics``, ``doc_hash``, ``prompt_hash``, ``target_hash`` and each
  metric), as the tracker writes them (responses as strings, arguments as ``gen_args_<i>``/``arg_<j>``).

The standard error is the harness's: the sample standard deviation of the per-document metric over the square
root of the number of documents (``mean_stderr``; ``"N/A"`` for one document), and for a group the pooled
standard error of its tasks weighted by size (``pooled_sample_stderr``). xlt's own reports give a seeded
percentile bootstrap interval instead (:mod:`xlt.metrics`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

# The release of lm-evaluation-harness whose output folder this is (its samples and results as 0.4.13 writes them).
HARNESS_VERSION = "0.4.13"
FILTER = "none"  # the harness's default filter of multiple-choice tasks
RESULTS_PREFIX, SAMPLES_PREFIX = "results_", "samples_"


def hash_string(text: str) -> str:
    """``lm_eval.utils.hash_string``: SHA-256 of the UTF-8 text, hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def json_default(o: Any) -> Any:
    """``lm_eval.utils.handle_non_serializable``: numpy scalars as Python's, sets as lists, the rest as text."""
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, set):
        return list(o)
    return str(o)


def dumps(obj: Any, *, indent: int | None = None) -> str:
    """JSON text as the harness's tracker writes its files (``default=handle_non_serializable``, non-ASCII kept;
    a sample one line, the results file indented by 2)."""
    return json.dumps(obj, indent=indent, default=json_default, ensure_ascii=False)


def doc_hash(doc: dict[str, Any]) -> str:
    """A sample's ``doc_hash``: of the document as the harness dumps it (indented, non-ASCII kept)."""
    return hash_string(json.dumps(doc, indent=2, default=json_default, ensure_ascii=False))


def sanitize_model_name(name: str) -> str:
    """``lm_eval.utils.sanitize_model_name``: the model's folder name in the output path."""
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", name)


def date_id(now: datetime) -> str:
    """The date in the files' names (the tracker's ``datetime.now().isoformat()`` with ``-`` for ``:``)."""
    return now.isoformat().replace(":", "-")


def results_name(date: str) -> str:
    return f"{RESULTS_PREFIX}{date}.json"


def samples_name(task: str, date: str) -> str:
    return f"{SAMPLES_PREFIX}{task}_{date}.jsonl"


def is_results_file(name: str) -> bool:
    """``lm_eval.utils.get_results_filenames``'s rule on a file's name: ``results_`` first, ``.json`` in it."""
    return name.startswith(RESULTS_PREFIX) and ".json" in name


def is_samples_file(name: str) -> bool:
    """``lm_eval.utils.get_sample_results_filenames``'s rule on a file's name: ``samples_`` first, ``.json`` in it."""
    return name.startswith(SAMPLES_PREFIX) and ".json" in name


def file_date(name: str) -> str:
    """``lm_eval.utils.get_file_datetime``: the date a results or samples file's name ends with."""
    return name[name.rfind("_") + 1:].replace(".jsonl", "").replace(".json", "")


def mean(values: Sequence[float]) -> float:
    """``lm_eval.api.metrics.mean``."""
    return sum(values) / len(values)


def mean_stderr(values: Sequence[float]) -> float | str:
    """``lm_eval.api.metrics.mean_stderr`` (sample standard deviation / sqrt(n)); ``"N/A"`` for fewer than two
    documents, as the harness writes it."""
    if len(values) < 2:
        return "N/A"
    mu = mean(values)
    return math.sqrt(sum((x - mu) ** 2 for x in values) / (len(values) - 1)) / math.sqrt(len(values))


def pooled_stderr(stderrs: Sequence[float], sizes: Sequence[int]) -> float:
    """``lm_eval.api.metrics.pooled_sample_stderr``: a size-weighted group's standard error."""
    pooled = sum((n - 1) * s**2 * n for n, s in zip(sizes, stderrs, strict=True)) / (sum(sizes) - len(sizes))
    return float(np.sqrt(pooled / sum(sizes)))


def weighted_mean(values: Sequence[float], sizes: Sequence[int]) -> float:
    """``lm_eval.api.metrics.aggregate_subtask_metrics`` with ``weight_by_size``."""
    return sum(v * n for v, n in zip(values, sizes, strict=True)) / sum(sizes)


def choice_metrics(lls: Sequence[float], gold: int, choices: Sequence[str], names: Sequence[str]) -> dict[str, float]:
    """A multiple-choice document's metrics as ``ConfigurableTask.process_results`` computes them: ``acc``
    (the argmax of the log-likelihoods is the gold option), ``acc_norm`` (the argmax of each log-likelihood over
    its continuation's length in characters, the delimiter not counted)."""
    arr = np.asarray(lls, dtype=float)
    out = {"acc": 1.0 if int(np.argmax(arr)) == gold else 0.0,
           "acc_norm": 1.0 if int(np.argmax(arr / np.array([float(len(c)) for c in choices]))) == gold else 0.0}
    return {n: out[n] for n in names}


def sample_record(doc_id: int, doc: dict[str, Any], target: str | int, requests: Sequence[tuple[str, str]],
                  lls: Sequence[float], greedy: Sequence[bool], metrics: dict[str, float]) -> dict[str, Any]:
    """One line of ``samples_<task>_<date>.jsonl`` as the tracker writes it: ``requests`` are the (context,
    continuation) pairs of the document's options, ``lls``/``greedy`` each option's log-likelihood and
    ``is_greedy``."""
    resps = [[[str(float(ll)), str(bool(g))]] for ll, g in zip(lls, greedy, strict=True)]
    return {
        "doc_id": doc_id,
        "doc": doc,
        "target": str(target),
        "arguments": {f"gen_args_{i}": {"arg_0": ctx, "arg_1": cont} for i, (ctx, cont) in enumerate(requests)},
        "resps": resps,
        "filtered_resps": [r[0] for r in resps],
        "filter": FILTER,
        "metrics": list(metrics),
        "doc_hash": doc_hash(doc),
        "prompt_hash": hash_string(requests[0][0]),
        "target_hash": hash_string(str(target)),
        **metrics,
    }


def task_hash(samples: Sequence[dict[str, Any]]) -> str:
    """A task's entry of ``task_hashes``: the hash of its samples' three hashes, in order."""
    return hash_string("".join(s["doc_hash"] + s["prompt_hash"] + s["target_hash"] for s in samples))


def task_results(task: str, per_doc: dict[str, list[float]]) -> dict[str, Any]:
    """A task's entry of ``results``: each metric's mean and standard error over its documents."""
    out: dict[str, Any] = {"name": task, "alias": task, "sample_len": max(len(v) for v in per_doc.values())}
    for metric, values in per_doc.items():
        out[f"{metric},{FILTER}"] = mean(values)
        out[f"{metric}_stderr,{FILTER}"] = mean_stderr(values)
    return out


def group_results(group: str, tasks: dict[str, dict[str, Any]], metrics: Sequence[str]) -> dict[str, Any]:
    """A group's entry of ``results`` (and ``groups``) over its tasks' entries, each metric weighted by size
    (``Group.aggregate``)."""
    sizes = [int(t["sample_len"]) for t in tasks.values()]
    out: dict[str, Any] = {"alias": group, "name": group, "sample_len": sum(sizes)}
    count = {}
    for metric in metrics:
        key, err = f"{metric},{FILTER}", f"{metric}_stderr,{FILTER}"
        values = [float(t[key]) for t in tasks.values()]
        out[key] = weighted_mean(values, sizes)
        stderrs = [t.get(err) for t in tasks.values()]
        out[err] = "N/A" if any(not isinstance(s, float) for s in stderrs) else pooled_stderr(stderrs, sizes)
        count[key] = sum(sizes)
    out["sample_count"] = count
    return out
