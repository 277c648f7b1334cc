"""Hybrid models (HF Qwen3-Next: Gated DeltaNet layers interleaved with attention). A Gated DeltaNet layer's
recurrent state (and its short causal conv1d) carries every earlier token of the row, so it is computed per row
(passes/recurrent.py): its packed inputs are replayed to the rows, it runs as eager runs it, and its output is
gathered back to the packed tokens, where the attention and MLP layers run shared. Loss and every gradient
equal eager's. Recurrent layer types not checked to be causal per row, the detach_prefix mode, and a state that
leaves the layer (use_cache=True) are declined with a reason that names the layer.

The compiled steps here use inner="eager": torch's aot_eager fails on Qwen3-Next's backward in torch 2.13
("view size is not compatible with input tensor's size and stride", a `view` of the `cat` of the split q/k/v/z
gradients) up to transformers 5.24, with or without this backend
(test_plain_aot_eager_on_qwen3_next_fails_the_known_way_or_is_exact)."""

from __future__ import annotations

import pytest
import torch
from helpers import AOT, assert_same_step, group_batch, grpo_loss, run, step_loss, unique_prefix_tokens
from test_detach_prefix import tree_batch

import replaycompile
from replaycompile.testing.models import tiny_model
from replaycompile.passes import recurrent

EAGER_INNER = {**AOT, "inner": "eager"}


@pytest.fixture
def float64_scan(monkeypatch):
    """transformers' torch fallback of the chunked delta rule casts its inputs to float32 whatever their dtype,
    and the gradients of a DeltaNet's decay parameters (``A_log``, ``dt_bias``) are small sums of large terms
    of both signs: in float32 they move by up to ~1e-4 relative when only the summation order changes (eager
    with sdpa against eager with eager attention differ by 7e-5 on the group batch here). The exactness tests
    of trees and of attention-before-DeltaNet run a float64 model whose eager layers scan in float64 too: the
    fallback is swapped for our chunked delta rule (kernels/delta_rule.py: the same algorithm, bitwise the
    fallback in float32, float64 for float64 inputs; the tree scan runs it as well), so an error of the rewrite
    cannot hide in that noise; the float32 test (DeltaNet first) compares every gradient at 1e-5 against
    transformers' own fallback."""
    from transformers.models.qwen3_next import modeling_qwen3_next as hf

    from replaycompile.kernels.delta_rule import chunk_gated_delta_rule

    def scan_in_input_dtype(query, key, value, g, beta, chunk_size=64, initial_state=None,
                            output_final_state=False, use_qk_l2norm_in_kernel=False, **kwargs):
        return chunk_gated_delta_rule(query, key, value, g, beta, chunk_size=chunk_size, initial_state=initial_state,
                                      output_final_state=output_final_state,
                                      use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel)

    monkeypatch.setattr(hf, "torch_chunk_gated_delta_rule", scan_in_input_dtype)
    return torch.float64


PER_ROW = {"recurrent": "per_row"}  # the layer computed per row (the default runs it on the prefix tree)


def _compiled_step(model, batch, fn=step_loss, **options):
    ref = run(fn, model, *batch)
    got = run(torch.compile(fn, backend="replay", options={**EAGER_INNER, **options}), model, *batch)
    return ref, got, replaycompile.last_stats()


def _assert_packed_per_row(st, batch, layers):
    ids, am = batch[0], batch[1]
    assert st["applied"], st
    assert st["recurrent_per_row"] == layers, st
    # the attention and MLP layers ran on the unique tokens only; the recurrent ones on every row's positions
    assert st["tokens_computed"] == unique_prefix_tokens(ids, am) < st["tokens_in"], st
    assert st["recurrent_tokens_computed"] == ids.numel(), st


