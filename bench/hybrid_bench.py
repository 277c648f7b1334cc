"""Packed Qwen3-Next against eager, on a GRPO-shaped step (forward, loss, backward) with G rows sharing a prompt:
the Gated DeltaNet layers computed per row ("replay", option recurrent="per_row") or on the prefix tree
("tree_scan", the default), attention and MLPs packed in both. One process, the three interleaved, medians; loss and
every gradient compared with eager's; the machine load printed beside the times.

    python bench/hybrid_bench.py             # hidden 256, 4 layers (3 Gated DeltaNet : 1 attention, as released)
    python bench/hybrid_bench.py --quick     # tiny, for a smoke run

Both run with transformers' torch fallbacks for the DeltaNet (no flash-linear-attention / causal-conv1d on
CPU). replay uses inner="eager" because torch 2.13's aot_eager (and so inductor) fails on Qwen3-Next's backward
(tests/test_hybrid.py); so the packed graph runs op by op, like eager.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

import replaycompile
from replaycompile.testing.models import tiny_model

from common import group_batch, run, step_loss  # the test suite's batch and GRPO step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--G", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=256)
    ap.add_argument("--cmin", type=int, default=32)
    ap.add_argument("--cmax", type=int, default=64)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    if args.quick:
        model = tiny_model("qwen3_next", num_hidden_layers=4, mlp_only_layers=[0, 1, 2, 3],
                           layer_types=["linear_attention"] * 3 + ["full_attention"])
        args.prompt, args.cmin, args.cmax, args.reps = 32, 4, 8, 3
    else:
        model = tiny_model("qwen3_next", hidden_size=256, intermediate_size=768, num_hidden_layers=4,
                           num_attention_heads=4, num_key_value_heads=2, head_dim=64, vocab_size=32000,
                           linear_key_head_dim=64, linear_value_head_dim=64, linear_num_key_heads=2,
                           linear_num_value_heads=4, mlp_only_layers=[0, 1, 2, 3],
                           layer_types=["linear_attention"] * 3 + ["full_attention"])
    g = torch.Generator().manual_seed(0)
    lens = tuple(int(x) for x in torch.randint(args.cmin, args.cmax + 1, (args.G,), generator=g))
    batch = group_batch(prompt_len=args.prompt, lens=lens, vocab=model.config.vocab_size, left_pad=0)
    compiled = torch.compile(step_loss, backend="replay", options={"inner": "eager", "recurrent": "per_row"})

    def step_tree(model, ids, am, adv, p):  # its own frame, so Dynamo keeps its compile apart from the per-row one
        return step_loss(model, ids, am, adv, p)

    tree = torch.compile(step_tree, backend="replay", options={"inner": "eager", "recurrent": "tree_scan"})

    t0 = time.perf_counter()
    got = run(compiled, model, *batch)
    first = time.perf_counter() - t0
    st = replaycompile.last_stats()
    ref = run(step_loss, model, *batch)
    assert st["applied"], st
    t0 = time.perf_counter()
    got_tree = run(tree, model, *batch)
    first_tree = time.perf_counter() - t0
    st_tree = replaycompile.last_stats()
    assert st_tree["applied"] and st_tree["recurrent_tree_scan"], st_tree

    def errors(got):
        errs = {k: ((got[1][k] - ref[1][k]).norm() / ref[1][k].norm().clamp_min(1e-12)).item() for k in ref[1]}
        rel = max(v for k, v in errs.items() if not k.endswith((".A_log", ".dt_bias")))
        # the DeltaNet's decay parameters: against the scale of the per-token gradients they sum (README, "Hybrid")
        decay = max(((got[1][k] - ref[1][k]).norm() / ref[1][k.rsplit(".", 1)[0] + ".in_proj_ba.weight"].norm())
                    .item() for k in ref[1] if k.endswith((".A_log", ".dt_bias")))
        return abs((got[0] - ref[0]) / ref[0]).item(), rel, decay

    fns = {"eager": step_loss, "replay": compiled, "tree_scan": tree}
    times = {name: [] for name in fns}
    for i in range(args.reps):
        names = list(fns) if i % 2 == 0 else list(reversed(fns))
        for name in names:
            fn = fns[name]
            t0 = time.perf_counter()
            run(fn, model, *batch)
            times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    layers = model.config.layer_types
    per_row = st["recurrent_per_row"]
    print(f"load average {os.getloadavg()}; {torch.get_num_threads()} threads")
    print(f"G={args.G} prompt={args.prompt} completions {min(lens)}-{max(lens)}; rows x T = "
          f"{batch[0].numel()}, real tokens {st['tokens_in']}, packed tokens {st['tokens_computed']}")
    print(f"layers {layers}: token mixers computed per row {len(per_row)}/{len(layers)} ({', '.join(per_row)}); "
          f"shared: {len(layers) - len(per_row)}/{len(layers)} attention mixers and {len(layers)}/{len(layers)} "
          f"MLPs (sublayers shared {2 * len(layers) - len(per_row)}/{2 * len(layers)})")
    for name, f, g in (("replay (per row)", first, got), ("tree_scan", first_tree, got_tree)):
        loss_err, rel, decay = errors(g)
        print(f"{name}: first call (compile) {f:.1f} s; loss rel err {loss_err:.1e}, worst grad rel err {rel:.1e} "
              f"(DeltaNet decay params A_log/dt_bias: {decay:.1e} of their layer's in_proj_ba gradient norm)")
    print(f"tree_scan: layers on the prefix tree {', '.join(st_tree['recurrent_tree_scan'])}")
    for k, v in times.items():
        print(f"{k:9s} median {med[k]:.3f} s  ({', '.join(f'{x:.3f}' for x in v)})")
    print(f"replay (per row) vs eager: {med['eager'] / med['replay']:.2f}x; tree_scan vs eager: "
          f"{med['eager'] / med['tree_scan']:.2f}x; tree_scan vs per row: {med['replay'] / med['tree_scan']:.2f}x")


if __name__ == "__main__":
    main()
