"""The demo's loss depends on the model (issue 29): its stored old log-probs come from a perturbed copy of the
model, not from the model itself plus noise (that made the ratio exp(-noise) and the loss a model-independent
constant, so "replay's loss equals eager's" proved nothing)."""

import torch

from replaycompile.cli import demo_batch, demo_model, demo_step
from replaycompile.testing.models import behaviour_logprobs, tiny_model

SHAPE = dict(layers=1, vocab=300)
BATCH = dict(group=4, prompt_len=16, cmin=4, cmax=8)


def demo_loss(model):
    """The demo's eager loss for ``model``: its batch and old log-probs built from ``model``, as ``demo`` does."""
    batch = demo_batch(model, **BATCH)
    with torch.no_grad():
        return demo_step(BATCH["prompt_len"])(model, *batch).item()


def test_demo_loss_differs_between_model_widths():
    a, b = demo_loss(demo_model(32, **SHAPE)), demo_loss(demo_model(48, **SHAPE))
    assert abs(a - b) > 1e-4 * max(abs(a), abs(b)), (a, b)


def test_demo_loss_changes_with_the_parameters():
    model = demo_model(32, **SHAPE)
    before = demo_loss(model)
    with torch.no_grad():
        model.lm_head.weight.add_(0.5 * torch.randn(model.lm_head.weight.shape,
                                                    generator=torch.Generator().manual_seed(0)))
    after = demo_loss(model)
    assert abs(after - before) > 1e-4 * max(abs(before), abs(after)), (before, after)


def test_behaviour_logprobs():
    model = tiny_model("qwen3", hidden_size=32, num_hidden_layers=1, head_dim=8, intermediate_size=64, vocab_size=200)
    g = torch.Generator().manual_seed(0)
    P, C = 10, 6
    ids = torch.randint(1, 200, (3, P + C), generator=g)
    am = torch.ones_like(ids)
    am[1, P + 4:] = 0
    params = {n: q.clone() for n, q in model.named_parameters()}
    with torch.no_grad():
        own = model(input_ids=ids, attention_mask=am, use_cache=False).logits[:, P - 1:-1].float() \
            .log_softmax(-1).gather(-1, ids[:, P:, None]).squeeze(-1)
    # unperturbed: exactly the model's completion log-probs (the slicing is right), one row at a time or all
    torch.testing.assert_close(behaviour_logprobs(model, ids, am, P, scale=0.0), own, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(behaviour_logprobs(model, ids, am, P, scale=0.0, rows=1), own, rtol=1e-5, atol=1e-5)
    old = behaviour_logprobs(model, ids, am, P, seed=3)
    assert old.shape == (3, C) and old.dtype == torch.float32 and not old.requires_grad
    assert (old - own).abs().max() > 1e-3  # another policy's log-probs
    torch.testing.assert_close(behaviour_logprobs(model, ids, am, P, seed=3), old, rtol=0, atol=0)  # seeded
    for n, q in model.named_parameters():  # the model itself is untouched
        assert torch.equal(q, params[n]), n


def test_a_declined_demo_step_is_exact_says_why_it_was_not_packed_and_exits_0(capsys):
    """One rollout per prompt (a batch axis of size 1) shares nothing: the backend declines and runs the step
    unpacked. The demo's verdict is exactness (exit 0), and it says apart from that that the step was not packed
    and why (it used to print NOT EXACT and exit 1 for any decline)."""
    from replaycompile.cli import main

    rc = main(["demo", "--group", "1", "--prompt", "16", "--min-completion", "4", "--max-completion", "6",
               "--hidden", "32", "--vocab", "64", "--steps", "1", "--inner", "aot_eager"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "exact: loss and every parameter's gradient equal eager's" in out, out
    assert "packed: no, the backend declined" in out and "batch axis of size 1" in out, out
