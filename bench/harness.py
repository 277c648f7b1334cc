"""``replaycompile bench``: every workload and every system of the GRPO step, side by side in one process.

A system is a small adapter: a function that builds a step ``(model, batch) -> loss`` (forward, GRPO loss,
backward) or says why it cannot run here. A workload is a batch maker: G rows of one prompt (or a two-level tree,
or no sharing at all), a new padded length T every step. Per workload the systems run interleaved (the order
rotates every rep) on the same fresh batch, and the harness reports medians, ratios to every baseline, the token
and FLOP ideal, efficiency (measured speedup / FLOP-ideal speedup over eager ``logits_to_keep``), the peak heap
of the step (in process, and per system in a subprocess of its own where asked), the first call's time
(compilation) and the graphs Dynamo compiled during the timed steps (recompiles).

Results are appended to ``results.jsonl`` in the output folder, one line per (model, workload, system); a rerun
skips what is there, so an interrupted run resumes. JSON, markdown and PNG plots are rewritten from it at the end.

    replaycompile bench                          # reference row + two-level tree + no sharing + a short grid
    replaycompile bench --quick                  # tiny shapes, aot_eager, seconds (what the test runs)
    replaycompile bench --workloads reference tree --systems eager_keep replay_exact prefix_grouper
    replaycompile bench --workloads grid         # the whole grid G {4,8,16} x prompt {512,2K,8K} x response {128,512}
    replaycompile bench --device cuda --out $OUT # the GPU profile (FlexAttention, Triton kernels); --dry-run: plan
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import gc
import inspect
import json
import math
import os
import pathlib
import platform
import resource
import statistics
import subprocess
import sys
import textwrap
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
from replaycompile.testing.models import tiny_config, tiny_model  # noqa: E402

import long_context as lc  # noqa: E402
import peers  # noqa: E402
from common import PeakHeap, grpo_loss_from_logp, mlp_macs, model_variant, reference_config  # noqa: E402

MAX_POS = 1 << 16


# ------------------------------------------------------------------------------------------------ models

@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """A model the harness can build: a transformers family and its config, full-size and for --quick."""
    family: str
    config: dict
    quick_config: dict
    note: str = ""


MODELS: dict[str, ModelSpec] = {}


def register_model(name: str, spec: ModelSpec) -> None:
    """Add a ``--model`` choice: a family ``tiny_model`` builds and the config fields it needs (the replay systems
    decline, and say why, where the backend does not pack it)."""
    MODELS[name] = spec


register_model("qwen3", ModelSpec("qwen3", reference_config(False)[0], reference_config(True)[0],
                                  "the reference: Qwen3-shaped, hidden 256, 4 layers, vocab 32000"))


def _register_variant(name: str, note: str):
    # the reference shape in another family (common.model_variant); the window is a quarter of the reference
    # prompt (256 tokens; --quick: 12 of the quick workloads' 48)
    full = model_variant(name, reference_config(False)[0], 1024)
    quick = model_variant(name, reference_config(True)[0], 48)
    assert full[0] == quick[0]
    register_model(name, ModelSpec(full[0], full[1], quick[1], note))


_register_variant("qwen3_moe", "HF Qwen3-MoE at the reference shape: 8 experts, top-2, experts half as wide "
                               "(a token's active MLP FLOPs equal the dense model's)")
_register_variant("mistral_window", "HF Mistral at the reference shape, a sliding window of 256 tokens in every "
                                    "layer (a quarter of the reference prompt)")


def build_model(name: str, quick: bool, device: str):
    spec = MODELS[name]
    cfg = spec.quick_config if quick else spec.config
    torch.manual_seed(0)
    model = tiny_model(spec.family, max_position_embeddings=MAX_POS, **cfg).to(device)
    return model, tiny_config(spec.family, max_position_embeddings=MAX_POS, **cfg)


# --------------------------------------------------------------------------------------------- workloads

@dataclasses.dataclass(frozen=True)
class Workload:
    """G rows of one prompt; completions of cmin..cmax tokens (random per row). ``kind``: "prompt" (the rows share
    the prompt), "tree" (besides, the first half of the rows share a response stem of ``stem`` tokens; the other
    half have responses of their own of the same length), "tree2" (each half of the rows shares a stem of its own:
    every row sits in a two-level tree, prompt then stem, as in tree rollouts that branch twice), "none" (every
    row its own prompt: nothing shared)."""
    name: str
    group: int
    prompt: int
    cmin: int
    cmax: int
    kind: str = "prompt"
    stem: int = 0

    def batch(self, vocab: int, k: int, device: str = "cpu"):
        """The k-th step's batch (ids, attention mask, advantages, old log-probs): the prompt moves by a few
        tokens and the completions are redrawn, so T is new every step. Old log-probs stand for the rollout
        engine's: log(1/V) + 0.1 N(0, 1), so the clipped ratio and the loss depend on the logits."""
        g = torch.Generator().manual_seed(10_000 + k)
        p = self.prompt + (7 * k) % 29
        G = self.group
        tails = torch.randint(self.cmin, self.cmax + 1, (G,), generator=g).tolist()
        c = self.stem + max(tails)
        ids = torch.zeros(G, p + c, dtype=torch.long)
        am = torch.zeros_like(ids)
        prompt = torch.randint(3, vocab, (p,), generator=g)
        stem = torch.randint(3, vocab, (self.stem,), generator=g)
        stem2 = torch.randint(3, vocab, (self.stem,), generator=g)
        for i, n in enumerate(tails):
            ids[i, :p] = prompt if self.kind != "none" else torch.randint(3, vocab, (p,), generator=g)
            if self.kind in ("tree", "tree2") and i < G // 2:
                own_stem = stem
            elif self.kind == "tree2":
                own_stem = stem2
            else:
                own_stem = torch.randint(3, vocab, (self.stem,), generator=g)
            ids[i, p:p + self.stem] = own_stem
            ids[i, p + self.stem:p + self.stem + n] = torch.randint(3, vocab, (n,), generator=g)
            am[i, :p + self.stem + n] = 1
        adv = torch.randn(G, generator=g)
        old = -math.log(vocab) + 0.1 * torch.randn(G, c, generator=g)
        return tuple(t.to(device) for t in (ids, am, adv, old))

    def describe(self) -> str:
        what = {"prompt": "rows share the prompt", "none": "no sharing (a prompt per row)",
                "tree": f"two-level tree: half the rows share a {self.stem}-token response stem",
                "tree2": f"two-level tree: each half of the rows shares a {self.stem}-token response stem of its "
                         "own"}[self.kind]
        return (f"G={self.group}, prompt {self.prompt}, completions {self.stem + self.cmin}-{self.stem + self.cmax}"
                f", {what}")


