"""The run directory's layout (:class:`RunDir`): every path a run holds is named here and nowhere else,
plus the rank helpers every stage uses (:func:`shard`, :func:`is_main_process`, :func:`world_size`). Its
name comes from :func:`xlt.config.keys.run_name`; its files are written through :mod:`xlt.run.files` and read
back through :mod:`xlt.run.state` (what a stage leaves for later stages: :mod:`xlt.run.artifacts`); what each
stage reads and writes is declared beside the stage's code (:mod:`xlt.stages`). The translations' places (merged
languages, parts, the segment cache) are named here too: the translate stage, the importer, the
translate-train-all union and translate-test share them.

A run directory is derived from the recipe and the command-line overrides (never the clock), so the
same command finds the same directory: finished stages are skipped, interrupted ones resume.

Layout (the constants below; :class:`RunDir` joins them)::

    <run_root>/<recipe>/<overrides or "default">/
        xlt.log                 the log of every call, appended (Hydra's job log; no .hydra/ folder)
        config.yaml             the validated config of this run (secrets removed)
        calls.jsonl             one line per call (overrides, stages run and skipped)
        stages/<stage>.json     done-markers with a short summary per finished stage
        stages/<stage>.attempt  rank 0's decision per launch; <stage>.failed: rank 0 failed it
        locks/<name>.json       who holds the run (xlt.run.lock)
        preempted.json          the record of a preempted run (xlt.cluster.signals)
        failed.json             the record of a call that failed: exit status, error (xlt.cli; xlt status)
        failed.<shard>.json, preempted.<shard>.json   the same for one shard's call (<shard>: its lock's name,
                                e.g. evaluate-shard1-of-4): each shard keeps and clears only its own
        data/train_set          the English training set (build_data); train_set.tsv, build_report.{json,md}
        data/translated/        merged translations per language (<lang>/xlt_translation.json seals each),
                                .parts/<lang>/<unit> while shards translate; translation_report.{json,md}
        data/translation_cache/  the segment cache (unless translate.cache_dir)
        data/translate_test/, data/machine_translated/   quality counts of evaluation items translated
        checkpoints/            resumable Trainer checkpoints (xlt_complete.json in each complete one;
                                stale/: those of other inputs)
        model/                  final model (safetensors) + README.md model card + xlt_provenance.json
                                (base_model/: the tiny base of a LoRA adapter); .model.partial/ while saving
        model_merged/           LoRA adapters merged into a plain model (model.lora.merge_and_save)
        train_metrics.json      the train stage's summary
        eval/<benchmark>/       plan.json, <lang>.json results, predictions/<lang>.jsonl, llm_meta/
        eval_before/            the same for the model before fine-tuning (eval.before_training)
        report.{json,md,csv,tex,html}, plots/   the report; report_items.csv: per parallel item, the
                                languages it is answered right in

Partial work a stage resumes (checkpoints, translations) records the inputs it was made under in
``xlt_inputs.json`` inside its folder (:func:`xlt.contract.recorded_inputs`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from xlt.config.keys import run_name  # noqa: F401  (re-exported: the run directory's name)
from xlt.run.files import atomic_write_json, remove_path
from xlt.run.state import MARKER, read_state

# --- names in a run directory (relative to it, or to the folder a comment names) ------------------------
CONFIG_FILE = "config.yaml"
CALLS_FILE = "calls.jsonl"
MARKERS_DIR = "stages"
LOCKS_DIR = "locks"  # <name>.json: who holds the run (xlt.run.lock)
PREEMPTION_FILE = "preempted.json"
FAILURE_FILE = "failed.json"
WHOLE_RUN = "run"  # the lock name of a whole-run call (xlt.run.lock.RUN_LOCK): its records keep the plain names
DATA_DIR = "data"
TRAIN_SET_DIR = "data/train_set"
TRAIN_SET_TSV = "data/train_set.tsv"
BUILD_REPORT_FILE = "data/build_report.json"
BUILD_REPORT_MD = "data/build_report.md"
TRANSLATION_REPORT_FILE = "data/translation_report.json"
TRANSLATION_REPORT_MD = "data/translation_report.md"
TRANSLATED_DIR = "data/translated"
PARTS_DIR = ".parts"  # in TRANSLATED_DIR
MERGED_FILE = "xlt_translation.json"  # in a merged (or imported) language folder: its seal (xlt.run.state.seal)
PART_STATS_FILE = "quality.json"  # in a translated part: its seal and quality counts
TRANSLATED_LOCK = ".translated.lock"  # in DATA_DIR
MERGE_LOCK = ".merge.lock"  # in TRANSLATED_DIR
TRANSLATION_CACHE = "translation_cache"  # a folder in DATA_DIR, or translate.cache_dir (xlt.translation.cache)
TRANSLATE_TEST_DIR = "translate_test"  # in DATA_DIR
MACHINE_TRANSLATED_DIR = "machine_translated"  # in DATA_DIR
CHECKPOINTS_DIR = "checkpoints"
CHECKPOINT_COMPLETE_FILE = "xlt_complete.json"  # in checkpoints/checkpoint-<step>: the save finished
STALE_DIR = "stale"
MODEL_DIR = "model"
MODEL_PARTIAL_DIR = ".model.partial"  # the model being saved (replaces MODEL_DIR in one rename)
MODEL_BASE_DIR = "base_model"  # in MODEL_DIR: the tiny base model a LoRA adapter needs
MERGED_MODEL_DIR = "model_merged"
MODEL_CARD = "README.md"  # in MODEL_DIR
MODEL_PROVENANCE_FILE = "xlt_provenance.json"  # in MODEL_DIR
TRAIN_METRICS_FILE = "train_metrics.json"
EVAL_DIR = "eval"
EVAL_BEFORE_DIR = "eval_before"
PLAN_FILE = "plan.json"  # in eval/<benchmark>
PREDICTIONS_DIR = "predictions"  # in eval/<benchmark>
LLM_META_DIR = "llm_meta"  # in eval/<benchmark>
REPORT_STEM = "report"
REPORT_FORMATS = ("json", "md", "csv", "tex", "html")  # report.json, report.md, ...
REPORT_FILE = "report.json"
ITEMS_REPORT_FILE = "report_items.csv"  # the cross-language item report: per parallel item, languages right
PLOTS_DIR = "plots"
HARNESS_DIR = "harness"  # eval.llm.harness_output=true: lm-evaluation-harness's output folder of the results
INPUTS_FILE = "xlt_inputs.json"  # in a folder of partial work (checkpoints, translations)


def shard(items: list, index: int, num: int) -> list:
    """Shard ``index`` (0-based) of ``num``: every ``num``-th item starting at ``index``, in the given order.

    The one rule both sharded stages use (translation units, evaluation jobs); the config checks
    ``0 <= index < num`` before any stage runs.
    """
    if num < 1 or not 0 <= index < num:
        raise ValueError(f"shard {index} of {num}: need 0 <= index < num")
    return items[index::num]


def is_main_process() -> bool:
    """True on rank 0 of a multi-process launch (and in a plain single process): the one that writes."""
    return int(os.environ.get("RANK", "0")) == 0


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def shard_record(name: str, shard: str | None) -> str:
    """The file name of a call's record ``name`` (``failed.json``, ``preempted.json``): the plain name for a
    whole-run call (``shard`` None or :data:`WHOLE_RUN`), ``<stem>.<shard>.json`` for a shard's call (``shard``:
    its lock's name, :func:`xlt.run.lock.lock_name`), so that one shard's record never overwrites or clears
    another's."""
    if shard is None or shard == WHOLE_RUN:
        return name
    if not shard or "/" in shard or shard.startswith("."):
        raise ValueError(f"{shard!r}: not a shard name (a lock's name such as evaluate-shard1-of-4)")
    stem, _, ext = name.rpartition(".")
    return f"{stem}.{shard}.{ext}"


