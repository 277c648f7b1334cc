"""Positions a loss weighs by zero are not computed (passes/loss_weights.py): a loss over every position times a
runtime mask runs the LM head (and what feeds only it) at the kept positions alone, exactly; weights the pass
cannot trust (mutated in place, requiring grad, read unweighted elsewhere) keep every position; a non-finite
weighted value reruns the call as eager. Also: the chunked and the plain LM head compute the same rows."""

from __future__ import annotations

import pytest
import torch
from helpers import AOT, assert_same_step, group_batch, run
from hypothesis import given, settings
from hypothesis import strategies as st
from test_detach_prefix import tree_batch
from torch._dynamo.utils import counters

import replaycompile
from replaycompile.testing.models import tiny_model


def old_all(ids):
    """Stored log-probs at every predicting position [B, T-1], a fixed function of the tokens (not the model's)."""
    return -4.0 + 0.1 * torch.cos(ids[:, 1:].float())


def completion_mask(am, p):
    """[B, T-1]: 1 where position t predicts a real completion token (t + 1 >= p)."""
    cm = am[:, 1:].float().clone()
    cm[:, :p - 1] = 0
    return cm


def masked_loss(model, ids, am, adv, old, cm):
    """GRPO's clipped objective over every position, times the completion mask (the form of issue 29)."""
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    logp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    ratio = torch.exp(logp - old)
    obj = torch.minimum(ratio * adv[:, None], ratio.clamp(0.8, 1.28) * adv[:, None])
    return -(obj * cm).sum() / cm.sum()


def sliced_loss(model, ids, am, adv, old, cm, p):
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    logp = torch.log_softmax(logits[:, p - 1:-1].float(), -1).gather(-1, ids[:, p:, None]).squeeze(-1)
    ratio = torch.exp(logp - old[:, p - 1:])
    obj = torch.minimum(ratio * adv[:, None], ratio.clamp(0.8, 1.28) * adv[:, None])
    c = cm[:, p - 1:]
    return -(obj * c).sum() / c.sum()


def where_loss(model, ids, am, adv, old, cm):
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    logp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    x = torch.where(cm.bool(), (logp - old).exp() * adv[:, None], 0.0)
    return -x.sum() / cm.sum()


def masked_fill_loss(model, ids, am, adv, old, cm):
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    logp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    x = ((logp - old).exp() * adv[:, None]).masked_fill(cm == 0, 0)
    return -x.sum() / cm.sum()


def verl_loss(model, ids, am, adv, old, cm):
    """verl's masked_mean over the response, with a KL-style second term read through the same mask."""
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    logp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    pg = -(logp - old).exp() * adv[:, None]
    kl = (old - logp).exp() - (old - logp) - 1
    return (pg * cm).sum() / cm.sum() + 0.1 * (kl * cm).sum() / cm.sum()


def unweighted_loss(model, ids, am, adv, old, cm):
    """The mask-weighted loss plus a term that reads a prompt position unweighted: nothing may be dropped (a
    padded position's logits are not eager's, so the term reads a column real in every row)."""
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    logp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    return -(logp * adv[:, None] * cm).sum() / cm.sum() + 1e-2 * logp[:, 5].sum()


def mutated_mask_loss(model, ids, am, adv, old, cm):
    """The weight is built inside the step and then written in place: the pass must not read the unwritten one."""
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    logp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    w = am[:, 1:].float()
    w[:, :3] = 0
    return -(logp * adv[:, None] * w).sum() / w.sum()


@pytest.fixture(autouse=True)
def _reset():
    counters.clear()
    yield
    torch._dynamo.reset()


def _inputs(batch):
    ids, am, adv, p = batch
    return ids, am, adv, old_all(ids), completion_mask(am, p), p


@pytest.mark.parametrize("batch,lm_head", [("group", "plain"), ("tree", "chunked"),
                                           pytest.param("group", "chunked", marks=pytest.mark.slow),
                                           pytest.param("tree", "plain", marks=pytest.mark.slow)])