def _grid():
    out = {}
    for G in (4, 8, 16):
        for P in (512, 2048, 8192):
            for R in (128, 512):
                name = f"G{G}-p{P // 1024}K-r{R}" if P >= 1024 else f"G{G}-p{P}-r{R}"
                out[name] = Workload(name, G, P, R // 2, R)
    return out


GRID = _grid()
WORKLOADS = {
    "reference": Workload("reference", 8, 1024, 64, 128),
    "tree": Workload("tree", 8, 1024, 64, 128, kind="tree", stem=512),
    "tree2": Workload("tree2", 8, 1024, 64, 128, kind="tree2", stem=512),
    "nosharing": Workload("nosharing", 8, 1024, 64, 128, kind="none"),
    **GRID,
}
QUICK_WORKLOADS = {
    "reference": Workload("reference", 4, 48, 6, 12),
    "tree": Workload("tree", 4, 48, 4, 8, kind="tree", stem=16),
    "tree2": Workload("tree2", 4, 48, 4, 8, kind="tree2", stem=16),
    "nosharing": Workload("nosharing", 4, 48, 6, 12, kind="none"),
}
GROUPS = {
    # the default: the reference row, the tree, no sharing, step time against G at 2K, and the 8K point
    "default": ["reference", "tree", "tree2", "nosharing", "G4-p2K-r128", "G8-p2K-r128", "G16-p2K-r128", "G8-p8K-r128"],
    "grid": list(GRID),
    "all": ["reference", "tree", "tree2", "nosharing", *GRID],
}


def select_workloads(names, quick: bool):
    table = QUICK_WORKLOADS if quick else WORKLOADS
    out = []
    for n in names or (["reference", "tree", "nosharing"] if quick else ["default"]):
        for m in GROUPS.get(n, [n]):
            if m not in table:
                raise SystemExit(f"unknown workload {m!r}; workloads: {sorted(table)} or groups {sorted(GROUPS)}")
            if table[m] not in out:
                out.append(table[m])
    return out


# ----------------------------------------------------------------------------------------------- systems

class Skip(Exception):
    """A system that cannot run a workload here; the message says why (printed and recorded)."""


def code_lines(*objs) -> int:
    """Lines of code (no docstrings, comments or blank lines) of the functions a user writes to adopt a system."""
    n = 0
    for o in objs:
        tree = ast.parse(textwrap.dedent(inspect.getsource(o)))
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                    and isinstance(getattr(body[0], "value", None), ast.Constant)
                    and isinstance(body[0].value.value, str)):
                body.pop(0)
                if not body:
                    body.append(ast.Pass())
        n += sum(1 for ln in ast.unparse(tree).splitlines() if ln.strip())
    return n


def _compiled(fn, name, backend, options=None):
    # a code object per system: Dynamo caches per code object, and two compiled systems would otherwise evict
    # each other's entries (and count as recompiles)
    kw = dict(backend=backend, dynamic=None)
    if options:
        kw["options"] = options
    return torch.compile(lc._fresh(fn, name), **kw)


def _with_backward(fn):
    def run(model, batch):
        loss = fn(model, *batch)
        loss.backward()
        return loss.detach()
    return run


def _packed_tree_step(attention):
    def step(model, batch):
        ids, am, adv, old = batch
        p = ids.shape[1] - old.shape[1]
        logp = peers.packed_tree_logp(model, ids, am, p, attention)
        loss = grpo_loss_from_logp(logp, old, adv, am[:, p:].float())
        loss.backward()
        return loss.detach()
    return step


def _padded_fits(ctx, w, variant):
    """Skip a padded-batch baseline whose predicted peak passes the cap (replaycompile.planning.memory's model)."""
    comps = [w.stem + w.cmax] * w.group
    pred = memory.predict_peak_bytes(ctx.cfg, w.group, w.prompt, comps, variant=variant)
    if pred > ctx.max_bytes:
        raise Skip(f"predicted peak {pred / 2**30:.1f} GiB (replaycompile.planning.memory) passes the --max-gb cap "
                   f"{ctx.max_bytes / 2**30:.1f} GiB")


@dataclasses.dataclass
class System:
    name: str
    label: str
    build: callable  # (ctx) -> step(model, batch) -> loss
    check: callable = None  # (ctx, workload) -> None, or raise Skip
    user_lines: callable = None  # () -> lines of code a user writes to adopt it
    compiled: bool = False
    exact: bool = True


def _need_prefix(ctx, w):
    import importlib.util
    if importlib.util.find_spec("prefix_grouper") is None:
        raise Skip("prefix_grouper is not installed (pip install -e '.[bench]')")
    if w.kind == "none":
        raise Skip("Prefix Grouper needs rows that share a prompt; this batch shares nothing")


def _need_cuda(ctx, w):
    if ctx.device != "cuda":
        raise Skip("FlexAttention has no CPU backward in torch 2.13: GPU runs only (--device cuda)")


def _dense_fits(ctx, w):
    n = w.prompt + 28 + w.group * (w.stem + w.cmax)
    b = ctx.cfg.num_hidden_layers * n * n * (1 + 4)  # bool mask + the float mask SDPA makes of it per layer
    if b > ctx.max_bytes:
        raise Skip(f"the dense [N, N] mask alone (N ~ {n}) needs ~{b / 2**30:.1f} GiB over the layers: passes "
                   f"the --max-gb cap")


