"""Role rules: which dimension of a node's output is the batch axis and which the sequence axis.

``infer_roles(n, roles, a)`` gives the roles of ``n``'s output from its inputs' roles: a tuple (one role or None
per dimension), a reason string when ``n`` mixes tokens (it is not per-token), or None when unknown. The rules
are a table keyed by op: ``_BY_TARGET`` for functions (embedding, linear, matmul, cat, getitem, dropout),
``_BY_NAME`` for ops named alike as functions and methods (transpose, views, reductions, norms, ...), then
element-wise ops by broadcasting. Mixture-of-experts routing (sorts by expert, grouped matmuls, inverse
permutations) has rules of its own (``_routing_roles``), tried first. Facts only: the region decision
(``region.py``) decides what the roles mean for packing.
"""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING

import torch
import torch.fx as fx

from .nodes import (DROPOUT, EMBEDDING, EXPAND_NAMES, LINEAR, MATMUL, VIEW_NAMES, B, BT, T, dim_arg,
                    is_sorted_role, is_symint_node, norm_dim, op_name, same_size, shape, slots, slots_role,
                    sorted_role, val)

if TYPE_CHECKING:
    from .region import GraphAnalysis

# Ops that act on each element (with broadcasting); names cover torch.*, F.* and Tensor methods.
_ELEMENTWISE_NAMES = {
    "add", "sub", "mul", "div", "true_divide", "truediv", "neg", "pow", "rsqrt", "sqrt", "exp", "log", "log1p",
    "tanh", "sigmoid", "sin", "cos", "abs", "erf", "reciprocal", "square", "maximum", "minimum", "clamp", "clip",
    "where", "silu", "gelu", "relu", "softplus", "mish", "float", "half", "bfloat16", "double", "to", "type_as",
    "contiguous", "clone", "detach", "type", "bool", "long", "int", "eq", "ne", "lt", "le", "gt", "ge", "and_", "or_", "invert",
    "logical_and", "logical_or", "logical_not", "bitwise_and", "bitwise_or", "masked_fill", "floordiv", "mod",
    "sub_", "add_", "mul_", "tanh_", "fill_", "rsub", "_log_api_usage_once", "requires_grad_",
    "itruediv", "imul", "iadd", "isub",
    # complex rope (Llama 4: polar(1, angle)); tensors shaped like their input with constant contents (their
    # roles are the input's layout: packed, they are built on the packed tokens)
    "expm1", "polar", "ones_like", "zeros_like", "full_like", "empty_like",
    # more element-wise math (Ministral 3's per-position scale: 1 + beta * log(1 + floor(pos / L)))
    "floor", "ceil", "round", "trunc", "frac", "sign", "log2", "log10", "exp2", "sinh", "cosh", "atan", "asin",
    "acos", "atan2", "remainder", "fmod", "floor_divide", "logaddexp", "hypot", "lerp", "addcmul", "addcdiv",
    "hardtanh", "leaky_relu", "elu", "selu", "celu", "softsign", "hardswish", "hardsigmoid", "relu6",
    "nan_to_num", "isnan", "isinf", "isfinite", "signbit", "xlogy", "copysign", "bitwise_not", "bitwise_xor",
    "xor", "logical_xor", "pos", "erfc", "erfinv", "float_power", "sigmoid_", "relu_", "clamp_", "clamp_min",
    "clamp_max", "div_", "neg_", "exp_",
    # torch's aliases (Gemma 3n: torch.multiply)
    "multiply", "divide", "subtract", "negative", "greater", "greater_equal", "less", "less_equal", "not_equal",
    "absolute", "arctan", "arctan2", "clip_", "multiply_", "divide_", "subtract_", "sqrt_", "rsqrt_", "pow_",
    "copy_",  # a per-token write into a view of a packed tensor (MLA's key halves): the destination's layout
}
_REDUCE_NAMES = {"mean", "sum", "amax", "amin", "logsumexp", "norm", "var", "std", "prod", "max", "min", "argmax",
                 "argmin", "all", "any"}
_ALONG_DIM_NAMES = {"softmax", "log_softmax", "cumsum", "cumprod", "sort", "topk"}


def infer_roles(n: fx.Node, roles: dict, a: GraphAnalysis):
    """Roles of ``n``'s output, a reason string if ``n`` is not per-token, or None if unknown."""
    out_shape = shape(n)
    if n.op == "call_function" and n.target is torch.arange:
        # positions: arange(T) is a positional table, arange(B) a row index (also written arange(0, T))
        if out_shape is not None and (len(n.args) == 1 or (len(n.args) == 2 and n.args[0] == 0)
                                      or (len(n.args) == 3 and n.args[0] == 0 and n.args[2] == 1)):
            if same_size(out_shape[0], a.seq):
                return (T,)
            if same_size(out_shape[0], a.batch):
                return (B,)
        return (None,) * len(out_shape) if out_shape is not None else None
    routed = _routing_roles(n, roles, a)
    if routed is not None:
        return routed
    table = _column_slice(n, roles, a) or constant_table(n, a)
    if table is not None:
        return table
    if not any(roles.get(x) and any(r is not None for r in roles[x]) for x in n.all_input_nodes):
        return (None,) * len(out_shape) if out_shape is not None else ()
    if n.op == "call_function" and n.target in _BY_TARGET:
        return _BY_TARGET[n.target](n, roles, out_shape)
    name = op_name(n)
    base = n.args[0] if n.args else None
    br = roles.get(base) if isinstance(base, fx.Node) else None
    looked_up = _positional_lookup(n, name, br, roles)
    if looked_up is not None:
        return looked_up
    if name in _PER_TOKEN_INDEXED and br is not None and _per_token_gather(n, br, roles, a):
        # a router's gather of each token's top-k weights (``weights.gather(-1, experts)``): index and source
        # are the same token's values, so it is per-token (a vocabulary gather reads per-row labels instead)
        return br
    if br is not None and name in _BY_NAME and not _binary_min_max(n):
        return _BY_NAME[name](n, name, base, br, out_shape)
    if is_elementwise(n) or _binary_min_max(n):
        tensor_ins = [x for x in list(n.args) + list(n.kwargs.values()) if isinstance(x, fx.Node)]
        return _broadcast_roles(n, tensor_ins, roles)
    return f"an op the analysis does not know ({name}) on the sequence axis"


