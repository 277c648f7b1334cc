"""GPU check of the Triton block-sparse attention kernels, in one command, under 5 minutes on an H200.

    python bench/gpu_check.py                # CUDA: writes $OUT/gpu_check.json and .md (or bench/out/ without $OUT)
    python bench/gpu_check.py --dry-run      # CPU: tiny shapes through the Triton interpreter (checks the script)
    python bench/gpu_check.py --sweep-blocks # also time the tree kernel at other block sizes (16K prompt)

Stages, each saved to disk as soon as it finishes (a timeout keeps what ran):

1. Correctness in bf16 (and fp32) against the pure-torch references (``tree_attention_reference``,
   ``masked_attention_reference``): out, lse and all three gradients, for a tree with GQA and ragged lengths and
   for a random per-head budget. FlexAttention on the same tree is measured against the same reference, as a
   yardstick for what bf16 GPU attention error looks like. A tree row passes only if the Triton kernels ran
   (the op's own call counters, forward and backward: unsupported inputs would run the PyTorch path).
2. The replay backend end to end on CUDA (``attention="auto"`` must pick the kernels): loss and gradients of a
   tiny Qwen3 GRPO-style step against eager; the loss is a ratio against fixed stored old log-probs plus a
   log-prob term, so its value depends on the logits; the kernels must be what ran, forward and backward.
3. Forward+backward time, G=8 completions of one prompt (4K-32K), interleaved round-robin, medians:
   the tree kernel; FlexAttention given the same mask (its BlockMask); SDPA on the unpacked batch [G, P + C]
   (the work replay removes); dense causal SDPA of the packed length N (the FLOP-rate yardstick). TFLOP/s at
   3.5x the forward's 4*D FLOPs per pair (backward = 2.5x forward), over visible token pairs (the tree's, or
   the causal triangle's for SDPA); for the tree kernel also over the block pairs it visits (masked work in
   partial blocks included: a diagnostic of the layout's overhead, not part of the target).

Targets (issue 3, H200): tree fwd+bwd at least as fast as FlexAttention on the same mask, and at least 50% of
dense SDPA's TFLOP/s, both rates on visible token pairs. Without a FlexAttention or dense SDPA row, or if the
timed tree variant did not run the Triton kernels, the target is "not measured", never met.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from replaycompile.kernels import block_sparse_attention as bsa
from replaycompile.kernels.block_sparse import BlockLayout, causal_block_mask, cdiv, tree_block_mask
from replaycompile.kernels.block_sparse_reference import budget_visibility_mask, masked_attention_reference
from replaycompile.kernels import tree_attention as tree_attention_module
from replaycompile.kernels.tree_attention import tree_attention
from replaycompile.kernels.tree_attention_reference import tree_attention_reference
from replaycompile.models import behaviour_logprobs  # old log-probs of a perturbed copy of the model

T0 = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - T0:6.1f}s] {msg}", flush=True)


# ------------------------------------------------------------------------------------------------ trees


def branch_tree(prompt: int, lens: list[int]):
    """A prompt of ``prompt`` tokens and one completion per entry of ``lens`` hanging off its last token, in DFS
    order: (subtree_end [N], seg_q, seg_kv_ptr, kv_ranges) as the runtime plan would build them."""
    n = prompt + sum(lens)
    se = torch.empty(n, dtype=torch.int64)
    se[:prompt] = n
    seg_q, ptr, ranges = [[0, prompt]], [0, 1], [[0, prompt]]
    pos = prompt
    for c in lens:
        se[pos:pos + c] = pos + c
        seg_q.append([pos, pos + c])
        ranges += [[0, prompt], [pos, pos + c]]
        ptr.append(len(ranges))
        pos += c
    t = lambda x: torch.tensor(x, dtype=torch.int64)  # noqa: E731
    return se, t(seg_q).reshape(-1, 2), t(ptr), t(ranges).reshape(-1, 2)


def visible_pairs(prompt: int, lens: list[int]) -> int:
    return prompt * (prompt + 1) // 2 + sum(c * prompt + c * (c + 1) // 2 for c in lens)


class Tree:
    def __init__(self, prompt, lens, device, block_q, block_k):
        self.prompt, self.lens = prompt, lens
        self.n = prompt + sum(lens)
        meta = branch_tree(prompt, lens)
        t = time.perf_counter()
        self.layout = BlockLayout.from_block_masks(*tree_block_mask(meta[0], block_q, block_k), block_q, block_k,
                                                   self.n, self.n).to(device)
        self.layout_ms = (time.perf_counter() - t) * 1e3
        self.meta = [m.to(device) for m in meta]
        self.subtree_end = self.meta[0]

    def attention(self, q, k, v, scale):
        return tree_attention(q, k, v, *self.meta, scale, self.layout.tensors(), self.layout.block_q,
                              self.layout.block_k)


# ------------------------------------------------------------------------------------------------ helpers


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def ran_both(before) -> tuple[str | None, str | None]:
    """(forward, backward) tree-attention paths that ran since the snapshot ``before`` (the op's counters)."""
    return (tree_attention_module.ran_since(before, "forward"), tree_attention_module.ran_since(before, "backward"))


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def flex_fns(device):
    """(flex_attention callable, create_block_mask), or None where FlexAttention cannot run a backward (CPU)."""
    if device.type != "cuda":
        return None
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    except ImportError:
        return None
    fn = torch.compile(flex_attention, dynamic=False)
    return fn, create_block_mask


def tree_block_mask_flex(create_block_mask, subtree_end, n, device):
    def tree_mask(b, h, q_idx, kv_idx):
        return (kv_idx <= q_idx) & (q_idx < subtree_end[kv_idx])
    return create_block_mask(tree_mask, None, None, n, n, device=device, _compile=True)


# ------------------------------------------------------------------------------------------------ stages


def correctness(args, device, res, save):
    g = torch.Generator(device="cpu").manual_seed(0)
    cfgs = []
    if args.dry_run:
        cfgs.append(dict(dtype=torch.bfloat16, prompt=37, lens=[5, 9, 3], hq=4, hkv=2, d=16))
        cfgs.append(dict(dtype=torch.float32, prompt=20, lens=[7, 4], hq=2, hkv=1, d=16))
    else:
        cfgs.append(dict(dtype=torch.bfloat16, prompt=1000, lens=[100 + 37 * i for i in range(8)], hq=8, hkv=2,
                         d=128))
        cfgs.append(dict(dtype=torch.bfloat16, prompt=777, lens=[90 + 51 * i for i in range(8)], hq=4, hkv=4, d=64))
        cfgs.append(dict(dtype=torch.float32, prompt=500, lens=[60 + 17 * i for i in range(8)], hq=4, hkv=2, d=128))
    flex = flex_fns(device)
    for c in cfgs:
        dt, d = c["dtype"], c["d"]
        bq, bk = bsa.default_blocks(d, dt, device.type)
        tree = Tree(c["prompt"], c["lens"], device, bq, bk)
        n, scale = tree.n, 1 / math.sqrt(d)
        q = torch.randn(1, c["hq"], n, d, generator=g).to(device, dt)
        k = torch.randn(1, c["hkv"], n, d, generator=g).to(device, dt)
        v = torch.randn(1, c["hkv"], n, d, generator=g).to(device, dt)
        go = torch.randn(1, c["hq"], n, d, generator=g).to(device, dt)
        qr, kr, vr = (x.float().requires_grad_() for x in (q, k, v))
        ro, rl = tree_attention_reference(qr, kr, vr, tree.subtree_end, scale)
        rgr = torch.autograd.grad(ro, (qr, kr, vr), go.float())
        qs, ks, vs = (x.clone().requires_grad_() for x in (q, k, v))
        before = tree_attention_module.calls_by_path()
        out, lse = tree.attention(qs, ks, vs, scale)
        grads = torch.autograd.grad(out, (qs, ks, vs), go)
        ran = ran_both(before)
        row = dict(case=f"tree {str(dt).replace('torch.', '')} N={n} Hq={c['hq']} Hkv={c['hkv']} D={d} "
                   f"blocks={bq}x{bk}", ran=f"{ran[0]}/{ran[1]}", out=rel(out, ro),
                   lse_max_abs=(lse - rl).abs().max().item(),
                   dq=rel(grads[0], rgr[0]), dk=rel(grads[1], rgr[1]), dv=rel(grads[2], rgr[2]))
        if flex is not None and dt != torch.float32:
            try:
                fa, cbm = flex
                bm = tree_block_mask_flex(cbm, tree.subtree_end, n, device)
                qf, kf, vf = (x.clone().requires_grad_() for x in (q, k, v))
                fo = fa(qf, kf, vf, block_mask=bm, scale=scale, enable_gqa=True)
                fg = torch.autograd.grad(fo, (qf, kf, vf), go)
                row.update(flex_out=rel(fo, ro), flex_dq=rel(fg[0], rgr[0]), flex_dk=rel(fg[1], rgr[1]),
                           flex_dv=rel(fg[2], rgr[2]))
            except Exception as e:  # noqa: BLE001 - the yardstick is optional
                row["flex_error"] = f"{type(e).__name__}: {e}"[:300]
        tol = 1e-4 if dt == torch.float32 else 2e-2
        worst = max(row["out"], row["dq"], row["dk"], row["dv"])
        row["tolerance"] = tol
        row["pass"] = bool(ran == ("triton", "triton") and worst <= tol
                           and row["lse_max_abs"] <= (1e-3 if dt == torch.float32 else 2e-2))
        res["correctness"].append(row)
        log(f"correctness: {row}")
        save()
    # a random per-KV-head budget (Sparrow's pattern), bottom-right causal, Nq < Nk
    nq, nk, hq, hkv, d = (40, 70, 4, 2, 16) if args.dry_run else (1500, 2600, 8, 2, 128)
    dt = torch.bfloat16
    bq, bk = bsa.default_blocks(d, dt, device.type)
    sel = torch.rand(hkv, cdiv(nq, bq), cdiv(nk, bk), generator=g) < 0.5
    lay = BlockLayout.from_block_masks(*causal_block_mask(nq, nk, bq, bk, sel), bq, bk, nq, nk).to(device)
    q = torch.randn(1, hq, nq, d, generator=g).to(device, dt)
    k = torch.randn(1, hkv, nk, d, generator=g).to(device, dt)
    v = torch.randn(1, hkv, nk, d, generator=g).to(device, dt)
    go = torch.randn(1, hq, nq, d, generator=g).to(device, dt)
    qr, kr, vr = (x.float().requires_grad_() for x in (q, k, v))
    ro, rl = masked_attention_reference(qr, kr, vr, budget_visibility_mask(sel, nq, nk, bq, bk), d ** -0.5)
    rgr = torch.autograd.grad(ro, (qr, kr, vr), go.float())
    qs, ks, vs = (x.clone().requires_grad_() for x in (q, k, v))
    # use_triton=True has no PyTorch path: the kernels ran or this raised
    out, lse = bsa.block_sparse_attention(qs, ks, vs, lay.tensors(), bq, bk, d ** -0.5, True)
    grads = torch.autograd.grad(out, (qs, ks, vs), go)
    finite = torch.isfinite(rl)
    row = dict(case=f"budget bf16 Nq={nq} Nk={nk} Hq={hq} Hkv={hkv} D={d} per-head selection",
               ran="triton/triton", out=rel(out, ro), lse_max_abs=(lse - rl)[finite].abs().max().item(),
               dq=rel(grads[0], rgr[0]), dk=rel(grads[1], rgr[1]), dv=rel(grads[2], rgr[2]), tolerance=2e-2)
    row["pass"] = bool(max(row["out"], row["dq"], row["dk"], row["dv"]) <= 2e-2 and row["lse_max_abs"] <= 2e-2)
    res["correctness"].append(row)
    log(f"correctness: {row}")
    save()


def end_to_end(args, device, res, save):
    import replaycompile
    from replaycompile.models import tiny_model

    torch.manual_seed(0)
    model = tiny_model("qwen3", "sdpa", hidden_size=256, intermediate_size=512, num_attention_heads=4,
                       num_key_value_heads=2, head_dim=64, vocab_size=1024).to(device)
    g = torch.Generator().manual_seed(1)
    b, p, c = (4, 24, 8) if args.dry_run else (8, 500, 150)
    prompt = torch.randint(1, 1024, (p,), generator=g)
    rows, masks = [], []
    for i in range(b):
        n = c - (i % 3) * (c // 4)
        rows.append(torch.cat([prompt, torch.randint(1, 1024, (n,), generator=g), torch.zeros(c - n, dtype=torch.long)]))
        masks.append(torch.cat([torch.ones(p + n), torch.zeros(c - n)]))
    ids, am = torch.stack(rows).to(device), torch.stack(masks).long().to(device)
    adv = torch.randn(b, generator=g).to(device)

    def logprobs(ids, am):
        logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
        return logits[:, p - 1:-1].float().log_softmax(-1).gather(-1, ids[:, p:, None]).squeeze(-1)

    # stored rollout log-probs from other parameters (a perturbed copy of the policy, as after an optimizer step):
    # the current model's log-probs plus noise would make exp(logp - old_logp) = exp(-noise) at evaluation, a
    # loss value independent of the model
    old_logp = behaviour_logprobs(model, ids, am, p, seed=2)

    def step(ids, am, adv):
        logp = logprobs(ids, am)
        cm = am[:, p:].float()
        return -((torch.exp(logp - old_logp) * adv[:, None] + 0.01 * logp) * cm).sum() / cm.sum()

    def grads_of(fn):
        model.zero_grad(set_to_none=True)
        loss = fn(ids, am, adv)
        loss.backward()
        return loss.detach(), [q.grad.detach().clone() for q in model.parameters()]

    ref = grads_of(step)
    opts = {"inner": "aot_eager"}
    if device.type != "cuda":
        opts["attention"] = "triton"
    before = tree_attention_module.calls_by_path()
    got = grads_of(torch.compile(step, backend="replay", options=opts))
    ran = ran_both(before)
    st = replaycompile.last_stats()
    worst = max(rel(a, b) for a, b in zip(got[1], ref[1]))
    row = dict(case=f"replay GRPO step, tiny Qwen3 fp32 on {device.type}, B={b}, prompt {p}", applied=st["applied"],
               attention_ran=f"{ran[0]}/{ran[1]}", stats_attention=st["attention"], tokens_in=st["tokens_in"],
               tokens_computed=st["tokens_computed"], loss=ref[0].item(),
               loss_rel=abs((got[0] - ref[0]).item()) / max(abs(ref[0].item()), 1e-30), worst_grad_rel=worst)
    row["pass"] = bool(st["applied"] and ran == ("triton", "triton") and worst <= 1e-4 and row["loss_rel"] <= 1e-5)
    res["end_to_end"] = row
    log(f"end to end: {row}")
    save()


def step_timing(args, device, res, save):
    """A GRPO step (forward, clipped-ratio loss on the completions against a perturbed policy's log-probs,
    backward) on a Qwen3-shaped model in bf16: eager with ``logits_to_keep`` (the strongest eager form a user
    writes for this loss: the LM head on the completions only) against ``backend="replay"`` with the same loss,
    interleaved, medians; loss and gradients of the two compared (bf16: loose tolerance)."""
    import replaycompile
    from replaycompile.models import tiny_model

    dtype = torch.float32 if args.dry_run else torch.bfloat16
    shape = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                 vocab_size=512, num_hidden_layers=2) if args.dry_run else \
        dict(hidden_size=1024, intermediate_size=3072, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
             vocab_size=32000, num_hidden_layers=8)
    model = tiny_model("qwen3", "sdpa", dtype=dtype, **shape).to(device)
    g = torch.Generator().manual_seed(3)
    for p, c in ([(40, 12)] if args.dry_run else [(4096, 512)]):
        b, v = args.group if not args.dry_run else 4, shape["vocab_size"]
        prompt = torch.randint(1, v, (p,), generator=g)
        rows, masks = [], []
        for i in range(b):
            n = c - (i * c) // (2 * b)
            rows.append(torch.cat([prompt, torch.randint(1, v, (n,), generator=g),
                                   torch.zeros(c - n, dtype=torch.long)]))
            masks.append(torch.cat([torch.ones(p + n), torch.zeros(c - n)]))
        ids, am = torch.stack(rows).to(device), torch.stack(masks).long().to(device)
        adv = torch.randn(b, generator=g).to(device)
        old_logp = behaviour_logprobs(model, ids, am, p, seed=4)
        cm = am[:, p:].float()

        def loss_of(logits):
            logp = logits.float().log_softmax(-1).gather(-1, ids[:, p:, None]).squeeze(-1)
            ratio = torch.exp(logp - old_logp)
            obj = torch.minimum(ratio * adv[:, None], ratio.clamp(0.8, 1.28) * adv[:, None])
            return -(obj * cm).sum() / cm.sum()

        def eager_step(ids, am):
            return loss_of(model(input_ids=ids, attention_mask=am, use_cache=False, logits_to_keep=c + 1).logits[:, :-1])

        def sliced_step(ids, am):
            return loss_of(model(input_ids=ids, attention_mask=am, use_cache=False).logits[:, p - 1:-1])

        cm_all = torch.zeros(b, p + c - 1, device=device)
        cm_all[:, p - 1:] = cm
        old_all = torch.zeros(b, p + c - 1, device=device)
        old_all[:, p - 1:] = old_logp

        def masked_step(ids, am):
            # the loss over every position times the completion mask (issue 29's form): replay computes the LM
            # head only where the mask keeps a position
            logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
            logp = logits[:, :-1].float().log_softmax(-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
            ratio = torch.exp(logp - old_all)
            obj = torch.minimum(ratio * adv[:, None], ratio.clamp(0.8, 1.28) * adv[:, None])
            return -(obj * cm_all).sum() / cm_all.sum()

        forms = {"sliced": sliced_step, "masked": masked_step}
        replays = {k: torch.compile(f, backend="replay", options={"inner": "aot_eager"}) for k, f in forms.items()}

        def run(fn):
            model.zero_grad(set_to_none=True)
            loss = fn(ids, am)
            loss.backward()
            return loss.detach()

        ref_loss = run(eager_step)
        ref_grads = [q.grad.detach().float().clone() for q in model.parameters()]
        checks = {}
        for k, fn in replays.items():
            before = tree_attention_module.calls_by_path()
            got_loss = run(fn)
            ran = ran_both(before)
            st = replaycompile.last_stats()
            worst = max(rel(q.grad.float(), r) for q, r in zip(model.parameters(), ref_grads))
            checks[k] = (got_loss, ran, st, worst)
        med = time_variants({"eager": lambda: run(eager_step),
                             **{k: (lambda fn=fn: run(fn)) for k, fn in replays.items()}}, args.reps, device)
        tol = 1e-4 if dtype == torch.float32 else 5e-2
        for k, (got_loss, ran, st, worst) in checks.items():
            loss_rel = abs((got_loss - ref_loss).item()) / max(abs(ref_loss.item()), 1e-30)
            row = dict(case=f"Qwen3 {shape['num_hidden_layers']}L h{shape['hidden_size']} V{v} {str(dtype)[6:]}, "
                            f"G={b}, prompt {p}, completions <= {c}; loss {k}; replay inner aot_eager",
                       eager_s=med["eager"], replay_s=med[k], speedup=med["eager"] / med[k],
                       tokens_in=st["tokens_in"], tokens_computed=st["tokens_computed"], loss=ref_loss.item(),
                       loss_rel=loss_rel, worst_grad_rel=worst, attention_ran=f"{ran[0]}/{ran[1]}",
                       lm_head_rows=st.get("lm_head_rows"), weighted_tokens_dropped=st.get("weighted_tokens_dropped"))
            row["pass"] = bool(st["applied"] and worst <= tol and loss_rel <= tol)
            res["step"].append(row)
            log(f"step: {row}")
        save()


def time_variants(variants: dict, reps: int, device) -> dict:
    """Round-robin over variants, ``reps`` rounds after one warm-up round; median seconds per variant."""
    times = {k: [] for k in variants}
    for r in range(reps + 1):
        for name, fn in variants.items():
            sync(device)
            t = time.perf_counter()
            fn()
            sync(device)
            if r:
                times[name].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def timings(args, device, res, save, prompts, block_sweep=None):
    hq, hkv, d = args.heads[0], args.heads[1], args.head_dim
    dt = torch.bfloat16 if device.type == "cuda" else torch.float32
    flex = flex_fns(device)
    g = torch.Generator().manual_seed(0)
    for prompt in prompts:
        if time.perf_counter() - T0 > args.deadline:
            res["skipped"].append(f"prompt {prompt}: past the {args.deadline}s deadline")
            log(res["skipped"][-1])
            continue
        lens = [args.completion] * args.group
        blocks = block_sweep or [bsa.default_blocks(d, dt, device.type)]
        trees = {bqk: Tree(prompt, lens, device, *bqk) for bqk in blocks}
        tree = trees[blocks[0]]
        n, t_unpacked = tree.n, prompt + args.completion
        scale = 1 / math.sqrt(d)
        mk = lambda *shape: torch.randn(*shape, generator=g).to(device, dt)  # noqa: E731
        q, k, v, go = mk(1, hq, n, d), mk(1, hkv, n, d), mk(1, hkv, n, d), mk(1, hq, n, d)
        leaves = [x.requires_grad_() for x in (q, k, v)]

        tree_ran = {}

        def tree_step(name, tr):
            def f():
                before = tree_attention_module.calls_by_path()
                out, _ = tr.attention(*leaves, scale)
                torch.autograd.grad(out, leaves, go)
                tree_ran[name] = ran_both(before)  # the last round's; a label must name what was timed
            return f

        variants = {f"tree kernel {bq}x{bk}": tree_step(f"tree kernel {bq}x{bk}", tr) for (bq, bk), tr in trees.items()}
        if block_sweep is None:
            if flex is not None:
                fa, cbm = flex
                bm = tree_block_mask_flex(cbm, tree.subtree_end, n, device)

                def flex_step():
                    out = fa(*leaves, block_mask=bm, scale=scale, enable_gqa=True)
                    torch.autograd.grad(out, leaves, go)
                variants["FlexAttention, same mask"] = flex_step
            # SDPA baselines take K/V expanded to the query heads (GQA support in the fused kernels varies)
            uq, uk, uv, ugo = (mk(args.group, h, t_unpacked, d).requires_grad_(x)
                               for h, x in ((hq, True), (hq, True), (hq, True), (hq, False)))
            dq_, dk_, dv_, dgo = (mk(1, hq, n, d).requires_grad_(x) for x in (True, True, True, False))

            def sdpa_step(a, b_, c_, go_):
                def f():
                    out = F.scaled_dot_product_attention(a, b_, c_, is_causal=True, scale=scale)
                    torch.autograd.grad(out, (a, b_, c_), go_)
                return f
            variants[f"SDPA unpacked [{args.group}, {t_unpacked}]"] = sdpa_step(uq, uk, uv, ugo)
            variants[f"SDPA dense causal [1, {n}]"] = sdpa_step(dq_, dk_, dv_, dgo)
        log(f"prompt {prompt}: N={n}, warming up {list(variants)}")
        med = time_variants(variants, args.reps, device)
        pairs_tok = visible_pairs(prompt, lens)
        flops_per_pair = 3.5 * 4 * d * hq
        rows = []
        for name, t in med.items():
            if name.startswith("tree kernel"):
                bq, bk = map(int, name.split()[-1].split("x"))
                lay = trees[(bq, bk)].layout
                work_blocks = lay.visited_pairs() * bq * bk
                work_tok = pairs_tok
            elif name.startswith("FlexAttention"):
                work_blocks, work_tok = None, pairs_tok
            elif name.startswith("SDPA unpacked"):
                work_blocks, work_tok = None, args.group * t_unpacked * (t_unpacked + 1) // 2
            else:
                work_blocks, work_tok = None, n * (n + 1) // 2
            rows.append(dict(prompt=prompt, n_packed=n, variant=name, ms=t * 1e3,
                             ran="/".join(map(str, tree_ran[name])) if name in tree_ran else None,
                             tflops_blocks=None if work_blocks is None else work_blocks * flops_per_pair / t / 1e12,
                             tflops_tokens=work_tok * flops_per_pair / t / 1e12,
                             layout_build_ms=trees[tuple(map(int, name.split()[-1].split("x")))].layout_ms
                             if name.startswith("tree kernel") else None))
        base = {r["variant"]: r for r in rows}
        tk = rows[0]
        flex_row = base.get("FlexAttention, same mask")
        dense = next((r for r in rows if r["variant"].startswith("SDPA dense")), None)
        for r in rows:
            r["speed_vs_flex"] = flex_row["ms"] / r["ms"] if flex_row else None
        if block_sweep is None:
            # like with like: both rates over visible token pairs (the block rate counts masked work too)
            tk["vs_dense_sdpa_tflops"] = tk["tflops_tokens"] / dense["tflops_tokens"] if dense else None
            missing = [why for why, bad in (("no FlexAttention row", flex_row is None),
                                            ("no dense SDPA row", dense is None),
                                            (f"the tree variant ran {tk['ran']}, not the Triton kernels",
                                             tk["ran"] != "triton/triton")) if bad]
            tk["target_met"] = None if missing else bool(tk["ms"] <= flex_row["ms"]
                                                         and tk["vs_dense_sdpa_tflops"] >= 0.5)
            tk["target_not_measured"] = "; ".join(missing) or None
        for r in rows:
            log(f"timing: {r}")
        res["block_sweep" if block_sweep else "timings"].extend(rows)
        save()
        variants.clear()  # drop the closures (and their tensors) before the next size allocates
        if device.type == "cuda":
            torch.cuda.empty_cache()


def markdown(res: dict) -> str:
    out = ["# GPU check: Triton block-sparse attention", "",
           f"device: {res['device']}; torch {res['torch']}, triton {res['triton']}; wall {res.get('wall_s', 0):.0f}s", ""]
    out += ["## Correctness (rel. L2 error vs the pure-torch reference; lse max abs)", "",
            "| case | ran fwd/bwd | out | lse | dq | dk | dv | flex out / dq / dk / dv | pass |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r in res["correctness"]:
        fl = " / ".join(f"{r[k]:.1e}" for k in ("flex_out", "flex_dq", "flex_dk", "flex_dv")) if "flex_out" in r \
            else r.get("flex_error", "-")
        out.append(f"| {r['case']} | {r['ran']} | {r['out']:.1e} | {r['lse_max_abs']:.1e} | {r['dq']:.1e} | "
                   f"{r['dk']:.1e} | {r['dv']:.1e} | {fl} | {r['pass']} |")
    if res.get("end_to_end"):
        e = res["end_to_end"]
        out += ["", f"End to end: {e['case']}: applied={e['applied']}, tree attention ran (fwd/bwd) "
                f"{e['attention_ran']}, last_stats attention={e['stats_attention']}, "
                f"tokens {e['tokens_computed']}/{e['tokens_in']}, loss {e['loss']:.4g} rel {e['loss_rel']:.1e}, "
                f"worst grad rel {e['worst_grad_rel']:.1e}, pass={e['pass']}"]
    if res.get("step"):
        out += ["", "## GRPO training step (forward, loss, backward; median s, interleaved)", "",
                "| case | eager logits_to_keep s | replay s | speedup | tokens computed / in | LM-head rows | loss rel | "
                "worst grad rel | attention ran | pass |", "|---|---|---|---|---|---|---|---|---|---|"]
        for r in res["step"]:
            out.append(f"| {r['case']} | {r['eager_s']:.4f} | {r['replay_s']:.4f} | {r['speedup']:.2f}x | "
                       f"{r['tokens_computed']}/{r['tokens_in']} | {r.get('lm_head_rows')} | {r['loss_rel']:.1e} | {r['worst_grad_rel']:.1e} | "
                       f"{r['attention_ran']} | {r['pass']} |")
    for key, title in (("timings", "Forward+backward"), ("block_sweep", "Block-size sweep (tree kernel)")):
        if not res.get(key):
            continue
        out += ["", f"## {title} (median ms, interleaved)", "",
                "| prompt | N packed | variant | ran fwd/bwd | ms | x Flex | TFLOP/s visited blocks | "
                "TFLOP/s visible tokens |", "|---|---|---|---|---|---|---|---|"]
        for r in res[key]:
            fx = f"{r['speed_vs_flex']:.2f}" if r.get("speed_vs_flex") else "-"
            tb = f"{r['tflops_blocks']:.1f}" if r.get("tflops_blocks") else "-"
            out.append(f"| {r['prompt']} | {r['n_packed']} | {r['variant']} | {r.get('ran') or '-'} | "
                       f"{r['ms']:.2f} | {fx} | {tb} | {r['tflops_tokens']:.1f} |")
        targets = [r for r in res[key] if "target_met" in r]
        if targets:
            out += [""] + [f"- prompt {r['prompt']}: tree kernel "
                           + (f"{r['speed_vs_flex']:.2f}x Flex, " if r.get("speed_vs_flex") else "(no Flex), ")
                           + (f"{r['vs_dense_sdpa_tflops']:.0%} of dense SDPA TFLOP/s (both on visible tokens)"
                              if r.get("vs_dense_sdpa_tflops") is not None else "(no dense SDPA)")
                           + ": target " + (f"met = {r['target_met']}" if r["target_met"] is not None
                                            else f"not measured ({r['target_not_measured']})")
                           for r in targets]
    if res["skipped"]:
        out += ["", "Skipped: " + "; ".join(res["skipped"])]
    if res["errors"]:
        out += ["", "Errors:"] + [f"- {e}" for e in res["errors"]]
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(os.path.dirname(__file__), "out"))
    ap.add_argument("--prompts", type=int, nargs="+", default=[4096, 8192, 16384, 32768])
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--completion", type=int, default=1024)
    ap.add_argument("--heads", type=int, nargs=2, default=[32, 8], metavar=("HQ", "HKV"))
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--deadline", type=float, default=240.0, help="seconds after which no new prompt size starts")
    ap.add_argument("--sweep-blocks", action="store_true")
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny shapes, Triton interpreter")
    ap.add_argument("--stages", nargs="+", default=["correctness", "end_to_end", "timings", "step"],
                    choices=["correctness", "end_to_end", "timings", "step"],
                    help="which stages to run (default: all); a rerun after a fix can take only the failed one")
    args = ap.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() and not args.dry_run else "cpu")
    if device.type != "cuda" and not args.dry_run:
        sys.exit("gpu_check: no CUDA device; run with --dry-run to exercise the script on CPU")
    if args.dry_run:
        args.prompts, args.group, args.completion, args.heads, args.head_dim, args.reps = [40, 70], 3, 9, [4, 2], 16, 2
    os.makedirs(args.out, exist_ok=True)
    import triton
    res = dict(device=torch.cuda.get_device_name() if device.type == "cuda" else f"CPU ({platform.processor()}), "
               "Triton interpreter", torch=torch.__version__, triton=triton.__version__, args=vars(args),
               correctness=[], end_to_end=None, step=[], timings=[], block_sweep=[], skipped=[], errors=[])

    def save():
        res["wall_s"] = time.perf_counter() - T0
        with open(os.path.join(args.out, "gpu_check.json"), "w") as f:
            json.dump(res, f, indent=1)
        with open(os.path.join(args.out, "gpu_check.md"), "w") as f:
            f.write(markdown(res))

    stages = [("correctness", lambda: correctness(args, device, res, save)),
              ("end to end", lambda: end_to_end(args, device, res, save)),
              ("step", lambda: step_timing(args, device, res, save)),
              ("timings", lambda: timings(args, device, res, save, args.prompts))]
    stages = [st for st in stages if st[0].replace(" ", "_") in args.stages]
    if args.sweep_blocks:
        sweep = [(16, 16), (16, 32)] if args.dry_run else [(64, 64), (128, 64), (64, 128), (128, 128)]
        stages.append(("block sweep", lambda: timings(args, device, res, save, [args.prompts[min(2, len(args.prompts) - 1)]],
                                                        block_sweep=sweep)))
    for name, fn in stages:
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - report and go on: later stages still tell something
            import traceback
            traceback.print_exc()
            res["errors"].append(f"{name}: {type(e).__name__}: {e}"[:500])
            save()
    save()
    print(markdown(res))
    ok = (all(r["pass"] for r in res["correctness"]) and not res["errors"]
          and ("end_to_end" not in args.stages or (res["end_to_end"] or {}).get("pass", False))
          and all(r["pass"] for r in res["step"]))
    log(f"wrote {args.out}/gpu_check.json and .md; correctness {'PASSED' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
