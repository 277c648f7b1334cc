"""Block-sparse attention layouts: which key blocks each query block visits, as data.

Both attention patterns of the project are block-sparse:

* a packed prefix tree (replay): a query sees its ancestors' keys and its own earlier keys, never another
  branch's. Token rule: key k is visible to query q iff ``k <= q < subtree_end[k]``;
* a budget (Sparrow): a query block sees only the key blocks selected for it, and causally within them.
  Token rule: ``k <= q + (n_k - n_q)`` (bottom-right aligned causality).

A :class:`BlockLayout` is the block-level form of either pattern, built once per call outside the kernels. For
each query block it lists the key blocks it visits, each marked *full* (every token pair visible: the kernel
skips the per-token rule) or *partial* (the kernel evaluates the token rule). The transposed lists (per key
block, the query blocks that see it) drive the dK/dV backward without atomics. A layout may be per KV head
(``heads == n_kv_heads``, as a budget selected per GQA group is) or shared by all heads (``heads == 1``).

The builders here (``tree_block_mask``, ``causal_block_mask``) return dense block masks [heads, nQB, nKB];
``BlockLayout.from_block_masks`` turns them into the CSR lists. Block masks are (N / block)^2 booleans: 64K
tokens at block 64 is a 1M-entry mask, negligible next to the attention it plans.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = ["BlockLayout", "tree_block_mask", "causal_block_mask", "cdiv", "next_power_of_2", "mask_visible",
           "budget_bucket", "PAGE_SCORES"]

# The small helpers every kernel, the schedule and the passes share live here, once: ceil division, the power of
# two a Triton tile needs, an SDPA mask read as visibility, and the bucket of a Sparrow page table.


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for ints (the one spelling of it in the project)."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1), as ``triton.next_power_of_2`` without importing Triton."""
    return 1 << max(n - 1, 0).bit_length()


def mask_visible(mask: Tensor, strict: bool = False) -> Tensor | None:
    """bool visibility of an SDPA mask: a bool mask as it is; an additive float mask visible where it is above
    ``finfo.min / 2`` (0 for visible, a very negative value for hidden, as transformers builds them).

    ``strict``: None unless every float value is 0 or very negative (a soft bias such as ALiBi is not a
    visibility pattern), and None for a mask of any other dtype. Otherwise such values raise no error: they
    count as visible."""
    if mask.dtype == torch.bool:
        return mask
    if strict and not mask.is_floating_point():
        return None
    floor = torch.finfo(mask.dtype).min / 2
    if strict and not bool(((mask == 0) | (mask <= floor)).all()):
        return None
    return mask > floor


# Sparrow's page scores (kernels/sparse_decode.page_scores), the first the default; here beside budget_bucket as
# the other rule SparrowSchedule and the decode op share
PAGE_SCORES = ("bound", "centroid")