class RunDir:
    """Paths and stage bookkeeping of one run directory (the layout in the module docstring)."""

    def __init__(self, path: str | os.PathLike[str], *, eval_dir: str = EVAL_DIR):
        self.path = Path(path)
        self._eval_dir = eval_dir  # EVAL_DIR, or EVAL_BEFORE_DIR in the view before_training() gives

    def before_training(self) -> RunDir:
        """The same run directory with its evaluation folder ``eval_before/``: where the results of the model
        before fine-tuning live (``eval.before_training``), in the layout of ``eval/``."""
        return RunDir(self.path, eval_dir=EVAL_BEFORE_DIR)

    def __truediv__(self, other: str) -> Path:
        return self.path / other

    def __repr__(self) -> str:
        view = f", eval_dir={self._eval_dir!r}" if self._eval_dir != EVAL_DIR else ""
        return f"RunDir({str(self.path)!r}{view})"

    # --- the run's own records ---
    @property
    def config(self) -> Path:
        return self.path / CONFIG_FILE

    @property
    def calls(self) -> Path:
        return self.path / CALLS_FILE

    @property
    def locks(self) -> Path:
        return self.path / LOCKS_DIR

    @property
    def preemption(self) -> Path:
        return self.path / PREEMPTION_FILE

    @property
    def failure(self) -> Path:
        return self.path / FAILURE_FILE

    def failure_of(self, shard: str | None) -> Path:
        """The failure record of a call: ``failed.json`` for a whole run, ``failed.<shard>.json`` for a shard."""
        return self.path / shard_record(FAILURE_FILE, shard)

    def preemption_of(self, shard: str | None) -> Path:
        """The preemption record of a call: ``preempted.json`` for a whole run, ``preempted.<shard>.json``."""
        return self.path / shard_record(PREEMPTION_FILE, shard)

    def records(self, name: str) -> dict[str | None, Path]:
        """Every record of kind ``name`` (:data:`FAILURE_FILE` or :data:`PREEMPTION_FILE`) the run holds:
        ``{None: the whole run's, shard: that shard's}``, whole run first, then by shard name."""
        stem, dot, ext = name.rpartition(".")
        found: dict[str | None, Path] = {}
        if (self.path / name).is_file():
            found[None] = self.path / name
        for path in sorted(self.path.glob(f"{stem}.*.{ext}")):
            shard = path.name[len(stem) + 1:-len(ext) - 1]
            if shard and not shard.startswith(".") and path.is_file():
                found[shard] = path
        return found

    # --- build_data and translate ---
    @property
    def data(self) -> Path:
        return self.path / DATA_DIR

    @property
    def train_set(self) -> Path:
        return self.path / TRAIN_SET_DIR

    @property
    def train_set_tsv(self) -> Path:
        return self.path / TRAIN_SET_TSV

    @property
    def build_report(self) -> Path:
        return self.path / BUILD_REPORT_FILE

    @property
    def build_report_md(self) -> Path:
        return self.path / BUILD_REPORT_MD

    @property
    def translation_report(self) -> Path:
        return self.path / TRANSLATION_REPORT_FILE

    @property
    def translation_report_md(self) -> Path:
        return self.path / TRANSLATION_REPORT_MD

    @property
    def translated(self) -> Path:
        return self.path / TRANSLATED_DIR

    @property
    def translation_parts(self) -> Path:
        return self.translated / PARTS_DIR

    def translated_language(self, language: str) -> Path:
        """The merged (or imported) translation of ``language`` (``data/translated/<code>``)."""
        return self.translated / language

    def translation_part(self, language: str, unit: str) -> Path:
        """A finished unit of the translate stage (``unit``: its name, e.g. ``train-00000000-00000064``)."""
        return self.translation_parts / language / unit

    def translation_cache(self, cache_dir: str | None) -> Path:
        """The segment cache's folder (:mod:`xlt.translation.cache`): in ``cache_dir`` (``translate.cache_dir``,
        shared between runs), else in ``data/``."""
        return (Path(cache_dir).expanduser() if cache_dir else self.data) / TRANSLATION_CACHE

    @property
    def translated_lock(self) -> Path:
        return self.data / TRANSLATED_LOCK

    @property
    def merge_lock(self) -> Path:
        return self.translated / MERGE_LOCK

    def item_translations(self, record: str, benchmark: str, language: str) -> Path:
        """Quality counts of evaluation items translated for ``benchmark``/``language``: ``record`` is
        :data:`TRANSLATE_TEST_DIR` or :data:`MACHINE_TRANSLATED_DIR`."""
        return self.data / record / benchmark / f"{language}.json"

    # --- train ---
    @property
    def checkpoints(self) -> Path:
        return self.path / CHECKPOINTS_DIR

    @property
    def stale(self) -> Path:
        """Where checkpoints of other inputs are moved (the previous set is deleted)."""
        return self.path / STALE_DIR

    @property
    def model(self) -> Path:
        return self.path / MODEL_DIR

    @property
    def model_partial(self) -> Path:
        return self.path / MODEL_PARTIAL_DIR

    @property
    def model_card(self) -> Path:
        return self.model / MODEL_CARD

    @property
    def model_provenance(self) -> Path:
        return self.model / MODEL_PROVENANCE_FILE

    @property
    def merged_model(self) -> Path:
        return self.path / MERGED_MODEL_DIR

    @property
    def train_metrics(self) -> Path:
        return self.path / TRAIN_METRICS_FILE

    # --- evaluate ---
    @property
    def eval(self) -> Path:
        """``eval/`` (``eval_before/`` in the view :meth:`before_training` gives)."""
        return self.path / self._eval_dir

    def bench_dir(self, benchmark: str) -> Path:
        return self.eval / benchmark

    def plan(self, benchmark: str) -> Path:
        return self.bench_dir(benchmark) / PLAN_FILE

    def result(self, benchmark: str, language: str) -> Path:
        return self.bench_dir(benchmark) / f"{language}.json"

    def predictions(self, benchmark: str, language: str) -> Path:
        return self.bench_dir(benchmark) / PREDICTIONS_DIR / f"{language}.jsonl"

    def llm_meta(self, benchmark: str, language: str) -> Path:
        return self.path / EVAL_DIR / benchmark / LLM_META_DIR / f"{language}.json"

    # --- report ---
    def report(self, ext: str = "json") -> Path:
        """``report.<ext>`` (one of :data:`REPORT_FORMATS`)."""
        if ext not in REPORT_FORMATS:
            raise ValueError(f"no report.{ext} in a run directory (formats: {', '.join(REPORT_FORMATS)})")
        return self.path / f"{REPORT_STEM}.{ext}"

    @property
    def items_report(self) -> Path:
        """Per parallel item of every benchmark, the languages it was answered right in (:mod:`xlt.reporting.items`)."""
        return self.path / ITEMS_REPORT_FILE

    @property
    def plots(self) -> Path:
        return self.path / PLOTS_DIR

    @property
    def harness_output(self) -> Path:
        """``harness/``: the results as lm-evaluation-harness's output folder (``eval.llm.harness_output=true``)."""
        return self.path / HARNESS_DIR

    # --- stage markers ---
    @property
    def markers(self) -> Path:
        return self.path / MARKERS_DIR

    def marker(self, stage: str) -> Path:
        return self.markers / f"{stage}.json"

    def attempt(self, stage: str) -> Path:
        """Rank 0's decision on ``stage`` for a launch (:func:`xlt.contract.run_stages`)."""
        return self.markers / f"{stage}.attempt"

    def failed(self, stage: str) -> Path:
        return self.markers / f"{stage}.failed"

    def is_done(self, stage: str) -> bool:
        return self.marker(stage).exists()

    def done_info(self, stage: str) -> dict[str, Any]:
        """The stage's done-marker, checked (:func:`xlt.run.state.read_state`): {} when absent;
        :class:`xlt.run.state.Damaged` when it is not a marker xlt wrote."""
        return read_state(self.marker(stage), MARKER) or {}

    def mark_done(self, stage: str, info: dict[str, Any] | None = None) -> None:
        atomic_write_json(self.marker(stage), info or {})

    def clear(self, stage: str) -> None:
        remove_path(self.marker(stage))
