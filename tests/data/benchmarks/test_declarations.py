"""A benchmark's prompt and report are data: what the declarations accept, what the LLM scorer makes of a
declared prompt, and a definition written the earlier way (prompt and report as class members) refused
with the declaration that replaces each member, also from a definition file (``eval.include_path``)."""

from __future__ import annotations

import pandas as pd
import pytest

from xlt.data.benchmarks.base import Benchmark, Prompt, Report, Subset
from xlt.errors import ConfigError
from xlt.registry import include
from xlt.scoring.llm.task import HarnessTask


class Plain(Benchmark):
    kind = "plain_declared"
    prompt = Prompt(text="Context: {passage}\n{question}?\n{options}\nAnswer:", option="({letter}) {option}",
                    choices="lowercased_options", sampler="random", fewshot_groups={"random": "topic"})
    report = Report(title="Plain", subsets=(Subset("easy", "level", "easy"), Subset("topic", "topic", per_value=True)))

    def languages(self, bcfg):
        return ["en"]

    def load_all(self, bcfg, language, split="test"):
        raise NotImplementedError("not loaded here")


def test_a_declared_prompt_is_what_the_scorer_formats():
    task = HarnessTask(Plain())
    rec = {"passage": "  It rained. ", "question": " Why wet ", "options": ["Rain", "Sun"], "label": 0}
    assert task.doc_to_text(rec) == "Context: It rained.\nWhy wet?\n(A) Rain\n(B) Sun\nAnswer:"
    assert task.doc_to_choice(rec) == ["rain", "sun"] and task.doc_to_target(rec) == "rain"
    assert task.default_fewshot_sampler() == "random" and task.fewshot_group("random") == "topic"
    assert task.fewshot_group("first_n") is None
    assert task.instruction().startswith("Given the following passage,")  # none declared: the paper's


def test_declared_subsets_give_the_masks_and_the_report_names():
    bench = Plain()
    meta = pd.DataFrame({"level": ["easy", "hard", "easy"], "topic": ["b", "a", "b"]})
    masks = bench.item_subsets(meta)
    assert list(masks) == ["full", "easy", "topic/a", "topic/b"]
    assert masks["easy"].tolist() == [True, False, True] and masks["topic/a"].tolist() == [False, True, False]
    assert bench.report.subset_names == ("easy",) and bench.report.subset_columns == ("level", "topic")
    assert bench.report.label("resource") == "resource level" and bench.report.label("easy") == "easy"


def test_a_prompt_declaration_out_of_range_is_refused():
    with pytest.raises(ValueError, match="choices='words'"):
        Prompt(choices="words")
    with pytest.raises(ValueError, match="sampler 'balanced'"):
        Prompt(sampler="balanced")


def test_a_definition_written_the_earlier_way_is_refused_naming_the_declaration(tmp_path):
    with pytest.raises(TypeError, match=r"Old: title is now report = Report\(title=\.\.\.\); doc_to_text is now "
                                        r"prompt = Prompt\(text="):
        class Old(Benchmark):
            title = "Old"

            def doc_to_text(self, rec):
                return rec["question"]
    folder = tmp_path / "defs"
    folder.mkdir()
    (folder / "old.py").write_text("from xlt.data.benchmarks.base import Benchmark\n\n\nclass Old(Benchmark):\n"
                                   "    kind = 'old_style_test'\n    findings = ()\n")
    with pytest.raises(ConfigError, match=r"old\.py line 4: TypeError: .*findings is now report = Report\(claims"):
        include([str(folder)])
