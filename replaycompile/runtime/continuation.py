"""Packing across graphs (continuation): a graph break, a DDP bucket split or an FSDP module boundary cuts one
forward into several graphs; the later ones, without token ids, pack their inputs again with the plan of the batch
the earlier graph replayed. This module holds what carries a batch from graph to graph: the ``Batch`` (plan and
real tokens), the tag on a packed graph's outputs (``Rows``), and the step's current batch (``StepContext``),
which the backend sets on every call it records and a later untagged graph (FSDP's fresh input tensors) reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["ROWS_ATTR", "Batch", "Rows", "rows_tag", "tag_outputs", "Continuation", "STEP"]

# Output tensors of a packed graph carry the batch they were replayed from, so the next graph of the same
# forward (after a graph break, a DDP bucket split or an FSDP module boundary) can pack its inputs again
# without seeing the token ids: their entries at two (b, t) the plan maps to one packed token are equal.
ROWS_ATTR = "_replaycompile_rows"


class Batch:
    """One batch's plan and real tokens, shared by the graphs of one forward."""

    def __init__(self, plan, valid: torch.Tensor, valid_known: bool = True):
        self.plan = plan
        self.valid = valid            # [B, T] 0/1: the tokens the plan packs
        # False: the graph that built the plan saw no padding mask (a head graph cut before the mask is read),
        # so every token counted as real; a later graph's mask may say otherwise
        self.valid_known = valid_known
        self.detached = False         # made by a detach_prefix graph: later graphs do not continue it
        self.verified: list = []      # mask inputs verified against it (held, so their ids stay theirs)


@dataclass(frozen=True)
class Rows:
    batch: Batch
    bdim: int | None
    tdim: int
    version: int                  # the tensor's version counter when tagged: an in-place change voids the tag


def rows_tag(x: torch.Tensor) -> Rows | None:
    tag = getattr(x, ROWS_ATTR, None)
    return tag if tag is not None and tag.version == x._version else None


def tag_outputs(out, rows: list, batch: Batch) -> None:
    seq = out if isinstance(out, (tuple, list)) else (out,)
    for i, bdim, tdim in rows:
        if i < len(seq) and isinstance(seq[i], torch.Tensor):
            setattr(seq[i], ROWS_ATTR, Rows(batch, bdim, tdim, seq[i]._version))


@dataclass
class Continuation:
    """A graph without token ids, analysed and rewritten for a given set of activation inputs."""
    analysis: Any  # GraphAnalysis | None (passes.region)
    reason: str | None
    packed: Any = None  # PackedGraph | None (passes.rewrite)
    mask_sites: list = None
    mask_gm: Any = None
    mask_inputs: tuple = ()       # placeholder positions the masks read


class StepContext:
    """The batch of the step being run (the last call the backend recorded; None after a call of no batch)."""

    def __init__(self):
        self.batch: Batch | None = None


STEP = StepContext()  # process-wide, as last_stats(): Dynamo calls the graphs with no caller object to hold it
