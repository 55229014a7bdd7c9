"""Render DataFrames as Markdown and LaTeX tables (numbers with a fixed number of decimals)."""

from __future__ import annotations

import pandas as pd

from xlt.markdown import markdown_table


def frame_markdown(df: pd.DataFrame, digits: int = 1) -> str:
    """A GitHub-flavoured Markdown table of ``df`` (:func:`xlt.markdown.markdown_table`: floats with
    ``digits`` decimals, NaN empty, ``|`` in cells escaped)."""
    return markdown_table([str(c) for c in df.columns], df.itertuples(index=False), digits=digits)


def latex_table(df: pd.DataFrame, caption: str, label: str, digits: int = 1) -> str:
    """A ``table`` environment with a booktabs ``tabular`` of ``df`` (special characters escaped)."""
    body = df.to_latex(index=False, escape=True, float_format=lambda v: f"{v:.{digits}f}", na_rep="--")
    return ("\\begin{table}[ht]\n\\centering\n\\small\n" + body
            + f"\\caption{{{_escape(caption)}}}\n\\label{{{label}}}\n\\end{{table}}\n")


def _escape(text: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#")):
        text = text.replace(a, b)
    return text
