"""An lm-evaluation-harness output folder as a system of ``report --compare``, beside xlt runs.

:func:`harness_system` reads the folder (:mod:`xlt.reporting.harness.read`) and writes what it holds as an xlt
run directory under the comparison's folder (``<out>/harness_systems/<name>/``: ``config.yaml``, and per
benchmark and language a result and its predictions), so that the side-by-side tables, the paired tests, the
findings and the item report read it as they read any run. Per language: the accuracy of its documents (the
harness's ``acc`` of each, pooled over the language's tasks, e.g. Global-MMLU's subjects), xlt's bootstrap
interval over them, and one prediction per document (the argmax of its options' log-likelihoods).

Each document is matched to xlt's item of the same benchmark entry of a compared xlt run: by the item id its
content gives, then by the document itself (its ``doc_hash`` against that of the row the entry's data holds), so
another data revision, a language the entry lacks or a document it does not hold is an error naming the task
and the document, never a silent pairing by position. Without a compared xlt run of that benchmark, the
documents are taken as they are (their ids still come from their content).

A folder without sample logs gives each language's accuracy from the results file alone (``per_question:
false``, no predictions: :class:`xlt.run.results.NoPerQuestionData`); what needs per-question data (paired
differences, the item report, the findings) says so and leaves it out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from xlt.config import validate
from xlt.config.eval import is_machine_translated
from xlt.data.benchmarks import get_benchmark
from xlt.errors import XltError
from xlt.metrics import accuracy_with_ci, chance_level
from xlt.reporting.harness import format as hf
from xlt.reporting.harness.read import HarnessFolder, HarnessFolderError, Sample, read_folder
from xlt.reporting.run_tables import RunInfo, run_label
from xlt.run.files import atomic_write_json, atomic_write_text, json_text, remove_path
from xlt.run.layout import RunDir
from xlt.run.results import first_result, result_record

SYSTEMS_DIR = "harness_systems"  # in a comparison's folder: the harness folders compared, as run directories
SOURCE_FILE = "harness_source.json"  # in such a run directory: the folder it was read from (model, settings)


def harness_system(path: str | Path, out: str | Path, runs: list[RunInfo], samples: int = 1000, seed: int = 0,
                   include_paths: Any = (), *, into: str | Path | None = None) -> RunInfo:
    """The harness output folder ``path`` as a compared system (see the module docstring), matched against the
    xlt ``runs``; written under ``out`` (or into the folder ``into``). Its label is ``harness:<folder>``; it is
    never one seed group with an xlt run."""
    folder = read_folder(path)
    name = hf.sanitize_model_name(run_label(Path(path))).replace("/", "__")
    run = RunDir(Path(into) if into is not None else Path(out) / SYSTEMS_DIR / name)
    _clear(run.path, own=into is None)
    entries: dict[str, tuple[str, Any, str | None]] = {}
    for task in folder.tasks.values():
        if task.kind not in entries:
            entries[task.kind] = _entry(task.kind, runs)
    by_lang: dict[tuple[str, str], list[tuple[str, Sample]]] = {}
    for task in sorted(folder.tasks.values(), key=lambda t: t.name):
        by_lang.setdefault((task.kind, task.language), [])
        for s in task.samples or []:
            by_lang[(task.kind, task.language)].append((task.name, s))
    benchmarks: dict[str, Any] = {}
    for (kind, lang), docs in sorted(by_lang.items()):
        entry, bcfg, label = entries[kind]
        if folder.has_samples:
            matched = _match(kind, lang, docs, bcfg, label) if bcfg is not None else [s for _, s in docs]
            _write_language(run, folder, entry, kind, lang, matched, samples, seed)
        else:
            tasks = sorted(t for t, d in folder.tasks.items() if d.kind == kind and d.language == lang)
            if bcfg is not None:
                _rows(kind, lang, tasks[0], bcfg, label)  # a language the compared run's data lacks: named
            _write_results_only(run, folder, entry, kind, lang, tasks, samples, seed)
        benchmarks.setdefault(entry, {"kind": kind, "languages": [], **_source(kind, bcfg)})["languages"].append(lang)
    for entry, b in benchmarks.items():
        atomic_write_json(run.plan(entry), {"benchmark": entry, "kind": b["kind"], "languages": b["languages"]})
    atomic_write_text(run.config, OmegaConf.to_yaml(_config(folder, benchmarks)))
    atomic_write_json(run.path / SOURCE_FILE, folder.provenance())
    # without sample logs: accuracy per language only
    return RunInfo(run.path, include_paths, harness=path, per_question=folder.has_samples)


def _clear(path: Path, *, own: bool) -> None:
    """Make room for the folder's run directory at ``path``: one xlt wrote from a harness folder before (its
    :data:`SOURCE_FILE`) has its results removed; ``own`` (the comparison's own subfolder) is removed whole; any
    other non-empty folder is refused, never overwritten."""
    if not path.exists():
        return
    if own:
        remove_path(path)
    elif (path / SOURCE_FILE).is_file():
        remove_path(RunDir(path).eval)
    elif not path.is_dir() or any(path.iterdir()):
        raise HarnessFolderError(f"--out {path}: exists and is not a folder xlt wrote from an lm-evaluation-harness "
                                 "folder; give a new folder")


def _entry(kind: str, runs: list[RunInfo]) -> tuple[str, Any, str | None]:
    """The benchmark entry of the first xlt run evaluating ``kind`` in-language (its name, its checked config, the
    run's label), else ``(kind, None, None)``."""
    for r in runs:
        cfg = None
        for name, b in ((r.config.get("eval") or {}).get("benchmarks") or {}).items():
            if not isinstance(b, dict) or b.get("kind", name) != kind or b.get("enabled") is False:
                continue
            if b.get("translate_test") or is_machine_translated(b):
                continue
            cfg = cfg or validate(r.config)
            return name, cfg.eval.benchmarks[name], r.label
    return kind, None, None


def _source(kind: str, bcfg: Any) -> dict[str, Any]:
    if bcfg is None:
        return {"hub_id": get_benchmark(kind).harness.dataset_path}
    return {k: bcfg.get(k) for k in ("path", "hub_id", "revision", "split") if bcfg.get(k) is not None}


def _match(kind: str, lang: str, docs: list[tuple[str, Sample]], bcfg: Any, label: str | None) -> list[Sample]:
    """The documents of one language, each matched to the entry's item by its id and its document's hash; in the
    entry's order of items."""
    rows, items, where = _rows(kind, lang, docs[0][0], bcfg, label)
    position = {str(i): n for n, i in enumerate(items["id"])}
    out: list[tuple[int, Sample]] = []
    for task, s in docs:
        n = position.get(str(s.item["id"]))
        if n is None:
            raise HarnessFolderError(f"task {task}, document {s.doc_id} (item {s.item['id']}): not among the items of "
                                     f"{where} that {label} evaluated; another data revision or source")
        row = dict(rows[n])
        if hf.doc_hash(row) != hf.doc_hash(s.doc):
            field = next((k for k in sorted(set(row) | set(s.doc)) if _dumped(row.get(k)) != _dumped(s.doc.get(k))), "?")
            raise HarnessFolderError(f"task {task}, document {s.doc_id} (item {s.item['id']}): its document differs "
                                     f"from {where}'s row of that item (field {field!r}); another data revision")
        out.append((n, s))
    return [s for _, s in sorted(out, key=lambda x: x[0])]


def _dumped(value: Any) -> str:
    """A document field as the harness's JSON holds it (a timestamp as its text)."""
    return json.dumps(value, default=hf.json_default, ensure_ascii=False)


def _rows(kind: str, lang: str, task: str, bcfg: Any, label: str | None) -> tuple[Any, Any, str]:
    """The compared run's entry's rows of ``lang`` as the source holds them, converted, and where they were read;
    a language the entry's data lacks is an error naming the harness ``task``."""
    definition = get_benchmark(kind)
    full = OmegaConf.merge(bcfg, {"max_questions": None})
    try:
        rows, where = definition.upstream_rows(full, lang, full.split)
        return rows, definition.convert_upstream(rows, definition.canonical(lang), where), where
    except XltError as err:  # a language the data lacks (ConfigError), a file it cannot read (DataError)
        raise HarnessFolderError(f"task {task}: language {lang!r} is not in the {kind} data of {label} ({err}); "
                                 "compare runs of the same languages") from None


def _write_results_only(run: RunDir, folder: HarnessFolder, entry: str, kind: str, lang: str, tasks: list[str],
                        samples: int, seed: int) -> None:
    """One language's result from the results file alone (no sample logs): its accuracy pools the tasks'
    ``acc,none`` by their ``n-samples`` effective; the interval is the bootstrap over that many right and wrong
    answers (a percentile bootstrap of a proportion depends on nothing else); no predictions."""
    definition = get_benchmark(kind)
    n = correct = 0
    for t in tasks:
        data = folder.tasks[t]
        if data.n is None:
            raise HarnessFolderError(f"{data.results_file}: field 'n-samples.{t}.effective' missing; without "
                                     "sample logs it is the task's number of documents")
        right = data.acc * data.n
        if abs(right - round(right)) > 1e-6:
            raise HarnessFolderError(f"{data.results_file}: field 'results.{t}.acc,none' ({data.acc}) is not a "
                                     f"whole number of right answers out of its {data.n} documents")
        n, correct = n + data.n, correct + round(right)
    result = result_record(
        benchmark=entry, kind=kind, language=lang, code=definition.table_code(lang), split="test", scorer="llm",
        model=folder.model, translate_test=False, settings={},
        accuracy=accuracy_with_ci(np.arange(n) < correct, samples, seed), chance=100 / definition.harness.options,
        ties=0, truncated=None, data_checks={}, per_question=False,
        per_question_note=f"{folder.path} has no sample logs (lm_eval --log_samples): results only",
        scorer_meta={"comparable_to_harness": True, "harness": {
            "tasks": tasks, "acc": {t: folder.tasks[t].acc for t in tasks}, **folder.provenance()}})
    atomic_write_json(run.result(entry, lang), result)


def _write_language(run: RunDir, folder: HarnessFolder, entry: str, kind: str, lang: str, docs: list[Sample],
                    samples: int, seed: int) -> None:
    """One language's result and predictions, as the evaluate stage writes them."""
    definition = get_benchmark(kind)
    from datasets import Dataset  # lazy: start-up time

    items = Dataset.from_list([s.item for s in docs])
    gold = np.array([int(s.item["label"]) for s in docs])
    pred = np.array([int(np.argmax(s.lls)) for s in docs])
    correct = pred == gold
    counts = [len(s.lls) for s in docs]
    masks = definition.item_subsets(items)
    own = {k: m for k, m in masks.items() if k != "full"}
    lines = [json_text({"id": s.item["id"], "language": lang, "gold": int(gold[i]), "prediction": int(pred[i]),
                        "scores": s.lls, "job": None,
                        **({"subsets": [k for k, m in own.items() if m[i]]} if own else {})}, indent=None)
             for i, s in enumerate(docs)]
    atomic_write_text(run.predictions(entry, lang), "\n".join(lines) + "\n")
    tasks = sorted({t for t, d in folder.tasks.items() if d.kind == kind and d.language == lang})
    result = result_record(
        benchmark=entry, kind=kind, language=lang, code=definition.table_code(lang), split="test", scorer="llm",
        model=folder.model, translate_test=False, settings={}, accuracy=accuracy_with_ci(correct, samples, seed),
        chance=chance_level(counts),
        ties=int(sum(np.sum(np.isclose(s.lls, max(s.lls), rtol=0, atol=0)) > 1 for s in docs)),
        truncated=None, data_checks={},
        scorer_meta={"comparable_to_harness": True, "harness": {
            "tasks": tasks, "acc": {t: folder.tasks[t].acc for t in tasks}, **folder.provenance()}})
    if masks:
        result["subsets"] = {k: {**accuracy_with_ci(correct[m], samples, seed), "chance": chance_level(np.asarray(counts)[m])}
                             for k, m in masks.items()}
    atomic_write_json(run.result(entry, lang), result)


def _config(folder: HarnessFolder, benchmarks: dict[str, Any]) -> Any:
    """The config.yaml of the imported system: an LLM evaluation of the folder's model on its benchmarks."""
    prov = folder.provenance()  # also in each result's scorer_meta.harness
    shots = prov["n_shot"]
    args = prov["model_args"] if isinstance(prov["model_args"], dict) else {}
    llm = {"model": folder.model, "num_fewshot": int(shots[0]) if len(shots) == 1 else 0}
    if isinstance(prov.get("fewshot_seed"), int):
        llm["fewshot_seed"] = prov["fewshot_seed"]
    dtype = str(args.get("dtype") or "").replace("torch.", "")
    if dtype in ("float32", "bfloat16", "float16"):
        llm["dtype"] = dtype
    return OmegaConf.create({"seed": 0, "stages": ["evaluate", "report"],
                             "eval": {"scorer": "llm", "model": folder.model, "llm": llm, "benchmarks": benchmarks}})


def harness_provenance(runs: list[RunInfo]) -> dict[str, dict[str, Any]]:
    """Per compared harness system (label), the model and settings its folder records."""
    out = {}
    for r in runs:
        if r.harness is None:
            continue
        for bench in r.results:
            first = first_result(r.path, bench)
            if first is not None:
                out[r.label] = dict(first[1]["scorer_meta"]["harness"])
                break
    return out


def _files_note(p: dict[str, Any]) -> str:
    """Which task came from which results file (several runs into one folder), what was not read."""
    out = ""
    by_file = p.get("results_files") or {}
    if len(by_file) > 1:
        out += "; tasks by results file (each from the newest holding it): " + "; ".join(
            f"`{name}`: {', '.join(tasks)}" for name, tasks in by_file.items())
    if p.get("ignored_tasks"):
        out += f"; tasks not read (no benchmark xlt knows): {', '.join(p['ignored_tasks'])}"
    if p.get("ignored_files"):
        out += f"; files not read (not the harness's results or sample files): {', '.join(p['ignored_files'])}"
    return out


def harness_markdown(provenance: dict[str, dict[str, Any]]) -> str:
    """The comparison's section on its systems read from lm-evaluation-harness folders."""
    lines = ["\n## Systems read from lm-evaluation-harness output folders\n\n"]
    for label, p in provenance.items():
        args = p.get("model_args")
        lines.append(f"- `{label}`: model `{p['model']}` (model_args {json_text(args, indent=None)}, dtype "
                     f"{p.get('model_dtype')}), n-shot {p.get('n_shot')}, limit {p.get('limit')}, fewshot seed "
                     f"{p.get('fewshot_seed')}, batch size {p.get('batch_size')}, chat template "
                     f"{'yes' if p.get('chat_template') else 'no'}; lm-evaluation-harness {p.get('lm_eval_version')}, "
                     f"transformers {p.get('transformers_version')}; results `{p['results_file']}`"
                     + _files_note(p) + "\n")
    lines.append("\nEach harness task's documents become xlt's items through the benchmark's own row conversion (the "
                 "item id comes from the document's content); in a comparison each is matched to the compared xlt "
                 "run's item by that id and by the document's hash. Per language, accuracy pools the language's "
                 "tasks, and its interval is "
                 "xlt's bootstrap over the documents (the harness's own stderr is the sample standard deviation / "
                 "sqrt(n)).\n")
    return "".join(lines)
