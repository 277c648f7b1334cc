"""The ``replay`` torch.compile backend: trace -> analysis -> rewrite -> per-call plan -> inner compiler.

Registered through the ``torch_dynamo_backends`` entry point, so ``torch.compile(m, backend="replay")`` works
without importing this package. For each Dynamo graph it runs the sequence-axis analysis; a graph it cannot
prove safe runs through the inner compiler unchanged (results equal eager) and the reason is logged once. A
graph it can pack is rewritten once; each call then builds the batch's prefix tree from the actual token
inputs and runs the packed graph, compiled with dynamic shapes so the packed length may change every call.
"""

from __future__ import annotations

import itertools
import math
import logging
import os
from dataclasses import dataclass
from collections.abc import Iterable
from typing import Any, Callable

import torch
import torch.fx as fx
import torch.fx.experimental._config  # noqa: F401 - use_duck_shape, patched around the packed call

from replaycompile.passes import recurrent
from replaycompile.passes.attention_sites import find_attention_sites
from replaycompile.passes.cross_entropy import decompose_cross_entropy
from replaycompile.passes.inline_checkpoint import inline_checkpoints
from replaycompile.passes.nodes import EMBEDDING, B, T, Decline, count, subgraph_module, upstream
from replaycompile.passes.region import GraphAnalysis, analyze, mode_decline, square_token_input
from replaycompile.passes.row_loops import fold_row_loops
from replaycompile.passes.packed_graph import PackedGraph
from replaycompile.passes.rewrite import FUSIONS, rewrite
from replaycompile.passes.sink_slices import sink_slices
from replaycompile.passes.weight_writes import hoist_weight_writes

from replaycompile.kernels.tree_attention import PathRecorder

from .inner import inner_backend, own_code
from .runtime import continuation
from .runtime.continuation import Batch, Continuation, resolve_batch, tag_outputs
from .runtime.inputs import lm_head_rows, packed_inputs, without_lm_head
from .runtime.masks import MaskVerifier
from .runtime.plan import ReplayPlan, build_plan, split_shared
from .stats import GraphStats, last_stats, record as _record, warn_once  # noqa: F401 - last_stats: public

log = logging.getLogger("replaycompile")

# Break-even measured with `bench/replay_bench.py --sweep 0 8 32 128` on the reference configuration (2-core
# CPU): the packed path was faster than the unpacked one even with no shared token (it drops padding and runs
# causal attention per segment instead of a dense [B, 1, T, T] mask), so by default every batch is packed.
DEFAULT_MIN_SHARED_TOKENS = 0
# lm_head="auto": the chunked LM head (replaycompile::chunked_pair_logprobs) where a call's float32 logits at the
# unique predicting rows would take at least this much; below it the unfused LM head, which the inner compiler fuses
# and which was 1.35x faster on the 2-core CPU (no recompute of the logits in the backward)
LM_HEAD_AUTO_THRESHOLD_BYTES = 1 << 30

_OPTIONS: dict[str, tuple] = {
    "mode": ("exact", "detach_prefix"),
    "attention": ("auto", "torch", "triton"),
    "inner": ("inductor", "aot_eager", "eager"),
    "min_shared_tokens": None,  # a non-negative int
    "lm_head": ("auto", "chunked", "plain"),
    "schedule": None,  # a SparrowSchedule (or a path to its JSON): sparse decode steps
    # recurrent layers (Gated DeltaNet): run on the prefix tree where the tree scan applies (the default; per row
    # where it does not, with the reason logged), or always per row
    "recurrent": ("tree_scan", "per_row"),
    # context parallelism: a process group (or a 1-D DeviceMesh) whose ranks run the same batch, each computing
    # its share of the packed tokens (replaycompile/context_parallel.py)
    "context_parallel": None,
    # detach_prefix: the shared stream's per-token ops in this many chunks of its tokens ("auto": from the traced
    # batch's size, passes/shared_chunks.shared_stream_chunks; 1: whole)
    "shared_chunks": None,
    # activation-checkpointed layers: recompute the tree attention in backward (least memory on deep models), or
    # save its output and log-sum-exp (no attention forward in backward: faster, L (q_dim + heads) more per token)
    "checkpoint_attention": ("recompute", "save"),
    # the fusion passes the rewrite runs ("all", or a collection of names from passes.rewrite.FUSIONS); a fusion
    # with an option of its own (lm_head, recurrent) runs where both allow it
    "fusions": None,
}


@dataclass(frozen=True)
class ReplayOptions:
    mode: str = "exact"
    attention: str = "auto"
    inner: str = "inductor"
    min_shared_tokens: int = DEFAULT_MIN_SHARED_TOKENS
    schedule: Any = None
    lm_head: str = "auto"
    recurrent: str = "tree_scan"
    context_parallel: Any = None
    shared_chunks: Any = "auto"
    checkpoint_attention: str = "recompute"
    fusions: frozenset = frozenset(FUSIONS)

    @property
    def save_checkpointed_attention(self) -> bool:
        return self.checkpoint_attention == "save"

    def fuses(self, name: str) -> bool:
        """The fusion pass ``name`` (passes.rewrite.FUSIONS) runs, as far as the option ``fusions`` says."""
        return name in self.fusions


