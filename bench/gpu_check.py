"""The GPU check, in one command, under 5 minutes on an H200: the GPU tests, then the figures.

    python bench/gpu_check.py                # CUDA: writes $OUT/gpu_check.json and .md (or bench/out/ without $OUT)
    python bench/gpu_check.py --dry-run      # CPU: tiny shapes through the Triton interpreter (checks the script)
    python bench/gpu_check.py --sweep-blocks # also time the tree kernel at other block sizes (16K prompt)

Stages, each saved to disk as soon as it finishes (a timeout keeps what ran):

1. ``tests``: the pass/fail checks, ``tests/test_gpu.py`` under pytest in a subprocess (its log and JUnit XML
   beside the report, ``gpu_tests.log`` / ``gpu_tests.xml``; ``--dry-run`` runs it on the CPU with
   ``REPLAYCOMPILE_GPU_DRY_RUN=1``): the Triton kernels (tree attention, a per-head budget, Sparrow's decode) and
   the chunked log-probs against their pure-torch references in bf16 / fp32, FlexAttention's error on the same
   tree beside them as a yardstick, and a replay GRPO step on the device against eager with the kernels forward
   and backward. Each check's errors land in the report's correctness table. Needs pytest and hypothesis (the
   ``[test]`` extra); without them the stage says so and the timings still run.
2. ``step``: a bf16 GRPO step (Qwen3-shaped, 8 layers, hidden 1024, V=32000, G=8, 4K prompt, completions up to
   512) with replay against eager ``logits_to_keep``, the loss sliced and over every position times the mask,
   interleaved, medians, loss and gradients compared (bf16: loose tolerance).
3. ``timings``: forward+backward time, G=8 completions of one prompt (4K-32K), interleaved round-robin, medians:
   the tree kernel; FlexAttention given the same mask (its BlockMask); SDPA on the unpacked batch [G, P + C]
   (the work replay removes); dense causal SDPA of the packed length N (the FLOP-rate yardstick). TFLOP/s at
   3.5x the forward's 4*D FLOPs per pair (backward = 2.5x forward), over visible token pairs (the tree's, or
   the causal triangle's for SDPA); for the tree kernel also over the block pairs it visits (masked work in
   partial blocks included: a diagnostic of the layout's overhead, not part of the target).

Targets (issue 3, H200): tree fwd+bwd at least as fast as FlexAttention on the same mask, and at least 50% of
dense SDPA's TFLOP/s, both rates on visible token pairs. Without a FlexAttention or dense SDPA row, or if the
timed tree variant did not run the Triton kernels, the target is "not measured", never met.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import pathlib
import platform
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from replaycompile.kernels import block_sparse_attention as bsa  # noqa: E402
from replaycompile.kernels.block_sparse import BlockLayout, tree_block_mask  # noqa: E402
from replaycompile.kernels import tree_attention as tree_attention_module  # noqa: E402
from replaycompile.kernels.tree_attention import tree_attention  # noqa: E402
from replaycompile.testing.models import behaviour_logprobs  # noqa: E402 - old log-probs of a perturbed copy

from common import branch_tree, rel, time_variants, visible_pairs  # noqa: E402

T0 = time.perf_counter()
ROW_MARK = "GPU_CHECK_ROW "  # tests/test_gpu.py prints each check's errors on such a line


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - T0:6.1f}s] {msg}", flush=True)


# ------------------------------------------------------------------------------------------------ trees


class Tree:
    def __init__(self, prompt, lens, device, block_q, block_k):
        self.prompt, self.lens = prompt, lens
        self.n = prompt + sum(lens)
        meta = branch_tree(prompt, lens)
        t = time.perf_counter()
        self.layout = BlockLayout.from_block_masks(*tree_block_mask(meta[0], block_q, block_k), block_q, block_k,
                                                   self.n, self.n).to(device)
        self.layout_ms = (time.perf_counter() - t) * 1e3
        self.meta = [m.to(device) for m in meta]
        self.subtree_end = self.meta[0]

    def attention(self, q, k, v, scale):
        return tree_attention(q, k, v, *self.meta, scale, self.layout.tensors(), self.layout.block_q,
                              self.layout.block_k)


# ------------------------------------------------------------------------------------------------ helpers


def ran_both(ran) -> tuple[str | None, str | None]:
    """(forward, backward) tree-attention paths a ``PathRecorder`` counted."""
    return ran.paths("forward"), ran.paths("backward")


def flex_fns(device):
    """(flex_attention callable, create_block_mask), or None where FlexAttention cannot run a backward (CPU)."""
    if device.type != "cuda":
        return None
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    except ImportError:
        return None
    fn = torch.compile(flex_attention, dynamic=False)
    return fn, create_block_mask


def tree_block_mask_flex(create_block_mask, subtree_end, n, device):
    def tree_mask(b, h, q_idx, kv_idx):
        return (kv_idx <= q_idx) & (q_idx < subtree_end[kv_idx])
    return create_block_mask(tree_mask, None, None, n, n, device=device, _compile=True)


# ------------------------------------------------------------------------------------------------ stages


def gpu_tests(args, device, res, save):
    """Stage 1: tests/test_gpu.py under pytest in a subprocess; its rows (the errors each check measured) into the
    report, its verdict into ``res["tests"]``."""
    missing = [m for m in ("pytest", "hypothesis") if importlib.util.find_spec(m) is None]
    if missing:
        raise RuntimeError(f"{' and '.join(missing)} not installed: the GPU tests (tests/test_gpu.py) need the "
                           "[test] extra (pip install pytest hypothesis); the timing stages run without them")
    out = pathlib.Path(args.out)
    env = dict(os.environ)
    if args.dry_run:
        env["REPLAYCOMPILE_GPU_DRY_RUN"] = "1"
    cmd = [sys.executable, "-m", "pytest", "tests/test_gpu.py", "-s", "-rA", "-p", "no:cacheprovider",
           f"--junitxml={out / 'gpu_tests.xml'}"]
    log(f"tests: {' '.join(cmd[1:])}")
    with open(out / "gpu_tests.log", "w") as f:
        try:
            rc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT,
                                timeout=args.test_timeout).returncode
        except subprocess.TimeoutExpired:
            rc = None
    text = (out / "gpu_tests.log").read_text()
    for line in text.splitlines():
        if ROW_MARK in line:  # after pytest's progress dots, if any
            row = json.loads(line.split(ROW_MARK, 1)[1])
            if row.pop("stage") == "end_to_end":
                res["end_to_end"] = row
            else:
                res["correctness"].append(row)
    summary = [ln.strip("= ") for ln in text.splitlines() if ln.startswith("=") and
               any(w in ln for w in ("passed", "failed", "error", "skipped"))]
    res["tests"] = dict(returncode=rc, summary=summary[-1] if summary else None,
                        failed=[ln for ln in text.splitlines() if ln.startswith(("FAILED", "ERROR"))])
    log(f"tests: {res['tests']}")
    save()
    if rc is None:
        raise RuntimeError(f"tests/test_gpu.py ran past {args.test_timeout:.0f} s (its log: gpu_tests.log)")


def step_timing(args, device, res, save):
    """A GRPO step (forward, clipped-ratio loss on the completions against a perturbed policy's log-probs,
    backward) on a Qwen3-shaped model in bf16: eager with ``logits_to_keep`` (the strongest eager form a user
    writes for this loss: the LM head on the completions only) against ``backend="replay"`` with the same loss,
    interleaved, medians; loss and gradients of the two compared (bf16: loose tolerance)."""
    import replaycompile
    from replaycompile.testing.models import tiny_model

    dtype = torch.float32 if args.dry_run else torch.bfloat16
    shape = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                 vocab_size=512, num_hidden_layers=2) if args.dry_run else \
        dict(hidden_size=1024, intermediate_size=3072, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
             vocab_size=32000, num_hidden_layers=8)
    model = tiny_model("qwen3", "sdpa", dtype=dtype, **shape).to(device)
    g = torch.Generator().manual_seed(3)
    for p, c in ([(40, 12)] if args.dry_run else [(4096, 512)]):
        b, v = args.group if not args.dry_run else 4, shape["vocab_size"]
        prompt = torch.randint(1, v, (p,), generator=g)
        rows, masks = [], []
        for i in range(b):
            n = c - (i * c) // (2 * b)
            rows.append(torch.cat([prompt, torch.randint(1, v, (n,), generator=g),
                                   torch.zeros(c - n, dtype=torch.long)]))
            masks.append(torch.cat([torch.ones(p + n), torch.zeros(c - n)]))
        ids, am = torch.stack(rows).to(device), torch.stack(masks).long().to(device)
        adv = torch.randn(b, generator=g).to(device)
        old_logp = behaviour_logprobs(model, ids, am, p, seed=4)
        cm = am[:, p:].float()

        def loss_of(logits):
            logp = logits.float().log_softmax(-1).gather(-1, ids[:, p:, None]).squeeze(-1)
            ratio = torch.exp(logp - old_logp)
            obj = torch.minimum(ratio * adv[:, None], ratio.clamp(0.8, 1.28) * adv[:, None])
            return -(obj * cm).sum() / cm.sum()

        def eager_step(ids, am):
            return loss_of(model(input_ids=ids, attention_mask=am, use_cache=False, logits_to_keep=c + 1).logits[:, :-1])

        def sliced_step(ids, am):
            return loss_of(model(input_ids=ids, attention_mask=am, use_cache=False).logits[:, p - 1:-1])

        cm_all = torch.zeros(b, p + c - 1, device=device)
        cm_all[:, p - 1:] = cm
        old_all = torch.zeros(b, p + c - 1, device=device)
        old_all[:, p - 1:] = old_logp

        def masked_step(ids, am):
            # the loss over every position times the completion mask (issue 29's form): replay computes the LM
            # head only where the mask keeps a position
            logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
            logp = logits[:, :-1].float().log_softmax(-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
            ratio = torch.exp(logp - old_all)
            obj = torch.minimum(ratio * adv[:, None], ratio.clamp(0.8, 1.28) * adv[:, None])
            return -(obj * cm_all).sum() / cm_all.sum()

        forms = {"sliced": sliced_step, "masked": masked_step}
        replays = {k: torch.compile(f, backend="replay", options={"inner": "aot_eager"}) for k, f in forms.items()}

        def run(fn):
            model.zero_grad(set_to_none=True)
            loss = fn(ids, am)
            loss.backward()
            return loss.detach()

        ref_loss = run(eager_step)
        ref_grads = [q.grad.detach().float().clone() for q in model.parameters()]
        checks = {}
        for k, fn in replays.items():
            with tree_attention_module.PathRecorder() as rec:
                got_loss = run(fn)
            ran = ran_both(rec)
            st = replaycompile.last_stats()
            worst = max(rel(q.grad.float(), r) for q, r in zip(model.parameters(), ref_grads))
            checks[k] = (got_loss, ran, st, worst)
        med = time_variants({"eager": lambda: run(eager_step),
                             **{k: (lambda fn=fn: run(fn)) for k, fn in replays.items()}}, args.reps, device)
        tol = 1e-4 if dtype == torch.float32 else 5e-2
        for k, (got_loss, ran, st, worst) in checks.items():
            loss_rel = abs((got_loss - ref_loss).item()) / max(abs(ref_loss.item()), 1e-30)
            row = dict(case=f"Qwen3 {shape['num_hidden_layers']}L h{shape['hidden_size']} V{v} {str(dtype)[6:]}, "
                            f"G={b}, prompt {p}, completions <= {c}; loss {k}; replay inner aot_eager",
                       eager_s=med["eager"], replay_s=med[k], speedup=med["eager"] / med[k],
                       tokens_in=st["tokens_in"], tokens_computed=st["tokens_computed"], loss=ref_loss.item(),
                       loss_rel=loss_rel, worst_grad_rel=worst, attention_ran=f"{ran[0]}/{ran[1]}",
                       lm_head_rows=st.get("lm_head_rows"), weighted_tokens_dropped=st.get("weighted_tokens_dropped"))
            row["pass"] = bool(st["applied"] and worst <= tol and loss_rel <= tol)
            res["step"].append(row)
            log(f"step: {row}")
        save()


def timings(args, device, res, save, prompts, block_sweep=None):
    hq, hkv, d = args.heads[0], args.heads[1], args.head_dim
    dt = torch.bfloat16 if device.type == "cuda" else torch.float32
    flex = flex_fns(device)
    g = torch.Generator().manual_seed(0)
    for prompt in prompts:
        if time.perf_counter() - T0 > args.deadline:
            res["skipped"].append(f"prompt {prompt}: past the {args.deadline}s deadline")
            log(res["skipped"][-1])
            continue
        lens = [args.completion] * args.group
        blocks = block_sweep or [bsa.default_blocks(d, dt, device.type)]
        trees = {bqk: Tree(prompt, lens, device, *bqk) for bqk in blocks}
        tree = trees[blocks[0]]
        n, t_unpacked = tree.n, prompt + args.completion
        scale = 1 / math.sqrt(d)
        mk = lambda *shape: torch.randn(*shape, generator=g).to(device, dt)  # noqa: E731
        q, k, v, go = mk(1, hq, n, d), mk(1, hkv, n, d), mk(1, hkv, n, d), mk(1, hq, n, d)
        leaves = [x.requires_grad_() for x in (q, k, v)]

        tree_ran = {}

        def tree_step(name, tr):
            def f():
                with tree_attention_module.PathRecorder() as rec:
                    out, _ = tr.attention(*leaves, scale)
                    torch.autograd.grad(out, leaves, go)
                tree_ran[name] = ran_both(rec)  # the last round's; a label must name what was timed
            return f

        variants = {f"tree kernel {bq}x{bk}": tree_step(f"tree kernel {bq}x{bk}", tr) for (bq, bk), tr in trees.items()}
        if block_sweep is None:
            if flex is not None:
                fa, cbm = flex
                bm = tree_block_mask_flex(cbm, tree.subtree_end, n, device)

                def flex_step():
                    out = fa(*leaves, block_mask=bm, scale=scale, enable_gqa=True)
                    torch.autograd.grad(out, leaves, go)
                variants["FlexAttention, same mask"] = flex_step
            # SDPA baselines take K/V expanded to the query heads (GQA support in the fused kernels varies)
            uq, uk, uv, ugo = (mk(args.group, h, t_unpacked, d).requires_grad_(x)
                               for h, x in ((hq, True), (hq, True), (hq, True), (hq, False)))
            dq_, dk_, dv_, dgo = (mk(1, hq, n, d).requires_grad_(x) for x in (True, True, True, False))

            def sdpa_step(a, b_, c_, go_):
                def f():
                    out = F.scaled_dot_product_attention(a, b_, c_, is_causal=True, scale=scale)
                    torch.autograd.grad(out, (a, b_, c_), go_)
                return f
            variants[f"SDPA unpacked [{args.group}, {t_unpacked}]"] = sdpa_step(uq, uk, uv, ugo)
            variants[f"SDPA dense causal [1, {n}]"] = sdpa_step(dq_, dk_, dv_, dgo)
        log(f"prompt {prompt}: N={n}, warming up {list(variants)}")
        med = time_variants(variants, args.reps, device)
        pairs_tok = visible_pairs(prompt, lens)
        flops_per_pair = 3.5 * 4 * d * hq
        rows = []
        for name, t in med.items():
            if name.startswith("tree kernel"):
                bq, bk = map(int, name.split()[-1].split("x"))
                lay = trees[(bq, bk)].layout
                work_blocks = lay.visited_pairs() * bq * bk
                work_tok = pairs_tok
            elif name.startswith("FlexAttention"):
                work_blocks, work_tok = None, pairs_tok
            elif name.startswith("SDPA unpacked"):
                work_blocks, work_tok = None, args.group * t_unpacked * (t_unpacked + 1) // 2
            else:
                work_blocks, work_tok = None, n * (n + 1) // 2
            rows.append(dict(prompt=prompt, n_packed=n, variant=name, ms=t * 1e3,
                             ran="/".join(map(str, tree_ran[name])) if name in tree_ran else None,
                             tflops_blocks=None if work_blocks is None else work_blocks * flops_per_pair / t / 1e12,
                             tflops_tokens=work_tok * flops_per_pair / t / 1e12,
                             layout_build_ms=trees[tuple(map(int, name.split()[-1].split("x")))].layout_ms
                             if name.startswith("tree kernel") else None))
        base = {r["variant"]: r for r in rows}
        tk = rows[0]
        flex_row = base.get("FlexAttention, same mask")
        dense = next((r for r in rows if r["variant"].startswith("SDPA dense")), None)
        for r in rows:
            r["speed_vs_flex"] = flex_row["ms"] / r["ms"] if flex_row else None
        if block_sweep is None:
            # like with like: both rates over visible token pairs (the block rate counts masked work too)
            tk["vs_dense_sdpa_tflops"] = tk["tflops_tokens"] / dense["tflops_tokens"] if dense else None
            missing = [why for why, bad in (("no FlexAttention row", flex_row is None),
                                            ("no dense SDPA row", dense is None),
                                            (f"the tree variant ran {tk['ran']}, not the Triton kernels",
                                             tk["ran"] != "triton/triton")) if bad]
            tk["target_met"] = None if missing else bool(tk["ms"] <= flex_row["ms"]
                                                         and tk["vs_dense_sdpa_tflops"] >= 0.5)
            tk["target_not_measured"] = "; ".join(missing) or None
        for r in rows:
            log(f"timing: {r}")
        res["block_sweep" if block_sweep else "timings"].extend(rows)
        save()
        variants.clear()  # drop the closures (and their tensors) before the next size allocates
        if device.type == "cuda":
            torch.cuda.empty_cache()


def markdown(res: dict) -> str:
    out = ["# GPU check: the GPU tests, the kernels' and a training step's timings", "",
           f"device: {res['device']}; torch {res['torch']}, triton {res['triton']}; wall {res.get('wall_s', 0):.0f}s", ""]
    t = res.get("tests")
    if t:
        out += [f"Tests (tests/test_gpu.py, log in gpu_tests.log): {t['summary']} (pytest exit status "
                f"{t['returncode']})"] + [f"- {ln}" for ln in t["failed"]] + [""]
    e1 = lambda r, k: f"{r[k]:.1e}" if k in r else "-"  # noqa: E731 - a check without that quantity
    out += ["## Correctness (rel. L2 error vs the pure-torch reference; lse max abs)", "",
            "| case | ran fwd/bwd | out | lse | dq | dk | dv | flex out / dq / dk / dv | pass |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r in res["correctness"]:
        fl = " / ".join(f"{r[k]:.1e}" for k in ("flex_out", "flex_dq", "flex_dk", "flex_dv")) if "flex_out" in r \
            else r.get("flex_error", "-")
        out.append(f"| {r['case']} | {r['ran']} | {e1(r, 'out')} | {e1(r, 'lse_max_abs')} | {e1(r, 'dq')} | "
                   f"{e1(r, 'dk')} | {e1(r, 'dv')} | {fl} | {r['pass']} |")
    if res.get("end_to_end"):
        e = res["end_to_end"]
        out += ["", f"End to end: {e['case']}: applied={e['applied']}, tree attention ran (fwd/bwd) "
                f"{e['attention_ran']}, last_stats attention={e['stats_attention']}, "
                f"tokens {e['tokens_computed']}/{e['tokens_in']}, loss {e['loss']:.4g} rel {e['loss_rel']:.1e}, "
                f"worst grad rel {e['worst_grad_rel']:.1e}, pass={e['pass']}"]
    if res.get("step"):
        out += ["", "## GRPO training step (forward, loss, backward; median s, interleaved)", "",
                "| case | eager logits_to_keep s | replay s | speedup | tokens computed / in | LM-head rows | loss rel | "
                "worst grad rel | attention ran | pass |", "|---|---|---|---|---|---|---|---|---|---|"]
        for r in res["step"]:
            out.append(f"| {r['case']} | {r['eager_s']:.4f} | {r['replay_s']:.4f} | {r['speedup']:.2f}x | "
                       f"{r['tokens_computed']}/{r['tokens_in']} | {r.get('lm_head_rows')} | {r['loss_rel']:.1e} | {r['worst_grad_rel']:.1e} | "
                       f"{r['attention_ran']} | {r['pass']} |")
    for key, title in (("timings", "Forward+backward"), ("block_sweep", "Block-size sweep (tree kernel)")):
        if not res.get(key):
            continue
        out += ["", f"## {title} (median ms, interleaved)", "",
                "| prompt | N packed | variant | ran fwd/bwd | ms | x Flex | TFLOP/s visited blocks | "
                "TFLOP/s visible tokens |", "|---|---|---|---|---|---|---|---|"]
        for r in res[key]:
            fx = f"{r['speed_vs_flex']:.2f}" if r.get("speed_vs_flex") else "-"
            tb = f"{r['tflops_blocks']:.1f}" if r.get("tflops_blocks") else "-"
            out.append(f"| {r['prompt']} | {r['n_packed']} | {r['variant']} | {r.get('ran') or '-'} | "
                       f"{r['ms']:.2f} | {fx} | {tb} | {r['tflops_tokens']:.1f} |")
        targets = [r for r in res[key] if "target_met" in r]
        if targets:
            out += [""] + [f"- prompt {r['prompt']}: tree kernel "
                           + (f"{r['speed_vs_flex']:.2f}x Flex, " if r.get("speed_vs_flex") else "(no Flex), ")
                           + (f"{r['vs_dense_sdpa_tflops']:.0%} of dense SDPA TFLOP/s (both on visible tokens)"
                              if r.get("vs_dense_sdpa_tflops") is not None else "(no dense SDPA)")
                           + ": target " + (f"met = {r['target_met']}" if r["target_met"] is not None
                                            else f"not measured ({r['target_not_measured']})")
                           for r in targets]
    if res["skipped"]:
        out += ["", "Skipped: " + "; ".join(res["skipped"])]
    if res["errors"]:
        out += ["", "Errors:"] + [f"- {e}" for e in res["errors"]]
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(os.path.dirname(__file__), "out"))
    ap.add_argument("--prompts", type=int, nargs="+", default=[4096, 8192, 16384, 32768])
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--completion", type=int, default=1024)
    ap.add_argument("--heads", type=int, nargs=2, default=[32, 8], metavar=("HQ", "HKV"))
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--deadline", type=float, default=240.0, help="seconds after which no new prompt size starts")
    ap.add_argument("--sweep-blocks", action="store_true")
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny shapes, Triton interpreter")
    ap.add_argument("--stages", nargs="+", default=["tests", "step", "timings"],
                    choices=["tests", "step", "timings", "correctness", "end_to_end"],
                    help="which stages to run (default: all); a rerun after a fix can take only the failed one "
                         "(correctness and end_to_end, the checks' former stages, name the tests)")
    ap.add_argument("--test-timeout", type=float, default=300.0, help="seconds for tests/test_gpu.py")
    args = ap.parse_args(argv)
    args.out = os.path.abspath(args.out)
    args.stages = ["tests" if st in ("correctness", "end_to_end") else st for st in args.stages]
    device = torch.device("cuda" if torch.cuda.is_available() and not args.dry_run else "cpu")
    if device.type != "cuda" and not args.dry_run:
        sys.exit("gpu_check: no CUDA device; run with --dry-run to exercise the script on CPU")
    if args.dry_run:
        args.prompts, args.group, args.completion, args.heads, args.head_dim, args.reps = [40, 70], 3, 9, [4, 2], 16, 2
    os.makedirs(args.out, exist_ok=True)
    import triton
    res = dict(device=torch.cuda.get_device_name() if device.type == "cuda" else f"CPU ({platform.processor()}), "
               "Triton interpreter", torch=torch.__version__, triton=triton.__version__, args=vars(args),
               tests=None, correctness=[], end_to_end=None, step=[], timings=[], block_sweep=[], skipped=[],
               errors=[])

    def save():
        res["wall_s"] = time.perf_counter() - T0
        with open(os.path.join(args.out, "gpu_check.json"), "w") as f:
            json.dump(res, f, indent=1)
        with open(os.path.join(args.out, "gpu_check.md"), "w") as f:
            f.write(markdown(res))

    stages = [("tests", lambda: gpu_tests(args, device, res, save)),
              ("step", lambda: step_timing(args, device, res, save)),
              ("timings", lambda: timings(args, device, res, save, args.prompts))]
    stages = [st for st in stages if st[0].replace(" ", "_") in args.stages]
    if args.sweep_blocks:
        sweep = [(16, 16), (16, 32)] if args.dry_run else [(64, 64), (128, 64), (64, 128), (128, 128)]
        stages.append(("block sweep", lambda: timings(args, device, res, save, [args.prompts[min(2, len(args.prompts) - 1)]],
                                                        block_sweep=sweep)))
    for name, fn in stages:
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - report and go on: later stages still tell something
            import traceback
            traceback.print_exc()
            res["errors"].append(f"{name}: {type(e).__name__}: {e}"[:500])
            save()
    save()
    print(markdown(res))
    ok = (not res["errors"] and all(r["pass"] for r in res["correctness"])
          and ("tests" not in args.stages or (res["tests"] or {}).get("returncode") == 0)
          and all(r["pass"] for r in res["step"]))
    log(f"wrote {args.out}/gpu_check.json and .md; checks {'PASSED' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
