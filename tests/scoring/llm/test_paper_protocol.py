"""The Belebele paper's few-shot protocol (``eval.llm.protocol=paper``, xlt/scoring/llm/paper.py): its template,
its draws from the English training set, the averaging over draws in the results, and its hashes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from tests.fixtures.llm import llm_root_config
from xlt.config.keys import eval_job_values
from xlt.config.llm import PAPER_KEYS
from xlt.data.schema import TRAIN_FEATURES
from xlt.errors import ConfigError
from xlt.metrics import draws_accuracy_with_ci, spread
from xlt.run.layout import RunDir
from xlt.run.results import item_correct, verified_result
from xlt.run.state import Damaged
from xlt.scoring.jobs import job_settings, resolve
from xlt.scoring.llm import paper
from xlt.scoring.llm.scorer import LLMScorer
from xlt.stages import context


def train_rows(split: str, n: int) -> list[dict]:
    """Training-set rows whose passages say which split and row they are (``TRAIN-3``, ``DEV-0``)."""
    tag = split.upper()
    return [
        {
            "dataset": "race",
            "split": split,
            "passage_id": f"{split}-p{i}",
            "question_id": f"{split}-q{i}",
            "passage": f"{tag}-{i} ka lo mi.",
            "question": f" Ne su {tag}-{i}? ",
            "options": [f"o{i}{c}" for c in "abcd"],
            "label": i % 4,
            "license": "test",
        }
        for i in range(n)
    ]


def write_train_set(folder: Path, n_train: int = 12, n_dev: int = 4) -> Path:
    """A training set as build_data saves it (``TRAIN_FEATURES``, train and dev splits)."""
    from datasets import Dataset, DatasetDict

    dsd = DatasetDict(
        {
            split: Dataset.from_list(train_rows(split, n), features=TRAIN_FEATURES)
            for split, n in (("train", n_train), ("dev", n_dev))
        }
    )
    dsd.save_to_disk(str(folder))
    return folder


@pytest.fixture(scope="module")
def train_run(tmp_path_factory) -> RunDir:
    """A run directory whose build_data output is a 12-row training set."""
    run = RunDir(tmp_path_factory.mktemp("paper_run"))
    write_train_set(run.train_set)
    return run


@pytest.fixture
def paper_cfg(llm_files):
    def make(**llm):
        benchmarks = {"belebele": {"kind": "belebele", "path": str(llm_files["belebele"])}}
        return llm_root_config(
            benchmarks,
            {"model": str(llm_files["model"]), "batch_size": 4, "protocol": "paper", "num_fewshot": 2, **llm},
        )

    return make


def test_the_template_is_the_papers_on_a_hand_written_item():
    rec = {
        "passage": "The cat sat on the mat.",
        "question": " Where did the cat sit? ",
        "options": ["on the mat", "on the sofa", "in the box", "under the bed"],
        "label": 0,
    }
    assert paper.prompt(rec) == (
        "P: The cat sat on the mat.\nQ: Where did the cat sit?\nA: on the mat\n"
        "B: on the sofa\nC: in the box\nD: under the bed\nAnswer:"
    )
    assert paper.target(rec) == "A"
    example = {
        "passage": "Ann ate a pear.",
        "question": "What did Ann eat?",
        "options": ["a pear", "a fig", "a plum", "an apple"],
        "label": 0,
    }
    ((shots, question),) = paper.turns([example], [rec])
    assert shots == [
        (
            "P: Ann ate a pear.\nQ: What did Ann eat?\nA: a pear\nB: a fig\nC: a plum\nD: an apple\nAnswer:",
            "A",
        )
    ] and question == paper.prompt(rec)


def test_the_scorer_reads_the_template_with_the_examples_from_the_training_set(
    paper_cfg, loaded_lm, load_items, train_run
):
    model, tok = loaded_lm
    scorer = LLMScorer(paper_cfg(), train_run, model=model, tokenizer=tok, progress=False)
    items = load_items("belebele", "fra_Latn").select(range(3))
    ctx = scorer.contexts(items, benchmark="belebele", language="fra_Latn")
    rows = paper.draw_rows(12, 2, 1234)
    train = train_rows("train", 12)
    shots = "".join(
        f"P: TRAIN-{i} ka lo mi.\nQ: Ne su TRAIN-{i}?\n"
        + "".join(f"{c}: o{i}{c.lower()}\n" for c in "ABCD")
        + f"Answer: {'ABCD'[train[i]['label']]}\n\n"
        for i in rows
    )
    for rec, text in zip(items, ctx, strict=True):
        assert text == shots + paper.prompt(rec)  # the same examples for every question of the draw


def test_draws_are_deterministic_per_seed_and_differ_across_seeds(
    paper_cfg, loaded_lm, load_items, train_run
):
    assert paper.draw_rows(500, 5, 1234) == paper.draw_rows(500, 5, 1234)
    draws = [tuple(paper.draw_rows(500, 5, s)) for s in paper.draw_seeds(1234, 3)]
    assert paper.draw_seeds(1234, 3) == [1234, 1235, 1236] and len(set(draws)) == 3
    model, tok = loaded_lm
    scorer = LLMScorer(paper_cfg(), train_run, model=model, tokenizer=tok, progress=False)
    items = load_items("belebele", "eng_Latn").select(range(2))
    per_draw = [scorer.contexts(items, benchmark="belebele", language="eng_Latn", draw=d) for d in range(3)]
    assert len({c[0] for c in per_draw}) == 3
    again = LLMScorer(paper_cfg(), train_run, model=model, tokenizer=tok, progress=False)
    assert again.contexts(items, benchmark="belebele", language="eng_Latn", draw=1) == per_draw[1]
    # Another language, the same examples (its own question at the end).
    fra = load_items("belebele", "fra_Latn").select(range(2))
    other = scorer.contexts(fra, benchmark="belebele", language="fra_Latn", draw=1)
    assert other[0].rsplit("\n\n", 1)[0] == per_draw[1][0].rsplit("\n\n", 1)[0]


def test_examples_come_from_the_train_split_never_dev_or_the_test_split(
    paper_cfg, loaded_lm, load_items, train_run
):
    model, tok = loaded_lm
    scorer = LLMScorer(
        paper_cfg(num_fewshot=5, fewshot_draws=3), train_run, model=model, tokenizer=tok, progress=False
    )
    items = load_items("belebele", "eng_Latn")
    passages = {r["passage"] for r in items}
    for d in range(3):
        ctx = scorer.contexts(items, benchmark="belebele", language="eng_Latn", draw=d)
        for text, rec in zip(ctx, items, strict=True):
            shots = text.split("\n\n")[:-1]
            assert len(shots) == 5 and all(s.startswith("P: TRAIN-") for s in shots)
            assert "DEV-" not in text
            assert not any(p in s for p in passages for s in shots)  # no benchmark item among the examples
            assert text.endswith(paper.prompt(rec))
    scores = scorer.score(items, benchmark="belebele", language="eng_Latn")
    meta = scorer.last_meta["fewshot"]
    assert meta["protocol"] == "paper" and meta["seeds"] == [1234, 1235, 1236]
    assert all(e.startswith("race:train-q") for ex in meta["examples"] for e in ex)
    draws = scorer.draw_scores("belebele", "eng_Latn")
    assert len(draws) == 3 and np.allclose(scores, np.mean(draws, axis=0))
    assert scorer.last_meta["comparable_to_harness"] is False


def test_a_run_without_a_training_set_says_how_to_get_one(paper_cfg, tmp_path):
    # Raised before the model loads (the model path does not exist: loading it would fail otherwise).
    with pytest.raises(ConfigError, match=r"build_data.*eval\.llm\.fewshot_source="):
        LLMScorer(paper_cfg(model=str(tmp_path / "no-model")), RunDir(tmp_path / "run"), progress=False)
    with pytest.raises(ConfigError, match=r"fewshot_source=.*nothing-here: no training set there"):
        LLMScorer(
            paper_cfg(model=str(tmp_path / "no-model"), fewshot_source=str(tmp_path / "nothing-here")),
            RunDir(tmp_path / "run"),
            progress=False,
        )


def test_a_named_training_set_run_directory_or_folder(paper_cfg, loaded_lm, load_items, train_run, tmp_path):
    model, tok = loaded_lm
    items = load_items("belebele", "eng_Latn").select(range(2))
    own = LLMScorer(paper_cfg(), train_run, model=model, tokenizer=tok, progress=False).contexts(
        items, benchmark="belebele", language="eng_Latn"
    )
    for source in (train_run.path, train_run.train_set):
        named = LLMScorer(
            paper_cfg(fewshot_source=str(source)),
            RunDir(tmp_path / "llm-only"),
            model=model,
            tokenizer=tok,
            progress=False,
        )
        assert named.contexts(items, benchmark="belebele", language="eng_Latn") == own


def _job_hash(cfg, run: RunDir) -> str:
    return resolve(cfg.eval, "belebele", "fra_Latn").provenance(context(cfg, run, "evaluate"))["job"]


def test_hashes_differ_between_protocols_and_across_draws_seeds_and_training_sets(
    paper_cfg, train_run, tmp_path
):
    harness = paper_cfg(protocol="harness")
    base = paper_cfg()
    hashes = {
        "harness": _job_hash(harness, train_run),
        "paper": _job_hash(base, train_run),
        "draws=2": _job_hash(paper_cfg(fewshot_draws=2), train_run),
        "seed": _job_hash(paper_cfg(fewshot_seed=7), train_run),
        "k=3": _job_hash(paper_cfg(num_fewshot=3), train_run),
    }
    other = RunDir(tmp_path / "other")
    write_train_set(other.train_set, n_train=13)
    hashes["other training set"] = _job_hash(base, other)
    assert len(set(hashes.values())) == len(hashes), hashes
    assert _job_hash(base, train_run) == hashes["paper"]  # deterministic
    # The result records the protocol, its draws and the training set's fingerprint.
    prov = resolve(base.eval, "belebele", "fra_Latn").provenance(context(base, train_run, "evaluate"))
    assert prov["fewshot"] == {
        "protocol": "paper",
        "k": 2,
        "draws": 3,
        "seeds": [1234, 1235, 1236],
        "train_set": paper.train_set_fingerprint(None, train_run),
    }
    assert prov["fewshot"]["train_set"] != paper.train_set_fingerprint(None, other)


def test_the_harness_protocol_hashes_and_settings_are_those_of_a_config_without_the_protocol(
    paper_cfg, train_run
):
    """The default protocol adds nothing to a result's settings, its job values or the evaluate stage's inputs:
    results made before the protocol existed keep their hashes (and a rerun is byte-identical)."""
    cfg = paper_cfg(protocol="harness", fewshot_draws=5, fewshot_source="/elsewhere")
    assert not set(PAPER_KEYS) & set(job_settings(cfg.eval, "belebele")["llm"])
    assert not [k for k in eval_job_values(cfg.eval, "belebele") if k.rsplit(".", 1)[-1] in PAPER_KEYS]
    plain = paper_cfg(protocol="harness")
    assert _job_hash(plain, train_run) == _job_hash(cfg, train_run)  # paper-only keys: off under harness
    ctx = context(plain, train_run, "evaluate")
    assert not [k for k in ctx.detail["config"] if k.rsplit(".", 1)[-1] in PAPER_KEYS]
    assert "eval.llm.fewshot_source" not in ctx.detail["files"]
    # A config as an older xlt wrote it (no protocol keys at all) has the same job values and settings.
    old = OmegaConf.to_container(plain, resolve=True)
    for key in PAPER_KEYS:
        old["eval"]["llm"].pop(key)
    assert eval_job_values(old["eval"], "belebele") == eval_job_values(plain.eval, "belebele")


def test_draws_accuracy_is_the_mean_of_the_draws_with_an_interval_over_questions():
    correct = np.array([[1, 1, 0, 0, 1, 0], [1, 0, 0, 1, 1, 0], [1, 1, 1, 0, 1, 0]], dtype=bool)
    out = draws_accuracy_with_ci(correct, samples=400, seed=0)
    per_draw = [100 * c.mean() for c in correct]
    assert out["accuracy"] == pytest.approx(np.mean(per_draw)) and out["correct"] == 10 and out["n"] == 6
    assert out["ci_low"] <= out["accuracy"] <= out["ci_high"]
    assert draws_accuracy_with_ci(correct, samples=400, seed=0) == out  # seeded
    one = draws_accuracy_with_ci(correct[:1], samples=400, seed=0)
    assert one["accuracy"] == pytest.approx(per_draw[0])
    assert spread(per_draw) == {
        "std": pytest.approx(np.std(per_draw, ddof=1)),
        "min": min(per_draw),
        "max": max(per_draw),
    }
    assert item_correct({"gold": 1, "prediction": 0, "draws": [1, 0, 1]}) == pytest.approx(2 / 3)
    assert item_correct({"gold": 1, "prediction": 1}) == 1.0


def test_the_evaluate_and_report_stages_average_the_draws(llm_files, train_run, tmp_path):
    from tests.scoring.llm.test_recipes import compose_recipe
    from xlt import cli

    args = [
        f"eval.llm.model={llm_files['model']}",
        "eval.llm.batch_size=4",
        "eval.llm.protocol=paper",
        f"eval.benchmarks.belebele.path={llm_files['belebele']}",
        "eval.benchmarks.global_mmlu.enabled=false",
        "eval.bootstrap_samples=50",
        f"eval.llm.fewshot_source={train_run.path}",
        "eval.llm.num_fewshot=3",
        "eval.benchmarks.belebele.languages=[fra_Latn]",
    ]
    cfg = compose_recipe("llm_5shot", *args)
    run = RunDir(tmp_path / "run")
    cli.run_stages(cfg, run, ["evaluate", "report"])
    path = run.eval / "belebele" / "fra_Latn.json"
    res = json.loads(path.read_text())
    assert (
        res["protocol"] == "paper" and res["draws"]["k"] == 3 and res["draws"]["seeds"] == [1234, 1235, 1236]
    )
    assert res["accuracy"] == pytest.approx(np.mean(res["draws"]["accuracy"]))
    assert res["draws"]["std"] == pytest.approx(np.std(res["draws"]["accuracy"], ddof=1))
    assert (
        res["settings"]["llm"]["protocol"] == "paper" and res["scorer_meta"]["fewshot"]["protocol"] == "paper"
    )
    rows = [
        json.loads(x)
        for x in (run.eval / "belebele" / "predictions" / "fra_Latn.jsonl").read_text().splitlines()
    ]
    assert all(len(r["draws"]) == 3 and len(r["draw_scores"]) == 3 for r in rows)
    per_draw = [sum(r["draws"][d] == r["gold"] for r in rows) for d in range(3)]
    assert per_draw == res["draws"]["correct"] and sum(per_draw) == res["correct"]
    assert verified_result(run, "belebele", "fra_Latn") == res
    report = (run.path / "report.md").read_text()
    assert "Few-shot protocol: the Belebele paper's" in report and "draw_accuracies" in report
    assert "Not comparable with lm-evaluation-harness" in report
    assert "draw_std" in (run.path / "report.csv").read_text().splitlines()[0]
    page = (run.path / "report.html").read_text()
    assert "Few-shot protocol" in page and "draw std" in page and res["draws"]["accuracy"]
    # A rerun skips (other draws are another result: see the hash test).
    before = path.stat().st_mtime_ns
    cli.run_stages(cfg, run, ["evaluate"])
    assert path.stat().st_mtime_ns == before
    # A prediction file that lost a draw is damaged, not read as a result.
    tampered = [dict(r, draws=r["draws"][:1]) for r in rows]
    (run.eval / "belebele" / "predictions" / "fra_Latn.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in tampered)
    )
    with pytest.raises(Damaged):
        verified_result(run, "belebele", "fra_Latn")


def test_an_llm_only_run_without_a_training_set_fails_clearly(llm_files, tmp_path):
    from tests.scoring.llm.test_recipes import compose_recipe
    from xlt import cli

    cfg = compose_recipe(
        "llm_5shot",
        f"eval.llm.model={llm_files['model']}",
        "eval.llm.protocol=paper",
        f"eval.benchmarks.belebele.path={llm_files['belebele']}",
        "eval.benchmarks.global_mmlu.enabled=false",
    )
    with pytest.raises(ConfigError, match=r"stages=\[build_data,evaluate,report\]"):
        cli.run_stages(cfg, RunDir(tmp_path / "run"), ["evaluate"])


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ([], "eval.benchmarks.global_mmlu is global_mmlu"),
        (
            ["eval.benchmarks.global_mmlu.enabled=false", "eval.llm.mode=generate"],
            "applies to eval.scorer=llm with",
        ),
        (["eval.benchmarks.global_mmlu.enabled=false", "eval.llm.num_fewshot=0"], "num_fewshot must be >= 1"),
    ],
)
def test_the_config_check_refuses_what_the_protocol_does_not_cover(override, message):
    from tests.scoring.llm.test_recipes import compose_recipe

    with pytest.raises(ConfigError, match=message):
        compose_recipe("llm_5shot", "eval.llm.model=org/m", "eval.llm.protocol=paper", *override)


def test_a_harness_result_is_unchanged_by_the_protocol_code(make_cfg, loaded_lm, load_items):
    """The harness protocol's scores and meta are what they were (no draws, no protocol keys)."""
    model, tok = loaded_lm
    scorer = LLMScorer(make_cfg(num_fewshot=2), model=model, tokenizer=tok, progress=False)
    items = load_items("belebele", "eng_Latn")
    scores = scorer.score(items, benchmark="belebele", language="eng_Latn")
    assert scorer.draw_scores("belebele", "eng_Latn") is None
    # The result file's scorer_meta: the same keys in the same order as before the protocol existed.
    assert list(scorer.last_meta) == [
        "benchmark",
        "language",
        "kind",
        "model",
        "mode",
        "questions",
        "dtype",
        "fewshot",
        "forward",
        "max_length",
        "single_pass_questions",
        "truncated_contexts",
        "parity",
        "prefix_cache",
        "comparable_to_harness",
    ]
    assert scorer.last_meta["fewshot"] == {"k": 2, "split": "test", "sampler": "first_n", "seed": None}
    assert scores.shape == (9, 4)


