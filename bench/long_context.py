"""Long-context GRPO step on the replay backend (issue 9, items 4-5): time and memory against prompt length.

G rows share one prompt of 1K-32K tokens, each with its own 256-512-token completion (random per row); the
step is forward + GRPO loss (clipped ratio against stored old log-probs) + backward on a small Qwen3-shaped model
(vocab 32000, fp32, CPU). Variants:

    eager         the padded batch as written: full [G, T, V] logits, then the completion slice (where it fits)
    eager_keep    the padded batch with ``logits_to_keep`` = completion length + 1 (TRL's baseline; where it fits)
    eager_rows    row by row: each row unpadded, causal SDPA without a mask, ``logits_to_keep`` = its completion
                  length + 1, gradients accumulated over the rows (the baseline that fits at every length)
    eager_rows_ckpt  the same with Hugging Face's activation checkpointing (``gradient_checkpointing_enable()``,
                  non-reentrant): the strongest eager baseline for memory
    replay        the whole step function (model call + loss) under torch.compile(backend="replay", dynamic=None)
    replay_ckpt   replay on the model with the same activation checkpointing (its regions inlined with AOT
                  autograd's recompute tags, which the packed graph keeps: exact, each layer recomputed in backward)
    replay_detach the same with options={"mode": "detach_prefix"} (an approximation: its gradient error against
                  the exact gradient is reported, not asserted)
    prefix_grouper the peer (PyPI ``prefix_grouper``) given its best CPU setup (bench/peers.py): its data API, an
                  SDPA adapter, hand-built position ids, the LM head on the completion positions only; exact

Every timed step gets a new batch with a new padded length T (the prompt length moves by a few tokens and the
completion lengths are redrawn), as in RL; variants run round-robin within a length, medians over the reps.
Once per length the loss and every parameter gradient of each variant are compared with eager_rows (fp32).

Memory: every (variant, length) is measured in a subprocess of its own (``--measure variant,length``, which
prints one JSON line): after two small warm-up steps (compilation), the high-water mark of the bytes glibc's
malloc has handed out (mallinfo2: arenas + mmapped chunks, sampled every 0.5 ms) during one training step,
above what was in use when the step began. The batch and the weights were allocated before, so they are not in
it; the parameter gradients are (they are set to None before the step). A subprocess that passes a safety cap
(``--max-gb``) stops itself and is reported as over the cap. Predictions of ``replaycompile.planning.memory`` are printed
beside every measured point.

Then the longest prompt at G=8 that trains one step within a memory budget (``--budget-gb``), per variant, on a
larger model (``--budget-model``), by doubling and then bisection, one subprocess per probe: a probe whose
measured peak passes the budget (it stops itself there), that is killed or raises MemoryError does not fit.

    python bench/long_context.py               # the default run (about 25-30 minutes on 2 CPU cores)
    python bench/long_context.py --quick       # a smoke run (tiny lengths and model, a couple of minutes)
    python bench/long_context.py --lengths 1024 4096 --variants eager_rows replay --no-budget

Plots (PNG) and all results (JSON) go to bench/out/.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import time
import types

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(ROOT / ".torchinductor_cache"))

import torch  # noqa: E402

import replaycompile  # noqa: E402
from replaycompile.planning import memory  # noqa: E402
from replaycompile.planning.planner import step_flops  # noqa: E402
from replaycompile.testing.models import tiny_config, tiny_model  # noqa: E402
from common import PeakHeap, grpo_loss_from_logp  # noqa: E402

VARIANTS = ("eager", "eager_keep", "eager_rows", "eager_rows_ckpt", "prefix_grouper", "replay", "replay_ckpt",
            "replay_detach")
BUDGET_VARIANTS = ("eager_keep", "eager_rows", "replay", "replay_detach")
# variants that run the model with Hugging Face's activation checkpointing (gradient_checkpointing_enable(): every
# decoder layer a checkpoint region); the others run it without
CHECKPOINTED = ("eager_rows_ckpt", "replay_ckpt")

MODELS = {
    # the long-context model: small body, a real vocabulary (so the LM head matters)
    "small": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  intermediate_size=192, vocab_size=32000),
    # the budget search (the README's reference shape): about 100 KB of saved activations per token over its 4
    # layers, so a 1 GiB budget binds at prompts of a few thousand tokens, where one step still takes well under
    # a minute on 2 cores (hidden 512 took 68 s for eager_rows at 2K on the shared 2-core machine: too slow
    # to bisect in a 30-minute run)
    "budget": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                   head_dim=64, intermediate_size=768, vocab_size=32000),
    # smoke runs
    "quick": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  intermediate_size=192, vocab_size=4000),
    "quick_budget": dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         head_dim=32, intermediate_size=384, vocab_size=4000),
}
MAX_POS = 1 << 18


def log(msg: str) -> None:
    print(msg, flush=True)


def model_config(name: str):
    return tiny_config("qwen3", max_position_embeddings=MAX_POS, **MODELS[name])


def build_model(name: str):
    return tiny_model("qwen3", max_position_embeddings=MAX_POS, **MODELS[name])


# ----------------------------------------------------------------------------------------------------- batches

def make_rl_batch(group: int, prompt_len: int, cmin: int, cmax: int, vocab: int, seed: int):
    """One prompt of ``prompt_len`` tokens sampled ``group`` times, completions of cmin..cmax tokens (random per
    row), right-padded to T = prompt_len + the longest completion. The stored old log-probs stand for the rollout
    engine's: log(1/V) + 0.1 N(0, 1) (a random-init model's log-probs sit near log(1/V), so the ratio is near 1
    and the clip is partly active; the loss value depends on the logits)."""
    g = torch.Generator().manual_seed(seed)
    prompt = torch.randint(3, vocab, (prompt_len,), generator=g)
    lens = torch.randint(cmin, cmax + 1, (group,), generator=g)
    c = int(lens.max())
    t = prompt_len + c
    ids = torch.zeros(group, t, dtype=torch.long)
    am = torch.zeros(group, t, dtype=torch.long)
    for i in range(group):
        ids[i, :prompt_len] = prompt
        ids[i, prompt_len:prompt_len + lens[i]] = torch.randint(3, vocab, (int(lens[i]),), generator=g)
        am[i, :prompt_len + lens[i]] = 1
    adv = torch.randn(group, generator=g)
    old = -math.log(vocab) + 0.1 * torch.randn(group, c, generator=g)
    return ids, am, adv, old


def step_batch(group, prompt_len, cmin, cmax, vocab, k: int):
    """The k-th step's batch at nominal prompt length ``prompt_len``: the prompt moves by a few tokens and the
    completions are redrawn, so the padded length T is new on every step (as in RL)."""
    return make_rl_batch(group, prompt_len + (7 * k) % 29, cmin, cmax, vocab, seed=1000 + k)


def batch_shape(batch):
    ids, am, _, old = batch
    c = old.shape[1]
    p = ids.shape[1] - c
    return p, (am.sum(1) - p).tolist()


# ---------------------------------------------------------------------------------------------------- variants

def _loss_full(model, ids, am, adv, old_logp):
    """The GRPO step as a user writes it: full logits, then the completion positions (P from the shapes)."""
    c = old_logp.shape[1]
    p = ids.shape[1] - c
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    logp = logits[:, p - 1:-1].float().log_softmax(-1).gather(-1, ids[:, p:, None]).squeeze(-1)
    return grpo_loss_from_logp(logp, old_logp, adv, am[:, p:].float())


def _loss_keep(model, ids, am, adv, old_logp):
    c = old_logp.shape[1]
    p = ids.shape[1] - c
    logits = model(input_ids=ids, attention_mask=am, use_cache=False, logits_to_keep=c + 1).logits[:, :-1]
    logp = logits.float().log_softmax(-1).gather(-1, ids[:, p:, None]).squeeze(-1)
    return grpo_loss_from_logp(logp, old_logp, adv, am[:, p:].float())


def _rows_step(model, ids, am, adv, old_logp):
    """Row by row, unpadded (causal SDPA, no mask), logits_to_keep = completion + 1, backward per row: the
    gradients accumulate to the batch's (the per-row losses sum to the batch's masked mean)."""
    c_max = old_logp.shape[1]
    p = ids.shape[1] - c_max
    lens = am.sum(1).tolist()
    denom = float(sum(n - p for n in lens))
    total = torch.zeros(())
    for i, n in enumerate(lens):
        c = n - p
        out = model(input_ids=ids[i:i + 1, :n], use_cache=False, logits_to_keep=c + 1).logits[:, :-1]
        logp = out.float().log_softmax(-1).gather(-1, ids[i:i + 1, p:n, None]).squeeze(-1)
        ratio = torch.exp(logp - old_logp[i:i + 1, :c])
        a = adv[i]
        loss = -torch.minimum(ratio * a, ratio.clamp(0.8, 1.2) * a).sum() / denom
        loss.backward()
        total = total + loss.detach()
        del out, logp, ratio, loss
    return total


def _prefix_grouper_step(model, ids, am, adv, old_logp):
    """Prefix Grouper's step: the attention implementation is switched for the call only (the other variants
    share the model)."""
    from peers import prefix_grouper_logp, use_prefix_grouper
    c = old_logp.shape[1]
    p = ids.shape[1] - c
    restore = use_prefix_grouper(model)
    try:
        logp = prefix_grouper_logp(model, ids, am, p)
        loss = grpo_loss_from_logp(logp, old_logp, adv, am[:, p:].float())
        loss.backward()
    finally:
        restore()
    return loss.detach()


def _fresh(fn, name):
    """``fn`` with a code object of its own: Dynamo caches per code object, and the two replay variants would
    otherwise evict each other's entries (and count as recompiles)."""
    code = fn.__code__.replace(co_name=name)
    return types.FunctionType(code, fn.__globals__, name, fn.__defaults__, fn.__closure__)


