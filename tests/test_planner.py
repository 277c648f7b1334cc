"""``replaycompile plan`` (replaycompile/planning/planner.py): the per-rank memory and FLOPs planner."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from replaycompile.planning import memory, planner
from replaycompile.cli import main as cli_main
from replaycompile.testing.models import tiny_config

BUDGET = planner.BUILTIN_CONFIGS["budget"]


def test_one_rank_step_peak_is_the_memory_models():
    """On one rank the step peak is replaycompile.planning.memory's prediction (what bench/long_context.py checks against
    its measured points), variant by variant; the rank total adds the weights and the optimizer state."""
    comps = [70, 128, 96, 64]
    r = planner.plan_step("budget", 4, 4096, comps, dtype=torch.float32, optimizer_bytes_per_param=8)
    for v, p in r.variants.items():
        mv = {"eager": "eager_keep"}.get(v, v)
        assert p.step_peak == memory.predict_peak_bytes(BUDGET, 4, 4096, comps, dtype=torch.float32, variant=mv)
        assert p.rank_total == p.step_peak + r.static["weights"] + r.static["optimizer"]
    assert r.static["gathered_layers"] == 0
    n = memory._dims(BUDGET).params()
    assert r.static["weights"] == 4 * n and r.static["optimizer"] == 8 * n


def test_layout_divides_what_it_shards():
    one = planner.plan_step("budget", 8, 32768, 128)
    cp = planner.plan_step("budget", 8, 32768, 128, cp=2)
    dp = planner.plan_step("budget", 8, 32768, 128, dp=4)
    # context parallelism splits the packed tokens of the replay variants (plus one K/V block in flight)
    for v in ("replay", "replay_ckpt"):
        assert cp.variants[v].step_peak < 0.7 * one.variants[v].step_peak, v
        assert cp.variants[v].flops == pytest.approx(one.variants[v].flops / 2)
    # detach_prefix splits the shared tokens only (the branch tokens run whole on every rank)
    d1, d2 = one.variants["replay_detach"], cp.variants["replay_detach"]
    assert d2.step_peak < d1.step_peak and d1.flops / 2 < d2.flops < d1.flops
    assert d2.terms["kv"] < d1.terms["kv"] and d2.terms["activations"] == d1.terms["activations"]
    # and says what is measured and what is a prediction
    assert any("not measured" in n and "bench/cp_step.py" in n for n in cp.notes) and not one.notes
    # FSDP2 shards weights and optimizer state over all ranks and gathers two layers
    assert dp.static["weights"] == pytest.approx(one.static["weights"] / 4)
    assert dp.static["gathered_layers"] > 0
    assert dp.variants["eager_rows"].step_peak < one.variants["eager_rows"].step_peak


def test_checkpointing_and_detach_order():
    r = planner.plan_step("budget", 8, 16384, 128, dtype=torch.float32)
    v = r.variants
    assert v["replay_ckpt"].step_peak < v["replay"].step_peak
    assert v["eager_rows_ckpt"].step_peak < v["eager_rows"].step_peak
    assert v["replay_ckpt"].flops > v["replay"].flops  # one more forward of the body
    assert v["eager"].step_peak > v["eager_rows"].step_peak


def test_longest_prompt_fits_and_the_next_does_not():
    budget = 2e9
    r = planner.plan_step("budget", 8, 1024, 128, dtype=torch.float32, budget_bytes=budget)
    for v, p in r.variants.items():
        lp = p.longest_prompt
        assert lp > 0, v
        at = planner.plan_step("budget", 8, lp, 128, dtype=torch.float32, variants=[v]).variants[v]
        past = planner.plan_step("budget", 8, lp + 1, 128, dtype=torch.float32, variants=[v]).variants[v]
        assert at.rank_total <= budget < past.rank_total, v
    big = planner.plan_step("budget", 8, 1024, 128, dtype=torch.float32, budget_bytes=2 * budget)
    assert all(big.variants[v].longest_prompt >= r.variants[v].longest_prompt for v in r.variants)


def test_fewest_cp_ranks_that_fit():
    budget = 1e9
    r = planner.plan_step("budget", 8, 65536, 128, dtype=torch.float32, budget_bytes=budget)
    for v in ("replay", "replay_ckpt", "replay_detach"):
        c = r.variants[v].min_cp
        assert c is not None and c > 1, (v, c)
        at = planner.plan_step("budget", 8, 65536, 128, dtype=torch.float32, cp=c, variants=[v]).variants[v]
        below = planner.plan_step("budget", 8, 65536, 128, dtype=torch.float32, cp=c // 2,
                                  variants=[v]).variants[v]
        assert at.rank_total <= budget < below.rank_total, v
    assert r.variants["eager_rows"].min_cp is None  # the eager variants do not split rows


def test_hybrid_configs_keep_kv_only_for_full_attention_layers():
    d = planner.load_config("qwen3.5-27b")
    assert memory._dims(d).L_kv == 16
    dense = dict(d, full_attention_interval=None)
    kv = [memory.breakdown(c, 1, 100_000, 512, dtype=torch.bfloat16, variant="replay_detach")["kv"]
          for c in (d, dense)]
    assert kv[1] == 4 * kv[0]
    r = planner.plan_step("qwen3.5-27b", 1, 100_000, 512)
    assert any("linear attention" in n for n in r.notes)


def test_config_from_a_json_file(tmp_path):
    cfg = tiny_config("qwen3", **{k: v for k, v in BUDGET.items() if k != "model_type"})
    cfg.save_pretrained(tmp_path)
    a = planner.plan_step(str(tmp_path / "config.json"), 8, 2048, 128)
    b = planner.plan_step(str(tmp_path), 8, 2048, 128)
    c = planner.plan_step("budget", 8, 2048, 128)
    assert a.variants["replay"].step_peak == b.variants["replay"].step_peak == c.variants["replay"].step_peak
    with pytest.raises(FileNotFoundError, match="nope.json"):
        planner.plan_step(str(tmp_path / "nope.json"), 8, 2048, 128)
    (tmp_path / "bad.json").write_text(json.dumps({"hidden_size": 64}))
    with pytest.raises(ValueError, match="num_hidden_layers"):
        planner.plan_step(str(tmp_path / "bad.json"), 8, 2048, 128)
    with pytest.raises(ValueError, match="entries for group"):
        planner.plan_step("budget", 8, 2048, [64, 64])
    with pytest.raises(ValueError, match="unknown variant"):
        planner.plan_step("budget", 8, 2048, 64, variants=["nope"])


def test_cli_prints_the_table(capsys):
    assert cli_main(["plan", "--config", "budget", "--prompt", "8192", "--completion", "128", "--dtype", "fp32",
                     "--cp", "2", "--budget-gb", "1"]) == 0
    out = capsys.readouterr().out
    assert "| replay_ckpt |" in out and "longest prompt that fits" in out and "2 CP rank" in out
    assert cli_main(["plan", "--longstraw"]) == 0
    out = capsys.readouterr().out
    assert "2,088,960" in out and "| replay_detach |" in out and "budget 96.00 GB" in out
    assert "CP ranks to fit" in out


def test_installed_entry_point():
    res = subprocess.run([sys.executable, "-m", "replaycompile.cli", "plan", "--config", "small", "--prompt", "1024"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "| eager_rows |" in res.stdout


def _recorded() -> list:
    """(file name, record) of every bench/results/*/long_context/measured_points.json."""
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1]
    return [(f.name, json.loads(f.read_text()))
            for f in sorted(root.glob("bench/results/*/long_context/measured_points.json"))]