SYSTEMS = {s.name: s for s in [
    System("eager", "eager (full logits, as written)", lambda ctx: _with_backward(lc._loss_full),
           lambda ctx, w: _padded_fits(ctx, w, "eager"), lambda: 0),
    System("eager_keep", "eager logits_to_keep (TRL baseline)", lambda ctx: _with_backward(lc._loss_keep),
           lambda ctx, w: _padded_fits(ctx, w, "eager_keep"), lambda: 1),
    System("eager_rows", "eager row by row (unpadded, logits_to_keep)", lambda ctx: lc.make_variant("eager_rows"),
           None, lambda: code_lines(lc._rows_step)),
    System("inductor", "plain inductor", lambda ctx: _with_backward(
        _compiled(lc._loss_full, "step_inductor", ctx.plain_backend)),
           lambda ctx, w: _padded_fits(ctx, w, "eager"), lambda: 1, compiled=True),
    System("replay_exact", "replay exact", lambda ctx: _with_backward(
        _compiled(lc._loss_full, "step_replay", "replay", {"inner": ctx.inner})), None, lambda: 1, compiled=True),
    System("replay_detach", "replay detach_prefix (approximate)", lambda ctx: _with_backward(
        _compiled(lc._loss_full, "step_replay_detach", "replay", {"inner": ctx.inner, "mode": "detach_prefix"})),
           None, lambda: 1, compiled=True, exact=False),
    System("prefix_grouper", "Prefix Grouper (PyPI, its best CPU setup)", lambda ctx: lc.make_variant(
        "prefix_grouper"), _need_prefix, lambda: code_lines(
            peers._sdpa_for_prefix_grouper, peers._attention, peers.use_prefix_grouper, peers.use_attention,
            peers.prefix_grouper_logp)),
    System("dense_tree_mask", "packed tree, dense [N,N] mask via SDPA", lambda ctx: _packed_tree_step("dense"),
           _dense_fits, lambda: code_lines(peers._dense_tree_attention, peers.use_attention,
                                           peers.packed_tree_logp) - 5),
    System("flex_tree", "packed tree, FlexAttention BlockMask", lambda ctx: _packed_tree_step("flex"), _need_cuda,
           lambda: code_lines(peers._flex_tree_attention, peers.tree_visibility, peers.use_attention,
                              peers.packed_tree_logp) - 5, compiled=True),
]}
BASELINES = ("eager", "eager_keep", "inductor", "prefix_grouper")


@dataclasses.dataclass
class Context:
    device: str
    cfg: object
    max_bytes: float
    inner: str
    plain_backend: str
    built: dict = dataclasses.field(default_factory=dict)

    def step(self, system):
        """The system's step, built once per process: a compiled system built per workload would compile anew
        (a new code object) where Dynamo's dynamic shapes would have reused the graph."""
        if system.name not in self.built:
            self.built[system.name] = system.build(self)
        return self.built[system.name]


# ------------------------------------------------------------------------------------------- FLOP model

def flop_counts(cfg, batch, head_rows_replay: int | None = None) -> dict:
    """Forward+backward FLOPs (backward = 2x forward) of one step, per way of computing it.

    per token      f_tok  = L * 2 * (h*qd + 2*h*kd + qd*h + mlp)        (q, k, v, o, the MLP's active part)
                   mlp    = 3*h*ff (dense), or top_k*3*h*ff_expert + h*experts (a sparse MoE layer: the experts
                            a token is routed to, and the router)
    per pair       f_pair = L * 4 * qd                                   (QK^T and PV per visible (q, k))
    LM head        2 * h * V per projected row
    padded (eager_keep): B*T tokens, B*T*T pairs (the [B, 1, T, T] mask is applied to every pair), B*(C+1) rows
    rows:          sum n_i tokens, sum n_i^2/2 pairs, sum (c_i + 1) rows
    ideal (tree):  the N_u distinct tokens, each seeing its depth + 1 keys (its ancestors), head on the distinct
                   rows of the loss's slice; in the last layer only those rows' tokens run their queries, attention
                   and MLP, the others only their keys and values (what replay computes; the minimum for an exact
                   step)
    A sliding window W caps a query's keys at W (rows, Prefix Grouper and the ideal; the padded baselines still
    compute every pair)."""
    from replaycompile.runtime.plan import build_plan

    ids, am, _, old = batch
    ids, am = ids.cpu(), am.cpu()
    h, L, V = cfg.hidden_size, cfg.num_hidden_layers, cfg.vocab_size
    qd, kd = cfg.num_attention_heads * cfg.head_dim, cfg.num_key_value_heads * cfg.head_dim
    f_tok = sum(2 * (h * qd + 2 * h * kd + qd * h + mlp_macs(cfg, i)) for i in range(L))
    f_pair = L * 4 * qd
    W = getattr(cfg, "sliding_window", None)
    if W is not None and getattr(cfg, "use_sliding_window", True) is False:
        W = None

    def pairs(a, b):
        # a query at position p sees min(p, W) keys (the continuous count, as x^2/2 is without a window): the
        # pairs of the queries at positions a..b of one row
        def upto(x):
            return x * x / 2 if W is None or x <= W else W * W / 2 + (x - W) * W
        return upto(b) - upto(a)
    B, T = ids.shape
    C = old.shape[1]
    P = T - C
    n = am.sum(1).tolist()
    plan = build_plan(ids, am)
    selected = plan.select_columns(P - 1, T - 1)[0]
    head = head_rows_replay if head_rows_replay is not None else int(selected.numel())
    nu = plan.num_packed
    seen = plan.columns.double() + 1 if W is None else (plan.columns.double() + 1).clamp_max(W)
    tree_pairs = float(seen.sum())
    pairs_last = float(seen[selected].sum())  # the last layer's: selected queries only
    f_layer, f_kv = f_tok / L, 2 * 2 * h * kd
    return dict(
        padded_keep=3 * (B * T * f_tok + B * T * T * f_pair + B * (C + 1) * 2 * h * V),
        padded_full=3 * (B * T * f_tok + B * T * T * f_pair + B * T * 2 * h * V),
        rows=3 * (sum(n) * f_tok + sum(pairs(0, x) for x in n) * f_pair + sum(x - P + 1 for x in n) * 2 * h * V),
        # Prefix Grouper's work: the prompt once, every row's completion on its own (it shares nothing deeper)
        prompt_shared=3 * (P * f_tok + pairs(0, P) * f_pair + sum(x - P for x in n) * f_tok
                           + sum(pairs(P, x) for x in n) * f_pair + sum(x - P + 1 for x in n) * 2 * h * V),
        ideal=3 * ((nu * (L - 1) + selected.numel()) * f_layer + (nu - selected.numel()) * f_kv
                   + (tree_pairs * (L - 1) + pairs_last) * f_pair / L + head * 2 * h * V),
        tokens_in=int(am.sum()), tokens_unique=nu, head_rows=head)


