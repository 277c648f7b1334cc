"""Reference Mamba-2 mixer (HF Nemotron-H's ``NemotronHMamba2Mixer``, Granite 4's, no cache) computed row by row:
the specification ``ssd_tree.mamba2_tree`` is tested against, its fallback, and what the backend checks a layer
against before running it on the prefix tree.

``mamba2_rows`` is the mixer's forward as eager runs it on ``[B, T, hidden]`` rows: padded positions zeroed, the
fused input projection split into gate | x,B,C | dt, the causal depthwise conv1d (zero history, its bias) with
SiLU, padded positions zeroed again, dt through softplus and the layer's clamp, the chunked SSD scan from a zero
state, the D skip, the gated grouped RMS norm (gate before the norm) and the output projection.

``ssd_scan`` is the state-space duality scan of the Mamba-2 paper (Dao & Gu 2024, "minimal SSD"), written here
rather than called from transformers: the modules' copies move between transformers releases (issue 31), and
the tree scan needs its initial and final states on every version.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor


@dataclass(frozen=True)
class Mamba2Dims:
    """The sizes and constants of one Mamba-2 mixer that its weights' shapes do not all say."""

    num_heads: int
    head_dim: int
    n_groups: int       # B/C groups (heads share them in runs of num_heads // n_groups)
    state_size: int
    kernel_size: int
    norm_groups: int    # the gated norm's groups (intermediate // group_size)
    dt_min: float
    dt_max: float
    norm_eps: float
    chunk: int = 64     # the scan's block length: any value gives the same sums up to rounding


@dataclass(frozen=True)
class Mamba2Weights:
    in_proj: Tensor         # [intermediate + conv_dim + num_heads, hidden] (no bias)
    conv: Tensor            # [conv_dim, 1, kernel_size]
    conv_bias: Tensor | None  # [conv_dim]
    dt_bias: Tensor         # [num_heads]
    A_log: Tensor           # [num_heads]
    D: Tensor               # [num_heads]
    norm: Tensor            # [intermediate]
    out_proj: Tensor        # [hidden, intermediate] (no bias)


def mamba2_weights(ws: list) -> Mamba2Weights:
    """From the op's list: 8 weights, or 7 without the conv's bias."""
    ws = list(ws)
    if len(ws) == 7:
        ws.insert(2, None)
    return Mamba2Weights(*ws)


def mamba2_dims(ws: list, n_groups: int, norm_groups: int, dt_min: float, dt_max: float, norm_eps: float
                ) -> Mamba2Dims:
    w = mamba2_weights(ws)
    heads, inter, conv_dim = int(w.dt_bias.shape[0]), int(w.norm.shape[0]), int(w.conv.shape[0])
    return Mamba2Dims(heads, inter // heads, n_groups, (conv_dim - inter) // (2 * n_groups), int(w.conv.shape[-1]),
                      norm_groups, dt_min, dt_max, norm_eps)


def project(x: Tensor, w: Mamba2Weights, d: Mamba2Dims):
    """Per token: (gate [..., I], x|B|C before the conv [..., conv_dim], dt after softplus and clamp [..., H])."""
    inter = d.num_heads * d.head_dim
    conv_dim = int(w.conv.shape[0])
    gate, xbc, dt = F.linear(x, w.in_proj).split([inter, conv_dim, d.num_heads], dim=-1)
    dt = F.softplus(dt + w.dt_bias.to(dt.dtype)).clamp(min=d.dt_min, max=d.dt_max)
    return gate, xbc, dt


def split_xbc(xbc: Tensor, d: Mamba2Dims):
    """The conv's output [..., conv_dim] as (x [..., H, P], B [..., H, N], C [..., H, N]) in float32, B and C
    repeated from their groups to the heads."""
    lead = xbc.shape[:-1]
    inter, gn = d.num_heads * d.head_dim, d.n_groups * d.state_size
    xs, B, C = torch.split(xbc, [inter, gn, gn], dim=-1)
    rep = d.num_heads // d.n_groups
    B = _acc(B.reshape(*lead, d.n_groups, d.state_size)).repeat_interleave(rep, dim=-2)
    C = _acc(C.reshape(*lead, d.n_groups, d.state_size)).repeat_interleave(rep, dim=-2)
    return _acc(xs.reshape(*lead, d.num_heads, d.head_dim)), B, C


def _acc(t: Tensor) -> Tensor:
    """The scan's accumulation dtype: float32 (as eager's ``.float()``), float64 kept (the tests' exact runs)."""
    return t if t.dtype == torch.float64 else t.float()


def _segment_sums(a: Tensor) -> Tensor:
    """a [..., Q] -> [..., Q, Q]: entry (l, s) = a[s+1] + ... + a[l] for s <= l, -inf above the diagonal (summed
    by a masked cumsum, not as a difference of cumsums, for precision)."""
    Q = a.shape[-1]
    z = a[..., None].expand(*a.shape, Q)  # (j, s) = a[j]
    strict = torch.tril(torch.ones(Q, Q, dtype=torch.bool, device=a.device), diagonal=-1)
    seg = z.masked_fill(~strict, 0).cumsum(-2)
    incl = torch.tril(torch.ones(Q, Q, dtype=torch.bool, device=a.device), diagonal=0)
    return seg.masked_fill(~incl, float("-inf"))


