"""Rewrite a decode step's attention into Sparrow's budgeted sparse decode, with the schedule as a graph node.

A decode graph (one query token per row, a static KV cache as graph inputs) calls SDPA per layer on the whole
cache buffer with a mask that hides padding and unwritten slots, after copying the cache per query head
(``repeat_kv``). Every such call becomes ``replaycompile::sparse_decode`` on the cache buffer itself (the copy
becomes dead code): budgeted for the sparse layers, over every page (``dense=True``, the GQA group folded into
the query dimension) for the layers the schedule keeps dense. One ``replaycompile::sparrow_budget`` node per distinct mask reads the KV
length from the mask and the page count from the table, which enters as a new graph input ``rc_sparrow_table``:
a recalibrated table changes values, not the graph.

Layers are numbered by the order of their attention calls in the graph (a decode graph holds the whole model).
The number is also the op's ``state_key``: the layer whose page centroids the caller's ``SparseDecodeState``
keeps (one state per KV cache, so a layer's number names its cache; no count across graphs, so the same
model compiles to the same graph every time).
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass

import torch
import torch.fx as fx

from replaycompile.kernels import sparse_decode as _sparse_decode  # noqa: F401 - registers the ops
from .nodes import SDPA, count, val

# the torch-level SDPA functions (nodes.SDPA) and the aten op, where a graph was traced below torch functions
_SDPA = SDPA | {torch.ops.aten.scaled_dot_product_attention.default}


class NotDecode(Exception):
    """The graph is not a decode step this pass can rewrite (the message says why). ``decode_shaped``: it looks
    like one (one query token per row, or no shape to tell), so running it dense is a surprise worth a warning;
    False for graphs that are plainly something else (prefill, training, no attention)."""

    def __init__(self, message: str, decode_shaped: bool = False):
        super().__init__(message)
        self.decode_shaped = decode_shaped


@dataclass
class SparrowRewrite:
    sparse_layers: list[int]
    dense_layers: list[int]


def _cache_source(n: fx.Node) -> fx.Node | None:
    """The [B, Hkv, L, D] cache node behind SDPA's key/value argument: through HF's ``repeat_kv`` (an
    unsqueeze by indexing, expand, reshape) back to a graph input."""
    seen = 0
    while isinstance(n, fx.Node) and seen < 8:
        if n.op == "placeholder":
            return n
        name = n.target if n.op == "call_method" else getattr(n.target, "__name__", str(n.target))
        if name in ("reshape", "view", "expand", "contiguous") or n.target is operator.getitem:
            n = n.args[0]
            seen += 1
            continue
        return None
    return None


def _arg(n: fx.Node, i: int, name: str, default=None):
    if len(n.args) > i:
        return n.args[i]
    return n.kwargs.get(name, default)


def _erase_dead_chain(g: fx.Graph, nodes: list) -> None:
    """Drop the now-unused ``repeat_kv`` views/copies of the cache (never a placeholder or a mutation: a generic
    dead-code pass could take the cache's in-place ``index_copy_`` for dead)."""
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if n.op == "placeholder" or n.users or n not in g.nodes:
            continue
        name = n.target if n.op == "call_method" else getattr(n.target, "__name__", "")
        if name in ("reshape", "view", "expand", "contiguous") or n.target is operator.getitem:
            stack.extend(x for x in n.all_input_nodes)
            g.erase_node(n)


def rewrite_decode(gm: fx.GraphModule, schedule, use_triton: bool) -> tuple[fx.GraphModule, SparrowRewrite]:
    """The rewritten graph, on a copy (Dynamo still owns ``gm``); raises NotDecode when it is not a decode step."""
    sites = [n for n in gm.graph.nodes if n.op == "call_function" and n.target in _SDPA]
    if not sites:
        raise NotDecode("the graph has no scaled_dot_product_attention call")
    plans = []
    for i, n in enumerate(sites):
        q, k, v = n.args[:3]
        qv = val(q)
        if not isinstance(qv, torch.Tensor):
            raise NotDecode(f"attention `{n.name}`: its query has no shape metadata (example_value/val), so the "
                            f"pass cannot tell a decode step; compile through torch.compile, which records it",
                            decode_shaped=True)
        if qv.dim() != 4 or qv.shape[2] != 1:
            raise NotDecode(f"attention `{n.name}` has {tuple(qv.shape)} queries, not one token per row (prefill "
                            f"and training graphs stay dense)")
        mask = _arg(n, 3, "attn_mask")
        if mask is None:
            raise NotDecode(f"attention `{n.name}` has no mask (a static-cache decode step masks unwritten slots): "
                            f"pass the attention mask to the decode step", decode_shaped=True)
        if _arg(n, 4, "dropout_p", 0.0) or _arg(n, 5, "is_causal", False):
            raise NotDecode(f"attention `{n.name}` uses dropout or is_causal: decode in eval mode with a mask",
                            decode_shaped=True)
        ks, vs = _cache_source(k), _cache_source(v)
        if ks is None or vs is None:
            raise NotDecode(f"attention `{n.name}` does not read its keys/values straight from a cache input (use "
                            f"a transformers StaticCache)", decode_shaped=True)
        kv = val(ks)
        if kv is None or kv.dim() != 4 or qv.shape[1] % kv.shape[1]:
            raise NotDecode(f"cache input `{ks.name}` is not [batch, kv_heads, length, head_dim]",
                            decode_shaped=True)
        scale = _arg(n, 6, "scale")
        plans.append((i, n, q, ks, vs, mask, float(scale) if scale is not None else 1.0 / math.sqrt(qv.shape[-1])))
    g = fx.Graph()
    env: dict = {}
    g.output(g.graph_copy(gm.graph, env))
    plans = [(i, env[n], env[q], env[ks], env[vs], env[mask], scale) for i, n, q, ks, vs, mask, scale in plans]
    last_ph = [n for n in g.nodes if n.op == "placeholder"][-1]
    with g.inserting_after(last_ph):
        table = g.placeholder("rc_sparrow_table")
    # aot_autograd maps a Dynamo graph's inputs back to their sources for guards; this one has none (a
    # backend-supplied input, like a DDP-split placeholder)
    table._dynamo_source = None
    budgets: dict = {}
    for i, n, q, ks, vs, mask, scale in plans:
        if mask not in budgets:
            with g.inserting_before(n):
                budgets[mask] = g.call_function(torch.ops.replaycompile.sparrow_budget.default,
                                                (mask, table, schedule.bucket_tokens))
        with g.inserting_before(n):
            new = g.call_function(torch.ops.replaycompile.sparse_decode.default,
                                  (q, ks, vs, mask, budgets[mask], scale, schedule.page_size, schedule.sink_pages,
                                   schedule.local_pages, use_triton, i, i in schedule.dense_layers,
                                   schedule.page_score))
        old_kv = [x for x in n.args[1:3] if isinstance(x, fx.Node)]
        n.replace_all_uses_with(new)
        g.erase_node(n)
        _erase_dead_chain(g, old_kv)
    # a plain GraphModule (no Dynamo metadata): the inner compiler treats it as any FX graph
    new_gm = fx.GraphModule(gm, g)
    new_gm.meta = {}
    sparse = [p[0] for p in plans if p[0] not in schedule.dense_layers]
    count("sparrow_sites", len(plans))          # attentions now replaycompile::sparse_decode
    count("sparrow_sites_sparse", len(sparse))  # of them, those outside the schedule's dense layers
    return new_gm, SparrowRewrite(sparse_layers=sparse,
                                  dense_layers=[i for i in range(len(sites)) if i not in sparse])
