"""The checked readers of what a stage leaves for later ones: the training set (build_data), the trained
model (train), the translate stage's finished parts and merged (or imported) translations, and the
fingerprints a done stage seals its outputs with.

A later stage, the reporting and the tools read these artifacts here, never through the stage that wrote
them (no stage imports another stage: ``tests/test_layers.py``). Each reader checks what it reads against the
record its writer left (the done-marker's fingerprints, the model's ``xlt_provenance.json``, a folder's seal:
:func:`xlt.run.state.read_sealed`) and names the fix when it does not match. The evaluation results and
predictions have their own readers beside these.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xlt.errors import ConfigError, DataError
from xlt.run.files import remove_path
from xlt.run.fingerprint import path_fingerprint
from xlt.run.layout import MERGED_FILE, PART_STATS_FILE, RunDir
from xlt.run.state import (
    MODEL_PROVENANCE,
    Damaged,
    StateError,
    load_dataset_dir,
    read_sealed,
    read_state,
    redo,
)

# --- sealed outputs of a done stage (StageSpec.sealed: their fingerprints go into its done-marker) ---------


def sealed_fingerprint(path: Path) -> str:
    """Fingerprint of an output folder as its stage wrote it (``datasets`` map caches left out)."""
    if not path.is_dir():
        return path_fingerprint(path)
    files = [p for p in path.rglob("*") if p.is_file() and not p.name.startswith(("cache-", "tmp", "."))]
    return path_fingerprint(path, files)


def sealed_problems(run: RunDir, stage: str) -> list[str]:
    """Outputs of a done stage whose content is no longer what the stage wrote (its marker records their
    fingerprints): Arrow files cannot be checked by their structure alone (a truncated stream reads short)."""
    try:
        recorded = run.done_info(stage).get("provenance", {}).get("outputs") or {}
    except Damaged:
        return []
    return [
        f"{rel} changed or damaged since {stage} wrote it"
        for rel, fp in recorded.items()
        if sealed_fingerprint(run.path / rel) != fp
    ]


# --- the training set (the build_data stage) -------------------------------------------------------------


def checked_train_set(run: RunDir) -> Any:
    """``run.train_set`` as the build_data stage wrote it (its Arrow data checked against the fingerprints
    in its marker); a missing, damaged or changed set is a :class:`~xlt.errors.DataError` naming the fix."""
    fix = "run the build_data stage (python -m xlt.build_data with the same recipe and overrides: it rebuilds it)"
    # dataset_dict.json: the file `datasets` writes into a saved DatasetDict (a library's own name)
    if not (run.train_set / "dataset_dict.json").is_file():
        raise DataError(f"no training set at {run.train_set}: {fix}")
    try:
        changed = sealed_problems(run, "build_data")
        if changed:
            raise Damaged(run.train_set, changed[0])
        return load_dataset_dir(run.train_set)
    except Damaged as err:
        raise DataError(f"{err}; {fix}") from None


# --- the trained model (the train stage) -----------------------------------------------------------------


def model_problem(run: RunDir) -> str | None:
    """Why ``run.model`` is not the model the train stage saved (None: its files match the fingerprint
    recorded in ``model/xlt_provenance.json``)."""
    if not run.model.exists():
        return None  # no model yet: scoring says so (train first)
    prov_file = run.model_provenance
    try:
        prov = read_state(prov_file, MODEL_PROVENANCE)
    except Damaged as err:
        return f"{prov_file} is damaged ({err.why}), so the weights cannot be checked"
    if prov is None:
        return f"{prov_file} is missing, so the weights in {run.model} cannot be checked"
    now = path_fingerprint(run.model)
    if now != prov["fingerprint"]:
        return (
            f"the files in {run.model} no longer match what the train stage saved ({prov_file} records "
            f"fingerprint {prov['fingerprint']}, the files give {now}: weights replaced, edited or truncated)"
        )
    return None


def check_model(run: RunDir) -> None:
    """Refuse a run model that is not what training produced (:class:`~xlt.run.state.StateError`): the user
    decides what it should be."""
    problem = model_problem(run)
    if problem:
        raise StateError(
            f"{problem}.\n  To retrain it: add force=true 'stages=[train,evaluate,report]' to the command. To score "
            f"other weights, give them their own folder and pass eval.model=/path/to/that/folder (another run)."
        )


# --- translations (the translate stage and the importer) -------------------------------------------------


def read_part(run: RunDir, language: str, unit: str) -> tuple[Any, Any] | None:
    """``(quality counts, rows)`` of a finished part of the translate stage (``unit``: its name), checked
    against its seal (:func:`xlt.run.state.read_sealed`); None if it is not finished, or damaged (logged and
    removed: the unit is translated again, from the segment cache)."""
    folder = run.translation_part(language, unit)
    try:
        return read_sealed(folder, PART_STATS_FILE)
    except Damaged as err:
        redo(err, "translated again (from the segment cache)")
        remove_path(folder)
        return None


def merged_info(run: RunDir, language: str) -> dict[str, Any] | None:
    """The record of a finished merge of ``language`` (units, quality counts), checked with its Arrow data
    (:mod:`xlt.run.state`); None if not merged, or damaged (logged: the language is translated again, from
    the segment cache)."""
    try:
        sealed = read_sealed(run.translated_language(language), MERGED_FILE, {"units": list, "stats": dict})
        return sealed[0] if sealed else None
    except Damaged as err:
        redo(err, "translated again (from the segment cache)")
        return None


def merged_units(run: RunDir, language: str) -> list[str] | None:
    """Unit names a finished merge of ``language`` was built from (None if not merged or damaged)."""
    info = merged_info(run, language)
    return info["units"] if info else None


def read_merged(run: RunDir, language: str) -> Any:
    """The merged translation of ``language`` (a DatasetDict), checked against its seal, for the translate
    stage that has just merged or checked it (a :class:`~xlt.run.state.StateError` naming the fix if it was
    damaged since: it is read right after its check, so only a concurrent writer gets here)."""
    folder = run.translated_language(language)
    try:
        sealed = read_sealed(folder, MERGED_FILE)
    except Damaged as err:
        raise StateError(
            f"{err}; rerun the translate stage (it translates it again from the segment cache)"
        ) from None
    if sealed is None:
        raise StateError(f"{folder}: no {MERGED_FILE}; rerun the translate stage")
    return sealed[1]


def checked_translation(run: RunDir, language: str) -> Any:
    """The translation of ``language`` the translate stage (or the importer) sealed, for a later stage (the
    translate-train-all union): missing is a :class:`~xlt.errors.ConfigError` naming how to make it; damaged
    or unfinished a :class:`~xlt.errors.DataError` naming the fix."""
    path = run.translated_language(language)
    if not path.exists():
        raise ConfigError(
            f"translate-train-all: translations into {language!r} are configured (translate.languages / "
            f"translate.import_dir) but {path} does not exist: run the translate stage first "
            "(python -m xlt.translate with the same recipe, or add `translate` to stages), or train on "
            "English only with translate=none."
        )
    try:  # sealed by the translate stage (or the importer) with its data's fingerprint
        sealed = read_sealed(path, MERGED_FILE)
    except Damaged as err:
        raise DataError(f"{err}; rerun the translate stage (it redoes the damaged language)") from None
    if sealed is None:
        raise DataError(
            f"{path}: the translation of {language} is unfinished (no {MERGED_FILE}); rerun the "
            "translate stage"
        )
    return sealed[1]
