"""replaycompile/context_parallel.py: CP shards of the packed token axis (balanced by attention work) and tree
attention of a rank's queries over every rank's keys, on two gloo ranks."""

from __future__ import annotations

import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from safetensors.torch import load_file, save_file

from helpers import free_port, group_batch
from test_detach_prefix import tree_batch
from replaycompile.context_parallel import context_shards, cp_tree_attention, visible_keys
from replaycompile.kernels.tree_attention_reference import tree_attention_reference
from replaycompile.runtime.plan import build_plan

HQ, HKV, D = 4, 2, 8


def _plans():
    flat = build_plan(*group_batch(prompt_len=120, lens=(30, 12, 25, 40, 7, 33, 18, 21))[:2])
    ids, am, _, _ = tree_batch(prompt_len=90, stems=((20, (15, 3, 9)), (11, (30, 2))))
    return {"flat": flat, "tree": build_plan(ids, am)}


@pytest.mark.parametrize("kind", ["flat", "tree"])
def test_visible_keys_match_the_tree_mask(kind):
    plan = _plans()[kind]
    from replaycompile.kernels.tree_attention_reference import tree_visibility_mask

    vis = tree_visibility_mask(plan.subtree_end)  # [N, N] query x key
    torch.testing.assert_close(visible_keys(plan), vis.sum(-1).to(torch.int64))


@pytest.mark.parametrize("kind", ["flat", "tree"])
@pytest.mark.parametrize("cp", [2, 3, 4])
def test_shards_partition_the_tokens_and_balance_the_work(kind, cp):
    plan = _plans()[kind]
    sh = context_shards(plan, cp)
    every = torch.cat(sh.index)
    assert sorted(every.tolist()) == list(range(plan.num_packed))
    assert all(bool((ix[1:] > ix[:-1]).all()) for ix in sh.index)
    # the gathered layout: rank r's j-th token sits at r * size + j
    for r, ix in enumerate(sh.index):
        assert sh.order[ix].tolist() == [r * sh.size + j for j in range(ix.numel())]
    # equal token counts (memory), and attention work no worse balanced than a contiguous split's (the head-tail
    # pairing wins where a prompt's later tokens see more keys: the long-prompt test below)
    counts = [ix.numel() for ix in sh.index]
    assert max(counts) - min(counts) <= 2 * cp, counts
    keys = visible_keys(plan).double()
    by_count = [keys[c].sum().item() for c in torch.arange(plan.num_packed).chunk(cp)]
    assert sh.imbalance() < 1.3, sh.cost
    assert sh.imbalance() <= max(by_count) / (sum(by_count) / cp)


def test_a_long_prompt_balances_work_and_tokens():
    g = torch.Generator().manual_seed(7)
    lens = torch.randint(64, 129, (8,), generator=g).tolist()
    ids = torch.zeros(8, 16384 + 128, dtype=torch.long)
    am = torch.zeros_like(ids)
    ids[:, :16384] = torch.randint(1, 1000, (16384,), generator=g)
    for b, c in enumerate(lens):
        ids[b, 16384:16384 + c] = torch.randint(1, 1000, (c,), generator=g)
        am[b, :16384 + c] = 1
    plan = build_plan(ids, am)
    for cp in (2, 3, 4):
        sh = context_shards(plan, cp)
        counts = [ix.numel() for ix in sh.index]
        assert max(counts) - min(counts) <= 2 * cp and sh.imbalance() < 1.01, (counts, sh.cost)
        contiguous = [visible_keys(plan).double()[c].sum().item() for c in torch.arange(plan.num_packed).chunk(cp)]
        assert max(contiguous) / (sum(contiguous) / cp) > 1.3  # what the pairing avoids


def test_a_rank_may_hold_no_completion_token():
    """The case the long_prompt step below runs: one rank holds none of the loss's positions' tokens (one-token
    completions: the loss reads only the prompt's last token, which one rank holds)."""
    ids, am = _batch("long_prompt")[:2]
    plan = build_plan(ids, am)
    sh = context_shards(plan, 2)
    last_prompt = int(plan.scatter_index[0, 2 + 199])  # left_pad=2, then the 200-token prompt
    assert sum(last_prompt in ix.tolist() for ix in sh.index) == 1


