"""Attention sites of a Dynamo FX graph: SDPA calls and HF's eager matmul-softmax-matmul, as ``AttentionSite``s.

Recognition only: which node is an attention, its q/k/v, scale, mask, softcap and sinks, and the eager pattern's
inner nodes the rewrite replaces as a whole. Whether the site can be packed is ``region``'s decision.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field

import torch
import torch.fx as fx

from . import key_selection
from .nodes import (DROPOUT, EXPAND_NAMES, MATMUL, SDPA, VIEW_NAMES, Decline, dim_arg, node_desc, op_name,
                    same_size, shape)


@dataclass
class AttentionSite:
    node: fx.Node                 # the node whose output is the attention result
    q: fx.Node
    k: fx.Node
    v: fx.Node
    scale: float
    mask: fx.Node | None          # the attention-mask value to verify (bool, or additive float)
    causal_flag: bool             # SDPA is_causal=True (top-left causal) with no mask
    internal: set = field(default_factory=set)  # eager pattern nodes replaced by the site
    softcap: float = 0.0          # scores c * tanh(s / c) before the mask (Gemma 2), 0: none
    sinks: fx.Node | None = None  # per-head sink logits [Hq] joining the softmax (GPT-OSS), None: none
    # the mask narrowed to each query's top-k keys (key_selection.KeySelection; ``mask`` is then the causal
    # mask it narrows), None: none
    selection: object = None


def _sdpa_site(node: fx.Node) -> AttentionSite:
    args = list(node.args) + [None] * 6
    q, k, v = args[0], args[1], args[2]
    kw = node.kwargs
    mask = kw.get("attn_mask", args[3])
    dropout_p = kw.get("dropout_p", args[4] if args[4] is not None else 0.0)
    is_causal = kw.get("is_causal", args[5] if args[5] is not None else False)
    scale = kw.get("scale", None)
    if isinstance(dropout_p, fx.Node) or (dropout_p or 0.0) > 0.0:
        raise Decline(f"attention {node_desc(node)} uses dropout (dropout_p={dropout_p}): dropout is random per "
                      "row, so shared tokens cannot be computed once; set attention_dropout=0 or call model.eval()")
    if mask is None and not is_causal:
        raise Decline(f"attention {node_desc(node)} is bidirectional (no mask, is_causal=False): a token would "
                      "see later tokens, so prefixes cannot be shared")
    if mask is not None and is_causal:
        raise Decline(f"attention {node_desc(node)} has both a mask and is_causal=True")
    if scale is None:
        scale = 1.0 / math.sqrt(shape(q)[-1])
    if not isinstance(scale, (int, float)):
        raise Decline(f"attention {node_desc(node)} has a data-dependent scale")
    return AttentionSite(node, q, k, v, float(scale), mask, bool(is_causal and mask is None))


def _skip(n: fx.Node, internal: set) -> fx.Node:
    """Walk up through dtype casts and inactive dropout in the eager attention pattern."""
    while isinstance(n, fx.Node):
        name = op_name(n)
        if name in {"to", "float", "type_as", "contiguous"} and n.op == "call_method":
            internal.add(n)
            n = n.args[0]
        elif n.op == "call_function" and n.target in DROPOUT:
            p = n.kwargs.get("p", n.args[1] if len(n.args) > 1 else 0.5)
            training = n.kwargs.get("training", n.args[2] if len(n.args) > 2 else True)
            if training and p:
                raise Decline(f"dropout {node_desc(n)} is active in train mode (p={p}): dropout is random per "
                              "row; call model.eval() or set the dropout probabilities to 0")
            internal.add(n)
            n = n.args[0]
        else:
            return n
    return n


def _is_last_dim(n: fx.Node, dim) -> bool:
    return dim in (-1, len(shape(n)) - 1)


def _const_arg(n, names) -> float | None:
    """c of ``x <op> c`` (a Python number), for ``op`` in names; else None."""
    if isinstance(n, fx.Node) and op_name(n) in names and len(n.args) == 2 and isinstance(n.args[1], (int, float)) \
            and not isinstance(n.args[1], bool):
        return float(n.args[1])
    return None


def _softcap(scores: fx.Node, internal: set):
    """(c, capped input) when ``scores`` is ``tanh(x / c) * c`` (HF Gemma 2's attn_logit_softcapping), else
    (0.0, scores)."""
    c = _const_arg(scores, {"mul"})
    t = scores.args[0] if c else None
    if not (isinstance(t, fx.Node) and op_name(t) == "tanh" and len(t.users) == 1):
        return 0.0, scores
    d = t.args[0]
    if not (isinstance(d, fx.Node) and len(d.users) == 1 and c > 0 and (
            _const_arg(d, {"truediv", "div"}) == c or _const_arg(d, {"mul"}) == 1.0 / c)):
        return 0.0, scores
    internal.update((scores, t, d))
    return c, d.args[0]


def _sink_column(probs: fx.Node, internal: set):
    """(sinks [Hq], the scores) when ``probs`` is ``softmax(cat([scores, sinks], -1) [- max])[..., :-1]`` with
    ``sinks`` a per-head vector reshaped and expanded to [B, Hq, T, 1] (HF GPT-OSS's eager attention), else
    None. The max subtracted first changes no probability; the dropped last column is the sink's."""
    if not (isinstance(probs, fx.Node) and probs.op == "call_function" and probs.target is operator.getitem):
        return None
    sm, idx = probs.args
    if idx not in ((Ellipsis, slice(None, -1, None)),) or not (isinstance(sm, fx.Node) and op_name(sm) == "softmax"):
        return None
    if not _is_last_dim(sm, sm.kwargs.get("dim", sm.args[1] if len(sm.args) > 1 else None)) or len(sm.users) != 1:
        return None
    combined = sm.args[0]
    part = {probs, sm}
    if isinstance(combined, fx.Node) and op_name(combined) == "sub" and len(combined.args) == 2:
        m = combined.args[1]  # combined - combined.max(-1, keepdim=True).values
        mx = m.args[0] if isinstance(m, fx.Node) and m.op == "call_function" and m.target is operator.getitem \
            and m.args[1] == 0 else None
        if not (isinstance(mx, fx.Node) and op_name(mx) in ("max", "amax") and mx.args[0] is combined.args[0]
                and _is_last_dim(mx.args[0], dim_arg(mx, 1))):  # a constant along the softmax's axis
            return None
        part |= {combined, m, mx}
        combined = combined.args[0]
    if not (isinstance(combined, fx.Node) and combined.op == "call_function" and combined.target is torch.cat
            and _is_last_dim(combined, dim_arg(combined, 1, 0)) and len(combined.args[0]) == 2):
        return None
    scores, col = combined.args[0]
    if not (isinstance(col, fx.Node) and shape(col) is not None and same_size(shape(col)[-1], 1)):
        return None  # one column, the one the slice drops
    part.add(combined)
    while isinstance(col, fx.Node) and op_name(col) in EXPAND_NAMES | VIEW_NAMES and col.op == "call_method" \
            and len(col.users) == 1:
        part.add(col)
        col = col.args[0]
    hq = shape(scores)[1] if shape(scores) and len(shape(scores)) == 4 else None
    if not (isinstance(col, fx.Node) and shape(col) is not None and len(shape(col)) == 1 and hq is not None
            and same_size(shape(col)[0], hq)):
        return None
    internal |= part
    return col, scores


def _eager_site(node: fx.Node) -> AttentionSite | None:
    """matmul(softmax(matmul(q, k^T) * scale + mask), v), as in HF's eager_attention_forward; with Gemma 2's
    softcapping (``tanh(s / c) * c`` before the mask) or GPT-OSS's sinks (a column per head joining the
    softmax, dropped after it)."""
    internal: set = set()
    probs = _skip(node.args[0], internal)
    sink = _sink_column(probs, internal)
    sinks = None
    if sink is not None:
        sinks, scores = sink
    else:
        if not (isinstance(probs, fx.Node) and op_name(probs) == "softmax"):
            return None
        dim = probs.kwargs.get("dim", probs.args[1] if len(probs.args) > 1 else None)
        if not _is_last_dim(probs, dim):
            return None
        internal.add(probs)
        scores = probs.args[0]
    masked = scores
    mask = None
    if op_name(scores) in {"add", "iadd"} and len(scores.args) == 2:
        internal.add(scores)
        scores, mask = scores.args
    softcap, scores = _softcap(scores, internal)
    scale = 1.0
    if op_name(scores) in {"mul", "truediv", "div"} and isinstance(scores.args[1], (int, float)):
        internal.add(scores)
        s = float(scores.args[1])
        scale = s if op_name(scores) == "mul" else 1.0 / s
        scores = scores.args[0]
    merged = _merged_heads_scores(scores, internal)
    if merged is not None:
        q, k, alpha = merged
        site = AttentionSite(node, q, k, node.args[1], scale * alpha, mask, False, internal, softcap, sinks)
        return _rescaled_by_sinks(site, masked) if sinks is None else site
    if not (isinstance(scores, fx.Node) and scores.op == "call_function" and scores.target in MATMUL):
        return None
    internal.add(scores)
    q, kt = scores.args
    if not (isinstance(kt, fx.Node) and op_name(kt) in {"transpose", "mT"}):
        return None
    if op_name(kt) == "transpose":
        dims = {d % 4 for d in kt.args[1:3]}
        if dims != {2, 3}:
            return None
    internal.add(kt)
    site = AttentionSite(node, q, kt.args[0], node.args[1], scale, mask, False, internal, softcap, sinks)
    return _rescaled_by_sinks(site, masked) if sinks is None else site


def _merged_heads_scores(scores: fx.Node, internal: set):
    """(q, k, alpha) when ``scores`` is ``baddbmm(zeros(B*H, T, S), q.view(B*H, T, D), k.view(B*H, S, D)
    .transpose(1, 2), alpha=alpha).view(B, H, T, S)`` with q, k of shape [B, H, T|S, D] (GPT-NeoX-Japanese's
    eager attention: batch and heads merged into bmm's one batch axis and split again): the scores of
    ``q @ k^T * alpha``, so the attention of q and k; else None. The zeros make ``beta`` irrelevant."""
    if not (isinstance(scores, fx.Node) and op_name(scores) in ("view", "reshape") and len(scores.users) == 1):
        return None
    bmm = scores.args[0]
    if not (isinstance(bmm, fx.Node) and bmm.target in (torch.baddbmm, torch.bmm) and len(bmm.users) == 1):
        return None
    args = list(bmm.args)
    if bmm.target is torch.baddbmm:
        base, args = args[0], args[1:]
        if not (isinstance(base, fx.Node) and base.target is torch.zeros and len(base.users) == 1):
            return None
    if len(args) != 2:
        return None
    alpha = bmm.kwargs.get("alpha", 1.0) if bmm.target is torch.baddbmm else 1.0
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool):
        return None
    q3, kt = args
    if not (isinstance(kt, fx.Node) and op_name(kt) == "transpose" and {d % 3 for d in kt.args[1:3]} == {1, 2}):
        return None
    k3 = kt.args[0]
    out = shape(scores)
    parts = []
    for x3 in (q3, k3):
        if not (isinstance(x3, fx.Node) and op_name(x3) in ("view", "reshape") and x3.op == "call_method"):
            return None
        x = x3.args[0]
        sx, s3 = shape(x), shape(x3)
        if sx is None or s3 is None or out is None or len(sx) != 4 or len(s3) != 3 or len(out) != 4 or not (
                same_size(sx[0] * sx[1], s3[0]) and same_size(sx[2], s3[1]) and same_size(sx[3], s3[2])
                and same_size(sx[0], out[0]) and same_size(sx[1], out[1])):
            return None
        parts.append(x)
    internal.update((scores, bmm, kt) + ((bmm.args[0],) if bmm.target is torch.baddbmm else ()))
    internal.update(x3 for x3 in (q3, k3) if len(x3.users) == 1)
    return parts[0], parts[1], float(alpha)


def _strip(n, names=("to", "float", "type_as", "contiguous")):
    """(n through dtype casts, the casts passed)."""
    seen = []
    while isinstance(n, fx.Node) and n.op == "call_method" and op_name(n) in names:
        seen.append(n)
        n = n.args[0]
    return n, seen


def _rescaled_by_sinks(site: AttentionSite, masked: fx.Node) -> AttentionSite:
    """The site as ``out * sigmoid(logsumexp(masked scores) - sinks)`` (Granite's sliding-window attention with
    sinks, written as a rescale after the softmax rather than GPT-OSS's extra column; the same function): the
    site becomes that product, its sinks the per-head vector. Else the site as it is."""
    users = [u for u in site.node.users]
    casts = []
    out = site.node
    while len(users) == 1 and users[0].op == "call_method" and op_name(users[0]) in ("to", "float", "contiguous"):
        casts.append(users[0])
        out = users[0]
        users = list(out.users)
    if len(users) != 1 or op_name(users[0]) != "mul" or len(users[0].args) != 2:
        return site
    mul = users[0]
    other = mul.args[1] if mul.args[0] is out else mul.args[0]
    chain: list = []
    x, seen = _strip(other)
    chain += seen
    if not (isinstance(x, fx.Node) and op_name(x) == "unsqueeze" and x.args[1:] in ((-1,), (3,))):
        return site
    chain.append(x)
    x, seen = _strip(x.args[0])
    chain += seen
    if not (isinstance(x, fx.Node) and op_name(x) == "sigmoid"):
        return site
    chain.append(x)
    x, seen = _strip(x.args[0])
    chain += seen
    if not (isinstance(x, fx.Node) and op_name(x) == "sub" and len(x.args) == 2):
        return site
    chain.append(x)
    lse, sv = x.args
    if not (isinstance(lse, fx.Node) and op_name(lse) == "logsumexp" and lse.args[0] is masked
            and lse.kwargs.get("dim", lse.args[1] if len(lse.args) > 1 else None) in (-1, 3, [-1], (-1,))
            and not lse.kwargs.get("keepdim", False)
            and isinstance(sv, fx.Node) and op_name(sv) in ("view", "reshape")):
        return site
    sinks = sv.args[0]
    if not (isinstance(sinks, fx.Node) and sinks.op == "placeholder" and shape(sinks) is not None
            and len(shape(sinks)) == 1 and tuple(sv.args[1:]) in ((1, -1, 1), ((1, -1, 1),))):
        return site
    chain += [lse, sv]
    if any(len(n.users) != 1 for n in chain if n is not lse) or len(lse.users) != 1:
        return site
    internal = set(site.internal) | {site.node} | set(casts) | set(chain)
    return AttentionSite(mul, site.q, site.k, site.v, site.scale, site.mask, False, internal, site.softcap, sinks)


def find_attention_sites(gm: fx.GraphModule) -> list:
    """Every attention of the graph, in graph order (raises ``Decline`` for one that can never be packed:
    dropout, bidirectional, a data-dependent scale)."""
    sites = []
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in SDPA:
            sites.append(_sdpa_site(node))
        elif node.op == "call_function" and node.target in MATMUL:
            site = _eager_site(node)
            if site is not None:
                sites.append(site)
    key_selection.find_all(sites)
    return sites

