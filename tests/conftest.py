import os
import pathlib
import sys

# The checkout's root leaves sys.path (``python -m pytest`` puts the working directory first): its top-level
# ``kernels/`` and ``passes/`` are this project's ``replaycompile.kernels`` / ``replaycompile.passes`` (installed
# under those names), and from the root they would shadow other packages of those names: transformers >= 5.25
# imports the Hugging Face ``kernels`` package.
_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if pathlib.Path(p or ".").resolve() != _ROOT]
for _name in ("kernels", "passes"):
    _mod = sys.modules.get(_name)
    if _mod is not None and pathlib.Path(getattr(_mod, "__file__", "") or "").resolve().parent == _ROOT / _name:
        del sys.modules[_name]

# Compiled kernels land inside the checkout (CI's clean clone starts cold, later runs reuse them).
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(pathlib.Path(__file__).resolve().parents[1] / ".torchinductor_cache"))
sys.path.insert(0, os.path.dirname(__file__))

import torch  # noqa: E402
from hypothesis import HealthCheck, Phase, settings  # noqa: E402

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# HYPOTHESIS_PROFILE=no-shrink: report the first failing example at once (shrinking a failure of a
# compiled model can take minutes); used when checking that deliberate bugs are caught
settings.register_profile("no-shrink", deadline=None, suppress_health_check=[HealthCheck.too_slow],
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test compiles from scratch: Dynamo remembers per function which inputs changed (automatic dynamic),
    which would let one test's shapes decide another's graphs."""
    torch._dynamo.reset()
    yield


@pytest.fixture(autouse=True)
def _global_state_kept():
    """A test that leaves grad mode or autocast changed fails, and the state is put back, so that the tests after
    it do not fail for it (transformers 5.10 once left grad mode off for 128 later tests)."""
    from replaycompile.backend import GlobalState

    before = GlobalState()
    yield
    after = GlobalState()
    if (after.grad, after.autocast) != (before.grad, before.autocast):
        before.restore()
        pytest.fail(f"the test left global state changed: grad mode {before.grad} -> {after.grad}, autocast "
                    f"{before.autocast} -> {after.autocast}")


@pytest.fixture
def replay_graphs(monkeypatch):
    """Every ReplayGraph the backend builds during the test."""
    import replaycompile.backend as backend
    from helpers import instances_of

    return instances_of(monkeypatch, backend.ReplayGraph)


# Cases of the default run that took 10 s or more on CI's 2-core machine (its log of 2026-12-05; the default run was
# 1008-1106 s, over the ~15 minutes the suite aims at): run with the slow ones (``-m slow``, which CI runs too).
# Listed by id here rather than marked at each parametrization, so the list is the measurement's, in one place.
SLOW_BY_MEASUREMENT = {
    "tests/test_bench_harness.py::test_bench_quick_end_to_end",
    "tests/test_model_families.py::test_a_weight_clamped_in_place_inside_the_step_is_still_clamped",
    "tests/test_model_families.py::test_family_packs_exactly[gemma3n_text]",
    "tests/test_model_families.py::test_family_packs_exactly[deepseek_v3]",
    "tests/test_model_families.py::test_llama4_chunked_attention_is_packed_exactly[flat]",
    "tests/test_trl.py::test_grpo_steps_equal_trl[None]",
    "tests/test_trl.py::test_group_placement_keeps_gradients_and_packs_more",
    "tests/test_trl.py::test_peft_lora_steps_equal_trl",
    "tests/test_trl.py::test_grpo_steps_equal_trl[grpo]",
    "tests/test_trl.py::test_rloo_steps_equal_trl",
    "tests/test_loss_weights.py::test_masked_loss_drops_the_zero_weight_positions[tree-chunked]",
    "tests/test_loss_weights.py::test_hf_labels_loss_runs_the_head_on_the_labelled_tokens[group]",
    "tests/test_loss_weights.py::test_masked_loss_drops_the_zero_weight_positions[group-plain]",
    "tests/test_loss_weights.py::test_chunked_and_plain_heads_compute_the_same_rows[tree]",
    "tests/test_loss_weights.py::test_chunked_and_plain_heads_compute_the_same_rows[group]",
    "tests/test_loss_weights.py::test_trl_selective_log_softmax_loop_is_folded",
    "tests/test_moe.py::test_moe_group_step_is_exact[qwen3_moe-sdpa]",
    "tests/test_moe.py::test_moe_two_level_tree_is_exact[qwen3_moe-sdpa]",
    "tests/test_chunked_lm_head.py::test_auto_chunks_only_large_logits",
    "tests/test_selected_tokens.py::test_values_read_at_every_token_stay_on_every_token",
    "tests/test_continuation.py::test_a_plan_made_without_the_padding_mask_is_made_again_from_the_next_graphs_mask",
    "tests/test_key_selection.py::test_deepseek_v32_top_k_attention_is_packed_exactly[flat]",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid in SLOW_BY_MEASUREMENT:
            item.add_marker(pytest.mark.slow)