def test_masked_loss_drops_the_zero_weight_positions(batch, lm_head):
    """Exact; the LM head runs on as many rows as the sliced loss's, and the prompt's tokens are dropped."""
    model = tiny_model("qwen3")
    ids, am, adv, old, cm, p = _inputs(group_batch() if batch == "group" else tree_batch())
    ref = run(masked_loss, model, ids, am, adv, old, cm)
    opts = {**AOT, "lm_head": lm_head}
    got = run(torch.compile(masked_loss, backend="replay", options=opts), model, ids, am, adv, old, cm)
    st_masked = replaycompile.last_stats()
    assert_same_step(ref, got)
    assert st_masked["applied"], st_masked
    assert st_masked["weighted_positions_dropped"] > 0 and st_masked["weighted_tokens_dropped"] > 0, st_masked
    assert counters["replay"]["loss_weighted_positions_dropped"] == st_masked["weighted_positions_dropped"]
    # every zero-weight real position is dropped: real predicting positions minus kept ones
    real = am[:, :-1] != 0
    assert st_masked["weighted_positions_dropped"] == int(real.sum()) - int(((cm != 0) & real).sum())
    torch._dynamo.reset()
    got_sliced = run(torch.compile(sliced_loss, backend="replay", options=opts), model, ids, am, adv, old, cm, p)
    st_sliced = replaycompile.last_stats()
    assert_same_step(run(sliced_loss, model, ids, am, adv, old, cm, p), got_sliced)
    assert st_masked["lm_head_rows"] == st_sliced["lm_head_rows"], (st_masked, st_sliced)


@pytest.mark.parametrize("batch", ["group", "tree"])
def test_chunked_and_plain_heads_compute_the_same_rows(batch):
    """The chunked LM head computes each unique packed row once, as the plain one does: on a flat group the
    last prompt row is read by every completion, on a tree the stems' last rows by their tails (a counter, not a
    timing), with a loss reading every position (no mask) and one reading the completions."""
    model = tiny_model("qwen3")
    ids, am, adv, old, cm, p = _inputs(group_batch() if batch == "group" else tree_batch())
    ones = (am[:, :-1] * am[:, 1:]).float()   # every real (position, target) pair (a pad predicts nothing real)
    rows = {}
    for lm_head in ("plain", "chunked"):
        torch._dynamo.reset()
        got = run(torch.compile(masked_loss, backend="replay", options={**AOT, "lm_head": lm_head}),
                  model, ids, am, adv, old, ones)
        assert_same_step(run(masked_loss, model, ids, am, adv, old, ones), got)
        st_ = replaycompile.last_stats()
        assert st_["lm_head_chunked"] == (lm_head == "chunked"), st_
        rows[lm_head] = st_["lm_head_rows"]
    assert rows["plain"] == rows["chunked"], rows
    pairs = int(am[:, 1:].sum())
    assert rows["chunked"] < pairs, (rows, pairs)   # shared rows once, not once per (row, target) pair


@pytest.mark.parametrize("loss", [where_loss, masked_fill_loss, verl_loss])
def test_other_mask_forms(loss):
    model = tiny_model("qwen3")
    ids, am, adv, old, cm, p = _inputs(group_batch())
    ref = run(loss, model, ids, am, adv, old, cm)
    got = run(torch.compile(loss, backend="replay", options=AOT), model, ids, am, adv, old, cm)
    assert_same_step(ref, got)
    st_ = replaycompile.last_stats()
    assert st_["applied"] and st_["weighted_positions_dropped"] > 0, st_


@pytest.mark.parametrize("loss", [unweighted_loss, mutated_mask_loss])
def test_untrusted_weights_keep_every_position(loss):
    model = tiny_model("qwen3")
    ids, am, adv, old, cm, p = _inputs(group_batch())
    ref = run(loss, model, ids, am, adv, old, cm)
    got = run(torch.compile(loss, backend="replay", options=AOT), model, ids, am, adv, old, cm)
    assert_same_step(ref, got)
    st_ = replaycompile.last_stats()
    assert st_["applied"] and st_["weighted_positions_dropped"] == 0, st_


def test_weight_requiring_grad_is_not_a_mask():
    """d(x * m)/dm = x: a weight with a gradient needs x everywhere, so nothing is dropped and m's gradient is
    eager's."""
    model = tiny_model("qwen3")
    ids, am, adv, old, cm, p = _inputs(group_batch())

    def fn(model, ids, am, adv, old, cm):
        return masked_loss(model, ids, am, adv, old, cm)
    cm_ref = cm.clone().requires_grad_()
    ref = run(fn, model, ids, am, adv, old, cm_ref)
    g_ref = cm_ref.grad.clone()
    cm_got = cm.clone().requires_grad_()
    got = run(torch.compile(fn, backend="replay", options=AOT), model, ids, am, adv, old, cm_got)
    assert_same_step(ref, got)
    real = (am[:, :-1] != 0)   # at a padded position eager's x is computed from a pad token; the backend's is 0
    torch.testing.assert_close(cm_got.grad[real], g_ref[real], rtol=1e-5, atol=1e-7)
    assert replaycompile.last_stats()["weighted_positions_dropped"] == 0


