"""A run's report files, as the report stage writes them: ``report.{md,csv,json,tex,html}``, ``report_items.csv``
and ``plots/*.png`` (the stage merges the evaluation results and calls :func:`write_report`; ``xlt report --harness``
writes an lm-evaluation-harness folder's report with it too).

* ``report.csv``  — one row per (benchmark, language), all columns;
* ``report.json`` — summaries and per-language rows (with the scored tokenizer's measures), and each
  benchmark's cross-language item report (:mod:`xlt.reporting.items`; per item in ``report_items.csv``);
* ``report.md`` / ``report.tex`` — the summary tables and the per-language table;
* ``report.html`` — one self-contained page: sortable, filterable tables and interactive charts
  (:mod:`xlt.reporting.html`);
* ``plots/*.png`` — accuracy per language (sorted), bars per grouping, the declared contrast per language.

The model card's evaluation section (:func:`card_summary`, :func:`card_model_name`) is written from here too.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pandas as pd

from xlt.config.eval import uses_translator
from xlt.config.model import PACKAGED_MODEL_IDS
from xlt.markdown import markdown_table
from xlt.modeling import packaged_llm
from xlt.modeling.packaged import source_text
from xlt.reporting.html import write_run_page
from xlt.reporting.items import item_report, items_by_id, read_system, suspects_markdown
from xlt.reporting.render import frame_markdown, latex_table
from xlt.reporting.tables import BenchmarkResults, display_frame, protocol_line, summary_frames
from xlt.run.files import atomic_write_json, atomic_write_text
from xlt.run.layout import RunDir
from xlt.run.results import NoPerQuestionData
from xlt.scoring import declaration
from xlt.scoring.before import COLUMN as BEFORE


def render_markdown(eval_cfg: Any, model: Any, results: dict[str, BenchmarkResults],
                    items: dict[str, dict[str, Any]] | None = None, *, recipe_name: str, seed: int) -> str:
    out = [f"# Evaluation report: {recipe_name}\n", f"Model: `{eval_cfg.model}` (scorer `{eval_cfg.scorer}`); "
           f"accuracies in %, 95% bootstrap intervals ({eval_cfg.bootstrap_samples} resamples).\n"]
    if model.name_or_path in PACKAGED_MODEL_IDS and declaration.names_run_model(eval_cfg.model):
        out.append(f"\nBase model `{model.name}`: {source_text()}.\n")
    source = llm_source(eval_cfg)
    if source:
        out.append(f"\n{source}\n")
    if any(BEFORE in r.per_language for r in results.values()):
        out.append(f"\n`{BEFORE}`: the accuracy of the same model before fine-tuning (the base checkpoint with the "
                   f"same head, initialised from seed {seed}; `eval.before_training`, results in `eval_before/`). "
                   "Transfer is the gain over it, and over `chance`.\n")
    for name, res in results.items():
        out.append(f"\n## {res.heading}\n")
        if res.summary.get("resource_taxonomy"):
            out.append(f"Resource levels: {res.summary['resource_taxonomy']}.\n")
        for title, frame in summary_frames(res).items():
            out.append(f"\n### {title}\n\n{frame_markdown(frame)}")
        out.append(f"\n### per language\n\n{frame_markdown(display_frame(res))}")
        out.append(tokenizer_line(res.per_language))
        out.append(data_checks_line(res.per_language))
        out.append(protocol_line(res.per_language))
        out.append(comparability_line(res.per_language))
        if items and name in items:
            out.append(suspects_markdown(items[name], res.heading))
    return "".join(out)


def llm_source(eval_cfg: Any) -> str:
    """For a causal LLM converted from an installed package: where its weights come from and their licence
    notice (:func:`xlt.modeling.packaged_llm.source_text`); empty otherwise."""
    if not declaration.of(eval_cfg).scores_llm or not packaged_llm.is_packaged_llm(eval_cfg.llm.model):
        return ""
    return f"LLM `{eval_cfg.llm.model}`: {packaged_llm.source_text()}"


def comparability_line(df: pd.DataFrame) -> str:
    """For LLM results: the languages whose numbers are not comparable with lm-evaluation-harness's, and why."""
    if "comparable_to_harness" not in df:
        return ""
    bad = df[df["comparable_to_harness"] == False]  # noqa: E712 (a pandas mask)
    if not len(bad):
        return "\nComparable with lm-evaluation-harness: every language (same prompts, few-shot examples and limit).\n"
    return (f"\n**Not comparable with lm-evaluation-harness numbers** ({len(bad)} language(s): "
            f"{', '.join(bad['language'])}): {bad['not_comparable_because'].iloc[0]}.\n")


def tokenizer_line(df: pd.DataFrame) -> str:
    """What the tokenizer columns are, and per language why a measure is not defined (report.csv has them all)."""
    if "premium" not in df:
        return ""
    notes = sorted({n for n in df.get("tokenizer_notes", pd.Series(dtype=str)).fillna("") if n})
    why = f" Not defined: {'; '.join(notes)}." if notes else ""
    est = df[df.get("tokenizer_estimated", pd.Series("", index=df.index)).fillna("") != ""]
    if len(est):  # a long text counted in parts where that is not provably exact (tokenizer_measures)
        why += (f" **Estimated** ({', '.join(est['language'])}): "
                f"{'; '.join(dict.fromkeys(est['tokenizer_estimated']))}.")
    return ("\nTokenizer of the scored model, on the items (no special tokens): `fertility` subword tokens per word, "
            "`continued_words` share of words in two or more pieces, `premium` tokens on the parallel items / the "
            f"English items' tokens, `unk_rate` share of unknown pieces.{why}\n")


