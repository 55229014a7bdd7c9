"""Translate one dataset of multiple-choice rows into one language.

Steps: collect the *unique* segments of all rows (passage sentences, questions, options: a passage
shared by several questions or a repeated option is translated once); look them up in the cache;
translate the missing ones in length-sorted batches, committing each batch to the cache; apply the
segment rules of :mod:`xlt.translation.quality` once per unique segment; re-assemble the rows and
apply the row rules. The input is bounded (one work unit of the stage, or one benchmark language), so
its unique segments are held in memory; outputs are written by the caller.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from datasets import Dataset, Features, Value

from xlt.config.translate import TranslationQualityConfig
from xlt.progress import progress_bar
from xlt.translation.cache import TranslationCache
from xlt.translation.engines.base import Translator
from xlt.translation.quality import QualityStats, check_segment
from xlt.translation.segment import Segmented, join_sentences, segment_passage

log = logging.getLogger(__name__)

_ITER_BATCH = 1000


@dataclass
class QualityRules:
    drop_runaway: bool = True
    runaway_min_repeats: int = 4
    runaway_max_length_ratio: float = 4.0

    @classmethod
    def from_cfg(cls, qcfg: TranslationQualityConfig) -> QualityRules:
        return cls(bool(qcfg.drop_runaway), int(qcfg.runaway_min_repeats), float(qcfg.runaway_max_length_ratio))


@dataclass
class TranslationResult:
    dataset: Dataset
    stats: QualityStats = field(default_factory=QualityStats)


def _row_id(batch: dict[str, list], i: int) -> str:
    if "id" in batch:
        return str(batch["id"][i])
    parts = [str(batch[k][i]) for k in ("dataset", "question_id") if k in batch]
    return "/".join(parts) or str(i)


def translate_segments(
    texts: list[str],
    translator: Translator,
    cache: TranslationCache | None,
    src_lang: str,
    tgt_lang: str,
    stats: QualityStats,
    commit_every: int = 1,
    desc: str = "",
) -> dict[str, str]:
    """Translations of the unique ``texts`` (source -> raw output), from the cache where possible."""
    found = cache.get_many(translator.identity, src_lang, tgt_lang, texts) if cache is not None else {}
    missing = [t for t in texts if t not in found]
    stats.add("segments_unique", n=len(texts))
    stats.add("segments_cached", n=len(found))
    stats.add("segments_translated", n=len(missing))
    pending: list[tuple[str, str]] = []
    batches = 0
    with progress_bar(total=len(missing), desc=desc or f"translate -> {tgt_lang}", unit="seg", disable=not missing) as bar:
        for idx, outs in translator.translate_batches(missing, src_lang, tgt_lang):
            pairs = [(missing[i], o) for i, o in zip(idx, outs, strict=True)]
            found.update(pairs)
            pending.extend(pairs)
            batches += 1
            if cache is not None and batches % max(commit_every, 1) == 0:
                cache.put_many(translator.identity, src_lang, tgt_lang, pending)
                pending = []
            bar.update(len(idx))
    if cache is not None and pending:
        cache.put_many(translator.identity, src_lang, tgt_lang, pending)
    return found


def translate_dataset(
    ds: Dataset,
    translator: Translator,
    cache: TranslationCache | None,
    src_lang: str,
    tgt_lang: str,
    rules: QualityRules | None = None,
    set_language: str | None = None,
    features: Features | None = None,
    commit_every: int = 1,
    desc: str = "",
    keep_all_rows: bool = False,
) -> TranslationResult:
    """Translate ``passage``, ``question`` and ``options`` of every row of ``ds`` from ``src_lang`` to ``tgt_lang``.

    Other columns are copied. ``set_language`` adds/overwrites a ``language`` column. Rows dropped by a
    rule are counted in the returned stats (see :mod:`xlt.translation.quality`). With
    ``keep_all_rows`` (translate-test: the test set must not shrink) no row is dropped; rows that a rule
    would drop are counted as ``flagged_runaway`` / ``flagged_duplicate_options`` instead.
    """
    rules = rules or QualityRules()
    stats = QualityStats()
    # 1. Unique segments, in first-seen order (deterministic).
    passages: dict[str, Segmented] = {}
    unique: dict[str, None] = {}
    n_occurrences = 0
    for batch in ds.iter(batch_size=_ITER_BATCH):
        for passage, question, options in zip(batch["passage"], batch["question"], batch["options"], strict=True):
            if passage not in passages:
                passages[passage] = segment_passage(passage)
            segs = [*passages[passage].sentences, question, *options]
            n_occurrences += len(segs)
            unique.update((s, None) for s in segs if s.strip())
    stats.add("segments_total", n=n_occurrences)
    raw = translate_segments(list(unique), translator, cache, src_lang, tgt_lang, stats, commit_every, desc)
    # 2. Segment rules, once per unique segment.
    final: dict[str, tuple[str, bool]] = {}
    for src in unique:
        final[src] = check_segment(
            src, raw[src], stats, src[:80], rules.runaway_min_repeats, rules.runaway_max_length_ratio
        )

    def tr(text: str) -> tuple[str, bool]:
        return final[text] if text.strip() else (text, False)

    # 3. Re-assemble rows and apply the row rules.
    columns = list(ds.column_names)
    if set_language is not None and "language" not in columns:
        columns.append("language")
    out: dict[str, list] = {c: [] for c in columns}
    for batch in ds.iter(batch_size=_ITER_BATCH):
        for i in range(len(batch["question"])):
            rid = _row_id(batch, i)
            seg = passages[batch["passage"][i]]
            sents = [tr(s) for s in seg.sentences]
            passage = join_sentences([t for t, _ in sents], seg.separators, tgt_lang) if sents else batch["passage"][i]
            question, q_bad = tr(batch["question"][i])
            opts = [tr(o) for o in batch["options"][i]]
            options = [t for t, _ in opts]
            runaway = q_bad or any(b for _, b in sents) or any(b for _, b in opts)
            if runaway and (rules.drop_runaway or keep_all_rows):
                if keep_all_rows:
                    stats.add("flagged_runaway", rid)
                else:
                    stats.add("dropped_runaway", rid)
                    continue
            if len({o.strip() for o in options}) < len(options):
                if keep_all_rows:
                    stats.add("flagged_duplicate_options", rid)
                else:
                    stats.add("dropped_duplicate_options", rid)
                    continue
            for c in columns:
                if c == "passage":
                    out[c].append(passage)
                elif c == "question":
                    out[c].append(question)
                elif c == "options":
                    out[c].append(options)
                elif c == "language" and set_language is not None:
                    out[c].append(set_language)
                else:
                    out[c].append(batch[c][i])
    stats.add("rows_in", n=ds.num_rows)
    stats.add("rows_out", n=len(out["question"]))
    if features is None:
        features = Features(dict(ds.features))
        if set_language is not None:
            features["language"] = Value("string")
    return TranslationResult(Dataset.from_dict(out, features=features), stats)
