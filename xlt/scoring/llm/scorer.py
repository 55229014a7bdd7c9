"""``LLMScorer``: multiple-choice scores of a causal LLM on any benchmark's items, prompted as its definition says.

Two modes (``eval.llm.mode``):

* ``loglikelihood`` — k-shot prompts of lm-evaluation-harness (:mod:`~xlt.scoring.llm.prompts`, with the
  templates of the benchmark's definition); the score of an option is the log-likelihood of
  ``" " + continuation`` (the option's letter, or its text where the benchmark says so) after the context
  (:mod:`~xlt.scoring.llm.loglik`). Predictions match the harness question for question. With
  ``eval.llm.protocol=paper`` the examples are the Belebele paper's instead (:mod:`~xlt.scoring.llm.paper`:
  drawn from the English training set, several draws, each scored; :meth:`LLMScorer.draw_scores`).
* ``generate`` — a zero-shot instruction prompt in Bandarkar et al. (2024)'s format, greedy generation, answer letter
  extracted (:mod:`~xlt.scoring.llm.generate`). The score row is 0 for the named option and ``-inf``
  elsewhere; an unparseable answer gets a row of ``-inf`` (no prediction: the question counts as
  wrong) and is counted.

After each :meth:`LLMScorer.score` call, :attr:`LLMScorer.last_meta` describes it (mode, few-shot
rule, forward cost, parity mode, prefix-cache paths, comparability with the harness, unparseable
answers); :meth:`LLMScorer.language_meta` gives its summary to the
evaluate stage (stored under ``scorer_meta`` in the language's result file), and with a run directory
the full record is written to ``run/eval/<benchmark>/llm_meta/<language>.json``.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
from datasets import Dataset
from omegaconf import DictConfig, OmegaConf

from xlt.config.llm import PAPER_KEYS, UNRECORDED_KEYS
from xlt.data.benchmarks import get_benchmark
from xlt.errors import ConfigError
from xlt.modeling import packaged_llm
from xlt.run.files import atomic_write_json
from xlt.scoring.declaration import LLM_MODEL, ScorerDeclaration
from xlt.scoring.llm import paper, prompts
from xlt.scoring.llm.generate import GreedyGenerator, apply_chat, extract_letter
from xlt.scoring.llm.load import load_causal_lm
from xlt.scoring.llm.loglik import LoglikelihoodEngine, build_sequences, encode_pairs, resolve_max_length
from xlt.scoring.llm.prefix_cache import plan_prefixes, prefix_texts
from xlt.scoring.llm.requests import HarnessRequests, PoolSource
from xlt.scoring.llm.task import HarnessTask

log = logging.getLogger(__name__)


def result_settings(eval_cfg: Any) -> dict[str, Any]:
    """What an LLM result records of the ``eval`` section: the whole ``eval.llm`` group, less the keys of the
    Belebele paper's protocol under the harness protocol (a harness result records what it recorded before
    that protocol existed) and the keys that change no result (``harness_output``)."""
    llm = {k: v for k, v in OmegaConf.to_container(eval_cfg.llm, resolve=True).items() if k not in UNRECORDED_KEYS}
    if eval_cfg.llm.get("protocol", "harness") != "paper":
        llm = {k: v for k, v in llm.items() if k not in PAPER_KEYS}
    return {"llm": llm}


class LLMScorer(HarnessRequests):
    """Scores multiple-choice items with a causal LM (see the module docstring); its prompts are those of
    :class:`~xlt.scoring.llm.requests.HarnessRequests`."""

    declaration = ScorerDeclaration(version=1, scores=LLM_MODEL, settings=result_settings)

    def __init__(self, cfg: DictConfig, run: Any = None, *, model: Any = None, tokenizer: Any = None,
                 device: Any = None, pool_source: PoolSource | None = None, progress: bool = True,
                 share_passes: bool = True, prefix_cache: bool | None = None, share_contexts: bool = True) -> None:
        self.cfg = cfg
        # The scorer protocol hands over the whole config (xlt.scoring.scorers); an LLM section itself is taken too.
        super().__init__(cfg.get("eval") if isinstance(cfg, (dict, DictConfig)) and "eval" in cfg else cfg, tokenizer,
                         pool_source)
        # False scores every option in its own forward pass (the baseline of benchmarks/llm_eval_bench.py).
        self.share_passes = share_passes
        # None: eval.llm.prefix_cache decides (benchmarks/llm_eval_bench.py compares both).
        self.prefix_cache = bool(self.llm.prefix_cache) if prefix_cache is None else prefix_cache
        # With the prefix cache: questions that share more than the prefix (one passage) share that too
        # (not in the per-choice baseline, whose point is one whole pass per option).
        self.share_contexts = share_contexts and share_passes
        self.run = run
        self._pool: tuple[Dataset, Any] | None = None  # protocol=paper: the training set's train split
        if self.llm.protocol == "paper" and self.llm.mode == "loglikelihood":
            self._paper_pool()  # no training set: say so before the model loads
        if model is None or tokenizer is None:
            model, tokenizer, device = load_causal_lm(self.llm)
        self.model, self.tokenizer = model, tokenizer
        self.device = device if device is not None else next(model.parameters()).device
        # what eval.llm.dtype (auto: bfloat16 on a GPU, float32 elsewhere) resolved to: recorded in every result
        self.dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
        self.max_length = resolve_max_length(model.config, tokenizer, self.llm.max_length)
        pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.engine = LoglikelihoodEngine(model, device=self.device, batch_size=self.llm.batch_size,
                                          pad_id=pad_id, progress=progress, score_dtype=self.llm.score_dtype)
        self.generator = GreedyGenerator(model, tokenizer, device=self.device, batch_size=self.llm.batch_size,
                                         max_new_tokens=self.llm.max_new_tokens,
                                         add_bos_token=self.llm.add_bos_token, progress=progress)
        self.last_meta: dict[str, Any] = {}
        self._metas: dict[tuple[str, str], dict[str, Any]] = {}
        self._draws: dict[tuple[str, str], list[np.ndarray]] = {}  # protocol=paper: each draw's scores
        # the harness protocol: per option, whether its continuation is the model's greedy one (is_greedy)
        self._greedy: dict[tuple[str, str], np.ndarray] = {}
        self._last_greedy: np.ndarray | None = None

    # -- public API -------------------------------------------------------------------------------
    def score(self, items: Dataset, *, benchmark: str, language: str) -> np.ndarray:
        """Scores ``(len(items), most options)``, ``-inf`` where an item has fewer options; higher is more
        likely. See :attr:`last_meta` afterwards."""
        kind = self._kind(benchmark)
        bench = HarnessTask(get_benchmark(kind))
        if self.llm.mode == "generate":
            scores, meta = self._score_generate(items, bench)
        else:
            self._last_greedy = None
            scores, meta = self._score_loglikelihood(items, benchmark, bench, language)
            if self.llm.protocol != "paper" and self._last_greedy is not None:
                self._greedy[(benchmark, language)] = self._last_greedy
        self.last_meta = {"benchmark": benchmark, "language": language, "kind": kind, "model": self.llm.model,
                          "mode": self.llm.mode, "questions": len(items), "dtype": self.dtype, **meta}
        if packaged_llm.is_packaged_llm(self.llm.model):  # package, version, SHA-256, 4-bit weights, licence notice
            self.last_meta["model_source"] = packaged_llm.provenance()
        self._metas[(benchmark, language)] = self.last_meta
        self._write_meta(benchmark, language)
        return scores

    def language_meta(self, benchmark: str, language: str) -> dict[str, Any]:
        """Summary of the last :meth:`score` call on (benchmark, language), for the result file.

        The full record (with every generation in ``generate`` mode) is the side file
        ``run/eval/<benchmark>/llm_meta/<language>.json``.
        """
        meta = self._metas.get((benchmark, language), {})
        return {k: v for k, v in meta.items() if k not in ("generations", "unparseable_ids", "benchmark", "language")}

    def contexts(self, items: Dataset, *, benchmark: str, language: str, draw: int = 0) -> list[str]:
        """The exact prompt strings (without the answer) that :meth:`score` feeds the model (under
        ``protocol=paper``: those of draw ``draw``)."""
        bench = HarnessTask(get_benchmark(self._kind(benchmark)))
        if self.llm.mode == "generate":
            return [self._wrap(prompts.instruction_prompt(r, self._instruction(bench))) for r in items]
        if self.llm.protocol == "paper":
            pool, _ = self._paper_pool()
            seed = paper.draw_seeds(self.llm.fewshot_seed, self.llm.fewshot_draws)[draw]
            examples = [pool[i] for i in paper.draw_rows(len(pool), int(self.llm.num_fewshot), seed)]
            return [self._render(t) for t in paper.turns(examples, items)]
        return [self._render(t) for t in self._fewshot_turns(items, benchmark, bench, language)[0]]

    # -- log-likelihood ---------------------------------------------------------------------------
    def _score_loglikelihood(self, items: Dataset, benchmark: str, bench: HarnessTask,
                             language: str) -> tuple[np.ndarray, dict[str, Any]]:
        if self.llm.protocol == "paper":
            return self._score_paper(items, benchmark, bench, language)
        turns, fewshot = self._fewshot_turns(items, benchmark, bench, language)
        scores, meta = self._loglik(items, turns, bench)
        cache = meta.pop("prefix_cache")
        return scores, {"fewshot": fewshot, **meta, "parity": self._parity(), "prefix_cache": cache,
                        **self._comparability(benchmark, bench, len(items))}

    def _score_paper(self, items: Dataset, benchmark: str, bench: HarnessTask,
                     language: str) -> tuple[np.ndarray, dict[str, Any]]:
        """The Belebele paper's protocol (:mod:`~xlt.scoring.llm.paper`): every draw's examples from the English
        training set, each draw scored; returns the mean of the draws' scores (:meth:`draw_scores` gives each)."""
        if bench.kind not in paper.KINDS:
            raise ConfigError(f"eval.llm.protocol=paper is the Belebele paper's protocol; eval.benchmarks.{benchmark} "
                              f"is {bench.kind} (disable it, or use eval.llm.protocol=harness)")
        pool, folder = self._paper_pool()
        k = int(self.llm.num_fewshot)
        runs, per_draw = [], []
        for seed in paper.draw_seeds(self.llm.fewshot_seed, self.llm.fewshot_draws):
            examples = [pool[i] for i in paper.draw_rows(len(pool), k, seed)]
            scores, meta = self._loglik(items, paper.turns(examples, items), bench)
            runs.append(scores)
            per_draw.append({"seed": seed, "examples": [paper.example_id(ex) for ex in examples], **meta})
        self._draws[(benchmark, language)] = runs
        forward = {key: sum(d["forward"][key] for d in per_draw) for key in per_draw[0]["forward"] if key != "batch_size"}
        forward["batch_size"] = per_draw[-1]["forward"]["batch_size"]
        fewshot = {"protocol": "paper", "k": k, "source": f"English training set ({paper.POOL_SPLIT} split)",
                   "train_set": str(folder), "draws": len(runs), "seeds": [d["seed"] for d in per_draw],
                   "examples": [d["examples"] for d in per_draw]}
        reasons = ["the Belebele paper's protocol: few-shot examples drawn from the English training set, accuracy "
                   "averaged over draws; the harness's task takes the first rows of the language's test split"]
        meta = {"fewshot": fewshot, "forward": forward, "max_length": self.max_length,
                "single_pass_questions": sum(d["single_pass_questions"] for d in per_draw),
                "truncated_contexts": sum(d["truncated_contexts"] for d in per_draw),
                "parity": self._parity(), "prefix_cache": [d["prefix_cache"] for d in per_draw],
                "comparable_to_harness": False, "not_comparable_because": reasons}
        return np.mean(np.stack(runs), axis=0), meta

    def _paper_pool(self) -> tuple[Dataset, Any]:
        """The training set's ``train`` split (loaded once per scorer)."""
        if self._pool is None:
            self._pool = paper.load_pool(self.llm.fewshot_source, self.run)
        return self._pool

    def greedy(self, benchmark: str, language: str) -> np.ndarray | None:
        """Per question and option of the last :meth:`score` call on (benchmark, language), whether the option's
        continuation is the model's greedy decoding (lm-evaluation-harness's ``is_greedy``); None outside the
        harness protocol's log-likelihood mode. The evaluate stage writes it into each prediction (``greedy``)."""
        return self._greedy.get((benchmark, language))

    def draw_scores(self, benchmark: str, language: str) -> list[np.ndarray] | None:
        """The scores of each draw of the last :meth:`score` call on (benchmark, language) under
        ``protocol=paper`` (None under the harness protocol): the evaluate stage scores every draw."""
        return self._draws.get((benchmark, language))

    def _loglik(self, items: Dataset, turns: list[prompts.Turns], bench: HarnessTask) -> tuple[np.ndarray, dict[str, Any]]:
        """Log-likelihood scores of the items' answer continuations after their k-shot ``turns``."""
        ctx = [self._render(t) for t in turns]
        delim = "" if self.llm.chat_template else prompts.TARGET_DELIMITER
        conts = [[delim + c for c in bench.doc_to_choice(rec)] for rec in items]
        heads = prefix_texts(ctx, [q for _, q in turns])
        encoded = encode_pairs(self.tokenizer, ctx, conts, self.llm.add_bos_token, heads)
        seqs = build_sequences(encoded, self.max_length, share=self.share_passes)
        use_cache = self.prefix_cache and self.engine.supports_prefix_cache()
        plan = plan_prefixes(self.tokenizer, seqs, encoded, heads,
                             max_length=self.max_length, add_bos_token=self.llm.add_bos_token, enabled=use_cache,
                             share_contexts=self.share_contexts)
        before = self.engine.stats.as_dict()
        scores = self.engine.scores(seqs, len(items), max(map(len, conts)), plan.seq_prefix, plan.seq_context)
        self._last_greedy = self.engine.last_greedy.copy()
        after = self.engine.stats.as_dict()
        cost = {k: after[k] - before[k] for k in ("sequences", "tokens", "padded_tokens", "batches",
                                                  "prefix_passes", "prefix_tokens", "context_passes",
                                                  "context_tokens")}
        cost["batch_size"] = after["batch_size"]
        truncated = sum(len(c) + max(map(len, conts)) > self.max_length + 1 for c, conts in encoded)
        cache_meta = {"enabled": self.prefix_cache, "supported": use_cache or not self.prefix_cache,
                      "distinct_prefixes": plan.distinct_prefixes, "questions_per_path": plan.paths,
                      "shared_context_questions": plan.shared_context_questions,
                      "distinct_contexts": plan.distinct_contexts}
        return scores, {"forward": cost, "max_length": self.max_length,
                        "single_pass_questions": _single_pass(seqs, len(items)), "truncated_contexts": int(truncated),
                        "prefix_cache": cache_meta}

    def _parity(self) -> dict[str, Any]:
        """How the scores relate to lm-evaluation-harness's numerics (stored with every result)."""
        model_dtype = str(getattr(self.model, "dtype", "")).replace("torch.", "") or None
        chat = bool(self.llm.chat_template)
        return {
            "score_dtype": self.llm.score_dtype,
            "log_softmax_dtype": model_dtype if self.llm.score_dtype == "harness" else "float32",
            "model_dtype": model_dtype,
            "chat_template": chat,
            "fewshot_as_multiturn": bool(self.llm.fewshot_as_multiturn) if chat else None,
            "bos": "tokenizer default; none added to a prompt that already starts with BOS (as the harness)"
            if self.llm.add_bos_token is None else f"add_bos_token={self.llm.add_bos_token}; none added to a "
            "prompt that already starts with BOS (as the harness)",
        }

    def _comparability(self, benchmark: str, bench: HarnessTask, n_items: int) -> dict[str, Any]:
        """Whether this run's numbers are comparable with an lm-evaluation-harness run, and why not."""
        bcfg = self._bcfg(benchmark)
        cap = bcfg.get("max_questions") if bcfg is not None else None
        reasons = []
        if bcfg is not None and bool(bcfg.get("translate_test")):
            reasons.append("translate-test: the items were machine-translated into English first; the harness "
                           "has no such task")
        if bcfg is not None and bcfg.get("machine_translate_from"):
            reasons.append(f"a machine-translated version xlt made from the {bcfg.get('machine_translate_from')} items; "
                           "the harness has no such task")
        # Fewer items than the cap: the cap cut nothing, the run is the full language.
        unit = bench.harness_task_unit  # the harness splits a language into tasks by this
        if cap is not None and n_items >= int(cap) and unit is not None:
            reasons.append(f"capped run not comparable: max_questions={cap} kept the first {cap} questions of the "
                           f"language file ({n_items} scored), while lm-evaluation-harness's --limit {cap} keeps "
                           f"the first {cap} questions of each {unit} task")
        out: dict[str, Any] = {"comparable_to_harness": not reasons}
        if reasons:
            out["not_comparable_because"] = reasons
        elif cap is not None:
            out["limit"] = f"max_questions={cap} = the harness's --limit {cap} (first {cap} questions of the task)"
        return out

    # -- generation -------------------------------------------------------------------------------
    def _score_generate(self, items: Dataset, bench: HarnessTask) -> tuple[np.ndarray, dict[str, Any]]:
        texts = [self._wrap(prompts.instruction_prompt(r, self._instruction(bench))) for r in items]
        outputs = self.generator.generate(texts)
        scores = np.full((len(items), max(map(len, items["options"]))), -math.inf)
        bad: list[str] = []
        for i, (out, opts) in enumerate(zip(outputs, items["options"], strict=True)):
            letter = extract_letter(out, opts)
            if letter is None:
                bad.append(items[i]["id"])
            else:
                scores[i, letter] = 0.0
        if bad:
            log.warning("%d of %d generated answers name no option (counted as wrong)", len(bad), len(items))
        meta = {"unparseable": len(bad), "unparseable_ids": bad,
                "generations": dict(zip(items["id"], outputs, strict=True)),
                "max_new_tokens": self.llm.max_new_tokens}
        return scores, meta

    def _instruction(self, bench: HarnessTask) -> str:
        return self.llm.instruction or bench.instruction()

    # -- helpers ----------------------------------------------------------------------------------
    def _wrap(self, text: str) -> str:
        return apply_chat(self.tokenizer, text, self.llm.system_prompt) if self.llm.chat_template else text

    def _write_meta(self, benchmark: str, language: str) -> None:
        if self.run is None:
            return

        atomic_write_json(self.run.llm_meta(benchmark, language), self.last_meta)


def _single_pass(seqs: list, n_questions: int) -> int:
    per_q = np.zeros(n_questions, dtype=int)
    for s in seqs:
        per_q[s.members[0][0]] += 1
    return int((per_q == 1).sum())
