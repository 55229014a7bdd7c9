"""The translate-train-all set (union + sampling) and importing ready translations."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from datasets import load_from_disk

from tests.translation.conftest import english_rows, make_cfg
from xlt.data.schema import TRANSLATED_FEATURES
from xlt.errors import ConfigError, DataError
from xlt.stages import call_stage
from xlt.translation.union import build_train_all, language_sizes, sample_indices


def _union(cfg, run):
    """The translate-train-all union as the train stage builds it (xlt.stages.train.read_training_set)."""
    return build_train_all(cfg.translate, run, seed=cfg.data.seed, stages=cfg.stages)


@pytest.fixture
def translated(run):
    call_stage("translate", make_cfg(), run)
    return run


def test_union_all_rows(translated):
    dd = _union(make_cfg(), translated)
    assert dd["train"].features == TRANSLATED_FEATURES
    assert Counter(dd["train"]["language"]) == {"eng_Latn": 14, "fra_Latn": 14, "deu_Latn": 14}
    assert Counter(dd["dev"]["language"]) == {"eng_Latn": 5, "fra_Latn": 5, "deu_Latn": 5}
    eng = [r for r in dd["train"] if r["language"] == "eng_Latn"]
    assert not eng[0]["question"].startswith("[")
    # Languages are mixed (shuffled), and the result is memory-mapped Arrow, not an in-memory table.
    assert dd["train"]["language"][:14] != ["eng_Latn"] * 14
    assert all(d.cache_files for d in dd.values())


def test_union_is_deterministic_and_seeded(translated):
    cfg = make_cfg(sampling={"strategy": "cap", "max_rows_per_language": 6})
    a = _union(cfg, translated)["train"]["question_id"]
    b = _union(cfg, translated)["train"]["question_id"]
    assert a == b
    cfg.data.seed = 7
    assert _union(cfg, translated)["train"]["question_id"] != a


def test_union_cap_and_dev_cap(translated):
    cfg = make_cfg(sampling={"strategy": "cap", "max_rows_per_language": 6, "max_dev_rows_per_language": 2})
    dd = _union(cfg, translated)
    assert Counter(dd["train"]["language"]) == {"eng_Latn": 6, "fra_Latn": 6, "deu_Latn": 6}
    assert Counter(dd["dev"]["language"]) == {"eng_Latn": 2, "fra_Latn": 2, "deu_Latn": 2}
    per_lang_ids = [r["question_id"] for r in dd["train"] if r["language"] == "fra_Latn"]
    assert len(set(per_lang_ids)) == 6  # no repeats when subsampling


def test_union_without_english(translated):
    cfg = make_cfg(sampling={"include_english": False})
    assert set(_union(cfg, translated)["train"]["language"]) == {"fra_Latn", "deu_Latn"}


def test_temperature_sampling_sizes():
    sizes = {"eng_Latn": 900, "fra_Latn": 100}
    flat = language_sizes(sizes, "temperature", None, 1e9, None)
    assert flat == {"eng_Latn": 500, "fra_Latn": 500}  # T -> inf: uniform over languages
    prop = language_sizes(sizes, "temperature", None, 1.0, None)
    assert prop == sizes  # T = 1: proportional
    t5 = language_sizes(sizes, "temperature", None, 5.0, 2000)
    assert sum(t5.values()) == 2000 and t5["fra_Latn"] > 200
    assert language_sizes(sizes, "temperature", 300, 5.0, 2000)["eng_Latn"] == 300


def test_sample_indices_upsamples_with_all_rows():
    import numpy as np

    idx = sample_indices(5, 12, np.random.default_rng(0))
    assert len(idx) == 12 and set(range(5)) <= set(idx.tolist())


def test_union_temperature_upsamples(translated):
    cfg = make_cfg(sampling={"strategy": "temperature", "temperature": 2.0, "total_rows": 60})
    dd = _union(cfg, translated)
    assert Counter(dd["train"]["language"]) == {"eng_Latn": 20, "fra_Latn": 20, "deu_Latn": 20}


def test_union_needs_translations(run):
    with pytest.raises(ConfigError, match=r"translations into 'fra_Latn' are configured.*run the translate stage"):
        _union(make_cfg(), run)


# Import of ready translations ------------------------------------------------------------------------


def _write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_import_flat_jsonl_and_folder(tmp_path, run):
    imp = tmp_path / "imp"
    _write_jsonl(imp / "fra_Latn.jsonl", english_rows(6, "train") + english_rows(2, "dev"))
    _write_jsonl(imp / "deu_Latn" / "train.jsonl", english_rows(4, "train"))
    summary = call_stage("translate", make_cfg(import_dir=str(imp)), run)
    assert summary["rows"] == {"fra_Latn": {"train": 6, "dev": 2}, "deu_Latn": {"train": 4, "dev": 0}}
    fra = load_from_disk(str(run.translated_language("fra_Latn")))
    assert fra["train"].features == TRANSLATED_FEATURES and set(fra["train"]["language"]) == {"fra_Latn"}
    report = json.loads((run.data / "translation_report.json").read_text())
    assert report["imported"] is True
    # The union works on imported data exactly as on translated data.
    assert Counter(_union(make_cfg(), run)["train"]["language"])["deu_Latn"] == 4


def test_import_save_to_disk_folder(tmp_path, run):
    from tests.translation.conftest import make_train_set

    imp = tmp_path / "imp"
    make_train_set(3, 1).save_to_disk(str(imp / "fra_Latn"))
    call_stage("translate", make_cfg(import_dir=str(imp), languages=["fra_Latn"]), run)
    assert load_from_disk(str(run.translated_language("fra_Latn")))["train"].num_rows == 3


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda r: r.pop("question"), r"line 2: missing field\(s\) \['question'\]"),
        (lambda r: r.update(label=4), r"line 2: field 'label'"),
        (lambda r: r.update(options=["a", "a", "b", "c"]), r"line 2: field 'options' has duplicate"),
        (lambda r: r.update(language="deu_Latn"), r"line 2: field 'language' is 'deu_Latn'"),
        (lambda r: r.update(split="test"), r"line 2: field 'split'"),
    ],
)
def test_import_errors_name_file_line_field(tmp_path, run, mutate, match):
    rows = english_rows(3, "train")
    mutate(rows[1])
    _write_jsonl(tmp_path / "imp" / "fra_Latn.jsonl", rows)
    with pytest.raises(DataError, match=match) as err:
        call_stage("translate", make_cfg(import_dir=str(tmp_path / "imp"), languages=["fra_Latn"]), run)
    assert "fra_Latn.jsonl" in str(err.value)


def test_import_missing_language(tmp_path, run):
    _write_jsonl(tmp_path / "imp" / "fra_Latn.jsonl", english_rows(2, "train"))
    with pytest.raises(DataError, match="no translation of 'deu_Latn'"):
        call_stage("translate", make_cfg(import_dir=str(tmp_path / "imp")), run)
    (tmp_path / "imp" / "spa_Latn.jsonl").write_text("{not json\n")
    with pytest.raises(DataError, match=r"spa_Latn.jsonl, line 1: not valid JSON"):
        call_stage("translate", make_cfg(import_dir=str(tmp_path / "imp"), languages=["spa_Latn"]), run)
