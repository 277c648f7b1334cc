"""Recurrent (linear-attention / state-space) layers in a packed graph: computed per row, or on the prefix tree.

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
RWKV, other linear attentions) keep declining with a reason that names the layer.

The tree scan (the default, ``recurrent="tree_scan"``) shares the recurrent work too: a layer whose graph has the
shape the kernel computes (``tree_scan_sites``: one packed input, its seven weights by name, q/k head count,
SiLU after the conv, the gated norm's epsilon) runs as one ``kernels.tree_scan.gated_deltanet_packed`` call on
the packed tokens, which the rewrite puts where the layer's output would be gathered back; the layer's per-row
nodes are not copied. Inside, every per-token step runs once per packed token, the conv reads each token's window
in its row, and the delta-rule scan runs piece by piece down the prefix tree, each piece starting from its parent
piece's final state (the state forks at each branch point). Its results equal eager's to rounding (the scan's
chunks start at each piece, not at the row's start). Where it does not apply the layer is computed per row and
the log says why (an inner compiler other than ``eager``, which would trace the kernel's Python over the plan; a
graph of another shape); a batch whose rows have a pad between real tokens (eager steps the state there) runs
the layer on the replayed rows inside the call (``counters["replay"]["recurrent_tree_scan_rows"]``). The stats
list the layers run each way (``recurrent_tree_scan``, ``recurrent_per_row``).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import torch
import torch.fx as fx

from .nodes import BT, B, T, Kind, op_name, shape, val

COUNTER = "recurrent_layers_per_row"  # torch._dynamo.utils.counters["replay"][COUNTER]: layers computed per row
PROBE_COUNTER = "per_row_layers_probed"  # layers whose causality per row was checked on a call's shapes


def _dotted(stack_path) -> str:
    """A module path of Dynamo's ``nn_module_stack`` (``L['self'].model.layers[0]``-style) as in
    ``model.named_modules()``."""
    path = re.sub(r"^L\['[^']*'\]\.?", "", str(stack_path))
    return re.sub(r"\[(\d+)\]", r".\1", path)


def _stack(n: fx.Node) -> list:
    """[(module path, class)] of the modules whose code traced ``n``, outermost first."""
    return [(_dotted(path), cls) for path, cls in (n.meta.get("nn_module_stack") or {}).values()]


def _cls_name(cls) -> str:
    return getattr(cls, "__name__", str(cls))


def sublayers(n: fx.Node) -> list:
    """(module path, class) of each module below the first element of a module list in ``n``'s stack, outermost
    first (``model.layers.3.self_attn``, then ``model.layers.3.self_attn.k_sconv``): the sub-layers of a decoder
    layer that traced ``n``, whatever their classes are called; [] for a node outside any such module."""
    stack = _stack(n)
    for i, (path, _) in enumerate(stack[:-1]):
        if re.search(r"\.\d+$", path):
            return stack[i + 1:]
    return []


def sublayer(n: fx.Node) -> tuple[str, type] | None:
    """The outermost of ``sublayers(n)`` (``model.layers.3.linear_attn``, ``model.layers.3.mixer``), or None."""
    subs = sublayers(n)
    return subs[0] if subs else None


def layer_of(n: fx.Node, paths) -> tuple[str, str] | None:
    """(module path, class name) of the module among ``paths`` whose code traced ``n``, or None."""
    for path, cls in _stack(n):
        if path in paths:
            return path, _cls_name(cls)
    return None


def recurrent_layer(n: fx.Node, a) -> tuple[str, str] | None:
    """(module path, class name) of the layer computed per row (``a.per_row_modules``) that traced ``n``."""
    return layer_of(n, a.per_row_modules)


def _desc(n: fx.Node) -> str:
    t = n.target
    return f"`{t if isinstance(t, str) else getattr(t, '__name__', str(t))}` at node `{n.name}`"


def layer_reason(n: fx.Node, why: str, a) -> str | None:
    """The reason for a token-mixing node inside a sub-layer of a decoder layer that holds no attention (a
    recurrent scan, a short causal convolution, whatever the layer's class): the layer becomes a candidate to be
    computed per row (``a.mixers``, read by ``region.analyze``, which analyses again with it per row) and the
    reason names it. None for a node outside such a layer."""
    # the outermost sub-layer without an attention: the layer's mixer, or a convolution inside an attention
    # module (Inkling's short convolutions of the keys and values)
    for path, cls in sublayers(n):
        if path in a.per_row_modules:
            return None
        if not any(layer_of(s.node, {path}) for s in a.attention):
            break
    else:
        return None
    a.mixers[path] = cls
    a.mixer_reasons.setdefault(path, f"{_desc(n)}: {why}")
    return (f"layer `{path}` ({_cls_name(cls)}) mixes tokens along the sequence ({_desc(n)}: {why}), so it "
            f"cannot run on the packed tokens")


def same_class_sublayers(gm: fx.GraphModule, classes) -> dict:
    """{module path: class name} of every sub-layer (``sublayer``) of the graph whose class is one of
    ``classes``: a decoder stack repeats its layer kinds, so one analysis finds them all."""
    out = {}
    for n in gm.graph.nodes:
        sub = next(((p, c) for p, c in sublayers(n) if c in classes), None)
        if sub is not None:
            out[sub[0]] = _cls_name(sub[1])
    return out


@dataclass(frozen=True)
class PerRowVerdict:
    """What the per-row rule says of one node (``classify``); the analysis applies it. ``row``: the node is
    inside a layer computed per row (a ``row`` node, replayed: the whole layer runs as eager runs it, row by
    row). ``admitted``: (value, roles) of the per-row layers' outputs the node reads, which re-enter the packed
    region as gatherable values (``a.tokenfn``, roles B, T, then per-token dims), read by the rewrite at each
    packed token from the one row the plan's ``gather_index`` names."""
    row: bool = False
    admitted: tuple = ()


def admitted_roles(x: fx.Node, user: fx.Node, a, same_size, decline, pending=()) -> tuple | None:
    """The roles with which ``x``, a row value (computed from replayed activations) that ``user`` reads,
    re-enters the packed region, when it is the ``[B, T, ...]`` output of a layer computed per row and ``user``
    is outside that layer; None when it does not. ``pending``: values admitted by the same verdict, not yet in
    ``a.tokenfn``. A per-row layer's value leaving it in another layout (a cache's state, say), or a second
    value leaving the same layer, raises ``decline`` naming the layer."""
    layer = recurrent_layer(x, a)
    if layer is None:
        return None
    inner = recurrent_layer(user, a)
    if inner is not None and inner[0] == layer[0]:
        return None  # still inside the layer: it runs per row
    path, name = layer
    v = val(x)
    shape = tuple(v.shape) if isinstance(v, torch.Tensor) else None
    flat = shape is not None and len(shape) >= 1 and same_size(shape[0], a.batch * a.seq)
    if not flat and not (shape is not None and len(shape) >= 2 and same_size(shape[0], a.batch)
                         and same_size(shape[1], a.seq)):
        raise decline(f"layer `{path}` ({name}) is computed per row, but its value `{x.name}` of shape "
                      f"{list(shape) if shape is not None else '?'} leaves the layer (read by `{user.name}`) "
                      f"without a [batch, seq, ...] layout to gather back to the packed tokens (a recurrent or "
                      f"conv state? training steps should call the model with use_cache=False)")
    gatherable = itertools.chain((y for y in a.tokenfn if isinstance(y, fx.Node) and a.kind.get(y) == Kind.ROW),
                                 pending)
    other = next((y for y in gatherable if y is not x and (recurrent_layer(y, a) or ("",))[0] == path), None)
    if other is not None:
        # the layer's output is the one value checked to be causal per row (verify_per_row); a second one (an
        # intermediate the model reads elsewhere) is not
        raise decline(f"layer `{path}` ({name}) is computed per row, but two of its values leave it "
                      f"(`{other.name}` and `{x.name}`, read by `{user.name}`); only its output can be gathered "
                      f"back to the packed tokens")
    # [B, T, ...], or [B * T, ...] (a layer that flattens its tokens, as MoE blocks do)
    return (BT,) + (None,) * (len(shape) - 1) if flat else (B, T) + (None,) * (len(shape) - 2)


def classify(n: fx.Node, a, replayed: set, same_size, decline) -> PerRowVerdict:
    """The analysis's hook, called for each node before its own rules; it reads the analysis so far and
    returns its verdict (``PerRowVerdict``), which the caller applies. A token-dependent node inside a layer
    computed per row is a ``row`` node: the caller goes on to the next node. A node outside such a layer that
    reads its output gets that output admitted back into the packed region: the caller's rules then see a
    gatherable value."""
    if a.per_row_modules and recurrent_layer(n, a) is not None:
        if not any(a.kind.get(x) == Kind.PACKED or x in a.tokenfn or x in replayed for x in n.all_input_nodes):
            return PerRowVerdict()  # weights only (the decay's -exp(A_log), say): the ordinary rules apply
        return PerRowVerdict(row=True)
    admitted = []
    for x in n.all_input_nodes:
        if x in replayed and x not in a.tokenfn:
            r = admitted_roles(x, n, a, same_size, decline, [y for y, _ in admitted])
            if r is not None:
                admitted.append((x, r))
    return PerRowVerdict(admitted=tuple(admitted))


def per_row_layers(a) -> dict:
    """{module path: class name} of the layers an analysis computes per row (their outputs re-enter the packed
    region)."""
    out = {}
    for x in a.tokenfn:
        layer = recurrent_layer(x, a) if isinstance(x, fx.Node) else None
        if layer is not None and a.kind.get(x) == Kind.ROW:
            out[layer[0]] = layer[1]
    return dict(sorted(out.items()))


def layer_output(gm: fx.GraphModule, a, path: str) -> fx.Node:
    return next(x for x in gm.graph.nodes if x in a.tokenfn and a.kind.get(x) == Kind.ROW
                and (recurrent_layer(x, a) or ("",))[0] == path)


def layer_module(gm: fx.GraphModule, a, path: str) -> tuple[fx.GraphModule, list]:
    """The layer's nodes as a module of their own: (module, the outside nodes it reads, in its placeholder
    order). Its output is the layer's output (``layer_output``)."""
    inside = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output")
              and (recurrent_layer(n, a) or ("",))[0] == path]
    inside_set = set(inside)
    ext: list = []
    for n in inside:
        for x in n.all_input_nodes:
            if x not in inside_set and x not in ext:
                ext.append(x)
    g = fx.Graph()
    env = {x: g.placeholder(f"in_{i}") for i, x in enumerate(ext)}
    for n in inside:
        env[n] = g.node_copy(n, lambda x: env[x])
    g.output(env[layer_output(gm, a, path)])
    return fx.GraphModule(gm, g), ext


