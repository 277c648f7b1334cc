"""Sparrow's acceptance metric and monitor (replaycompile/sparrow/acceptance_metric.py) and the TIS policy loss
(replaycompile/sparrow/losses.py)."""

from __future__ import annotations

import logging
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from replaycompile.sparrow.acceptance_metric import AcceptanceMonitor, acceptance, acceptance_summary, acceptance_topk
from replaycompile.sparrow.losses import tis_policy_loss


def test_acceptance_by_hand():
    p = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    q = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)
    a = acceptance(p.log()[None], q.log()[None])
    assert a.shape == (1,) and abs(a.item() - (0.2 + 0.3 + 0.2)) < 1e-12
    assert abs(acceptance(p.log(), p.log() + 3.0).item() - 1.0) < 1e-12  # logits are shift invariant
    # top-k: a lower bound, exact when k covers the vocabulary
    lb = acceptance_topk(p.log()[:2], torch.tensor([0, 1]), q.log()[[2, 1]], torch.tensor([2, 1]))
    assert abs(lb.item() - 0.3) < 1e-12
    full = acceptance_topk(p.log(), torch.tensor([0, 1, 2]), q.log()[[2, 1, 0]], torch.tensor([2, 1, 0]))
    assert abs(full.item() - 0.7) < 1e-12


@settings(max_examples=30)
@given(seed=st.integers(0, 1000), k=st.integers(1, 12))
def test_topk_acceptance_is_a_lower_bound(seed, k):
    g = torch.Generator().manual_seed(seed)
    d, s = (torch.randn(4, 12, generator=g, dtype=torch.float64) * 2 for _ in range(2))
    dl, di = d.log_softmax(-1).topk(k)
    sl, si = s.log_softmax(-1).topk(k)
    assert bool((acceptance_topk(dl, di, sl, si) <= acceptance(d, s) + 1e-12).all())


def test_acceptance_summary_bins():
    alpha = torch.tensor([1.0, 0.9, 0.2, 1.0, 0.5, 0.7], dtype=torch.float64)
    pos = torch.tensor([0, 10, 20, 100, 110, 130])
    rows = acceptance_summary(alpha, pos, bin_tokens=100)
    assert [(r["bin_start"], r["count"]) for r in rows] == [(0, 3), (100, 3)]
    assert abs(rows[0]["mean"] - 0.7) < 1e-12
    assert abs(rows[1]["p5"] - (0.5 + 0.05 * 2 * (0.7 - 0.5))) < 1e-12  # linear interpolation, like numpy


def test_tis_loss_by_hand():
    logp = torch.tensor([[math.log(0.5), math.log(0.2)]], requires_grad=True)
    old = torch.tensor([[math.log(0.4), math.log(0.2)]])
    roll = torch.tensor([[math.log(0.1), math.log(0.4)]])
    adv = torch.tensor([1.0])
    mask = torch.tensor([[1.0, 1.0]])
    loss, stats = tis_policy_loss(logp, old, roll, adv, mask, clip_low=0.2, tis_cap=2.0)
    # token 1: ratio 1.25 clipped to 1.2 (A > 0), w = min(0.4 / 0.1, 2) = 2 -> -2.4
    # token 2: ratio 1, w = 0.2 / 0.4 = 0.5 -> -0.5
    assert abs(loss.item() - (-2.4 - 0.5) / 2) < 1e-6
    assert stats["clip_fraction"] == 0.5 and stats["tis_truncated_fraction"] == 0.5
    loss.backward()
    assert logp.grad[0, 0] == 0  # clipped: no gradient
    assert abs(logp.grad[0, 1].item() - (-0.5 * 1.0 / 2)) < 1e-6
    with pytest.raises(ValueError, match="aggregation"):
        tis_policy_loss(logp, old, roll, adv, mask, aggregation="sum")


def test_tis_loss_seq_mean_and_clip_high_by_hand():
    logp = torch.tensor([[0.5, 0.2, 0.3], [0.6, 0.1, 1.0]]).log().requires_grad_()
    old = torch.tensor([[0.4, 0.2, 0.2], [0.5, 0.2, 1.0]]).log().requires_grad_()
    roll = torch.tensor([[0.4, 0.1, 0.2], [0.5, 0.2, 1.0]]).log().requires_grad_()
    adv = torch.tensor([1.0, -1.0])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    loss, stats = tis_policy_loss(logp, old, roll, adv, mask, clip_low=0.2, clip_high=0.3, tis_cap=1.5,
                                  aggregation="seq-mean")
    # row 0 (A = 1): ratio 1.25 inside [0.8, 1.3] -> -1.25; ratio 1, w = min(0.2 / 0.1, 1.5) -> -1.5;
    #   ratio 1.5 clipped to 1.3 -> -1.3; mean -1.35
    # row 1 (A = -1): ratio 1.2 -> 1.2; ratio 0.5 clipped up to 0.8 (the pessimistic side) -> 0.8; mean 1.0
    assert abs(loss.item() - (-1.35 + 1.0) / 2) < 1e-6
    assert abs(stats["clip_fraction"] - 2 / 5) < 1e-6 and abs(stats["tis_truncated_fraction"] - 1 / 5) < 1e-6
    assert abs(stats["tis_weight_mean"] - 5.5 / 5) < 1e-6
    loss.backward()
    # seq-mean weighs a token by 1 / (rows * its row's tokens); clipped tokens get no gradient
    torch.testing.assert_close(logp.grad[0], torch.tensor([-1.25 / 6, -1.5 / 6, 0.0]))
    assert logp.grad[1, 1] == 0 and logp.grad[1, 2] == 0
    assert old.grad is None and roll.grad is None  # the ratio's baseline and the TIS weight are constants
    token_mean, _ = tis_policy_loss(logp, old, roll, adv, mask, clip_low=0.2, clip_high=0.3, tis_cap=1.5)
    assert abs(token_mean.item() - (-4.05 + 2.0) / 5) < 1e-6
    symmetric, _ = tis_policy_loss(logp, old, roll, adv, mask, clip_low=0.2, tis_cap=1.5, aggregation="seq-mean")
    assert abs(symmetric.item() - ((-1.2 - 1.5 - 1.2) / 3 + 1.0) / 2) < 1e-6  # clip_high defaults to clip_low


