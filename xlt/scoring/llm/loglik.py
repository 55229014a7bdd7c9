"""Log-likelihood of continuations under a causal LM, token for token as lm-evaluation-harness computes it.

Tokenization follows ``lm_eval.api.model.TemplateLM._encode_pair``: trailing spaces of the context move
to the continuation, context+continuation is encoded jointly and the continuation is the tokens after
the context's own tokens. The model input is ``(context + continuation)[-(max_length + 1):][:-1]``,
right-padded, without an attention mask (causal attention makes padding after a row irrelevant).

Speed-ups over scoring each option separately (and over the harness):

* options whose inputs coincide (``context + continuation[:-1]``: always the case for one-token
  continuations like the answer letters) share **one** forward pass;
* only the positions whose log-probabilities are needed go through the LM head (a forward pre-hook
  on the output embeddings gathers them), so no ``[batch, length, vocab]`` tensor is ever built;
* questions that share a few-shot prefix (the same first-n examples, one subject's dev rows)
  reuse its key/value cache: the prefix is encoded once and only each question's suffix is run, the
  batch's suffixes attending to the one unexpanded cache through a cascade attention function registered
  with transformers' ``AttentionInterface`` (:mod:`xlt.scoring.llm.prefix_cache` decides where this is
  exact); prefixes are encoded in sorted order, and one that starts with the same tokens as the one
  before it (the harness's first-n few-shot sets of a language's first questions, which skip the
  question itself) runs only the tokens after the shared ones, against their states;
* passes run only for the key/value states of their tokens (a shared context, the rest of a partial
  prefix) stop once the last layer's states are recorded (:func:`~xlt.scoring.llm.cascade.attending`
  with ``capture``);
* a few-shot head shared by many contexts is tokenized once where that gives the same ids
  (:mod:`xlt.scoring.llm.encoding`);
* sequences are sorted longest first and batched; the batch size halves on out-of-memory.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np
import torch

from xlt.batching import AdaptiveBatcher
from xlt.progress import progress_bar
from xlt.scoring.llm.cascade import ContextKV, PrefixKV, PrefixStates, attending
from xlt.scoring.llm.encoding import encode_group

log = logging.getLogger(__name__)

DEFAULT_MAX_LENGTH = 2048
# A prefix reuses the states of the leading tokens it shares with the prefix encoded before it where they
# are at least this many and at least this part of it (:func:`worth_reusing`).
MIN_REUSED_PREFIX = 8
MIN_REUSED_PART = 1 / 8


def worth_reusing(shared: int, length: int) -> bool:
    """Whether a prefix of ``length`` tokens whose first ``shared`` tokens' states exist reuses them (a pass
    of its own for the rest) rather than running whole: the shared part must be at least
    :data:`MIN_REUSED_PREFIX` tokens and :data:`MIN_REUSED_PART` of the prefix, so that a common header
    (Global-MMLU's ``The following are multiple choice questions ...``) does not split questions that
    share nothing else into passes of one row each."""
    return shared >= MIN_REUSED_PREFIX and shared >= MIN_REUSED_PART * length


_SEQLEN_ATTRS = ("n_positions", "max_position_embeddings", "n_ctx")


def resolve_max_length(model_config, tokenizer, configured: int | None = None) -> int:
    """The model's context length, found as the harness finds it (config, then tokenizer, then 2048)."""
    if configured:
        return int(configured)
    cfg = getattr(model_config, "text_config", None) or model_config
    for attr in _SEQLEN_ATTRS:
        value = getattr(cfg, attr, None)
        if value is not None:
            return int(value)
    mml = getattr(tokenizer, "model_max_length", None)
    if mml is not None and mml < 1e29:
        return int(mml)
    return DEFAULT_MAX_LENGTH


def _encode_kwargs(tokenizer, text: str, add_bos_token: bool | None) -> dict:
    # HFLM.tok_encode: a text which already starts with the BOS string (e.g. a chat template that writes
    # BOS itself) is encoded without special tokens, even with add_bos_token=True (no double BOS);
    # otherwise an explicit add_bos_token wins, else the tokenizer's default.
    prefix_id = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if prefix_id is not None and text.startswith(tokenizer.decode(prefix_id)):
        return {"add_special_tokens": False}
    if add_bos_token is not None:
        return {"add_special_tokens": add_bos_token}
    return {}


def encode_texts(tokenizer, texts: list[str], add_bos_token: bool | None,
                 heads: Sequence[str] | None = None) -> list[list[int]]:
    """Token ids of ``texts`` as the harness's ``tok_encode`` gives them, encoded in batches; ``heads[i]``
    (optional) a head ``texts[i]`` shares with other texts, encoded once where that is exact
    (:func:`xlt.scoring.llm.encoding.encode_group`)."""
    out: list[list[int] | None] = [None] * len(texts)
    buckets: dict[tuple, list[int]] = {}
    for i, t in enumerate(texts):
        buckets.setdefault(tuple(sorted(_encode_kwargs(tokenizer, t, add_bos_token).items())), []).append(i)
    for kw, idx in buckets.items():
        enc = encode_group(tokenizer, [texts[i] for i in idx], dict(kw),
                           [heads[i] for i in idx] if heads is not None else None)
        for i, ids in zip(idx, enc, strict=True):
            out[i] = ids
    return out  # type: ignore[return-value]


def encode_pairs(
    tokenizer, contexts: Sequence[str], continuations: Sequence[Sequence[str]], add_bos_token: bool | None = None,
    heads: Sequence[str] | None = None,
) -> list[tuple[list[int], list[list[int]]]]:
    """``[(context_tokens, [continuation_tokens per option])]`` exactly as the harness's ``_encode_pair``.

    All contexts must be non-empty (the benchmarks' prompts always are). ``heads[q]`` (optional): the
    text context ``q`` starts with and shares with others (its few-shot examples), see :func:`encode_texts`.
    """
    ctx_texts: list[str] = []
    whole_texts: list[str] = []
    whole_heads: list[str] = []
    for q, (ctx, conts) in enumerate(zip(contexts, continuations, strict=True)):
        if not ctx:
            raise ValueError("empty context: every prompt must have text before the answer")
        n_spaces = len(ctx) - len(ctx.rstrip())
        if n_spaces:
            conts = [ctx[-n_spaces:] + c for c in conts]
            ctx = ctx[:-n_spaces]
        ctx_texts.append(ctx)
        whole_texts.extend(ctx + c for c in conts)
        if heads is not None:
            whole_heads.extend([heads[q]] * len(conts))
    ctx_enc = encode_texts(tokenizer, ctx_texts, add_bos_token, heads)
    whole_enc = encode_texts(tokenizer, whole_texts, add_bos_token, whole_heads if heads is not None else None)
    out = []
    k = 0
    for q, conts in enumerate(continuations):
        n = len(ctx_enc[q])
        cont_enc = []
        for _ in conts:
            cont = whole_enc[k][n:]
            k += 1
            if not cont:
                raise ValueError(f"question {q}: a continuation encodes to no tokens after its context")
            cont_enc.append(cont)
        out.append((ctx_enc[q], cont_enc))
    return out


@dataclass
class ForwardInput:
    """One forward input and the (question, option) scores it yields."""

    tokens: list[int]
    # (question, option, continuation tokens); all members share the input and the continuation length.
    members: list[tuple[int, int, list[int]]] = field(default_factory=list)


def build_sequences(
    encoded: Sequence[tuple[list[int], list[list[int]]]], max_length: int, *, share: bool = True
) -> list[ForwardInput]:
    """Forward inputs for ``encoded``: one per distinct ``context + continuation[:-1]`` of a question
    (``share``) or one per option (``share=False``, plain per-choice scoring)."""
    seqs: list[ForwardInput] = []
    for q, (ctx, conts) in enumerate(encoded):
        groups: dict[tuple[int, ...], ForwardInput] = {}
        for j, cont in enumerate(conts):
            if len(cont) > max_length:
                raise ValueError(f"question {q} option {j}: continuation of {len(cont)} tokens exceeds max_length")
            inp = (ctx + cont)[-(max_length + 1) :][:-1]
            if share:
                seq = groups.get(tuple(inp))
                if seq is None:
                    seq = groups[tuple(inp)] = ForwardInput(inp)
                    seqs.append(seq)
            else:
                seq = ForwardInput(inp)
                seqs.append(seq)
            seq.members.append((q, j, cont))
    return seqs


@dataclass
class ForwardStats:
    """What the forward passes cost: sequences, real and padded tokens (prefix passes included),
    batches, prefix passes and their tokens, final batch size."""

    sequences: int = 0
    tokens: int = 0
    padded_tokens: int = 0
    batches: int = 0
    prefix_passes: int = 0
    prefix_tokens: int = 0
    context_passes: int = 0
    context_tokens: int = 0
    batch_size: int = 0
    oom_halvings: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def _output_cache(out):
    cache = getattr(out, "cache", None)
    return cache if cache is not None else getattr(out, "past_key_values", None)


class LoglikelihoodEngine:
    """Batched log-likelihood scoring of :class:`ForwardInput` lists on one causal LM.

    ``score_dtype="harness"`` takes the log-softmax in the model's dtype (as the harness's ``HFLM``
    does with its default ``softmax_dtype=None``); ``"float32"`` upcasts the logits first.
    """

    def __init__(self, model, *, device: torch.device | str, batch_size: int = 32, pad_id: int = 0,
                 progress: bool = True, score_dtype: str = "harness") -> None:
        if score_dtype not in ("harness", "float32"):
            raise ValueError(f"score_dtype must be 'harness' or 'float32', got {score_dtype!r}")
        self.model = model
        self.device = torch.device(device)
        self.batch_size = max(1, int(batch_size))
        self.pad_id = pad_id
        self.progress = progress
        self.score_dtype = score_dtype
        self.stats = ForwardStats()
        self.last_greedy = np.zeros((0, 0), dtype=bool)  # set by each scores() call
        self.batcher = AdaptiveBatcher(self.batch_size, what="LLM scoring")  # halves on OOM, keeps done batches
        self._reductions_seen = 0
        self._cache_ok: bool | None = None
        self._windows: list[int | None] = []  # per layer its sliding window (None: full attention)

    def scores(self, seqs: list[ForwardInput], n_questions: int, n_options: int,
               prefixes: Sequence[tuple[int, ...] | None] | None = None,
               contexts: Sequence[int] | None = None) -> np.ndarray:
        """Summed continuation log-probabilities, shape ``(n_questions, n_options)`` (float64); ``-inf``
        where a question has fewer options (no member of ``seqs`` scores that slot).

        ``prefixes[i]`` (optional): tokens that ``seqs[i]`` starts with and whose KV cache it may reuse;
        every logit position of the sequence must lie after them (see
        :func:`xlt.scoring.llm.prefix_cache.plan_prefixes`). Each distinct prefix is encoded once.
        Prefixes are encoded in sorted order; one that shares enough leading tokens with the prefix encoded
        just before it (:func:`worth_reusing`) reuses their states and runs only the rest.
        ``contexts[i]`` (optional, with a prefix): how many tokens after its prefix ``seqs[i]`` shares
        with other sequences (a passage several questions ask about; 0: none): each distinct shared
        context is run once, against the prefix's cache, and the sequences that continue it read its
        states. Exact, like the prefix (:mod:`xlt.scoring.llm.cascade`).
        """
        out = np.full((n_questions, n_options), np.nan)
        # whether each continuation is the greedy one (the harness's ``is_greedy``): read after the call
        self.last_greedy = np.zeros((n_questions, n_options), dtype=bool)
        wanted = np.zeros((n_questions, n_options), dtype=bool)
        for seq in seqs:
            for q, j, _ in seq.members:
                wanted[q, j] = True
        groups: dict[tuple[int, ...], list[tuple[ForwardInput, tuple[int, ...]]]] = {}
        plain: list[tuple[ForwardInput, tuple[int, ...]]] = []
        for i, seq in enumerate(seqs):
            pre = prefixes[i] if prefixes is not None else None
            extra = int(contexts[i]) if pre and contexts is not None else 0
            if pre:
                n = len(pre) + extra
                if len(seq.tokens) - len(seq.members[0][2]) < n or tuple(seq.tokens[: len(pre)]) != pre:
                    raise ValueError("internal error: a sequence does not extend its prefix past the scored positions")
                groups.setdefault(pre, []).append((seq, tuple(seq.tokens[len(pre) : n])))
            else:
                plain.append((seq, ()))
        bar = progress_bar(total=len(seqs), desc="LLM log-likelihood", unit="seq", disable=not self.progress)
        self._run(plain, out, bar, None)
        # Sorted, a prefix shares its longest run of leading tokens with any earlier one with the one just
        # before it: only that one's states are kept.
        previous: PrefixStates | None = None
        for pre in sorted(groups):
            states = self._encode_prefix(pre, previous)
            self._run(groups.pop(pre), out, bar, states.kv())
            previous = states
        del previous
        bar.close()
        self.stats.batch_size = self.batch_size
        if np.isnan(out[wanted]).any():
            raise RuntimeError("internal error: some options were not scored")
        out[~wanted] = -np.inf
        return out

    def supports_prefix_cache(self) -> bool:
        """True if the model returns a :class:`~transformers.DynamicCache` whose layers are full
        (``DynamicLayer``) or sliding-window (``DynamicSlidingWindowLayer``) ones, attends causally, and
        can switch attention functions; other cache layouts (chunked attention, ...) are not reused."""
        if self._cache_ok is None:
            from transformers import DynamicCache
            from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

            try:
                with torch.inference_mode():
                    out = self.model(input_ids=torch.tensor([[self.pad_id]], device=self.device), use_cache=True,
                                     logits_to_keep=1)
            except TypeError:  # a model without ``logits_to_keep``
                self._cache_ok = False
                return False
            cache = _output_cache(out)
            layers = getattr(cache, "layers", None)
            self._windows = [getattr(layer, "sliding_window", None) if getattr(layer, "is_sliding", False) else None
                             for layer in layers or []]
            can_set = getattr(self.model, "_can_set_attn_implementation", lambda: False)
            text_cfg = getattr(self.model.config, "text_config", None) or self.model.config
            causal = not getattr(text_cfg, "use_bidirectional_attention", False)
            self._cache_ok = (isinstance(cache, DynamicCache) and bool(layers) and causal
                              and all(type(layer) in (DynamicLayer, DynamicSlidingWindowLayer) for layer in layers)
                              and bool(can_set()))
        return self._cache_ok

    def _run(self, items: list[tuple[ForwardInput, tuple[int, ...]]], out: np.ndarray, bar,
             past: PrefixKV | None) -> None:
        """Score ``items`` (each a sequence and the shared context it continues after ``past``, or ``()``)."""
        # Longest own part first (OOM early, little padding: a batch runs as long as its longest row
        # past the caches); the sequences of one shared context next to each other.
        longest: dict[tuple[int, ...], int] = {}
        for seq, ctx in items:
            if ctx:
                longest[ctx] = max(longest.get(ctx, 0), len(seq.tokens) - len(ctx))
        items = sorted(items, key=lambda it: (-(longest[it[1]] if it[1] else len(it[0].tokens)), it[1],
                                              -len(it[0].tokens)))
        store: dict[tuple[int, ...], list[tuple[torch.Tensor, torch.Tensor]]] = {}

        def forward(chunk: list[tuple[ForwardInput, tuple[int, ...]]]) -> list[list[tuple[float, bool]]]:
            context = self._contexts([ctx for _, ctx in chunk], past, store) if past is not None else None
            return self._forward([seq for seq, _ in chunk], past, context)

        def done(chunk: list[tuple[ForwardInput, tuple[int, ...]]], lls) -> None:
            for (seq, _), row in zip(chunk, lls, strict=True):
                for m, (q, j, _) in enumerate(seq.members):
                    out[q, j], self.last_greedy[q, j] = row[m]
            bar.update(len(chunk))

        self.batcher.batch_size = self.batch_size
        # rows with a shared context run much shorter own parts: batched apart from those without
        for part in ([it for it in items if not it[1]], [it for it in items if it[1]]):
            if part:
                self.batcher.map(forward, part, on_batch=done)
        self.stats.oom_halvings += self.batcher.reductions - self._reductions_seen
        self._reductions_seen = self.batcher.reductions
        self.batch_size = self.batcher.batch_size

    @torch.inference_mode()
    def _encode_prefix(self, prefix: tuple[int, ...], previous: PrefixStates | None = None) -> PrefixStates:
        """Every layer's key/value states of ``prefix`` (sliding-window layers too: a later prefix may
        reuse a leading part of them). With ``previous``, the leading tokens the two share (where
        :func:`worth_reusing`) keep ``previous``'s states and only the rest runs, through cascade
        attention against them, which records the rest's states."""
        if not self.supports_prefix_cache():
            raise RuntimeError("internal error: a prefix cache was asked of a model that does not support one")
        shared = 0
        if previous is not None:
            limit = min(len(prefix), len(previous.tokens))
            while shared < limit and prefix[shared] == previous.tokens[shared]:
                shared += 1
        if worth_reusing(shared, len(prefix)):
            rest = prefix[shared:]
            if not rest:  # a leading part of the previous prefix (not in sorted order, but exact anyway)
                return PrefixStates(prefix, [(k[:, :, :shared], v[:, :, :shared]) for k, v in previous.layers],
                                    list(previous.windows))
            captured: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
            ids = torch.tensor([rest], dtype=torch.long, device=self.device)
            positions = torch.arange(shared, len(prefix), device=self.device)[None, :]
            with attending(self.model, previous.kv(shared), capture=captured):
                self.model(input_ids=ids, position_ids=positions, use_cache=False, logits_to_keep=1)
            if sorted(captured) != list(range(len(previous.layers))):
                raise RuntimeError("internal error: not every layer attended through the prefix cascade")
            states = previous.extended(shared, captured, prefix)
        else:
            from transformers import DynamicCache

            rest = prefix
            ids = torch.tensor([prefix], dtype=torch.long, device=self.device)
            # a cache of full layers only: the sliding-window layers keep every state too (the model's
            # masks come from its config, so the pass itself is the same)
            out = self.model(input_ids=ids, use_cache=True, logits_to_keep=1, **{self._cache_arg(): DynamicCache()})
            cache = _output_cache(out)
            layers = [(layer.keys, layer.values) for layer in cache.layers]
            if len(layers) != len(self._windows) or any(k.shape[-2] != len(prefix) for k, _ in layers):
                raise RuntimeError(f"internal error: the prefix pass did not keep all {len(prefix)} states of "
                                   f"its {len(self._windows)} layers")
            states = PrefixStates(prefix, layers, list(self._windows))
        self.stats.prefix_passes += 1
        self.stats.prefix_tokens += len(rest)
        self.stats.tokens += len(rest)
        self.stats.padded_tokens += len(rest)
        return states

    def _cache_arg(self) -> str:
        """The name under which the model's ``forward`` takes a cache object (transformers 5.x: ``cache``;
        earlier: ``past_key_values``)."""
        import inspect

        params = inspect.signature(self.model.forward).parameters
        return "cache" if "cache" in params else "past_key_values"

    @torch.inference_mode()
    def _contexts(self, ctxs: list[tuple[int, ...]], past: PrefixKV,
                  store: dict[tuple[int, ...], list[tuple[torch.Tensor, torch.Tensor]]]) -> ContextKV | None:
        """The shared contexts of a batch's rows as a :class:`ContextKV` (``None`` if no row has one).

        Contexts not in ``store`` (those of the previous batch) run in one padded pass against ``past``
        through cascade attention, which records each layer's key/value states; ``store`` then holds
        this batch's contexts only.
        """
        distinct = list(dict.fromkeys(c for c in ctxs if c))
        if not distinct:
            store.clear()
            return None
        missing = [c for c in distinct if c not in store]
        kept = {c: store[c] for c in distinct if c in store}
        if missing:
            e = max(map(len, missing))
            ids = torch.full((len(missing), e), self.pad_id, dtype=torch.long)
            for i, c in enumerate(missing):
                ids[i, : len(c)] = torch.tensor(c)
            captured: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
            positions = torch.arange(past.length, past.length + e, device=self.device).expand(len(missing), -1)
            with attending(self.model, past, capture=captured):
                self.model(input_ids=ids.to(self.device), position_ids=positions, use_cache=False, logits_to_keep=1)
            if sorted(captured) != list(range(len(past.layers))):
                raise RuntimeError("internal error: not every layer attended through the prefix cascade")
            for i, c in enumerate(missing):
                kept[c] = [(captured[layer][0][i : i + 1, :, : len(c)], captured[layer][1][i : i + 1, :, : len(c)])
                           for layer in range(len(past.layers))]
            self.stats.context_passes += 1
            self.stats.context_tokens += sum(map(len, missing))
            self.stats.tokens += sum(map(len, missing))
            self.stats.padded_tokens += ids.numel()
        store.clear()
        store.update(kept)
        slot = {c: i for i, c in enumerate(distinct)}
        e = max(map(len, distinct))
        layers = []
        for layer in range(len(past.layers)):
            ks, vs = [], []
            for c in distinct:
                k, v = kept[c][layer]
                pad = (0, 0, 0, e - k.shape[-2])
                ks.append(torch.nn.functional.pad(k, pad))
                vs.append(torch.nn.functional.pad(v, pad))
            layers.append((torch.cat(ks), torch.cat(vs)))
        rows = torch.tensor([slot.get(c, 0) for c in ctxs], dtype=torch.long, device=self.device)
        lengths = torch.tensor([len(c) for c in ctxs], dtype=torch.long, device=self.device)
        return ContextKV(layers, lengths, rows)

    @torch.inference_mode()
    def _forward(self, chunk: list[ForwardInput], past: PrefixKV | None,
                 context: ContextKV | None = None) -> list[list[tuple[float, bool]]]:
        """Per row, per member: the continuation's summed log-probability and whether each of its tokens is the
        argmax of the log-probabilities at its position (the harness's ``is_greedy``)."""
        # tokens already in the caches, per row: the prefix, then the row's shared context
        skips = [past.length if past is not None else 0] * len(chunk)
        if context is not None:
            skips = [s + int(n) for s, n in zip(skips, context.lengths.tolist(), strict=True)]
        b = len(chunk)
        t = max(len(s.tokens) - skip for s, skip in zip(chunk, skips, strict=True))
        p = max(len(s.members[0][2]) for s in chunk)
        k = max(len(s.members) for s in chunk)
        ids = torch.full((b, t), self.pad_id, dtype=torch.long)
        pos = torch.zeros((b, p), dtype=torch.long)
        targets = torch.zeros((b, p, k), dtype=torch.long)
        mask = torch.zeros((b, p, k), dtype=torch.bool)
        for r, (s, skip) in enumerate(zip(chunk, skips, strict=True)):
            n = len(s.tokens) - skip
            ids[r, :n] = torch.tensor(s.tokens[skip:])
            c = len(s.members[0][2])
            pos[r, :c] = torch.arange(n - c, n)
            for m, (_, _, cont) in enumerate(s.members):
                targets[r, :c, m] = torch.tensor(cont)
                mask[r, :c, m] = True
        logits = self._logits_at(ids.to(self.device), pos.to(self.device), past, context)  # [b, p, vocab]
        if self.score_dtype == "float32":
            logits = logits.float()
        logp = torch.log_softmax(logits, dim=-1)
        picked = logp.gather(2, targets.to(self.device)).masked_fill(~mask.to(self.device), 0.0).sum(1)  # [b, k]
        greedy = ((logp.argmax(-1).unsqueeze(-1) == targets.to(self.device)) | ~mask.to(self.device)).all(1)  # [b, k]
        self.stats.sequences += b
        self.stats.tokens += sum(len(s.tokens) - skip for s, skip in zip(chunk, skips, strict=True))
        self.stats.padded_tokens += b * t
        self.stats.batches += 1
        picked, greedy = picked.double().cpu().numpy(), greedy.cpu().numpy()
        return [list(zip(picked[r, : len(s.members)].tolist(), greedy[r, : len(s.members)].tolist(), strict=True))
                for r, s in enumerate(chunk)]

    def _logits_at(self, ids: torch.Tensor, pos: torch.Tensor, past: PrefixKV | None = None,
                   context: ContextKV | None = None) -> torch.Tensor:
        """Logits at ``pos`` ([b, p]) only: the LM head sees just the gathered hidden states.

        With ``past``, ``ids`` continue that prefix (and row ``r`` the first ``context.lengths[r]`` tokens
        of its shared context): every layer attends to their key/value states through cascade attention
        (:mod:`xlt.scoring.llm.cascade`; the prefix cache is shared by the batch, not expanded or copied).
        """
        head = self.model.get_output_embeddings()
        rows = torch.arange(ids.shape[0], device=ids.device)[:, None]
        fired = []

        def gather(_module, args):
            fired.append(True)
            return (args[0][rows, pos],) + tuple(args[1:])

        kwargs: dict = {"use_cache": False}
        if past is not None:  # positions continue the prefix (and the row's context)
            start = torch.full((ids.shape[0],), past.length, dtype=torch.long, device=ids.device)
            if context is not None:
                start = start + context.lengths.to(ids.device)
            kwargs["position_ids"] = start[:, None] + torch.arange(ids.shape[1], device=ids.device)[None, :]
        handle = head.register_forward_pre_hook(gather) if head is not None else None
        try:
            with attending(self.model, past, context) if past is not None else nullcontext():
                logits = self.model(input_ids=ids, **kwargs).logits
        finally:
            if handle is not None:
                handle.remove()
        if fired:
            return logits
        return logits[rows, pos]  # the head was not called as expected: gather from the full logits
