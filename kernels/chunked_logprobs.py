"""Chunked vocabulary projection: LM head + log-softmax + gather (and entropy) without ``[M, V]`` logits.

An RL loss reads the LM head's output only through the log-prob of each row's target token (and, for logging
or a bonus, the entropy of the row's distribution). Computing that the plain way materialises the ``[M, V]``
logits, their float32 upcast, the softmax and, in backward, a vocabulary-sized gradient of each: at V = 152K and
16K completion rows the float32 logits alone are 9.7 GB. ``replaycompile::chunked_logprobs`` takes the LM head's
input rows (the packed rows that predict a token) and its weight, and processes ``chunk_rows`` rows at a time,
keeping only per-row results. Peak extra memory is a few ``chunk_rows x V`` buffers plus a ``[V, H]`` weight
gradient accumulator.

Semantics (``chunked_logprobs_reference`` is the specification): ``logits = F.linear(hidden, weight, bias)`` in
the input dtype, optionally ``softcap * tanh(logits / softcap)`` in that dtype (Gemma's final-logit soft-capping,
as HF computes it), then upcast to float32 (float64 stays float64) for the log-softmax, like an HF model followed
by ``.float().log_softmax(-1)``.

Outputs ``(logp, entropy, lse)``, all ``[M]`` in the softmax dtype:

* ``logp``: log-softmax at ``targets`` (every target must be a valid index: there is no ignore_index);
* ``entropy``: the softmax's entropy, or an empty ``[0]`` tensor when ``with_entropy`` is False (empty rather
  than zeros, so a caller that reads an entropy it did not ask for fails on the shape instead of using zeros);
* ``lse``: the row's log-sum-exp of the (capped) logits, non-differentiable; it is an output so that autograd can
  save it and the backward does not recompute it.

The backward (``replaycompile::chunked_logprobs_backward``, its own opaque op so that compiled graphs keep the
chunk loop out of the trace) recomputes each chunk's logits from the saved hidden rows and weight. Per row, with
``p`` the softmax, ``Hrow`` the entropy and ``z`` the logits: d logp / dz = onehot(target) - p and
d entropy / dz = -p * (log p + Hrow).

Liger-Kernel's fused linear cross-entropy is the anchor: it also chunks rows and never holds the logits, but its
loss is a scalar, so it computes the input and weight gradients during the forward and scales them in backward.
Here the outputs are per-row and their gradients (advantages, masks) are only known in backward, so the
backward recomputes instead. Pure torch matmuls per chunk: the same code runs on CPU and CUDA.

Autocast: the op is not cast by autocast and runs with it off inside (``kernels/autocast.py``); it computes in
its inputs' dtypes. The rewrite casts hidden and weight to the dtype the linear it replaces ran in.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from . import autocast as _autocast

__all__ = ["chunked_logprobs", "chunked_logprobs_backward", "chunked_pair_logprobs", "chunked_pair_logprobs_backward"]


def _check_head(hidden: Tensor, weight: Tensor, bias: Optional[Tensor], chunk_rows: int) -> None:
    """What both chunked ops require of the LM head's rows, weight and bias."""
    torch._check(hidden.dim() == 2 and weight.dim() == 2, lambda: "hidden must be [M, H] and weight [V, H]")
    torch._check(hidden.shape[1] == weight.shape[1], lambda: "hidden and weight hidden sizes differ")
    torch._check(hidden.dtype == weight.dtype, lambda: "hidden and weight dtypes differ")
    torch._check(bias is None or (bias.shape == (weight.shape[0],) and bias.dtype == weight.dtype),
                 lambda: "bias must be [V] in weight's dtype")
    torch._check(chunk_rows > 0, lambda: "chunk_rows must be positive")


def _grads_like(hidden: Tensor, weight: Tensor, bias: Optional[Tensor], need_hidden: bool, need_weight: bool,
                need_bias: bool) -> tuple[Tensor, Tensor, Tensor]:
    """The backward ops' fake outputs: each gradient shaped like its input, or an empty [0] where not needed."""
    grad_hidden = hidden.new_empty(hidden.shape) if need_hidden else hidden.new_empty((0,))
    grad_weight = weight.new_empty(weight.shape) if need_weight else weight.new_empty((0,))
    grad_bias = bias.new_empty(bias.shape) if need_bias and bias is not None else weight.new_empty((0,))
    return grad_hidden, grad_weight, grad_bias