def test_completion_tokens_are_spread_over_the_ranks():
    """The tokens one row holds (where the loss reads, and the LM head's logits live) are split evenly, not all
    on the rank with the last chunk, while token counts stay equal and the work balanced."""
    g = torch.Generator().manual_seed(7)
    lens = torch.randint(64, 129, (8,), generator=g).tolist()
    ids = torch.zeros(8, 4096 + 128, dtype=torch.long)
    am = torch.zeros_like(ids)
    ids[:, :4096] = torch.randint(1, 1000, (4096,), generator=g)
    for b, c in enumerate(lens):
        ids[b, 4096:4096 + c] = torch.randint(1, 1000, (c,), generator=g)
        am[b, :4096 + c] = 1
    plan = build_plan(ids, am)
    single = torch.arange(plan.num_packed) >= 4096
    for cp in (2, 4):
        sh = context_shards(plan, cp)
        per_rank = [int(single[ix].sum()) for ix in sh.index]
        counts = [ix.numel() for ix in sh.index]
        assert max(per_rank) - min(per_rank) <= 1, per_rank
        assert max(counts) - min(counts) <= 2 * cp and sh.imbalance() < 1.05, (counts, sh.cost)


def _qkv(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, h, n, D, generator=g, dtype=torch.float64) for h in (HQ, HKV, HKV)] + \
        [torch.randn(1, HQ, n, D, generator=g, dtype=torch.float64)]


def _worker(rank, world, port, kind, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        torch.set_num_threads(1)
        plan = _plans()[kind]
        sh = context_shards(plan, world)
        ix = sh.index[rank]
        q, k, v, w = _qkv(plan.num_packed)
        leaves = [x[:, :, ix].clone().requires_grad_() for x in (q, k, v)]
        saved = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(tuple(t.shape)) or t, lambda t: t):
            o, lse = cp_tree_attention(*leaves, plan, sh, rank, dist.group.WORLD, scale=D ** -0.5)
        (o * w[:, :, ix]).sum().backward()  # this rank's queries' share of the loss
        # the backward gathers every rank's keys again: nothing saved spans more than this rank's tokens
        longest = max(s[2] for s in saved if len(s) == 4)
        if kind == "flat":  # opcheck on both ranks at once (its runs gather from each other)
            pad = torch.empty(sh.size - ix.numel(), dtype=torch.int64)
            seg = plan.query_segments(ix)
            args = (*[x.detach() for x in leaves], pad, sh.order, *seg, D ** -0.5, dist.group.WORLD.group_name)
            torch.library.opcheck(torch.ops.replaycompile.cp_tree_attention.default, args)
            o2, lse2 = torch.ops.replaycompile.cp_tree_attention(*args)
            grad = w[:, :, ix].contiguous()
            torch.library.opcheck(torch.ops.replaycompile.cp_tree_attention_backward.default,
                                  (grad, *args[:3], o2, lse2, *args[3:]))
        save_file({"out": o.detach().contiguous(), "lse": lse.detach().contiguous(), "index": ix,
                   "longest_saved": torch.tensor(longest),
                   **{f"d{n}": x.grad.contiguous() for n, x in zip("qkv", leaves)}}, f"{out}.{rank}")
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("kind", ["flat", "tree"])
def test_two_ranks_equal_one_process(kind, tmp_path):
    """Each rank's output, log-sum-exp and its tokens' dq, dk, dv equal tree attention over the whole batch on
    one process (the keys' gradients from the other rank's queries arrive through the backward's reduce-scatter);
    the op keeps only the rank's own tokens for its backward; opcheck of the op and its backward."""
    world = 2
    out = str(tmp_path / "cp")
    mp.spawn(_worker, args=(world, free_port(), kind, out), nprocs=world, join=True)
    plan = _plans()[kind]
    q, k, v, w = _qkv(plan.num_packed)
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    o, lse = tree_attention_reference(*leaves, plan.subtree_end, D ** -0.5)
    (o * w).sum().backward()
    covered = []
    for r in range(world):
        got = load_file(f"{out}.{r}")
        ix = got["index"]
        covered += ix.tolist()
        assert int(got["longest_saved"]) == ix.numel() < plan.num_packed
        torch.testing.assert_close(got["out"], o.detach()[:, :, ix])
        torch.testing.assert_close(got["lse"], lse.detach()[:, :, ix].to(got["lse"].dtype))
        for n, x in zip("qkv", leaves):
            # float64 inputs; the op's log-sum-exp is float32, which its backward reads: 1e-6, not 1e-7
            torch.testing.assert_close(got[f"d{n}"], x.grad[:, :, ix], rtol=1e-6, atol=1e-6,
                                       msg=lambda m: f"rank {r} d{n}: {m}")
    assert sorted(covered) == list(range(plan.num_packed))


