"""The checked reader of an lm-evaluation-harness output folder (``--output_path``, with or without
``--log_samples``): every ``results_<date>.json`` in it (one per run into the same folder), each task from the
newest file holding it, and the ``samples_<task>_<date>.jsonl`` of that file's date. Files that are not the
harness's output files by its own naming (``lm_eval.utils.get_results_filenames`` /
``get_sample_results_filenames``: an ``lm_eval --config`` YAML, notes) are named as not read.

Every task the harness names as one of a benchmark xlt knows (:class:`xlt.data.benchmarks.declarations.HarnessTasks`)
is read: its ``acc,none`` and, with sample logs, each document turned into xlt's item (the benchmark's own row
conversion, so the item's id comes from the document's content) with its options' log-likelihoods. Nothing is
taken on trust: a file that is not JSON, a field missing or of another type, a document whose ``doc_hash`` is
not its content's, a sample whose ``acc`` is not what its log-likelihoods give, a samples file shorter than the
results say, results that disagree with their samples, or a folder with no task xlt knows is a
:class:`HarnessFolderError` naming the file, the line or field, and the task and document.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xlt.data.benchmarks import get_benchmark
from xlt.errors import DataError
from xlt.registry import BENCHMARKS
from xlt.reporting.harness import format as hf
from xlt.run.layout import CONFIG_FILE, EVAL_DIR, MARKERS_DIR

KEY = f"acc,{hf.FILTER}"
log = logging.getLogger("xlt.harness")


class HarnessFolderError(DataError):
    """An lm-evaluation-harness output folder that cannot be read as what it claims: file, field, task, document."""


@dataclass
class Sample:
    """One logged document: its xlt item and its options' log-likelihoods."""

    doc_id: int
    doc: dict[str, Any]
    item: dict[str, Any]
    lls: list[float]
    acc: float
    line: int


@dataclass
class TaskData:
    """One task of the folder: its benchmark and language, the results file it was read from and its entry there,
    and (with sample logs) its samples."""

    name: str
    kind: str
    language: str
    acc: float
    n: int | None
    results_file: Path
    samples: list[Sample] | None = None
    samples_file: Path | None = None


@dataclass
class HarnessFolder:
    """What :func:`read_folder` read: the model's folder, its results files (newest first) and the tasks xlt knows,
    each from the newest results file holding it; the tasks and files not read, named."""

    path: Path
    results_files: list[Path]
    contents: dict[Path, dict[str, Any]]
    tasks: dict[str, TaskData] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)  # tasks of benchmarks xlt does not know
    ignored_files: list[str] = field(default_factory=list)  # not the harness's output files, by its naming

    @property
    def results_file(self) -> Path:
        """The newest results file a task was read from (its model and settings are the folder's)."""
        used = {t.results_file for t in self.tasks.values()}
        return next(f for f in self.results_files if f in used)

    @property
    def results(self) -> dict[str, Any]:
        return self.contents[self.results_file]

    @property
    def has_samples(self) -> bool:
        return all(t.samples is not None for t in self.tasks.values())

    @property
    def model(self) -> str:
        cfg = self.results.get("config") if isinstance(self.results.get("config"), dict) else {}
        args = cfg.get("model_args")
        name = self.results.get("model_name")
        if not name and isinstance(args, dict):
            name = args.get("pretrained") or args.get("model")
        return str(name or cfg.get("model") or self.path.name)

    def tasks_by_file(self) -> dict[str, list[str]]:
        """Per results file read (newest first), the tasks taken from it."""
        out: dict[str, list[str]] = {}
        for f in self.results_files:
            names = sorted(t.name for t in self.tasks.values() if t.results_file == f)
            if names:
                out[f.name] = names
        return out

    def provenance(self) -> dict[str, Any]:
        """The model and the settings the folder records (shown beside its numbers); with several runs' results
        files, which task came from which file and each file's settings."""
        r = self.results
        out = {"results_file": str(self.results_file), **_settings(r, self.tasks), "model": self.model,
               "model_source": r.get("model_source"), "chat_template": bool(r.get("chat_template")),
               "lm_eval_version": r.get("lm_eval_version"), "transformers_version": r.get("transformers_version"),
               "date": r.get("date"), "sample_logs": self.has_samples, "tasks": sorted(self.tasks),
               "ignored_tasks": self.ignored, "ignored_files": self.ignored_files,
               "results_files": self.tasks_by_file()}
        shots = {_nshot(self.contents[t.results_file]).get(t.name) for t in self.tasks.values()}
        out["n_shot"] = sorted(shots - {None})  # each task's, from its own file
        if len(out["results_files"]) > 1:
            out["settings_by_file"] = {
                name: _settings(self.contents[self.path / name], {t: None for t in tasks})
                for name, tasks in out["results_files"].items()}
        return out


