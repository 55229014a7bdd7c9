"""Cascade attention: a batch of suffixes attends to a shared prefix's key/value states without copying them.

A causal LM's key/value states at position ``i`` depend only on tokens ``0..i``, so once a shared prefix
(the few-shot examples) has been run, a batch of suffixes can be run on their own: every layer's
attention reads three blocks of keys and merges them exactly as one softmax over their union would,

* the **prefix** block — the prefix's states, ``[1, kv_heads, n, head_dim]``, one copy for the batch;
* the **context** block (optional) — per row, the states of tokens that continue the prefix and that
  the row shares with other rows (a passage several questions are asked about), ``[batch, kv_heads,
  n_ctx, head_dim]``, right-padded, each row's own length;
* the row's **own** states, causal.

Layers with a sliding window (Gemma 2/3: 512 tokens on five layers of six; transformers'
``create_sliding_window_causal_mask``: key ``j`` is visible to query ``i`` iff ``i - window < j <= i``)
see only the keys inside their window: the prefix block of such a layer holds the last ``window - 1``
prefix tokens, as transformers' ``DynamicSlidingWindowLayer`` keeps them, and a band mask over absolute
positions removes what a query at its own position would not see in a full pass. Attention-logit
soft-capping (Gemma 2's ``softcap``) is applied to every block before the softmax, as the eager kernel does.

On CPU without soft-capping each block runs through PyTorch's fused attention kernel and the blocks are
merged by their log-sum-exp (:func:`_cascade_fused`); otherwise one softmax over the concatenated score
blocks (:func:`_cascade_einsum`). :func:`attending` switches a model to this attention function for a
block of code (registered with transformers' ``AttentionInterface``; registered without a mask function,
so transformers builds no mask) and can record each layer's own key/value states, which is how a shared
context's states are computed once for all the rows that continue it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import torch

CASCADE = "xlt_prefix_cascade"


@dataclass
class PrefixKV:
    """One prefix's key/value states per layer.

    ``layers[l]`` is ``(keys, values)``, each ``[1, kv_heads, n_l, head_dim]``: all ``length`` prefix
    tokens, or on a layer with a sliding window ``windows[l]`` only its last ``min(length, window - 1)``
    (all a later token can see there).
    """

    length: int
    layers: list[tuple[torch.Tensor, torch.Tensor]]
    windows: list[int | None]


@dataclass
class PrefixStates:
    """Every key/value state of a prefix's tokens, on sliding-window layers too, from which the
    :class:`PrefixKV` of the whole prefix or of any of its leading parts is cut (:meth:`kv`).

    ``layers[l]`` is ``(keys, values)``, each ``[1, kv_heads, len(tokens), head_dim]``; ``windows[l]`` the
    layer's sliding window (``None``: full attention). Another prefix that starts with the same tokens
    reuses the states of those tokens (a causal LM's states at position ``i`` depend only on tokens
    ``0..i``) and runs only the rest.
    """

    tokens: tuple[int, ...]
    layers: list[tuple[torch.Tensor, torch.Tensor]]
    windows: list[int | None]

    def kv(self, length: int | None = None) -> PrefixKV:
        """The :class:`PrefixKV` of the first ``length`` tokens (all by default): on a sliding-window
        layer only the last ``window - 1`` of them, as transformers' ``DynamicSlidingWindowLayer`` keeps."""
        n = len(self.tokens) if length is None else int(length)
        if not 0 < n <= len(self.tokens):
            raise ValueError(f"internal error: cannot cut {n} of {len(self.tokens)} prefix tokens")
        layers = []
        for (k, v), window in zip(self.layers, self.windows, strict=True):
            lo = 0 if window is None else max(0, n - (window - 1))
            if lo == 0 and n == k.shape[-2]:
                layers.append((k, v))
            else:
                layers.append((k[:, :, lo:n].contiguous(), v[:, :, lo:n].contiguous()))
        return PrefixKV(n, layers, list(self.windows))

    def extended(self, length: int, tail: dict[int, tuple[torch.Tensor, torch.Tensor]],
                 tokens: tuple[int, ...]) -> PrefixStates:
        """The states of ``tokens``: this prefix's first ``length`` tokens' states, then ``tail[l]``
        (``[1, kv_heads, len(tokens) - length, head_dim]`` per layer, the rest's own states)."""
        if tuple(tokens[:length]) != self.tokens[:length]:
            raise ValueError("internal error: the new prefix does not start with the reused tokens")
        layers = []
        for layer, (k, v) in enumerate(self.layers):
            tk, tv = tail[layer]
            if tk.shape[-2] != len(tokens) - length:
                raise RuntimeError(f"internal error: layer {layer} recorded {tk.shape[-2]} states for "
                                   f"{len(tokens) - length} tokens")
            layers.append((torch.cat([k[:, :, :length], tk], dim=-2), torch.cat([v[:, :, :length], tv], dim=-2)))
        return PrefixStates(tuple(tokens), layers, list(self.windows))