def make_variant(name: str):
    """A callable (model, batch) -> loss that runs forward, loss and backward."""
    if name in CHECKPOINTED:
        return _checkpointed(make_variant(name[:-len("_ckpt")]), _fresh_name=name)
    if name == "eager_rows":
        return lambda model, batch: _rows_step(model, *batch)
    if name == "prefix_grouper":
        return lambda model, batch: _prefix_grouper_step(model, *batch)
    if name == "eager":
        fn = _loss_full
    elif name == "eager_keep":
        fn = _loss_keep
    elif name == "replay":
        fn = torch.compile(_fresh(_loss_full, "step_replay"), backend="replay", dynamic=None,
                           options={"lm_head": os.environ.get("REPLAY_BENCH_LM_HEAD", "auto")})
    elif name == "replay_detach":
        fn = torch.compile(_fresh(_loss_full, "step_replay_detach"), backend="replay", dynamic=None,
                           options={"mode": "detach_prefix",
                                    "lm_head": os.environ.get("REPLAY_BENCH_LM_HEAD", "auto")})
    else:
        raise ValueError(f"unknown variant {name!r}; variants: {VARIANTS}")

    def run(model, batch):
        loss = fn(model, *batch)
        loss.backward()
        return loss.detach()
    return run


def _checkpointed(run, _fresh_name: str):
    """``run`` with the model's activation checkpointing on for the call (the sweep shares one model)."""
    if _fresh_name == "replay_ckpt":  # a compiled function of its own (Dynamo caches per code object)
        # REPLAY_BENCH_CKPT_ATTENTION=save: the backend option checkpoint_attention="save"
        fn = torch.compile(_fresh(_loss_full, "step_replay_ckpt"), backend="replay", dynamic=None,
                           options={"lm_head": os.environ.get("REPLAY_BENCH_LM_HEAD", "auto"),
                                    "checkpoint_attention": os.environ.get("REPLAY_BENCH_CKPT_ATTENTION",
                                                                           "recompute")})

        def run(model, batch):
            loss = fn(model, *batch)
            loss.backward()
            return loss.detach()

    def checkpointed(model, batch):
        model.train()  # transformers checkpoints only in training mode (the tiny models have no dropout)
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        # transformers >= 5.25 with Hugging Face's kernels sets a context variable inside each checkpointed
        # layer, which Dynamo refuses ("HOP: Unsafe side effect") and graph-breaks on at every layer; it is
        # kernel routing state that the recomputation does not need (README, activation checkpointing)
        try:
            with torch._dynamo.config.patch(skip_fwd_side_effects_in_bwd_under_checkpoint=True):
                return run(model, batch)
        finally:
            model.gradient_checkpointing_disable()
            # each enable adds an input-embedding forward hook that the disable leaves (transformers 5.2x):
            # without removing it the hook count changes every step, and Dynamo recompiles every variant's step
            model.disable_input_require_grads()
    return checkpointed


