"""TRL GRPO training step with and without replay, on the reference configuration of ``bench/replay_bench.py``.

What is timed: the policy's forward + backward of one GRPO training step as ``GRPOTrainer.training_step`` runs it,
i.e. ``trainer.compute_loss(model, inputs)`` (TRL 1.16's ``_compute_loss``: the per-token log-probs and entropies
of the completion, the clipped-ratio loss, its metrics) and ``trainer.accelerator.backward(loss)``, gradients
zeroed before each step. Not timed: generation, rewards, the optimizer step. Every variant gets the same fixed
batch in the format ``_compute_loss`` takes (``prompt_ids`` / ``prompt_mask`` / ``completion_ids`` /
``completion_mask`` / ``advantages`` / ``num_items_in_batch``, plus ``old_per_token_logps``: the log-probs of a
perturbed copy of the policy, a rollout policy one small update away, so the ratio and the loss value depend on the
logits).

The batch is replay_bench's: one prompt of 1024 tokens sampled G=8 times, completions of 64-128 tokens (right
padded), a Qwen3-shaped model (hidden 256, 4 layers, 4/2 heads, head_dim 64, vocab 32000, fp32), one process,
CPU. Variants run interleaved round-robin, medians reported:

- ``TRL`` : ``GRPOTrainer`` as shipped (``GRPOConfig`` defaults: dapo loss, activation checkpointing on), its fused
  chunked LM head (on CPU it scores every position of the batch, prompt included, in 32768-wide vocabulary tiles);
- ``TRL, no checkpointing``: the same with ``gradient_checkpointing=False``;
- ``TRL, no checkpointing, head on completions``: and its fused LM head scoring only the positions whose label is
  a completion token, as it does on CUDA/XPU (``trl.trainer.utils._use_triton`` patched to True around the step;
  the tiles still run TRL's torch code): the strong TRL baseline, the analogue of replay_bench's
  ``logits_to_keep``;
- ``replay``: the default trainer after ``compile_trainer(trainer)`` (inner compiler inductor; the integration
  turns activation checkpointing off).

    python bench/trl_bench.py            # the reference configuration (compiles take a few minutes on 2 cores)
    python bench/trl_bench.py --quick    # a small model and batch, for a smoke run
"""

from __future__ import annotations

import argparse
import copy
import os
import pathlib
import statistics
import sys
import tempfile
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "bench"))

from common import make_batch, reference_config  # noqa: E402
from trl_grpo import tiny_tokenizer  # noqa: E402

from replaycompile.integrations.trl import compile_trainer  # noqa: E402
from replaycompile.testing.models import tiny_model  # noqa: E402


def trainer_for(model, vocab: int, G: int, C: int, **config):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(output_dir=tempfile.mkdtemp(prefix="trl_bench_"), per_device_train_batch_size=G,
                      num_generations=G, max_completion_length=C, report_to=[], use_cpu=True, save_strategy="no",
                      bf16=False, disable_tqdm=True, seed=0, **config)
    ds = Dataset.from_dict({"prompt": ["w1 w2 w3"] * G})  # never sampled: the batch is given
    tr = GRPOTrainer(model=model, reward_funcs=lambda completions, **kw: [0.0] * len(completions), args=args,
                     train_dataset=ds, processing_class=tiny_tokenizer(vocab))
    if tr.args.gradient_checkpointing:  # what Trainer.train() does before the first step
        tr.model.gradient_checkpointing_enable(tr.args.gradient_checkpointing_kwargs)
    tr.model.train()
    return tr


def inputs_for(trainer, ids, am, adv, P: int):
    """The batch in the format ``_compute_loss`` takes; old log-probs from TRL's own path, run on a perturbed copy of
    the policy (as after an optimizer step). The policy's own log-probs plus noise would make the ratio exp(-noise)
    and the loss value independent of the model, so "equal logged losses" would mean nothing."""
    from replaycompile.testing.models import perturbed_copy

    prompt_ids, completion_ids = ids[:, :P], ids[:, P:]
    prompt_mask, completion_mask = am[:, :P], am[:, P:]
    behaviour = perturbed_copy(trainer.model, seed=7)
    with torch.no_grad():
        old, _, _ = type(trainer)._get_per_token_logps_and_entropies(trainer, behaviour, ids, am,
                                                                     completion_ids.shape[1])
    del behaviour
    return {"prompt_ids": prompt_ids, "prompt_mask": prompt_mask, "completion_ids": completion_ids,
            "completion_mask": completion_mask, "advantages": adv,
            "num_items_in_batch": completion_mask.sum(), "old_per_token_logps": old * completion_mask}


def step(trainer, inputs):
    import trl.trainer.utils as tu

    model = trainer.model
    for p in model.parameters():
        p.grad = None
    compact = getattr(trainer, "_bench_compact_head", False)
    use_triton = tu._use_triton
    if compact:  # the fused head's `compact` branch (valid labels only); its tiles still take the torch path
        tu._use_triton = lambda device: True
    try:
        with trainer.compute_loss_context_manager():
            loss = trainer.compute_loss(model, inputs)
    finally:
        tu._use_triton = use_triton
    trainer.accelerator.backward(loss)
    return loss.detach()


