"""The sequence-axis analysis on hand-built graphs: what it proves, and each reason it declines."""

from __future__ import annotations

import logging

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from helpers import AOT, group_batch

import replaycompile
from replaycompile.testing.models import tiny_model
from replaycompile.passes.nodes import B, T
from replaycompile.passes.region import analyze


def capture(fn, *args, **kwargs):
    """The Dynamo graph(s) of ``fn`` (what the backend receives)."""
    graphs = []

    def grab(gm, example_inputs):
        graphs.append(gm)
        return gm

    torch._dynamo.reset()
    torch.compile(fn, backend=grab)(*args, **kwargs)
    return graphs


class TinyLM(nn.Module):
    """Embedding -> [norm, mixing, MLP] -> LM head; ``mixing`` picks the token-mixing op under test."""

    def __init__(self, mixing="causal", vocab=32, dim=16, heads=2):
        super().__init__()
        self.mixing, self.heads = mixing, heads
        self.emb = nn.Embedding(vocab, dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.o = nn.Linear(dim, dim)
        self.up = nn.Linear(dim, 2 * dim)
        self.down = nn.Linear(2 * dim, dim)
        self.head = nn.Linear(dim, vocab)
        self.conv = nn.Conv1d(dim, dim, 3, padding=2)
        self.router = nn.Linear(dim, 4)
        self.gru = nn.GRU(dim, dim, batch_first=True)

    def attend(self, x, causal=True, mask=None):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal and mask is None)
        return self.o(y.transpose(1, 2).reshape(b, t, d))

    def forward(self, ids):
        x = self.emb(ids)
        t = ids.shape[1]
        m = self.mixing
        if m == "causal":
            x = x + self.attend(F.rms_norm(x, (x.shape[-1],)))
        elif m == "bidirectional":
            x = x + self.attend(x, causal=False)
        elif m == "prefix_lm":  # bidirectional over the first 4 tokens, causal after
            i = torch.arange(t)
            mask = (i[None, :] <= i[:, None]) | (i[None, :] < 4)
            x = x + self.attend(x, mask=mask)
        elif m == "sliding":  # a window of 3 tokens
            i = torch.arange(t)
            mask = (i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] < 3)
            x = x + self.attend(x, mask=mask)
        elif m == "chunked":  # Llama-4 style chunked attention: causal within chunks of 4 tokens
            i = torch.arange(t)
            mask = (i[None, :] <= i[:, None]) & (i[None, :] // 4 == i[:, None] // 4)
            x = x + self.attend(x, mask=mask)
        elif m == "alibi":  # an additive float bias on the scores (ALiBi): causal, but not a 0/-inf mask
            i = torch.arange(t)
            dist = (i[:, None] - i[None, :]).float()
            bias = torch.where(dist >= 0, -0.5 * dist, torch.full_like(dist, float("-inf")))
            x = x + self.attend(x, mask=bias)
        elif m == "rnn":  # a recurrent layer: state crosses tokens
            x = x + self.gru(x)[0]
            x = x + self.attend(x)
        elif m == "ssm":  # a diagonal state-space scan, written as a loop over the sequence (unrolled)
            h, outs = torch.zeros_like(x[:, 0]), []
            for j in range(t):
                h = 0.9 * h + x[:, j]
                outs.append(h)
            x = x + torch.stack(outs, 1)
            x = x + self.attend(x)
        elif m == "conv":
            x = x + self.conv(x.transpose(1, 2))[..., :t].transpose(1, 2)
            x = x + self.attend(x)
        elif m == "cumsum":
            x = x + x.cumsum(1)
            x = x + self.attend(x)
        elif m == "dropout":
            x = x + F.dropout(self.attend(x), p=0.1, training=True)
            x = x + self.attend(x)
        elif m == "moe_capacity":  # each expert takes the top tokens of the whole batch (capacity routing)
            scores = self.router(x).softmax(-1)
            cap = scores.flatten(0, 1).topk(2, dim=0).indices
            x = x + scores.flatten(0, 1)[cap].sum() * 0 + self.attend(x)
            x = x + self.attend(x)
        elif m == "altup":  # Gemma 3n's AltUp: copies of each token's state mixed by that token's coefficients
            b, t, d = x.shape
            copies = torch.stack([x, 2 * x])                                    # [2, B, T, D]
            coefs = self.router(x).view(b, t, 2, 2)                             # [B, T, 2, 2]
            pred = torch.matmul(copies.permute(1, 2, 3, 0), coefs).permute(3, 0, 1, 2)
            x = x + torch.multiply(pred[0], pred[1]) + self.attend(x)
        elif m == "flip":
            x = x + self.attend(x.flip(1))
        x = x + self.down(F.silu(self.up(x)))
        return self.head(x)


def shared_ids(rows=4, prompt=8, own=3, vocab=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    p = torch.randint(0, vocab, (prompt,), generator=g)
    return torch.cat([p.expand(rows, prompt), torch.randint(0, vocab, (rows, own), generator=g)], 1)


def test_hf_graph_classification():
    """On HF Qwen3 the analysis finds the token inputs, every attention, packs the per-token ops and
    recognises the mask-building nodes."""
    model = tiny_model("qwen3")
    ids = shared_ids(vocab=128)
    am = torch.ones_like(ids)
    (gm,) = capture(model, input_ids=ids, attention_mask=am, use_cache=False)
    a = analyze(gm)
    assert a.applicable, a.reason
    assert a.ids.name.endswith("input_ids_") and a.attention_mask is not None
    assert len(a.attention) == model.config.num_hidden_layers
    linears = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is torch._C._nn.linear]
    assert linears and all(a.kind[n] == "packed" for n in linears)
    assert any(k == "mask" for k in a.kind.values())
    emb = next(n for n in gm.graph.nodes if n.op == "call_function" and n.target is F.embedding)
    assert a.roles[emb] == (B, T, None)
    for s in a.attention:
        assert a.roles[s.q][0] == B and a.roles[s.q][2] == T


def test_toy_causal_model_is_packed_and_exact():
    model = TinyLM("causal")
    ids = shared_ids()
    (gm,) = capture(model, ids)
    assert analyze(gm).applicable
    x = model(ids)
    y = torch.compile(model, backend="replay", options=AOT)(ids)
    assert replaycompile.last_stats()["applied"]
    torch.testing.assert_close(y, x, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mixing,words", [
    ("bidirectional", "bidirectional"),
    ("conv", "conv"),
    ("cumsum", "cumsum"),
    ("dropout", "dropout"),
    ("moe_capacity", "topk"),
    ("flip", "flip"),
    ("rnn", "gru"),
    ("ssm", "integer index on the sequence axis"),
])
@torch._dynamo.config.patch(allow_rnn=True)  # else Dynamo breaks the graph at nn.GRU
def test_graph_level_declines_name_the_node(mixing, words, caplog):
    """Token mixing the analysis cannot prove per-token (recurrent, SSM scans, convolutions, cumulative ops,
    batch-level routing, dropout): declined, the reason names the op; results equal eager; logged once."""
    model = TinyLM(mixing)
    ids = shared_ids()
    (gm, *_) = capture(model, ids)
    a = analyze(gm)
    assert not a.applicable
    assert words in a.reason.lower(), a.reason
    assert "node `" in a.reason or "attention" in a.reason
    compiled = torch.compile(model, backend="replay", options=AOT)
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        torch.manual_seed(0)
        y1 = compiled(ids)
        y2 = compiled(ids)
    st = replaycompile.last_stats()
    assert not st["applied"] and words in st["fallback_reason"].lower()
    assert sum(words in r.getMessage().lower() for r in caplog.records) == 1
    if mixing != "dropout":
        torch.testing.assert_close(y1, model(ids), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(y2, y1)


def test_per_token_matmul_of_two_token_dependent_tensors_is_packed():
    """A matmul whose operands both depend on the tokens but carry them only in their batch dims (one small
    product per token, as Gemma 3n's AltUp) is per-token: packed, exact; ``torch.multiply`` is ``mul``."""
    model = TinyLM("altup")
    ids = shared_ids()
    y = torch.compile(model, backend="replay", options=AOT)(ids)
    st = replaycompile.last_stats()
    assert st["applied"] and st["tokens_computed"] < st["tokens_in"], st
    torch.testing.assert_close(y, model(ids), rtol=1e-5, atol=1e-5)


def test_chunked_attention_is_packed_with_its_chunks():
    """A mask causal within chunks of 4 tokens (Llama 4's chunked attention, written by hand) is found as chunks
    by the mask check (not a sliding window: query 5 sees key 4 but not key 3) and packed; exact."""
    model = TinyLM("chunked")
    ids = shared_ids()
    before = torch._dynamo.utils.counters["replay"]["attention_chunk_sites"]
    y = torch.compile(model, backend="replay", options=AOT)(ids)
    st = replaycompile.last_stats()
    assert st["applied"], st
    assert torch._dynamo.utils.counters["replay"]["attention_chunk_sites"] > before
    torch.testing.assert_close(y, model(ids), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mixing,pattern", [
    ("prefix_lm", "query 0 sees key 1 after it"),
])
def test_masks_that_are_not_causal_are_declined(mixing, pattern):
    """Masks are checked numerically against causal-with-padding: a bidirectional prefix falls back, the reason
    says which pattern was found, and results equal eager."""
    model = TinyLM(mixing)
    ids = shared_ids()
    y = torch.compile(model, backend="replay", options=AOT)(ids)
    st = replaycompile.last_stats()
    assert not st["applied"] and "not causal-with-padding" in st["fallback_reason"]
    assert pattern in st["fallback_reason"], st["fallback_reason"]
    torch.testing.assert_close(y, model(ids), rtol=1e-5, atol=1e-5)