def parse_options(options: dict | None) -> ReplayOptions:
    options = dict(options or {})
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise ValueError(f"replay backend: unknown option(s) {unknown}; valid options are {sorted(_OPTIONS)}")
    for key, allowed in _OPTIONS.items():
        if key in options and allowed is not None and options[key] not in allowed:
            raise ValueError(f"replay backend: option {key}={options[key]!r} is not one of {list(allowed)}")
    mst = options.get("min_shared_tokens", DEFAULT_MIN_SHARED_TOKENS)
    if isinstance(mst, bool) or not isinstance(mst, int) or mst < 0:
        raise ValueError(f"replay backend: option min_shared_tokens={mst!r} must be a non-negative int")
    chunks = options.get("shared_chunks", "auto")
    if chunks != "auto" and (isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1):
        raise ValueError(f"replay backend: option shared_chunks={chunks!r} must be 'auto' or a positive int")
    options["fusions"] = _fusion_names(options.get("fusions", "all"))
    if options.get("lm_head") == "chunked" and "chunked_lm_head" not in options["fusions"]:
        raise ValueError("replay backend: option lm_head='chunked' asks for the fusion 'chunked_lm_head', which "
                         f"option fusions={sorted(options['fusions'])} leaves out")
    sched = options.get("schedule")
    if sched is not None:
        from replaycompile.sparrow.schedule import SparrowSchedule
        if isinstance(sched, (str, os.PathLike)):
            options["schedule"] = SparrowSchedule.load(sched)
        elif not isinstance(sched, SparrowSchedule):
            raise ValueError(f"replay backend: option schedule={sched!r} must be a SparrowSchedule or the path of "
                             f"its JSON file")
    cp = options.get("context_parallel")
    if cp is not None:
        import torch.distributed as dist

        if hasattr(cp, "get_group"):  # a DeviceMesh
            if cp.ndim != 1:
                raise ValueError(f"replay backend: option context_parallel takes a 1-D DeviceMesh (or a process "
                                 f"group), got a {cp.ndim}-D mesh: pass its CP dimension, mesh['cp']")
            cp = cp.get_group()
        if not isinstance(cp, dist.ProcessGroup):
            raise ValueError(f"replay backend: option context_parallel={cp!r} must be a process group or a 1-D "
                             f"DeviceMesh")
        options["context_parallel"] = cp
    return ReplayOptions(**options)


def _fusion_names(fusions) -> frozenset:
    """The option ``fusions``: "all", or any iterable of names from FUSIONS (not a bare name)."""
    if isinstance(fusions, str) and fusions == "all":
        return frozenset(FUSIONS)
    why = f"must be 'all' or a collection of names from {list(FUSIONS)}"
    if isinstance(fusions, (str, bytes, dict)) or not isinstance(fusions, Iterable):
        raise ValueError(f"replay backend: option fusions={fusions!r} {why}")
    names = list(fusions)
    unknown = [x for x in names if not isinstance(x, str) or x not in FUSIONS]
    if unknown:
        raise ValueError(f"replay backend: option fusions names {unknown!r}, not fusions; it {why}")
    return frozenset(names)


# ------------------------------------------------------------------------------------------------ declines

# (last_stats() and the step record live in stats.py, one schema for both kinds of graph)


def _concrete_shape(x: fx.Node, a: GraphAnalysis, ids: torch.Tensor) -> tuple | None:
    """This call's shape of ``x``, a [batch, seq, ...] value of the graph: its batch and sequence axes (by role)
    from the token ids, its other sizes static; None when another size is symbolic."""
    v = x.meta.get("example_value", x.meta.get("val"))
    roles = a.roles.get(x)
    if not isinstance(v, torch.Tensor) or roles is None:
        return None
    out = []
    for role, size in zip(roles, v.shape):
        if role == B:
            out.append(int(ids.shape[0]))
        elif role == T:
            out.append(int(ids.shape[1]))
        elif isinstance(size, int):
            out.append(size)
        else:
            return None
    return tuple(out)


def _log_once(reason: str) -> None:
    warn_once(("not applied", reason), "replay: not applied: %s", reason)


# ---------------------------------------------------------------------------------------------- inner compile

class _CountingBackend:
    """The inner compiler, counting how often it compiled (recompiles of the packed graph).

    Packed graphs compile with inductor's FX graph cache off: in torch 2.13 a cached backward of a packed graph
    (dynamic plan sizes) can store a guard expression over the forward's argument names, and every later lookup
    of that entry, in any process, fails with ``KeyError: 'args'`` inside the backward's compile (seen on the
    chunked-LM-head graph). Recompiling costs seconds to a minute; a poisoned cache costs the run.

    ``reorder_for_peak_memory=False`` for detach_prefix's packed graphs: inductor's reordering raised their measured
    peak, chunked shared stream or not (docs/long_context.md, "shared_chunks")."""

    def __init__(self, name: str, fx_graph_cache: bool = True, reorder_for_peak_memory: bool = True):
        self.fn = inner_backend(name)
        patches = {k: False for k, on in (("fx_graph_cache", fx_graph_cache),
                                          ("reorder_for_peak_memory", reorder_for_peak_memory)) if not on}
        if name == "inductor" and patches:
            fn = self.fn
            self.fn = lambda gm, ex: fn(gm, ex, config_patches=patches)
        self.compiles = 0

    def __call__(self, gm, example_inputs):
        self.compiles += 1
        return self.fn(gm, example_inputs)


