"""Attention-mask verification at any sequence length, in O(B * m^2) for a few hundred probe positions m.

The packed graph replaces every attention by tree attention, which is right only if the model's mask is
causal-with-padding: query q of row b sees key k exactly when ``k <= q`` and ``attention_mask[b, k]``. The mask
is built in the graph (HF: aranges, comparisons, the padding mask, and/or), so it is a graph fact, checked once
per graph here rather than on a B x T x T evaluation per input shape.

How: the sequence length T reaches the mask subgraph only as the length of ``arange(T)`` index vectors (the query
and key positions) and as sizes of expands and views. Replacing each such arange by a chosen sorted index
vector ``S`` (and T by ``len(S)`` in sizes) evaluates the very same mask function on the pairs ``S x S`` of a
sequence of any virtual length, with a synthetic padding mask of that length. A mask subgraph that uses T in any
other way (``ones(T, T).tril()``, a T-dependent window) is not rewritten: ``structured_mask_module`` returns
None and the caller falls back to the full evaluation, or declines.

Why S is enough for the masks transformers builds (compositions of causal ``k <= q``, sliding window
``q - k < W``, chunked ``q // C == k // C``, bidirectional / prefix-LM ``k < L``, packed-sequence segments and the
padding lookup ``attention_mask[b, k]``):

- a window or chunking that hides any key at distance < T hides key 0 from query T-1: S holds 0 and T-1 (and
  every distance between two powers of two, so a power-of-two chunk boundary ``(C-1, C)`` is seen too);
- a mask that lets a query see a later key (bidirectional, prefix-LM with L >= 2) does so for ``(0, 1)``: S holds
  a dense run ``0..DENSE-1``;
- the padding lookup is checked at every padding boundary of the probe rows (left-padded, right-padded, both,
  all padding, none), whose positions S holds with their neighbours.

The virtual lengths checked are the call's T and ``LONG_CONTEXT`` (and any later call's longer T), so a window of
4096 is found at T = 8K even when the first batch is short. Masks outside these families (hiding an isolated
pair in the middle) could pass: such masks are not what transformers builds.
"""

from __future__ import annotations

import torch
import torch.fx as fx

from replaycompile.kernels.block_sparse import mask_visible

from .nodes import same_size, upstream

DENSE = 64            # the dense run at the start and the end of every virtual sequence
LONG_CONTEXT = 1 << 17  # a long virtual length checked once per graph (windows and chunks below it show)


def probe_positions(t: int, boundaries=()) -> torch.Tensor:
    """Sorted unique positions in [0, t): a dense start and end, powers of two and their neighbours, and each
    given boundary with its neighbours."""
    pts = set(range(min(DENSE, t))) | set(range(max(t - DENSE, 0), t))
    p = 1
    while p < t:
        pts |= {p - 1, p, p + 1}
        p <<= 1
    for b in boundaries:
        pts |= {b - 1, b, b + 1}
    return torch.tensor(sorted(x for x in pts if 0 <= x < t), dtype=torch.int64)