def _nshot(r: dict[str, Any]) -> dict[str, Any]:
    return r.get("n-shot") if isinstance(r.get("n-shot"), dict) else {}


def _settings(r: dict[str, Any], tasks: Any) -> dict[str, Any]:
    cfg = r.get("config") if isinstance(r.get("config"), dict) else {}
    nshot = _nshot(r)
    return {"model_args": cfg.get("model_args"), "model_dtype": cfg.get("model_dtype"),
            "batch_size": cfg.get("batch_size"), "limit": cfg.get("limit"), "fewshot_seed": cfg.get("fewshot_seed"),
            "n_shot": sorted({v for k, v in nshot.items() if k in tasks})}


def _xlt_run(p: Path) -> bool:
    """An xlt run directory: its config.yaml beside what its stages wrote (stage markers, evaluation results)."""
    return (p / CONFIG_FILE).is_file() and ((p / MARKERS_DIR).is_dir() or (p / EVAL_DIR).is_dir())


def _results_files(folder: Path) -> list[Path]:
    return [f for f in folder.iterdir() if f.is_file() and hf.is_results_file(f.name)]


def is_harness_folder(path: str | Path) -> bool:
    """Whether ``path`` is an lm-evaluation-harness output folder (a results file, by the harness's naming, in it
    or one level down) rather than an xlt run directory. Other files beside the harness's (an ``lm_eval
    --config`` YAML, notes) do not make it something else; they are named as not read."""
    p = Path(path)
    if not p.is_dir() or _xlt_run(p):
        return False
    return bool(_results_files(p)) or any(_results_files(d) for d in p.iterdir() if d.is_dir())


def model_folder(path: Path) -> Path:
    """The folder holding the results files: ``path`` itself or its one model subfolder."""
    if _results_files(path):
        return path
    subs = sorted(d for d in path.iterdir() if d.is_dir() and _results_files(d)) if path.is_dir() else []
    if not subs:
        raise HarnessFolderError(f"{path}: no {hf.RESULTS_PREFIX}<date>.json in it or in a model folder under it; not "
                                 "an lm-evaluation-harness output folder (--output_path)")
    if len(subs) > 1:
        raise HarnessFolderError(f"{path}: holds the results of several models ({', '.join(s.name for s in subs)}); "
                                 "give one model's folder")
    return subs[0]


def _not_harness_files(folder: Path, top: Path) -> list[str]:
    """Files of the model folder (and of the output folder above it) that are not the harness's output files by
    its naming (``results_<date>.json``, ``samples_<task>_<date>.jsonl``), relative to ``top``."""
    out = []
    for d in ([top] if top != folder else []) + [folder]:
        for f in sorted(d.iterdir()):
            if f == folder or (d == folder and f.is_file() and (hf.is_results_file(f.name)
                                                               or hf.is_samples_file(f.name))):
                continue
            out.append(str(f.relative_to(top)) + ("/" if f.is_dir() else ""))
    return out


