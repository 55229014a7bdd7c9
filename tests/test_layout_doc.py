"""docs/layout.md's module map is drawn from the code: one row per module of ``xlt/``, with the first
paragraph of the module's docstring. The test fails when a module is missing from the map, listed but
gone, or described differently from its docstring; ``python tests/test_layout_doc.py --write`` redraws it."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "layout.md"
BEGIN = "<!-- module map: drawn from the module docstrings by `python tests/test_layout_doc.py --write` -->"
END = "<!-- end of the module map -->"


def summary(path: Path) -> str:
    """The first paragraph of a module's docstring, on one line, Sphinx roles turned into Markdown code."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    text = " ".join(doc.split("\n\n")[0].split())
    text = re.sub(r":(?:mod|class|func|meth|attr):`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`").replace("|", "\\|")


def modules() -> dict[str, str]:
    """``{path relative to the repository: summary}`` for every module of ``xlt/``."""
    found = sorted((REPO / "xlt").rglob("*.py"), key=lambda p: (p.parent.as_posix(), p.name))
    return {p.relative_to(REPO).as_posix(): summary(p) for p in found}


def module_map() -> str:
    lines = [BEGIN]
    folder = None
    for rel, text in modules().items():
        here = rel.rsplit("/", 1)[0] + "/"
        if here != folder:
            folder = here
            lines += ["", f"**`{folder}`**", "", "| module | what it holds |", "|---|---|"]
        lines.append(f"| `{rel.rsplit('/', 1)[1]}` | {text} |")
    return "\n".join([*lines, "", END])


def drawn_section(text: str) -> str:
    if BEGIN not in text or END not in text:
        raise AssertionError(f"{DOC}: no module map between {BEGIN!r} and {END!r}")
    start = text.index(BEGIN)
    return text[start:text.index(END, start) + len(END)]


def test_every_module_has_a_docstring():
    missing = [rel for rel, text in modules().items() if not text]
    assert not missing, f"modules without a docstring (the module map needs one): {missing}"


def test_the_module_map_is_drawn_from_the_code():
    section = drawn_section(DOC.read_text(encoding="utf-8"))
    on_disk = set(modules())
    in_doc: set[str] = set()
    folder = ""
    for line in section.splitlines():
        m = re.match(r"^\*\*`([^`]+)`\*\*", line)
        if m:
            folder = m.group(1)
        m = re.match(r"^\| `([^`]+)` \|", line)
        if m:
            in_doc.add(folder + m.group(1))
    assert in_doc, "the module map lists no module"
    assert not on_disk - in_doc, f"modules missing from {DOC.name}: {sorted(on_disk - in_doc)} (redraw it)"
    assert not in_doc - on_disk, f"listed in {DOC.name} but gone: {sorted(in_doc - on_disk)} (redraw it)"
    assert section == module_map(), f"{DOC.name}'s module map differs from the docstrings: run " \
                                    "`python tests/test_layout_doc.py --write`"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_layout_doc.py --write")
    text = DOC.read_text(encoding="utf-8")
    new = text.replace(drawn_section(text), module_map()) if BEGIN in text else text.rstrip() + "\n\n" + module_map() + "\n"
    DOC.write_text(new, encoding="utf-8")
    print(f"{DOC}: module map redrawn ({len(modules())} modules)")