def _check_inputs(hidden: Tensor, weight: Tensor, bias: Optional[Tensor], targets: Tensor, chunk_rows: int) -> None:
    _check_head(hidden, weight, bias, chunk_rows)
    torch._check(targets.dim() == 1 and targets.shape[0] == hidden.shape[0], lambda: "targets must be [M]")
    torch._check(targets.dtype == torch.int64, lambda: "targets must be int64")


def _softmax_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.promote_types(dtype, torch.float32)


def _chunk_buffer(hidden: Tensor, weight: Tensor, chunk_rows: int, softcap: float) -> Optional[Tensor]:
    """One [chunk_rows, V] buffer that every chunk's logits are computed into, where they stay in it (input dtype
    already the softmax dtype, no softcap): a fresh buffer per chunk this size comes as new pages from the OS,
    whose faults cost about as much as the chunk's matmul on CPU. None elsewhere."""
    if softcap or _softmax_dtype(hidden.dtype) != hidden.dtype or hidden.shape[0] == 0:
        return None
    return hidden.new_empty((min(chunk_rows, hidden.shape[0]), weight.shape[0]))


def _chunk_logits(h: Tensor, weight: Tensor, bias: Optional[Tensor], softcap: float,
                  buf: Optional[Tensor] = None) -> Tensor:
    """One chunk's logits, exactly as the reference computes them (input dtype, then upcast); into ``buf``
    (``_chunk_buffer``) when given: the same matmul F.linear runs on 2-D inputs, with an out tensor."""
    if buf is not None:
        out = buf[: h.shape[0]]
        return torch.mm(h, weight.t(), out=out) if bias is None else torch.addmm(bias, h, weight.t(), out=out)
    z = F.linear(h, weight, bias)
    if softcap:
        z = torch.tanh(z / softcap) * softcap
    return z.to(_softmax_dtype(z.dtype))


def _chunks(m: int, chunk_rows: int):
    # row ranges [s, e); the last one is ragged when chunk_rows does not divide m
    for s in range(0, m, chunk_rows):
        yield s, min(s + chunk_rows, m)


# ---------------------------------------------------------------- forward op


@torch.library.custom_op("replaycompile::chunked_logprobs", mutates_args=())
def chunked_logprobs(
    hidden: Tensor,
    weight: Tensor,
    bias: Optional[Tensor],
    targets: Tensor,
    chunk_rows: int,
    with_entropy: bool,
    softcap: float,
) -> tuple[Tensor, Tensor, Tensor]:
    """(logp [M], entropy [M] or [0], lse [M]) of ``F.linear(hidden, weight, bias)``'s log-softmax at
    ``targets``, ``chunk_rows`` rows at a time. ``softcap`` 0 means no capping."""
    _check_inputs(hidden, weight, bias, targets, chunk_rows)
    m = hidden.shape[0]
    acc_dt = _softmax_dtype(hidden.dtype)
    logp = torch.empty(m, dtype=acc_dt, device=hidden.device)
    lse = torch.empty(m, dtype=acc_dt, device=hidden.device)
    entropy = torch.empty(m if with_entropy else 0, dtype=acc_dt, device=hidden.device)
    buf = _chunk_buffer(hidden, weight, chunk_rows, softcap)
    for s, e in _chunks(m, chunk_rows):
        z = _chunk_logits(hidden[s:e], weight, bias, softcap, buf)
        if not with_entropy:
            # in place on the chunk's own buffer: a fresh [chunk, V] temporary per pass costs more than the pass
            # (CPU allocations this size come as new pages from the OS)
            z_t = z.gather(-1, targets[s:e, None]).squeeze(-1)
            mx = z.amax(-1, keepdim=True)
            lse_c = z.sub_(mx).exp_().sum(-1).log_().add_(mx.squeeze(-1))
            lse[s:e] = lse_c
            logp[s:e] = z_t - lse_c
            del z  # one chunk's logits at a time: else they live on while the next chunk's are computed
            continue
        lse_c = torch.logsumexp(z, dim=-1)
        lse[s:e] = lse_c
        logp[s:e] = z.gather(-1, targets[s:e, None]).squeeze(-1) - lse_c
        if with_entropy:
            # H = -sum p (z - lse) = lse - sum p z; one [chunk, V] temporary (p) besides z
            p = torch.exp(z - lse_c[:, None])
            entropy[s:e] = lse_c - (p * z).sum(-1)
            del p
        del z
    return logp, entropy, lse


