"""`xlt push` offline: the dry run's exact file list, a recorded call of huggingface_hub's upload, and the
refusals (damaged or stale runs, secrets, no network, no token), on constructed finished runs."""

from __future__ import annotations

import json
import shutil

import huggingface_hub
import pytest
from huggingface_hub import constants

from tests.pushable import MODEL_FILES, pushable_run, run_config, write_card
from xlt import push as xpush

FAKE_TOKEN = "hf_" + "Ab3" * 12  # the form of a Hugging Face token, no real one
JUNK = {  # what a careless copy leaves in a model folder: never uploaded
    "checkpoint-500/optimizer.pt": "a training checkpoint",
    "checkpoint-500/model.safetensors": "a training checkpoint",
    "optimizer.pt": "optimizer state",
    "scheduler.pt": "learning-rate scheduler state",
    "rng_state_0.pth": "random-number generator state",
    "training_args.bin": "training arguments (a pickle)",
    "pytorch_model.bin": "a pickle (weights go as safetensors)",
    "trainer_state.json": "Trainer state",
    ".env": "a hidden file",
    "notes.txt": "not a model, tokenizer or card file",
    "xlt_provenance.json": "the run's own provenance record (the card says what produced the model)",
}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return pushable_run(tmp_path_factory.mktemp("push") / "xlmr_zeroshot" / "default")


@pytest.fixture
def run(template, tmp_path):
    """A fresh copy of the finished run, with junk beside the model's files (recorded in its provenance as
    if training had saved it there: only the file filter keeps it out)."""
    dest = tmp_path / "xlmr_zeroshot" / "default"
    shutil.copytree(template.path, dest)
    from xlt.run.layout import RunDir

    r = RunDir(dest)
    for rel in JUNK:
        if not (r.model / rel).exists():
            (r.model / rel).parent.mkdir(parents=True, exist_ok=True)
            (r.model / rel).write_bytes(b"junk")
    refingerprint(r)
    return r


def refingerprint(r) -> None:
    """Record the model folder's files as they are now in its provenance and card (as the train and report
    stages would)."""
    from xlt.run.fingerprint import path_fingerprint

    prov = json.loads(r.model_provenance.read_text())
    r.model_provenance.write_text(json.dumps({**prov, "fingerprint": path_fingerprint(r.model)}))
    write_card(r, run_config())


@pytest.fixture
def recorder(monkeypatch):
    """huggingface_hub's HfApi calls replaced by a record of their arguments (no network)."""
    calls = []
    for name in ("create_repo", "create_branch", "upload_folder"):
        monkeypatch.setattr(
            huggingface_hub.HfApi,
            name,
            lambda self, *a, _n=name, **k: calls.append((_n, a, k)) or f"https://hf.co/commit/{_n}",
        )
    return calls


