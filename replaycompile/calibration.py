"""Sparrow calibration: teacher-forced acceptance of sparse against dense decoding, and the page table it picks.

``measure_windows`` decodes windows of long sequences through ``rollout.DecodeSession`` densely and with each
candidate schedule; ``calibrate`` turns those measurements into the cheapest monotone page table whose p5
acceptance reaches a target in every bin (``choose_pages``). Imports: the schedule, the acceptance metric and
the rollout layer (whose decode steps run through the backend).
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass

import torch
from torch import Tensor

from .acceptance import acceptance, acceptance_summary
from .rollout import DecodeSession
from .schedule import SparrowSchedule

__all__ = ["measure_windows", "measure_acceptance", "calibration_windows", "Calibration", "calibrate",
           "choose_pages"]

log = logging.getLogger("replaycompile")


@torch.no_grad()
def measure_windows(model, sequences: Tensor, starts, window: int, schedules: dict, inner: str = "eager",
                    progress: bool = False) -> tuple[dict, Tensor]:
    """Teacher-forced acceptance of sparse decoding against dense decoding, in windows along long sequences.

    ``sequences`` [B, N] (no padding) are prefilled densely, in chunks, up to each window start; from there the
    next ``window`` tokens are fed one at a time to a dense decoder (the reference) and to a sparse decoder per
    schedule (``schedules``: name -> SparrowSchedule; schedules of one structure share one compiled step), each
    from a copy of the dense cache. Returns ({name: alpha [B, n_windows * window]}, kv_lengths [n_windows *
    window]): the alpha of the prediction made at that KV length.
    """
    b, n = sequences.shape
    starts = sorted(int(x) for x in starts)
    if not starts or starts[0] < 1 or starts[-1] + window > n:
        raise ValueError(f"measure_windows: window starts {starts} (+{window}) must lie inside the {n} tokens")
    ones = torch.ones(b, starts[0], dtype=torch.long, device=sequences.device)
    sess = DecodeSession(model, sequences[:, :starts[0]], ones, n + 1, None, inner)
    shared: dict = {}  # one compiled decode step per schedule structure: candidates differ in pages only
    alphas: dict = {name: [] for name in schedules}
    positions = []
    for w, s0 in enumerate(starts):
        if s0 > sess.position():
            sess.extend(sequences[:, sess.position():s0])
        if progress:
            print(f"sparrow: window {w + 1}/{len(starts)} at KV length {s0}", file=sys.stderr, flush=True)
        feed = sequences[:, s0:s0 + window - 1]

        def run(schedule):
            c = sess.clone()  # a clone starts with no page centroids of its own
            c.set_schedule(schedule, inner)
            out = [c.logits.float()]
            for i in range(feed.shape[1]):
                out.append(c.step(feed[:, i]).float())
            return torch.stack(out, 1)

        dense = run(None)
        for name, sched in schedules.items():
            key = tuple(sorted(sched.structure().items()))
            if key not in shared:
                shared[key] = SparrowSchedule(pages=sched.pages, **sched.structure())
            shared[key].set_pages(sched.pages)
            alphas[name].append(acceptance(dense, run(shared[key])))
        positions.append(torch.arange(s0, s0 + window))
    return {k: torch.cat(v, 1) for k, v in alphas.items()}, torch.cat(positions)


def measure_acceptance(model, sequences: Tensor, prompt_len: int, schedules: dict, inner: str = "eager"):
    """``measure_windows`` with one window: the tokens after ``prompt_len``."""
    return measure_windows(model, sequences, [prompt_len], sequences.shape[1] - prompt_len, schedules, inner)


@dataclass
class Calibration:
    """What ``calibrate`` returns: the schedule, and every measurement behind it."""

    schedule: SparrowSchedule
    table: list  # one dict per (bin, candidate): bin_start, bin_end, pages, mean, p5, count
    met: list  # per bucket of the schedule: did some candidate reach the target there

    def rows(self) -> list[str]:
        return [f"bin {r['bin_start']:>6}-{r['bin_end']:<6} pages {r['pages']:>6}: mean {r['mean']:.4f} "
                f"p5 {r['p5']:.4f} (n={r['count']})" for r in self.table]


def calibration_windows(n: int, bin_tokens: int, window: int) -> list[int]:
    """Where ``calibrate`` measures in a sequence of n tokens: the last ``window`` tokens of every bin it covers
    (and of a last, partly covered bin that holds a whole window)."""
    starts = [max(e - window, 1) for e in range(bin_tokens, n + 1, bin_tokens)]
    if n % bin_tokens and n - window >= (starts[-1] + window if starts else 1):
        starts.append(n - window)
    return starts


def calibrate(model, prompts, candidates, target: float = 0.86, *, bin_tokens: int = 2048, quantile: float = 0.05,
              window: int = 64, schedule: SparrowSchedule | None = None, inner: str = "eager",
              progress: bool = True) -> Calibration:
    """The cheapest monotone page table whose ``quantile`` (p5) acceptance reaches ``target`` in every bin.

    ``prompts``: token tensors [B, N] without padding (or a list of them): in every bin of KV length that a
    prompt covers, its last ``window`` tokens of the bin are decoded with teacher forcing (``measure_windows``),
    densely and with each candidate page count as a fixed budget. Per bin the cheapest candidate that meets the
    target is taken, then the table is made non-decreasing (``choose_pages``). A bin where no candidate meets the
    target keeps every page (dense), is marked False in ``met`` and logged as a warning. ``schedule`` supplies the
    other fields (page size, reserved pages, dense layers); the bucket size is ``bin_tokens``.
    """
    if not 0 < target <= 1:
        raise ValueError(f"calibrate: target={target} must be in (0, 1]")
    candidates = sorted(set(int(c) for c in candidates))
    if not candidates or candidates[0] < 0:
        raise ValueError(f"calibrate: candidates {candidates} must be non-negative page counts")
    if window >= bin_tokens:
        raise ValueError(f"calibrate: window={window} must be shorter than bin_tokens={bin_tokens}")
    if isinstance(prompts, Tensor):
        prompts = [prompts]
    base = schedule.structure() if schedule is not None else {}
    base["bucket_tokens"] = bin_tokens
    alphas = {c: [] for c in candidates}
    positions = []
    for seqs in prompts:
        starts = calibration_windows(seqs.shape[1], bin_tokens, window)
        scheds = {c: SparrowSchedule(pages=(c,), **base) for c in candidates}
        a, pos = measure_windows(model, seqs, starts, window, scheds, inner, progress)
        for c in candidates:
            alphas[c].append(a[c].reshape(-1))
        positions.append(pos.repeat(seqs.shape[0]))
    pos_all = torch.cat(positions)
    table = []
    for c in candidates:
        for r in acceptance_summary(torch.cat(alphas[c]), pos_all, bin_tokens, quantile=quantile):
            table.append(dict(r, pages=c))
    pages, met = choose_pages(table, target, bin_tokens, int(pos_all.max()) // bin_tokens + 1)
    return Calibration(schedule=SparrowSchedule(pages=tuple(pages), **base), table=table, met=met)


def choose_pages(table: list, target: float, bin_tokens: int, n_bins: int) -> tuple[list[int], list]:
    """``calibrate``'s choice from its measurements: (pages per bucket, met per bucket).

    ``table``: rows with bin_start, pages (a candidate) and p5. Per bin the cheapest candidate whose p5 reaches
    ``target`` is taken (0 pages is a legitimate choice), then the table is made non-decreasing (a running max).
    A measured bin where no candidate reaches the target keeps every page (``SparrowSchedule.dense``'s count)
    from there on, is marked False and is logged as a warning with the best p5 reached. A bin without data
    (met None) carries the previous bin's value; bins without data before the first measured bin take the
    first measured bin's value, the budget the measurements support (and the table stays non-decreasing).
    """
    every_page = SparrowSchedule.dense().pages[0]
    by_bin: dict = {}
    for r in table:
        by_bin.setdefault(r["bin_start"] // bin_tokens, []).append(r)
    pages, met, running = [], [], None
    for b in range(n_bins):
        rows = sorted(by_bin.get(b, []), key=lambda r: r["pages"])
        ok = [r["pages"] for r in rows if r["p5"] >= target]
        if ok:
            running = max(running or 0, ok[0])
            met.append(True)
        elif rows:
            best = max(rows, key=lambda r: r["p5"])
            log.warning(
                "sparrow.calibrate: no candidate reaches p5 >= %.3f for KV lengths %d-%d (best p5 %.4f, with %d "
                "pages): this bucket and every later one keep every page (dense); add larger candidates, measure "
                "more windows or lower the target", target, b * bin_tokens, (b + 1) * bin_tokens, best["p5"],
                best["pages"])
            running = every_page
            met.append(False)
        else:
            met.append(None)
        pages.append(running)
    first = next((x for x in pages if x is not None), None)
    if first is None:
        raise ValueError(f"calibrate: no measurements in any of the {n_bins} bins")
    return [first if x is None else x for x in pages], met
