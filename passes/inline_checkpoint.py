"""Inline activation-checkpoint regions into the graph, so the analysis sees the model's ops.

Under Dynamo, ``torch.utils.checkpoint.checkpoint`` (what ``model.gradient_checkpointing_enable()`` wraps every
decoder layer in) is traced as the higher-order op ``tag_activation_checkpoint(wrap_body_k, *operands,
use_reentrant=...)`` whose body is a submodule of the graph; in torch 2.13 this holds for ``use_reentrant=False``
and ``use_reentrant=True`` alike (no graph break; the HOP always runs the non-reentrant checkpoint). The
analysis only looks at the top-level graph, so there it would find no attention and leave the step unpacked.

This pass copies each body's nodes in place of its HOP (values are unchanged: checkpointing only decides what is
saved for backward, never what is computed; size queries whose result nothing reads are left out) and tags every
copied node the way AOT autograd's own handling of the HOP does: ``meta["recompute"] =
CheckpointPolicy.PREFER_RECOMPUTE`` and ``meta["ac_graph_id"]`` (one id per region). AOT autograd carries both
fields to the aten graph and the min-cut partitioner recomputes tagged nodes in the backward; Dynamo copies them too
when it traces this GraphModule's forward again (hence the real, not lazy, recompile). So a graph run unpacked
(declined, or a batch below ``min_shared_tokens``) keeps checkpointing's memory saving, and so does the packed
graph: the rewrite copies the tags onto the packed nodes and gives each tree attention its layer's
(passes/rewrite.py ``_kept_meta``, ``_tag_since``).

Regions with a custom ``context_fn`` (selective checkpointing) are inlined untagged: their policy is decided per
op at dispatch time and cannot be written as a static tag. Semantics-preserving on any graph; runs before the
analysis, after ``sink_slices`` (which moves only the LM head's slice, outside every region). Counts
``torch._dynamo.utils.counters["replay"]["checkpoint_regions_inlined"]``.
"""

from __future__ import annotations

import itertools
import operator

import torch
import torch.fx as fx

_region_ids = itertools.count(1 << 20)  # far from the ids AOT's own tag_activation_checkpoint hands out


def _is_checkpoint(node: fx.Node) -> bool:
    from torch._higher_order_ops.wrap import TagActivationCheckpoint

    return node.op == "call_function" and isinstance(node.target, TagActivationCheckpoint)


def _attr(gm: fx.GraphModule, target: str):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _is_size(v) -> bool:
    """A traced value that is a size: an int or SymInt, or a torch.Size / tuple of them."""
    if isinstance(v, (int, torch.SymInt)) and not isinstance(v, bool):
        return True
    return isinstance(v, tuple) and all(isinstance(x, (int, torch.SymInt)) and not isinstance(x, bool) for x in v)


def _dead_size_queries(graph: fx.Graph) -> set:
    """Nodes of a region's body that compute a size nobody reads (``attn_output.size()`` and its items, which a
    body traced with dynamic shapes keeps after the code that used them was traced away): pure, so left out of
    the inlined copy. Kept, such a query is a reader of its tensor at every token, and the selected-token pass
    (passes/selected_tokens.py) would then run the last layer at all tokens."""
    dead: set = set()
    for n in reversed(graph.nodes):
        if n.op in ("call_method", "call_function") and all(u in dead for u in n.users) and \
                _is_size(n.meta.get("example_value", n.meta.get("val"))):
            dead.add(n)
    return dead


def _inline_one(gm: fx.GraphModule, hop: fx.Node) -> bool:
    from torch._higher_order_ops.wrap import TagActivationCheckpoint
    from torch.utils.checkpoint import CheckpointPolicy

    body_node, *operands = hop.args
    if not (isinstance(body_node, fx.Node) and body_node.op == "get_attr"):
        return False
    _, body_kwargs = TagActivationCheckpoint.divide_kwargs(dict(hop.kwargs))
    body = _attr(gm, body_node.target)
    placeholders = [n for n in body.graph.nodes if n.op == "placeholder"]
    if body_kwargs or not isinstance(body, fx.GraphModule) or len(placeholders) != len(operands):
        return False  # not the shape Dynamo produces; left as it is (the analysis will say what it found)
    tag = "_checkpoint_context_fn" not in body.meta  # selective checkpointing: no static policy to write
    region = next(_region_ids)
    env: dict = dict(zip(placeholders, operands))
    dead = _dead_size_queries(body.graph)
    out = None
    with gm.graph.inserting_before(hop):
        for n in body.graph.nodes:
            if n.op == "placeholder" or n in dead:
                continue
            if n.op == "output":
                out = fx.node.map_arg(n.args[0], lambda x: env[x])
                break
            if n.op == "get_attr":  # a nested region (or a constant) of the body: hoist it into gm
                name = f"{body_node.target}_{n.target}".replace(".", "_")
                while hasattr(gm, name):
                    name += "_"
                value = _attr(body, n.target)
                if isinstance(value, torch.nn.Module):
                    gm.register_module(name, value)
                else:
                    setattr(gm, name, value)
                new = gm.graph.get_attr(name)
                new.meta = dict(n.meta)
            else:
                new = gm.graph.node_copy(n, lambda x: env[x])
                if tag:
                    new.meta["recompute"] = CheckpointPolicy.PREFER_RECOMPUTE
                    new.meta["ac_graph_id"] = region
            env[n] = new
    for user in list(hop.users):
        if user.op == "call_function" and user.target is operator.getitem and isinstance(out, (tuple, list)):
            user.replace_all_uses_with(out[user.args[1]])
            gm.graph.erase_node(user)
    if hop.users:  # used as a whole (a tuple consumer): give it the tuple, or the single value
        if not isinstance(out, fx.Node):
            with gm.graph.inserting_before(hop):
                out = gm.graph.call_function(tuple, (list(out),))
        hop.replace_all_uses_with(out)
    gm.graph.erase_node(hop)
    if not body_node.users:
        gm.graph.erase_node(body_node)
        if not any(n.op == "get_attr" and n.target == body_node.target for n in gm.graph.nodes):
            gm.delete_submodule(body_node.target)
    return True


def inline_checkpoints(gm: fx.GraphModule) -> int:
    """Inline every ``tag_activation_checkpoint`` region of ``gm`` in place (nested ones too); returns how many."""
    count = 0
    while True:
        hops = [n for n in gm.graph.nodes if _is_checkpoint(n)]
        done = sum(_inline_one(gm, h) for h in hops)
        count += done
        if not done:
            break
    if count:
        gm.graph.lint()
        # a real recompile, not a lazy one: Dynamo copies these tags onto its nodes when it traces the
        # GraphModule's forward again (the per-call fallback), but not through a lazy forward's stub
        gm.recompile()
        if hasattr(gm, "real_recompile"):  # a _LazyGraphModule
            gm.real_recompile()
        torch._dynamo.utils.counters["replay"]["checkpoint_regions_inlined"] += count
    return count
