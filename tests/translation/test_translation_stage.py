"""The translate stage end to end with the deterministic echo translator."""

from __future__ import annotations

import json

import pytest
from datasets import load_from_disk

from tests.translation.conftest import make_cfg, make_run
from xlt.data.schema import TRANSLATED_FEATURES
from xlt.errors import ConfigError, DataError
from xlt.stages import call_stage
from xlt.stages import translate as stage
from xlt.translation.cache import TranslationCache
from xlt.translation.engines.base import EchoTranslator


class CountingEcho(EchoTranslator):
    """Echo that counts the segments it translates, and can fail after ``fail_after`` batches."""

    def __init__(self, fail_after: int | None = None, **kw):
        super().__init__(**kw)
        self.translated = 0
        self.fail_after = fail_after
        self.calls = 0
        self.targets = set()

    def _generate(self, texts, src_lang, tgt_lang):
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise KeyboardInterrupt("simulated kill")
        self.calls += 1
        self.targets.add(tgt_lang)
        self.translated += len(texts)
        return super()._generate(texts, src_lang, tgt_lang)


@pytest.fixture
def counting(monkeypatch):
    holder = {}

    def install(fail_after=None):
        tr = CountingEcho(fail_after=fail_after, batch_size=4)
        holder["t"] = tr
        monkeypatch.setattr(stage, "build_translator", lambda tcfg: tr)
        return tr

    return install


def test_stage_writes_translated_languages_and_report(run):
    cfg = make_cfg()
    summary = call_stage("translate", cfg, run)
    assert summary["languages"] == ["fra_Latn", "deu_Latn"]
    for lang in ("fra_Latn", "deu_Latn"):
        dd = load_from_disk(str(run.translated_language(lang)))
        assert set(dd) == {"train", "dev"}
        assert dd["train"].features == TRANSLATED_FEATURES
        assert dd["train"].num_rows == 14 and dd["dev"].num_rows == 5
        row = dd["train"][0]
        assert row["language"] == lang
        assert row["question"] == f"[{lang}] What is true about item 0?"
        assert row["options"][2] == f"[{lang}] None of the above"
        # Passage translated sentence by sentence; the paragraph break is kept.
        assert row["passage"] == (
            f"[{lang}] Tom went to the market. [{lang}] He bought three apples!\n\n"
            f"[{lang}] Then he walked home. [{lang}] It was late."
        )
        assert row["label"] == 0 and row["question_id"] == "train-q0"
        assert dd["train"]["question_id"] == [f"train-q{i}" for i in range(14)]
    report = json.loads((run.data / "translation_report.json").read_text())
    fra = report["languages"]["fra_Latn"]
    assert fra["rows"]["train"] == {"in": 14, "out": 14}
    # Shared passages and the repeated option are translated once per unit, not once per row.
    assert fra["counts"]["segments_unique"] < fra["counts"]["segments_total"]
    assert "| fra_Latn |" in (run.data / "translation_report.md").read_text()


def test_rerun_uses_cache_and_only_translates_missing(run, counting):
    cfg = make_cfg()
    first = counting()
    call_stage("translate", cfg, run)
    assert first.translated > 0
    # Remove the finished parts: the rerun must find every segment in the cache.
    import shutil

    shutil.rmtree(run.translated)
    second = counting()
    call_stage("translate", cfg, run)
    assert second.translated == 0
    report = json.loads((run.data / "translation_report.json").read_text())
    counts = report["languages"]["deu_Latn"]["counts"]
    assert counts["segments_translated"] == 0 and counts["segments_cached"] == counts["segments_unique"]


def test_identical_segments_across_units_translated_once(run, counting):
    tr = counting()
    call_stage("translate", make_cfg(languages=["fra_Latn"]), run)
    with TranslationCache(run.translation_cache(make_cfg().translate.cache_dir)) as cache:
        # Every unique text was translated exactly once: translated count == cache size.
        assert tr.translated == len(cache)


def test_resume_after_kill_loses_at_most_one_batch(run, counting):
    cfg = make_cfg(languages=["fra_Latn"])
    full = counting()
    ref_run = make_run(run.path.parent / "ref")
    call_stage("translate", cfg, ref_run)
    total = full.translated

    killed = counting(fail_after=3)
    with pytest.raises(KeyboardInterrupt):
        call_stage("translate", cfg, run)
    assert killed.translated > 0
    with TranslationCache(run.translation_cache(cfg.translate.cache_dir)) as cache:
        assert len(cache) == killed.translated  # every finished batch was committed
    resumed = counting()
    summary = call_stage("translate", cfg, run)
    assert summary is not None
    assert resumed.translated == total - killed.translated
    ref = load_from_disk(str(ref_run.translated_language("fra_Latn")))
    got = load_from_disk(str(run.translated_language("fra_Latn")))
    for split in ("train", "dev"):
        assert got[split].to_list() == ref[split].to_list()


