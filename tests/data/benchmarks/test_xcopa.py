"""XCOPA, the benchmark added as one definition: its loader on the bundled sample (the Hub's exact layout
and schema), its bad-input errors, and its declared finding in a comparison."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from omegaconf import OmegaConf

from xlt.config.eval import BenchmarkConfig
from xlt.data.benchmarks import get_benchmark
from xlt.errors import ConfigError, DataError
from xlt.scoring.llm.task import HarnessTask

SAMPLE = Path(__file__).resolve().parents[3] / "xlt" / "assets" / "demo" / "xcopa"
XCOPA = get_benchmark("xcopa")
XCOPA_TASK = HarnessTask(XCOPA)  # its prompt as the LLM scorer formats it


def bcfg(path: Path, **kw):
    return OmegaConf.structured(BenchmarkConfig(kind="xcopa", path=str(path), **kw))


def test_the_bundled_sample_loads_as_two_option_items_with_the_harness_connectors():
    assert XCOPA.select_languages(bcfg(SAMPLE)) == ["id", "it", "tr", "zh"]
    items, checks = XCOPA.load_checked(bcfg(SAMPLE), "it")
    raw = pq.read_table(SAMPLE / "it" / "test-00000-of-00001.parquet").to_pylist()
    assert len(items) == len(raw) == 8 and sum(checks.values()) == 0
    for item, row in zip(items, raw, strict=True):
        assert item["options"] == [row["choice1"], row["choice2"]] and item["label"] == row["label"]
        assert item["passage"] == "" and item["id"] == str(row["idx"])
        connector = {"cause": "perché", "effect": "quindi"}[row["question"]]
        assert item["question"] == row["premise"][:-1] + " " + connector  # the final period dropped
        assert XCOPA_TASK.doc_to_text(item) == item["question"]
        assert XCOPA_TASK.doc_to_choice(item) == [o[0].lower() + o[1:] for o in item["options"]]
    masks = XCOPA.item_subsets(items)
    assert masks["cause"].sum() + masks["effect"].sum() == 8 and masks["full"].all()
    zh = XCOPA.load(bcfg(SAMPLE), "zh")
    assert zh[0]["question"] == "杯子从桌子上掉了下来 所以" and XCOPA.table_code("zh") == "zho_Hans"
    # FLORES-200 codes select XCOPA's own; validation is the few-shot split
    assert XCOPA.select_languages(bcfg(SAMPLE, languages=["ita_Latn", "zh"])) == ["it", "zh"]
    assert len(XCOPA.load(bcfg(SAMPLE), "tr", split=XCOPA.fewshot_split)) == 6
    with pytest.raises(ConfigError, match="unknown xcopa language code 'et'"):
        XCOPA.select_languages(bcfg(SAMPLE, languages=["et"]))


def _copy_with(tmp_path: Path, **change) -> Path:
    root = tmp_path / "xcopa"
    shutil.copytree(SAMPLE / "it", root / "it")
    (root / "translation-it").mkdir()  # the Hub's English machine translations: not a language
    (root / "__pycache__").mkdir()  # nor is a folder Python leaves beside an installed package's files
    table = pq.read_table(root / "it" / "test-00000-of-00001.parquet")
    rows = table.to_pylist()
    for field, (row, value) in change.items():
        rows[row][field] = value
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema if "label" not in change else None),
                   root / "it" / "test-00000-of-00001.parquet")
    return root


def test_bad_rows_are_named_with_their_row_and_field(tmp_path):
    assert XCOPA.languages(bcfg(_copy_with(tmp_path))) == ["it"]
    with pytest.raises(DataError, match=r"row 3: field 'label' must be 0 or 1, got 2"):
        XCOPA.load(bcfg(_copy_with(tmp_path / "a", label=(2, 2))), "it")
    with pytest.raises(DataError, match=r"row 2: field 'question' must be 'cause' or 'effect', got 'because'"):
        XCOPA.load(bcfg(_copy_with(tmp_path / "b", question=(1, "because"))), "it")
    # an empty alternative is an odd item, counted; both empty leaves it unscorable and out
    items, checks = XCOPA.load_checked(bcfg(_copy_with(tmp_path / "c", choice1=(0, ""), choice2=(0, ""))), "it")
    assert len(items) == 7 and checks["unscorable"] == 1 and checks["empty_options"] == 1


def test_its_declared_finding_is_checked_on_a_comparison(tmp_path):
    from tests.reporting.fake_runs import MODELS, write_run
    from xlt.reporting.findings import check_findings
    from xlt.reporting.run_tables import RunInfo

    def xcopa(direct: float, tt: float) -> dict:
        return {"xcopa": {"kind": "xcopa", "n_options": 2, "accuracies": {c: direct for c in ("it", "tr", "zh")}},
                "xcopa_tt": {"kind": "xcopa", "n_options": 2, "translate_test": True,
                             "accuracies": {c: tt for c in ("it", "tr", "zh")}}}

    runs = [RunInfo(write_run(tmp_path / "r" / "default", MODELS["XLM-R"], 1, others=xcopa(60, 75))),
            RunInfo(write_run(tmp_path / "v" / "default", MODELS["XLM-V"], 1, others=xcopa(62, 55)))]
    found = {f["id"]: f for f in check_findings(runs, samples=50)}
    f = found["xcopa_translate_test_beats_in_language"]
    assert f["paper"] == "XCOPA (Ponti et al., 2020)"
    assert f["verdict"] == "does not hold"  # XLM-V's translate-test is lower on every language
    assert [n["translate-test higher"] for n in f["numbers"]] == [3, 0]
