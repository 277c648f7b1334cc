"""replaycompile: a torch.compile backend that computes every shared rollout prefix once, with exact gradients.

    policy = torch.compile(model, backend="replay")     # found through the entry point
    replaycompile.last_stats()                           # what the last call did

Sparse rollouts (Sparrow): ``replaycompile.SparrowSchedule``, ``replaycompile.sparrow.rollout.generate``,
``replaycompile.sparrow`` (acceptance, calibration, the TIS loss), ``replaycompile.sparrow.distill.DistillSparse``.
"""

import importlib

from .backend import DEFAULT_MIN_SHARED_TOKENS, ReplayOptions, parse_options
from .stats import last_stats
from .sparrow.schedule import SparrowSchedule
from .integrations.trl import install_guard as _install_trl_guard

# GRPOTrainer(model=torch.compile(model, backend="replay")) would never run replay (TRL replaces the forward):
# refuse it with a pointer to replaycompile.integrations.trl.compile_trainer (imports nothing of TRL)
_install_trl_guard()

__all__ = ["last_stats", "parse_options", "ReplayOptions", "DEFAULT_MIN_SHARED_TOKENS", "SparrowSchedule",
           "rollout", "distill", "sparrow"]

# The rollout layer and the Sparrow API sit above the backend (they compile decode steps with it): loaded on
# first use, so the entry point (replaycompile.backend) never loads them
_LAZY = {"sparrow": "sparrow", "rollout": "sparrow.rollout", "distill": "sparrow.distill"}


def __getattr__(name):
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{_LAZY[name]}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
