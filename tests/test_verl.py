"""``replaycompile.integrations.verl`` against verl's own engine (issue 31): verl 0.9.1's
``FSDPEngineWithLMHead.forward_backward_batch`` with ``ppo_loss``, on CPU, with and without ``compile_engine``.
Run in a venv with verl (``.ci/verl``: ``-m verl``); ``bench/verl_step.py`` says which parts of verl run here.

Per step: the loss of every micro-batch, every metric verl reports and every gradient equal verl's (rel 1e-5), and
the backend packed each micro-batch (fewer tokens computed than fed)."""

from __future__ import annotations

import copy
import functools
import logging

import pytest
import torch
from helpers import load_script

pytestmark = pytest.mark.verl
pytest.importorskip("verl")

from verl.workers.utils.losses import ppo_loss  # noqa: E402
from verl.workers.utils.padding import no_padding_2_padding  # noqa: E402

from replaycompile.integrations import verl as rverl  # noqa: E402

vs = load_script("bench/verl_step.py")
P, CMIN, CMAX, VOCAB = 12, 3, 6, 128
TOL = 1e-5


def tiny_model(family="qwen3", seed=0):
    import transformers

    kw = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16)
    cfg = {"qwen3": transformers.Qwen3Config, "llama": transformers.LlamaConfig}[family](**kw)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    return transformers.AutoModelForCausalLM.from_config(cfg).float().train()


@pytest.fixture(scope="module")
def model():
    return tiny_model()


def engines(model):
    verl_engine = vs.bare_engine(copy.deepcopy(model))
    replay_engine = rverl.compile_engine(vs.bare_engine(copy.deepcopy(model)), inner="aot_eager", min_shared_tokens=1)
    return verl_engine, replay_engine


def rows(groups=2, g=4, seed=0):
    return vs.rollout_rows(groups, g, P, CMIN, CMAX, VOCAB, seed=seed, prompt_jitter=2)


def rel(a, b):
    return float((a - b).norm() / b.norm().clamp(min=1e-30))


def assert_same_step(out_verl, out_replay, m_verl, m_replay):
    assert len(out_replay["loss"]) == len(out_verl["loss"])
    for a, b in zip(out_replay["loss"], out_verl["loss"]):
        assert abs(a - b) <= TOL * max(abs(b), 1e-3), (out_replay["loss"], out_verl["loss"])
    mv, mr = vs.metric_values(out_verl["metrics"]), vs.metric_values(out_replay["metrics"])
    assert set(mv) <= set(mr), (sorted(mv), sorted(mr))
    for k in mv:
        for a, b in zip(mr[k], mv[k], strict=True):
            assert abs(a - b) <= TOL * max(abs(b), 1e-3), (k, mr[k], mv[k])
    worst = max((rel(a.grad, b.grad), n) for (n, a), b in zip(m_replay.named_parameters(), m_verl.parameters()))
    assert worst[0] < TOL, worst


def assert_packed(engine, n):
    recent = engine.replay_stats[-n:]
    assert all(s["applied"] for s in recent), recent
    assert all(s["tokens_computed"] < s["tokens_in"] for s in recent), recent


@pytest.mark.parametrize("loss_agg_mode,loss_mode,temperature,remove_padding", [
    ("token-mean", "vanilla", 1.0, True),
    ("seq-mean-token-mean", "vanilla", 0.7, True),
    ("seq-mean-token-sum-norm", "gspo", 1.0, True),
    ("token-mean", "clip_cov", 1.0, True),
    ("token-mean", "vanilla", 1.0, False),
])
def test_update_step_equals_verl(model, loss_agg_mode, loss_mode, temperature, remove_padding):
    """Two micro-batches of one GRPO group each (micro_batch_size_per_gpu = G), padding removed (verl's default)
    or kept, entropy bonus and KL loss on: each micro-batch packs, and loss, metrics and gradients are verl's."""
    cfg = vs.actor_config(loss_agg_mode=loss_agg_mode, policy_loss={"loss_mode": loss_mode})
    loss_fn = functools.partial(ppo_loss, config=cfg)
    ev, er = engines(model)
    data = rows()
    kw = dict(prompt_len=P, micro_batch_size=4, temperature=temperature, use_remove_padding=remove_padding)
    out_v = vs.train_step(ev, vs.verl_batch(*data, **kw), loss_fn)
    out_r = vs.train_step(er, vs.verl_batch(*data, **kw), loss_fn)
    assert_same_step(out_v, out_r, ev.module, er.module)
    assert_packed(er, 2)
    assert set(vs.metric_values(out_r["metrics"])) >= {rverl.METRIC_TOKENS_IN, rverl.METRIC_TOKENS_COMPUTED}


