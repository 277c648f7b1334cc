"""Reference Sparrow decode attention: the specification the fast paths (CPU and Triton) are tested against.

One decode step: each row b has one query per query head and a KV cache [B, Hkv, L, D] of which ``visible[b, t]``
marks the real, already-written tokens. The cache is cut into pages of ``page_size`` tokens. Per (row, KV head):

* pages without a visible key are never scored; with ``qm`` the mean query of the GQA group, the **score** of a
  page is, by ``page_score``:

  - ``"bound"`` (the default): ``sum_d max(qm_d * kmax_d, qm_d * kmin_d)``, where kmax / kmin are the
    elementwise max / min of the page's visible keys: an upper bound on ``qm . k`` over the page's keys (Quest),
    so one strongly matching key lifts its page however many other keys it holds;
  - ``"centroid"``: ``qm . c`` with ``c`` the mean of the page's visible keys;
* **reserved pages** are always kept: ``sink`` pages from the row's first visible page, and ``local`` pages
  ending at the page of the last token;
* the best-scoring pages among the rest fill the budget: ``topk`` of them, plus any slot a reserved page left
  free by coinciding with another (a row with few real pages), so every row keeps ``sink + local + topk`` pages
  (fewer if fewer exist);
* attention is ordinary softmax attention over the visible keys of the kept pages.

When reserved + top-k covers every page, this is dense decode attention exactly.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .block_sparse import PAGE_SCORES, cdiv

__all__ = ["select_pages_reference", "sparse_decode_reference"]


def select_pages_reference(q: Tensor, k: Tensor, visible: Tensor, kv_len: int, topk: int, page_size: int,
                           sink: int, local: int, page_score: str = "bound") -> Tensor:
    """bool [B, Hkv, n_pages]: the pages kept for each (row, KV head)."""
    if page_score not in PAGE_SCORES:
        raise ValueError(f"unknown page score {page_score!r}")
    b, hq, _, d = q.shape
    hkv = k.shape[1]
    n_pages = cdiv(kv_len, page_size)
    kept = torch.zeros(b, hkv, n_pages, dtype=torch.bool)
    for bi in range(b):
        vis_t = visible[bi, :kv_len].cpu()
        page_has = torch.zeros(n_pages, dtype=torch.bool)
        for p in range(n_pages):
            page_has[p] = bool(vis_t[p * page_size:(p + 1) * page_size].any())
        first = int(torch.nonzero(page_has)[0]) if bool(page_has.any()) else 0
        reserved = set(range(first, min(first + sink, n_pages))) | set(range(max(n_pages - local, 0), n_pages))
        for h in range(hkv):
            qm = q[bi, h * (hq // hkv):(h + 1) * (hq // hkv), 0].double().mean(0)
            scores = {}
            for p in range(n_pages):
                if p in reserved or not page_has[p]:
                    continue
                toks = [t for t in range(p * page_size, min((p + 1) * page_size, kv_len)) if vis_t[t]]
                keys = k[bi, h, toks].double()
                if page_score == "centroid":
                    scores[p] = float(keys.mean(0) @ qm)
                else:
                    scores[p] = float(torch.maximum(qm * keys.amax(0), qm * keys.amin(0)).sum())
            best = sorted(scores, key=lambda p: (-scores[p], p))[:topk + sink + local - len(reserved)]
            for p in reserved | set(best):
                kept[bi, h, p] = True
    return kept


def sparse_decode_reference(q: Tensor, k: Tensor, v: Tensor, visible: Tensor, kept: Tensor, page_size: int,
                            scale: float) -> Tensor:
    """Attention of q [B, Hq, 1, D] over the visible keys of the kept pages (``kept`` [B, Hkv, n_pages]); float64
    math, returned in q.dtype. A row with nothing to attend to gets zeros."""
    b, hq, _, d = q.shape
    hkv = k.shape[1]
    g = hq // hkv
    n_pages = kept.shape[2]
    kv_len = min(n_pages * page_size, k.shape[2])
    page_of = torch.arange(kv_len) // page_size
    allowed = kept[:, :, page_of] & visible[:, None, :kv_len].cpu()  # [B, Hkv, kv_len]
    qf = q.double().reshape(b, hkv, g, d)
    s = qf @ k[:, :, :kv_len].double().transpose(-1, -2) * scale  # [B, Hkv, g, kv_len]
    s = s.masked_fill(~allowed[:, :, None, :].to(q.device), float("-inf"))
    p = torch.softmax(s, -1).nan_to_num(0.0)
    out = p @ v[:, :, :kv_len].double()
    return out.reshape(b, hq, 1, -1).to(q.dtype)

