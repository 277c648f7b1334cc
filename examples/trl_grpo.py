"""TRL GRPOTrainer with the replay backend, on CPU in seconds: a tiny random Qwen3, a tokenizer built locally, a
toy reward. No model hub, no internet.

    python examples/trl_grpo.py                       # a few GRPO steps with replay, printing tokens and the loss
    python examples/trl_grpo.py --compare             # the same steps without replay too, from the same seed

The whole integration is one call, ``compile_trainer(trainer, **replay_options)``, on a constructed trainer.
``GRPOConfig(torch_compile_backend="replay")`` cannot work (accelerate checks the name against its own enum) and
``GRPOTrainer(model=torch.compile(model, backend="replay"))`` is refused (TRL replaces the model's forward).

The builders here (``tiny_tokenizer``, ``prompt_dataset``, ``build_trainer``) are shared with ``tests/test_trl.py``
and ``bench/trl_bench.py``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import torch

PAD, EOS = "<pad>", "<eos>"


def tiny_tokenizer(vocab_size: int = 256):
    """A WordLevel tokenizer over the words ``w0 .. w{vocab_size-3}`` plus ``<pad>`` (id 0) and ``<eos>`` (id 1),
    left padding (TRL's requirement), wrapped in ``PreTrainedTokenizerFast``; built in memory."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {PAD: 0, EOS: 1, **{f"w{i}": i + 2 for i in range(vocab_size - 2)}}
    tk = Tokenizer(models.WordLevel(vocab, unk_token=PAD))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token=PAD, eos_token=EOS, padding_side="left")


def prompt_dataset(n: int = 16, min_len: int = 12, max_len: int = 24, vocab_size: int = 256, seed: int = 0):
    """``n`` random prompts of ``min_len .. max_len`` words (a ``datasets.Dataset`` with a ``prompt`` column)."""
    from datasets import Dataset

    g = torch.Generator().manual_seed(seed)
    prompts = []
    for _ in range(n):
        length = int(torch.randint(min_len, max_len + 1, (1,), generator=g))
        words = torch.randint(0, vocab_size - 2, (length,), generator=g)
        prompts.append(" ".join(f"w{int(w)}" for w in words))
    return Dataset.from_dict({"prompt": prompts})


def even_words(completions, **kwargs):
    """Toy reward: the fraction of completion words with an even index, so rewards vary within a group."""
    out = []
    for c in completions:
        words = [w for w in c.split() if w.startswith("w")]
        out.append(sum(int(w[1:]) % 2 == 0 for w in words) / max(len(words), 1))
    return out


def build_trainer(*, vocab_size: int = 256, hidden: int = 64, layers: int = 2, num_generations: int = 4,
                  per_device_batch: int = 8, grad_accum: int = 1, max_completion_length: int = 8, max_steps: int = 2,
                  prompts: int = 16, prompt_len: tuple[int, int] = (12, 24), loss_type: str | None = None,
                  seed: int = 0, output_dir: str | None = None, model=None, **config):
    """A GRPOTrainer on a tiny random Qwen3 (``hidden`` wide, ``layers`` deep) and the local tokenizer; CPU, fp32,
    no reporting, no checkpoints. Extra keywords go to ``GRPOConfig``."""
    from trl import GRPOConfig, GRPOTrainer

    from replaycompile.testing.models import tiny_model

    if model is None:
        heads = max(hidden // 16, 2)
        model = tiny_model("qwen3", seed=seed, vocab_size=vocab_size, hidden_size=hidden, intermediate_size=2 * hidden,
                           num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=max(heads // 2, 1),
                           head_dim=16)
    tok = tiny_tokenizer(vocab_size)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    kw = dict(output_dir=output_dir or tempfile.mkdtemp(prefix="trl_grpo_"), per_device_train_batch_size=per_device_batch,
              gradient_accumulation_steps=grad_accum, num_generations=num_generations,
              max_completion_length=max_completion_length, max_steps=max_steps, logging_steps=1, report_to=[],
              use_cpu=True, seed=seed, save_strategy="no", learning_rate=1e-3, bf16=False, disable_tqdm=True)
    if loss_type is not None:
        kw["loss_type"] = loss_type
    kw.update(config)
    args = GRPOConfig(**kw)
    return GRPOTrainer(model=model, reward_funcs=even_words, args=args, processing_class=tok,
                       train_dataset=prompt_dataset(prompts, *prompt_len, vocab_size=vocab_size, seed=seed))


def train(replay: bool, steps: int, inner: str, **kw):
    from replaycompile.integrations.trl import compile_trainer

    trainer = build_trainer(max_steps=steps, **kw)
    if replay:
        compile_trainer(trainer, inner=inner)
    t0 = time.perf_counter()
    trainer.train()
    return trainer, time.perf_counter() - t0


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--generations", type=int, default=4, help="G: completions per prompt")
    ap.add_argument("--batch", type=int, default=8, help="per-device train batch (rows)")
    ap.add_argument("--prompt-len", type=int, nargs=2, default=(24, 48), metavar=("MIN", "MAX"))
    ap.add_argument("--completion-len", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--iterations", type=int, default=2, help="GRPO num_iterations: passes over each generation "
                    "batch. From the second on the ratio to the old policy is not 1, so the loss value depends on the "
                    "logits (on the first, with equal-length completions, the dapo loss is 0 exactly)")
    ap.add_argument("--inner", default="aot_eager", help="the replay backend's inner compiler (inductor: faster "
                    "steps, slower first compile)")
    ap.add_argument("--compare", action="store_true", help="also train without replay and compare the losses")
    a = ap.parse_args(argv)
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    kw = dict(num_generations=a.generations, per_device_batch=a.batch, prompt_len=tuple(a.prompt_len),
              max_completion_length=a.completion_len, hidden=a.hidden, num_iterations=a.iterations)
    trainer, secs = train(True, a.steps, a.inner, **kw)
    rows = [h for h in trainer.state.log_history if "loss" in h]
    print(f"replay ({a.inner}): {a.steps} steps in {secs:.1f} s (compiles included)")
    for h in rows:
        tin, tcomp = h["replay/tokens_in"], h["replay/tokens_computed"]
        print(f"  step {h['step']}: loss {h['loss']:+.6f}  tokens computed {tcomp:.0f} of {tin:.0f} in "
              f"({tin / tcomp:.2f}x fewer), packed {h['replay/applied']:.0%}")
    if a.compare:
        ref, secs = train(False, a.steps, a.inner, **kw)
        print(f"TRL without replay: {a.steps} steps in {secs:.1f} s")
        for h, r in zip(rows, (h for h in ref.state.log_history if "loss" in h)):
            print(f"  step {h['step']}: loss {r['loss']:+.6f} (replay {h['loss']:+.6f}, difference "
                  f"{abs(h['loss'] - r['loss']):.1e})")
    return rows


if __name__ == "__main__":
    main()
