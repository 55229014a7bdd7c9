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
  exact);
* sequences are sorted longest first and batched; the batch size halves on out-of-memory.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np
import torch

from xlt.batching import AdaptiveBatcher
from xlt.progress import progress_bar

log = logging.getLogger(__name__)

DEFAULT_MAX_LENGTH = 2048
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


def encode_texts(tokenizer, texts: list[str], add_bos_token: bool | None) -> list[list[int]]:
    """Token ids of ``texts`` as the harness's ``tok_encode`` gives them, encoded in batches."""
    out: list[list[int] | None] = [None] * len(texts)
    buckets: dict[tuple, list[int]] = {}
    for i, t in enumerate(texts):
        buckets.setdefault(tuple(sorted(_encode_kwargs(tokenizer, t, add_bos_token).items())), []).append(i)
    for kw, idx in buckets.items():
        enc = tokenizer([texts[i] for i in idx], **dict(kw))["input_ids"]
        for i, ids in zip(idx, enc, strict=True):
            out[i] = list(ids)
    return out  # type: ignore[return-value]


def encode_pairs(
    tokenizer, contexts: Sequence[str], continuations: Sequence[Sequence[str]], add_bos_token: bool | None = None
) -> list[tuple[list[int], list[list[int]]]]:
    """``[(context_tokens, [continuation_tokens per option])]`` exactly as the harness's ``_encode_pair``.

    All contexts must be non-empty (the benchmarks' prompts always are).
    """
    ctx_texts: list[str] = []
    whole_texts: list[str] = []
    for ctx, conts in zip(contexts, continuations, strict=True):
        if not ctx:
            raise ValueError("empty context: every prompt must have text before the answer")
        n_spaces = len(ctx) - len(ctx.rstrip())
        if n_spaces:
            conts = [ctx[-n_spaces:] + c for c in conts]
            ctx = ctx[:-n_spaces]
        ctx_texts.append(ctx)
        whole_texts.extend(ctx + c for c in conts)
    ctx_enc = encode_texts(tokenizer, ctx_texts, add_bos_token)
    whole_enc = encode_texts(tokenizer, whole_texts, add_bos_token)
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
    batch_size: int = 0
    oom_halvings: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)




def _output_cache(out):
    cache = getattr(out, "cache", None)
    return cache if cache is not None else getattr(out, "past_key_values", None)


# One prefix's key/value states per layer, each [1, kv_heads, prefix_len, head_dim].
PrefixKV = list[tuple[torch.Tensor, torch.Tensor]]

CASCADE = "xlt_prefix_cascade"
_PREFIX_KV: ContextVar[PrefixKV | None] = ContextVar("xlt_prefix_kv", default=None)


def prefix_cascade_attention(module, query, key, value, attention_mask=None, scaling=None, dropout=0.0, **_kw):
    """Attention of a batch of suffixes to one shared prefix and to themselves (cascade attention).

    ``query``/``key``/``value`` ([batch, heads, suffix_len, head_dim]) are the suffixes' own states; the
    prefix's states (``[1, kv_heads, prefix_len, head_dim]``, set by :class:`LoglikelihoodEngine`) are
    used as they are, never expanded over the batch nor copied. The result is the attention over
    ``prefix + suffix`` with a causal mask (to float rounding). Suffixes are right-padded: a pad comes
    after every real token of its row, so causality keeps it out of their results. The model's
    ``attention_mask`` is not used (registered without a mask function, transformers builds none).
    On CPU both parts run through PyTorch's fused attention kernel and are merged by their
    log-sum-exp (:func:`_cascade_fused`); elsewhere one softmax over both score blocks
    (:func:`_cascade_einsum`).
    """
    prefix = _PREFIX_KV.get()
    if prefix is None or getattr(module, "layer_idx", None) is None:
        raise RuntimeError("internal error: prefix cascade attention called without a prefix cache")
    pk, pv = prefix[module.layer_idx]
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    if query.device.type == "cpu" and _FLASH_CPU is not None:
        return _cascade_fused(query, key, value, pk, pv, scale), None
    return _cascade_einsum(query, key, value, pk, pv, scale), None