# ----------------------------------------------------------------------------------------------- running

def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def _graphs_compiled() -> int:
    from torch._dynamo.utils import counters
    return int(counters["stats"]["unique_graphs"])


def run_step(step, model, batch, device):
    for p in model.parameters():
        p.grad = None
    _sync(device)
    t0 = time.perf_counter()
    loss = step(model, batch)
    _sync(device)
    return loss, time.perf_counter() - t0


def _replay_stats(system, before):
    if not system.name.startswith("replay"):
        return None
    s = replaycompile.last_stats()
    if not s or s["call"] <= before:
        return None
    return {k: s.get(k) for k in ("applied", "fallback_reason", "tokens_in", "tokens_computed", "lm_head_chunked")}


def _peak(device):
    if device == "cuda":
        class _Cuda:
            def __enter__(self):
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                self.base = torch.cuda.memory_allocated()
                return self

            def __exit__(self, *exc):
                torch.cuda.synchronize()
                self.delta = torch.cuda.max_memory_allocated() - self.base
        return _Cuda()
    return PeakHeap()


def run_workload(w, systems, model, ctx, args, bar, emit):
    """Warm up and check every system on one batch, then the timed reps, interleaved; emit a record per system."""
    V = ctx.cfg.vocab_size
    steps, info = {}, {}
    for s in systems:
        try:
            if s.check:
                s.check(ctx, w)
            steps[s.name] = ctx.step(s)
        except Skip as e:
            info[s.name] = dict(skipped=str(e))
            bar.write(f"  {w.name:<14} {s.name:<16} skipped: {e}")
    # the check batch: every system's loss and gradients against the first eager-family system that ran
    check = w.batch(V, -1, ctx.device)
    ref = None
    for s in systems:
        if s.name not in steps:
            continue
        g0 = _graphs_compiled()
        call0 = (replaycompile.last_stats() or {}).get("call", 0)
        try:
            loss, first = run_step(steps[s.name], model, check, ctx.device)
        except (MemoryError, RuntimeError) as e:
            info[s.name] = dict(skipped=f"failed: {type(e).__name__}: {str(e)[:200]}")
            bar.write(f"  {w.name:<14} {s.name:<16} {info[s.name]['skipped']}")
            del steps[s.name]
            continue
        grads = lc.grads_of(model)
        d = dict(first_call_s=first, graphs_at_warmup=_graphs_compiled() - g0, loss=loss.item(),
                 stats=_replay_stats(s, call0))
        if ref is None and s.name in ("eager", "eager_keep", "eager_rows"):
            ref = (s.name, loss, grads)
        if ref is not None:
            d.update(lc.compare(grads, ref[2], loss, ref[1]), checked_against=ref[0])
        del grads
        # a second shape, so that Dynamo's dynamic=None marks T dynamic before the timed steps
        g1 = _graphs_compiled()
        t1 = time.perf_counter()
        run_step(steps[s.name], model, w.batch(V, -2, ctx.device), ctx.device)
        d["second_call_s"] = time.perf_counter() - t1
        d["graphs_at_warmup"] += _graphs_compiled() - g1
        info[s.name] = d
        ex = (f"loss rel {d['loss_rel']:.1e}, grad rel (worst param) {d['grad_rel_worst']:.1e} vs {ref[0]}"
              if "loss_rel" in d else "no eager reference ran")
        bar.write(f"  {w.name:<14} {s.name:<16} first call {first:.1f} s ({d['graphs_at_warmup']} graphs "
                  f"compiled); {ex}" + (f"; replay applied={d['stats']['applied']}" if d["stats"] else ""))
        gc.collect()
    flops = flop_counts(ctx.cfg, check)
    times = {n: [] for n in steps}
    peaks = {n: 0 for n in steps}
    recompiles = {n: 0 for n in steps}
    names = list(steps)
    kernel = {n: [] for n in steps}
    for rep in range(args.reps):
        batch = w.batch(V, rep, ctx.device)
        order = names[rep % max(len(names), 1):] + names[:rep % max(len(names), 1)]
        for n in order:
            gc.collect()
            g0 = _graphs_compiled()
            # timed bare: the heap sampler's thread (every 0.5 ms) slowed both replay and Prefix Grouper by a
            # third on 2 cores, so the peak is taken on a step of its own below
            ru0 = resource.getrusage(resource.RUSAGE_SELF)
            _, dt = run_step(steps[n], model, batch, ctx.device)
            ru1 = resource.getrusage(resource.RUSAGE_SELF)
            times[n].append(dt)
            kernel[n].append((ru1.ru_stime - ru0.ru_stime, ru1.ru_minflt - ru0.ru_minflt))
            recompiles[n] += _graphs_compiled() - g0
        bar.set_postfix_str(f"{w.name} rep {rep + 1}/{args.reps}")
    batch = w.batch(V, 0, ctx.device)
    for n in names:  # the in-step peak: one untimed step per system, under the sampler
        gc.collect()
        g0 = _graphs_compiled()
        with _peak(ctx.device) as pk:
            run_step(steps[n], model, batch, ctx.device)
        peaks[n] = pk.delta
        recompiles[n] += _graphs_compiled() - g0
    med = {n: statistics.median(t) for n, t in times.items() if t}
    base_name = "eager_keep" if "eager_keep" in med else "eager_rows" if "eager_rows" in med else None
    for s in systems:
        rec = dict(workload=w.name, workload_desc=w.describe(), workload_spec=dataclasses.asdict(w), system=s.name,
                   label=s.label, model=args.model, quick=args.quick, device=ctx.device, user_lines=s.user_lines(),
                   flops=flops, token_ratio=flops["tokens_in"] / flops["tokens_unique"],
                   flop_ideal_vs_keep=flops["padded_keep"] / flops["ideal"],
                   flop_ideal_vs_rows=flops["rows"] / flops["ideal"], **info.get(s.name, {}))
        if s.name in med:
            rec.update(step_s=med[s.name], times=times[s.name], peak_bytes_in_process=peaks[s.name],
                       recompiles_timed=recompiles[s.name],
                       kernel_cpu_s=statistics.median(k[0] for k in kernel[s.name]),
                       minor_faults=statistics.median(k[1] for k in kernel[s.name]))
            rec["compile_s"] = (max(0.0, rec["first_call_s"] - med[s.name]) if s.compiled else 0.0)
            for b in BASELINES + ("eager_rows",):
                if b in med:
                    rec[f"vs_{b}"] = med[b] / med[s.name]
            if base_name:
                ideal = (flops["padded_keep"] if base_name == "eager_keep" else flops["rows"]) / flops["ideal"]
                rec["efficiency"] = (med[base_name] / med[s.name]) / ideal
                rec["efficiency_baseline"] = base_name
            if args.memory_systems and s.name in args.memory_systems and w.name in args.memory_workloads:
                if ctx.device == "cuda":
                    rec["peak_bytes_subprocess"] = None
                    rec["memory_note"] = "cuda: the in-process max_memory_allocated is the measurement"
                else:
                    rep_ = measure_in_subprocess(s.name, w.name, args)
                    rec["peak_bytes_subprocess"] = rep_.get("peak_bytes")
                    rec["memory_report"] = rep_
                    bar.write(f"  {w.name:<14} {s.name:<16} peak heap in its own process: "
                              + (f"{rep_['peak_bytes'] / 2**20:.0f} MB" if rep_.get("ok") else rep_.get("error")))
        emit(rec)


