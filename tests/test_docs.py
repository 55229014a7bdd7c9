"""Every xlt command in README.md and docs/*.md parses, so the docs cannot drift from the code.

A command is a line of a fenced code block (backslash continuations joined, ``&&`` chains split) or an
inline code span of the prose that runs ``python -m xlt.<command> ...``, ``xlt <command> ...``,
``... -m xlt.<command> ...`` (``accelerate launch``) or a script of ``slurm/``. Each is checked as its
entry point would check it, without running a stage:

* Hydra stages (``train``, ``build_data``, ``translate``, ``finetune``, ``evaluate``, ``report``): the
  command-line checks of :func:`xlt.config.overrides.check_overrides`, then every job of the command
  (a ``-m`` sweep is split into its jobs by Hydra's own sweeper) composed with Hydra's compose API and
  validated for the stages that entry point runs (:func:`xlt.config.validate`): the recipe exists, every
  key is in the schema, every value is allowed;
* ``report --compare``: its argument parser (the comparison itself is not run); ``report --to-harness`` and
  ``report --harness``: theirs (nothing is written);
* ``prefetch``: its argument parser and the runs it names (``--recipes`` composed and validated; a
  ``--sweep`` file must read and name recipes that exist: tests/test_prefetch.py composes its runs);
* ``push``: its argument parser (nothing is checked or uploaded);
* a script of ``slurm/``: its sweep file as prefetch's, its overrides checked and, with a
  ``+recipe=``, composed and validated.

Placeholders are substituted: ``<folder>`` by a temporary folder, any other ``<name>`` by a path in it,
``$VAR`` by ``0``. A YAML (or Python) block with a comment line ``# <folder>/<path>.yaml`` (``.py``) is that file (a
user's recipe), written there before the commands run. A command whose comment says ``rejected`` must
fail the check with xlt's own error (``xlt: error:``). Inline spans that describe a form rather than a
command (``+recipe=<name>``, ``...``) are left out. A failure names the file and line of the command.
"""

from __future__ import annotations

import functools
import re
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# The stages each Hydra entry point runs (None: the ones the config lists), as xlt/<module>.py sets them.
HYDRA_STAGES: dict[str, list[str] | None] = {
    "train": None, "build_data": ["build_data"], "translate": ["translate"], "finetune": ["train"],
    "evaluate": ["evaluate"], "report": ["report"],
}
COMMANDS = (*HYDRA_STAGES, "prefetch", "push")
_START = re.compile(r"(?:^|\s)(?:python -m xlt\.(\w+)|-m xlt\.(\w+)|xlt (\w+)|(slurm)/\w+\.(?:sh|sbatch))(?=\s|$)")
_FENCE = re.compile(r"^\s*```(\S*)")
_INLINE = re.compile(r"`([^`\n]+)`")
_FILE_COMMENT = re.compile(r"^#\s*(<folder>/\S+\.(?:yaml|py))")