def verify_per_row(gm: fx.GraphModule, a, args, placeholders: list, concrete) -> str | None:
    """Check, on this call's shapes and weights, that every layer the analysis computes per row is causal per
    row: its output at column t is unchanged when the row's inputs after t change, and each row's output is
    unchanged when another row's inputs change. That is what computing it once per row and taking one row's
    value at a shared token relies on (passes/recurrent.py's docstring); a layer recognised by its graph (a
    token-mixing op inside a sub-layer), not by its class name, is held to it before any packed call. Its
    packed inputs are random probes, everything else (weights, the padding mask) is the call's own. None when
    every layer passes; otherwise why (naming the layer), and the graph runs unpacked.

    ``concrete(node)``: the call's shape of a [batch, seq, ...] activation of the graph (symbolic sizes
    resolved)."""
    from .nodes import subgraph_module

    pos = {n: i for i, n in enumerate(placeholders)}
    g = torch.Generator().manual_seed(0)
    for path, cls in per_row_layers(a).items():
        mod, ext = layer_module(gm, a, path)
        state = [op_name(n) for n in mod.graph.nodes if n.op == "call_function" and _STATEFUL.search(op_name(n))]
        if any(state.count(x) != state.count(x.replace("increment", "decrement")) for x in state
               if "increment" in x) or any(x.startswith("_set_grad") for x in state):
            # the layer's slice of the graph changes functorch or grad-mode state that code outside it restores:
            # it cannot run alone
            return (f"layer `{path}` ({cls}) mixes tokens, and the causality probe cannot run it alone (its graph "
                    f"calls `{state[0]}` without its pair)")
        others = [x for x in ext if x.op != "placeholder" and a.kind.get(x) != Kind.PACKED]
        values = dict(zip(others, subgraph_module(gm, others)(*args))) if others else {}
        probes = []
        for x in ext:
            if a.kind.get(x) == Kind.PACKED:
                sh, v = concrete(x), val(x)
                if sh is None or not isinstance(v, torch.Tensor) or not v.is_floating_point():
                    return f"layer `{path}` ({cls}) reads `{x.name}`, which the causality probe cannot stand in for"
                probes.append(x)
                values[x] = torch.randn(sh, generator=g, dtype=torch.float32).to(v.dtype).to(
                    args[pos[a.ids]].device)
            elif x.op == "placeholder":
                values[x] = args[pos[x]]
        if not probes:
            continue
        mod = _as_rows(mod, *values[probes[0]].shape[:2])

        def run(vals):
            with torch.no_grad():
                return mod(*[vals[x] for x in ext]).float()

        try:
            base = run(values)
        except Exception as e:  # noqa: BLE001 - the model's own code, run on its own: a decline, not a crash
            return (f"layer `{path}` ({cls}) mixes tokens, and the causality probe could not run it alone "
                    f"({type(e).__name__}: {str(e).splitlines()[0][:200]})")
        b, t = base.shape[0], base.shape[1]
        # compared at real tokens only: a padded query's output is a padding artefact (a fully masked attention
        # row may attend everywhere) that the packed step never computes
        am = args[pos[a.attention_mask]] if a.attention_mask is not None else None
        real = am[:, -t:].bool() if am is not None and am.shape[0] == b and am.shape[-1] >= t else \
            torch.ones(b, t, dtype=torch.bool)
        real = real.to(base.device).reshape(b, t, *([1] * (base.dim() - 2))).expand_as(base)
        base = torch.where(real, base, 0.0)
        scale = base.abs().max().clamp_min(1e-6)
        cut = max(1, t // 2)
        later = dict(values)
        for x in probes:
            later[x] = values[x].clone()
            later[x][:, cut:] = torch.randn(later[x][:, cut:].shape, generator=g).to(later[x])
        err = (torch.where(real, run(later), 0.0)[:, :cut] - base[:, :cut]).abs().max() / scale
        if err > 1e-3:
            return (f"layer `{path}` ({cls}) mixes tokens and is not causal per row: its output at columns before "
                    f"{cut} changed (by {err:.1e} of its largest value) when only later columns of its input "
                    f"changed, so rows sharing a prefix cannot share its values")
        if b > 1:
            other = dict(values)
            for x in probes:
                other[x] = values[x].clone()
                other[x][0] = torch.randn(other[x][0].shape, generator=g).to(other[x])
            err = (torch.where(real, run(other), 0.0)[1:] - base[1:]).abs().max() / scale
            if err > 1e-3:
                return (f"layer `{path}` ({cls}) mixes the rows of the batch: its output for rows 1.. changed (by "
                        f"{err:.1e} of its largest value) when only row 0's input changed")
        why = _reads_padding(gm, a, mod, ext, probes, values, args, pos, g, path, cls)
        if why is not None:
            return why
        torch._dynamo.utils.counters["replay"][PROBE_COUNTER] += 1
    return None


def functorch_layer(gm: fx.GraphModule, a) -> str | None:
    """Why a layer computed per row cannot be: its graph changes functorch's or autograd's global state (Mamba's
    and Jamba's scans run under ``torch.vmap``), which the packed graph, retraced around the replayed rows,
    cannot carry (torch raises on a tensor escaping the vmap). None when no such layer."""
    for path, cls in per_row_layers(a).items():
        state = sorted({op_name(n) for n in gm.graph.nodes if n.op == "call_function"
                        and _STATEFUL.search(op_name(n)) and (recurrent_layer(n, a) or ("",))[0] == path})
        if state:
            return (f"layer `{path}` ({cls}) mixes tokens and runs under functorch transforms (its graph calls "
                    f"`{state[0]}`), which a packed graph cannot carry around its replayed rows")
    for n in gm.graph.nodes:
        # a functorch transform over token-dependent values anywhere else (Mamba's scan): the same
        if n.op == "call_function" and _STATEFUL.search(op_name(n)) and not op_name(n).startswith("_set_grad") \
                and any(a.kind.get(x) in (Kind.PACKED, Kind.ROW) and x not in a.paramdep and x.op != "placeholder"
                        for x in n.all_input_nodes):
            stack = list((n.meta.get("nn_module_stack") or {}).values())
            where = f" in `{_dotted(stack[-1][0])}`" if stack else ""
            return (f"`{op_name(n)}` at node `{n.name}`{where}: a functorch transform over the tokens, which a "
                    f"packed graph cannot carry")
    return None


def _as_rows(mod, b: int, t: int):
    """``mod`` with a [B * T, ...] output (a layer that flattens its tokens) seen as [B, T, ...]."""
    def run(*xs):
        out = mod(*xs)
        return out.reshape(b, t, *out.shape[1:]) if t > 1 and out.dim() >= 1 and out.shape[0] == b * t else out
    return run


# calls that change functorch's or autograd's global state (Dynamo inlines vmap and grad-mode changes as such)
_STATEFUL = re.compile(r"^_(vmap|grad|jvp)_(increment|decrement)_nesting$|^_set_grad_enabled$|^_add_batch_dim$|"
                       r"^_remove_batch_dim$|^_wrap_for_grad$|^_unwrap_for_grad$")


def _reads_padding(gm, a, mod, ext, probes, values, args, pos, g, path, cls) -> str | None:
    """Why the layer's output at real tokens depends on its input at padded positions, or None. The packed step
    never computes a padded position (a row's pads read zeros), so a layer whose real outputs carry its pads'
    values (a recurrence or conv that does not zero padded positions first, as Mamba's and the Gated
    DeltaNet's ``apply_mask_to_padding_states`` do) would differ from eager wherever a row is padded. Probed
    with a left- and right-padded mask on the call's shapes."""
    from .nodes import subgraph_module

    if a.attention_mask is None:
        return None
    am = args[pos[a.attention_mask]]
    b, t = am.shape[0], am.shape[-1]
    if t < 6:
        return None
    mask = torch.ones_like(am)
    mask[:, :2] = 0
    mask[:, -2:] = 0
    padded_args = list(args)
    padded_args[pos[a.attention_mask]] = mask
    vals = dict(values)
    others = [x for x in ext if x.op != "placeholder" and a.kind.get(x) != Kind.PACKED]
    if others:
        vals.update(zip(others, subgraph_module(gm, others)(*padded_args)))
    for x in ext:
        if x.op == "placeholder":
            vals[x] = padded_args[pos[x]]
    pad = ~mask.bool()

    def run(v):
        with torch.no_grad():
            return mod(*[v[x] for x in ext]).float()

    base = run(vals)
    moved = dict(vals)
    for x in probes:
        moved[x] = vals[x].clone()
        moved[x][pad] = torch.randn(moved[x][pad].shape, generator=g).to(moved[x])
    real = mask.bool()
    scale = base[real].abs().max().clamp_min(1e-6)
    err = (run(moved)[real] - base[real]).abs().max() / scale
    if err > 1e-3:
        return (f"layer `{path}` ({cls}) mixes tokens and its outputs at real tokens depend on its inputs at "
                f"padded positions (changed by {err:.1e} of its largest value): eager carries the pads' states into "
                f"the row, which a packed step, computing no padded position, cannot reproduce; pad on the side "
                f"the layer does not read (right padding for a causal layer) or pass no padding")
    return None


# ------------------------------------------------------------------------------------------------ tree scan

TREE_SCAN_COUNTER = "recurrent_layers_tree_scan"  # counters["replay"][...]: layers run as the tree scan

# The weights of a Qwen3NextGatedDeltaNet, in the kernel's argument order, by the end of the name Dynamo gives the
# placeholder of each (lower case; ``A_log`` becomes ``a_log``): the layer's own parameters, so no other
# placeholder of the graph ends so among the layer's inputs.
_SHARED_SUFFIXES = (
    ("conv", "conv1d_parameters_weight_"),
    ("dt_bias", "parameters_dt_bias_"),
    ("A_log", "parameters_a_log_"),
    ("norm", "norm_parameters_weight_"),
    ("out_proj", "out_proj_parameters_weight_"),
)
_WEIGHT_SUFFIXES = (  # fused projections grouped by key head (Qwen3-Next)
    ("in_proj_qkvz", "in_proj_qkvz_parameters_weight_"),
    ("in_proj_ba", "in_proj_ba_parameters_weight_"),
) + _SHARED_SUFFIXES
_SPLIT_WEIGHT_SUFFIXES = (  # separate projections (Qwen3.5, OLMo hybrid)
    ("in_proj_qkv", "in_proj_qkv_parameters_weight_"),
    ("in_proj_z", "in_proj_z_parameters_weight_"),
    ("in_proj_b", "in_proj_b_parameters_weight_"),
    ("in_proj_a", "in_proj_a_parameters_weight_"),
) + _SHARED_SUFFIXES


_MAMBA2_WEIGHT_SUFFIXES = (  # a Mamba-2 mixer (Nemotron-H, Granite 4); the conv's bias optional
    ("in_proj", "in_proj_parameters_weight_"),
    ("conv", "conv1d_parameters_weight_"),
    ("conv_bias", "conv1d_parameters_bias_"),
    ("dt_bias", "parameters_dt_bias_"),
    ("A_log", "parameters_a_log_"),
    ("D", "parameters_d_"),
    ("norm", "norm_parameters_weight_"),
    ("out_proj", "out_proj_parameters_weight_"),
)


@dataclass(frozen=True, eq=False)
class TreeScanSite:
    """A layer computed per row that the packed graph runs as one tree-scan op instead (``kind``: the kernel,
    ``tree_scan.TREE_SCAN_OPS``): its packed input, its weights (placeholders) and the op's trailing arguments
    (the sizes its weights' shapes do not say)."""

    path: str
    output: fx.Node     # the layer's [B, T, hidden] output (what re-enters the packed region)
    hidden: fx.Node     # the one packed activation the layer reads (its hidden_states)
    weights: tuple      # placeholders, in the kernel's order
    inside: frozenset   # the layer's nodes (not copied into the packed graph)
    kind: str           # "gated_deltanet" | "mamba2"
    sizes: tuple        # the op's arguments after the plan's index tensors


def _placeholder_ancestors(n: fx.Node) -> set:
    seen, todo, out = set(), [n], set()
    while todo:
        x = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        if x.op == "placeholder":
            out.add(x)
        todo.extend(x.all_input_nodes)
    return out


def _tree_scan_site(gm: fx.GraphModule, a, path: str) -> TreeScanSite | str:
    """The layer's tree-scan site, or why it stays per row (the facts; no mutation)."""
    # (Dynamo gives the layer's parameter placeholders its module stack too: they are inputs, not inside)
    inside = [n for n in gm.graph.nodes if n.op != "placeholder" and (recurrent_layer(n, a) or ("",))[0] == path]
    inside_set = frozenset(inside)
    outs = [x for x in inside if x in a.tokenfn and a.kind.get(x) == Kind.ROW]
    if len(outs) != 1:
        return f"{len(outs)} of its values leave the layer (the tree scan replaces one output)"
    ext = {x for n in inside for x in n.all_input_nodes if x not in inside_set}
    packed = [x for x in ext if a.kind.get(x) == Kind.PACKED]
    if len(packed) != 1 or a.roles.get(packed[0]) != (B, T, None) or a.space.get(packed[0], 0) != 0:
        return (f"it reads {len(packed)} packed activations ({', '.join(x.name for x in packed)}); the tree scan "
                f"takes one, [batch, seq, hidden]")
    phs = [x for x in ext if x.op == "placeholder"]
    names = [x.name.lower() for x in phs]
    mamba2 = any(n.endswith("_parameters_d_") for n in names) and any(n.endswith("in_proj_parameters_weight_")
                                                                      for n in names)
    split = any(n.endswith("in_proj_qkv_parameters_weight_") for n in names)
    weights = []
    for name, suffix in (_MAMBA2_WEIGHT_SUFFIXES if mamba2 else _SPLIT_WEIGHT_SUFFIXES if split
                         else _WEIGHT_SUFFIXES):
        hits = [x for x in phs if x.name.lower().endswith(suffix)]
        if not hits and name == "conv_bias":
            continue
        if len(hits) != 1:
            return f"its weight `{name}` is not one placeholder among its inputs (found {len(hits)})"
        weights.append(hits[0])
    for x in ext - set(packed) - set(weights):
        # the padding mask (``attention_mask[:, -T:]``): the tree scan takes padding from the plan, which was
        # built from the same mask
        if x.op == "placeholder" or _placeholder_ancestors(x) - {a.attention_mask}:
            return f"it reads `{x.name}`, which is neither one of its weights nor the attention mask"
    if mamba2:
        return _mamba2_site(path, outs[0], packed[0], weights, inside, inside_set)
    conv_w, dt_w, norm_w = weights[-5], weights[-4], weights[-2]
    conv_dim, value_dim = shape(conv_w)[0], shape(dt_w)[0] * shape(norm_w)[0]
    if split:
        # the conv's output split as [key_dim, key_dim, value_dim], the query (its first part) viewed as
        # [batch, seq, key heads, head_k_dim]
        heads = set()
        for n in inside:
            sizes = n.args[1] if op_name(n) in ("split", "split_with_sizes") and len(n.args) > 1 else None
            if not (isinstance(sizes, (list, tuple)) and len(sizes) == 3 and sum(sizes) == conv_dim
                    and sizes[0] == sizes[1] == (conv_dim - value_dim) // 2):
                continue
            query = [u for u in n.users if op_name(u) == "getitem" and u.args[1] == 0]
            heads |= {shape(v)[-1] for q in query for v in q.users if op_name(v) in ("view", "reshape")
                      and shape(v) is not None and len(shape(v)) == 4 and isinstance(shape(v)[-1], int)}
        if len(heads) != 1:
            return "its key head size is not one view of the conv's query part (the kernel needs it)"
        head_k_dim = heads.pop()
        num_k_heads = (conv_dim - value_dim) // (2 * head_k_dim)
    else:
        qkvz = weights[0]
        views = [u for n in inside if op_name(n) == "linear" and len(n.args) > 1 and n.args[1] is qkvz
                 for u in n.users if op_name(u) in ("view", "reshape")]
        view_shape = shape(views[0]) if len(views) == 1 else None
        if view_shape is None or len(view_shape) != 4 or not isinstance(view_shape[-2], int):
            return "its q/k/v/z projection is not viewed as [batch, seq, key heads, ...] (the kernel needs that count)"
        num_k_heads = view_shape[-2]
        head_k_dim = (conv_dim - value_dim) // (2 * num_k_heads)
    if not _conv_then_silu(inside):
        return "its conv1d is not followed by SiLU (the activation the kernel applies)"
    eps = _norm_eps(inside)
    if eps is None:
        return "its gated norm's epsilon is not one constant"
    return TreeScanSite(path, outs[0], packed[0], tuple(weights), inside_set, "gated_deltanet",
                        (num_k_heads, head_k_dim, eps))


def _conv_then_silu(inside) -> bool:
    convs = [n for n in inside if op_name(n) == "conv1d"]
    return len(convs) == 1 and len([u for c in convs for s in c.users for u in s.users if op_name(u) == "silu"]) == 1


def _norm_eps(inside) -> float | None:
    eps = [n.args[1] for n in inside if op_name(n) == "add"
           and any(op_name(u) == "rsqrt" and _module_path(u).endswith(".norm") for u in n.users)
           and isinstance(n.args[1], float)]
    return eps[0] if len(eps) == 1 else None


def _mamba2_site(path, output, hidden, weights, inside, inside_set) -> TreeScanSite | str:
    """A Mamba-2 mixer's site: the B/C group count (the view of the conv output's B part), the gated norm's
    group count (its grouped view), dt's clamp and the norm's epsilon, read off its graph. The math itself is
    checked against the layer on the first call (``verify_tree_scan``)."""
    by = dict(zip([k for k, _ in _MAMBA2_WEIGHT_SUFFIXES if k != "conv_bias" or len(weights) == 8], weights))
    inter, heads, conv_dim = shape(by["norm"])[0], shape(by["dt_bias"])[0], shape(by["conv"])[0]
    gn = (conv_dim - inter) // 2
    groups = set()
    for n in inside:
        sizes = n.args[1] if op_name(n) in ("split", "split_with_sizes") and len(n.args) > 1 else None
        if isinstance(sizes, (list, tuple)) and list(sizes) == [inter, gn, gn]:
            part = [u for u in n.users if op_name(u) == "getitem" and u.args[1] == 1]
            # transformers >= 5.25 splits B along the sequence first (``tensor_split(B, [T - k], dim=1)``, the
            # tokens to scan in chunks and the k kept as cached states): the view is of its first part
            for q in list(part):
                for t in q.users:
                    if op_name(t) == "tensor_split":
                        part += [u for u in t.users if op_name(u) == "getitem" and u.args[1] == 0]
            groups |= {shape(v)[-2] for q in part for v in q.users if op_name(v) in ("view", "reshape")
                       and shape(v) is not None and len(shape(v)) == 4 and isinstance(shape(v)[-2], int)}
    if len(groups) != 1 or heads % next(iter(groups)):
        return "its B/C group count is not one view of the conv output's B part (the kernel needs it)"
    n_groups = groups.pop()
    norm_groups = {shape(n)[-2] for n in inside if op_name(n) in ("view", "reshape")
                   and _module_path(n).endswith(".norm") and shape(n) is not None and len(shape(n)) >= 3
                   and isinstance(shape(n)[-1], int) and isinstance(shape(n)[-2], int)
                   and shape(n)[-1] * shape(n)[-2] == inter}
    if len(norm_groups) != 1:
        return "its gated norm's group count is not one grouped view (the kernel needs it)"
    clamps = [n for n in inside if op_name(n) in ("clamp", "clip")
              and any(op_name(x) == "softplus" for x in n.all_input_nodes)]
    if len(clamps) != 1:
        return "its time step is not one clamp of a softplus (the kernel applies the layer's limits)"
    c = clamps[0]
    lo = c.kwargs.get("min", c.args[1] if len(c.args) > 1 else None)
    hi = c.kwargs.get("max", c.args[2] if len(c.args) > 2 else None)
    if not all(v is None or isinstance(v, (int, float)) for v in (lo, hi)):
        return "its time step's limits are not constants"
    if not _conv_then_silu(inside):
        return "its conv1d is not followed by SiLU (the activation the kernel applies)"
    eps = _norm_eps(inside)
    if eps is None:
        return "its gated norm's epsilon is not one constant"
    return TreeScanSite(path, output, hidden, tuple(weights), inside_set, "mamba2",
                        (n_groups, norm_groups.pop(), float("-inf") if lo is None else float(lo),
                         float("inf") if hi is None else float(hi), eps))


def _module_path(n: fx.Node) -> str:
    stack = list((n.meta.get("nn_module_stack") or {}).values())
    return _dotted(stack[-1][0]) if stack else ""


def verify_tree_scan(gm: fx.GraphModule, a, sites: dict, args, placeholders: list, concrete) -> dict:
    """{module path: why} for the tree-scan sites whose kernel does not compute what the layer computes, on this
    call's weights, padding mask and shapes with a random input: a site is recognised by its weights' names and
    a few sizes read off its graph, so the kernel's reference (the layer row by row) is held to the layer itself
    before any packed call. A layer that fails stays per row (exact), with the difference in the log."""
    from replaycompile.kernels.ssd_tree import mamba2_rows_of
    from replaycompile.kernels.tree_scan import gated_deltanet_rows_of

    from .nodes import subgraph_module

    rows_of = {"gated_deltanet": gated_deltanet_rows_of, "mamba2": mamba2_rows_of}
    pos = {n: i for i, n in enumerate(placeholders)}
    g = torch.Generator().manual_seed(1)
    bad = {}
    for path, site in sites.items():
        mod, ext = layer_module(gm, a, path)
        others = [x for x in ext if x.op != "placeholder" and a.kind.get(x) != Kind.PACKED]
        values = dict(zip(others, subgraph_module(gm, others)(*args))) if others else {}
        for x in ext:
            if x.op == "placeholder":
                values[x] = args[pos[x]]
        sh, v = concrete(site.hidden), val(site.hidden)
        if sh is None or not isinstance(v, torch.Tensor):
            bad[path] = "the check of the tree scan against the layer could not size its input"
            continue
        weights = [args[pos[w]] for w in site.weights]
        x = torch.randn(sh, generator=g, dtype=torch.float32).to(weights[0].device, v.dtype)
        values[site.hidden] = x
        am = args[pos[a.attention_mask]] if a.attention_mask is not None else None
        mask = am[:, -sh[1]:].to(x.dtype) if am is not None else None
        try:
            with torch.no_grad():
                base = mod(*[values[y] for y in ext]).float()
                ref = rows_of[site.kind](x, mask, weights, *site.sizes).float()
        except Exception as e:  # noqa: BLE001 - a layer the kernel cannot take: per row, not a crash
            bad[path] = f"the {site.kind} kernel could not run on it ({type(e).__name__}: {str(e)[:160]})"
            continue
        real = mask.bool() if mask is not None else torch.ones(sh[:2], dtype=torch.bool)
        if base.shape != ref.shape:
            bad[path] = f"the {site.kind} kernel's output is {tuple(ref.shape)}, the layer's {tuple(base.shape)}"
            continue
        err = ((ref[real] - base[real]).abs().max() / base[real].abs().max().clamp_min(1e-6)).item()
        # float32: the kernel's chunking and einsum orders differ from eager's by ~1e-6 of the largest output
        tol = 1e-4 if v.dtype in (torch.float32, torch.float64) else 3e-2
        if not err <= tol:
            bad[path] = (f"the {site.kind} kernel differs from the layer by {err:.1e} of its largest output "
                         f"(tolerance {tol:.0e}): the layer computes something else")
    return bad


def tree_scan_sites(gm: fx.GraphModule, a) -> tuple[dict, dict]:
    """({module path: TreeScanSite}, {module path: why it stays per row}) for the layers ``a`` computes per row.
    The scan is an opaque custom op (kernels/tree_scan.py), so any inner compiler runs it: only the layer's own
    form decides."""
    sites, per_row = {}, {}
    for path, cls in per_row_layers(a).items():
        site = _tree_scan_site(gm, a, path)
        if isinstance(site, str):
            per_row[path] = site
        else:
            sites[path] = site
    return sites, per_row
