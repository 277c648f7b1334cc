"""The Sparrow schedule: pages kept per bucket of KV length, the reserved pages, the dense layers, and its JSON.

A leaf module: the backend reads a schedule from its options (``schedule=``), rollouts and calibration make and
change them; it imports nothing of the package but the ``cdiv`` helper. Files we read are JSON; nothing here
unpickles.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

import torch
from torch import Tensor

from replaycompile.kernels.block_sparse import PAGE_SCORES, budget_bucket, cdiv

__all__ = ["SparrowSchedule", "MAX_BUCKETS"]

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
    ``page_score`` ranks the pages (kernels/sparse_decode.py): ``"bound"`` (Quest's upper bound on q.k over a
    page's keys, the default) or ``"centroid"`` (mean key . query, which loses single matching keys as the
    context grows). A schedule JSON without the field (written before it existed) loads with the default.

    A compiled decode step reads ``pages`` on every call: ``set_pages`` (a recalibration) takes effect at the next
    step without recompiling. The other fields are fixed once a step is compiled with the schedule.
    """

    pages: tuple[int, ...]
    bucket_tokens: int = 2048
    page_size: int = 16
    sink_pages: int = 1
    local_pages: int = 2
    dense_layers: tuple[int, ...] = (0, 1)
    page_score: str = "bound"

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
                    local_pages=self.local_pages, dense_layers=tuple(self.dense_layers), page_score=self.page_score)

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
        if self.page_score not in PAGE_SCORES:
            raise ValueError(f"SparrowSchedule: page_score={self.page_score!r}; known page scores are "
                             f"{', '.join(map(repr, PAGE_SCORES))}")

    # -- budget
    def bucket(self, kv_len: int) -> int:
        """The page-table entry that holds at this KV length (the decode graph's sparrow_budget node reads
        the same one)."""
        return budget_bucket(kv_len, self.bucket_tokens, len(self.pages))

    def topk_pages(self, kv_len: int) -> int:
        """Pages chosen by score at this KV length (reserved pages not included)."""
        return self.pages[self.bucket(kv_len)]

    def budget(self, kv_len: int) -> int:
        """Pages attended in total at this KV length: top-k plus reserved, at most the pages that exist."""
        n_pages = cdiv(kv_len, self.page_size)
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