@dataclass
class ContextKV:
    """Per batch row, the states of the shared context between the prefix and the row's own tokens.

    ``layers[l]`` is ``(keys, values)``, each ``[n_contexts, kv_heads, n_ctx, head_dim]`` (right-padded),
    one entry per distinct context of the batch; ``rows[r]`` the entry row ``r`` reads and
    ``lengths[r]`` its length (0: the row has no context). Each layer gathers its rows' entries when it
    attends, so only one layer's ``[batch, ...]`` copy exists at a time.
    """

    layers: list[tuple[torch.Tensor, torch.Tensor]]
    lengths: torch.Tensor
    rows: torch.Tensor


@dataclass
class _State:
    prefix: PrefixKV
    context: ContextKV | None
    capture: dict[int, tuple[torch.Tensor, torch.Tensor]] | None


_STATE: ContextVar[_State | None] = ContextVar("xlt_prefix_cascade_state", default=None)
_FLASH_CPU = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)


def register() -> None:
    """Register :func:`prefix_cascade_attention` under :data:`CASCADE` (idempotent)."""
    from transformers import AttentionInterface

    AttentionInterface.register(CASCADE, prefix_cascade_attention)


class _StatesRecorded(Exception):
    """Raised by the last layer's attention in a capturing pass: every state has been recorded, and
    nothing after it (that layer's attention output, its MLP, the final norm, the head) is needed."""


@contextmanager
def attending(model, prefix: PrefixKV, context: ContextKV | None = None,
              capture: dict[int, tuple[torch.Tensor, torch.Tensor]] | None = None) -> Iterator[None]:
    """Inside the block, ``model`` attends through :func:`prefix_cascade_attention` to ``prefix`` (and,
    per row, ``context``). With ``capture`` the block runs for the key/value states only: each layer's
    own states are stored in it by layer index, and the forward pass stops once the last layer's are
    (its output is never made: the block ends there, without an error). The model's attention
    implementation is restored afterwards."""
    register()
    before = model.config._attn_implementation
    model.set_attn_implementation(CASCADE)
    if model.config._attn_implementation != CASCADE:
        raise RuntimeError(f"internal error: {type(model).__name__} did not switch to cascade attention")
    token = _STATE.set(_State(prefix, context, capture))
    try:
        yield
    except _StatesRecorded:
        pass
    finally:
        _STATE.reset(token)
        model.set_attn_implementation(before)


def prefix_cascade_attention(module, query, key, value, attention_mask=None, scaling=None, dropout=0.0,
                             sliding_window=None, softcap=None, **_kw):
    """Attention of a batch of suffixes (``query``/``key``/``value``: ``[batch, heads, len, head_dim]``,
    right-padded, positions continuing the prefix and each row's context) to the prefix, their context and
    themselves; returns ``([batch, len, heads, head_dim], None)`` like transformers' attention functions.

    The result is the attention over ``prefix + context + suffix`` with the model's causal (and, on a
    sliding-window layer, windowed) mask, to float rounding. A pad comes after every real token of its
    row, so causality keeps it out of their results. The model's ``attention_mask`` is not used.
    """
    state = _STATE.get()
    layer = getattr(module, "layer_idx", None)
    if state is None or layer is None:
        raise RuntimeError("internal error: prefix cascade attention called without a prefix cache")
    pk, pv = state.prefix.layers[layer]
    window = state.prefix.windows[layer]
    if sliding_window is not None and sliding_window != window:
        raise RuntimeError(f"internal error: layer {layer} attends with a window of {sliding_window} tokens but "
                           f"its prefix cache was kept for a window of {window}")
    if state.capture is not None:
        state.capture[layer] = (key, value)
        if len(state.capture) == len(state.prefix.layers):  # the last layer's states: all that is needed
            raise _StatesRecorded
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    b, _, t, _ = query.shape
    ctx = state.context
    ctx_kv = None
    if ctx is not None:
        ck, cv = ctx.layers[layer]
        rows = ctx.rows.to(query.device)
        ctx_kv = (ck.index_select(0, rows), cv.index_select(0, rows))
    ctx_len = ctx.lengths.to(query.device) if ctx is not None else torch.zeros(b, dtype=torch.long,
                                                                               device=query.device)
    masks = _masks(state.prefix.length, pk.shape[-2], ctx_kv[0].shape[-2] if ctx_kv is not None else 0,
                   ctx_len, t, window, query.device)
    if query.device.type == "cpu" and _FLASH_CPU is not None and softcap is None:
        return _cascade_fused(query, key, value, (pk, pv), ctx_kv, masks, scale), None
    return _cascade_einsum(query, key, value, (pk, pv), ctx_kv, masks, scale, softcap), None


