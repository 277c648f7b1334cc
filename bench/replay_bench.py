"""Side-by-side benchmark of the replay backend on a GRPO-shaped training step (forward + loss + backward).

One process, variants interleaved round-robin, medians reported, the ideal (token and FLOP ratios) beside.
Not a test: run it by hand, e.g.

    python bench/replay_bench.py                 # the issue's configuration (takes several minutes on 2 cores)
    python bench/replay_bench.py --quick         # a smaller model and batch, for a smoke run
    python bench/replay_bench.py --model qwen3 qwen3_moe mistral_window --variants "replay exact"
                                                 # dense, MoE and sliding-window models of the same shape,
                                                 # interleaved; eager logits_to_keep always runs

Peak memory is the high-water mark of the bytes malloc has handed out during one step (glibc's mallinfo2,
sampled every 0.5 ms), above what was in use before the step: unlike RSS it does not count memory the
allocator caches after frees, so variants run in one process compare.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import replaycompile
from replaycompile.testing.models import tiny_model

from common import (MODELS, PeakHeap, build_variants, make_batch, make_loss_full, mlp_macs, model_variant,
                    reference_config, with_old_logprobs)

KEEP = "eager logits_to_keep (TRL baseline)"


def step(fn, model, batch):
    for p in model.parameters():
        p.grad = None
    loss = fn(model, *batch)
    loss.backward()
    return loss.detach()


def grads(model):
    return torch.cat([p.grad.reshape(-1) for p in model.parameters() if p.grad is not None])


def _flops(mcfg: dict, G: int, P: int, t_all: int, lens: list, tokens_packed: int, head_rows: int):
    """FLOP model of the forward (per-token matmuls + attention + LM head): eager's (which masks every pair) and
    the packed step's. MoE: the router and the k active experts. Windows are not modelled (both sides count
    every causal pair), so the window model's ratio is an upper bound of what the FLOPs allow."""
    h, L, V = mcfg["hidden_size"], mcfg["num_hidden_layers"], mcfg["vocab_size"]
    hq, hk, d = mcfg["num_attention_heads"], mcfg["num_key_value_heads"], mcfg["head_dim"]
    per_tok = sum(2 * (h * hq * d + 2 * h * hk * d + hq * d * h + mlp_macs(mcfg, i)) for i in range(L))
    eager_flops = G * t_all * (per_tok + 2 * h * V) + L * G * 4 * hq * d * t_all * t_all
    packed_attn = L * 4 * hq * d * (P * P / 2 + sum(P * (n - P) + (n - P) ** 2 / 2 for n in lens))
    return eager_flops, tokens_packed * per_tok + packed_attn + head_rows * 2 * h * V


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small model and batch (smoke run)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", default=None, help="also write the results to this JSON file")
    ap.add_argument("--model", nargs="+", choices=MODELS, default=["qwen3"],
                    help="model families on the same workload (several: their steps interleaved in one process, "
                         "each model's speedups against its own eager baselines)")
    ap.add_argument("--variants", nargs="+", default=None,
                    help="time only the variants whose names start with one of these (e.g. 'eager' 'replay exact')")
    ap.add_argument("--sweep", type=int, nargs="*", default=[],
                    help="shared-prefix lengths for the min_shared_tokens break-even sweep (e.g. 0 8 32 128)")
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    cfg, (G, P, cmin, cmax) = reference_config(args.quick)
    runs = {}
    for mname in args.model:
        fam, mcfg = model_variant(mname, cfg, P)
        model = tiny_model(fam, **mcfg)
        batch = with_old_logprobs(model, make_batch(G, P, cmin, cmax, cfg["vocab_size"], share=True), P)
        nosh = with_old_logprobs(model, make_batch(G, P, cmin, cmax, cfg["vocab_size"], share=False, seed=1), P)
        variants = build_variants(model, P, cmax)
        if args.variants:
            # the TRL baseline always runs: it is the reference of the exactness check and of every speedup
            variants = {k: v for k, v in variants.items()
                        if k == KEEP or any(k.startswith(p) for p in args.variants)}
        runs[mname] = dict(fam=fam, cfg=mcfg, model=model, batch=batch, nosh=nosh, variants=variants)
    env = {k: os.environ.get(k) for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "LD_PRELOAD")}
    print(f"# replay benchmark: Qwen3-shaped {cfg}, G={G}, prompt {P}, completions {cmin}-{cmax}, fp32, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU")
    for mname, r in runs.items():
        extra = {k: v for k, v in r["cfg"].items() if cfg.get(k) != v}
        print(f"# model {mname}: HF {r['fam']}{', ' + str(extra) if extra else ''}, "
              f"{sum(q.numel() for q in r['model'].parameters()) / 1e6:.1f}M parameters")
    print(f"# allocator: glibc malloc, settings {env} (None = glibc defaults)")

    # warm-up (compiles) and exactness against eager logits_to_keep (always run; eager as written differs from it
    # by fp32 noise, rel L2 ~5e-8)
    for mname, r in runs.items():
        model, batch, variants = r["model"], r["batch"], r["variants"]
        ref_loss = step(variants[KEEP], model, batch)
        ref_grad = grads(model).clone()
        info = r["info"] = {}
        for name, fn in variants.items():
            t0 = time.perf_counter()
            loss = step(fn, model, batch)
            g = grads(model)
            stats = replaycompile.last_stats() if "replay" in name else None
            if stats is not None and not stats["applied"]:
                # a fallback timed under a "replay" label would be a lie: stop here
                raise SystemExit(f"{mname} {name}: the replay backend did not pack this batch "
                                 f"({stats['fallback_reason']}); refusing to time it as replay")
            cos = F.cosine_similarity(g.double(), ref_grad.double(), dim=0).item()
            rel = ((g.double() - ref_grad.double()).norm() / ref_grad.double().norm()).item()
            info[name] = dict(first_call_s=time.perf_counter() - t0,
                              loss_rel=(abs(loss - ref_loss) / ref_loss.abs().clamp_min(1e-30)).item(),
                              grad_cos=cos, grad_rel_l2=rel, stats=stats)
            print(f"#   warm-up {mname} {name}: {info[name]['first_call_s']:.1f}s, loss {loss.item():.6f} "
                  f"(rel diff {info[name]['loss_rel']:.1e}), "
                  f"grad cos={cos:.7f}, rel L2={rel:.2e}" + (f", stats={stats}" if stats else ""), flush=True)
        r["times"] = {name: [] for name in variants}
        r["peaks"] = {name: 0 for name in variants}

    for rep in range(args.reps):
        for mname, r in runs.items():
            for name, fn in r["variants"].items():
                gc.collect()
                # timed bare: PeakHeap's sampling thread slows a step by up to a third on 2 cores
                t0 = time.perf_counter()
                step(fn, r["model"], r["batch"])
                r["times"][name].append(time.perf_counter() - t0)
        print(f"#   rep {rep + 1}/{args.reps} done", flush=True)
    for mname, r in runs.items():  # the peak: one untimed step per variant under the sampler
        for name, fn in r["variants"].items():
            gc.collect()
            with PeakHeap() as pk:
                step(fn, r["model"], r["batch"])
            r["peaks"][name] = pk.delta

    out = {}
    for mname, r in runs.items():
        model, batch, variants, info, times, peaks = (r[k] for k in ("model", "batch", "variants", "info", "times",
                                                                     "peaks"))
        ids, am = batch[0], batch[1]
        tokens_in = int(am.sum())
        full = "eager (full logits, as written)"
        med_eager = statistics.median(times[full]) if full in times else float("nan")
        med_keep = statistics.median(times[KEEP])
        peak_eager = peaks.get(full, 0)
        print()
        print(f"model {mname}:")
        print("| variant | step s (median) | vs eager | vs logits_to_keep | peak heap in step | vs eager peak | "
              "grad cos | grad rel L2 |")
        print("|---|---|---|---|---|---|---|---|")
        rows = []
        for name in variants:
            med = statistics.median(times[name])
            row = dict(variant=name, step_s=med, vs_eager=med_eager / med, vs_keep=med_keep / med,
                       peak_mb=peaks[name] / 2**20, peak_vs_eager=peaks[name] / peak_eager if peak_eager else float("nan"),
                       grad_cos=info[name]["grad_cos"], grad_rel_l2=info[name]["grad_rel_l2"])
            rows.append(row)
            vs_eager = "-" if full not in times else f"{row['vs_eager']:.2f}x"  # eager as written not run
            peak_vs = "-" if full not in times else f"{100 * row['peak_vs_eager']:.0f}%"
            print(f"| {name} | {med:.3f} | {vs_eager} | {row['vs_keep']:.2f}x | {row['peak_mb']:.0f} MB "
                  f"| {peak_vs} | {row['grad_cos']:.7f} | {row['grad_rel_l2']:.1e} |")
        out[mname] = dict(config=r["cfg"], rows=rows,
                          info={k: {kk: vv for kk, vv in v.items() if kk != "stats"} for k, v in info.items()})
        if "replay exact" not in info:
            continue
        tokens_packed = info["replay exact"]["stats"]["tokens_computed"]
        # rows the packed LM head runs on: the unique tokens of the loss's slice [P-1, -1) (what the rewrite selects)
        from replaycompile.runtime.plan import build_plan
        head_rows = int(build_plan(ids, am).select_columns(P - 1, -1)[0].numel())
        t_all = ids.shape[1]
        eager_flops, replay_flops = _flops(r["cfg"], G, P, t_all, am.sum(1).tolist(), tokens_packed,
                                           head_rows)
        print()
        print(f"ideal: tokens in {tokens_in} (B x T = {G * t_all}), packed {tokens_packed}: token ratio "
              f"{tokens_in / tokens_packed:.2f}x over the non-pad tokens, {G * t_all / tokens_packed:.2f}x over B x T; "
              f"FLOP model (fwd, eager masks every pair) {eager_flops / replay_flops:.2f}x; the packed LM head runs on "
              f"{head_rows} unique rows of the loss's slice (eager: {G * (t_all - P)})")
        if "replay, model compiled alone" in variants:
            print(f"model compiled alone returns [B, T, V] logits ({G}x{t_all}x{cfg['vocab_size']} fp32 = "
                  f"{G * t_all * cfg['vocab_size'] * 4 / 2**30:.2f} GiB): the LM head and log-softmax then run on "
                  f"every row, which bounds its gain (see its row)")
    if len(runs) > 1 and all("replay exact" in r["times"] for r in runs.values()):
        sp = {m: out[m]["rows"][list(runs[m]["variants"]).index("replay exact")]["vs_keep"] for m in runs}
        base = sp.get("qwen3")
        print()
        print("replay exact over eager logits_to_keep: " + ", ".join(
            f"{m} {v:.2f}x" + (f" ({100 * (v / base - 1):+.0f}% vs dense)" if base and m != "qwen3" else "")
            for m, v in sp.items()))

    # a batch with no sharing: replay must decline (or cost little) against plain inductor
    ratio = None
    first = runs[args.model[0]]
    if "plain inductor" in first["variants"] and "replay exact" in first["variants"]:
        model, nosh = first["model"], first["nosh"]
        nos = {"plain inductor": first["variants"]["plain inductor"], "replay exact": first["variants"]["replay exact"]}
        for fn in nos.values():
            step(fn, model, nosh)
        nt = {k: [] for k in nos}
        for _ in range(args.reps):
            for k, fn in nos.items():
                t0 = time.perf_counter()
                step(fn, model, nosh)
                nt[k].append(time.perf_counter() - t0)
        st = replaycompile.last_stats()
        ratio = statistics.median(nt["replay exact"]) / statistics.median(nt["plain inductor"])
        print(f"no sharing ({args.model[0]}): plain inductor {statistics.median(nt['plain inductor']):.3f}s, replay "
              f"{statistics.median(nt['replay exact']):.3f}s ({100 * (ratio - 1):+.1f}%), applied={st['applied']}, "
              f"reason={st['fallback_reason']!r}")
    sweep = {}
    if args.sweep:
        # break-even of min_shared_tokens: rows sharing only their first k tokens, replay forced on
        # against the backend's own unpacked path (min_shared_tokens huge), which also moves the LM head after
        # the loss's slice: what a batch below the threshold runs
        model = first["model"]
        forced = torch.compile(make_loss_full(P), backend="replay", options={"min_shared_tokens": 0})
        plain = torch.compile(make_loss_full(P), backend="replay", options={"min_shared_tokens": 1 << 40})
        for k in args.sweep:
            ids_k, am_k, adv_k = make_batch(G, P, cmin, cmax, cfg["vocab_size"], share=False, seed=2)
            ids_k[:, :k] = ids_k[0, :k]
            bk = with_old_logprobs(model, (ids_k, am_k, adv_k), P)
            step(forced, model, bk)
            step(plain, model, bk)
            tf, tp = [], []
            for _ in range(args.reps):
                t0 = time.perf_counter()
                step(plain, model, bk)
                tp.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                step(forced, model, bk)
                tf.append(time.perf_counter() - t0)
            saved = int(am_k.sum()) - replaycompile.last_stats()["tokens_computed"]
            sweep[k] = statistics.median(tf) / statistics.median(tp)
            print(f"sharing sweep: first {k} tokens shared ({saved} tokens saved): replay forced "
                  f"{statistics.median(tf):.3f}s vs unpacked {statistics.median(tp):.3f}s "
                  f"({100 * (sweep[k] - 1):+.1f}%)", flush=True)
    if args.json:
        res = out[args.model[0]] if len(out) == 1 else dict(models=out)
        with open(args.json, "w") as f:
            json.dump(dict(res, config=cfg, no_sharing_ratio=ratio,
                           sharing_sweep=sweep), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
