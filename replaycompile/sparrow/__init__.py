"""Sparrow: sparse rollouts with a budget schedule, the acceptance metric, calibration, and the loss correction.

Sparrow decodes with block-sparse attention over 16-token pages whose budget grows with the KV length. The
budget comes from a :class:`SparrowSchedule` (a piecewise-constant table of pages kept per bucket of KV length),
calibrated so that the **5th percentile** of per-token acceptance ``alpha = sum_x min(p_dense(x), p_sparse(x))``
stays above a target (about 0.86) in every position bin: the mean hides the few tokens that go badly wrong.

The Sparrow product, one package: this module is its public namespace (names load on first use); each piece
lives in a module of its own, and data flows one way:

    graph.py        SparrowGraph: what backend="replay" with a ``schedule`` compiles (passes/sparrow_rewrite.py)
    schedule.py     SparrowSchedule and its JSON (a leaf: the backend reads it)
    acceptance_metric.py  the acceptance metric, its per-bin summary, AcceptanceMonitor (tensors in, numbers out)
    losses.py       tis_policy_loss (log-probs in, a loss out)
    calibration.py  measure_windows / calibrate: decode sessions (rollout.py) -> acceptance -> a schedule
    controller.py   ScheduleController: the monitor's per-bin p5 while training -> the schedule's pages
    rollout.py      generate / DecodeSession: our decode loop, its steps compiled with the schedule
    retrieval.py    the retrieval task the calibration and the p5 tests measure on
    distill.py      DistillSparse: training the model toward its sparse decode
"""

from __future__ import annotations

import importlib

# The public names and the module each lives in, loaded on first use (no module shares a public name: an
# imported submodule would shadow it as the package's attribute): ``replaycompile.sparrow.schedule`` (what
# the backend reads) must not pull in the rollout and calibration layers above the backend
_NAMES = {
    **dict.fromkeys(("acceptance", "acceptance_topk", "acceptance_summary", "AcceptanceMonitor", "order_statistic_rank",
                     "quantile_lower_bound"), "acceptance_metric"),
    "measure_windows": "calibration", "measure_acceptance": "calibration", "calibrate": "calibration",
    "choose_pages": "calibration", "calibration_windows": "calibration", "Calibration": "calibration",
    "ScheduleController": "controller", "ScheduleDecision": "controller",
    "tis_policy_loss": "losses",
    "SparrowSchedule": "schedule", "MAX_BUCKETS": "schedule",
}


def __getattr__(name):
    if name in _NAMES:
        return getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_NAMES))


__all__ = ["SparrowSchedule", "acceptance", "acceptance_topk", "acceptance_summary", "tis_policy_loss",
           "measure_windows", "measure_acceptance", "calibrate", "choose_pages", "calibration_windows",
           "Calibration",
           "AcceptanceMonitor", "order_statistic_rank", "quantile_lower_bound",
           "ScheduleController", "ScheduleDecision"]