def grads(model):
    return torch.cat([p.grad.reshape(-1) for p in model.parameters() if p.grad is not None]).double()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small model and batch (smoke run)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--inner", default="inductor", help="the replay backend's inner compiler")
    a = ap.parse_args(argv)
    torch.manual_seed(0)
    cfg, (G, P, cmin, cmax) = reference_config(a.quick)
    V = cfg["vocab_size"]
    base = tiny_model("qwen3", **cfg)
    ids, am, adv = make_batch(G, P, cmin, cmax, V, share=True)
    import trl
    print(f"# TRL GRPO training step (compute_loss + backward): Qwen3-shaped {cfg}, G={G}, prompt {P}, completions "
          f"{cmin}-{cmax}, fp32, torch {torch.__version__}, trl {trl.__version__}, {torch.get_num_threads()} "
          f"threads, CPU, replay inner={a.inner}; load average {os.getloadavg()[0]:.2f} (other processes compete "
          f"for the cores above ~0)")

    trainers = {
        "TRL (GRPOConfig defaults: checkpointing on)": trainer_for(copy.deepcopy(base), V, G, cmax),
        "TRL, no checkpointing": trainer_for(copy.deepcopy(base), V, G, cmax, gradient_checkpointing=False),
        "TRL, no checkpointing, head on completions": trainer_for(copy.deepcopy(base), V, G, cmax,
                                                                  gradient_checkpointing=False),
    }
    trainers["TRL, no checkpointing, head on completions"]._bench_compact_head = True
    rt = trainer_for(copy.deepcopy(base), V, G, cmax)
    trainers["replay (compile_trainer)"] = compile_trainer(rt, inner=a.inner)
    ref_name = "TRL (GRPOConfig defaults: checkpointing on)"
    inputs = inputs_for(trainers[ref_name], ids, am, adv, P)
    # TRL's loss normaliser (dapo) reads current_gradient_accumulation_steps, which train() sets
    for tr in trainers.values():
        tr.current_gradient_accumulation_steps = 1

    info = {}
    for name, tr in trainers.items():
        t0 = time.perf_counter()
        loss = step(tr, inputs)
        info[name] = dict(first_s=time.perf_counter() - t0, loss=loss.item(), grad=grads(tr.model),
                          entropy=tr._metrics["train"]["entropy"][-1])
        if name.startswith("replay"):
            st = tr.replay_stats[-1]
            if not st["applied"]:
                raise SystemExit(f"replay did not pack the batch ({st['fallback_reason']}); refusing to time it")
            info[name]["stats"] = st
        print(f"#   warm-up {name}: {info[name]['first_s']:.1f}s, loss {info[name]['loss']:.8f}", flush=True)
    ref = info[ref_name]
    for name, d in info.items():
        g = d["grad"]
        d["loss_rel"] = abs(d["loss"] - ref["loss"]) / max(abs(ref["loss"]), 1e-30)
        d["grad_rel"] = ((g - ref["grad"]).norm() / ref["grad"].norm()).item()
        d["entropy_rel"] = abs(d["entropy"] - ref["entropy"]) / abs(ref["entropy"])

    times = {name: [] for name in trainers}
    for rep in range(a.reps):
        for name, tr in trainers.items():
            t0 = time.perf_counter()
            step(tr, inputs)
            times[name].append(time.perf_counter() - t0)
        print(f"#   rep {rep + 1}/{a.reps} done", flush=True)

    med = {name: statistics.median(t) for name, t in times.items()}
    print()
    strong = "TRL, no checkpointing, head on completions"
    print("| variant | step s (median) | vs TRL | vs TRL head on completions | logged loss | loss rel diff | "
          "grad rel L2 | entropy rel diff |")
    print("|---|---|---|---|---|---|---|---|")
    for name in trainers:
        d = info[name]
        print(f"| {name} | {med[name]:.3f} | {med[ref_name] / med[name]:.2f}x | "
              f"{med[strong] / med[name]:.2f}x | {d['loss']:.8f} | {d['loss_rel']:.1e} | "
              f"{d['grad_rel']:.1e} | {d['entropy_rel']:.1e} |")
    st = info["replay (compile_trainer)"]["stats"]
    from replaycompile.runtime.plan import build_plan
    head_rows = int(build_plan(ids, am).select_columns(P - 1, -1)[0].numel())
    T = ids.shape[1]
    print()
    print(f"ideal: tokens in {st['tokens_in']} (B x T = {G * T}), computed {st['tokens_computed']}: token ratio "
          f"{st['tokens_in'] / st['tokens_computed']:.2f}x over the non-pad tokens, "
          f"{G * T / st['tokens_computed']:.2f}x over B x T (TRL runs the padded batch); LM head rows: TRL "
          f"{G * (T - 1)} (every position on CPU), TRL head on completions {int(am[:, P:].sum())}, replay "
          f"{head_rows} (unique predicting tokens of the completions)")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    same = all(info[n]["loss_rel"] < 1e-5 for n in trainers)
    print(f"logged loss equal across variants (rel < 1e-5): {same}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
