"""Building the whole training set: counts, report, determinism, TSV export, decontamination."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from datasets import load_from_disk

from xlt.config import validate
from xlt.data.assemble import BuildResult, build, make_report, report_markdown
from xlt.data.export import TSV_COLUMNS
from xlt.data.schema import TRAIN_FEATURES, RecordError
from xlt.data.sources import SourceStats
from xlt.errors import ConfigError
from xlt.run.layout import RunDir
from xlt.stages import call_stage

T, F = True, False
OPTS = ["red", "blue", "green", "pink"]
RACE_PASSAGE = (
    "The old lighthouse keeper climbed the narrow stairs every night to light the lamp for the ships. "
    "Nobody knew his name."
)


def write_six(up, root):
    """Small local copies of all six sources. Expected kept rows: train 10, dev 5 (see comments)."""
    # RACE: train 3 rows, 1 cloze -> 2 kept; dev 1.
    up.write_jsonl(root / "race", "train", [
        up.race_row("h1.txt", RACE_PASSAGE, "Who climbed?", OPTS, "A"),
        up.race_row("h1.txt", RACE_PASSAGE, "He lit _ .", OPTS, "B"),
        up.race_row("h1.txt", RACE_PASSAGE, "When?", OPTS, "C"),
    ])
    up.write_jsonl(root / "race", "validation", [up.race_row("h2.txt", "Short one.", "Why?", OPTS, "B")])
    # SciQ: train 3 rows, 1 with empty support -> 2 kept; dev 1.
    up.write_jsonl(root / "sciq", "train", [
        up.sciq_row("Q1?", "a1", ["b1", "c1", "d1"], "Support one."),
        up.sciq_row("Q2?", "a2", ["b2", "c2", "d2"], ""),
        up.sciq_row("Q3?", "a3", ["b3", "c3", "d3"], "Support three."),
    ])
    up.write_jsonl(root / "sciq", "validation", [up.sciq_row("Q4?", "a4", ["b4", "c4", "d4"], "S.")])
    # MultiRC: 8 option rows, 2 questions, 1 has two correct options -> 1 kept; dev 1.
    para = up.multirc_markup(["Ann sings.", "Bob dances."])
    up.write_parquet(root / "multirc", "train",
                     up.multirc_rows(0, 0, para, "Who sings?", [("Bob", 0), ("Ann", 1), ("Cy", 0), ("Di", 0)])
                     + up.multirc_rows(0, 1, para, "Who?", [("Bob", 1), ("Ann", 1), ("Cy", 0), ("Di", 0)], 4))
    up.write_parquet(root / "multirc", "validation",
                     up.multirc_rows(1, 0, para, "Who dances?", [("Bob", 1), ("Ann", 0), ("Cy", 0), ("Di", 0)]))
    # MCTest: train 2, dev 1.
    story = "Tim had a dog.\\newlineThe dog was brown."
    up.write_jsonl(root / "mctest", "train", [
        up.mctest_row("mc500.train.0.0", story, "one: What did Tim have?", ["a dog", "a cat", "a cow", "a pig"], "A"),
        up.mctest_row("mc500.train.0.1", story, "one: What colour: brown or not?", ["brown", "red", "tan", "grey"], "A"),
    ])
    up.write_jsonl(root / "mctest", "validation", [
        up.mctest_row("mc500.dev.0.0", story, "one: Who?", ["Tim", "Tom", "Ted", "Tia"], "A"),
    ])
    # MCScript2.0: 2 questions on one passage -> 2 kept (train only).
    (root / "mcscript").mkdir()
    (root / "mcscript" / "train-data.xml").write_text(up.mcscript_xml([
        ("p1", "I planted a tree. It grew.", [
            ("0", "What was planted?", [("a tree", T), ("a rose", F)]),
            ("1", "What happened?", [("it grew", T), ("it died", F)]),
        ]),
    ]))
    # ReClor: train 1, dev 1.
    up.write_jsonl(root / "reclor", "train", [up.reclor_row("train_0", "All A are B.", "So?", ["w", "x", "y", "z"], "1")])
    up.write_jsonl(root / "reclor", "validation", [up.reclor_row("val_0", "C.", "Q?", ["w", "x", "y", "z"], "3")])
    return {
        "race": {"path": str(root / "race")},
        "sciq": {"path": str(root / "sciq")},
        "multirc": {"path": str(root / "multirc")},
        "mctest": {"path": str(root / "mctest")},
        "mcscript": {"path": str(root / "mcscript")},
        "reclor": {"path": str(root / "reclor")},
    }


@pytest.fixture
def sources(upstream, tmp_path):
    return write_six(upstream, tmp_path / "src")


def make_cfg(sources, tmp_path, **data):
    return validate({"data": {"sources": sources, **data}, "run_root": str(tmp_path / "runs")})


def test_build_counts_and_report(sources, tmp_path):
    cfg = make_cfg(sources, tmp_path)
    dsd, report, _ = build(cfg.data)
    assert len(dsd["train"]) == 10 and len(dsd["dev"]) == 5
    assert dsd["train"].features == TRAIN_FEATURES
    assert list(dict.fromkeys(dsd["train"]["dataset"])) == ["RACE", "sciQ", "MultiRC", "MCTest_500", "MCScript2.0", "ReClor"]
    assert list(dict.fromkeys(dsd["dev"]["dataset"])) == ["RACE", "sciQ", "MultiRC", "MCTest_500", "ReClor"]
    s = report["sources"]
    assert s["race"]["splits"]["train"] == {"read": 3, "candidates": 3, "kept": 2, "dropped": {"cloze_question": 1},
                                            "repaired": {}, "longest_passage_chars": 118}
    assert s["sciq"]["splits"]["train"]["dropped"] == {"empty_support": 1}
    assert s["multirc"]["splits"]["train"] == {
        "read": 8, "candidates": 2, "kept": 1, "dropped": {"not_exactly_one_correct": 1}, "repaired": {},
        "longest_passage_chars": 22,
    }
    assert s["mcscript"]["splits"] == {"train": {"read": 2, "candidates": 2, "kept": 2, "dropped": {}, "repaired": {},
                                                 "longest_passage_chars": 26}}
    assert report["sentence_splitter"].startswith("nltk-punkt")
    assert report["totals"] == {"train": {"built": 10, "paper": 67500}, "dev": {"built": 5, "paper": 3700}}
    assert sum(report["labels"]["train"].values()) == 10 and sum(report["labels"]["dev"].values()) == 5
    assert report["labels"]["dev"]["D"] >= 1  # ReClor dev label "3"
    assert set(report["lengths"]) == {"RACE", "sciQ", "MultiRC", "MCTest_500", "MCScript2.0", "ReClor", "all"}
    mcq = dsd["train"].filter(lambda r: r["dataset"] == "MCTest_500")
    assert mcq["question"][1] == "What colour: brown or not?"


def test_make_report_hand_computed():
    def rec(ds, split, pid, passage, question, options, label):
        return {"dataset": ds, "split": split, "passage_id": pid, "question_id": "q", "passage": passage,
                "question": question, "options": options, "label": label, "license": "L"}

    st = SourceStats("race", "RACE")
    st.read.update(train=4, dev=1)
    st.candidates.update(train=4, dev=1)
    st.kept.update(train=3, dev=1)
    st.drop("train", "cloze_question")
    records = {
        "train": [
            rec("RACE", "train", "p1", "one two three four", "a b", ["x", "y", "z w", "v"], 0),
            rec("RACE", "train", "p1", "one two three four", "a b c d", ["x", "y", "z", "v"], 0),
            rec("RACE", "train", "p2", "one two", "a b c", ["x", "y", "z", "v"], 3),
        ],
        "dev": [rec("RACE", "dev", "p1", "x", "q", ["1", "2", "3", "4"], 1)],
    }
    report = make_report(BuildResult(records, [st]), validate({}).data)
    assert report["labels"] == {"train": {"A": 2, "B": 0, "C": 0, "D": 1}, "dev": {"A": 0, "B": 1, "C": 0, "D": 0}}
    # Passages are counted once per (dataset, split, passage_id): 4, 2 (train) and 1 (dev) words.
    assert report["lengths"]["RACE"]["passage_words"] == {"mean": 2.3, "median": 2.0, "max": 4}
    assert report["lengths"]["RACE"]["question_words"] == {"mean": 2.5, "median": 2.5, "max": 4}
    assert report["lengths"]["RACE"]["option_words"]["max"] == 2
    assert report["sources"]["race"]["splits"]["train"]["dropped"] == {"cloze_question": 1}
    md = report_markdown(report)
    assert "| RACE | train | 4 | 4 | 3 | cloze_question 1 | - |" in md
    assert "| train | 2 | 0 | 0 | 1 |" in md


def test_run_stage_outputs_tsv_and_determinism(sources, tmp_path):
    cfg = make_cfg(sources, tmp_path)
    runs = [RunDir(tmp_path / "run_a"), RunDir(tmp_path / "run_b")]
    summaries = [call_stage("build_data", cfg, run) for run in runs]
    assert summaries[0]["train"] == 10 and summaries[0]["dev"] == 5
    assert summaries[0]["per_dataset"]["MCScript2.0"] == {"train": 2}
    a, b = runs
    dsd = load_from_disk(str(a.train_set))
    assert set(dsd) == {"train", "dev"} and dsd["train"].features == TRAIN_FEATURES
    # Byte-identical outputs: Arrow files, TSV, report hashes.
    for split in ("train", "dev"):
        fa = sorted((a.train_set / split).glob("*.arrow"))
        fb = sorted((b.train_set / split).glob("*.arrow"))
        assert fa and [f.read_bytes() for f in fa] == [f.read_bytes() for f in fb]
    assert (a.data / "train_set.tsv").read_bytes() == (b.data / "train_set.tsv").read_bytes()
    ra = json.loads((a.data / "build_report.json").read_text())
    rb = json.loads((b.data / "build_report.json").read_text())
    assert ra == rb and ra["content_sha256"]["train"]
    assert (a.data / "build_report.md").read_text().startswith("# Training set build report")

    tsv = pd.read_csv(a.data / "train_set.tsv", sep="\t", keep_default_na=False, dtype=str)
    assert list(tsv.columns) == TSV_COLUMNS and len(tsv) == 15
    rows = dsd["train"].to_list() + dsd["dev"].to_list()
    for (_, t), r in zip(tsv.iterrows(), rows, strict=True):
        assert int(t["correct_answer_num"]) == r["label"] + 1
        assert t["correct_answer"] == r["options"][r["label"]] == t[f"answer{r['label'] + 1}"]
        assert t["passage"] == r["passage"] and t["split"] == r["split"]


def test_different_seed_changes_only_shuffled_sources(sources, tmp_path):
    d1, _, _ = build(make_cfg(sources, tmp_path, seed=1).data)
    changed = set()
    for seed in range(2, 8):
        d2, _, _ = build(make_cfg(sources, tmp_path, seed=seed).data)
        changed |= {r1["dataset"] for r1, r2 in zip(d1["train"], d2["train"], strict=True) if r1 != r2}
    assert changed and changed <= {"sciQ", "MCScript2.0"}


def test_export_tsv_off(sources, tmp_path):
    run = RunDir(tmp_path / "run")
    call_stage("build_data", make_cfg(sources, tmp_path, export_tsv=False), run)
    assert not (run.data / "train_set.tsv").exists() and run.train_set.is_dir()


def test_decontamination_report_and_remove(sources, tmp_path):
    bele = tmp_path / "belebele" / "data"
    bele.mkdir(parents=True)
    row = {"link": "u", "question_number": 1, "flores_passage": "Intro. " + RACE_PASSAGE, "question": "Q?",
           "mc_answer1": "a", "mc_answer2": "b", "mc_answer3": "c", "mc_answer4": "d",
           "correct_answer_num": "1", "dialect": "eng_Latn", "ds": "2023-05-03"}
    (bele / "eng_Latn.jsonl").write_text(json.dumps(row) + "\n")
    eval_cfg = {"benchmarks": {"belebele": {"kind": "belebele", "path": str(tmp_path / "belebele")},
                               "gmmlu": {"kind": "global_mmlu"}}}
    cfg = validate({"data": {"sources": sources, "decontamination": {"enabled": True}}, "eval": eval_cfg})
    run = RunDir(tmp_path / "run")
    assert call_stage("build_data", cfg, run)["train"] == 10
    report = json.loads((run.data / "build_report.json").read_text())
    assert report["decontamination"]["splits"]["train"]["flagged"] == 2
    assert report["decontamination"]["splits"]["train"]["by_dataset"] == {"RACE": 2}

    cfg = validate({"data": {"sources": sources, "decontamination": {"enabled": True, "remove": True}}, "eval": eval_cfg})
    run = RunDir(tmp_path / "run2")
    assert call_stage("build_data", cfg, run)["train"] == 8
    report = json.loads((run.data / "build_report.json").read_text())
    assert report["sources"]["race"]["splits"]["train"]["dropped"] == {"cloze_question": 1, "eval_overlap": 2}
    assert report["sources"]["race"]["splits"]["train"]["kept"] == 0


def test_config_errors(sources, tmp_path):
    with pytest.raises(ConfigError, match="unknown (data )?source"):
        build(make_cfg({**sources, "squad": {"path": "x"}}, tmp_path).data)
    with pytest.raises(ConfigError, match="no enabled source"):
        build(make_cfg({"race": {"path": "x", "enabled": False}}, tmp_path).data)


def test_invariant_violation_names_source_split_row(tmp_path):
    from xlt.config.data import SourceConfig
    from xlt.data.sources.race import Race

    with pytest.raises(RecordError, match=r"RACE train f.jsonl:line 3: field 'label'"):
        Race(SourceConfig()).record("train", "f.jsonl:line 3", "p", "q", "P", "Q", OPTS, 4)
