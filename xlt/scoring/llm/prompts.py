"""How a benchmark's prompts become what a causal LLM reads, character for character as lm-evaluation-harness 0.4.x.

What is specific to a benchmark (its ``doc_to_text`` template, answer continuations, few-shot split,
sampler and grouping) is declared by its definition (``prompt``, :class:`xlt.data.benchmarks.declarations.Prompt`)
and formatted by :class:`xlt.scoring.llm.task.HarnessTask`; this module only assembles them, the same way for
every benchmark:

A k-shot context is the k examples, each followed by ``TARGET_DELIMITER`` + the gold target and
``FEWSHOT_DELIMITER``, then the question's own prompt; each answer continuation is scored as
``TARGET_DELIMITER`` + continuation.

With a chat template (``eval.llm.chat_template``) the examples are separate user/assistant turns,
the harness's default ``fewshot_as_multiturn=True`` (:func:`chat_messages`).

The zero-shot instruction prompt for generation is in the format of Bandarkar et al. (2024) (:func:`instruction_prompt`),
with the benchmark's instruction text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from datasets import Dataset

from xlt.data.schema import LETTERS

FEWSHOT_DELIMITER = "\n\n"
TARGET_DELIMITER = " "


# One question's k-shot prompt: [(example prompt, gold target)] and the question's own prompt.
Turns = tuple[list[tuple[str, str]], str]


def fewshot_turns(bench: Any, items: Dataset, pool: Dataset | None, shots: list[list[int]]) -> list[Turns]:
    """The examples (prompt, gold target) and the question prompt of every row of ``items``, in the
    templates of the benchmark's task ``bench`` (:class:`~xlt.scoring.llm.task.HarnessTask`)."""
    pool_turns: dict[int, tuple[str, str]] = {}
    out = []
    for row, rec in enumerate(items):
        examples = []
        for i in shots[row]:
            if i not in pool_turns:
                ex = pool[i]
                pool_turns[i] = (bench.doc_to_text(ex), bench.doc_to_target(ex))
            examples.append(pool_turns[i])
        out.append((examples, bench.doc_to_text(rec)))
    return out


def plain_context(turns: Turns) -> str:
    """The harness's plain-text k-shot context (without the answer)."""
    examples, question = turns
    return "".join(q + TARGET_DELIMITER + a + FEWSHOT_DELIMITER for q, a in examples) + question


def chat_messages(turns: Turns, system: str | None, *, multiturn: bool = True) -> list[dict[str, str]]:
    """The harness's chat messages (``fewshot_context`` with ``apply_chat_template``): each example a
    user turn and an assistant turn holding the gold letter (``fewshot_as_multiturn``), or everything
    in one user message; ``system`` as a system message."""
    head = [{"role": "system", "content": system}] if system else []
    if not multiturn:
        return head + [{"role": "user", "content": plain_context(turns)}]
    examples, question = turns
    body = [m for q, a in examples for m in ({"role": "user", "content": q}, {"role": "assistant", "content": a})]
    return head + body + [{"role": "user", "content": question}]


def fewshot_contexts(bench: Any, items: Dataset, pool: Dataset | None, shots: list[list[int]]) -> list[str]:
    """The harness's plain-text k-shot context of every row of ``items`` (without the answer)."""
    return [plain_context(t) for t in fewshot_turns(bench, items, pool, shots)]


def instruction_prompt(rec: Mapping[str, Any], instruction: str) -> str:
    """The zero-shot prompt of Bandarkar et al. (2024), with as many ``(A)``... choices as the item has options;
    rows without a passage drop that block."""
    passage = rec.get("passage") or ""
    head = f"{instruction}\n###\n"
    if passage.strip():
        head += f"Passage:\n{passage}\n###\n"
    choices = "\n".join(f"({LETTERS[i]}) {o}" for i, o in enumerate(rec["options"]))
    return f"{head}Query:\n{rec['question'].strip()}\n###\nChoices:\n{choices}\n###\nAnswer:\n"
