"""Hub loads go through xlt.hub.hub_resource: offline, they fail with a fix naming the local-copy key."""

from __future__ import annotations

import pytest

from xlt.config.data import SourceConfig
from xlt.data.sources import BuildContext
from xlt.data.sources.race import Race
from xlt.errors import ConfigError, HubUnavailableError


def test_offline_hub_load_names_local_copy_key(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cfg = SourceConfig(hub_id="ehovy/race-xlt-test-does-not-exist", config_name="all", revision="main")
    with pytest.raises(HubUnavailableError, match=r"data\.sources\.race\.path"):
        Race(cfg).load(BuildContext())


def test_source_without_path_or_hub_id():
    with pytest.raises(ConfigError, match=r"data\.sources\.race: set 'path'"):
        Race(SourceConfig()).load(BuildContext())
