"""One Sparrow decode step against one dense step (the rollout's reference: every page), op by op, at one context.

    python bench/sparrow_step_profile.py --context 16384 --batch 8 --pages 64

The recall policy (8 layers, 2 dense), one prompt prefilled and repeated to the batch (GRPO's group), both steps
compiled with the replay backend as ``rollout.generate(reference="dense")`` runs them; after warm-up, the
median of ``--steps`` steps each and a torch.profiler table of the ops (CPU self time) for each side.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile

from replaycompile import rollout, sparrow
from replaycompile.retrieval import recall_sequences, retrieval_model


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--context", type=int, default=16384)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--pages", type=int, default=64)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--rows", type=int, default=12, help="profiler table rows per side")
    args = ap.parse_args(argv)
    model = retrieval_model().eval()
    seqs, _ = recall_sequences(1, args.context, window=16, seed=5)
    prompt = seqs[:, :args.context]
    sched = sparrow.SparrowSchedule(pages=(args.pages,), bucket_tokens=1 << 20)
    t0 = time.perf_counter()
    base = rollout.DecodeSession(model, prompt, torch.ones_like(prompt), args.context + 2 * args.steps + 8, sched)
    print(f"prefill {time.perf_counter() - t0:.1f} s", flush=True)
    sides = {}
    for name, s in (("sparrow", sched), ("dense", rollout._dense_reference())):
        sess = base.repeat_interleave(args.batch)
        sess.set_schedule(s)
        tok = seqs[:, args.context].repeat(args.batch)
        for _ in range(2):  # compile, then warm
            sess.step(tok)
        times = []
        for _ in range(args.steps):
            t = time.perf_counter()
            sess.step(tok)
            times.append(time.perf_counter() - t)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            sess.step(tok)
        sides[name] = (statistics.median(times), prof)
    for name, (med, prof) in sides.items():
        print(f"\n{name}: median step {med * 1e3:.1f} ms (batch {args.batch}, {args.context} tokens)")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows))
    print(f"speedup {sides['dense'][0] / sides['sparrow'][0]:.2f}x")


if __name__ == "__main__":
    main()
