"""Fusion pass: the LM head read only through ``log_softmax(-1).gather(-1, targets)`` runs as one chunked op.

``gather(log_softmax(linear(h, W, b)), -1, targets)`` becomes ``replaycompile::chunked_pair_logprobs`` on the
(packed row, target) pairs the loss reads: each unique packed row's logits once, a few rows at a time, never
holding ``[M, V]`` logits (option ``lm_head``; ``fusions`` name ``"chunked_lm_head"``). The caller passes each
such gather's pairs (``PairInputs``; ``replaycompile.runtime.inputs`` builds them per call).
"""

from __future__ import annotations

import operator

import torch
import torch.fx as fx

from replaycompile.kernels import chunked_logprobs as _chunked_logprobs_module  # noqa: F401 - registers the op

from .fuse_log_softmax import gather_args, log_softmax_input, loss_vocab_gather, single_user
from .nodes import LINEAR, Kind, op_name, shape, val
from .packed_graph import PairInputs
from .region import GraphAnalysis

# Rows of logits per chunk of the fused LM head: about this many bytes of float32 logits at a time
LM_HEAD_CHUNK_BUFFER_BYTES = 64 << 20


def lm_head_chains(gm: fx.GraphModule, a: GraphAnalysis) -> dict:
    """Vocabulary gathers that read the LM head only through a log-softmax: ``gather(log_softmax(
    [float...](linear(h, W, b)), -1), -1, targets)`` where each intermediate has that one user and the targets
    have one per position. gather node -> (h, W, b or None, dtype): ``dtype`` is the one the linear computed in,
    its output's (under autocast that is the autocast dtype, whatever h and W are): the chunked op gets h, W and
    b cast to it, so it is exact wherever it lands relative to an autocast region. Where autocast cast the
    linear, the log-softmax must run in the op's float32 (a ``.float()`` before it, or an autocast rule that
    upcasts it, as on CUDA), else the chain keeps the plain path: CPU autocast runs a bf16 log-softmax."""
    out = {}
    for n in gm.graph.nodes:
        if not loss_vocab_gather(n, a):
            continue
        base, _, index = gather_args(n)
        idx_shape = shape(index)
        if idx_shape is None or idx_shape[-1] != 1 or not single_user(base):
            continue
        x = log_softmax_input(base)
        if x is None or not single_user(x):
            continue
        ok = True
        while op_name(x) in ("float", "to") and len(x.args) >= 1 and isinstance(x.args[0], fx.Node):
            v, vx = val(x), val(x.args[0])
            if not (isinstance(v, torch.Tensor) and isinstance(vx, torch.Tensor) and v.dtype == torch.float32
                    and v.shape == vx.shape) or not single_user(x.args[0]):
                ok = False
                break
            x = x.args[0]
        if not ok or x.op != "call_function" or x.target not in LINEAR:
            continue
        h = x.args[0]
        w = x.kwargs.get("weight", x.args[1] if len(x.args) > 1 else None)
        bias = x.kwargs.get("bias", x.args[2] if len(x.args) > 2 else None)
        vh, vw, vx, vb = val(h), val(w), val(x), val(bias)
        if not (isinstance(vh, torch.Tensor) and isinstance(vw, torch.Tensor) and isinstance(vx, torch.Tensor)
                and vw.dim() == 2 and a.kind.get(h) == Kind.PACKED and a.kind.get(w) != Kind.PACKED
                and isinstance(vw.shape[1], int) and vx.is_floating_point()
                and vh.is_floating_point() and vw.is_floating_point()):
            continue
        dtype = vx.dtype
        cast = {vh.dtype, vw.dtype} | ({vb.dtype} if isinstance(vb, torch.Tensor) else set())
        if cast != {dtype}:  # autocast chose the linear's dtype
            vs = val(base)
            if torch.float64 in cast or not isinstance(vs, torch.Tensor) or \
                    vs.dtype != torch.promote_types(dtype, torch.float32):
                continue
        out[n] = (h, w, bias, dtype)
    return out


