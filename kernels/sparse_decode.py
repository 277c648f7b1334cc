"""Sparrow decode attention: a budget node and a budgeted sparse decode op, with a CPU path and a Triton kernel.

``replaycompile::sparrow_budget(mask, table, bucket_tokens)`` is the schedule node of a decode graph: from the
step's attention mask it reads the KV length, and from the page table (a graph input, so a recalibrated table
does not recompile) the pages to select at that length. Every sparse layer's
``replaycompile::sparse_decode`` takes its result.

``sparse_decode`` follows ``sparse_decode_reference.py``: pages of ``page_size`` keys are scored against the GQA
group's mean query, by default with a Quest-style upper bound on q.k over the page's keys (``"bound"``:
``sum_d max(q_d max_k k_d, q_d min_k k_d)``), or by the page's centroid (``"centroid"``: mean key . query, which
dilutes one matching key by the page's other keys, so a needle's page sinks in rank as the cache grows); the sink
and local pages are always kept, plus the top-k of the rest; attention runs over the kept pages' visible keys.
When the budget covers every page the op runs dense decode attention (the same code as ``dense_decode``), so a
full budget equals dense decoding exactly.

Page statistics are kept incrementally: a per-cache ``PageState`` holds each page's key sum, count, elementwise
key max and min, and adds only the tokens written since the last step (the first step after prefill reads the
prompt once). The state is a memo of a pure function of the cache (so the op is functional,
``mutates_args=()``): it is checked against the cache (the first key and the last key summed) every step and
rebuilt when the cache holds another sequence.
It lives in a ``SparseDecodeState`` that the caller owns, one per KV cache: ``rollout.DecodeSession`` makes one
and activates it around each step (``with state.active(): ...``), with the CPU path's scratch buffers. A step
run outside any active state (a decode loop of the user's own) uses the process-wide ``default_state()``;
``reset_page_state()`` empties whichever state is current.

Paths: on CPU the kept pages are gathered into buffers allocated once per shape and attended with PyTorch's
SDPA, each GQA group's query heads folded into the query dimension (no repeated K/V); on CUDA a Triton split-K
kernel reads the kept pages in place (``_decode_kernel``), tested on CPU under the Triton interpreter.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging

import torch
import torch.nn.functional as F
from torch import Tensor

from . import autocast as _autocast
from . import triton_build as _tb
from .block_sparse import PAGE_SCORES, budget_bucket, cdiv, mask_visible, next_power_of_2

triton = tl = None  # bound by triton_build on the first kernel build: the CPU paths import no Triton

log = logging.getLogger("replaycompile")

__all__ = ["sparrow_budget", "sparse_decode", "dense_decode", "select_pages", "SparseDecodeState", "default_state",
           "reset_page_state", "visible_keys", "cache_copies", "page_scores", "PAGE_SCORES"]


def visible_keys(mask: Tensor, batch: int) -> Tensor:
    """bool [B, L] of keys the (single) query may see, from an SDPA mask [B|1, 1, 1, L] (bool, or additive
    float with 0 for visible)."""
    m = mask.reshape(mask.shape[0], -1) if mask.dim() > 1 else mask[None]
    return mask_visible(m).expand(batch, -1)


def _kv_len(visible: Tensor) -> int:
    any_row = visible.any(0)
    idx = torch.nonzero(any_row)
    return int(idx[-1]) + 1 if idx.numel() else 0


# ------------------------------------------------------------------------------------------------ budget node


@torch.library.custom_op("replaycompile::sparrow_budget", mutates_args=())
def sparrow_budget(mask: Tensor, table: Tensor, bucket_tokens: int) -> Tensor:
    """int64 [2] on CPU: (KV length, pages to select by score) for this decode step."""
    kv_len = _kv_len(visible_keys(mask, mask.shape[0]))
    bucket = budget_bucket(kv_len, bucket_tokens, table.shape[0])  # as SparrowSchedule.bucket
    return torch.tensor([kv_len, int(table[bucket])], dtype=torch.int64)


@sparrow_budget.register_fake
def _sparrow_budget_fake(mask, table, bucket_tokens):
    return torch.empty(2, dtype=torch.int64, device="cpu")


# ------------------------------------------------------------------------------------------------ page state


class PageState:
    """Per-page key sums, visible-key counts and elementwise key max / min of one KV cache tensor, up to ``upto``
    tokens. A page without a visible key has max -inf and min +inf (the identities of max and min)."""

    def __init__(self, k: Tensor, page_size: int):
        b, hkv, length, d = k.shape
        self.page_size = page_size
        n = cdiv(length, page_size)
        self.sums = torch.zeros(b, hkv, n, d, dtype=torch.float32, device=k.device)
        self.counts = torch.zeros(b, n, dtype=torch.float32, device=k.device)
        self.cent = torch.zeros(b, hkv, n, d, dtype=torch.float32, device=k.device)  # sums / counts
        self.kmax = torch.full((b, hkv, n, d), float("-inf"), dtype=torch.float32, device=k.device)
        self.kmin = torch.full((b, hkv, n, d), float("inf"), dtype=torch.float32, device=k.device)
        self.upto = 0
        self.first = self.last = None

    def _matches(self, k: Tensor) -> bool:
        return (self.upto > 0 and torch.equal(k[:, :, 0], self.first)
                and torch.equal(k[:, :, self.upto - 1], self.last))

    def update(self, k: Tensor, visible: Tensor, kv_len: int) -> None:
        if self.upto and (kv_len < self.upto or not self._matches(k)):
            self.sums.zero_()
            self.counts.zero_()
            self.cent.zero_()
            self.kmax.fill_(float("-inf"))
            self.kmin.fill_(float("inf"))
            self.upto = 0
        s, e = self.upto, kv_len
        if e <= s:
            return
        pages = torch.arange(s, e, device=k.device) // self.page_size
        vis = visible[:, s:e].to(torch.float32)
        self.sums.index_add_(2, pages, k[:, :, s:e].to(torch.float32) * vis[:, None, :, None])
        self.counts.index_add_(1, pages, vis)
        p0, p1 = s // self.page_size, cdiv(e, self.page_size)  # only these pages changed
        self._update_bounds(k, visible, s, e, p0, p1)
        self.cent[:, :, p0:p1] = self.sums[:, :, p0:p1] / self.counts[:, None, p0:p1, None].clamp_min(1.0)
        self.upto = e
        self.first = k[:, :, 0].clone()
        self.last = k[:, :, e - 1].clone()

    def _update_bounds(self, k: Tensor, visible: Tensor, s: int, e: int, p0: int, p1: int) -> None:
        """Fold tokens [s, e) into pages p0..p1-1's key max / min, reducing the pages' whole token ranges: max and
        min are idempotent, so the tokens before s that the first page already holds change nothing, and one
        reshape-and-reduce is faster on CPU than scatter_reduce_ (a 4K prefill, B 4, Hkv 2, D 64, 1 thread: 4-8 ms
        against 26, under load)."""
        ps, length = self.page_size, k.shape[2]
        a, z = p0 * ps, min(p1 * ps, length)
        kk = k[:, :, a:z].to(torch.float32)
        ok = visible[:, a:z].clone()
        ok[:, e - a:] = False  # not written yet
        if p1 * ps > z:  # a cache not sized in whole pages: pad the last page
            kk = F.pad(kk, (0, 0, 0, p1 * ps - z))
            ok = F.pad(ok, (0, p1 * ps - z))
        b, hkv, _, d = kk.shape
        kk = kk.reshape(b, hkv, p1 - p0, ps, d)
        hidden = ~ok.reshape(b, 1, p1 - p0, ps, 1)  # invisible keys enter as the reduction's identity
        self.kmax[:, :, p0:p1] = torch.maximum(self.kmax[:, :, p0:p1], kk.masked_fill(hidden, float("-inf")).amax(3))
        self.kmin[:, :, p0:p1] = torch.minimum(self.kmin[:, :, p0:p1], kk.masked_fill(hidden, float("inf")).amin(3))

    def centroids(self, n_pages: int) -> tuple[Tensor, Tensor]:
        return self.cent[:, :, :n_pages], self.counts[:, :n_pages] > 0

    def bounds(self, n_pages: int) -> tuple[Tensor, Tensor, Tensor]:
        return self.kmax[:, :, :n_pages], self.kmin[:, :, :n_pages], self.counts[:, :n_pages] > 0


class SparseDecodeState:
    """What the sparse decode op keeps between the steps of one KV cache: per attention site the page
    statistics (``PageState``), and the CPU path's scratch buffers. The caller owns it (``rollout.DecodeSession``
    holds one per cache) and makes it current around a step with ``active()``."""

    def __init__(self):
        self.pages: dict = {}
        self.buffers: dict = {}
        self.cache_copies = 0  # steps that padded and copied their cache (``_warn_cache_copy``)

    def clear(self) -> None:
        self.pages.clear()
        self.buffers.clear()

    @contextlib.contextmanager
    def active(self):
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)

    def page_state(self, k: Tensor, page_size: int, site: int) -> PageState:
        # keyed by the attention site, not the buffer: inside a compiled graph the cache may reach the op as a
        # fresh functional copy each step
        key = (site, tuple(k.shape), k.dtype, k.device, page_size)
        st = self.pages.get(key)
        if st is None:
            if len(self.pages) > 4096:  # caches come and go across rollouts; keep the memo bounded
                self.pages.clear()
            st = self.pages[key] = PageState(k, page_size)
        return st

    def buffer(self, name: str, shape, dtype, device) -> Tensor:
        """A scratch tensor reused across steps: fresh multi-MB allocations per step cost 2-4x on CPU."""
        key = (name, tuple(shape), dtype, device)
        buf = self.buffers.get(key)
        if buf is None:
            if len(self.buffers) > 256:
                self.buffers.clear()
            buf = self.buffers[key] = torch.empty(shape, dtype=dtype, device=device)
        return buf


_DEFAULT = SparseDecodeState()
_CURRENT: contextvars.ContextVar = contextvars.ContextVar("replaycompile_sparse_decode_state", default=None)


def default_state() -> SparseDecodeState:
    """The state of decode steps run outside any caller's ``SparseDecodeState.active()``."""
    return _DEFAULT


