"""The harness's requests of a benchmark's items: each question's k-shot context and its answer continuations,
built from the config alone (no model), as :class:`~xlt.scoring.llm.scorer.LLMScorer` scores them.

:class:`HarnessRequests` holds what the prompts depend on (``eval.benchmarks``, ``eval.llm``, the tokenizer for a
chat template, where few-shot pools come from); :class:`~xlt.scoring.llm.scorer.LLMScorer` is one, and so is
what :mod:`xlt.reporting.harness` uses to write a run's results as lm-evaluation-harness's sample logs (each
sample's ``arguments``: the context and the continuation of every option).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from datasets import Dataset
from omegaconf import DictConfig, OmegaConf

from xlt.data.benchmarks import get_benchmark
from xlt.errors import ConfigError
from xlt.scoring.llm import prompts
from xlt.scoring.llm.generate import chat_text
from xlt.scoring.llm.load import llm_config
from xlt.scoring.llm.task import HarnessTask

# (benchmark name, language, split) -> the split's items; used to fetch few-shot pools.
PoolSource = Callable[[str, str, str], Dataset]


class HarnessRequests:
    """The k-shot contexts and continuations of an LLM evaluation (the harness protocol), without a model.

    ``section``: the ``eval`` section (its ``llm`` and ``benchmarks``), or the ``eval.llm`` section alone (no
    benchmark entries then: each benchmark is its kind's defaults); ``tokenizer``: needed only with
    ``eval.llm.chat_template`` (the template renders the context); ``pool_source``: where few-shot pools come
    from (default: the configured benchmark entry, without ``max_questions``).
    """

    def __init__(self, section: Any, tokenizer: Any = None, pool_source: PoolSource | None = None) -> None:
        evaluation = section if isinstance(section, (dict, DictConfig)) and "llm" in section else None
        self.benchmarks = evaluation.get("benchmarks") if evaluation is not None else None
        self.llm = llm_config(evaluation.get("llm") if evaluation is not None else section)
        self.tokenizer = tokenizer
        self.pool_source = pool_source or self._registry_pool

    def requests(self, items: Dataset, *, benchmark: str, language: str) -> list[tuple[str, list[str]]]:
        """Per item, its context and its continuations (the target delimiter included): the harness's
        ``arguments`` of its loglikelihood requests, one per option (the harness protocol, log-likelihood mode)."""
        if self.llm.mode != "loglikelihood" or self.llm.get("protocol", "harness") != "harness":
            raise ConfigError("the harness's requests are those of eval.llm.mode=loglikelihood under "
                              f"eval.llm.protocol=harness (this run: mode={self.llm.mode}, "
                              f"protocol={self.llm.get('protocol', 'harness')})")
        bench = HarnessTask(get_benchmark(self._kind(benchmark)))
        turns, _ = self._fewshot_turns(items, benchmark, bench, language)
        delim = self.target_delimiter()
        return [(self._render(t), [delim + c for c in bench.doc_to_choice(rec)])
                for t, rec in zip(turns, items, strict=True)]

    def target_delimiter(self) -> str:
        """What precedes each continuation: the harness's ``" "``, nothing after a chat template's turn."""
        return "" if self.llm.chat_template else prompts.TARGET_DELIMITER

    def _fewshot_turns(self, items: Dataset, benchmark: str, bench: HarnessTask,
                       language: str) -> tuple[list[prompts.Turns], dict[str, Any]]:
        k = int(self.llm.num_fewshot)
        if k == 0:
            return prompts.fewshot_turns(bench, items, None, [[]] * len(items)), {"k": 0}
        # Translate-test: the items were machine-translated into English, so the examples are English
        # too (the benchmark's pivot language; ids are parallel across languages, so the question itself
        # is skipped).
        bcfg = self._bcfg(benchmark)
        translated = bcfg is not None and bool(bcfg.get("translate_test"))
        if translated and bench.pivot_language is None:
            raise ConfigError(f"eval.benchmarks.{benchmark}: {bench.kind} has no English items to draw few-shot "
                              "examples from after translate-test; use eval.llm.num_fewshot=0")
        pool_language = bench.pivot_language if translated else language
        if bench.fewshot_split is None:
            # The harness's pool is the evaluated split; ``items`` is it unless max_questions cut it.
            split = str(bcfg.get("split") or "test") if bcfg is not None else "test"
            cut = bcfg is not None and bcfg.get("max_questions") is not None
            pool = self.pool_source(benchmark, pool_language, split) if cut or translated else items
        else:
            split = bench.fewshot_split
            pool = self.pool_source(benchmark, pool_language, split)
        sampler = self.llm.fewshot_sampler
        if sampler == "auto":
            sampler = bench.default_fewshot_sampler(bcfg)
        shots = bench.fewshot_indices(items, pool, k, sampler=sampler, seed=self.llm.fewshot_seed)
        info = {"k": k, "split": split, "sampler": sampler, "seed": self.llm.fewshot_seed if sampler == "random" else None}
        if translated:
            info["pool_language"] = pool_language
        return prompts.fewshot_turns(bench, items, pool, shots), info

    def _render(self, turns: prompts.Turns) -> str:
        """A k-shot context: plain text, or the harness's chat messages through the chat template."""
        if not self.llm.chat_template:
            return prompts.plain_context(turns)
        return chat_text(self.tokenizer, prompts.chat_messages(turns, self.llm.system_prompt,
                                                               multiturn=bool(self.llm.fewshot_as_multiturn)))

    def _bcfg(self, benchmark: str) -> DictConfig | None:
        return self.benchmarks.get(benchmark) if self.benchmarks is not None else None

    def _kind(self, benchmark: str) -> str:
        bcfg = self._bcfg(benchmark)
        return str(bcfg.kind) if bcfg is not None and bcfg.get("kind") else benchmark

    def _registry_pool(self, benchmark: str, language: str, split: str) -> Dataset:
        bcfg = self._bcfg(benchmark)
        if bcfg is None:
            raise ConfigError(f"eval.benchmarks.{benchmark} is not configured; cannot load its {split} split")
        full = OmegaConf.merge(bcfg, {"max_questions": None})  # the few-shot pool is never truncated
        return get_benchmark(str(bcfg.kind)).load(full, language, split=split)