# ------------------------------------------------------------------------------------------------ memory

def measure_main(args) -> int:
    """``--measure SYSTEM --workloads W``: one step's peak heap in this process after two warm-up steps; prints
    one JSON line."""
    s = SYSTEMS[args.measure]
    w = select_workloads(args.workloads, args.quick)[0]
    model, cfg = build_model(args.model, args.quick, "cpu")
    ctx = _context(args, cfg)
    rep = dict(system=s.name, workload=w.name)
    try:
        step = ctx.step(s)
        for k in (-1, -2):
            run_step(step, model, w.batch(cfg.vocab_size, k), "cpu")
        batch = w.batch(cfg.vocab_size, 0)
        for p in model.parameters():
            p.grad = None
        gc.collect()
        with PeakHeap() as pk:
            step(model, batch)
        rep.update(ok=True, peak_bytes=pk.delta)
    except (MemoryError, RuntimeError) as e:
        rep.update(ok=False, error=f"{type(e).__name__}: {str(e)[:300]}")
    print(json.dumps(rep), flush=True)
    return 0


def measure_in_subprocess(system, workload, args):
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--measure", system, "--workloads", workload,
           "--model", args.model, "--inner", args.inner, "--max-gb", str(args.max_gb)] + (
        ["--quick"] if args.quick else [])
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.measure_timeout)
    except subprocess.TimeoutExpired:
        return dict(ok=False, error=f"timed out after {args.measure_timeout:.0f} s")
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if lines:
        return json.loads(lines[-1])
    return dict(ok=False, error=f"exit {r.returncode}: {' | '.join((r.stderr or '').strip().splitlines()[-2:])}")


# ------------------------------------------------------------------------------------------------ output

def settings(device: str) -> dict:
    env = {k: os.environ.get(k) for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_ARENA_MAX",
                                          "LD_PRELOAD", "OMP_NUM_THREADS", "PYTORCH_CUDA_ALLOC_CONF",
                                          "THP_MEM_ALLOC_ENABLE")}
    out = dict(torch=torch.__version__, python=platform.python_version(), device=device,
               threads=torch.get_num_threads(), interop_threads=torch.get_num_interop_threads(),
               cpus=os.cpu_count(), allocator=("CUDA caching allocator" if device == "cuda" else "glibc malloc"),
               env=env)
    if device == "cuda":
        out["gpu"] = torch.cuda.get_device_name() if torch.cuda.is_available() else "none here (dry run)"
    try:
        out["load_avg"] = os.getloadavg()
    except OSError:
        pass
    return out


def _fmt_x(x):
    return f"{x:.2f}x" if x is not None else "-"


def _kernel(r):
    """The step's CPU time in the kernel (summed over threads) and its minor page faults: what the allocator's
    fresh pages cost a system (on CPU; a GPU's caching allocator has no such cost)."""
    if r.get("kernel_cpu_s") is None:
        return "-"
    return f"{r['kernel_cpu_s']:.2f} ({r['minor_faults'] / 1e3:.0f}K)"


def _pg_flop_ratio(r):
    """Prefix Grouper's FLOPs over replay's on the record's workload: the lead both would have at equal
    efficiency; None where it shares nothing or the record predates the count."""
    f = r["flops"]
    if "prompt_shared" not in f or r["workload_spec"]["kind"] == "none":
        return None
    return f["prompt_shared"] / f["ideal"]


def _mb(b):
    return f"{b / 2**20:.0f}" if b is not None else "-"


