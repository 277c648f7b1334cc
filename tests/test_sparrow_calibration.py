"""Calibration (replaycompile/calibration.py) on the retrieval test model (replaycompile/retrieval.py), and the
benchmark's verdicts."""

from __future__ import annotations

import logging

import pytest
import torch

from replaycompile import calibration
from replaycompile.calibration import calibrate, calibration_windows, measure_acceptance, measure_windows
from replaycompile.retrieval import recall_accuracy, recall_sequences, retrieval_model
from replaycompile.schedule import SparrowSchedule


def test_retrieval_model_really_retrieves():
    model = retrieval_model()
    for ctx in (256, 1024):
        seqs, is_query = recall_sequences(2, ctx, seed=ctx)
        assert recall_accuracy(model, seqs, is_query) == 1.0
    # and it needs the far key: with the planted pairs removed it cannot answer
    seqs, is_query = recall_sequences(2, 1024, seed=3)
    wiped = seqs.clone()
    wiped[:, 1:1024][(wiped[:, 1:1024] >= 16)] = 1
    assert recall_accuracy(model, wiped, is_query) < 0.2


def test_sparse_decoding_breaks_the_tail_not_the_mean():
    """The paper's effect on the recall model: with too few pages, p5 alpha collapses while the mean stays high;
    enough pages bring the tail back."""
    model = retrieval_model()
    seqs, _ = recall_sequences(2, 1024, window=64, seed=4)
    alphas, pos = measure_acceptance(model, seqs, 1024, {"few": SparrowSchedule.fixed(0),
                                                           "many": SparrowSchedule.fixed(48)})
    few, many = alphas["few"].flatten(), alphas["many"].flatten()
    assert few.mean() > 0.85 and torch.quantile(few, 0.05) < 0.5
    assert torch.quantile(many, 0.05) > 0.99