@pytest.mark.parametrize("layer_types, layer, dtype", [
    (["linear_attention", "full_attention"], "model.layers.0.linear_attn", torch.float32),
    pytest.param(["full_attention", "linear_attention"], "model.layers.1.linear_attn", torch.float64,
                 marks=pytest.mark.slow),
])
def test_qwen3_next_group_is_packed_with_the_gated_deltanet_per_row(layer_types, layer, dtype, caplog, request,
                                                                     replay_graphs):
    """G rows sharing a left-padded prompt, completions of different lengths right-padded: packed, the Gated
    DeltaNet layer computed per row (counted, logged and in the stats by its module path), loss and every
    gradient (the DeltaNet's conv, decay, gate and projection weights included) equal eager's. With attention
    before the recurrent layer too (float64 with a float64 scan: see ``float64_scan``)."""
    if dtype == torch.float64:
        request.getfixturevalue("float64_scan")
    model = tiny_model("qwen3_next", layer_types=layer_types, mlp_only_layers=[0, 1], dtype=dtype)  # dense MLPs
    batch = group_batch(lens=(6, 2, 6, 5, 1))
    before = torch._dynamo.utils.counters["replay"][recurrent.COUNTER]
    with caplog.at_level("WARNING", logger="replaycompile"):
        ref, got, st = _compiled_step(model, batch, **PER_ROW)
    _assert_packed_per_row(st, batch, [layer])
    assert torch._dynamo.utils.counters["replay"][recurrent.COUNTER] - before == 1
    assert any(f"`{layer}` (Qwen3NextGatedDeltaNet: `conv1d`" in r.getMessage() and "computed per row" in
               r.getMessage() for r in caplog.records)
    assert {f"{layer}.conv1d.weight", f"{layer}.A_log", f"{layer}.dt_bias", f"{layer}.in_proj_qkvz.weight",
            f"{layer}.out_proj.weight", f"{layer}.norm.weight"} <= set(ref[1])
    _assert_region_per_row(replay_graphs[0].analysis, layer)
    assert_same_step(ref, got)


def _assert_region_per_row(a, layer):
    """The analysis's facts: every token-dependent node of the layer runs per row, exactly one of its values (the
    output) re-enters the packed region, as [B, T, hidden]; every attention and every linear outside the layer
    that reads activations is packed."""
    inside = [n for n in a.kind if (recurrent.recurrent_layer(n, a) or ("",))[0] == layer]
    assert inside and all(a.kind[n] == "row" for n in inside if n.op != "placeholder")
    out = [n for n in inside if n in a.tokenfn]
    assert len(out) == 1 and a.roles[out[0]] == ("B", "T", None), out
    assert a.attention and all(a.kind[s.node] == "packed" for s in a.attention)
    linears = [n for n in a.kind if n.op == "call_function" and getattr(n.target, "__name__", "") == "linear"
               and n not in inside]
    assert linears and all(a.kind[n] == "packed" for n in linears), [n.name for n in linears if a.kind[n] != "packed"]


@pytest.mark.slow
@pytest.mark.parametrize("impl", ["sdpa", "eager"])
def test_qwen3_next_two_level_tree_is_packed_and_exact(impl, float64_scan):
    """Rows prompt + stem + tail (two branch levels), both attention implementations, 4 layers alternating
    Gated DeltaNet and attention: both DeltaNets computed per row, loss and every gradient equal eager's (float64
    with a float64 scan; dense MLPs, as grouped_mm takes no float64: the MoE layers are in the float32 test)."""
    model = tiny_model("qwen3_next", impl, num_hidden_layers=4, mlp_only_layers=[0, 1, 2, 3], dtype=float64_scan)
    batch = tree_batch()
    ref, got, st = _compiled_step(model, batch, **PER_ROW)
    _assert_packed_per_row(st, batch, ["model.layers.0.linear_attn", "model.layers.2.linear_attn"])
    assert_same_step(ref, got)


@pytest.mark.slow
def test_qwen3_next_two_level_tree_in_float32():
    """The tree in float32, the fallback's scan as shipped, the tiny config's MoE layers (shared expert
    included): every gradient within 1e-5 of eager's, relative, but the DeltaNets' decay parameters (``A_log``,
    ``dt_bias``). Their gradients are sums over tokens of the decay's gradient, with signs, that cancel to
    1e-3..1e-6 of their terms (norms down to 1e-7 here), so the rounding of the float32 scan moves them by far more
    than 1e-5 of themselves once a shared token's gradient is summed on one row (5e-3 to 3e-1 relative on this
    batch). They are held to 1e-5 of the scale of the per-token gradients they sum: the norm of the same layer's
    ``in_proj_ba.weight`` gradient (the projection that feeds the decay). At 1e-5 of themselves they are checked
    by ``test_qwen3_next_two_level_tree_is_packed_and_exact``, with the scan in float64."""
    model = tiny_model("qwen3_next", num_hidden_layers=4)
    batch = tree_batch()
    ref, got, st = _compiled_step(model, batch, **PER_ROW)
    _assert_packed_per_row(st, batch, ["model.layers.0.linear_attn", "model.layers.2.linear_attn"])
    _assert_same_step_decay_scaled(ref, got)


