"""Sparrow calibration: teacher-forced acceptance of sparse against dense decoding, and the page table it picks.

``measure_windows`` decodes windows of long sequences through ``rollout.DecodeSession`` densely and with each
candidate schedule; ``calibrate`` turns those measurements into the cheapest monotone page table whose lower
confidence bound on the p5 acceptance reaches a target in every bin (``choose_pages``), and measures the chosen
table on held-out sequences. Imports: the schedule, the acceptance metric and
the rollout layer (whose decode steps run through the backend).
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field

import torch
from torch import Tensor

from .acceptance_metric import acceptance, acceptance_summary
from replaycompile.kernels.block_sparse import cdiv
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
        dense = _teacher_forced(sess, None, feed, inner)
        for name, sched in schedules.items():
            key = tuple(sorted(sched.structure().items()))
            if key not in shared:
                shared[key] = SparrowSchedule(pages=sched.pages, **sched.structure())
            shared[key].set_pages(sched.pages)
            alphas[name].append(acceptance(dense, _teacher_forced(sess, shared[key], feed, inner)))
        positions.append(torch.arange(s0, s0 + window))
    return {k: torch.cat(v, 1) for k, v in alphas.items()}, torch.cat(positions)


def measure_acceptance(model, sequences: Tensor, prompt_len: int, schedules: dict, inner: str = "eager"):
    """``measure_windows`` with one window: the tokens after ``prompt_len``."""
    return measure_windows(model, sequences, [prompt_len], sequences.shape[1] - prompt_len, schedules, inner)


@dataclass
class Calibration:
    """What ``calibrate`` returns: the schedule, every measurement behind it, and how it did out of sample.

    ``table``: one row per (bin, candidate) on the calibration split: bin_start, bin_end, pages, count, mean, p5,
    p5_lower (the lower confidence bound on the p5 the choice used; None: too few tokens), p5_rank. ``met``: per
    bucket, did some candidate's bound reach the target. ``bounds``: per bucket, the row of the chosen page
    count (the bound it reached; None for a bucket without data). ``held_out``: per bin, the chosen schedule on
    the held-out sequences: count, mean, p5, p5_lower and met (the held-out p5 >= target); empty without a
    held-out split."""

    schedule: SparrowSchedule
    table: list
    met: list
    target: float = 0.86
    confidence: float | None = None
    bounds: list = field(default_factory=list)
    held_out: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)  # adaptive: window passes decoded, covered and skipped

    def rows(self) -> list[str]:
        """The calibration table, one line per (bin, candidate)."""
        return [f"bin {r['bin_start']:>6}-{r['bin_end']:<6} pages {r['pages']:>6}: mean {r['mean']:.4f} "
                f"p5 {r['p5']:.4f} lower {_fmt(r.get('p5_lower'))} (n={r['count']})" for r in self.table]

    def held_out_rows(self) -> list[str]:
        """The out-of-sample report: per bin of the held-out split, the chosen pages, the bound calibration
        reached for them, and what the held-out tokens measured."""
        if not self.held_out:
            return ["held-out: not measured (calibrate without a holdout)"]
        out = []
        for r in self.held_out:
            b = r["bin_start"] // self.schedule.bucket_tokens
            cal = self.bounds[b] if b < len(self.bounds) else None
            out.append(f"held-out bin {r['bin_start']:>6}-{r['bin_end']:<6} pages {r['pages']:>6}: mean "
                       f"{r['mean']:.4f} p5 {r['p5']:.4f} lower {_fmt(r.get('p5_lower'))} (n={r['count']}); "
                       f"calibration bound {_fmt(cal and cal.get('p5_lower'))}; p5 >= {self.target}: {r['met']}")
        return out

    def held_out_met(self) -> bool | None:
        """Every held-out bin's p5 reaches the target, and calibration met it in every bucket (None: no
        held-out split)."""
        if not self.held_out:
            return None
        return all(r["met"] for r in self.held_out) and all(m is not False for m in self.met)


def _fmt(x) -> str:
    return "undefined" if x is None else f"{x:.4f}"


def calibration_windows(n: int, bin_tokens: int, window: int, per_bin: int = 1, min_start: int = 1) -> list[int]:
    """Where ``calibrate`` measures in a sequence of n tokens: ``per_bin`` windows per bin of KV length, the j-th
    ending at ``bin_start + (j + 1) * bin_tokens / per_bin`` (so they spread through the bin and the last one
    ends at its end; ``per_bin=1`` is the last ``window`` tokens of every bin), plus a last, partly covered bin
    that holds a whole window. Windows starting before ``min_start`` are dropped (a task may need room before
    its first window)."""
    if per_bin < 1 or per_bin * window > bin_tokens:
        raise ValueError(f"calibration_windows: {per_bin} windows of {window} tokens do not fit in a "
                         f"{bin_tokens}-token bin")
    starts = []
    for b0 in range(0, n - window + 1, bin_tokens):
        for j in range(per_bin):
            e = b0 + (j + 1) * bin_tokens // per_bin
            if e <= n:
                starts.append(max(e - window, 1))
    if n % bin_tokens and n - window >= (starts[-1] + window if starts else 1):
        starts.append(n - window)
    return [s for s in starts if s >= min_start]


def _split(prompts: list, holdout) -> tuple[list, list]:
    """(calibration, held-out) lists of [B, N] tensors: ``holdout`` a fraction of every tensor's rows (its last
    ones, at least one row each side), explicit sequences (a tensor or a list), or None."""
    if holdout is None:
        return prompts, []
    if isinstance(holdout, Tensor):
        return prompts, [holdout]
    if isinstance(holdout, (list, tuple)):
        return prompts, list(holdout)
    frac = float(holdout)
    if not 0 < frac < 1:
        raise ValueError(f"calibrate: holdout={holdout} must be a fraction in (0, 1), held-out sequences or None")
    cal, held = [], []
    for seqs in prompts:
        b = seqs.shape[0]
        h = round(b * frac)
        if b < 2 or not 0 < h < b:
            raise ValueError(f"calibrate: holdout={frac} of a batch of {b} sequences leaves no row for one side; "
                             f"pass more rows per tensor or explicit held-out sequences")
        cal.append(seqs[:b - h])
        held.append(seqs[b - h:])
    return cal, held


def _teacher_forced(sess, schedule, feed: Tensor, inner: str) -> Tensor:
    """Logits [B, 1 + n, V] of a clone of ``sess`` (its current logits, then each token of ``feed`` [B, n])."""
    c = sess.clone()  # a clone starts with no page centroids of its own
    c.set_schedule(schedule, inner)
    out = [c.logits.float()]
    for i in range(feed.shape[1]):
        out.append(c.step(feed[:, i]).float())
    return torch.stack(out, 1)


@torch.no_grad()
def _measure_adaptive(model, prompts, candidates, base, bin_tokens, window, per_bin, min_start, inner, progress,
                      target, key, quantile, confidence):
    """``calibrate(adaptive=True)``: bin by bin, each window's dense pass once (kept, with a copy of its cache),
    then the candidates from the previous bin's choice upwards until one meets ``key >= target`` in this bin.
    Cheaper candidates cannot be chosen there (the table is non-decreasing) and dearer ones are not needed. A
    window that a budget covers entirely (sink + local + pages >= the pages at its last step) runs dense
    attention in the kernel: alpha 1, not decoded. Returns (table rows as ``calibrate``'s, n_bins, stats)."""
    groups: dict = {}
    sessions = []
    n_bins = 0
    for t, seqs in enumerate(prompts):
        starts = calibration_windows(seqs.shape[1], bin_tokens, window, per_bin, min_start)
        if not starts:
            raise ValueError(f"calibrate: no {window}-token window fits in sequences of {seqs.shape[1]} tokens")
        ones = torch.ones(seqs.shape[0], starts[0], dtype=torch.long, device=seqs.device)
        sessions.append(DecodeSession(model, seqs[:, :starts[0]], ones, seqs.shape[1] + 1, None, inner))
        for s0 in starts:
            groups.setdefault(s0 // bin_tokens, []).append((s0, t))
        n_bins = max(n_bins, (starts[-1] + window - 1) // bin_tokens + 1)
    shared = SparrowSchedule(pages=(candidates[0],), **base)
    reserved = shared.sink_pages + shared.local_pages
    acc: dict = {c: ([], []) for c in candidates}
    stats = dict(windows=0, dense_passes=0, sparse_passes=0, covered=0, skipped=0)
    running = candidates[0]
    for b in sorted(groups):
        ready = []
        for s0, t in sorted(groups[b]):
            seqs, sess = prompts[t], sessions[t]
            if s0 > sess.position():
                sess.extend(seqs[:, sess.position():s0])
            if progress:
                print(f"sparrow: bin {b}: window at KV length {s0}", file=sys.stderr, flush=True)
            feed = seqs[:, s0:s0 + window - 1]
            start = sess.clone()
            ready.append((start, feed, _teacher_forced(start, None, feed, inner), s0, seqs.shape[0]))
            stats["windows"] += 1
            stats["dense_passes"] += 1
        met_here = False
        for c in candidates:
            if c < running:
                stats["skipped"] += len(ready)
                continue
            shared.set_pages((c,))
            alphas, poss = [], []
            for start, feed, dense, s0, rows in ready:
                if reserved + c >= cdiv(s0 + window - 1, shared.page_size):
                    a = torch.ones(rows, window, dtype=torch.float64)
                    stats["covered"] += 1
                else:
                    a = acceptance(dense, _teacher_forced(start, shared, feed, inner))
                    stats["sparse_passes"] += 1
                alphas.append(a.reshape(-1))
                poss.append(torch.arange(s0, s0 + window).repeat(rows))
            acc[c][0].extend(alphas)
            acc[c][1].extend(poss)
            here = [r for r in acceptance_summary(torch.cat(alphas), torch.cat(poss), bin_tokens, quantile=quantile,
                                                  confidence=confidence) if r["bin_start"] // bin_tokens == b]
            if here and here[0][key] is not None and here[0][key] >= target:
                running, met_here = c, True
                stats["skipped"] += len(ready) * sum(1 for x in candidates if x > c)
                break
        if not met_here:  # every later bin keeps every page whatever it measures (choose_pages): stop here
            log.warning("sparrow.calibrate(adaptive): no candidate met bin %d-%d; later bins are not measured (they "
                        "keep every page)", b * bin_tokens, (b + 1) * bin_tokens)
            break
    table = []
    for c in candidates:
        if acc[c][0]:
            for r in acceptance_summary(torch.cat(acc[c][0]), torch.cat(acc[c][1]), bin_tokens, quantile=quantile,
                                        confidence=confidence):
                table.append(dict(r, pages=c))
    return table, n_bins, stats


def _measure(model, prompts, schedules, bin_tokens, window, per_bin, min_start, inner, progress):
    """Per schedule name, (alpha, positions) of every token of every window of every prompt tensor."""
    alphas = {k: [] for k in schedules}
    positions = []
    for seqs in prompts:
        starts = calibration_windows(seqs.shape[1], bin_tokens, window, per_bin, min_start)
        if not starts:
            raise ValueError(f"calibrate: no {window}-token window fits in sequences of {seqs.shape[1]} tokens")
        a, pos = measure_windows(model, seqs, starts, window, schedules, inner, progress)
        for k in schedules:
            alphas[k].append(a[k].reshape(-1))
        positions.append(pos.repeat(seqs.shape[0]))
    return {k: torch.cat(v) for k, v in alphas.items()}, torch.cat(positions)


def calibrate(model, prompts, candidates, target: float = 0.86, *, bin_tokens: int = 2048, quantile: float = 0.05,
              window: int = 64, schedule: SparrowSchedule | None = None, inner: str = "eager",
              progress: bool = True, windows_per_bin: int = 1, min_start: int = 1, confidence: float | None = 0.9,
              holdout=None, min_samples_per_bin: int | None = None, adaptive: bool = False) -> Calibration:
    """The cheapest monotone page table whose lower confidence bound on the ``quantile`` (p5) acceptance
    reaches ``target`` in every bin, chosen on a calibration split and reported on a held-out one.

    ``prompts``: token tensors [B, N] without padding (or a list of them). In every bin of KV length a prompt
    covers, ``windows_per_bin`` windows of ``window`` tokens spread through the bin (``calibration_windows``)
    are decoded with teacher forcing (``measure_windows``), densely and with each candidate page count as a
    fixed budget. Per bin and candidate, ``p5_lower`` is the distribution-free order-statistic bound on the
    population p5 at ``confidence`` (``acceptance.quantile_lower_bound``): the k-th smallest alpha of the bin's
    n tokens, k the largest rank with P[Binom(n, 0.05) >= k] >= confidence. It counts every token of the bin
    as an independent sample: tokens of one window are correlated (one sequence's page layout), so the bound
    is honest only to the extent windows and sequences are many; that is what the held-out report checks.
    A bin with fewer tokens than the confidence needs (45 for the p5 at 0.9) has no bound and is not met.
    ``min_samples_per_bin`` refuses such a sample budget up front (a ValueError naming the bin).

    The default confidence 0.9: 0.95 needs 59 instead of 45 tokens per bin for any bound and a deeper order
    statistic at every n (a costlier table for the same data on this CPU), while the held-out split checks the
    choice directly. ``confidence=None`` chooses by the sample p5 itself (the old behaviour; no guarantee).

    ``holdout``: a fraction of each tensor's rows (its last ones), or explicit held-out sequences [B, N] (or a
    list): the chosen schedule is measured there, at the same window positions, and ``Calibration.held_out``
    reports per bin n, mean, p5, its bound and whether the p5 met the target (``held_out_rows`` prints it).

    Per bin the cheapest candidate meeting the target is taken, then the table is made non-decreasing
    (``choose_pages``). ``adaptive=True`` measures only what that choice reads: bin by bin, the dense pass of each
    window once, then candidates from the previous bin's choice upwards until one meets (``Calibration.stats``
    counts the window passes decoded and skipped); the table then holds only the measured candidates, and a bin
    nothing meets ends the measurement (every later bin is dense anyway). A bin where no candidate meets it keeps every page (dense), is marked False in ``met``
    and logged as a warning. ``schedule`` supplies the other fields (page size, reserved pages, dense layers);
    the bucket size is ``bin_tokens``.
    """
    if not 0 < target <= 1:
        raise ValueError(f"calibrate: target={target} must be in (0, 1]")
    if confidence is not None and not 0 < confidence < 1:
        raise ValueError(f"calibrate: confidence={confidence} must be in (0, 1), or None")
    candidates = sorted(set(int(c) for c in candidates))
    if not candidates or candidates[0] < 0:
        raise ValueError(f"calibrate: candidates {candidates} must be non-negative page counts")
    if window >= bin_tokens:
        raise ValueError(f"calibrate: window={window} must be shorter than bin_tokens={bin_tokens}")
    if isinstance(prompts, Tensor):
        prompts = [prompts]
    cal_prompts, held_prompts = _split(list(prompts), holdout)
    base = schedule.structure() if schedule is not None else {}
    base["bucket_tokens"] = bin_tokens
    if min_samples_per_bin is not None:  # refused before any decoding: the sample count follows from the windows
        per_bin: dict = {}
        for seqs in cal_prompts:
            for s0 in calibration_windows(seqs.shape[1], bin_tokens, window, windows_per_bin, min_start):
                for p in (s0, s0 + window - 1):  # a window may straddle two bins
                    per_bin.setdefault(p // bin_tokens, 0)
                for p in range(s0, s0 + window):
                    per_bin[p // bin_tokens] += seqs.shape[0]
        short = {b * bin_tokens: c for b, c in sorted(per_bin.items()) if c < min_samples_per_bin}
        if short:
            raise ValueError(f"calibrate: bins {short} (start: tokens) hold fewer than min_samples_per_bin="
                             f"{min_samples_per_bin} calibration tokens: add windows_per_bin, sequences or rows")
    key = "p5" if confidence is None else "p5_lower"
    if adaptive:
        table, n_bins, stats = _measure_adaptive(model, cal_prompts, candidates, base, bin_tokens, window,
                                                 windows_per_bin, min_start, inner, progress, target, key, quantile,
                                                 confidence)
    else:
        scheds = {c: SparrowSchedule(pages=(c,), **base) for c in candidates}
        alphas, pos_all = _measure(model, cal_prompts, scheds, bin_tokens, window, windows_per_bin, min_start,
                                   inner, progress)
        table = []
        for c in candidates:
            for r in acceptance_summary(alphas[c], pos_all, bin_tokens, quantile=quantile, confidence=confidence):
                table.append(dict(r, pages=c))
        n_bins = int(pos_all.max()) // bin_tokens + 1
        n_win = sum(len(calibration_windows(x.shape[1], bin_tokens, window, windows_per_bin, min_start))
                    for x in cal_prompts)
        stats = dict(windows=n_win, dense_passes=n_win, sparse_passes=n_win * len(candidates), covered=0, skipped=0)
    pages, met = choose_pages(table, target, bin_tokens, n_bins, key=key)
    chosen = SparrowSchedule(pages=tuple(pages), **base)
    by = {(r["bin_start"] // bin_tokens, r["pages"]): r for r in table}
    bounds = [by.get((b, p)) for b, p in enumerate(pages)]
    held_out = []
    if held_prompts:
        a, pos = _measure(model, held_prompts, {"chosen": chosen}, bin_tokens, window, windows_per_bin, min_start,
                          inner, progress)
        for r in acceptance_summary(a["chosen"], pos, bin_tokens, quantile=quantile,
                                    confidence=confidence or 0.9):
            b = r["bin_start"] // bin_tokens
            held_out.append(dict(r, pages=pages[min(b, len(pages) - 1)], met=r["p5"] >= target))
    return Calibration(schedule=chosen, table=table, met=met, target=target, confidence=confidence,
                       bounds=bounds, held_out=held_out, stats=stats)


def choose_pages(table: list, target: float, bin_tokens: int, n_bins: int, key: str = "p5") -> tuple[list[int], list]:
    """``calibrate``'s choice from its measurements: (pages per bucket, met per bucket).

    ``table``: rows with bin_start, pages (a candidate) and ``key`` (p5, or p5_lower: its lower confidence bound,
    None where the bin had too few tokens for one, which meets nothing). Per bin the cheapest candidate whose
    ``key`` reaches ``target`` among those at or above the previous bin's choice is taken (0 pages is a
    legitimate choice), so the table is non-decreasing and every chosen count met the target in its own bin (a
    cheaper count meeting a later bin does not certify the larger one an earlier bin forced there).
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
        ok = [r["pages"] for r in rows if r[key] is not None and r[key] >= target]
        # the running count must itself have met here: a cheaper candidate meeting this bin says nothing about
        # the count an earlier bin forced (the acceptance tail is noisy in the page count)
        fits = [c for c in ok if c >= (running or 0)]
        if fits:
            running = fits[0]
            met.append(True)
        elif ok and running == every_page:  # already dense from an earlier bin: exact, so met
            met.append(True)
        elif rows:
            defined = [r for r in rows if r[key] is not None]
            if ok:
                why = (f"{ok[0]} pages met it, but not the {running} pages an earlier bucket needs, nor any "
                       f"candidate above")
            elif defined:
                best = max(defined, key=lambda r: r[key])
                why = f"best {key} {best[key]:.4f}, with {best['pages']} pages"
            else:
                why = (f"{key} undefined: {rows[0]['count']} tokens are too few for a bound at this confidence")
            log.warning(
                "sparrow.calibrate: no candidate reaches %s >= %.3f for KV lengths %d-%d (%s): this bucket and "
                "every later one keep every page (dense); add larger candidates, measure more windows or lower the "
                "target", key, target, b * bin_tokens, (b + 1) * bin_tokens, why)
            running = every_page
            met.append(False)
        else:
            met.append(None)
        pages.append(running)
    first = next((x for x in pages if x is not None), None)
    if first is None:
        raise ValueError(f"calibrate: no measurements in any of the {n_bins} bins")
    return [first if x is None else x for x in pages], met
