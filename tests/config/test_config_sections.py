"""Library functions take the config sections they use, not the whole config (issue 36).

Only the stages (``xlt/stages/``), the contract's engine (``xlt/contract.py``: hashes, staleness), the config
package (validation, hashing keys) and the entry points see the root config. Everywhere else in ``xlt/`` a
function names the section it takes after the section (``training``, ``model``, ``logger``, ``eval_cfg``,
``data_cfg``...) and gets a root-level scalar (``seed``, ``recipe_name``, ``stages``) as a value. Read from the
source with an AST walk: a parameter named ``cfg``, one annotated with the root schema :class:`XltConfig`, or
one through which two or more root sections are read (``x.model`` and ``x.training``) is the root config.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.test_layers import LAYERS
from xlt.config.keys import eval_job_values, job_values, schema_keys
from xlt.config.schema import XltConfig

ROOT = Path(__file__).resolve().parents[2] / "xlt"
SECTIONS = {"model", "data", "translate", "training", "eval", "logger"}
assert SECTIONS < set(XltConfig.__dataclass_fields__)  # the root schema's sections

# Where the whole config belongs.
ROOT_CONFIG_MODULES = ("xlt.stages", "xlt.contract", "xlt.config", *dict(LAYERS)["entry points"])


# Library functions that take the whole config, each for a reason.
ALLOWED: dict[str, str] = {
    "xlt.cluster.sweep_configs:_Base.resolve": "a sweep's composed root config, one per structure, its run's "
                                               "leaf values set on it (xlt status, xlt.cluster plan)",
    "xlt.cluster.sweep_configs:_raw_value": "reads one dotted key of a composed root config (its interpolation "
                                            "unresolved)",
    "xlt.resources:resources_for": "the prefetch entry point's plan: what every stage of the config loads, each "
                                   "stage's part from its own section (source_resources(data), ...)",
    # The scorer plugin protocol (xlt.registry.SCORERS): a factory (cfg, run) -> scorer, which definition files
    # (eval.include_path) and installed packages (entry points xlt.scorers) implement; changing it breaks them.
    "xlt.scoring.scorers:build_scorer": "builds the scorer eval.scorer names through the scorer protocol",
    "xlt.scoring.scorers:GoldScorer.__init__": "the scorer protocol",
    "xlt.scoring.scorers:FixedScorer.__init__": "the scorer protocol",
    "xlt.scoring.mc:MCScorer.from_config": "the scorer protocol",
    "xlt.scoring.llm.scorer:LLMScorer.__init__": "the scorer protocol",
    # A compared run's config.yaml as read back from its run directory (a plain dict): which system produced
    # its results (model family and size, training setting) and which settings group its seeds are read from
    # several of its sections; it is data about a finished run, not the config of the running one.
    "xlt.reporting.run_tables:_edited_key": "a compared run's recorded config (checked against its markers)",
    "xlt.reporting.run_tables:config_key": "a compared run's recorded config (its seed group)",
    "xlt.reporting.systems:_get": "a compared run's recorded config (a dotted read of the dict)",
    "xlt.reporting.systems:scored_model_names": "a compared run's recorded config (model or eval.model)",
    "xlt.reporting.systems:model_family": "a compared run's recorded config",
    "xlt.reporting.systems:model_size": "a compared run's recorded config",
    "xlt.reporting.systems:training_setting": "a compared run's recorded config (eval.scorer, translate, stages)",
}


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(ROOT.rglob("*.py")):
        parts = p.relative_to(ROOT.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, node) of every function, methods as ``Class.method``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node
            yield from _functions(node, prefix + node.name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, prefix + node.name + ".")
        else:
            yield from _functions(node, prefix)


def _root_params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The parameters of ``fn`` that are the root config, and why."""
    out = []
    for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs:
        annotation = ast.unparse(a.annotation) if a.annotation is not None else ""
        if a.arg in ("self", "cls", "run", "view") or "RunDir" in annotation:
            continue  # a run directory has data/, eval/ and model/ folders, not sections
        read = {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                and n.value.id == a.arg} & SECTIONS
        if a.arg == "cfg":
            out.append(f"{a.arg} (named like the root config)")
        elif "XltConfig" in annotation:
            out.append(f"{a.arg}: {annotation}")
        elif len(read) >= 2:
            out.append(f"{a.arg} (reads the sections {sorted(read)})")
    return out


def _offenders() -> dict[str, list[str]]:
    out = {}
    for module, path in _modules().items():
        if _within(module, ROOT_CONFIG_MODULES):
            continue
        for name, fn in _functions(ast.parse(path.read_text())):
            params = _root_params(fn)
            if params:
                out[f"{module}:{name}"] = params
    return out


def test_library_functions_take_config_sections():
    """A library function outside ALLOWED that takes the root config fails here: give it the sections it reads
    (typed with the schema's dataclasses, xlt/config/*.py) and the root-level values as values."""
    offenders = {k: v for k, v in _offenders().items() if k not in ALLOWED}
    assert offenders == {}


def test_the_allow_list_is_current():
    """Every allowed function still exists and still takes the root config (else it leaves the list)."""
    assert sorted(ALLOWED) == sorted(k for k in _offenders() if k in ALLOWED)


def test_the_rule_sees_the_root_config():
    """The rule catches the root config under any of its three faces."""
    tree = ast.parse("def a(cfg, run): pass\n"
                     "def b(config: XltConfig): pass\n"
                     "def c(conf): return conf.model.name, conf.training.seed\n"
                     "def d(training: TrainingConfig, run: RunDir): return training.seed, run.model, run.eval\n"
                     "def e(eval_cfg): return eval_cfg.model\n")
    found = {name: _root_params(fn) for name, fn in _functions(tree)}
    assert [bool(found[n]) for n in "abcde"] == [True, True, True, False, False]


def test_evaluate_keys_lie_under_the_eval_section():
    """:func:`eval_job_values` reads a result's hashed keys from the ``eval`` section alone: that holds while every
    evaluate key, and every key a ``when`` condition of one names, lies under ``eval``."""
    keys = {k: info for k, info in schema_keys().items() if info.affects == "evaluate" and not info.is_section}
    assert keys and all(k.startswith("eval.") for k in keys)
    assert all(info.when[0].startswith("eval.") for info in keys.values() if info.when is not None)


@pytest.mark.parametrize("recipe, overrides", [("demo_tiny", []), ("llm_5shot", ["eval.llm.model=org/some-llm"]),
                                                ("demo_tiny", ["eval.scorer=fixed", "eval.fixed_option=2"])])
def test_a_job_hashes_the_same_values_from_its_section(recipe, overrides):
    from xlt.config.compose import compose

    cfg = compose(recipe, overrides)
    for name in cfg.eval.benchmarks:
        assert eval_job_values(cfg.eval, name) == job_values(cfg, name)
        assert list(eval_job_values(cfg.eval, name)) == list(job_values(cfg, name))  # the same order too
