"""xlt.tracking: off by default, rank 0 only, redacted config, report tables and plots."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.training.conftest import make_cfg
from xlt import tracking
from xlt.errors import ConfigError
from xlt.run.layout import RunDir


def test_none_logger_is_a_no_op(run_dir, tmp_path):
    cfg = make_cfg()
    assert tracking.init(cfg.logger, run_dir, cfg) is None and tracking.report_to(cfg.logger) == ["none"]
    missing = tmp_path / "does-not-exist.png"
    tracking.log_report(cfg.logger, run_dir, cfg, [missing], {"t": pd.DataFrame({"a": [1]})})  # nothing touched
    assert not (run_dir.path / "wandb").exists()


def test_bad_kind_or_mode_is_a_config_error(run_dir):
    with pytest.raises(ConfigError, match="logger.kind"):
        cfg = make_cfg(**{"logger.kind": "tensorboard"})
        tracking.init(cfg.logger, run_dir, cfg)
    with pytest.raises(ConfigError, match="logger.mode"):
        cfg = make_cfg(**{"logger.kind": "wandb", "logger.mode": "sometimes"})
        tracking.init(cfg.logger, run_dir, cfg)


def test_only_rank_zero_logs(run_dir, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    cfg = make_cfg(**{"logger.kind": "wandb", "logger.mode": "disabled"})
    assert tracking.init(cfg.logger, run_dir, cfg) is None


def test_run_id_is_stable_per_run_directory(tmp_path):
    a, b = RunDir(tmp_path / "x" / "seed=1"), RunDir(tmp_path / "x" / "seed=2")
    assert tracking.run_id(a) == tracking.run_id(RunDir(tmp_path / "x" / "seed=1")) != tracking.run_id(b)


def test_offline_wandb_run_logs_redacted_config_and_report(run_dir, tmp_path, monkeypatch):
    """An offline W&B run (no key, no network) in the run directory: config without secrets, tables, plots."""
    wandb = pytest.importorskip("wandb")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    cfg = make_cfg(**{"logger.kind": "wandb", "logger.mode": "offline", "logger.group": "g",
                      "translate.model_name_or_path": "hf_" + "A" * 30})
    run_dir.path.mkdir(parents=True)
    plot = tmp_path / "acc.png"
    plt.plot([1, 2])
    plt.savefig(plot)
    plt.close()
    csv = tmp_path / "report.csv"
    csv.write_text("lang,acc\neng,0.5\n")
    page = tmp_path / "report.html"
    page.write_text("<!DOCTYPE html><html><body>results</body></html>")
    wb = tracking.init(cfg.logger, run_dir, cfg)
    logged, artifacts = {}, []
    real_log, real_log_artifact = wb.log, wb.log_artifact
    monkeypatch.setattr(wb, "log", lambda data, *a, **k: (logged.update(data), real_log(data, *a, **k))[1])
    monkeypatch.setattr(wb, "log_artifact", lambda art, *a, **k: (artifacts.append(art), real_log_artifact(art, *a, **k))[1])
    assert wb is not None and wb.id == tracking.run_id(run_dir) and wb.group == "g"
    assert wb.config["translate"]["model_name_or_path"] == "***"  # secret-looking value redacted
    # Run-level values go to the summary, not into the curves as one more step.
    tracking.summarize({"best_dev_accuracy": 0.5, "train_loss": 1.2})
    assert wb.summary["best_dev_accuracy"] == 0.5 and wb.summary["train_loss"] == 1.2
    tracking.log_report(cfg.logger, run_dir, cfg, [plot, csv, page], {"belebele": pd.DataFrame({"lang": ["eng"], "acc": [0.5]})})
    assert wandb.run is None  # log_report finished the run
    # tables, plots and the results page (an Html panel, and a file of the report artifact beside the tables)
    assert isinstance(logged["report/belebele"], wandb.Table) and isinstance(logged["plots/acc"], wandb.Image)
    assert isinstance(logged["report/report_page"], wandb.Html) and "results" in logged["report/report_page"].html
    report = [a for a in artifacts if a.name.startswith("report-")]  # (wandb.Table makes its own artifact too)
    assert len(report) == 1 and set(report[0].manifest.entries) == {"report.csv", "report.html"}
    runs = list((run_dir.path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and any(runs[0].rglob("*.wandb"))
