"""Triton block-sparse attention, forward and backward (FlashAttention-2 style), sparsity as data.

One kernel family serves both attention patterns of the project (see ``block_sparse.py``): a program walks the
list of key blocks its query block visits, with an online softmax in float32 and the log-sum-exp saved; no
N x N matrix exists anywhere. *Partial* blocks evaluate the exact token rule in the kernel:

* ``TREE``: key k visible to query q iff ``k <= q < subtree_end[k]`` (a packed prefix tree);
* otherwise: ``k <= q + causal_offset`` (bottom-right causal; a budget's blocks come from the layout).

The backward is two kernels without atomics: dK/dV per (key block, KV head), walking the transposed lists and
summing the GQA group's query heads in registers; dQ per (query block, query head) walking the forward lists.
GQA reads KV head ``h // group`` and never repeats K/V in memory.

The same Python functions become ``triton.jit`` kernels on CUDA (autotuned over warps/stages) and Triton
interpreter kernels for CPU tensors, so the CPU test suite and ``attention="triton"`` on a CPU machine run the
very kernel source a GPU runs; ``triton_build.py`` builds them (importing Triton on first use) and holds the device
functions they share with the decode kernel (tile loads, the query-block prologue, the online-softmax step).

``block_sparse_attention`` is the public custom op for budgets (Sparrow); the tree-attention op calls
``forward`` / ``backward`` here directly. Pure-torch specification: ``block_sparse_reference.py``.
"""

from __future__ import annotations


import torch
from torch import Tensor

from . import autocast as _autocast
from . import triton_build as _tb
from .attention_math import attention_backward
from .block_sparse import BlockLayout, next_power_of_2

triton = tl = None  # bound by triton_build on the first kernel build: the CPU paths import no Triton

__all__ = ["forward", "backward", "block_sparse_attention", "supported", "default_blocks"]

_LOG2E = 1.4426950408889634
_LN2 = 0.6931471805599453
_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


# ------------------------------------------------------------------------------------------------ kernels


