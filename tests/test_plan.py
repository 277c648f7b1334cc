"""Tests for replaycompile.runtime.plan against a naive pure-Python prefix dictionary."""

from __future__ import annotations


import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replaycompile.runtime.plan import ReplayPlan, build_plan


SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ---------------------------------------------------------------------------
# batch generators
# ---------------------------------------------------------------------------

from helpers import prefix_keys  # noqa: E402
from strategies import any_batch, mutated_batches, rollout_batches  # noqa: E402,F401



# ---------------------------------------------------------------------------
# naive reference
# ---------------------------------------------------------------------------


def visible_from_subtree(plan: ReplayPlan) -> torch.Tensor:
    """[N, N] bool, [q, k] = k visible to q, from subtree_end."""
    n = plan.num_packed
    q = torch.arange(n)[:, None]
    k = torch.arange(n)[None, :]
    return (k <= q) & (q < plan.subtree_end[None, :])


def visible_from_csr(plan: ReplayPlan) -> torch.Tensor:
    n = plan.num_packed
    vis = torch.zeros(n, n, dtype=torch.bool)
    for s, (qs, qe) in enumerate(plan.seg_q.tolist()):
        rngs = plan.kv_ranges[plan.seg_kv_ptr[s] : plan.seg_kv_ptr[s + 1]].tolist()
        for ks, ke in rngs[:-1]:
            vis[qs:qe, ks:ke] = True
        for qi in range(qs, qe):
            vis[qi, qs : qi + 1] = True
    return vis


# ---------------------------------------------------------------------------
# the checks
# ---------------------------------------------------------------------------


def check_plan(ids, mask, pos):
    plan = build_plan(ids, mask, pos)
    keys, m = prefix_keys(ids, mask, pos)
    B, T = ids.shape
    N = plan.num_packed
    assert (plan.batch_size, plan.seq_len) == (B, T)

    # 1. counts
    real_nodes = {keys[b][t] for b in range(B) for t in range(T) if m[b][t]}
    assert N == len(real_nodes)
    assert plan.tokens_in == sum(map(sum, m))
    for name in ("gather_index", "columns", "scatter_index", "subtree_end", "seg_q", "seg_kv_ptr", "kv_ranges"):
        t_ = getattr(plan, name)
        assert t_.dtype == torch.int64 and t_.device.type == "cpu", name
    assert plan.gather_index.shape == (N,) and plan.subtree_end.shape == (N,)
    assert plan.scatter_index.shape == (B, T)

    # 2. scatter / gather agree with the prefix dictionary
    sc = plan.scatter_index.tolist()
    gi = plan.gather_index.tolist()
    assert plan.columns.tolist() == [g % T for g in gi]
    assert plan.scatter_index.reshape(-1)[plan.gather_index].tolist() == list(range(N))
    node_of_key = {}
    for b in range(B):
        for t in range(T):
            if not m[b][t]:
                assert sc[b][t] == N
                continue
            k = sc[b][t]
            assert 0 <= k < N
            gb, gt = divmod(gi[k], T)
            assert gt == t and keys[gb][gt] == keys[b][t] and m[gb][gt]
            # same packed index iff same key
            assert node_of_key.setdefault(keys[b][t], k) == k
    assert len(set(node_of_key.values())) == N

    # 3. visibility: per row, subtree_end reproduces causal & real
    vis = visible_from_subtree(plan)
    for b in range(B):
        for t in range(T):
            for t2 in range(T):
                if m[b][t] and m[b][t2]:
                    assert bool(vis[sc[b][t], sc[b][t2]]) == (t2 <= t), (b, t, t2)
    # globally, q sees exactly its ancestors-or-self
    if N:
        anc = torch.zeros(N, N, dtype=torch.bool)
        for b in range(B):
            reals = [sc[b][t] for t in range(T) if m[b][t]]
            for i, q in enumerate(reals):
                anc[q, reals[: i + 1]] = True
        assert torch.equal(vis, anc)
        assert bool((plan.subtree_end > torch.arange(N)).all()) and bool((plan.subtree_end <= N).all())

    # 4. segments and CSR
    seg = plan.seg_q.tolist()
    ptr = plan.seg_kv_ptr.tolist()
    assert plan.seg_q.shape == (len(seg), 2) and plan.kv_ranges.shape[1] == 2
    assert len(ptr) == len(seg) + 1 and ptr[0] == 0 and ptr[-1] == plan.kv_ranges.shape[0]
    cur = 0
    for s, (qs, qe) in enumerate(seg):
        assert qs == cur and qe > qs
        cur = qe
        rngs = plan.kv_ranges[ptr[s] : ptr[s + 1]].tolist()
        assert rngs and rngs[-1] == [qs, qe]
        flat = [x for r in rngs for x in r]
        assert all(ks < ke for ks, ke in rngs)
        assert flat == sorted(flat) and all(r[1] <= qs for r in rngs[:-1])
    assert cur == N
    csr = visible_from_csr(plan)
    assert torch.equal(csr, vis)
    assert int(csr.sum()) == int(vis.sum())
    return plan


