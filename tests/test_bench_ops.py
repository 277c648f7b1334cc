"""bench/ops.py, each custom op against its pure-torch reference, runs at tiny shapes: a line per op, and the op
equals its reference (the timing is the benchmark's business, not the test's)."""

import pytest
from helpers import load_script

ops = load_script("bench/ops.py")

TINY = {
    "logprobs": ["--rows", "48", "--hidden", "16", "--vocab", "300", "--chunk", "16"],
    "decode": ["--batch", "2", "--heads", "4", "--kv-heads", "2", "--head-dim", "16", "--context", "150",
               "--page", "16", "--topk", "2"],
    "scan": ["--group", "3", "--prompt", "20", "--cmin", "4", "--cmax", "9", "--hidden", "32", "--head-dim", "8"],
    "tree": ["--group", "3", "--prompt", "40", "--completion", "7", "--heads", "4", "--kv-heads", "2",
             "--head-dim", "16"],
}


@pytest.mark.parametrize("op", list(TINY))
def test_op_benchmark_runs_and_the_op_equals_its_reference(op, capsys):
    _, args = ops.parse(["--reps", "1", op, *TINY[op]])
    row = ops.OPS[op](args)
    assert row["op_ms"] > 0 and row["reference_ms"] > 0 and row["ratio"] > 0, row
    assert row["max_rel_err"] < 1e-4, row
    line = capsys.readouterr().out
    assert line.startswith(f"{op} ") and "x; peak MB" in line, line