# ------------------------------------------------------------------------------------------- token inputs

def _token_input_shapes(ids: torch.Tensor, am, pos) -> str | None:
    """The graph accepts masks and positions whose batch size is a symbol of its own: check this call's."""
    if am is not None and tuple(am.shape) != tuple(ids.shape):
        return (f"attention_mask of shape {list(am.shape)} does not match input_ids {list(ids.shape)}; running "
                f"unpacked")
    if pos is not None and tuple(pos.shape) not in (tuple(ids.shape), (1, ids.shape[1])):
        return (f"position_ids of shape {list(pos.shape)} is neither [batch, seq] nor [1, seq] for input_ids "
                f"{list(ids.shape)}; running unpacked")
    return None


def _first_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:200]}"


def _not_a_view(x: torch.Tensor) -> torch.Tensor:
    return x.clone() if x._base is not None else x


_graph_ids = itertools.count(1)


# ------------------------------------------------------------------------------------------------ the graph

class ReplayGraph:
    """One Dynamo graph under the replay backend: analysis and rewrite done once, a plan per call."""

    def __init__(self, gm: fx.GraphModule, example_inputs: list, opts: ReplayOptions):
        self.gm = gm
        self.example_inputs = example_inputs
        self.opts = opts
        self._plain: Callable | None = None
        self._plain_dynamic = False  # self._plain compiled with dynamic=True (retried static if that fails)
        self._packed_fns: dict = {}         # PackedGraph id -> its compiled function
        self.packed_chunked: PackedGraph | None = None  # the same with the chunked LM head, where one fuses
        self._lm_head_ran = 0               # chunked LM-head sites the last packed call ran
        self._selected_ran = (0, 0)         # (attention sites, values) the last packed call ran at a slice's tokens
        self._head_rows = 0                 # rows the last packed call's LM head computed
        self._dropped = (0, 0)              # (positions, tokens) the last packed call left out: zero loss weight
        self._inner = _CountingBackend(opts.inner)
        self._inner_packed = _CountingBackend(opts.inner, fx_graph_cache=False,
                                              reorder_for_peak_memory=opts.mode != "detach_prefix")
        cid = torch._guards.CompileContext.current_compile_id()
        # Dynamo's recompile index of this frame (0 on its first compile)
        self.frame_recompiles = getattr(cid, "frame_compile_id", 0) or 0
        self.name = f"{cid}#{next(_graph_ids)}" if cid is not None else f"#{next(_graph_ids)}"
        self._continuations: dict = {}      # activation inputs (name -> roles) -> Continuation
        self.per_row_layers: dict = {}      # recurrent layers computed per row: module path -> class name
        self.tree_scan_layers: dict = {}    # recurrent layers run on the prefix tree: module path -> TreeScanSite
        self.per_row_why: dict = {}         # module path -> why a layer stays per row under recurrent="tree_scan"
        self._has_attention = False
        self.packed: PackedGraph | None = None
        self._last_inputs: dict = {}  # what the last call's packed_inputs found (sizes, dropped, CP share)
        self.masks: MaskVerifier | None = None  # this graph's mask verification (runtime/masks.py)
        self._continued_verifications = 0   # continuation masks verified in full (once per batch)
        self._attention_ran: str | None = None  # the tree-attention path(s) the last packed call ran
        self._per_row_verified = False      # the layers computed per row passed recurrent.verify_per_row
        self._tree_scan_checked = False     # the tree-scan layers were held to their layers (verify_tree_scan)
        self._windows: dict | None = None   # the sliding windows the packed graphs were last rewritten with
        # semantics-preserving: in-place writes to a weight's data (Gemma 3n's coefficient clamp) run before the
        # graph, on every call, rather than inside it
        self._prologue = None
        try:
            self._prologue = hoist_weight_writes(gm)
            sink_slices(gm)  # semantics-preserving: the LM head after the loss's slice, not before it
            decompose_cross_entropy(gm)  # semantics-preserving: HF's labels loss as a masked log-prob gather
            fold_row_loops(gm)  # semantics-preserving: TRL's per-row logsumexp loop as one batched logsumexp
            inline_checkpoints(gm)  # semantics-preserving: activation-checkpoint regions become plain nodes
            self.analysis: GraphAnalysis = analyze(gm)
            self.reason = self.analysis.reason
            self.per_row_layers = recurrent.per_row_layers(self.analysis) if self.reason is None else {}
            stateful = recurrent.functorch_layer(gm, self.analysis) if self.reason is None else None
            if stateful is not None:
                raise Decline(stateful)
            why = mode_decline(self.analysis, opts.mode, self.per_row_layers) if self.reason is None else None
            if why is not None:
                raise Decline(why)
            if self.reason is None and self.per_row_layers and opts.recurrent == "tree_scan":
                sites, self.per_row_why = recurrent.tree_scan_sites(gm, self.analysis)
                if opts.fuses("tree_scan"):
                    self.tree_scan_layers = sites
                    self.per_row_layers = {p: c for p, c in self.per_row_layers.items() if p not in sites}
                else:
                    self.per_row_why.update({p: "option fusions leaves out 'tree_scan'" for p in sites})
            if self.reason is None:
                ids = example_inputs[[n for n in gm.graph.nodes if n.op == "placeholder"].index(self.analysis.ids)]
                self._device = ids.device.type if isinstance(ids, torch.Tensor) else "cpu"
                self._rewrite()
        except Decline as e:
            self.reason = str(e)
        except Exception as e:  # noqa: BLE001 - a bug in a pass must cost speed, never correctness
            log.exception("replay: internal error while rewriting the graph")
            self.analysis = GraphAnalysis(reason=str(e))
            self.reason = f"internal error in the replay passes ({type(e).__name__}: {e}); running unpacked"
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        if self.reason is not None:
            square = square_token_input(placeholders)
            if square is not None:
                self.reason = f"{self.reason} ({square})"
        self._pos = {n: i for i, n in enumerate(placeholders)}
        self._placeholders = placeholders
        self.candidate = self.analysis.candidate
        if not self.candidate:
            try:
                self._has_attention = bool(find_attention_sites(gm))
            except Exception:  # noqa: BLE001 - only decides whether to try packing it later
                self._has_attention = False
        # a model graph (an attention or an embedding): never passed through in silence (_pass_through)
        self._model_graph = self._has_attention or any(
            n.op == "call_function" and n.target in EMBEDDING for n in gm.graph.nodes)
        if self.reason is not None:
            self._plain = self._inner(gm, example_inputs)  # declined for good: compile it as Dynamo gave it
            if self.candidate:
                _log_once(self.reason)
            else:
                log.debug("replay: passing graph through: %s", self.reason)
        else:
            if self.per_row_layers:
                torch._dynamo.utils.counters["replay"][recurrent.COUNTER] += len(self.per_row_layers)
                log.warning("replay: %s computed per row (an op the packed layout cannot take: a recurrent scan or "
                            "a causal conv carries each row's history; its tokens are not shared inside it; exact, "
                            "checked causal per row on the first call; every other layer stays packed)",
                            ", ".join(f"layer `{p}` ({c}: {self.analysis.mixer_reasons.get(p, '?')})"
                                      for p, c in self.per_row_layers.items()))
                for p, why in self.per_row_why.items():
                    log.info("replay: layer `%s` computed per row, not on the prefix tree: %s", p, why)
            if self.tree_scan_layers:
                torch._dynamo.utils.counters["replay"][recurrent.TREE_SCAN_COUNTER] += len(self.tree_scan_layers)
                log.info("replay: %s run on the prefix tree (each segment's scan starts from its parent's state)",
                         ", ".join(f"recurrent layer `{p}`" for p in self.tree_scan_layers))
            self.masks = MaskVerifier(gm, self.analysis)

    def _rewrite(self, windows: dict | None = None) -> None:
        """The packed graphs (plain and chunked LM head); ``windows``: attention node -> its sliding window."""
        self._windows = windows
        self._cp_note = None
        group = self.opts.context_parallel
        if group is not None:
            why = self._cp_declined()
            if why is None:
                import torch.distributed as dist

                from . import context_parallel as _registers_the_cp_op  # noqa: F401

                self.packed = rewrite(self.gm, self.analysis, chunked_lm_head=False,
                                      detach_prefix=self.opts.mode == "detach_prefix", device=self._device,
                                      windows=windows, cp_group=group.group_name, shared_chunks=self._shared_chunks(),
                                      **self._fusion_flags())
                self.packed.cp = (dist.get_rank(group), dist.get_world_size(group), 0.0)
                self.packed_chunked = None
                return
            self._cp_note = f"not applied to this graph: {why}; every rank computes all its packed tokens"
            log.warning("replay: context_parallel %s", self._cp_note)
        kw = dict(detach_prefix=self.opts.mode == "detach_prefix", attention=self.opts.attention,
                  device=self._device, windows=windows, tree_scan=self.tree_scan_layers,
                  shared_chunks=self._shared_chunks(), **self._fusion_flags())
        self.packed = rewrite(self.gm, self.analysis, chunked_lm_head=False, **kw)
        self.packed_chunked = None
        if self.opts.lm_head != "plain" and self.opts.fuses("chunked_lm_head"):
            chunked = rewrite(self.gm, self.analysis, chunked_lm_head=True, **kw)
            if chunked.lm_head_vocab:
                self.packed_chunked = chunked

    def _fusion_flags(self) -> dict:
        """The rewrite's flags for the fusion passes the options leave on (the LM head's: ``_rewrite``), and
        the checkpointed attention's policy."""
        return dict(prune=self.opts.fuses("selected_tokens"),
                    log_softmax_gather=self.opts.fuses("log_softmax_gather"),
                    save_checkpointed_attention=self.opts.save_checkpointed_attention)

    def _shared_chunks(self) -> int | None:
        return None if self.opts.shared_chunks == "auto" else self.opts.shared_chunks

    def _cp_declined(self) -> str | None:
        """Why this graph runs without context parallelism (None: it runs with it)."""
        if self.tree_scan_layers or self.per_row_layers:
            return "recurrent layers (their scan over a rank's tokens is not built)"
        if any(s.selection is not None for s in self.analysis.attention):
            return "attention with key selection"
        return None

    def _check_tree_scan(self, args, ids) -> None:
        """Hold each tree-scan layer to the layer itself once (recurrent.verify_tree_scan); one that differs is
        computed per row instead (the packed graphs rewritten before their first run), and the log says why."""
        self._tree_scan_checked = True
        bad = recurrent.verify_tree_scan(self.gm, self.analysis, self.tree_scan_layers, args, self._placeholders,
                                         lambda x: _concrete_shape(x, self.analysis, ids))
        if not bad:
            return
        classes = recurrent.per_row_layers(self.analysis)
        for path, why in bad.items():
            del self.tree_scan_layers[path]
            self.per_row_layers[path] = classes.get(path, "?")
            self.per_row_why[path] = why
            log.warning("replay: recurrent layer `%s` computed per row, not on the prefix tree: %s", path, why)
        torch._dynamo.utils.counters["replay"][recurrent.TREE_SCAN_COUNTER] -= len(bad)
        torch._dynamo.utils.counters["replay"][recurrent.COUNTER] += len(bad)
        self._rewrite(self._windows)

    # -- the two ways to run it
    def plain(self, *args):
        if self._plain is None:
            # Outside Dynamo's compile context now: retrace through Dynamo (a graph that was declined up
            # front was compiled in __init__, inside that context, which is the faithful way).
            gm = self.gm

            def run_plain(*a):
                return gm(*a)

            self._plain = torch.compile(own_code(run_plain, "replay_plain"), backend=self._inner, dynamic=True)
            self._plain_dynamic = True
        # as for the packed graph: float module attributes arrive as 0-d tensors read by .item(), and a graph
        # break there would run the unpacked forward op by op
        if not self._plain_dynamic:
            return self._plain(*args)
        try:
            with torch._dynamo.config.patch(capture_scalar_outputs=True):
                return self._plain(*args)
        except torch._dynamo.exc.BackendCompilerFailed as e:
            # symbolic sizes can fail where the model's own code guards on data (transformers 5.10's grouped-mm
            # fallback backward compares `offs.tolist()` entries): the unpacked graph with static shapes, as
            # plain torch.compile's first call would compile it (the compile failed before anything ran)
            log.warning("replay: compiling the unpacked graph with dynamic shapes failed (%s); compiling it with "
                        "static shapes (a recompile per batch shape)", _first_line(getattr(e, "inner_exception", e)))
            self._plain_dynamic = False
            gm = self.gm
            self._plain = torch.compile(own_code(lambda *a: gm(*a), "replay_plain_static"), backend=self._inner,
                                        dynamic=False)
            return self._plain(*args)

    def _packed_fn(self, packed: PackedGraph):
        if id(packed) not in self._packed_fns:
            gm = packed.gm

            # Compile through a plain function: Dynamo does not trace into the forward of an FX GraphModule
            # compiled directly here (it falls back to compiling each helper call as its own frame).
            def run_packed(*args):
                return gm(*args)

            self._packed_fns[id(packed)] = torch.compile(own_code(run_packed, "replay_packed"),
                                                         backend=self._inner_packed, dynamic=True)
        return self._packed_fns[id(packed)]

    def _run_packed(self, packed: PackedGraph, args, extra: list, device) -> tuple:
        """(output, None), or (None, why) when compiling the packed graph failed on its first call (a later
        failure raises: the graph ran before, so it is not a compile problem)."""
        # Dynamo guards on whether an input is a view (it checks ._base): pass plain tensors, so a view in one
        # call and a fresh tensor in the next do not recompile the packed graph.
        extra = [_not_a_view(x.to(device)) for x in extra]
        args = [_not_a_view(x) if isinstance(x, torch.Tensor) else x for x in args]
        first = id(packed) not in self._packed_fns
        try:
            # capture_scalar_outputs: with dynamic=True Dynamo passes float module attributes as 0-d tensors
            # read by .item(); a graph break there would run the packed forward op by op
            # use_duck_shape off: plan sizes that happen to be equal in the first call (a slice's width and the
            # batch size, say) would otherwise share one symbol, and the next batch would recompile
            with torch._dynamo.config.patch(capture_scalar_outputs=True), \
                    torch.fx.experimental._config.patch(use_duck_shape=False), PathRecorder() as ran:
                out = self._packed_fn(packed)(*args, *extra)
        except Exception as e:  # noqa: BLE001
            if not first:
                raise
            log.exception("replay: compiling the packed graph (%s) failed", self.name)
            return None, (f"compiling the packed graph failed ({_first_line(getattr(e, 'inner_exception', None) or e)}"
                          f"); running unpacked")
        self._attention_ran = ran.paths("forward")
        return out, None

    def _stats(self, applied: bool, reason: str | None, plan: ReplayPlan | None, args, split=None, key=None,
               continued: bool = False) -> None:
        if continued:  # no token ids here: the batch's plan says what came in
            rows, tokens_in = plan.batch_size, plan.tokens_in
            unpacked = plan.batch_size * plan.seq_len
        else:
            ids = args[self._pos[self.analysis.ids]] if self.analysis.ids is not None else None
            am = args[self._pos[self.analysis.attention_mask]] if self.analysis.attention_mask is not None else None
            rows = int(ids.shape[0]) if ids is not None else None
            tokens_in = plan.tokens_in if plan is not None else (
                int(am.sum()) if am is not None else (ids.numel() if ids is not None else None))
            unpacked = ids.numel() if ids is not None else None
        _record(GraphStats(
            applied=applied,
            mode=self.opts.mode,
            fallback_reason=reason,
            rows=rows,
            tokens_in=tokens_in,
            tokens_computed=plan.num_packed if applied else unpacked,
            continued=continued,
            recompiles=self.frame_recompiles + max(self._inner.compiles + self._inner_packed.compiles - 1, 0),
            # what ran, not what was asked for: unsupported inputs run the PyTorch path even with a layout
            attention=self._attention_ran if applied else None,
            shared_no_grad=split.num_shared if applied and split is not None else None,
            shared_chunks=self.packed.shared_chunks if applied and split is not None else None,
            lm_head_chunked=self._lm_head_ran if applied else 0,
            queries_selected=self._selected_ran[0] if applied else 0,
            selected_only_values=self._selected_ran[1] if applied else 0,
            lm_head_rows=self._head_rows if applied else None,
            weighted_positions_dropped=self._dropped[0] if applied else 0,
            weighted_tokens_dropped=self._dropped[1] if applied else 0,
            # recurrent layers computed per row (module paths): their tokens are not shared inside them
            recurrent_per_row=list(self.per_row_layers) if applied else [],
            # the positions each of those layers ran on: every row's every column, padding included
            recurrent_tokens_computed=unpacked if applied and self.per_row_layers else 0,
            # recurrent layers run on the prefix tree (module paths): every packed token once
            recurrent_tree_scan=list(self.tree_scan_layers) if applied else [],
            context_parallel=self._cp_stats(applied, continued),
        ), key=key, graph=self.name)
        continuation.STEP.batch = key  # the step a later graph of this forward continues (None: none)

    def _check_shared_chunks(self, num_shared: int) -> None:
        """Warn once when this batch's shared tokens make each chunk of the shared stream 4x or more the size its
        chunk count was chosen for (the count is fixed when the graph is compiled, passes/shared_chunks.py)."""
        from replaycompile.passes.shared_chunks import SHARED_CHUNK_BYTES

        p = self.packed
        ranks = p.cp[1] if p.cp is not None else 1
        chunk = num_shared / ranks * p.shared_bytes_per_token / p.shared_chunks
        if self.opts.shared_chunks != "auto" or chunk < 4 * SHARED_CHUNK_BYTES:
            return
        want = math.ceil(num_shared / ranks * p.shared_bytes_per_token / SHARED_CHUNK_BYTES)
        warn_once(("shared_chunks", self.name),
                  "replay: detach_prefix runs the shared stream in %d chunk(s), chosen when the graph was "
                  "compiled at a shorter batch; this batch's %d shared tokens make each chunk's per-token "
                  "intermediates about %.0f MB; pass options={'shared_chunks': %d} to bound them (logged once)",
                  p.shared_chunks, num_shared, chunk / 2**20, want)

    def _cp_stats(self, applied: bool, continued: bool) -> str | None:
        if self.opts.context_parallel is None or not applied:
            return None
        if continued:
            return "not applied to this graph: a continuation graph (no token ids); it computes all its tokens"
        packed = self.packed
        if packed is not None and packed.cp is not None:
            rank, world, _ = packed.cp
            n, total, what = self._last_inputs.get("cp_share") or (0, 0, "packed")
            return f"rank {rank} of {world}: {n} of {total} {what} tokens" + (
                " (the branch tokens run on every rank)" if what == "shared" else "")
        return getattr(self, "_cp_note", None)

    def _fallback(self, reason: str, args, plan=None, log_it=True):
        if log_it:
            _log_once(reason)
        self._stats(False, reason, plan, args)
        return self.plain(*args)

    @property
    def mask_verifications(self) -> int:
        """How often this graph verified a mask (structured: once per graph; continued: once per batch)."""
        return (self.masks.verifications if self.masks is not None else 0) + self._continued_verifications

    def __call__(self, *args):
        state = GlobalState()
        try:
            return self._call(args)
        except BaseException:
            state.restore()
            raise

    def _call(self, args):
        if self._prologue is not None:
            with torch.no_grad():
                self._prologue(*args)
        if not self.candidate:
            return self._continue(args)
        if self.reason is not None:
            return self._fallback(self.reason, args, log_it=False)
        a = self.analysis
        ids = args[self._pos[a.ids]]
        am = args[self._pos[a.attention_mask]] if a.attention_mask is not None else None
        pos = args[self._pos[a.position_ids]] if a.position_ids is not None else None
        why = _token_input_shapes(ids, am, pos)
        if why is not None:
            return self._fallback(why, args)
        why, for_good = self.masks.check(args, am)
        windows = self.masks.take_windows()
        if windows is not None:  # masks causal only within sliding windows: the attentions apply them
            self._rewrite(windows)
        if why is None and self.tree_scan_layers and not self._tree_scan_checked:
            self._check_tree_scan(args, ids)
        if why is None and (self.per_row_layers or self.tree_scan_layers) and not self._per_row_verified:
            why = for_good = recurrent.verify_per_row(self.gm, a, args, self._placeholders,
                                                      lambda x: _concrete_shape(x, a, ids))
            self._per_row_verified = why is None
        if why is not None:
            if for_good:
                self.reason = why
            return self._fallback(why, args)
        plan = build_plan(ids, am, pos)
        saved = plan.shared_tokens
        if plan.num_packed == 0:
            return self._fallback("the batch has no unpadded tokens", args, plan, log_it=False)
        if saved < self.opts.min_shared_tokens:
            why = (f"the batch shares {saved} tokens, fewer than min_shared_tokens="
                   f"{self.opts.min_shared_tokens}; running it unpacked")
            # once per graph: the count differs from batch to batch
            warn_once(("below min_shared_tokens", self.name), "replay: not applied: %s (logged once for this graph; "
                      "last_stats() reports every call)", why)
            return self._fallback(why, args, plan, log_it=False)
        if self.packed.cp is not None and plan.num_packed < 2 * self.packed.cp[1]:
            why = (f"context_parallel: the batch has {plan.num_packed} packed tokens, fewer than 2 per rank of the "
                   f"group; running it unpacked, exact")
            return self._fallback(why, args, plan, log_it=False)
        split = split_shared(plan) if self.packed.detach_prefix else None
        if split is not None and min(split.num_shared, split.num_branch) < 2:
            # the two streams would carry 0 or 1 tokens (specialised shapes, recompiles); nothing to detach from
            why = (f"detach_prefix: the batch has {split.num_shared} shared and {split.num_branch} branch tokens "
                   f"(fewer than 2 of one kind); running it unpacked, exact")
            return self._fallback(why, args, plan, log_it=False)
        if split is not None and self.packed.cp is not None and split.num_shared < 2 * self.packed.cp[1]:
            why = (f"context_parallel: the batch has {split.num_shared} shared tokens, fewer than 2 per rank of the "
                   f"group; running it unpacked, exact")
            return self._fallback(why, args, plan, log_it=False)
        if split is not None:
            self._check_shared_chunks(split.num_shared)
        dev = ids.device
        packed = self.packed
        if self.packed_chunked is not None:
            # the chunked graph's inputs are the plain one's plus the pairs; "auto" takes it where the pairs'
            # float32 logits would reach LM_HEAD_AUTO_THRESHOLD_BYTES
            chunked = self.packed_chunked
            extra, last = packed_inputs(chunked, args, plan, split)
            if self.opts.lm_head == "chunked" or \
                    lm_head_rows(chunked, extra) * chunked.lm_head_vocab * 4 >= LM_HEAD_AUTO_THRESHOLD_BYTES:
                packed = chunked
            else:
                extra = without_lm_head(chunked, extra)
        else:
            extra, last = packed_inputs(packed, args, plan, split)
        self._last_inputs = last
        self._lm_head_ran = packed.lm_head_sites
        self._selected_ran = (packed.selected_attention, packed.selected_nodes)
        self._head_rows = lm_head_rows(packed, extra) if packed.lm_head_sites else \
            sum(int(last["sizes"][sp]) for sp in packed.head_spaces if sp < len(last["sizes"]))
        self._dropped = (last.get("positions_dropped", 0), last.get("tokens_dropped", 0))
        if self._dropped[0]:
            count("loss_weighted_positions_dropped", self._dropped[0])
            count("loss_weighted_tokens_dropped", self._dropped[1])
        out, failed = self._run_packed(packed, args, extra, dev)
        if failed is not None:  # compiling the packed graph failed: fall back for good, correct results first
            self.reason = failed
            return self._fallback(self.reason, args, plan)
        if self._dropped[0] and not _all_finite(out):
            # a weighted value came out non-finite with zeros read at the dropped positions in place of their
            # log-probs (a division by it, say): the graph runs again with every position, exact as before the
            # refinement, which stays off for this graph (a per-call rerun would double every step)
            count("loss_weighted_nonfinite_reruns")
            log.warning("replay: graph %s: the loss came out non-finite with its zero-weight positions left out; "
                        "this call reruns with every position computed, and this graph computes them all from now "
                        "on", self.name)
            for pg in (self.packed, self.packed_chunked):
                if pg is not None:
                    pg.space_keep = {}
            return self(*args)
        batch = Batch(plan, am.long() if am is not None else torch.ones(plan.batch_size, plan.seq_len,
                                                                         dtype=torch.long),
                       valid_known=am is not None or bool(self.analysis.attention))
        # the next graph of the forward may pack these outputs again (exact), or says why it does not
        batch.detached = split is not None
        tag_outputs(out, packed.row_outputs, batch)
        self._stats(True, None, plan, args, split, key=batch)
        return out

    # -- continuation: a graph without token ids whose inputs are activations of a batch
    def _continue(self, args):
        """Pack a graph that holds no token ids (the layers after a graph break, a DDP bucket or an FSDP
        module boundary) from its activation inputs.

        The batch comes from the inputs' tags (outputs of an earlier packed graph of this forward), or, for the
        first such graph of a forward whose activations came from code the backend did not see (FSDP runs the
        embedding outside any graph), from the activations themselves (``plan.content_plan``; only graphs with
        an attention, where sharing pays). Untagged activation inputs are packed only if they are equal, bit for
        bit, wherever the plan shares a token (``plan.shares_exactly``); the masks are verified
        causal-with-padding against the batch's real tokens. Anything else runs the graph as it is.

        Why DDP's split graphs are packed piece by piece instead of asking for the graph whole
        (``torch._dynamo.config.optimize_ddp = False``, which packs too): Dynamo splits at gradient buckets so
        that each bucket's all-reduce starts while the backward of earlier pieces still runs; one whole graph is
        one autograd node, and every all-reduce would wait for the end of its backward. A gather at each piece's
        entry costs B*T*hidden copies against the piece's matmuls."""
        tensors = [(i, x) for i, x in enumerate(args) if isinstance(x, torch.Tensor)
                   and not isinstance(x, torch.nn.Parameter)]
        log.debug("replay: graph %s: %d tensor inputs, attention %s", self.name, len(tensors), self._has_attention)
        found = resolve_batch(args, tensors, self._continuation, reason=self.reason,
                              has_attention=self._has_attention, mode=self.opts.mode,
                              min_shared_tokens=self.opts.min_shared_tokens)
        self._continued_verifications += found.verifications
        if found.why is not None:
            if found.batch is None:
                return self._pass_through(found.why, args)
            return self._continued_fallback(found.why, args, found.batch)
        batch, cont, seeds = found.batch, found.cont, found.seeds
        plan = batch.plan
        extra, _ = packed_inputs(cont.packed, args, plan)
        out, failed = self._run_packed(cont.packed, args, extra, args[next(iter(seeds))].device)
        if failed is not None:
            cont.reason = failed
            return self._continued_fallback(cont.reason, args, batch)
        self._lm_head_ran = 0
        self._selected_ran = (cont.packed.selected_attention, cont.packed.selected_nodes)
        tag_outputs(out, cont.packed.row_outputs, batch)
        self._stats(True, None, plan, args, key=batch, continued=True)
        return out

    def _pass_through(self, reason: str, args):
        """Run a graph without token ids as Dynamo gave it. A model graph (an attention or an embedding: a model
        called with inputs_embeds, a token input the analysis could not find) leaves a stats record and one
        warning naming why; a graph with neither (a loss tail after a graph break) has nothing to pack and
        passes through with a debug line."""
        if self._model_graph:
            _log_once(f"graph {self.name}: {reason}")
            self._stats(False, reason, None, args)
        else:
            log.debug("replay: passing graph %s through: %s", self.name, reason)
        return self.plain(*args)

    def _continued_fallback(self, reason: str, args, batch: Batch):
        _log_once(f"graph {self.name}: {reason}")
        self._stats(False, reason, batch.plan, args, key=batch, continued=True)
        return self.plain(*args)

    def _continuation(self, args, seeds: dict) -> Continuation:
        key = tuple(sorted(seeds.items()))
        if key in self._continuations:
            return self._continuations[key]
        roles = {}
        for i, (bdim, tdim) in seeds.items():
            r = [None] * args[i].dim()
            if bdim is not None:
                r[bdim] = B
            r[tdim] = T
            roles[self._placeholders[i].name] = tuple(r)
        cont = Continuation(None, None)
        try:
            a = analyze(self.gm, roles)
            cont.analysis = a
            cont.reason = a.reason
            if a.reason is None:
                dev = args[next(iter(seeds))].device.type
                cont.packed = rewrite(self.gm, a, detach_prefix=False, attention=self.opts.attention, device=dev,
                                      chunked_lm_head=False, **self._fusion_flags())
                cont.mask_sites = [s for s in a.attention if s.mask is not None]
                if cont.mask_sites:
                    masks = [s.mask for s in cont.mask_sites]
                    cont.mask_gm = subgraph_module(self.gm, masks)
                    feeders = upstream(masks)
                    cont.mask_inputs = tuple(i for i, n in enumerate(self._placeholders) if n in feeders)
        except Decline as e:
            cont.reason = str(e)
        except Exception as e:  # noqa: BLE001 - a bug in a pass must cost speed, never correctness
            log.exception("replay: internal error while rewriting a continuation graph")
            cont.reason = f"internal error in the replay passes ({type(e).__name__}: {e}); running unpacked"
        self._continuations[key] = cont
        return cont


