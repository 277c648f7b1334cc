"""The benchmarks' peer baselines compute what eager computes (a baseline that drifts would make every ratio
against it meaningless)."""
import pytest
import torch
from helpers import load_script

pytest.importorskip("prefix_grouper")
lc = load_script("bench/long_context.py")


@pytest.mark.parametrize("cmin,cmax", [(3, 9), (8, 8)])
def test_prefix_grouper_step_equals_eager_rows(cmin, cmax):
    """Prefix Grouper's step (its data API, the SDPA adapter, the LM head on completions) gives eager's loss and
    gradients, and leaves the model's attention implementation as it found it."""
    torch.manual_seed(0)
    model = lc.build_model("quick")
    batch = lc.make_rl_batch(5, 40, cmin, cmax, 4000, seed=1)
    ref_loss = lc.run_step(lc.make_variant("eager_rows"), model, batch)
    ref = lc.grads_of(model)
    loss = lc.run_step(lc.make_variant("prefix_grouper"), model, batch)
    c = lc.compare(lc.grads_of(model), ref, loss, ref_loss)
    assert c["loss_rel"] < 1e-5 and c["grad_rel_worst"] < 1e-5, c
    assert model.config._attn_implementation == "sdpa"