def test_non_finite_weighted_value_reruns_with_every_position():
    """Stored log-probs of -inf at masked positions make eager's weighted value 0 * inf = NaN there: the refined
    call's loss is non-finite too, so the call reruns with every position (NaN, as eager) and the graph keeps
    every position from then on (one rerun, not one per step)."""
    model = tiny_model("qwen3")
    ids, am, adv, old, cm, p = _inputs(group_batch())
    old = old.masked_fill(cm == 0, float("-inf"))
    ref_loss = masked_loss(model, ids, am, adv, old, cm)
    step = torch.compile(masked_loss, backend="replay", options=AOT)
    got_loss = step(model, ids, am, adv, old, cm)
    assert torch.isnan(ref_loss) and torch.isnan(got_loss)
    assert counters["replay"]["loss_weighted_nonfinite_reruns"] == 1
    st_ = replaycompile.last_stats()
    assert st_["applied"] and st_["weighted_positions_dropped"] == 0, st_
    assert torch.isnan(step(model, ids, am, adv, old, cm))
    assert counters["replay"]["loss_weighted_nonfinite_reruns"] == 1


def random_weight_loss(model, ids, am, adv, old, cm):
    """A weight drawn at random inside the step: evaluated again it would draw another one."""
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    logp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    keep = (torch.rand_like(cm) < 0.5) * cm
    return -(logp * adv[:, None] * keep).sum()


def iadd_weight_loss(model, ids, am, adv, old, cm):
    """A weight written with ``*=`` (Dynamo's operator.imul, no trailing underscore)."""
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    logp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    w = cm * 1.0
    w *= adv[:, None]
    return -(logp * w).sum()


def test_random_and_inplace_weights_are_not_trusted():
    model = tiny_model("qwen3")
    ids, am, adv, old, cm, p = _inputs(group_batch())
    torch.manual_seed(5)
    ref = run(random_weight_loss, model, ids, am, adv, old, cm)
    torch.manual_seed(5)
    got = run(torch.compile(random_weight_loss, backend="replay", options=AOT), model, ids, am, adv, old, cm)
    assert_same_step(ref, got)
    assert replaycompile.last_stats()["weighted_positions_dropped"] == 0
    torch._dynamo.reset()
    cm_before = cm.clone()
    ref = run(iadd_weight_loss, model, ids, am, adv, old, cm)
    got = run(torch.compile(iadd_weight_loss, backend="replay", options=AOT), model, ids, am, adv, old, cm)
    assert_same_step(ref, got)
    assert torch.equal(cm, cm_before)
    assert replaycompile.last_stats()["weighted_positions_dropped"] == 0


