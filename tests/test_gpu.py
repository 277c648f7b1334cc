"""The kernels and the backend on a CUDA device, against the pure-torch references (skipped without a GPU).

- the Triton tree attention (forward and backward) in bf16 and fp32 on ragged trees with GQA, and the
  block-sparse kernels under a random per-KV-head budget (Sparrow's pattern): out, lse, dq, dk, dv against
  ``tree_attention_reference`` / ``masked_attention_reference``, and the op's own counters must say the Triton
  kernels ran (unsupported inputs would have run the PyTorch path);
- Sparrow's Triton decode kernel (bf16) against ``sparse_decode_reference``; the chunked log-probs (fp32, values
  and gradients) against ``chunked_logprobs_reference``;
- the backend end to end: a tiny Qwen3 GRPO step compiled with ``backend="replay"`` on the device gives eager's
  loss and gradients, with the Triton kernels forward and backward.

``python -m pytest tests/test_gpu.py`` on a GPU machine; ``python bench/gpu_check.py`` runs this file first and
then times the kernels and a training step (the figures in docs/benchmarks.md). ``REPLAYCOMPILE_GPU_DRY_RUN=1``
runs the same checks on the CPU at tiny shapes through the Triton interpreter (``bench/gpu_check.py --dry-run``
sets it): a check of this file where no GPU is, not of the device. Each check prints one ``GPU_CHECK_ROW`` line
of JSON (its errors), which bench/gpu_check.py puts in its report."""

from __future__ import annotations

import json
import math
import os

import pytest
import torch
from trees import build_tree

from replaycompile.kernels import block_sparse_attention as bsa
from replaycompile.kernels import tree_attention as tree_module
from replaycompile.kernels.block_sparse import BlockLayout, causal_block_mask, cdiv, tree_block_mask
from replaycompile.kernels.block_sparse_reference import budget_visibility_mask, masked_attention_reference
from replaycompile.kernels.tree_attention_reference import tree_attention_reference

DRY = os.environ.get("REPLAYCOMPILE_GPU_DRY_RUN") == "1"
DEVICE = torch.device("cpu" if DRY else "cuda")
pytestmark = pytest.mark.skipif(not DRY and not torch.cuda.is_available(),
                                reason="needs a CUDA device (REPLAYCOMPILE_GPU_DRY_RUN=1 runs it on the CPU)")


def report(stage: str, row: dict) -> None:
    """One line bench/gpu_check.py reads back (pytest -s shows it; captured, a failure shows it)."""
    print("GPU_CHECK_ROW " + json.dumps(dict(row, stage=stage), default=str), flush=True)


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double().cpu(), b.double().cpu()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def ran_both(ran) -> tuple:
    """(forward, backward) tree-attention paths a ``PathRecorder`` counted."""
    return ran.paths("forward"), ran.paths("backward")


def randn(g, *shape, dtype):
    return torch.randn(*shape, generator=g).to(DEVICE, dtype)


def flex_errors(q, k, v, go, subtree_end, scale, ref_out, ref_grads) -> dict:
    """FlexAttention on the same tree against the same reference: a yardstick for what bf16 GPU attention error
    looks like (reported, not checked); empty where it cannot run."""
    if DEVICE.type != "cuda":
        return {}
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        n = q.shape[2]
        bm = create_block_mask(lambda b, h, qi, ki: (ki <= qi) & (qi < subtree_end[ki]), None, None, n, n,
                               device=DEVICE, _compile=True)
        qf, kf, vf = (x.clone().requires_grad_() for x in (q, k, v))
        fo = torch.compile(flex_attention, dynamic=False)(qf, kf, vf, block_mask=bm, scale=scale, enable_gqa=True)
        fg = torch.autograd.grad(fo, (qf, kf, vf), go)
        return dict(flex_out=rel(fo, ref_out), flex_dq=rel(fg[0], ref_grads[0]), flex_dk=rel(fg[1], ref_grads[1]),
                    flex_dv=rel(fg[2], ref_grads[2]))
    except Exception as e:  # noqa: BLE001 - the yardstick is optional
        return dict(flex_error=f"{type(e).__name__}: {e}"[:300])


# ------------------------------------------------------------------------------------------------ kernels

