"""xlt's LLM results written as lm-evaluation-harness writes its output folder (``--output_path`` with
``--log_samples``): ``<out>/<model name, sanitized>/results_<date>.json`` and one
``samples_<task>_<date>.jsonl`` per task, in the harness's task names (:class:`xlt.data.benchmarks.declarations.HarnessTasks`).

From a finished run (:func:`export_run`: ``xlt report --to-harness RUN_DIR OUT``) or by the report stage, beside
the report (``eval.llm.harness_output``: :mod:`xlt.reporting.harness.output`). Each sample is rebuilt from what the run recorded
and the benchmark's data: the document as the source holds it (:meth:`~xlt.data.benchmarks.base.Benchmark.upstream_rows`),
the contexts and continuations the scorer fed the model (:class:`~xlt.scoring.llm.requests.HarnessRequests`),
each option's log-likelihood and ``is_greedy`` (the predictions' ``scores`` and ``greedy``). Only the harness
protocol in log-likelihood mode is the harness's computation; anything else is refused, naming why. Values are
computed as :mod:`xlt.reporting.harness.format` says (the harness's formulas) and written as the harness's tracker
writes them (its JSON, not xlt's strict JSON: a document's NaN stays NaN, so that its ``doc_hash`` holds);
files are written atomically, the results file last.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from xlt import __version__
from xlt.config import validate
from xlt.config.eval import is_machine_translated
from xlt.config.llm import selected as llm_selected
from xlt.data.benchmarks import get_benchmark
from xlt.data.schema import LETTERS
from xlt.errors import DataError
from xlt.reporting.harness import format as hf
from xlt.reporting.run_tables import read_config
from xlt.run.files import atomic_write_text
from xlt.run.layout import RunDir
from xlt.run.results import read_plan, read_predictions, read_result
from xlt.run.state import Damaged
from xlt.scoring.jobs import enabled_benchmarks
from xlt.scoring.llm.load import llm_config, load_tokenizer
from xlt.scoring.llm.prompts import FEWSHOT_DELIMITER
from xlt.scoring.llm.requests import HarnessRequests

log = logging.getLogger("xlt.harness")
BOOTSTRAP_ITERS = 100000  # simple_evaluate's default, which the CLI leaves (acc's stderr has a closed form)
CLI_SEEDS = (0, 1234, 1234, 1234)  # the CLI's --seed default: random, numpy, torch, few-shot


class HarnessExportError(DataError):
    """A run whose results cannot be written as the harness's files: the message says which and why."""


@dataclass
class Task:
    """One harness task being written: its samples and per-document metrics."""

    name: str
    benchmark: str
    kind: str
    language: str
    original: int  # documents of the task in the source (the harness's n-samples original)
    config: dict[str, Any]
    samples: list[dict[str, Any]] = field(default_factory=list)
    per_doc: dict[str, list[float]] = field(default_factory=dict)
    language_capped: bool = False  # its language's questions were capped (max_questions) below the data's

    @property
    def effective(self) -> int:
        return len(next(iter(self.per_doc.values()), []))


def export_run(run_dir: str | Path, out: str | Path, *, samples: bool = True, now: datetime | None = None) -> Path:
    """Write the results of the finished run ``run_dir`` as lm-evaluation-harness's output folder ``out``;
    returns the model's folder in it. Its config.yaml is read as ``report --compare`` reads it (checked against
    what its stages ran with)."""
    cfg = validate(read_config(Path(run_dir)))
    return export_results(cfg.eval, RunDir(run_dir), out, samples=samples, now=now)


def refusal(e: DictConfig) -> str | None:
    """Why the results of the ``eval`` section ``e`` are not the harness's computation (None: they are)."""
    if not llm_selected(e):
        return f"eval.scorer={e.scorer}: the harness's files hold a causal LLM's results (eval.scorer=llm)"
    if e.llm.mode != "loglikelihood" or e.llm.get("protocol", "harness") != "harness":
        return (f"eval.llm.mode={e.llm.mode}, eval.llm.protocol={e.llm.get('protocol', 'harness')}: the harness's "
                "multiple-choice tasks are log-likelihood scoring under its own few-shot protocol "
                "(mode=loglikelihood, protocol=harness)")
    return None


