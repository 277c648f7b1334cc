"""replaycompile: a torch.compile backend that computes every shared rollout prefix once, with exact gradients.

    policy = torch.compile(model, backend="replay")     # found through the entry point
    replaycompile.last_stats()                           # what the last call did
"""

from .backend import DEFAULT_MIN_SHARED_TOKENS, ReplayOptions, last_stats, parse_options

__all__ = ["last_stats", "parse_options", "ReplayOptions", "DEFAULT_MIN_SHARED_TOKENS"]
