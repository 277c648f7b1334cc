"""Context parallelism on CPU gloo ranks (issue 33, item 1): the long-context GRPO step of bench/long_context.py
(G rows sharing one prompt, each with its own completion) under ``backend="replay"``, on one process and with
``options={"context_parallel": group}`` on ``--ranks`` processes of one CP group.

Every process (one subprocess each, a fresh heap) warms up on two short batches (compiles) and once at the
measured prompt length, then runs the step twice: the first takes the peak above its start (the larger of the
sampled glibc heap and the exact tensor peak, batch and weights excluded, parameter gradients included, as
bench/long_context.py measures), the second the step time (``--ranks-only``: one step, both from it). The single process runs with all the cores' threads; each CP rank with its share.
The CP ranks' gradients, averaged over the group as DDP/FSDP2 would, and their loss are compared with the single
process's (fp32). The memory model's prediction (``replaycompile.planning.planner``) is printed beside each peak.

    python bench/cp_step.py                         # the budget model at a 16K prompt, G=8, 2 ranks
    python bench/cp_step.py --prompts 4096 --quick  # a smoke run
    python bench/cp_step.py --ranks-only --prompts 24576             # a budget probe: does each rank fit 1 GiB?
    python bench/cp_step.py --ranks-only --mode detach_prefix --prompts 102400
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import socket
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(HERE.parent / ".torchinductor_cache"))

import torch  # noqa: E402


def log(msg: str) -> None:
    print(msg, flush=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(args) -> int:
    """One process: ``--rank``/``--world`` (world 1: no process group)."""
    import long_context as lc
    import replaycompile
    from safetensors.torch import save_file

    world, rank = args.world, args.rank
    torch.set_num_threads(max(1, args.threads))
    group = None
    if world > 1:
        import torch.distributed as dist

        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
        dist.init_process_group("gloo", rank=rank, world_size=world)
        group = dist.group.WORLD
    torch.manual_seed(0)
    model = lc.build_model(args.model)
    V = lc.MODELS[args.model]["vocab_size"]
    opts = {"inner": args.inner, "lm_head": "plain", "mode": args.mode,
            "shared_chunks": args.shared_chunks if args.shared_chunks == "auto" else int(args.shared_chunks)}
    if group is not None:
        opts["context_parallel"] = group
    fn = torch.compile(lc._fresh(lc._loss_full, "cp_step"), backend="replay", dynamic=None, options=opts)

    def step(batch):
        for p in model.parameters():
            p.grad = None
        loss = fn(model, *batch)
        loss.backward()
        return loss.detach()

    for k, p in enumerate((64, 80)):  # compile, then the dynamic-shape graph
        step(lc.make_rl_batch(args.group, p, 16, 32, V, seed=k))
    batch = lc.make_rl_batch(args.group, args.prompt, args.cmin, args.cmax, V, seed=7)
    step(batch)  # the inductor kernels of this size range compile here, not in the measured step
    t0 = time.perf_counter()
    with lc.Watch() as w:
        loss = step(batch)
    step_s = time.perf_counter() - t0
    if not args.ranks_only:  # timed again without the measurement's profiler
        t0 = time.perf_counter()
        step(batch)
        step_s = time.perf_counter() - t0
    st = replaycompile.last_stats()
    grads = {n: q.grad.detach().clone() for n, q in model.named_parameters()}
    if group is not None:
        import torch.distributed as dist

        for g in grads.values():
            dist.all_reduce(g)
            g /= world
    p_act, comps = lc.batch_shape(batch)
    rep = dict(rank=rank, world=world, peak_bytes=w.delta, step_s=step_s, loss=loss.item(), prompt_len=p_act,
               completions=comps, applied=st["applied"], context_parallel=st.get("context_parallel"),
               tokens_computed=st["tokens_computed"], threads=torch.get_num_threads())
    if rank == 0:
        save_file({n: g.contiguous() for n, g in grads.items()}, f"{args.out}.grads.{world}")
    print(json.dumps(rep), flush=True)
    if group is not None:
        import torch.distributed as dist

        dist.destroy_process_group()
    return 0


def launch(args, world: int, threads: int) -> list[dict]:
    port = _free_port()
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--worker", "--world", str(world),
           "--port", str(port), "--threads", str(threads), "--prompt", str(args.prompt), "--group", str(args.group),
           "--cmin", str(args.cmin), "--cmax", str(args.cmax), "--model", args.model, "--inner", args.inner,
           "--out", args.out, "--mode", args.mode, "--shared-chunks", args.shared_chunks] + (["--ranks-only"] if args.ranks_only else [])
    procs = [subprocess.Popen(cmd + ["--rank", str(r)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in range(world)]
    done = [p.communicate(timeout=args.timeout) for p in procs]
    reps, failed = [], []
    for r, (p, (out, err)) in enumerate(zip(procs, done)):
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        if p.returncode or not lines:
            tail = [ln for ln in err.splitlines() if "Warning" not in ln and "warn(" not in ln][-25:]
            failed.append(f"rank {r} of {world} failed (exit {p.returncode}):\n" + "\n".join(tail))
        else:
            reps.append(json.loads(lines[-1]))
    if failed:
        raise SystemExit("\n".join(failed))
    return reps


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, nargs="+", default=[16384])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--cmin", type=int, default=64)
    ap.add_argument("--cmax", type=int, default=128)
    ap.add_argument("--model", default="budget")
    ap.add_argument("--inner", default="inductor", choices=["inductor", "aot_eager"])
    ap.add_argument("--quick", action="store_true", help="the quick model and a 1K prompt")
    ap.add_argument("--ranks-only", action="store_true",
                    help="only the CP ranks (a budget probe: each rank's peak against --budget-gb; no exactness check)")
    ap.add_argument("--budget-gb", type=float, default=1.0)
    ap.add_argument("--mode", default="exact", choices=["exact", "detach_prefix"])
    ap.add_argument("--shared-chunks", default="auto",
                    help="detach_prefix: the shared stream's chunks (the backend option; 'auto' decides from the "
                         "batch the graph was compiled at, here the short warm-up batches, so a probe names it)")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--out", default=str(HERE / "out" / "cp_step"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rank", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--world", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=2, help=argparse.SUPPRESS)
    ap.add_argument("--prompt", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)
    if args.quick:
        args.model, args.prompts = "quick_budget", [1024]
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    from replaycompile.planning import planner
    from safetensors.torch import load_file
    import long_context as lc

    cores = os.cpu_count() or 1
    log(f"# CP step: {args.model} {lc.MODELS[args.model]}, fp32, G={args.group}, completions {args.cmin}-"
        f"{args.cmax}, inner {args.inner}, lm_head plain; one process ({cores} threads) against {args.ranks} gloo "
        f"ranks ({max(1, cores // args.ranks)} thread(s) each) on {cores} cores; torch {torch.__version__}")
    results = []
    # the planner's figure for the chunk count the step ran with ("auto" picks it from the traced warm-up batch: 1)
    chunks = 1 if args.shared_chunks == "auto" else int(args.shared_chunks)
    for prompt in args.prompts:
        args.prompt = prompt
        if args.ranks_only:
            variant = "replay_detach" if args.mode == "detach_prefix" else "replay"
            cp = launch(args, args.ranks, max(1, cores // args.ranks))
            predc = planner.plan_step(args.model, args.group, cp[0]["prompt_len"], cp[0]["completions"],
                                      cp=args.ranks, dtype=torch.float32, lm_head="plain", variants=[variant],
                                      fsdp=False, shared_chunks=chunks)
            peak_cp = max(r["peak_bytes"] for r in cp)
            for r in cp:
                log(f"{prompt:>6} CP rank {r['rank']}/{r['world']}: peak {r['peak_bytes'] / 2**20:.0f} MB (planner "
                    f"{predc.variants[variant].step_peak / 2**20:.0f}), step {r['step_s']:.2f} s; "
                    f"{r['context_parallel']}")
            log(f"{prompt:>6} CP on {args.ranks} ranks: per-rank peak {peak_cp / 2**30:.3f} GiB: "
                f"{'fits' if peak_cp <= args.budget_gb * 2**30 else 'does not fit'} {args.budget_gb:g} GiB")
            results.append(dict(prompt=prompt, cp=cp, fits=peak_cp <= args.budget_gb * 2**30))
            continue
        variant = "replay_detach" if args.mode == "detach_prefix" else "replay"
        one = launch(args, 1, cores)[0]
        cp = launch(args, args.ranks, max(1, cores // args.ranks))
        g1, gc = load_file(f"{args.out}.grads.1"), load_file(f"{args.out}.grads.{args.ranks}")
        worst = max(((gc[n] - g).norm() / g.norm().clamp_min(1e-30)).item() for n, g in g1.items())
        loss_rel = max(abs(r["loss"] - one["loss"]) / abs(one["loss"]) for r in cp)
        cfg = planner.load_config("budget" if args.model == "budget" else "small") if args.model in (
            "budget", "small") else None
        pred1 = predc = None
        if cfg is not None:
            kw = dict(dtype=torch.float32, lm_head="plain", variants=[variant], fsdp=False,  # no FSDP2 here
                      shared_chunks=chunks)
            pred1 = planner.plan_step(args.model, args.group, one["prompt_len"], one["completions"], **kw)
            predc = planner.plan_step(args.model, args.group, one["prompt_len"], one["completions"], cp=args.ranks,
                                      **kw)
        peak_cp = max(r["peak_bytes"] for r in cp)
        log(f"{prompt:>6} one process: peak {one['peak_bytes'] / 2**20:.0f} MB"
            + (f" (planner {pred1.variants[variant].step_peak / 2**20:.0f})" if pred1 else "")
            + f", step {one['step_s']:.2f} s, {one['tokens_computed']} packed tokens")
        for r in cp:
            log(f"{prompt:>6} CP rank {r['rank']}/{r['world']}: peak {r['peak_bytes'] / 2**20:.0f} MB"
                + (f" (planner {predc.variants[variant].step_peak / 2**20:.0f})" if predc else "")
                + f", step {r['step_s']:.2f} s; {r['context_parallel']}")
        log(f"{prompt:>6} CP on {args.ranks} ranks: per-rank peak {peak_cp / one['peak_bytes']:.2f}x the single "
            f"process's (target <= 0.6 at 16K); step {max(r['step_s'] for r in cp) / one['step_s']:.2f}x its time; "
            f"exact: loss rel {loss_rel:.1e}, worst parameter gradient rel {worst:.1e}")
        results.append(dict(prompt=prompt, one=one, cp=cp, grad_rel_worst=worst, loss_rel=loss_rel))
    js = pathlib.Path(args.out).with_suffix(".json")
    js.write_text(json.dumps(results, indent=1))
    log(f"# wrote {js}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