TREE_CASES = [  # dtype, prompt, completions, query heads, KV heads, head dim
    (torch.bfloat16, 37, [5, 9, 3], 4, 2, 16),
    (torch.float32, 20, [7, 4], 2, 1, 16),
] if DRY else [
    (torch.bfloat16, 1000, [100 + 37 * i for i in range(8)], 8, 2, 128),
    (torch.bfloat16, 777, [90 + 51 * i for i in range(8)], 4, 4, 64),
    (torch.float32, 500, [60 + 17 * i for i in range(8)], 4, 2, 128),
]


@pytest.mark.parametrize("dtype,prompt,lens,hq,hkv,d", TREE_CASES,
                         ids=[f"{str(c[0])[6:]}-N{c[1] + sum(c[2])}-Hq{c[3]}-Hkv{c[4]}-D{c[5]}" for c in TREE_CASES])
def test_tree_attention_kernels_match_the_reference(dtype, prompt, lens, hq, hkv, d):
    """G completions hanging off one prompt, packed as the plan packs them: the Triton kernels' out, lse and
    gradients against the float32 reference (bf16 within 2e-2 relative L2, fp32 within 1e-4)."""
    g = torch.Generator().manual_seed(0)
    tree = build_tree([(-1, 0, prompt)] + [(0, prompt - 1, c) for c in lens])
    n = tree.n
    bq, bk = bsa.default_blocks(d, dtype, DEVICE.type)
    layout = BlockLayout.from_block_masks(*tree_block_mask(tree.subtree_end, bq, bk), bq, bk, n, n).to(DEVICE)
    meta = [m.to(DEVICE) for m in tree.meta()]
    scale = 1 / math.sqrt(d)
    q, k, v = (randn(g, 1, h, n, d, dtype=dtype) for h in (hq, hkv, hkv))
    go = randn(g, 1, hq, n, d, dtype=dtype)
    qr, kr, vr = (x.float().requires_grad_() for x in (q, k, v))
    ro, rl = tree_attention_reference(qr, kr, vr, meta[0], scale)
    rg = torch.autograd.grad(ro, (qr, kr, vr), go.float())
    qs, ks, vs = (x.clone().requires_grad_() for x in (q, k, v))
    with tree_module.PathRecorder() as rec:
        out, lse = tree_module.tree_attention(qs, ks, vs, *meta, scale, layout.tensors(), bq, bk)
        grads = torch.autograd.grad(out, (qs, ks, vs), go)
    ran = ran_both(rec)
    tol = 1e-4 if dtype == torch.float32 else 2e-2
    row = dict(case=f"tree {str(dtype)[6:]} N={n} Hq={hq} Hkv={hkv} D={d} blocks={bq}x{bk}",
               ran="/".join(map(str, ran)), out=rel(out, ro), lse_max_abs=(lse - rl).abs().max().item(),
               dq=rel(grads[0], rg[0]), dk=rel(grads[1], rg[1]), dv=rel(grads[2], rg[2]), tolerance=tol)
    if dtype != torch.float32:
        row.update(flex_errors(q, k, v, go, meta[0], scale, ro, rg))
    worst = max(row["out"], row["dq"], row["dk"], row["dv"])
    row["pass"] = bool(ran == ("triton", "triton") and worst <= tol
                       and row["lse_max_abs"] <= (1e-3 if dtype == torch.float32 else 2e-2))
    report("correctness", row)
    assert ran == ("triton", "triton"), f"the Triton kernels did not run (forward/backward: {ran})"
    assert row["pass"], row