# -- rules by function target: (node, roles, output shape) -> roles | reason | None

def _embedding(n, roles, out_shape):
    return roles[n.args[0]] + (None,)


def _linear(n, roles, out_shape):
    if any(roles.get(x) and any(roles[x]) for x in n.args[1:] if isinstance(x, fx.Node)):
        return "a linear layer whose weight depends on the tokens"
    return roles[n.args[0]][:-1] + (None,)


def _batched_per_token(x, w, roles, out_shape):
    """Roles of ``matmul(x, w)`` when both operands carry the token axes only among their batch dims (all but the
    last two), aligned: one small matrix product per token (Gemma 3n's AltUp mixes its copies of a token's
    state with that token's coefficients), no token mixed with another. None otherwise."""
    sx, sw = shape(x), shape(w)
    if out_shape is None or sx is None or sw is None or len(sx) < 3 or len(sw) < 3:
        return None
    rx = roles.get(x) or (None,) * len(sx)
    rw = roles.get(w) or (None,) * len(sw)
    if any(rx[-2:]) or any(rw[-2:]):
        return None
    nb = len(out_shape) - 2
    bx = (None,) * (nb - len(sx) + 2) + tuple(rx[:-2])
    bw = (None,) * (nb - len(sw) + 2) + tuple(rw[:-2])
    sbx = (1,) * (nb - len(sx) + 2) + tuple(sx[:-2])
    sbw = (1,) * (nb - len(sw) + 2) + tuple(sw[:-2])
    out = []
    for a, b, na, nb_ in zip(bx, bw, sbx, sbw):
        if a == b or (b is None and nb_ == 1):
            out.append(a)
        elif a is None and na == 1:
            out.append(b)
        else:
            return None  # a token axis against an axis that is not the same token axis
    return tuple(out) + (None, None)


def _outer_product(n, x, w, roles):
    """Roles of ``matmul(x, w)`` over a contraction of size 1 (``x: [..., M, 1] @ w: [..., 1, N]``): no sum, each
    entry is the product ``x[..., m, 0] * w[..., 0, n]``, so it broadcasts as the elementwise ``x * w`` does, the
    rows' axis from x and the columns' from w (transformers <= 5.18's rotary tables, ``(inv_freq[None, :, None]
    .expand(B, -1, 1) @ position_ids[:, None, :]).transpose(1, 2)``: per-position, as the later ``position_ids
    [..., None] * inv_freq`` is). None otherwise."""
    sx, sw = shape(x), shape(w)
    if sx is None or sw is None or len(sx) < 2 or len(sw) < 2 or not (same_size(sx[-1], 1) and same_size(sw[-2], 1)):
        return None
    return _broadcast_roles(n, [x, w], roles)


def _matmul(n, roles, out_shape):
    x, w = n.args
    if isinstance(x, fx.Node) and isinstance(w, fx.Node):
        outer = _outer_product(n, x, w, roles)
        if outer is not None:
            return outer
    if isinstance(w, fx.Node) and roles.get(w) and any(roles[w]):
        per_token = _batched_per_token(x, w, roles, out_shape) if isinstance(x, fx.Node) else None
        if per_token is not None:
            return per_token
        return "a matmul between two token-dependent tensors (token mixing)"
    rx = roles[x]
    if rx[-1] is not None:
        return "a matmul that contracts the sequence axis"
    return rx[:-1] + (None,) if len(shape(w)) >= 2 else rx[:-1]


def _addmm(n, roles, out_shape):
    # GPT-2's Conv1D: addmm(bias, x.view(-1, in), weight): a linear layer on a flattened [batch*seq, in] input
    bias, x, w = (n.args + (None, None, None))[:3]
    if any(isinstance(y, fx.Node) and roles.get(y) and any(roles[y]) for y in (bias, w)):
        return "a matmul between two token-dependent tensors (token mixing)"
    rx = roles.get(x) if isinstance(x, fx.Node) else None
    if rx is None or rx[-1] is not None:
        return "a matmul that contracts the sequence axis"
    return rx[:-1] + (None,)


def _stack(n, roles, out_shape):
    # a new axis of stacked tensors (Gemma 3n's AltUp predictions): the others keep their roles
    tensors = n.args[0]
    dim = dim_arg(n, 1, 0)
    ref = next((roles[x] for x in tensors if isinstance(x, fx.Node) and roles.get(x) and any(roles[x])), None)
    if ref is None or out_shape is None:
        return None
    d = norm_dim(dim, len(out_shape))
    per = _broadcast_roles(n, list(tensors), roles, shape_of=lambda _: out_shape[:d] + out_shape[d + 1:])
    return None if per is None else per[:d] + (None,) + per[d:]