def test_monitor_warns_below_target(caplog):
    mon = AcceptanceMonitor(target=0.86, bin_tokens=64)
    dense = torch.zeros(2, 40)
    roll = torch.zeros(2, 40)
    dense[:, :4] = -3.0  # p_dense / p_rollout = e^-3 on a few tokens of the first bin
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        rows = mon.update(dense, roll, torch.ones(2, 40), prompt_lengths=30)
    assert [r["bin_start"] for r in rows] == [0, 64]
    assert rows[0]["p5"] < 0.86 and rows[1]["p5"] == 1.0
    assert "KV lengths 0-64" in caplog.text and "KV lengths 64-128" not in caplog.text


def _binom_tail(n, q, k):
    """P[Binom(n, q) >= k], exactly (integer binomials, float powers)."""
    return sum(math.comb(n, j) * q ** j * (1 - q) ** (n - j) for j in range(k, n + 1))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 400), q=st.sampled_from([0.01, 0.05, 0.1, 0.5]), conf=st.sampled_from([0.8, 0.9, 0.95]))
def test_order_statistic_rank_is_the_largest_covering_rank(n, q, conf):
    """The rank against the binomial tail summed by brute force: it covers at the confidence, the next does not."""
    from replaycompile.sparrow.acceptance_metric import order_statistic_rank

    k = order_statistic_rank(n, q, conf)
    assert 0 <= k <= n
    if k:
        assert _binom_tail(n, q, k) >= conf - 1e-9
    if k < n:
        assert _binom_tail(n, q, k + 1) < conf + 1e-9


def test_order_statistic_rank_known_values():
    from replaycompile.sparrow.acceptance_metric import order_statistic_rank

    # p5 at 0.9: 1 - 0.95^n >= 0.9 first at n = 45; at 0.95 first at n = 59
    assert [order_statistic_rank(n, 0.05, 0.9) for n in (44, 45)] == [0, 1]
    assert [order_statistic_rank(n, 0.05, 0.95) for n in (58, 59)] == [0, 1]
    # n = 100: P[>= 2] = 0.963, P[>= 3] = 0.882
    assert order_statistic_rank(100, 0.05, 0.9) == 2
    with pytest.raises(ValueError, match="confidence=1"):
        order_statistic_rank(10, 0.05, 1.0)


def test_quantile_lower_bound_covers_the_true_quantile_at_the_confidence():
    """Simulation with a known distribution: Beta(8, 1) (acceptance-like, mass near 1), whose p5 is
    0.05 ** (1 / 8). Over 2000 draws of n = 200 samples the bound lies at or below it in >= 90% of them (the
    exact coverage is P[Binom(200, 0.05) >= k] = 0.93; the slack is 4 binomial standard errors below that)."""
    from replaycompile.sparrow.acceptance_metric import order_statistic_rank, quantile_lower_bound

    g = torch.Generator().manual_seed(0)
    true_p5 = 0.05 ** (1 / 8)
    n, trials = 200, 2000
    k = order_statistic_rank(n, 0.05, 0.9)
    exact = _binom_tail(n, 0.05, k)
    samples = torch.rand(trials, n, generator=g, dtype=torch.float64) ** (1 / 8)  # inverse CDF of Beta(8, 1)
    bounds = [quantile_lower_bound(s, 0.05, 0.9) for s in samples]
    assert all(r == k for _, r in bounds)
    covered = sum(b <= true_p5 for b, _ in bounds) / trials
    se = math.sqrt(exact * (1 - exact) / trials)
    assert covered >= 0.9 and abs(covered - exact) < 4 * se, (covered, exact)
    # and it is a bound, not the point estimate: the p5 itself covers only about half the time
    point = (torch.quantile(samples, 0.05, dim=1) <= true_p5).double().mean()
    assert 0.3 < point < 0.7
    assert quantile_lower_bound(torch.ones(44), 0.05, 0.9) == (None, 0)  # too few for any bound


def test_summary_and_monitor_rows_carry_the_lower_bound():
    alpha = torch.linspace(0, 1, 100, dtype=torch.float64)
    rows = acceptance_summary(alpha, torch.arange(100), bin_tokens=50, confidence=0.9)
    assert [r["count"] for r in rows] == [50, 50]
    # n = 50: k = 1 (P[>= 1] = 0.92, P[>= 2] = 0.72): the smallest value of the bin
    assert [(r["p5_rank"], r["p5_lower"]) for r in rows] == [(1, 0.0), (1, float(alpha[50]))]
    assert all(r["p5_lower"] <= r["p5"] for r in rows)
    assert "p5_lower" not in acceptance_summary(alpha, torch.arange(100), bin_tokens=50)[0]  # only when asked
    mon = AcceptanceMonitor(target=0.86, bin_tokens=64)
    rows = mon.update(torch.zeros(1, 40), torch.zeros(1, 40), torch.ones(1, 40), prompt_lengths=0)
    assert set(rows[0]) >= {"bin_start", "bin_end", "count", "mean", "p5", "p5_lower"}
    assert rows[0]["p5_lower"] is None  # 40 tokens: too few for a p5 bound at 0.9