def current_state() -> SparseDecodeState:
    return _CURRENT.get() or _DEFAULT


def reset_page_state() -> None:
    """Forget the current state's page centroids and buffers (the active one, else the default state). A new
    ``DecodeSession`` and each clone start with a state of their own, so rollouts need not call this."""
    current_state().clear()


# ------------------------------------------------------------------------------------------------ selection


def _check_page_score(page_score: str) -> None:
    if page_score not in PAGE_SCORES:
        raise ValueError(f"sparrow: unknown page score {page_score!r}; known: {', '.join(PAGE_SCORES)}")


def page_scores(q: Tensor, st: PageState, n_pages: int, page_score: str = "bound") -> tuple[Tensor, Tensor]:
    """float32 [B, Hkv, n_pages] page scores against the GQA group's mean query (a page without a visible key is
    not scored: mask it by the second result, bool [B, n_pages] "has a visible key")."""
    b, hq, _, d = q.shape
    hkv = st.sums.shape[1]
    qm = q.reshape(b, hkv, hq // hkv, d).to(torch.float32).mean(2)
    if page_score == "centroid":
        cent, has = st.centroids(n_pages)
        return score_pages(qm, cent, None, "centroid"), has
    kmax, kmin, has = st.bounds(n_pages)
    return score_pages(qm, kmax, kmin, "bound"), has


def score_pages(q: Tensor, keys: Tensor, kmin: Tensor | None, page_score: str,
                equation: str = "bhpd,bhd->bhp") -> Tensor:
    """The page scores' rule, for decode (one query per row, the default ``equation``: pages [B, Hkv, P, D],
    queries [B, Hkv, D]) and for training's query blocks (``distill.training_selection``: another equation).
    "centroid": q . (the page's mean visible key), ``keys`` the centroids. "bound": an upper bound of q . k over
    the page's keys, sum_d max(q_d kmax_d, q_d kmin_d) = q+ . kmax + q- . kmin (kmax >= kmin), ``keys`` the
    per-dimension maxima: two matrix-vector products, no [..., P, D] temporary. An empty page gives nan or inf;
    callers mask it."""
    _check_page_score(page_score)
    if page_score == "centroid":
        return torch.einsum(equation, keys, q)  # (a bmm with N=1 is 4x slower in decode)
    return torch.einsum(equation, keys, q.clamp_min(0)) + torch.einsum(equation, kmin, q.clamp_max(0))


def select_pages(q: Tensor, k: Tensor, visible: Tensor, kv_len: int, topk: int, page_size: int, sink: int,
                 local: int, state_key: int = -1, state: SparseDecodeState | None = None,
                 page_score: str = "bound") -> Tensor:
    """int64 [B, Hkv, S] kept page ids per (row, KV head), ascending; S = min(sink + local + topk, pages).

    Pages are scored by ``page_score`` (``page_scores``). Reserved pages score +inf and pages without a visible
    key -inf, so one top-S picks the reserved pages, then the best of the rest, never a page twice. (A short row
    may pick an empty page: its keys are all invisible.) ``state_key`` names the attention site whose page
    statistics ``state`` (default: the current state) keeps.
    """
    _check_page_score(page_score)
    n_pages = cdiv(kv_len, page_size)
    st = (state or current_state()).page_state(k, page_size, state_key)
    st.update(k, visible, kv_len)
    scores, has = page_scores(q, st, n_pages, page_score)
    ids = torch.arange(n_pages, device=q.device)
    first = torch.where(has.any(1), has.to(torch.int8).argmax(1), 0)  # first page with a visible key, per row
    reserved = ((ids[None] >= first[:, None]) & (ids[None] < first[:, None] + sink)) | (ids[None] >= n_pages - local)
    scores = scores.masked_fill(~has[:, None], float("-inf")).masked_fill(reserved[:, None], float("inf"))
    s = min(sink + local + topk, n_pages)
    return scores.topk(s, dim=-1, sorted=False).indices.sort(-1).values


# ------------------------------------------------------------------------------------------------ CPU paths


def dense_decode(q: Tensor, k: Tensor, v: Tensor, visible: Tensor, kv_len: int, scale: float) -> Tensor:
    """Dense decode attention over the first kv_len cache slots, GQA folded into the query dimension."""
    b, hq, _, d = q.shape
    hkv = k.shape[1]
    qf = q.reshape(b, hkv, hq // hkv, d)
    mask = visible[:, None, None, :kv_len]
    out = F.scaled_dot_product_attention(qf, k[:, :, :kv_len], v[:, :, :kv_len], attn_mask=mask, scale=scale)
    return out.reshape(b, hq, 1, v.shape[-1])


_warned_copies: set = set()


def cache_copies() -> int:
    """How many sparse decode calls of the current state (``SparseDecodeState``: the active one, else the
    default) padded and copied their KV cache (a cache not sized in whole pages, or not contiguous): each such
    call reads the whole cache twice."""
    return current_state().cache_copies


def _warn_cache_copy(k: Tensor, v: Tensor, page_size: int) -> None:
    current_state().cache_copies += 1
    length = k.shape[2]
    why = []
    if length % page_size:
        why.append(f"its length {length} is not a multiple of the page size {page_size}")
    if not (k.is_contiguous() and v.is_contiguous()):
        why.append("it is not contiguous")
    key = (tuple(k.shape), page_size, tuple(why))
    if key not in _warned_copies:
        _warned_copies.add(key)
        log.warning("sparrow: the KV cache %s is padded and copied on every sparse decode step because %s: size "
                    "the static cache in whole pages (max_cache_len a multiple of %d) and keep it contiguous",
                    list(k.shape), " and ".join(why), page_size)


def _gather_decode(q: Tensor, k: Tensor, v: Tensor, visible: Tensor, pages: Tensor, page_size: int,
                   scale: float, state: SparseDecodeState | None = None) -> Tensor:
    b, hq, _, d = q.shape
    hkv, length, dv = k.shape[1], k.shape[2], v.shape[-1]
    s = pages.shape[-1]
    if length % page_size or not (k.is_contiguous() and v.is_contiguous()):
        # the page gathers below view the cache as whole contiguous pages: pad and copy it (every step)
        _warn_cache_copy(k, v, page_size)
        n_full = cdiv(length, page_size) * page_size
        k = torch.nn.functional.pad(k, (0, 0, 0, n_full - length)).contiguous()
        v = torch.nn.functional.pad(v, (0, 0, 0, n_full - length)).contiguous()
        visible = torch.nn.functional.pad(visible, (0, n_full - length))
        length = n_full
    n_pages = length // page_size
    # one index per page: rows of a [B * Hkv * n_pages, page_size * D] view of the cache
    flat = (pages + (torch.arange(b * hkv, device=q.device) * n_pages).reshape(b, hkv, 1)).reshape(-1)
    st = state or current_state()
    kg = torch.index_select(k.view(-1, page_size * d), 0, flat,
                            out=st.buffer("k", (flat.numel(), page_size * d), k.dtype, k.device))
    vg = torch.index_select(v.view(-1, page_size * dv), 0, flat,
                            out=st.buffer("v", (flat.numel(), page_size * dv), v.dtype, v.device))
    vis_rows = (pages + (torch.arange(b, device=q.device) * n_pages).reshape(b, 1, 1)).reshape(-1)
    vis = visible.reshape(b * n_pages, page_size).index_select(0, vis_rows).reshape(b, hkv, 1, s * page_size)
    qf = q.reshape(b, hkv, hq // hkv, d)
    out = F.scaled_dot_product_attention(qf, kg.view(b, hkv, s * page_size, d), vg.view(b, hkv, s * page_size, dv),
                                         attn_mask=vis, scale=scale)
    return out.reshape(b, hq, 1, dv)


# ------------------------------------------------------------------------------------------------ Triton kernel


def _decode_kernel(Q, K, V, VIS, PAGES, O_ACC, O_M, O_L,
                   s_qb, s_qh, s_qd, s_kb, s_kh, s_kn, s_kd, s_vb, s_vh, s_vn, s_vd, s_visb,
                   n_sel, length, pages_per_split, scale_log2,
                   GROUP: tl.constexpr, BLOCK_G: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                   PAGE: tl.constexpr, PAGES_PER_ITER: tl.constexpr, N_SPLIT: tl.constexpr, UPCAST: tl.constexpr):
    """One (row, KV head, split): online softmax over its share of the kept pages; unnormalised partials out."""
    b = tl.program_id(0)
    h = tl.program_id(1)
    sp = tl.program_id(2)
    hkv = tl.num_programs(1)
    BLOCK_N: tl.constexpr = PAGE * PAGES_PER_ITER
    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, BLOCK_D)
    offs_n = tl.arange(0, BLOCK_N)
    g_valid = offs_g < GROUP
    d_valid = offs_d < HEAD_DIM
    q = _tb.load_tile(Q + b * s_qb, h * GROUP + offs_g, offs_d, s_qh, s_qd, g_valid, d_valid, UPCAST)
    m_i = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l_i = tl.full([BLOCK_G], 0.0, dtype=tl.float32)
    acc = tl.full([BLOCK_G, BLOCK_D], 0.0, dtype=tl.float32)
    p_start = sp * pages_per_split
    p_end = tl.minimum(p_start + pages_per_split, n_sel)
    page_base = PAGES + (b * hkv + h) * n_sel
    for j in range(p_start, p_end, PAGES_PER_ITER):
        slot = j + offs_n // PAGE
        slot_ok = slot < p_end
        page = tl.load(page_base + slot, mask=slot_ok, other=0)
        pos = page * PAGE + offs_n % PAGE
        ok = slot_ok & (pos < length)
        vis = tl.load(VIS + b * s_visb + pos, mask=ok, other=0) != 0
        ok = ok & vis
        kt = _tb.load_tile_t(K + b * s_kb + h * s_kh, pos, offs_d, s_kn, s_kd, ok, d_valid, UPCAST)
        v = _tb.load_tile(V + b * s_vb + h * s_vh, pos, offs_d, s_vn, s_vd, ok, d_valid, UPCAST)
        s = tl.dot(q, kt) * scale_log2
        s = tl.where(ok[None, :], s, float("-inf"))
        m_i, l_i, acc = _tb.online_softmax(s, m_i, l_i, acc, v, None)  # None: tl.dot's default precision
    base = ((b * hkv + h) * N_SPLIT + sp) * BLOCK_G
    tl.store(O_ACC + (base + offs_g[:, None]) * BLOCK_D + offs_d[None, :], acc)
    tl.store(O_M + base + offs_g, m_i)
    tl.store(O_L + base + offs_g, l_i)


def _decode_fn(interpret: bool):
    return _tb.build(_decode_kernel, interpret)


def triton_decode(q: Tensor, k: Tensor, v: Tensor, visible: Tensor, pages: Tensor, page_size: int,
                  scale: float, n_split: int | None = None, pages_per_iter: int = 4) -> Tensor:
    """Split-K decode over the kept pages (int [B, Hkv, S]) read in place from the cache."""
    b, hq, _, d = q.shape
    hkv, length = k.shape[1], k.shape[2]
    g = hq // hkv
    s = pages.shape[-1]
    interpret = q.device.type != "cuda"
    if n_split is None:  # enough programs to fill the GPU, each over a few iterations
        n_split = 1 if interpret else max(1, min(64, cdiv(s, 4 * pages_per_iter)))
    per = cdiv(cdiv(s, n_split), pages_per_iter) * pages_per_iter
    n_split = cdiv(s, per)
    block_g = max(16, next_power_of_2(g))
    block_d = max(16, next_power_of_2(d))
    acc = torch.empty(b, hkv, n_split, block_g, block_d, dtype=torch.float32, device=q.device)
    m = torch.empty(b, hkv, n_split, block_g, dtype=torch.float32, device=q.device)
    lsum = torch.empty_like(m)
    vis8 = visible.to(torch.int8)
    pages32 = pages.to(torch.int32).contiguous()
    _decode_fn(interpret)[(b, hkv, n_split)](
        q, k, v, vis8, pages32, acc, m, lsum,
        q.stride(0), q.stride(1), q.stride(3), *k.stride(), *v.stride(), vis8.stride(0),
        s, length, per, scale * 1.4426950408889634,
        GROUP=g, BLOCK_G=block_g, HEAD_DIM=d, BLOCK_D=block_d, PAGE=page_size, PAGES_PER_ITER=pages_per_iter,
        N_SPLIT=n_split, UPCAST=interpret and q.dtype == torch.bfloat16)
    mx = m.amax(2, keepdim=True)
    w = torch.exp2(m - torch.where(torch.isinf(mx), 0.0, mx)).nan_to_num(0.0)  # [B, Hkv, split, G]
    num = (w[..., None] * acc).sum(2)
    den = (w * lsum).sum(2)
    out = num / torch.where(den == 0, 1.0, den)[..., None]
    return out[:, :, :g, :d].reshape(b, hq, 1, d).to(q.dtype)


# ------------------------------------------------------------------------------------------------ the op


@torch.library.custom_op("replaycompile::sparse_decode", mutates_args=())
def sparse_decode(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, budget: Tensor, scale: float, page_size: int,
                  sink: int, local: int, use_triton: bool, state_key: int, dense: bool = False,
                  page_score: str = "bound") -> Tensor:
    """Budgeted sparse decode attention: q [B, Hq, 1, D], the cache k/v [B, Hkv, L, D], the step's SDPA mask,
    ``budget`` from ``sparrow_budget``; ``state_key`` names the attention site (its layer) whose page statistics
    the current ``SparseDecodeState`` keeps; ``dense`` (a layer the schedule keeps dense) attends to every page;
    ``page_score`` ("bound" or "centroid", see ``page_scores``) ranks the pages. Returns [B, Hq, 1, D] in
    q.dtype."""
    _check_page_score(page_score)
    b = q.shape[0]
    visible = visible_keys(mask, b)
    kv_len, topk = (int(x) for x in budget.tolist())
    n_pages = cdiv(kv_len, page_size)
    triton_ok = use_triton or q.device.type == "cuda"
    if dense or sink + local + topk >= n_pages:
        if triton_ok:
            pages = torch.arange(n_pages, device=q.device).expand(b, k.shape[1], n_pages)
            return triton_decode(q, k, v, visible, pages, page_size, scale)
        return dense_decode(q, k, v, visible, kv_len, scale)
    pages = select_pages(q, k, visible, kv_len, topk, page_size, sink, local, state_key, page_score=page_score)
    if triton_ok:
        return triton_decode(q, k, v, visible, pages, page_size, scale)
    return _gather_decode(q, k, v, visible, pages, page_size, scale)


@sparse_decode.register_fake
def _sparse_decode_fake(q, k, v, mask, budget, scale, page_size, sink, local, use_triton, state_key, dense=False,
                        page_score="bound"):
    return q.new_empty(q.shape[:3] + (v.shape[-1],))

# Under autocast the decode attention is cast as the SDPA it replaces: q and the cache's k, v to the autocast
# dtype (kernels/autocast.py). The mask is read only as visible / not visible, which no cast changes
_autocast.register("replaycompile::sparse_decode", cast=("q", "k", "v"))
_autocast.register("replaycompile::sparrow_budget")
