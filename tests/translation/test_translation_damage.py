"""A damaged merged translation (its record or its Arrow data) is translated again from the segment
cache, with the same result; damaged recorded inputs discard the parts they cannot vouch for."""

from __future__ import annotations

import pytest
from datasets import load_from_disk

from tests.translation.conftest import make_cfg
from xlt.contract import call_stage
from xlt.stages import translate as stage


@pytest.mark.parametrize("what", ["record_garbage", "record_other_shape", "record_deleted", "arrow_deleted"])
def test_a_damaged_merged_translation_is_redone_identically(run, caplog, what):
    call_stage("translate", make_cfg(), run)
    folder = stage.language_dir(run, "fra_Latn")
    before = {s: load_from_disk(str(folder))[s].to_list() for s in ("train", "dev")}
    record = folder / stage.MERGED_FILE
    if what == "record_garbage":
        record.write_bytes(b"\xff\xfe garbage")
    elif what == "record_other_shape":
        record.write_text('{"units": "all"}')
    elif what == "record_deleted":
        record.unlink()
    else:
        next(folder.glob("train/data-*.arrow")).unlink()
    call_stage("translate", make_cfg(), run)
    after = {s: load_from_disk(str(folder))[s].to_list() for s in ("train", "dev")}
    assert after == before
    assert (folder / stage.MERGED_FILE).is_file()
    if what != "record_deleted":
        assert "fra_Latn" in caplog.text and "translated again" in caplog.text