def markdown(records, sett) -> str:
    lines = [f"# replaycompile bench", "",
             f"torch {sett['torch']}, {sett['device']}, {sett['threads']} threads ({sett['cpus']} CPUs), allocator "
             f"{sett['allocator']}, settings {sett['env']} (None = defaults); load average at the start "
             f"{sett.get('load_avg')}", ""]
    by_w = {}
    for r in records:
        by_w.setdefault(r["workload"], []).append(r)
    for w, rs in by_w.items():
        r0 = rs[0]
        lines += [f"## {w}: {r0['workload_desc']}", "",
                  f"tokens in {r0['flops']['tokens_in']}, distinct {r0['flops']['tokens_unique']} (token ratio "
                  f"{r0['token_ratio']:.2f}x); FLOP ideal {r0['flop_ideal_vs_keep']:.2f}x over eager logits_to_keep,"
                  f" {r0['flop_ideal_vs_rows']:.2f}x over row by row"
                  + (f", {_pg_flop_ratio(r0):.2f}x over Prefix Grouper's work (the prompt once, each completion "
                     "on its own)" if _pg_flop_ratio(r0) else ""),
                  "",
                  "| system | step s (median) | kernel s (page faults) | vs eager | vs logits_to_keep | vs inductor | "
                  "vs Prefix Grouper | efficiency | peak MB (in step) | peak MB (own process) | first call s | "
                  "recompiles | loss rel | grad rel | user lines |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rs:
            if "step_s" not in r:
                lines.append(f"| {r['label']} | skipped: {r.get('skipped', '?')} ||||||||||||||")
                continue
            eff = (f"{100 * r['efficiency']:.0f}%" + ("" if r["efficiency_baseline"] == "eager_keep" else " (rows)")
                   if r.get("efficiency") is not None else "-")
            st = r.get("stats") or {}
            note = "" if not st or st.get("applied") else f" (not packed: {st.get('fallback_reason')})"
            lines.append(
                f"| {r['label']}{note} | {r['step_s']:.3f} | {_kernel(r)} | {_fmt_x(r.get('vs_eager'))} | "
                f"{_fmt_x(r.get('vs_eager_keep'))} | {_fmt_x(r.get('vs_inductor'))} | "
                f"{_fmt_x(r.get('vs_prefix_grouper'))} | {eff} | {_mb(r.get('peak_bytes_in_process'))} | "
                f"{_mb(r.get('peak_bytes_subprocess'))} | {r['first_call_s']:.1f} | {r.get('recompiles_timed', 0)} | "
                f"{r['loss_rel']:.1e} | {r['grad_rel_worst']:.1e} | {r['user_lines']} |"
                if "loss_rel" in r else
                f"| {r['label']}{note} | {r['step_s']:.3f} | {_kernel(r)} | {_fmt_x(r.get('vs_eager'))} | "
                f"{_fmt_x(r.get('vs_eager_keep'))} | {_fmt_x(r.get('vs_inductor'))} | "
                f"{_fmt_x(r.get('vs_prefix_grouper'))} | {eff} | {_mb(r.get('peak_bytes_in_process'))} | "
                f"{_mb(r.get('peak_bytes_subprocess'))} | {r['first_call_s']:.1f} | {r.get('recompiles_timed', 0)} | "
                f"- | - | {r['user_lines']} |")
        lines.append("")
    lines += ["Columns: medians over interleaved reps, a new batch (new T) every rep, timed without the heap "
              "sampler; kernel s = CPU seconds the step spent in the kernel (summed over threads: mostly zeroing "
              "fresh pages), with its minor page faults; ratios are the baseline's median over the system's; "
              "efficiency = measured speedup over eager logits_to_keep (or row by row, marked, where the padded "
              "batch passes the memory cap) / the FLOP-ideal speedup (the distinct tokens, their ancestors' keys, "
              "the distinct head rows); peak = malloc's in-use high-water mark during one step above its start (in "
              "step: one untimed step in this process after the timed ones; own process: one step in a subprocess "
              "after two warm-up steps); first call includes compilation; recompiles = graphs Dynamo compiled "
              "during the timed steps and the peak step; loss/grad rel against the first eager system that ran on "
              "the check batch (grad: the worst parameter); user lines = code a user writes to adopt it."]
    return "\n".join(lines) + "\n"


def targets(records) -> list[str]:
    """The issue's targets, each checked against the records that exist."""
    get = {(r["workload"], r["system"]): r for r in records}
    out = []
    # the targets are set on the reference model; on another model the same lines are a comparison with them
    model = records[0]["model"] if records else "qwen3"
    tag = "target" if model == "qwen3" else f"{model} against qwen3's target"

    def ratio(w, a, b):
        ra, rb = get.get((w, a)), get.get((w, b))
        if ra and rb and "step_s" in ra and "step_s" in rb:
            return rb["step_s"] / ra["step_s"]
        return None

    def line(desc, val, need, unit="x", flops=None):
        if val is None:
            out.append(f"{tag} {desc}: not measured")
        else:
            out.append(f"{tag} {desc}: {val:.2f}{unit} (need >= {need}{unit}"
                       + (f"; FLOP ratio {flops:.2f}x" if flops else "") + f") -> {'MET' if val >= need else 'MISSED'}")

    def pg_flops(w):
        return next((_pg_flop_ratio(r) for r in records if r["workload"] == w), None)

    line("reference, replay exact vs Prefix Grouper", ratio("reference", "replay_exact", "prefix_grouper"), 1.3,
         flops=pg_flops("reference"))
    line("reference, replay exact vs eager logits_to_keep", ratio("reference", "replay_exact", "eager_keep"), 4)
    # the tree ("half the rows of a group share a response stem of 512 tokens") read both ways: one half
    # shares a stem and the other half has its own responses ("tree"), or each half shares a stem ("tree2")
    line("tree, replay exact vs Prefix Grouper", ratio("tree", "replay_exact", "prefix_grouper"), 3,
         flops=pg_flops("tree"))
    line("tree2, replay exact vs Prefix Grouper", ratio("tree2", "replay_exact", "prefix_grouper"), 3,
         flops=pg_flops("tree2"))
    w8 = "G8-p8K-r128"
    line("8K G=8, replay exact vs Prefix Grouper", ratio(w8, "replay_exact", "prefix_grouper"), 1.3,
         flops=pg_flops(w8))
    a, b = get.get((w8, "replay_exact"), {}), get.get((w8, "prefix_grouper"), {})
    for key, what in (("peak_bytes_subprocess", "own process"), ("peak_bytes_in_process", "in step")):
        if a.get(key) and b.get(key):
            frac = a[key] / b[key]
            out.append(f"{tag} 8K G=8, replay exact peak / Prefix Grouper peak ({what}): {frac:.2f} (need <= 0.5)"
                       f" -> {'MET' if frac <= 0.5 else 'MISSED'}")
    for r in records:
        if r["system"] == "replay_exact" and r.get("efficiency") is not None and r["token_ratio"] > 1.05:
            e = r["efficiency"]
            out.append(f"{tag} efficiency >= 70% of FLOP ideal, {r['workload']}: {100 * e:.0f}% (vs "
                       f"{r['efficiency_baseline']}) -> {'MET' if e >= 0.7 else 'MISSED'}")
    v = ratio("nosharing", "replay_exact", "inductor")
    if v is not None:
        out.append(f"{tag} no sharing, replay exact no slower than plain inductor: {v:.2f}x -> "
                   f"{'MET' if v >= 1 / 1.05 else 'MISSED'} (within 5%)")
    else:
        out.append(f"{tag} no sharing vs plain inductor: not measured")
    return out


def plots(records, outdir) -> list[pathlib.Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    timed = [r for r in records if "step_s" in r]
    # 1: speedup over eager logits_to_keep against the sharing ratio
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for s in SYSTEMS:
        pts = [(r["token_ratio"], r["vs_eager_keep"]) for r in timed if r["system"] == s and r.get("vs_eager_keep")]
        if pts:
            ax.plot(*zip(*sorted(pts)), "o-", label=s)
    ideal = sorted({(r["token_ratio"], r["flop_ideal_vs_keep"]) for r in timed if r.get("vs_eager_keep")})
    if ideal:
        ax.plot(*zip(*ideal), "k--", alpha=0.5, label="FLOP ideal")
    ax.set_xlabel("sharing ratio (tokens in / distinct tokens)")
    ax.set_ylabel("speedup over eager logits_to_keep")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("speedup against sharing", fontsize=9)
    fig.tight_layout()
    paths.append(outdir / "speedup_vs_sharing.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    # 2: step time against G at the prompt length with the most G values
    by_p = {}
    for r in timed:
        spec = r["workload_spec"]
        if spec["kind"] == "prompt" and r["workload"] != "reference":
            by_p.setdefault((spec["prompt"], spec["cmax"]), set()).add(spec["group"])
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    if by_p:
        (P, R), _ = max(by_p.items(), key=lambda kv: len(kv[1]))
        for s in SYSTEMS:
            pts = sorted((r["workload_spec"]["group"], r["step_s"]) for r in timed if r["system"] == s
                         and r["workload_spec"]["kind"] == "prompt" and r["workload_spec"]["prompt"] == P
                         and r["workload_spec"]["cmax"] == R and r["workload"] != "reference")
            if pts:
                ax.plot(*zip(*pts), "o-", label=s)
        ax.set_title(f"step time against G, prompt {P}, completions {R // 2}-{R}", fontsize=9)
    ax.set_xlabel("G (rows per prompt)")
    ax.set_ylabel("step s (median)")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_lines():
        ax.legend(fontsize=7)
    else:  # say why the plot is empty rather than leave a blank frame
        ax.text(0.5, 0.5, "no grid workloads (G4/G8/G16 at one prompt) in this run", ha="center", va="center",
                transform=ax.transAxes, fontsize=9)
    fig.tight_layout()
    paths.append(outdir / "step_time_vs_G.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    # 3: efficiency across the workloads
    fig, ax = plt.subplots(figsize=(max(6.5, 0.6 * len({r['workload'] for r in timed})), 4.5))
    ws = list(dict.fromkeys(r["workload"] for r in timed))
    sysn = [s for s in ("replay_exact", "replay_detach", "prefix_grouper", "dense_tree_mask", "flex_tree")
            if any(r["system"] == s and r.get("efficiency") is not None for r in timed)]
    width = 0.8 / max(len(sysn), 1)
    for j, s in enumerate(sysn):
        vals = [next((100 * r["efficiency"] for r in timed if r["workload"] == w and r["system"] == s
                      and r.get("efficiency") is not None), 0) for w in ws]
        ax.bar([i + j * width for i in range(len(ws))], vals, width, label=s)
    ax.axhline(70, color="k", ls="--", alpha=0.5, label="target 70%")
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(ws))])
    ax.set_xticklabels(ws, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("efficiency (% of FLOP-ideal speedup)")
    ax.legend(fontsize=7)
    ax.set_title("efficiency: measured / FLOP-ideal speedup over eager logits_to_keep", fontsize=9)
    fig.tight_layout()
    paths.append(outdir / "efficiency.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


def load_records(path: pathlib.Path, model: str, quick: bool, device: str):
    if not path.exists():
        return []
    out = []
    for ln in path.read_text().splitlines():
        if ln.strip():
            r = json.loads(ln)
            if (r["model"], r["quick"], r["device"]) == (model, quick, device):
                out.append(r)
    return out


# -------------------------------------------------------------------------------------------------- main

def _context(args, cfg):
    return Context(device=args.device, cfg=cfg, max_bytes=args.max_gb * 2**30, inner=args.inner,
                   plain_backend="inductor" if args.inner == "inductor" else args.inner)


def parse(argv):
    ap = argparse.ArgumentParser(prog="replaycompile bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny model and workloads, compiled with aot_eager")
    ap.add_argument("--workloads", nargs="+", default=None,
                    help=f"workload names or groups {sorted(GROUPS)} (default: 'default')")
    ap.add_argument("--systems", nargs="+", default=None, choices=sorted(SYSTEMS), help="default: all")
    ap.add_argument("--model", default="qwen3", choices=sorted(MODELS))
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--reps", type=int, default=None, help="timed steps per system and workload (default 3)")
    ap.add_argument("--inner", default=None, choices=["inductor", "aot_eager"],
                    help="replay's inner compiler and plain inductor's backend (default inductor; --quick aot_eager)")
    ap.add_argument("--memory-systems", nargs="*", default=None,
                    help="systems whose peak is measured in a subprocess of their own (default: replay_exact "
                         "prefix_grouper eager_keep; --quick: eager_keep)")
    ap.add_argument("--memory-workloads", nargs="*", default=None,
                    help="workloads those subprocesses run (default: reference and G8-p8K-r128)")
    ap.add_argument("--measure-timeout", type=float, default=900.0)
    ap.add_argument("--max-gb", type=float, default=6.0, help="skip a system whose predicted peak passes this")
    ap.add_argument("--out", default=None, help="output folder (default bench/out/bench, --quick bench/out/bench-quick)")
    ap.add_argument("--fresh", action="store_true", help="ignore (and overwrite) the results of earlier runs")
    ap.add_argument("--dry-run", action="store_true", help="print the plan (workloads, systems, skips) and exit")
    ap.add_argument("--report", action="store_true",
                    help="run nothing: rewrite the markdown, JSON and plots from results.jsonl")
    ap.add_argument("--profile", action="store_true",
                    help="also record a torch.profiler trace of one step per system on the first workload")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores, at most 2 on "
                                                             "CPU, the machine these numbers come from)")
    ap.add_argument("--measure", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.reps = args.reps or (2 if args.quick else 3)
    args.inner = args.inner or ("aot_eager" if args.quick else "inductor")
    args.systems = args.systems or list(SYSTEMS)
    if args.memory_systems is None:
        args.memory_systems = ["eager_keep"] if args.quick else ["replay_exact", "prefix_grouper", "eager_keep"]
    if args.memory_workloads is None:
        args.memory_workloads = ["reference"] if args.quick else ["reference", "G8-p8K-r128"]
    args.out = pathlib.Path(args.out or (ROOT / "bench" / "out" / ("bench-quick" if args.quick else "bench")))
    return args


def main(argv=None) -> int:
    args = parse(argv)
    if args.device == "cpu":
        torch.set_num_threads(args.threads or max(1, min(2, os.cpu_count() or 1)))
    elif args.threads:
        torch.set_num_threads(args.threads)
    if args.measure:
        return measure_main(args)
    from tqdm import tqdm

    workloads = select_workloads(args.workloads, args.quick)
    systems = [SYSTEMS[s] for s in SYSTEMS if s in args.systems]
    if args.device == "cuda" and not torch.cuda.is_available() and not args.dry_run:
        raise SystemExit("--device cuda: no CUDA device here (use --dry-run to see the plan)")
    args.out.mkdir(parents=True, exist_ok=True)
    jsonl = args.out / "results.jsonl"
    if args.fresh and jsonl.exists():
        jsonl.unlink()
    done = {(r["workload"], r["system"]) for r in load_records(jsonl, args.model, args.quick, args.device)}
    sett = settings(args.device)
    spec = MODELS[args.model]
    print(f"# replaycompile bench: model {args.model!r} ({spec.quick_config if args.quick else spec.config}), fp32, "
          f"{args.device}; torch {sett['torch']}, {sett['threads']} threads, interop {sett['interop_threads']}, "
          f"allocator {sett['allocator']} with {sett['env']} (None = defaults); replay inner={args.inner}, "
          f"plain baseline backend={'inductor' if args.inner == 'inductor' else args.inner}; {args.reps} reps",
          flush=True)
    cfg = tiny_config(spec.family, max_position_embeddings=MAX_POS, **(spec.quick_config if args.quick
                                                                       else spec.config))
    ctx = _context(args, cfg)
    plan = []
    for w in workloads:
        todo = [s for s in systems if (w.name, s.name) not in done]
        plan.append((w, todo))
        skips = []
        for s in todo:
            try:
                if s.check:
                    s.check(ctx, w)
            except Skip as e:
                skips.append(f"{s.name} ({e})")
        print(f"#   {w.name}: {w.describe()}; to run: {[s.name for s in todo] or 'nothing (done)'}"
              + (f"; will skip: {'; '.join(skips)}" if skips else ""), flush=True)
    if args.dry_run:
        return 0
    if args.report:
        if not done:  # rewriting the tables from nothing would overwrite an earlier report with empty ones
            raise SystemExit(f"--report: {jsonl} holds no records of model {args.model!r} (quick={args.quick}, "
                             f"device {args.device}): nothing to report")
        plan = [(w, []) for w, _ in plan]
    model, cfg = build_model(args.model, args.quick, args.device)
    ctx = _context(args, cfg)

    def emit(rec):
        rec["settings"] = sett
        with jsonl.open("a") as f:
            f.write(json.dumps(rec, default=str) + "\n")

    todo_cells = sum(len(t) for _, t in plan if t)
    with tqdm(total=len([p for p in plan if p[1]]), desc="workloads", unit="workload", dynamic_ncols=True,
              file=sys.stdout, disable=None) as bar:
        for w, todo in plan:
            if not todo:
                continue
            run_workload(w, todo, model, ctx, args, bar, emit)
            bar.update(1)
            gc.collect()
    if args.profile and plan:
        profile(plan[0][0], systems, model, ctx, args)
    records = load_records(jsonl, args.model, args.quick, args.device)
    md = markdown(records, sett)
    tl = targets(records) if not args.quick else []
    (args.out / "bench.md").write_text(md + ("\n" + "\n".join(f"- {t}" for t in tl) + "\n" if tl else ""))
    (args.out / "bench.json").write_text(json.dumps(dict(settings=sett, records=records, targets=tl), indent=1,
                                                    default=str))
    print()
    print(md)
    for t in tl:
        print(t)
    for p in plots(records, args.out):
        print(f"# wrote {p}")
    print(f"# wrote {args.out / 'bench.md'}, {args.out / 'bench.json'} ({todo_cells} cells run now, "
          f"{len(records)} in {jsonl})")
    return 0


def profile(w, systems, model, ctx, args):
    """One step per system under torch.profiler (CPU and CUDA activity), a Chrome trace and a table each."""
    from torch.profiler import ProfilerActivity, profile as prof

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if ctx.device == "cuda" else [])
    batch = w.batch(ctx.cfg.vocab_size, 99, ctx.device)
    for s in systems:
        try:
            if s.check:
                s.check(ctx, w)
            step = ctx.step(s)
            run_step(step, model, batch, ctx.device)
        except Skip:
            continue
        with prof(activities=acts) as p:
            run_step(step, model, batch, ctx.device)
        p.export_chrome_trace(str(args.out / f"trace_{w.name}_{s.name}.json"))
        key = "cuda_time_total" if ctx.device == "cuda" else "cpu_time_total"
        (args.out / f"profile_{w.name}_{s.name}.txt").write_text(
            p.key_averages().table(sort_by=key, row_limit=30))
        print(f"# profiled {s.name} on {w.name}: {args.out / f'profile_{w.name}_{s.name}.txt'}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