def _cat(n, roles, out_shape):
    tensors = n.args[0]
    dim = dim_arg(n, 1, 0)
    ref = next((roles[x] for x in tensors if isinstance(x, fx.Node) and roles.get(x) and any(roles[x])), None)
    if ref is None:
        return None
    if ref[norm_dim(dim, len(ref))] is not None:
        return ("concatenation along the sequence or batch axis (a KV cache? training steps should call the "
                "model with use_cache=False)")
    return _broadcast_roles(n, list(tensors), roles)


def _getitem(n, roles, out_shape):
    base, idx = n.args
    if isinstance(val(base), (tuple, list)):  # an output of chunk/split/unbind
        return roles.get(base)
    lookup = idx[0] if isinstance(idx, tuple) and len(idx) == 1 else idx
    br = roles.get(base)
    if isinstance(lookup, fx.Node) and roles.get(lookup) and any(roles[lookup]) and not (br and any(br)) \
            and shape(base) is not None:
        # a token-independent table read at a token or position index (GPT-J's ``embed_positions[position_ids]``):
        # an embedding lookup, laid out as its index then the table's row
        return tuple(roles[lookup]) + (None,) * (len(shape(base)) - 1)
    return _getitem_roles(n, roles[base], idx)


def _dropout(n, roles, out_shape):
    p = n.kwargs.get("p", n.args[1] if len(n.args) > 1 else 0.5)
    training = n.kwargs.get("training", n.args[2] if len(n.args) > 2 else True)
    if training and p:
        return f"dropout is active in train mode (p={p}); dropout is random per row"
    return roles[n.args[0]]


_BY_TARGET = {target: rule for targets, rule in ((EMBEDDING, _embedding), (LINEAR, _linear), (MATMUL, _matmul),
                                                 ({torch.cat, torch.concat, torch.concatenate}, _cat), ({torch.stack}, _stack), ({operator.getitem}, _getitem),
                                                 ({torch.addmm}, _addmm),
                                                 (DROPOUT, _dropout))
              for target in targets}


# -- rules by op name (function or method) on a first argument with roles ``br``:
#    (node, name, base, br, output shape) -> roles | reason | None

def _transpose(n, name, base, br, out_shape):
    d0, d1 = (norm_dim(d, len(br)) for d in n.args[1:3])
    r = list(br)
    r[d0], r[d1] = r[d1], r[d0]
    return tuple(r)


def _permute(n, name, base, br, out_shape):
    dims = n.args[1] if len(n.args) == 2 and isinstance(n.args[1], (tuple, list)) else n.args[1:]
    return tuple(br[norm_dim(d, len(br))] for d in dims)


def _unsqueeze(n, name, base, br, out_shape):
    d = norm_dim(dim_arg(n, 1), len(br) + 1)
    return br[:d] + (None,) + br[d:]


def _squeeze(n, name, base, br, out_shape):
    return _view_roles(shape(base), br, out_shape)


def _view(n, name, base, br, out_shape):
    r = _view_roles(shape(base), br, out_shape)
    return r if r is not None else "a reshape that mixes the sequence axis with other dimensions"


def _expand(n, name, base, br, out_shape):
    off = len(out_shape) - len(br)
    return (None,) * off + tuple(
        role if role is None or same_size(shape(base)[i], out_shape[i + off]) else None
        for i, role in enumerate(br))


def _complex_view(n, name, base, br, out_shape):
    # view_as_complex pairs the last dim's two entries into one complex number (interleaved rope as complex
    # multiplication: Llama 4); view_as_real splits them again: the other dims keep their roles
    if name == "view_as_real":
        return br + (None,)
    if br[-1] is not None:
        return "`view_as_complex` of the sequence or batch axis"
    return br[:-1]


NEW_TENSOR_NAMES = ("new_empty", "new_zeros", "new_ones", "new_full")


def _new_tensor(n, name, base, br, out_shape):
    # a fresh tensor shaped like its source (MLA's keys: ``k_nope.new_empty(B, H, T, d)`` then filled in place by
    # per-token copies): the source's layout; the rewrite gives it the packed sizes
    bs = shape(base)
    if out_shape is None or bs is None or len(bs) != len(out_shape) or \
            not all(same_size(x, y) for x, y, role in zip(bs, out_shape, br) if role is not None):
        return f"`{name}` shaped unlike its source along the sequence or batch axis"
    return br


def _repeat_interleave(n, name, base, br, out_shape):
    # each entry repeated along one dimension (ERNIE's interleaved rope tables): per-token along any other
    dim = dim_arg(n, 2)
    if dim is None:
        return "`repeat_interleave` of a flattened tensor with a sequence or batch axis"
    if br[norm_dim(dim, len(br))] is not None:
        return "`repeat_interleave` along the sequence or batch axis"
    return br


def _repeat(n, name, base, br, out_shape):
    sizes = n.args[1] if len(n.args) == 2 and isinstance(n.args[1], (tuple, list)) else n.args[1:]
    off = len(sizes) - len(br)
    if off < 0 or any(role is not None and sizes[i + off] != 1 for i, role in enumerate(br)):
        return f"`{name}` along the sequence or batch axis"
    return (None,) * off + tuple(br)


