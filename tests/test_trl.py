"""The TRL integration (``replaycompile.integrations.trl.compile_trainer``) on a tiny Qwen3 with a tokenizer built
locally: GRPO steps with and without replay from one seed give the same logged loss and metrics, the same gradient
at every optimizer step and the same parameters, and the forward was packed (tokens computed < tokens in)."""

from __future__ import annotations

import math
import os
import pathlib
import sys

import pytest
import torch

pytest.importorskip("trl")
pytest.importorskip("accelerate")

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))

import trl_grpo  # noqa: E402

from replaycompile.integrations.trl import compile_trainer  # noqa: E402

AOT = {"inner": "aot_eager"}


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Overrides conftest's per-test Dynamo reset: the trainers here share the compiled step (one per options set,
    its sizes marked dynamic, so no test's shapes decide another's graph), and its graphs compile once per module
    (about 20 s each on 2 cores) instead of once per test."""
    yield


@pytest.fixture(autouse=True, scope="module")
def _reset_dynamo_around_module():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


class GradRecorder:
    """A TrainerCallback recording every parameter's gradient just before each optimizer step (after clipping)."""

    def __init__(self, model):
        from transformers import TrainerCallback

        self.model, self.steps = model, []
        recorder = self

        class _CB(TrainerCallback):
            def on_pre_optimizer_step(self, args, state, control, **kw):
                recorder.steps.append({k: p.grad.detach().clone() for k, p in recorder.model.named_parameters()
                                       if p.grad is not None})

        self.callback = _CB()


def run(replay: bool | dict, **kw):
    trainer = trl_grpo.build_trainer(**kw)
    rec = GradRecorder(trainer.model)
    trainer.add_callback(rec.callback)
    if replay:
        compile_trainer(trainer, **(AOT if replay is True else replay))
    trainer.train()
    logs = [h for h in trainer.state.log_history if "loss" in h]
    params = {k: p.detach().clone() for k, p in trainer.model.named_parameters()}
    return trainer, logs, rec.steps, params


def rel(a, b):
    return ((a - b).norm() / b.norm().clamp_min(1e-12)).item()


def assert_same_run(ref, got, tol=1e-5, metrics=("loss", "entropy", "grad_norm", "reward", "clip_ratio/region_mean")):
    (_, l0, g0, p0), (_, l1, g1, p1) = ref, got
    assert len(l0) == len(l1) and len(g0) == len(g1) > 0
    for a, b in zip(l0, l1):
        assert a.keys() == b.keys() - {k for k in b if k.startswith("replay/")}
        for key in (k for k in metrics if k in a):
            assert math.isclose(b[key], a[key], rel_tol=tol, abs_tol=tol), (key, a[key], b[key])
    for step, (a, b) in enumerate(zip(g0, g1)):
        assert a.keys() == b.keys()
        for k in a:
            assert rel(b[k], a[k]) <= tol, f"optimizer step {step}: gradient of {k} differs ({rel(b[k], a[k]):.1e})"
    for k in p0:
        assert rel(p1[k], p0[k]) <= tol, f"parameter {k} differs ({rel(p1[k], p0[k]):.1e})"


# num_iterations=2: the second pass over a generation batch has ratios != 1 (the loss value depends on the logits)
# and TRL computes old log-probs without grad, which runs the compiled step in its no-grad graph too. SGD: the
# parameters move by lr x gradient, so their comparison is one of gradients (Adam would amplify noise in the tiny
# gradient components).
COMMON = dict(max_steps=2, num_iterations=2, optim="sgd", learning_rate=0.05, max_completion_length=8,
              prompt_len=(20, 40))


