"""Sparrow's compiled graph: a graph ``torch.compile(..., backend="replay", options={"schedule": s})`` compiles.

Decode steps get budgeted sparse attention (``passes/sparrow_rewrite.py``; the page table is an input read from the
schedule at every call); any other graph (prefill, training) is compiled unchanged. Each call records a
:class:`DecodeStats` into ``replaycompile.last_stats()``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch.fx as fx

from replaycompile.inner import inner_backend
from replaycompile.stats import record, warn_once

log = logging.getLogger("replaycompile")

__all__ = ["DecodeStats", "SparrowGraph", "SparseSteps"]


@dataclass
class DecodeStats:
    """One call of a graph compiled with a Sparrow schedule (the step record of ``last_stats()``)."""

    applied: bool
    mode: str  # "sparrow"
    fallback_reason: str | None = None  # why the graph ran dense
    sparse_layers: list[int] | None = None
    dense_layers: list[int] | None = None
    cache_copied: bool | None = None  # the step padded and copied a KV cache not sized in whole pages


class SparrowGraph:
    """A graph compiled with a Sparrow schedule.

    A graph left dense says so: every call records ``applied: False`` and the reason in ``last_stats()``, and a
    decode-shaped graph the rewrite refused (one query token per row) logs a warning once per reason; plainly
    other graphs (prefill, training) log at debug level only."""


    def __init__(self, gm: fx.GraphModule, example_inputs: list, opts):
        from replaycompile.kernels.sparse_decode import cache_copies
        from replaycompile.passes.sparrow_rewrite import NotDecode, rewrite_decode

        self.schedule = opts.schedule
        self.structure = self.schedule.structure()
        self.inner = opts.inner
        self._cache_copies = cache_copies
        inner = inner_backend(opts.inner)
        try:
            gm, self.info = rewrite_decode(gm, self.schedule, use_triton=opts.attention == "triton")
            self.reason = None
            example_inputs = list(example_inputs) + [self.schedule.table(padded=True)]
        except NotDecode as e:
            self.info, self.reason = None, str(e)
            if not e.decode_shaped:
                log.debug("replay: sparrow: graph left dense: %s", e)
            else:
                warn_once(("sparrow dense", self.reason), "replay: sparrow: a decode step runs dense, without the "
                          "schedule: %s", e)
        self.fn = inner(gm, example_inputs)

    def __call__(self, *args):
        if self.info is None:
            out = self.fn(*args)
            record(DecodeStats(applied=False, mode="sparrow", fallback_reason=self.reason, sparse_layers=[],
                               dense_layers=[], cache_copied=False))
            return out
        if self.schedule.structure() != self.structure:
            raise ValueError("replay backend: the Sparrow schedule's page size, bucket size, reserved pages, dense "
                             "layers or page score changed after compiling; only its page table (set_pages) may "
                             "change. "
                             "Compile again (torch._dynamo.reset()) to use the new structure.")
        copies = self._cache_copies()
        out = self.fn(*args, self.schedule.table(padded=True))
        for r in list(_open_counts):
            r.steps += 1
        record(DecodeStats(applied=True, mode="sparrow", sparse_layers=self.info.sparse_layers,
                           dense_layers=self.info.dense_layers, cache_copied=self._cache_copies() > copies))
        return out


class SparseSteps:
    """Counts the decode steps run through a Sparrow-rewritten graph while its ``with`` block is open (a rollout
    checks that its step ran sparse). The caller owns the count; the module keeps the open counters only."""

    def __init__(self):
        self.steps = 0

    def __enter__(self) -> "SparseSteps":
        _open_counts.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _open_counts.remove(self)


_open_counts: list[SparseSteps] = []