def _flip(n, name, base, br, out_shape):
    dims = n.kwargs.get("dims", n.args[1] if len(n.args) > 1 else None)
    if name == "roll":
        dims = n.kwargs.get("dims", n.args[2] if len(n.args) > 2 else None)
        if dims is None:
            return "`roll` of a flattened tensor with a sequence or batch axis"
    dims = [dims] if isinstance(dims, int) else list(dims or ())
    if any(br[norm_dim(d, len(br))] is not None for d in dims):
        return f"`{name}` along the sequence or batch axis (token mixing)"
    return br


def _reduce(n, name, base, br, out_shape):
    dim = dim_arg(n, 1)
    if dim is None:
        return "a reduction over all dimensions, including the sequence axis"
    dims = [dim] if isinstance(dim, int) else list(dim)
    dims = [norm_dim(d, len(br)) for d in dims]
    if any(br[d] is not None for d in dims):
        return f"a reduction (`{name}`) over the sequence or batch axis"
    keep = n.kwargs.get("keepdim", n.args[2] if len(n.args) > 2 else False)
    if isinstance(val(n), (tuple, list)):
        return None
    return tuple((None if i in dims else role) for i, role in enumerate(br) if keep or i not in dims)


def _norm(n, name, base, br, out_shape):
    nshape = n.kwargs.get("normalized_shape", n.args[1] if len(n.args) > 1 else None)
    k = len(nshape) if isinstance(nshape, (tuple, list)) else 1
    if any(role is not None for role in br[len(br) - k:]):
        return f"`{name}` normalises over the sequence or batch axis"
    return br


def _split(n, name, base, br, out_shape):
    dim = dim_arg(n, 2 if name != "unbind" else 1, 0)
    if br[norm_dim(dim, len(br))] is not None:
        return f"`{name}` along the sequence or batch axis"
    if name == "unbind":
        d = norm_dim(dim, len(br))
        return br[:d] + br[d + 1:]
    return br


def _along_dim(n, name, base, br, out_shape):
    dim = dim_arg(n, 1)
    if dim is None or br[norm_dim(dim, len(br))] is not None:
        return f"`{name}` along the sequence or batch axis (token mixing)"
    return br


def _gather(n, name, base, br, out_shape):
    dim = norm_dim(dim_arg(n, 1), len(br))
    if br[dim] is not None:
        return "a gather along the sequence or batch axis"
    return "a gather along the vocabulary with per-row indices"  # the rewrite turns it into an indexed replay


_BY_NAME = {name: rule for names, rule in (
    (("transpose", "swapaxes"), _transpose), (("permute",), _permute), (("unsqueeze",), _unsqueeze),
    (("squeeze",), _squeeze), (VIEW_NAMES, _view), (EXPAND_NAMES, _expand), (_REDUCE_NAMES, _reduce),
    (("rms_norm", "layer_norm"), _norm), (("chunk", "split", "tensor_split", "unbind"), _split),
    (_ALONG_DIM_NAMES, _along_dim), (("gather",), _gather),
    (("view_as_complex", "view_as_real"), _complex_view), (("repeat_interleave",), _repeat_interleave),
    (("repeat", "tile"), _repeat), (("flip", "roll"), _flip), (NEW_TENSOR_NAMES, _new_tensor)) for name in names}
assert not set(_BY_NAME) & _ELEMENTWISE_NAMES  # a name has one rule


# -- helpers of the rules

def _broadcast_roles(node: fx.Node, inputs: list, roles: dict, shape_of=shape) -> tuple | None:
    out = shape_of(node)
    if out is None:
        return None
    res = [None] * len(out)
    for a in inputs:
        sh = shape(a)
        r = roles.get(a)
        if sh is None or r is None:
            continue
        off = len(out) - len(sh)
        for i, role in enumerate(r):
            if role is None:
                continue
            j = i + off
            if not same_size(sh[i], out[j]):
                continue  # a size-1 dim broadcast against something else
            if res[j] not in (None, role):
                return None
            res[j] = role
    return tuple(res)


def _proper_divisor(a, b) -> bool:
    """a < b and a divides b, for ints or SymInts (2*s0*s1 over s0*s1), without guarding."""
    if isinstance(a, int) and isinstance(b, int):
        return a < b
    import sympy

    ea = a.node.expr if isinstance(a, torch.SymInt) else sympy.Integer(a)
    eb = b.node.expr if isinstance(b, torch.SymInt) else sympy.Integer(b)
    try:
        ratio = sympy.simplify(eb / ea)
        return ratio != 1 and sympy.fraction(ratio)[1] == 1
    except Exception:  # noqa: BLE001 - undecidable: not provably a divisor
        return False


