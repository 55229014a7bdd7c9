"""xlt's layers, read from the source: every import (at module level or inside a function) goes down or
stays in its layer, there is no import cycle, and an import inside a function is there only for start-up
time, saying so (``# lazy: start-up time``): a lazy import that dodges a cycle would hide the cycle."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "xlt"
LAZY_MARK = "# lazy: start-up time"

# Bottom first: a module imports modules of its own layer and the layers below, never above.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("xlt", "xlt.errors", "xlt.markdown", "xlt.languages", "xlt.registry", "xlt.secrets", "xlt.progress",
              "xlt.metrics", "xlt.batching", "xlt.assets")),
    ("config", ("xlt.config",)),
    ("run directory and Hub", ("xlt.run", "xlt.hub")),
    ("data", ("xlt.data",)),
    ("library", ("xlt.modeling", "xlt.translation", "xlt.training", "xlt.scoring", "xlt.reporting", "xlt.tracking",
                 "xlt.resources", "xlt.cluster")),
    ("contract", ("xlt.contract",)),
    ("stages", ("xlt.stages",)),
    ("entry points", ("xlt.cli", "xlt.__main__", "xlt.train", "xlt.build_data", "xlt.translate", "xlt.finetune",
                      "xlt.evaluate", "xlt.report", "xlt.prefetch", "xlt.push", "xlt.plugins", "xlt.status")),
)


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    lazy: bool  # inside a function (or any block below module level)
    marked: bool  # the line carries LAZY_MARK


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _modules() -> dict[str, Path]:
    mods = {}
    for p in ROOT.rglob("*.py"):
        parts = p.relative_to(ROOT.parent).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return mods


def _packages_run(target: str, importer: str) -> set[str]:
    """The packages whose ``__init__`` importing ``target`` runs first, less those ``importer`` is inside."""
    parts = target.split(".")
    return {p for p in (".".join(parts[:i]) for i in range(1, len(parts))) if not _within(importer, p)}


def _edges() -> list[Edge]:
    """Every import of an xlt module by an xlt module, read with an AST walk (function bodies included).

    Importing ``a.b.c`` runs the ``__init__`` of ``a`` and ``a.b`` too: those count as imported, except the
    packages the importing module is itself inside (they are already being imported)."""
    mods = _modules()
    out = []
    for m, p in mods.items():
        text = p.read_text()
        lines = text.splitlines()
        tree = ast.parse(text)
        top = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and _within(node.module, "xlt"):
                named = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                named = [a.name for a in node.names if _within(a.name, "xlt")]
            else:
                continue
            targets = {t for t in named if t in mods} | {a for t in named if t in mods for a in _packages_run(t, m)}
            code = "\n".join(lines[node.lineno - 1:node.end_lineno])
            out += [Edge(m, t, node.lineno, id(node) not in top, LAZY_MARK in code) for t in sorted(targets) if t != m]
    return out


def _layer(module: str) -> int:
    best = max(((len(p), i) for i, (_, pkgs) in enumerate(LAYERS) for p in pkgs if _within(module, p)), default=None)
    assert best is not None, f"{module} is in no layer of tests/test_layers.py: add it to LAYERS"
    return best[1]


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in _modules()}
    for e in _edges():
        graph[e.source].add(e.target)
    return graph


def _reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for n in graph[todo.pop()] - seen:
            seen.add(n)
            todo.append(n)
    return seen


def _cycle_members(graph: dict[str, set[str]]) -> list[str]:
    return sorted(m for m in graph if m in _reaches(graph, m))


def test_the_graph_sees_function_level_imports():
    edges = _edges()
    assert any(e.lazy for e in edges) and any(not e.lazy for e in edges)
    assert {e.target for e in edges if e.source == "xlt.stages.evaluate"} >= {"xlt.data.schema", "xlt.contract"}
    # A package's __init__ counts: importing xlt.config.keys runs xlt.config's.
    assert any(e.source == "xlt.data.sources.base" and e.target == "xlt.config" for e in edges)


def test_no_import_cycles():
    """No module imports (even inside a function, even through a package's __init__) a module that
    imports it back."""
    assert _cycle_members(_graph()) == []


def test_a_cycle_would_be_seen():
    graph = _graph()
    graph["xlt.registry"].add("xlt.data.benchmarks")  # what the config layer used to do, inside a function
    assert "xlt.config.eval" in _cycle_members(graph) and "xlt.registry" in _cycle_members(graph)


def test_no_upward_imports():
    """Every module is in a layer (LAYERS); no import, at any level, goes from a layer to one above it."""
    upward = [f"{e.source}:{e.line} -> {e.target} ({LAYERS[_layer(e.source)][0]} -> {LAYERS[_layer(e.target)][0]})"
              for e in _edges() if _layer(e.target) > _layer(e.source)]
    assert upward == []


def test_imports_inside_functions_are_for_start_up_time_and_say_so():
    """An import inside a function is there to keep a heavy import (torch, transformers, datasets, ...) out
    of start-up, and carries the comment ``# lazy: start-up time``; any other import goes at the top."""
    unmarked = sorted({f"{e.source}:{e.line} -> {e.target}" for e in _edges() if e.lazy and not e.marked})
    assert unmarked == []


def test_layers_never_import_a_stage_and_the_data_layer_not_the_run_directory():
    """Stages call layers, never the reverse: only xlt.stages itself and the command line (xlt.cli, which runs
    the table xlt.stages builds; xlt.status, the command that judges a run's stages by it) import a stage module; the contract's engine is handed the table, and what a
    stage leaves is read through the run directory's checked readers (:mod:`xlt.run.artifacts`: xlt.push
    refuses a model there). The data layer is records in, DatasetDict out: nothing under xlt.data reaches,
    even indirectly, the run directory's layout, lock or checked readers, the contract or a stage (it may write
    through the atomic writers, :mod:`xlt.run.files`)."""
    graph = _graph()
    assert "xlt.stages.train" in graph and "xlt.data.assemble" in graph  # the graph sees the packages
    importers = {m for m, deps in graph.items() if any(_within(d, "xlt.stages") for d in deps)}
    assert sorted(m for m in importers if not _within(m, "xlt.stages")) == ["xlt.cli", "xlt.status"]
    forbidden = ("xlt.run.layout", "xlt.run.lock", "xlt.run.state", "xlt.run.artifacts", "xlt.contract", "xlt.stages")
    leaks = {m: sorted(d for d in _reaches(graph, m) if any(_within(d, f) for f in forbidden))
             for m in graph if _within(m, "xlt.data")}
    assert {m: d for m, d in leaks.items() if d} == {}


# --- the stages are apart: none imports another, none hands a library a callback ---------------------------

# The stage table (it imports every stage) and the helper the stages share (it imports none).
STAGE_TABLE = "xlt.stages"
SHARED_STAGE_HELPERS = ("xlt.stages.inputs",)


def _stage_imports(graph: dict[str, set[str]]) -> list[str]:
    """``a -> b`` for every import (at any level) of a stage module ``b`` by another stage module ``a``."""
    def stage(m: str) -> bool:
        return _within(m, "xlt.stages") and m != STAGE_TABLE

    return sorted(f"{m} -> {d}" for m, deps in graph.items() if stage(m) for d in deps
                  if stage(d) and d not in SHARED_STAGE_HELPERS)


def _stage_chain_depth(graph: dict[str, set[str]]) -> int:
    """The longest import chain among the modules of xlt.stages (the table left out), in modules."""
    members = {m for m in graph if _within(m, "xlt.stages") and m != STAGE_TABLE}

    def depth(m: str, seen: frozenset[str]) -> int:
        return 1 + max((depth(d, seen | {d}) for d in graph[m] & members if d not in seen), default=0)

    return max(depth(m, frozenset({m})) for m in members)


def test_no_stage_imports_another_stage():
    """A stage reads what another left through the run directory's checked readers (:mod:`xlt.run.artifacts`)
    and another stage's current inputs through its context (:meth:`xlt.contract.StageContext.of`), never by
    importing that stage: each stage is a room of its own, and the shared helper imports no stage."""
    graph = _graph()
    assert _stage_imports(graph) == []
    assert not any(_within(d, "xlt.stages") for m in SHARED_STAGE_HELPERS for d in graph[m])
    assert _stage_chain_depth(graph) == 2  # a stage, then the shared helper


def test_a_stage_importing_a_stage_would_be_seen():
    graph = _graph()
    graph["xlt.stages.report"].add("xlt.stages.evaluate")  # what the report stage did for the evaluate stage's inputs
    graph["xlt.stages.evaluate"].add("xlt.stages.train")
    assert _stage_imports(graph) == ["xlt.stages.evaluate -> xlt.stages.train", "xlt.stages.report -> xlt.stages.evaluate"]
    assert _stage_chain_depth(graph) == 4


def _library(module: str) -> bool:
    """A module below the contract (the contract's engine is handed the stages' functions: StageSpec)."""
    return _layer(module) < _layer("xlt.contract")


def _callbacks(module: str, text: str) -> list[tuple[str, str, int]]:
    """``(module, library function, line)`` for each call in ``module`` (a stage's source ``text``) that passes a
    lambda, or a function the stages define, to a function of a library module."""
    mods = _modules()
    tree = ast.parse(text)
    library: dict[str, str] = {}  # local name -> the library function or module it is
    stage_functions = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and _within(node.module, "xlt"):
            for a in node.names:
                target = f"{node.module}.{a.name}"
                owner = target if target in mods else node.module
                if _within(owner, "xlt.stages"):
                    stage_functions.add(a.asname or a.name)
                elif owner in mods and _library(owner):
                    library[a.asname or a.name] = target
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in mods and _library(a.name) and a.asname:
                    library[a.asname] = a.name

    def callee(func: ast.expr) -> str | None:
        if isinstance(func, ast.Name):
            return library.get(func.id)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in library:
            return f"{library[func.value.id]}.{func.attr}"
        return None

    def local_names(scope: ast.AST) -> set[str]:
        """Names a function binds itself (its parameters, its assignments): they shadow the module's."""
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return set()
        a = scope.args
        params = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, [a.vararg, a.kwarg])]}
        return params | {n.id for n in ast.walk(scope) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}

    out = []

    def visit(node: ast.AST, shadowed: set[str]) -> None:
        shadowed = shadowed | local_names(node)
        if isinstance(node, ast.Call) and (name := callee(node.func)) is not None:
            args = [*node.args, *(k.value for k in node.keywords)]
            if any(isinstance(a, ast.Lambda) or (isinstance(a, ast.Name) and a.id in stage_functions - shadowed)
                   for a in args):
                out.append((module, name, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child, shadowed)

    visit(tree, set())
    return out


def _stage_callbacks() -> list[tuple[str, str, int]]:
    return sorted(c for m, p in _modules().items() if _within(m, "xlt.stages") for c in _callbacks(m, p.read_text()))


def test_no_library_function_takes_a_callback_into_a_stage():
    """Library code (below the contract) does not call back into a stage: no stage passes a lambda or one of
    the stages' functions to a library function; the library reads what it needs through the run directory's
    readers (:mod:`xlt.run.artifacts`) or receives data. Read from the source (an AST walk of every call)."""
    calls = _stage_callbacks()
    assert [f"{m}:{line} passes a callback to {name}" for m, name, line in calls] == []


def test_a_callback_into_a_stage_would_be_seen():
    text = ("from xlt.training.data import load_training_set\nfrom xlt.translation import union as u\n"
            "from xlt.scoring import before\nfrom xlt.stages.inputs import local_fingerprint\n"
            "from xlt.contract import StageSpec\n"
            "def read(run):\n    return run\n"
            "def run_stage(cfg, run, ctx):\n"
            "    load_training_set(cfg.training, run, lambda: read(run))\n"
            "    u.build_train_all(cfg.translate, run, read, seed=1, stages=())\n"
            "    before.evaluate(cfg.model, run, evaluate_job=local_fingerprint)\n"
            "    sorted([run], key=lambda r: r)\n"  # not a library function
            "def other(cfg, run, read):\n"
            "    load_training_set(cfg.training, run, read)\n"  # a local value of the same name
            "STAGE = StageSpec('x', run_stage, upstream=lambda cfg: ())\n")  # the contract is handed stage code
    assert [(name, line) for _, name, line in _callbacks("xlt.stages.x", text)] == [
        ("xlt.training.data.load_training_set", 9), ("xlt.translation.union.build_train_all", 10),
        ("xlt.scoring.before.evaluate", 11)]


def test_the_stage_table_loads_no_framework():
    """Every command imports the stage table (xlt.cli -> xlt.stages): the frameworks one stage needs (torch,
    transformers and peft to train, matplotlib to plot) load when that stage runs, not at start-up, or a
    ``stages=[build_data]`` run or a rerun that skips every stage pays seconds of imports (a real process:
    modules already imported by the test session would hide it)."""
    import subprocess
    import sys

    heavy = ("torch", "transformers", "peft", "deepspeed", "matplotlib")
    code = f"import sys, xlt.cli; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT.parent).stdout.strip()
    assert out == "[]", f"importing xlt.cli loads {out}: import them inside the stage function that needs them"
