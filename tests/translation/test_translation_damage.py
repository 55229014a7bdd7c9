"""A damaged merged translation (its record or its Arrow data) is translated again from the segment
cache, with the same result; damaged recorded inputs discard the parts they cannot vouch for."""

from __future__ import annotations

import pytest
from datasets import load_from_disk

from tests.translation.conftest import make_cfg
from xlt.stages import call_stage
from xlt.stages import translate as stage


@pytest.mark.parametrize("what", ["record_garbage", "record_other_shape", "record_deleted", "arrow_deleted",
                                  "arrow_truncated"])
def test_a_damaged_merged_translation_is_redone_identically(run, caplog, what):
    call_stage("translate", make_cfg(), run)
    folder = run.translated_language("fra_Latn")
    before = {s: load_from_disk(str(folder))[s].to_list() for s in ("train", "dev")}
    record = folder / stage.MERGED_FILE
    if what == "record_garbage":
        record.write_bytes(b"\xff\xfe garbage")
    elif what == "record_other_shape":
        record.write_text('{"units": "all"}')
    elif what == "record_deleted":
        record.unlink()
    elif what == "arrow_truncated":  # a truncated Arrow stream still reads, short: only the seal shows it
        arrow = next(folder.glob("train/data-*.arrow"))
        arrow.write_bytes(arrow.read_bytes()[: arrow.stat().st_size // 2])
    else:
        next(folder.glob("train/data-*.arrow")).unlink()
    call_stage("translate", make_cfg(), run)
    after = {s: load_from_disk(str(folder))[s].to_list() for s in ("train", "dev")}
    assert after == before
    assert (folder / stage.MERGED_FILE).is_file()
    if what != "record_deleted":
        assert "fra_Latn" in caplog.text and "translated again" in caplog.text


def test_the_union_reads_only_sealed_translations(run):
    """Training reads each language through its seal: a translation changed after the translate stage is a
    clear error naming the folder and the fix, not a silently shorter training set."""
    from xlt.errors import DataError
    from xlt.translation.union import build_train_all

    def _union(cfg, run):
        return build_train_all(cfg.translate, run, seed=cfg.data.seed, stages=cfg.stages)

    cfg = make_cfg()
    call_stage("translate", cfg, run)
    assert _union(cfg, run)["train"].num_rows > 0
    arrow = next(run.translated_language("fra_Latn").glob("train/data-*.arrow"))
    arrow.write_bytes(arrow.read_bytes()[: arrow.stat().st_size // 2])
    with pytest.raises(DataError, match=r"fra_Latn: its data changed since it was written.*rerun the translate stage"):
        _union(cfg, run)


def test_a_damaged_part_is_translated_again(run, caplog):
    cfg = make_cfg()
    source = stage.load_train_set(run)
    unit = stage.plan_units({s: source[s].num_rows for s in stage.SPLITS}, ["fra_Latn"], 5000)[0]
    from xlt.translation.cache import TranslationCache
    from xlt.translation.engines import build_translator

    with TranslationCache(run.translation_cache(cfg.translate.cache_dir)) as cache:
        stage.translate_unit(cfg, run, unit, source, build_translator(cfg.translate), cache)
    assert stage.is_part_done(run, unit)
    arrow = next(stage.part_dir(run, unit).glob("data-*.arrow"))
    arrow.write_bytes(arrow.read_bytes()[:-8])
    assert not stage.is_part_done(run, unit)
    assert "translated again" in caplog.text and not stage.part_dir(run, unit).exists()