def _view_roles(in_shape, in_roles, out_shape) -> tuple | None:
    """Map roles through a view by grouping dims of equal products. None: a role dim is mixed with others."""
    res = [None] * len(out_shape)
    i = j = 0
    ni, no = len(in_shape), len(out_shape)
    while i < ni or j < no:
        gi, gj = [], []
        pi = pj = 1
        if i < ni:
            gi.append(i); pi = in_shape[i]; i += 1
        if j < no:
            gj.append(j); pj = out_shape[j]; j += 1
        while not same_size(pi, pj):
            if _proper_divisor(pi, pj) or (j >= no and i < ni):
                if i >= ni:
                    return None
                gi.append(i); pi = pi * in_shape[i]; i += 1
            elif j < no:
                gj.append(j); pj = pj * out_shape[j]; j += 1
            else:
                return None
        # absorb trailing size-1 dims into the group they follow
        role_in = [in_roles[k] for k in gi if in_roles[k] is not None]
        real_out = [k for k in gj if not same_size(out_shape[k], 1)]
        real_in = [k for k in gi if not same_size(in_shape[k], 1)]
        if not role_in:
            continue
        if len(real_in) == 1 and len(real_out) == 1:
            res[real_out[0]] = in_roles[real_in[0]]
        elif set(role_in) <= {B, T} and len(real_out) == 1 and [in_roles[k] for k in real_in] == [B, T]:
            res[real_out[0]] = BT
        elif role_in == [BT] and len(real_out) == 2 and len(real_in) == 1:
            res[real_out[0]], res[real_out[1]] = B, T
        elif (flat := _flattenslots(in_shape, in_roles, real_in, len(real_out))) is not None:
            res[real_out[0]] = flat
        elif (split := _splitslots(in_roles, real_in, out_shape, real_out)) is not None:
            for k, role in zip(real_out, split):
                res[k] = role
        else:
            return None
    return tuple(res)


def _flattenslots(in_shape, in_roles, real_in, n_out) -> str | None:
    """[B, T, k, ...] or [BT, k, ...] (token axes, then per-token dims of static size) viewed as one dimension:
    each token's k entries stay consecutive, a token-major "BT*k" axis."""
    roles = [in_roles[k] for k in real_in]
    lead = 2 if roles[:2] == [B, T] else 1 if roles[:1] and slots(roles[0]) is not None else 0
    if n_out != 1 or not lead or any(r is not None for r in roles[lead:]):
        return None
    sizes = [in_shape[k] for k in real_in[lead:]]
    if not all(isinstance(x, int) for x in sizes):
        return None
    return slots_role((slots(roles[0]) if lead == 1 else 1) * math.prod(sizes))


