"""Peak memory and time of the tokenizer measures on one huge text, for every tokenizer xlt ships (issue 55).

Each variant is a fresh process whose peak resident set size (``ru_maxrss`` of the finished child, from
``os.wait4``) and wall / CPU time are read; the measures of a git revision (``--before-rev``, default
``main``; ``ee454d0`` is the commit before issue 55: its ``xlt/scoring/tokenizer_measures.py`` read with ``git show``
and put in place of this tree's in the child) against this tree's ("after"):

* **evaluation** (``--eval``): ``python -m xlt.train +recipe=demo_tiny stages=[evaluate]`` on the demo's
  Belebele whose first English passage is replaced by ``--mb`` MB of prose (a corrupted export), the tiny
  model fine-tuned once beforehand (``stages=[build_data,train]``, not timed): measures off
  (``benchmark_measures`` patched out), before and after with a cold measures cache, and each again with
  the cache the cold run left (warm);
* **the measures alone** (``--tokenizers``, default every shipped one: ``tiny`` (NFKC, Metaspace +
  Punctuation, BPE), ``minilm`` (all-MiniLM-L6-v2: BERT's normalizer, WordPiece), ``e5``
  (multilingual-e5-small: XLM-R's Precompiled normalizer, Unigram), ``gemma`` (Gemma 3 270M: Replace,
  BPE over the whole text)): ``language_counts`` of one item with a ``--mb`` MB passage, before and after;
  peak RSS, its rise over the loaded tokenizer, counting time and the counts (which must be equal).

A variant whose resident memory passes ``--cap-gb`` is killed (shown as ``> cap``). Run:

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python benchmarks/tokenizer_memory_bench.py --mb 20 --before-rev ee454d0 [--cap-gb 9]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory_bench import ASSETS, CHILD_HEAD, ENV, REPO, prose, run_capped  # noqa: E402

# The child of a variant: argv = variant (none | before | after), the old module's path, the measures'
# cache folder, then the job (evaluate: xlt.train's arguments; alone: <mb> <tokenizer>).
CHILD = CHILD_HEAD + r"""
from tokenizer_memory_bench import load_tokenizer
from memory_bench import prose
tok = load_tokenizer(rest[1])
item = {"id": "0", "question": "Which?", "options": ["a", "b"], "passage": prose(float(rest[0]))}
loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t, c = time.perf_counter(), time.process_time()
counts = tm.language_counts(tok, [item], "eng_Latn")
print(json.dumps({"loaded": loaded, "wall": time.perf_counter() - t, "cpu": time.process_time() - c,
                  **{k: counts[k] for k in ("tokens", "unknown", "words", "continued")},
                  "estimated": counts.get("estimated", "")}))
