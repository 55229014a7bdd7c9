"""xlt's LLM scorer vs lm-evaluation-harness vs per-choice scoring: forward tokens and wall time.

One run; for each model shape (a toy and one shaped like a real LLM: hidden 256, 8 layers, 32k vocab by
default), one randomly initialised Llama and the same upstream-schema Belebele and Global-MMLU Full files,
5-shot, float32:

* ``xlt prefix-cache`` — :class:`xlt.scoring.llm.scorer.LLMScorer` as configured by default: one pass per
  question, LM head on the answer position only, each shared few-shot prefix encoded once;
* ``xlt full-pass``    — the same without the prefix cache (``eval.llm.prefix_cache=false``);
* ``xlt per-choice``   — the same engine with one full forward pass per (question, option);
* ``harness``          — ``lm_eval.simple_evaluate`` on the harness's **built-in** task YAMLs (data path
                         swapped for the local files) with the same model object (``HFLM``) and batch size.
                         The task-registry scan (``TaskManager``) happens before the timer starts and the
                         bootstrap of standard errors is off (``bootstrap_iters=0``): both favour the harness.

``--text real`` swaps the Belebele fixture for text of real Belebele lengths in English and German
(passages ~480 characters, questions ~77, options ~25: sentences, questions and answers of the bundled
demo assets recombined to those lengths, :func:`real_length_belebele`) and a BPE vocabulary of 8k
trained on it; ``--benches belebele`` skips Global-MMLU. Every variant also reports forward time per
forward token (the prefix path's suffix tokens against a full pass's tokens).

Forward tokens are counted by a hook on the model (``input_ids.numel()``, padding included, prefix passes
included, for all variants). The script checks that every xlt variant predicts the same option as the
harness on every question. Wall times include data loading and tokenization on both sides.

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python benchmarks/llm_eval_bench.py               # CPU, a few minutes
    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python benchmarks/llm_eval_bench.py --shapes small-head
    python benchmarks/llm_eval_bench.py --shapes realistic --questions 200 --device cuda
    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python benchmarks/llm_eval_bench.py --shapes realistic --text real --benches belebele \
        --questions 100                                                     # the README's table

``--model PATH`` runs a **real** causal LM instead (a transformers folder, e.g. Gemma 3 270M converted
from its GGUF package; float32) on Belebele 5-shot of real lengths (``--text real``'s files, English and
German, two questions per passage), each variant in **its own subprocess**, so that its peak memory
(max RSS, from ``wait4``) is its own: ``floor`` (optional: torch, transformers and the float32 model
with every weight read once by a 2-token pass, then its tokenizer, and no scoring: what any float32
scorer pays), ``xlt`` (prefix cache and shared passages, ``--batch-size``), optionally ``xlt prefix-only``
/ ``xlt full-pass``, and the harness (its own ``belebele`` task files,
``HFLM`` loading the folder itself) at each of ``--harness-batch`` (default ``1,4``: ``HFLM``'s default
and the largest that fitted a 24 GB machine for Gemma 3 270M, where 8 was killed for memory). Wall and
CPU time are taken around the scoring (model loading and the harness's task-registry scan excluded, on
both sides); predictions and per-request log-likelihoods are compared with the harness's. A harness run
whose estimated memory (``--harness-gb-per-row``) exceeds what the machine has available is skipped and
said so. The machine's 1-minute load average is sampled every 5 s while each variant runs (mean, lowest,
highest); ``--codes`` picks the languages. ::

    OMP_NUM_THREADS=1 python benchmarks/llm_eval_bench.py --model /path/to/gemma3-270m-hf --questions 100 \
        --codes eng_Latn --variants floor,xlt,harness --harness-batch 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

# name -> (hidden, layers, model vocabulary). "small-head" keeps the LM head at ~10% of the per-token
# compute, about its share in a 7B model (at hidden 256 a 32k head is ~63%): it shows how much of the
# gain is left where the head-only trick is worth little.
SHAPES = {"toy": (128, 2, 32000), "realistic": (256, 8, 32000), "small-head": (256, 8, 2048)}
BENCHES = ("belebele", "global_mmlu")
VARIANTS = ("xlt prefix-cache", "xlt full-pass", "xlt per-choice", "harness")
REAL_CODES = ("eng_Latn", "deu_Latn")
DEMO = Path(__file__).resolve().parents[1] / "xlt" / "assets" / "demo" / "belebele" / "data"
# Mean characters of real Belebele fields (passage, question, option), the lengths --text real targets.
REAL_LENGTHS = (480, 77, 25)


def _grow(rng, pool: list[str], target: int, sep: str) -> str:
    """Items of ``pool`` joined by ``sep`` until the text is about ``target`` characters long."""
    text = rng.choice(pool)
    while len(text) < target - 8:
        text = text + sep + rng.choice(pool)
    return text


def real_length_belebele(root: Path, n: int, codes=REAL_CODES, seed: int = 0) -> Path:
    """``n`` Belebele rows per language (upstream schema, two questions per passage) whose passages,
    questions and options have real Belebele lengths, made from the demo assets' sentences, questions and
    answers (seeded: the same files every run)."""
    import random

    for code in codes:
        rows = [json.loads(line) for line in (DEMO / f"{code}.jsonl").read_text(encoding="utf-8").splitlines()]
        sents = sorted({x.strip().rstrip(".") + "." for r in rows for x in r["flores_passage"].split(". ")})
        questions = sorted({r["question"] for r in rows})
        answers = sorted({r[f"mc_answer{j}"] for r in rows for j in range(1, 5)})
        rng = random.Random(f"{code}-{seed}")
        joiner = {"eng_Latn": " and ", "deu_Latn": " und "}.get(code, ", ")

        out = []
        for i in range(n):
            if i % 2 == 0:
                passage = _grow(rng, sents, REAL_LENGTHS[0], " ")
            question = rng.choice(questions)
            while len(question) < REAL_LENGTHS[1] - 22:
                question = rng.choice(sents).rstrip(".") + ": " + question
            opts = [_grow(rng, answers, REAL_LENGTHS[2] + 4, joiner) for _ in range(4)]
            out.append({"link": f"https://demo.xlt/real/{i // 2}", "question_number": i % 2 + 1,
                        "flores_passage": passage, "question": question,
                        **{f"mc_answer{j + 1}": o for j, o in enumerate(opts)},
                        "correct_answer_num": str(rng.randint(1, 4)), "dialect": code, "ds": "2023-05-03"})
        path = root / "data" / f"{code}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out), encoding="utf-8")
    return root


class ForwardCounter:
    """Counts tokens, calls and seconds of the model's forward passes."""

    def __init__(self, model, sync):
        self.tokens = self.calls = 0
        self.seconds = 0.0
        self.sync = sync
        model.register_forward_pre_hook(self._pre, with_kwargs=True)
        model.register_forward_hook(self._post, always_call=True)  # also when a K/V-only pass stops early

    def reset(self):
        self.tokens = self.calls = 0
        self.seconds = 0.0

    def _pre(self, _m, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        self.tokens += int(ids.numel())
        self.calls += 1
        self.sync()
        self._t0 = time.perf_counter()

    def _post(self, _m, _args, _out):
        self.sync()
        self.seconds += time.perf_counter() - self._t0


def head_share(cfg) -> float:
    """The LM head's share of the per-token multiply-adds of a Llama (attention scores excluded)."""
    h, inter = cfg.hidden_size, cfg.intermediate_size
    kv = cfg.num_key_value_heads * (h // cfg.num_attention_heads)
    layer = 2 * h * h + 2 * h * kv + 3 * h * inter
    head = h * cfg.vocab_size
    return head / (head + cfg.num_hidden_layers * layer)


def run_shape(name: str, args, bele: Path, gmmlu: Path, texts: list[str], root: Path, codes, benches) -> dict:
    import lm_eval
    import torch
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tests.fixtures.llm import build_tiny_lm, harness_predictions, llm_root_config, write_harness_tasks
    from xlt.data.benchmarks import get_benchmark
    from xlt.scoring.llm.scorer import LLMScorer

    hidden, layers, vocab = SHAPES[name]
    model_dir = build_tiny_lm(root / f"model_{name}", texts, hidden=hidden, layers=layers, model_vocab=vocab,
                              heads=max(2, hidden // 64), init_std=0.02,
                              vocab_size=8000 if args.text == "real" else 400)
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).to(args.device).eval()

    def sync():
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()

    with torch.inference_mode():  # warm-up (kernels, allocator), not counted
        model(input_ids=torch.zeros((args.batch_size, 256), dtype=torch.long, device=args.device))
    counter = ForwardCounter(model, sync)
    benchmarks = {"belebele": {"kind": "belebele", "path": str(bele)},
                  "global_mmlu": {"kind": "global_mmlu", "path": str(gmmlu)}}
    jobs = {"belebele": [("belebele", c) for c in codes], "global_mmlu": [("global_mmlu", "en")]}
    cfg = llm_root_config(benchmarks, {"model": str(model_dir), "num_fewshot": args.shots,
                                       "batch_size": args.xlt_batch_size or args.batch_size, "device": args.device, "dtype": "float32"})
    tasks = {t: v for t, v in write_harness_tasks(root / f"tasks_{name}", bele, gmmlu, codes=codes).items()
             if v[0] != "global_mmlu_lite"}
    task_manager = TaskManager(include_path=str(root / f"tasks_{name}"))  # registry scan: not timed
    hflm = HFLM(pretrained=model, tokenizer=tok, batch_size=args.batch_size, device=args.device)

    def xlt(bench: str, **kw) -> dict:
        scorer = LLMScorer(cfg, model=model, tokenizer=tok, device=torch.device(args.device), progress=False, **kw)
        out, paths = {}, {}
        for b, lang in jobs[bench]:
            bcfg = cfg.eval.benchmarks[b]
            items = get_benchmark(bcfg.kind).load(bcfg, lang)
            scores = scorer.score(items, benchmark=b, language=lang)
            out.update({(b, lang, q): s for q, s in zip(items["id"], scores, strict=True)})
            for k, v in scorer.last_meta["prefix_cache"]["questions_per_path"].items():
                paths[k] = paths.get(k, 0) + v
        return {"preds": out, "paths": paths}

    def harness(bench: str) -> dict:
        mine = [t for t, v in tasks.items() if v[0] == bench]
        res = lm_eval.simple_evaluate(model=hflm, tasks=mine, num_fewshot=args.shots, log_samples=True,
                                      task_manager=task_manager, bootstrap_iters=0, verbosity="ERROR")
        return {"preds": harness_predictions(res, {t: tasks[t] for t in mine})}

    variants = {
        "xlt prefix-cache": lambda b: xlt(b, prefix_cache=True),
        "xlt full-pass": lambda b: xlt(b, prefix_cache=False),
        "xlt per-choice": lambda b: xlt(b, prefix_cache=False, share_passes=False),
        "harness": harness,
    }
    variants = {k: v for k, v in variants.items() if k in args.variants}
    rows: dict[str, dict[str, dict]] = {}
    for bench in benches:
        for vname, fn in variants.items():
            counter.reset()
            sync()
            load0 = os.getloadavg()[0]
            t0, c0 = time.perf_counter(), time.process_time()
            res = fn(bench)
            sync()
            rows.setdefault(vname, {})[bench] = {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                                                 "load_avg": (round(load0, 1), round(os.getloadavg()[0], 1)),
                                                 "tokens": counter.tokens, "calls": counter.calls,
                                                 "forward_s": counter.seconds, **res}
    ref_name = "harness" if "harness" in rows else "xlt full-pass"  # --variants without the harness
    ref = {b: rows[ref_name][b]["preds"] for b in benches}
    report = {"shape": {"hidden": hidden, "layers": layers, "vocab": vocab, "head_share": head_share(model.config)},
              "reference": ref_name, "variants": {}}
    for vname, per in rows.items():
        report["variants"][vname] = {}
        for b in benches:
            r = per[b]
            same = sum(int(np.argmax(r["preds"][k])) == int(np.argmax(v)) for k, v in ref[b].items())
            base = rows[ref_name][b]
            report["variants"][vname][b] = {
                "wall_s": round(r["wall_s"], 2), "cpu_s": round(r["cpu_s"], 2), "load_avg_start_end": r["load_avg"],
                "cpu_speedup_vs_harness": round(base["cpu_s"] / r["cpu_s"], 2), "forward_s": round(r["forward_s"], 2),
                "forward_tokens": r["tokens"], "forward_calls": r["calls"], "same_as_harness": f"{same}/{len(ref[b])}",
                "speedup_vs_harness": round(base["wall_s"] / r["wall_s"], 2),
                "forward_speedup_vs_harness": round(base["forward_s"] / r["forward_s"], 2),
                "tokens_vs_harness": round(r["tokens"] / base["tokens"], 3),
                "forward_ms_per_token": round(1000 * r["forward_s"] / r["tokens"], 4),
                **({"questions_per_path": r["paths"]} if "paths" in r else {}),
            }
    return report


def print_report(name: str, rep: dict, args) -> None:
    s = rep["shape"]
    print(f"\n== {name}: Llama hidden={s['hidden']} layers={s['layers']} vocab={s['vocab']} float32 on {args.device} "
          f"(LM head {100 * s['head_share']:.0f}% of per-token compute); {(len(args.codes) if args.text == 'real' else 2) * args.questions} Belebele + "
          f"{4 * args.gmmlu_per_subject} Global-MMLU Full questions, {args.shots}-shot, batch {args.batch_size}"
          f"{f' (xlt {args.xlt_batch_size})' if args.xlt_batch_size else ''}, "
          f"text {args.text}")
    ref = "harness" if rep["reference"] == "harness" else "full"
    for b in rep["variants"][rep["reference"]]:
        print(f"-- {b}")
        print(f"{'':18}{'fwd tokens':>12}{'fwd s':>9}{'ms/token':>10}{'wall s':>9}{'cpu s':>9}{ref + '/x wall':>16}"
              f"{ref + '/x cpu':>15}{ref + '/x fwd':>15}{'same':>10}  load (start, end)")
        for vname, per in rep["variants"].items():
            r = per[b]
            print(f"{vname:18}{r['forward_tokens']:>12,}{r['forward_s']:>9.2f}{r['forward_ms_per_token']:>10.4f}"
                  f"{r['wall_s']:>9.2f}{r['cpu_s']:>9.2f}{str(r['speedup_vs_harness']) + 'x':>16}"
                  f"{str(r['cpu_speedup_vs_harness']) + 'x':>15}"
                  f"{str(r['forward_speedup_vs_harness']) + 'x':>15}{r['same_as_harness']:>10}  {r['load_avg_start_end']}")
        pc, fp = rep["variants"].get("xlt prefix-cache", {}).get(b), rep["variants"].get("xlt full-pass", {}).get(b)
        if pc and fp:
            print(f"  prefix path forward time per token / full pass's: "
                  f"{pc['forward_ms_per_token'] / fp['forward_ms_per_token']:.2f}")
        if pc:
            print(f"  prefix-cache paths: {pc['questions_per_path']}")


# -- a real model, each variant in its own process ------------------------------------------------------

MODEL_VARIANTS = ("floor", "xlt", "xlt prefix-only", "xlt full-pass", "harness")


def _available_gb() -> float:
    """MemAvailable of /proc/meminfo in GB (inf where there is none)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1e6
    except OSError:
        pass
    return float("inf")


def worker(spec: dict) -> None:
    """One variant in this process: load, score every language, write predictions and timings."""
    import torch

    from tests.fixtures.llm import harness_predictions, llm_root_config, write_harness_tasks

    codes = spec["codes"]
    t_load = time.perf_counter()
    if spec["variant"] == "floor":  # what any float32 scorer pays: torch, transformers, the model, a tokenizer
        import resource

        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(spec["model"], dtype=torch.float32).eval()
        with torch.inference_mode():  # one 2-token pass: every weight read once (safetensors are mapped lazily)
            model(input_ids=torch.tensor([[2, 100]]), logits_to_keep=1)
        model_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
        AutoTokenizer.from_pretrained(spec["model"])
        load_s = time.perf_counter() - t_load
        wall = cpu = 0.0
        preds, meta = {}, {"parameters": sum(p.numel() for p in model.parameters()), "model_max_rss_gb": model_gb}
    elif spec["variant"] == "harness":
        import lm_eval
        from lm_eval.models.huggingface import HFLM
        from lm_eval.tasks import TaskManager

        tasks = write_harness_tasks(Path(spec["root"]) / f"tasks_{os.getpid()}", Path(spec["bele"]), codes=codes)
        task_manager = TaskManager(include_path=str(Path(spec["root"]) / f"tasks_{os.getpid()}"))  # untimed
        hflm = HFLM(pretrained=spec["model"], batch_size=spec["batch"], device="cpu", dtype="float32")
        load_s = time.perf_counter() - t_load
        t0, c0 = time.perf_counter(), time.process_time()
        res = lm_eval.simple_evaluate(model=hflm, tasks=list(tasks), num_fewshot=spec["shots"], log_samples=True,
                                      task_manager=task_manager, bootstrap_iters=0, verbosity="ERROR")
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        preds = {f"{lang}|{qid}": v for (_, lang, qid), v in harness_predictions(res, tasks).items()}
        meta = {}
    else:
        from xlt.data.benchmarks import get_benchmark
        from xlt.scoring.llm.scorer import LLMScorer

        cfg = llm_root_config({"belebele": {"kind": "belebele", "path": spec["bele"]}},
                              {"model": spec["model"], "num_fewshot": spec["shots"], "batch_size": spec["batch"],
                               "device": "cpu", "dtype": "float32"})
        kw = {"xlt": {}, "xlt prefix-only": {"share_contexts": False},
              "xlt full-pass": {"prefix_cache": False}}[spec["variant"]]
        scorer = LLMScorer(cfg, progress=False, **kw)  # xlt's own loading path (safetensors, float32 on CPU)
        load_s = time.perf_counter() - t_load
        t0, c0 = time.perf_counter(), time.process_time()
        preds, meta = {}, {}
        for lang in codes:
            items = get_benchmark("belebele").load(cfg.eval.benchmarks.belebele, lang)
            scores = scorer.score(items, benchmark="belebele", language=lang)
            preds.update({f"{lang}|{q}": [float(x) for x in row] for q, row in zip(items["id"], scores, strict=True)})
            m = scorer.last_meta
            meta[lang] = {"forward": m["forward"], "prefix_cache": m["prefix_cache"]}
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    Path(spec["out"]).write_text(json.dumps({"preds": preds, "wall_s": wall, "cpu_s": cpu, "load_s": load_s,
                                             "meta": meta, "threads": torch.get_num_threads()}), encoding="utf-8")


def run_model(args, root: Path) -> dict:
    """Every variant of ``--model`` in its own subprocess; see the module docstring."""
    bele = real_length_belebele(root / "belebele", n=args.questions, codes=args.codes)
    jobs = [(v, args.batch_size) for v in args.variants if v != "harness"]
    if "harness" in args.variants:
        jobs += [("harness", b) for b in args.harness_batch]
    rows = []
    for variant, batch in jobs:
        name = f"{variant} (batch {batch})"
        need = args.harness_gb_per_row * batch + 2.0 if variant == "harness" else 0.0
        avail = _available_gb()
        if need > avail:
            print(f"{name}: skipped, needs ~{need:.1f} GB, {avail:.1f} GB available", flush=True)
            rows.append({"variant": variant, "batch": batch, "skipped": f"needs ~{need:.1f} GB, {avail:.1f} available"})
            continue
        out = root / f"result_{len(rows)}.json"
        spec = {"variant": variant, "batch": batch, "model": str(args.model), "bele": str(bele), "root": str(root),
                "codes": list(args.codes), "shots": args.shots, "out": str(out)}
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, __file__, "--worker", json.dumps(spec)])
        loads = [os.getloadavg()[0]]
        while True:  # the machine's 1-minute load average every 5 s while the variant runs
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(5)
            loads.append(os.getloadavg()[0])
        proc.returncode = os.waitstatus_to_exitcode(status)
        row = {"variant": variant, "batch": batch, "process_s": round(time.perf_counter() - t0, 1),
               "max_rss_gb": round(usage.ru_maxrss / 1e6, 2), "load_avg": _load_summary(loads)}
        if proc.returncode != 0:
            row["failed"] = f"exit status {proc.returncode}"
        else:
            res = json.loads(out.read_text(encoding="utf-8"))
            row.update({k: round(res[k], 1) for k in ("wall_s", "cpu_s", "load_s")}, preds=res["preds"],
                       meta=res["meta"], threads=res["threads"])
        print(f"{name}: " + json.dumps({k: v for k, v in row.items() if k not in ("preds", "meta")}), flush=True)
        rows.append(row)
    return compare_model_rows(rows)


def _load_summary(loads: list[float]) -> dict[str, float]:
    """Mean, lowest and highest of 1-minute load averages sampled during a run."""
    return {"mean": round(sum(loads) / len(loads), 1), "min": round(min(loads), 1), "max": round(max(loads), 1)}


def compare_model_rows(rows: list[dict]) -> dict:
    """Predictions and log-likelihoods of every run against the first harness run; ratios of wall time,
    CPU time and peak memory of each harness run to the first xlt run."""
    done = [r for r in rows if "preds" in r]
    ref = next((r for r in done if r["variant"] == "harness"), None)
    xlt = next((r for r in done if r["variant"] not in ("harness", "floor")), None)
    floor = next((r for r in done if r["variant"] == "floor"), None)
    for r in done:
        if ref is not None and r["preds"]:
            keys = sorted(ref["preds"])
            r["same_predictions"] = (f"{sum(int(np.argmax(r['preds'][k])) == int(np.argmax(ref['preds'][k])) for k in keys)}"
                                     f"/{len(keys)}")
            r["max_abs_dll_vs_harness"] = float(max(np.abs(np.subtract(r["preds"][k], ref["preds"][k])).max()
                                                    for k in keys))
    ratios = []
    if xlt is not None:
        for r in done:
            if r["variant"] == "harness":
                ratios.append({"harness_batch": r["batch"], "xlt": xlt["variant"], "xlt_batch": xlt["batch"],
                               "wall_speedup": round(r["wall_s"] / xlt["wall_s"], 2),
                               "cpu_speedup": round(r["cpu_s"] / xlt["cpu_s"], 2),
                               "memory_fraction": round(xlt["max_rss_gb"] / r["max_rss_gb"], 3),
                               **({"floor_fraction": round(floor["max_rss_gb"] / r["max_rss_gb"], 3),
                                   "model_floor_fraction": round(floor["meta"]["model_max_rss_gb"] / r["max_rss_gb"], 3)}
                                  if floor is not None else {})})
    for r in done:
        r.pop("preds")
    return {"runs": rows, "ratios": ratios}


def print_model_report(rep: dict, args) -> None:
    print(f"\n== {args.model} float32 on CPU; Belebele 5-shot of real lengths, {args.questions} questions x "
          f"{len(args.codes)} language(s) ({', '.join(args.codes)}); OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS', 'unset')}; load average now {os.getloadavg()[0]:.1f}")
    print(f"{'':28}{'wall s':>9}{'cpu s':>9}{'max RSS GB':>12}{'same':>10}{'max|dLL|':>11}  load avg (mean, min-max)")
    for r in rep["runs"]:
        name = f"{r['variant']} (batch {r['batch']})"
        if "wall_s" not in r:
            print(f"{name:28}{r.get('skipped') or r.get('failed')}")
            continue
        if r["variant"] == "floor":
            print(f"{name:28}{'-':>9}{'-':>9}{r['max_rss_gb']:>12.2f}  (the model after one pass: "
                  f"{r['meta']['model_max_rss_gb']:.2f} GB; then its tokenizer)")
            continue
        print(f"{name:28}{r['wall_s']:>9.1f}{r['cpu_s']:>9.1f}{r['max_rss_gb']:>12.2f}{r.get('same_predictions', '-'):>10}"
              f"{r.get('max_abs_dll_vs_harness', float('nan')):>11.1e}"
              f"  {r['load_avg']['mean']} ({r['load_avg']['min']}-{r['load_avg']['max']})")
    for x in rep["ratios"]:
        print(f"harness batch {x['harness_batch']} / {x['xlt']} batch {x['xlt_batch']}: wall {x['wall_speedup']}x, "
              f"CPU {x['cpu_speedup']}x; xlt's peak memory {x['memory_fraction']} of the harness's"
              + (f" (floor: the float32 model {x['model_floor_fraction']}, with its tokenizer {x['floor_fraction']})"
                 if "floor_fraction" in x else ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="toy,realistic", help=f"comma-separated, of {sorted(SHAPES)}")
    ap.add_argument("--questions", type=int, default=24, help="Belebele questions per language (2 languages)")
    ap.add_argument("--gmmlu-per-subject", type=int, default=6, help="Global-MMLU test questions per subject (x4)")
    ap.add_argument("--batch-size", type=int, default=None, help="default: 8; with --model 32 (eval.llm.batch_size's)")
    ap.add_argument("--xlt-batch-size", type=int, default=None,
                    help="xlt's batch size where it differs from the harness's (--batch-size), e.g. 32 "
                         "(eval.llm.batch_size's default)")
    ap.add_argument("--shots", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--text", choices=("fixture", "real"), default="fixture",
                    help="Belebele text: the test fixture (eng/fra pseudo-words) or real lengths (eng/deu)")
    ap.add_argument("--benches", default=",".join(BENCHES), help=f"comma-separated, of {list(BENCHES)}")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help=f"comma-separated, of {list(VARIANTS)} (without the harness: compared with xlt full-pass)")
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers to this JSON file")
    ap.add_argument("--model", type=Path, default=None,
                    help="a real causal LM folder: Belebele of real lengths, each variant in its own process")
    ap.add_argument("--harness-batch", default="1,4", help="--model: the harness's batch sizes (comma-separated)")
    ap.add_argument("--harness-gb-per-row", type=float, default=3.7,
                    help="--model: the harness's memory per batch row, to skip runs that cannot fit (Gemma 3 270M: "
                         "16.8 GB at batch 4)")
    ap.add_argument("--codes", default=",".join(REAL_CODES),
                    help="--text real / --model: the Belebele languages (comma-separated, of "
                         f"{list(REAL_CODES)})")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(json.loads(args.worker))
        return
    args.codes = tuple(c.strip() for c in args.codes.split(",") if c.strip())
    if not args.codes or any(c not in REAL_CODES for c in args.codes):
        sys.exit(f"xlt: error: --codes: choose from {list(REAL_CODES)}")
    if args.model is not None:
        if ap.get_default("variants") == args.variants:
            args.variants = "xlt,harness"
        args.variants = [v.strip() for v in args.variants.split(",") if v.strip()]
        if not args.variants or any(v not in MODEL_VARIANTS for v in args.variants):
            sys.exit(f"xlt: error: --variants: with --model choose from {list(MODEL_VARIANTS)}")
        if args.batch_size is None:
            args.batch_size = 32  # eval.llm.batch_size's default
        args.harness_batch = [int(b) for b in args.harness_batch.split(",") if b.strip()]
        root = Path(tempfile.mkdtemp(prefix="xlt_llm_bench_"))
        rep = run_model(args, root)
        print_model_report(rep, args)
        if args.json:
            args.json.write_text(json.dumps(rep, indent=2, allow_nan=False) + "\n", encoding="utf-8")
        return
    if args.batch_size is None:
        args.batch_size = 8
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        sys.exit(f"xlt: error: --shapes: unknown {unknown}; choose from {sorted(SHAPES)}")

    from tests.fixtures.llm import corpus, write_belebele, write_global_mmlu

    root = Path(tempfile.mkdtemp(prefix="xlt_llm_bench_"))
    args.variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if not args.variants or any(v not in VARIANTS for v in args.variants) or (
            "harness" not in args.variants and "xlt full-pass" not in args.variants):
        sys.exit(f"xlt: error: --variants: choose from {list(VARIANTS)}, with harness or xlt full-pass")
    benches = [b.strip() for b in args.benches.split(",") if b.strip()]
    if not benches or any(b not in BENCHES for b in benches):
        sys.exit(f"xlt: error: --benches: choose from {list(BENCHES)}")
    if args.text == "real":
        codes = args.codes
        bele = real_length_belebele(root / "belebele", n=args.questions, codes=codes)
    else:
        codes = ("eng_Latn", "fra_Latn")
        bele = write_belebele(root / "belebele", n=args.questions)
    gmmlu = write_global_mmlu(root / "gmmlu", test_per_subject=args.gmmlu_per_subject)
    texts = corpus([bele, gmmlu])
    out = {}
    for name in shapes:
        out[name] = run_shape(name, args, bele, gmmlu, texts, root, codes, benches)
        print_report(name, out[name], args)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2, allow_nan=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