@chunked_logprobs.register_fake
def _chunked_logprobs_fake(hidden, weight, bias, targets, chunk_rows, with_entropy, softcap):
    _check_inputs(hidden, weight, bias, targets, chunk_rows)
    m = hidden.shape[0]
    acc_dt = _softmax_dtype(hidden.dtype)
    logp = hidden.new_empty((m,), dtype=acc_dt)
    entropy = hidden.new_empty((m if with_entropy else 0,), dtype=acc_dt)
    lse = hidden.new_empty((m,), dtype=acc_dt)
    return logp, entropy, lse


# ---------------------------------------------------------------- backward op


@torch.library.custom_op("replaycompile::chunked_logprobs_backward", mutates_args=())
def chunked_logprobs_backward(
    grad_logp: Optional[Tensor],
    grad_entropy: Optional[Tensor],
    hidden: Tensor,
    weight: Tensor,
    bias: Optional[Tensor],
    targets: Tensor,
    entropy: Tensor,
    lse: Tensor,
    chunk_rows: int,
    softcap: float,
    need_hidden: bool,
    need_weight: bool,
    need_bias: bool,
) -> tuple[Tensor, Tensor, Tensor]:
    """(grad_hidden [M, H], grad_weight [V, H], grad_bias [V]) of ``chunked_logprobs``; a gradient that is not
    needed (or a bias that is None) comes back as an empty ``[0]`` tensor.

    ``grad_entropy`` is read only if ``entropy`` holds the row entropies (non-empty). The weight and bias
    gradients are sums over all chunks, accumulated in the softmax dtype and cast once at the end. For bf16 each
    chunk's weight-gradient matmul still runs (and rounds) in bf16, to keep tensor-core speed on GPUs (Liger's
    ``accum_dtype`` choice); its relative error is 1.0-1.3x the unfused computation's (tests measure it).
    """
    m, v = hidden.shape[0], weight.shape[0]
    acc_dt = _softmax_dtype(hidden.dtype)
    use_entropy = grad_entropy is not None and entropy.numel() > 0
    need_bias = need_bias and bias is not None
    grad_hidden = hidden.new_empty(hidden.shape) if need_hidden else hidden.new_empty((0,))
    gw_acc = torch.zeros(weight.shape, dtype=acc_dt, device=weight.device) if need_weight else None
    gb_acc = torch.zeros((v,), dtype=acc_dt, device=weight.device) if need_bias else None
    buf = _chunk_buffer(hidden, weight, chunk_rows, softcap)
    for s, e in _chunks(m, chunk_rows):
        h = hidden[s:e]
        z = _chunk_logits(h, weight, bias, softcap, buf)
        if not use_entropy and not softcap:
            # the common case in place: p = exp(z - lse), gz = g * (onehot - p)
            g = grad_logp[s:e, None].to(acc_dt) if grad_logp is not None else None
            gz = z.sub_(lse[s:e, None]).exp_().mul_(g.neg() if g is not None else 0.0)
            if g is not None:
                gz.scatter_add_(-1, targets[s:e, None], g)
            gz_in = gz.to(hidden.dtype)
            if need_hidden:
                grad_hidden[s:e] = gz_in @ weight
            if need_weight:
                gw_acc.addmm_(gz_in.t(), h) if acc_dt == hidden.dtype else gw_acc.add_((gz_in.t() @ h).to(acc_dt))
            if need_bias:
                gb_acc += gz.sum(0)
            del z, gz, gz_in  # one chunk's buffer at a time, as in the forward
            continue
        logp_all = z - lse[s:e, None]
        p = torch.exp(logp_all)
        # d/dz of (g_logp * logp_t + g_ent * H) = g_logp * (onehot - p) - g_ent * p * (log p + H)
        coef = torch.zeros(e - s, 1, dtype=acc_dt, device=hidden.device)
        if grad_logp is not None:
            coef = coef + grad_logp[s:e, None].to(acc_dt)
        if use_entropy:
            # reuse logp_all's buffer for g_ent * (log p + H)
            coef = coef + grad_entropy[s:e, None].to(acc_dt) * logp_all.add_(entropy[s:e, None])
        gz = p.mul_(coef).neg_()
        if grad_logp is not None:
            gz.scatter_add_(-1, targets[s:e, None], grad_logp[s:e, None].to(acc_dt))
        if softcap:
            # capped = c * tanh(raw / c): d capped / d raw = 1 - tanh^2 = 1 - (capped / c)^2
            gz = gz * (1 - (z / softcap).square())
        # the matmuls run in the input dtype, as F.linear's own backward would
        gz_in = gz.to(hidden.dtype)
        if need_hidden:
            grad_hidden[s:e] = gz_in @ weight
        if need_weight:
            gw_acc += (gz_in.t() @ h).to(acc_dt)
        if need_bias:
            gb_acc += gz.sum(0)
        del z, logp_all, p, gz, gz_in
    grad_weight = gw_acc.to(weight.dtype) if need_weight else weight.new_empty((0,))
    grad_bias = gb_acc.to(bias.dtype) if need_bias else weight.new_empty((0,))
    return grad_hidden, grad_weight, grad_bias


