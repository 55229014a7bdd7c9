"""Speed of xlt's translation engine vs naive per-row generation, and of a warm-cache rerun.

Both sides use the same tiny random NLLB-shaped model (:func:`xlt.translation.tiny.build_tiny_nllb`),
the same data, batch size and generation limits, in one process:

* **xlt**: passages split into sentences, unique segments only (shared passages and repeated options
  once), length-sorted batches, per-batch generation limit, the segment cache (cold);
* **baseline**: per-passage generation without sentence splitting or length sorting: rows in dataset
  order, each field (passage, question, 4 options) translated whole, batches in input order;
* **warm rerun**: xlt again on the same data with the cache filled by the first run.

Throughput is counted in *source segments* (sentences + questions + options of every row; the same
work for all three), so ``segments/s`` ratios equal time ratios. A random model never emits EOS, so
every batch generates up to its limit; with a real model EOS comes earlier, for both sides.

    OMP_NUM_THREADS=1 python benchmarks/translate_bench.py [--passages 40] [--questions 3]

``--engines`` compares the engines instead, side by side in one process, on the tiny shape and on the
real model's shape (``--shapes tiny,600m``; ``600m`` is a random model shaped like
NLLB-200-distilled-600M: d_model 1024, 12 + 12 layers, 16 heads, FFN 4096, 256,206-entry vocabulary,
built from a config) over the unique segments (sentences, questions, options) of the RACE-like rows
of :func:`make_data`, all greedy, float32 unless named:

* ``generate loop``: what ``pipeline("translation", batch_size=B)`` did (the translation pipeline is
  gone from transformers 5): ``model.generate`` over batches of B in input order, a fixed
  ``max_new_tokens``;
* ``xlt hf``: xlt's transformers engine (length-sorted batches, per-batch limit); its output is the
  reference (``generate``'s float32 output);
* ``xlt ct2 float32`` / ``xlt ct2 int8``: xlt's CTranslate2 engine (converted once before timing).

Random weights never emit EOS, so every segment generates to its limit (the per-batch limit
``min(max_new_tokens, 2 x longest input + 10)`` for xlt, ``max_new_tokens`` for the loop): generated
tokens/s is the per-token rate, segments/s what a user waits for. Timed passes alternate between the
variants (``--repeats``) and the median is reported; peak memory is the process's resident-set peak
during a variant's first pass above its level before the pass, plus the variant's model in memory.

    OMP_NUM_THREADS=2 python benchmarks/translate_bench.py --engines --shapes tiny,600m --segments 48

``--stage`` measures what a user of the translate stage meets: :func:`translate_dataset` (the stage's work
on a unit: unique segments, cache lookup, length-sorted batches, a cache commit per batch, segment and
row rules, the rows re-assembled) with a fresh segment cache, on ``--rows`` RACE-like rows into French, at
the stage's defaults (batch 32, ``max_new_tokens`` 256 with the per-batch limit 2 x longest + 10), on the
600M shape, per thread count (``--threads 1,2``: ``OMP_NUM_THREADS`` the same for both engines):
transformers (torch threads) and CTranslate2 float32 and int8 (``--compute-types``) in the thread layouts
of ``--configs``: ``default`` (xlt's policy, :func:`~xlt.translation.engines.ct2.cpu_thread_plan`) and
``intra`` (one batch at a time on all the threads). Per variant: wall and CPU seconds of the call (model
conversion and loading excluded), CPU / wall (2.0 = both cores busy all along), both ratios to transformers
at the same thread count, whether the rows equal transformers' rows, peak memory above the level before the
call, the load average at the start and end of the pass; at the end a markdown table of them all. The
header gives the work of a pass (GFLOP) and this machine's float32 GEMM rate at each thread count (wall and
per CPU-second, at the output projection's shape and in cache). ``--profile`` adds a cProfile of one more
pass of each CTranslate2 variant, its time split into CTranslate2's own work and the stage's around it
(tokenization, decoding, cache, segmenting, rules).

    OMP_NUM_THREADS=2 HF_HUB_OFFLINE=1 python benchmarks/translate_bench.py --stage --rows 20 --threads 1,2 --configs default
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")  # the tables, not progress bars

import torch  # noqa: E402
from datasets import Dataset  # noqa: E402

from xlt.data.schema import TRAIN_FEATURES  # noqa: E402
from xlt.translation.cache import TranslationCache  # noqa: E402
from xlt.translation.dataset import translate_dataset  # noqa: E402
from xlt.translation.engines.base import EngineSettings  # noqa: E402
from xlt.translation.engines.hf import HFSeq2SeqTranslator  # noqa: E402
from xlt.translation.segment import segment_passage  # noqa: E402
from xlt.translation.tiny import build_tiny_nllb  # noqa: E402

WORDS = (
    "the a student teacher school river city market house friend mother father book letter story "
    "morning evening happy quickly slowly walked found wrote read bought visited learned green small "
    "old new big because when after before many some every their his her our people children day"
).split()


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(5, 22))]
    return " ".join(words).capitalize() + rng.choice(".!?")


def make_data(n_passages: int, q_per_passage: int, seed: int = 0) -> Dataset:
    """RACE-like rows: passages of 3-12 sentences, several questions each, one option shared by many."""
    rng = random.Random(seed)
    rows = []
    for p in range(n_passages):
        passage = " ".join(sentence(rng) for _ in range(rng.randint(3, 12)))
        for q in range(q_per_passage):
            opts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) for _ in range(3)]
            rows.append(
                {
                    "dataset": "bench",
                    "split": "train",
                    "passage_id": f"p{p}",
                    "question_id": f"p{p}q{q}",
                    "passage": passage,
                    "question": sentence(rng)[:-1] + "?",
                    "options": [*opts, "All of the above"],
                    "label": q % 4,
                    "license": "synthetic",
                }
            )
    return Dataset.from_list(rows, features=TRAIN_FEATURES)


def count_segments(ds: Dataset) -> int:
    return sum(len(segment_passage(r["passage"]).sentences) + 1 + len(r["options"]) for r in ds)


def baseline(ds: Dataset, tr: HFSeq2SeqTranslator, tgt: str) -> None:
    """Per-row generation: each field whole, in input order, ``batch_size`` texts per call, no cache."""
    texts = []
    for r in ds:
        texts.extend([r["passage"], r["question"], *r["options"]])
    for i in range(0, len(texts), tr.batch_size):
        tr._generate(texts[i : i + tr.batch_size], "eng_Latn", tgt)


class PeakRSS:
    """The process's peak resident memory (MiB) while the block runs, sampled every 10 ms."""

    def __enter__(self):
        import psutil

        self.proc = psutil.Process()
        self.start = self.peak = self.proc.memory_info().rss
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self):
        while not self.done.wait(0.01):
            self.peak = max(self.peak, self.proc.memory_info().rss)

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)
        self.mib = (self.peak - self.start) / 2**20


