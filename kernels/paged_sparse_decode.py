"""Sparrow decode over a paged KV cache (vLLM's CPU layout): page summaries, per-KV-head page selection, and a
gathered decode attention. The specification is ``paged_sparse_decode_reference.py`` beside it.

The cache is vLLM's CPU attention cache, one tensor per layer, allocated [num_blocks, Hkv, block_size, 2 * D] and
read as [num_blocks, Hkv, 2 * block_size, D]: per block and KV head, ``block_size`` key rows then ``block_size``
value rows. With the ``vec``/``vec16`` ISAs a block's keys are
stored transposed ([D, block_size], so the kernel reads them as a matrix) and its values as written; other ISAs
(AMX) pack both differently, which is why page statistics are taken from the keys as they are written, never read
back from the cache. A Sparrow page is one cache block.

* ``update_page_bounds``: fold the keys a step writes (``slot_mapping``: block * block_size + offset) into each
  block's elementwise key max and min per KV head (``new_page_bounds``: both in one tensor), resetting a block whose offset 0 is written (a block is filled
  from its start: a write at offset 0 means the block now holds a new sequence).
* ``select_pages``: for each decode row and KV head, the pages to read: the sink pages at the start, the local
  pages ending at the current token, and the best of the rest by Quest's bound against the GQA group's mean query;
  returned as a block table **per KV head** over the cache viewed as [num_blocks * Hkv, 1, 2 * block_size, D]
  (one "virtual block" per block and head), with each (row, head)'s attended length. Pages come in ascending order,
  so the last one is the row's last, partly written page, and any paged decode kernel can read the table as it
  reads a request's.
* ``gathered_decode``: attention of the rows' queries over those virtual blocks, gathered into contiguous buffers
  and run with PyTorch's SDPA (the vec layouts only). vLLM's own CPU kernel reads the same table in place
  (``replaycompile.integrations.vllm.attention``); the benchmark measures both.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["attended_lengths", "new_page_bounds", "update_page_bounds", "page_budget", "select_pages", "gathered_decode", "virtual_cache", "VEC_LAYOUTS"]

# ISAs whose block layout gathered_decode reads (keys transposed per block, values as written)
VEC_LAYOUTS = ("vec", "vec16")


def new_page_bounds(num_blocks: int, num_kv_heads: int, head_dim: int, device=None) -> Tensor:
    """Empty page summaries: float32 [num_blocks, Hkv, 2, D], the elementwise key max (index 0) and min (index 1)
    per block and KV head, side by side so that one gather and one matrix product score a page."""
    bounds = torch.empty(num_blocks, num_kv_heads, 2, head_dim, dtype=torch.float32, device=device)
    bounds[:, :, 0] = float("-inf")
    bounds[:, :, 1] = float("inf")
    return bounds


def update_page_bounds(bounds: Tensor, key: Tensor, slot_mapping: Tensor, block_size: int) -> None:
    """Fold the written keys [N, Hkv, D] into ``bounds`` (``new_page_bounds``) in place. Slots < 0 (padding
    tokens) are skipped."""
    n = key.shape[0]
    slots = slot_mapping[:n].to(torch.int64)
    ok = slots >= 0
    if not bool(ok.all()):
        slots, key = slots[ok], key[ok]
    if slots.numel() == 0:
        return
    blocks = slots // block_size
    fresh = blocks[slots % block_size == 0]
    if fresh.numel():
        bounds[fresh, :, 0] = float("-inf")
        bounds[fresh, :, 1] = float("inf")
    k = key.to(torch.float32)
    index = blocks[:, None, None].expand_as(k)
    bounds[:, :, 0].scatter_reduce_(0, index, k, "amax")
    bounds[:, :, 1].scatter_reduce_(0, index, k, "amin")


def page_budget(seq_lens: Tensor, table: Tensor, bucket_tokens: int, page_size: int, sink: int,
                local: int) -> Tensor:
    """int64 [n]: pages each row reads at its KV length (``SparrowSchedule.budget`` for every row at once)."""
    seq = seq_lens.to(torch.int64)
    bucket = ((seq - 1).clamp_min(0) // bucket_tokens).clamp_max(table.shape[0] - 1)
    n_pages = (seq + page_size - 1) // page_size
    return torch.minimum(n_pages, table.to(torch.int64)[bucket] + sink + local)


def attended_lengths(seq_lens: Tensor, budget: Tensor, page_size: int) -> Tensor:
    """int64 [n]: keys a row attends with ``budget`` pages, its last (partly written) page included."""
    seq = seq_lens.to(torch.int64)
    n_pages = (seq + page_size - 1) // page_size
    return (budget - 1) * page_size + (seq - (n_pages - 1) * page_size)


def select_pages(query: Tensor, bounds: Tensor, block_table: Tensor, seq_lens: Tensor, budget: Tensor,
                 page_size: int, sink: int, local: int) -> tuple[Tensor, Tensor]:
    """Per-KV-head block tables of the pages each decode row reads.

    query [n, Hq, D] (one token per row), bounds [num_blocks, Hkv, 2, D] (``update_page_bounds``), block_table
    [n, >= pages] (int), seq_lens [n] (the KV length, current token included), budget [n] (``page_budget``).
    Returns (int32 [n * Hkv, S] virtual block ids, int32 [n * Hkv] attended lengths), rows ordered (row, head);
    S = max budget, entries past a row's budget repeat its last page (never read: the length stops before them)."""
    n, hq, d = query.shape
    hkv = bounds.shape[1]
    seq = seq_lens.to(torch.int64)
    n_pages = (seq + page_size - 1) // page_size
    p = int(n_pages.max())
    s = int(budget.max())
    blocks = block_table[:, :p].to(torch.int64)  # [n, P]
    qm = query.reshape(n, hkv, hq // hkv, d).to(torch.float32).mean(2)  # [n, Hkv, D]
    # Quest's bound sum_d max(q_d kmax_d, q_d kmin_d) = q+ . kmax + q- . kmin: one gather, one batched product
    # (a multiply and a sum over the gathered rows in place: a batched matmul would first copy them head-major)
    q2 = torch.stack([qm.clamp_min(0), qm.clamp_max(0)], 2).reshape(n, 1, hkv, 2 * d)
    picked = bounds.index_select(0, blocks.reshape(-1)).view(n, p, hkv, 2 * d)
    scores = (picked * q2).sum(-1).transpose(1, 2)  # [n, Hkv, P]
    ids = torch.arange(p, device=query.device)
    real = ids[None] < n_pages[:, None]  # [n, P]
    reserved = ((ids[None] < sink) | (ids[None] >= n_pages[:, None] - local)) & real
    scores = scores.masked_fill(~real[:, None], float("-inf")).masked_fill(reserved[:, None], float("inf"))
    best = scores.topk(s, dim=-1, sorted=True).indices  # [n, Hkv, S], reserved first
    beyond = torch.arange(s, device=query.device)[None, None] >= budget[:, None, None]
    pages = best.masked_fill(beyond, p).sort(-1).values  # ascending; past the budget sorts last
    last = (n_pages - 1)[:, None, None].expand_as(pages)
    pages = torch.where(pages >= p, last, pages)  # repeat the last page past the budget
    chosen = blocks.gather(1, pages.reshape(n, -1)).reshape(n, hkv, s)
    virtual = chosen * hkv + torch.arange(hkv, device=query.device)[None, :, None]
    lengths = attended_lengths(seq, budget, page_size)
    return (virtual.reshape(n * hkv, s).to(torch.int32),
            lengths[:, None].expand(n, hkv).reshape(-1).to(torch.int32))


def virtual_cache(kv_cache: Tensor) -> tuple[Tensor, Tensor]:
    """The key and value halves of a cache [NB, Hkv, bs, 2 * D] viewed as [NB * Hkv, 1, bs, D] (no copy)."""
    nb, hkv, bs, two_d = kv_cache.shape
    return kv_cache.view(nb * hkv, 1, 2 * bs, two_d // 2).chunk(2, dim=2)


def gathered_decode(query: Tensor, kv_cache: Tensor, virtual_blocks: Tensor, lengths: Tensor,
                    scale: float) -> Tensor:
    """[n, Hq, D] attention of one query per row over its virtual blocks (``select_pages``), for the vec layouts:
    the blocks are gathered into contiguous K [n * Hkv, S * bs, D] and V buffers and attended with SDPA, the GQA
    group folded into the query dimension."""
    n, hq, d = query.shape
    nb, hkv, bs, _ = kv_cache.shape
    two_bs = 2 * bs
    rows, s = virtual_blocks.shape
    flat = kv_cache.view(nb * hkv, two_bs, d).index_select(0, virtual_blocks.reshape(-1).to(torch.int64))
    flat = flat.view(rows, s, two_bs, d)
    k = flat[:, :, :bs].reshape(rows, s, d, bs).transpose(-1, -2).reshape(rows, s * bs, d)
    v = flat[:, :, bs:].reshape(rows, s * bs, d)
    visible = torch.arange(s * bs, device=query.device)[None] < lengths.to(torch.int64)[:, None]
    q = query.reshape(n * hkv, hq // hkv, d)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=visible[:, None, :], scale=scale)
    return out.reshape(n, hq, d)