# ------------------------------------------------------------------ the packed step under backend="replay"

def _batch(kind):
    kind = kind.removeprefix("detach_")
    if kind in ("window", "checkpointed"):
        return tree_batch()
    if kind == "long_prompt":  # one-token completions: the loss reads only the prompt's last token, on one rank
        return group_batch(prompt_len=200, lens=(1, 1, 1, 1), vocab=128, left_pad=2)
    if kind == "flat":
        return group_batch(prompt_len=40, lens=(9, 4, 12, 7), vocab=128, left_pad=2)
    return tree_batch(prompt_len=30, stems=((6, (5, 3)), (4, (7, 2, 4))))


def _step_worker(rank, world, port, kind, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        torch.set_num_threads(1)
        import replaycompile
        from helpers import AOT, step_loss
        from replaycompile.testing.models import tiny_model

        def build():
            torch.manual_seed(0)
            if kind.endswith("window"):  # Mistral with a 4-token window: crosses every branch point
                from test_sliding_window import hf_model
                return hf_model("mistral", "sdpa")
            m = tiny_model("qwen3")
            if kind == "checkpointed":  # HF activation checkpointing: the packed graph keeps its recompute tags
                m.train()
                m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            return m

        # transformers >= 5.25 with HF kernels: the README's setting for checkpointed layers under Dynamo
        torch._dynamo.config.skip_fwd_side_effects_in_bwd_under_checkpoint = True

        model = build()
        ids, am, adv, p = _batch(kind)
        mode = {"mode": "detach_prefix"} if kind.startswith("detach") else {}
        # detach_tree: the shared stream in 3 chunks per stretch (against one process's unchunked step)
        chunks = {"shared_chunks": 3} if kind == "detach_tree" else {}
        step = torch.compile(step_loss, backend="replay",
                             options={**AOT, **mode, **chunks, "context_parallel": dist.group.WORLD})
        loss = step(model, ids, am, adv, p)
        loss.backward()
        st = replaycompile.last_stats()
        grads = {}
        for name, q in model.named_parameters():
            g = q.grad.detach().clone()
            if name == "model.layers.0.mlp.down_proj.weight":
                grads["own." + name] = g.clone()  # this rank's tokens' share (times the group size), before the mean
            dist.all_reduce(g)  # what DDP / FSDP2 do over the group: the mean of the ranks' gradients
            grads[name] = (g / world).contiguous()
        if rank == 0:
            ref = build()
            # detach_prefix's own semantics (the prompt's gradient stopped) on one process; else eager
            ref_step = torch.compile(lambda *x: step_loss(*x), backend="replay", options={**AOT, **mode}) if mode \
                else step_loss
            ref_loss = ref_step(ref, ids, am, adv, p)
            ref_loss.backward()
            grads.update({f"ref.{n}": q.grad.detach().clone().contiguous() for n, q in ref.named_parameters()})
            grads["loss"], grads["ref.loss"] = loss.detach().reshape(1), ref_loss.detach().reshape(1)
        save_file(grads if rank == 0 else {"loss": loss.detach().reshape(1)}, f"{out}.{rank}",
                  metadata={"applied": str(st["applied"]), "cp": str(st["context_parallel"]),
                            "local_logprobs": str(torch._dynamo.utils.counters["replay"][
                                "context_parallel_local_logprobs"]),
                            "computed": str(st["tokens_computed"]), "selected": str(st["queries_selected"]),
                            "kv_unrepeated": str(torch._dynamo.utils.counters["replay"][
                                "attention_kv_unrepeated"]),
                            "chunked": str(torch._dynamo.utils.counters["replay"]["shared_stream_stretches_chunked"])})
    finally:
        dist.destroy_process_group()


@pytest.mark.slow  # two processes that each compile the step: over 15 s on 2 cores
@pytest.mark.parametrize("kind", ["flat", "tree", "window", "checkpointed", "long_prompt", "detach_flat",
                                  "detach_tree", "detach_window"])
def test_packed_step_on_two_ranks_equals_one_process(kind, tmp_path):
    """torch.compile(backend="replay", options={"context_parallel": group}) on two gloo ranks: each rank computes
    about half the packed tokens, both get the single-process loss, and the gradients averaged over the group
    (as DDP and FSDP2 do) equal one process's eager gradients."""
    from safetensors import safe_open

    world = 2
    out = str(tmp_path / "step")
    mp.spawn(_step_worker, args=(world, free_port(), kind, out), nprocs=world, join=True)
    metas = []
    for r in range(world):
        with safe_open(f"{out}.{r}", "pt") as f:
            metas.append(f.metadata())
    detach = kind.startswith("detach")
    for m in metas:
        assert m["applied"] == "True", m
        if not detach:
            assert int(m["local_logprobs"]) >= 1, m  # the logits stayed on their rank (no [M, V] gather)
        assert m["cp"].startswith(f"rank "), m
        assert ("shared tokens (the branch tokens run on every rank)" in m["cp"]) == detach, m
        assert (int(m["chunked"]) > 0) == (kind == "detach_tree"), m
        if not detach:  # GQA (4 query heads, 2 kv heads): the CP op gathers the keys before repeat_kv
            assert int(m["kv_unrepeated"]) >= 1, m
    shares = [int(m["cp"].split(": ")[1].split(" of ")[0]) for m in metas]
    total = int(metas[0]["cp"].split(": ")[1].split(" of ")[1].split()[0])
    assert sum(shares) == total and max(shares) < 0.75 * total, (shares, total)
    assert detach or total == int(metas[0]["computed"])
    if kind in ("flat", "tree", "long_prompt"):  # the last layer ran at the rank's loss tokens only (pruned)
        assert all(int(m["selected"]) >= 1 for m in metas), metas
    got = load_file(f"{out}.0")
    other = load_file(f"{out}.1")
    torch.testing.assert_close(got["loss"], got["ref.loss"], rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(other["loss"], got["ref.loss"], rtol=1e-5, atol=1e-7)
    # each rank really computed only its share: its own gradient is not the batch's (under detach_prefix the
    # shared tokens have no gradient and every rank runs the branch tokens: its own is the batch's)
    own = "model.layers.0.mlp.down_proj.weight"
    assert torch.allclose(got[f"own.{own}"], got[f"ref.{own}"], rtol=1e-3, atol=1e-6) == detach
    names = [k for k in got if not k.startswith(("ref.", "own.")) and k != "loss"]
    assert names
    for name in names:
        torch.testing.assert_close(got[name], got[f"ref.{name}"], rtol=1e-5, atol=1e-6, msg=lambda m: f"{name}: {m}")


@pytest.mark.slow  # three processes that each compile the step with inductor: a minute or more on 2 cores
def test_cp_step_benchmark_quick(tmp_path):
    """bench/cp_step.py --quick runs end to end: one process and 2 CP ranks, the ranks exact against it."""
    import json
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[1]
    res = subprocess.run([sys.executable, str(root / "bench" / "cp_step.py"), "--quick", "--inner", "aot_eager",
                          "--out", str(tmp_path / "cp_step")], capture_output=True, text=True, timeout=900,
                         cwd=root, env=dict(os.environ, PYTHONSAFEPATH="1"))
    assert res.returncode == 0, res.stderr[-3000:]
    assert "CP on 2 ranks: per-rank peak" in res.stdout, res.stdout
    rep = json.loads((tmp_path / "cp_step.json").read_text())[0]
    assert rep["loss_rel"] < 1e-5 and rep["grad_rel_worst"] < 1e-4, rep
    assert all(r["applied"] and r["context_parallel"].startswith("rank ") for r in rep["cp"]), rep["cp"]