def _fwd_kernel(Q, K, V, O, LSE, SE, QPTR, QIDX, QFULL,
                s_qh, s_qn, s_qd, s_kh, s_kn, s_kd, s_vh, s_vn, s_vd, s_oh, s_on, s_od,
                n_q, n_k, causal_offset, scale_log2,
                GROUP: tl.constexpr, PER_HEAD: tl.constexpr, TREE: tl.constexpr, UPCAST: tl.constexpr,
                PRECISION: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_h, kvh, n_qb, offs_m, offs_d, offs_kn, m_valid, d_valid = _tb.query_block(n_q, GROUP, PER_HEAD, HEAD_DIM,
                                                                                  BLOCK_D, BLOCK_Q, BLOCK_K)
    q = _tb.load_tile(Q + pid_h * s_qh, offs_m, offs_d, s_qn, s_qd, m_valid, d_valid, UPCAST)
    m_i = tl.full([BLOCK_Q], float("-inf"), dtype=tl.float32)
    l_i = tl.full([BLOCK_Q], 0.0, dtype=tl.float32)
    acc = tl.full([BLOCK_Q, BLOCK_D], 0.0, dtype=tl.float32)
    start, end = _tb.block_list(QPTR, n_qb, kvh, PER_HEAD)
    k_base = K + kvh * s_kh
    v_base = V + kvh * s_vh
    for j in range(start, end):
        kb = tl.load(QIDX + j)
        is_full = tl.load(QFULL + j)
        offs_n = kb * BLOCK_K + offs_kn
        n_valid = offs_n < n_k
        kt = _tb.load_tile_t(k_base, offs_n, offs_d, s_kn, s_kd, n_valid, d_valid, UPCAST)
        v = _tb.load_tile(v_base, offs_n, offs_d, s_vn, s_vd, n_valid, d_valid, UPCAST)
        s = tl.dot(q, kt, input_precision=PRECISION) * scale_log2
        if is_full == 0:
            vis = (offs_n[None, :] <= offs_m[:, None] + causal_offset) & n_valid[None, :] & m_valid[:, None]
            if TREE:
                se = tl.load(SE + offs_n, mask=n_valid, other=0)
                vis = vis & (offs_m[:, None] < se[None, :])
            s = tl.where(vis, s, float("-inf"))
        m_i, l_i, acc = _tb.online_softmax(s, m_i, l_i, acc, v, PRECISION)
    l_safe = tl.where(l_i == 0.0, 1.0, l_i)
    out = acc / l_safe[:, None]
    lse = tl.where(l_i == 0.0, float("-inf"), (m_i + tl.math.log2(l_safe)) * 0.6931471805599453)
    tl.store(O + pid_h * s_oh + offs_m[:, None] * s_on + offs_d[None, :] * s_od, out.to(O.dtype.element_ty),
             mask=m_valid[:, None] & d_valid[None, :])
    tl.store(LSE + pid_h * n_q + offs_m, lse, mask=m_valid)


def _bwd_dkdv_kernel(Q, K, V, DO, LSE, DELTA, DK, DV, SE, KVPTR, KVIDX, KVFULL,
                     s_qh, s_qn, s_qd, s_kh, s_kn, s_kd, s_vh, s_vn, s_vd, s_doh, s_don, s_dod,
                     s_dkh, s_dkn, s_dkd, s_dvh, s_dvn, s_dvd,
                     n_q, n_k, causal_offset, scale_log2, scale,
                     GROUP: tl.constexpr, PER_HEAD: tl.constexpr, TREE: tl.constexpr, UPCAST: tl.constexpr,
                     PRECISION: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                     BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_n = tl.program_id(0)
    kvh = tl.program_id(1)
    n_kb = tl.num_programs(0)
    offs_n = pid_n * BLOCK_K + tl.arange(0, BLOCK_K)
    offs_d = tl.arange(0, BLOCK_D)
    offs_qm = tl.arange(0, BLOCK_Q)
    n_valid = offs_n < n_k
    d_valid = offs_d < HEAD_DIM
    kv_mask = n_valid[:, None] & d_valid[None, :]
    k = _tb.load_tile(K + kvh * s_kh, offs_n, offs_d, s_kn, s_kd, n_valid, d_valid, UPCAST)
    v = _tb.load_tile(V + kvh * s_vh, offs_n, offs_d, s_vn, s_vd, n_valid, d_valid, UPCAST)
    if TREE:
        se = tl.load(SE + offs_n, mask=n_valid, other=0)
    dk = tl.full([BLOCK_K, BLOCK_D], 0.0, dtype=tl.float32)
    dv = tl.full([BLOCK_K, BLOCK_D], 0.0, dtype=tl.float32)
    start, end = _tb.block_list(KVPTR, n_kb, kvh, PER_HEAD)
    for g in range(GROUP):
        h = kvh * GROUP + g
        for j in range(start, end):
            qb = tl.load(KVIDX + j)
            is_full = tl.load(KVFULL + j)
            offs_m = qb * BLOCK_Q + offs_qm
            m_valid = offs_m < n_q
            q = _tb.load_tile(Q + h * s_qh, offs_m, offs_d, s_qn, s_qd, m_valid, d_valid, UPCAST)
            do = _tb.load_tile(DO + h * s_doh, offs_m, offs_d, s_don, s_dod, m_valid, d_valid, UPCAST)
            lse = tl.load(LSE + h * n_q + offs_m, mask=m_valid, other=0.0)
            lse = tl.where(lse == float("-inf"), float("inf"), lse) * 1.4426950408889634
            delta = tl.load(DELTA + h * n_q + offs_m, mask=m_valid, other=0.0)
            s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale_log2  # [BQ, BK]
            p = tl.math.exp2(s - lse[:, None])
            if is_full == 0:
                vis = (offs_n[None, :] <= offs_m[:, None] + causal_offset) & n_valid[None, :] & m_valid[:, None]
                if TREE:
                    vis = vis & (offs_m[:, None] < se[None, :])
                p = tl.where(vis, p, 0.0)
            dv += tl.dot(tl.trans(p.to(do.dtype)), do, input_precision=PRECISION)
            dp = tl.dot(do, tl.trans(v), input_precision=PRECISION)
            ds = p * (dp - delta[:, None])
            dk += tl.dot(tl.trans(ds.to(q.dtype)), q, input_precision=PRECISION)
    dk = dk * scale
    tl.store(DK + kvh * s_dkh + offs_n[:, None] * s_dkn + offs_d[None, :] * s_dkd, dk.to(DK.dtype.element_ty),
             mask=kv_mask)
    tl.store(DV + kvh * s_dvh + offs_n[:, None] * s_dvn + offs_d[None, :] * s_dvd, dv.to(DV.dtype.element_ty),
             mask=kv_mask)


def _bwd_dq_kernel(Q, K, V, DO, LSE, DELTA, DQ, SE, QPTR, QIDX, QFULL,
                   s_qh, s_qn, s_qd, s_kh, s_kn, s_kd, s_vh, s_vn, s_vd, s_doh, s_don, s_dod,
                   s_dqh, s_dqn, s_dqd,
                   n_q, n_k, causal_offset, scale_log2, scale,
                   GROUP: tl.constexpr, PER_HEAD: tl.constexpr, TREE: tl.constexpr, UPCAST: tl.constexpr,
                   PRECISION: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                   BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_h, kvh, n_qb, offs_m, offs_d, offs_kn, m_valid, d_valid = _tb.query_block(n_q, GROUP, PER_HEAD, HEAD_DIM,
                                                                                  BLOCK_D, BLOCK_Q, BLOCK_K)
    q_mask = m_valid[:, None] & d_valid[None, :]
    q = _tb.load_tile(Q + pid_h * s_qh, offs_m, offs_d, s_qn, s_qd, m_valid, d_valid, UPCAST)
    do = _tb.load_tile(DO + pid_h * s_doh, offs_m, offs_d, s_don, s_dod, m_valid, d_valid, UPCAST)
    lse = tl.load(LSE + pid_h * n_q + offs_m, mask=m_valid, other=0.0)
    lse = tl.where(lse == float("-inf"), float("inf"), lse) * 1.4426950408889634
    delta = tl.load(DELTA + pid_h * n_q + offs_m, mask=m_valid, other=0.0)
    dq = tl.full([BLOCK_Q, BLOCK_D], 0.0, dtype=tl.float32)
    start, end = _tb.block_list(QPTR, n_qb, kvh, PER_HEAD)
    k_base = K + kvh * s_kh
    v_base = V + kvh * s_vh
    for j in range(start, end):
        kb = tl.load(QIDX + j)
        is_full = tl.load(QFULL + j)
        offs_n = kb * BLOCK_K + offs_kn
        n_valid = offs_n < n_k
        k = _tb.load_tile(k_base, offs_n, offs_d, s_kn, s_kd, n_valid, d_valid, UPCAST)
        vt = _tb.load_tile_t(v_base, offs_n, offs_d, s_vn, s_vd, n_valid, d_valid, UPCAST)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale_log2
        p = tl.math.exp2(s - lse[:, None])
        if is_full == 0:
            vis = (offs_n[None, :] <= offs_m[:, None] + causal_offset) & n_valid[None, :] & m_valid[:, None]
            if TREE:
                se = tl.load(SE + offs_n, mask=n_valid, other=0)
                vis = vis & (offs_m[:, None] < se[None, :])
            p = tl.where(vis, p, 0.0)
        dp = tl.dot(do, vt, input_precision=PRECISION)
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(k.dtype), k, input_precision=PRECISION)
    dq = dq * scale
    tl.store(DQ + pid_h * s_dqh + offs_m[:, None] * s_dqn + offs_d[None, :] * s_dqd, dq.to(DQ.dtype.element_ty),
             mask=q_mask)


# Warps/stages are tuned per head dim on GPUs; block sizes are fixed per (head dim, dtype) because the layout
# (the block lists) is built for one block size before the kernels run.
def _gpu_configs():
    return [triton.Config({}, num_warps=w, num_stages=s) for w in (4, 8) for s in (2, 3)]


def _kernel(name: str, interpret: bool):
    fn = {"fwd": _fwd_kernel, "dkdv": _bwd_dkdv_kernel, "dq": _bwd_dq_kernel}[name]
    return _tb.build(fn, interpret, _gpu_configs, ("HEAD_DIM", "GROUP", "TREE", "BLOCK_Q", "BLOCK_K"))


# ------------------------------------------------------------------------------------------------ launchers


def default_blocks(head_dim: int, dtype: torch.dtype, device_type: str) -> tuple[int, int]:
    """(block_q, block_k) for a head dim and dtype.

    CPU tensors run in the Triton interpreter, whose cost grows with the tile area: 16 (the smallest ``tl.dot``
    tile) keeps tests quick and exercises multi-block lists. On GPUs 64 x 64 keeps the backward's four
    [64, head_dim] fp32 tiles in registers for head dim 128; 128 x 64 suits head dims up to 64 in 16-bit types
    (``bench/gpu_check.py --sweep-blocks`` measures the alternatives).
    """
    if device_type != "cuda":
        return 16, 16
    if head_dim <= 64 and dtype in (torch.float16, torch.bfloat16):
        return 128, 64
    return 64, 64


def supported(q: Tensor, k: Tensor, v: Tensor) -> str | None:
    """None when the Triton kernels can run these inputs, else the reason they cannot."""
    if q.dtype not in _DTYPES:
        return f"dtype {q.dtype} (the kernels take float32, float16 and bfloat16)"
    if not (q.dtype == k.dtype == v.dtype):
        return "q, k and v dtypes differ"
    if q.shape[-1] != v.shape[-1] or q.shape[-1] != k.shape[-1]:
        return f"head dims q={q.shape[-1]}, k={k.shape[-1]}, v={v.shape[-1]} differ"
    if q.shape[-1] > 256:
        return f"head dim {q.shape[-1]} > 256"
    if q.device.type not in ("cuda", "cpu"):
        return f"device {q.device.type}"
    return None


def _precision(dtype: torch.dtype) -> str:
    # float32 matmuls follow PyTorch's own TF32 switch (off by default): exact unless the user opted in
    if dtype == torch.float32 and torch.backends.cuda.matmul.allow_tf32:
        return "tf32"
    return "ieee"


def _common(q: Tensor, k: Tensor, layout: BlockLayout, tree_end: Tensor | None):
    interpret = q.device.type != "cuda"
    hq, hkv = q.shape[1], k.shape[1]
    if hq % hkv:
        raise ValueError(f"query heads {hq} are not a multiple of KV heads {hkv}")
    if layout.heads not in (1, hkv):
        raise ValueError(f"a layout has 1 or n_kv_heads={hkv} heads, got {layout.heads}")
    d = q.shape[-1]
    meta = dict(GROUP=hq // hkv, PER_HEAD=layout.heads > 1, TREE=tree_end is not None,
                UPCAST=interpret and q.dtype == torch.bfloat16, PRECISION=_precision(q.dtype),
                HEAD_DIM=d, BLOCK_D=max(16, next_power_of_2(d)),
                BLOCK_Q=layout.block_q, BLOCK_K=layout.block_k)
    # the tree rule reads subtree_end; the causal rule ignores it (any int tensor fills the slot)
    se = tree_end if tree_end is not None else layout.q_ptr
    offset = 0 if tree_end is not None else k.shape[2] - q.shape[2]
    return interpret, meta, se, offset


def forward(q: Tensor, k: Tensor, v: Tensor, layout: BlockLayout, scale: float,
            tree_end: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """out [1, Hq, Nq, D] (q.dtype, contiguous) and lse [1, Hq, Nq] float32 of block-sparse attention.

    q [1, Hq, Nq, D]; k, v [1, Hkv, Nk, D] (any strides). ``tree_end`` given: the tree rule (Nq == Nk);
    otherwise bottom-right causal inside the layout's partial blocks.
    """
    interpret, meta, se, offset = _common(q, k, layout, tree_end)
    hq, n_q, n_k = q.shape[1], q.shape[2], k.shape[2]
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty((1, hq, n_q), dtype=torch.float32, device=q.device)
    if n_q == 0:
        return out, lse
    grid = (layout.num_q_blocks, hq)
    _kernel("fwd", interpret)[grid](
        q, k, v, out, lse, se, layout.q_ptr, layout.q_idx, layout.q_full,
        *q.stride()[1:], *k.stride()[1:], *v.stride()[1:], *out.stride()[1:],
        n_q, n_k, offset, scale * _LOG2E, **meta)
    return out, lse


def backward(grad_out: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, layout: BlockLayout,
             scale: float, tree_end: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """(dq, dk, dv) of ``forward``'s out, each contiguous in its input's dtype."""
    interpret, meta, se, offset = _common(q, k, layout, tree_end)
    hq, hkv, n_q, n_k = q.shape[1], k.shape[1], q.shape[2], k.shape[2]
    dq = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    dk = torch.empty(k.shape, dtype=k.dtype, device=k.device)
    dv = torch.empty(v.shape, dtype=v.dtype, device=v.device)
    if n_q == 0 or n_k == 0:
        return dq.zero_(), dk.zero_(), dv.zero_()
    # delta = rowsum(dO * O): one fused elementwise-reduce, not worth a kernel of its own
    delta = (grad_out.float() * out.float()).sum(-1).contiguous()
    lse = lse.contiguous()
    strides = (*q.stride()[1:], *k.stride()[1:], *v.stride()[1:], *grad_out.stride()[1:])
    _kernel("dkdv", interpret)[(layout.num_k_blocks, hkv)](
        q, k, v, grad_out, lse, delta, dk, dv, se, layout.kv_ptr, layout.kv_idx, layout.kv_full,
        *strides, *dk.stride()[1:], *dv.stride()[1:],
        n_q, n_k, offset, scale * _LOG2E, scale, **meta)
    _kernel("dq", interpret)[(layout.num_q_blocks, hq)](
        q, k, v, grad_out, lse, delta, dq, se, layout.q_ptr, layout.q_idx, layout.q_full,
        *strides, *dq.stride()[1:],
        n_q, n_k, offset, scale * _LOG2E, scale, **meta)
    return dq, dk, dv


# ------------------------------------------------------------------------------------------------ budget op


def _check_budget(q, k, v, layout_tensors, block_q, block_k):
    torch._check(q.dim() == 4 and k.dim() == 4 and v.dim() == 4 and q.shape[0] == 1,
                 lambda: "q, k, v must be [1, H, N, D]")
    torch._check(len(layout_tensors) == 6, lambda: "a block layout is 6 tensors")
    torch._check(block_q > 0 and block_k > 0, lambda: "block sizes must be positive")


def _torch_budget(q: Tensor, k: Tensor, v: Tensor, lay: BlockLayout, scale: float):
    """The PyTorch path of the budget op: the layout as a dense mask, plain attention in float32 (CPU training of
    small models, where the Triton interpreter would be far too slow)."""
    from .block_sparse_reference import masked_attention_reference
    return masked_attention_reference(q, k, v, lay.token_mask().to(q.device), scale)


def _torch_budget_backward(grad_out, q, k, v, out, lse, lay: BlockLayout, scale: float):
    """dq, dk, dv of ``_torch_budget`` (the layout's token mask as -inf scores; autograd is off inside an op)."""
    hq, hkv, nq = q.shape[1], k.shape[1], q.shape[2]
    g = hq // hkv
    cdt = torch.promote_types(q.dtype, torch.float32)
    mask = lay.token_mask().to(q.device)  # [1 or Hkv, Nq, Nk]: a per-KV-head budget holds for its g query heads

    def grouped(x):  # [1, Hq, Nq, D] -> [Hkv, g, Nq, D]
        return x[0].to(cdt).reshape(hkv, g, nq, -1)

    qf, kf, vf = grouped(q), k[0].to(cdt), v[0].to(cdt)
    s = (torch.matmul(qf, kf[:, None].transpose(-1, -2)) * scale).masked_fill(~mask[:, None], float("-inf"))
    dq, dk, dv = attention_backward(qf, kf, vf, grouped(grad_out), grouped(out),
                                    lse[0].to(cdt).reshape(hkv, g, nq), s, scale)
    return dq.reshape(q.shape).to(q.dtype), dk[None].to(k.dtype), dv[None].to(v.dtype)


@torch.library.custom_op("replaycompile::block_sparse_attention", mutates_args=())
def block_sparse_attention(q: Tensor, k: Tensor, v: Tensor, layout: list[Tensor], block_q: int, block_k: int,
                           scale: float, use_triton: bool) -> tuple[Tensor, Tensor]:
    """Causal block-sparse attention over a layout's blocks (a Sparrow budget): (out, lse float32).

    q [1, Hq, Nq, D], k/v [1, Hkv, Nk, D]; query i sits at position ``i + Nk - Nq``. ``layout`` is
    ``BlockLayout.tensors()`` for blocks (block_q, block_k), e.g. from ``causal_block_mask(..., selected)``.
    ``use_triton``: the Triton kernels (interpreted for CPU tensors); False on CPU runs a dense-mask PyTorch path
    instead (small inputs only: O(Nq x Nk) memory). CUDA tensors always take the kernels.
    """
    _check_budget(q, k, v, layout, block_q, block_k)
    lay = BlockLayout.from_tensors(layout, block_q, block_k, q.shape[2], k.shape[2])
    if not use_triton and q.device.type == "cpu":
        return _torch_budget(q, k, v, lay, scale)
    return forward(q, k, v, lay, scale)


@block_sparse_attention.register_fake
def _block_sparse_attention_fake(q, k, v, layout, block_q, block_k, scale, use_triton):
    _check_budget(q, k, v, layout, block_q, block_k)
    return q.new_empty(q.shape), q.new_empty(q.shape[:3], dtype=torch.float32)


@torch.library.custom_op("replaycompile::block_sparse_attention_backward", mutates_args=())
def block_sparse_attention_backward(grad_out: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor,
                                    layout: list[Tensor], block_q: int, block_k: int,
                                    scale: float, use_triton: bool) -> tuple[Tensor, Tensor, Tensor]:
    lay = BlockLayout.from_tensors(layout, block_q, block_k, q.shape[2], k.shape[2])
    if not use_triton and q.device.type == "cpu":
        return _torch_budget_backward(grad_out, q, k, v, out, lse, lay, scale)
    return backward(grad_out.contiguous(), q, k, v, out, lse, lay, scale)


@block_sparse_attention_backward.register_fake
def _block_sparse_attention_backward_fake(grad_out, q, k, v, out, lse, layout, block_q, block_k, scale,
                                          use_triton):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _bs_setup(ctx, inputs, output):
    q, k, v, layout, block_q, block_k, scale, use_triton = inputs
    ctx.save_for_backward(q, k, v, output[0], output[1], *layout)
    ctx.meta = (block_q, block_k, scale, use_triton)
    ctx.mark_non_differentiable(output[1])


def _bs_backward(ctx, grad_out, grad_lse):
    q, k, v, out, lse, *layout = ctx.saved_tensors
    dq = dk = dv = None
    if grad_out is not None and any(ctx.needs_input_grad[:3]):
        dq, dk, dv = block_sparse_attention_backward(grad_out, q, k, v, out, lse, layout, *ctx.meta)
    return dq, dk, dv, [None] * 6, None, None, None, None


block_sparse_attention.register_autograd(_bs_backward, setup_context=_bs_setup)

# Under autocast the op is cast as the SDPA it replaces: q, k, v to the autocast dtype (kernels/autocast.py)
_autocast.register("replaycompile::block_sparse_attention", cast=("q", "k", "v"))
_autocast.register("replaycompile::block_sparse_attention_backward")