def test_the_harness_protocol_keeps_the_hashes_xlt_had_before_the_option(tmp_path):
    """The evaluate stage's input hash and a job hash of a harness-protocol LLM config, as computed by xlt before
    eval.llm.protocol existed (main at ba1ce4e): identical, so existing results are neither recomputed nor
    called stale (the fixture run of the evaluate stage was also compared file for file: identical)."""
    from xlt import config as xcfg

    cfg = xcfg.validate(
        {
            "eval": {
                "scorer": "llm",
                "llm": {"model": "org/pinned-llm", "num_fewshot": 5},
                "benchmarks": {"belebele": {"kind": "belebele", "hub_id": "facebook/belebele"}},
            },
            "stages": ["evaluate", "report"],
        }
    )
    run = RunDir(tmp_path / "run")
    ctx = context(cfg, run, "evaluate")
    assert ctx.inputs == "ae47e75843a44e43"
    assert (
        resolve(cfg.eval, "belebele", "fra_Latn").provenance(ctx)["job"]
        == "5d37f442385cc710"
    )
    OmegaConf.update(cfg, "eval.llm.protocol", "paper")
    assert context(cfg, run, "evaluate").inputs != "ae47e75843a44e43"


def test_a_draws_shared_examples_are_encoded_once_with_the_same_scores(
    paper_cfg, loaded_lm, load_items, train_run
):
    """Every question of a draw starts with the same examples: the prefix cache encodes them once per draw, and
    the scores equal those of full passes."""
    model, tok = loaded_lm
    items = load_items("belebele", "eng_Latn").select(range(4))
    cached = LLMScorer(paper_cfg(fewshot_draws=2), train_run, model=model, tokenizer=tok, progress=False)
    with_cache = cached.score(items, benchmark="belebele", language="eng_Latn")
    paths = [d["questions_per_path"] for d in cached.last_meta["prefix_cache"]]
    assert len(paths) == 2 and all(p["prefix_cache"] == len(items) for p in paths), paths
    full = LLMScorer(
        paper_cfg(fewshot_draws=2, prefix_cache=False), train_run, model=model, tokenizer=tok, progress=False
    )
    without = full.score(items, benchmark="belebele", language="eng_Latn")
    np.testing.assert_allclose(with_cache, without, atol=1e-5)  # as the prefix-cache tests of test_loglik.py
    for a, b in zip(
        cached.draw_scores("belebele", "eng_Latn"), full.draw_scores("belebele", "eng_Latn"), strict=True
    ):
        assert (a.argmax(1) == b.argmax(1)).all()


