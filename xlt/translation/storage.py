"""Saving datasets so that they load back, including empty ones.

``datasets`` 5 writes an empty dataset as zero shards, which ``load_from_disk`` then fails to read
(IndexError in concat_tables). Empty datasets and splits are therefore written as one (empty) shard.
"""

from __future__ import annotations

from pathlib import Path

from datasets import Dataset, DatasetDict


def save_dataset(ds: Dataset | DatasetDict, path: str | Path) -> None:
    """``ds.save_to_disk(path)``, forcing one shard for empty datasets/splits."""
    if isinstance(ds, DatasetDict):
        shards = {k: 1 for k, d in ds.items() if d.num_rows == 0}
        ds.save_to_disk(str(path), num_shards=shards or None)
    else:
        ds.save_to_disk(str(path), num_shards=1 if ds.num_rows == 0 else None)
