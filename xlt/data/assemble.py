"""Build the English multiple-choice training set (Bandarkar et al., 2024, appendix A.2) and its report.

sources (Hub or local copies) -> per-source conversion (xlt.data.sources) -> optional decontamination
-> ``DatasetDict`` {train, dev} with ``TRAIN_FEATURES`` and the build report (a dict, its Markdown and
console tables). Records in, ``DatasetDict`` out: the ``build_data`` stage (:mod:`xlt.stages.build_data`)
saves them in the run directory.
"""

from __future__ import annotations

import hashlib
import json
import logging
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from datasets import Dataset, DatasetDict
from omegaconf import DictConfig, OmegaConf

from xlt.config.data import DataConfig, SourceConfig
from xlt.config.eval import EvalConfig
from xlt.data.benchmarks import get_benchmark
from xlt.data.decontaminate import find_overlaps
from xlt.data.schema import TRAIN_FEATURES, TRAIN_LETTERS
from xlt.data.sentences import splitter_name
from xlt.data.sources import SOURCES, BuildContext, SourceStats
from xlt.errors import ConfigError
from xlt.markdown import markdown_table

log = logging.getLogger(__name__)

SPLITS = ("train", "dev")
# Sizes reported by Bandarkar et al. (2024, appendix A.2), for comparison in the build report.
PAPER_SIZES = {"train": 67_500, "dev": 3_700}


@dataclass
class BuildResult:
    """Records per split (in source order), the per-source counts and decontamination findings."""

    records: dict[str, list[dict[str, Any]]]
    stats: list[SourceStats]
    decontamination: dict[str, Any] = field(default_factory=dict)


def configured_sources(data_cfg: DataConfig | DictConfig) -> list[tuple[str, SourceConfig]]:
    """Enabled sources as (name, SourceConfig), in registry order; unknown names are a ConfigError."""
    sources = data_cfg.sources or {}
    unknown = [n for n in sources if n not in SOURCES]
    if unknown:
        raise ConfigError(f"unknown data source(s) {unknown} in data.sources; known sources: {list(SOURCES)}")
    out = []
    for name in SOURCES:
        if name in sources:
            src = sources[name]
            if isinstance(src, DictConfig):
                src = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(SourceConfig), src))
            if src.enabled:
                out.append((name, src))
    if not out:
        raise ConfigError("data.sources lists no enabled source; pick a data config, e.g. data=six_sources")
    return out


def build_records(data_cfg: DataConfig | DictConfig) -> BuildResult:
    """Read and convert every enabled source."""
    ctx = BuildContext(seed=int(data_cfg.seed), max_passage_sentences=int(data_cfg.max_passage_sentences))
    records: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    stats = []
    for name, src_cfg in configured_sources(data_cfg):
        source = SOURCES[name](src_cfg)
        log.info("building %s (%s)", source.dataset, src_cfg.path or src_cfg.hub_id or src_cfg.url)
        out, st = source.load(ctx)
        for split, recs in out.items():
            records[split].extend(recs)
        stats.append(st)
    return BuildResult(records, stats)


def decontaminate(result: BuildResult, eval_texts: Iterable[str], ngram: int, remove: bool) -> None:
    """Flag (and optionally remove) rows overlapping ``eval_texts``; record the findings in ``result``."""
    eval_texts = list(eval_texts)
    found: dict[str, Any] = {"ngram": ngram, "eval_texts": len(eval_texts), "removed": remove, "splits": {}}
    for split, rows in result.records.items():
        hits = find_overlaps(rows, eval_texts, ngram)
        by_dataset = Counter(rows[i]["dataset"] for i in hits)
        found["splits"][split] = {
            "flagged": len(hits),
            "by_dataset": dict(sorted(by_dataset.items())),
            "examples": [f"{rows[i]['dataset']}/{rows[i]['question_id']}" for i in hits[:20]],
        }
        if remove and hits:
            drop = set(hits)
            result.records[split] = [r for i, r in enumerate(rows) if i not in drop]
            for st in result.stats:
                n = sum(1 for i in hits if rows[i]["dataset"] == st.dataset)
                if n:
                    st.drop(split, "eval_overlap", n)
                    st.kept[split] -= n
    result.decontamination = found


def to_dataset_dict(records: dict[str, list[dict[str, Any]]]) -> DatasetDict:
    """The records as a DatasetDict with ``TRAIN_FEATURES`` (column order as in the schema)."""
    cols = list(TRAIN_FEATURES)
    return DatasetDict(
        {
            split: Dataset.from_dict({c: [r[c] for r in records.get(split, [])] for c in cols}, features=TRAIN_FEATURES)
            for split in SPLITS
        }
    )


# ---- report -------------------------------------------------------------------------------------------


def _length_stats(values: Sequence[int]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "median": 0.0, "max": 0}
    return {"mean": round(statistics.fmean(values), 1), "median": float(statistics.median(values)), "max": max(values)}