@chunked_logprobs_backward.register_fake
def _chunked_logprobs_backward_fake(grad_logp, grad_entropy, hidden, weight, bias, targets, entropy, lse,
                                    chunk_rows, softcap, need_hidden, need_weight, need_bias):
    return _grads_like(hidden, weight, bias, need_hidden, need_weight, need_bias)


# ---------------------------------------------------------------- autograd


def _setup_context(ctx, inputs, output):
    hidden, weight, bias, targets, chunk_rows, with_entropy, softcap = inputs
    _logp, entropy, lse = output
    ctx.save_for_backward(hidden, weight, bias, targets, entropy, lse)
    ctx.meta = (chunk_rows, softcap)
    # lse is for the backward (and diagnostics); an entropy that was not asked for is an empty placeholder
    ctx.mark_non_differentiable(lse)
    if not with_entropy:
        ctx.mark_non_differentiable(entropy)


def _backward(ctx, grad_logp, grad_entropy, _grad_lse):
    hidden, weight, bias, targets, entropy, lse = ctx.saved_tensors
    chunk_rows, softcap = ctx.meta
    need_hidden, need_weight, need_bias = ctx.needs_input_grad[:3]
    if not (need_hidden or need_weight or need_bias) or (grad_logp is None and grad_entropy is None):
        return None, None, None, None, None, None, None
    gh, gw, gb = chunked_logprobs_backward(grad_logp, grad_entropy, hidden, weight, bias, targets, entropy, lse,
                                           chunk_rows, softcap, need_hidden, need_weight, need_bias)
    return (gh if need_hidden else None, gw if need_weight else None, gb if need_bias else None,
            None, None, None, None)


chunked_logprobs.register_autograd(_backward, setup_context=_setup_context)

# ---------------------------------------------------------------- (row, target) pairs over unique rows
#
# The packed rows an RL loss reads are unique, but the positions it reads them at are not: the last prompt token of
# a group predicts G different first completion tokens, and a loss over every position reads each shared prompt
# row once per row of the batch. ``chunked_pair_logprobs`` takes the unique rows once and the pairs as (row,
# target): each row's logits and log-sum-exp are computed once per chunk, every pair reads its target's logit from
# its row's chunk, so the LM head does no more rows than the unfused head on the packed rows would.


def _check_pairs(hidden: Tensor, weight: Tensor, bias: Optional[Tensor], rows: Tensor, targets: Tensor,
                 chunk_rows: int) -> None:
    _check_head(hidden, weight, bias, chunk_rows)
    torch._check(rows.dim() == 1 and targets.dim() == 1 and rows.shape[0] == targets.shape[0],
                 lambda: "rows and targets must be [P]")
    torch._check(rows.dtype == torch.int64 and targets.dtype == torch.int64, lambda: "rows and targets: int64")


