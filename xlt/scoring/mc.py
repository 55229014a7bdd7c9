"""Score benchmark items with an encoder multiple-choice model (``AutoModelForMultipleChoice``).

Items are tokenized with :func:`xlt.modeling.features.tokenize_mc` (batched, cached; with
``token_type_ids`` where the tokenizer makes them), grouped by their number of options (a batch holds
items of one count, so every item is scored exactly as on its own; the groups with the most tokens come
first), sorted by length within a group (longest first, so an out-of-memory shows up at once) and cut
into batches padded only to the batch's longest sequence
(:class:`~xlt.modeling.features.MCCollator`; to a multiple of 8 on GPU); the batch size halves on
out-of-memory, keeping finished batches (:class:`xlt.batching.AdaptiveBatcher`). The forward passes run
under ``torch.inference_mode()`` with bf16 autocast on GPUs that support it. Scores come back in item
order, ``(n, max options)`` with ``-inf`` in the slots an item does not have;
:meth:`MCScorer.language_meta` counts the items truncated to fit ``max_length``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import numpy as np
import torch
from datasets import Dataset

from xlt.batching import AdaptiveBatcher
from xlt.data.schema import option_counts
from xlt.errors import ConfigError
from xlt.modeling.features import MODEL_INPUTS, MCCollator, tokenize_mc
from xlt.progress import progress_bar
from xlt.scoring.declaration import EVAL_MODEL, ScorerDeclaration, names_run_model


class MCScorer:
    """Multiple-choice head logits as scores."""

    # It scores eval.model; of another model than the run's it reads these keys of the model section (in the
    # evaluate stage's inputs and job hashes then; through the train stage when it is the run's own model).
    declaration = ScorerDeclaration(version=1, scores=EVAL_MODEL,
                                    model_reads=("model.max_length", "model.revision", "model.trust_remote_code"))

    def __init__(self, model: Any, tokenizer: Any, *, max_length: int, batch_size: int = 64,
                 device: str | torch.device | None = None, progress: bool = True):
        self.device = torch.device(device) if device is not None else torch.device(
            "cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.max_length = int(max_length)
        self.batch_size = int(batch_size)
        # Tensor-core friendly lengths on GPU; exact lengths elsewhere (padding only costs time there).
        self.collate = MCCollator(tokenizer, pad_to_multiple_of=8 if self.device.type == "cuda" else None)
        self.batcher = AdaptiveBatcher(self.batch_size, what="MC scoring")
        self.progress = progress
        self._truncated: dict[tuple[str, str], int] = {}

    @classmethod
    def from_config(cls, cfg: Any, run: Any) -> MCScorer:
        """The run's trained model (``eval.model == "run"``), or a local folder / Hub id."""
        from xlt.modeling.load import load_trained  # lazy: start-up time

        source = cfg.eval.model
        own = names_run_model(source)
        if own:
            path = Path(run.model)
            if not path.is_dir():
                raise ConfigError(
                    f"eval.model=run but {path} holds no trained model: run the train stage first, or set "
                    "eval.model=/path/to/model (or a Hub id)"
                )
            source = str(path)
        # What is read of the model section: declaration.model_reads (tests/config/test_hash_coverage.py checks the list).
        model, tokenizer = load_trained(source, trust_remote_code=cfg.model.trust_remote_code,
                                        revision=None if own else cfg.model.revision)
        return cls(model, tokenizer, max_length=cfg.model.max_length, batch_size=cfg.eval.batch_size)

    def _autocast(self) -> contextlib.AbstractContextManager:
        if self.device.type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def score(self, items: Dataset, *, benchmark: str = "", language: str = "") -> np.ndarray:
        n = len(items)
        counts = option_counts(items)
        # -inf in the slots an item does not have; every item's own slots are filled below.
        scores = np.full((n, int(counts.max()) if n else 0), -np.inf, dtype=np.float32)
        self._truncated[(benchmark, language)] = 0
        if n == 0:
            return scores
        feats = tokenize_mc(items, self.tokenizer, self.max_length, desc=f"tokenize {benchmark}/{language}")
        self._truncated[(benchmark, language)] = int(sum(feats["truncated"]))
        inputs = feats.select_columns([c for c in MODEL_INPUTS if c in feats.column_names])
        lengths = np.asarray(feats["length"])
        # One group per option count, heaviest (options x longest sequence) first; longest items first inside.
        groups = [np.flatnonzero(counts == c) for c in np.unique(counts)]
        groups.sort(key=lambda g: -int(counts[g[0]] * lengths[g].max()))
        orders = [g[np.argsort(-lengths[g], kind="stable")].tolist() for g in groups]
        bar = progress_bar(total=n, desc=f"{benchmark}/{language}", unit="q", leave=False, disable=not self.progress)

        def forward(idx: list[int]) -> np.ndarray:
            rows = inputs[idx]
            batch = self.collate([{k: rows[k][i] for k in rows} for i in range(len(idx))])
            return self.model(**{k: v.to(self.device) for k, v in batch.items()}).logits.float().cpu().numpy()

        def done(idx: list[int], logits: np.ndarray) -> None:
            scores[idx, : logits.shape[1]] = logits
            bar.update(len(idx))

        with torch.inference_mode(), self._autocast():
            for order in orders:
                self.batcher.map(forward, order, on_batch=done)
        bar.close()
        return scores

    def language_meta(self, benchmark: str, language: str) -> dict[str, Any]:
        """``truncated``: items with a passage cut to fit ``max_length``; the batch size if it was reduced."""
        meta: dict[str, Any] = {"truncated": self._truncated.get((benchmark, language), 0),
                                "max_length": self.max_length}
        if self.batcher.reductions:
            meta["oom_batch_size"] = self.batcher.batch_size
        return meta