@pytest.mark.slow
def test_qwen3_next_two_level_tree_with_a_long_chunked_scan(float64_scan):
    """A tree whose rows pass the scan's 64-token chunk (the chunked delta rule's inter-chunk state carried
    across the branch point): exact (float64 with a float64 scan)."""
    model = tiny_model("qwen3_next", layer_types=["linear_attention", "full_attention"], mlp_only_layers=[0, 1],
                       dtype=float64_scan)
    batch = tree_batch(prompt_len=50, stems=((20, (9, 30)), (5, (40, 1))))
    assert batch[0].shape[1] > 64
    ref, got, st = _compiled_step(model, batch, **PER_ROW)
    _assert_packed_per_row(st, batch, ["model.layers.0.linear_attn"])
    assert_same_step(ref, got)


def test_a_recurrent_layer_is_found_by_its_graph_whatever_its_class_is_called(replay_graphs):
    """A Gated DeltaNet under another class name is the same graph: recognised by a token-mixing op inside a
    sub-layer without attention, checked causal per row on the first call (``verify_per_row``), computed per
    row, and the step equals eager's."""
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextGatedDeltaNet

    model = tiny_model("qwen3_next", layer_types=["linear_attention", "full_attention"], mlp_only_layers=[0, 1])
    other = type("OtherLinearAttention", (Qwen3NextGatedDeltaNet,), {})
    model.model.layers[0].linear_attn.__class__ = other
    batch = group_batch(lens=(6, 2, 6, 5, 1))
    before = torch._dynamo.utils.counters["replay"][recurrent.PROBE_COUNTER]
    ref, got, st = _compiled_step(model, batch, **PER_ROW)
    _assert_packed_per_row(st, batch, ["model.layers.0.linear_attn"])
    assert torch._dynamo.utils.counters["replay"][recurrent.PROBE_COUNTER] - before == 1
    assert replay_graphs[0].per_row_layers == {"model.layers.0.linear_attn": "OtherLinearAttention"}
    assert_same_step(ref, got)


class _PeekingMixer(torch.nn.Module):
    """A sub-layer that mixes tokens without attention and is not causal: each position adds a projection of
    the next position's input (a bidirectional conv in miniature)."""

    def __init__(self, hidden):
        super().__init__()
        self.proj = torch.nn.Linear(hidden, hidden)

    def forward(self, x):
        nxt = torch.cat([x[:, 1:], torch.zeros_like(x[:, :1])], dim=1)
        return x + self.proj(nxt)


def test_a_token_mixing_layer_that_is_not_causal_per_row_is_declined_naming_it():
    """The causality probe can fail: a sub-layer that reads later positions is recognised as a token mixer,
    computed per row would take one row's value where rows differ later, so ``verify_per_row`` declines it,
    naming the layer; the unpacked step equals eager's."""
    model = tiny_model("qwen3")
    for layer in model.model.layers:
        mlp = layer.mlp
        peek = _PeekingMixer(model.config.hidden_size)
        layer.mlp = torch.nn.Sequential(peek, mlp)
    batch = group_batch(lens=(6, 2, 6, 5, 1))
    ref, got, st = _compiled_step(model, batch)
    assert not st["applied"], st
    reason = st["fallback_reason"]
    assert "layer `model.layers.0.mlp` (Sequential) mixes tokens and is not causal per row" in reason, reason
    assert_same_step(ref, got)


@pytest.mark.parametrize("mode", ["per_row", "tree_scan"])
def test_a_recurrent_state_whose_head_size_equals_the_sequence_length_is_not_taken_for_a_token_table(mode, float64_scan):
    """The scan's zero start ``zeros(B, heads, dk, dv)`` with dk == T (16 here, the tiny model's key head size)
    has a batch- and a sequence-sized axis by chance: it is a per-row state, not a constant table of the tokens
    (CI's hypothesis example with 16 columns had declined it as a second value leaving the layer)."""
    model = tiny_model("qwen3_next", layer_types=["full_attention", "linear_attention"], mlp_only_layers=[0, 1],
                       dtype=float64_scan)
    assert model.config.linear_key_head_dim == 16
    batch = group_batch(prompt_len=8, lens=(6, 2, 6, 5), left_pad=2)  # 2 + 8 + 6 = 16 columns
    assert batch[0].shape[1] == 16
    ref, got, st = _compiled_step(model, batch, recurrent=mode)
    assert st["applied"], st["fallback_reason"]
    assert st[f"recurrent_{mode}"] == ["model.layers.1.linear_attn"], st
    assert_same_step(ref, got)