def _pairs_by_chunk(rows: Tensor, m: int, chunk_rows: int):
    """(order, row sorted, per chunk [p0, p1)): the pairs sorted by row, and each chunk's range of them."""
    order = torch.argsort(rows, stable=True)
    rs = rows.index_select(0, order)
    starts = torch.arange(0, m + chunk_rows, chunk_rows, device=rows.device).clamp_(max=m)
    bounds = torch.searchsorted(rs, starts).tolist()   # one host sync per call
    return order, rs, bounds


@torch.library.custom_op("replaycompile::chunked_pair_logprobs", mutates_args=())
def chunked_pair_logprobs(
    hidden: Tensor,
    weight: Tensor,
    bias: Optional[Tensor],
    rows: Tensor,
    targets: Tensor,
    chunk_rows: int,
    softcap: float,
) -> tuple[Tensor, Tensor]:
    """(logp [P], lse [M]): the log-softmax of ``F.linear(hidden[rows[p]], weight, bias)`` at ``targets[p]`` for
    each pair p, each of the M rows' logits computed once, ``chunk_rows`` rows at a time."""
    _check_pairs(hidden, weight, bias, rows, targets, chunk_rows)
    m = hidden.shape[0]
    acc_dt = _softmax_dtype(hidden.dtype)
    lse = torch.empty(m, dtype=acc_dt, device=hidden.device)
    logp = torch.empty(rows.shape[0], dtype=acc_dt, device=hidden.device)
    order, rs, bounds = _pairs_by_chunk(rows, m, chunk_rows)
    ts = targets.index_select(0, order)
    buf = _chunk_buffer(hidden, weight, chunk_rows, softcap)
    for i, (s, e) in enumerate(_chunks(m, chunk_rows)):
        z = _chunk_logits(hidden[s:e], weight, bias, softcap, buf)
        p0, p1 = bounds[i], bounds[i + 1]
        local = rs[p0:p1] - s
        z_t = z[local, ts[p0:p1]]                       # before the in-place exp below
        mx = z.amax(-1, keepdim=True)
        lse_c = z.sub_(mx).exp_().sum(-1).log_().add_(mx.squeeze(-1))
        lse[s:e] = lse_c
        logp[order[p0:p1]] = z_t - lse_c.index_select(0, local)
        del z
    return logp, lse


@chunked_pair_logprobs.register_fake
def _chunked_pair_logprobs_fake(hidden, weight, bias, rows, targets, chunk_rows, softcap):
    _check_pairs(hidden, weight, bias, rows, targets, chunk_rows)
    acc_dt = _softmax_dtype(hidden.dtype)
    return hidden.new_empty((rows.shape[0],), dtype=acc_dt), hidden.new_empty((hidden.shape[0],), dtype=acc_dt)


