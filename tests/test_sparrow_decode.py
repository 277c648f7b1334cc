"""The sparse decode ops (kernels/sparse_decode.py) against their reference (kernels/sparse_decode_reference.py),
and the page centroids a caller's ``SparseDecodeState`` keeps."""

from __future__ import annotations

import logging

import pytest
import torch

from replaycompile.kernels import sparse_decode as sd
from replaycompile.kernels.sparse_decode_reference import select_pages_reference, sparse_decode_reference
from replaycompile.sparrow.schedule import SparrowSchedule


def _decode_case(b=2, hq=4, hkv=2, d=16, length=100, kv_len=77, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    k = torch.randn(b, hkv, length, d, generator=g).to(dtype)
    v = torch.randn(b, hkv, length, d, generator=g).to(dtype)
    q = torch.randn(b, hq, 1, d, generator=g).to(dtype)
    vis = torch.zeros(b, length, dtype=torch.bool)
    vis[:, :kv_len] = True
    vis[-1, :21] = False  # a left-padded row
    return q, k, v, vis


def _softmax_attention(q, k, v, vis, kv_len, scale):
    """Plain softmax attention of every query head over its KV head's visible keys, in float64: the dense
    decode specification, independent of the op's code."""
    g = q.shape[1] // k.shape[1]
    kk = k[:, :, :kv_len].double().repeat_interleave(g, 1)
    vv = v[:, :, :kv_len].double().repeat_interleave(g, 1)
    s = (q.double() @ kk.transpose(-1, -2)) * scale
    s = s.masked_fill(~vis[:, None, None, :kv_len], float("-inf"))
    return (s.softmax(-1) @ vv).to(q.dtype)


@pytest.mark.parametrize("page_score", ["bound", "centroid"])
@pytest.mark.parametrize("use_triton", [False, True])
@pytest.mark.parametrize("topk", [0, 1, 3])
def test_sparse_decode_matches_reference(topk, use_triton, page_score):
    q, k, v, vis = _decode_case(length=160, kv_len=150)
    assert 1 + 2 + topk < 10  # 10 pages: every budget really selects
    sd.reset_page_state()
    kept = select_pages_reference(q, k, vis, 150, topk, 16, 1, 2, page_score)
    ref = sparse_decode_reference(q, k, v, vis, kept, 16, 0.25)
    out = sd.sparse_decode(q, k, v, vis[:, None, None, :], torch.tensor([150, topk]), 0.25, 16, 1, 2, use_triton, 0,
                           False, page_score)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    # the sparse path ran: pages were left out, and it shows in the output
    assert not bool(kept.all()) and (out - _softmax_attention(q, k, v, vis, 150, 0.25)).abs().max() > 1e-3
    # the selected pages: exactly the reference's among pages that hold a visible key
    pages = sd.select_pages(q, k, vis, 150, topk, 16, 1, 2, state_key=1, page_score=page_score)
    got = torch.zeros_like(kept).scatter_(2, pages, True)
    has = torch.stack([vis[:, p * 16:(p + 1) * 16].any(1) for p in range(kept.shape[2])], 1)[:, None]
    assert torch.equal(got & has, kept & has)


def test_the_two_page_scores_choose_differently():
    """On random keys the scores rank pages differently (else the parametrised test above could not tell them
    apart), and the default is the bound score."""
    q, k, v, vis = _decode_case(length=160, kv_len=150)
    bound = select_pages_reference(q, k, vis, 150, 3, 16, 1, 2, "bound")
    assert torch.equal(select_pages_reference(q, k, vis, 150, 3, 16, 1, 2), bound)
    assert not torch.equal(select_pages_reference(q, k, vis, 150, 3, 16, 1, 2, "centroid"), bound)
    with pytest.raises(ValueError, match="unknown page score 'mean'"):
        sd.sparse_decode(q, k, v, vis[:, None, None, :], torch.tensor([150, 1]), 0.25, 16, 1, 2, False, 0, False,
                         "mean")


def _needle_case():
    """One row, one head, 6 pages of 16 keys along dimension 0 of an 8-dim space, query e0. Sink page 0 and
    local pages 4, 5 are reserved; one page is chosen from pages 1-3. Page 2 holds the needle, one key 8 e0,
    among 15 decoys at -0.5 e0 (mean 1/32); pages 1 and 3 hold keys at 0.2 e0 and 0.1 e0."""
    k = torch.zeros(1, 1, 96, 8)
    k[0, 0, 16:32, 0] = 0.2
    k[0, 0, 32:48, 0] = -0.5
    k[0, 0, 40, 0] = 8.0  # the needle
    k[0, 0, 48:64, 0] = 0.1
    v = torch.zeros(1, 1, 96, 8)
    v[0, 0, 40, 1] = 1.0  # only the needle's value reads out
    q = torch.zeros(1, 1, 1, 8)
    q[0, 0, 0, 0] = 1.0
    return q, k, v, torch.ones(1, 96, dtype=torch.bool)


def test_the_bound_score_keeps_a_needle_page_the_centroid_score_drops():
    """Issue 11: the centroid dilutes one strongly matching key by its page's 15 others, so its page loses to
    pages of uniformly weak matches; the bound score (max over the page's keys per dimension) keeps it."""
    q, k, v, vis = _needle_case()
    for score, want in (("bound", [0, 2, 4, 5]), ("centroid", [0, 1, 4, 5])):
        ref = select_pages_reference(q, k, vis, 96, 1, 16, 1, 2, score)
        assert torch.nonzero(ref[0, 0]).reshape(-1).tolist() == want, score
        got = sd.select_pages(q, k, vis, 96, 1, 16, 1, 2, state=sd.SparseDecodeState(), page_score=score)
        assert got[0, 0].tolist() == want, score
    # the op attends to the needle with the (default) bound score and misses it with centroids
    mask, budget = vis[:, None, None, :], torch.tensor([96, 1])
    with sd.SparseDecodeState().active():
        hit = sd.sparse_decode(q, k, v, mask, budget, 1.0, 16, 1, 2, False, 0)
        miss = sd.sparse_decode(q, k, v, mask, budget, 1.0, 16, 1, 2, False, 1, False, "centroid")
    assert float(hit[0, 0, 0, 1]) > 0.9 and float(miss[0, 0, 0, 1]) == 0.0


def test_triton_decode_bf16_and_splits():
    q, k, v, vis = _decode_case(hq=8, hkv=2, d=32, length=200, kv_len=190, dtype=torch.bfloat16)
    pages = torch.arange(12).expand(2, 2, 12)
    kept = torch.ones(2, 2, 12, dtype=torch.bool)
    ref = sparse_decode_reference(q, k, v, vis, kept, 16, 0.2)
    for n_split in (1, 3):
        out = sd.triton_decode(q, k, v, vis, pages, 16, 0.2, n_split=n_split, pages_per_iter=2)
        torch.testing.assert_close(out.float(), ref.float(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("use_triton", [False, True])
def test_full_budget_is_dense_decode_exactly(use_triton):
    q, k, v, vis = _decode_case(length=112, kv_len=77)
    dense = _softmax_attention(q, k, v, vis, 77, 0.25)
    # 5 pages, 1 + 2 + 2 >= 5: the op attends to every page
    out = sd.sparse_decode(q, k, v, vis[:, None, None, :], torch.tensor([77, 2]), 0.25, 16, 1, 2, use_triton, 0)
    torch.testing.assert_close(out, dense, rtol=1e-6, atol=1e-6)
    # and the selection path with a budget that covers every page gives the same attention
    sd.reset_page_state()
    pages = sd.select_pages(q, k, vis, 77, 2, 16, 1, 2, state_key=2)
    assert torch.equal(pages, torch.arange(5).expand(2, 2, 5))
    torch.testing.assert_close(sd._gather_decode(q, k, v, vis, pages, 16, 0.25), dense, rtol=1e-6, atol=1e-6)


def test_a_cache_not_in_whole_pages_is_copied_with_a_warning(caplog):
    """The CPU path gathers whole contiguous pages: any other cache is padded and copied every step (correct,
    slow), which says so once per shape and counts in ``cache_copies``."""
    q, k, v, vis = _decode_case(length=100, kv_len=90)
    kept = select_pages_reference(q, k, vis, 90, 1, 16, 1, 2)
    ref = sparse_decode_reference(q, k, v, vis, kept, 16, 0.25)
    sd.reset_page_state()
    before = sd.cache_copies()
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        for _ in range(2):
            out = sd.sparse_decode(q, k, v, vis[:, None, None, :], torch.tensor([90, 1]), 0.25, 16, 1, 2, False, 13)
            torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    assert sd.cache_copies() == before + 2
    msgs = [r.getMessage() for r in caplog.records if "padded and copied" in r.getMessage()]
    assert len(msgs) == 1 and "[2, 2, 100, 16]" in msgs[0] and "not a multiple of the page size 16" in msgs[0], msgs
    caplog.clear()
    kt = k.transpose(1, 2).contiguous().transpose(1, 2)[:, :, :96]  # whole pages, strided
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        out = sd.sparse_decode(q, kt, v[:, :, :96], vis[:, None, None, :96], torch.tensor([90, 1]), 0.25, 16, 1, 2,
                               False, 14)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    assert "because it is not contiguous:" in caplog.text and "not a multiple" not in caplog.text


def test_page_centroids_are_incremental_and_reset_on_a_new_sequence():
    q, k, v, vis = _decode_case(length=128, kv_len=60)
    state = sd.SparseDecodeState()
    for n in range(60, 100):  # decode: one more visible key per step
        vis[:, n - 1] = True
        vis[-1, :21] = False
        sd.select_pages(q, k, vis, n, 1, 16, 1, 2, state_key=7, state=state)
    st = next(iter(state.pages.values()))
    fresh = sd.PageState(k, 16)
    fresh.update(k, vis, 99)
    torch.testing.assert_close(st.sums, fresh.sums)
    assert torch.equal(st.kmax, fresh.kmax) and torch.equal(st.kmin, fresh.kmin)
    # the max / min are those of each page's visible keys (row 1's first 21 keys are padding); page 7, past the
    # 99 written tokens, keeps the identities
    kk = k[:, :, :96].reshape(2, 2, 6, 16, 16)
    pv = vis[:, :96].reshape(2, 1, 6, 16, 1)
    torch.testing.assert_close(st.kmax[:, :, :6], kk.masked_fill(~pv, float("-inf")).amax(3))
    torch.testing.assert_close(st.kmin[:, :, :6], kk.masked_fill(~pv, float("inf")).amin(3))
    assert bool((st.kmax[0, :, 7:] == float("-inf")).all()) and bool((st.kmin[0, :, 7:] == float("inf")).all())
    # a cache not sized in whole pages (99 slots): its last page is 3 keys
    short = sd.PageState(k[:, :, :99], 16)
    short.update(k[:, :, :99], vis, 99)
    assert torch.equal(short.kmax, st.kmax[:, :, :7]) and torch.equal(short.kmin, st.kmin[:, :, :7])
    torch.testing.assert_close(short.kmax[:, :, 6], k[:, :, 96:99].amax(2))
    assert st.upto == 99
    k2 = k.clone()
    k2[:, :, 0] += 1  # another sequence in the same cache buffer
    sd.select_pages(q, k2, vis, 99, 1, 16, 1, 2, state_key=7, state=state)
    fresh2 = sd.PageState(k2, 16)
    fresh2.update(k2, vis, 99)
    torch.testing.assert_close(st.sums, fresh2.sums)
    assert torch.equal(st.kmax, fresh2.kmax) and torch.equal(st.kmin, fresh2.kmin)  # reset, not max'ed over both


def test_the_op_keeps_its_centroids_in_the_callers_state():
    """The decode op keeps nothing of its own between calls: page centroids go to the state the caller made
    current (``active()``), else to the default state; ``reset_page_state`` empties the current one only."""
    q, k, v, vis = _decode_case(length=160, kv_len=150)
    mask, budget = vis[:, None, None, :], torch.tensor([150, 1])
    mine = sd.SparseDecodeState()
    sd.default_state().clear()
    with mine.active():
        got = sd.sparse_decode(q, k, v, mask, budget, 0.25, 16, 1, 2, False, 3)
        assert sd.current_state() is mine
    assert [key[0] for key in mine.pages] == [3] and mine.buffers and not sd.default_state().pages
    assert sd.current_state() is sd.default_state()
    torch.testing.assert_close(sd.sparse_decode(q, k, v, mask, budget, 0.25, 16, 1, 2, False, 3), got)
    assert [key[0] for key in sd.default_state().pages] == [3]
    sd.reset_page_state()
    assert not sd.default_state().pages and mine.pages


def test_reserved_pages_that_coincide_free_their_slot():
    """A heavily left-padded row: its sink page is one of the local pages, and the freed slot goes to the next
    best page, as the reference says (the budget per row stays sink + local + topk)."""
    q, k, v, vis = _decode_case(length=160, kv_len=150)
    vis[-1, :130] = False  # row 1: real tokens only in pages 8 and 9 -> sink page 8 is also a local page
    sd.reset_page_state()
    kept = select_pages_reference(q, k, vis, 150, 1, 16, 1, 2)
    pages = sd.select_pages(q, k, vis, 150, 1, 16, 1, 2, state_key=11)
    got = torch.zeros_like(kept).scatter_(2, pages, True)
    has = torch.stack([vis[:, p * 16:(p + 1) * 16].any(1) for p in range(kept.shape[2])], 1)[:, None]
    assert torch.equal(got & has, kept & has)
    ref = sparse_decode_reference(q, k, v, vis, kept, 16, 0.25)
    out = sd.sparse_decode(q, k, v, vis[:, None, None, :], torch.tensor([150, 1]), 0.25, 16, 1, 2, False, 12)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_opcheck_decode_ops():
    q, k, v, vis = _decode_case()
    mask = vis[:, None, None, :]
    torch.library.opcheck(torch.ops.replaycompile.sparse_decode.default,
                          (q, k, v, mask, torch.tensor([77, 1]), 0.25, 16, 1, 2, False, 3))
    for score in ("bound", "centroid"):
        torch.library.opcheck(torch.ops.replaycompile.sparse_decode.default,
                              (q, k, v, mask, torch.tensor([77, 1]), 0.25, 16, 1, 2, False, 3, False, score))
    torch.library.opcheck(torch.ops.replaycompile.sparrow_budget.default,
                          (mask, SparrowSchedule(pages=(1, 2)).table(), 64))
    assert sd.sparrow_budget(mask, torch.tensor([1, 2, 3]), 64).tolist() == [77, 2]


def test_decode_kernel_compiles_for_hopper():
    """No GPU here: compile the Triton split-K decode kernel ahead of time for sm_90, as the block-sparse
    kernels are (tests/test_block_sparse.py)."""
    import inspect

    from trees import compile_for_hopper

    consts = dict(GROUP=4, BLOCK_G=16, HEAD_DIM=128, BLOCK_D=128, PAGE=16, PAGES_PER_ITER=4, N_SPLIT=8, UPCAST=False)
    sig = {}
    for name in inspect.signature(sd._decode_kernel).parameters:
        if name in consts:
            sig[name] = "constexpr"
        elif name in ("Q", "K", "V"):
            sig[name] = "*bf16"
        elif name in ("O_ACC", "O_M", "O_L"):
            sig[name] = "*fp32"
        elif name == "VIS":
            sig[name] = "*i8"
        elif name == "PAGES":
            sig[name] = "*i32"
        elif name == "scale_log2":
            sig[name] = "fp32"
        else:
            sig[name] = "i32"
    # fails (not skips) where the Triton wheel ships ptxas: this is CI's only Hopper check of the decode kernel
    k = compile_for_hopper(sd._decode_kernel, sig, consts, num_warps=4, num_stages=2)
    assert k.metadata.shared <= 232448


def test_one_mask_reading_and_one_bucket_rule():
    """The decode op, the passes and DistillSparse read a mask through one function (kernels/block_sparse.py),
    and the budget node picks the page-table entry ``SparrowSchedule.bucket`` does."""
    from replaycompile.kernels.block_sparse import mask_visible
    from replaycompile.passes.mask_probe import visible

    lo = torch.finfo(torch.float32).min
    additive = torch.tensor([0.0, lo, 0.0, float("-inf")])
    assert mask_visible(additive).tolist() == [True, False, True, False]
    assert visible(additive).tolist() == [True, False, True, False]
    soft = torch.tensor([0.0, -0.5, lo])  # a bias, not a visibility pattern: the strict reading says so
    assert mask_visible(soft).tolist() == [True, True, False] and visible(soft) is None
    assert visible(torch.tensor([1, 0])) is None
    both = torch.tensor([True, False])
    assert mask_visible(both) is both and visible(both) is both
    sched = SparrowSchedule(pages=(1, 2, 3), bucket_tokens=64)
    table = sched.table(padded=True)
    for kv_len in (1, 63, 64, 65, 128, 129, 192, 193, 5000):
        mask = torch.zeros(1, 1, 1, 6000, dtype=torch.bool)
        mask[..., :kv_len] = True
        assert sd.sparrow_budget(mask, table, 64).tolist() == [kv_len, sched.topk_pages(kv_len)], kv_len
        assert sched.topk_pages(kv_len) == sched.pages[min((kv_len - 1) // 64, 2)]
