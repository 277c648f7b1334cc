"""DistillSparse (replaycompile/sparrow/distill.py): LoRA adapters that keep the sparse rollout policy close to the dense
one."""

from __future__ import annotations

import pytest
import torch

from replaycompile.sparrow.retrieval import recall_sequences, retrieval_model
from replaycompile.sparrow.schedule import SparrowSchedule


def test_distill_sparse_reduces_the_kl_and_leaves_the_dense_policy_alone():
    from replaycompile.sparrow.distill import DistillSparse

    model = retrieval_model()
    ctx = 256
    seqs, _ = recall_sequences(2, ctx, window=32, seed=2, query_every=4)
    am = torch.ones_like(seqs)
    ds = DistillSparse(model, SparrowSchedule.fixed(0, bucket_tokens=512), r=16, lora_alpha=32, lr=3e-3,
                       kl_coef=1.0)
    assert all(p.requires_grad for n, p in ds.model.named_parameters() if "lora_" not in n), \
        "the RL trainer's base weights must stay trainable"
    dense = ds.dense_logprobs(seqs, am, ctx)
    mask = torch.ones_like(dense)

    # the policy term: advantages, and rollout log-probs that differ from the sparse policy's (ratios != 1, some
    # clipped); the step's gradient is captured instead of applied, and checked against the loss written out
    roll = dense + 0.3 * torch.randn(dense.shape, generator=torch.Generator().manual_seed(0))
    adv = torch.tensor([1.0, -0.5])
    grads = []
    ds.opt.step = lambda: grads.append([p.grad.clone() for p in ds.lora_params])
    ds.kl_coef = 0.01  # both terms of a similar size in the gradient (the KL of 0 pages is large)
    terms = ds.step(seqs, am, ctx, mask, adv, rollout_logprobs=roll, dense_logprobs=dense)
    del ds.opt.step
    logp = ds.sparse_logprobs(seqs, am, ctx)
    ratio = torch.exp(logp - roll)  # TIS weight 1: the sparse policy's old log-probs are the rollout's
    pg = -torch.minimum(ratio * adv[:, None], ratio.clamp(0.8, 1.2) * adv[:, None]).mean()
    log_r = dense - logp
    kl_term = (log_r.exp() - 1 - log_r).mean()
    clipped = float(((ratio < 0.8) | (ratio > 1.2)).double().mean())
    assert 0 < clipped < 1 and abs(terms["clip_fraction"] - clipped) < 1e-6
    assert abs(terms["policy_loss"] - pg.item()) < 1e-5 and abs(terms["kl"] - kl_term.item()) < 1e-5
    assert abs(terms["loss"] - (pg + 0.01 * kl_term).item()) < 1e-5
    pg_grad = torch.autograd.grad(pg, ds.lora_params, retain_graph=True)
    kl_grad = torch.autograd.grad(0.01 * kl_term, ds.lora_params)
    norm = lambda gs: torch.cat([g.flatten() for g in gs]).norm()  # noqa: E731
    want = [a + b for a, b in zip(pg_grad, kl_grad)]
    assert norm([a - b for a, b in zip(grads[0], want)]) < 1e-4 * norm(want), "the step's gradient is not its loss's"
    assert norm(pg_grad) > 0.2 * norm(want) and norm(kl_grad) > 0.2 * norm(want), (norm(pg_grad), norm(kl_grad))
    ds.kl_coef = 1.0

    def kl():
        with torch.no_grad():
            lr = dense - ds.sparse_logprobs(seqs, am, ctx)
        return float((lr.exp() - 1 - lr).mean())

    before = kl()
    for _ in range(3):  # the KL term alone (zero advantages) pulls the sparse policy toward the dense one
        ds.step(seqs, am, ctx, mask, torch.zeros(2), rollout_logprobs=dense.clone(), dense_logprobs=dense)
    after = kl()
    assert after < 0.6 * before, (before, after)
    torch.testing.assert_close(ds.dense_logprobs(seqs, am, ctx), dense)  # adapters off: the dense policy


@pytest.mark.parametrize("page_score", ["bound", "centroid"])
def test_training_selection_scores_pages_as_the_decoder_does(page_score):
    """The last query block of a sequence holding one query selects the pages the decoder's reference selects
    for that query at that KV length, with either page score (the zero-padded block mean only scales the
    query, which no ranking sees)."""
    from replaycompile.sparrow.distill import training_selection
    from replaycompile.kernels.sparse_decode_reference import select_pages_reference

    g = torch.Generator().manual_seed(3)
    hq, hkv, t, d = 4, 2, 16 * 8 + 1, 8
    q = torch.randn(hq, t, d, generator=g)
    k = torch.randn(hkv, t, d, generator=g)
    vis = torch.ones(t, dtype=torch.bool)
    sched = SparrowSchedule(pages=(2,), page_score=page_score)
    got = training_selection(q, k, vis, sched)[:, -1]  # [Hkv, 9 key pages]
    want = select_pages_reference(q[None, :, -1:], k[None], vis[None], t, 2, 16, 1, 2, page_score)[0]
    assert int(want.sum()) == 2 * (1 + 2 + 2) and torch.equal(got, want)
