"""The plain GRPO loop example runs as a user would run it, at tiny size, and every step is packed."""

from __future__ import annotations

import math

import pytest
from helpers import load_script



def _load(name: str):
    return load_script(f"examples/{name}.py")


def test_grpo_loop_example_trains_packed():
    loop = _load("grpo_loop")
    history = loop.main(["--steps", "2", "--inner", "aot_eager", "--prompt-len", "16", "--new-tokens", "6"])
    assert len(history) == 2
    for rec in history:
        assert rec["applied"] and rec["tokens_computed"] < rec["tokens_in"], rec
        assert math.isfinite(rec["loss"]), rec


@pytest.mark.slow
def test_sparrow_grpo_example_runs_packed_with_controller(tmp_path):
    """The end-to-end Sparrow GRPO run at tiny size: sparse rollouts, every training step packed (the G rollouts
    of a prompt share its context), the monitor's p5 and the controller's pages logged per step, metrics and
    plots written."""
    import json

    run = _load("sparrow_grpo")
    result = run.main(["--quick", "--steps", "3", "--no-progress", "--out", str(tmp_path)])
    history = result["history"]
    assert len(history) == 3
    for rec in history:
        assert rec["packed"] and rec["tokens_computed"] < rec["tokens_in"], rec
        assert rec["p5"] and all(0.0 <= v <= 1.0 for v in rec["p5"].values()), rec
        assert rec["pages"] == sorted(rec["pages"]), rec  # the controller keeps the table monotone
        assert 0.0 <= rec["reward"] <= 1.0 and math.isfinite(rec["loss"]), rec
    # the controller's decisions are the schedule's history: replaying them gives the final table
    pages = list(history[0]["pages"])
    assert result["schedule"].pages[:len(pages)] == tuple(history[-1]["pages"][:len(pages)])
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved["summary"]["steps"] == 3 and len(saved["history"]) == 3