def _json_file(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise HarnessFolderError(f"{path}: unreadable ({err})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise HarnessFolderError(f"{path}: not JSON (line {err.lineno}, column {err.colno}: {err.msg}); damaged or "
                                 "truncated") from None


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise HarnessFolderError(f"{where}: not a number ({value!r})")
    return float(value)


def _task_kind(name: str) -> tuple[str, str] | None:
    """``(benchmark kind, language)`` of a harness task name, by the registered definitions' declared names."""
    for kind in BENCHMARKS.names():
        h = get_benchmark(kind).harness
        if h is None:
            continue
        m = h.pattern().match(name)
        if m:
            return kind, m.group("language")
    return None


def read_folder(path: str | Path, *, samples: bool = True) -> HarnessFolder:
    """Read the harness output folder ``path`` (see the module docstring); ``samples=False`` reads the results only.

    Every results file is read (lm_eval writes a new ``results_<date>.json`` per run into the same folder), newest
    first by the date in its name (``lm_eval.utils.get_file_datetime``, as its ``get_latest_filename``); each task
    is taken from the newest file holding it, with the sample logs of that file's date, as the harness's own
    Hub card keeps each task's latest results (``EvaluationTracker.recreate_metadata_card``)."""
    top = Path(path)
    folder = model_folder(top)
    files = sorted(_results_files(folder), key=lambda f: hf.file_date(f.name), reverse=True)
    contents: dict[Path, dict[str, Any]] = {}
    for f in files:
        data = _json_file(f)
        if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
            raise HarnessFolderError(f"{f}: field 'results' missing or not an object; not lm-evaluation-harness's "
                                     "results file")
        contents[f] = data
    out = HarnessFolder(folder, files, contents, ignored_files=_not_harness_files(folder, top))
    for f, results in contents.items():
        nsamples = results.get("n-samples") if isinstance(results.get("n-samples"), dict) else {}
        groups = results.get("group_subtasks") if isinstance(results.get("group_subtasks"), dict) else {}
        for name, entry in results["results"].items():
            found = _task_kind(str(name))
            if found is None or name in groups:
                if name not in groups and str(name) not in out.ignored:
                    out.ignored.append(str(name))
                continue
            if str(name) in out.tasks:  # a newer run's results of the task
                continue
            if not isinstance(entry, dict) or KEY not in entry:
                raise HarnessFolderError(f"{f}: field 'results.{name}.{KEY}' missing")
            acc = _number(entry[KEY], f"{f}: field 'results.{name}.{KEY}'")
            n = (nsamples.get(name) or {}).get("effective") if isinstance(nsamples.get(name), dict) else None
            out.tasks[str(name)] = TaskData(str(name), found[0], found[1], acc, n if isinstance(n, int) else None, f)
    if not out.tasks:
        shown = ", ".join(out.ignored[:5]) + (" ..." if len(out.ignored) > 5 else "")
        where = files[0] if len(files) == 1 else f"{folder} ({len(files)} results files)"
        raise HarnessFolderError(f"{where}: none of its tasks ({shown or 'none'}) is a task of a benchmark xlt knows "
                                 f"(the harness's {', '.join(_known_patterns())}); a foreign results file")
    if samples:
        files_of = {t: folder / hf.samples_name(t, hf.file_date(d.results_file.name)) for t, d in out.tasks.items()}
        present = [t for t, f in files_of.items() if f.is_file()]
        if present and len(present) < len(files_of):
            gone = sorted(set(files_of) - set(present))
            raise HarnessFolderError(f"{folder}: sample logs of {len(gone)} task(s) missing ({files_of[gone[0]].name}"
                                     f"{' ...' if len(gone) > 1 else ''}) while the other tasks have theirs; a partial "
                                     "copy (copy the whole folder, or read it without sample logs)")
        for t in present:
            _read_samples(out.tasks[t], files_of[t], out.tasks[t].results_file)
    if len(out.tasks_by_file()) > 1 or out.ignored or out.ignored_files:
        log.info("%s: tasks read from %s; not read: tasks %s (no benchmark xlt knows), files %s (not the harness's "
                 "output files)", folder, out.tasks_by_file(), out.ignored or "none", out.ignored_files or "none")
    return out


def _known_patterns() -> list[str]:
    out = []
    for kind in BENCHMARKS.names():
        h = get_benchmark(kind).harness
        if h is not None:
            out.append(h.task.replace("{language}", "<lang>").replace("{", "<").replace("}", ">"))
    return out


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise HarnessFolderError(f"{path}: unreadable ({err})") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise HarnessFolderError(f"{path}: line {n}: not JSON ({err.msg}); damaged or truncated") from None
        if not isinstance(row, dict):
            raise HarnessFolderError(f"{path}: line {n}: not a sample object")
        yield n, row


def _read_samples(task: TaskData, path: Path, results_file: Path) -> None:
    """Each logged document of ``task`` turned into xlt's item, checked (see the module docstring)."""
    definition = get_benchmark(task.kind)
    h = definition.harness
    docs, rows = [], []
    for n, row in _lines(path):
        where = f"{path}: line {n}"
        for key in ("doc_id", "doc", "target", "filtered_resps", "doc_hash", "acc"):
            if key not in row:
                raise HarnessFolderError(f"{where}: field '{key}' missing")
        doc = row["doc"]
        if not isinstance(doc, dict) or not isinstance(row["doc_id"], int):
            raise HarnessFolderError(f"{where}: field 'doc' is not an object or 'doc_id' not an integer")
        if hf.doc_hash(doc) != row["doc_hash"]:
            raise HarnessFolderError(f"{where}: task {task.name}, document {row['doc_id']}: its doc_hash is not its "
                                     "document's; the document was edited or damaged")
        docs.append(doc)
        rows.append((n, row))
    if not rows:
        raise HarnessFolderError(f"{path}: no samples; damaged or truncated")
    if task.n is not None and len(rows) != task.n:
        raise HarnessFolderError(f"{path}: {len(rows)} samples, while {results_file.name} says task {task.name} "
                                 f"scored {task.n} documents (n-samples effective); truncated or from another run")
    from datasets import Dataset  # lazy: start-up time

    try:
        items = definition.convert_upstream(Dataset.from_list(docs), task.language, str(path))
    except DataError as err:
        raise HarnessFolderError(f"task {task.name}: a document is not a {task.kind} row: {err}") from None
    except Exception as err:  # noqa: BLE001 - pyarrow's type errors on documents of mixed shapes
        raise HarnessFolderError(f"{path}: task {task.name}: its documents are not {task.kind} rows "
                                 f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})") from None
    out, seen = [], set()
    for (n, row), doc, item in zip(rows, docs, items, strict=True):
        where = f"{path}: line {n} (task {task.name}, document {row['doc_id']})"
        if row["doc_id"] in seen:
            raise HarnessFolderError(f"{where}: document logged twice")
        seen.add(row["doc_id"])
        resps = row["filtered_resps"]
        try:
            lls = [float(r[0]) for r in resps]
        except (TypeError, ValueError, IndexError, KeyError):
            raise HarnessFolderError(f"{where}: field 'filtered_resps' is not a list of [log-likelihood, is_greedy]") from None
        if len(lls) != len(item["options"]) or not all(math.isfinite(x) for x in lls):
            raise HarnessFolderError(f"{where}: field 'filtered_resps' holds {len(lls)} scores for "
                                     f"{len(item['options'])} options")
        gold = int(item["label"])
        target = str(gold if h.target == "index" else "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[gold])
        if str(row["target"]) != target:
            raise HarnessFolderError(f"{where}: field 'target' is {row['target']!r}; its document's answer is {target!r}")
        acc = _number(row["acc"], f"{where}: field 'acc'")
        if acc != (1.0 if int(np.argmax(lls)) == gold else 0.0):
            raise HarnessFolderError(f"{where}: field 'acc' is {acc:g}, its log-likelihoods give "
                                     f"{1.0 - acc:g}; the file was edited or damaged")
        out.append(Sample(int(row["doc_id"]), doc, dict(item), lls, acc, n))
    mean = hf.mean([s.acc for s in out])
    if not math.isclose(mean, task.acc, rel_tol=0, abs_tol=1e-12):
        raise HarnessFolderError(f"{results_file}: field 'results.{task.name}.{KEY}' is {task.acc}, its samples "
                                 f"({path.name}) give {mean}; results and sample logs of different runs")
    task.samples, task.samples_file = out, path
