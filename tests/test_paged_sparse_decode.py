"""kernels/paged_sparse_decode.py (the vLLM plugin's selection and gathered decode) against its reference, on a
cache in vLLM's CPU ``vec`` layout built here (no vLLM needed; tests/test_vllm.py checks the layout against vLLM's
own cache writer and kernel)."""

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from replaycompile.kernels.paged_sparse_decode import (
    gathered_decode,
    new_page_bounds,
    page_budget,
    select_pages,
    update_page_bounds,
    virtual_cache,
)
from replaycompile.kernels.paged_sparse_decode_reference import paged_sparse_decode_reference


def write_vec_cache(kv_cache, key, value, slots):
    """vLLM's vec layout: the cache [NB, Hkv, bs, 2D] read as [NB, Hkv, 2bs, D]; per block and head the keys as
    [D, bs] (transposed), then the values as [bs, D]."""
    nb, hkv, bs, two_d = kv_cache.shape
    d = two_d // 2
    flat = kv_cache.view(nb, hkv, 2 * bs * d)
    for i, s in enumerate(slots.tolist()):
        b, o = divmod(s, bs)
        for h in range(hkv):
            flat[b, h, torch.arange(d) * bs + o] = key[i, h]
            flat[b, h, bs * d + o * d: bs * d + (o + 1) * d] = value[i, h]


def build(n, hkv, g, d, bs, lengths, seed, num_blocks=None):
    """Rows of random keys/values written to shuffled blocks; returns what select/decode and the reference need."""
    gen = torch.Generator().manual_seed(seed)
    pages = [math.ceil(L / bs) for L in lengths]
    nb = num_blocks or sum(pages) + 3
    perm = torch.randperm(nb, generator=gen)
    cache = torch.zeros(nb, hkv, bs, 2 * d)
    bounds = new_page_bounds(nb, hkv, d)
    table = torch.zeros(n, max(pages), dtype=torch.int32)
    keys, values, used = [], [], 0
    for r, L in enumerate(lengths):
        blocks = perm[used:used + pages[r]]
        used += pages[r]
        table[r, :pages[r]] = blocks.to(torch.int32)
        k = torch.randn(L, hkv, d, generator=gen)
        v = torch.randn(L, hkv, d, generator=gen)
        slots = blocks[torch.arange(L) // bs] * bs + torch.arange(L) % bs
        write_vec_cache(cache, k, v, slots)
        # the cache is written in steps (a prefill chunk, then tokens one at a time), as vLLM writes it
        cut = max(1, L // 2)
        update_page_bounds(bounds, k[:cut], slots[:cut], bs)
        for t in range(cut, L):
            update_page_bounds(bounds, k[t:t + 1], slots[t:t + 1], bs)
        keys.append(k.transpose(0, 1))
        values.append(v.transpose(0, 1))
    q = torch.randn(n, hkv * g, d, generator=gen)
    return q, cache, bounds, table, keys, values


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 3), hkv=st.integers(1, 2), g=st.integers(1, 2), bs=st.sampled_from([4, 8]),
       lengths=st.lists(st.integers(1, 60), min_size=3, max_size=3), topk=st.integers(0, 6),
       sink=st.integers(1, 2), local=st.integers(1, 2), seed=st.integers(0, 10_000))
def test_selection_and_gathered_decode_match_the_reference(n, hkv, g, bs, lengths, topk, sink, local, seed):
    d = 8
    lengths = lengths[:n]
    q, cache, bounds, table, keys, values = build(n, hkv, g, d, bs, lengths, seed)
    seq = torch.tensor(lengths)
    budget = page_budget(seq, torch.tensor([topk]), 1 << 20, bs, sink, local)
    blocks, lens = select_pages(q, bounds, table, seq, budget, bs, sink, local)
    out = gathered_decode(q, cache, blocks, lens, scale=d ** -0.5)
    ref = paged_sparse_decode_reference(q, keys, values, [topk] * n, bs, sink, local, d ** -0.5)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)


def test_full_budget_is_dense_attention():
    n, hkv, g, d, bs = 3, 2, 2, 8, 8
    lengths = [45, 8, 17]
    q, cache, bounds, table, keys, values = build(n, hkv, g, d, bs, lengths, seed=3)
    seq = torch.tensor(lengths)
    budget = page_budget(seq, torch.tensor([1000]), 1 << 20, bs, 1, 1)
    assert budget.tolist() == [6, 1, 3]  # every page
    blocks, lens = select_pages(q, bounds, table, seq, budget, bs, 1, 1)
    out = gathered_decode(q, cache, blocks, lens, scale=d ** -0.5)
    for r in range(n):
        k, v = keys[r].repeat_interleave(g, 0), values[r].repeat_interleave(g, 0)
        dense = torch.softmax(q[r][:, None] @ k.transpose(-1, -2) * d ** -0.5, -1) @ v
        torch.testing.assert_close(out[r], dense[:, 0], rtol=1e-5, atol=1e-6)


def test_page_bounds_reset_when_a_block_is_reused():
    """A block written from offset 0 again holds a new sequence: its bounds are the new keys', not both."""
    nb, hkv, d, bs = 4, 2, 8, 8
    bounds = new_page_bounds(nb, hkv, d)
    old = torch.full((bs, hkv, d), 100.0)
    update_page_bounds(bounds, old, torch.arange(bs) + 2 * bs, bs)
    new = torch.randn(3, hkv, d)
    update_page_bounds(bounds, new, torch.arange(3) + 2 * bs, bs)
    torch.testing.assert_close(bounds[2, :, 0], new.amax(0))
    torch.testing.assert_close(bounds[2, :, 1], new.amin(0))
    # padding slots (-1) are skipped and other blocks are untouched
    update_page_bounds(bounds, torch.full((2, hkv, d), 1e9), torch.tensor([-1, -1]), bs)
    assert bool(torch.isinf(bounds[0]).all()) and float(bounds[:, :, 0].max()) < 1e9


def test_selection_is_per_kv_head():
    """Two KV heads whose keys favour different pages select different pages (one table per head)."""
    hkv, g, d, bs = 2, 1, 4, 4
    L = 6 * bs
    key = torch.full((L, hkv, d), -1.0)
    key[2 * bs:3 * bs, 0] = 5.0  # head 0's match: page 2
    key[4 * bs:5 * bs, 1] = 5.0  # head 1's match: page 4
    bounds = new_page_bounds(8, hkv, d)
    update_page_bounds(bounds, key, torch.arange(L), bs)
    q = torch.ones(1, hkv * g, d)
    table = torch.arange(6, dtype=torch.int32)[None]
    seq = torch.tensor([L])
    budget = page_budget(seq, torch.tensor([1]), 1 << 20, bs, 1, 1)
    blocks, _ = select_pages(q, bounds, table, seq, budget, bs, 1, 1)
    pages = (blocks // hkv).tolist()
    assert pages == [[0, 2, 5], [0, 4, 5]], pages
    assert (blocks % hkv).tolist() == [[0, 0, 0], [1, 1, 1]]


def test_virtual_cache_is_a_view():
    cache = torch.randn(3, 2, 4, 2 * 8)
    k, v = virtual_cache(cache)
    assert k.shape == (6, 1, 4, 8) and k.data_ptr() == cache.data_ptr()