def test_shards_then_merge_equal_one_run(tmp_path):
    cfg_one = make_cfg()
    one = make_run(tmp_path / "one")
    call_stage("translate", cfg_one, one)

    sharded = make_run(tmp_path / "sharded")
    results = [call_stage("translate", make_cfg(shard_index=i, num_shards=3), sharded) for i in (2, 0)]
    assert results == [None, None]  # not all units done yet
    assert not sharded.translated_language("fra_Latn").exists()
    summary = call_stage("translate", make_cfg(shard_index=1, num_shards=3), sharded)
    assert summary is not None and summary["rows"]["fra_Latn"] == {"train": 14, "dev": 5}
    for lang in ("fra_Latn", "deu_Latn"):
        a = load_from_disk(str(one.translated_language(lang)))
        b = load_from_disk(str(sharded.translated_language(lang)))
        for split in ("train", "dev"):
            assert a[split].to_list() == b[split].to_list()
    ra = json.loads((one.data / "translation_report.json").read_text())
    rb = json.loads((sharded.data / "translation_report.json").read_text())
    assert ra["languages"]["fra_Latn"]["rows"] == rb["languages"]["fra_Latn"]["rows"]


def test_units_cover_every_row_once():
    units = stage.plan_units({"train": 12, "dev": 3}, ["fra_Latn", "deu_Latn"], 5)
    assert [(u.split, u.start, u.end) for u in units if u.language == "fra_Latn"] == [
        ("train", 0, 5), ("train", 5, 10), ("train", 10, 12), ("dev", 0, 3)
    ]
    shards = [stage.shard_units(units, i, 3) for i in range(3)]
    assert sorted(u for s in shards for u in s) == sorted(units)
    with pytest.raises(ValueError, match="shard 3 of 3"):
        stage.shard_units(units, 3, 3)


@pytest.mark.parametrize(
    ("languages", "match"),
    [([], "nothing to translate"), (["french"], "not FLORES-200"), (["fra_Latn", "fra_Latn"], "more than once"),
     (["eng_Latn"], "source language")],
)
def test_bad_languages_are_config_errors(run, languages, match):
    """Checked with the whole config, before the translate stage starts."""
    from xlt import config as xcfg

    with pytest.raises(ConfigError, match=match):
        xcfg.validate(make_cfg(languages=languages), ["build_data", "translate"])


def test_missing_train_set_is_a_data_error(tmp_path):
    from xlt.run.layout import RunDir

    with pytest.raises(DataError, match="build_data"):
        call_stage("translate", make_cfg(), RunDir(tmp_path / "empty"))


def test_shared_cache_dir(tmp_path, counting):
    shared = tmp_path / "shared_cache"
    counting()
    call_stage("translate", make_cfg(cache_dir=str(shared)), make_run(tmp_path / "a"))
    assert (shared / "translation_cache" / "format.json").exists()
    second = counting()
    call_stage("translate", make_cfg(cache_dir=str(shared)), make_run(tmp_path / "b"))
    assert second.translated == 0  # another run reuses the shared cache


def test_merged_languages_are_kept_once_and_skipped(run, counting):
    counting()
    call_stage("translate", make_cfg(), run)
    assert not (run.translated / ".parts" / "fra_Latn").exists()  # parts removed after the merge
    before = load_from_disk(str(run.translated_language("fra_Latn")))["train"].to_list()
    again = counting()
    summary = call_stage("translate", make_cfg(languages=["fra_Latn", "deu_Latn", "ita_Latn"]), run)
    # Only the new language is translated; the merged ones are reused as they are.
    assert again.calls > 0 and all(t == "ita_Latn" for t in again.targets)
    assert summary["rows"]["ita_Latn"] == {"train": 14, "dev": 5}
    assert load_from_disk(str(run.translated_language("fra_Latn")))["train"].to_list() == before
    report = json.loads((run.data / "translation_report.json").read_text())
    assert set(report["languages"]) == {"fra_Latn", "deu_Latn", "ita_Latn"}
    assert report["languages"]["fra_Latn"]["rows"]["train"] == {"in": 14, "out": 14}
