"""`python -m xlt.prefetch +recipe=<name> [overrides]`: fill the HF cache with what a run needs.

Run it on a machine with network access (a login node); the jobs then run on offline compute nodes with
``HF_HUB_OFFLINE=1``. Forms::

    python -m xlt.prefetch +recipe=xlmr_zeroshot                  # one recipe (+ any overrides)
    python -m xlt.prefetch --recipes xlmr_zeroshot,xlmv_zeroshot  # several recipes
    python -m xlt.prefetch --sweep sweeps/paper.txt               # every run of a sweep file
    ... --dry-run     list the resources (resolved from the configs, no network) and stop
    ... --check       offline: report what is NOT in the cache yet (sets HF_HUB_OFFLINE=1)

Models and tokenizers are fetched with ``huggingface_hub.snapshot_download`` (config, tokenizer and
safetensors weights; ``pytorch_model*.bin`` only when a repository has no safetensors, read offline with
torch's ``weights_only=True`` loader: :mod:`xlt.weights`); each model's line names the weights file the
offline run loads. Datasets are fetched through
xlt's own loaders (the same ``load_dataset`` calls the stages make), which fill the Hub cache and the
``datasets`` Arrow cache that offline runs read; URLs go through ``datasets``' ``cached_path``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from xlt.cluster.sweeps import read_sweep
from xlt.config.compose import compose
from xlt.errors import XltError, print_error
from xlt.hub import prefetch_hint  # noqa: F401  (re-exported: the hint is part of prefetch's interface)
from xlt.resources import Resource, merge, resources_for
from xlt.weights import BASE_PATTERNS, SAFETENSORS_PATTERNS, describe, snapshot, weights_file

# Files of a model repository that loading a model and its tokenizer needs (xlt.weights: the weights the
# loaders read, safetensors or else the pickle).
MODEL_PATTERNS = BASE_PATTERNS + SAFETENSORS_PATTERNS


@dataclass
class Planned:
    """A run to prefetch for: its command-line form, validated config and resources."""

    args: list[str]
    cfg: Any
    resources: list[Resource]

    @property
    def command(self) -> str:
        return shlex.join(self.args)


def plan(runs: Sequence[Sequence[str]]) -> list[Planned]:
    """Compose every run (a list of overrides with ``+recipe=``) and list its resources."""
    out = []
    for args in runs:
        cfg = compose(None, list(args))
        out.append(Planned(list(args), cfg, resources_for(cfg)))
    return out


def runs_from_args(ns: argparse.Namespace) -> list[list[str]]:
    """The runs named on the command line. Plain overrides apply to every ``--recipes``/``--sweep`` run;
    a ``+recipe=`` among them is a run of its own."""
    common = [o for o in ns.overrides if not o.startswith("+recipe=")]
    runs: list[list[str]] = []
    if any(o.startswith("+recipe=") for o in ns.overrides) or not (ns.recipes or ns.sweep):
        runs.append(list(ns.overrides))
    runs.extend([f"+recipe={name.strip()}", *common] for name in (ns.recipes or "").split(",") if name.strip())
    if ns.sweep:
        runs.extend([*line, *common] for line in read_sweep(ns.sweep))
    if not runs or runs == [[]]:
        raise XltError("nothing to prefetch: give +recipe=<name> [overrides], --recipes a,b or --sweep FILE")
    return runs


# -- fetching ---------------------------------------------------------------------------------------


def fetch_model(res: Resource, local_only: bool = False) -> str:
    """Snapshot a model/tokenizer repository into the HF cache; return its local folder. A model's weights
    are the ones the offline run will load (:func:`xlt.weights.snapshot`)."""
    if res.kind == "model":
        return snapshot(res.repo_id, res.revision, local_only=local_only)
    from huggingface_hub import snapshot_download

    return snapshot_download(res.repo_id, revision=res.revision, allow_patterns=BASE_PATTERNS,
                             local_files_only=local_only)


def _source_for(cfg: Any, key: str) -> Any:
    from xlt.data.sources import SOURCES  # lazy: start-up time

    name = key.split(".")[-1]
    return SOURCES[name](cfg.data.sources[name])


def fetch_dataset(cfg: Any, res: Resource, key: str, done: set[tuple[Any, ...]], report: Callable[[str], None]) -> None:
    """Load every (config, split) of ``res`` through the loader the stage uses (filling the caches)."""
    if key.startswith("data.sources."):
        source = _source_for(cfg, key)
        for split in res.splits:
            tag = ("source", key, res.repo_id, source.cfg.revision, source.cfg.config_name, split)
            if tag in done:
                continue
            next(iter(source.rows(split)), None)  # loads (downloads) the whole split
            done.add(tag)
            report(f"  fetched {key} [{split}]")
        return
    from xlt.data.benchmarks import get_benchmark  # lazy: start-up time

    name = key.split(".")[-1]
    bcfg = cfg.eval.benchmarks[name]
    bench = get_benchmark(bcfg.kind)
    languages = list(res.configs) or bench.languages(bcfg)
    for split in res.splits:
        for lang in languages:
            tag = ("benchmark", res.repo_id, bcfg.revision, lang, split)
            if tag in done:
                continue
            bench.load(bcfg, lang, split=split)
            done.add(tag)
        report(f"  fetched {res.repo_id} [{split}] {len(languages)} language(s)")


def fetch_url(res: Resource) -> str:
    from datasets.utils.file_utils import cached_path

    return str(cached_path(res.repo_id))


def fetch_all(planned: list[Planned], report: Callable[[str], None] = print) -> list[Resource]:
    """Download everything the planned runs need; return the resources fetched (deduplicated)."""
    done: set[tuple[Any, ...]] = set()
    fetched: list[Resource] = []
    for p in planned:
        for res in p.resources:
            if res.kind in ("model", "tokenizer"):
                tag = (res.kind, res.repo_id, res.revision)
                if tag not in done:
                    folder = fetch_model(res)
                    done.add(tag)
                    weights = f" (offline runs load {describe(weights_file(folder))})" if res.kind == "model" else ""
                    report(f"  fetched {res.describe()} -> {folder}{weights}")
            elif res.kind == "url":
                tag = ("url", res.repo_id)
                if tag not in done:
                    report(f"  fetched {res.repo_id} -> {fetch_url(res)}")
                    done.add(tag)
            else:
                for key in res.used_by:
                    fetch_dataset(p.cfg, res, key, done, report)
            fetched.append(res)
    return merge(fetched)


# -- offline check ----------------------------------------------------------------------------------


def check_offline(planned: list[Planned]) -> list[tuple[list[str], Resource, str]]:
    """Try every load offline; return one ``(commands needing it, resource, error)`` per distinct missing
    resource (a sweep of many runs sharing a model lists that model once, with every run that needs it).

    A resource is tried once per distinct request (kind, repository, revision, data_dir, configs, splits).
    """
    tried: dict[tuple[Any, ...], str | None] = {}  # request -> error (None: available offline)
    missing: dict[tuple[Any, ...], tuple[list[str], list[Resource], str]] = {}
    for p in planned:
        for res in p.resources:
            request = (*res.key, res.configs, res.splits, res.used_by)
            if request not in tried:
                tried[request] = _try_offline(p, res)
            err = tried[request]
            if err is None:
                continue
            commands, resources, _ = missing.setdefault(res.key, ([], [], err))
            if p.command not in commands:
                commands.append(p.command)
            resources.append(res)
    return [(commands, merge(resources)[0], err) for commands, resources, err in missing.values()]


def _try_offline(p: Planned, res: Resource) -> str | None:
    """None when ``res`` loads offline for run ``p``, else the first line of the error."""
    try:
        if res.kind in ("model", "tokenizer"):
            fetch_model(res, local_only=True)
        elif res.kind == "url":
            fetch_url(res)
        else:
            for key in res.used_by:
                if key.startswith("eval.benchmarks."):
                    # Also the language listing the evaluate stage does when no languages are set.
                    from xlt.data.benchmarks import get_benchmark  # lazy: start-up time

                    bcfg = p.cfg.eval.benchmarks[key.split(".")[-1]]
                    get_benchmark(bcfg.kind).select_languages(bcfg)
                fetch_dataset(p.cfg, res, key, set(), lambda _msg: None)
    except Exception as err:  # any failure means "not usable offline"
        return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return None


# -- command line -------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m xlt.prefetch", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("overrides", nargs="*", help="+recipe=<name> and key=value overrides (as for xlt.train)")
    parser.add_argument("--recipes", help="comma-separated recipe names (the overrides apply to each)")
    parser.add_argument("--sweep", help="sweep file: one run (+recipe=... overrides) per line")
    parser.add_argument("--dry-run", action="store_true", help="list the resources; download nothing")
    parser.add_argument("--check", action="store_true", help="offline: list what is missing from the cache")
    return parser.parse_args(list(argv))


def print_plan(planned: list[Planned]) -> list[Resource]:
    for p in planned:
        print(f"{p.command}: {len(p.resources)} resource(s)")
    everything = merge(r for p in planned for r in p.resources)
    print(f"\n{len(everything)} distinct resource(s):")
    for res in everything:
        print(f"  {res.describe()}   <- {', '.join(res.used_by)}")
    return everything


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ns = parse_args(argv)
    if ns.check:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["HF_DATASETS_OFFLINE"] = "1"
    try:
        planned = plan(runs_from_args(ns))
        everything = print_plan(planned)
        if ns.dry_run or not everything:
            if not everything:
                print("nothing to download: every resource is local or built offline.")
            return 0
        if ns.check:
            missing = check_offline(planned)
            if not missing:
                print("\nall resources are available offline.")
                return 0
            cmds = sorted({c for commands, _, _ in missing for c in commands})
            print(f"\n{len(missing)} distinct resource(s) missing offline, needed by {len(cmds)} run(s):")
            for commands, res, err in missing:
                needed = commands[0] if len(commands) == 1 else f"{len(commands)} runs, e.g. {commands[0]}"
                print(f"  {res.describe()}  (needed by {needed})\n      {err}")
            print("\nfetch them on a machine with network access:\n" + "\n".join(f"  python -m xlt.prefetch {c}" for c in cmds))
            return 1
        print("\ndownloading ...")
        fetch_all(planned)
        print("\ndone: run the jobs with HF_HUB_OFFLINE=1.")
        return 0
    except XltError as err:
        return print_error(err)


if __name__ == "__main__":
    sys.exit(main())