@pytest.mark.slow
def test_the_runs_own_build_data_output_is_the_pool(llm_files, tmp_path):
    """stages=[build_data,evaluate]: the examples are rows of the train split build_data just made (bundled
    RACE and SciQ samples), and the result records that set's fingerprint."""
    from datasets import load_from_disk

    from tests.scoring.llm.test_recipes import compose_recipe
    from xlt import cli

    cfg = compose_recipe(
        "llm_5shot",
        f"eval.llm.model={llm_files['model']}",
        "eval.llm.batch_size=4",
        "eval.llm.protocol=paper",
        "eval.llm.num_fewshot=2",
        "eval.bootstrap_samples=20",
        f"eval.benchmarks.belebele.path={llm_files['belebele']}",
        "eval.benchmarks.belebele.languages=[eng_Latn]",
        "eval.benchmarks.global_mmlu.enabled=false",
        "stages=[build_data,evaluate]",
    )
    run = RunDir(tmp_path / "run")
    cli.run_stages(cfg, run, ["build_data", "evaluate"])
    res = json.loads((run.eval / "belebele" / "eng_Latn.json").read_text())
    meta = res["scorer_meta"]["fewshot"]
    assert res["protocol"] == "paper" and meta["train_set"] == str(run.train_set)
    train = load_from_disk(str(run.train_set))["train"]
    ids = {paper.example_id(r) for r in train}
    assert len(meta["examples"]) == 3 and all(e in ids for ex in meta["examples"] for e in ex)
    assert res["provenance"]["fewshot"]["train_set"] == paper.train_set_fingerprint(None, run)
