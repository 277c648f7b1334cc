"""Recurrent (linear-attention / state-space) layers in a packed graph: computed per row, exactly.

A recurrent layer's output at token t carries every earlier token of its row, through a state (a Gated
DeltaNet's short causal conv1d and its delta-rule scan) that no per-token layout holds: run on the packed row,
a branch's scan would read the previous branch's tokens as its history. So such a layer runs in the row layout:
every token-dependent node of the layer (by Dynamo's ``nn_module_stack``) is a ``row`` node, so its packed
inputs are replayed to ``[B, T, ...]`` (each row its own root-to-leaf path, right-padded, exactly as eager sees
it), and the layer's ``[B, T, ...]`` output re-enters the packed region where the decoder layer reads it (the
residual add): each packed token takes the value of one row that contains it (``ops.pack_rows`` at the plan's
``gather_index``). That is exact, not an approximation: the layer is causal per row, so a shared token's
output is the same function of the same inputs in every row that holds it, and autograd through the one copy
taken (plus the replay's scatter-add of every row's gradient into the packed inputs) is the gradient of that
function. What it gives up is the sharing inside the recurrent layer only (its projections, conv, scan and
gated norm run on B x T positions); the attention and MLP layers stay packed, and the stats and the log say per
layer that it was "computed per row".

Only layer classes whose traced computation was checked to be causal per row (loss and every gradient
against eager, flat groups and two-level trees: tests/test_hybrid.py) are computed per row; the others (Mamba,
RWKV, other linear attentions) keep declining with a reason that names the layer. The tree scan that would
share the recurrent work too (each prefix-tree segment's scan starting from its parent's final conv and
recurrent state) is not built.
"""

from __future__ import annotations

import re

import torch
import torch.fx as fx

from .nodes import B, T, Kind

# Recurrent layers, by a piece of their class name: their state at a token carries every earlier token of the
# row, through ops (causal conv1d, chunked scans, triangular solves) that have no per-token layout; a decline
# inside one names the layer, not the first op the analysis met.
RECURRENT_LAYERS = (
    ("GatedDeltaNet", "Gated DeltaNet (linear attention)"),
    ("Mamba", "Mamba (state-space)"),
    ("LinearAttention", "linear attention"),
    ("Rwkv", "RWKV (linear attention)"),
)

# Classes computed per row (exact), by exact class name: HF Qwen3-Next's Gated DeltaNet, with transformers'
# torch fallbacks (torch_causal_conv1d / torch_chunk_gated_delta_rule) or the flash-linear-attention and
# causal-conv1d kernels, which compute the same causal functions per row. Its padding handling is per row too
# (``apply_mask_to_padding_states`` zeroes padded positions of the row before the conv).
PER_ROW_CLASSES = frozenset({"Qwen3NextGatedDeltaNet"})

COUNTER = "recurrent_layers_per_row"  # torch._dynamo.utils.counters["replay"][COUNTER]: layers computed per row


def recurrent_layer(n: fx.Node) -> tuple[str, str, str] | None:
    """(module path as in ``model.named_modules()``, class name, kind) of the innermost recurrent layer whose
    code traced ``n`` (Dynamo's ``nn_module_stack``), or None."""
    for path, cls in reversed(list((n.meta.get("nn_module_stack") or {}).values())):
        name = getattr(cls, "__name__", str(cls))
        kind = next((k for key, k in RECURRENT_LAYERS if key.lower() in name.lower()), None)
        if kind is not None:
            return re.sub(r"^L\['[^']*'\]\.?", "", str(path)), name, kind
    return None


def _desc(n: fx.Node) -> str:
    t = n.target
    return f"`{t if isinstance(t, str) else getattr(t, '__name__', str(t))}` at node `{n.name}`"


def layer_reason(n: fx.Node, why: str) -> str | None:
    """The reason for a token-mixing node inside a recurrent layer, naming the layer (its module path and class).
    For a class computed per row this is the boundary where the layer leaves the packed region (a decline only
    if its output cannot re-enter it, see ``admit_output``); for the others it is why the graph is declined."""
    layer = recurrent_layer(n)
    if layer is None:
        return None
    path, name, kind = layer
    if name in PER_ROW_CLASSES:
        return (f"{kind} layer `{path}` ({name}) is computed per row (its recurrent and conv state carry every "
                f"earlier token of the row); its first token-mixing op is {_desc(n)}: {why}")
    return (f"{kind} layer `{path}` ({name}): its recurrent state (and its short causal convolution) carries "
            f"every earlier token of the row, and replay computes per row only the layer classes checked to be "
            f"causal per row ({', '.join(sorted(PER_ROW_CLASSES))}), so rows sharing a prompt run unpacked "
            f"(results equal eager's); the first token-mixing op is {_desc(n)}: {why}")