def export_results(eval_cfg: DictConfig, run: RunDir, out: str | Path, *, samples: bool = True,
                   now: datetime | None = None, tokenizer: Any = None, started: float | None = None) -> Path:
    """Write ``run``'s results (its ``eval`` section ``eval_cfg``) as lm-evaluation-harness's output folder ``out``
    (see the module docstring); ``tokenizer``: the scorer's, else loaded; ``started``: when the evaluate stage
    started, if it is the caller (else its done-marker says). Returns the model's folder."""
    why = refusal(eval_cfg)
    if why:
        raise HarnessExportError(f"{run.path}: not written as lm-evaluation-harness's files: {why}")
    llm = llm_config(eval_cfg.llm)
    tokenizer = tokenizer if tokenizer is not None else load_tokenizer(llm)
    requests = HarnessRequests(eval_cfg, tokenizer)
    tasks: dict[str, Task] = {}
    metas: list[dict[str, Any]] = []
    languages: dict[str, set[str]] = {}
    skipped = []
    for name, bcfg in enabled_benchmarks(eval_cfg).items():
        definition = get_benchmark(str(bcfg.kind))
        if definition.harness is None:
            skipped.append(f"{name} ({bcfg.kind}: the harness has no such task)")
            continue
        if bool(bcfg.get("translate_test")) or is_machine_translated(bcfg):
            skipped.append(f"{name} (translate-test or machine-translated: the harness has no such task)")
            continue
        plan = read_plan(run, name)
        if plan is None:
            raise HarnessExportError(f"{run.plan(name)}: missing or damaged; run the evaluate stage first")
        for lang in plan["languages"]:
            metas.append(_language(requests, run, name, bcfg, definition, str(lang), tasks))
            languages.setdefault(name, set()).add(str(lang))
    if skipped:
        log.warning("not in the harness's files: %s", "; ".join(skipped))
    if not tasks:
        raise HarnessExportError(f"{run.path}: no result of a benchmark the harness has a task for"
                                 + (f" (left out: {'; '.join(skipped)})" if skipped else ""))
    stamp = now or datetime.now()
    results = _results(tasks, languages, metas, tokenizer, llm, run, samples, stamp, started)
    folder = Path(out) / hf.sanitize_model_name(str(llm.model))
    date = hf.date_id(stamp)
    if samples:
        for task in tasks.values():
            atomic_write_text(folder / hf.samples_name(task.name, date),
                              "".join(hf.dumps(s) + "\n" for s in task.samples))
    atomic_write_text(folder / hf.results_name(date), hf.dumps(results, indent=2))  # last: the folder is whole
    log.info("lm-evaluation-harness files of %d task(s) written to %s", len(tasks), folder)
    return folder


