"""examples/sparrow_grpo.py --rollout-only at a tiny size: the plumbing of the long-rollout measurement (calibrate,
roll out held-out prompts with the schedule and a dense decoder side by side, report per-bin acceptance).

Slow: the run compiles three decode steps with the replay backend (calibration's sparse step, the rollout's
sparse step, the dense reference), 2.6 minutes on the shared 2-core machine under load."""

import json

import pytest
import torch
from helpers import load_script



def _example():
    return load_script("examples/sparrow_grpo.py")


pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def long_run(tmp_path_factory):
    ex = _example()
    out = tmp_path_factory.mktemp("long")
    args = ex.parse_args(["--rollout-only", "--contexts", "160", "224", "--steps", "1", "--prompts", "1",
                          "--group", "2", "--new-tokens", "4", "--bin-tokens", "64", "--candidates", "0", "8",
                          "--cal-window", "8", "--cal-windows", "1", "--warmup", "1", "--no-progress",
                          "--out", str(out)])
    return ex, args, ex.long_rollouts(args), out


def test_long_rollout_prompts_are_held_out_from_calibration(long_run):
    ex, args, res, _ = long_run
    cal = res["calibration_sequences"]
    report = res["report"]
    assert ex.calibration_seed(args) not in report["prompt_seeds"]
    for rec in report["steps"]:
        prompts, _ = ex.recall_prompts(args.prompts, rec["context"], seed=rec["prompt_seed"])
        n = prompts.shape[1]
        assert not any(torch.equal(p, c[:n]) for p in prompts for c in cal)
    # the check the run makes refuses a calibration sequence, and the calibration seed
    with pytest.raises(ValueError, match="not held out"):
        ex.check_held_out(cal[:1, :200].clone(), cal, seed=1, args=args)
    with pytest.raises(ValueError, match="calibration seed"):
        ex.check_held_out(cal[:1, :200].clone(), cal, seed=ex.calibration_seed(args), args=args)


def test_long_rollout_report_has_per_bin_p5_from_the_held_out_rollouts(long_run):
    ex, args, res, out = long_run
    report = res["report"]
    alpha, pos = res["alpha"], res["positions"]
    # every sampled token but the first of each row, at the KV length it was predicted from
    per_context = args.prompts * args.group * (args.new_tokens - 1) * args.steps
    assert alpha.numel() == per_context * len(args.contexts)
    assert bool(((alpha >= 0) & (alpha <= 1)).all())
    expected_bins = sorted({(c + 1 + i) // args.bin_tokens * args.bin_tokens for c in args.contexts
                            for i in range(args.new_tokens - 1)})
    held = report["held_out"]
    assert [r["bin_start"] for r in held] == expected_bins
    for r in held:
        sel = alpha[(pos // args.bin_tokens) * args.bin_tokens == r["bin_start"]].double()
        assert r["count"] == sel.numel()
        assert r["p5"] == pytest.approx(float(torch.quantile(sel, 0.05)))
        assert "p5_lower" in r and r["met"] == (r["p5"] >= args.target)
    assert {r["context"] for r in report["throughput"]} == set(args.contexts)
    for r in report["throughput"]:
        assert r["batch"] == args.prompts * args.group
        assert r["sparrow_tok_s"] > 0 and r["dense_tok_s"] > 0
        assert r["speedup"] == pytest.approx(r["sparrow_tok_s"] / r["dense_tok_s"])
        assert 0 < r["pages_kept"] <= r["pages_total"]
    saved = json.loads((out / "sparrow_long_rollouts.json").read_text())
    assert saved["held_out"] == json.loads(json.dumps(held))
    md = (out / "sparrow_long_rollouts.md").read_text()
    assert "held-out p5 >= 0.86 in every bin" in md and f"{max(args.contexts)} context" in md
    assert "Load average (1 min)" in md and len(saved["load_average"]["start"]) == 3  # timings say their load


def test_long_rollout_schedule_is_saved_for_a_rerun(long_run):
    """The calibrated schedule is written beside the report, and ``--schedule`` reads it back in place of a
    calibration (the long contexts' calibration is the run's most expensive part)."""
    from replaycompile.sparrow.schedule import SparrowSchedule

    ex, _, res, out = long_run
    saved = SparrowSchedule.load(out / "sparrow_long_schedule.json")
    assert saved.to_dict() == res["schedule"].to_dict()
    args = ex.parse_args(["--rollout-only", "--schedule", str(out / "sparrow_long_schedule.json")])
    assert args.schedule and args.calibrate  # --schedule wins over calibrating (long_rollouts checks it first)