def data_checks_line(df: pd.DataFrame) -> str:
    """One line on the benchmark files' odd items and the argmax ties (per language in report.csv)."""
    if "odd_items" not in df:
        return ""
    odd = df[df["odd_items"] > 0]
    where = f" ({', '.join(f'{r.language} {r.odd_items}' for r in odd.itertuples())})" if len(odd) else ""
    cut = (f"; {int(df['truncated'].sum())} item(s) truncated to fit the model's max_length (column `truncated`)"
           if "truncated" in df else "")
    return (f"\nData checks: {int(df['odd_items'].sum())} odd item(s) in the benchmark files{where}; "
            f"{int(df['ties'].sum())} prediction(s) were argmax ties (see each result's `data_checks` and `ties`)"
            f"{cut}.\n")


def render_latex(results: dict[str, BenchmarkResults]) -> str:
    parts = ["% Generated by xlt (python -m xlt.report). Requires \\usepackage{booktabs}.\n"]
    for name, res in results.items():
        for title, frame in summary_frames(res).items():
            slug = title.replace(" ", "-")
            parts.append(latex_table(frame, f"{name}: {title}", f"tab:{name}-{slug}"))
        parts.append(latex_table(display_frame(res), f"{name}: accuracy per language (\\%)", f"tab:{name}-per-language"))
    return "\n".join(parts)


def run_items(eval_cfg: Any, run: RunDir, results: dict[str, BenchmarkResults]) -> dict[str, dict[str, Any]]:
    """The cross-language item report of each benchmark of the run (:mod:`xlt.reporting.items`): one system,
    this run; the texts of an entry read in-language (not one translated by xlt) from its config entry."""
    view = SimpleNamespace(path=run.path, results=results)
    out = {}
    for name, res in results.items():
        bcfg = eval_cfg.benchmarks.get(name)  # None: results without their config entry (no texts then)

        def load(lang: str, bcfg: Any = bcfg, res: BenchmarkResults = res) -> dict[str, dict[str, Any]]:
            return items_by_id(res.definition.load_checked(bcfg, lang, split=bcfg.split)[0])

        try:
            scores, picks = read_system([view], name)
        except NoPerQuestionData:  # results only (an lm-evaluation-harness folder without sample logs)
            scores, picks = {}, {}
        out[name] = item_report({"this run": scores}, res.definition.pivot_language,
                                None if bcfg is None or uses_translator(bcfg) else load, picks={"this run": picks})
    return out


def write_report(eval_cfg: Any, model: Any, run: RunDir, results: dict[str, BenchmarkResults],
                 provenance: dict[str, Any] | None = None, *, recipe_name: str, seed: int) -> list:
    """Write every report file atomically; return their paths."""
    files = []
    long = pd.concat([r.per_language for r in results.values()], ignore_index=True)
    atomic_write_text(run.report("csv"), long.to_csv(index=False))
    items = run_items(eval_cfg, run, results)
    atomic_write_text(run.items_report, pd.concat([pd.DataFrame(r["items"]).assign(benchmark=name)
                                                   for name, r in items.items()], ignore_index=True).to_csv(index=False))
    payload = {
        "recipe": recipe_name,
        "model": eval_cfg.model,
        "scorer": eval_cfg.scorer,
        "provenance": provenance,
        **({"model_source": packaged_llm.provenance()} if llm_source(eval_cfg) else {}),
        "benchmarks": {
            name: {"kind": r.kind, "summary": r.summary,
                   "per_language": r.per_language.to_dict(orient="records"),
                   "item_report": {k: v for k, v in items[name].items() if k != "items"}}
            for name, r in results.items()
        },
    }
    atomic_write_json(run.report("json"), payload)
    atomic_write_text(run.report("md"), render_markdown(eval_cfg, model, results, items, recipe_name=recipe_name, seed=seed))
    atomic_write_text(run.report("tex"), render_latex(results))
    files += [run.report(ext) for ext in ("md", "csv", "json", "tex")] + [run.items_report]
    notes = [f"{name}: {line}" for name, r in results.items()
             for line in (tokenizer_line(r.per_language), data_checks_line(r.per_language), protocol_line(r.per_language),
                          comparability_line(r.per_language)) if line.strip()]
    notes += [llm_source(eval_cfg)] if llm_source(eval_cfg) else []
    files.append(write_run_page(run.report("html"), eval_cfg, model, results, provenance, [n.replace("**", "") for n in notes],
                                recipe_name=recipe_name, seed=seed, items=items))
    from xlt.reporting import plots  # lazy: start-up time (matplotlib)

    files += plots.all_plots(results, run.plots)
    return files


def card_summary(results: dict[str, BenchmarkResults]) -> str:
    """The model card's evaluation section: mean accuracy per benchmark, and where the details are."""
    table = markdown_table(["benchmark", "languages", "mean accuracy (%)"],
                     [[name, len(r.per_language), f"{r.summary['mean']:.1f}"] for name, r in results.items()])
    return table + "\nPer-language results, intervals and subsets: `report.md` in the run directory."


def card_model_name(recipe_name: str, run: RunDir) -> str:
    """The name of the card's ``model-index``: the recipe, and the run's overrides unless it is the default."""
    return recipe_name if run.path.name == "default" else f"{recipe_name} ({run.path.name})"
