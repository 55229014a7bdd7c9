"""Hub loading errors: missing local paths and unreachable Hub resources say what to do."""

from __future__ import annotations

import pytest

from xlt import hub
from xlt.errors import ConfigError, HubUnavailableError


@pytest.mark.parametrize("name", ["/no/such/model", "./missing", "../up/model", "~/nothing/here", "a/b/c"])
def test_missing_local_paths_are_config_errors(name):
    with pytest.raises(ConfigError, match="does not exist"), hub.hub_resource("model", name, None, "model.name_or_path"):
        raise AssertionError("not reached")


@pytest.mark.parametrize("name", ["FacebookAI/xlm-roberta-base", "gpt2",
                                  "https://fedora.clarin-d.uni-saarland.de/sfb1102/MCScript-2.0.zip"])
def test_hub_ids_and_urls_are_not_paths(name):
    assert not hub.looks_like_path(name)


def test_unreachable_hub_error_names_the_fix(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub, "prefetch_hint", lambda: "python -m xlt.prefetch +recipe=xlmr_zeroshot")

    class LocalEntryNotFoundError(Exception):
        pass

    with pytest.raises(HubUnavailableError) as err, hub.hub_resource("model", "org/m", "abc", "model.name_or_path"):
        raise LocalEntryNotFoundError("not in cache")
    msg = str(err.value)
    assert "org/m" in msg and "abc" in msg and "HF_HUB_OFFLINE=1" in msg
    assert "python -m xlt.prefetch +recipe=xlmr_zeroshot" in msg and "model.name_or_path=" in msg


def test_other_errors_pass_through():
    with pytest.raises(ValueError, match="bad"), hub.hub_resource("model", "org/m"):
        raise ValueError("bad")