@pytest.mark.slow
def test_qwen3_next_with_a_cache_is_declined_naming_the_cache():
    """use_cache=True in a training step: the attention layer appends to its KV cache (a concatenation along the
    sequence axis); declined, the reason tells the user to pass use_cache=False, the step equals eager's. (The
    Gated DeltaNet layer runs as a tree scan, so its conv state no longer decides.)"""
    def cached(model, ids, am, adv, p):
        return grpo_loss(model(input_ids=ids, attention_mask=am, use_cache=True).logits, ids, am, adv, p)

    model = tiny_model("qwen3_next", layer_types=["linear_attention", "full_attention"], mlp_only_layers=[0, 1])
    ref, got, st = _compiled_step(model, group_batch(lens=(6, 2, 6, 5, 1)), fn=cached)
    assert not st["applied"], st
    assert st["fallback_reason"].startswith("`cat` at node `keys`: concatenation along the sequence"), st
    assert "use_cache=False" in st["fallback_reason"]
    assert_same_step(ref, got)


@pytest.mark.slow
def test_qwen3_next_detach_prefix_is_declined_naming_the_layer():
    """detach_prefix holds the shared tokens' state constant, which a layer computed per row does not: declined,
    naming the layer; the unpacked step equals eager's."""
    model = tiny_model("qwen3_next", layer_types=["linear_attention", "full_attention"], mlp_only_layers=[0, 1])
    ref, got, st = _compiled_step(model, group_batch(lens=(6, 2, 6, 5, 1)), mode="detach_prefix")
    assert not st["applied"], st
    assert st["fallback_reason"].startswith("recurrent layer `model.layers.0.linear_attn` (Qwen3NextGatedDeltaNet) "
                                            "is computed per row, which mode='detach_prefix' does not support"), st
    assert_same_step(ref, got)


@pytest.mark.slow
def test_plain_aot_eager_on_qwen3_next_fails_the_known_way_or_is_exact():
    """Why this file compiles with inner="eager": plain aot_eager (no replay) fails on Qwen3-Next's backward with
    torch 2.13 and transformers up to 5.24 (a `view` of the `cat` of the split q/k/v/z gradients). From 5.25 the
    model's code compiles there. Either way the outcome is checked: the known error, or loss and every gradient
    equal eager's. Where every transformers the range tests compiles it, switch the tests above to aot_eager."""
    model = tiny_model("qwen3_next", layer_types=["linear_attention", "full_attention"], mlp_only_layers=[0, 1])
    batch = group_batch(lens=(6, 2, 6, 5, 1))
    try:
        got = run(torch.compile(step_loss, backend="aot_eager", dynamic=True), model, *batch)
    except RuntimeError as e:
        assert "view size is not compatible" in str(e), e
        return
    assert_same_step(run(step_loss, model, *batch), got)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["per_row", "tree_scan"])
