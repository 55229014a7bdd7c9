"""The Belebele paper's few-shot protocol for causal LLMs (``eval.llm.protocol=paper``).

Bandarkar et al. (2024) evaluate LLMs "with five-shot in-context learning using examples from the English
training set" and report the average over three runs; the facebookresearch/belebele README gives the
template ``P: <passage> \\n Q: <question> \\n A: <mc answer 1> \\n B: ... \\n D: <mc answer 4> \\n Answer:
<Correct answer letter>`` and picks the letter of highest probability. Here:

* **template** (:func:`prompt`): ``P: {passage}\\nQ: {question}\\nA: {option 1}\\n...\\nAnswer:`` for the
  examples and the question alike, the answer scored as ``" " + letter``; examples are separated by a
  blank line, as lm-evaluation-harness does (the README does not say). The question is stripped and the
  passage kept as it is, as the harness's Belebele task does, so what differs from ``protocol=harness`` is
  where the examples come from and the averaging over draws, not the characters around them.
* **examples**: the ``train`` split of the English training set the ``build_data`` stage makes (never the
  benchmark's test split, never its ``dev`` split): the run's own (``run/data/train_set``) or the one
  ``eval.llm.fewshot_source`` names (a run directory or a training-set folder) (:func:`train_set_dir`).
* **draws**: draw ``d`` takes ``num_fewshot`` rows at random with seed ``fewshot_seed + d``
  (:func:`draw_seeds`, :func:`draw_rows`), the same rows for every question and every language of the
  draw (one prompt prefix per run, so languages compare on the same examples); ``fewshot_draws`` draws
  (default 3) are scored, and a language's accuracy is the mean of the draws' accuracies, with their
  spread (:func:`xlt.metrics.spread`) in its result (:mod:`xlt.stages.evaluate`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from xlt.data.schema import LETTERS
from xlt.errors import ConfigError, DataError
from xlt.run.layout import RunDir
from xlt.run.state import Damaged, data_fingerprint, load_dataset_dir

# The split of the training set the examples come from.
POOL_SPLIT = "train"
# Benchmark kinds the protocol is defined for.
KINDS = ("belebele",)

# One question's k-shot prompt: [(example prompt, gold letter)] and the question's own prompt
# (:data:`xlt.scoring.llm.prompts.Turns`).
Turns = tuple[list[tuple[str, str]], str]


def prompt(rec: Mapping[str, Any]) -> str:
    """The paper's template over one record (``passage``, ``question``, ``options``), without the answer."""
    options = "\n".join(f"{LETTERS[i]}: {o}" for i, o in enumerate(rec["options"]))
    return f"P: {rec['passage'] or ''}\nQ: {(rec['question'] or '').strip()}\n{options}\nAnswer:"


def target(rec: Mapping[str, Any]) -> str:
    """The gold answer letter of a record."""
    return LETTERS[int(rec["label"])]


def draw_seeds(seed: int, draws: int) -> list[int]:
    """The seeds of ``draws`` draws: ``seed``, ``seed + 1``, ..."""
    return [int(seed) + d for d in range(int(draws))]


def draw_rows(pool_size: int, k: int, seed: int) -> list[int]:
    """The ``k`` row indices of one draw from a pool of ``pool_size`` rows (seeded, without replacement)."""
    if pool_size < k:
        raise DataError(
            f"the training set's {POOL_SPLIT} split has {pool_size} rows; eval.llm.num_fewshot={k} "
            "examples are needed per draw"
        )
    return random.Random(seed).sample(range(pool_size), k)


def turns(examples: Sequence[Mapping[str, Any]], items: Any) -> list[Turns]:
    """The k-shot prompt of every row of ``items``: the draw's ``examples`` then the question."""
    shots = [(prompt(ex), target(ex)) for ex in examples]
    return [(shots, prompt(rec)) for rec in items]


def train_set_dir(source: str | None, run: RunDir | None) -> Path | None:
    """The training-set folder the examples come from (None where there is none yet): ``source`` (a run
    directory, or a training-set folder) or, without one, the run's own ``build_data`` output."""
    if source:
        path = Path(str(source)).expanduser()
        own = RunDir(path).train_set
        return own if own.is_dir() else path if path.is_dir() else None
    if run is None:
        return None
    return run.train_set if run.train_set.is_dir() else None


def train_set_fingerprint(source: str | None, run: RunDir | None) -> str | None:
    """The content fingerprint of the training set the examples come from (None: there is none yet)."""
    folder = train_set_dir(source, run)
    return data_fingerprint(folder) if folder is not None else None


def no_train_set_message(source: str | None, run: RunDir | None) -> str:
    """Why there is no training set to draw from, and how to get one."""
    how = (
        "run the build_data stage first (e.g. add it to stages: stages=[build_data,evaluate,report], with "
        "data=demo for the bundled samples or data=six_sources for the paper's set), or name a built one: "
        "eval.llm.fewshot_source=<run directory or its data/train_set folder>"
    )
    if source:
        return f"eval.llm.fewshot_source={source}: no training set there (neither a run directory with one nor a training-set folder); {how}"
    where = f" at {run.train_set}" if run is not None else ""
    return (
        f"eval.llm.protocol=paper draws its few-shot examples from the English training set the build_data "
        f"stage makes, and this run has none{where}; {how}"
    )


def load_pool(source: str | None, run: RunDir | None) -> tuple[Any, Path]:
    """The ``train`` split of the training set (and its folder); a clear :class:`ConfigError` where there is
    none, a :class:`DataError` where it is damaged or has no ``train`` split."""
    folder = train_set_dir(source, run)
    if folder is None:
        raise ConfigError(no_train_set_message(source, run))
    try:
        dsd = load_dataset_dir(folder)
    except Damaged as err:
        raise DataError(
            f"{err}; rebuild it (the build_data stage) or name another with eval.llm.fewshot_source"
        ) from None
    if POOL_SPLIT not in getattr(dsd, "keys", lambda: ())():
        raise DataError(
            f"{folder}: a training set without a '{POOL_SPLIT}' split; name a folder build_data wrote "
            "(run/data/train_set) with eval.llm.fewshot_source"
        )
    return dsd[POOL_SPLIT], folder


def example_id(rec: Mapping[str, Any]) -> str:
    """How a drawn example is named in the records: its source dataset and question id."""
    return f"{rec.get('dataset', '')}:{rec.get('question_id', '')}"
