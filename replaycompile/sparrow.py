"""Sparrow: sparse rollouts with a budget schedule, the acceptance metric, calibration, and the loss correction.

Sparrow decodes with block-sparse attention over 16-token pages whose budget grows with the KV length. The
budget comes from a :class:`SparrowSchedule` (a piecewise-constant table of pages kept per bucket of KV length),
calibrated so that the **5th percentile** of per-token acceptance ``alpha = sum_x min(p_dense(x), p_sparse(x))``
stays above a target (about 0.86) in every position bin: the mean hides the few tokens that go badly wrong.

Files we read are JSON (schedules); nothing here unpickles.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass

import torch
from torch import Tensor

__all__ = ["SparrowSchedule", "acceptance", "acceptance_topk", "acceptance_summary", "tis_policy_loss",
           "measure_windows", "measure_acceptance", "calibrate", "choose_pages", "calibration_windows",
           "Calibration",
           "AcceptanceMonitor"]

log = logging.getLogger("replaycompile")

_FORMAT = "replaycompile.sparrow_schedule"
_VERSION = 1


# The table enters compiled decode graphs padded to this many buckets (with its last value), so that a
# recalibrated table of another length is new data for the same graph, never a new graph.
MAX_BUCKETS = 256


@dataclass
class SparrowSchedule:
    """Pages kept per bucket of total KV length, plus the always-kept pages and the dense layers.

    ``pages[i]`` is the number of top-scoring pages selected (beyond the reserved ones) while the KV length is in
    bucket ``i`` = ``[i * bucket_tokens, (i + 1) * bucket_tokens)``; the last entry holds for longer contexts.
    Reserved pages are always kept: ``sink_pages`` at the start of each row's real tokens and ``local_pages``
    ending at the current token. Layers listed in ``dense_layers`` attend densely. Prefill is always dense.

    A compiled decode step reads ``pages`` on every call: ``set_pages`` (a recalibration) takes effect at the next
    step without recompiling. The other fields are fixed once a step is compiled with the schedule.
    """

    pages: tuple[int, ...]
    bucket_tokens: int = 2048
    page_size: int = 16
    sink_pages: int = 1
    local_pages: int = 2
    dense_layers: tuple[int, ...] = (0, 1)

    def __post_init__(self):
        self.pages = tuple(self.pages)
        self.dense_layers = tuple(self.dense_layers)
        self.validate()

    def set_pages(self, pages) -> None:
        """Replace the page table (validated first; the schedule is unchanged if it is invalid)."""
        SparrowSchedule(pages=tuple(pages), **{k: v for k, v in self.structure().items()})
        self.pages = tuple(pages)

    def structure(self) -> dict:
        """The fields a compiled decode graph bakes in (everything but the page table)."""
        return dict(bucket_tokens=self.bucket_tokens, page_size=self.page_size, sink_pages=self.sink_pages,
                    local_pages=self.local_pages, dense_layers=tuple(self.dense_layers))

    # -- validation
    def validate(self) -> None:
        def is_int(x):
            return isinstance(x, int) and not isinstance(x, bool)

        if not self.pages:
            raise ValueError("SparrowSchedule: `pages` is empty; give at least one bucket's page count")
        if len(self.pages) > MAX_BUCKETS:
            raise ValueError(f"SparrowSchedule: {len(self.pages)} buckets; at most {MAX_BUCKETS} are supported "
                             f"(use larger bucket_tokens)")
        bad = [(i, p) for i, p in enumerate(self.pages) if not is_int(p) or p < 0]
        if bad:
            raise ValueError(f"SparrowSchedule: pages[{bad[0][0]}] = {bad[0][1]!r} is not a non-negative int")
        drops = [i for i in range(1, len(self.pages)) if self.pages[i] < self.pages[i - 1]]
        if drops:
            i = drops[0]
            raise ValueError(f"SparrowSchedule: the page table must not decrease with the KV length, but bucket {i} "
                             f"keeps {self.pages[i]} pages after bucket {i - 1} kept {self.pages[i - 1]}")
        if not is_int(self.page_size) or self.page_size < 1 or self.page_size & (self.page_size - 1):
            raise ValueError(f"SparrowSchedule: page_size={self.page_size!r} must be a power of two")
        if not is_int(self.bucket_tokens) or self.bucket_tokens < self.page_size or self.bucket_tokens % self.page_size:
            raise ValueError(f"SparrowSchedule: bucket_tokens={self.bucket_tokens!r} must be a positive multiple of "
                             f"page_size={self.page_size}")
        for name in ("sink_pages", "local_pages"):
            v = getattr(self, name)
            if not is_int(v) or v < 0:
                raise ValueError(f"SparrowSchedule: {name}={v!r} must be a non-negative int")
        if self.local_pages < 1:
            raise ValueError("SparrowSchedule: local_pages must be at least 1 (the page holding the current token)")
        if any(not is_int(x) or x < 0 for x in self.dense_layers) or len(set(self.dense_layers)) != len(self.dense_layers):
            raise ValueError(f"SparrowSchedule: dense_layers={self.dense_layers!r} must be distinct non-negative ints")

    # -- budget
    def bucket(self, kv_len: int) -> int:
        return min(max(kv_len - 1, 0) // self.bucket_tokens, len(self.pages) - 1)

    def topk_pages(self, kv_len: int) -> int:
        """Pages chosen by score at this KV length (reserved pages not included)."""
        return self.pages[self.bucket(kv_len)]

    def budget(self, kv_len: int) -> int:
        """Pages attended in total at this KV length: top-k plus reserved, at most the pages that exist."""
        n_pages = -(-kv_len // self.page_size)
        return min(n_pages, self.topk_pages(kv_len) + self.sink_pages + self.local_pages)

    def budget_tokens(self, kv_len: int) -> int:
        return min(kv_len, self.budget(kv_len) * self.page_size)

    def table(self, device=None, padded: bool = False) -> Tensor:
        """The page table as int64 (the schedule's graph input), ``padded`` to MAX_BUCKETS with its last value."""
        self.validate()
        pages = list(self.pages) + [self.pages[-1]] * (MAX_BUCKETS - len(self.pages) if padded else 0)
        return torch.tensor(pages, dtype=torch.int64, device=device)

    @classmethod
    def fixed(cls, pages: int, **kw) -> "SparrowSchedule":
        """A constant budget (one bucket)."""
        return cls(pages=(pages,), **kw)

    @classmethod
    def dense(cls, **kw) -> "SparrowSchedule":
        """A schedule that keeps every page up to 2M tokens: sparse decoding then equals dense decoding."""
        return cls(pages=(1 << 17,), **kw)

    # -- JSON
    def to_dict(self) -> dict:
        d = asdict(self)
        d["pages"], d["dense_layers"] = list(self.pages), list(self.dense_layers)
        return {"format": _FORMAT, "version": _VERSION, **d}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_dict(cls, d: dict) -> "SparrowSchedule":
        if not isinstance(d, dict):
            raise ValueError(f"a Sparrow schedule is a JSON object, got {type(d).__name__}")
        d = dict(d)
        fmt, ver = d.pop("format", _FORMAT), d.pop("version", _VERSION)
        if fmt != _FORMAT:
            raise ValueError(f"not a Sparrow schedule: format {fmt!r} (expected {_FORMAT!r})")
        if ver != _VERSION:
            raise ValueError(f"Sparrow schedule version {ver!r} is not supported (this build reads {_VERSION})")
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"Sparrow schedule: unknown field(s) {unknown}; known fields are {sorted(known)}")
        if "pages" not in d:
            raise ValueError("Sparrow schedule: missing field 'pages'")
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> "SparrowSchedule":
        return cls.from_dict(json.loads(text))

    def save(self, path: str | os.PathLike) -> None:
        with open(path, "w") as f:
            f.write(self.to_json() + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike) -> "SparrowSchedule":
        with open(path) as f:
            try:
                return cls.from_json(f.read())
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: not valid JSON ({e})") from e


