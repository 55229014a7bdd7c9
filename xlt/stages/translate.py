"""The ``translate`` stage: the English training set into every ``translate.languages`` code.

Work is cut into *units* of (language, split, row range of ``translate.rows_per_unit`` rows). Shard
``translate.shard_index`` of ``translate.num_shards`` takes every ``num_shards``-th unit, so shards split
both by language and by rows. A finished unit is a *part*: a dataset folder written atomically under
``data/translated/.parts/<lang>/<split>-<start>-<end>`` with its quality counts. A rerun skips finished
parts (and languages already merged from the same units); inside an unfinished one the segment cache
(:mod:`xlt.translation.cache`, committed per generation batch) makes a rerun translate only what is missing.
The translator (``auto`` engine, precision, compute type) is resolved once per run by the first shard
(:mod:`xlt.translation.resolution`, the stage's guard), so shards on other GPU models agree. Part boundaries do not depend on ``num_shards``, so any mix of shard
runs gives the same result as one run.

When every unit is done (whichever shard finishes last, or a plain rerun), the parts are merged per
language into ``data/translated/<lang>`` (a DatasetDict train/dev, TRANSLATED_FEATURES) and the quality
report ``data/translation_report.{json,md}`` is written. Until then the stage returns None (not done).

With ``translate.import_dir`` set, ready translations are imported instead (:mod:`xlt.translation.importer`).
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from datasets import DatasetDict, concatenate_datasets
from filelock import FileLock

from xlt.contract import StageContext, StageSpec, json_problems, record_inputs, recorded_inputs
from xlt.data.schema import TRANSLATED_FEATURES
from xlt.errors import ConfigError, DataError, XltError
from xlt.run.artifacts import checked_train_set, merged_info, merged_units, read_merged, read_part
from xlt.run.files import atomic_dir
from xlt.run.layout import MERGED_FILE, PART_STATS_FILE, TRANSLATION_REPORT_FILE, RunDir, shard
from xlt.run.state import seal
from xlt.stages.inputs import local_fingerprint, translator_inputs
from xlt.translation import resolution
from xlt.translation.cache import TranslationCache
from xlt.translation.dataset import QualityRules, translate_dataset
from xlt.translation.engines import build_translator, stored_identity
from xlt.translation.engines.base import Translator
from xlt.translation.importer import import_translations
from xlt.translation.quality import QualityStats
from xlt.translation.report import REPORT_COLUMNS, report_markdown, write_report  # noqa: F401  (re-exported)
from xlt.translation.storage import save_dataset

log = logging.getLogger(__name__)

SPLITS = ("train", "dev")


@dataclass(frozen=True, order=True)
class Unit:
    """One piece of work: rows ``start:end`` of ``split`` into ``language``.

    The translate stage's job, shaped as the evaluate stage's (:class:`xlt.scoring.jobs.EvalJob`): a frozen,
    ordered value planned from the config (:func:`plan_units`), sharded by the one rule
    (:func:`xlt.run.layout.shard`), named by :attr:`key`, and holding the path of what it leaves
    (:meth:`part_path`)."""

    language: str
    split: str
    start: int
    end: int

    @property
    def name(self) -> str:
        """Its part's folder name, ``<split>-<start>-<end>`` (recorded in a merged language's seal)."""
        return f"{self.split}-{self.start:08d}-{self.end:08d}"

    @property
    def key(self) -> str:
        """``language/name``: the unit among every language's."""
        return f"{self.language}/{self.name}"

    def part_path(self, run: RunDir) -> Path:
        """Its finished part: ``data/translated/.parts/<language>/<name>``."""
        return run.translation_part(self.language, self.name)


def part_dir(run: RunDir, unit: Unit) -> Path:
    return unit.part_path(run)


def load_train_set(run: RunDir) -> DatasetDict:
    ds = checked_train_set(run)
    if not isinstance(ds, DatasetDict) or set(ds) != set(SPLITS):
        raise DataError(f"{run.train_set}: expected a DatasetDict with splits {list(SPLITS)}, got {list(ds)}")
    return ds


def plan_units(sizes: dict[str, int], languages: list[str], rows_per_unit: int) -> list[Unit]:
    """All units, language by language, split by split, in row order."""
    if rows_per_unit < 1:
        raise ConfigError(f"translate.rows_per_unit must be >= 1, got {rows_per_unit}")
    units = []
    for lang in languages:
        for split in SPLITS:
            n = sizes[split]
            units.extend(Unit(lang, split, s, min(s + rows_per_unit, n)) for s in range(0, n, rows_per_unit))
    return units


