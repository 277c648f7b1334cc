"""The plain GRPO loop example runs as a user would run it, at tiny size, and every step is packed."""

from __future__ import annotations

import importlib.util
import math
import pathlib

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_grpo_loop_example_trains_packed():
    loop = _load("grpo_loop")
    history = loop.main(["--steps", "2", "--inner", "aot_eager", "--prompt-len", "16", "--new-tokens", "6"])
    assert len(history) == 2
    for rec in history:
        assert rec["applied"] and rec["tokens_computed"] < rec["tokens_in"], rec
        assert math.isfinite(rec["loss"]), rec
