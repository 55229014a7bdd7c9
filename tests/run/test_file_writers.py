"""xlt.run.files: the one strict-JSON writer (NaN -> null, numpy -> Python) every result file goes through."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from xlt.run.files import atomic_write_json, json_text, strict_json


def test_strict_json_turns_what_json_cannot_hold_into_plain_values():
    value = {1: np.float32(0.5), "nan": float("nan"), "inf": np.float64("-inf"), "ints": np.arange(3),
             "flag": np.bool_(True), "na": pd.NA, "tuple": (np.int64(7), None), "path": Path("a/b"),
             "cfg": OmegaConf.create({"langs": ["fra_Latn"]})}
    out = strict_json(value)
    assert out == {"1": 0.5, "nan": None, "inf": None, "ints": [0, 1, 2], "flag": True, "na": None,
                   "tuple": [7, None], "path": "a/b", "cfg": {"langs": ["fra_Latn"]}}
    assert [type(out[k]) for k in ("1", "flag")] == [float, bool] and type(out["ints"][0]) is int


def test_json_text_is_strict_and_keeps_non_ascii(tmp_path):
    text = json_text({"name": "Français", "acc": float("nan"), "rows": pd.DataFrame({"a": [1.0, np.nan]}).to_dict("records")})
    assert "NaN" not in text and "Français" in text
    assert json.loads(text) == {"name": "Français", "acc": None, "rows": [{"a": 1.0}, {"a": None}]}
    assert "\n" not in json_text({"a": [1, 2]}, indent=None)
    atomic_write_json(tmp_path / "r.json", {"x": np.float64("nan")})
    assert json.loads((tmp_path / "r.json").read_text(), parse_constant=pytest.fail) == {"x": None}


def test_xlt_has_one_strict_json_writer():
    """Every JSON result goes through xlt.run.files: no other module sets json's NaN policy or cleans NaN itself."""
    root = Path(__file__).resolve().parents[2] / "xlt"
    writers = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                     if any(k in p.read_text(encoding="utf-8") for k in ("allow_nan", "_json_safe", "def _clean(")))
    assert writers == ["run/files.py"]