def test_random_rollout_trees_are_exact(mode, float64_scan):
    """Property: for random rollout batches (prompt groups, trees up to 3 levels deep, duplicate rows, left and
    right padding, pad ids that collide with real ids; tests/strategies.py), the packed step with the Gated
    DeltaNet per row (or on the prefix tree) computes exactly the distinct real prefixes in the packed layers and
    its outputs at real positions and every gradient equal eager's (float64, the scan in float64)."""
    from hypothesis import assume, given, settings, strategies
    from strategies import rollout_batches

    model = tiny_model("qwen3_next", layer_types=["full_attention", "linear_attention"], mlp_only_layers=[0, 1],
                       dtype=float64_scan)

    applied = []

    @settings(max_examples=8)
    @given(rollout_batches(), strategies.integers(0, 100))
    def check(batch, seed):
        ids, am, _ = batch
        assume(bool(am.bool().any(1).all()))  # a row of padding only: eager's attention has no key there
        am = am.long()
        valid = am.bool()
        w = torch.randn(*ids.shape, model.config.vocab_size, generator=torch.Generator().manual_seed(seed),
                        dtype=torch.float64)

        def step(f):
            model.zero_grad(set_to_none=True)
            out = f(ids, am)
            (out * w * valid[..., None]).sum().backward()
            return out.detach(), {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}

        def fwd(ids, am):
            return model(input_ids=ids, attention_mask=am, use_cache=False).logits

        ref = step(fwd)
        torch._dynamo.reset()
        got = step(torch.compile(fwd, backend="replay", options={**EAGER_INNER, "recurrent": mode}))
        st = replaycompile.last_stats()
        expected = unique_prefix_tokens(ids, am)
        if 1 in ids.shape:  # Dynamo specializes size-1 dims: declined, saying so
            assert not st["applied"] and "axis of size 1" in st["fallback_reason"], st["fallback_reason"]
        elif int(valid.sum()) - expected >= 1:
            assert st["applied"], st["fallback_reason"]
            assert st[f"recurrent_{mode}"] == ["model.layers.1.linear_attn"], st
            assert st["tokens_computed"] == expected, (st, expected)
            applied.append(st["recurrent_tokens_computed"])
        else:
            assert not st["applied"] and "min_shared_tokens" in st["fallback_reason"], st["fallback_reason"]
        torch.testing.assert_close(got[0][valid], ref[0][valid], rtol=1e-5, atol=1e-7)
        # the decay's parameters enter through ``-A_log.float().exp() * softplus(a.float() + dt_bias)`` (the
        # layer's own float32 cast, in a float64 model too): their gradients are float32 sums of terms of both
        # signs, which a changed summation order moves by ~1e-5 relative (CI met 1.5e-5 on dt_bias); float32's
        # bound for them, every other gradient at 1e-5 (float64)
        decay = {k for k in ref[1] if k.endswith(("A_log", "dt_bias"))}
        assert decay, sorted(ref[1])
        assert_same_step((torch.zeros(()), {k: v for k, v in ref[1].items() if k not in decay}),
                         (torch.zeros(()), {k: v for k, v in got[1].items() if k not in decay}))
        assert_same_step((torch.zeros(()), {k: ref[1][k] for k in decay}),
                         (torch.zeros(()), {k: got[1][k] for k in decay}), rtol=1e-4)

    check()
    assert applied, "no example was packed: the property checked nothing"


# ------------------------------------------------------------------------------------------------ tree scan
# recurrent="tree_scan": each Gated DeltaNet runs once on the packed tokens (kernels/tree_scan.py), each piece of
# the prefix tree's scan starting from its parent's final state; the conv reads each token's window in its row.

TREE_SCAN = {"recurrent": "tree_scan"}


def _assert_tree_scanned(st, batch, layers, graphs):
    ids, am = batch[0], batch[1]
    assert st["applied"], st
    assert st["recurrent_tree_scan"] == layers and st["recurrent_per_row"] == [], st
    assert st["recurrent_tokens_computed"] == 0, st  # no layer ran on the rows
    assert st["tokens_computed"] == unique_prefix_tokens(ids, am) < st["tokens_in"], st
    from replaycompile.kernels import packing as ops
    from replaycompile.passes.fuse_tree_scan import tree_scan_call

    calls = [n.target for n in graphs[0].packed.gm.graph.nodes if n.op == "call_function"]
    # one call per layer, and nothing replayed to the rows (the per-row nodes are gone)
    assert calls.count(tree_scan_call()) == len(layers) and ops.replay not in calls


@pytest.mark.parametrize("lens", [(6, 2, 6, 5, 1), (1, 2, 1, 3)], ids=["group", "completions-shorter-than-conv"])
def test_qwen3_next_group_runs_the_gated_deltanet_on_the_prefix_tree(lens, caplog, replay_graphs):
    """A left-padded prompt, completions right-padded (some shorter than the conv's kernel), float32 as shipped:
    the DeltaNet runs once on the packed tokens (counted, in the stats, no row replay in the packed graph); loss
    and every gradient within 1e-5 of eager's (the decay parameters against their layer's in_proj_ba gradient:
    ``_assert_same_step_decay_scaled``; at 1e-5 of themselves in the float64 tree tests)."""
    model = tiny_model("qwen3_next", layer_types=["linear_attention", "full_attention"], mlp_only_layers=[0, 1])
    batch = group_batch(lens=lens)
    before = dict(torch._dynamo.utils.counters["replay"])
    with caplog.at_level("WARNING", logger="replaycompile"):
        ref, got, st = _compiled_step(model, batch)  # the default options: the tree scan
    counters = torch._dynamo.utils.counters["replay"]
    assert counters[recurrent.TREE_SCAN_COUNTER] - before.get(recurrent.TREE_SCAN_COUNTER, 0) == 1
    assert counters[recurrent.COUNTER] == before.get(recurrent.COUNTER, 0)
    assert not any("computed per row" in r.getMessage() for r in caplog.records)
    _assert_tree_scanned(st, batch, ["model.layers.0.linear_attn"], replay_graphs)
    _assert_same_step_decay_scaled(ref, got)