def rss_mib() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


SHAPES = {  # name -> build_tiny_nllb keywords
    "tiny": {"d_model": 256, "layers": 4, "heads": 4, "ffn_dim": 1024},
    "600m": {"d_model": 1024, "layers": 12, "heads": 16, "ffn_dim": 4096, "total_vocab": 256206, "init_std": 0.02},
}


def engine_rows(shape: str, args, segments: list[str], corpus: list[str], tmp: Path) -> dict:
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from xlt.translation.engines.base import EngineSettings, length_sorted_batches
    from xlt.translation.engines.ct2 import CT2Translator

    path = build_tiny_nllb(tmp / f"nllb-{shape}", corpus, vocab_size=2000, **SHAPES[shape])
    src, tgt, bs, cap = "eng_Latn", "fra_Latn", args.batch_size, args.max_new_tokens
    before = rss_mib()
    model = AutoModelForSeq2SeqLM.from_pretrained(str(path), dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(str(path))
    model_mib = {"hf": rss_mib() - before}
    hf = HFSeq2SeqTranslator(str(path), EngineSettings(batch_size=bs, max_new_tokens=cap, device="cpu", precision="fp32"),
                             model=model, tokenizer=tok)
    n_params = sum(p.numel() for p in model.parameters())
    engines = {}
    for ctype in ("float32", "int8"):
        before = rss_mib()
        engines[ctype] = CT2Translator(str(path), EngineSettings(batch_size=bs, max_new_tokens=cap, device="cpu"),
                                       compute_type=ctype, tokenizer=tok)  # conversion happens here, untimed
        gc.collect()
        model_mib[ctype] = rss_mib() - before
    lengths = hf.lengths(segments)
    src_tokens = sum(lengths)
    gen_xlt = sum(len(b) * min(cap, math.ceil(2.0 * max(lengths[i] for i in b)) + 10)
                  for b in length_sorted_batches(lengths, bs))

    def generate_loop() -> list[str]:
        tok.src_lang = src
        out = []
        for i in range(0, len(segments), bs):
            enc = tok(segments[i : i + bs], return_tensors="pt", padding=True, truncation=True, max_length=256)
            with torch.inference_mode():
                ids = model.generate(**enc, forced_bos_token_id=tok.convert_tokens_to_ids(tgt), max_new_tokens=cap,
                                     num_beams=1, do_sample=False)
            out.extend(t.strip() for t in tok.batch_decode(ids, skip_special_tokens=True))
        return out

    variants = {
        "generate loop (pipeline-style)": (generate_loop, "hf", len(segments) * cap),
        "xlt hf": (lambda: hf.translate(segments, src, tgt), "hf", gen_xlt),
        "xlt ct2 float32": (lambda: engines["float32"].translate(segments, src, tgt), "float32", gen_xlt),
        "xlt ct2 int8": (lambda: engines["int8"].translate(segments, src, tgt), "int8", gen_xlt),
    }
    for tr in (hf, *engines.values()):  # warm-up (kernels, allocator, thread pools), not timed
        tr.translate(segments[:2], src, tgt)
    times: dict[str, list[float]] = {v: [] for v in variants}
    outputs: dict[str, list[str]] = {}
    peaks: dict[str, float] = {}
    for rep in range(args.repeats):
        order = list(variants) if rep % 2 == 0 else list(reversed(variants))
        for name in order:
            fn = variants[name][0]
            with PeakRSS() as mem:
                t0 = time.perf_counter()
                out = fn()
                times[name].append(time.perf_counter() - t0)
            outputs.setdefault(name, out)
            peaks.setdefault(name, mem.mib)
    ref = outputs["xlt hf"]
    rows = {}
    for name, (_, mem_key, gen) in variants.items():
        t = statistics.median(times[name])
        rows[name] = {"seconds": t, "segments_per_s": len(segments) / t, "source_tokens_per_s": src_tokens / t,
                      "generated_tokens_per_s": gen / t, "peak_mib": model_mib[mem_key] + peaks[name],
                      "same_as_generate": sum(a == b for a, b in zip(outputs[name], ref, strict=True)) / len(ref)}
    base = rows["xlt hf"]["seconds"]
    for r in rows.values():
        r["speedup_vs_xlt_hf"] = base / r["seconds"]
    return {"params_m": n_params / 1e6, "segments": len(segments), "source_tokens": src_tokens,
            "threads": torch.get_num_threads(), "rows": rows}


def compare_engines(args) -> None:
    ds = make_data(args.passages, args.questions)
    unique: dict[str, None] = {}
    for r in ds:
        unique.update((x, None) for x in [*segment_passage(r["passage"]).sentences, r["question"], *r["options"]])
    rng = random.Random(0)
    segments = rng.sample(list(unique), min(args.segments, len(unique)))
    corpus = [r["passage"] for r in ds] + [r["question"] for r in ds]
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XLT_CACHE"] = str(Path(tmp) / "xlt_cache")  # conversions of these random models
        for shape in [s.strip() for s in args.shapes.split(",") if s.strip()]:
            rep = engine_rows(shape, args, segments, corpus, Path(tmp))
            print(f"\n== {shape}: random NLLB-shaped M2M100 ({rep['params_m']:.0f}M parameters, {SHAPES[shape]}); "
                  f"{rep['segments']} unique segments ({rep['source_tokens']} source tokens), batch {args.batch_size}, "
                  f"max_new_tokens {args.max_new_tokens}, greedy, CPU, {rep['threads']} threads, "
                  f"median of {args.repeats}")
            print(f"{'':<32}{'seg/s':>8}{'src tok/s':>11}{'gen tok/s':>11}{'peak MiB':>10}{'same':>7}{'vs xlt hf':>11}")
            for name, r in rep["rows"].items():
                print(f"{name:<32}{r['segments_per_s']:>8.2f}{r['source_tokens_per_s']:>11.1f}"
                      f"{r['generated_tokens_per_s']:>11.1f}{r['peak_mib']:>10.0f}{100 * r['same_as_generate']:>6.0f}%"
                      f"{r['speedup_vs_xlt_hf']:>10.2f}x")
            gc.collect()


def profile_breakdown(prof) -> list[tuple[str, float]]:
    """Seconds of a cProfile of one stage pass (``translate_dataset``) by part, and the total."""
    import pstats

    stats = pstats.Stats(prof).stats  # (file, line, name) -> (cc, nc, tottime, cumtime, callers)

    def cum(file: str, name: str) -> float:
        return sum(v[3] for (f, _, n), v in stats.items() if file in f and name in n)

    total = cum("translation/dataset.py", "translate_dataset")
    ct2 = cum("~", "ctranslate2")  # its built-in methods: translate_batch, and result() of async batches
    parts = [
        ("CTranslate2's translate_batch and results (C++)", ct2),
        ("tokenization into pieces, per batch", cum("engines/ct2.py", "_submit") - cum("~", "translate_batch")),
        ("input lengths (tokenization, once)", cum("engines/base.py", "lengths")),
        ("decoding pieces to text", cum("engines/ct2.py", "_decode")),
        ("cache: reads and commits", cum("translation/cache.py", "get_many") + cum("translation/cache.py", "put_many")),
        ("segmenting, segment and row rules, rows", total - cum("translation/dataset.py", "translate_segments")),
    ]
    return [*parts, ("rest", total - sum(t for _, t in parts)), ("total", total)]


def stage_work(tr, ds) -> dict[str, float]:
    """The arithmetic of one stage pass on the 600M shape, from its batches (length-sorted, padded, each
    generating to its limit: random weights never emit EOS): GFLOP of the encoder (source tokens x 12
    layers of attention projections and FFN, and the decoder's cross-attention keys and values of them)
    and of the decoder per generated token (12 layers + the 256,206-way output projection, which alone is
    60% of it). Attention scores are left out (short sequences: a few percent)."""
    from xlt.translation.engines.base import length_sorted_batches

    segs = list({x: None for r in ds for x in [*segment_passage(r["passage"]).sentences, r["question"],
                                               *r["options"]] if x.strip()})
    lengths = tr.lengths(segs)
    d, f, layers, vocab = 1024, 4096, 12, 256206
    src = gen = 0
    for b in length_sorted_batches(lengths, tr.batch_size):
        longest = max(lengths[i] for i in b)
        src += len(b) * longest
        gen += len(b) * tr.settings.generation_limit(longest)
    enc = src * layers * 2 * (4 * d * d + 2 * d * f + 2 * d * d)
    dec_layers = gen * layers * 2 * (4 * d * d + 2 * d * d + 2 * d * f)
    head = gen * 2 * d * vocab
    return {"source_tokens": src, "generated_tokens": gen, "gflop": (enc + dec_layers + head) / 1e9,
            "head_share": head / (enc + dec_layers + head)}


def gemm_rate(threads: int) -> dict[str, float]:
    """This machine's float32 GEMM rate (GFLOP/s, torch, best of 3) at ``threads`` threads for two shapes:
    ``head``, the decoder's largest product ([32, 1024] x [1024, 256206], the output projection: a 1 GB
    weight streamed from memory for 32 rows), and ``dense``, a product whose operands stay in cache
    ([512, 1024] x [1024, 1024], repeated: the core's arithmetic rate). Their ratio between thread counts
    says how far this machine's cores add up for the work every engine does; ``*_per_cpu_s`` the same per
    CPU-second (the rate of a core while it runs, less sensitive to other processes than the wall rate)."""
    torch.set_num_threads(threads)
    out = {}
    for name, (m, n, reps) in {"head": (32, 256206, 1), "dense": (512, 1024, 20)}.items():
        a, w = torch.randn(m, 1024), torch.randn(n, 1024)
        torch.nn.functional.linear(a, w)
        best = best_cpu = math.inf
        for _ in range(3):
            t, c = time.perf_counter(), time.process_time()
            for _ in range(reps):
                torch.nn.functional.linear(a, w)
            best, best_cpu = min(best, time.perf_counter() - t), min(best_cpu, time.process_time() - c)
        out[name] = 2 * m * 1024 * n * reps / best / 1e9
        out[f"{name}_per_cpu_s"] = 2 * m * 1024 * n * reps / best_cpu / 1e9
    return out


def uptime() -> str:
    """The load averages (1, 5, 15 minutes), as ``uptime`` prints them."""
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def stage_rows(args) -> Dataset:
    """The ``--rows`` RACE-like rows the stage benchmarks translate (``--stage``, ``--int8-backends``)."""
    return make_data(max(args.passages, math.ceil(args.rows / args.questions)), args.questions).select(range(args.rows))


def stage_bench(args) -> None:
    """``--stage``: the translate stage's work per engine and thread count (see the module docstring)."""
    import cProfile
    import subprocess

    from xlt.translation.engines.ct2 import CT2Translator, cpu_thread_plan

    ds = stage_rows(args)
    corpus = [r["passage"] for r in ds] + [r["question"] for r in ds]
    settings = EngineSettings(device="cpu", precision="fp32")  # the stage's defaults otherwise
    print(f"machine: {os.cpu_count()} CPUs, {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    threads_list = [int(t) for t in args.threads.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        os.environ["XLT_CACHE"] = str(tmp / "xlt_cache")
        tiny = HFSeq2SeqTranslator(str(build_tiny_nllb(tmp / "nllb-tiny", corpus, vocab_size=2000, **SHAPES["tiny"])),
                                   settings)  # its tokenizer is the 600M shape's (the extra entries are never used)
        work = stage_work(tiny, ds)
        rates = {t: gemm_rate(t) for t in threads_list}
        print(f"work of a pass on the 600M shape: {work['source_tokens']} padded source tokens, "
              f"{work['generated_tokens']} generated (padded), {work['gflop']:.0f} GFLOP "
              f"({100 * work['head_share']:.0f}% the output projection)")
        for t, r in rates.items():
            print(f"  {t} thread(s): float32 GEMM {r['head']:.1f} GFLOP/s wall ({r['head_per_cpu_s']:.1f} per CPU-s) at "
                  f"the output projection's shape, {r['dense']:.1f} ({r['dense_per_cpu_s']:.1f}) in cache -> a float32 "
                  f"pass needs >= {work['gflop'] / r['head']:.1f} s / {work['gflop'] / r['dense']:.1f} s of them "
                  f"(load {uptime()})")
        if len(rates) > 1:
            t0, t1 = threads_list[0], threads_list[-1]
            print(f"  {t1} threads vs {t0}: the GEMM rate x{rates[t1]['head'] / rates[t0]['head']:.2f} (head), "
                  f"x{rates[t1]['dense'] / rates[t0]['dense']:.2f} (in cache)")
        if args.work_only:
            return
        path = build_tiny_nllb(tmp / "nllb-600m", corpus, vocab_size=2000, **SHAPES["600m"])
        unique = len({x for r in ds for x in [*segment_passage(r["passage"]).sentences, r["question"], *r["options"]]})
        print(f"{ds.num_rows} RACE-like rows, {unique} unique segments, eng_Latn -> fra_Latn, 600M shape (random), "
              f"batch {settings.batch_size}, max_new_tokens {settings.max_new_tokens} (per batch 2 x longest + 10)")
        hf = HFSeq2SeqTranslator(str(path), settings)
        n = 0
        table: list[tuple[int, str, dict, dict, str]] = []

        def run(tr, threads: int) -> tuple[dict, list]:
            nonlocal n
            n += 1
            torch.set_num_threads(threads)
            load = uptime()
            with TranslationCache(tmp / f"cache{n}") as cache, PeakRSS() as mem:
                t0, c0 = time.perf_counter(), time.process_time()
                res = translate_dataset(ds, tr, cache, "eng_Latn", "fra_Latn", set_language="fra_Latn")
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            return {"wall": wall, "cpu": cpu, "peak": mem.mib, "load": f"{load} -> {uptime()}"}, res.dataset.to_list()

        head = (f"{'threads':>7} {'variant':<44}{'wall s':>8}{'CPU s':>8}{'CPU/wall':>9}{'wall vs hf':>11}"
                f"{'CPU vs hf':>10}{'same rows':>10}{'peak MiB':>9}  load (1/5/15 min) start -> end")

        def line(threads: int, name: str, r: dict, base: dict, same: str) -> str:
            return (f"{threads:>7} {name:<44}{r['wall']:>8.1f}{r['cpu']:>8.1f}{r['cpu'] / r['wall']:>9.2f}"
                    f"{base['wall'] / r['wall']:>10.2f}x{base['cpu'] / r['cpu']:>9.2f}x{same:>10}{r['peak']:>9.0f}"
                    f"  {r['load']}")

        for threads in threads_list:
            torch.set_num_threads(threads)
            hf.translate(["Warm up."], "eng_Latn", "fra_Latn")
            base, ref = run(hf, threads)
            achieved = [("transformers", base)]
            table.append((threads, "transformers (torch threads, float32)", base, base, "(ref)"))
            print(f"\n== {threads} thread(s)\n{head}")
            print(line(*table[-1]), flush=True)
            configs = {}  # (inter, intra) -> label
            for config in args.configs.split(","):
                if config == "default":
                    inter, intra = cpu_thread_plan(threads)
                    label = f"default: inter {inter} x intra {intra}"
                elif config == "intra":
                    inter, intra, label = 1, threads, f"one batch: inter 1 x intra {threads}"
                else:
                    raise SystemExit(f"--configs: default or intra, got {config!r}")
                configs.setdefault((inter, intra), label)
            profiles = []
            for ctype in args.compute_types.split(","):
                for (inter, intra), label in configs.items():
                    tr = CT2Translator(str(path), settings, compute_type=ctype, tokenizer=hf.tokenizer,
                                       intra_threads=intra, inter_threads=inter)
                    tr.translate(["Warm up."], "eng_Latn", "fra_Latn")
                    r, rows = run(tr, threads)
                    same = sum(a == b for a, b in zip(rows, ref, strict=True))
                    name = f"ct2 {ctype} ({label})"
                    achieved.append((name, r))
                    table.append((threads, name, r, base, f"{same}/{len(ref)}"))
                    print(line(*table[-1]), flush=True)
                    if args.profile:
                        prof = cProfile.Profile()
                        torch.set_num_threads(threads)
                        with TranslationCache(tmp / f"prof{n}") as cache:
                            prof.enable()
                            translate_dataset(ds, tr, cache, "eng_Latn", "fra_Latn", set_language="fra_Latn")
                            prof.disable()
                        n += 1
                        profiles.append((name, profile_breakdown(prof)))
                    del tr
                    gc.collect()
            for name, r in achieved:
                print(f"    {name:<44} {work['gflop'] / r['wall']:>6.1f} GFLOP/s wall, "
                      f"{work['gflop'] / r['cpu']:>6.1f} per CPU-s")
            for name, parts in profiles:
                total = parts[-1][1]
                print(f"  profile of {name} (one more pass, {total:.1f} s under cProfile):")
                for label, t in parts[:-1]:
                    print(f"    {label:<62}{t:>8.2f} s {100 * t / total:>5.1f}%")
        print("\n| threads | variant | wall s | CPU s | CPU/wall | wall ÷ transformers | CPU ÷ transformers | rows "
              "identical | load (1/5/15 min) start -> end |\n|---|---|---:|---:|---:|---:|---:|---|---|")
        for threads, name, r, base, same in table:
            print(f"| {threads} | {name} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['cpu'] / r['wall']:.2f} | "
                  f"{base['wall'] / r['wall']:.2f}× | {base['cpu'] / r['cpu']:.2f}× | {same} | {r['load']} |")


# CTranslate2's int8 GEMM backends and weight packing: read from the environment when the library loads, so
# each variant runs in a process of its own (``--int8-backends``).
INT8_BACKENDS = {
    "oneMKL (the default)": {},
    "oneMKL, CT2_PACKED_GEMM=1": {"CT2_PACKED_GEMM": "1"},
    "oneDNN (CT2_USE_MKL=0)": {"CT2_USE_MKL": "0"},
}


def int8_backend_pass(args) -> None:
    """One timed int8 pass of the translate stage in this process (a child of :func:`int8_backends`): prints JSON."""
    import hashlib
    import json

    from transformers import AutoTokenizer

    from xlt.translation.engines.ct2 import CT2Translator

    ds, model = stage_rows(args), args.int8_pass
    settings = EngineSettings(device="cpu", precision="fp32")
    tr = CT2Translator(model, settings, compute_type="int8", tokenizer=AutoTokenizer.from_pretrained(model))
    tr.translate(["Warm up."], "eng_Latn", "fra_Latn")
    with tempfile.TemporaryDirectory() as tmp, TranslationCache(Path(tmp) / "cache") as cache:
        t0, c0 = time.perf_counter(), time.process_time()
        res = translate_dataset(ds, tr, cache, "eng_Latn", "fra_Latn", set_language="fra_Latn")
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    digest = hashlib.sha256(json.dumps(res.dataset.to_list(), sort_keys=True).encode()).hexdigest()[:12]
    print(json.dumps({"wall": wall, "cpu": cpu, "rows": digest, "load": uptime()}))


def int8_backends(args) -> None:
    """``--int8-backends``: CTranslate2 int8 per GEMM backend, one process per pass, the variants interleaved."""
    import json
    import subprocess
    import sys

    ds = stage_rows(args)
    corpus = [r["passage"] for r in ds] + [r["question"] for r in ds]
    print(f"machine: {os.cpu_count()} CPUs, load {uptime()}; int8, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}")
    with tempfile.TemporaryDirectory() as tmp:
        model = str(build_tiny_nllb(Path(tmp) / "nllb-600m", corpus, vocab_size=2000, **SHAPES["600m"]))
        env = {**os.environ, "XLT_CACHE": str(Path(tmp) / "xlt_cache")}  # one conversion, shared by the children
        child = [sys.executable, __file__, "--int8-pass", model, "--rows", str(args.rows),
                 "--passages", str(args.passages), "--questions", str(args.questions)]
        subprocess.run(child, env=env, check=True, capture_output=True)  # converts the model once, untimed
        results: dict[str, list[dict]] = {name: [] for name in INT8_BACKENDS}
        for _ in range(args.repeats):
            for name, extra in INT8_BACKENDS.items():
                out = subprocess.run(child, env={**env, **extra}, check=True, capture_output=True, text=True).stdout
                results[name].append(json.loads(out.strip().splitlines()[-1]))
                r = results[name][-1]
                print(f"  {name:<28} wall {r['wall']:6.1f} s  CPU {r['cpu']:6.1f} s  rows {r['rows']}  "
                      f"load {r['load']}", flush=True)
    digests = {r["rows"] for runs in results.values() for r in runs}
    print("\n| int8 GEMM backend | CPU s (runs) | wall s (runs) |\n|---|---|---|")
    for name, runs in results.items():
        cpu = ", ".join(f"{r['cpu']:.1f}" for r in runs)
        wall = ", ".join(f"{r['wall']:.1f}" for r in runs)
        print(f"| {name} | {cpu} | {wall} |")
    print(f"rows identical across every pass: {len(digests) == 1}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--passages", type=int, default=40)
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=None, help="default: 256 (48 with --engines)")
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--engines", action="store_true", help="compare the engines (see above) instead")
    ap.add_argument("--shapes", default="tiny,600m", help=f"--engines: comma-separated, of {sorted(SHAPES)}")
    ap.add_argument("--segments", type=int, default=48, help="--engines: unique segments translated")
    ap.add_argument("--repeats", type=int, default=2, help="--engines: timed passes per variant (alternating)")
    ap.add_argument("--stage", action="store_true", help="the translate stage per engine and thread count")
    ap.add_argument("--rows", type=int, default=20, help="--stage: RACE-like rows translated")
    ap.add_argument("--threads", default="1,2", help="--stage: comma-separated thread counts")
    ap.add_argument("--compute-types", default="float32,int8", help="--stage: CTranslate2 compute types")
    ap.add_argument("--configs", default="default,intra",
                    help="--stage: CTranslate2 thread configurations, comma-separated: default (xlt's policy, "
                         "cpu_thread_plan), intra (one batch at a time on all the threads)")
    ap.add_argument("--profile", action="store_true", help="--stage: profile one more pass of each ct2 variant")
    ap.add_argument("--work-only", action="store_true",
                    help="--stage: only the arithmetic of a pass and this machine's float32 GEMM rate")
    ap.add_argument("--int8-backends", action="store_true",
                    help="CTranslate2 int8 per GEMM backend (oneMKL packed / oneDNN), a process per pass; "
                         "--repeats passes each, interleaved")
    ap.add_argument("--int8-pass", metavar="MODEL", help=argparse.SUPPRESS)  # a child of --int8-backends
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    if args.int8_pass:
        int8_backend_pass(args)
        return
    if args.int8_backends:
        int8_backends(args)
        return
    if args.stage:
        stage_bench(args)
        return
    if args.max_new_tokens is None:
        args.max_new_tokens = 48 if args.engines else 256
    if args.engines:
        compare_engines(args)
        return

    ds = make_data(args.passages, args.questions)
    n_seg = count_segments(ds)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = [r["passage"] for r in ds] + [r["question"] for r in ds]
        path = build_tiny_nllb(Path(tmp) / "tiny-nllb", corpus, d_model=args.d_model, layers=2)
        tr = HFSeq2SeqTranslator(str(path), EngineSettings(batch_size=args.batch_size,
                                                           max_new_tokens=args.max_new_tokens, device="cpu"))
        tr.translate(["Warm up the model."], "eng_Latn", "fra_Latn")

        t0 = time.perf_counter()
        baseline(ds, tr, "fra_Latn")
        t_base = time.perf_counter() - t0

        with TranslationCache(Path(tmp) / "translation_cache") as cache:
            t0 = time.perf_counter()
            cold = translate_dataset(ds, tr, cache, "eng_Latn", "fra_Latn", set_language="fra_Latn")
            t_xlt = time.perf_counter() - t0
            t0 = time.perf_counter()
            warm = translate_dataset(ds, tr, cache, "eng_Latn", "fra_Latn", set_language="fra_Latn")
            t_warm = time.perf_counter() - t0
    assert warm.dataset.to_list() == cold.dataset.to_list()
    c = cold.stats.counts
    print(f"data: {ds.num_rows} rows, {args.passages} passages, {n_seg} source segments "
          f"({c['segments_unique']} unique); batch {args.batch_size}; model d_model={args.d_model}, 2+2 layers; "
          f"torch threads {torch.get_num_threads()}")
    print(f"{'':<34}{'seconds':>10}{'segments/s':>14}")
    for name, t in (("baseline (per row, unsorted)", t_base), ("xlt (sentences, sorted, cache)", t_xlt),
                    ("xlt warm rerun (cache)", t_warm)):
        print(f"{name:<34}{t:>10.3f}{n_seg / t:>14.1f}")
    print(f"speed-up xlt vs baseline: {t_base / t_xlt:.1f}x (target >= 2x)")
    print(f"speed-up warm rerun vs cold xlt: {t_xlt / t_warm:.1f}x (target >= 50x)")


if __name__ == "__main__":
    main()