def _val(n: fx.Node):
    return n.meta.get("example_value", n.meta.get("val"))


def admit_output(x: fx.Node, user: fx.Node, a, same_size, decline) -> bool:
    """Let ``x``, a row value (computed from replayed activations) that ``user`` reads, re-enter the packed
    region when it is the ``[B, T, ...]`` output of a layer computed per row and ``user`` is outside that
    layer: ``x`` becomes gatherable (``a.tokenfn``, roles B, T then per-token dims), which the rewrite reads
    at each packed token from the one row the plan's ``gather_index`` names. True when admitted. A per-row
    layer's value leaving it in another layout (a cache's state, say) raises ``decline`` naming the layer."""
    layer = recurrent_layer(x)
    if layer is None or layer[1] not in PER_ROW_CLASSES:
        return False
    inner = recurrent_layer(user)
    if inner is not None and inner[0] == layer[0]:
        return False  # still inside the layer: it runs per row
    path, name, kind = layer
    v = _val(x)
    shape = tuple(v.shape) if isinstance(v, torch.Tensor) else None
    if not (shape is not None and len(shape) >= 2 and same_size(shape[0], a.batch) and same_size(shape[1], a.seq)):
        raise decline(f"{kind} layer `{path}` ({name}) is computed per row, but its value `{x.name}` of shape "
                      f"{list(shape) if shape is not None else '?'} leaves the layer (read by `{user.name}`) "
                      f"without a [batch, seq, ...] layout to gather back to the packed tokens (a recurrent or "
                      f"conv state? training steps should call the model with use_cache=False)")
    other = next((y for y in a.tokenfn if y is not x and isinstance(y, fx.Node) and a.kind.get(y) == Kind.ROW
                  and (recurrent_layer(y) or ("",))[0] == path), None)
    if other is not None:
        # the layer's output is the one value known to be causal per row; a second one (an intermediate the
        # model reads elsewhere) is not vouched for
        raise decline(f"{kind} layer `{path}` ({name}) is computed per row, but two of its values leave it "
                      f"(`{other.name}` and `{x.name}`, read by `{user.name}`); only its output can be gathered "
                      f"back to the packed tokens")
    a.tokenfn.add(x)
    a.roles[x] = (B, T) + (None,) * (len(shape) - 2)
    return True


def classify(n: fx.Node, a, replayed: set, same_size, decline) -> bool:
    """The analysis's hook, called for each node before its own rules. A token-dependent node inside a layer
    computed per row is a ``row`` node (its packed inputs are replayed to ``[B, T, ...]``, so the whole layer
    runs as eager runs it, row by row): True, the caller goes on to the next node. A node outside such a layer
    that reads its output gets that output admitted back into the packed region (``admit_output``): False,
    the caller's rules then see a gatherable value."""
    layer = recurrent_layer(n)
    if layer is not None and layer[1] in PER_ROW_CLASSES:
        if not any(a.kind.get(x) == Kind.PACKED or x in a.tokenfn or x in replayed for x in n.all_input_nodes):
            return False  # weights only (the decay's -exp(A_log), say): the ordinary rules apply
        a.kind[n], a.roles[n] = Kind.ROW, None
        replayed.add(n)
        return True
    for x in n.all_input_nodes:
        if x in replayed and x not in a.tokenfn:
            admit_output(x, n, a, same_size, decline)
    return False


def per_row_layers(a) -> dict:
    """{module path: class name} of the recurrent layers an analysis computes per row (their outputs re-enter
    the packed region)."""
    out = {}
    for x in a.tokenfn:
        layer = recurrent_layer(x) if isinstance(x, fx.Node) else None
        if layer is not None and layer[1] in PER_ROW_CLASSES and a.kind.get(x) == Kind.ROW:
            out[layer[0]] = layer[1]
    return dict(sorted(out.items()))