@pytest.mark.slow
def test_calibration_takes_the_cheapest_candidates_and_holds_out_of_sample():
    """Calibration's choice, read from its own table: per bin the chosen count meets the target, and the next
    cheaper candidate fails in that bin or an earlier one (so no cheaper non-decreasing table meets it). Then
    the schedule on held-out prompts (another seed). With 96 tokens per bin a p5 is the ~5th-worst token, so
    one missed retrieval decides it and a held-out draw does not pin a per-bin p5 down (held-out seeds 6 and 8
    each miss it in a 2-page bin); what is checked out of sample is the fraction of tokens below the target (at most
    1.5x the 5% the quantile allows, per bin) and the p5 pooled over the bins."""
    model = retrieval_model()
    wins = calibration_windows(1536 + 48, 512, 48)
    seqs, _ = recall_sequences(2, 1536, window=48, seed=5, windows=wins)
    cands = [0, 2, 8, 32]
    cal = calibrate(model, seqs, candidates=cands, target=0.86, bin_tokens=512, window=48, progress=False)
    pages = cal.schedule.pages
    assert len(pages) == 4 and list(pages) == sorted(pages) and all(cal.met), cal.rows()
    p5 = {(r["bin_start"] // 512, r["pages"]): r["p5"] for r in cal.table}
    assert len(p5) == len(cal.table) == 4 * len(cands), "every candidate in every bin"
    for b, chosen in enumerate(pages):
        assert p5[b, chosen] >= 0.86, (b, chosen, cal.rows())
        i = cands.index(chosen)
        assert i == 0 or any(p5[e, cands[i - 1]] < 0.86 for e in range(b + 1)), (b, chosen, cal.rows())
    assert max(pages) > 0 and min(p5[b, 0] for b in range(4)) < 0.5  # 0 pages misses the retrievals
    # out of sample
    held, _ = recall_sequences(2, 1536, window=48, seed=6, windows=wins)
    a, pos = measure_windows(model, held, wins, 48, {"cal": cal.schedule})
    alpha, pos = a["cal"].flatten(), pos.repeat(2)
    below = [float((alpha[pos // 512 == b] < 0.86).double().mean()) for b in range(4)]
    assert max(below) <= 0.075 and torch.quantile(alpha.double(), 0.05) >= 0.86, (below, pages)


def _rows(spec, bin_tokens=100):
    return [dict(bin_start=b * bin_tokens, bin_end=(b + 1) * bin_tokens, pages=c, p5=p5, mean=p5, count=96)
            for b, c, p5 in spec]


def test_calibration_choice_by_hand(caplog):
    """``choose_pages`` from measured tables, no model: the cheapest candidate meeting the target per bin (0 is
    a choice), made non-decreasing; a bin without data carries a value; a bin nothing meets goes dense, loudly."""
    table = _rows([(0, 0, 0.90), (0, 2, 0.95), (1, 0, 0.50), (1, 2, 0.90), (1, 8, 0.99), (2, 0, 0.95),
                   (2, 2, 0.99)])
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        assert calibration.choose_pages(table, 0.86, 100, 4) == ([0, 2, 2, 2], [True, True, True, None])
    assert not caplog.records
    # a leading bin without data takes the first measured value; a failing bin keeps every page from there on
    table = _rows([(1, 0, 0.90), (1, 4, 0.95), (2, 0, 0.30), (2, 4, 0.70), (3, 0, 0.99)])
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        pages, met = calibration.choose_pages(table, 0.86, 100, 4)
    every = SparrowSchedule.dense().pages[0]
    assert (pages, met) == ([0, 0, every, every], [None, True, False, True])
    assert "KV lengths 200-300" in caplog.text and "best p5 0.7000, with 4 pages" in caplog.text
    assert "KV lengths 100-200" not in caplog.text
    with pytest.raises(ValueError, match="no measurements"):
        calibration.choose_pages([], 0.86, 100, 2)


def test_bench_verdicts_need_held_out_data_of_the_same_schedule():
    import argparse
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "bench" / "sparrow_bench.py"
    spec = importlib.util.spec_from_file_location("sparrow_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    def row(v, data, p5, b=0):
        return dict(variant=v, data=data, bin_start=b, bin_end=b + 512, p5=p5, mean=1.0)

    assert "not measured" in bench.acceptance_verdict(dict(acceptance=[], met=None), 0.86)  # throughput only
    in_sample = [row("calibrated", "calibration", 1.0), row("fixed 0", "calibration", 0.1)]
    assert "not measured" in bench.acceptance_verdict(dict(acceptance=in_sample, met=[True]), 0.86)
    held = [row("calibrated", "held-out", 0.9), row("calibrated", "held-out", 1.0, 512)]
    assert bench.acceptance_verdict(dict(acceptance=held, met=[True, True]), 0.86).endswith(": True")
    v = bench.acceptance_verdict(dict(acceptance=held, met=[True, False]), 0.86)  # bucket 1 ran dense
    assert ": False" in v and "calibration failed in buckets [1]" in v
    v = bench.acceptance_verdict(dict(acceptance=held + [row("calibrated", "held-out", 0.5, 1024)], met=None), 0.86)
    assert ": False" in v and "1024-1536: 0.500" in v
    sched = SparrowSchedule(pages=(2, 8), bucket_tokens=512)
    args = argparse.Namespace(acceptance_from="prev.json", schedule="s.json", bin=512)
    bench.check_acceptance_source(dict(schedule=sched.to_dict(), args=dict(bin=512)), sched, args)
    with pytest.raises(SystemExit, match=r"another schedule \(pages \[2, 16\]\)"):
        other = SparrowSchedule(pages=(2, 16), bucket_tokens=512)
        bench.check_acceptance_source(dict(schedule=other.to_dict(), args=dict(bin=512)), sched, args)
    with pytest.raises(SystemExit, match="its bins are 1024 tokens"):
        bench.check_acceptance_source(dict(schedule=sched.to_dict(), args=dict(bin=1024)), sched, args)