def _lengths(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Word counts over every row; a passage counts once per (dataset, split, passage_id, text)."""
    passages = {(r["dataset"], r["split"], r["passage_id"], r["passage"]) for r in rows}
    return {
        "passage_words": _length_stats([len(p[3].split()) for p in passages]),
        "passage_chars": _length_stats([len(p[3]) for p in passages]),
        "question_words": _length_stats([len(r["question"].split()) for r in rows]),
        "option_words": _length_stats([len(o.split()) for r in rows for o in r["options"]]),
    }


def content_hash(rows: Iterable[dict[str, Any]]) -> str:
    """A SHA-256 of the rows' content (order-sensitive): equal for byte-identical builds."""
    h = hashlib.sha256()
    for r in rows:
        h.update(json.dumps([r[c] for c in TRAIN_FEATURES], ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def make_report(result: BuildResult, data_cfg: DataConfig | DictConfig) -> dict[str, Any]:
    """The build report: counts per source/split/reason, labels, lengths, totals vs the paper."""
    recs = result.records
    datasets = [st.dataset for st in result.stats]
    labels: dict[str, Any] = {}
    for split in SPLITS:
        c = Counter(TRAIN_LETTERS[r["label"]] for r in recs[split])
        labels[split] = {k: c.get(k, 0) for k in TRAIN_LETTERS}
    lengths = {ds: _lengths([r for s in SPLITS for r in recs[s] if r["dataset"] == ds]) for ds in datasets}
    lengths["all"] = _lengths([r for s in SPLITS for r in recs[s]])
    totals = {split: {"built": len(recs[split]), "paper": PAPER_SIZES[split]} for split in SPLITS}
    return {
        "seed": int(data_cfg.seed),
        "max_passage_sentences": int(data_cfg.max_passage_sentences),
        "sentence_splitter": splitter_name(),
        "sources": {st.name: st.to_dict() for st in result.stats},
        "totals": totals,
        "labels": labels,
        "lengths": lengths,
        "licenses": {ds: sorted({r["license"] for s in SPLITS for r in recs[s] if r["dataset"] == ds}) for ds in datasets},
        "decontamination": result.decontamination or {"enabled": False},
        "content_sha256": {split: content_hash(recs[split]) for split in SPLITS},
    }


def report_tables(report: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """The report as (title, header, rows) tables, shared by the Markdown and the console output."""
    counts = []
    for src in report["sources"].values():
        for split, s in src["splits"].items():
            dropped = ", ".join(f"{k} {v}" for k, v in s["dropped"].items()) or "-"
            repaired = ", ".join(f"{k} {v}" for k, v in s.get("repaired", {}).items()) or "-"
            counts.append([src["dataset"], split, str(s["read"]), str(s["candidates"]), str(s["kept"]), dropped,
                           repaired])
    for split, t in report["totals"].items():
        counts.append(["**total**", split, "", "", str(t["built"]), f"paper: ~{t['paper']:,}", ""])
    labels = [[split, *(str(v) for v in dist.values())] for split, dist in report["labels"].items()]
    lengths = []
    for ds, ls in report["lengths"].items():
        lengths.append([ds, *(f"{v['mean']} / {v['median']:g} / {v['max']}" for v in ls.values())])
    tables = [
        ("Rows per source and split", ["dataset", "split", "rows read", "questions", "kept", "dropped (reason n)",
                                       "repaired (rule n)"], counts),
        ("Label distribution (correct option)", ["split", *TRAIN_LETTERS], labels),
        ("Lengths in words, passage also in characters (mean / median / max)",
         ["dataset", "passage", "passage chars", "question", "option"], lengths),
    ]
    dec = report["decontamination"]
    if dec.get("splits"):
        rows = [[split, str(v["flagged"]), ", ".join(f"{k} {n}" for k, n in v["by_dataset"].items()) or "-"]
                for split, v in dec["splits"].items()]
        title = f"Overlap with evaluation texts ({dec['ngram']}-grams; {'removed' if dec['removed'] else 'kept'})"
        tables.append((title, ["split", "rows flagged", "by dataset"], rows))
    return tables


def report_markdown(report: dict[str, Any]) -> str:
    lines = ["# Training set build report", "",
             f"Seed {report['seed']}; passages of more than {report['max_passage_sentences']} sentences dropped "
             f"(all sources but ReClor); sentence splitter: {report.get('sentence_splitter', '?')}. "
             "Odd rows are repaired or dropped and counted (see the README's anomaly policy).", ""]
    for title, header, rows in report_tables(report):
        lines += [f"## {title}", "", markdown_table(header, rows)]
    lines += ["## Licences", ""]
    lines += [f"- {ds}: {'; '.join(lic)}" for ds, lic in report["licenses"].items()]
    return "\n".join(lines) + "\n"


def print_report(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=True)
    for title, header, rows in report_tables(report):
        table = Table(title=title)
        for h in header:
            table.add_column(h)
        for row in rows:
            table.add_row(*(c.replace("**", "") for c in row))
        console.print(table)


def decontamination_texts(eval_cfg: EvalConfig | DictConfig) -> list[str]:
    """Passages and questions of the local benchmark copies configured under ``eval.benchmarks`` (of the
    ``eval`` section; each benchmark definition says what its texts are: ``Benchmark.contamination_texts``)."""
    texts: list[str] = []
    for name, bench in (eval_cfg.benchmarks or {}).items():
        if not bench.enabled:
            continue
        if not bench.path:
            log.info("decontamination: eval.benchmarks.%s.path is not set; %s skipped", name, name)
        else:
            texts += get_benchmark(bench.kind).contamination_texts(bench)
    return texts


def build(data_cfg: DataConfig | DictConfig, eval_texts: Iterable[str] | None = None) -> tuple[DatasetDict, dict[str, Any], BuildResult]:
    """Build the set in memory: (DatasetDict, report, raw result). ``eval_texts`` enables decontamination."""
    result = build_records(data_cfg)
    dec = data_cfg.decontamination
    if dec.enabled and eval_texts is not None:
        decontaminate(result, eval_texts, int(dec.ngram), bool(dec.remove))
    return to_dataset_dict(result.records), make_report(result, data_cfg), result