@pytest.mark.parametrize("batch", [
    pytest.param(lambda: tree_batch(), id="two-level"),
    pytest.param(lambda: tree_batch(stems=((1, (2, 1)), (2, (1, 3)), (0, (4,)))), id="stems-shorter-than-conv"),
    pytest.param(lambda: tree_batch(prompt_len=50, stems=((20, (9, 30)), (5, (40, 1)))), id="longer-than-a-chunk"),
])
def test_qwen3_next_tree_runs_the_gated_deltanet_on_the_prefix_tree(batch, float64_scan, replay_graphs):
    """Two-level trees (prompt, stems, tails; stems shorter than the conv kernel; rows past the scan's 64-token
    chunk): the state forks at each branch point; loss and every gradient equal eager's (float64, the scan in
    float64: see ``float64_scan``)."""
    model = tiny_model("qwen3_next", layer_types=["linear_attention", "full_attention"], mlp_only_layers=[0, 1],
                       dtype=float64_scan)
    batch = batch()
    ref, got, st = _compiled_step(model, batch, **TREE_SCAN)
    _assert_tree_scanned(st, batch, ["model.layers.0.linear_attn"], replay_graphs)
    assert_same_step(ref, got)


@pytest.mark.slow
def test_qwen3_next_tree_scan_with_attention_first_and_moe_in_float32(replay_graphs):
    """4 layers (DeltaNet, attention, DeltaNet, attention), the tiny config's MoE layers, float32: both DeltaNets on
    the prefix tree; every gradient within 1e-5 of eager's, the decay parameters against the scale of their
    layer's ``in_proj_ba`` gradient (as ``test_qwen3_next_two_level_tree_in_float32``)."""
    model = tiny_model("qwen3_next", num_hidden_layers=4)
    batch = tree_batch()
    ref, got, st = _compiled_step(model, batch, **TREE_SCAN)
    _assert_tree_scanned(st, batch, ["model.layers.0.linear_attn", "model.layers.2.linear_attn"], replay_graphs)
    _assert_same_step_decay_scaled(ref, got)


def _assert_same_step_decay_scaled(ref, got):
    """Loss and every gradient within 1e-5 of eager's, relative, the DeltaNets' decay parameters (``A_log``,
    ``dt_bias``) relative to their layer's ``in_proj_ba`` gradient norm (``test_qwen3_next_two_level_tree_in_float32``
    says why: in float32 their cancelling sums move with the scan's summation order)."""
    (l0, g0), (l1, g1) = ref, got
    torch.testing.assert_close(l1, l0, rtol=1e-5, atol=1e-5)
    assert g0.keys() == g1.keys()
    for k in g0:
        scale = g0[k].norm()
        if k.endswith((".A_log", ".dt_bias")):
            scale = g0[k.rsplit(".", 1)[0] + ".in_proj_ba.weight"].norm()
        err = ((g1[k] - g0[k]).norm() / scale).item()
        assert err <= 1e-5, f"gradient of {k}: {err:.2e} of {scale:.2e}"


def test_tree_scan_stays_per_row_where_it_does_not_apply(caplog, replay_graphs):
    """Where the tree scan does not apply the layer is computed per row, and the log says why: here a row with a
    pad between real tokens is handled inside the call (the rows replayed, counted); the sites do not depend on
    the inner compiler (the scan is an opaque op)."""
    model = tiny_model("qwen3_next", layer_types=["linear_attention", "full_attention"], mlp_only_layers=[0, 1])
    ids, am, adv, p = group_batch(lens=(6, 2, 6, 5, 1))
    am = am.clone()
    am[1, 5] = 0  # a pad inside one row's prompt
    before = torch._dynamo.utils.counters["replay"]["recurrent_tree_scan_rows"]
    ref, got, st = _compiled_step(model, (ids, am, adv, p), **TREE_SCAN)
    assert st["applied"] and st["recurrent_tree_scan"] == ["model.layers.0.linear_attn"], st
    assert torch._dynamo.utils.counters["replay"]["recurrent_tree_scan_rows"] - before >= 1
    assert_same_step(ref, got)
    rg = replay_graphs[0]
    sites, why = recurrent.tree_scan_sites(rg.gm, rg.analysis)
    assert list(sites) == ["model.layers.0.linear_attn"] and not why
