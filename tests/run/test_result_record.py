"""The one builder of a result record (xlt/run/results.py: ``result_record``): every writer's fields in one order,
what a writer adds after them in the order given, and a record its own reader would refuse is never built."""

from __future__ import annotations

import pytest

from xlt.metrics import accuracy_with_ci
from xlt.run.files import atomic_write_json, atomic_write_text
from xlt.run.layout import RunDir
from xlt.run.results import result_record, verified_result

HEAD = ["benchmark", "kind", "language", "code", "split", "scorer", "model", "translate_test"]
TAIL = ["settings", "accuracy", "n", "correct", "ci_low", "ci_high", "chance", "ties", "truncated", "data_checks"]


def _record(**kw):
    base = {"benchmark": "belebele", "kind": "belebele", "language": "fra_Latn", "code": "fra", "split": "test",
            "scorer": "mc", "model": "m", "translate_test": False, "settings": {},
            "accuracy": accuracy_with_ci([True, False, True, True], 20, 0), "chance": 25.0, "ties": 0,
            "data_checks": {}}
    return result_record(**{**base, **kw})


def test_the_fields_come_in_one_order_and_extras_after_them():
    plain = _record()
    assert list(plain) == HEAD + TAIL
    assert plain["accuracy"] == 75.0 and plain["n"] == 4 and plain["correct"] == 3 and plain["truncated"] is None
    translated = _record(machine_translated_from="eng_Latn", scorer_meta={"x": 1}, subsets={"full": {}})
    assert list(translated) == [*HEAD, "machine_translated_from", *TAIL, "scorer_meta", "subsets"]
    # the order a caller gives its extras is kept (an imported harness folder: per_question before scorer_meta)
    assert list(_record(per_question=False, per_question_note="n", scorer_meta={}))[-3:] == [
        "per_question", "per_question_note", "scorer_meta"]


def test_a_record_is_read_back_by_its_reader(tmp_path):
    run = RunDir(tmp_path)
    result = _record()
    atomic_write_json(run.result("belebele", "fra_Latn"), result)
    atomic_write_text(run.predictions("belebele", "fra_Latn"), "".join(
        f'{{"id": "{i}", "gold": 0, "prediction": {p}, "scores": [0.0, 0.0, 0.0, 0.0]}}\n'
        for i, p in enumerate([0, 1, 0, 0])))
    assert verified_result(run, "belebele", "fra_Latn") == result


def test_a_record_its_reader_would_refuse_is_not_built():
    with pytest.raises(ValueError, match="result record of belebele/fra_Latn: field 'n'"):
        _record(accuracy={"accuracy": 75.0})  # no n / correct: not what accuracy_with_ci gives