def test_budget_attention_kernels_match_the_reference():
    """A random per-KV-head block budget (Sparrow's pattern), bottom-right causal, fewer queries than keys, bf16:
    the kernels (``use_triton=True`` has no PyTorch path) against the masked reference."""
    g = torch.Generator().manual_seed(1)
    nq, nk, hq, hkv, d = (40, 70, 4, 2, 16) if DRY else (1500, 2600, 8, 2, 128)
    dt = torch.bfloat16
    bq, bk = bsa.default_blocks(d, dt, DEVICE.type)
    sel = torch.rand(hkv, cdiv(nq, bq), cdiv(nk, bk), generator=g) < 0.5
    lay = BlockLayout.from_block_masks(*causal_block_mask(nq, nk, bq, bk, sel), bq, bk, nq, nk).to(DEVICE)
    q, k, v = randn(g, 1, hq, nq, d, dtype=dt), randn(g, 1, hkv, nk, d, dtype=dt), randn(g, 1, hkv, nk, d, dtype=dt)
    go = randn(g, 1, hq, nq, d, dtype=dt)
    qr, kr, vr = (x.float().requires_grad_() for x in (q, k, v))
    ro, rl = masked_attention_reference(qr, kr, vr, budget_visibility_mask(sel, nq, nk, bq, bk), d ** -0.5)
    rg = torch.autograd.grad(ro, (qr, kr, vr), go.float())
    qs, ks, vs = (x.clone().requires_grad_() for x in (q, k, v))
    out, lse = bsa.block_sparse_attention(qs, ks, vs, lay.tensors(), bq, bk, d ** -0.5, True)
    grads = torch.autograd.grad(out, (qs, ks, vs), go)
    finite = torch.isfinite(rl)
    row = dict(case=f"budget bf16 Nq={nq} Nk={nk} Hq={hq} Hkv={hkv} D={d} per-head selection", ran="triton/triton",
               out=rel(out, ro), lse_max_abs=(lse - rl)[finite].abs().max().item(), dq=rel(grads[0], rg[0]),
               dk=rel(grads[1], rg[1]), dv=rel(grads[2], rg[2]), tolerance=2e-2)
    row["pass"] = bool(max(row["out"], row["dq"], row["dk"], row["dv"]) <= 2e-2 and row["lse_max_abs"] <= 2e-2)
    report("correctness", row)
    assert row["pass"], row


def test_sparse_decode_kernel_matches_the_reference():
    """Sparrow's decode step in bf16 (the kernel's dot products run at tl.dot's default precision, so fp32 inputs
    would be compared at TF32's): a budget that leaves pages out, with a left-padded row, against the reference's
    page selection and attention."""
    from replaycompile.kernels import sparse_decode as sd
    from replaycompile.kernels.sparse_decode_reference import select_pages_reference, sparse_decode_reference

    b, hq, hkv, d, page, length, kv_len, topk = (2, 4, 2, 16, 16, 160, 150, 3) if DRY else \
        (4, 16, 4, 128, 64, 4096, 4000, 16)
    g = torch.Generator().manual_seed(2)
    k, v, q = (torch.randn(*s, generator=g).to(torch.bfloat16) for s in
               ((b, hkv, length, d), (b, hkv, length, d), (b, hq, 1, d)))
    vis = torch.zeros(b, length, dtype=torch.bool)
    vis[:, :kv_len] = True
    vis[-1, :page + 5] = False  # a left-padded row
    kept = select_pages_reference(q, k, vis, kv_len, topk, page, 1, 2)
    ref = sparse_decode_reference(q, k, v, vis, kept, page, d ** -0.5)
    sd.reset_page_state()
    out = sd.sparse_decode(q.to(DEVICE), k.to(DEVICE), v.to(DEVICE), vis[:, None, None, :].to(DEVICE),
                           torch.tensor([kv_len, topk]), d ** -0.5, page, 1, 2, True, 0)
    row = dict(case=f"sparse decode bf16 B={b} Hq={hq} Hkv={hkv} D={d} kv {kv_len}, {1 + 2 + topk} of "
                    f"{cdiv(kv_len, page)} pages of {page}", ran="triton", out=rel(out, ref), tolerance=2e-2)
    row["pass"] = bool(not kept.all() and row["out"] <= 2e-2)
    report("correctness", row)
    assert row["pass"], row


def test_chunked_logprobs_match_the_reference():
    """The LM head's chunked log-probs and entropies on the device in fp32, values and the gradients of hidden,
    weight and bias, against the unfused reference in float64."""
    from replaycompile.kernels.chunked_logprobs import chunked_logprobs
    from replaycompile.kernels.chunked_logprobs_reference import chunked_logprobs_reference

    m, h, vocab, chunk = (37, 16, 50, 8) if DRY else (1024, 1024, 32000, 256)
    g = torch.Generator().manual_seed(3)
    hidden, weight, bias = (torch.randn(m, h, generator=g), torch.randn(vocab, h, generator=g) / h ** 0.5,
                            torch.randn(vocab, generator=g))
    targets = torch.randint(0, vocab, (m,), generator=g)
    g_logp, g_ent = torch.randn(m, generator=g), torch.randn(m, generator=g)

    def run(fn, dtype, device):
        xs = [x.to(device, dtype).requires_grad_() for x in (hidden, weight, bias)]
        logp, ent = fn(*xs, targets.to(device))[:2]
        grads = torch.autograd.grad((logp * g_logp.to(device, logp.dtype)).sum()
                                    + (ent * g_ent.to(device, ent.dtype)).sum(), xs)
        return [logp, ent, *grads]

    ref = run(chunked_logprobs_reference, torch.float64, "cpu")
    got = run(lambda hd, w, bi, t: chunked_logprobs(hd, w, bi, t, chunk, True, 0.0), torch.float32, DEVICE)
    errs = dict(zip(("logp", "entropy", "d_hidden", "d_weight", "d_bias"), (rel(a, b) for a, b in zip(got, ref))))
    row = dict(case=f"chunked log-probs fp32 M={m} H={h} V={vocab} chunks of {chunk}", ran=DEVICE.type,
               out=max(errs.values()), errors=errs, tolerance=1e-4)
    row["pass"] = bool(row["out"] <= 1e-4)
    report("correctness", row)
    assert row["pass"], row


