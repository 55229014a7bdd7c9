"""xlt.markdown: the one Markdown table writer of the reports, the findings and the model card."""

from __future__ import annotations

import pandas as pd

from xlt.markdown import markdown_table
from xlt.reporting.render import frame_markdown as frame_table


def test_cells_are_formatted_and_escaped_so_no_row_breaks():
    text = markdown_table(["name", "acc", "n"], [["a|b", 12.3456, 3], ["two\nlines", float("nan"), None]],
                          digits=1, align="-rr")
    assert text == ("| name | acc | n |\n|---|---:|---:|\n| a\\|b | 12.3 | 3 |\n| two lines |  |  |\n")


def test_a_dataframe_table_is_the_same_writer():
    df = pd.DataFrame({"language": ["fra_Latn", "deu_Latn"], "accuracy": [50.0, float("nan")]})
    assert frame_table(df) == markdown_table(["language", "accuracy"], [["fra_Latn", 50.0], ["deu_Latn", None]], digits=1)
    assert frame_table(df).splitlines()[2] == "| fra_Latn | 50.0 |"
