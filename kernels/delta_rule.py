"""The gated delta rule, the scan of a Gated DeltaNet layer (Qwen3-Next, Qwen3.5, OLMo hybrid): our own, so the
tree scan and its reference do not call into transformers' modelling code, whose calling contract moves between
versions (how key heads are matched to value heads changed after 5.10).

``recurrent_gated_delta_rule`` is the specification, one token at a time::

    S <- exp(g_t) * S                       (decay; g_t <= 0 in log space)
    u_t = beta_t * (v_t - S^T k_t)          (the delta: what the state mispredicts for k_t)
    S <- S + k_t u_t^T
    o_t = S^T q_t

with q and k L2-normalised (optional) and q scaled by ``1/sqrt(d_k)``. ``chunk_gated_delta_rule`` computes the same
in chunks of ``chunk_size`` tokens (the UT-transform form of Yang, Kautz and Hatamizadeh, "Gated Delta Networks",
2024): inside a chunk, with ``G`` the cumulative log decay from the chunk's start and ``S0`` the state entering it,

    (I + A) U = V_beta - (K_beta * exp(G)) S0,   A_ij = beta_i exp(G_i - G_j) k_i.k_j  (j < i)
    O = (Q * exp(G)) S0 + ((Q K^T) * exp(G_i - G_j), j <= i) U
    S_end = exp(G_last) S0 + (K * exp(G_last - G))^T U

solving the unit lower-triangular system with ``torch.linalg.solve_triangular``. Both compute in float32, or
float64 for float64 inputs (transformers' fallback computes in float32 whatever the input), and return the output
in the input's dtype. Layouts are the layers' own: ``q``, ``k`` ``[B, T, Hk, dk]``, ``v`` ``[B, T, Hv, dv]``,
``g``, ``beta`` ``[B, T, Hv]``; each key head serves ``Hv / Hk`` consecutive value heads; the state is
``[B, Hv, dk, dv]``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def l2_normalize(x: Tensor, eps: float = 1e-6) -> Tensor:
    """``x / sqrt(|x|^2 + eps)`` over the last axis (the layers' and FLA's ``l2norm``, eps inside the root)."""
    return x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + eps)


def _heads_first(q, k, v, g, beta, use_qk_l2norm: bool):
    """q, k repeated to the value heads; everything ``[B, H, T, ...]`` in the compute dtype; q normalised and
    scaled, k normalised."""
    dtype = torch.promote_types(q.dtype, torch.float32)
    r = v.shape[2] // q.shape[2]
    if r > 1:
        q, k = q.repeat_interleave(r, dim=2), k.repeat_interleave(r, dim=2)
    q, k, v, g, beta = (x.transpose(1, 2).to(dtype, memory_format=torch.contiguous_format)
                        for x in (q, k, v, g, beta))
    if use_qk_l2norm:
        q, k = l2_normalize(q), l2_normalize(k)
    return q * q.shape[-1] ** -0.5, k, v, g, beta


def recurrent_gated_delta_rule(q: Tensor, k: Tensor, v: Tensor, g: Tensor, beta: Tensor,
                               initial_state: Tensor | None = None, output_final_state: bool = False,
                               use_qk_l2norm_in_kernel: bool = False) -> tuple[Tensor, Tensor | None]:
    """The specification: (output ``[B, T, Hv, dv]``, final state or None), one token at a time."""
    out_dtype = q.dtype
    q, k, v, g, beta = _heads_first(q, k, v, g, beta, use_qk_l2norm_in_kernel)
    b, h, t, dk = k.shape
    dv = v.shape[-1]
    state = q.new_zeros(b, h, dk, dv) if initial_state is None else initial_state.to(q.dtype)
    outs = []
    for i in range(t):
        state = state * g[:, :, i].exp()[..., None, None]
        predicted = (state * k[:, :, i, :, None]).sum(-2)  # S^T k
        u = beta[:, :, i, None] * (v[:, :, i] - predicted)
        state = state + k[:, :, i, :, None] * u[:, :, None, :]
        outs.append((state * q[:, :, i, :, None]).sum(-2))
    out = torch.stack(outs, dim=2) if outs else v.new_zeros(b, h, 0, dv)
    return out.transpose(1, 2).contiguous().to(out_dtype), (state if output_final_state else None)


def chunk_gated_delta_rule(q: Tensor, k: Tensor, v: Tensor, g: Tensor, beta: Tensor, chunk_size: int = 64,
                           initial_state: Tensor | None = None, output_final_state: bool = False,
                           use_qk_l2norm_in_kernel: bool = False) -> tuple[Tensor, Tensor | None]:
    """The same as :func:`recurrent_gated_delta_rule`, a chunk of ``chunk_size`` tokens at a time."""
    out_dtype = q.dtype
    q, k, v, g, beta = _heads_first(q, k, v, g, beta, use_qk_l2norm_in_kernel)
    b, h, t, dk = k.shape
    dv = v.shape[-1]
    c = chunk_size
    pad = (c - t % c) % c  # zero tokens after the end: g = 0 and beta = 0 leave the state as it is
    q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
    g, beta = (F.pad(x, (0, pad)) for x in (g, beta))
    n = (t + pad) // c
    k_beta = k * beta[..., None]
    v_beta = v * beta[..., None]
    q, k, k_beta, v_beta = (x.reshape(b, h, n, c, x.shape[-1]) for x in (q, k, k_beta, v_beta))
    cum = g.reshape(b, h, n, c).cumsum(dim=-1)  # G: log decay from the chunk's start, inclusive
    above = torch.ones(c, c, dtype=torch.bool, device=q.device).triu(1)
    # exp(G_i - G_j) where j <= i, 0 above the diagonal (masked before the exp: no overflow)
    decay = (cum[..., :, None] - cum[..., None, :]).masked_fill(above, float("-inf")).exp()
    # A: the unit-triangular solve reads its strictly lower triangle only; (I + A) [W | Kc] = [V_beta | K_beta e^G]
    a = (k_beta @ k.transpose(-1, -2)) * decay
    w = torch.linalg.solve_triangular(a, v_beta, upper=False, unitriangular=True)
    k_decayed = torch.linalg.solve_triangular(a, k_beta * cum.exp()[..., None], upper=False, unitriangular=True)
    state = q.new_zeros(b, h, dk, dv) if initial_state is None else initial_state.to(q.dtype)
    outs = []
    for i in range(n):
        qi, ki, cum_i = q[:, :, i], k[:, :, i], cum[:, :, i]
        attn = ((qi @ ki.transpose(-1, -2)) * decay[:, :, i]).masked_fill(above, 0.0)
        u = w[:, :, i] - k_decayed[:, :, i] @ state  # U = W - Kc S0
        outs.append((qi * cum_i.exp()[..., None]) @ state + attn @ u)
        last = cum_i[..., -1:]
        state = state * last.exp()[..., None] + (ki * (last - cum_i).exp()[..., None]).transpose(-1, -2) @ u
    out = torch.stack(outs, dim=2).reshape(b, h, n * c, dv)[:, :, :t]
    return out.transpose(1, 2).contiguous().to(out_dtype), (state if output_final_state else None)