@pytest.mark.parametrize("loss_type", [None, "grpo", "dr_grpo"])
def test_grpo_steps_equal_trl(loss_type):
    """Default loss (dapo in trl 1.16), grpo and dr_grpo: loss, entropy, clip ratio, grad norm, each optimizer
    step's gradients and the final parameters equal TRL's without replay; each training forward was packed, and the
    logged token counts say so."""
    kw = dict(COMMON, loss_type=loss_type)
    ref = run(False, **kw)
    got = run(True, **kw)
    trainer, logs = got[0], got[1]
    if loss_type is None:
        assert trainer.loss_type == "dapo"
    assert_same_run(ref, got)
    assert any(abs(h["loss"]) > 1e-4 for h in logs), "the loss should depend on the logits"
    for h in logs:
        assert h["replay/applied"] == 1.0
        assert 0 < h["replay/tokens_computed"] < h["replay/tokens_in"], h
    assert len(trainer.replay_stats) == 2  # one training forward per step (step 2 is the second iteration)
    st = trainer.replay_stats[-1]
    assert st["applied"] and st["fallback_reason"] is None and st["tokens_computed"] < st["tokens_in"]


def test_group_placement_keeps_gradients_and_packs_more():
    """Gradient accumulation 2 (steps_per_generation 2, G=4, 4 rows per micro-batch): TRL shuffles each generation
    batch before cutting it into micro-batches, so a micro-batch mixes prompts. With group placement each holds one
    prompt's 4 completions: fewer tokens computed, and each optimizer step's gradient, the logged loss and the
    parameters equal TRL's (without replay); without placement the replayed run equals TRL too."""
    kw = dict(max_steps=2, grad_accum=2, per_device_batch=4, num_generations=4, optim="sgd", learning_rate=0.05,
              max_completion_length=8, prompt_len=(30, 40))
    ref = run(False, **kw)
    placed = run({**AOT}, **kw)
    unplaced = run({**AOT, "group_placement": False}, **kw)
    assert_same_run(ref, placed, metrics=("loss", "grad_norm", "reward"))
    assert_same_run(ref, unplaced)
    for trainer in (placed[0], unplaced[0]):
        assert len(trainer.replay_stats) == 4 and all(s["applied"] for s in trainer.replay_stats)
    tin = [s["tokens_in"] for s in placed[0].replay_stats]
    assert sum(tin) == sum(s["tokens_in"] for s in unplaced[0].replay_stats)
    with_p = sum(s["tokens_computed"] for s in placed[0].replay_stats)
    without = sum(s["tokens_computed"] for s in unplaced[0].replay_stats)
    print(f"tokens computed over 4 micro-batches: {with_p} with group placement, {without} without, of {sum(tin)} in")
    assert with_p < without


def test_compiled_model_is_refused_and_options_are_checked():
    """GRPOTrainer(model=torch.compile(model, backend="replay")) would never run replay (TRL replaces the forward):
    refused, pointing to compile_trainer. Unknown replay options raise before training; accelerate refuses
    torch_compile_backend="replay" (what the README says)."""
    from replaycompile.testing.models import tiny_model

    model = tiny_model("qwen3", vocab_size=256)
    with pytest.raises(ValueError, match="compile_trainer"):
        trl_grpo.build_trainer(model=torch.compile(model, backend="replay"), max_steps=1)
    trainer = trl_grpo.build_trainer(max_steps=1)
    with pytest.raises(ValueError, match="unknown option"):
        compile_trainer(trainer, inner="aot_eager", chunk=3)
    with pytest.raises(ValueError, match="not a valid DynamoBackend"):
        trl_grpo.build_trainer(max_steps=1, torch_compile=True, torch_compile_backend="replay")


def test_example_script_runs(capsys):
    """examples/trl_grpo.py at tiny size: trains with replay and prints tokens computed vs in and the loss."""
    # the model shape and options of the tests above: the compiled step is reused, the example runs in seconds
    rows = trl_grpo.main(["--steps", "1", "--generations", "4", "--batch", "4", "--prompt-len", "16", "24",
                          "--completion-len", "4"])
    out = capsys.readouterr().out
    assert "tokens computed" in out and "loss" in out
    assert rows and rows[0]["replay/tokens_computed"] < rows[0]["replay/tokens_in"]


