"""Zero-shot transfer after a short English LoRA fine-tune of the real encoder (model=me5_small): every demo
language far above chance, with the pooler the checkpoint lacks trained and saved in the adapter (else the
evaluate stage would score a re-randomised pooler). Settings and thresholds: tests/test_transfer_me5.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_transfer_me5 import check_lora_saved_the_pooler, check_transfer, trained_run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory) -> Path:
    return trained_run(tmp_path_factory, "lora")


def test_english_lora_fine_tuning_transfers_to_every_demo_language(lora_run):
    check_transfer(lora_run, "lora")


def test_lora_saves_the_new_pooler_it_trained(lora_run):
    check_lora_saved_the_pooler(lora_run)