def test_inplace_write_in_the_loss_survives_the_decomposition():
    """The labels loss is decomposed in a graph that also writes in place (``l.mul_(mask)``, its result unused):
    the write stays (the clean-ups erase only their own dead nodes)."""
    model = tiny_model("qwen3")
    ids, am, adv, old, cm, p = _inputs(group_batch())
    labels = _labels(ids, am, p)

    def loss(model, ids, am, labels, adv, cm):
        out = model(input_ids=ids, attention_mask=am, labels=labels, use_cache=False)
        logp = torch.log_softmax(out.logits[:, :-1].float(), -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        x = logp * adv[:, None]
        x.mul_(cm)
        return out.loss + x.sum()
    ref = run(loss, model, ids, am, labels, adv, cm)
    got = run(torch.compile(loss, backend="replay", options=AOT), model, ids, am, labels, adv, cm)
    assert_same_step(ref, got)


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(lens=st.lists(st.integers(1, 6), min_size=2, max_size=5), seed=st.integers(0, 2**16),
       density=st.sampled_from([0.0, 0.3, 0.7, 1.0]))
def test_random_masks_are_exact(lens, seed, density):
    """Property: for random completion lengths and random 0/1 weights per position (all zero, sparse, dense, all
    one), loss and every gradient equal eager's, and exactly the real zero-weight positions are dropped (or
    none, where fewer than two tokens would remain)."""
    torch._dynamo.reset()
    model = tiny_model("qwen3")
    ids, am, adv, p = group_batch(lens=tuple(lens), seed=seed)
    old = old_all(ids)
    g = torch.Generator().manual_seed(seed)
    cm = (torch.rand(am[:, 1:].shape, generator=g) < density).float() * (am[:, :-1] * am[:, 1:]).float()
    if cm.sum() == 0:   # a loss needs some weight (cm.sum() divides): the first completion token of row 0
        cm[0, p - 1] = 1.0
    ref = run(masked_loss, model, ids, am, adv, old, cm)
    got = run(torch.compile(masked_loss, backend="replay", options=AOT), model, ids, am, adv, old, cm)
    assert_same_step(ref, got)
    st_ = replaycompile.last_stats()
    assert st_["applied"]
    dropped = st_["weighted_positions_dropped"]
    real = am[:, :-1] != 0
    assert dropped in (0, int(real.sum()) - int(((cm != 0) & real).sum()))


def hf_labels_loss(model, ids, am, labels):
    """HF's own loss: ``labels`` with -100 at the prompt and padding (ForCausalLMLoss: cross-entropy, mean)."""
    return model(input_ids=ids, attention_mask=am, labels=labels, use_cache=False).loss


def _labels(ids, am, p):
    labels = ids.clone()
    labels[:, :p] = -100
    labels[am == 0] = -100
    return labels


@pytest.mark.parametrize("batch", ["group", pytest.param("tree", marks=pytest.mark.slow)])
def test_hf_labels_loss_runs_the_head_on_the_labelled_tokens(batch):
    """cross_entropy with ignore_index (passes/cross_entropy.py) becomes a weighted log-prob gather: exact, the
    LM head on as many rows as the completion-sliced loss's, the prompt's tokens dropped."""
    model = tiny_model("qwen3")
    ids, am, adv, old, cm, p = _inputs(group_batch() if batch == "group" else tree_batch())
    labels = _labels(ids, am, p)
    ref = run(hf_labels_loss, model, ids, am, labels)
    got = run(torch.compile(hf_labels_loss, backend="replay", options=AOT), model, ids, am, labels)
    assert_same_step(ref, got)
    st_ = replaycompile.last_stats()
    assert counters["replay"]["cross_entropy_decomposed"] == 1
    assert st_["applied"] and st_["weighted_tokens_dropped"] > 0, st_
    torch._dynamo.reset()
    run(torch.compile(sliced_loss, backend="replay", options=AOT), model, ids, am, adv, old, cm, p)
    assert st_["lm_head_rows"] == replaycompile.last_stats()["lm_head_rows"]


@pytest.mark.parametrize("reduction", ["none", pytest.param("sum", marks=pytest.mark.slow),
                                       pytest.param("mean", marks=pytest.mark.slow)])
def test_cross_entropy_reductions(reduction):
    """F.cross_entropy on a sliced, flattened logits tensor in each reduction, weighted per row afterwards."""
    model = tiny_model("qwen3")
    ids, am, adv, old, cm, p = _inputs(group_batch())
    labels = _labels(ids, am, p)

    def loss(model, ids, am, labels, adv):
        logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
        v = logits.shape[-1]
        out = torch.nn.functional.cross_entropy(logits[:, :-1].float().reshape(-1, v), labels[:, 1:].reshape(-1),
                                                ignore_index=-100, reduction=reduction)
        if reduction == "none":
            return (out.view(ids.shape[0], -1) * adv[:, None]).sum()
        return out
    ref = run(loss, model, ids, am, labels, adv)
    got = run(torch.compile(loss, backend="replay", options=AOT), model, ids, am, labels, adv)
    assert_same_step(ref, got)
    st_ = replaycompile.last_stats()
    assert st_["applied"] and st_["weighted_positions_dropped"] > 0, st_


def test_trl_selective_log_softmax_loop_is_folded():
    """TRL's selective_log_softmax loops over the batch for its logsumexp (traced unrolled): folded back into one
    batched logsumexp (passes/row_loops.py), the head runs on the sliced loss's rows, exactly."""
    from trl.trainer.utils import selective_log_softmax

    model = tiny_model("qwen3")
    ids, am, adv, old, cm, p = _inputs(group_batch())

    def trl_loss(model, ids, am, adv, old, cm):
        logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits[:, p - 1:-1].float()
        logp = selective_log_softmax(logits, ids[:, p:])
        c = cm[:, p - 1:]
        return -((logp - old[:, p - 1:]).exp() * adv[:, None] * c).sum() / c.sum()
    ref = run(trl_loss, model, ids, am, adv, old, cm)
    got = run(torch.compile(trl_loss, backend="replay", options=AOT), model, ids, am, adv, old, cm)
    assert_same_step(ref, got)
    assert counters["replay"]["row_loops_folded"] == 1
    rows = replaycompile.last_stats()["lm_head_rows"]
    torch._dynamo.reset()
    run(torch.compile(sliced_loss, backend="replay", options=AOT), model, ids, am, adv, old, cm, p)
    assert rows == replaycompile.last_stats()["lm_head_rows"] > 0
