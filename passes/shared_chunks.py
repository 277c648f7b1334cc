"""detach_prefix's shared stream in chunks of its tokens (option ``shared_chunks``).

Under ``detach_prefix`` the shared tokens run without autograd (nothing saved for them but each layer's keys and
values); what remains large is one stretch of per-token ops between two attentions over all the shared tokens at
once (the MLP's intermediates). Each such stretch runs on ``count`` chunks of the shared tokens, one after the
other (``torch.tensor_split``, outputs concatenated: the same values), so its intermediates exist for one chunk
at a time.
"""

from __future__ import annotations

import logging
import math
import operator

import torch
import torch.fx as fx

from .nodes import Kind, count, val
from .region import GraphAnalysis
from .selected_tokens import token_axis

log = logging.getLogger("replaycompile")

# chunks of about this many bytes of a stretch's outputs, at most MAX_SHARED_CHUNKS (unrolled in the graph)
SHARED_CHUNK_BYTES = 64 << 20
MAX_SHARED_CHUNKS = 16


def shared_stretches(old_nodes: list, a: GraphAnalysis, sites: dict) -> list:
    """The stretches of per-token nodes (packed, all tokens' space, a token axis, not an attention) that run one
    after another in graph order with nothing between them that reads a packed value; a graph with MoE routing
    (whose tokens meet in an expert's batch) has none."""
    if a.routing:
        return []
    stretches, cur = [], []
    for n in old_nodes:
        if n.op in ("placeholder", "output"):
            continue
        k = a.kind.get(n)
        per_token = k == Kind.PACKED and a.space.get(n) == 0 and n not in sites and token_axis(a, n) is not None
        if per_token:
            cur.append(n)
            continue
        if k in (Kind.MASK, Kind.INTERNAL) or (k == Kind.ROW and not any(a.kind.get(x) == Kind.PACKED
                                                                        for x in n.all_input_nodes)):
            continue  # reads no packed value: emitted without the stretch's values
        if cur:
            stretches.append(cur)
        cur = []
    if cur:
        stretches.append(cur)
    return stretches


def _hint(size) -> int:
    """A size at the value it was traced with (a dynamic one counts at its hint)."""
    return size if isinstance(size, int) else int(size.node.hint or 1)


def stretch_bytes_per_token(a: GraphAnalysis, stretches: list) -> float:
    """The widest stretch's output bytes per position of the traced batch (views included: an upper bound of what
    is alive at once)."""
    ids = val(a.ids) if a.ids is not None else None
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
        return 0.0
    positions = max(1, _hint(ids.shape[0]) * _hint(ids.shape[1]))
    return max((sum(math.prod(_hint(d) for d in v.shape) * v.element_size() for v in map(val, stretch)
                    if isinstance(v, torch.Tensor)) / positions for stretch in stretches), default=0.0)


def shared_stream_chunks(a: GraphAnalysis, stretches: list, world: int = 1, shared_tokens: int | None = None) -> int:
    """How many chunks detach_prefix's shared stream runs its stretches in: enough that the widest stretch's
    outputs (``stretch_bytes_per_token``) for one chunk stay near SHARED_CHUNK_BYTES, at most MAX_SHARED_CHUNKS.
    The shared tokens (``shared_tokens``, or estimated as half the traced batch's positions: a shared token sits
    in two rows or more) are split over ``world`` ranks. The count is fixed when the graph is compiled: a later,
    longer batch runs with larger chunks (the backend warns once when they pass 4x SHARED_CHUNK_BYTES)."""
    ids = val(a.ids) if a.ids is not None else None
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or not stretches:
        return 1
    if shared_tokens is None:
        shared_tokens = _hint(ids.shape[0]) * _hint(ids.shape[1]) // 2
    need = shared_tokens / max(world, 1) * stretch_bytes_per_token(a, stretches)
    return int(min(MAX_SHARED_CHUNKS, max(1, math.ceil(need / SHARED_CHUNK_BYTES))))


class SharedChunks:
    """The decision (how many chunks, which stretches) and the emission of each stretch's shared-stream copy on
    the chunks: the core packing step leaves a stretch's nodes to it on the shared stream (``owns``) and calls
    ``emit_stretch`` at each stretch's last node."""

    def __init__(self, old_nodes: list, a: GraphAnalysis, sites: dict, world: int, chunks: int | None,
                 repeat_kv_source):
        stretches = shared_stretches(old_nodes, a, sites)
        self.bytes_per_token = stretch_bytes_per_token(a, stretches)
        self.count = shared_stream_chunks(a, stretches, world) if chunks is None else chunks
        self.runs: dict = {}  # shared-stream node -> the stretch of per-token nodes it ends
        if self.count > 1:
            self.runs = {r[-1]: r for r in stretches}
            count("shared_stream_stretches_chunked", len(self.runs))
            log.info("replay: detach_prefix runs the shared tokens' per-token ops in %d chunks (%d stretches "
                     "between attentions)", self.count, len(self.runs))
        self.members = {x for r in self.runs.values() for x in r}
        # the keys and values GQA's repeat_kv expanded (the detached attention reads the source, kv heads only):
        # a chunked stretch joins the source, never the repeated copy, which would be saved for the branch backward
        self.kv_source = {x: src for s in sites.values() for x in (s.k, s.v)
                          if (src := repeat_kv_source(x)) is not None} if self.runs else {}
        self.kv_read = set(self.kv_source.values())

    def owns(self, n: fx.Node) -> bool:
        return n in self.members

    def emit_stretch(self, p, n: fx.Node) -> None:
        """The shared stream's copy of the stretch ``n`` ends (per-token nodes, in order) on ``count`` chunks of
        its tokens; a value read after the stretch is the concatenation of its chunks."""
        if n not in self.runs:
            return
        stretch = self.runs[n]
        g, a, st, members = p.g, p.a, p.streams[0], set(stretch)
        pieces: dict = {}  # outside value -> its chunks (None: no token axis, read whole)
        sizes = g.call_function(torch.tensor_split, (st.gath[0], self.count))
        chunk_envs = []
        for j in range(self.count):
            env: dict = {}

            def arg(x, env=env, j=j):
                if not isinstance(x, fx.Node):
                    return x
                if x in env:
                    return env[x]
                if x not in pieces:
                    v = p.get_packed(x, 0, st)
                    axis = token_axis(a, x)
                    per_token = axis is not None and (x in st.env or (x, 0) in st.rows)
                    pieces[x] = g.call_function(torch.tensor_split, (v, self.count, axis)) if per_token else v
                    pieces[x, "split"] = per_token
                if not pieces[x, "split"]:
                    return pieces[x]
                env[x] = g.call_function(operator.getitem, (pieces[x], j))
                return env[x]

            n_tok = g.call_method("size", (g.call_function(operator.getitem, (sizes, j)), 0))
            for x in stretch:
                env[x] = p.copy_packed(x, arg, n_tok, st.sub_index, selected=())
            chunk_envs.append(env)
        for x in stretch:
            outside = [u for u in x.users if u not in members]
            if x in self.kv_source and self.kv_source[x] in members and outside and \
                    all(u in p.sites for u in outside):
                continue  # the attention reads the keys before repeat_kv: the repeated ones are never joined
            if outside or x in self.kv_read:
                st.env[x] = g.call_function(torch.cat, ([e[x] for e in chunk_envs], token_axis(a, x)))
