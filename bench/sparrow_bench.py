"""Sparrow on this CPU: decode throughput dense vs scheduled-sparse, and the acceptance tail per position bin.

    python bench/sparrow_bench.py            # 4K / 16K / 32K contexts, batch 1 and 8, calibration up to 32K
    python bench/sparrow_bench.py --quick    # 2K / 4K, a smoke run

Model: the hand-set recall model (``replaycompile.sparrow.retrieval``: Llama-shaped, 8 layers, 2 query / 1 KV heads,
head_dim 128, fp32); Sparrow keeps layers 0-1 dense and decodes layers 2-7 sparsely.

1. **Calibration**: recall sequences as long as the largest context, with ``--windows-per-bin`` query windows
   spread through every 2048-token bin; each candidate page count is measured as a fixed budget (teacher-forced
   alpha against dense decoding), and ``calibrate`` picks the cheapest monotone table whose lower confidence bound
   on the p5 alpha (order statistic, ``--confidence``) is >= 0.86 in every bin.
2. **Acceptance table**: per bin, mean, p5 and its lower bound for the fixed candidate budgets (on the
   calibration prompts, as calibration measured them), then the calibrated schedule (``Calibration.held_out``)
   and a fixed budget of the same average cost (which should keep a fine mean and break the p5) on **held-out**
   prompts (another seed). The verdict "calibrated p5 >= target in every bin" is the held-out measurement, and a
   bin where calibration found no candidate meeting the target (it runs dense there) counts as a failure. With
   ``--schedule`` nothing is measured and the verdict says so.
3. **Throughput**: per context and batch, decode steps interleaved round-robin, medians, tokens/s for
   - dense: a static (preallocated) cache, every layer's attention over the written slots with the GQA group folded
     into the query dimension (``SparrowSchedule.dense(dense_layers=())``, the same compiled step as Sparrow's);
   - transformers' own static-cache decode (``repeat_kv`` + SDPA over the whole buffer), for reference;
   - Sparrow with the calibrated schedule, and with fixed budgets.
   Batch 8 repeats one prefilled prompt's cache (prefill is not what is measured).

Writes ``bench/out/sparrow.json``, ``sparrow.md`` and ``sparrow.png`` (if matplotlib is installed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch

from replaycompile.sparrow.retrieval import recall_sequences, retrieval_model
from replaycompile.sparrow.rollout import DecodeSession
from replaycompile.sparrow import SparrowSchedule, acceptance_summary, calibrate, calibration_windows, measure_windows

T0 = time.perf_counter()


def log(msg):
    print(f"[{time.perf_counter() - T0:7.1f}s] {msg}", flush=True)


def repeat_rows(sess: DecodeSession, batch: int) -> DecodeSession:
    """A batch-``batch`` session whose rows all hold row 0's cache (a benchmark shortcut around B prefills)."""
    other = sess.clone()
    for layer in other.cache.layers:
        if getattr(layer, "is_initialized", False):
            layer.keys = layer.keys[:1].repeat(batch, 1, 1, 1)
            layer.values = layer.values[:1].repeat(batch, 1, 1, 1)
            layer.batch_size = batch
    other.am = sess.am[:1].repeat(batch, 1)
    other.next_pos = sess.next_pos[:1].repeat(batch, 1)
    other.logits = sess.logits[:1].repeat(batch, 1)
    return other


def throughput(model, ctx: int, batches, variants: dict, steps: int, reps: int) -> list[dict]:
    seqs, _ = recall_sequences(1, ctx, window=64, seed=ctx)
    t = time.perf_counter()
    base = DecodeSession(model, seqs[:, :ctx], torch.ones(1, ctx, dtype=torch.long), ctx + steps * (reps + 2) + 16)
    log(f"context {ctx}: prefill {time.perf_counter() - t:.1f}s")
    rows = []
    for b in batches:
        sessions = {}
        for name, sched in variants.items():
            s = repeat_rows(base, b) if b > 1 else base.clone()
            s.set_schedule(sched)
            sessions[name] = s
        times = {name: [] for name in variants}
        for r in range(reps + 1):  # round 0 warms up (compiles) every variant
            for name, s in sessions.items():
                tok = s.logits.argmax(-1)
                s.step(tok)  # not timed: each session keeps its own page state (kernels/sparse_decode.SparseDecodeState)
                t = time.perf_counter()
                for _ in range(steps):
                    tok = s.step(tok).argmax(-1)
                if r:
                    times[name].append((time.perf_counter() - t) / steps)
        dense_ms = statistics.median(times["dense"]) * 1e3
        for name in variants:
            ms = statistics.median(times[name]) * 1e3
            rows.append(dict(context=ctx, batch=b, variant=name, ms_per_step=ms, tokens_per_s=b / ms * 1e3,
                             speedup_vs_dense=dense_ms / ms))
            log(f"context {ctx} batch {b}: {name}: {ms:.1f} ms/step, {b / ms * 1e3:.1f} tok/s, "
                f"{dense_ms / ms:.2f}x dense")
        del sessions
    return rows