def _predicted(model: str, group: int, pt: dict) -> int:
    """The planner's per-rank step peak for a recorded point."""
    r = planner.plan_step(model, group, pt["prompt_len"], pt["completions"], dtype=torch.float32,
                          lm_head=pt.get("lm_head", "chunked"), cp=pt.get("cp", 1), variants=[pt["variant"]],
                          fsdp=pt.get("fsdp", True), shared_chunks=pt.get("shared_chunks", 1))
    return r.variants[pt["variant"]].step_peak


def test_within_15_percent_of_every_recorded_measurement():
    """The planner's per-rank step peak against the peaks bench/long_context.py and bench/cp_step.py measured on 1
    and 2 ranks (the recorded points: bench/results/*/long_context/measured_points.json), within the issue's
    15%."""
    records = _recorded()
    assert records
    checked = 0
    for name, rec in records:
        for pt in rec["points"]:
            pred = _predicted(rec["model"], rec["group"], pt)
            assert abs(pred - pt["peak_bytes"]) <= 0.15 * pt["peak_bytes"], (name, pt["variant"],
                                                                               pt["prompt_len"], pred)
            checked += 1
    assert checked >= 7


def _known_misses():
    return [(rec["model"], rec["group"], pt) for _, rec in _recorded()
            for pt in rec.get("known_misses", {}).get("points", [])]


@pytest.mark.xfail(strict=True, reason="the planner misses detach_prefix on one process at 100K with shared_chunks "
                                       "(measured_points.json, known_misses): once it is within 15%, move the "
                                       "points to the measured ones")
@pytest.mark.parametrize("model,group,pt", _known_misses())
def test_known_misses_stay_recorded(model, group, pt):
    pred = _predicted(model, group, pt)
    assert abs(pred - pt["peak_bytes"]) <= 0.15 * pt["peak_bytes"], (pred, pt["peak_bytes"])


def test_longest_prompt_under_cp_is_searched_at_each_length():
    budget = 1e9
    r = planner.plan_step("budget", 8, 200_000, 128, dtype=torch.float32, cp=2, budget_bytes=budget,
                          variants=["replay"], cp_search=False)
    lp = r.variants["replay"].longest_prompt
    at = planner.plan_step("budget", 8, lp, 128, dtype=torch.float32, cp=2, variants=["replay"]).variants["replay"]
    past = planner.plan_step("budget", 8, lp + 1, 128, dtype=torch.float32, cp=2,
                             variants=["replay"]).variants["replay"]
    assert 0 < lp and at.rank_total <= budget < past.rank_total