# ------------------------------------------------------------------------------------------------ the backend


def test_replay_step_on_the_device_equals_eager():
    """A tiny Qwen3 GRPO-style step (a clipped ratio against a perturbed copy's log-probs, plus a log-prob term, so
    the loss depends on the logits) compiled with ``backend="replay"`` (``attention="auto"`` must pick the Triton
    kernels on CUDA): packed, the kernels ran forward and backward, loss within 1e-5 and every gradient within
    1e-4 of eager's (fp32)."""
    import replaycompile
    from replaycompile.testing.models import behaviour_logprobs, tiny_model

    torch.manual_seed(0)
    model = tiny_model("qwen3", "sdpa", hidden_size=256, intermediate_size=512, num_attention_heads=4,
                       num_key_value_heads=2, head_dim=64, vocab_size=1024).to(DEVICE)
    g = torch.Generator().manual_seed(1)
    b, p, c = (4, 24, 8) if DRY else (8, 500, 150)
    prompt = torch.randint(1, 1024, (p,), generator=g)
    rows, masks = [], []
    for i in range(b):
        n = c - (i % 3) * (c // 4)
        rows.append(torch.cat([prompt, torch.randint(1, 1024, (n,), generator=g),
                               torch.zeros(c - n, dtype=torch.long)]))
        masks.append(torch.cat([torch.ones(p + n), torch.zeros(c - n)]))
    ids, am = torch.stack(rows).to(DEVICE), torch.stack(masks).long().to(DEVICE)
    adv = torch.randn(b, generator=g).to(DEVICE)
    old_logp = behaviour_logprobs(model, ids, am, p, seed=2)

    def step(ids, am, adv):
        logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
        logp = logits[:, p - 1:-1].float().log_softmax(-1).gather(-1, ids[:, p:, None]).squeeze(-1)
        cm = am[:, p:].float()
        return -((torch.exp(logp - old_logp) * adv[:, None] + 0.01 * logp) * cm).sum() / cm.sum()

    def grads_of(fn):
        model.zero_grad(set_to_none=True)
        loss = fn(ids, am, adv)
        loss.backward()
        return loss.detach(), [q.grad.detach().clone() for q in model.parameters()]

    ref = grads_of(step)
    opts = {"inner": "aot_eager"}
    if DEVICE.type != "cuda":
        opts["attention"] = "triton"  # the dry run: the kernels through the interpreter
    with tree_module.PathRecorder() as rec:
        got = grads_of(torch.compile(step, backend="replay", options=opts))
    ran = ran_both(rec)
    st = replaycompile.last_stats()
    worst = max(rel(a, b) for a, b in zip(got[1], ref[1]))
    row = dict(case=f"replay GRPO step, tiny Qwen3 fp32 on {DEVICE.type}, B={b}, prompt {p}", applied=st["applied"],
               attention_ran="/".join(map(str, ran)), stats_attention=st["attention"], tokens_in=st["tokens_in"],
               tokens_computed=st["tokens_computed"], loss=ref[0].item(),
               loss_rel=abs((got[0] - ref[0]).item()) / max(abs(ref[0].item()), 1e-30), worst_grad_rel=worst)
    row["pass"] = bool(st["applied"] and ran == ("triton", "triton") and worst <= 1e-4 and row["loss_rel"] <= 1e-5)
    report("end_to_end", row)
    assert st["applied"], st["fallback_reason"]
    assert ran == ("triton", "triton"), f"the Triton kernels did not run (forward/backward: {ran})"
    assert row["pass"], row