def test_log_probs_and_entropy_of_a_forward_equal_verl(model):
    """The forward-only path (old / reference log-probs, ``infer_batch``): the response's log-probs and entropies
    read as verl's trainer reads them (``no_padding_2_padding``) equal verl's; the positions no reader reads are
    NaN, not zeros."""
    ev, er = engines(model)
    data = rows()
    with torch.no_grad():
        out_v = ev.forward_backward_batch(vs.verl_batch(*data, prompt_len=P), None, forward_only=True)
        out_r = er.forward_backward_batch(vs.verl_batch(*data, prompt_len=P), None, forward_only=True)
    td = vs.verl_batch(*data, prompt_len=P)
    for key in ("log_probs", "entropy"):
        a = no_padding_2_padding(out_r["model_output"][key], td)
        b = no_padding_2_padding(out_v["model_output"][key], td)
        assert rel(a, b) < TOL, key
    flat = out_r["model_output"]["log_probs"].values()
    n_resp = int(td["response_mask"].sum())
    assert int(torch.isnan(flat).sum()) == flat.numel() - n_resp
    assert_packed(er, 1)


def test_dynamic_batch_size_keeps_groups_whole_and_the_step_equal(model):
    """verl's dynamic batch size (token budget per micro-batch, workload-balanced): its balancer splits GRPO groups
    across micro-batches; with the integration each micro-batch holds whole groups (verl's own ``force_group_size``),
    and the step's summed loss and gradients equal verl's without it (``ppo_loss`` normalises by the global batch)."""
    cfg = vs.actor_config(loss_agg_mode="token-mean")
    loss_fn = functools.partial(ppo_loss, config=cfg)
    ev, er = engines(model)
    data = rows(groups=3, g=4)
    budget = 2 * (P + CMAX) * 4  # two groups' worth of tokens
    out_v = vs.train_step(ev, vs.verl_batch(*data, prompt_len=P, max_token_len=budget), loss_fn)
    out_r = vs.train_step(er, vs.verl_batch(*data, prompt_len=P, max_token_len=budget), loss_fn)
    assert abs(sum(out_r["loss"]) - sum(out_v["loss"])) <= TOL * abs(sum(out_v["loss"]))
    worst = max(rel(a.grad, b.grad) for a, b in zip(er.module.parameters(), ev.module.parameters()))
    assert worst < TOL
    n = len(out_r["loss"])
    recent = er.replay_stats[-n:]
    assert all(s["applied"] for s in recent), recent
    # whole groups: each micro-batch's tokens computed is its groups' unique tokens (one prompt per group)
    prompts = [P - 2 * i for i in range(3)]
    assert sum(s["tokens_computed"] for s in recent) == sum(prompts) + int(data[1][:, P:].sum()), recent


def test_fixed_micro_batch_that_splits_groups_warns(model, caplog):
    """``micro_batch_size_per_gpu`` not a multiple of G: the user's memory budget is kept, and a warning says the
    groups are split."""
    loss_fn = functools.partial(ppo_loss, config=vs.actor_config())
    _, er = engines(model)
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        vs.train_step(er, vs.verl_batch(*rows(), prompt_len=P, micro_batch_size=2), loss_fn)
    assert any("splits the groups of 4" in r.getMessage() for r in caplog.records), caplog.text


def custom_loss(config, model_output, data, dp_group=None):
    """A user's own loss (here the mean log-prob over every position of every sequence)."""
    return -model_output["log_probs"].values().mean(), {}


def test_a_loss_it_does_not_know_runs_verls_path_with_a_warning(model, caplog):
    """A loss function other than ``ppo_loss`` may read any position's log-prob (this one reads all): the
    micro-batch runs verl's own forward_step, equal to verl, with one warning naming the loss."""
    ev, er = engines(model)
    data = rows()
    loss_fn = functools.partial(custom_loss, config=None)
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        out_r = vs.train_step(er, vs.verl_batch(*data, prompt_len=P, micro_batch_size=4), loss_fn)
        vs.train_step(er, vs.verl_batch(*data, prompt_len=P, micro_batch_size=4), loss_fn)
    out_v = vs.train_step(ev, vs.verl_batch(*data, prompt_len=P, micro_batch_size=4), loss_fn)
    assert out_r["loss"] == pytest.approx(out_v["loss"], rel=TOL)
    assert er.replay_stats[-1]["applied"] is False and "custom_loss" in er.replay_stats[-1]["reason"]
    assert sum("custom_loss" in r.getMessage() for r in caplog.records) == 1


def test_compile_engine_takes_the_lm_head_engine_only(model):
    from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithValueHead

    value_engine = FSDPEngineWithValueHead.__new__(FSDPEngineWithValueHead)
    with pytest.raises(TypeError, match="FSDPEngineWithValueHead"):
        rverl.compile_engine(value_engine)
    with pytest.raises(ValueError, match="unknown option"):
        rverl.compile_engine(vs.bare_engine(copy.deepcopy(model)), not_an_option=1)
