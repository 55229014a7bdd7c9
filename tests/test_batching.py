"""The adaptive batch size: halves on out-of-memory, keeps finished batches, results as unbatched."""

from __future__ import annotations

import pytest
import torch

from xlt.batching import AdaptiveBatcher, is_oom


class FakeDevice:
    """A batched function that runs out of memory for batches above ``limit`` items; records every call."""

    def __init__(self, limit: int, message: str = "CUDA out of memory. Tried to allocate 2.00 GiB"):
        self.limit, self.message, self.calls = limit, message, []

    def __call__(self, chunk: list[int]) -> list[int]:
        self.calls.append(list(chunk))
        if len(chunk) > self.limit:
            raise torch.OutOfMemoryError(self.message)
        return [x * x for x in chunk]


def test_out_of_memory_halves_the_batch_and_keeps_finished_work():
    items = list(range(10))
    device = FakeDevice(limit=3)
    batcher = AdaptiveBatcher(8)
    # The first slice of 8 fails, 4 fails, 2 fits and stays the size for the rest.
    done = []
    out = batcher.map(device, items, on_batch=lambda chunk, res: done.append(list(chunk)))
    assert out == [x * x for x in items]  # the same as one unbatched pass
    assert batcher.batch_size == 2 and batcher.reductions == 2
    assert [len(c) for c in device.calls] == [8, 4, 2, 2, 2, 2, 2]
    # No item was computed twice once it had succeeded.
    finished = [x for chunk in done for x in chunk]
    assert finished == items


def test_oom_after_some_batches_keeps_the_batches_already_done():
    calls = []

    def fn(chunk):
        calls.append(list(chunk))
        if len(calls) == 3:  # the third batch fails once (e.g. the memory got fragmented)
            raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB")
        return [-x for x in chunk]

    batcher = AdaptiveBatcher(4)
    assert batcher.map(fn, list(range(12))) == [-x for x in range(12)]
    assert calls[:2] == [[0, 1, 2, 3], [4, 5, 6, 7]]  # done before the failure, never redone
    assert calls[2:] == [[8, 9, 10, 11], [8, 9], [10, 11]]
    assert batcher.batch_size == 2  # the next call starts at the size that fitted


def test_other_errors_and_oom_at_batch_size_one_are_raised():
    with pytest.raises(ValueError, match="not memory"):
        AdaptiveBatcher(4).map(lambda chunk: (_ for _ in ()).throw(ValueError("not memory")), [1, 2])
    with pytest.raises(torch.OutOfMemoryError):
        AdaptiveBatcher(4).map(FakeDevice(limit=0), [1, 2, 3])
    assert is_oom(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 1 bytes."))
    assert not is_oom(RuntimeError("shape mismatch"))


def test_mc_scorer_survives_out_of_memory_with_the_same_scores(tmp_path):
    """The MC scorer's loop goes through the batcher: a model that fails on big batches gives the same scores."""
    from datasets import Dataset

    from xlt.config.model import ModelConfig
    from xlt.modeling.load import load_model, load_tokenizer
    from xlt.scoring.mc import MCScorer

    cfg = ModelConfig(max_length=32)
    tok = load_tokenizer(cfg)
    model = load_model(cfg, tok, seed=0)
    items = Dataset.from_list([{"passage": f"Anna has {i} apples and {i + 1} pears.", "question": "What has Anna?",
                                "options": ["apples", "pears", "figs", f"{i} plums"], "label": 0} for i in range(9)])
    plain = MCScorer(model, tok, max_length=32, batch_size=16, device="cpu", progress=False).score(items)

    forward = model.forward

    def small_memory(*args, **kwargs):
        if kwargs["input_ids"].shape[0] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB")
        return forward(*args, **kwargs)

    model.forward = small_memory
    scorer = MCScorer(model, tok, max_length=32, batch_size=16, device="cpu", progress=False)
    squeezed = scorer.score(items, benchmark="b", language="l")
    assert scorer.batcher.batch_size == 2
    assert scorer.language_meta("b", "l")["oom_batch_size"] == 2
    torch.testing.assert_close(torch.tensor(squeezed), torch.tensor(plain), rtol=1e-5, atol=1e-6)
