"""Render DataFrames as Markdown and LaTeX tables (numbers with a fixed number of decimals)."""

from __future__ import annotations

import math

import pandas as pd


def _fmt(value: object, digits: int) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.{digits}f}"
    return "" if value is None else str(value)


def markdown_table(df: pd.DataFrame, digits: int = 1) -> str:
    """A GitHub-flavoured Markdown table of ``df`` (``|`` in cells escaped)."""
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        cells = [_fmt(v, digits).replace("|", "\\|") for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def latex_table(df: pd.DataFrame, caption: str, label: str, digits: int = 1) -> str:
    """A ``table`` environment with a booktabs ``tabular`` of ``df`` (special characters escaped)."""
    body = df.to_latex(index=False, escape=True, float_format=lambda v: f"{v:.{digits}f}", na_rep="--")
    return ("\\begin{table}[ht]\n\\centering\n\\small\n" + body
            + f"\\caption{{{_escape(caption)}}}\n\\label{{{label}}}\n\\end{{table}}\n")


def _escape(text: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#")):
        text = text.replace(a, b)
    return text