# ------------------------------------------------------------------------------------------------ acceptance


def acceptance(dense_logits: Tensor, sparse_logits: Tensor) -> Tensor:
    """Per-token acceptance ``alpha = sum_x min(p_dense(x), p_sparse(x))`` (= 1 - total variation), exactly,
    from full logits [..., V]. Computed in float64 (an alpha near 1 is a difference of near-equal sums)."""
    if dense_logits.shape != sparse_logits.shape:
        raise ValueError(f"dense and sparse logits differ in shape: {tuple(dense_logits.shape)} vs "
                         f"{tuple(sparse_logits.shape)}")
    pd = dense_logits.double().softmax(-1)
    ps = sparse_logits.double().softmax(-1)
    return torch.minimum(pd, ps).sum(-1).clamp(0.0, 1.0)


def acceptance_topk(dense_logprobs: Tensor, dense_ids: Tensor, sparse_logprobs: Tensor, sparse_ids: Tensor) -> Tensor:
    """A lower bound on alpha from top-k log-probs of each side ([..., k] values and token ids): the sum over
    tokens in both top-k lists of ``min(p_dense, p_sparse)``. Tokens outside either list only add to alpha."""
    same = dense_ids[..., :, None] == sparse_ids[..., None, :]  # [..., k_dense, k_sparse]
    pd = dense_logprobs.double().exp()[..., :, None]
    ps = sparse_logprobs.double().exp()[..., None, :]
    return torch.where(same, torch.minimum(pd, ps), torch.zeros((), dtype=torch.float64)).sum((-1, -2))


