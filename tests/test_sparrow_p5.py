"""Why the long-rollout p5 sat at 0.8076 in every bin (issue 11), checked at a size the default suite affords.

On the example's policy (the recall model with its value readout at 0.25) alpha takes two values: 1 for every
token that does not need the far context, and, for a retrieval whose answer page the budget dropped, exactly
the alpha of "dense reads the value weakly, sparse reads nothing" (0.8076). So a bin's p5 is that constant as
soon as over 5% of its tokens are missed retrievals, whatever the context or the budget; and with 64 tokens a
bin's lower bound is its minimum, so one miss pins it there too.
"""

from __future__ import annotations

import math

import torch

from replaycompile.sparrow.acceptance_metric import acceptance_summary, order_statistic_rank
from replaycompile.sparrow.calibration import measure_windows
from replaycompile.sparrow.retrieval import _ANS, HIDDEN, KEYS, VALUES, recall_sequences, retrieval_model
from replaycompile.sparrow.schedule import SparrowSchedule
from helpers import load_script

READOUT = 0.25  # examples/sparrow_grpo.py's --readout default


def _weakened():
    model = retrieval_model()
    with torch.no_grad():
        for v in VALUES:
            model.lm_head.weight[v, _ANS + v] *= READOUT
    return model


def _missed_alpha(model) -> float:
    """Closed form: dense gives the value logit a (the readout times the final norm's gain on the 4 unit
    entries of the residual: token, const, previous token, answer), every other logit 0; the sparse step that
    lost the answer page reads BOS (value 0): every logit 0, the uniform distribution."""
    with torch.no_grad():
        a = float(model.lm_head.weight[VALUES[0], _ANS + VALUES[0]]) * float(model.model.norm.weight[0]) \
            * math.sqrt(HIDDEN / 4)
    v = model.config.vocab_size
    z = math.exp(a) + v - 1
    return min(math.exp(a) / z, 1 / v) + (v - 1) * min(1 / z, 1 / v)


def test_the_pinned_p5_is_the_alpha_of_a_missed_retrieval():
    """Teacher-forced at 512 tokens with no pages beyond the reserved ones (sink + 2 local, so which answer
    pages are kept is known without instrumenting the kernel): every token with alpha below 0.999 is a fed key
    whose answer lies outside the kept pages, each such alpha is the closed form, 0.8076 at this readout (to
    0.005: the kept pages' keys leak a little weight onto values), and a bin with over 5% of them has that p5."""
    model = _weakened()
    miss = _missed_alpha(model)
    assert abs(miss - 0.8076) < 1e-4  # the value the long-rollout run reported in both of its bins
    ctx, win = 480, 24
    seqs, _ = recall_sequences(2, ctx, window=win, seed=7)
    a, pos = measure_windows(model, seqs, [ctx], win, {"none": SparrowSchedule(pages=(0,), bucket_tokens=1024)})
    alpha = a["none"]  # [B, win]
    n_low = 0
    for r in range(seqs.shape[0]):
        for i in range(1, win):  # i = 0 is the prefill's prediction: dense on both sides
            fed_at = ctx + i - 1  # measure_windows feeds seqs[s0 + i - 1] for prediction i
            tok = int(seqs[r, fed_at])
            answers = torch.nonzero(seqs[r, :fed_at] == tok).reshape(-1) + 1
            n_pages = fed_at // 16 + 1
            kept = {0, n_pages - 2, n_pages - 1}
            missed = tok in KEYS and not any(int(p) // 16 in kept for p in answers)
            if missed:
                assert abs(float(alpha[r, i]) - miss) < 5e-3, (r, i, float(alpha[r, i]))
                n_low += 1
            else:
                assert float(alpha[r, i]) > 0.999, (r, i, tok, float(alpha[r, i]))
    n = seqs.shape[0] * (win - 1)
    assert n_low / n > 0.05  # queries every 8 tokens, all far: 1 in 8 tokens
    row = acceptance_summary(alpha[:, 1:], pos[1:].repeat(2, 1), bin_tokens=1024, confidence=0.9)[0]
    assert abs(row["p5"] - miss) < 5e-3 and abs(row["p5_lower"] - miss) < 5e-3


def test_the_long_rollout_calibration_has_tokens_for_a_bound_above_the_minimum():
    """The run that met no bin measured 64 tokens per bin (2 rows x 1 window x 32): at 0.9 the p5's bound is
    then the bin's minimum, so a single missed retrieval (1 token in 8 is a retrieval) fails the bin at any
    budget short of dense. The example's defaults must give each bin enough tokens for a deeper order statistic.
    """
    assert order_statistic_rank(64, 0.05, 0.9) == 1
    ex = load_script("examples/sparrow_grpo.py")
    args = ex.parse_args(["--rollout-only"])
    per_bin = args.cal_rows * args.cal_windows * args.cal_window
    assert order_statistic_rank(per_bin, 0.05, 0.9) >= 8, per_bin
    # the candidates start at 0 top-k pages (so calibration finds the cheapest budget that meets, not the cheapest
    # one offered) and reach 16, eight times the budget that met every bin to 32K with the bound page score
    assert min(args.candidates) == 0 and max(args.candidates) >= 16, args.candidates
