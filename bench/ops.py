"""One small benchmark per custom op: the op against its pure-torch reference (``kernels/*_reference.py``).

    python bench/ops.py                  # every op at its tiny default shapes (seconds on a CPU)
    python bench/ops.py logprobs         # one op; --help after the op name lists its shape options
    replaycompile bench ops tree --reps 9

Ops (the CPU paths the backend runs where there is no GPU; ``bench/gpu_check.py`` times the Triton kernels):

- ``logprobs``: ``replaycompile::chunked_logprobs`` (the LM head, log-softmax, target gather and entropy, a chunk
  of rows at a time), forward and backward, against ``chunked_logprobs_reference`` (the ``[M, V]`` logits);
- ``decode``: ``replaycompile::sparse_decode`` (Sparrow's budgeted decode step: page selection, then attention
  over the kept pages) against ``select_pages_reference`` + ``sparse_decode_reference``; the op keeps its page
  statistics between calls on one cache, as it does between decode steps;
- ``scan``: ``replaycompile::gated_deltanet_tree`` (a Gated DeltaNet layer on a batch's prefix tree), forward and
  backward, against ``gated_deltanet_rows`` (the layer row by row on the padded batch: what packing removes);
- ``tree``: ``replaycompile::tree_attention`` (G completions of one prompt, packed), forward and backward, against
  ``tree_attention_reference`` (dense attention under the tree's ``[N, N]`` mask).

Per op: both sides interleaved round-robin after a warm-up round, medians of ``--reps``; then one untimed call of
each under ``common.PeakHeap`` (the peak of the heap and of tensor bytes above the start), and the op's largest
relative error against the reference. One line per op:

    <op> <shape>: op <ms> ms, reference <ms> ms -> <reference / op>x; peak MB op / reference; max rel err
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import torch  # noqa: E402

from common import PeakHeap, branch_tree, make_batch, rel, time_variants  # noqa: E402


@contextlib.contextmanager
def _quiet_stderr():
    """File descriptor 2 to /dev/null: torch's profiler (PeakHeap's tensor peak) logs two lines per use there."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _leaves(*xs):
    return [x.detach().clone().requires_grad_() for x in xs]


def compare(name: str, shape: str, op, reference, reps: int) -> dict:
    """Time ``op()`` and ``reference()`` interleaved (each returns a list of tensors: outputs, then gradients),
    measure each one's peak, and print the ratio line."""
    med = time_variants({"op": op, "reference": reference}, reps)
    peaks = {}
    for side, fn in (("op", op), ("reference", reference)):
        with _quiet_stderr(), PeakHeap(tensors=True) as pk:
            got = fn()
        peaks[side] = pk.delta
        if side == "op":
            out = got
    err = max(rel(a, b) for a, b in zip(out, got))
    row = dict(op=name, shape=shape, op_ms=med["op"] * 1e3, reference_ms=med["reference"] * 1e3,
               ratio=med["reference"] / med["op"], op_peak_mb=peaks["op"] / 2**20,
               reference_peak_mb=peaks["reference"] / 2**20, max_rel_err=err)
    print(f"{name} {shape}: op {row['op_ms']:.2f} ms, reference {row['reference_ms']:.2f} ms -> "
          f"{row['ratio']:.2f}x; peak MB {row['op_peak_mb']:.1f} / {row['reference_peak_mb']:.1f}; "
          f"max rel err {err:.1e}", flush=True)
    return row


# ------------------------------------------------------------------------------------------------ the ops