def run_step(fn, model, batch):
    for p in model.parameters():
        p.grad = None
    return fn(model, batch)


def replay_call() -> int:
    s = replaycompile.last_stats()
    return s["call"] if s else 0


def fresh_stats(before: int):
    """last_stats() if the replay backend recorded a call since ``before`` (else None: Dynamo ran without it)."""
    s = replaycompile.last_stats()
    return s if s and s["call"] > before else None


def warm_up(fn, model, group, cmin, cmax, vocab):
    """Two short steps with different T: the first compiles, the second makes Dynamo's shapes dynamic
    (dynamic=None), so the measured or timed steps do not compile."""
    for k, p in enumerate((64, 80)):
        run_step(fn, model, make_rl_batch(group, p, min(cmin, 48), min(cmax, 64), vocab, seed=k))


# ----------------------------------------------------------------------------------------------------- memory

class Watch(PeakHeap):
    """PeakHeap (with the exact tensor peak) and a stop: past ``abort_bytes`` above the start it prints ``report``
    as JSON and ends the process (exit 3)."""

    def __init__(self, abort_bytes: float | None = None, report: dict | None = None):
        super().__init__(tensors=True)
        self.abort_bytes, self.report = abort_bytes, report or {}

    def _sampled(self):
        if self.abort_bytes is not None and self.peak - self.base > self.abort_bytes:
            print(json.dumps({**self.report, "ok": False, "exceeded": True, "peak_bytes": self.peak - self.base,
                              "error": f"passed {self.abort_bytes / 2**30:.2f} GiB above the start; stopped"}),
                  flush=True)
            os._exit(3)


