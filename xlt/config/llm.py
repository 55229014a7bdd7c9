"""Schema of ``eval.llm`` (conf/eval/llm_*.yaml): scoring a causal LLM the way lm-evaluation-harness does.

Hooked into :class:`xlt.config.eval.EvalConfig` as ``llm: LLMConfig``; used when ``eval.scorer == "llm"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xlt.config.fields import neutral, opt

# Few-shot protocols of eval.llm.protocol (the first is the default).
PROTOCOLS = ("harness", "paper")
# The keys of the paper protocol: absent from a harness result's recorded settings and hashes.
PAPER_KEYS = ("protocol", "fewshot_draws", "fewshot_source")
# Keys a result never records: where copies of the results go (they change no result).
UNRECORDED_KEYS = ("harness_output",)


def selected(eval_cfg: Any) -> bool:
    """Whether ``eval.scorer`` selects the scorer this section configures (:class:`xlt.scoring.llm.scorer.LLMScorer`,
    registered as ``llm``). The config checks (:mod:`xlt.config.rules`) run below the scorers' layer, before any
    scorer loads, so they ask this, not the scorer's declaration (:mod:`xlt.scoring.declaration`): the one
    comparison of ``eval.scorer`` to a name outside ``xlt/scoring`` (``tests/test_sentinels.py``)."""
    return eval_cfg.scorer == "llm"


@dataclass
class LLMConfig:
    """A causal LM (any ``AutoModelForCausalLM``) and how to prompt and score it."""

    # Hub id or local directory of the model. Required for an LLM run (eval.llm.model=...).
    model: str | None = None
    revision: str | None = None
    # Tokenizer id/path if different from the model's.
    tokenizer: str | None = None
    # "loglikelihood": k-shot, one log-likelihood per option, as lm-evaluation-harness;
    # "generate": zero-shot instruction prompt, greedy generation, answer letter extracted.
    mode: str = opt("loglikelihood", choices=("loglikelihood", "generate"))
    # Few-shot examples per question (loglikelihood mode).
    num_fewshot: int = opt(5, ge=0)
    # Few-shot selection: "auto" (what the benchmark's definition says the harness does, e.g. the first k
    # rows of the pool, or seeded random rows), "first_n" or "random" (the harness's samplers).
    fewshot_sampler: str = opt("auto", choices=("auto", "first_n", "random"))
    # Seed of the random few-shot sampler (lm-evaluation-harness's default is 1234); with protocol=paper the
    # seed of the first draw (draw d uses fewshot_seed + d).
    fewshot_seed: int = 1234
    # Few-shot protocol (loglikelihood mode). "harness": lm-evaluation-harness's (each benchmark's own rule,
    # e.g. Belebele: the first k rows of the evaluated language's test split). "paper": the Belebele paper's
    # (Bandarkar et al., 2024): num_fewshot examples drawn at random from the English training set that the
    # build_data stage makes (the same examples for every question and language of a draw), fewshot_draws
    # draws, accuracy averaged over them and their spread reported (xlt/scoring/llm/paper.py).
    protocol: str = opt("harness", choices=PROTOCOLS, omit_default=True)
    # protocol=paper: the number of draws (the paper averages 3 runs).
    fewshot_draws: int = opt(3, ge=1, when=("eval.llm.protocol", "paper"), omit_default=True)
    # protocol=paper: where the training set comes from: null (the run's own build_data output), a run
    # directory, or a training-set folder (what build_data saves: run/data/train_set).
    fewshot_source: str | None = opt(None, when=("eval.llm.protocol", "paper"), omit_default=True)
    # "auto": bfloat16 on CUDA, float32 on CPU; or float32 / bfloat16 / float16.
    dtype: str = opt("auto", choices=("auto", "float32", "bfloat16", "float16"))
    # Numerics of the option scores. "harness" (default): log-softmax in the model's dtype, as
    # lm-evaluation-harness does (comparable with published harness numbers; in bf16 near-ties can flip);
    # "float32": log-softmax of float32 logits (more precise; may differ from the harness on bf16 ties).
    score_dtype: str = opt("harness", choices=("harness", "float32"))
    # Encode each distinct few-shot prefix once and score only each question's suffix against its KV
    # cache (used only where the prefix tokens equal the start of the question's own tokenization).
    prefix_cache: bool = True
    # "auto" (CUDA if available) or a torch device string.
    device: str = neutral("auto", why="where the model runs; the dtype it runs in is eval.llm.dtype")
    # Sequences per forward pass to start with; halved automatically on out-of-memory.
    batch_size: int = opt(32, ge=1)
    # Longest input in tokens (left-truncated like the harness); None: from the model config.
    max_length: int | None = opt(None, ge=1)
    # Prepend BOS: None follows the tokenizer's default (as the harness does).
    add_bos_token: bool | None = None
    # Wrap the prompt in the tokenizer's chat template (instruction-tuned models).
    chat_template: bool = False
    # With chat_template: few-shot examples as separate user/assistant turns (the harness's default with
    # --apply_chat_template) or, if false, all in one user message (--fewshot_as_multiturn false).
    fewshot_as_multiturn: bool = True
    system_prompt: str | None = None
    # Also write lm-evaluation-harness's output folder, beside the report (the report stage; xlt/reporting/harness):
    # false (no), true (into the run directory's harness/ folder) or a folder. Its results_<date>.json and
    # samples_<task>_<date>.jsonl are those `lm_eval --output_path <folder> --log_samples` writes (the harness
    # protocol, log-likelihood mode); `xlt report --to-harness RUN_DIR OUT` writes them for a finished run.
    harness_output: Any = neutral(False, why="where a copy of the results goes, in lm-evaluation-harness's files; "
                                  "it changes none of them")
    # Generation mode: instruction text (None: the benchmark definition's) and new-token budget.
    instruction: str | None = None
    max_new_tokens: int = opt(16, ge=1)
