"""Tree attention over a packed prefix tree, as a torch custom op.

A batch of rollout rows that share prefixes is packed into one sequence of N
unique tokens in DFS preorder of their prefix tree. Each token must attend to
itself and its ancestors only. The runtime plan describes that visibility two
ways (both int64 CPU tensors):

* ``subtree_end`` [N]: key k is visible to query q iff ``k <= q < subtree_end[k]``
  (the specification; see ``tree_attention_reference``).
* a segment CSR: ``seg_q`` [S, 2] splits [0, N) into runs of tokens that form a
  chain; ``kv_ranges[seg_kv_ptr[s]:seg_kv_ptr[s+1]]`` are the key ranges segment
  s sees: ancestor ranges (fully visible) followed by the segment's own range
  (seen causally).

The ops here use only the CSR, so work and memory are O(tokens x visible keys)
and never an N x N mask: each segment is one dense attention call over its
gathered ancestors + itself. On CPU that call is PyTorch's fused flash kernel
(``_scaled_dot_product_flash_attention_for_cpu``), which also returns the
log-sum-exp the backward needs. Where that kernel does not apply (other
devices, head_dim != value_dim, odd dtypes) a chunked per-segment math path is
used.

Given a ``BlockLayout`` of the tree (``layout`` non-empty: the six tensors of ``BlockLayout.tensors()`` for blocks
``block_q`` x ``block_k``, built once per call by the runtime plan), the op runs the Triton block-sparse kernels
of ``block_sparse_attention.py`` instead (on CUDA; in the Triton interpreter for CPU tensors), with the tree
rule evaluated from ``subtree_end`` inside partial blocks.

``replaycompile::tree_attention`` returns (out, lse). Gradients flow to q, k
and v through ``replaycompile::tree_attention_backward`` (and to the optional
per-head attention ``sinks``, by a closed form in the autograd glue); lse is
marked non-differentiable (it is exported for diagnostics / merging, not for
losses).

Both ops count which implementation actually ran into the open ``PathRecorder``s: a layout asks for the
Triton kernels, but unsupported inputs run the PyTorch path, so stats and benchmarks read the counters, not
the configuration.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter

import torch
from torch import Tensor

from . import autocast as _autocast
from . import block_sparse_attention as _triton
from .attention_math import attention_backward
from .block_sparse import BlockLayout

log = logging.getLogger("replaycompile")

__all__ = ["tree_attention", "tree_attention_backward", "PathRecorder"]

_FLASH_CPU = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
_FLASH_CPU_BWD = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default
_FLASH_CPU_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)

# Query rows per block in the math fallback: bounds its temporary score
# matrix to Hq x _MATH_CHUNK x visible_keys.
_MATH_CHUNK = 512


def _check_inputs(q: Tensor, k: Tensor, v: Tensor, subtree_end: Tensor, seg_q: Tensor) -> None:
    torch._check(q.dim() == 4 and k.dim() == 4 and v.dim() == 4, lambda: "q, k, v must be 4-D [1, H, N, D]")
    torch._check(q.shape[0] == 1 and k.shape[0] == 1 and v.shape[0] == 1, lambda: "batch dim must be 1 (packed)")
    torch._check(q.shape[1] % k.shape[1] == 0 and k.shape[1] == v.shape[1], lambda: "bad GQA head counts")
    torch._check(k.shape[2] >= q.shape[2] and v.shape[2] == k.shape[2],
                 lambda: "k and v token counts differ, or fewer keys than queries")
    torch._check(q.shape[3] == k.shape[3], lambda: "q and k head dims differ")
    torch._check(subtree_end.shape[0] == k.shape[2] or subtree_end.shape[0] == 0,
                 lambda: "subtree_end length != number of keys (or empty: the PyTorch path, from the segments)")
    torch._check(seg_q.dim() == 2 and seg_q.shape[1] == 2, lambda: "seg_q must be [S, 2]")
    torch._check(q.dtype == k.dtype == v.dtype, lambda: "q, k, v dtypes differ")


def _check_window(k: Tensor, positions: Tensor | None, window: int, softcap: float) -> None:
    torch._check(softcap >= 0, lambda: "softcap must be >= 0 (0: none)")
    torch._check(window == 0 or (positions is not None and positions.dim() == 1 and positions.shape[0] == k.shape[2]),
                 lambda: "a window or chunk needs positions [number of keys], each key token's position in its row")


def _use_flash(q: Tensor, v: Tensor) -> bool:
    # The CPU flash kernel needs equal q/k/v head sizes.
    return q.device.type == "cpu" and q.dtype in _FLASH_CPU_DTYPES and q.shape[3] == v.shape[3]


def _new_tokens(shape, dtype, device, zero: bool = False) -> Tensor:
    """An output [1, H, N, D] of the ops: on CPU token-major (``[1, N, H, D]`` in memory, transposed), the layout
    of q, k and v as the model makes them and of the flash kernel's [B, L, H, D] buffers. Then the model's
    ``out.transpose(1, 2).reshape(1, N, H * D)`` is a view, and the gradient reaching the backward op arrives
    in the layout the kernel reads without copying each slice. Elsewhere contiguous, as the Triton kernels
    write. The fake implementations allocate the same way, so the compiled graph sees the real strides."""
    if torch.device(device).type != "cpu":
        return (torch.zeros if zero else torch.empty)(shape, dtype=dtype, device=device)
    b, h, n, d = shape
    return (torch.zeros if zero else torch.empty)((b, n, h, d), dtype=dtype, device=device).transpose(1, 2)


def _as_tokens(x: Tensor) -> Tensor:
    """``x`` in the layout of ``_new_tokens`` (a copy only where it differs)."""
    if x.device.type != "cpu" or x.transpose(1, 2).is_contiguous():
        return x
    return x.transpose(1, 2).contiguous().transpose(1, 2)


_warned: set = set()

class PathRecorder:
    """Counts which implementation of the tree-attention ops ran while its ``with`` block is open: calls by
    (op, path), op "forward" or "backward", path "triton" (the block-sparse kernels) or "torch" (CPU flash /
    math, including the fallback for inputs the kernels do not support). The caller owns the counts; the module
    keeps only the list of open recorders (under a lock: autograd runs CUDA backwards on its own device threads,
    which see the same list)."""

    def __init__(self):
        self.calls: Counter = Counter()

    def __enter__(self) -> "PathRecorder":
        with _recorders_lock:
            _recorders.append(self)
        return self

    def __exit__(self, *exc) -> None:
        with _recorders_lock:
            _recorders.remove(self)

    def paths(self, op: str = "forward") -> str | None:
        """Which paths of ``op`` ran: "triton", "torch", "triton+torch" (some calls each), or None."""
        return "+".join(p for p in ("triton", "torch") if self.calls[(op, p)]) or None


_recorders: list[PathRecorder] = []
_recorders_lock = threading.Lock()


def _ran(op: str, path: str) -> None:
    with _recorders_lock:
        for r in _recorders:
            r.calls[(op, path)] += 1


def _use_triton(q: Tensor, k: Tensor, v: Tensor, layout: list) -> bool:
    """The Triton kernels run when the caller passed a layout and they support these inputs (else, once, say
    why and use the PyTorch path: correct results first)."""
    if not layout or k.shape[2] != q.shape[2]:
        return False
    why = _triton.supported(q, k, v)
    if why is not None and why not in _warned:
        _warned.add(why)
        log.warning("replay: the Triton tree attention cannot run %s; running the PyTorch tree attention instead "
                    "(exact, slower on GPUs; options={'attention': 'torch'} chooses it without this warning)", why)
    return why is None


def _segments(seg_q: Tensor, seg_kv_ptr: Tensor, kv_ranges: Tensor):
    """Yield (q_start, q_end, ancestor_ranges, own_start) per segment, from one .tolist() each.

    The last kv range of a segment is its own range, in key coordinates: ``own_start`` .. ``own_start + q_end -
    q_start`` (queries and keys are the same tokens: ``own_start == q_start``; fewer queries than keys: the
    queries' tokens among the keys); it is not yielded among the ancestors.
    """
    sq = seg_q.tolist()
    ptr = seg_kv_ptr.tolist()
    ranges = kv_ranges.tolist()
    for s, (qs, qe) in enumerate(sq):
        rs = ranges[ptr[s] : ptr[s + 1]]
        assert rs and rs[-1][1] - rs[-1][0] == qe - qs, "last kv range must be the segment's own range"
        yield qs, qe, rs[:-1], rs[-1][0]


def _gather(x: Tensor, anc: list, qs: int, qe: int) -> Tensor:
    """Keys/values a segment sees: its ancestor ranges then its own range, along dim 2."""
    return _ranges(x, [*anc, (qs, qe)])


def _segment_bias(n_anc: int, n_own: int, dtype: torch.dtype, device) -> Tensor:
    """Additive mask [n_own, n_anc + n_own]: ancestors visible, own part causal.

    Own keys sit at the end, so query i sees own keys 0..i (bottom-right
    aligned); the kernel's is_causal is top-left aligned and cannot express it.
    """
    bias = torch.zeros(n_own, n_anc + n_own, dtype=dtype, device=device)
    bias[:, n_anc:] = torch.full((n_own, n_own), float("-inf"), dtype=dtype, device=device).triu_(1)
    return bias


# ---------------------------------------------------------------- math fallback


def _math_block_scores(qb: Tensor, ks: Tensor, n_anc: int, own0: int, scale: float) -> Tensor:
    """Scores [Hkv, g, Lb, Lk] for a block of queries with own offsets own0.. (float).

    qb: [Hkv, g, Lb, D]; ks: [Hkv, Lk, D] where Lk = n_anc + (own0 + Lb).
    """
    s = torch.matmul(qb, ks[:, None].transpose(-1, -2)) * scale
    lb = qb.shape[2]
    n_own = ks.shape[1] - n_anc
    # query own0+i sees own key j iff j <= own0 + i
    qi = torch.arange(own0, own0 + lb, device=qb.device)[:, None]
    kj = torch.arange(n_own, device=qb.device)[None, :]
    s[..., n_anc:].masked_fill_(kj > qi, float("-inf"))
    return s


def _math_forward(q, k, v, seg_q, seg_kv_ptr, kv_ranges, scale, out, lse):
    hq, hkv, dv = q.shape[1], k.shape[1], v.shape[3]
    g = hq // hkv
    cdt = torch.promote_types(q.dtype, torch.float32)
    for qs, qe, anc, k0 in _segments(seg_q, seg_kv_ptr, kv_ranges):
        n_anc = sum(b - a for a, b in anc)
        ks_all = _gather(k, anc, k0, k0 + qe - qs)[0].to(cdt)  # [Hkv, Lk, D]
        vs_all = _gather(v, anc, k0, k0 + qe - qs)[0].to(cdt)
        for c0 in range(qs, qe, _MATH_CHUNK):
            c1 = min(c0 + _MATH_CHUNK, qe)
            lk = n_anc + (c1 - qs)  # later own keys are invisible to this block
            qb = q[0, :, c0:c1].to(cdt).reshape(hkv, g, c1 - c0, -1)
            s = _math_block_scores(qb, ks_all[:, :lk], n_anc, c0 - qs, scale)
            m = torch.logsumexp(s, dim=-1)  # [Hkv, g, Lb]
            p = torch.exp(s - m[..., None])
            o = torch.matmul(p, vs_all[:, None, :lk])  # [Hkv, g, Lb, Dv]
            out[0, :, c0:c1] = o.reshape(hq, c1 - c0, dv).to(out.dtype)
            lse[0, :, c0:c1] = m.reshape(hq, c1 - c0).to(lse.dtype)


def _math_backward(grad_out, q, k, v, out, lse, seg_q, seg_kv_ptr, kv_ranges, scale, dq, dk_acc, dv_acc):
    hq, hkv, d = q.shape[1], k.shape[1], q.shape[3]
    g = hq // hkv
    cdt = dk_acc.dtype
    for qs, qe, anc, k0 in _segments(seg_q, seg_kv_ptr, kv_ranges):
        n_anc = sum(b - a for a, b in anc)
        ks_all = _gather(k, anc, k0, k0 + qe - qs)[0].to(cdt)
        vs_all = _gather(v, anc, k0, k0 + qe - qs)[0].to(cdt)
        dks = torch.zeros_like(ks_all)
        dvs = torch.zeros_like(vs_all)
        for c0 in range(qs, qe, _MATH_CHUNK):
            c1 = min(c0 + _MATH_CHUNK, qe)
            lb, lk = c1 - c0, n_anc + (c1 - qs)
            qb = q[0, :, c0:c1].to(cdt).reshape(hkv, g, lb, d)
            gb = grad_out[0, :, c0:c1].to(cdt).reshape(hkv, g, lb, -1)
            ob = out[0, :, c0:c1].to(cdt).reshape(hkv, g, lb, -1)
            mb = lse[0, :, c0:c1].to(cdt).reshape(hkv, g, lb)
            s = _math_block_scores(qb, ks_all[:, :lk], n_anc, c0 - qs, scale)
            dqb, dkb, dvb = attention_backward(qb, ks_all[:, :lk], vs_all[:, :lk], gb, ob, mb, s, scale)
            dq[0, :, c0:c1] = dqb.reshape(hq, lb, d).to(dq.dtype)
            dks[:, :lk] += dkb
            dvs[:, :lk] += dvb
        _scatter_add(dk_acc, dks[None], anc, k0, k0 + qe - qs)
        _scatter_add(dv_acc, dvs[None], anc, k0, k0 + qe - qs)


def _scatter_add(acc: Tensor, part: Tensor, anc: list, qs: int, qe: int) -> None:
    """Add a segment's gathered-key gradient back onto the token positions it came from."""
    off = 0
    for a, b in list(anc) + [(qs, qe)]:
        acc[:, :, a:b] += part[:, :, off : off + (b - a)]
        off += b - a


# ---------------------------------------------------------------- the flash path: ancestors and own run apart
#
# A segment's queries see long ancestor ranges (the shared prompt) and a short causal run of their own (the
# branch; detach_prefix's branch queries, or any segment of the packed tree). The key axis is split in two
# instead of masked: the ancestors (fully visible: no mask) in one flash call
# per group of consecutive segments with the same ancestors (G branches of one prompt: one call for all their
# queries), the own run (square causal) per segment, merged by their log-sum-exps. No [queries, keys] additive
# mask is built (at a 16K-token prompt that was 25 MB per branch and layer, each way), the ancestors' K/V are
# a view where they are one range, and the backward of each part, given the merged out and lse, is exactly that
# part's share of the gradients (the kernel's P = exp(S - lse) and delta = rowsum(dO * O) use what it is given).


def _low_precision(q: Tensor) -> bool:
    """Half and bfloat16 keep one masked call per segment when queries and keys are the same tokens (exact
    mode): the split's two parts are each rounded to the dtype before their merge, which took the bf16 step of
    tests/test_backend.py past its bound against eager (1.06x of it); computing the parts in float32 took it
    further (1.27x), since the flash kernel, as the SDPA it replaces, rounds its probabilities to the dtype."""
    return q.dtype in (torch.float16, torch.bfloat16)


def _ancestor_groups(seg_q: Tensor, seg_kv_ptr: Tensor, kv_ranges: Tensor):
    """Yield (g_start, g_end, ancestor_ranges, [(q_start, q_end, own_start), ...]) per run of consecutive segments
    whose ancestor ranges are equal; their queries [g_start, g_end) are contiguous."""
    group = None
    for qs, qe, anc, k0 in _segments(seg_q, seg_kv_ptr, kv_ranges):
        if group is not None and group[2] == anc and group[1] == qs:
            group[1] = qe
            group[3].append((qs, qe, k0))
            continue
        if group is not None:
            yield tuple(group)
        group = [qs, qe, anc, [(qs, qe, k0)]]
    if group is not None:
        yield tuple(group)


def _ranges(x: Tensor, ranges: list) -> Tensor:
    """x[:, :, ranges] along dim 2: a view for one range, else a copy."""
    if len(ranges) == 1:
        a, b = ranges[0]
        return x[:, :, a:b]
    return torch.cat([x[:, :, a:b] for a, b in ranges], dim=2)


def _split_forward(q, k, v, seg_q, seg_kv_ptr, kv_ranges, scale, out, lse):
    for g0, g1, anc, segs in _ancestor_groups(seg_q, seg_kv_ptr, kv_ranges):
        if not anc:
            for qs, qe, k0 in segs:
                own = slice(k0, k0 + qe - qs)
                o_s, l_s = _FLASH_CPU(q[:, :, qs:qe], k[:, :, own], v[:, :, own], 0.0, True, scale=scale)
                out[:, :, qs:qe] = o_s
                lse[:, :, qs:qe] = l_s
            continue
        o_a, l_a = _FLASH_CPU(q[:, :, g0:g1], _ranges(k, anc), _ranges(v, anc), 0.0, False, scale=scale)
        # the own runs' results, merged with the ancestors' once per group (not per segment): in place in out/lse
        # where those hold the kernel's results unrounded (float32), else in the kernel's dtypes until the merge
        in_place = out.dtype == torch.float32 and l_a.dtype == torch.float32
        o_own, l_own = (out[:, :, g0:g1], lse[:, :, g0:g1]) if in_place else (torch.empty_like(o_a),
                                                                               torch.empty_like(l_a))
        for qs, qe, k0 in segs:
            own = slice(k0, k0 + qe - qs)
            o_own[:, :, qs - g0:qe - g0], l_own[:, :, qs - g0:qe - g0] = _FLASH_CPU(
                q[:, :, qs:qe], k[:, :, own], v[:, :, own], 0.0, True, scale=scale)
        l_m = torch.logaddexp(l_a, l_own)
        w_a = (l_a - l_m).exp_()[..., None]
        w_s = (l_own - l_m).exp_()[..., None]
        if in_place:
            o_own.mul_(w_s).addcmul_(o_a, w_a)
        else:
            out[:, :, g0:g1] = (o_a.to(l_m.dtype) * w_a).addcmul_(o_own.to(l_m.dtype), w_s)
        lse[:, :, g0:g1] = l_m


def _split_backward(grad_out, q, k, v, out, lse, seg_q, seg_kv_ptr, kv_ranges, scale, dq, dk_acc, dv_acc):
    """dk_acc/dv_acc may come uninitialised. Where the queries are the last Nq keys' tokens, the segments' own runs
    partition the keys [off, Nk) (off = Nk - Nq), so a first pass writes each of those once (a copy, not zeros
    plus an add: two passes over the accumulators fewer per layer), the keys before ``off`` are zeroed, and a
    second pass adds the ancestor groups' parts. Other query subsets zero the accumulators and add."""
    off = k.shape[2] - q.shape[2]
    groups = list(_ancestor_groups(seg_q, seg_kv_ptr, kv_ranges))
    partition = all(k0 == qs + off for _, _, _, segs in groups for qs, _, k0 in segs)
    if not partition:
        dk_acc.zero_()
        dv_acc.zero_()
    elif off:
        dk_acc[:, :, :off].zero_()
        dv_acc[:, :, :off].zero_()
    for _, _, _, segs in groups:
        for qs, qe, k0 in segs:
            own = slice(k0, k0 + qe - qs)
            dq_s, dk_s, dv_s = _FLASH_CPU_BWD(
                grad_out[:, :, qs:qe], q[:, :, qs:qe], k[:, :, own], v[:, :, own], out[:, :, qs:qe],
                lse[:, :, qs:qe], 0.0, True, scale=scale)
            dq[:, :, qs:qe] = dq_s
            if partition:
                dk_acc[:, :, own], dv_acc[:, :, own] = dk_s, dv_s
            else:
                dk_acc[:, :, own] += dk_s
                dv_acc[:, :, own] += dv_s
    limit = max(1, ANCESTOR_BACKWARD_CHUNK_BYTES // max(1, k.shape[1] * k.shape[3] * dk_acc.element_size()))
    for g0, g1, anc, _ in groups:
        for part in _key_chunks(anc, limit):
            dq_a, dk_a, dv_a = _FLASH_CPU_BWD(grad_out[:, :, g0:g1], q[:, :, g0:g1], _ranges(k, part),
                                              _ranges(v, part), out[:, :, g0:g1], lse[:, :, g0:g1], 0.0, False,
                                              scale=scale)
            dq[:, :, g0:g1] += dq_a
            _scatter_add(dk_acc, dk_a, part[:-1], *part[-1])
            _scatter_add(dv_acc, dv_a, part[:-1], *part[-1])
            del dq_a, dk_a, dv_a


# The ancestors' backward runs over chunks of their keys of at most this many bytes of dK: the flash kernel's dK and
# dV are as long as the keys it is given, and beside the layer's own accumulators they were the largest transient of
# a long prompt's backward (two prompt-long tensors per call). Given the merged lse, each chunk's call is exactly its
# keys' share (see above), so the chunks change the summation order of dQ only.
ANCESTOR_BACKWARD_CHUNK_BYTES = 1 << 20


def _key_chunks(ranges: list, limit: int):
    """Cut key ranges into consecutive lists of ranges of at most ``limit`` keys each (in order)."""
    part, n = [], 0
    for a, b in ranges:
        while a < b:
            take = min(b - a, limit - n)
            part.append((a, a + take))
            n += take
            a += take
            if n == limit:
                yield part
                part, n = [], 0
    if part:
        yield part


# ---------------------------------------------------------------- sliding window and softcapping
#
# A window W hides key k from query q when positions[q] - positions[k] >= W, positions being each token's column
# in its original row (a shared token has the same column in every row that holds it). Queries run in chunks of
# a segment; each chunk gathers only the keys its first query can still see (every range is a chain, its
# positions increasing, so the visible part of a range is its tail), and one mask per chunk applies the window
# and the own run's causality. Softcapping (Gemma 2: scores c * tanh(s / c)) is not in the flash kernel: it runs
# the math form here.


def _window_chunks(seg_q, seg_kv_ptr, kv_ranges, pos: list, window: int):
    """Yield (c0, c1, key_ranges) per query chunk [c0, c1): the key ranges (key coordinates) its queries can see,
    ancestors trimmed to the window of query c0 and the own run up to c1."""
    import bisect

    for qs, qe, anc, k0 in _segments(seg_q, seg_kv_ptr, kv_ranges):
        for c0 in range(qs, qe, _MATH_CHUNK):
            c1 = min(c0 + _MATH_CHUNK, qe)
            ranges = [*anc, (k0, k0 + c1 - qs)]
            if window != 0:
                # the first key any query of the chunk can see: its first query's window start, or the start of
                # that query's attention chunk (later queries' starts are no earlier)
                p0 = pos[k0 + c0 - qs]
                lo = p0 - window + 1 if window > 0 else (p0 // -window) * -window
                ranges = [(bisect.bisect_left(pos, lo, a, b), b) for a, b in ranges]
                ranges = [(a, b) for a, b in ranges if a < b]
            yield c0, c1, ranges


def _window_visible(kpos: Tensor, qpos: Tensor, window: int) -> Tensor:
    """[Lq, Lk] bool: the gathered key is not after the query (ancestors always precede) and within the window
    (W > 0) or the query's attention chunk (-C < 0)."""
    d = qpos[:, None] - kpos[None, :]
    vis = d >= 0
    if window > 0:
        return vis & (d < window)
    if window < 0:
        return vis & (qpos[:, None] // -window == kpos[None, :] // -window)
    return vis


def _positions_list(positions: Tensor | None, n_keys: int) -> Tensor:
    # without a window, packed order decides visibility: an ancestor precedes its descendants in DFS preorder
    return torch.arange(n_keys) if positions is None or positions.numel() == 0 else positions.cpu()


def _chunk_scores(qb: Tensor, ks: Tensor, vis: Tensor, scale: float, softcap: float):
    """(scores [Hkv, g, Lb, Lk] masked to -inf, tanh of the capped scores or None); qb [Hkv, g, Lb, D],
    ks [Hkv, Lk, D]."""
    s = torch.matmul(qb, ks[:, None].transpose(-1, -2)) * scale
    t = None
    if softcap > 0:
        t = torch.tanh(s / softcap)
        s = softcap * t
    return s.masked_fill(~vis, float("-inf")), t


def _windowed_forward(q, k, v, seg_q, seg_kv_ptr, kv_ranges, scale, positions, window, softcap, out, lse):
    hq, hkv, dv = q.shape[1], k.shape[1], v.shape[3]
    g = hq // hkv
    pos_t = _positions_list(positions, k.shape[2])
    pos = pos_t.tolist()
    flash = _use_flash(q, v) and softcap <= 0
    cdt = torch.promote_types(q.dtype, torch.float32)
    for c0, c1, ranges in _window_chunks(seg_q, seg_kv_ptr, kv_ranges, pos, window):
        kpos = torch.cat([pos_t[a:b] for a, b in ranges])
        # the chunk's queries are the last c1 - c0 keys of its own range
        vis = _window_visible(kpos, pos_t[ranges[-1][1] - (c1 - c0):ranges[-1][1]], window).to(q.device)
        ks, vs = _ranges(k, ranges), _ranges(v, ranges)
        if flash:
            bias = torch.zeros(vis.shape, dtype=q.dtype, device=q.device).masked_fill_(~vis, float("-inf"))
            o, m = _FLASH_CPU(q[:, :, c0:c1], ks, vs, 0.0, False, attn_mask=bias, scale=scale)
            out[:, :, c0:c1] = o
            lse[:, :, c0:c1] = m
            continue
        lb = c1 - c0
        qb = q[0, :, c0:c1].to(cdt).reshape(hkv, g, lb, -1)
        s, _ = _chunk_scores(qb, ks[0].to(cdt), vis, scale, softcap)
        m = torch.logsumexp(s, dim=-1)
        p = torch.exp(s - m[..., None])
        o = torch.matmul(p, vs[0].to(cdt)[:, None])
        out[0, :, c0:c1] = o.reshape(hq, lb, dv).to(out.dtype)
        lse[0, :, c0:c1] = m.reshape(hq, lb).to(lse.dtype)


def _windowed_backward(grad_out, q, k, v, out, lse, seg_q, seg_kv_ptr, kv_ranges, scale, positions, window,
                       softcap, dq, dk_acc, dv_acc):
    hq, hkv, d = q.shape[1], k.shape[1], q.shape[3]
    g = hq // hkv
    pos_t = _positions_list(positions, k.shape[2])
    pos = pos_t.tolist()
    flash = _use_flash(q, v) and softcap <= 0
    cdt = dk_acc.dtype
    lse_k = lse.to(torch.promote_types(q.dtype, torch.float32))
    for c0, c1, ranges in _window_chunks(seg_q, seg_kv_ptr, kv_ranges, pos, window):
        kpos = torch.cat([pos_t[a:b] for a, b in ranges])
        # the chunk's queries are the last c1 - c0 keys of its own range
        vis = _window_visible(kpos, pos_t[ranges[-1][1] - (c1 - c0):ranges[-1][1]], window).to(q.device)
        ks, vs = _ranges(k, ranges), _ranges(v, ranges)
        if flash:
            bias = torch.zeros(vis.shape, dtype=q.dtype, device=q.device).masked_fill_(~vis, float("-inf"))
            dq_c, dk_c, dv_c = _FLASH_CPU_BWD(grad_out[:, :, c0:c1], q[:, :, c0:c1], ks, vs, out[:, :, c0:c1],
                                              lse_k[:, :, c0:c1], 0.0, False, attn_mask=bias, scale=scale)
            dq[:, :, c0:c1] = dq_c
        else:
            lb = c1 - c0
            ksf, vsf = ks[0].to(cdt), vs[0].to(cdt)
            qb = q[0, :, c0:c1].to(cdt).reshape(hkv, g, lb, d)
            gb = grad_out[0, :, c0:c1].to(cdt).reshape(hkv, g, lb, -1)
            ob = out[0, :, c0:c1].to(cdt).reshape(hkv, g, lb, -1)
            mb = lse[0, :, c0:c1].to(cdt).reshape(hkv, g, lb)
            s, t = _chunk_scores(qb, ksf, vis, scale, softcap)
            p = torch.exp(s - mb[..., None])  # masked entries: exp(-inf) = 0
            dp = torch.matmul(gb, vsf[:, None].transpose(-1, -2))
            ds = p * (dp - (gb * ob).sum(-1, keepdim=True))
            if t is not None:
                ds = ds * (1 - t * t)  # d(c tanh(s / c)) / ds
            ds = ds * scale
            dq[0, :, c0:c1] = torch.matmul(ds, ksf[:, None]).reshape(hq, lb, d).to(dq.dtype)
            # summed over the g query heads sharing a kv head
            dk_c = torch.einsum("hgqk,hgqd->hkd", ds, qb)[None]
            dv_c = torch.einsum("hgqk,hgqd->hkd", p, gb)[None]
        _scatter_add(dk_acc, dk_c, ranges[:-1], *ranges[-1])
        _scatter_add(dv_acc, dv_c, ranges[:-1], *ranges[-1])


# ---------------------------------------------------------------- forward op


@torch.library.custom_op("replaycompile::tree_attention", mutates_args=())
def tree_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    subtree_end: Tensor,
    seg_q: Tensor,
    seg_kv_ptr: Tensor,
    kv_ranges: Tensor,
    scale: float,
    layout: list[Tensor],
    block_q: int,
    block_k: int,
    positions: Tensor | None = None,
    window: int = 0,
    softcap: float = 0.0,
    sinks: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Tree attention over a DFS-packed prefix tree.

    q [1, Hq, N, D], k [1, Hkv, N, D], v [1, Hkv, N, Dv] (any strides; query
    head h reads kv head h // (Hq // Hkv)). Returns (out [1, Hq, N, Dv]
    in q.dtype, token-major on CPU (see ``_new_tokens``), lse [1, Hq, N] float32 natural log-sum-exp of the
    scaled visible scores). ``subtree_end`` is accepted for the schema/spec but
    the computation follows the segment CSR.

    Fewer queries than keys (q [1, Hq, Nq, D], k and v [1, Hkv, Nk, .], Nq < Nk): the queries are Nq of the keys'
    tokens. ``seg_q`` is in query coordinates, ``kv_ranges`` in key coordinates, and each segment's last range
    (its own run, seen causally) holds its queries' tokens, as many as its queries; ``subtree_end`` may be
    empty, and the PyTorch path runs. detach_prefix uses it for the branch tokens (the last Nq keys: the shared
    tokens' keys, computed without autograd, come first); the last layer's queries run only at the tokens the
    loss reads (``plan.ReplayPlan.query_segments``).

    ``window`` W > 0: key k is visible to query q only if ``positions[k] >= positions[q] - W + 1``, with
    ``positions`` [Nk] each key token's column in its row (queries: the last Nq). ``window`` -C < 0: chunked
    attention (Llama 4): k is visible only if ``positions[k] // C == positions[q] // C``, ``positions`` each
    token's position from its row's first real token. ``softcap`` c > 0: scores are
    ``c * tanh(s / c)``. Either runs the PyTorch path (CPU flash with a per-chunk mask; math for softcapping).

    ``sinks`` [Hq] (GPT-OSS's attention sinks): query head h's softmax has one more logit, ``sinks[h]``, seen by
    every query and dropped after the softmax (its value is zero); lse then includes it. Any path above runs
    and its result is rescaled (``_apply_sinks``); the gradient reaches ``sinks`` too.
    """
    _check_inputs(q, k, v, subtree_end, seg_q)
    _check_window(k, positions, window, softcap)
    _check_sinks(q, sinks)
    out, lse = _attend(q, k, v, subtree_end, seg_q, seg_kv_ptr, kv_ranges, scale, layout, block_q, block_k,
                       positions, window, softcap)
    return _apply_sinks(out, lse, sinks) if sinks is not None else (out, lse)


def _apply_sinks(out: Tensor, lse: Tensor, sinks: Tensor) -> tuple[Tensor, Tensor]:
    """(out, lse) of attention whose softmax also holds a sink logit per head, from (out, lse) without it.

    With the sink the denominator grows from exp(lse) to exp(lse) + exp(s): every probability, hence out, is
    scaled by exp(lse - lse') = sigmoid(lse - s), lse' = logaddexp(lse, s). The pair (out', lse') is what the
    backward needs as it is: the probabilities exp(score - lse') and the row term sum(grad * out') of the
    standard backward are those of the softmax with the sink, so dq, dk, dv come from the unchanged backward
    op, and the sink's gradient is that of its own column (``_sinks_grad``)."""
    s = sinks.to(lse.dtype)[None, :, None]
    lse_all = torch.logaddexp(lse, s)
    w = torch.exp(lse - lse_all)[..., None]
    cdt = torch.promote_types(out.dtype, torch.float32)
    res = torch.empty_like(out)  # out's layout (the fake's)
    return torch.mul(out.to(cdt), w.to(cdt), out=res), lse_all


def _sinks_grad(grad_out: Tensor, out: Tensor, lse: Tensor, sinks: Tensor) -> Tensor:
    """d loss / d sinks [Hq]: the sink column's probability is p = exp(s - lse') and its value zero, so its
    score's gradient is p * (0 - sum(grad * out')) (the softmax backward), summed over the queries."""
    cdt = torch.promote_types(out.dtype, torch.float32)
    delta = (grad_out.to(cdt) * out.to(cdt)).sum(-1)  # [1, Hq, N]
    p = torch.exp(sinks.to(cdt)[None, :, None] - lse.to(cdt))
    return (-(p * delta)).sum(dim=(0, 2)).to(sinks.dtype)


def _check_sinks(q: Tensor, sinks: Tensor | None) -> None:
    torch._check(sinks is None or (sinks.dim() == 1 and sinks.shape[0] == q.shape[1]),
                 lambda: "sinks must be [number of query heads]")


def _attend(q, k, v, subtree_end, seg_q, seg_kv_ptr, kv_ranges, scale, layout, block_q, block_k, positions,
            window, softcap):
    if window != 0 or softcap > 0:
        _ran("forward", "torch")
        out = _new_tokens((1, q.shape[1], q.shape[2], v.shape[3]), q.dtype, q.device)
        lse = torch.empty((1, q.shape[1], q.shape[2]), dtype=torch.float32, device=q.device)
        _windowed_forward(q, k, v, seg_q, seg_kv_ptr, kv_ranges, scale, positions, window, softcap, out, lse)
        return out, lse
    if _use_triton(q, k, v, layout):
        lay = BlockLayout.from_tensors(layout, block_q, block_k, q.shape[2], k.shape[2])
        out, lse = _triton.forward(q, k, v, lay, scale, tree_end=subtree_end)
        _ran("forward", "triton")
        return _as_tokens(out), lse
    _ran("forward", "torch")
    hq, n, dv = q.shape[1], q.shape[2], v.shape[3]
    out = _new_tokens((1, hq, n, dv), q.dtype, q.device)
    lse = torch.empty((1, hq, n), dtype=torch.float32, device=q.device)
    if not _use_flash(q, v):
        _math_forward(q, k, v, seg_q, seg_kv_ptr, kv_ranges, scale, out, lse)
        return out, lse
    if k.shape[2] != n or not _low_precision(q):
        _split_forward(q, k, v, seg_q, seg_kv_ptr, kv_ranges, scale, out, lse)
        return out, lse
    for qs, qe, anc, k0 in _segments(seg_q, seg_kv_ptr, kv_ranges):
        q_s = q[:, :, qs:qe]
        k_s = _gather(k, anc, k0, k0 + qe - qs)
        v_s = _gather(v, anc, k0, k0 + qe - qs)
        if anc:
            n_anc = k_s.shape[2] - (qe - qs)
            bias = _segment_bias(n_anc, qe - qs, q.dtype, q.device)
            o_s, l_s = _FLASH_CPU(q_s, k_s, v_s, 0.0, False, attn_mask=bias, scale=scale)
        else:
            # own range only: square causal, the kernel's top-left is_causal is right
            o_s, l_s = _FLASH_CPU(q_s, k_s, v_s, 0.0, True, scale=scale)
        # the kernel supports GQA natively (kv head h // g), no expand needed
        out[:, :, qs:qe] = o_s
        lse[:, :, qs:qe] = l_s
    return out, lse


@tree_attention.register_fake
def _tree_attention_fake(q, k, v, subtree_end, seg_q, seg_kv_ptr, kv_ranges, scale, layout, block_q, block_k,
                         positions=None, window=0, softcap=0.0, sinks=None):
    _check_inputs(q, k, v, subtree_end, seg_q)
    _check_window(k, positions, window, softcap)
    _check_sinks(q, sinks)
    hq, n, dv = q.shape[1], q.shape[2], v.shape[3]
    out = _new_tokens((1, hq, n, dv), q.dtype, q.device)
    lse = q.new_empty((1, hq, n), dtype=torch.float32)
    return out, lse


# ---------------------------------------------------------------- backward op


@torch.library.custom_op("replaycompile::tree_attention_backward", mutates_args=())
def tree_attention_backward(
    grad_out: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    out: Tensor,
    lse: Tensor,
    subtree_end: Tensor,
    seg_q: Tensor,
    seg_kv_ptr: Tensor,
    kv_ranges: Tensor,
    scale: float,
    layout: list[Tensor],
    block_q: int,
    block_k: int,
    positions: Tensor | None = None,
    window: int = 0,
    softcap: float = 0.0,
) -> tuple[Tensor, Tensor, Tensor]:
    """Gradients (dq, dk, dv) of ``tree_attention``'s out w.r.t. q, k, v.

    Every query lives in exactly one segment, so dq is written per segment;
    a key is seen by many segments (its own and all descendants), so dk/dv are
    accumulated in float32 (float64 for float64 inputs) and cast at the end.
    """
    if not (window != 0 or softcap > 0) and _use_triton(q, k, v, layout):
        # autograd can hand us expanded (stride-0) grads; the kernels want real strides
        lay = BlockLayout.from_tensors(layout, block_q, block_k, q.shape[2], k.shape[2])
        # (out is token-major where the interpreter ran the forward on CPU tensors; on CUDA contiguous already)
        grads = _triton.backward(grad_out.contiguous(), q, k, v, out.contiguous(), lse, lay, scale,
                                 tree_end=subtree_end)
        _ran("backward", "triton")
        return tuple(_as_tokens(g) for g in grads)
    # the PyTorch paths read any strides, but an expanded (stride-0) grad would be read element by element;
    # the model's gradient usually arrives token-major already (the flash kernel's layout: no copy then)
    grad_out = _as_tokens(grad_out) if 0 in grad_out.stride() else grad_out
    _ran("backward", "torch")
    acc_dt = torch.promote_types(k.dtype, torch.float32)
    dq = _new_tokens(q.shape, q.dtype, q.device)
    # the split path initialises the accumulators itself (_split_backward)
    split = (window == 0 and softcap <= 0 and _use_flash(q, v)
             and (k.shape[2] != q.shape[2] or not _low_precision(q)))
    dk_acc = _new_tokens(k.shape, acc_dt, k.device, zero=not split)
    dv_acc = _new_tokens(v.shape, acc_dt, v.device, zero=not split)
    if window != 0 or softcap > 0:
        _windowed_backward(grad_out, q, k, v, out, lse, seg_q, seg_kv_ptr, kv_ranges, scale, positions, window,
                           softcap, dq, dk_acc, dv_acc)
        return dq, dk_acc.to(k.dtype), dv_acc.to(v.dtype)
    if not _use_flash(q, v):
        _math_backward(grad_out, q, k, v, out, lse, seg_q, seg_kv_ptr, kv_ranges, scale, dq, dk_acc, dv_acc)
        return dq, dk_acc.to(k.dtype), dv_acc.to(v.dtype)
    # the kernel wants its logsumexp in the accumulation dtype (float64 for float64)
    lse_k = lse.to(torch.promote_types(q.dtype, torch.float32))
    if k.shape[2] != q.shape[2] or not _low_precision(q):
        _split_backward(grad_out, q, k, v, out, lse_k, seg_q, seg_kv_ptr, kv_ranges, scale, dq, dk_acc, dv_acc)
        return dq, dk_acc.to(k.dtype), dv_acc.to(v.dtype)
    for qs, qe, anc, k0 in _segments(seg_q, seg_kv_ptr, kv_ranges):
        q_s = q[:, :, qs:qe]
        k_s = _gather(k, anc, k0, k0 + qe - qs)
        v_s = _gather(v, anc, k0, k0 + qe - qs)
        args = (grad_out[:, :, qs:qe], q_s, k_s, v_s, out[:, :, qs:qe], lse_k[:, :, qs:qe], 0.0)
        if anc:
            bias = _segment_bias(k_s.shape[2] - (qe - qs), qe - qs, q.dtype, q.device)
            dq_s, dk_s, dv_s = _FLASH_CPU_BWD(*args, False, attn_mask=bias, scale=scale)
        else:
            dq_s, dk_s, dv_s = _FLASH_CPU_BWD(*args, True, scale=scale)
        # dk_s/dv_s are already summed over each kv head's query-head group
        dq[:, :, qs:qe] = dq_s
        _scatter_add(dk_acc, dk_s, anc, k0, k0 + qe - qs)
        _scatter_add(dv_acc, dv_s, anc, k0, k0 + qe - qs)
    return dq, dk_acc.to(k.dtype), dv_acc.to(v.dtype)


@tree_attention_backward.register_fake
def _tree_attention_backward_fake(grad_out, q, k, v, out, lse, subtree_end, seg_q, seg_kv_ptr, kv_ranges, scale,
                                  layout, block_q, block_k, positions=None, window=0, softcap=0.0):
    # real impl returns fresh tensors in _new_tokens's layout whatever the input strides
    return tuple(_new_tokens(x.shape, x.dtype, x.device) for x in (q, k, v))


# ---------------------------------------------------------------- autograd


def _setup_context(ctx, inputs, output):
    q, k, v, subtree_end, seg_q, seg_kv_ptr, kv_ranges, scale, layout, block_q, block_k, positions, window, \
        softcap, sinks = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse, subtree_end, seg_q, seg_kv_ptr, kv_ranges, positions, sinks, *layout)
    ctx.meta = (scale, block_q, block_k, window, softcap)
    # lse is exported for diagnostics; we do not differentiate through it.
    ctx.mark_non_differentiable(lse)


def _backward(ctx, grad_out, grad_lse):
    # grad_lse is ignored: lse is non-differentiable (see _setup_context).
    q, k, v, out, lse, subtree_end, seg_q, seg_kv_ptr, kv_ranges, positions, sinks, *layout = ctx.saved_tensors
    scale, block_q, block_k, window, softcap = ctx.meta
    dq = dk = dv = dsinks = None
    # with sinks, out and lse are those of the softmax with the sink (_apply_sinks): the backward op takes them
    if grad_out is not None and any(ctx.needs_input_grad[:3]):
        dq, dk, dv = tree_attention_backward(
            grad_out, q, k, v, out, lse, subtree_end, seg_q, seg_kv_ptr, kv_ranges, scale, layout, block_q, block_k,
            positions, window, softcap
        )
    if grad_out is not None and sinks is not None and ctx.needs_input_grad[14]:
        dsinks = _sinks_grad(grad_out, out, lse, sinks)
    grads = (dq, dk, dv, None, None, None, None, None, [None] * len(layout), None, None, None, None, None, dsinks)
    # the dispatcher drops trailing arguments equal to their defaults (window=0, ...): one grad per argument given
    return grads[:len(ctx.needs_input_grad)]


tree_attention.register_autograd(_backward, setup_context=_setup_context)

# Under autocast the op is cast as the SDPA it replaces: q, k, v to the autocast dtype (kernels/autocast.py); the
# backward runs in the dtypes the forward saved, with autocast off inside
_autocast.register("replaycompile::tree_attention", cast=("q", "k", "v"))
_autocast.register("replaycompile::tree_attention_backward")
