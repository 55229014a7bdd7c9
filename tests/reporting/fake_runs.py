"""Finished run directories with known per-language accuracies, written in the layout the report and
the comparison read (``config.yaml``, ``eval/<benchmark>/plan.json``, ``<lang>.json``,
``predictions/<lang>.jsonl``), without training or scoring anything."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from xlt import config as xcfg
from xlt import languages as langtab
from xlt.data.benchmarks import get_benchmark
from xlt.metrics import accuracy_with_ci

MODELS = {
    "XLM-R": {"name": "xlmr_base", "name_or_path": "FacebookAI/xlm-roberta-base"},
    "XLM-V": {"name": "xlmv_base", "name_or_path": "facebook/xlm-v-base"},
    "InfoXLM": {"name": "infoxlm_base", "name_or_path": "microsoft/infoxlm-base"},
}
TTA = {"languages": ["fra_Latn", "swh_Latn"]}  # translations configured: translate-train-all


def correct_vector(n: int, accuracy: float, offset: int = 0) -> np.ndarray:
    """``n`` answers of which round(accuracy% of n) are right, spread deterministically."""
    k = int(round(accuracy / 100 * n))
    out = np.zeros(n, dtype=bool)
    out[(np.arange(k) * n // max(k, 1) + offset) % n if k else []] = True
    return out


def write_language(run: Path, bench: str, kind: str, lang: str, correct: np.ndarray, meta: Any = None,
                   translate_test: bool = False, n_options: int | None = None,
                   tokenizer: dict[str, Any] | None = None) -> None:
    """One language's result and predictions; ``n_options`` also records the result's chance level (a
    result without it stands for one written before results recorded theirs); ``tokenizer``: the result's
    tokenizer measures (:mod:`xlt.scoring.tokenizer_measures`)."""
    d = run / "eval" / bench
    (d / "predictions").mkdir(parents=True, exist_ok=True)
    k = n_options or 4
    masks = get_benchmark(kind).item_subsets(meta) if meta is not None else {}
    own = {name: m for name, m in masks.items() if name != "full"}  # each question's subsets, as evaluate writes them
    lines = [json.dumps({"id": f"q{i}", "language": lang, "gold": 0, "prediction": 0 if c else 1, "job": "j",
                         "scores": [float(j == (0 if c else 1)) for j in range(k)],
                         **({"subsets": [s for s, m in own.items() if m[i]]} if own else {})})
             for i, c in enumerate(correct)]
    (d / "predictions" / f"{lang}.jsonl").write_text("\n".join(lines) + "\n")
    lt = langtab.lookup(lang)
    result = {"benchmark": bench, "kind": kind, "language": lang, "code": lt.code if lt else lang, "split": "test",
              "translate_test": translate_test, **accuracy_with_ci(correct, 50, 0), "ties": 0, "data_checks": {},
              "provenance": {"stage": "evaluate", "inputs": "cafe", "xlt_version": "0.1.0", "model": {"sha": "m"},
                             "data": "hub:fake", "job": "j"}}
    if n_options is not None:
        result["chance"] = 100 / n_options
    if tokenizer is not None:
        result["tokenizer"] = tokenizer
    if meta is not None:
        result["subsets"] = {k: accuracy_with_ci(correct[m], 50, 0) for k, m in get_benchmark(kind).item_subsets(meta).items()}
    (d / f"{lang}.json").write_text(json.dumps(result))


def gmmlu_meta(n: int):
    import pandas as pd

    half = n // 2
    return pd.DataFrame({"is_annotated": [True] * n, "cultural_sensitivity_label": ["CS"] * half + ["CA"] * (n - half),
                         "subject_category": ["STEM"] * n})


def write_run(path: Path, model: dict[str, str] | None = None, seed: int = 1, translate: dict | None = None,
              belebele: dict[str, float] | None = None, belebele_tt: dict[str, float] | None = None,
              gmmlu: dict[str, tuple[float, float]] | None = None, llm: str | None = None, n: int = 40,
              offset: int = 0, others: dict[str, dict[str, Any]] | None = None,
              resource_groups: Path | None = None, premium: dict[str, float] | None = None,
              tokenizer_id: str = "tok") -> Path:
    """A finished run: ``belebele`` {code: accuracy}, ``gmmlu`` {code: (CS accuracy, CA accuracy)}.

    ``llm`` makes it an LLM run (``eval.scorer=llm``); ``belebele_tt`` adds a translate-test benchmark;
    ``others`` {name: {"kind", "accuracies": {code: accuracy}, "n_options"[, "translate_test", "machine_translated"]}}
    benchmarks of other kinds or variants
    (e.g. one a test registers; their config entries are added to ``config.yaml`` as recorded, unvalidated);
    ``resource_groups``: a grouping file (``eval.resource_groups``) replacing the table's resource levels;
    ``premium`` {code: premium}: Belebele results with tokenizer measures (of the tokenizer ``tokenizer_id``).
    """
    benches: dict[str, Any] = {}
    if belebele is not None:
        benches["belebele"] = {"kind": "belebele", "hub_id": "facebook/belebele"}
    if belebele_tt is not None:
        benches["belebele_tt"] = {"kind": "belebele", "hub_id": "facebook/belebele", "translate_test": True}
    if gmmlu is not None:
        benches["global_mmlu"] = {"kind": "global_mmlu", "hub_id": "CohereLabs/Global-MMLU"}
    ev: dict[str, Any] = {"benchmarks": benches}
    if resource_groups is not None:
        ev["resource_groups"] = str(resource_groups)
    if llm:
        ev.update({"scorer": "llm", "model": llm, "llm": {"model": llm}})
    cfg = xcfg.validate({"seed": seed, "model": model or MODELS["XLM-R"], "translate": translate or {}, "eval": ev})
    path.mkdir(parents=True, exist_ok=True)
    recorded = OmegaConf.to_container(cfg)
    for name, spec in (others or {}).items():
        tt = bool(spec.get("translate_test"))
        recorded["eval"]["benchmarks"][name] = {"kind": spec["kind"], "translate_test": tt,
                                                **({"machine_translated": True} if spec.get("machine_translated") else {})}
        for lang, acc in spec["accuracies"].items():
            write_language(path, name, spec["kind"], lang, correct_vector(n, acc, offset), n_options=spec["n_options"],
                           translate_test=tt)
        (path / "eval" / name / "plan.json").write_text(json.dumps({"benchmark": name, "kind": spec["kind"],
                                                                   "languages": sorted(spec["accuracies"])}))
    (path / "config.yaml").write_text(OmegaConf.to_yaml(recorded))
    for bench, accs, tt in (("belebele", belebele, False), ("belebele_tt", belebele_tt, True)):
        if accs is None:
            continue
        for lang, acc in accs.items():
            tok = None
            if premium is not None and lang in premium and not tt:
                tok = {"tokenizer": tokenizer_id, "premium": premium[lang], "fertility": None, "continued_words": None,
                       "unk_rate": 0.0, "notes": ""}
            write_language(path, bench, "belebele", lang, correct_vector(n, acc, offset), translate_test=tt,
                           tokenizer=tok)
        (path / "eval" / bench / "plan.json").write_text(json.dumps({"benchmark": bench, "kind": "belebele",
                                                                      "languages": sorted(accs)}))
    if gmmlu is not None:
        meta = gmmlu_meta(n)
        for lang, (cs, ca) in gmmlu.items():
            correct = np.concatenate([correct_vector(n // 2, cs, offset), correct_vector(n - n // 2, ca, offset)])
            write_language(path, "global_mmlu", "global_mmlu", lang, correct, meta)
        (path / "eval" / "global_mmlu" / "plan.json").write_text(json.dumps({"benchmark": "global_mmlu", "kind": "global_mmlu",
                                                                          "languages": sorted(gmmlu)}))
    return path


def _acc(family_shift: float, tier: str, lang_index: int) -> float:
    base = {"high": 72.0, "mid": 62.0, "low": 45.0}.get(tier, 50.0)
    return float(np.clip(base + family_shift + ((lang_index * 37) % 17) - 8, 20, 98))


def paper_like_set(root: Path, n: int = 40) -> list[Path]:
    """Ten runs over all 122 Belebele variants (and Global-MMLU's 42 languages for the zero-shot encoders):
    XLM-R base zero-shot (3 seeds), XLM-V / InfoXLM zero-shot, the three in translate-train-all, XLM-R
    large zero-shot and one LLM evaluated in-language and translate-test."""
    codes = langtab.codes()
    gcodes = langtab.gmmlu_codes()
    tiers = {c: langtab.resource_level(c) for c in codes}

    def bel(shift: float, low_shift: float = 0.0) -> dict[str, float]:
        return {c: _acc(shift + (low_shift if tiers[c] in ("low", "n/a") else 0), tiers[c], i) for i, c in enumerate(codes)}

    def gm(cs: float, ca: float) -> dict[str, tuple[float, float]]:
        out = {}
        for i, c in enumerate(gcodes):
            lang = langtab.lookup(c)
            ht = 6.0 if lang and lang.translation == "human" else 0.0
            out[c] = (float(np.clip(cs + ht + (i * 7) % 9, 5, 95)), float(np.clip(ca + ht + (i * 5) % 11, 5, 95)))
        return out

    large = {"name": "xlmr_large", "name_or_path": "FacebookAI/xlm-roberta-large"}
    spec = [
        ("xlmr_zeroshot/default", MODELS["XLM-R"], 1, None, bel(0), gm(40, 52)),
        ("xlmr_zeroshot/seed=2", MODELS["XLM-R"], 2, None, bel(1), gm(41, 52)),
        ("xlmr_zeroshot/seed=3", MODELS["XLM-R"], 3, None, bel(-1), gm(40, 53)),
        ("xlmv_zeroshot/default", MODELS["XLM-V"], 1, None, bel(2, 8), gm(44, 50)),
        ("infoxlm_zeroshot/default", MODELS["InfoXLM"], 1, None, bel(7, -2), gm(47, 49)),
        ("xlmr_translate_train_all/default", MODELS["XLM-R"], 1, TTA, bel(5), None),
        ("xlmv_translate_train_all/default", MODELS["XLM-V"], 1, TTA, bel(7, 8), None),
        ("infoxlm_translate_train_all/default", MODELS["InfoXLM"], 1, TTA, bel(20, -2), None),
        ("xlmr_large_zeroshot/default", large, 1, None, bel(9), gm(52, 58)),
    ]
    paths = [write_run(root / name, model, seed, translate=tr, belebele=b, gmmlu=g, n=n, offset=seed)
             for name, model, seed, tr, b, g in spec]
    paths.append(write_run(root / "llm_5shot/eval.llm.model=q", None, 1, belebele=bel(-5), belebele_tt=bel(3),
                           llm="Qwen/Qwen2.5-7B", n=n))
    return paths


ITEM_LANGS = ["eng_Latn", "arb_Arab", "deu_Latn", "fra_Latn", "rus_Cyrl", "heb_Hebr", "swh_Latn"]


def write_item_runs(root: Path, n_items: int = 20, planted: tuple[int, str] = (7, "arb_Arab"),
                    hard: tuple[int, tuple[str, str]] = (3, ("deu_Latn", "fra_Latn")),
                    families: tuple[str, ...] = ("XLM-R", "XLM-V", "InfoXLM")) -> tuple[list[Path], Path]:
    """Runs of ``families`` on a local Belebele copy of :data:`ITEM_LANGS` x ``n_items`` parallel items (written
    under ``root/belebele``; texts with markup characters, Arabic and Hebrew right to left) where one language
    of one item has a swapped gold label (``planted``: item index, language): every system answers that
    item right (the true answer) and is scored wrong there. Besides it, each system misses scattered
    (item, language) pairs (never all three the same one), and every system misses the ``hard`` item in two
    languages (a weaker suspect: right in 4 of 6 other languages). Returns (run paths, the copy's folder)."""
    data = root / "belebele"
    (data / "data").mkdir(parents=True, exist_ok=True)
    ids = [f"https://x.example/p{i}#1" for i in range(n_items)]
    gold: dict[str, list[int]] = {}
    for lang in ITEM_LANGS:
        rows = []
        gold[lang] = []
        for i in range(n_items):
            true = i % 4
            label = (true + 1) % 4 if (i, lang) == planted else true  # the planted answer-key error
            gold[lang].append(label)
            rtl = {"arb_Arab": "ما الذي اشتراه", "heb_Hebr": "מה קנתה"}.get(lang)
            text = f"{rtl} <b>{i}</b>?" if rtl else f"[{lang}] What did Lena buy <b>{i}</b> & why?"
            rows.append({"link": f"https://x.example/p{i}", "question_number": 1,
                         "flores_passage": f"{rtl or 'Passage'} {i} ({lang}) <script>alert(1)</script>",
                         "question": text, **{f"mc_answer{k + 1}": f"{lang} option {k} of {i}" for k in range(4)},
                         "correct_answer_num": str(label + 1), "dialect": lang, "ds": "2023-05-03"})
        (data / "data" / f"{lang}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    paths = []
    for si, fam in enumerate(families):
        path = root / f"{fam.lower().replace('-', '')}_zeroshot" / "default"
        cfg = xcfg.validate({"seed": 1, "model": MODELS[fam],
                             "eval": {"benchmarks": {"belebele": {"kind": "belebele", "path": str(data)}}}})
        path.mkdir(parents=True, exist_ok=True)
        (path / "config.yaml").write_text(OmegaConf.to_yaml(cfg))
        d = path / "eval" / "belebele"
        (d / "predictions").mkdir(parents=True, exist_ok=True)
        for li, lang in enumerate(ITEM_LANGS):
            correct, lines = [], []
            for i in range(n_items):
                if (i, lang) == planted:
                    pred, ok = i % 4, False  # the true answer, scored against the swapped label
                else:
                    scattered = (i * 7 + li * 3 + si * 5) % 10 == 0 and i != planted[0]
                    ok = not (scattered or (i == hard[0] and lang in hard[1]))
                    pred = gold[lang][i] if ok else (gold[lang][i] + 2) % 4
                correct.append(ok)
                lines.append(json.dumps({"id": ids[i], "language": lang, "gold": gold[lang][i], "prediction": pred,
                                         "job": "j", "scores": [float(k == pred) for k in range(4)]}))
            (d / "predictions" / f"{lang}.jsonl").write_text("\n".join(lines) + "\n")
            result = {"benchmark": "belebele", "kind": "belebele", "language": lang, "code": lang, "split": "test",
                      "translate_test": False, **accuracy_with_ci(np.array(correct), 50, 0), "ties": 0,
                      "data_checks": {}, "chance": 25.0,
                      "provenance": {"stage": "evaluate", "inputs": "cafe", "xlt_version": "0.1.0", "model": {"sha": fam},
                                     "data": "local", "job": "j"}}
            (d / f"{lang}.json").write_text(json.dumps(result))
        (d / "plan.json").write_text(json.dumps({"benchmark": "belebele", "kind": "belebele", "languages": ITEM_LANGS}))
        paths.append(path)
    return paths, data