def _language(requests: HarnessRequests, run: RunDir, name: str, bcfg: Any, definition: Any, lang: str,
              tasks: dict[str, Task]) -> dict[str, Any]:
    """Add one language's samples to ``tasks``; returns its result's ``scorer_meta``."""
    h = definition.harness
    result = read_result(run, name, lang)
    preds = read_predictions(run, name, lang)
    where_preds = run.predictions(name, lang)
    items = definition.load_checked(bcfg, lang, split=bcfg.split)[0]
    rows, where = definition.upstream_rows(bcfg, lang, bcfg.split)
    converted = definition.load_all(bcfg, lang, bcfg.split)[0]  # the same rows, in the same order, as xlt reads them
    if len(converted) != len(rows):
        raise HarnessExportError(f"{where}: the datasets library reads {len(rows)} rows, xlt {len(converted)}")
    if [str(p["id"]) for p in preds] != [str(i) for i in items["id"]] or any(
            int(p["gold"]) != int(g) for p, g in zip(preds, items["label"], strict=True)):
        raise HarnessExportError(f"{where_preds}: its questions are not those {where} gives now (another data "
                                 "revision or copy?); rerun the evaluate stage on this data, then write the files")
    missing = [str(p["id"]) for p in preds if not isinstance(p.get("greedy"), list)]
    if missing:
        raise HarnessExportError(f"{where_preds}: question {missing[0]} has no 'greedy' (each option's is_greedy, "
                                 "recorded since xlt writes the harness's files); rerun the evaluate stage "
                                 "(force=true) to record it")
    cols = h.columns
    col_values = {c: converted[c] for c in cols}
    task_of = [h.name(lang, {c: col_values[c][i] for c in cols}) for i in range(len(converted))]
    position = {str(i): n for n, i in enumerate(converted["id"])}
    doc_ids, counts = [], {}
    for t in task_of:
        doc_ids.append(counts.get(t, 0))
        counts[t] = counts.get(t, 0) + 1
    reqs = requests.requests(items, benchmark=name, language=lang)
    delim = requests.target_delimiter()
    k = int(requests.llm.num_fewshot)
    sampler = str(requests.llm.fewshot_sampler)
    if sampler == "auto":
        sampler = definition.prompt.sampler
    for p, (context, conts) in zip(preds, reqs, strict=True):
        row = position[str(p["id"])]
        task_name = task_of[row]
        task = tasks.get(task_name)
        if task is None:
            task = tasks[task_name] = Task(task_name, name, str(bcfg.kind), lang, counts[task_name],
                                           _task_config(task_name, definition, bcfg, lang, conts, delim, k, sampler, where),
                                           language_capped=len(preds) < len(converted))
        gold = int(p["gold"])
        choices = [c[len(delim):] for c in conts]
        lls = [float(s) for s in p["scores"]]
        metrics = hf.choice_metrics(lls, gold, choices, h.metrics)
        if metrics["acc"] != float(int(p["prediction"]) == gold):
            raise HarnessExportError(f"{where_preds}: question {p['id']}: its prediction is not the argmax of its "
                                     "scores; the file is damaged (rerun the evaluate stage)")
        target = gold if h.target == "index" else LETTERS[gold]
        task.samples.append(hf.sample_record(doc_ids[row], dict(rows[row]), target, [(context, c) for c in conts],
                                             lls, p["greedy"], metrics))
        for metric, value in metrics.items():
            task.per_doc.setdefault(metric, []).append(value)
    return dict(result.get("scorer_meta") or {})


def _task_config(task: str, definition: Any, bcfg: Any, lang: str, conts: list[str], delim: str, k: int,
                 sampler: str, where: str) -> dict[str, Any]:
    """A task's entry of ``configs``: what xlt knows of the harness's task YAML (its templates are xlt's
    declarations, not the YAML's Jinja text) and where the documents were read."""
    h = definition.harness
    letters = definition.prompt.choices == "letters"
    return {
        "task": task, "dataset_path": h.dataset_path, "dataset_name": definition.canonical(lang),
        "test_split": str(bcfg.split), "fewshot_split": definition.fewshot_split or str(bcfg.split),
        "doc_to_choice": [c[len(delim):] for c in conts] if letters else "the options, first letter lower-cased",
        "target_delimiter": delim or " ", "fewshot_delimiter": FEWSHOT_DELIMITER,
        # the harness's name of a seeded random sampler is "default"
        "fewshot_config": {"sampler": "default" if sampler == "random" else sampler,
                           "split": definition.fewshot_split or str(bcfg.split)},
        "num_fewshot": k,
        "metric_list": [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in h.metrics],
        "output_type": "multiple_choice", "repeats": 1,
        "metadata": {"version": h.version, "xlt_source": where},
    }


def _groups(tasks: dict[str, Task], languages: dict[str, set[str]]) -> dict[str, list[str]]:
    """The harness groups whose every task is written: ``{group: [task, ...]}``."""
    out: dict[str, list[str]] = {}
    by_bench: dict[str, list[Task]] = {}
    for t in tasks.values():
        by_bench.setdefault(t.benchmark, []).append(t)
    for bench, members in by_bench.items():
        definition = get_benchmark(members[0].kind)
        h = definition.harness
        if h.group is None:
            continue
        if h.group_of == "language":
            for lang in sorted({t.language for t in members}):
                out[h.group.format(language=lang)] = sorted(t.name for t in members if t.language == lang)
        else:
            wanted = set(h.group_languages or definition.known_languages())
            if wanted and wanted <= languages.get(bench, set()):
                out[h.group] = sorted(t.name for t in members)
    return out


