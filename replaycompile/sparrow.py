"""Sparrow: sparse rollouts with a budget schedule, the acceptance metric, calibration, and the loss correction.

Sparrow decodes with block-sparse attention over 16-token pages whose budget grows with the KV length. The
budget comes from a :class:`SparrowSchedule` (a piecewise-constant table of pages kept per bucket of KV length),
calibrated so that the **5th percentile** of per-token acceptance ``alpha = sum_x min(p_dense(x), p_sparse(x))``
stays above a target (about 0.86) in every position bin: the mean hides the few tokens that go badly wrong.

This module is the public namespace only; each piece lives in a module of its own, and data flows one way:

    schedule.py     SparrowSchedule and its JSON (a leaf: the backend reads it)
    acceptance.py   the acceptance metric, its per-bin summary, AcceptanceMonitor (tensors in, numbers out)
    losses.py       tis_policy_loss (log-probs in, a loss out)
    calibration.py  measure_windows / calibrate: decode sessions (rollout.py) -> acceptance -> a schedule
    controller.py   ScheduleController: the monitor's per-bin p5 while training -> the schedule's pages
"""

from __future__ import annotations

from .acceptance import (AcceptanceMonitor, acceptance, acceptance_summary, acceptance_topk, order_statistic_rank,
                         quantile_lower_bound)
from .calibration import (Calibration, calibrate, calibration_windows, choose_pages, measure_acceptance,
                          measure_windows)
from .controller import ScheduleController, ScheduleDecision
from .losses import tis_policy_loss
from .schedule import MAX_BUCKETS, SparrowSchedule  # noqa: F401 - MAX_BUCKETS was importable from here

__all__ = ["SparrowSchedule", "acceptance", "acceptance_topk", "acceptance_summary", "tis_policy_loss",
           "measure_windows", "measure_acceptance", "calibrate", "choose_pages", "calibration_windows",
           "Calibration",
           "AcceptanceMonitor", "order_statistic_rank", "quantile_lower_bound",
           "ScheduleController", "ScheduleDecision"]