_FLASH_CPU = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)


def _cascade_fused(query, key, value, pk, pv, scale: float) -> torch.Tensor:
    """Cascade attention as two fused-kernel calls merged by log-sum-exp; returns [batch, len, heads, dim].

    Prefix part: every suffix query of the batch attends to the same prefix keys without a mask, so
    the batch (and the query heads of one kv head) fold into the query length, ``[1, kv_heads,
    groups * batch * len, dim]`` against the prefix's ``[1, kv_heads, prefix_len, dim]``: one call, the
    cache neither expanded nor copied. Suffix part: each row against its own keys, causal. With each
    part's output ``o`` and log-sum-exp ``l`` of its scaled scores, the attention over both is
    ``(o1 e^l1 + o2 e^l2) / (e^l1 + e^l2) = o2 + sigmoid(l1 - l2) (o1 - o2)``, taken in float32.
    """
    b, h, t, d = query.shape
    kvh = key.shape[1]
    g = h // kvh  # head i reads kv head i // g (transformers' repeat_kv)
    qp = query.unflatten(1, (kvh, g)).permute(1, 2, 0, 3, 4).reshape(1, kvh, g * b * t, d)
    o1, l1 = _FLASH_CPU(qp, pk, pv, 0.0, False, scale=scale)
    if g > 1:
        key, value = key.repeat_interleave(g, dim=1), value.repeat_interleave(g, dim=1)
    o2, l2 = _FLASH_CPU(query, key, value, 0.0, True, scale=scale)
    # everything viewed as [batch, len, kv_heads, groups, (dim)]: the layout the model reads back
    o1 = o1.reshape(kvh, g, b, t, d).permute(2, 3, 0, 1, 4)
    l1 = l1.reshape(kvh, g, b, t).permute(2, 3, 0, 1)
    o2 = o2.unflatten(1, (kvh, g)).permute(0, 3, 1, 2, 4)
    l2 = l2.unflatten(1, (kvh, g)).permute(0, 3, 1, 2)
    w = torch.sigmoid(l1.float() - l2.float()).unsqueeze(-1)
    if query.dtype == torch.float32:
        out = torch.empty((b, t, kvh, g, d), dtype=query.dtype, device=query.device)
        torch.lerp(o2, o1, w, out=out)
    else:
        out = torch.lerp(o2.float(), o1.float(), w).to(query.dtype)
    return out.reshape(b, t, h, d)