@torch.library.custom_op("replaycompile::chunked_pair_logprobs_backward", mutates_args=())
def chunked_pair_logprobs_backward(
    grad_logp: Tensor,
    hidden: Tensor,
    weight: Tensor,
    bias: Optional[Tensor],
    rows: Tensor,
    targets: Tensor,
    lse: Tensor,
    chunk_rows: int,
    softcap: float,
    need_hidden: bool,
    need_weight: bool,
    need_bias: bool,
) -> tuple[Tensor, Tensor, Tensor]:
    """(grad_hidden [M, H], grad_weight [V, H], grad_bias [V]) of ``chunked_pair_logprobs`` (empty ``[0]`` where not
    needed). Per row r with pairs p: d/dz_r = sum_p g_p onehot(t_p) - G_r softmax(z_r), G_r = sum_p g_p: one
    recomputed chunk of logits serves every pair of its rows."""
    m = hidden.shape[0]
    acc_dt = _softmax_dtype(hidden.dtype)
    need_bias = need_bias and bias is not None
    g = grad_logp.to(acc_dt)
    g_row = torch.zeros(m, dtype=acc_dt, device=hidden.device).index_add_(0, rows, g)
    order, rs, bounds = _pairs_by_chunk(rows, m, chunk_rows)
    ts, gs = targets.index_select(0, order), g.index_select(0, order)
    grad_hidden = hidden.new_empty(hidden.shape) if need_hidden else hidden.new_empty((0,))
    gw_acc = torch.zeros(weight.shape, dtype=acc_dt, device=weight.device) if need_weight else None
    gb_acc = torch.zeros((weight.shape[0],), dtype=acc_dt, device=weight.device) if need_bias else None
    buf = _chunk_buffer(hidden, weight, chunk_rows, softcap)
    for i, (s, e) in enumerate(_chunks(m, chunk_rows)):
        h = hidden[s:e]
        z = _chunk_logits(h, weight, bias, softcap, buf)
        p0, p1 = bounds[i], bounds[i + 1]
        local = rs[p0:p1] - s
        if softcap:
            # capped = c * tanh(raw / c): d capped / d raw = 1 - (capped / c)^2
            dcap = 1 - (z / softcap).square()
            gz = torch.exp(z - lse[s:e, None]).mul_(-g_row[s:e, None])
            gz.index_put_((local, ts[p0:p1]), gs[p0:p1], accumulate=True)
            gz = gz * dcap
            del dcap
        else:
            gz = z.sub_(lse[s:e, None]).exp_().mul_(-g_row[s:e, None])
            gz.index_put_((local, ts[p0:p1]), gs[p0:p1], accumulate=True)
        # the matmuls run in the input dtype, as F.linear's own backward would
        gz_in = gz.to(hidden.dtype)
        if need_hidden:
            grad_hidden[s:e] = gz_in @ weight
        if need_weight:
            gw_acc.addmm_(gz_in.t(), h) if acc_dt == hidden.dtype else gw_acc.add_((gz_in.t() @ h).to(acc_dt))
        if need_bias:
            gb_acc += gz.sum(0)
        del z, gz, gz_in
    grad_weight = gw_acc.to(weight.dtype) if need_weight else weight.new_empty((0,))
    grad_bias = gb_acc.to(bias.dtype) if need_bias else weight.new_empty((0,))
    return grad_hidden, grad_weight, grad_bias


@chunked_pair_logprobs_backward.register_fake
def _chunked_pair_logprobs_backward_fake(grad_logp, hidden, weight, bias, rows, targets, lse, chunk_rows, softcap,
                                         need_hidden, need_weight, need_bias):
    return _grads_like(hidden, weight, bias, need_hidden, need_weight, need_bias)


def _pair_setup_context(ctx, inputs, output):
    hidden, weight, bias, rows, targets, chunk_rows, softcap = inputs
    _logp, lse = output
    ctx.save_for_backward(hidden, weight, bias, rows, targets, lse)
    ctx.meta = (chunk_rows, softcap)
    ctx.mark_non_differentiable(lse)


def _pair_backward(ctx, grad_logp, _grad_lse):
    hidden, weight, bias, rows, targets, lse = ctx.saved_tensors
    chunk_rows, softcap = ctx.meta
    need_hidden, need_weight, need_bias = ctx.needs_input_grad[:3]
    if not (need_hidden or need_weight or need_bias) or grad_logp is None:
        return None, None, None, None, None, None, None
    gh, gw, gb = chunked_pair_logprobs_backward(grad_logp, hidden, weight, bias, rows, targets, lse, chunk_rows,
                                                softcap, need_hidden, need_weight, need_bias)
    return (gh if need_hidden else None, gw if need_weight else None, gb if need_bias else None,
            None, None, None, None)


chunked_pair_logprobs.register_autograd(_pair_backward, setup_context=_pair_setup_context)

# Autocast does not cast the chunked LM head: it computes in its inputs' dtypes, with autocast off inside (its
# matmuls are not cast behind its fake's back). The rewrite casts hidden and weight to the dtype the replaced
# linear ran in (passes/fuse_lm_head.py), so the op is exact wherever it lands relative to an autocast region.
_autocast.register("replaycompile::chunked_logprobs")
_autocast.register("replaycompile::chunked_logprobs_backward")
_autocast.register("replaycompile::chunked_pair_logprobs")
_autocast.register("replaycompile::chunked_pair_logprobs_backward")
