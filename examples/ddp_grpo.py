"""The GRPO loop of ``grpo_loop.py`` on several processes, under DDP or FSDP2, with the replay backend.

    torchrun --standalone --nproc-per-node 2 examples/ddp_grpo.py --wrap ddp     # gloo on CPU, NCCL on GPUs
    torchrun --standalone --nproc-per-node 2 examples/ddp_grpo.py --wrap fsdp2

Each rank samples its own prompts' G completions (keep a prompt's group on one rank: sharing happens within
a rank's batch). Under DDP, Dynamo's DDP optimizer splits the compiled graph at gradient-bucket boundaries so
each bucket's all-reduce overlaps the rest of the backward; under FSDP2 every ``fully_shard`` module is a graph
of its own. replay packs each of those graphs from the activations the one before it passes on, so the split
(and the communication overlap it buys) stays as it is; every rank prints how many of its step's graphs ran
packed.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grpo_loop import train  # noqa: E402

from replaycompile.testing.models import tiny_model  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wrap", choices=["ddp", "fsdp2"], default="ddp")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--bucket-mb", type=float, default=1.0, help="DDP gradient bucket size (at least 1 MB)")
    ap.add_argument("--inner", default="aot_eager", choices=["inductor", "aot_eager"])
    ap.add_argument("--whole-graph", action="store_true",
                    help="turn Dynamo's DDP optimizer off (one graph, packed whole; no all-reduce overlap)")
    args = ap.parse_args(argv)
    if args.whole_graph:
        torch._dynamo.config.optimize_ddp = False
    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank()
    if cuda:
        torch.cuda.set_device(rank % torch.cuda.device_count())
    # every rank starts from the same weights; hidden 256 so that 1 MB buckets split the model
    model = tiny_model("qwen3", hidden_size=256, intermediate_size=512, head_dim=64)
    if args.wrap == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        wrap = DDP(model, bucket_cap_mb=args.bucket_mb)
    else:
        from torch.distributed.fsdp import fully_shard
        for layer in model.model.layers:
            fully_shard(layer)
        wrap = fully_shard(model)
    log = (lambda s: print(f"[rank {rank}] {s}", flush=True))
    # FSDP2 rollouts run through the sharded module too (it gathers the weights); DDP's plain module is fine
    history = train(model if args.wrap == "ddp" else wrap, args.steps, prompts=1, group=4, prompt_len=48, new_tokens=12,
          inner=args.inner, seed=rank, log=log, wrap=wrap)
    steady = sorted(h["train_s"] for h in history[1:])
    if steady:
        log(f"median train step after the first: {steady[len(steady) // 2]:.3f} s over {len(steady)} steps")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