def measure_main(args) -> int:
    """``--measure variant,length``: one step's peak heap in this process; one JSON line on stdout."""
    variant, length = args.measure.split(",")
    length = int(length)
    torch.manual_seed(0)
    cfgd = MODELS[args.model]
    model = build_model(args.model)
    fn = make_variant(variant)
    report = dict(variant=variant, prompt_len=length, model=args.model)
    try:
        warm_up(fn, model, args.group, args.cmin, args.cmax, cfgd["vocab_size"])
        batch = step_batch(args.group, length, args.cmin, args.cmax, cfgd["vocab_size"], k=args.seed)
        p, comps = batch_shape(batch)
        report.update(actual_prompt_len=p, completions=comps, T=batch[0].shape[1])
        for prm in model.parameters():
            prm.grad = None
        gc.collect()
        before = replay_call()
        abort = args.abort_gb * 2**30 if args.abort_gb else None
        with Watch(abort, report) as w:
            t0 = time.perf_counter()
            fn(model, batch)
            step_s = time.perf_counter() - t0
        stats = fresh_stats(before) if variant.startswith("replay") else None
        report.update(ok=True, peak_bytes=w.delta, tensor_peak_bytes=w.tensor_delta, step_s=step_s,
                      base_bytes=w.base, stats={k: v for k, v in stats.items() if k != "call"} if stats else None)
    except MemoryError as e:
        report.update(ok=False, error=f"MemoryError: {e}")
    except RuntimeError as e:
        msg = str(e)
        report.update(ok=False, error=f"RuntimeError: {msg[:300]}",
                      oom="alloc" in msg.lower() or "memory" in msg.lower())
    print(json.dumps(report), flush=True)
    return 0


def run_measure(variant, length, model_name, args, abort_gb, timeout):
    """Run ``--measure`` in a subprocess; returns its JSON report (or a failure report)."""
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--measure", f"{variant},{length}",
           "--model", model_name, "--group", str(args.group), "--cmin", str(args.cmin), "--cmax", str(args.cmax),
           "--abort-gb", str(abort_gb), "--seed", str(args.seed)]
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(variant=variant, prompt_len=length, ok=False, timed_out=True,
                    error=f"timed out after {timeout:.0f} s", wall_s=time.perf_counter() - t0)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if lines:
        rep = json.loads(lines[-1])
    else:
        tail = (r.stderr or "").strip().splitlines()[-3:]
        rep = dict(variant=variant, prompt_len=length, ok=False,
                   error=f"exit {r.returncode}" + (" (killed)" if r.returncode < 0 else "") + f": {' | '.join(tail)}")
    rep["returncode"] = r.returncode
    rep["wall_s"] = time.perf_counter() - t0
    return rep


# ---------------------------------------------------------------------------------------------------- FLOPs

def flops(cfg, variant: str, prompt_len: int, comps: list[int], head_rows: int | None = None) -> float:
    """Forward+backward FLOPs of one step for the rows the variant computes (``replaycompile.planning.planner.step_flops``,
    whose docstring has the count)."""
    return step_flops(cfg, variant, prompt_len, comps, head_rows)


# ------------------------------------------------------------------------------------------------ the sweep

def grads_of(model):
    return {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}


def compare(g, ref, loss, ref_loss):
    worst, wname = 0.0, None
    num = den = 0.0
    for n, r in ref.items():
        x = g.get(n, torch.zeros_like(r))
        e = ((x.double() - r.double()).norm() / r.double().norm().clamp_min(1e-30)).item()
        if e > worst:
            worst, wname = e, n
        num += (x.double() - r.double()).norm().item() ** 2
        den += r.double().norm().item() ** 2
    return dict(loss_rel=abs(loss.item() - ref_loss.item()) / max(abs(ref_loss.item()), 1e-30),
                grad_rel_worst=worst, grad_worst_param=wname, grad_rel_l2=math.sqrt(num / max(den, 1e-300)))


def predicted(cfg, variant, prompt_len, comps, group, stats=None):
    """The memory model's peak; for replay, with the LM head the measured call ran (stats['lm_head_chunked']).
    None for a variant the model does not cover (the peers)."""
    if variant not in memory.VARIANTS:
        return None
    lm_head = "plain" if (stats is not None and not stats.get("lm_head_chunked")) else "chunked"
    return memory.predict_peak_bytes(cfg, group, prompt_len, comps, dtype=torch.float32, variant=variant,
                                     lm_head=lm_head)


def _note(stats):
    if stats is None:
        return ""
    if not stats.get("applied"):
        return f"NOT PACKED: {stats.get('fallback_reason')}"
    return ("chunked LM head" if stats.get("lm_head_chunked") else "plain LM head") + (
        f", shared_no_grad={stats['shared_no_grad']}" if stats.get("shared_no_grad") is not None else "")


def reps_for(length, base):
    return base if length <= 4096 else max(1, base - 1) if length <= 16384 else max(1, base - 2)