def _results(tasks: dict[str, Task], languages: dict[str, set[str]], metas: list[dict[str, Any]], tokenizer: Any,
             llm: Any, run: RunDir, samples: bool, stamp: datetime, started: float | None) -> dict[str, Any]:
    """The results file's content, in the harness's order of keys."""
    per_task = {name: hf.task_results(name, t.per_doc) for name, t in sorted(tasks.items())}
    groups = _groups(tasks, languages)
    results: dict[str, Any] = dict(per_task)
    group_entries = {}
    for group, members in groups.items():
        metrics = get_benchmark(tasks[members[0]].kind).harness.metrics
        group_entries[group] = hf.group_results(group, {m: per_task[m] for m in members}, metrics)
    results.update(group_entries)
    first = metas[0] if metas else {}
    dtype = str(first.get("dtype") or llm.dtype)
    max_length = first.get("max_length")
    k = int(llm.num_fewshot)
    limit, limit_why = _limit(tasks)
    chat = tokenizer.chat_template if llm.chat_template and isinstance(getattr(tokenizer, "chat_template", None), str) else None
    versions = {name: get_benchmark(t.kind).harness.version for name, t in tasks.items()}
    versions.update({g: get_benchmark(tasks[m[0]].kind).harness.group_version for g, m in groups.items()})
    metric_names = {name: list(t.per_doc) for name, t in tasks.items()}
    metric_names.update({g: list(tasks[m[0]].per_doc) for g, m in groups.items()})
    model_args: dict[str, Any] = {"pretrained": str(llm.model), "dtype": dtype}
    if llm.revision:
        model_args["revision"] = str(llm.revision)
    if llm.tokenizer:
        model_args["tokenizer"] = str(llm.tokenizer)
    if llm.max_length is not None:  # as given (the harness's model_args); the resolved one is max_length below
        model_args["max_length"] = int(llm.max_length)
    out: dict[str, Any] = {
        "results": results,
        **({"groups": group_entries} if group_entries else {}),
        "group_subtasks": groups,
        "configs": {name: t.config for name, t in sorted(tasks.items())},
        "versions": dict(sorted(versions.items())),
        "n-shot": dict(sorted({**{n: k for n in tasks}, **{g: k for g in groups}}.items())),
        "higher_is_better": dict(sorted((n, {m: True for m in ms}) for n, ms in metric_names.items())),
        "n-samples": {name: {"original": t.original, "effective": len(t.per_doc[next(iter(t.per_doc))])}
                      for name, t in tasks.items()},
        "config": {
            "model": "xlt", "model_args": model_args, "model_num_parameters": _num_parameters(llm),
            "model_dtype": f"torch.{dtype}", "model_revision": str(llm.revision or "main"), "model_sha": "",
            # the CLI's --batch_size is a string; its --device; --limit a float (per task: see _limit)
            "batch_size": str(int(llm.batch_size)), "batch_sizes": [], "device": str(llm.device), "use_cache": None,
            "limit": limit, "bootstrap_iters": BOOTSTRAP_ITERS, "gen_kwargs": {},
            # the CLI's --seed default (random, numpy, torch); xlt draws only the few-shot examples at random
            "random_seed": CLI_SEEDS[0], "numpy_seed": CLI_SEEDS[1], "torch_seed": CLI_SEEDS[2],
            "fewshot_seed": int(llm.fewshot_seed),
        },
        "git_hash": _git_hash(),
        "date": stamp.timestamp(),
        "pretty_env_info": f"written by xlt {__version__} from its own results (not by lm-evaluation-harness)",
        "transformers_version": _transformers_version(),
        "lm_eval_version": f"{hf.HARNESS_VERSION}+xlt.{__version__}",  # the harness's format, written by xlt
        "upper_git_hash": None,
        **_tokenizer_info(tokenizer, max_length),
        "task_hashes": {name: hf.task_hash(t.samples) for name, t in tasks.items()} if samples else {},
        "model_source": "xlt",
        "model_name": str(llm.model),
        "model_name_sanitized": hf.sanitize_model_name(str(llm.model)),
        "system_instruction": llm.system_prompt,
        "system_instruction_sha": hf.hash_string(llm.system_prompt) if llm.system_prompt else None,
        # the CLI's: unset (null) without --apply_chat_template, else the setting (default true)
        "fewshot_as_multiturn": bool(llm.fewshot_as_multiturn) if chat else None,
        "chat_template": chat,
        "chat_template_sha": hf.hash_string(chat) if chat else None,
        "total_evaluation_time_seconds": _evaluation_time(run, started),
        "xlt": {
            "version": __version__, "run": str(run.path), "format": f"lm-evaluation-harness {hf.HARNESS_VERSION}",
            "scored_by": "xlt's LLM scorer under the harness protocol (eval.llm.protocol=harness)",
            "stderr": "the harness's: sample standard deviation of the per-document metric / sqrt(documents) "
                      "(groups: pooled, weighted by size); xlt's reports give a seeded 95% bootstrap interval",
            "samples": samples,
            **({"limit": limit_why} if limit_why else {}),
        },
    }
    return out


