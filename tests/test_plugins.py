"""One plug-in mechanism (issue 43): every kind (benchmark kinds, training sources, scorers, MT engines, check
kinds) is a :class:`xlt.registry.Registry` made by one helper, added to by an installed package's entry point
(group ``xlt.<kind>``) or a definition file of ``eval.include_path``, and listed by ``xlt plugins`` with where
it comes from. An MT engine comes from a throw-away installed distribution (a module beside its
``*.dist-info`` with an ``entry_points.txt``), a check kind from a definition file."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from datasets import load_from_disk

from tests.cli import REPO, xlt
from xlt import registry
from xlt.config.compose import compose
from xlt.data.benchmarks.declarations import Claim
from xlt.errors import ConfigError
from xlt.plugins import main as plugins_main
from xlt.plugins import plugins
from xlt.registry import (
    BENCHMARKS,
    CHECKS,
    MT_ENGINES,
    REGISTRIES,
    SCORERS,
    forget_entry_points,
    include,
)
from xlt.reporting.checks import Check

ENGINE = '''"""A throw-away MT engine package: each text reversed, behind its target language."""
from xlt.translation.engines.base import Engine, Translator


class ReverseTranslator(Translator):
    def __init__(self, batch_size: int) -> None:
        super().__init__()
        self.identity = "reverse/v1"
        self.batch_size = batch_size

    def _generate(self, texts, src_lang, tgt_lang):
        return [f"<{tgt_lang}> {t[::-1]}" for t in texts]


class ReverseEngine(Engine):
    name = "reverse"

    def build(self, tcfg):
        return ReverseTranslator(tcfg.batch_size)
'''

CHECK = '''"""A finding check kind in a definition file."""
from xlt.reporting.checks import HOLDS, check_kind


@check_kind("always_holds")
def always_holds(c):
    return c.finding(HOLDS, f"{len(c.systems)} systems compared")
'''


def installed_engine(site: Path) -> Path:
    """A distribution ``reverse-mt==0.1`` in the folder ``site`` (put it on the path): its module and the
    dist-info importlib.metadata reads, with the entry point ``reverse`` in the group ``xlt.mt_engines``."""
    dist = site / "reverse_mt-0.1.dist-info"
    dist.mkdir(parents=True)
    (site / "reverse_mt.py").write_text(ENGINE)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: reverse-mt\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[xlt.mt_engines]\nreverse = reverse_mt:ReverseEngine\n")
    return site


@pytest.fixture
def reverse_engine(tmp_path, monkeypatch):
    """The distribution of :func:`installed_engine` on this process's path (and off it after the test)."""
    site = installed_engine(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    forget_entry_points()
    yield site
    monkeypatch.undo()
    forget_entry_points()
    MT_ENGINES._loaded.pop("reverse", None)


def test_every_kind_is_one_registry_type_with_its_own_entry_point_group():
    groups = {reg.group: reg.what for reg in REGISTRIES}
    assert groups == {
        "xlt.benchmarks": "benchmark kind",
        "xlt.sources": "training source",
        "xlt.scorers": "scorer",
        "xlt.mt_engines": "MT engine",
        "xlt.checks": "check kind",
        "xlt.schedulers": "scheduler",
    }
    assert all(type(reg) is registry.Registry for reg in REGISTRIES)
    assert MT_ENGINES.names() == ("echo", "transformers", "ctranslate2")


def test_the_check_kinds_xlt_marks_are_the_ones_its_registry_lists():
    """Each ``@check_kind("name")`` in xlt/reporting/checks/ has its line in xlt.registry.CHECKS, pointing at
    that function, and the table names no other (read from the source, so a new check cannot be forgotten)."""
    marked = {}
    for file in sorted((REPO / "xlt" / "reporting" / "checks").glob("*.py")):
        for node in ast.parse(file.read_text()).body:
            for dec in getattr(node, "decorator_list", []):
                if isinstance(dec, ast.Call) and getattr(dec.func, "id", "") == "check_kind":
                    marked[dec.args[0].value] = f"xlt.reporting.checks.{file.stem}:{node.name}"
    assert marked == CHECKS._builtin
    assert all(CHECKS[name].check_kind == name for name in marked)  # each loads, marked with its own name


def test_an_installed_mt_engine_translates_and_enters_the_hashes_by_its_distribution(reverse_engine):
    from xlt.translation.engines import build_translator, resolved_settings

    cfg = compose("demo_tiny", ["translate=echo", "translate.kind=reverse"])
    translator = build_translator(cfg.translate)
    assert translator.identity == "reverse/v1"
    assert translator.translate(["abc", "de"], "eng_Latn", "fra_Latn") == ["<fra_Latn> cba", "<fra_Latn> ed"]
    assert resolved_settings(cfg.translate) == {"kind": "reverse", "definition": "dist:reverse-mt==0.1"}
    # xlt's own engines: as they were before engines were plug-ins (no definition)
    assert resolved_settings(compose("demo_tiny", ["translate=echo"]).translate) == {"kind": "echo"}
    [listed] = [r for r in plugins() if r["group"] == "xlt.mt_engines"]
    assert {"name": "reverse", "origin": "reverse-mt==0.1 (entry point reverse_mt:ReverseEngine)"} in listed[
        "entries"
    ]


def test_mt_engine_names_are_checked_against_the_registry(reverse_engine):
    with pytest.raises(
        ConfigError,
        match=r"translate.kind='google' is not allowed; use one of hf, echo, reverse; "
        r"a new MT engine is an installed package's entry point \(group xlt.mt_engines\)",
    ):
        compose("demo_tiny", ["translate=echo", "translate.kind=google"])
    with pytest.raises(
        ConfigError,
        match=r"translate.engine='reverse' is not allowed; use one of auto, transformers, "
        "ctranslate2",
    ):
        compose("demo_tiny", ["translate=nllb", "translate.engine=reverse"])


def test_the_engine_renamed_from_hf_is_accepted_with_a_warning_and_hashes_as_before():
    """``translate.engine=hf`` (its name until the engines became plug-ins, clashing with translate.kind=hf)
    is now ``transformers``; the old name still works, and both enter every hash as ``hf`` did."""
    from xlt.config.keys import stage_values, translator_values
    from xlt.translation.engines import resolved_settings

    with pytest.warns(
        FutureWarning, match="translate.engine=hf is deprecated: it is now translate.engine=transformers"
    ):
        old = compose("demo_tiny", ["translate=nllb", "translate.engine=hf"])
    new = compose("demo_tiny", ["translate=nllb", "translate.engine=transformers"])
    assert old.translate.engine == new.translate.engine == "transformers"
    assert translator_values(new)["translate.engine"] == "hf"
    assert stage_values(new, "translate") == stage_values(old, "translate")
    assert stage_values(new, "translate")["translate.engine"] == "hf"
    assert stage_values(compose("demo_tiny", ["translate=nllb"]), "translate")["translate.engine"] == "auto"
    fp32 = compose(
        "demo_tiny", ["translate=nllb", "translate.engine=transformers", "translate.precision=fp32"]
    )
    assert resolved_settings(fp32.translate) == {
        "engine": "hf",
        "dtype": "float32",
    }  # what it ran as, as before


def test_a_check_kind_from_a_definition_file_registers_and_is_listed(tmp_path, capsys):
    folder = tmp_path / "defs"
    folder.mkdir()
    (folder / "always.py").write_text(CHECK)
    assert plugins_main(["--include-path", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"  always_holds                          {folder / 'always.py'}\n" in out
    assert "check kinds (a claim's check; entry point group xlt.checks):" in out
    finding = CHECKS["always_holds"](
        Check([], [], BENCHMARKS["belebele"], Claim("always_holds", "always", "it holds"), 1, 0)
    )
    assert (
        finding.verdict == "holds" and finding.why == "0 systems compared" and finding.id == "belebele_always"
    )
    assert CHECKS.identity("always_holds").startswith("file:always.py@sha256:")


MIXED = (
    ENGINE
    + """

from xlt.registry import SCORERS
from xlt.scoring.scorers import GoldScorer


@SCORERS.named("gold_too")
def gold_too(cfg, run):
    return GoldScorer(cfg, run)
"""
)


def test_one_definition_file_registers_an_mt_engine_and_a_scorer_by_its_content(tmp_path):
    """``eval.include_path`` loads every kind, not only benchmarks: an MT engine and a scorer from one file,
    both usable by name and identified by the file's content in the hashes."""
    from xlt.translation.engines import build_translator, resolved_settings

    folder = tmp_path / "defs"
    folder.mkdir()
    (folder / "mixed.py").write_text(MIXED)
    cfg = compose(
        "demo_tiny",
        [f"eval.include_path=[{folder}]", "translate=echo", "translate.kind=reverse", "eval.scorer=gold_too"],
    )
    assert build_translator(cfg.translate).translate(["ab"], "eng_Latn", "deu_Latn") == ["<deu_Latn> ba"]
    digest = MT_ENGINES.identity("reverse")
    assert digest.startswith("file:mixed.py@sha256:") and SCORERS.identity("gold_too") == digest
    assert resolved_settings(cfg.translate) == {"kind": "reverse", "definition": digest}
    assert MT_ENGINES.origin("reverse") == SCORERS.origin("gold_too") == str(folder / "mixed.py")


def test_a_definition_file_taking_a_name_of_another_kind_is_an_error_naming_both(tmp_path):
    folder = tmp_path / "defs"
    folder.mkdir()
    (folder / "mine.py").write_text(CHECK.replace('"always_holds"', '"family_best_on_levels"'))
    with pytest.raises(
        ConfigError,
        match=r"mine.py: check kind 'family_best_on_levels' is already registered by "
        r"xlt.reporting.checks.families:check_family_best_on_levels; give it",
    ):
        include([str(folder)])
    engine = tmp_path / "engine"
    engine.mkdir()
    (engine / "echo2.py").write_text(ENGINE.replace('name = "reverse"', 'name = "echo"'))
    with pytest.raises(
        ConfigError,
        match=r"echo2.py: MT engine 'echo' is already registered by "
        r"xlt.translation.engines.base:EchoEngine",
    ):
        include([str(engine)])


def test_an_installed_package_taking_a_name_of_xlt_is_an_error_naming_both(tmp_path, monkeypatch, capsys):
    """An entry point registering xlt's own name (or two packages' entry points one name) is not resolved
    silently: loading it names both definitions, and ``xlt plugins`` shows the conflict."""
    site = installed_engine(tmp_path / "site")
    (site / "reverse_mt-0.1.dist-info" / "entry_points.txt").write_text(
        "[xlt.mt_engines]\necho = reverse_mt:ReverseEngine\n"
    )
    monkeypatch.syspath_prepend(str(site))
    forget_entry_points()
    MT_ENGINES._loaded.pop("echo", None)
    try:
        with pytest.raises(
            ConfigError,
            match=r"MT engine 'echo' is registered by xlt \(xlt.translation.engines.base:EchoEngine\) "
            r"and by reverse-mt==0.1 \(reverse_mt:ReverseEngine\) \(entry point group "
            r"xlt.mt_engines\); give one another name, or uninstall one",
        ):
            MT_ENGINES["echo"]
        assert plugins_main([]) == 0
        assert "  echo          CONFLICT: MT engine 'echo' is registered by xlt" in capsys.readouterr().out
    finally:
        monkeypatch.undo()
        forget_entry_points()
    assert MT_ENGINES.conflict("echo") is None and MT_ENGINES["echo"].name == "echo"


def test_plugins_command_lists_every_kind_as_json(capsys):
    assert plugins_main(["--json"]) == 0
    listing = {r["group"]: r["entries"] for r in json.loads(capsys.readouterr().out)}
    assert {"name": "belebele", "origin": "xlt (xlt.data.benchmarks.belebele:Belebele)"} in listing[
        "xlt.benchmarks"
    ]
    assert [e["name"] for e in listing["xlt.mt_engines"]] == ["echo", "transformers", "ctranslate2"]
    assert plugins_main(["--include-path", "/nowhere/at/all"]) == 2
    assert "/nowhere/at/all is not a folder" in capsys.readouterr().err


@pytest.mark.slow  # two processes, a build_data and a translate stage (~10 s): the slow tier, docs/testing.md
def test_an_mt_engine_from_an_installed_package_runs_the_translate_stage(tmp_path):
    """End to end, as a user would: the distribution on PYTHONPATH, ``translate.kind=reverse`` on the command
    line; its translator translates, its identity and distribution land in the translation's provenance,
    and ``xlt plugins`` lists it with its distribution."""
    site = installed_engine(tmp_path / "site")
    env = {"PYTHONPATH": f"{site}:{REPO}"}
    out = xlt(
        "xlt.train",
        "+recipe=demo_tiny",
        "translate=echo",
        "translate.kind=reverse",
        "stages=[build_data,translate]",
        f"run_root={tmp_path / 'runs'}",
        env=env,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    [run] = (tmp_path / "runs" / "demo_tiny").iterdir()
    report = json.loads((run / "data" / "translation_report.json").read_text())
    assert report["translator"] == "reverse/v1"
    assert report["provenance"]["data"]["translator"]["resolved"] == {
        "kind": "reverse",
        "definition": "dist:reverse-mt==0.1",
    }
    source = load_from_disk(str(run / "data" / "train_set"))["train"]
    translated = load_from_disk(str(run / "data" / "translated" / "deu_Latn"))["train"]
    assert translated.num_rows == source.num_rows > 0
    assert translated[0]["question"] == f"<deu_Latn> {source[0]['question'][::-1]}"
    listed = xlt("xlt", "plugins", env=env)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "  reverse       reverse-mt==0.1 (entry point reverse_mt:ReverseEngine)\n" in listed.stdout