CALIBRATED = "calibrated"
HELD_OUT_SEED = 2  # calibration uses seed 1
MIN_START = 128  # recall_sequences plants its pairs before the first window


def check_acceptance_source(prev: dict, sched: SparrowSchedule, args) -> None:
    """Refuse an earlier run's acceptance table unless it measured this very schedule with these bins."""
    if prev.get("schedule") != sched.to_dict():
        got = (prev.get("schedule") or {}).get("pages")
        raise SystemExit(f"--acceptance-from {args.acceptance_from}: that run measured another schedule (pages "
                         f"{got}) than {args.schedule} (pages {list(sched.pages)}; every field must be equal), so "
                         f"its acceptance does not describe this one: run without --schedule to measure it")
    prev_bin = (prev.get("args") or {}).get("bin")
    if prev_bin != args.bin:
        raise SystemExit(f"--acceptance-from {args.acceptance_from}: its bins are {prev_bin} tokens, this run's "
                         f"--bin is {args.bin}: pass --bin to match")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--contexts", type=int, nargs="+", default=None)
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--noise", type=float, default=1.0, help="the recall model's key noise")
    ap.add_argument("--bin", type=int, default=2048)
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--cal-batch", type=int, default=2)
    ap.add_argument("--windows-per-bin", type=int, default=4, help="calibration windows spread through each bin")
    ap.add_argument("--confidence", type=float, default=0.9, help="of the lower bound on each bin's p5")
    ap.add_argument("--candidates", type=int, nargs="+", default=[0, 2, 4, 8, 16, 32, 64, 128, 256])
    ap.add_argument("--target", type=float, default=0.86)
    ap.add_argument("--steps", type=int, default=4, help="decode steps per timed round")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "out"))
    ap.add_argument("--schedule", help="skip calibration: use this schedule JSON (throughput only)")
    ap.add_argument("--acceptance-from", help="with --schedule: take the acceptance table from this earlier "
                                              "sparrow.json (it must have measured the same schedule)")
    args = ap.parse_args(argv)
    if args.contexts is None:
        args.contexts = [2048, 4096] if args.quick else [4096, 16384, 32768]
    if args.quick:
        args.bin, args.candidates, args.windows_per_bin = 1024, [0, 2, 8, 32, 128], 2
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    os.makedirs(args.out, exist_ok=True)
    model = retrieval_model(noise=args.noise)
    res = dict(args=vars(args), threads=torch.get_num_threads(), allocator=os.environ.get("LD_PRELOAD", "glibc"))

    if args.schedule:
        sched = SparrowSchedule.load(args.schedule)
        prev = {}
        if args.acceptance_from:
            with open(args.acceptance_from) as f:
                prev = json.load(f)
            check_acceptance_source(prev, sched, args)
        res.update(schedule=sched.to_dict(), met=prev.get("met"), acceptance=prev.get("acceptance", []))
        bins = len(sched.pages)
        avg = round(sum(min(p, (b + 1) * args.bin // 16) for b, p in enumerate(sched.pages)) / bins)
        log(f"schedule from {args.schedule}: {list(sched.pages)}; acceptance from {args.acceptance_from}")
    else:
        # 1. calibration
        n = max(args.contexts) + args.window
        wins = calibration_windows(n, args.bin, args.window, args.windows_per_bin, min_start=MIN_START)
        seqs, _ = recall_sequences(args.cal_batch, n - args.window, window=args.window, seed=1, windows=wins)
        # held-out prompts: calibration measures its chosen schedule there (its own prompts would grade it on
        # the data it was fitted to)
        held, _ = recall_sequences(args.cal_batch, n - args.window, window=args.window, seed=HELD_OUT_SEED,
                                   windows=wins)
        log(f"calibrating on {tuple(seqs.shape)}: {len(wins)} windows x {len(args.candidates)} candidates; "
            f"held-out prompts (seed {HELD_OUT_SEED}): {tuple(held.shape)}")
        cal = calibrate(model, seqs, args.candidates, args.target, bin_tokens=args.bin, window=args.window,
                        windows_per_bin=args.windows_per_bin, min_start=MIN_START, confidence=args.confidence,
                        holdout=held)
        for line in cal.rows():
            log("calibration: " + line)
        sched = cal.schedule
        log(f"calibrated schedule: pages per {args.bin}-token bucket {list(sched.pages)}; met {cal.met}")
        for line in cal.held_out_rows():
            log(line)
        log(f"held-out p5 >= {args.target} in every bin: {cal.held_out_met()}")
        sched.save(os.path.join(args.out, "sparrow_schedule.json"))

        # 2. acceptance: beside the calibrated schedule, a fixed budget of the same average cost on the same
        # held-out prompts
        bins = len(sched.pages)
        avg = round(sum(min(p, (b + 1) * args.bin // 16) for b, p in enumerate(sched.pages)) / bins)
        same_cost = f"fixed {avg} (same average cost)"
        alphas, pos = measure_windows(model, held, wins, args.window,
                                      {same_cost: SparrowSchedule.fixed(avg, bucket_tokens=args.bin)}, progress=True)
        acc_rows = []
        for r in cal.table:
            acc_rows.append(dict(variant=f"fixed {r['pages']}", data="calibration", **r))
        for r in cal.held_out:
            acc_rows.append(dict(variant=CALIBRATED, data="held-out", **r))
        for r in acceptance_summary(alphas[same_cost].flatten(), pos.repeat(held.shape[0]), args.bin,
                                    confidence=args.confidence):
            acc_rows.append(dict(variant=same_cost, data="held-out", **r))
        res.update(schedule=sched.to_dict(), met=cal.met, acceptance=acc_rows)

    # 3. throughput
    variants = {"dense": SparrowSchedule.dense(dense_layers=()), "transformers static cache": None,
                "sparrow calibrated": sched, f"fixed {avg}": SparrowSchedule.fixed(avg, bucket_tokens=args.bin)}
    tp = []
    for ctx in args.contexts:
        tp += throughput(model, ctx, args.batches, variants, args.steps, args.reps)
        res["throughput"] = tp
        with open(os.path.join(args.out, "sparrow.json"), "w") as f:
            json.dump(res, f, indent=1)

    md = report(res, args, avg)
    with open(os.path.join(args.out, "sparrow.md"), "w") as f:
        f.write(md)
    print(md)
    plot(res, args, os.path.join(args.out, "sparrow.png"))
    log(f"wrote {args.out}/sparrow.json, sparrow.md" + ("" if args.schedule else ", sparrow_schedule.json"))


def report(res, args, avg) -> str:
    out = ["## Decode throughput (CPU, %d threads, fp32; median of %d interleaved rounds)" % (res["threads"],
                                                                                           args.reps), "",
           "| context | batch | variant | ms/step | tokens/s | vs dense |", "|---|---|---|---|---|---|"]
    for r in res["throughput"]:
        out.append(f"| {r['context']} | {r['batch']} | {r['variant']} | {r['ms_per_step']:.1f} | "
                   f"{r['tokens_per_s']:.1f} | {r['speedup_vs_dense']:.2f}x |")
    variants = []
    for r in res["acceptance"]:
        if r["variant"] not in variants:
            variants.append(r["variant"])
    bins = sorted({r["bin_start"] for r in res["acceptance"]})
    out += ["", f"## Acceptance per {args.bin}-token bin of KV length: p5 [its lower bound at confidence "
                f"{args.confidence}] (mean) of alpha, teacher-forced recall windows; dense is 1.0 by definition. Fixed candidates: the calibration prompts; calibrated and "
                f"same-cost rows: held-out prompts", "",
            "| variant | " + " | ".join(f"{b / 1024:g}K-{(b + args.bin) / 1024:g}K" for b in bins) + " |",
            "|---|" + "---|" * len(bins)]
    if not variants:  # --schedule without --acceptance-from: say so rather than print an empty table
        out += ["| (not measured in this run) |"]
    for v in variants:
        cells = []
        for b in bins:
            r = next((x for x in res["acceptance"] if x["variant"] == v and x["bin_start"] == b), None)
            if r is None:
                cells.append("-")
            else:
                lo = r.get("p5_lower", "n/a")  # n/a: a run before the bound; None: too few tokens for one
                lo = "undefined" if lo is None else lo if isinstance(lo, str) else f"{lo:.3f}"
                cells.append(f"{r['p5']:.3f} [>= {lo}] ({r['mean']:.3f})")
        out.append(f"| {v} | " + " | ".join(cells) + " |")
    out += ["", f"calibrated pages per bucket: {res['schedule']['pages']} (+{res['schedule']['sink_pages']} sink, "
                f"+{res['schedule']['local_pages']} local; layers {res['schedule']['dense_layers']} dense)",
            f"fixed budget of the same average cost: {avg} pages"]
    top = [r for r in res["throughput"] if r["variant"] == "sparrow calibrated"]
    if top:
        t = max(top, key=lambda r: (r["context"], r["batch"]))
        out.append(f"target: {t['context']} context, batch {t['batch']}: {t['speedup_vs_dense']:.2f}x dense "
                   f"(>= 2.5x: {t['speedup_vs_dense'] >= 2.5})")
    out.append(acceptance_verdict(res, args.target))
    return "\n".join(out) + "\n"


def acceptance_verdict(res, target: float) -> str:
    """The p5 verdict from held-out measurements only; a bin calibration could not meet is a failure (it runs
    dense, so its acceptance is 1 by construction); no verdict without data."""
    held = [r for r in res["acceptance"] if r["variant"] == CALIBRATED and r.get("data") == "held-out"]
    if not held:
        return ("calibrated p5 on held-out prompts: not measured in this run (no verdict; run without --schedule, "
                "or give --acceptance-from a run that measured this schedule)")
    failed = [i for i, m in enumerate(res.get("met") or []) if m is False]
    low = [f"{r['bin_start']}-{r['bin_end']}: {r['p5']:.3f}" for r in held if r["p5"] < target]
    ok = not failed and not low
    return (f"calibrated p5 >= {target} in every bin, on held-out prompts (seed {HELD_OUT_SEED}, not used for "
            f"calibration; a bucket where no candidate met the target counts as failed): {ok}"
            + (f"; below target: {low}" if low else "")
            + (f"; calibration failed in buckets {failed}" if failed else ""))


def plot(res, args, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is not installed: no plot (pip install matplotlib)")
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.5))
    names = []
    for r in res["throughput"]:
        if r["variant"] not in names:
            names.append(r["variant"])
    keys = sorted({(r["context"], r["batch"]) for r in res["throughput"]})
    width = 0.8 / len(names)
    for i, nm in enumerate(names):
        ys = [next(r["tokens_per_s"] for r in res["throughput"] if r["variant"] == nm and (r["context"], r["batch"]) == k)
              for k in keys]
        ax1.bar([j + i * width for j in range(len(keys))], ys, width, label=nm)
    ax1.set_xticks([j + 0.4 - width / 2 for j in range(len(keys))], [f"{c // 1024}K, B={b}" for c, b in keys])
    ax1.set_ylabel("decode tokens/s")
    ax1.set_yscale("log")
    ax1.legend(fontsize=8)
    ax1.set_title("decode throughput (CPU)")
    for v in dict.fromkeys(r["variant"] for r in res["acceptance"]):
        rows = sorted((r for r in res["acceptance"] if r["variant"] == v), key=lambda r: r["bin_start"])
        style = "-" if v == CALIBRATED or "same" in v else ":"
        ax2.plot([r["bin_start"] / 1024 for r in rows], [r["p5"] for r in rows], style, marker="o", label=v)
    ax2.axhline(args.target, color="k", lw=0.8)
    ax2.set_xlabel("KV length bin start (K tokens)")
    ax2.set_ylabel("p5 alpha")
    ax2.set_title("acceptance tail per bin")
    ax2.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    log(f"plot: {path}")


if __name__ == "__main__":
    sys.exit(main())