def naive_select(plan, start, stop):
    sc = plan.scatter_index[:, start:stop].tolist()
    N = plan.num_packed
    uniq = sorted({k for row in sc for k in row if k != N})
    where = {k: i for i, k in enumerate(uniq)}
    return uniq, [[where.get(k, len(uniq)) for k in row] for row in sc]


def check_select(plan, start, stop):
    idx, scat = plan.select_columns(start, stop)
    uniq, ref = naive_select(plan, start, stop)
    assert idx.dtype == torch.int64 and scat.dtype == torch.int64
    assert idx.tolist() == uniq
    assert scat.shape == (plan.batch_size, len(range(plan.seq_len)[start:stop]))
    assert scat.tolist() == ref


# ---------------------------------------------------------------------------
# property tests
# ---------------------------------------------------------------------------


@SETTINGS
@given(any_batch)
def test_plan_matches_reference(batch):
    check_plan(*batch)


@SETTINGS
@given(any_batch, st.integers(-45, 45), st.integers(-45, 45))
def test_select_columns(batch, start, stop):
    plan = build_plan(*batch)
    check_select(plan, start, stop)
    T = plan.seq_len
    for a, b in [(0, T), (-5, -1), (T - 1, T), (0, 0), (3, 1), (-T, -T + 1)]:
        check_select(plan, a, b)


@SETTINGS
@given(rollout_batches())
def test_select_columns_cover_all(batch):
    """Selecting every column returns every packed token."""
    plan = build_plan(*batch)
    idx, scat = plan.select_columns(0, plan.seq_len)
    assert idx.tolist() == list(range(plan.num_packed))
    assert torch.equal(scat, plan.scatter_index)


# ---------------------------------------------------------------------------
# explicit cases
# ---------------------------------------------------------------------------


def test_group_sharing_prompt_right_padded():
    G, P, C = 8, 6, 10
    prompt = [1, 2, 3, 1, 2, 3]
    lens = [10, 3, 0, 7, 1, 10, 5, 2]
    ids = torch.zeros(G, P + C, dtype=torch.long)
    mask = torch.zeros(G, P + C, dtype=torch.long)
    for g, L in enumerate(lens):
        ids[g, :P] = torch.tensor(prompt)
        ids[g, P : P + L] = 100 + g  # completions differ at their first token
        mask[g, : P + L] = 1
    plan = check_plan(ids, mask, None)
    assert plan.num_packed == P + sum(lens)
    assert plan.tokens_in == G * P + sum(lens)
    # prompt is one segment; each non-empty completion a segment seeing it
    assert plan.seg_q.shape[0] == 1 + sum(L > 0 for L in lens)
    for s in range(1, plan.seg_q.shape[0]):
        rngs = plan.kv_ranges[plan.seg_kv_ptr[s] : plan.seg_kv_ptr[s + 1]].tolist()
        assert rngs[0] == [0, P]


def test_identical_rows():
    ids = torch.tensor([[5, 6, 7, 8, 9]] * 4)
    plan = check_plan(ids, None, None)
    assert plan.num_packed == 5
    assert plan.seg_q.tolist() == [[0, 5]]
    assert plan.kv_ranges.tolist() == [[0, 5]]
    assert plan.scatter_index.tolist() == [[0, 1, 2, 3, 4]] * 4


def test_no_sharing():
    ids = torch.arange(12).reshape(3, 4)
    mask = torch.tensor([[1, 1, 1, 1], [0, 1, 1, 1], [1, 1, 0, 0]])
    plan = check_plan(ids, mask, None)
    assert plan.num_packed == int(mask.sum()) == plan.tokens_in
    assert plan.subtree_end.tolist() == [4, 4, 4, 4, 7, 7, 7, 9, 9]


def test_pad_vs_real_diverges():
    ids = torch.tensor([[0, 1, 2], [0, 1, 2]])
    mask = torch.tensor([[0, 1, 1], [1, 1, 1]])
    plan = check_plan(ids, mask, None)
    assert plan.num_packed == 5


def test_position_ids_change_sharing():
    # Same tokens, different left padding: with default positions the real
    # tokens sit at different columns anyway, but with shared columns and
    # different positions they must not share.
    ids = torch.tensor([[4, 4, 1, 2], [4, 4, 1, 2]])
    mask = torch.ones(2, 4, dtype=torch.long)
    assert check_plan(ids, mask, None).num_packed == 4
    pos = torch.tensor([[0, 1, 2, 3], [0, 1, 5, 6]])
    assert check_plan(ids, mask, pos).num_packed == 6
    # left-pad-aware cumsum positions
    mask = torch.tensor([[0, 1, 1, 1], [1, 1, 1, 1]])
    ids = torch.tensor([[9, 4, 1, 2], [9, 4, 1, 2]])
    pos = (mask.cumsum(1) - 1).clamp(min=0)
    assert check_plan(ids, mask, pos).num_packed == 3 + 4


