"""One run-directory layout: every name a run directory holds is a constant of :mod:`xlt.run.layout` (joined by
:class:`xlt.run.layout.RunDir`), and no other module of ``xlt/`` spells one. Read from the source with an AST walk
over string constants (docstrings left out): a file name (``train_metrics.json``, ``data/train_set``) may
appear nowhere else; a folder name that is also an ordinary word or config key (``model``, ``eval``,
``data``) only where it is joined into a path (``x / "model"``, ``Path("model")``)."""

from __future__ import annotations

import ast
from pathlib import Path

import xlt.run.layout as layout
from xlt.run.layout import RunDir

ROOT = Path(__file__).resolve().parents[2] / "xlt"
LAYOUT = ROOT / "run" / "layout.py"

# The data layer never sees a run directory (tests/test_layers.py): a "data" folder there is a dataset's own.
NOT_RUN_DIRECTORIES = ("data/", "assets/")

# (module, literal): why it may stay where it is.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("run/fingerprint.py", "README.md"): "xlt.run.fingerprint sits below the layout (the layout reads through "
                                         "xlt.run.state, which fingerprints) and leaves a folder's "
                                     "card out of any folder's fingerprint, a run's model or a packaged one",
    ("run/fingerprint.py", "xlt_provenance.json"): "as README.md: a folder's own provenance record is not its content",
}


def _names() -> tuple[set[str], set[str]]:
    """The layout's names: (file names and nested paths, checked everywhere; plain folder names, checked
    where they are joined into a path)."""
    values = {v for k, v in vars(layout).items() if k.isupper() and isinstance(v, str)}
    values |= {f"{layout.REPORT_STEM}.{ext}" for ext in layout.REPORT_FORMATS}
    parts = {p for v in values for p in v.split("/")} | values
    files = {p for p in parts if "." in p or "/" in p}
    return files, parts - files - {layout.REPORT_STEM}


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _path_operands(tree: ast.AST) -> set[int]:
    """String constants joined into a path: an operand of ``/``, an argument of ``Path(...)`` or ``joinpath``."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            out |= {id(n) for n in (node.left, node.right) if isinstance(n, ast.Constant)}
        elif isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("Path", "joinpath", "PurePath"):
                out |= {id(a) for a in node.args if isinstance(a, ast.Constant)}
    return out


def spelled_outside(root: Path = ROOT) -> list[str]:
    """``module:line: literal`` for every layout name spelled outside the layout module."""
    files, folders = _names()
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if path == LAYOUT or rel.startswith(NOT_RUN_DIRECTORIES):
            continue
        tree = ast.parse(path.read_text())
        skip, joined = _docstrings(tree), _path_operands(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in skip:
                continue
            hit = node.value in files or (node.value in folders and id(node) in joined)
            if hit and (rel, node.value) not in EXCEPTIONS:
                found.append(f"{rel}:{node.lineno}: {node.value!r}")
    return found


def test_no_module_spells_a_run_directory_name_but_the_layout():
    assert spelled_outside() == []


def test_the_check_sees_a_name_spelled_elsewhere(tmp_path):
    (tmp_path / "stage.py").write_text('"""train_metrics.json in a docstring is prose."""\n'
                                       'def f(run, cfg):\n'
                                       '    cfg["model"]  # a config key, not a path\n'
                                       '    return run.path / "model", "train_metrics.json"\n')
    assert sorted(spelled_outside(tmp_path)) == ["stage.py:4: 'model'", "stage.py:4: 'train_metrics.json'"]


def test_every_exception_is_still_needed():
    """An exception whose literal is gone from its module is dropped from EXCEPTIONS."""
    for module, literal in EXCEPTIONS:
        tree = ast.parse((ROOT / module).read_text())
        assert any(isinstance(n, ast.Constant) and n.value == literal for n in ast.walk(tree)), (module, literal)


def test_run_dir_joins_the_layout_names(tmp_path):
    """The paths the stages, the report and the tests rely on (byte-identical to the layout before it had one module)."""
    run = RunDir(tmp_path)
    assert run.train_set == tmp_path / "data" / "train_set"
    assert run.build_report == tmp_path / "data" / "build_report.json"
    assert run.translated_language("fra_Latn") == tmp_path / "data" / "translated" / "fra_Latn"
    assert run.translation_parts == tmp_path / "data" / "translated" / ".parts"
    assert run.model_provenance == tmp_path / "model" / "xlt_provenance.json"
    assert run.train_metrics == tmp_path / "train_metrics.json"
    assert run.result("bele", "fra_Latn") == tmp_path / "eval" / "bele" / "fra_Latn.json"
    assert run.predictions("bele", "fra_Latn") == tmp_path / "eval" / "bele" / "predictions" / "fra_Latn.jsonl"
    assert run.report("html") == tmp_path / "report.html"
    assert (run.marker("train"), run.attempt("train"), run.failed("train")) == (
        tmp_path / "stages" / "train.json", tmp_path / "stages" / "train.attempt", tmp_path / "stages" / "train.failed")