def test_additive_bias_is_declined():
    """An additive float bias on the scores (ALiBi) is not a visibility pattern: declined, exact anyway."""
    model = TinyLM("alibi")
    ids = shared_ids()
    y = torch.compile(model, backend="replay", options=AOT)(ids)
    st = replaycompile.last_stats()
    assert not st["applied"] and "adds a bias to its scores" in st["fallback_reason"], st
    torch.testing.assert_close(y, model(ids), rtol=1e-5, atol=1e-5)


def test_sliding_window_mask_is_packed():
    """A sliding window of 3 tokens crossing the branch point: the window is verified and applied by row
    position in the packed attention (tests/test_sliding_window.py), so the call packs and equals eager."""
    model = TinyLM("sliding")
    ids = shared_ids()
    y = torch.compile(model, backend="replay", options=AOT)(ids)
    st = replaycompile.last_stats()
    assert st["applied"] and st["tokens_computed"] < st["tokens_in"], st
    torch.testing.assert_close(y, model(ids), rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # over 15 s on 2 cores
def test_mistral_sliding_window_crossing_is_packed():
    """HF Mistral with a sliding window shorter than the rows: packed with the window, exact."""
    model = tiny_model("mistral", sliding_window=4)
    ids = shared_ids(vocab=128)
    am = torch.ones_like(ids)
    compiled = torch.compile(model, backend="replay", options=AOT)
    y = compiled(input_ids=ids, attention_mask=am, use_cache=False).logits
    st = replaycompile.last_stats()
    assert st["applied"] and st["tokens_computed"] < st["tokens_in"], st
    torch.testing.assert_close(y, model(input_ids=ids, attention_mask=am, use_cache=False).logits,
                               rtol=1e-5, atol=1e-5)


class TrilMaskLM(nn.Module):
    """Builds its mask from ``ones(T, T).tril()``: T is used as a value, which the structured probe does not
    follow, so the mask is verified in full."""

    def __init__(self):
        super().__init__()
        self.base = TinyLM("causal")

    def forward(self, ids, am):
        t = ids.shape[1]
        mask = torch.ones(t, t, dtype=torch.bool).tril()[None, None] & am.bool()[:, None, None, :]
        x = self.base.emb(ids)
        x = x + self.base.attend(x, mask=mask)
        return self.base.head(x)


@pytest.mark.slow
def test_structured_mask_check_runs_once_per_graph_at_any_length(monkeypatch, replay_graphs):
    """HF's mask is verified on chosen positions (passes/mask_probe.py): once per graph for every later length,
    never by a B x T x T evaluation (a size limit of 0 elements does not matter)."""
    from replaycompile.runtime import masks as mask_check

    graphs = replay_graphs
    monkeypatch.setattr(mask_check, "MAX_MASK_PROBE_ELEMENTS", 0)
    model = tiny_model("qwen3")
    compiled = torch.compile(model, backend="replay", options=AOT)
    for i in range(6):
        ids, am, _, _ = group_batch(prompt_len=8 + 3 * i, seed=i)
        y = compiled(input_ids=ids, attention_mask=am, use_cache=False).logits
        assert replaycompile.last_stats()["applied"], replaycompile.last_stats()
    ref = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    torch.testing.assert_close(y[am.bool()], ref[am.bool()], rtol=1e-5, atol=1e-5)
    assert 1 <= len(graphs) <= 2  # static, then dynamic
    assert all(g.masks.structured is not None and g.mask_verifications == 1 for g in graphs)


@pytest.mark.slow
def test_sliding_window_is_found_at_long_virtual_lengths_and_every_batch_packs(replay_graphs):
    """Mistral with a 64-token window: the window is found by the probe at long virtual lengths on the first
    batch (T < 64) and verified per site; batches shorter and longer than the window all pack, exact. A
    4096-token window is located from T=18."""
    graphs = replay_graphs
    model = tiny_model("mistral", sliding_window=64)
    compiled = torch.compile(model, backend="replay", options=AOT)
    for prompt_len in (30, 90, 40):
        ids, am, _, _ = group_batch(prompt_len=prompt_len)
        y = compiled(input_ids=ids, attention_mask=am, use_cache=False).logits
        st = replaycompile.last_stats()
        assert st["applied"], st
        ref = model(input_ids=ids, attention_mask=am, use_cache=False).logits
        torch.testing.assert_close(y[am.bool()], ref[am.bool()], rtol=1e-5, atol=1e-5)
    assert graphs[0].masks.windows == [64, 64] and graphs[0].masks.verified_len == mask_probe_long()
    torch._dynamo.reset()
    model = tiny_model("mistral", sliding_window=4096)
    ids, am, _, _ = group_batch()
    torch.compile(model, backend="replay", options=AOT)(input_ids=ids, attention_mask=am, use_cache=False)
    assert replaycompile.last_stats()["applied"]
    assert graphs[-1].masks.windows == [4096, 4096]


def mask_probe_long() -> int:
    from replaycompile.passes.mask_probe import LONG_CONTEXT

    return LONG_CONTEXT


@pytest.mark.slow  # over 15 s on 2 cores
def test_unstructured_mask_is_verified_in_full_per_shape_and_large_shapes_are_declined(monkeypatch, replay_graphs):
    """A mask built with ones(T, T).tril(): verified by a full evaluation once per input shape; past the size
    limit the graph is declined rather than allocate B x T x T."""
    from replaycompile.runtime import masks as mask_check

    graphs = replay_graphs
    model = TrilMaskLM()
    compiled = torch.compile(model, backend="replay", options=AOT, dynamic=True)
    ids, am = left_padded()
    for _ in range(2):
        compiled(ids, am)
    assert replaycompile.last_stats()["applied"], replaycompile.last_stats()
    (g,) = graphs
    assert g.masks.structured is None and g.mask_verifications == 1
    ids2, am2 = left_padded(prompt=9)
    compiled(ids2, am2)
    assert g.mask_verifications == 2, "a new shape is verified once"
    ids3, am3 = left_padded(prompt=11)
    monkeypatch.setattr(mask_check, "MAX_MASK_PROBE_ELEMENTS", ids3.shape[0] * ids3.shape[1] ** 2 - 1)
    y = compiled(ids3, am3)
    st = replaycompile.last_stats()
    assert not st["applied"] and "too large to verify the model's attention mask" in st["fallback_reason"], st
    valid = am3.bool()
    torch.testing.assert_close(y[valid], model(ids3, am3)[valid], rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # over 15 s on 2 cores
def test_attention_mask_values_and_holes_are_checked_every_call():
    """Each call's attention_mask: a value other than 0/1 runs unpacked and names the entry; padding between
    real tokens is verified on that mask in full (HF's mask handles it: packed and exact); a row of padding
    only is legitimate and packs."""
    model = tiny_model("qwen3")
    compiled = torch.compile(model, backend="replay", options=AOT)
    ids, am, _, _ = group_batch()
    cases = []
    two = am.clone()
    two[1, 5] = 2
    cases.append((two, False, "attention_mask[1, 5] = 2"))
    hole = am.clone()
    hole[2, 6] = 0
    cases.append((hole, True, None))
    empty = am.clone()
    empty[3] = 0
    cases.append((empty, True, None))
    for mask, packed, words in cases:
        y = compiled(input_ids=ids, attention_mask=mask, use_cache=False).logits
        st = replaycompile.last_stats()
        assert st["applied"] == packed and (words is None or words in st["fallback_reason"]), st
        ref = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
        valid = mask.bool()
        torch.testing.assert_close(y[valid], ref[valid], rtol=1e-5, atol=1e-5)


def test_graph_without_attention_passes_through_silently():
    """A loss tail after a graph break is not a candidate: it runs plainly and leaves last_stats alone."""
    f = torch.compile(lambda x: (x * 2).sum(), backend="replay", options=AOT)
    assert f(torch.ones(3)).item() == 6
    (gm,) = capture(lambda x: (x * 2).sum(), torch.ones(3))
    a = analyze(gm)
    assert not a.candidate and not a.applicable


class PositionalLM(nn.Module):
    """Positions computed in the graph from the mask (left-pad aware) and a constant per-column weight."""

    def __init__(self, column_weight=False, vocab=32, dim=16):
        super().__init__()
        self.column_weight = column_weight
        self.base = TinyLM("causal", vocab, dim)
        self.pos = nn.Embedding(64, dim)

    def forward(self, ids, am):
        pos = (am.cumsum(-1) - 1).clamp(min=0)
        x = self.base.emb(ids) + self.pos(pos)
        if self.column_weight:  # a [T, 1] tensor the analysis cannot tie to the sequence axis
            x = x * torch.linspace(0.5, 1.5, ids.shape[1])[:, None]
        x = x + self.base.attend(x)
        return self.base.head(x)


def left_padded(rows=4, prompt=6, own=3, pad=2, vocab=32):
    ids = shared_ids(rows, prompt, own, vocab)
    ids = torch.cat([torch.zeros(rows, pad, dtype=torch.long), ids], 1)
    am = torch.ones_like(ids)
    am[:, :pad] = 0
    return ids, am


def test_positions_from_a_mask_cumsum_are_shared():
    """cumsum of the mask along the sequence is a prefix function of the token inputs: still packed."""
    model = PositionalLM()
    ids, am = left_padded()
    y = torch.compile(model, backend="replay", options=AOT)(ids, am)
    assert replaycompile.last_stats()["applied"], replaycompile.last_stats()
    valid = am.bool()
    torch.testing.assert_close(y[valid], model(ids, am)[valid], rtol=1e-5, atol=1e-5)


def test_unidentified_sequence_length_axis_is_declined():
    """A constant with an axis as long as the sequence, broadcast against activations: never packed
    silently (it would be indexed by column, not by packed token)."""
    model = PositionalLM(column_weight=True)
    ids, am = left_padded()
    y = torch.compile(model, backend="replay", options=AOT)(ids, am)
    st = replaycompile.last_stats()
    assert not st["applied"] and "cannot identify" in st["fallback_reason"]
    torch.testing.assert_close(y, model(ids, am), rtol=1e-5, atol=1e-5)


class FlatTokenLM(nn.Module):
    """A per-token value of the ids in a flattened [B*T] layout meets flattened activations."""

    def __init__(self, vocab=32, dim=16):
        super().__init__()
        self.base = TinyLM("causal", vocab, dim)

    def forward(self, ids):
        x = self.base.emb(ids)
        x = x + self.base.attend(x)
        flat = x.reshape(-1, x.shape[-1])
        flat = flat * (ids.reshape(-1) % 3 + 1)[:, None].float()
        return self.base.head(flat).view(ids.shape[0], ids.shape[1], -1)


def test_flattened_token_values_are_gathered_by_row_and_column():
    model = FlatTokenLM()
    ids = shared_ids()
    y = torch.compile(model, backend="replay", options=AOT)(ids)
    assert replaycompile.last_stats()["applied"]
    torch.testing.assert_close(y, model(ids), rtol=1e-5, atol=1e-5)


def test_capacity_routing_by_sort_is_declined():
    """Capacity routing written with a sort: each expert keeps the first C tokens of the batch sorted by its
    score. Which tokens survive depends on the whole batch (a packed batch holds fewer), so the slice of the
    sorted token axis declines, naming the node."""

    class Capacity(TinyLM):
        def forward(self, ids):
            x = self.emb(ids)
            x = x + self.attend(x)
            scores = self.router(x).softmax(-1)[..., 0].flatten()  # [B*T] scores of expert 0
            _, order = torch.sort(scores, descending=True)
            kept = x.flatten(0, 1)[order][:4]                     # the top 4 tokens of the batch
            return self.head(x + kept.sum(0) * 0)

    (gm,) = capture(Capacity(), shared_ids())
    a = analyze(gm)
    assert not a.applicable
    assert "a slice of a flattened or sorted token axis" in a.reason and "node `" in a.reason, a.reason


@pytest.mark.parametrize("layout", ["group", "tree"])
def test_rotary_tables_written_as_a_matmul_over_a_size_one_axis_are_per_position(layout, monkeypatch):
    """transformers up to 5.18 writes the rotary angles as ``(inv_freq[None, :, None].expand(B, -1, 1) @
    position_ids[:, None, :].float()).transpose(1, 2)``: a matmul whose contraction has size 1, an outer product
    per row, so a per-position table. Qwen3's rotary embedding in that form packs and is exact (before, every
    rotary family declined on transformers 5.5-5.18 at the ``mul`` with ``cos``)."""
    from helpers import assert_same_step, run, step_loss
    from test_detach_prefix import tree_batch
    from transformers.models.qwen3 import modeling_qwen3

    def matmul_form(self, x, position_ids):
        inv = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1).to(x.device)
        freqs = (inv @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return (emb.cos() * self.attention_scaling).to(x.dtype), (emb.sin() * self.attention_scaling).to(x.dtype)

    monkeypatch.setattr(modeling_qwen3.Qwen3RotaryEmbedding, "forward", matmul_form)
    model = tiny_model("qwen3")
    batch = group_batch() if layout == "group" else tree_batch()
    ref = run(step_loss, model, *batch)
    got = run(torch.compile(step_loss, backend="replay", options=AOT), model, *batch)
    st = replaycompile.last_stats()
    assert st["applied"] and st["tokens_computed"] < st["tokens_in"], st["fallback_reason"]
    assert_same_step(ref, got)