def test_broadcast_position_ids():
    ids = torch.tensor([[1, 2, 3], [1, 2, 4]])
    p1 = build_plan(ids, None, torch.arange(3)[None, :] + 7)
    p2 = build_plan(ids, None, (torch.arange(3) + 7).expand(2, 3).clone())
    check_plan(ids, None, torch.arange(3)[None, :])
    assert torch.equal(p1.scatter_index, p2.scatter_index)
    assert p1.num_packed == 4


def test_all_pad_batch():
    plan = check_plan(torch.zeros(3, 2, dtype=torch.long), torch.zeros(3, 2, dtype=torch.long), None)
    assert plan.num_packed == 0 and plan.seg_q.shape == (0, 2)
    assert plan.seg_kv_ptr.tolist() == [0] and plan.kv_ranges.shape == (0, 2)
    idx, scat = plan.select_columns(0, 2)
    assert idx.numel() == 0 and scat.tolist() == [[0, 0]] * 3


def test_input_types_and_devices():
    ids = torch.tensor([[1, 2], [1, 3]], dtype=torch.int32)
    plan = build_plan(ids, torch.ones(2, 2, dtype=torch.bool), torch.tensor([[0, 1]], dtype=torch.int16))
    assert plan.num_packed == 3
    assert build_plan([[1, 2], [1, 3]]).num_packed == 3


@pytest.mark.parametrize(
    "args, name",
    [
        ((torch.tensor([1, 2, 3]),), "input_ids"),
        ((torch.zeros(2, 3, 1, dtype=torch.long),), "input_ids"),
        ((torch.zeros(2, 3),), "input_ids"),  # float ids
        ((torch.zeros(2, 3, dtype=torch.long), torch.ones(2, 4, dtype=torch.long)), "attention_mask"),
        ((torch.zeros(2, 3, dtype=torch.long), torch.ones(2, 3)), "attention_mask"),
        ((torch.zeros(2, 3, dtype=torch.long), torch.ones(3, dtype=torch.long)), "attention_mask"),
        ((torch.zeros(2, 3, dtype=torch.long), torch.full((2, 3), 2)), "attention_mask"),
        ((torch.zeros(2, 3, dtype=torch.long), None, torch.zeros(3, 3, dtype=torch.long)), "position_ids"),
        ((torch.zeros(2, 3, dtype=torch.long), None, torch.zeros(2, 3)), "position_ids"),
        ((torch.zeros(2, 3, dtype=torch.long), None, torch.arange(3)), "position_ids"),
        ((torch.zeros(0, 3, dtype=torch.long),), "input_ids"),
        ((torch.zeros(2, 0, dtype=torch.long),), "input_ids"),
    ],
)
def test_validation(args, name):
    with pytest.raises(ValueError, match=name):
        build_plan(*args)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_refine_selection_keeps_exactly_the_kept_positions(data):
    """ReplayPlan.refine_selection: every kept real position reads the token it read before; every dropped one
    reads the pad slot; the refined index holds exactly the tokens some kept position reads, in order; fewer than
    two would remain: unchanged."""
    from replaycompile.runtime.plan import ReplayPlan
    b = data.draw(st.integers(1, 4))
    k = data.draw(st.integers(1, 6))
    m = data.draw(st.integers(1, 8))
    index = torch.tensor(sorted(data.draw(st.lists(st.integers(0, 50), min_size=m, max_size=m, unique=True))))
    scatter = torch.tensor(data.draw(st.lists(st.lists(st.integers(0, m), min_size=k, max_size=k),
                                              min_size=b, max_size=b)))
    keep = torch.tensor(data.draw(st.lists(st.lists(st.booleans(), min_size=k, max_size=k), min_size=b,
                                           max_size=b)))
    idx2, sc2, n_pos, n_tok = ReplayPlan.refine_selection(index, scatter, keep)
    real = scatter < m
    kept = real & keep
    used = sorted({int(x) for x in scatter[kept].tolist()})
    if n_pos == 0 and n_tok == 0 and (len(used) < 2 or bool((kept == real).all())):
        assert torch.equal(idx2, index) and torch.equal(sc2, scatter)
        return
    m2 = idx2.shape[0]
    assert idx2.tolist() == [int(index[u]) for u in used]
    assert n_pos == int(real.sum()) - int(kept.sum()) and n_tok == m - m2
    assert torch.equal(idx2[sc2[kept]], index[scatter[kept]])
    assert bool((sc2[~kept] == m2).all())
