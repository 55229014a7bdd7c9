"""Outside the scorers (``xlt/scoring/``) no module compares ``eval.model`` to ``"run"`` or ``eval.scorer`` to a
scorer's name: they ask the scorer's declaration (:mod:`xlt.scoring.declaration`: ``names_run_model``,
``scores_run_model``, ``scores_llm``, ...), so a new scorer (a plug-in's) is asked the same questions (issue 43).

Read from the source with an AST walk: a comparison (``==``, ``!=``, ``in``, ``not in``) one of whose operands is
the string ``"run"`` (alone or in a tuple, list or set) is one, whatever the other side (an attribute, a
``get("model")``, a subscript, a local variable holding it); a comparison to ``"mc"`` or ``"llm"`` is one when
the other side mentions ``scorer``."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "xlt"
SCORERS_DIR = "scoring"  # xlt/scoring/: the scorers and their declarations may name themselves
RUN = "run"
SCORER_NAMES = ("mc", "llm")
# The one allowed elsewhere, with its reason: the config layer (below the scorers) checks the eval.llm section
# before any scorer loads; it asks this one function, which says which scorer the section configures.
ALLOWED = {("config/llm.py", "selected")}


def _strings(node: ast.AST) -> set[str]:
    """The string constants an operand is or holds (a tuple, list or set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def _functions(tree: ast.AST) -> dict[int, str]:
    """Line -> name of the innermost function defined around it (the one starting last)."""
    spans = sorted(
        (node.lineno, node.end_lineno or node.lineno, node.name)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    )
    return {line: name for start, end, name in spans for line in range(start, end + 1)}


def sentinel_comparisons(source: str) -> list[tuple[int, str, str]]:
    """``(line, function, code)`` of every sentinel comparison in ``source`` (see the module docstring)."""
    tree = ast.parse(source)
    where = _functions(tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        found = False
        for i, op in enumerate(operands):
            values = _strings(op)
            others = " ".join(ast.unparse(o) for j, o in enumerate(operands) if j != i)
            if RUN in values or (values & set(SCORER_NAMES) and "scorer" in others):
                found = True
        if found:
            out.append((node.lineno, where.get(node.lineno, "<module>"), ast.unparse(node)))
    return out


def tree_comparisons(root: Path = ROOT) -> list[str]:
    """Every sentinel comparison under ``root`` outside ``root/scoring/`` and :data:`ALLOWED`:
    ``path:line (function): code``."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] == SCORERS_DIR:
            continue
        for line, function, code in sentinel_comparisons(path.read_text()):
            if (rel, function) not in ALLOWED:
                out.append(f"xlt/{rel}:{line} ({function}): {code}")
    return out


def test_no_module_outside_the_scorers_compares_to_a_sentinel():
    assert tree_comparisons() == []


def test_each_form_of_a_sentinel_comparison_is_seen():
    """The forms the tree held before the declarations (issue 43), and the ones that are not comparisons of a
    sentinel (a dict key named "run", another axis named "llm")."""
    seen = [
        'if cfg.eval.model == "run": pass',
        'x = eval_cfg.model != "run"',
        'x = (cfg.get("eval") or {}).get("model") not in (None, "run")',
        'x = report.get("model") != "run"',
        'x = cfg["eval"]["model"] == "run"',
        'evm = get(cfg, "eval.model")\nif evm not in (None, "run"): pass',
        'x = e.scorer == "mc" and e.model == "run"',
        'x = cfg.eval.scorer != "llm"',
        'x = _get(cfg, "eval.scorer") == "llm"',
        'x = "llm" == cfg["eval"]["scorer"]',
    ]
    for code in seen:
        assert sentinel_comparisons(code), code
    for code in (
        'rows = [d for d in diffs if d["run"] == lab]',
        'x = s.setting != "llm"',
        'x = scope == "llm"',
        'x = cfg.eval.scorer == "gold"',
        'x = name == "running"',
    ):
        assert not sentinel_comparisons(code), code


def test_the_allowed_one_is_there_and_only_in_its_function(tmp_path):
    """The allowance names a function, not a file: the same comparison elsewhere in that file is reported."""
    # still there: the allowance is not stale
    assert sentinel_comparisons((ROOT / "config" / "llm.py").read_text())
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "llm.py").write_text(
        'def selected(e):\n    return e.scorer == "llm"\n\n\ndef other(e):\n    return e.scorer == "llm"\n'
    )
    (tmp_path / "scoring").mkdir()
    (tmp_path / "scoring" / "mc.py").write_text('def own(e):\n    return e.model == "run"\n')
    assert tree_comparisons(tmp_path) == ["xlt/config/llm.py:6 (other): e.scorer == 'llm'"]