@dataclass
class _Masks:
    """Visibility (True: attended) of each block's keys; ``None`` where every key is visible (own: plain
    causal)."""

    prefix: torch.Tensor | None  # [batch, len, n_prefix]
    context: torch.Tensor | None  # [batch, len, n_ctx]
    own: torch.Tensor | None  # [len, len]


def _masks(length: int, n_prefix: int, n_ctx: int, ctx_len: torch.Tensor, t: int, window: int | None,
           device) -> _Masks:
    """The full pass's mask, split by block: key at absolute position ``j`` is visible to the query at
    ``i`` iff ``j <= i`` and (on a sliding-window layer) ``j > i - window``. Row ``r``'s query ``q`` sits
    at ``length + ctx_len[r] + q``."""
    q = torch.arange(t, device=device)
    starts = length + ctx_len  # [b]: absolute position of each row's first own token
    pre = ctx = own = None
    if window is not None:
        lowest = (starts[:, None] + q[None, :] - window)[:, :, None]  # [b, t, 1]: keys must lie above this
        pre_pos = torch.arange(length - n_prefix, length, device=device)
        pre = pre_pos[None, None, :] > lowest
        if bool(pre.all()):
            pre = None
        if t > window:
            own = (q[None, :] <= q[:, None]) & (q[None, :] > q[:, None] - window)
    if n_ctx:
        k = torch.arange(n_ctx, device=device)
        ctx = (k[None, :] < ctx_len[:, None])[:, None, :].expand(-1, t, -1)
        if window is not None:
            ctx = ctx & ((length + k)[None, None, :] > lowest)
    return _Masks(pre, ctx, own)


