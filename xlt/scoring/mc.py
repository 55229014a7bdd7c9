"""Score benchmark items with an encoder multiple-choice model (``AutoModelForMultipleChoice``).

Items are tokenized with :func:`xlt.modeling.features.tokenize_mc` (batched, cached), sorted by length
(longest first, so an out-of-memory shows up at once) and cut into batches padded only to the batch's
longest sequence (:class:`~xlt.modeling.features.MCCollator`); the forward passes run under
``torch.inference_mode()`` with bf16 autocast on GPUs that support it. Scores come back in item order.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import numpy as np
import torch
from datasets import Dataset
from tqdm.auto import tqdm

from xlt.data.schema import NUM_OPTIONS
from xlt.errors import ConfigError


class MCScorer:
    """Multiple-choice head logits as scores."""

    def __init__(self, model: Any, tokenizer: Any, *, max_length: int, batch_size: int = 64,
                 device: str | torch.device | None = None, progress: bool = True):
        from xlt.modeling.features import MCCollator

        self.device = torch.device(device) if device is not None else torch.device(
            "cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.max_length = int(max_length)
        self.batch_size = int(batch_size)
        self.collate = MCCollator(tokenizer)
        self.progress = progress

    @classmethod
    def from_config(cls, cfg: Any, run: Any) -> MCScorer:
        """The run's trained model (``eval.model == "run"``), or a local folder / Hub id."""
        from xlt.modeling.load import load_trained

        source = cfg.eval.model
        if source == "run":
            path = Path(run.model)
            if not path.is_dir():
                raise ConfigError(
                    f"eval.model=run but {path} holds no trained model: run the train stage first, or set "
                    "eval.model=/path/to/model (or a Hub id)"
                )
            source = str(path)
        model, tokenizer = load_trained(source, trust_remote_code=cfg.model.trust_remote_code,
                                        revision=cfg.model.revision if cfg.eval.model != "run" else None)
        return cls(model, tokenizer, max_length=cfg.model.max_length, batch_size=cfg.eval.batch_size)

    def _autocast(self) -> contextlib.AbstractContextManager:
        if self.device.type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def score(self, items: Dataset, *, benchmark: str = "", language: str = "") -> np.ndarray:
        from xlt.modeling.features import tokenize_mc

        n = len(items)
        scores = np.zeros((n, NUM_OPTIONS), dtype=np.float32)
        if n == 0:
            return scores
        feats = tokenize_mc(items, self.tokenizer, self.max_length, desc=f"tokenize {benchmark}/{language}")
        order = np.argsort(-np.asarray(feats["length"]), kind="stable")
        batches = [order[i : i + self.batch_size] for i in range(0, n, self.batch_size)]
        with torch.inference_mode(), self._autocast():
            for idx in tqdm(batches, desc=f"{benchmark}/{language}", unit="batch", leave=False,
                            disable=not self.progress):
                rows = feats.select_columns(["input_ids"])[idx.tolist()]["input_ids"]
                batch = self.collate([{"input_ids": r} for r in rows])
                logits = self.model(input_ids=batch["input_ids"].to(self.device),
                                    attention_mask=batch["attention_mask"].to(self.device)).logits
                scores[idx] = logits.float().cpu().numpy()
        return scores
