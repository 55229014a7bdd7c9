"""Test-wide settings: never touch the network, never log to W&B, one thread per process."""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["WANDB_MODE"] = "disabled"
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")


def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` are skipped, saying so, where no CUDA device is visible."""
    gpu = [item for item in items if item.get_closest_marker("gpu")]
    if gpu:
        import torch

        if not torch.cuda.is_available():
            skip = pytest.mark.skip(reason="GPU check: no CUDA device here (run benchmarks/gpu_check.sh on a GPU)")
            for item in gpu:
                item.add_marker(skip)