def padding_probes(t: int) -> torch.Tensor:
    """[6, t] 0/1 masks: no padding, left-padded, right-padded, both (TRL's prompt + completion), all padding,
    a single real token."""
    r = torch.arange(t)
    a, b = t // 3, (2 * t) // 3
    rows = [r >= 0, r >= a, r < b, (r >= a) & (r < b), r < 0, r == t // 2]
    return torch.stack(rows).to(torch.int64)


def probe_boundaries(t: int) -> list[int]:
    return [0, t // 3, (2 * t) // 3, t // 2, t - 1]


def _value(x):
    return x.meta.get("example_value", x.meta.get("val")) if isinstance(x, fx.Node) else x


def _equals(x, size) -> bool:
    """x (an int, or a node whose value is a SymInt) is ``size`` (an int or SymInt)."""
    v = _value(x)
    if isinstance(v, bool) or not isinstance(v, (int, torch.SymInt)):
        return False
    if isinstance(v, int) and isinstance(size, int):
        return v == size
    return isinstance(v, torch.SymInt) and isinstance(size, torch.SymInt) and same_size(v, size)


_SIZE_METHODS = ("expand", "view", "reshape")
_SCANS = {torch.diff, torch.cumsum, torch.cumprod, "diff", "cumsum", "cumprod", "cummax", "cummin", torch.cummax,
          torch.cummin}


def structured_mask_module(gm: fx.GraphModule, masks: list, seq, batch, attention_mask: fx.Node | None
                           ) -> fx.GraphModule | None:
    """A module computing ``masks`` from the graph's inputs plus two last inputs, ``rc_index`` (a sorted int64
    index vector S) and ``rc_batch`` (the probe's row count), as if every ``arange(T)`` of the mask subgraph
    were S and the batch had rc_batch rows. None if T reaches the mask other than through ``arange(T)`` and the
    sizes of expands and views, or if a tensor input other than ``attention_mask`` (token ids, positions) feeds
    the mask (its length is the real T)."""
    needed = upstream(masks)
    for n in needed:
        if n.op == "placeholder" and isinstance(_value(n), torch.Tensor) and n is not attention_mask:
            return None
    if isinstance(seq, int) and isinstance(batch, int) and seq == batch:
        return None  # a static graph whose two sizes are one number: they cannot be told apart
    g = fx.Graph()
    env: dict = {}
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            env[n] = g.placeholder(n.name)
    index = g.placeholder("rc_index")
    rows = g.placeholder("rc_batch")
    m = g.call_method("size", (index, 0))
    found = False

    def size_arg(x):
        if isinstance(x, (list, tuple)):
            return type(x)(size_arg(y) for y in x)
        if _equals(x, seq):
            return m
        if _equals(x, batch):
            return rows
        return env[x] if isinstance(x, fx.Node) else x

    for n in gm.graph.nodes:
        if n.op == "placeholder" or n not in needed:
            continue
        if n.target in _SCANS and any(x.op == "call_function" and x.target is torch.arange for x in upstream([n])):
            # a scan along an axis of positions (transformers' packed-sequence detection without an attention
            # mask: diff of the position ids, then cumsum) sees gaps between the chosen positions that the
            # real arange does not have: only the full evaluation is right. A scan of the padding mask alone
            # (chunked masks' left padding: ``attention_mask.cumsum(-1) == 0``) reads the probe, which has the
            # virtual length in full, so it is exact
            return None
        if _equals(n, seq):
            return None  # T computed inside the mask subgraph (from a size call): follow it no further
        if n.op == "call_function" and n.target is torch.arange and len(n.args) == 1 and \
                set(n.kwargs) <= {"device", "dtype"}:
            if _equals(n.args[0], seq):
                dtype = n.kwargs.get("dtype")
                env[n] = g.call_method("to", (index,), {"dtype": dtype} if dtype is not None else {})
                found = True
                continue
            if _equals(n.args[0], batch):
                env[n] = g.call_function(torch.arange, (rows,), dict(n.kwargs))
                continue
        if n.op == "call_method" and n.target in _SIZE_METHODS:
            env[n] = g.call_method(n.target, size_arg(n.args), {k: size_arg(v) for k, v in n.kwargs.items()})
            continue
        if _mentions((n.args, n.kwargs), seq):
            return None  # T used as a value (ones(T, T).tril(), a T-dependent window)
        env[n] = g.node_copy(n, lambda x: rows if _equals(x, batch) else env[x])
        env[n].meta = {}
    if not found:
        return None
    g.output(tuple(env[x] for x in masks))
    return fx.GraphModule(gm, g)


def _mentions(args, size) -> bool:
    hit = []
    fx.node.map_aggregate(args, lambda x: hit.append(_equals(x, size)) or x)
    return any(hit)


def visible(mask: torch.Tensor) -> torch.Tensor | None:
    """bool visibility of a mask value: bool as is; float 0 / very negative; None for an additive bias (ALiBi,
    soft masks: not a visibility pattern) or a mask of another dtype."""
    return mask_visible(mask, strict=True)


def describe_mismatch(vis: torch.Tensor, ref: torch.Tensor, qvalid: torch.Tensor, qpos: torch.Tensor,
                      kpos: torch.Tensor) -> str:
    """What a mask ``vis`` [B, H, Q, K] that differs from causal-with-padding ``ref`` [B, Q, K] does instead, in
    words a user can act on (judged on real query tokens only); qpos/kpos give each index's position."""
    rows = qvalid[:, None, :, None]
    extra = vis & ~ref[:, None] & rows
    missing = ~vis & ref[:, None] & rows
    if bool(extra.any()):
        _, _, i, j = extra.nonzero()[0].tolist()
        q, k = int(qpos[i]), int(kpos[j])
        return (f"query {q} sees key {k}" + (" after it" if k > q else " (a padding key)") +
                " (a bidirectional or prefix-LM mask, or one that ignores padding)")
    dist = qpos[:, None] - kpos[None, :]
    hidden = dist.expand_as(missing)[missing]
    w = int(hidden.min())
    # a window: exactly the causal pairs at distance >= w are hidden
    if bool((missing == (ref[:, None] & rows & (dist >= w))).all()):
        return f"a sliding window of {w} tokens (query q sees keys q-{w - 1}..q), shorter than the sequence"
    _, _, i, j = missing.nonzero()[0].tolist()
    return (f"query {int(qpos[i])} does not see key {int(kpos[j])}, which a causal mask shows (a chunked or "
            f"custom mask)")


def window_boundaries(t: int, windows) -> list[int]:
    """Probe positions that put pairs at distance W - 1 and W into a virtual sequence of length t, for each
    window W: (W - 1, 0), (W, 0) at the start and (t - 1 - W, t - 1) at the end, with their neighbours; for a
    chunk C (entry -C) the first two chunk boundaries and the last, counted from each probe row's first real
    token (``padding_probes`` start real tokens at 0 and at t // 3)."""
    out = []
    for w in set(windows):
        if 0 < w < t:
            out += [w, t - 1 - w]
        elif 0 < -w < t:
            c = -w
            for lp in (0, t // 3):
                out += [lp + c, lp + 2 * c, lp + ((t - 1 - lp) // c) * c]
    return out


def _leading_pads(probe: torch.Tensor) -> torch.Tensor:
    """[B]: each row's padding before its first real token (transformers' ``left_padding`` of chunked masks)."""
    return (probe.cumsum(1) == 0).sum(1)


def window_of(hidden_at, hi: int) -> int:
    """The smallest distance d < hi at which ``hidden_at(d)`` (query d does not see key 0 of an unpadded row) is
    true, found by bisection; 0 if none is (no window below hi). A window hides every distance from W on, so the
    predicate is monotone for the masks this module stands for; ``check_masks`` with the window verifies it."""
    if not hidden_at(hi - 1):
        return 0
    lo, bad = 0, hi - 1  # seen at lo (a query always sees itself), hidden at bad
    while bad - lo > 1:
        mid = (lo + bad) // 2
        if hidden_at(mid):
            bad = mid
        else:
            lo = mid
    return bad


def check_masks(outs, sites, probe: torch.Tensor, qpos: torch.Tensor, kpos: torch.Tensor,
                windows=None) -> str | None:
    """Compare each mask output [.., Q, K] (rows of ``probe``, the 0/1 padding mask [B, T]; positions qpos/kpos)
    with causal-with-padding, restricted to ``qpos - kpos < W`` for a site whose entry of ``windows`` is W > 0;
    None if all agree, else the reason naming the node and the pattern found."""
    b = probe.shape[0]
    # compared on the CPU: the mask graph's outputs are on the model's device, the probes on either
    outs = [m.cpu() if isinstance(m, torch.Tensor) else m for m in outs]
    probe, qpos, kpos = probe.cpu(), qpos.cpu(), kpos.cpu()
    pad = probe.bool()
    causal = (kpos[None, :] <= qpos[:, None])[None] & pad[:, kpos][:, None, :]
    qvalid = pad[:, qpos]
    windows = windows or [0] * len(sites)
    for site, m, w in zip(sites, outs, windows):
        if w > 0:
            ref = causal & ((qpos[:, None] - kpos[None, :]) < w)[None]
        elif w < 0:  # a chunk of -w tokens, counted from each row's first real token
            lp = _leading_pads(probe)[:, None, None]
            ref = causal & ((qpos[None, :, None] - lp) // -w == (kpos[None, None, :] - lp) // -w)
        else:
            ref = causal
        vis = visible(m)
        if vis is None:
            return (f"attention at node `{site.node.name}` adds a bias to its scores (not a 0/-inf mask), which "
                    f"packing cannot preserve")
        if vis.dim() > 4 or tuple(vis.shape[-2:]) != (len(qpos), len(kpos)):
            return f"attention mask at node `{site.node.name}` is not [batch, heads, q, k]"
        vis = vis.reshape((1,) * (4 - vis.dim()) + tuple(vis.shape)).expand(b, -1, len(qpos), len(kpos))
        ok = (vis == ref[:, None]) | ~qvalid[:, None, :, None]
        if not bool(ok.all()):
            if w != 0:
                what = f"a sliding window of {w} tokens" if w > 0 else f"attention chunks of {-w} tokens"
                return (f"attention mask at node `{site.node.name}` is not causal-with-padding within {what}; "
                        f"shared prefixes cannot be computed once")
            return (f"attention mask at node `{site.node.name}` is not causal-with-padding: "
                    f"{describe_mismatch(vis, ref, qvalid, qpos, kpos)}; shared prefixes cannot be computed once")
    return None


def mask_values(am: torch.Tensor) -> str | None:
    """O(B * T): None if ``attention_mask`` holds only 0/1, else the first offending entry."""
    if am.dtype == torch.bool:
        return None
    bad = (am != 0) & (am != 1)
    if bool(bad.any()):
        b, t = bad.nonzero()[0].tolist()
        return (f"attention_mask[{b}, {t}] = {am[b, t].item()}: only 0/1 masks can be packed (a segment-id or "
                f"weighted mask is not a padding mask)")
    return None


def padding_runs(am: torch.Tensor) -> str | None:
    """O(B * T): None if every row is one run of ones (left and/or right padding, or all padding) - the masks
    the structured probe stands for - else the first row that is not."""
    m = am.bool().to(torch.int8)
    runs = (m[:, 1:] > m[:, :-1]).sum(1) + m[:, 0]
    bad = (runs > 1).nonzero()
    if bad.numel():
        b = int(bad[0])
        return f"attention_mask row {b} has padding between real tokens ({int(runs[b])} runs of ones)"
    return None


def valid_tokens(vis: torch.Tensor, b: int, t: int) -> torch.Tensor:
    """The real tokens [B, T] (0/1) of a causal-with-padding mask [.., T, T] (bool, True = visible): a query is real
    iff it sees itself and no later key (a padded query row may be fully masked, or fully unmasked)."""
    m = vis.reshape((1,) * (4 - vis.dim()) + tuple(vis.shape))[:, 0].expand(b, t, t)
    later = torch.ones(t, t, dtype=torch.bool).triu(1)
    return (m.diagonal(dim1=-2, dim2=-1) & ~(m & later).any(-1)).long()