def test_rloo_steps_equal_trl():
    """RLOOTrainer shares the per-token log-prob path: the same equality (its sequence-level loss, num_iterations=2)."""
    from trl import RLOOConfig, RLOOTrainer

    from replaycompile.testing.models import tiny_model

    def build():
        model = tiny_model("qwen3", vocab_size=256)
        model.generation_config.eos_token_id = 1
        args = RLOOConfig(output_dir=trl_grpo.tempfile.mkdtemp(prefix="rloo_"), per_device_train_batch_size=8,
                          num_generations=4, max_completion_length=8, max_steps=2, num_iterations=2, beta=0.0,
                          logging_steps=1, report_to=[], use_cpu=True, seed=0, save_strategy="no", optim="sgd",
                          learning_rate=0.05, bf16=False, disable_tqdm=True)
        return RLOOTrainer(model=model, reward_funcs=trl_grpo.even_words, args=args,
                           processing_class=trl_grpo.tiny_tokenizer(256), train_dataset=trl_grpo.prompt_dataset(16, 20, 40))

    runs = []
    for replay in (False, True):
        trainer = build()
        rec = GradRecorder(trainer.model)
        trainer.add_callback(rec.callback)
        if replay:
            compile_trainer(trainer, **AOT)
        trainer.train()
        runs.append((trainer, [h for h in trainer.state.log_history if "loss" in h], rec.steps,
                     {k: p.detach().clone() for k, p in trainer.model.named_parameters()}))
    assert_same_run(runs[0], runs[1])
    assert all(s["applied"] and s["tokens_computed"] < s["tokens_in"] for s in runs[1][0].replay_stats)


def test_peft_lora_steps_equal_trl():
    """A PEFT LoRA policy (TRL patches its base model; compile_trainer too): gradients of the adapters and the
    parameters after two steps equal TRL's; packed (TRL's input-embedding require-grads hook, useless without
    activation checkpointing, would break the graph in two and is removed)."""
    pytest.importorskip("peft")
    from peft import LoraConfig, get_peft_model

    from replaycompile.testing.models import tiny_model

    def policy():
        torch.manual_seed(0)  # the adapters' initialisation
        return get_peft_model(tiny_model("qwen3", vocab_size=256),
                              LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False))

    kw = dict(max_steps=2, optim="sgd", learning_rate=0.05, max_completion_length=8, prompt_len=(20, 40))
    ref = run(False, model=policy(), **kw)
    got = run(True, model=policy(), **kw)
    assert_same_run(ref, got)
    assert all(s["applied"] and s["tokens_computed"] < s["tokens_in"] for s in got[0].replay_stats)


@pytest.mark.slow  # over 15 s on 2 cores
def test_bf16_steps_are_packed_and_within_bf16_rounding_of_trl():
    """``bf16=True`` (accelerate's bf16 autocast around the fp32 model, as TRL users train): the training forward is
    packed, and the logged loss and each step's gradients stay within bf16 rounding of TRL's own bf16 run (the
    packed step rounds in other places: a shared token's gradient is summed over its branches before rounding;
    tests/test_autocast.py bounds that against fp32 for the bare step)."""
    kw = dict(COMMON, bf16=True)
    ref = run(False, **kw)
    got = run(True, **kw)
    (_, l0, g0, _), (trainer, l1, g1, _) = ref, got
    for a, b in zip(l0, l1):
        assert math.isclose(b["loss"], a["loss"], rel_tol=2e-2, abs_tol=1e-3), (a["loss"], b["loss"])
        assert b["replay/applied"] == 1.0 and 0 < b["replay/tokens_computed"] < b["replay/tokens_in"], b
    assert any(abs(h["loss"]) > 1e-4 for h in l0), "the loss should depend on the logits"
    worst = max(rel(b[k], a[k]) for a, b in zip(g0, g1) for k in a)
    print(f"bf16: losses {[h['loss'] for h in l0]} vs {[h['loss'] for h in l1]}, worst gradient difference "
          f"{worst:.1e}")
    assert worst <= 5e-2, f"gradients differ by {worst:.1e} relative (bf16 rounding is ~1e-2)"