def ssd_scan(x: Tensor, dt: Tensor, A: Tensor, B: Tensor, C: Tensor, D: Tensor, chunk: int,
             initial_state: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """The Mamba-2 scan in ``x``'s dtype (float32 or float64): ``x`` [b, L, H, P], ``dt`` [b, L, H] (after softplus and clamp), ``A`` [H]
    (negative), ``B``/``C`` [b, L, H, N], ``D`` [H], ``initial_state`` [b, H, P, N] or None (zero) -> (y [b, L,
    H, P], final state [b, H, P, N]). State recurrence: S_t = exp(A dt_t) S_{t-1} + dt_t x_t B_t^T; y_t = S_t C_t +
    D x_t. A token with dt = 0 and x = B = 0 leaves the state unchanged (the tree scan pads pieces with them)."""
    b, L, H, P = x.shape
    N = B.shape[-1]
    pad = (-L) % chunk
    xd = x * _acc(dt)[..., None]
    a = _acc(A) * _acc(dt)
    if pad:
        xd, B_, C_ = (F.pad(t, (0, 0, 0, 0, 0, pad)) for t in (xd, B, C))
        a = F.pad(a, (0, 0, 0, pad))
    else:
        B_, C_ = B, C
    c = (L + pad) // chunk
    xd = xd.reshape(b, c, chunk, H, P)
    B_ = B_.reshape(b, c, chunk, H, N)
    C_ = C_.reshape(b, c, chunk, H, N)
    a = a.reshape(b, c, chunk, H).permute(0, 1, 3, 2)           # [b, c, H, Q]
    cum = a.cumsum(-1)
    # within a chunk: y_l += sum_{s <= l} (C_l . B_s) exp(a_{s+1} + .. + a_l) dt_s x_s
    decay = torch.exp(_segment_sums(a))                         # [b, c, H, l, s]
    scores = torch.einsum("bclhn,bcshn->bchls", C_, B_) * decay
    y = torch.einsum("bchls,bcshp->bclhp", scores, xd)
    # each chunk's own contribution to the state at its end
    to_end = torch.exp(cum[..., -1:] - cum)                     # [b, c, H, Q]
    states = torch.einsum("bclhn,bchl,bclhp->bchpn", B_, to_end, xd)
    # across chunks, in order (few chunks: a loop, autograd through it)
    S = x.new_zeros((b, H, P, N)) if initial_state is None else initial_state.to(x.dtype)
    offs = []
    for i in range(c):
        offs.append(torch.einsum("blhn,bhpn->blhp", C_[:, i], S) * torch.exp(cum[:, i]).transpose(1, 2)[..., None])
        S = S * torch.exp(cum[:, i, :, -1])[..., None, None] + states[:, i]
    y = (y + torch.stack(offs, 1)).reshape(b, c * chunk, H, P)[:, :L]
    return y + _acc(D)[:, None] * x, S


def gated_norm_out(y: Tensor, gate: Tensor, w: Mamba2Weights, d: Mamba2Dims, dtype: torch.dtype) -> Tensor:
    """y [..., H, P] (float32) -> the gated grouped RMS norm (gate first, in float32) and the output projection
    in the layer's input dtype."""
    h = y.reshape(*y.shape[:-2], -1)
    h = h * F.silu(_acc(gate))
    lead = h.shape[:-1]
    g = h.reshape(*lead, d.norm_groups, -1)
    g = g * torch.rsqrt(g.pow(2).mean(-1, keepdim=True) + d.norm_eps)
    h = w.norm * g.reshape(*lead, -1).to(y.dtype)
    return F.linear(h.to(dtype), w.out_proj)


def mamba2_rows(x: Tensor, mask: Tensor | None, w: Mamba2Weights, d: Mamba2Dims) -> Tensor:
    """The mixer on rows: ``x`` [B, T, hidden], ``mask`` [B, T] (1 real, 0 pad) or None; [B, T, hidden]."""
    dtype = x.dtype
    if mask is not None:
        x = (x * mask[:, :, None]).to(dtype)
    T = x.shape[1]
    gate, xbc, dt = project(x, w, d)
    conv = F.conv1d(xbc.transpose(1, 2).to(w.conv.dtype), w.conv, w.conv_bias, padding=d.kernel_size - 1,
                    groups=xbc.shape[-1])[:, :, :T]
    xbc = F.silu(conv).to(xbc.dtype).transpose(1, 2)
    if mask is not None:
        xbc = (xbc * mask[:, :, None]).to(xbc.dtype)
    xs, B, C = split_xbc(xbc, d)
    y, _ = ssd_scan(xs, dt, -torch.exp(_acc(w.A_log)), B, C, w.D, d.chunk)
    return gated_norm_out(y, gate, w, d, dtype)
