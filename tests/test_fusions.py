"""Each fusion pass of the rewrite (passes/rewrite.py ``FUSIONS``: passes/fuse_lm_head.py, fuse_log_softmax.py,
fuse_tree_scan.py, selected_tokens.py) runs behind the option ``fusions``: left out, the packed graph holds none of
its ops and the step is the same; named in full it fires. No benchmark patches a pass to compare."""

from __future__ import annotations

import pytest
import torch
from helpers import AOT, assert_same_step, group_batch, run, step_loss
from torch._dynamo.utils import counters

import replaycompile
from replaycompile.passes.rewrite import FUSIONS
from replaycompile.testing.models import tiny_model


def test_the_option_takes_all_or_named_fusions():
    assert replaycompile.parse_options({}).fusions == frozenset(FUSIONS)
    assert replaycompile.parse_options({"fusions": "all"}).fusions == frozenset(FUSIONS)
    assert replaycompile.parse_options({"fusions": ["tree_scan"]}).fusions == {"tree_scan"}
    assert replaycompile.parse_options({"fusions": ()}).fusions == frozenset()
    with pytest.raises(ValueError, match="fusions='tree_scan'"):
        replaycompile.parse_options({"fusions": "tree_scan"})   # a name, not a collection
    assert replaycompile.parse_options({"fusions": {"tree_scan": 1}.keys()}).fusions == {"tree_scan"}
    with pytest.raises(ValueError, match=r"names \['fused_head'\], not fusions.*log_softmax_gather"):
        replaycompile.parse_options({"fusions": ["tree_scan", "fused_head"]})
    with pytest.raises(ValueError, match="fusions=None"):
        replaycompile.parse_options({"fusions": None})
    with pytest.raises(ValueError, match="not fusions"):
        replaycompile.parse_options({"fusions": [["tree_scan"]]})
    with pytest.raises(ValueError, match="lm_head='chunked'"):
        replaycompile.parse_options({"lm_head": "chunked", "fusions": ["tree_scan"]})


# counters["replay"] entries that say a fusion fired in a packed graph
FIRED = {"log_softmax_gather": "vocab_gathers_log_softmax_fused", "selected_tokens": "selected_only_nodes",
         "chunked_lm_head": "lm_head_chunked_sites"}


@pytest.mark.parametrize("left_out", ["log_softmax_gather", "selected_tokens", "chunked_lm_head"])
def test_a_fusion_left_out_does_not_fire_and_the_step_is_the_same(left_out):
    model = tiny_model("qwen3")
    ids, am, adv, p = group_batch(lens=(6, 2, 6, 5))
    steps = {}
    for fusions in ("all", sorted(set(FUSIONS) - {left_out})):
        torch._dynamo.reset()
        counters.clear()
        opts = {**AOT, "fusions": fusions, "lm_head": "chunked" if fusions == "all" and left_out ==
                "chunked_lm_head" else "auto"}
        steps[fusions == "all"] = run(torch.compile(step_loss, backend="replay", options=opts), model, ids, am, adv, p)
        assert replaycompile.last_stats()["applied"]
        fired = counters["replay"][FIRED[left_out]]
        assert (fired > 0) == (fusions == "all"), (left_out, fusions, dict(counters["replay"]))
    assert_same_step(steps[True], steps[False], rtol=1e-5)


def test_tree_scan_left_out_runs_the_recurrent_layers_per_row(caplog):
    """... and the log says why each such layer runs per row."""
    model = tiny_model("qwen3_next")
    ids, am, adv, p = group_batch(lens=(6, 2, 6, 5))
    steps = {}
    for fusions in ("all", sorted(set(FUSIONS) - {"tree_scan"})):
        torch._dynamo.reset()
        counters.clear()
        with caplog.at_level("INFO", logger="replaycompile"):
            steps[fusions == "all"] = run(torch.compile(step_loss, backend="replay",
                                                        options={**AOT, "fusions": fusions}), model, ids, am, adv, p)
        calls = counters["replay"]["recurrent_tree_scan_calls"]
        assert (calls > 0) == (fusions == "all"), dict(counters["replay"])
        assert ("option fusions leaves out 'tree_scan'" in caplog.text) == (fusions != "all")
    assert_same_step(steps[True], steps[False], rtol=1e-4)
