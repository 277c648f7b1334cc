"""Two processes on gloo: DDP with several gradient buckets (Dynamo's DDP optimizer splits the graph there) and
FSDP2 (``fully_shard`` per decoder layer and at the root: a graph per layer) run every graph packed, over two
steps of different shapes, and the averaged gradients equal single-process eager gradients of the same global
batches."""

from __future__ import annotations

import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM, Qwen3Config

from helpers import free_port, group_batch, step_loss

WORLD = 2


def _model():
    torch.manual_seed(0)
    # large enough that 1 MB buckets split it (DDP's first bucket may not be smaller than 1 MB): one 2.4 MB layer
    # makes three buckets; under FSDP2 the layer is a graph and the root's norm, LM head and loss three more
    cfg = Qwen3Config(vocab_size=128, hidden_size=256, intermediate_size=512, num_hidden_layers=1,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=64, max_position_embeddings=256,
                      attn_implementation="sdpa")
    return AutoModelForCausalLM.from_config(cfg)


# two steps of different shapes (RL batches change length every step): the second runs the dynamic graphs
SHAPES = [(12, (5, 3, 6, 4)), (17, (7, 2, 5, 4, 3))]


def _batch(rank: int, step: int = 0):
    prompt_len, lens = SHAPES[step]
    return group_batch(prompt_len=prompt_len, lens=lens, vocab=128, left_pad=2, seed=rank)


def _worker(rank: int, port: int, wrap: str, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    try:
        torch.set_num_threads(1)
        import replaycompile

        model = _model()
        if wrap == "ddp":
            from torch.nn.parallel import DistributedDataParallel as DDP
            run = DDP(model, bucket_cap_mb=1)
        else:
            from torch.distributed.fsdp import fully_shard
            for layer in model.model.layers:
                fully_shard(layer)
            fully_shard(model)
            run = model
        step = torch.compile(step_loss, backend="replay", options={"inner": "aot_eager", "min_shared_tokens": 1})
        stats = []
        for k in range(len(SHAPES)):  # gradients accumulate over the steps
            loss = step(run, *_batch(rank, k))
            stats.append(replaycompile.last_stats())
            loss.backward()
        st = {"graphs": [g for s in stats for g in s["graphs"]], "applied": all(s["applied"] for s in stats),
              "tokens_computed": sum(s["tokens_computed"] for s in stats),
              "tokens_in": sum(s["tokens_in"] for s in stats),
              "fallback_reason": [s["fallback_reason"] for s in stats]}
        st["graphs_packed"] = sum(g["applied"] for g in st["graphs"])
        grads = {}
        for name, q in model.named_parameters():
            g = q.grad
            g = g.full_tensor() if hasattr(g, "full_tensor") else g
            grads[name] = g.detach().clone().contiguous()
        if rank == 0:
            # the reference, in this fresh process: one process, eager, the mean of the two ranks' losses (DDP
            # and FSDP average gradients)
            ref = _model()
            for k in range(len(SHAPES)):
                (sum(step_loss(ref, *_batch(r, k)) for r in range(WORLD)) / WORLD).backward()
            grads.update({f"ref.{n}": q.grad.detach().clone().contiguous() for n, q in ref.named_parameters()})
            save_file(grads, out, metadata={
                "graphs": str(len(st["graphs"])), "packed": str(st["graphs_packed"]),
                "applied": str(st["applied"]), "computed": str(st["tokens_computed"]),
                "tokens_in": str(st["tokens_in"]), "reason": str(st["fallback_reason"])})
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("wrap", ["ddp", "fsdp2"])
@pytest.mark.slow  # over 15 s on 2 cores
def test_two_ranks_pack_every_graph_and_match_eager(wrap, tmp_path):
    out = str(tmp_path / "grads.safetensors")
    mp.spawn(_worker, args=(free_port(), wrap, out), nprocs=WORLD, join=True)
    from safetensors import safe_open
    with safe_open(out, "pt") as f:
        meta = f.metadata()
    got = load_file(out)
    # every graph of the step packed, and the step really was split into several graphs
    assert meta["applied"] == "True", meta
    assert int(meta["graphs"]) > 1 and meta["packed"] == meta["graphs"], meta
    assert int(meta["computed"]) < int(meta["tokens_in"]), meta
    names = [k for k in got if not k.startswith("ref.")]
    assert names and len(names) * 2 == len(got)
    for name in names:
        torch.testing.assert_close(got[name], got[f"ref.{name}"], rtol=1e-5, atol=1e-6,
                                   msg=lambda m: f"{name}: {m}")
