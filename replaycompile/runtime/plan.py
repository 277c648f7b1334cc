"""Prefix-tree plan for one batch of rollout rows.

RL rollout batches repeat themselves: G completions of one prompt share the
prompt, and completions that branch again share their stem.  A causal model's
hidden state at (b, t) depends only on the tokens at columns <= t, so two rows
that agree on every (input id, mask bit, position id) up to column t have the
same activations there.  The plan names each distinct real prefix node of the
batch once ("packed tokens"), so the compiled graph runs every shared prefix a
single time and scatters results back to the [B, T] layout.

Packed order is a DFS preorder of the trie, obtained by sorting rows
lexicographically and letting each sorted row contribute only the columns past
its longest common prefix with the previous row.  Preorder makes every subtree
a contiguous packed range, which gives attention a two-integer visibility rule
(``subtree_end``) and a block form (segments and their ancestor ``kv_ranges``)
that kernels can iterate without materialising an [N, N] mask.

Everything is built with [B, T] tensor ops on CPU int64; the only Python work
is sorting the B row keys.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["ReplayPlan", "SharedSplit", "build_plan", "content_plan", "shares_exactly", "multiplicity", "split_shared"]


@dataclass(frozen=True, eq=False)
class ReplayPlan:
    """Packed layout of one batch.  See the module docstring.

    ``eq=False``: field-wise ``==`` on tensors is ambiguous, so plans compare
    (and hash) by identity.
    """

    batch_size: int
    seq_len: int
    num_packed: int
    tokens_in: int
    gather_index: torch.Tensor  # [N] flat b*T+t of one occurrence of each packed token
    columns: torch.Tensor  # [N] column of each packed token
    scatter_index: torch.Tensor  # [B, T] packed index of (b, t); N for pads
    subtree_end: torch.Tensor  # [N] key k visible to q iff k <= q < subtree_end[k]
    seg_q: torch.Tensor  # [S, 2] (q_start, q_end) of each segment
    seg_kv_ptr: torch.Tensor  # [S+1] CSR pointer into kv_ranges
    kv_ranges: torch.Tensor  # [R, 2] ancestor ranges then the own (causal) range

    def block_layout(self, block_q: int, block_k: int):
        """The tree's block-sparse layout for the Triton attention kernels (``kernels/block_sparse.py``)."""
        from replaycompile.kernels.block_sparse import BlockLayout, tree_block_mask

        visible, full = tree_block_mask(self.subtree_end, block_q, block_k)
        return BlockLayout.from_block_masks(visible, full, block_q, block_k, self.num_packed, self.num_packed)

    @property
    def num_segments(self) -> int:
        return int(self.seg_q.shape[0])

    @property
    def shared_tokens(self) -> int:
        """Real tokens of the batch that packing computes once for several rows: what it saves."""
        return self.tokens_in - self.num_packed

    @staticmethod
    def pairs(scatter: torch.Tensor, lo: int, hi: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(flat, rows)``: the flat (b, k) of each entry of a scatter [B, K] (``scatter_index`` or a
        ``select_columns`` scatter) whose packed index lies in [lo, hi), and that index: the (row, target) pairs
        of the chunked LM head."""
        scatter = scatter.reshape(-1)
        inside = scatter < hi if lo == 0 else (scatter >= lo) & (scatter < hi)
        flat = torch.nonzero(inside).reshape(-1)
        return flat, scatter.index_select(0, flat)

    @staticmethod
    def unique_pairs(scatter: torch.Tensor, lo: int, hi: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(flat, local, rows)``: as ``pairs``, with each pair's packed row given as ``local``, its position in
        ``rows``, the sorted unique packed rows the pairs read: the LM head computes each of those once."""
        flat, packed = ReplayPlan.pairs(scatter, lo, hi)
        rows, local = torch.unique(packed, sorted=True, return_inverse=True)
        return flat, local.to(torch.int64), rows.to(torch.int64)

    def select_columns(self, start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Columns [start, stop) of every row, python slice semantics.

        Returns ``(subset_index, subset_scatter)``: the sorted unique packed
        indices [M] of real tokens in those columns, and for each (b, t) of
        the slice [B, K] the position of its token in ``subset_index`` (M for
        padded positions).
        """
        sub = self.scatter_index[:, slice(start, stop)]
        if sub.numel() == 0:
            return (
                torch.empty(0, dtype=torch.int64),
                torch.empty(sub.shape, dtype=torch.int64),
            )
        uniq, inv = torch.unique(sub, sorted=True, return_inverse=True)
        # Pads carry N, the largest value, so they land on the last unique
        # slot; dropping it makes their inverse index exactly M.
        if int(uniq[-1]) == self.num_packed:
            uniq = uniq[:-1]
        return uniq.to(torch.int64), inv.to(torch.int64).reshape(sub.shape)

    @staticmethod
    def refine_selection(index: torch.Tensor, scatter: torch.Tensor, keep: torch.Tensor, min_tokens: int = 2
                         ) -> tuple[torch.Tensor, torch.Tensor, int, int]:
        """A ``select_columns`` result without the positions ``keep`` [B, K] (bool) drops: ``(index, scatter,
        positions dropped, tokens dropped)``. A dropped position scatters to the pad slot (its values read as
        zeros); a token is dropped when no kept position reads it (a shared token stays while one branch keeps
        it). Unchanged where fewer than ``min_tokens`` would remain (a 0- or 1-token space would specialise the
        compiled graph's shapes)."""
        m = int(index.shape[0])
        real = scatter < m
        kept = real & keep.to(device=scatter.device, dtype=torch.bool)
        n_pos = int(real.sum()) - int(kept.sum())
        if n_pos == 0:
            return index, scatter, 0, 0
        used = torch.zeros(m, dtype=torch.bool, device=scatter.device)
        used[scatter[kept]] = True
        m2 = int(used.sum())
        if m2 < min_tokens:
            return index, scatter, 0, 0
        new_of = torch.cumsum(used, 0) - 1
        refined = torch.where(kept, new_of[scatter.clamp(max=m - 1)], torch.full_like(scatter, m2))
        return index[used.to(index.device)], refined, n_pos, m - m2

    def query_segments(self, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The segment CSR (``seg_q``, ``seg_kv_ptr``, ``kv_ranges``) of tree attention whose queries are only the
        packed tokens ``index`` (sorted, as ``select_columns`` gives them) and whose keys are all N tokens.

        Each run of selected tokens that are consecutive within one segment becomes a segment of the result: it
        sees its segment's ancestors and the segment's tokens before the run in full, and the run causally
        (its own range, in key coordinates; queries in coordinates of ``index``)."""
        i64 = torch.int64
        index = index.to(i64)
        m = int(index.shape[0])
        seg_of = torch.searchsorted(self.seg_q[:, 0].contiguous(), index, right=True) - 1
        brk = torch.ones(m, dtype=torch.bool)
        brk[1:] = (index[1:] != index[:-1] + 1) | (seg_of[1:] != seg_of[:-1])
        starts = torch.nonzero(brk).reshape(-1).tolist()
        ptr = self.seg_kv_ptr.tolist()
        ranges = self.kv_ranges.tolist()
        idx, segs = index.tolist(), seg_of.tolist()
        seg_q, kv, kv_ptr = [], [], [0]
        for i, j in zip(starts, starts[1:] + [m]):
            a, s = idx[i], segs[i]
            qs = ranges[ptr[s + 1] - 1][0]  # the segment's own range starts here
            anc = [list(r) for r in ranges[ptr[s]:ptr[s + 1] - 1]]
            if a > qs:  # the segment's tokens before the run: seen in full
                if anc and anc[-1][1] == qs:
                    anc[-1][1] = a
                else:
                    anc.append([qs, a])
            kv.extend(anc)
            kv.append([a, a + j - i])
            kv_ptr.append(len(kv))
            seg_q.append([i, j])
        return (torch.tensor(seg_q, dtype=i64).reshape(-1, 2), torch.tensor(kv_ptr, dtype=i64),
                torch.tensor(kv, dtype=i64).reshape(-1, 2))


_INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


def _as_2d(name: str, x, allow_bool: bool) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(x)
    if x.dim() != 2:
        raise ValueError(f"{name} must be 2-D [B, T], got shape {tuple(x.shape)}")
    ok = x.dtype in _INT_DTYPES or (allow_bool and x.dtype == torch.bool)
    if not ok:
        kinds = "integer or bool" if allow_bool else "integer"
        raise ValueError(
            f"{name} must have an {kinds} dtype, got {x.dtype} (shape {tuple(x.shape)})"
        )
    return x.detach().to("cpu", torch.int64)


def _validate(input_ids, attention_mask, position_ids):
    ids = _as_2d("input_ids", input_ids, allow_bool=False)
    B, T = ids.shape
    if B < 1 or T < 1:
        raise ValueError(f"input_ids must have B >= 1 and T >= 1, got shape {(B, T)}")

    if attention_mask is None:
        mask = torch.ones(B, T, dtype=torch.int64)
    else:
        mask = _as_2d("attention_mask", attention_mask, allow_bool=True)
        if tuple(mask.shape) != (B, T):
            raise ValueError(
                f"attention_mask shape {tuple(mask.shape)} does not match "
                f"input_ids shape {(B, T)}"
            )
        if not bool(((mask == 0) | (mask == 1)).all()):
            raise ValueError(
                f"attention_mask (shape {tuple(mask.shape)}) must contain only 0 and 1"
            )

    if position_ids is None:
        pos = torch.arange(T, dtype=torch.int64).expand(B, T)
    else:
        pos = _as_2d("position_ids", position_ids, allow_bool=False)
        if tuple(pos.shape) not in ((B, T), (1, T)):
            raise ValueError(
                f"position_ids shape {tuple(pos.shape)} must be {(B, T)} or {(1, T)} "
                f"to match input_ids"
            )
        pos = pos.expand(B, T)
    return ids, mask, pos


def build_plan(input_ids, attention_mask=None, position_ids=None) -> ReplayPlan:
    """Build the prefix-tree plan of one batch (see module docstring)."""
    ids, mask, pos = _validate(input_ids, attention_mask, position_ids)
    B, T = ids.shape
    i64 = torch.int64

    # [B, T, 3]: (id, mask, pos) is the per-column sharing key.
    key = torch.stack((ids, mask, pos), dim=2)

    # Interleaving the three fields makes Python list comparison exactly the
    # lexicographic order on per-column key tuples; sorted() is stable, so
    # identical rows keep batch order.
    rows = key.reshape(B, 3 * T).tolist()
    perm = torch.tensor(sorted(range(B), key=rows.__getitem__), dtype=i64)

    # index_select/masked_select/index_copy_ rather than advanced indexing
    # throughout: on small CPU tensors the latter goes through a parallel
    # TensorIterator path that costs ~8 ms per call when OpenMP has >1 thread.
    skey = key.index_select(0, perm)
    real = mask.index_select(0, perm).bool()  # sorted-row order from here on
    cols = torch.arange(T, dtype=i64)
    rows_ar = torch.arange(B, dtype=i64)

    # lcp[i]: common prefix length with sorted row i-1 (0 for the first row).
    lcp = torch.zeros(B, dtype=i64)
    if B > 1:
        diff = (skey[1:] != skey[:-1]).any(dim=2)
        first = diff.to(torch.int8).argmax(dim=1)  # first True (argmax picks the first max)
        lcp[1:] = torch.where(diff.any(dim=1), first, torch.full_like(first, T))

    # Each sorted row owns its real tokens past the lcp; row-major order of
    # these is the trie's DFS preorder.
    # branched[j, t]: lcp[j] <= t, row j has left its predecessor by column t.
    branched = cols[None, :] >= lcp[:, None]
    contrib = branched & real
    packed_of = contrib.reshape(-1).cumsum(0).sub_(1).reshape(B, T)
    row_count = contrib.sum(dim=1)
    row_start = torch.zeros(B + 1, dtype=i64)
    row_start[1:] = row_count.cumsum(0)
    N = int(row_start[-1])

    # owner(i, t): the sorted row whose contribution holds node (i, t), i.e.
    # the last row j <= i that branched at or before column t.  lcp[0] = 0
    # guarantees one exists.
    owner = torch.where(branched, rows_ar[:, None], torch.full((B, T), -1, dtype=i64))
    owner = owner.cummax(dim=0).values

    scatter_sorted = torch.where(real, packed_of.gather(0, owner), torch.full((B, T), N, dtype=i64))
    scatter_index = torch.empty(B, T, dtype=i64).index_copy_(0, perm, scatter_sorted)

    # The subtree of node (i, t) runs to the start of the first later row
    # that branches at or before t; later rows in between all sit below it.
    nxt = torch.where(branched, rows_ar[:, None], torch.full((B, T), B, dtype=i64))
    nxt = nxt.flip(0).cummin(dim=0).values.flip(0)
    nxt = torch.cat((nxt[1:], torch.full((1, T), B, dtype=i64)), dim=0)
    subtree_end = row_start.index_select(0, nxt.reshape(-1)).reshape(B, T).masked_select(contrib)

    gather_index = (perm[:, None] * T + cols[None, :]).masked_select(contrib)
    columns = cols.expand(B, T).masked_select(contrib)

    # Segments: one per sorted row with a non-empty contribution.
    seg_rows = torch.nonzero(row_count > 0).reshape(-1)
    seg_q = torch.stack(
        (row_start.index_select(0, seg_rows), row_start.index_select(0, seg_rows + 1)), dim=1
    )

    # A row's shared prefix lies in earlier rows' contributions; anc[i, j]
    # counts how many of row i's real ancestors live in row j.  Because rows
    # are contiguous in packed order and owner is nondecreasing in t, those
    # ancestors are a prefix of row j's range.
    shared = (~branched) & real
    flat = (rows_ar[:, None] * B + owner).masked_select(shared)
    anc = torch.bincount(flat, minlength=B * B).reshape(B, B)

    anc_seg = anc.index_select(0, seg_rows)  # [S, B]
    s_idx, j_idx = torch.nonzero(anc_seg, as_tuple=True)
    n_anc = anc_seg.reshape(-1).index_select(0, s_idx * B + j_idx)
    anc_start = row_start.index_select(0, j_idx)
    anc_rng = torch.stack((anc_start, anc_start + n_anc), dim=1)
    S = seg_rows.numel()
    # Sort key places a segment's ancestors (j < own row) in packed order, then its own range.
    order_key = torch.cat((s_idx * (B + 1) + j_idx, torch.arange(S, dtype=i64) * (B + 1) + B))
    all_rng = torch.cat((anc_rng, seg_q), dim=0)
    kv_ranges = all_rng.index_select(0, torch.argsort(order_key)).reshape(-1, 2)

    per_seg = (anc_seg > 0).sum(dim=1) + 1
    seg_kv_ptr = torch.zeros(S + 1, dtype=i64)
    seg_kv_ptr[1:] = per_seg.cumsum(0)

    return ReplayPlan(
        batch_size=B,
        seq_len=T,
        num_packed=N,
        tokens_in=int(mask.sum()),
        gather_index=gather_index,
        columns=columns,
        scatter_index=scatter_index,
        subtree_end=subtree_end,
        seg_q=seg_q.reshape(-1, 2),
        seg_kv_ptr=seg_kv_ptr,
        kv_ranges=kv_ranges,
    )


_BITS = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}


def _token_bits(x: torch.Tensor, bdim: int | None, tdim: int, B: int, T: int) -> torch.Tensor:
    """[B, T, D] integer view of the bits of ``x``'s entries per (b, t) (bdim None: broadcast over rows)."""
    if bdim is None:
        x = x.movedim(tdim, 0).reshape(1, T, -1).expand(B, T, -1)
    else:
        x = x.movedim((bdim, tdim), (0, 1)).reshape(B, T, -1)
    x = x.detach().contiguous()
    if x.is_floating_point() or x.is_complex():
        x = x.view(_BITS[x.element_size()])
    return x.cpu()


def content_plan(values, valid: torch.Tensor) -> ReplayPlan:
    """The plan of a batch known only by its activations: ``values`` are (tensor, bdim, tdim) with B and T at
    those dims, ``valid`` [B, T] 0/1 says which tokens are real. Two rows share a token where every value agrees
    on every column up to it (and the valid bits do), as ``build_plan`` shares by token ids.

    Each token's entries are hashed to one int64 (the bits times fixed random odd weights, summed with int64
    wrap-around) and the hashes take the place of token ids. A hash collision could only make the plan share
    too much; ``shares_exactly`` rules that out, and the caller must check it before trusting the plan."""
    B, T = valid.shape
    key = torch.zeros(B, T, dtype=torch.int64)
    gen = torch.Generator().manual_seed(0x5EED)
    for x, bdim, tdim in values:
        bits = _token_bits(x, bdim, tdim, B, T).to(torch.int64)
        w = torch.randint(-(1 << 62), 1 << 62, (bits.shape[-1],), generator=gen, dtype=torch.int64) | 1
        key = key * 1000003 + (bits * w).sum(-1)
    return build_plan(key, valid)


def shares_exactly(plan: ReplayPlan, x: torch.Tensor, bdim: int | None, tdim: int) -> bool:
    """True iff at every real (b, t) ``x`` equals, bit for bit, its entry at the token the plan computes for
    (b, t): then gathering one occurrence per packed token and replaying it loses nothing."""
    bits = _token_bits(x, bdim, tdim, plan.batch_size, plan.seq_len)
    flat = bits.reshape(plan.batch_size * plan.seq_len, -1)
    scatter = plan.scatter_index.reshape(-1)
    real = torch.nonzero(scatter < plan.num_packed).reshape(-1)
    rep = flat.index_select(0, plan.gather_index).index_select(0, scatter.index_select(0, real))
    return torch.equal(flat.index_select(0, real), rep)


@dataclass(frozen=True, eq=False)
class SharedSplit:
    """A plan's packed tokens reordered shared-first, for ``detach_prefix``: the tokens that two or more rows
    hold (S, ancestor-closed, so they form a prefix tree of their own, in DFS order) run without autograd, and
    the tokens one row holds (R) run with it, attending to S's keys as constants.

    New packed order: the S tokens in their DFS order, then the R tokens in theirs. In every segment of the
    plan the S tokens come first (an ancestor is held by every row that holds its descendant), and all of a
    segment's ancestors are S tokens (rows that share them), so both parts keep a segment CSR:

    * S attention: ``subtree_end_s`` / ``seg_q_s`` / ``seg_kv_ptr_s`` / ``kv_ranges_s`` over the S tokens alone;
    * R attention: ``seg_q_r`` in R coordinates, ``kv_ranges_r`` in the coordinates of ``cat(keys_S, keys_R)``
      (ancestors and the segment's own S part as visible ranges, then its own R range, causal).
    """

    num_shared: int
    num_branch: int
    gather_s: torch.Tensor   # [N_S] flat b*T+t of each S token (as ReplayPlan.gather_index)
    columns_s: torch.Tensor
    gather_r: torch.Tensor   # [N_R]
    columns_r: torch.Tensor
    scatter_index: torch.Tensor  # [B, T] index into cat(S, R); N for pads
    subtree_end_s: torch.Tensor
    seg_q_s: torch.Tensor
    seg_kv_ptr_s: torch.Tensor
    kv_ranges_s: torch.Tensor
    seg_q_r: torch.Tensor
    seg_kv_ptr_r: torch.Tensor
    kv_ranges_r: torch.Tensor

    def block_layout_s(self, block_q: int, block_k: int):
        """The S tree's block layout for the Triton kernels (the R attention runs the PyTorch path)."""
        from replaycompile.kernels.block_sparse import BlockLayout, tree_block_mask

        visible, full = tree_block_mask(self.subtree_end_s, block_q, block_k)
        return BlockLayout.from_block_masks(visible, full, block_q, block_k, self.num_shared, self.num_shared)

    def select_columns(self, start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """As ``ReplayPlan.select_columns`` in the shared-first order, with the selected tokens split:
        ``(index_s [M_S] into S, index_r [M_R] into R, scatter [B, K] into cat(selected S, selected R))``."""
        n = self.num_shared + self.num_branch
        sub = self.scatter_index[:, slice(start, stop)]
        if sub.numel() == 0:
            e = torch.empty(0, dtype=torch.int64)
            return e, e.clone(), torch.empty(sub.shape, dtype=torch.int64)
        uniq, inv = torch.unique(sub, sorted=True, return_inverse=True)
        if int(uniq[-1]) == n:
            uniq = uniq[:-1]
        is_s = uniq < self.num_shared
        return (uniq[is_s].to(torch.int64), (uniq[~is_s] - self.num_shared).to(torch.int64),
                inv.to(torch.int64).reshape(sub.shape))


def multiplicity(plan: ReplayPlan) -> torch.Tensor:
    """int64 [N]: how many rows hold each packed token."""
    s = plan.scatter_index.reshape(-1)
    return torch.bincount(s[s < plan.num_packed], minlength=plan.num_packed)


def split_shared(plan: ReplayPlan) -> SharedSplit:
    """The plan reordered shared-first (see ``SharedSplit``)."""
    i64 = torch.int64
    n = plan.num_packed
    shared = multiplicity(plan) >= 2
    cs = torch.zeros(n + 1, dtype=i64)
    cs[1:] = shared.to(i64).cumsum(0)            # S tokens before old index i
    n_s = int(cs[-1])
    new_of = torch.where(shared, cs[:-1], n_s + torch.arange(n, dtype=i64) - cs[:-1])
    new_of = torch.cat((new_of, torch.tensor([n], dtype=i64)))   # pads stay N
    old_s = torch.nonzero(shared).reshape(-1)
    old_r = torch.nonzero(~shared).reshape(-1)
    csl = cs.tolist()
    seg_s, ranges_s, ptr_s = [], [], [0]
    seg_r, ranges_r, ptr_r = [], [], [0]
    for s, (qs, qe) in enumerate(plan.seg_q.tolist()):
        lo, hi = int(plan.seg_kv_ptr[s]), int(plan.seg_kv_ptr[s + 1])
        anc = [(csl[a], csl[b]) for a, b in plan.kv_ranges[lo:hi - 1].tolist()]   # all S tokens
        s_lo, s_hi = csl[qs], csl[qe]                 # the segment's S part, in S coordinates
        r_lo, r_hi = qs - csl[qs], qe - csl[qe]       # its R part, in R coordinates
        if s_hi > s_lo:
            seg_s.append((s_lo, s_hi))
            ranges_s.extend(anc + [(s_lo, s_hi)])
            ptr_s.append(len(ranges_s))
        if r_hi > r_lo:
            seg_r.append((r_lo, r_hi))
            own_s = [(s_lo, s_hi)] if s_hi > s_lo else []
            ranges_r.extend(anc + own_s + [(n_s + r_lo, n_s + r_hi)])
            ptr_r.append(len(ranges_r))

    def t2(x):
        return torch.tensor(x, dtype=i64).reshape(-1, 2)

    # subtree ends of S tokens, in S coordinates: a subtree of S tokens is contiguous in the old order
    se_old = plan.subtree_end.index_select(0, old_s)
    return SharedSplit(
        num_shared=n_s,
        num_branch=n - n_s,
        gather_s=plan.gather_index.index_select(0, old_s),
        columns_s=plan.columns.index_select(0, old_s),
        gather_r=plan.gather_index.index_select(0, old_r),
        columns_r=plan.columns.index_select(0, old_r),
        scatter_index=new_of.index_select(0, plan.scatter_index.reshape(-1)).reshape(plan.scatter_index.shape),
        subtree_end_s=cs.index_select(0, se_old),
        seg_q_s=t2(seg_s),
        seg_kv_ptr_s=torch.tensor(ptr_s, dtype=i64),
        kv_ranges_s=t2(ranges_s),
        seg_q_r=t2(seg_r),
        seg_kv_ptr_r=torch.tensor(ptr_r, dtype=i64),
        kv_ranges_r=t2(ranges_r),
    )