def _cascade_einsum(query, key, value, pk, pv, scale: float) -> torch.Tensor:
    """Cascade attention as one softmax over the prefix and the suffix score blocks (any device);
    one matrix product scores every suffix token of the batch against the shared prefix."""
    b, h, t, d = query.shape
    kvh = key.shape[1]
    q = query.reshape(b, kvh, h // kvh, t, d)  # head i reads kv head i // groups (transformers' repeat_kv)
    s_pre = torch.einsum("bkgtd,kpd->bkgtp", q, pk[0])
    s_own = torch.einsum("bkgtd,bksd->bkgts", q, key)
    future = torch.ones(t, t, dtype=torch.bool, device=query.device).triu(1)
    s_own = s_own.masked_fill(future, float("-inf"))
    w = torch.softmax(torch.cat([s_pre, s_own], dim=-1) * scale, dim=-1, dtype=torch.float32).to(query.dtype)
    n = pk.shape[-2]
    out = torch.einsum("bkgtp,kpd->bkgtd", w[..., :n], pv[0]) + torch.einsum("bkgts,bksd->bkgtd", w[..., n:], value)
    return out.reshape(b, h, t, d).transpose(1, 2).contiguous()


def _register_cascade() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(CASCADE, prefix_cascade_attention)


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
        self.batcher = AdaptiveBatcher(self.batch_size, what="LLM scoring")  # halves on OOM, keeps done batches
        self._reductions_seen = 0
        self._cache_ok: bool | None = None

    def scores(self, seqs: list[ForwardInput], n_questions: int, n_options: int,
               prefixes: Sequence[tuple[int, ...] | None] | None = None) -> np.ndarray:
        """Summed continuation log-probabilities, shape ``(n_questions, n_options)`` (float64); ``-inf``
        where a question has fewer options (no member of ``seqs`` scores that slot).

        ``prefixes[i]`` (optional): tokens that ``seqs[i]`` starts with and whose KV cache it may reuse;
        every logit position of the sequence must lie after them (see
        :func:`xlt.scoring.llm.prefix_cache.plan_prefixes`). Each distinct prefix is encoded once.
        """
        out = np.full((n_questions, n_options), np.nan)
        wanted = np.zeros((n_questions, n_options), dtype=bool)
        for seq in seqs:
            for q, j, _ in seq.members:
                wanted[q, j] = True
        groups: dict[tuple[int, ...], list[ForwardInput]] = {}
        plain: list[ForwardInput] = []
        for i, seq in enumerate(seqs):
            pre = prefixes[i] if prefixes is not None else None
            if pre:
                if len(seq.tokens) - len(seq.members[0][2]) < len(pre) or tuple(seq.tokens[: len(pre)]) != pre:
                    raise ValueError("internal error: a sequence does not extend its prefix past the scored positions")
                groups.setdefault(pre, []).append(seq)
            else:
                plain.append(seq)
        bar = progress_bar(total=len(seqs), desc="LLM log-likelihood", unit="seq", disable=not self.progress)
        self._run(plain, out, bar, None)
        for pre, group in groups.items():
            self._run(group, out, bar, self._encode_prefix(pre))
        bar.close()
        self.stats.batch_size = self.batch_size
        if np.isnan(out[wanted]).any():
            raise RuntimeError("internal error: some options were not scored")
        out[~wanted] = -np.inf
        return out

    def supports_prefix_cache(self) -> bool:
        """True if the model returns a plain :class:`~transformers.DynamicCache` (full attention on
        every layer); sliding-window or other cache layouts are not reused."""
        if self._cache_ok is None:
            from transformers import DynamicCache
            from transformers.cache_utils import DynamicLayer

            try:
                with torch.inference_mode():
                    out = self.model(input_ids=torch.tensor([[self.pad_id]], device=self.device), use_cache=True,
                                     logits_to_keep=1)
            except TypeError:  # a model without ``logits_to_keep``
                self._cache_ok = False
                return False
            cache = _output_cache(out)
            layers = getattr(cache, "layers", None)
            can_set = getattr(self.model, "_can_set_attn_implementation", lambda: False)
            self._cache_ok = (isinstance(cache, DynamicCache) and bool(layers)
                              and all(type(layer) is DynamicLayer for layer in layers) and bool(can_set()))
        return self._cache_ok

    @contextmanager
    def _cascade(self, past: PrefixKV):
        """The model attends through :func:`prefix_cascade_attention` to ``past`` inside the block."""
        _register_cascade()
        before = self.model.config._attn_implementation
        self.model.set_attn_implementation(CASCADE)
        if self.model.config._attn_implementation != CASCADE:
            raise RuntimeError(f"internal error: {type(self.model).__name__} did not switch to cascade attention")
        token = _PREFIX_KV.set(past)
        try:
            yield
        finally:
            _PREFIX_KV.reset(token)
            self.model.set_attn_implementation(before)

    def _run(self, seqs: list[ForwardInput], out: np.ndarray, bar, past: PrefixKV | None) -> None:
        order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i].tokens))  # longest first: OOM early

        def done(chunk: list[ForwardInput], lls) -> None:
            for seq, row in zip(chunk, lls, strict=True):
                for m, (q, j, _) in enumerate(seq.members):
                    out[q, j] = row[m]
            bar.update(len(chunk))

        self.batcher.batch_size = self.batch_size
        self.batcher.map(lambda chunk: self._forward(chunk, past), [seqs[j] for j in order], on_batch=done)
        self.stats.oom_halvings += self.batcher.reductions - self._reductions_seen
        self._reductions_seen = self.batcher.reductions
        self.batch_size = self.batcher.batch_size

    @torch.inference_mode()
    def _encode_prefix(self, prefix: tuple[int, ...]) -> PrefixKV:
        ids = torch.tensor([prefix], dtype=torch.long, device=self.device)
        out = self.model(input_ids=ids, use_cache=True, logits_to_keep=1)
        self.stats.prefix_passes += 1
        self.stats.prefix_tokens += len(prefix)
        self.stats.tokens += len(prefix)
        self.stats.padded_tokens += len(prefix)
        return [(layer.keys, layer.values) for layer in _output_cache(out).layers]

    @torch.inference_mode()
    def _forward(self, chunk: list[ForwardInput], past: PrefixKV | None) -> list[list[float]]:
        skip = past[0][0].shape[-2] if past is not None else 0  # tokens already in the cache
        b = len(chunk)
        t = max(len(s.tokens) for s in chunk) - skip
        p = max(len(s.members[0][2]) for s in chunk)
        k = max(len(s.members) for s in chunk)
        ids = torch.full((b, t), self.pad_id, dtype=torch.long)
        pos = torch.zeros((b, p), dtype=torch.long)
        targets = torch.zeros((b, p, k), dtype=torch.long)
        mask = torch.zeros((b, p, k), dtype=torch.bool)
        for r, s in enumerate(chunk):
            n = len(s.tokens) - skip
            ids[r, :n] = torch.tensor(s.tokens[skip:])
            c = len(s.members[0][2])
            pos[r, :c] = torch.arange(n - c, n)
            for m, (_, _, cont) in enumerate(s.members):
                targets[r, :c, m] = torch.tensor(cont)
                mask[r, :c, m] = True
        logits = self._logits_at(ids.to(self.device), pos.to(self.device), past)  # [b, p, vocab]
        if self.score_dtype == "float32":
            logits = logits.float()
        logp = torch.log_softmax(logits, dim=-1)
        picked = logp.gather(2, targets.to(self.device)).masked_fill(~mask.to(self.device), 0.0).sum(1)  # [b, k]
        self.stats.sequences += b
        self.stats.tokens += sum(len(s.tokens) - skip for s in chunk)
        self.stats.padded_tokens += b * t
        self.stats.batches += 1
        picked = picked.double().cpu().numpy()
        return [picked[r, : len(s.members)].tolist() for r, s in enumerate(chunk)]

    def _logits_at(self, ids: torch.Tensor, pos: torch.Tensor, past: PrefixKV | None = None) -> torch.Tensor:
        """Logits at ``pos`` ([b, p]) only: the LM head sees just the gathered hidden states.

        With ``past``, ``ids`` continue that prefix: every layer attends to its key/value states through
        :func:`prefix_cascade_attention` (the cache is shared by the batch, not expanded or copied).
        """
        head = self.model.get_output_embeddings()
        rows = torch.arange(ids.shape[0], device=ids.device)[:, None]
        fired = []

        def gather(_module, args):
            fired.append(True)
            return (args[0][rows, pos],) + tuple(args[1:])

        kwargs: dict = {"use_cache": False}
        if past is not None:  # positions continue the prefix; attention reads its cache (one copy, shared)
            skip = past[0][0].shape[-2]
            kwargs["position_ids"] = torch.arange(skip, skip + ids.shape[1], device=ids.device).expand(ids.shape[0], -1)
        handle = head.register_forward_pre_hook(gather) if head is not None else None
        try:
            with self._cascade(past) if past is not None else nullcontext():
                logits = self.model(input_ids=ids, **kwargs).logits
        finally:
            if handle is not None:
                handle.remove()
        if fired:
            return logits
        return logits[rows, pos]  # the head was not called as expected: gather from the full logits