def acceptance_summary(alpha: Tensor, positions: Tensor, bin_tokens: int = 2048, mask: Tensor | None = None,
                       quantile: float = 0.05) -> list[dict]:
    """Per position bin (``[i * bin_tokens, (i + 1) * bin_tokens)`` of the KV length at which a token was
    generated): count, mean and the ``quantile`` (field ``p5``: the 5th percentile by default) of alpha. Bins
    without tokens are left out."""
    a = alpha.reshape(-1).double()
    pos = positions.reshape(-1).to(torch.int64)
    if mask is not None:
        keep = mask.reshape(-1).bool()
        a, pos = a[keep], pos[keep]
    out = []
    if a.numel() == 0:
        return out
    bins = pos // bin_tokens
    for b in torch.unique(bins).tolist():
        sel = a[bins == b]
        out.append(dict(bin_start=b * bin_tokens, bin_end=(b + 1) * bin_tokens, count=int(sel.numel()),
                        mean=float(sel.mean()), p5=float(torch.quantile(sel, quantile))))
    return out


# ------------------------------------------------------------------------------------------------ loss


def tis_policy_loss(logp: Tensor, logp_old: Tensor, logp_rollout: Tensor, advantages: Tensor, mask: Tensor, *,
                    clip_low: float = 0.2, clip_high: float | None = None, tis_cap: float = 2.0,
                    aggregation: str = "token-mean") -> tuple[Tensor, dict]:
    """GRPO/DAPO policy loss with PPO clipping and truncated importance sampling for a sparse rollout.

    logp: the current policy's log-probs of the sampled tokens [B, L] (differentiable); logp_old: the training
    engine's (dense) log-probs at rollout time, detached; logp_rollout: what the (sparse) rollout engine gave;
    advantages: [B] or [B, L]; mask: completion tokens [B, L]. Per token:

        ratio = exp(logp - logp_old);  pg = -min(ratio * A, clip(ratio, 1 - clip_low, 1 + clip_high) * A)
        w = min(exp(logp_old - logp_rollout), tis_cap)      (detached: corrects rollout/training mismatch)
        loss = sum(w * pg * mask) / sum(mask)               ("token-mean", DAPO) or the mean of per-row means
                                                             ("seq-mean", GRPO)

    ``clip_high`` defaults to ``clip_low`` (symmetric PPO); DAPO's clip-higher sets it larger. Returns the loss and
    diagnostics (clip fraction, mean TIS weight, fraction of truncated weights).
    """
    if aggregation not in ("token-mean", "seq-mean"):
        raise ValueError(f"aggregation={aggregation!r} must be 'token-mean' or 'seq-mean'")
    if tis_cap <= 0:
        raise ValueError(f"tis_cap={tis_cap!r} must be positive")
    clip_high = clip_low if clip_high is None else clip_high
    mask = mask.to(logp.dtype)
    adv = advantages if advantages.dim() == logp.dim() else advantages[:, None]
    ratio = torch.exp(logp - logp_old.detach())
    unclipped = ratio * adv
    clipped = ratio.clamp(1 - clip_low, 1 + clip_high) * adv
    pg = -torch.minimum(unclipped, clipped)
    raw_w = torch.exp(logp_old.detach() - logp_rollout.detach())
    w = raw_w.clamp(max=tis_cap)
    per_tok = w * pg * mask
    if aggregation == "token-mean":
        loss = per_tok.sum() / mask.sum().clamp_min(1)
    else:
        loss = (per_tok.sum(-1) / mask.sum(-1).clamp_min(1)).mean()
    n = mask.sum().clamp_min(1)
    stats = dict(clip_fraction=float(((unclipped != clipped).to(mask.dtype) * mask).sum() / n),
                 tis_weight_mean=float((w * mask).sum() / n),
                 tis_truncated_fraction=float(((raw_w > tis_cap).to(mask.dtype) * mask).sum() / n))
    return loss, stats