def _all_finite(out) -> bool:
    """Every floating tensor among a graph's outputs is finite."""
    vals = out if isinstance(out, (tuple, list)) else (out,)
    return all(bool(torch.isfinite(x).all()) for x in vals
               if isinstance(x, torch.Tensor) and x.is_floating_point())


class GlobalState:
    """Grad mode and autocast (per device type) as they were: ``restore()`` puts them back. An exception inside
    an inner compiler (aot_autograd traces under no_grad) can leave them changed, and every later step of the
    process would then run without gradients. (torch's GlobalStateGuard only checks, it does not restore.)"""

    DEVICES = ("cpu", "cuda")

    def __init__(self):
        self.grad = torch.is_grad_enabled()
        self.autocast = {d: (torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in self.DEVICES}

    def restore(self) -> None:
        torch.set_grad_enabled(self.grad)
        for d, (enabled, dtype) in self.autocast.items():
            torch.set_autocast_enabled(d, enabled)
            torch.set_autocast_dtype(d, dtype)


def replay(gm: fx.GraphModule, example_inputs: list, options: dict | None = None, **kwargs: Any):
    """The backend function (entry point ``torch_dynamo_backends: replay``)."""
    opts = parse_options({**(options or {}), **kwargs})
    state = GlobalState()
    try:
        if opts.schedule is not None:
            from replaycompile.sparrow.graph import SparrowGraph

            return SparrowGraph(gm, example_inputs, opts)
        return ReplayGraph(gm, example_inputs, opts)
    finally:
        state.restore()