def lm_head_chunk_rows(vocab: int) -> int:
    """Rows per chunk of the chunked LM head: a power of two near LM_HEAD_CHUNK_BUFFER_BYTES of fp32 logits, at most
    4096 (the memory model reads the same rule)."""
    return min(4096, 1 << max(0, (LM_HEAD_CHUNK_BUFFER_BYTES // (4 * max(vocab, 1))).bit_length() - 1))


class ChunkedLMHead:
    """The decision (``lm_head_chains``: gather node -> (h, W, b, dtype)) and its emission: each chain's pairs
    as inputs (``setup``), the chunked op where the core reaches the gather (``emit_row``)."""

    name = "chunked_lm_head"

    def __init__(self, gm: fx.GraphModule, a: GraphAnalysis):
        self.chains = lm_head_chains(gm, a)
        self.pairs: dict = {}

    @property
    def vocab(self) -> int:
        return max((int(shape(w)[0]) for _, w, _, _ in self.chains.values()), default=0)

    def setup(self, p) -> None:
        """Per chain and stream: the flat (b, k) of each valid pair, its row among the unique rows the pairs read,
        and those rows (packed indices of the space, sorted)."""
        g = p.g
        for i, (gather, (h, _, _, _)) in enumerate(self.chains.items()):
            self.pairs[gather] = [(g.placeholder(f"rc_pairs{i}_flat_{st.name}"),
                                   g.placeholder(f"rc_pairs{i}_local_{st.name}"),
                                   g.placeholder(f"rc_pairs{i}_rows_{st.name}")) for st in p.streams]
            p.extra.append(PairInputs(p.a.space[h]))

    def emit_row(self, p, n: fx.Node) -> bool:
        if n not in self.chains:
            return False
        h, w, bias, dtype = self.chains[n]
        # the shared rows' logits are constants under detach_prefix: their pairs read a detached head
        parts = [(flat, local, rows, p.no_grad(p.get_row(w), w) if st.no_grad else p.get_row(w),
                  p.no_grad(p.get_row(bias), bias) if st.no_grad and bias is not None else p.get_row(bias))
                 for st, (flat, local, rows) in zip(p.streams, self.pairs[n])]
        p.row_env[n] = _emit_chunked_logprobs(p.g, n, shape(w), p.full(h, p.a.space[h]), parts,
                                              p.get_row(gather_args(n)[2]), p.scat[p.a.space[h]], dtype)
        return True


def _emit_chunked_logprobs(g: fx.Graph, n: fx.Node, w_shape, h, parts, index, scatter, dtype) -> fx.Node:
    """``gather(log_softmax(linear(h)), -1, index)`` at the valid (row, position) pairs of ``scatter``, zeros at
    pads, shaped like ``index``: the LM head runs once on each unique packed row the pairs read (a shared
    last-prompt row once, however many branches read it), ``chunk`` rows at a time, in ``dtype`` (the replaced
    linear's; h, weight and bias are cast to it where autocast cast them). ``parts``: (pair_flat, pair_local,
    unique rows, weight, bias) per stream."""
    vocab, hidden = int(w_shape[0]), int(w_shape[1])
    chunk = lm_head_chunk_rows(vocab)
    h2 = g.call_method("reshape", (h, (-1, hidden)))
    idx = g.call_method("reshape", (index, (-1,)))
    out = None
    for pair_flat, pair_local, uniq, w, bias in parts:
        rows = _to(g, g.call_function(torch.index_select, (h2, 0, uniq)), dtype)
        w, bias = _to(g, w, dtype), _to(g, bias, dtype)
        targets = g.call_function(torch.index_select, (idx, 0, pair_flat))
        res = g.call_function(torch.ops.replaycompile.chunked_pair_logprobs.default,
                              (rows, w, bias, pair_local, targets, chunk, 0.0))
        logp = g.call_method("to", (g.call_function(operator.getitem, (res, 0)), val(n).dtype))
        if out is None:
            out = g.call_method("new_zeros", (logp, (g.call_method("numel", (scatter,)),)))
        out = g.call_method("index_copy", (out, 0, pair_flat, logp))
    return g.call_method("view_as", (out, index))


def _to(g: fx.Graph, x, dtype):
    """``x.to(dtype)`` where ``x`` (a node of the new graph, or None) may hold another dtype; a no-op there."""
    return x if x is None else g.call_method("to", (x, dtype))
