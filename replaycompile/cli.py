"""Command line: ``replaycompile demo`` runs a GRPO-shaped training step on a built-in tiny Qwen3;
``replaycompile plan`` predicts a step's per-rank memory and FLOPs before launch (``replaycompile.planning.planner``);
``replaycompile bench`` runs every benchmark workload and system side by side (``bench/harness.py`` of a source
checkout)."""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch


def _batch(group: int, prompt_len: int, cmin: int, cmax: int, vocab: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    prompt = torch.randint(1, vocab, (prompt_len,), generator=g)
    lens = torch.randint(cmin, cmax + 1, (group,), generator=g).tolist()
    ids = torch.zeros(group, prompt_len + cmax, dtype=torch.long)
    am = torch.zeros_like(ids)
    for i, n in enumerate(lens):
        ids[i, :prompt_len] = prompt
        ids[i, prompt_len:prompt_len + n] = torch.randint(1, vocab, (n,), generator=g)
        am[i, :prompt_len + n] = 1
    return ids, am, torch.randn(group, generator=g)


def demo_model(hidden: int, layers: int, vocab: int):
    """The demo's tiny Qwen3 (4 query / 2 key-value heads, MLP 3x wide), deterministic."""
    from replaycompile.testing.models import tiny_model

    return tiny_model("qwen3", hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                      num_key_value_heads=2, head_dim=hidden // 4, intermediate_size=3 * hidden, vocab_size=vocab)


def demo_batch(model, group: int, prompt_len: int, cmin: int, cmax: int, seed: int = 0):
    """The demo's batch ``(ids, am, adv, old_logp)``: ``group`` rollouts of one prompt, right padded, and the rollout
    policy's stored log-probs of the completion tokens. Those come from a perturbed copy of ``model`` (as after an
    optimizer step), so the ratio, and the loss value, depend on ``model``'s logits. (The model's own log-probs, plus
    noise or not, would make the ratio independent of the model and "equal losses" mean nothing.)"""
    from replaycompile.testing.models import behaviour_logprobs

    ids, am, adv = _batch(group, prompt_len, cmin, cmax, model.config.vocab_size, seed)
    old_logp = behaviour_logprobs(model, ids, am, prompt_len, seed=seed + 1)
    return ids, am, adv, old_logp


def demo_step(prompt_len: int):
    """The demo's loss ``step(model, ids, am, adv, old_logp)``, what a GRPO trainer computes: completion log-probs,
    clipped ratio x advantage, masked mean."""
    P = prompt_len

    def grpo_step(model, ids, am, adv, old_logp):
        logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
        logp = logits[:, P - 1:-1].float().log_softmax(-1).gather(-1, ids[:, P:, None]).squeeze(-1)
        ratio = torch.exp(logp - old_logp)
        obj = torch.minimum(ratio * adv[:, None], ratio.clamp(0.8, 1.2) * adv[:, None])
        cm = am[:, P:].float()
        return -(obj * cm).sum() / cm.sum()
    return grpo_step


def demo(args) -> int:
    import replaycompile

    torch.manual_seed(0)
    model = demo_model(args.hidden, args.layers, args.vocab)
    P = args.prompt
    ids, am, adv, old_logp = demo_batch(model, args.group, P, args.min_completion, args.max_completion)
    grpo_step = demo_step(P)

    def run(fn):
        for p in model.parameters():
            p.grad = None
        t0 = time.perf_counter()
        loss = fn(model, ids, am, adv, old_logp)
        loss.backward()
        dt = time.perf_counter() - t0
        return dt, loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    print(f"replaycompile demo: tiny Qwen3 (hidden {args.hidden}, {args.layers} layers, vocab {args.vocab}), "
          f"G={args.group} rollouts of one {P}-token prompt, completions {args.min_completion}-"
          f"{args.max_completion} tokens, fp32, {torch.get_num_threads()} CPU threads", flush=True)
    step = torch.compile(grpo_step, backend="replay", options={"inner": args.inner})
    print(f"compiling with backend='replay' (inner compiler: {args.inner}; the first call compiles, "
          f"which takes a while on a CPU)...", flush=True)
    t0 = time.perf_counter()
    _, loss_r, grads_r = run(step)
    print(f"  compiled and ran in {time.perf_counter() - t0:.1f}s", flush=True)
    stats = replaycompile.last_stats()
    _, loss_e, grads_e = run(grpo_step)
    te, tr = [], []
    for i in range(args.steps):
        te.append(run(grpo_step)[0])
        tr.append(run(step)[0])
        print(f"  step {i + 1}/{args.steps}: eager {te[-1]:.3f}s, replay {tr[-1]:.3f}s", flush=True)
    # per parameter: a parameter with small gradients must not hide behind the largest one of the model
    rel = {n: ((grads_r[n] - g).norm() / g.norm().clamp_min(1e-30)).item() for n, g in grads_e.items()
           if n in grads_r}
    worst = max(rel, key=rel.get)
    loss_rel = abs(loss_r.item() - loss_e.item()) / max(abs(loss_e.item()), 1e-30)
    print()
    print(f"applied:             {stats['applied']}" + (f" ({stats['fallback_reason']})" if not stats["applied"]
                                                         else ""))
    computed, tokens_in = stats.get("tokens_computed") or stats.get("tokens_in"), stats.get("tokens_in")
    if computed and tokens_in:
        print(f"tokens computed:     {computed} of {tokens_in} tokens in ({tokens_in / computed:.2f}x fewer)")
    print(f"step time (median):  eager {statistics.median(te):.3f}s, replay {statistics.median(tr):.3f}s -> "
          f"speedup {statistics.median(te) / statistics.median(tr):.2f}x over eager")
    print(f"loss:                eager {loss_e.item():.7f}, replay {loss_r.item():.7f} (relative difference "
          f"{loss_rel:.1e})")
    print(f"gradients:           {len(rel)} parameters compared one by one; worst relative L2 error "
          f"{rel[worst]:.1e} ({worst})")
    tol = 1e-4  # fp32: summation order differs between the packed and the padded computation
    # two verdicts: exactness (a wrong result is a bug, exit 1) and, apart from it, whether the step was packed
    # (a decline is the backend working as designed: exact, unpacked, with its reason)
    ok = grads_r.keys() == grads_e.keys() and rel[worst] <= tol and loss_rel <= tol
    print(f"exact: loss and every parameter's gradient equal eager's to relative {tol:g}" if ok else
          "NOT EXACT: please report this")
    print("packed: yes" if stats["applied"] else
          f"packed: no, the backend declined and ran the step unpacked (exact, no speedup): "
          f"{stats['fallback_reason']}")
    return 0 if ok else 1


BENCH_SCRIPTS = {"loss-forms": "loss_forms.py", "verl": "verl_step.py", "vllm": "vllm_sparrow.py", "ops": "ops.py"}


def source_checkout():
    """The root of the source checkout this package runs from (``bench/`` beside ``replaycompile/``, as ``pip
    install -e .`` leaves it), or None for an installed copy (site-packages holds no ``bench/``)."""
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1]
    return root if (root / "bench" / "harness.py").is_file() and (root / "pyproject.toml").is_file() else None


def bench(argv) -> int:
    """``replaycompile bench ...``: hands its arguments to bench/harness.py, which lives beside the package in a
    source checkout only (it imports the peers and the other bench scripts from there; an installed copy says
    so and how to get one); ``replaycompile bench loss-forms ...`` to bench/loss_forms.py (one step written in
    eight loss forms); ``replaycompile bench ops ...`` to bench/ops.py (each custom op against its pure-torch
    reference); ``replaycompile bench verl ...`` to bench/verl_step.py (verl's update step with and without
    replay; needs verl: ``pip install -e '.[verl]'``); ``replaycompile bench vllm ...`` to bench/vllm_sparrow.py
    (stock vLLM against the Sparrow plugin; needs ``pip install -e '.[vllm]'``)."""
    import importlib.util
    import pathlib

    root = source_checkout()
    if root is None:
        here = pathlib.Path(__file__).resolve().parent
        print("replaycompile bench needs a source checkout: the benchmarks (bench/) are not part of the installed "
              f"package (this replaycompile is installed at {here}, with no bench/ beside it).\n"
              "Clone the replaycompile repository and run from its root:\n"
              "    git clone <the replaycompile repository URL> replaycompile && cd replaycompile\n"
              "    pip install -e '.[bench]'\n"
              f"    {' '.join(['replaycompile', 'bench', *argv])}", file=sys.stderr)
        return 2
    script = "harness.py"
    if argv[:1] and argv[0] in BENCH_SCRIPTS:
        script, argv = BENCH_SCRIPTS[argv[0]], argv[1:]
    path = root / "bench" / script
    spec = importlib.util.spec_from_file_location(f"replaycompile_bench_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod.main(argv)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:  # its own parser (bench/harness.py), so `replaycompile bench --help` is complete
        return bench(argv[1:])
    ap = argparse.ArgumentParser(prog="replaycompile", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("bench", help="every benchmark workload and system side by side, with the peers "
                                 "(replaycompile bench --help)")
    d = sub.add_parser("demo", help="a GRPO-shaped step on a built-in tiny Qwen3: speedup and exactness")
    d.add_argument("--group", type=int, default=8, help="rollouts per prompt (G)")
    d.add_argument("--prompt", type=int, default=512, help="prompt length")
    d.add_argument("--min-completion", type=int, default=32)
    d.add_argument("--max-completion", type=int, default=64)
    d.add_argument("--hidden", type=int, default=128)
    d.add_argument("--layers", type=int, default=2)
    d.add_argument("--vocab", type=int, default=16000)
    d.add_argument("--steps", type=int, default=5, help="timed steps (interleaved eager/replay)")
    d.add_argument("--inner", choices=["inductor", "aot_eager"], default="inductor")
    from replaycompile.planning import planner

    pl = sub.add_parser("plan", help="per-rank peak memory and FLOPs of a training step before launching it "
                                     "(eager, row by row, replay exact, with checkpointing, detach_prefix)")
    planner.add_arguments(pl)
    args = ap.parse_args(argv)
    if args.cmd == "demo":
        return demo(args)
    if args.cmd == "plan":
        return planner.run(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
