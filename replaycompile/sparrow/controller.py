"""Recalibration while training: ``ScheduleController`` moves a Sparrow page table as the policy drifts.

Reads: after each training step, the per-bin acceptance summary of ``AcceptanceMonitor.update`` (rows with
bin_start, bin_end, count, mean, p5, and ``p5_lower`` where a lower confidence bound is reported). The monitor's
bins must be the schedule's buckets (``AcceptanceMonitor(bin_tokens=schedule.bucket_tokens)``).
Changes: the schedule's page table, only through ``SparrowSchedule.set_pages``. The table is data of compiled
decode graphs (padded to MAX_BUCKETS), so every decode step using that schedule reads the new budget at its next
step without recompiling; nothing else of the schedule is touched.
Why hysteresis: a bin below target costs now (the trainer learns from tokens the dense policy would not have
sampled), so it is raised at once and by a lot (doubled); a bin above target only costs compute, and a p5 over a
few hundred one-sample estimates is noisy, so a page count is lowered only after ``patience`` consecutive steps
at least ``margin`` above the target, then by a small step, and never back to a count that fell below target in
the last ``forget_after`` steps. Without that gap a bin near the threshold would flip between two budgets. The
table stays non-decreasing in KV length (the schedule requires it): a raise lifts later buckets to at least the
same count, a lowering stops at the previous bucket's count.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass

from replaycompile.kernels.block_sparse import cdiv
from .schedule import MAX_BUCKETS, SparrowSchedule

__all__ = ["ScheduleController", "ScheduleDecision"]

_FORMAT = "replaycompile.schedule_controller"
_VERSION = 1

log = logging.getLogger("replaycompile")


@dataclass(frozen=True)
class ScheduleDecision:
    """One bucket's decision at one step. ``action``: ``raise`` (p5 below target), ``follow`` (lifted to keep the
    table non-decreasing after an earlier bucket's raise), ``lower`` (wide margin for ``patience`` steps),
    ``held`` (would lower but a bound or the previous bucket stops it), ``stuck`` (below target, no page left to
    add), ``skip`` (too few samples), ``extend`` (a bucket beyond the table was observed), ``clamp`` (a table
    brought inside [min_pages, max_pages])."""

    step: int
    bin: int
    old: int
    new: int
    p5: float | None
    count: int | None
    action: str
    reason: str

    def to_dict(self) -> dict:
        return asdict(self)


class ScheduleController:
    """Raises pages where a bin's acceptance p5 falls below ``target``, lowers them slowly where it is wide.

    ``update(rows)`` after each training step (``rows``: what ``AcceptanceMonitor.update`` returned, or
    ``monitor.history[-1]``) returns that step's decisions; all of them are kept in ``decisions`` and logged
    (INFO; ``stuck`` at WARNING).

    - raise: p5 < target -> the next ladder rung above the current count (``ladder`` given; every page of the
      bucket when the ladder is exhausted) or ``max(old + 1, ceil(old * raise_factor))``; never above
      ``max_pages`` nor above the count that keeps every page at the bucket's longest KV length.
    - lower: the evidence (``p5_lower`` where the row has the key, else p5; a ``p5_lower`` of None, too few
      tokens for a bound, is no evidence) >= target + margin for ``patience`` consecutive
      observed steps -> the next rung below, or ``old - max(1, floor(old * lower_fraction))``; never below
      ``min_pages`` nor below the previous bucket's count, and never to a count at or under one that fell below
      target in this bucket within the last ``forget_after`` steps (a drifted policy's misses are intermittent:
      one good step at a count does not show it is enough). A bin between the two thresholds holds and resets
      its count of wide steps, as does any change.
    - a bin with fewer than ``min_count`` tokens is not acted on (a ``skip`` decision says so).
    - a bin past the table's end extends it with the last entry (which already held there).

    Position bins of the monitor and buckets of the schedule differ by one token at each boundary (the monitor
    bins a token by the KV length it was sampled at, the schedule buckets a step by ``(kv_len - 1) //
    bucket_tokens``); the controller takes the monitor's bin as the bucket.
    """

    def __init__(self, schedule: SparrowSchedule, target: float = 0.86, *, margin: float = 0.08, patience: int = 3,
                 min_count: int = 100, min_pages: int = 0, max_pages: int | None = None, raise_factor: float = 2.0,
                 lower_fraction: float = 0.25, forget_after: int = 20, ladder=None,
                 logger: logging.Logger | None = None):
        if not isinstance(schedule, SparrowSchedule):
            raise TypeError(f"ScheduleController: schedule must be a SparrowSchedule, got {type(schedule).__name__}")
        if not 0 < target <= 1:
            raise ValueError(f"ScheduleController: target={target} must be in (0, 1]")
        if margin < 0:
            raise ValueError(f"ScheduleController: margin={margin} must be >= 0")
        for name, v in (("patience", patience), ("min_count", min_count), ("forget_after", forget_after)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"ScheduleController: {name}={v!r} must be a positive int")
        every_page = SparrowSchedule.dense().pages[0]
        max_pages = every_page if max_pages is None else max_pages
        if not isinstance(min_pages, int) or not isinstance(max_pages, int) or not 0 <= min_pages <= max_pages:
            raise ValueError(f"ScheduleController: need 0 <= min_pages <= max_pages, got min_pages={min_pages!r}, "
                             f"max_pages={max_pages!r}")
        if not raise_factor > 1:
            raise ValueError(f"ScheduleController: raise_factor={raise_factor} must be > 1")
        if not 0 < lower_fraction < 1:
            raise ValueError(f"ScheduleController: lower_fraction={lower_fraction} must be in (0, 1)")
        if ladder is not None:
            ladder = sorted(set(int(c) for c in ladder))
            if not ladder or ladder[0] < 0:
                raise ValueError(f"ScheduleController: ladder {ladder} must be non-negative page counts")
        self.schedule, self.target, self.margin, self.patience = schedule, float(target), float(margin), patience
        self.min_count, self.min_pages, self.max_pages = min_count, min_pages, max_pages
        self.raise_factor, self.lower_fraction, self.ladder = float(raise_factor), float(lower_fraction), ladder
        self.forget_after = forget_after
        self.log = logger or log
        self.step = 0  # training steps seen (``update`` calls)
        self.wide_steps = [0] * len(schedule.pages)  # per bucket: consecutive observed steps with a wide margin
        self.failed: list = [None] * len(schedule.pages)  # per bucket: [pages, step] of its last p5 below target
        self.decisions: list[ScheduleDecision] = []
        self._clamp_to_bounds("the initial table")

    # -- the rules, as pure functions of a count
    def every_page(self, bucket: int) -> int:
        """Top-k pages that keep every page at the longest KV length of ``bucket`` (more adds nothing there)."""
        s = self.schedule
        return max(0, cdiv((bucket + 1) * s.bucket_tokens, s.page_size) - s.sink_pages - s.local_pages)

    def raised(self, old: int, bucket: int) -> int:
        cap = min(self.max_pages, max(self.every_page(bucket), old))
        if self.ladder is not None:
            up = [c for c in self.ladder if c > old]
            want = up[0] if up else cap  # past the ladder: every page, as calibrate does for a bin no rung meets
        else:
            want = max(old + 1, math.ceil(old * self.raise_factor))
        return max(old, min(want, cap))

    def lowered(self, old: int) -> int:
        if self.ladder is not None:
            down = [c for c in self.ladder if c < old]
            want = down[-1] if down else self.min_pages
        else:
            want = old - max(1, math.floor(old * self.lower_fraction))
        return max(want, self.min_pages)

    # -- one training step
    def update(self, rows, step: int | None = None) -> list[ScheduleDecision]:
        """Act on one step's per-bin summary; returns the decisions made (also appended to ``decisions``).
        ``step`` labels the records (default: the count of ``update`` calls)."""
        self.step += 1
        label = self.step if step is None else int(step)
        observed = self._buckets(rows)
        made: list[ScheduleDecision] = []
        old = list(self.schedule.pages)

        # facts: extend the table to every observed bucket, then classify each observation
        if observed and max(observed) >= len(old):
            n = max(observed) + 1
            r = observed[n - 1]
            made.append(self._decision(label, n - 1, old[-1], old[-1], r, "extend",
                                       f"observed KV lengths past the table's {len(old)} buckets; bucket "
                                       f"{len(old) - 1}'s count already held there"))
            old += [old[-1]] * (n - len(old))
            self.wide_steps += [0] * (n - len(self.wide_steps))
            self.failed += [None] * (n - len(self.failed))
        status = {}
        for b, r in sorted(observed.items()):
            if r["count"] < self.min_count:
                status[b] = "few"
                made.append(self._decision(label, b, old[b], old[b], r, "skip",
                                           f"{r['count']} tokens < min_count={self.min_count}: too few for a p5"))
            elif r["p5"] < self.target:
                status[b] = "below"
            elif self._evidence(r) is not None and self._evidence(r) >= self.target + self.margin:
                status[b] = "wide"
            else:
                status[b] = "ok"

        # decisions: raises first (each from the count that failed), a running max keeps the table monotone
        new = list(old)
        for b, st in status.items():
            if st != "below":
                continue
            new[b] = self.raised(old[b], b)
            self.failed[b] = [old[b], self.step]
            if new[b] == old[b]:
                why = (f"at max_pages={self.max_pages}" if old[b] >= self.max_pages else
                       "every page at these KV lengths is already kept, so the shortfall is not the budget's")
                made.append(self._decision(label, b, old[b], old[b], observed[b], "stuck",
                                           f"p5 {observed[b]['p5']:.4f} < target {self.target}, but {why}"))
            else:
                made.append(self._decision(label, b, old[b], new[b], observed[b], "raise",
                                           f"p5 {observed[b]['p5']:.4f} < target {self.target}"))
        for b in range(1, len(new)):
            if new[b] < new[b - 1]:
                made.append(self._decision(label, b, new[b], new[b - 1], observed.get(b), "follow",
                                           f"bucket {b - 1} now keeps {new[b - 1]} pages and the table must not "
                                           f"decrease with the KV length"))
                new[b] = new[b - 1]
        for b, st in status.items():
            if st in ("below", "ok") or new[b] != old[b]:
                self.wide_steps[b] = 0
            elif st == "wide":
                self.wide_steps[b] += 1

        # lowering: only buckets untouched this step, in order, each no lower than the one before it
        for b in sorted(status):
            if status[b] != "wide" or self.wide_steps[b] < self.patience or new[b] != old[b]:
                continue
            self.wide_steps[b] = 0
            floor = max(self.min_pages, new[b - 1] if b else 0)
            want = self.lowered(old[b])
            failed = self.failed[b]
            recent = failed is not None and self.step - failed[1] < self.forget_after and want <= failed[0]
            if recent:  # the cheapest count above the one that failed (on a ladder: its next rung, if below old)
                want = failed[0] + 1 if self.ladder is None else min([c for c in self.ladder if c > failed[0]]
                                                                     + [old[b]])
            evidence = self._evidence(observed[b])
            basis = (f"{'p5_lower' if 'p5_lower' in observed[b] else 'p5'} {evidence:.4f} >= "
                     f"{self.target + self.margin:.4f} for {self.patience} steps")
            if max(want, floor) < old[b]:
                new[b] = max(want, floor)
                made.append(self._decision(label, b, old[b], new[b], observed[b], "lower", basis))
            elif recent:
                made.append(self._decision(label, b, old[b], old[b], observed[b], "held",
                                           f"{basis}, but {failed[0]} pages fell below target here "
                                           f"{self.step - failed[1]} steps ago (forget_after={self.forget_after})"))
            elif want < old[b]:  # at min_pages there is nothing to say; otherwise the previous bucket stops it
                made.append(self._decision(label, b, old[b], old[b], observed[b], "held",
                                           f"{basis}, but bucket {b - 1} keeps {new[b - 1]} pages and the table "
                                           f"must not decrease with the KV length"))

        # mutation last
        if new != list(self.schedule.pages):
            self.schedule.set_pages(new)
        self._record(made)
        return made

    # -- serialisation (plain types: JSON round-trips it)
    def state_dict(self) -> dict:
        return {"format": _FORMAT, "version": _VERSION, "step": self.step, "pages": list(self.schedule.pages),
                "wide_steps": list(self.wide_steps), "failed": [None if f is None else list(f) for f in self.failed],
                "decisions": [d.to_dict() for d in self.decisions],
                "bucket_tokens": self.schedule.bucket_tokens, "page_size": self.schedule.page_size,
                "config": self.config()}

    def load_state_dict(self, state: dict) -> None:
        """Restore a saved controller into this one: the schedule's table (via ``set_pages``), the step count,
        the wide-margin counts and the decisions. This controller's own settings stay in force."""
        if not isinstance(state, dict) or state.get("format") != _FORMAT:
            raise ValueError(f"ScheduleController.load_state_dict: not a controller state (format "
                             f"{state.get('format') if isinstance(state, dict) else type(state).__name__!r}, "
                             f"expected {_FORMAT!r})")
        if state.get("version") != _VERSION:
            raise ValueError(f"ScheduleController.load_state_dict: version {state.get('version')!r} is not "
                             f"supported (this build reads {_VERSION})")
        for k in ("bucket_tokens", "page_size"):
            if state[k] != getattr(self.schedule, k):
                raise ValueError(f"ScheduleController.load_state_dict: the state's table is for {k}={state[k]}, "
                                 f"this schedule has {k}={getattr(self.schedule, k)}")
        pages, wide = [int(p) for p in state["pages"]], [int(w) for w in state["wide_steps"]]
        failed = [None if f is None else [int(f[0]), int(f[1])] for f in state["failed"]]
        if not len(wide) == len(failed) == len(pages):
            raise ValueError(f"ScheduleController.load_state_dict: {len(pages)} buckets but {len(wide)} "
                             f"wide-margin counts and {len(failed)} failure records")
        self.schedule.set_pages(pages)
        self.step, self.wide_steps, self.failed = int(state["step"]), wide, failed
        self.decisions = [ScheduleDecision(**d) for d in state["decisions"]]
        if state.get("config") != self.config():
            self.log.info("sparrow controller: resumed with other settings than the saved ones (%s, now %s)",
                          state.get("config"), self.config())
        self._clamp_to_bounds("the restored table")

    def config(self) -> dict:
        return dict(target=self.target, margin=self.margin, patience=self.patience, min_count=self.min_count,
                    min_pages=self.min_pages, max_pages=self.max_pages, raise_factor=self.raise_factor,
                    lower_fraction=self.lower_fraction, forget_after=self.forget_after, ladder=self.ladder)

    # -- internals
    def _buckets(self, rows) -> dict:
        """Monitor rows -> {bucket: row}, checked; rows past MAX_BUCKETS share the last bucket (worst p5 kept)."""
        bt = self.schedule.bucket_tokens
        out: dict = {}
        for i, r in enumerate(rows):
            missing = [k for k in ("bin_start", "bin_end", "count", "p5") if k not in r]
            if missing:
                raise ValueError(f"ScheduleController.update: row {i} lacks {missing}; expected the rows of "
                                 f"AcceptanceMonitor.update (bin_start, bin_end, count, p5): {r}")
            if r["bin_end"] - r["bin_start"] != bt or r["bin_start"] % bt:
                raise ValueError(f"ScheduleController.update: row {i} covers KV lengths {r['bin_start']}-"
                                 f"{r['bin_end']}, not one of the schedule's {bt}-token buckets: create the monitor "
                                 f"with bin_tokens=schedule.bucket_tokens ({bt})")
            if not all(isinstance(r[k], (int, float)) and math.isfinite(r[k])
                       for k in ("p5", "p5_lower") if k in r and (k == "p5" or r[k] is not None)):
                raise ValueError(f"ScheduleController.update: row {i} (KV lengths {r['bin_start']}-{r['bin_end']}) "
                                 f"has a p5 that is not a number: {r}")
            b = min(r["bin_start"] // bt, MAX_BUCKETS - 1)
            row = {k: r[k] for k in ("bin_start", "bin_end", "count", "p5", "p5_lower") if k in r}
            if b in out:  # only past MAX_BUCKETS: one bucket holds them all, judged by its worst bin
                prev = out[b]
                row = dict(bin_start=prev["bin_start"], bin_end=row["bin_end"], count=prev["count"] + row["count"],
                           p5=min(prev["p5"], row["p5"]),
                           **({"p5_lower": None if None in (prev["p5_lower"], row["p5_lower"]) else
                               min(prev["p5_lower"], row["p5_lower"])}
                              if "p5_lower" in prev and "p5_lower" in row else {}))
            out[b] = row
        return out

    @staticmethod
    def _evidence(row: dict):
        """What a lowering must see above target + margin: the lower bound where the monitor reports one (None:
        too few tokens for a bound), else the p5 itself."""
        return row["p5_lower"] if "p5_lower" in row else row["p5"]

    def _clamp_to_bounds(self, what: str) -> None:
        old = list(self.schedule.pages)
        # min/max of a non-decreasing table with constants stays non-decreasing
        new = [min(max(p, self.min_pages), self.max_pages) for p in old]
        if len(self.wide_steps) != len(new) or len(self.failed) != len(new):
            self.wide_steps = (self.wide_steps + [0] * len(new))[:len(new)]
            self.failed = (self.failed + [None] * len(new))[:len(new)]
        if new == old:
            return
        made = [self._decision(self.step, b, o, n, None, "clamp",
                               f"{what} is outside [min_pages={self.min_pages}, max_pages={self.max_pages}]")
                for b, (o, n) in enumerate(zip(old, new)) if o != n]
        self.schedule.set_pages(new)
        self._record(made)

    def _decision(self, step, b, old, new, row, action, reason) -> ScheduleDecision:
        return ScheduleDecision(step=step, bin=b, old=int(old), new=int(new),
                                p5=None if row is None else float(row["p5"]),
                                count=None if row is None else int(row["count"]), action=action, reason=reason)

    def _record(self, made: list) -> None:
        bt = self.schedule.bucket_tokens
        for d in made:
            self.log.log(logging.WARNING if d.action == "stuck" else logging.INFO,
                         "sparrow controller: step %d, bucket %d (KV lengths %d-%d): pages %d -> %d (%s; p5 %s, "
                         "n=%s): %s", d.step, d.bin, d.bin * bt, (d.bin + 1) * bt, d.old, d.new, d.action,
                         "-" if d.p5 is None else f"{d.p5:.4f}", "-" if d.count is None else d.count, d.reason)
        self.decisions.extend(made)
