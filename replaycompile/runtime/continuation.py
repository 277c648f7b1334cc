"""Packing across graphs (continuation): a graph break, a DDP bucket split or an FSDP module boundary cuts one
forward into several graphs; the later ones, without token ids, pack their inputs again with the plan of the batch
the earlier graph replayed. This module holds what carries a batch from graph to graph: the ``Batch`` (plan and
real tokens), the tag on a packed graph's outputs (``Rows``), and the step's current batch (``StepContext``),
which the backend sets on every call it records and a later untagged graph (FSDP's fresh input tensors) reads,
and per call the batch such a graph continues (``resolve_batch``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from replaycompile.passes import mask_probe
from replaycompile.passes.nodes import count

from .plan import content_plan, shares_exactly

__all__ = ["ROWS_ATTR", "Batch", "Rows", "rows_tag", "tag_outputs", "Continuation", "STEP", "Found", "resolve_batch"]

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
    packed: Any = None  # PackedGraph | None (passes.packed_graph)
    mask_sites: list = None
    mask_gm: Any = None
    mask_inputs: tuple = ()       # placeholder positions the masks read


class StepContext:
    """The batch of the step being run (the last call the backend recorded; None after a call of no batch)."""

    def __init__(self):
        self.batch: Batch | None = None


STEP = StepContext()  # process-wide, as last_stats(): Dynamo calls the graphs with no caller object to hold it


@dataclass
class Found:
    """What ``resolve_batch`` found for one call of a continuation graph: the batch, the rewrite for the call's
    activation inputs (``cont``) and those inputs' (bdim, tdim) (``seeds``); or why the graph runs as it is
    (``why``), with the batch it would have continued (None: the graph passes through, no batch to report)."""
    batch: Batch | None = None
    cont: Continuation | None = None
    seeds: dict | None = None
    why: str | None = None
    verifications: int = 0  # masks verified in full during the call


def _batch_axes(tensors) -> tuple:
    """(B, T) of an untagged graph: from its attention mask ([B, 1, T, T]) or its first activation."""
    for _, x in tensors:  # a bool mask, or a float (additive) one with one head axis
        if x.dim() == 4 and x.shape[-1] == x.shape[-2] and (not x.is_floating_point() or x.shape[1] == 1):
            return int(x.shape[0]), int(x.shape[-1])
    for _, x in tensors:
        if x.is_floating_point() and x.dim() == 3:
            return int(x.shape[0]), int(x.shape[1])
    return None, None


def _verify_masks(cont: Continuation, args, outs, batch: Batch) -> tuple[str | None, int]:
    """The masks causal-with-padding over the batch's real tokens: in full (O(B T^2), as the model built them),
    once per batch for the same mask inputs (every layer of a forward gets the same mask tensor). (why, masks
    verified now: 0 or 1)."""
    key = tuple(id(args[i]) for i in cont.mask_inputs)
    if any(k == key for k, _ in batch.verified):
        return None, 0
    every = torch.arange(batch.plan.seq_len)
    why = mask_probe.check_masks(outs, cont.mask_sites, batch.valid, every, every)
    if why is None:
        batch.verified.append((key, [args[i] for i in cont.mask_inputs]))
    count("masks_verified")
    return why, 1


def resolve_batch(args, tensors: list, continuation_for, reason: str | None, has_attention: bool, mode: str,
                  min_shared_tokens: int) -> Found:
    """The batch a graph without token ids continues, per call (see ``ReplayGraph._continue``): from its inputs'
    tags, else (FSDP's fresh inputs) the step's batch where the activations pack exactly with its plan, else a
    plan of the activations' contents. ``tensors``: the (position, tensor) inputs that are not parameters;
    ``continuation_for(args, seeds)``: the graph's rewrite for those activation inputs (cached by the caller);
    ``reason``: why the graph is not a candidate on its own."""
    tags = [(i, tag) for i, x in tensors if (tag := rows_tag(x)) is not None]
    if len({id(t.batch) for _, t in tags}) > 1:
        return Found(why="its activation inputs come from two different batches")
    if not tags and not has_attention:
        return Found(why=reason)  # nothing to share
    if not tags and mode != "exact":
        return Found(why=f"{reason}; mode={mode!r} packs only a graph that holds the token ids")
    if tags:
        batch = tags[0][1].batch
        b, t = batch.plan.batch_size, batch.plan.seq_len
        if batch.detached:
            return Found(batch, why="detach_prefix runs the shared tokens without autograd only in the graph that "
                                    "holds the token ids; this later graph of the step runs unpacked (its shared "
                                    "tokens keep their gradient)")
    else:
        b, t = _batch_axes(tensors)
        if b is None or b < 2 or t < 2:
            return Found(why=f"{reason}, and no [batch, seq] activation input of two or more rows to pack from")
        batch = None
    tagged = {i: (tg.bdim, tg.tdim) for i, tg in tags}
    untagged = [(i, x) for i, x in tensors if i not in tagged and x.is_floating_point() and x.dim() >= 2
                and tuple(x.shape[:2]) == (b, t)]
    seeds = dict(tagged)
    seeds.update({i: (0, 1) for i, _ in untagged})
    cont = continuation_for(args, seeds)
    if cont.reason is not None:
        if batch is None:
            return Found(why=f"{reason}; packing from its activation inputs failed too: {cont.reason}")
        return Found(batch, why=cont.reason)
    outs = None
    if cont.mask_gm is not None:
        with torch.no_grad():
            outs = cont.mask_gm(*args)
    if batch is not None and not batch.valid_known and outs is not None:
        vis = mask_probe.visible(outs[0])
        valid = mask_probe.valid_tokens(vis, b, t) if vis is not None else None
        if valid is not None and not torch.equal(valid, batch.valid):
            # the plan packed padding as real tokens: plan again from the inputs, with the mask's real tokens
            plan = content_plan([(args[i], *bt) for i, bt in seeds.items()], valid)
            if not all(shares_exactly(plan, args[i], *bt) for i, bt in seeds.items()) or plan.num_packed == 0:
                return Found(batch, why="the activations disagree where rows share")
            batch = Batch(plan, valid)
    if batch is None:
        valid = torch.ones(b, t, dtype=torch.long)
        if outs is not None:
            vis = mask_probe.visible(outs[0])
            if vis is None:
                return Found(why=f"{reason}; its attention mask is not a 0/1 or 0/-inf mask to read the real "
                                 f"tokens from")
            valid = mask_probe.valid_tokens(vis, b, t)
        prev = STEP.batch
        # FSDP hands each layer fresh input tensors (its post-backward hook wraps them), untagged: inputs that the
        # step's batch packs exactly continue that step, with its plan
        if isinstance(prev, Batch) and (prev.plan.batch_size, prev.plan.seq_len) == (b, t) and \
                torch.equal(prev.valid, valid) and all(shares_exactly(prev.plan, x, 0, 1) for _, x in untagged):
            batch = prev
        else:
            plan = content_plan([(x, 0, 1) for _, x in untagged], valid)
            if not all(shares_exactly(plan, x, 0, 1) for _, x in untagged):
                return Found(why="its activations collide in the content hash")
            if plan.num_packed == 0 or plan.shared_tokens < min_shared_tokens:
                return Found(why=f"{reason}; its activation inputs share {plan.shared_tokens} tokens "
                                 f"(min_shared_tokens={min_shared_tokens})")
            batch = Batch(plan, valid)
    else:
        drop = [i for i, x in untagged if not shares_exactly(batch.plan, x, 0, 1)]
        if drop:  # per-row data that happens to be [B, T]-shaped: keep it a row value
            for i in drop:
                seeds.pop(i)
            cont = continuation_for(args, seeds)
            if cont.reason is not None:
                return Found(batch, why=cont.reason)
    verified = 0
    if outs is not None:
        why, verified = _verify_masks(cont, args, outs, batch)
        if why is not None:
            return Found(batch, why=why, verifications=verified)
    return Found(batch, cont, seeds, verifications=verified)
