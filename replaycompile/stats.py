"""What the last step of replay-compiled graphs did: ``last_stats()``, one record with one schema.

Both kinds of graph the backend compiles record here: a packing graph (``ReplayGraph``: prefix sharing) records a
:class:`GraphStats`, a Sparrow decode step (``replaycompile.sparrow.graph.SparrowGraph``) its own ``DecodeStats``.
Every record has ``applied``, ``mode`` and ``fallback_reason`` and the fields of its own kind.

Calls with the same ``key`` (the batch whose plan they share: the graphs of one forward that a graph break, a DDP
bucket split or FSDP cut apart) make up one step; ``last_stats()`` is that step: the first graph's figures,
``applied`` only if every graph that could share did, ``graphs`` listing each graph's own entry and
``graphs_packed`` counting the packed ones. ``call`` numbers the steps, so a caller can tell fresh stats from
those of an earlier call (a call Dynamo ran without the backend, e.g. past its recompile limit, records nothing).

Imports nothing of the project: the backend writes here, ``replaycompile.last_stats`` and the TRL integration read.
"""

from __future__ import annotations

import itertools
import logging
import threading
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("replaycompile")

__all__ = ["GraphStats", "last_stats", "record", "warn_once"]


@dataclass
class GraphStats:
    """One call of one compiled graph. The step record ``last_stats()`` returns holds these fields (the step's
    first graph's values, ``applied`` over all its graphs) plus ``graph``, ``graphs``, ``graphs_packed`` and
    ``call``."""

    applied: bool
    mode: str  # "exact" / "detach_prefix"
    fallback_reason: str | None = None  # why it ran unpacked, in words a user can act on
    rows: int | None = None
    tokens_in: int | None = None
    tokens_computed: int | None = None
    continued: bool | None = None  # packed from activations another graph of the step passed on (no token ids)
    recompiles: int | None = None  # Dynamo recompiles of the frame plus recompiles of its packed graph
    attention: str | None = None  # the attention path that ran ("triton", "torch", ...), None when unpacked
    shared_no_grad: int | None = None  # detach_prefix: the tokens that ran without autograd (the shared ones)
    shared_chunks: int | None = None  # detach_prefix: the chunks the shared stream's per-token ops ran in
    lm_head_chunked: int | None = None  # vocabulary gathers run as replaycompile::chunked_pair_logprobs
    # attention sites whose queries ran only at the tokens a slice reads (the last layer's, where the loss reads its
    # positions: passes/selected_tokens.py), and the packed values computed there only
    queries_selected: int | None = None
    selected_only_values: int | None = None
    # rows the LM head computed (the packed rows its vocabulary gathers read, each once: unique rows, not
    # (row, target) pairs), and what a loss weight of zero left out (passes/loss_weights.py): the positions whose
    # every weight was zero, and the packed tokens no kept position read (the LM head and what feeds only it)
    lm_head_rows: int | None = None
    weighted_positions_dropped: int | None = None
    weighted_tokens_dropped: int | None = None
    recurrent_per_row: list[str] | None = None  # recurrent layers computed per row (module paths): not shared inside
    recurrent_tokens_computed: int | None = None  # the positions those layers ran on (rows x columns, padding too)
    recurrent_tree_scan: list[str] | None = None  # recurrent layers run on the prefix tree (module paths): shared
    # context parallelism: this rank's share ("rank r of w: n of N packed tokens") or why the graph ran without it
    context_parallel: str | None = None


class _StepRecorder:
    """The process-wide step being recorded and the last finished record (``last_stats`` is a process-wide API:
    the backend's graphs are called by Dynamo, with no caller object to hand a record to)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.last: dict | None = None
        self.calls = itertools.count(1)
        self.key: Any = None
        self.graphs: list[dict] = []

    def record(self, stats, key: Any = None, graph: str | None = None) -> None:
        entry = dict(vars(stats), graph=graph)  # a shallow copy: asdict deep-copies, and this runs every decode step
        with self.lock:
            if key is None or key is not self.key:
                self.key, self.graphs = key, []
            graphs = self.graphs
            graphs.append(entry)
            summary = dict(graphs[0])
            summary["applied"] = all(g["applied"] for g in graphs)
            unpacked = [g for g in graphs if not g["applied"]]
            if len(graphs) > 1 and unpacked:
                summary["fallback_reason"] = "; ".join(f"graph {g['graph']} ran unpacked: {g['fallback_reason']}"
                                                       for g in unpacked)
                if len(unpacked) < len(graphs) and not entry["applied"]:
                    warn_once(("partly packed", graph, stats.fallback_reason),
                              "replay: a step ran partly packed: graph %s ran unpacked (%s), %d of the step's %d "
                              "graphs so far were packed; last_stats()['graphs'] lists each", graph,
                              stats.fallback_reason, len(graphs) - len(unpacked), len(graphs))
            summary["graphs"] = [dict(g) for g in graphs]
            summary["graphs_packed"] = len(graphs) - len(unpacked)
            summary["call"] = next(self.calls)
            self.last = summary

    def last_stats(self) -> dict | None:
        with self.lock:
            return None if self.last is None else dict(self.last)


_RECORDER = _StepRecorder()


def record(stats, key: Any = None, graph: str | None = None) -> None:
    """Add one graph's call to the step ``key`` (None: a step of its own) and make that step the last stats."""
    _RECORDER.record(stats, key=key, graph=graph)


def last_stats() -> dict | None:
    """A dict describing the most recent step of replay-compiled graphs (None before the first call): the fields
    of :class:`GraphStats` plus ``graph``, ``graphs``, ``graphs_packed`` and ``call``."""
    return _RECORDER.last_stats()


_WARNED: set = set()
_WARNED_LOCK = threading.Lock()


def warn_once(key, msg: str, *args) -> bool:
    """Log ``msg % args`` as a warning the first time ``key`` is seen in this process; True if it logged. The one
    warn-once of the library (a reason repeated every step would drown the log)."""
    with _WARNED_LOCK:
        if key in _WARNED:
            return False
        _WARNED.add(key)
    log.warning(msg, *args)
    return True