def _additive(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """0 where visible, -inf elsewhere (the fused kernel takes a mask of the query's dtype)."""
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(~mask, float("-inf"))


def _cascade_fused(query, key, value, prefix, context, masks: _Masks, scale: float) -> torch.Tensor:
    """Cascade attention as fused-kernel calls merged by log-sum-exp; returns [batch, len, heads, dim].

    Prefix block: every query of the batch attends to the same prefix keys, so the batch (and the query
    heads of one kv head) fold into the query length, ``[1, kv_heads, groups * batch * len, dim]``
    against the prefix's ``[1, kv_heads, n, dim]``: one call, the cache neither expanded nor copied.
    Context and own blocks in one call: each row against its context's keys followed by its own keys
    (query heads folded into the length, so no key is repeated per head), the context's padding and the
    causal (or windowed) order masked; without a context and without grouped heads, the kernel's own
    causal path. With each block's output ``o`` and log-sum-exp ``l`` of its scaled scores, the
    attention over all is ``sum(o e^l) / sum(e^l)``, taken in float32. A query that sees no prefix key
    (outside its window) gets ``l = -inf`` there (the kernel reports 0 for such a row); every query sees
    at least itself in the second block.
    """
    b, h, t, d = query.shape
    kvh = key.shape[1]
    g = h // kvh  # head i reads kv head i // g (transformers' repeat_kv)
    pk, pv = prefix
    outs, lses = [], []

    qp = query.unflatten(1, (kvh, g)).permute(1, 2, 0, 3, 4).reshape(1, kvh, g * b * t, d)
    mask = None
    if masks.prefix is not None:
        mask = _additive(masks.prefix[None].expand(g, b, t, -1).reshape(1, 1, g * b * t, -1), query.dtype)
    o, lse = _FLASH_CPU(qp, pk, pv, 0.0, False, attn_mask=mask, scale=scale)
    o = o.reshape(kvh, g, b, t, d).permute(2, 3, 0, 1, 4)
    lse = lse.reshape(kvh, g, b, t).permute(2, 3, 0, 1)
    if masks.prefix is not None:
        lse = lse.masked_fill(~masks.prefix.any(-1)[:, :, None, None], float("-inf"))
    outs.append(o)
    lses.append(lse)

    # context and own blocks: each row against its context's keys and its own in one call, the query
    # heads of a kv head folded into the length (no repeated keys), causal through the mask
    if context is None and g == 1 and masks.own is None:
        o, lse = _FLASH_CPU(query, key, value, 0.0, True, scale=scale)
        outs.append(o.unflatten(1, (kvh, g)).permute(0, 3, 1, 2, 4))
        lses.append(lse.unflatten(1, (kvh, g)).permute(0, 3, 1, 2))
    else:
        own = masks.own if masks.own is not None else torch.ones(t, t, dtype=torch.bool, device=query.device).tril()
        if context is not None:
            ck, cv = context
            key, value = torch.cat([ck, key], dim=2), torch.cat([cv, value], dim=2)
            visible = torch.cat([masks.context, own[None].expand(b, -1, -1)], dim=-1)  # [b, t, n_ctx + t]
        else:
            visible = own[None]
        mask = _additive(visible, query.dtype)[:, None, None].expand(-1, 1, g, -1, -1)
        mask = mask.reshape(visible.shape[0], 1, g * t, visible.shape[-1])
        qo = query.unflatten(1, (kvh, g)).reshape(b, kvh, g * t, d)
        o, lse = _FLASH_CPU(qo, key, value, 0.0, False, attn_mask=mask, scale=scale)
        outs.append(o.reshape(b, kvh, g, t, d).permute(0, 3, 1, 2, 4))
        lses.append(lse.reshape(b, kvh, g, t).permute(0, 3, 1, 2))
    # everything viewed as [batch, len, kv_heads, groups, (dim)]: the layout the model reads back
    return _merge(outs, lses, query.dtype).reshape(b, t, h, d)


def _merge(outs: list[torch.Tensor], lses: list[torch.Tensor], dtype: torch.dtype) -> torch.Tensor:
    """``sum(o_i e^{l_i}) / sum(e^{l_i})`` in float32 (the own block's ``l`` is always finite)."""
    if len(outs) == 2:  # o2 + sigmoid(l1 - l2) (o1 - o2): one fused lerp
        w = torch.sigmoid(lses[0].float() - lses[1].float()).unsqueeze(-1)
        if dtype == torch.float32:  # written straight into a contiguous [batch, len, kv_heads, groups, dim]
            out = torch.empty(outs[1].shape, dtype=dtype, device=outs[1].device)
            return torch.lerp(outs[1], outs[0], w, out=out)
        return torch.lerp(outs[1].float(), outs[0].float(), w).to(dtype)
    top = torch.stack([x.float() for x in lses]).amax(0)
    num = den = None
    for o, lse in zip(outs, lses, strict=True):
        w = torch.exp(lse.float() - top).unsqueeze(-1)
        term = o.float() * w
        num = term if num is None else num + term
        den = w if den is None else den + w
    return (num / den).to(dtype).contiguous()


def _cascade_einsum(query, key, value, prefix, context, masks: _Masks, scale: float,
                    softcap: float | None) -> torch.Tensor:
    """Cascade attention as one softmax over the prefix, context and own score blocks (any device, and
    soft-capped logits); one matrix product scores every query of the batch against the shared prefix."""
    b, h, t, d = query.shape
    kvh = key.shape[1]
    pk, pv = prefix
    q = query.reshape(b, kvh, h // kvh, t, d)  # head i reads kv head i // groups (transformers' repeat_kv)

    def scores(s: torch.Tensor, visible: torch.Tensor | None) -> torch.Tensor:
        s = s * scale
        if softcap is not None:
            s = torch.tanh(s / softcap) * softcap
        return s if visible is None else s.masked_fill(~visible, float("-inf"))

    blocks = [scores(torch.einsum("bkgtd,kpd->bkgtp", q, pk[0]),
                     None if masks.prefix is None else masks.prefix[:, None, None])]
    if context is not None:
        blocks.append(scores(torch.einsum("bkgtd,bked->bkgte", q, context[0]), masks.context[:, None, None]))
    own = masks.own if masks.own is not None else torch.ones(t, t, dtype=torch.bool, device=query.device).tril()
    blocks.append(scores(torch.einsum("bkgtd,bksd->bkgts", q, key), own))
    w = torch.softmax(torch.cat(blocks, dim=-1), dim=-1, dtype=torch.float32).to(query.dtype)
    w_pre, w_rest = w.split([pk.shape[-2], w.shape[-1] - pk.shape[-2]], dim=-1)
    out = torch.einsum("bkgtp,kpd->bkgtd", w_pre, pv[0])
    if context is not None:
        w_ctx, w_rest = w_rest.split([context[0].shape[-2], t], dim=-1)
        out = out + torch.einsum("bkgte,bked->bkgtd", w_ctx, context[1])
    out = out + torch.einsum("bkgts,bksd->bkgtd", w_rest, value)
    return out.reshape(b, h, t, d).transpose(1, 2).contiguous()
