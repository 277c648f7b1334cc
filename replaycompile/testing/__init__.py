"""Tiny causal LMs built from configs (no model hub) for the tests, ``replaycompile demo`` and the benchmarks:
``replaycompile.testing.models``."""