def _splitslots(in_roles, real_in, out_shape, real_out) -> list | None:
    """A "BT*k" axis viewed as [BT*j, k/j ...]: the leading dim keeps whole tokens' slots, the rest are slots."""
    if len(real_in) != 1 or len(real_out) < 2 or (k := slots(in_roles[real_in[0]])) is None:
        return None
    rest = [out_shape[j] for j in real_out[1:]]
    if not all(isinstance(x, int) for x in rest) or k % math.prod(rest):
        return None
    return [slots_role(k // math.prod(rest))] + [None] * len(rest)


def _axis_of(idx: tuple, pos: int, nd: int) -> int | None:
    """The input axis that entry ``pos`` of a basic index tuple addresses (None: not one)."""
    n_real = sum(1 for x in idx if x is not None and x is not Ellipsis)
    d = 0
    for i, x in enumerate(idx):
        if i == pos:
            return d
        if x is Ellipsis:
            d += nd - n_real
        elif x is not None:
            d += 1
    return None


def _getitem_roles(node: fx.Node, base_roles: tuple, idx) -> tuple | str:
    """Roles after basic indexing. Returns a reason string when the index is not a plain per-token view."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    lists = [x for x in idx if isinstance(x, list)]
    if len(lists) == 1 and all(isinstance(i, int) for i in lists[0]) and not any(
            isinstance(x, (fx.Node, torch.Tensor)) and not is_symint_node(x) for x in idx):
        # one constant index list (Falcon's ``fused_qkv[..., [-2], :]``: its key head) keeps its axis in place,
        # as a slice would: fine on an axis that is not a token axis
        d = _axis_of(idx, idx.index(lists[0]), len(base_roles))
        if d is None or base_roles[d] is not None:
            return "advanced (tensor) indexing"
        idx = tuple(slice(None) if x is lists[0] else x for x in idx)
        return _getitem_roles(node, base_roles, idx)
    if any(isinstance(x, (fx.Node, torch.Tensor, list)) and not is_symint_node(x) for x in idx):
        return "advanced (tensor) indexing"
    nd = len(base_roles)
    n_real = sum(1 for x in idx if x is not None and x is not Ellipsis)
    out, d = [], 0
    for x in idx:
        if x is Ellipsis:
            for _ in range(nd - n_real):
                out.append(base_roles[d]); d += 1
        elif x is None:
            out.append(None)
        elif isinstance(x, slice):
            whole = x.start in (None, 0) and x.stop is None and x.step in (None, 1)
            if base_roles[d] == B and not whole:
                return "a slice of the batch axis"
            if not whole and (slots(base_roles[d]) is not None or is_sorted_role(base_roles[d])):
                # e.g. capacity routing keeping the first C of the tokens sorted by score: the cut depends on
                # how many tokens the batch holds
                return "a slice of a flattened or sorted token axis"
            out.append(base_roles[d]); d += 1
        else:  # integer index removes the dim
            if base_roles[d] is not None:
                return f"integer index on the {'sequence' if base_roles[d] == T else 'batch'} axis"
            d += 1
    out.extend(base_roles[d:])
    return tuple(out)




# gathers and scatters along a per-token dimension (a router's top-k weights; group-limited top-k's group mask,
# ``zeros_like(scores).scatter_(1, top_groups, 1)``)
_PER_TOKEN_INDEXED = {"gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce",
                      "scatter_reduce_"}


def _per_token_gather(n: fx.Node, br: tuple, roles: dict, a: GraphAnalysis) -> bool:
    """A gather or scatter along a dimension without a role whose index is an activation of the same tokens
    (packed, with the source's roles), as is any source tensor it scatters: each token reads or writes its own
    entries."""
    from .nodes import Kind

    dim = dim_arg(n, 1)
    index = n.kwargs.get("index", n.args[2] if len(n.args) > 2 else None)
    if not isinstance(dim, int) or not isinstance(index, fx.Node) or br[norm_dim(dim, len(br))] is not None:
        return False
    src = n.kwargs.get("src", n.args[3] if len(n.args) > 3 else None)
    if isinstance(src, fx.Node) and roles.get(src) != br:
        return False
    return a.kind.get(index) == Kind.PACKED and roles.get(index) == br


def _binary_min_max(n: fx.Node) -> bool:
    """torch.max(a, b) / torch.min(a, b) with a tensor b: element-wise, not a reduction (Apertus's xIELU)."""
    other = n.args[1] if len(n.args) > 1 else n.kwargs.get("other")
    return op_name(n) in ("max", "min") and isinstance(other, fx.Node) and isinstance(val(other), torch.Tensor)


def is_elementwise(n: fx.Node) -> bool:
    return op_name(n) in _ELEMENTWISE_NAMES or (n.op == "call_function" and n.target in (
        torch.rsqrt, torch.sqrt, torch.exp, torch.tanh, torch.sigmoid, torch.where, torch.neg))


def prefix_scan(n: fx.Node, roles: dict) -> bool:
    if op_name(n) not in ("cumsum", "cumprod", "cummax") or not n.args or not isinstance(n.args[0], fx.Node):
        return False
    br = roles.get(n.args[0])
    dim = dim_arg(n, 1)
    return br is not None and isinstance(dim, int) and br[norm_dim(dim, len(br))] == T



_GROUPED_MM = {"grouped_mm_fallback", "_grouped_mm", "grouped_mm"}
_CASTS = {"float", "to", "long", "int", "type_as"}


def _routing_roles(n: fx.Node, roles: dict, a: GraphAnalysis):
    """HF's experts (``integrations/moe.py``, grouped_mm) route each token on its own, but through ops that look
    token-mixing one at a time: the (token, expert) pairs are sorted by expert, grouped matmuls run over the
    sorted pairs with per-expert offsets, and an inverse permutation puts the results back. Each sorted row
    still holds one token's pair, so the chain is per-token as long as every value along the sorted axis comes
    from the same sort, the offsets are the counts of that sort's keys, and the results return through its
    inverse permutation. Roles of ``n``, a reason, or None (not a routing op; the general rules apply)."""
    name = op_name(n)
    seg_in = [x for x in n.all_input_nodes if x in a.routing.segments]
    if n.op == "call_function" and n.target is operator.getitem and isinstance(val(n.args[0]), (tuple, list)):
        base, i = n.args
        rb = roles.get(base) or ()
        if op_name(base) == "sort" and sorted_role(base) in rb:  # sort's (values, indices)
            d = rb.index(sorted_role(base))
            if i == 1:  # which slot of the sorted axis each sorted row is
                a.routing.token_index[n] = roles[base.args[0]][d]
            else:       # the keys, in sorted order: they group the rows
                a.routing.sorted_keys[n] = rb[d]
            return rb
        return None
    if name == "sort" and n.args and isinstance(n.args[0], fx.Node):
        br = roles.get(n.args[0])
        dim = dim_arg(n, 1, -1)
        if br is None or not br:
            return None
        d = norm_dim(dim, len(br))
        if slots(br[d]) is None or any(r is not None for i, r in enumerate(br) if i != d):
            return None
        # sorting a token axis mixes tokens only in the order it leaves them in; the indices say which token
        # each sorted row is (token_index), the sorted values key the groups (sorted_keys, on the getitems)
        out = list(br)
        out[d] = sorted_role(n)
        return tuple(out)
    if seg_in:
        x = seg_in[0]
        if name == "cumsum" and n.args[0] is x:
            a.routing.segments[n] = a.routing.segments[x]
            return (None,) * len(shape(n))
        if name in _GROUPED_MM:
            return _grouped_mm_roles(n, roles, a)
        return (f"the per-expert token counts at node `{x.name}` are a batch-level value (they count the tokens "
                f"of the whole batch, which a packed batch holds fewer of), used by an op other than a grouped "
                f"matmul's offsets")
    if name == "histc" and n.args and isinstance(n.args[0], fx.Node):
        key = _cast_source(n.args[0])
        if key in a.routing.sorted_keys:
            a.routing.segments[n] = a.routing.sorted_keys[key]
            return (None,) * len(shape(n))
        return None
    if name in _CASTS and n.args and n.args[0] in a.routing.sorted_keys and n.op == "call_method":
        a.routing.sorted_keys[n] = a.routing.sorted_keys[n.args[0]]
        return None  # roles as any cast
    if name in ("floordiv",) and n.args and n.args[0] in a.routing.token_index and isinstance(n.args[1], int):
        # a slot index // k is the token index ("BT*k" -> "BT")
        k = slots(a.routing.token_index[n.args[0]])
        if k is not None and n.args[1] > 0 and k % n.args[1] == 0:
            a.routing.token_index[n] = slots_role(k // n.args[1])
            return roles.get(n.args[0])
        return None
    if n.op == "call_function" and n.target is operator.getitem:
        return _token_gather_roles(n, roles, a) or _weight_gather_roles(n, roles, a)
    if name == "repeat_interleave" and n.args and isinstance(n.args[0], fx.Node):
        # each token's row repeated k times in place: a token-major slot axis (HF's batched_mm experts)
        br, reps = roles.get(n.args[0]), n.kwargs.get("repeats", n.args[1] if len(n.args) > 1 else None)
        dim = n.kwargs.get("dim", n.args[2] if len(n.args) > 2 else None)
        if br is None or not isinstance(reps, int) or not isinstance(dim, int):
            return None
        d = norm_dim(dim, len(br))
        if slots(br[d]) is None or any(r is not None for i, r in enumerate(br) if i != d):
            return None
        out = list(br)
        out[d] = slots_role(slots(br[d]) * reps)
        return tuple(out)
    if n.op == "call_function" and n.target in (torch.bmm,) and len(n.args) == 2:
        # one small matmul per slot: per-token when both operands carry the same token axis as the batch dim
        r0, r1 = (roles.get(x) if isinstance(x, fx.Node) else None for x in n.args)
        if r0 and r1 and len(r0) == len(r1) == 3 and r0[0] == r1[0] and slots(r0[0]) is not None \
                and r0[1:] == r1[1:] == (None, None):
            return (r0[0], None, None)
        return None
    if name == "empty_like" and n.args and n.args[0] in a.routing.token_index:
        perm = n.args[0]
        ar = _inverse_arange(n, perm)
        if ar is not None and is_sorted_role((roles.get(perm) or (None,))[0]) and len(roles[perm]) == 1:
            # inv[perm] = arange(n): inv maps each original slot to its sorted row
            a.routing.token_index[n] = roles[perm][0]
            a.routing.inverse_aranges[ar] = a.routing.token_index[perm]
            return (a.routing.token_index[perm],)
        return None
    if n.op == "call_function" and n.target is operator.setitem and n.args[2] in a.routing.inverse_aranges:
        return ()
    return None


# Recurrent (linear-attention / state-space) layers, by a piece of their class name: their state at a token carries
# every earlier token of the row, through ops (causal conv1d, chunked scans, triangular solves) that have no

def routing_value(x: fx.Node, a: GraphAnalysis) -> bool:
    """A value along a routing axis (k > 1 slots, or rows sorted by expert) or the batch's expert counts."""
    r = a.roles.get(x) or ()
    return x in a.routing.segments or any((slots(role) or 1) > 1 or is_sorted_role(role) for role in r)


def _cast_source(x: fx.Node) -> fx.Node:
    while isinstance(x, fx.Node) and op_name(x) in _CASTS and x.op == "call_method":
        x = x.args[0]
    return x


def _positional_lookup(n: fx.Node, name: str, br, roles: dict) -> tuple | None:
    """``torch.gather(table, d, index)`` of a table that does not depend on the tokens at an index that is a
    positional table (roles T and None only: BERT's ``token_type_ids`` buffer read at ``position_ids``): the
    result is a positional table too, laid out as its index. None otherwise."""
    if name != "gather" or (br is not None and any(br)) or not isinstance(n.args[0], fx.Node):
        return None
    index = n.kwargs.get("index", n.args[2] if len(n.args) > 2 else None)
    ri = roles.get(index) if isinstance(index, fx.Node) else None
    if ri is None or T not in ri:
        return None
    dim = norm_dim(n.kwargs.get("dim", n.args[1] if len(n.args) > 1 else 0), len(ri))
    # a batch axis of the index must meet a table equal along it (RoBERTa: the buffer expanded to the batch), so
    # that row b's lookup reads the one table
    if any(r in (B, BT) and d != dim and not _constant_along(n.args[0], d) for d, r in enumerate(ri)):
        return None
    return tuple(ri)


def _constant_along(x: fx.Node, d: int) -> bool:
    """``x`` is equal along dim ``d``: size 1 there, or an expand of a size-1 dim (through casts)."""
    while True:
        sx = shape(x)
        if sx is None or d >= len(sx):
            return False
        if sx[d] == 1:
            return True
        name = op_name(x)
        if name in ("to", "type_as", "contiguous", "long", "int", "float") and x.args and \
                isinstance(x.args[0], fx.Node):
            x = x.args[0]
            continue
        if name in EXPAND_NAMES and x.args and isinstance(x.args[0], fx.Node):
            src = shape(x.args[0])
            off = len(sx) - len(src) if src is not None else 0
            if src is None or d < off:
                return src is not None
            x, d = x.args[0], d - off
            continue
        return False


_CONSTANT_FACTORIES = {torch.zeros, torch.ones, torch.full}


def constant_table(n: fx.Node, a) -> tuple | None:
    """``torch.zeros((B, T))`` and the like (BERT-style decoders' default ``token_type_ids``): equal everywhere,
    so its batch- and sequence-long axes are those axes of a gatherable value (row b's entry at column t is the
    same as any other's). None for anything else, or where batch and sequence sizes cannot be told apart."""
    if not (n.op == "call_function" and n.target in _CONSTANT_FACTORIES) or any(
            isinstance(x, fx.Node) for x in n.all_input_nodes):
        return None
    so = shape(n)
    if so is None or same_size(a.batch, a.seq):
        return None
    if any((u.target is operator.setitem or (op_name(u).endswith("_") and not op_name(u).startswith("_")))
           and u.args and u.args[0] is n for u in n.users):
        return None  # a buffer written in place (a scan's output filled column by column): not a constant
    out = tuple(B if same_size(d, a.batch) else T if same_size(d, a.seq) else None for d in so)
    # a leading sequence axis ([T, ...], [B or 1, T, ...]) makes it a table of the tokens; a batch axis alone is
    # a per-row state's zero start (a recurrence's ``zeros(B, heads, dk, dv)``, whose dk may equal T by chance),
    # not a value of any token
    lead = (len(so) >= 1 and out[0] == T) or (len(so) >= 2 and out[1] == T and (out[0] == B or same_size(so[0], 1)))
    return out if lead else None


def _column_slice(n: fx.Node, roles: dict, a) -> tuple | None:
    """``table[:, :T]``: the first T entries along one axis of a tensor that does not depend on the tokens (BERT's
    and CTRL's ``position_ids`` / ``token_type_ids`` buffers, a learned position table): entry t is the same for
    every row, so that axis is a positional table by column (role T) whatever the values. None otherwise."""
    if not (n.op == "call_function" and n.target is operator.getitem and isinstance(n.args[0], fx.Node)):
        return None
    base, idx = n.args
    br = roles.get(base)
    sb, so = shape(base), shape(n)
    if (br is not None and any(br)) or sb is None or so is None or base in a.tokenfn:
        return None
    idx = idx if isinstance(idx, tuple) else (idx,)
    if any(x is Ellipsis or x is None or not isinstance(x, slice) for x in idx) or len(idx) > len(sb):
        return None
    cut = [d for d, x in enumerate(idx) if not (x.start in (None, 0) and x.stop is None and x.step in (None, 1))]
    if len(cut) != 1:
        return None
    d = cut[0]
    x = idx[d]
    if x.start not in (None, 0) or x.step not in (None, 1) or not same_size(so[d], a.seq) or \
            same_size(sb[d], a.seq):
        return None
    out = [None] * len(so)
    out[d] = T
    return tuple(out)


def _inverse_arange(e: fx.Node, perm: fx.Node) -> fx.Node | None:
    """The arange of ``e[perm] = arange(len(perm))`` when that write is ``e``'s only use before it is read."""
    writes = [u for u in e.users if u.op == "call_function" and u.target is operator.setitem and u.args[0] is e]
    if len(writes) != 1:
        return None
    _, idx, ar = writes[0].args
    if idx is not perm or not (isinstance(ar, fx.Node) and ar.op == "call_function" and ar.target is torch.arange):
        return None
    if len(ar.args) != 1 or len(ar.users) != 1 or not same_size(shape(ar)[0], shape(perm)[0]):
        return None
    order = {x: i for i, x in enumerate(e.graph.nodes)}
    if any(order[u] < order[writes[0]] for u in e.users if u is not writes[0]):
        return None
    return ar


def _token_gather_roles(n: fx.Node, roles: dict, a: GraphAnalysis):
    """``x[idx]`` whose index tensor holds indices into x's first axis (a token, slot or sorted-row index):
    row i of the output is the row that idx[i] names, so it takes idx's roles."""
    base, idx = n.args
    if isinstance(idx, tuple) and len(idx) == 1:
        idx = idx[0]
    if not isinstance(idx, fx.Node) or idx not in a.routing.token_index:
        return None
    br = roles.get(base)
    if br is None or not br or br[0] != a.routing.token_index[idx] or any(r is not None for r in br[1:]):
        return None
    return tuple(roles[idx]) + tuple(br[1:])


def _weight_gather_roles(n: fx.Node, roles: dict, a: GraphAnalysis):
    """``W[expert_ids]``: a parameter's rows picked per slot by an integer tensor of per-token values (each
    slot's own expert's weights), so the output takes the index's token axis. The index may be the sorted
    expert ids (GPT-OSS's per-expert biases, ``bias[expert_ids_g]``): each sorted row is one slot's."""
    base, idx = n.args
    if isinstance(idx, tuple) and len(idx) == 1:
        idx = idx[0]
    v = val(idx)
    if not (isinstance(idx, fx.Node) and base in a.paramdep and isinstance(v, torch.Tensor)
            and not v.is_floating_point() and v.dtype != torch.bool):
        return None
    ri = roles.get(idx)
    if not ri or any(slots(r) is None and not is_sorted_role(r) and r is not None for r in ri):
        return None
    return tuple(ri) + (None,) * (len(shape(base)) - 1)


def _grouped_mm_roles(n: fx.Node, roles: dict, a: GraphAnalysis):
    x = n.args[0]
    w = n.args[1] if len(n.args) > 1 else n.kwargs.get("weight", n.kwargs.get("mat2"))
    offs = n.kwargs.get("offs", n.args[2] if len(n.args) > 2 else None)
    rx = roles.get(x)
    if (rx is None or len(rx) != 2 or not is_sorted_role(rx[0]) or rx[1] is not None
            or offs not in a.routing.segments or a.routing.segments[offs] != rx[0]):
        return (f"a grouped matmul whose groups (`{getattr(offs, 'name', offs)}`) are not the expert counts of the "
                f"sort that ordered its input `{getattr(x, 'name', x)}`")
    if isinstance(w, fx.Node) and roles.get(w) and any(roles[w]):
        return "a grouped matmul whose weight depends on the tokens"
    return (rx[0], None)