@pytest.fixture
def online(monkeypatch, tmp_path):
    """Online with a token from HF_TOKEN; no token file of this machine is read."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.delenv("HF_OIDC_RESOURCE", raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))


def test_dry_run_lists_exactly_the_model_files(run, capsys):
    up = xpush.plan_upload(run.path)
    assert up.names == MODEL_FILES
    assert dict(up.left_out) == JUNK
    assert xpush.main([str(run.path), "--repo-id", "me/xlmr-belebele", "--dry-run", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["files"] == MODEL_FILES and listing["left_out"] == JUNK
    assert (listing["repo_id"], listing["private"], listing["revision"]) == (
        "me/xlmr-belebele",
        False,
        "main",
    )


def test_dry_run_through_the_console_command(template, capsys):
    from xlt.__main__ import main

    with pytest.raises(SystemExit) as ended:
        main(["push", str(template.path), "--repo-id", "me/xlmr-belebele", "--private", "--dry-run"])
    assert ended.value.code == 0
    out = capsys.readouterr().out
    assert "would upload 6 file(s)" in out and "private model repository me/xlmr-belebele" in out
    listed = [line.split()[0] for line in out.splitlines()[1:7]]
    assert listed == MODEL_FILES


def test_upload_call_is_one_commit_of_exactly_those_files(run, recorder, online, capsys):
    assert (
        xpush.main(
            [
                str(run.path),
                "--repo-id",
                "me/xlmr-belebele",
                "--private",
                "--revision",
                "seed-1",
                "--commit-message",
                "first share",
            ]
        )
        == 0
    )
    assert [c[0] for c in recorder] == ["create_repo", "create_branch", "upload_folder"]
    (_, args, kw) = recorder[0]
    assert args == ("me/xlmr-belebele",) and kw == {"repo_type": "model", "private": True, "exist_ok": True}
    assert recorder[1][1:] == (
        ("me/xlmr-belebele",),
        {"branch": "seed-1", "repo_type": "model", "exist_ok": True},
    )
    kw = recorder[2][2]
    assert (
        kw["repo_id"] == "me/xlmr-belebele"
        and kw["folder_path"] == str(run.model)
        and kw["revision"] == "seed-1"
    )
    assert kw["allow_patterns"] == MODEL_FILES and kw["commit_message"] == "first share"
    # huggingface_hub's own filter over the folder's files picks exactly the listed ones
    from huggingface_hub.utils import filter_repo_objects

    every = sorted(p.relative_to(run.model).as_posix() for p in run.model.rglob("*") if p.is_file())
    assert (
        sorted(
            filter_repo_objects(
                every, allow_patterns=kw["allow_patterns"], ignore_patterns=kw["ignore_patterns"]
            )
        )
        == MODEL_FILES
    )
    assert sorted(filter_repo_objects(every, ignore_patterns=kw["ignore_patterns"])) == sorted(
        [*MODEL_FILES, "notes.txt"]
    )  # the ignore patterns alone already keep every refused file out
    assert "pushed 6 file(s) to me/xlmr-belebele" in capsys.readouterr().out


def test_main_branch_needs_no_branch_created(run, recorder, online):
    assert xpush.main([str(run.path), "--repo-id", "me/m"]) == 0
    assert [c[0] for c in recorder] == ["create_repo", "upload_folder"]
    assert recorder[0][2]["private"] is False and recorder[1][2]["revision"] is None


def test_offline_stops_naming_hf_hub_offline(run, recorder, online, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert xpush.main([str(run.path), "--repo-id", "me/m"]) == 2
    assert "HF_HUB_OFFLINE is set" in capsys.readouterr().err and recorder == []


def test_no_token_stops_naming_hf_token_and_login(run, recorder, online, monkeypatch, capsys):
    monkeypatch.delenv("HF_TOKEN")
    assert xpush.main([str(run.path), "--repo-id", "me/m"]) == 2
    err = capsys.readouterr().err
    assert "no Hugging Face token" in err and "HF_TOKEN" in err and "hf auth login" in err and recorder == []


def test_hub_failure_is_a_clear_error(run, online, monkeypatch, capsys):
    def refuse(self, *a, **k):
        raise ConnectionError("no route to huggingface.co")

    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", refuse)
    assert xpush.main([str(run.path), "--repo-id", "me/m"]) == 2
    assert "pushing to me/m failed: ConnectionError: no route to huggingface.co" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["tokenizer_config.json", "README.md", "config.json"])
def test_a_token_in_a_file_to_upload_is_refused(run, where, recorder, online, capsys):
    text = (run.model / where).read_text()
    (run.model / where).write_text(
        text.replace("}", f', "note": "{FAKE_TOKEN}"}}', 1)
        if where.endswith(".json")
        else text + f"\ntoken {FAKE_TOKEN}\n"
    )
    if where != "README.md":  # as if training had saved it (the card is not part of the fingerprint)
        refingerprint(run)
    assert xpush.main([str(run.path), "--repo-id", "me/m", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert f"{where} holds a secret (HF_TOKEN)" in err and FAKE_TOKEN not in err and recorder == []


def test_a_token_in_the_safetensors_header_is_refused(run, monkeypatch, capsys):
    import numpy as np
    from safetensors.numpy import save_file

    monkeypatch.delenv("HF_TOKEN", raising=False)
    save_file(
        {"w": np.zeros(2, dtype=np.float32)}, str(run.model / "model.safetensors"), metadata={"t": FAKE_TOKEN}
    )
    refingerprint(run)  # as if training saved these weights: only the secret stops the push
    with pytest.raises(xpush.PushError, match=r"model.safetensors holds a secret \(a Hugging Face token"):
        xpush.plan_upload(run.path)


def test_weights_that_are_not_what_training_saved_are_refused(run):
    (run.model / "model.safetensors").write_bytes((run.model / "model.safetensors").read_bytes()[:-4])
    with pytest.raises(xpush.PushError, match="no longer match what the train stage saved"):
        xpush.plan_upload(run.path)


def test_missing_or_damaged_results_are_refused(run):
    report = run.report().read_text()
    run.report().write_text(report[: len(report) // 2])
    with pytest.raises(xpush.PushError, match="report.json is damaged"):
        xpush.plan_upload(run.path)
    run.report().unlink()
    with pytest.raises(xpush.PushError, match="report.json is missing"):
        xpush.plan_upload(run.path)


def test_a_card_of_other_results_is_refused(run):
    report = json.loads(run.report().read_text())
    report["benchmarks"]["belebele"]["per_language"][0]["accuracy"] = 12.5
    run.report().write_text(json.dumps(report))
    with pytest.raises(xpush.PushError, match="the model card is not the card of these results"):
        xpush.plan_upload(run.path)


def test_a_report_older_than_the_evaluation_is_refused(run):
    run.mark_done(
        "evaluate", {"provenance": {"inputs": "e2", "output_id": "E2", "upstream": {"train": "T1"}}}
    )
    with pytest.raises(xpush.PushError, match="not the report of this run's evaluation"):
        xpush.plan_upload(run.path)


def test_an_evaluation_of_an_earlier_training_is_refused(run):
    run.mark_done("train", {"provenance": {"inputs": "t2", "output_id": "T2"}})
    with pytest.raises(xpush.PushError, match="not of this run's trained model"):
        xpush.plan_upload(run.path)


def test_a_run_without_a_model_and_a_bad_repo_id_are_refused(run, capsys):
    shutil.rmtree(run.model)
    with pytest.raises(xpush.PushError, match="no trained model in this run"):
        xpush.plan_upload(run.path)
    assert xpush.main([str(run.path), "--repo-id", "not a repo id!", "--dry-run"]) == 2
    assert "--repo-id 'not a repo id!'" in capsys.readouterr().err