@dataclass(frozen=True)
class Command:
    """One documented command: where it is, the command (from ``xlt``/``python -m`` on) and its comment."""

    page: str
    line: int
    text: str
    comment: str = ""

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def _split_comment(line: str) -> tuple[str, str]:
    """The command and its trailing ``# comment`` (a ``#`` outside quotes, after a blank)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


def _commands_in(text: str, page: str, line: int, comment: str = "") -> Iterator[Command]:
    for part in re.split(r"\s&&\s|;\s", text):
        m = _START.search(part)
        if m and (m.group(1) or m.group(2) or m.group(3) or m.group(4)) in (*COMMANDS, "slurm"):
            yield Command(page, line, part[m.start():].strip(), comment)


def command_and_args(words: list[str]) -> tuple[str, list[str]]:
    """The command (``train`` of ``python -m xlt.train`` or ``xlt train``; ``slurm`` for a script of
    slurm/) and the words after it."""
    at = next(i for i, w in enumerate(words) if w.startswith(("xlt.", "slurm/")) or w == "xlt")
    if words[at].startswith("slurm/"):
        return "slurm", words[at + 1:]
    return (words[at][4:], words[at + 1:]) if words[at] != "xlt" else (words[at + 1], words[at + 2:])


def _is_command(text: str) -> bool:
    """A command, not a mention of one (`python -m xlt.report --compare`): a ``key=value`` or two arguments."""
    args = command_and_args(text.split())[1]
    return len(args) > 1 or any("=" in a for a in args)


def extract(text: str, page: str) -> tuple[list[Command], dict[str, str]]:
    """The commands of a Markdown page and the user files its YAML and Python blocks define (path -> text)."""
    commands: list[Command] = []
    files: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            for span in _INLINE.findall(lines[i]):
                if "+recipe=<" not in span and "..." not in span and "…" not in span:
                    commands.extend(c for c in _commands_in(span, page, i + 1) if _is_command(c.text))
            i += 1
            continue
        lang, body, start = fence.group(1), [], i + 1
        i += 1
        while i < len(lines) and not _FENCE.match(lines[i]):
            body.append(lines[i])
            i += 1
        i += 1
        if lang in ("yaml", "python"):
            named = [m.group(1) for m in map(_FILE_COMMENT.match, body) if m]
            if named:
                files[named[0]] = "\n".join(body) + "\n"
            continue
        if lang not in ("", "bash", "sh", "console"):
            continue
        j = 0
        while j < len(body):
            first, joined = j, body[j]
            while joined.rstrip().endswith("\\") and j + 1 < len(body):
                j += 1
                joined = joined.rstrip()[:-1] + " " + body[j].strip()
            code, comment = _split_comment(joined)
            commands.extend(_commands_in(code, page, start + first + 1, comment))
            j += 1
    return commands, files


def _read_pages() -> tuple[list[Command], dict[str, str]]:
    commands: list[Command] = []
    files: dict[str, str] = {}
    for path in PAGES:
        found, defined = extract(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
        commands += found
        files.update(defined)
    return commands, files


DOC_COMMANDS, USER_FILES = _read_pages()


def substitute(text: str, folder: Path) -> str:
    text = text.replace("<folder>", str(folder))
    text = re.sub(r"<([\w .-]+)>", lambda m: str(folder / re.sub(r"\W+", "_", m.group(1))), text)
    return re.sub(r"\$\{?[A-Z_][A-Z0-9_]*\}?", "0", text)


@functools.cache
def check_run(overrides: tuple[str, ...], stages: tuple[str, ...] | None) -> None:
    """Compose ``overrides`` as the entry points do (:func:`xlt.config.compose.compose`: Hydra's compose API, new
    dict entries, validation) for ``stages`` (None: the stages it lists); cached, as several commands name
    the same run."""
    from xlt.config.compose import compose

    compose(None, list(overrides), None if stages is None else list(stages))


def _hydra_jobs(args: list[str]) -> list[list[str]]:
    """The jobs of a Hydra command line (``-m`` sweeps split by Hydra's basic sweeper)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    multirun = any(a in ("-m", "--multirun") for a in args)
    if "--cfg" in args:  # Hydra's --cfg job|hydra|all prints the config
        args = [a for i, a in enumerate(args) if a != "--cfg" and (i == 0 or args[i - 1] != "--cfg")]
    flags = [a for a in args if a.startswith("-") and a not in ("-m", "--multirun", "--help", "-h", "--info")]
    if flags:
        raise ValueError(f"unknown option(s) {flags}")
    overrides = [a for a in args if not a.startswith("-")]
    if not multirun:
        return [overrides]
    parsed = OverridesParser.create().parse_overrides(overrides)
    return [list(job) for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def _check_prefetch(args: list[str]) -> None:
    """prefetch's own parser and runs; a sweep file must read (tests/test_prefetch.py composes the
    paper sweep's runs) and name recipes that exist."""
    from xlt import prefetch
    from xlt.cluster.sweeps import read_sweep
    from xlt.config import CONF_DIR

    ns = prefetch.parse_args(args)
    sweep, ns.sweep = ns.sweep, None
    if ns.overrides or ns.recipes:
        for run in prefetch.runs_from_args(ns):
            check_run(tuple(run), None)
    for line in read_sweep(sweep) if sweep else []:
        recipe = next(a.partition("=")[2] for a in line if a.startswith("+recipe="))
        assert (Path(CONF_DIR) / "recipe" / f"{recipe}.yaml").is_file(), f"{sweep}: no recipe '{recipe}'"


def _check_slurm(args: list[str]) -> None:
    """A slurm/ script's xlt arguments: its sweep file (as prefetch's), else its overrides as a run."""
    from xlt.config.overrides import check_overrides

    sweeps = [a for a in args if a.endswith(".txt")]
    if sweeps:
        _check_prefetch(["--sweep", *sweeps])
    overrides = [a for a in args if "=" in a and not a.startswith("-")]
    check_overrides(overrides)
    if any(a.startswith("+recipe=") for a in overrides):
        check_run(tuple(overrides), None)


def check_command(cmd: Command, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Raise naming ``cmd``'s file and line when it does not parse as its entry point parses it."""
    from xlt.config.overrides import check_overrides
    from xlt.errors import XltError

    try:
        tokens = shlex.split(substitute(cmd.text, folder))
    except ValueError as err:
        raise AssertionError(f"{cmd.where}: {cmd.text}: cannot be split into words: {err}") from None
    command, args = command_and_args(tokens)
    try:
        if command == "report" and "--compare" in args:
            import xlt.reporting.compare_runs as comparison
            from xlt.report import compare_main

            monkeypatch.setattr(comparison, "compare_runs", lambda *a, **k: None)
            assert compare_main(args) == 0
        elif command == "report" and ("--to-harness" in args or "--harness" in args):
            import xlt.reporting.harness.export as export
            import xlt.reporting.harness.report as harness_report
            from xlt.report import option_main

            monkeypatch.setattr(export, "export_run", lambda *a, **k: Path("harness"))
            monkeypatch.setattr(harness_report, "harness_report", lambda *a, **k: Path("report.md"))
            assert option_main(args) == 0
        elif command == "slurm":
            _check_slurm(args)
        elif command == "prefetch":
            _check_prefetch(args)
        elif command == "push":
            from xlt.push import parse_args

            parse_args(args)
        else:
            check_overrides([a for a in args if "=" in a and not a.startswith("-")])
            stages = HYDRA_STAGES[command]
            for job in _hydra_jobs(args):
                check_run(tuple(job), None if stages is None else tuple(stages))
    except (Exception, SystemExit) as err:
        if "rejected" in cmd.comment and isinstance(err, XltError):  # what the CLI prints as `xlt: error:`
            return
        raise AssertionError(f"{cmd.where}: `{cmd.text}` does not parse: {err}") from None
    if "rejected" in cmd.comment:
        raise AssertionError(f"{cmd.where}: `{cmd.text}` is documented as rejected, but it parses")


@pytest.fixture
def user_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding the user files the docs define; relative paths resolve from the repository."""
    for name, text in USER_FILES.items():
        path = tmp_path / name.removeprefix("<folder>/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    monkeypatch.chdir(REPO)
    return tmp_path


@pytest.mark.parametrize("cmd", DOC_COMMANDS, ids=[f"{c.where}" for c in DOC_COMMANDS])
def test_documented_command_parses(cmd: Command, user_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_command(cmd, user_folder, monkeypatch)


def test_the_pages_have_commands_and_every_stage_is_documented() -> None:
    assert len(DOC_COMMANDS) > 30, len(DOC_COMMANDS)
    assert {Path(c.page).name for c in DOC_COMMANDS} >= {"README.md", "recipes-and-overrides.md", "evaluation.md"}
    used = {command_and_args(c.text.split())[0] for c in DOC_COMMANDS}
    assert {*COMMANDS, "slurm"} <= used, {*COMMANDS, "slurm"} - used
    assert "<folder>/recipe/mine.yaml" in USER_FILES


BAD_PAGE = """# A page

Some text, then `python -m xlt.train +recipe=demo seed=3` inline.

```bash
python -m xlt.train +recipe=demo \\
    training.learning_rate=1e-5 training.no_such_key=1
python -m xlt.evaluate +recipe=no_such_recipe
xlt report --compare <run> --out <folder>/cmp      # fine
python -m xlt.prefetch --sweep no/such/file.txt
python -m xlt.train +recipe=demo seed=2             # rejected (it is not)
python -m xlt.train -m +recipe=demo seed=1,2,-5
cd /tmp && python -m xlt.train +recipe=demo --cfg job
```
"""


@pytest.mark.parametrize(("line", "message"), [
    (6, "training.no_such_key"), (8, "no_such_recipe"), (10, "no/such/file.txt"),
    (11, "documented as rejected, but it parses"), (12, "seed=-5 is out of range"),
])
def test_a_command_that_does_not_parse_is_named_by_file_and_line(line, message, tmp_path, monkeypatch):
    commands, _ = extract(BAD_PAGE, "docs/bad.md")
    assert [c.line for c in commands] == [3, 6, 8, 9, 10, 11, 12, 13]
    assert commands[1].text.endswith("training.no_such_key=1")  # continuation joined
    (cmd,) = [c for c in commands if c.line == line]
    with pytest.raises(AssertionError, match=re.escape(f"docs/bad.md:{line}: ")) as err:
        check_command(cmd, tmp_path, monkeypatch)
    assert message in str(err.value)


def test_the_good_commands_of_that_page_pass(tmp_path, monkeypatch):
    commands, _ = extract(BAD_PAGE, "docs/bad.md")
    for good in (c for c in commands if c.line in (3, 9, 13)):  # inline; --compare; a cd && chain with --cfg
        check_command(good, tmp_path, monkeypatch)


if __name__ == "__main__":  # list the commands found
    for c in DOC_COMMANDS:
        print(c.where, c.text, f"# {c.comment}" if c.comment else "", file=sys.stdout)