# ------------------------------------------------------------------------------------------------ measurement


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
    import sys

    from replaycompile.kernels.sparse_decode import reset_page_state

    from .rollout import DecodeSession

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
            reset_page_state()
            c = sess.clone()
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


class AcceptanceMonitor:
    """Tracks rollout/training mismatch during RL training, per position bin, and warns below the target.

    From the training step's dense log-probs of the sampled tokens and the rollout's log-probs of the same
    tokens, ``min(1, p_dense / p_rollout)`` is a one-sample unbiased estimate of alpha at that position (its
    expectation over the rollout's sampling is ``sum_x min(p_dense, p_rollout)``). The per-bin 5th percentile
    of these estimates is noisier than the p5 of alpha itself; where full or top-k distributions are at hand,
    ``acceptance`` / ``acceptance_topk`` are exact / a lower bound.
    """

    def __init__(self, target: float = 0.86, bin_tokens: int = 2048, quantile: float = 0.05, logger=None):
        import logging
        self.target, self.bin_tokens, self.quantile = target, bin_tokens, quantile
        self.log = logger or logging.getLogger("replaycompile")
        self.history: list = []

    def update(self, dense_logprobs: Tensor, rollout_logprobs: Tensor, mask: Tensor, prompt_lengths) -> list[dict]:
        """dense/rollout log-probs and mask [B, L] over completion tokens; ``prompt_lengths``: int or [B] (the
        KV length at the first completion token). Returns the per-bin summary and logs a warning per bin whose
        p5 is below the target."""
        b, l = dense_logprobs.shape
        start = torch.as_tensor(prompt_lengths).reshape(-1, 1).expand(b, 1)
        positions = start + torch.arange(l)[None]
        est = torch.exp(dense_logprobs.double() - rollout_logprobs.double()).clamp(max=1.0)
        rows = acceptance_summary(est, positions, self.bin_tokens, mask, quantile=self.quantile)
        for r in rows:
            if r["p5"] < self.target:
                self.log.warning("sparrow: acceptance p5 %.3f < target %.2f for KV lengths %d-%d (mean %.3f, %d "
                                 "tokens): recalibrate the schedule or raise its budget there", r["p5"], self.target,
                                 r["bin_start"], r["bin_end"], r["mean"], r["count"])
        self.history.append(rows)
        return rows