def shard_units(units: list[Unit], shard_index: int, num_shards: int) -> list[Unit]:
    """Units of shard ``shard_index`` (0-based) of ``num_shards`` (:func:`xlt.run.layout.shard`, in plan order)."""
    return shard(units, shard_index, num_shards)


def is_part_done(run: RunDir, unit: Unit) -> bool:
    return read_part(run, unit.language, unit.name) is not None


def translate_unit(
    cfg: Any, run: RunDir, unit: Unit, source: DatasetDict, translator: Translator, cache: TranslationCache
) -> QualityStats:
    """Translate one unit and write its part atomically; return its quality counts."""
    tcfg = cfg.translate
    rows = source[unit.split].select(range(unit.start, unit.end))
    truncated_before = translator.stats.get("truncated_inputs", 0)
    result = translate_dataset(
        rows,
        translator,
        cache,
        tcfg.source_language,
        unit.language,
        rules=QualityRules.from_cfg(tcfg.quality),
        set_language=unit.language,
        features=TRANSLATED_FEATURES,
        commit_every=tcfg.commit_every,
        desc=f"{unit.language} {unit.name}",
    )
    result.stats.add("truncated_inputs", n=translator.stats.get("truncated_inputs", 0) - truncated_before)
    with atomic_dir(part_dir(run, unit)) as tmp:
        save_dataset(result.dataset, tmp)
        seal(tmp, PART_STATS_FILE, result.stats.to_json())
    return result.stats


def is_unit_done(run: RunDir, unit: Unit, merged: dict[str, list[str] | None]) -> bool:
    """A unit is done if its part exists, or its language was merged from the same units."""
    names = merged.get(unit.language)
    return (names is not None and unit.name in names) or is_part_done(run, unit)


def merge_language(run: RunDir, language: str, units: list[Unit]) -> tuple[DatasetDict, dict[str, QualityStats]]:
    """Concatenate ``language``'s parts (memory-mapped) into ``run/data/translated/<language>``.

    The merged folder records the units and quality counts it was built from (``xlt_translation.json``);
    the parts are deleted afterwards, so translations are not kept twice on disk. A language already
    merged from the same units is read back instead.
    """
    mine = [u for u in units if u.language == language]
    names = sorted(u.name for u in mine)
    info = merged_info(run, language)
    if info is not None and info["units"] == names:
        stats = {s: QualityStats.from_json(v) for s, v in info["stats"].items()}
        return read_merged(run, language), stats
    stats: dict[str, QualityStats] = {}
    splits = {}
    for split in SPLITS:
        parts_of_split = sorted((u for u in mine if u.split == split), key=lambda u: u.start)
        read = [read_part(run, language, u.name) for u in parts_of_split]
        missing = [u.name for u, r in zip(parts_of_split, read, strict=True) if r is None]
        if missing:
            raise XltError(f"translate: parts {missing} of {language} were damaged (removed); rerun the translate "
                           "stage: it translates them again from the segment cache")
        parts = [r[1] for r in read if r is not None]
        st = QualityStats()
        for r in read:
            if r is not None:
                st.merge(QualityStats.from_json(r[0]))
        stats[split] = st
        splits[split] = concatenate_datasets(parts) if parts else _empty()
    dd = DatasetDict(splits)
    with atomic_dir(run.translated_language(language)) as tmp:
        save_dataset(dd, tmp)
        seal(tmp, MERGED_FILE, {"units": names, "stats": {s: st.to_json() for s, st in stats.items()}})
    shutil.rmtree(run.translation_parts / language, ignore_errors=True)
    return read_merged(run, language), stats


def _empty():
    from datasets import Dataset

    return Dataset.from_dict({k: [] for k in TRANSLATED_FEATURES}, features=TRANSLATED_FEATURES)