def sweep(args, cfg, results):
    name = args.model
    V = cfg.vocab_size
    torch.manual_seed(0)
    model = build_model(name)
    lim = args.max_gb * 2**30
    fns = {v: make_variant(v) for v in args.variants}
    seen_recompiles = {}
    log(f"# warm-up (compiles the replay variants: two short steps each)")
    for v, fn in fns.items():
        t0 = time.perf_counter()
        warm_up(fn, model, args.group, args.cmin, args.cmax, V)
        log(f"#   {v}: {time.perf_counter() - t0:.1f} s")
    for length in args.lengths:
        mid_comps = [(args.cmin + args.cmax) // 2] * args.group
        worst = [args.cmax] * args.group
        run = []
        for v in args.variants:
            need = predicted(cfg, v, length + 29, worst, args.group)
            if need is not None and need > lim:
                log(f"{length:>6} {v:<14} skipped: needs {need / 2**30:.1f} GB (predicted peak, worst case of the "
                    f"lengths drawn) > --max-gb {args.max_gb:g}")
                results["skipped"].append(dict(prompt_len=length, variant=v, predicted_bytes=need))
            else:
                run.append(v)
        entry = dict(prompt_len=length, variants={}, checks={})
        results["lengths"].append(entry)
        # exactness once per length, against eager_rows (fp32), on a batch of its own
        check = step_batch(args.group, length, args.cmin, args.cmax, V, k=10_000 + length)
        ref_loss = ref = None
        if "eager_rows" in run:
            ref_loss = run_step(fns["eager_rows"], model, check)
            ref = grads_of(model)
        for v in run:
            before = replay_call()
            t0 = time.perf_counter()
            try:
                loss = run_step(fns[v], model, check)
            except Exception as e:  # noqa: BLE001 - report it, do not stop the sweep
                log(f"{length:>6} {v:<14} error in the check step: {type(e).__name__}: {e}")
                entry["checks"][v] = dict(error=f"{type(e).__name__}: {e}")
                continue
            dt = time.perf_counter() - t0
            st = fresh_stats(before) if v.startswith("replay") else None
            c = compare(grads_of(model), ref, loss, ref_loss) if ref is not None and v != "eager_rows" else {}
            c["check_step_s"] = dt
            if st is not None:
                c["stats"] = {k: st[k] for k in ("applied", "tokens_in", "tokens_computed", "fallback_reason",
                                                 "recompiles", "mode", "attention")}
            elif v.startswith("replay"):
                c["stats"] = None
            entry["checks"][v] = c
            if c.get("loss_rel") is not None:
                log(f"{length:>6} {v:<14} check vs eager_rows: loss rel {c['loss_rel']:.1e}, grad rel L2 "
                    f"{c['grad_rel_l2']:.1e}, worst parameter {c['grad_rel_worst']:.1e} ({c['grad_worst_param']})"
                    + (" [approximation: reported, not asserted]" if v == "replay_detach" else ""))
            if v.startswith("replay"):
                s = c["stats"]
                if s is None:
                    log(f"{length:>6} {v:<14} replay stats: none recorded for this call (Dynamo ran it without "
                        f"the backend?)")
                else:
                    log(f"{length:>6} {v:<14} replay stats: applied={s['applied']}, tokens_in={s['tokens_in']}, "
                        f"tokens_computed={s['tokens_computed']}, recompiles={s['recompiles']}, "
                        f"attention={s['attention']}" + (f", reason={s['fallback_reason']!r}"
                                                         if not s['applied'] else ""))
        timed = [v for v in run if "error" not in entry["checks"].get(v, {})]
        times = {v: [] for v in timed}
        declined = {v: [] for v in timed}
        reps = reps_for(length, args.reps)
        shapes = []
        for rep in range(reps):
            batch = step_batch(args.group, length, args.cmin, args.cmax, V, k=100 * length + rep)
            shapes.append(batch_shape(batch))
            for v in timed:
                gc.collect()
                before = replay_call()
                t0 = time.perf_counter()
                run_step(fns[v], model, batch)
                dt = time.perf_counter() - t0
                if v.startswith("replay"):
                    st = fresh_stats(before)
                    if st is None or not st["applied"]:
                        why = st["fallback_reason"] if st else "no stats recorded (ran without the backend)"
                        declined[v].append(why)
                        log(f"{length:>6} {v:<14} rep {rep + 1}/{reps}: {dt:.2f} s NOT PACKED ({why}); not "
                            f"counted as {v}")
                        continue
                    if st["recompiles"] != seen_recompiles.get(v, st["recompiles"]):
                        log(f"{length:>6} {v:<14} rep {rep + 1}/{reps}: RECOMPILED (recompiles now "
                            f"{st['recompiles']}; the static first graph and its dynamic successor count 1)")
                    seen_recompiles[v] = st["recompiles"]
                times[v].append(dt)
                log(f"{length:>6} {v:<14} rep {rep + 1}/{reps} (T={batch[0].shape[1]}): {dt:.2f} s")
        p_act, comps = shapes[0] if shapes else (length, mid_comps)
        from replaycompile.runtime.plan import build_plan
        ids, am = check[0], check[1]
        cp, ccomps = batch_shape(check)
        head_rows = int(build_plan(ids, am).select_columns(cp - 1, -1)[0].numel())
        f_rows = flops(cfg, "eager_rows", cp, ccomps)
        tok_in = int(am.sum())
        uniq = cp + sum(ccomps)
        med_rows = statistics.median(times["eager_rows"]) if times.get("eager_rows") else None
        log(f"{length:>6} ideal: tokens in {tok_in}, unique {uniq}: token ratio {tok_in / uniq:.2f}x (padded "
            f"B x T {ids.numel()}: {ids.numel() / uniq:.2f}x); FLOP ideal vs eager_rows: " + ", ".join(
                f"{v} {f_rows / flops(cfg, v, cp, ccomps, head_rows):.2f}x" for v in VARIANTS))
        for v in timed:
            med = statistics.median(times[v]) if times[v] else None
            ratio = (med_rows / med) if (med and med_rows) else None
            entry["variants"][v] = dict(step_s=med, times=times[v], vs_eager_rows=ratio, declined=declined[v],
                                        flop_ideal_vs_rows=f_rows / flops(cfg, v, cp, ccomps, head_rows))
            log(f"{length:>6} {v:<14} step {'-' if med is None else f'{med:.2f}'} s (median of {len(times[v])})"
                + (f", {ratio:.2f}x vs eager_rows (FLOP ideal {entry['variants'][v]['flop_ideal_vs_rows']:.2f}x)"
                   if ratio else ""))
        entry.update(tokens_in=tok_in, unique_tokens=uniq, head_rows=head_rows, token_ratio=tok_in / uniq)
        # memory: a subprocess per variant
        for v in (run if args.memory else []):
            rep = run_measure(v, length, name, args, abort_gb=args.max_gb, timeout=args.probe_timeout)
            entry["variants"].setdefault(v, {})["memory"] = rep
            if rep.get("ok"):
                pred = predicted(cfg, v, rep["actual_prompt_len"], rep["completions"], args.group, rep.get("stats"))
                rep["predicted_bytes"] = pred
                st = rep.get("stats")
                if pred is None:
                    log(f"{length:>6} {v:<14} peak heap {rep['peak_bytes'] / 2**20:.0f} MB (no memory model for "
                        f"this peer), step {rep['step_s']:.2f} s in its own process")
                    continue
                err = 100 * (pred - rep["peak_bytes"]) / rep["peak_bytes"]
                rep["pred_err_pct"] = err
                results["points"].append(dict(model=name, variant=v, prompt_len=rep["actual_prompt_len"],
                                              measured=rep["peak_bytes"], predicted=pred, err_pct=err,
                                              note=_note(rep.get("stats"))))
                log(f"{length:>6} {v:<14} peak heap {rep['peak_bytes'] / 2**20:.0f} MB (predicted "
                    f"{pred / 2**20:.0f} MB, {err:+.0f}%), step {rep['step_s']:.2f} s in its own process"
                    + (f"; stats applied={st['applied']} tokens_in={st['tokens_in']} tokens_computed="
                       f"{st['tokens_computed']}" if st else ""))
            else:
                log(f"{length:>6} {v:<14} memory: not measured ({rep.get('error')})")


def budget_search(args, results):
    name = args.budget_model
    cfg = model_config(name)
    budget = args.budget_gb * 2**30
    log(f"# budget search: longest prompt at G={args.group} whose step stays within {args.budget_gb:g} GiB of peak "
        f"heap (measured as above, one subprocess per probe), model {name!r} {MODELS[name]}, fp32; doubling from "
        f"{args.budget_start} then bisection to {args.budget_resolution} tokens, at most {args.budget_max} tokens "
        f"(beyond it time, not memory, binds on this CPU), {args.probe_timeout:.0f} s per probe")
    out = {}
    for v in args.budget_variants:
        pred_max = memory.max_prompt_len(cfg, args.group, [args.cmax] * args.group, budget, torch.float32, v,
                                         hi=args.budget_max,
                                         lm_head=os.environ.get("REPLAY_BENCH_LM_HEAD", "auto"))
        probes = []

        def fits(p):
            rep = run_measure(v, p, name, args, abort_gb=args.budget_gb, timeout=args.probe_timeout)
            ok = bool(rep.get("ok")) and rep["peak_bytes"] <= budget
            why = ("fits" if ok else "does not fit: " + (
                f"peak {rep['peak_bytes'] / 2**30:.2f} GiB > budget" if rep.get("peak_bytes") else rep.get("error")))
            if rep.get("timed_out"):
                why = f"timed out ({rep['error']}): time binds here"
            pk = rep.get("peak_bytes")
            if rep.get("ok"):
                pr = predicted(cfg, v, rep["actual_prompt_len"], rep["completions"], args.group, rep.get("stats"))
                rep["predicted_bytes"] = pr
                results["points"].append(dict(model=name, variant=v, prompt_len=rep["actual_prompt_len"],
                                              measured=pk, predicted=pr, err_pct=100 * (pr - pk) / pk,
                                              note=_note(rep.get("stats"))))
            probes.append(dict(prompt_len=p, fits=ok, why=why, peak_bytes=pk, timed_out=bool(rep.get("timed_out")),
                               step_s=rep.get("step_s"), wall_s=rep.get("wall_s"), stats=rep.get("stats")))
            log(f"budget {v:<14} prompt {p:>7}: {why}" + (f" (peak {pk / 2**30:.2f} GiB, predicted "
                                                           f"{rep['predicted_bytes'] / 2**30:.2f} GiB)"
                                                           if rep.get("ok") else "")
                + (f", step {rep['step_s']:.1f} s" if rep.get("step_s") else "")
                + (f", stats applied={rep['stats']['applied']}" if rep.get("stats") else ""))
            return ok, bool(rep.get("timed_out"))

        lo, hi, p, time_bound = 0, None, args.budget_start, False
        while p <= args.budget_max:
            ok, to = fits(p)
            if ok:
                lo = p
                p *= 2
            else:
                hi, time_bound = p, to
                break
        if hi is not None and not time_bound:
            while hi - lo > max(args.budget_resolution, lo // 8):
                mid = (lo + hi) // 2
                ok, to = fits(mid)
                if to:
                    time_bound = True
                    break
                lo, hi = (mid, hi) if ok else (lo, mid)
        verdict = (f">= {lo} (the search cap {args.budget_max})" if hi is None else
                   f"{lo} (time bound: a probe at {hi} timed out)" if time_bound else
                   f"{lo} (does not fit at {hi})" if lo else f"none (does not fit at {hi})")
        out[v] = dict(longest=lo, first_fail=hi, time_bound=time_bound, capped=hi is None, probes=probes,
                      predicted_longest=pred_max, verdict=verdict)
        log(f"budget {v:<14} longest prompt within {args.budget_gb:g} GiB: {verdict}; memory model predicts "
            f"{pred_max}")
    results["budget"] = dict(model=name, config=MODELS[name], budget_bytes=budget, variants=out)


# -------------------------------------------------------------------------------------------------- output

def plots(results, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for v in VARIANTS:
        xs, ts, ms, ps = [], [], [], []
        for e in results["lengths"]:
            d = e["variants"].get(v)
            if not d:
                continue
            if d.get("step_s"):
                xs.append(e["prompt_len"])
                ts.append(d["step_s"])
            mem = d.get("memory") or {}
            if mem.get("ok"):
                pred = mem.get("predicted_bytes")
                ms.append((mem["actual_prompt_len"], mem["peak_bytes"] / 2**30, pred / 2**30 if pred else None))
        if xs:
            axes[0].plot(xs, ts, "o-", label=v)
        if ms:
            line, = axes[1].plot([m[0] for m in ms], [m[1] for m in ms], "o-", label=f"{v} (measured)")
            if all(m[2] is not None for m in ms):
                axes[1].plot([m[0] for m in ms], [m[2] for m in ms], "--", color=line.get_color(), alpha=0.6,
                             label=f"{v} (memory model)")
    cfg = results["config"]
    for ax, title, yl in ((axes[0], "step time (median)", "seconds"),
                          (axes[1], "peak heap during the step", "GiB")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("prompt length (tokens)")
        ax.set_ylabel(yl)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"GRPO step, G={results['group']}, completions {results['cmin']}-{results['cmax']}, Qwen3-shaped "
                 f"h={cfg['hidden_size']} L={cfg['num_hidden_layers']} V={cfg['vocab_size']}, fp32, CPU",
                 fontsize=9)
    fig.tight_layout()
    paths = [outdir / "long_context_time_memory.png"]
    fig.savefig(paths[0], dpi=110)
    plt.close(fig)
    b = results.get("budget")
    if b:
        fig, ax = plt.subplots(figsize=(6.5, 4))
        names = list(b["variants"])
        vals = [max(b["variants"][n]["longest"], 1) for n in names]
        bars = ax.bar(names, vals)
        for bar, n in zip(bars, names):
            ax.text(bar.get_x() + bar.get_width() / 2, bar.get_height(), b["variants"][n]["verdict"].split(" (")[0]
                    + ("+" if b["variants"][n]["capped"] else ""), ha="center", va="bottom", fontsize=8)
        ax.set_yscale("log", base=2)
        ax.set_ylabel("longest prompt (tokens)")
        ax.set_title(f"longest prompt at G={results['group']} within {b['budget_bytes'] / 2**30:g} GiB "
                     f"(h={b['config']['hidden_size']}, L={b['config']['num_hidden_layers']})", fontsize=9)
        fig.tight_layout()
        paths.append(outdir / "long_context_budget.png")
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
    return paths


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run: tiny lengths, model and budget")
    ap.add_argument("--lengths", type=int, nargs="+", default=None,
                    help="prompt lengths (default 1024 4096 8192 16384 32768; add 65536 if you have the time)")
    ap.add_argument("--variants", nargs="+", default=[v for v in VARIANTS if v not in CHECKPOINTED],
                    choices=VARIANTS, help="the checkpointed variants (eager_rows_ckpt, replay_ckpt) on request")
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--cmin", type=int, default=None, help="shortest completion (default 256)")
    ap.add_argument("--cmax", type=int, default=None, help="longest completion (default 512)")
    ap.add_argument("--model", default=None, choices=sorted(MODELS), help="model of the sweep (default small)")
    ap.add_argument("--reps", type=int, default=3, help="timed steps per length up to 4K (one fewer to 16K, two "
                    "fewer beyond, at least 1)")
    ap.add_argument("--max-gb", type=float, default=6.0,
                    help="a variant whose predicted peak passes this is skipped, and a memory subprocess that "
                         "passes it stops itself (a safety cap on a shared machine)")
    ap.add_argument("--no-memory", dest="memory", action="store_false", help="skip the memory subprocesses")
    ap.add_argument("--no-budget", dest="budget", action="store_false", help="skip the budget search")
    ap.add_argument("--budget-gb", type=float, default=None, help="memory budget of the search (default 1 GiB)")
    ap.add_argument("--budget-model", default=None, choices=sorted(MODELS))
    ap.add_argument("--budget-variants", nargs="+", default=list(BUDGET_VARIANTS), choices=memory.VARIANTS,
                    help="variants the memory model covers (its prediction is printed beside every probe)")
    ap.add_argument("--budget-start", type=int, default=None)
    ap.add_argument("--budget-max", type=int, default=None)
    ap.add_argument("--budget-resolution", type=int, default=None)
    ap.add_argument("--probe-timeout", type=float, default=None, help="seconds per subprocess")
    ap.add_argument("--out", default=str(HERE / "out"))
    ap.add_argument("--measure", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--abort-gb", type=float, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--lm-head", default=None, choices=["auto", "chunked", "plain"],
                    help="the replay variants' lm_head option (default auto; memory-bound runs take chunked)")
    args = ap.parse_args(argv)
    if args.lm_head:  # through the environment, so the measuring subprocesses take it too
        os.environ["REPLAY_BENCH_LM_HEAD"] = args.lm_head
    q = args.quick
    args.model = args.model or ("quick" if q else "small")
    args.cmin = args.cmin or (32 if q else 256)
    args.cmax = args.cmax or (64 if q else 512)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    if args.measure:
        return measure_main(args)
    args.lengths = args.lengths or ([256, 1024] if q else [1024, 4096, 8192, 16384, 32768])
    args.budget_gb = args.budget_gb or (0.25 if q else 1.0)
    args.budget_model = args.budget_model or ("quick_budget" if q else "budget")
    args.budget_start = args.budget_start or (256 if q else 1024)
    args.budget_max = args.budget_max or (2048 if q else 16384)
    args.budget_resolution = args.budget_resolution or (512 if q else 1024)
    args.probe_timeout = args.probe_timeout or (400.0 if q else 600.0)  # a replay subprocess compiles first
    outdir = pathlib.Path(args.out)
    outdir.mkdir(parents=True, exist_ok=True)
    cfg = model_config(args.model)
    t_start = time.perf_counter()
    log(f"# long-context GRPO step: Qwen3-shaped {MODELS[args.model]} ({args.model!r}), fp32, G={args.group}, "
        f"prompts {args.lengths} (+0..28 tokens per step), completions {args.cmin}-{args.cmax} random per row; "
        f"replay lm_head={os.environ.get('REPLAY_BENCH_LM_HEAD', 'auto')}; "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU")
    log("# step = forward + GRPO loss (clipped ratio vs stored old log-probs) + backward; time: median over "
        "interleaved reps, a new batch and T every step; check: loss and every parameter gradient vs eager_rows")
    log("# memory: per (variant, length) a subprocess of its own; peak = high-water mark of glibc malloc's "
        "in-use bytes (mallinfo2 arenas + mmapped chunks, sampled every 0.5 ms) during one step above its start "
        "(batch and weights excluded, parameter gradients included); 'predicted' = replaycompile.planning.memory")
    results = dict(config=MODELS[args.model], model=args.model, group=args.group, cmin=args.cmin, cmax=args.cmax,
                   lengths=[], skipped=[], points=[], torch=torch.__version__)
    sweep(args, cfg, results)
    if args.budget:
        budget_search(args, results)
    if results["points"]:
        log("")
        log("| model | variant | prompt | measured MB | predicted MB | error | replay ran |")
        log("|---|---|---|---|---|---|---|")
        for pt in results["points"]:
            log(f"| {pt['model']} | {pt['variant']} | {pt['prompt_len']} | {pt['measured'] / 2**20:.0f} | "
                f"{pt['predicted'] / 2**20:.0f} | {pt['err_pct']:+.0f}% | {pt.get('note', '')} |")
        worst = max(abs(pt["err_pct"]) for pt in results["points"])
        log(f"# memory model: worst |error| {worst:.0f}% over {len(results['points'])} measured points")
    log("")
    log(memory.longstraw_headline_line())
    results["longstraw"] = memory.longstraw_headline()
    results["wall_s"] = time.perf_counter() - t_start
    js = outdir / ("long_context_quick.json" if q else "long_context.json")
    js.write_text(json.dumps(results, indent=1, default=str))
    for p in plots(results, outdir):
        log(f"# wrote {p}")
    log(f"# wrote {js}; total {results['wall_s'] / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