def bench_logprobs(args) -> dict:
    from replaycompile.kernels.chunked_logprobs import chunked_logprobs
    from replaycompile.kernels.chunked_logprobs_reference import chunked_logprobs_reference

    g = torch.Generator().manual_seed(0)
    m, h, v = args.rows, args.hidden, args.vocab
    hidden, weight = torch.randn(m, h, generator=g), torch.randn(v, h, generator=g) / h ** 0.5
    targets = torch.randint(0, v, (m,), generator=g)
    g_logp, g_ent = torch.randn(m, generator=g), torch.randn(m, generator=g)

    def step(fn):
        def run():
            hd, w = _leaves(hidden, weight)
            logp, ent = fn(hd, w)[:2]
            return [logp, ent, *torch.autograd.grad((logp * g_logp).sum() + (ent * g_ent).sum(), (hd, w))]
        return run

    return compare("logprobs", f"M={m} H={h} V={v} chunks of {args.chunk} fp32 fwd+bwd",
                   step(lambda hd, w: chunked_logprobs(hd, w, None, targets, args.chunk, True, 0.0)),
                   step(lambda hd, w: chunked_logprobs_reference(hd, w, None, targets)), args.reps)


def bench_decode(args) -> dict:
    from replaycompile.kernels import sparse_decode as sd
    from replaycompile.kernels.sparse_decode_reference import select_pages_reference, sparse_decode_reference

    g = torch.Generator().manual_seed(1)
    b, hq, hkv, d, page, topk, sink, local = args.batch, args.heads, args.kv_heads, args.head_dim, args.page, \
        args.topk, 1, 2
    length = -(-args.context // page) * page  # the cache in whole pages, as a static cache is sized
    k, v = torch.randn(b, hkv, length, d, generator=g), torch.randn(b, hkv, length, d, generator=g)
    q = torch.randn(b, hq, 1, d, generator=g)
    vis = torch.zeros(b, length, dtype=torch.bool)
    vis[:, :args.context] = True
    scale = d ** -0.5
    sd.reset_page_state()
    budget = torch.tensor([args.context, topk])

    def op():
        return [sd.sparse_decode(q, k, v, vis[:, None, None, :], budget, scale, page, sink, local, False, 0)]

    def reference():
        kept = select_pages_reference(q, k, vis, args.context, topk, page, sink, local)
        return [sparse_decode_reference(q, k, v, vis, kept, page, scale)]

    return compare("decode", f"B={b} Hq={hq} Hkv={hkv} D={d} context {args.context}, {sink + local + topk} of "
                   f"{length // page} pages of {page} fp32", op, reference, args.reps)


def bench_scan(args) -> dict:
    from replaycompile.kernels.tree_scan import gated_deltanet_tree_op
    from replaycompile.kernels.tree_scan_reference import DeltaNetDims, DeltaNetWeights, gated_deltanet_rows
    from replaycompile.runtime.plan import build_plan

    g = torch.Generator().manual_seed(2)
    h, hk, dk, hv, dv, kernel = args.hidden, args.k_heads, args.head_dim, 2 * args.k_heads, args.head_dim, 4
    key_dim, value_dim = hk * dk, hv * dv
    shapes = ((2 * key_dim + 2 * value_dim, h), (2 * hv, h), (2 * key_dim + value_dim, 1, kernel), (hv,), (hv,),
              (dv,), (h, value_dim))
    weights = [torch.randn(*s, generator=g) / math.sqrt(s[-1] if len(s) == 2 else 4) for s in shapes]
    dims = DeltaNetDims(hk, dk, hv, dv, kernel, 1e-6)
    ids, am, _ = make_batch(args.group, args.prompt, args.cmin, args.cmax, 1000, share=True)
    plan = build_plan(ids, am)
    B, T = ids.shape
    # hidden states a function of (token, column): rows that share a prefix hold equal ones there, as in a model
    x_rows = (torch.randn(1000, h, generator=g)[ids] + torch.randn(T, h, generator=g)[None]) * am[..., None]
    x_packed = x_rows.reshape(B * T, h).index_select(0, plan.gather_index)[None]
    cot_rows = torch.randn(B, T, h, generator=g) * am[..., None]
    # a packed token's cotangent: the sum of its rows' (replay sums the branches' gradients), so both sides'
    # weight gradients are the same sums
    n = plan.num_packed
    cot_packed = torch.zeros(n + 1, h).index_add_(0, plan.scatter_index.reshape(-1), cot_rows.reshape(B * T, h))
    cot_packed = cot_packed[None, :n]

    def op():
        x, *ws = _leaves(x_packed, *weights)
        out = gated_deltanet_tree_op(x, ws, plan.scatter_index, plan.gather_index, plan.seg_q, hk, dk, 1e-6)
        rows = torch.cat((out[0], out.new_zeros(1, h))).index_select(0, plan.scatter_index.reshape(-1))
        return [rows.reshape(B, T, h) * am[..., None], *torch.autograd.grad((out * cot_packed).sum(), ws)]

    def reference():
        x, *ws = _leaves(x_rows, *weights)
        out = gated_deltanet_rows(x, am, DeltaNetWeights(*ws), dims)
        return [out * am[..., None], *torch.autograd.grad((out * cot_rows).sum(), ws)]

    return compare("scan", f"G={args.group} prompt {args.prompt} completions {args.cmin}-{args.cmax} "
                   f"({plan.num_packed} of {int(am.sum())} tokens packed) hidden {h} heads {hk}/{hv} fp32 fwd+bwd",
                   op, reference, args.reps)


def bench_tree(args) -> dict:
    from replaycompile.kernels.tree_attention import tree_attention
    from replaycompile.kernels.tree_attention_reference import tree_attention_reference

    g = torch.Generator().manual_seed(3)
    lens = [args.completion] * args.group
    meta = branch_tree(args.prompt, lens)
    n, hq, hkv, d = args.prompt + sum(lens), args.heads, args.kv_heads, args.head_dim
    q, k, v = (torch.randn(1, hh, n, d, generator=g) for hh in (hq, hkv, hkv))
    go = torch.randn(1, hq, n, d, generator=g)
    scale = d ** -0.5

    def step(fn):
        def run():
            xs = _leaves(q, k, v)
            out = fn(*xs)
            return [out, *torch.autograd.grad(out, xs, go)]
        return run

    # no block layout: the PyTorch path (PyTorch's flash kernel per segment), what attention="torch" runs
    return compare("tree", f"G={args.group} prompt {args.prompt} completions {args.completion} (N={n}) Hq={hq} "
                   f"Hkv={hkv} D={d} fp32 fwd+bwd",
                   step(lambda a, b_, c: tree_attention(a, b_, c, *meta, scale, [], 64, 64)[0]),
                   step(lambda a, b_, c: tree_attention_reference(a, b_, c, meta[0], scale)[0]), args.reps)


OPS = {"logprobs": bench_logprobs, "decode": bench_decode, "scan": bench_scan, "tree": bench_tree}


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5, help="timed rounds after the warm-up round (default 5)")
    sub = ap.add_subparsers(dest="op")
    p = sub.add_parser("logprobs", help="chunked log-probs vs the [M, V] logits")
    p.add_argument("--rows", type=int, default=512)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--chunk", type=int, default=128)
    p = sub.add_parser("decode", help="Sparrow's sparse decode step vs the reference selection and attention")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--context", type=int, default=2000)
    p.add_argument("--page", type=int, default=16)
    p.add_argument("--topk", type=int, default=8)
    p = sub.add_parser("scan", help="Gated DeltaNet on the prefix tree vs row by row")
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--prompt", type=int, default=128)
    p.add_argument("--cmin", type=int, default=16)
    p.add_argument("--cmax", type=int, default=32)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--k-heads", type=int, default=2)
    p.add_argument("--head-dim", type=int, default=32)
    p = sub.add_parser("tree", help="tree attention vs dense attention under the tree mask")
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--prompt", type=int, default=512)
    p.add_argument("--completion", type=int, default=64)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--head-dim", type=int, default=64)
    sub.add_parser("all", help="every op at its default shapes (the default)")
    return ap, ap.parse_args(argv)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap, args = parse(argv)
    names = [args.op] if args.op not in (None, "all") else list(OPS)
    print(f"# bench/ops.py: torch {torch.__version__}, {torch.get_num_threads()} threads, CPU, load average "
          f"{os.getloadavg()[0]:.1f}; medians of {args.reps}, interleaved", flush=True)
    for name in names:
        # each op's own options at their defaults unless given on the command line
        op_args = args if args.op == name else parse(["--reps", str(args.reps), name])[1]
        OPS[name](op_args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