def discard_stale(cfg: Any, run: RunDir, ctx: StageContext) -> None:
    """Drop parts and merged translations made from other inputs (another training set, other settings)
    or, with ``force`` in an unsharded run, all of them. The segment cache is kept: its keys hold
    everything a translation depends on. Shard jobs share the inputs file, so they keep each other's parts
    (``force`` is ignored in a sharded job: run the stage once unsharded with force=true to redo it).
    """
    folder = run.translated
    sharded = int(cfg.translate.num_shards) > 1
    if ctx.force and sharded:
        log.warning("translate: force=true is ignored in a sharded job (it would discard other shards' parts)")
    run.translated_lock.parent.mkdir(parents=True, exist_ok=True)
    # Read, judged and recorded under the lock: shards of an array start together, and one that found nothing
    # recorded must not discard the folder another shard has just recorded its inputs in (on a real SLURM
    # array the second shard's write then failed: tests/cluster/test_real_slurm.py, the paper sweep).
    with FileLock(str(run.translated_lock)):
        stored = recorded_inputs(folder)
        redo = stored != ctx.inputs or (ctx.force and not sharded)
        if folder.exists() and redo:
            why = "force=true" if stored == ctx.inputs else "they were made from other inputs"
            log.info("translate: discarding earlier translations in %s (%s)", folder, why)
            shutil.rmtree(folder, ignore_errors=True)
        if redo or stored is None:
            record_inputs(folder, ctx)


def run_stage(cfg: Any, run: RunDir, ctx: StageContext) -> dict[str, Any] | None:
    """Translate this shard's units; when all units are done, merge and report (see module docstring)."""
    tcfg = cfg.translate
    if tcfg.import_dir:
        return import_translations(cfg.translate, run, ctx.record())
    discard_stale(cfg, run, ctx)
    languages = [str(c) for c in tcfg.languages]
    source = load_train_set(run)
    units = plan_units({s: source[s].num_rows for s in SPLITS}, languages, tcfg.rows_per_unit)
    merged = {lang: merged_units(run, lang) for lang in languages}
    todo = [u for u in shard_units(units, tcfg.shard_index, tcfg.num_shards) if not is_unit_done(run, u, merged)]
    translator: Translator | None = None
    if todo:
        resolved = resolution.resolve(cfg.translate, run)  # as recorded by the guard (pin): the same on every node
        resolution.check_machine(tcfg, resolved, run)
        translator = build_translator(resolution.pinned_config(tcfg, resolved))
        if hasattr(translator, "check_languages"):
            translator.check_languages([tcfg.source_language, *languages])
        log.info("translate: %d of %d units to do in shard %d/%d", len(todo), len(units), tcfg.shard_index, tcfg.num_shards)
        with TranslationCache(run.translation_cache(tcfg.cache_dir)) as cache:
            for unit in todo:
                translate_unit(cfg, run, unit, source, translator, cache)
    merged = {lang: merged_units(run, lang) for lang in languages}
    left = [u for u in units if not is_unit_done(run, u, merged)]
    if left:
        log.info("translate: shard %d done; %d units of other shards still missing", tcfg.shard_index, len(left))
        return None
    per_language = {}
    rows = {}
    # Shards finishing together must not merge (and delete parts) at the same time.
    with FileLock(str(run.merge_lock)):
        for lang in languages:
            dd, stats = merge_language(run, lang, units)
            per_language[lang] = stats
            rows[lang] = {s: dd[s].num_rows for s in dd}
    identity = translator.identity if translator is not None else stored_identity(tcfg)
    meta = {"translator": identity, "source_language": tcfg.source_language, "imported": False,
            "provenance": ctx.record()}
    write_report(run, meta, per_language)
    return {"languages": languages, "rows": rows, "report": str(run.translation_report)}


def files(cfg: Any, run: RunDir) -> dict[str, Any]:
    """The stage's file inputs: imported translations, a local translator, and what the translator resolves to."""
    t = cfg.translate
    out: dict[str, Any] = {"translate.import_dir": local_fingerprint(t.import_dir),
                           "translate.model": local_fingerprint(t.model_name_or_path)}
    if not t.import_dir and t.languages:  # what the translator resolves to (engine, dtype, cached commit)
        out["translator"] = translator_inputs(cfg, run)
    return out


def check(cfg: Any, run: RunDir, ctx: Any) -> list[str]:
    return json_problems(run, {run.translation_report: None})


def guard(cfg: Any, run: RunDir) -> None:
    """Before the stage's inputs are hashed: resolve the run's translator once (``data/translator.json``,
    :func:`xlt.translation.resolution.pin`), so every shard, requeue and reader hashes the same."""
    t = cfg.translate
    if not t.import_dir and t.languages:
        resolution.pin(cfg.translate, run)


STAGE = StageSpec("translate", run_stage, upstream=lambda cfg: ("build_data",), files=files,
                  outputs=(TRANSLATION_REPORT_FILE,), shard_section="translate", check=check, guard=guard)
