"""replaycompile: a torch.compile backend that computes every shared rollout prefix once, with exact gradients.

    policy = torch.compile(model, backend="replay")     # found through the entry point
    replaycompile.last_stats()                           # what the last call did

Sparse rollouts (Sparrow): ``replaycompile.SparrowSchedule``, ``replaycompile.rollout.generate``,
``replaycompile.sparrow`` (acceptance, calibration, the TIS loss), ``replaycompile.distill.DistillSparse``.
"""

from . import rollout, sparrow
from .backend import DEFAULT_MIN_SHARED_TOKENS, ReplayOptions, last_stats, parse_options
from .sparrow import SparrowSchedule
from .integrations.trl import install_guard as _install_trl_guard

# GRPOTrainer(model=torch.compile(model, backend="replay")) would never run replay (TRL replaces the forward):
# refuse it with a pointer to replaycompile.integrations.trl.compile_trainer (imports nothing of TRL)
_install_trl_guard()

__all__ = ["last_stats", "parse_options", "ReplayOptions", "DEFAULT_MIN_SHARED_TOKENS", "SparrowSchedule",
           "rollout", "sparrow"]