"""
TOKENIZERS = ("tiny", "minilm", "e5", "gemma")


def load_tokenizer(name: str):
    """One of the tokenizers xlt ships or converts, by its short name (:data:`TOKENIZERS`)."""
    from transformers import AutoTokenizer

    if name == "tiny":
        from xlt.modeling.tiny import tiny_tokenizer

        return tiny_tokenizer()
    if name == "minilm":
        sys.path.insert(0, str(REPO))
        from tests.pretrained import minilm_dir

        return AutoTokenizer.from_pretrained(minilm_dir())
    if name == "e5":
        from xlt.modeling.packaged import checkpoint_dir

        return AutoTokenizer.from_pretrained(checkpoint_dir())
    if name == "gemma":
        from xlt.modeling.packaged_llm import checkpoint_dir as gemma_dir

        return AutoTokenizer.from_pretrained(gemma_dir())
    raise SystemExit(f"unknown tokenizer {name!r}: one of {', '.join(TOKENIZERS)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=20.0, help="size of the huge passage in MB")
    parser.add_argument("--before-rev", default="main", help="the git revision whose measures are 'before'")
    parser.add_argument("--cap-gb", type=float, default=9.0, help="kill a variant past this resident memory")
    parser.add_argument("--eval", default="none,before,after", help="evaluation variants ('' for none)")
    parser.add_argument("--tokenizers", default=",".join(TOKENIZERS), help="measures-alone tokenizers ('' for none)")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} CPUs", flush=True)
    rows: list[tuple[str, float, float, float, float, dict]] = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        old = tmp / "tokenizer_measures_before.py"
        old.write_text(subprocess.run(["git", "show", f"{args.before_rev}:xlt/scoring/tokenizer_measures.py"],
                                      cwd=REPO, check=True, capture_output=True, text=True).stdout)

        def variant(name: str, kind: str, cache: Path, job: list[str]) -> dict:
            load = os.getloadavg()[0]
            peak, wall, cpu, out = run_capped([kind, str(old), str(cache), *job], args.cap_gb, CHILD)
            info = json.loads(out.strip().splitlines()[-1]) if job[0] != "evaluate" and peak > 0 else {}
            rows.append((name, peak, wall, cpu, load, info))
            print(f"  done: {name}: peak {peak:.0f} MB, {wall:.1f} s", flush=True)
            return info

        kinds = [k for k in args.eval.split(",") if k]
        if kinds:
            bele = tmp / "belebele"
            shutil.copytree(ASSETS / "belebele", bele)
            eng = bele / "data" / "eng_Latn.jsonl"
            lines = eng.read_text().splitlines()
            item = json.loads(lines[0])
            item["flores_passage"] = prose(args.mb)  # the first English passage replaced
            eng.write_text("\n".join([json.dumps(item, ensure_ascii=False), *lines[1:]]) + "\n")
            trained = tmp / "trained"
            subprocess.run([sys.executable, "-m", "xlt.train", "+recipe=demo_tiny", "stages=[build_data,train]",
                            f"run_root={trained}"], cwd=REPO, env=ENV, check=True, capture_output=True)
            model = next(trained.rglob("model.safetensors")).parent
            for kind in kinds:
                for temp in ("cold", "warm") if kind != "none" else ("-",):
                    ev = ["evaluate", "+recipe=demo_tiny", "stages=[evaluate]", f"eval.model={model}",
                          f"eval.benchmarks.belebele.path={bele}", f"run_root={tmp / f'runs-{kind}-{temp}'}"]
                    label = f"evaluate demo_tiny, {args.mb:g} MB passage, measures {kind}"
                    variant(f"{label} ({temp} cache)" if kind != "none" else label, kind, tmp / f"cache-{kind}", ev)
        for name in [t for t in args.tokenizers.split(",") if t]:
            got = {kind: variant(f"measures alone, {name}, {args.mb:g} MB item: {kind}", kind,
                                 tmp / f"cache-{name}-{kind}", ["alone", str(args.mb), name])
                   for kind in ("before", "after")}
            if all(got.values()):
                same = all(got["before"][k] == got["after"][k] for k in ("tokens", "unknown", "words", "continued"))
                print(f"  {name}: counts {'identical' if same else 'DIFFER'} before / after: "
                      f"{ {k: (got['before'][k], got['after'][k]) for k in ('tokens', 'words', 'continued')} }",
                      flush=True)
    print(f"{'variant':<72} {'peak RSS MB':>11} {'wall s':>8} {'CPU s':>8} {'load':>5}  measures")
    for name, peak, wall, cpu, load, info in rows:
        shown = f"> {args.cap_gb * 1024:.0f} (killed)" if peak < 0 else f"{peak:.0f}"
        extra = (f"tokenizer loaded {info['loaded']:.0f} MB, counting {info['wall']:.1f} s wall "
                 f"{info['cpu']:.1f} s CPU, tokens {info['tokens']}, words {info['words']}, continued "
                 f"{info['continued']}{', estimated: ' + info['estimated'] if info.get('estimated') else ''}"
                 if info else "")
        print(f"{name:<72} {shown:>11} {wall:>8.1f} {cpu:>8.1f} {load:>5.1f}  {extra}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
