"""A benchmark defined in this file alone, with 3-option items (and one mixing 2, 3 and 5 options),
evaluated through the real evaluate stage with the gold, fixed and tiny-MC scorers: accuracy, chance
level, predictions and result files. Adding a benchmark needs no other module than its definition.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from xlt import config as xcfg
from xlt.data.benchmarks import BENCHMARKS
from xlt.data.benchmarks.base import Benchmark, convert_split, load_local_file
from xlt.data.schema import EVAL_FEATURES
from xlt.errors import DataError
from xlt.run.layout import RunDir
from xlt.run.results import read_result, result_problem
from xlt.stages import call_stage


class ToyBenchmark(Benchmark):
    """A local-copy benchmark: ``<path>/<language>.jsonl`` rows ``{uid, story, ask, choices: [...], answer}``
    (``answer``: 0-based index into ``choices``, which may hold any number of options)."""

    version = 1
    has_passage = True
    pivot_language = "eng_Latn"

    def __init__(self, kind: str):
        self.kind = kind

    def languages(self, bcfg) -> list[str]:
        return sorted(p.stem for p in self.local_path(bcfg).glob("*.jsonl"))

    def load_all(self, bcfg, language, split="test"):
        path = self.local_path(bcfg) / f"{language}.jsonl"
        if not path.is_file():
            raise DataError(f"{path}: no such file for {self.kind} language {language!r}")

        def convert(row, *, language, where):
            return {"id": str(row["uid"]), "language": language, "passage": row["story"], "question": row["ask"],
                    "options": row["choices"], "label": row["answer"]}

        ds = convert_split(load_local_file(path), language, str(path), fields=("uid", "story", "ask", "choices", "answer"),
                           features=EVAL_FEATURES, convert_row=convert, desc=f"{self.kind} {language}")
        return ds, str(path)


# Item i of each language: (number of options, gold). The 3-option set has gold i % 3; the mixed set
# cycles through 2, 3 and 5 options.
THREE = [(3, i % 3) for i in range(6)]
MIXED = [(2, 1), (3, 2), (5, 4), (2, 0), (3, 2), (5, 2)]
LANGS = ("eng_Latn", "fra_Latn")
WORDS = ("red", "green", "blue", "white", "black", "apple", "house", "river")


def write_toy(root: Path, shape: list[tuple[int, int]]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for lang in LANGS:
        rows = [{"uid": f"{lang}-{i}", "story": f"The {WORDS[i % 8]} bird sang near the {WORDS[(i + 3) % 8]}.",
                 "ask": "Which bird sang?", "choices": [f"the {WORDS[(i + k) % 8]} one" for k in range(n)],
                 "answer": gold} for i, (n, gold) in enumerate(shape)]
        (root / f"{lang}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def register(monkeypatch, *kinds: str) -> None:
    """Register toy benchmarks for this test: the registry is all there is to it (the config layer asks it)."""
    for kind in kinds:
        monkeypatch.setitem(BENCHMARKS, kind, ToyBenchmark(kind))


@pytest.fixture(scope="module")
def toy_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("toy")
    return {"toy3": write_toy(root / "toy3", THREE), "toy_mixed": write_toy(root / "toy_mixed", MIXED)}


@pytest.fixture
def toy(monkeypatch, toy_data):
    register(monkeypatch, "toy3", "toy_mixed")
    return toy_data


def make_cfg(toy, **eval_kw):
    cfg = xcfg.validate({"model": {"max_length": 64}, "eval": {"bootstrap_samples": 50, "benchmarks": {
        "toy3": {"kind": "toy3", "path": str(toy["toy3"])},
        "mixed": {"kind": "toy_mixed", "path": str(toy["toy_mixed"])},
    }}})
    for k, v in eval_kw.items():
        OmegaConf.update(cfg, f"eval.{k}", v, merge=False)
    return xcfg.validate(cfg)


def read_preds(run: RunDir, bench: str, lang: str) -> list[dict]:
    return [json.loads(x) for x in (run.eval / bench / "predictions" / f"{lang}.jsonl").read_text().splitlines()]


def read_res(run: RunDir, bench: str, lang: str) -> dict:
    return json.loads((run.eval / bench / f"{lang}.json").read_text())


MIXED_CHANCE = 100 * np.mean([1 / n for n, _ in MIXED])  # (1/2 + 1/3 + 1/5) / 3 = 34.44%


def test_gold_scorer_on_three_and_mixed_option_items(toy, tmp_path):
    run = RunDir(tmp_path / "run")
    summary = call_stage("evaluate", make_cfg(toy, scorer="gold"), run)
    assert summary["toy3"] == {"n_languages": 2, "mean_accuracy": 100.0, "n_questions": 12}
    res = read_res(run, "toy3", "fra_Latn")
    assert res["kind"] == "toy3" and res["n"] == 6 and res["accuracy"] == 100.0
    assert res["chance"] == pytest.approx(100 / 3) and res["settings"]["versions"]["benchmark"] == 1
    preds = read_preds(run, "toy3", "fra_Latn")
    assert [p["gold"] for p in preds] == [g for _, g in THREE] and all(p["prediction"] == p["gold"] for p in preds)
    assert all(len(p["scores"]) == 3 for p in preds)  # the item's own options, no padding
    mixed = read_res(run, "mixed", "eng_Latn")
    assert mixed["accuracy"] == 100.0 and mixed["chance"] == pytest.approx(MIXED_CHANCE)
    assert [len(p["scores"]) for p in read_preds(run, "mixed", "eng_Latn")] == [n for n, _ in MIXED]
    # The result agrees with its predictions (count, correct, chance): a rerun reuses it ...
    assert call_stage("evaluate", make_cfg(toy, scorer="gold"), run) == summary
    assert read_result(run, "mixed", "eng_Latn")["chance"] == mixed["chance"]
    # ... and a result whose chance level no longer matches its predictions is damaged (recomputed).
    path = run.eval / "mixed" / "eng_Latn.json"
    path.write_text(json.dumps({**mixed, "chance": 25.0}))
    assert "chance is 25.0" in result_problem(run, "mixed", "eng_Latn")
    call_stage("evaluate", make_cfg(toy, scorer="gold"), run)
    assert read_res(run, "mixed", "eng_Latn")["chance"] == pytest.approx(MIXED_CHANCE)


def test_fixed_scorer_beyond_an_items_options_is_no_prediction(toy, tmp_path):
    run = RunDir(tmp_path / "run")
    call_stage("evaluate", make_cfg(toy, scorer="fixed", fixed_option=2), run)
    res = read_res(run, "toy3", "eng_Latn")  # gold 0,1,2,0,1,2: option 2 right twice
    assert res["correct"] == 2 and res["accuracy"] == pytest.approx(100 / 3) and res["chance"] == pytest.approx(100 / 3)
    # Mixed: the 2-option items have no option 2 (no prediction, wrong); option 2 is gold at items 1, 4, 5.
    preds = read_preds(run, "mixed", "fra_Latn")
    assert [p["prediction"] for p in preds] == [-1, 2, 2, -1, 2, 2]
    assert preds[0]["scores"] == [None, None] and preds[2]["scores"] == [0.0, 0.0, 1.0, 0.0, 0.0]
    res = read_res(run, "mixed", "fra_Latn")
    assert res["correct"] == 3 and res["accuracy"] == 50.0 and res["ties"] == 0


def test_tiny_mc_model_scores_each_item_over_its_own_options(toy, tmp_path, tiny_mc):
    path = tiny_mc[0]
    run = RunDir(tmp_path / "run")
    cfg = make_cfg(toy, scorer="mc", model=str(path), batch_size=4)
    summary = call_stage("evaluate", cfg, run)
    assert summary["mixed"]["n_questions"] == 12 and summary["toy3"]["n_questions"] == 12
    preds = read_preds(run, "mixed", "eng_Latn")
    assert [len(p["scores"]) for p in preds] == [n for n, _ in MIXED]
    assert all(p["prediction"] == int(np.argmax(p["scores"])) for p in preds)
    res = read_res(run, "mixed", "eng_Latn")
    assert res["chance"] == pytest.approx(MIXED_CHANCE) and res["truncated"] == 0 and res["ties"] == 0
    assert res["correct"] == sum(p["prediction"] == p["gold"] for p in preds)
    assert read_res(run, "toy3", "eng_Latn")["chance"] == pytest.approx(100 / 3)


def test_a_label_outside_its_items_options_names_the_row(toy, tmp_path):
    root = write_toy(tmp_path / "bad", [(3, 0), (2, 2), (3, 1)])  # row 2: answer 2 of options 0..1
    cfg = make_cfg(toy, scorer="gold")
    OmegaConf.update(cfg, "eval.benchmarks.mixed.path", str(root), merge=False)
    with pytest.raises(DataError, match=r"eng_Latn\.jsonl: row 2: field 'label' is 2, not one of the item's 2 options"):
        call_stage("evaluate", cfg, RunDir(tmp_path / "run"))
