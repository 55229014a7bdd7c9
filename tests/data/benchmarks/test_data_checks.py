"""Evaluation data checks and argmax ties reach each result's metadata; the TSV export reads back exactly."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.fixtures.benchmarks import belebele_gold, belebele_rows, write_jsonl
from xlt import config as xcfg
from xlt.data.export import read_tsv, to_reference_frame, write_tsv
from xlt.run.layout import RunDir
from xlt.scoring.jobs import resolve
from xlt.stages import evaluate as eval_stage


class TieScorer:
    """Gold one-hot scores, except all-equal scores for the first ``ties`` items and -inf for the next one."""

    def __init__(self, ties: int):
        self.ties = ties

    def score(self, items, benchmark, language):
        scores = np.zeros((len(items), 4))
        scores[np.arange(len(items)), items["label"]] = 1.0
        scores[: self.ties] = 0.5
        scores[self.ties] = -np.inf  # no prediction at all: not a tie
        return scores


def test_result_has_data_checks_and_ties(tmp_path):
    rows = belebele_rows("fra_Latn", 8)
    rows[6]["mc_answer2"] = rows[6]["mc_answer1"]  # duplicate options (kept, counted)
    rows[7]["link"], rows[7]["question_number"] = rows[5]["link"], rows[5]["question_number"]  # duplicate id
    rows[2]["mc_answer4"] = ""  # empty option
    rows[3].update({f"mc_answer{k}": "" for k in range(1, 5)})  # unscorable: left out
    write_jsonl(tmp_path / "bele" / "data" / "fra_Latn.jsonl", rows)
    cfg = xcfg.validate({"eval": {"bootstrap_samples": 50, "benchmarks": {
        "belebele": {"kind": "belebele", "path": str(tmp_path / "bele")}}}})
    result = eval_stage.evaluate_job(cfg, RunDir(tmp_path / "run"), resolve(cfg.eval, "belebele", "fra_Latn"), TieScorer(2))
    assert result["n"] == 7
    assert result["ties"] == 2
    assert result["data_checks"] == {"duplicate_ids": 1, "duplicate_options": 1, "empty_options": 2,
                                     "placeholder_options": 0, "empty_passages": 0, "empty_questions": 0,
                                     "unscorable": 1}
    on_disk = json.loads((tmp_path / "run" / "eval" / "belebele" / "fra_Latn.json").read_text())
    assert on_disk["ties"] == 2 and on_disk["data_checks"]["unscorable"] == 1
    # 7 scorable items: 2 ties (argmax picks option 0) + 1 without prediction + 4 right.
    golds = [belebele_gold(i) for i in range(8) if i != 3]
    assert result["accuracy"] == pytest.approx(100 * (sum(g == 0 for g in golds[:2]) + 4) / 7)


def test_tsv_reads_back_exactly_with_the_documented_call(tmp_path):
    rows = [{"dataset": "RACE", "split": "train", "passage_id": "007", "question_id": "007#0",
             "passage": 'Line one.\n\tTabbed "quoted" text', "question": "How many?",
             "options": ["None", "NA", "N/A", "null"], "label": 0, "license": "L"},
            {"dataset": "sciQ", "split": "dev", "passage_id": "1e5", "question_id": "", "passage": "P",
             "question": "Q?", "options": ["1.0", "TRUE", "#N/A", " "], "label": 3, "license": "L"}]
    path = tmp_path / "train_set.tsv"
    assert write_tsv(rows, path) == 2
    back = read_tsv(path)
    expected = to_reference_frame(rows).astype(str)
    assert back.equals(expected)
    assert back.loc[0, "answer1"] == "None" and back.loc[0, "passage_id"] == "007"


def test_report_line_names_languages_with_odd_items():
    import pandas as pd

    from xlt.reporting.run_report import data_checks_line

    df = pd.DataFrame({"language": ["fra_Latn", "deu_Latn"], "odd_items": [3, 0], "ties": [2, 1]})
    assert data_checks_line(df) == ("\nData checks: 3 odd item(s) in the benchmark files (fra_Latn 3); 3 prediction(s) "
                                    "were argmax ties (see each result's `data_checks` and `ties`).\n")


def test_items_have_their_own_number_of_options_within_the_answer_letters():
    from datasets import Dataset

    from xlt.data.benchmarks.base import check_items
    from xlt.data.schema import EVAL_FEATURES, LETTERS, MAX_OPTIONS, option_counts
    from xlt.errors import DataError

    def ds(options, labels):
        n = len(options)
        return Dataset.from_dict({"id": [str(i) for i in range(n)], "language": ["xx"] * n, "passage": ["p"] * n,
                                  "question": ["q"] * n, "options": options, "label": labels}, features=EVAL_FEATURES)

    ok = ds([["a", "b"], ["a", "b", "c", "d", "e"], list(LETTERS)], [1, 4, 25])
    check_items(ok, "toy.jsonl")
    assert option_counts(ok).tolist() == [2, 5, MAX_OPTIONS] and MAX_OPTIONS == 26
    with pytest.raises(DataError, match=r"toy\.jsonl: row 2: field 'label' is -1, not one of the item's 3 options"):
        check_items(ds([["a", "b"], ["a", "b", "c"]], [0, -1]), "toy.jsonl")
    with pytest.raises(DataError, match=r"toy\.jsonl: row 1: field 'options' holds 27 options; at most 26"):
        check_items(ds([[f"o{k}" for k in range(27)]], [0]), "toy.jsonl")
