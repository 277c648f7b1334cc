"""TRL GRPO on 2 processes (gloo, CPU): where a prompt's G completions land, and the tokens each rank computes per
training forward, with and without the integration's group placement.

    python bench/trl_ranks.py            # about 2 minutes on 2 cores

Two processes are spawned (torch.multiprocessing, gloo); each builds the tiny GRPOTrainer of ``examples/trl_grpo.py``
(hidden 64, 2 layers, vocab 256, prompts of 48-64 words, 8-token completions) and trains 2 optimizer steps, for:

- A: ``per_device_train_batch_size=4, num_generations=4, gradient_accumulation_steps=2``: each rank's generation
  batch is 8 rows cut into 2 micro-batches of 4;
- B: ``per_device_train_batch_size=4, num_generations=8``: one prompt's 8 completions per generation batch, 4 on
  each rank (no equal-size placement can keep the group on one rank).

Printed per config and rank: the prompts of each generation batch (TRL's sampler and accelerate's sharding), the
distinct prompts per micro-batch, tokens computed / in per training forward, with and without group placement, and
whether the parameters after the run equal TRL's without replay (SGD, relative L2 over all parameters).
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import sys
import tempfile

import torch
import torch.multiprocessing as mp

ROOT = pathlib.Path(__file__).resolve().parents[1]

CONFIGS = {
    "A": dict(per_device_batch=4, num_generations=4, grad_accum=2),
    "B": dict(per_device_batch=4, num_generations=8, grad_accum=1),
}
COMMON = dict(max_steps=2, prompts=16, prompt_len=(48, 64), max_completion_length=8, optim="sgd", learning_rate=0.05)


def _worker(rank: int, world: int, port: int, out: str, inner: str):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world))
    torch.set_num_threads(1)
    sys.path.insert(0, str(ROOT / "examples"))
    import trl_grpo

    from replaycompile.integrations.trl import compile_trainer

    results = {}
    for cname, cfg in CONFIGS.items():
        for variant in ("trl", "replay, no placement", "replay, group placement"):
            if variant == "trl" and cname != "A":
                continue
            tr = trl_grpo.build_trainer(**COMMON, **cfg, ddp_backend="gloo")
            gen_prompts = []
            orig = tr._generate_and_score_completions

            def gen(batch, orig=orig, sink=gen_prompts):
                out = orig(batch)
                ids, m = out["prompt_ids"], out["prompt_mask"].bool()
                sink.append([hash(tuple(ids[i][m[i]].tolist())) % 1000 for i in range(ids.shape[0])])
                return out

            tr._generate_and_score_completions = gen
            init = torch.cat([p.detach().reshape(-1) for p in tr.model.parameters()]).double()
            if variant != "trl":
                compile_trainer(tr, group_placement=variant == "replay, group placement", inner=inner)
            tr.train()
            params = torch.cat([p.detach().reshape(-1) for p in tr.model.parameters()]).double()
            results[f"{cname}|{variant}"] = dict(
                generation_batches=gen_prompts,
                forwards=[dict(s) for s in getattr(tr, "replay_stats", [])],
                params=params.tolist() if rank == 0 else None,
                init=init.tolist() if rank == 0 and variant == "trl" else None,
                world=tr.accelerator.num_processes)
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(results, f)
    torch.distributed.destroy_process_group()


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inner", default="aot_eager")
    a = ap.parse_args(argv)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tempfile.mkdtemp(prefix="trl_ranks_")
    mp.spawn(_worker, args=(2, port, out, a.inner), nprocs=2, join=True)
    res = [json.load(open(os.path.join(out, f"rank{r}.json"))) for r in range(2)]
    summary = {}
    for cname, cfg in CONFIGS.items():
        print(f"config {cname}: {cfg}, 2 processes (world size {res[0][f'{cname}|replay, no placement']['world']})")
        for r in range(2):
            print(f"  rank {r}: prompts of each generation batch: "
                  f"{res[r][f'{cname}|replay, no placement']['generation_batches']}")
        for variant in ("replay, no placement", "replay, group placement"):
            per_rank = []
            for r in range(2):
                fw = res[r][f"{cname}|{variant}"]["forwards"]
                comp, tin = sum(f["tokens_computed"] for f in fw), sum(f["tokens_in"] for f in fw)
                per_rank.append((comp, tin))
                print(f"  {variant:24s} rank {r}: distinct prompts per micro-batch {[f['prompts'] for f in fw]}, "
                      f"tokens computed {[f['tokens_computed'] for f in fw]} of {[f['tokens_in'] for f in fw]} in "
                      f"(total {comp} of {tin}, applied {all(f['applied'] for f in fw)})")
            summary[f"{cname}|{variant}"] = per_rank
        if f"{cname}|trl" in res[0]:
            ref = torch.tensor(res[0][f"{cname}|trl"]["params"], dtype=torch.float64)
            for variant in ("replay, no placement", "replay, group placement"):
                got = torch.tensor(res[0][f"{cname}|{variant}"]["params"], dtype=torch.float64)
                rel = ((got - ref).norm() / ref.norm()).item()
                init = torch.tensor(res[0][f"{cname}|trl"]["init"], dtype=torch.float64)
                upd = ((got - ref).norm() / (ref - init).norm()).item()
                print(f"  parameters after the run, {variant} vs TRL without replay: relative L2 {rel:.1e} "
                      f"(of the parameters), {upd:.1e} (of TRL's update)")
                summary[f"{cname}|{variant}|param_rel"] = rel
    return summary


if __name__ == "__main__":
    main()