def budget_bucket(kv_len: int, bucket_tokens: int, n_buckets: int) -> int:
    """The entry of a Sparrow page table that holds at this KV length: bucket ``i`` covers lengths
    ``(i * bucket_tokens, (i + 1) * bucket_tokens]``, the last entry every longer one."""
    return min(max(kv_len - 1, 0) // bucket_tokens, n_buckets - 1)


@dataclass(frozen=True, eq=False)
class BlockLayout:
    """CSR lists of visited blocks, forward (per query block) and transposed (per key block).

    All index tensors are int32 on one device. ``q_ptr`` is [heads, nQB + 1] with offsets into the flat
    ``q_idx`` / ``q_full`` (entries of head h follow those of head h - 1); likewise ``kv_ptr`` [heads, nKB + 1]
    into ``kv_idx`` (query block ids) / ``kv_full``. Within a list blocks are in increasing order.
    """

    block_q: int
    block_k: int
    n_q: int
    n_k: int
    q_ptr: Tensor
    q_idx: Tensor
    q_full: Tensor
    kv_ptr: Tensor
    kv_idx: Tensor
    kv_full: Tensor

    @property
    def heads(self) -> int:
        return int(self.q_ptr.shape[0])

    @property
    def num_q_blocks(self) -> int:
        return int(self.q_ptr.shape[1]) - 1

    @property
    def num_k_blocks(self) -> int:
        return int(self.kv_ptr.shape[1]) - 1

    def tensors(self) -> list[Tensor]:
        """The six index tensors in the order the attention ops take them."""
        return [self.q_ptr, self.q_idx, self.q_full, self.kv_ptr, self.kv_idx, self.kv_full]

    @classmethod
    def from_tensors(cls, tensors: list[Tensor], block_q: int, block_k: int, n_q: int, n_k: int) -> "BlockLayout":
        if len(tensors) != 6:
            raise ValueError(f"a block layout is 6 tensors (q_ptr, q_idx, q_full, kv_ptr, kv_idx, kv_full), got "
                             f"{len(tensors)}")
        return cls(block_q, block_k, n_q, n_k, *tensors)

    def to(self, device) -> "BlockLayout":
        return BlockLayout(self.block_q, self.block_k, self.n_q, self.n_k,
                           *(t.to(device, non_blocking=True) for t in self.tensors()))

    @classmethod
    def from_block_masks(cls, visible: Tensor, full: Tensor, block_q: int, block_k: int, n_q: int,
                         n_k: int) -> "BlockLayout":
        """Lists from dense block masks ``visible`` / ``full``, bool [heads, nQB, nKB] (or [nQB, nKB]).

        ``full`` must imply ``visible``; a full block's key block must be complete (``< n_k`` everywhere) and
        its query block complete too, since the kernels skip all masking there.
        """
        if visible.dim() == 2:
            visible, full = visible[None], full[None]
        nqb, nkb = cdiv(n_q, block_q), cdiv(n_k, block_k)
        if tuple(visible.shape[1:]) != (nqb, nkb) or visible.shape != full.shape:
            raise ValueError(f"block masks must be [heads, {nqb}, {nkb}] for n_q={n_q}, n_k={n_k}, blocks "
                             f"({block_q}, {block_k}); got {tuple(visible.shape)} and {tuple(full.shape)}")
        full = full & visible
        h = visible.shape[0]
        kind = visible.to(torch.int8) + full.to(torch.int8)  # 0 none, 1 partial, 2 full

        def csr(mask_kind: Tensor) -> tuple[Tensor, Tensor, Tensor]:
            # mask_kind [h, rows, cols]: row-major nonzero is sorted by (head, row, col)
            hh, rr, cc = torch.nonzero(mask_kind, as_tuple=True)
            rows = mask_kind.shape[1]
            counts = torch.zeros(h * rows, dtype=torch.int64, device=mask_kind.device)
            counts.index_add_(0, hh * rows + rr, torch.ones_like(hh))
            ptr = torch.zeros(h, rows + 1, dtype=torch.int64, device=mask_kind.device)
            ptr[:, 1:] = counts.view(h, rows).cumsum(1)
            ptr += torch.cat([ptr.new_zeros(1), ptr[:, -1].cumsum(0)[:-1]])[:, None]
            return (ptr.to(torch.int32), cc.to(torch.int32),
                    (mask_kind[hh, rr, cc] == 2).to(torch.int8))

        q_ptr, q_idx, q_full = csr(kind)
        kv_ptr, kv_idx, kv_full = csr(kind.transpose(1, 2).contiguous())
        return cls(block_q, block_k, n_q, n_k, q_ptr, q_idx, q_full, kv_ptr, kv_idx, kv_full)

    def block_masks(self) -> tuple[Tensor, Tensor]:
        """The dense (visible, full) block masks back, bool [heads, nQB, nKB] (for tests and diagnostics)."""
        h, nqb, nkb = self.heads, self.num_q_blocks, self.num_k_blocks
        vis = torch.zeros(h, nqb, nkb, dtype=torch.bool)
        full = torch.zeros(h, nqb, nkb, dtype=torch.bool)
        ptr, idx, fl = self.q_ptr.cpu().long(), self.q_idx.cpu().long(), self.q_full.cpu().bool()
        for hh in range(h):
            for m in range(nqb):
                cols = idx[ptr[hh, m]:ptr[hh, m + 1]]
                vis[hh, m, cols] = True
                full[hh, m, cols] = fl[ptr[hh, m]:ptr[hh, m + 1]]
        return vis, full

    def token_mask(self) -> Tensor:
        """bool [heads, n_q, n_k]: the causal rule inside the listed blocks (bottom-right aligned), as a dense
        mask. For the PyTorch path of the budget op on small inputs and for tests; O(n_q x n_k)."""
        h, nqb, nkb = self.heads, self.num_q_blocks, self.num_k_blocks
        ptr = self.q_ptr.long().cpu()
        counts = (ptr[:, 1:] - ptr[:, :-1]).reshape(-1)
        rows = torch.repeat_interleave(torch.arange(h * nqb), counts)
        blocks = torch.zeros(h * nqb, nkb, dtype=torch.bool)
        blocks[rows, self.q_idx.long().cpu()] = True
        blocks = blocks.view(h, nqb, nkb)
        qb = torch.arange(self.n_q) // self.block_q
        kb = torch.arange(self.n_k) // self.block_k
        causal = torch.arange(self.n_k)[None, :] <= (torch.arange(self.n_q) + (self.n_k - self.n_q))[:, None]
        return blocks[:, qb][:, :, kb] & causal[None]

    def visited_pairs(self) -> int:
        """Number of (head, query block, key block) triples the forward visits."""
        return int(self.q_idx.numel())


def tree_block_mask(subtree_end: Tensor, block_q: int, block_k: int) -> tuple[Tensor, Tensor]:
    """(visible, full) block masks [1, nQB, nKB] of the tree rule ``k <= q < subtree_end[k]``.

    A key block is visible to query block [qs, qe) iff some key k in it has ``k < qe`` and ``subtree_end[k] >
    qs`` (``subtree_end[k] > k`` always); a running max of ``subtree_end`` inside each key block answers that
    for all block pairs at once. It is full iff its last key is ``<= qs`` and every key's subtree reaches past
    ``qe - 1``, with both blocks complete.
    """
    se = subtree_end.to(torch.int64).cpu()
    n = int(se.shape[0])
    nqb, nkb = cdiv(n, block_q), cdiv(n, block_k)
    se_pad = torch.zeros(nkb * block_k, dtype=torch.int64)  # padded keys: subtree_end 0, visible to nobody
    se_pad[:n] = se
    se_b = se_pad.view(nkb, block_k)
    run_max = se_b.cummax(dim=1).values
    qs = torch.arange(nqb) * block_q
    qe = (qs + block_q).clamp(max=n)
    ks = torch.arange(nkb) * block_k
    last = qe[:, None] - ks[None, :] - 1  # last key of the block below qe, relative to the block start
    has_key = last >= 0
    reach = run_max.gather(1, last.clamp(0, block_k - 1).t().contiguous()).t()  # [nqb, nkb]
    visible = has_key & (reach > qs[:, None])
    complete_k = (ks + block_k) <= n
    complete_q = (qs + block_q) <= n
    full = (visible & complete_k[None, :] & complete_q[:, None]
            & ((ks + block_k - 1)[None, :] <= qs[:, None])
            & (se_b.min(dim=1).values[None, :] >= qe[:, None]))
    return visible[None], full[None]


def causal_block_mask(n_q: int, n_k: int, block_q: int, block_k: int,
                      selected: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """(visible, full) block masks of bottom-right causal attention, optionally restricted to ``selected``.

    Query i sits at position ``i + n_k - n_q``. ``selected`` (bool [heads, nQB, nKB] or [nQB, nKB]) is a
    budget: the key blocks each query block may use (Sparrow's selection); causality still applies inside.
    """
    nqb, nkb = cdiv(n_q, block_q), cdiv(n_k, block_k)
    off = n_k - n_q
    qs = torch.arange(nqb) * block_q
    qe = (qs + block_q).clamp(max=n_q)
    ks = torch.arange(nkb) * block_k
    visible = ks[None, :] <= (qe - 1 + off)[:, None]
    full = (visible & ((ks + block_k - 1)[None, :] <= (qs + off)[:, None])
            & ((ks + block_k) <= n_k)[None, :] & ((qs + block_q) <= n_q)[:, None])
    visible, full = visible[None], full[None]
    if selected is not None:
        if selected.dim() == 2:
            selected = selected[None]
        if tuple(selected.shape[1:]) != (nqb, nkb):
            raise ValueError(f"selected blocks must be [heads, {nqb}, {nkb}], got {tuple(selected.shape)}")
        selected = selected.to(torch.bool).cpu()
        visible = visible & selected
        full = full & selected
    return visible, full