def _limit(tasks: dict[str, Task]) -> tuple[float | None, str | None]:
    """``config.limit`` as the harness means it (``--limit L``: the first L documents of **each task**, a float
    as its CLI writes it; null: every document), or null and why no ``--limit`` selects the documents written."""
    split = sorted({t.benchmark for t in tasks.values()
                    if t.language_capped and get_benchmark(t.kind).prompt.harness_task_unit is not None})
    if split:
        units = sorted({str(get_benchmark(tasks[n].kind).prompt.harness_task_unit) for n in tasks
                        if tasks[n].benchmark in split})
        return None, (f"null: {', '.join(split)} capped a language's questions (max_questions, the first n of the "
                      f"language), while the harness's --limit caps each task (one per {', '.join(units)}); no "
                      "--limit selects these documents (n-samples says what each task scored)")
    capped = {t.effective for t in tasks.values() if t.effective < t.original}
    if not capped:
        return None, None
    cap = capped.pop()
    if capped or any(t.effective != min(t.original, cap) for t in tasks.values()):
        return None, ("null: the tasks were capped at different numbers of documents, while the harness's --limit "
                      "is one number for every task (n-samples says what each task scored)")
    return float(cap), None


def _num_parameters(llm: Any) -> int:
    """``model_num_parameters`` as the harness counts it (``model.num_parameters()``), on the model built on the
    meta device from its config (no weights read); -1, the harness's own value, where it cannot be built."""
    try:
        import torch  # lazy: start-up time
        from transformers import AutoConfig, AutoModelForCausalLM

        config = AutoConfig.from_pretrained(str(llm.model), revision=llm.revision or None)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)
        return int(model.num_parameters())
    except Exception as err:  # noqa: BLE001 - any model transformers cannot build from its config
        log.warning("model_num_parameters: %s not built from its config (%s: %s); written as -1, as the harness "
                    "does", llm.model, type(err).__name__, err)
        return -1


def _git_hash() -> str | None:
    """``git_hash`` as the harness takes it (``git describe --always``), of the code that wrote the results: xlt's
    checkout; null outside a git checkout, as the harness writes it."""
    import subprocess  # lazy: start-up time

    try:
        out = subprocess.run(["git", "describe", "--always"], cwd=Path(__file__).resolve().parent,  # noqa: S607
                             capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _evaluation_time(run: RunDir, started: float | None) -> str | None:
    """``total_evaluation_time_seconds`` (a string, as the harness's tracker writes it): the evaluate stage's
    time, from ``started`` (the stage writing the files) or from its done-marker."""
    if started is not None:
        return str(time.time() - float(started))
    try:
        prov = run.done_info("evaluate").get("provenance") or {}
    except Damaged:  # a marker xlt did not write: the time is unknown, as for a run without one
        return None
    if isinstance(prov.get("started"), (int, float)) and isinstance(prov.get("finished"), (int, float)):
        return str(float(prov["finished"]) - float(prov["started"]))
    return None


def _tokenizer_info(tokenizer: Any, max_length: Any) -> dict[str, Any]:
    """``add_tokenizer_info``: the special tokens and their ids, the end-of-text id, the maximum length."""
    def pair(token: str) -> list[Any]:
        return [getattr(tokenizer, f"{token}_token", None), str(getattr(tokenizer, f"{token}_token_id", None))]

    return {"tokenizer_pad_token": pair("pad"), "tokenizer_eos_token": pair("eos"), "tokenizer_bos_token": pair("bos"),
            "eot_token_id": getattr(tokenizer, "eos_token_id", None), "max_length": max_length}


def _transformers_version() -> str:
    import transformers  # lazy: start-up time

    return str(transformers.__version__)
