"""A plain PyTorch GRPO loop with the replay backend: sample G completions per prompt, score them, normalise the
rewards per group, and train on the clipped policy-gradient loss, compiled with ``backend="replay"``.

    python examples/grpo_loop.py                       # a few steps on a tiny Qwen3, inductor
    python examples/grpo_loop.py --inner aot_eager     # compiles in seconds (what the test suite runs)

Nothing here is replay-specific except the one ``torch.compile`` line: the loss function takes the model and
the padded batch, exactly as it would without the backend. ``replaycompile.last_stats()`` says, per step, how
many tokens were computed against how many came in, and whether every graph of the step was packed.
"""

from __future__ import annotations

import argparse
import time

import torch

import replaycompile
from replaycompile.testing.models import tiny_model


def rollouts(model, prompts: torch.Tensor, group: int, new_tokens: int, gen: torch.Generator):
    """G sampled completions per prompt (plain sampling, no cache tricks), as one left/right-padded batch:
    ids [P*G, T], attention mask, and the prompt length (prompts are left-padded to one length)."""
    rows = prompts.repeat_interleave(group, 0)
    ids = rows
    with torch.no_grad():
        for _ in range(new_tokens):
            logits = model(input_ids=ids, use_cache=False).logits[:, -1].float()
            nxt = torch.multinomial(logits.softmax(-1), 1, generator=gen)
            ids = torch.cat([ids, nxt], 1)
    # completions stop at a random length (an EOS, in a real run): right padding after it
    lens = torch.randint(new_tokens // 2, new_tokens + 1, (ids.shape[0],), generator=gen)
    comp = torch.arange(new_tokens)[None] < lens[:, None]
    am = torch.cat([torch.ones_like(rows), comp.long()], 1)
    return ids * am, am, prompts.shape[1]


def reward(ids: torch.Tensor, am: torch.Tensor, p: int) -> torch.Tensor:
    """A stand-in verifier: the share of even tokens in the completion."""
    comp, m = ids[:, p:], am[:, p:].float()
    return ((comp % 2 == 0).float() * m).sum(1) / m.sum(1).clamp_min(1)


def token_logprobs(model, ids, am, p):
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    return logits[:, p - 1:-1].float().log_softmax(-1).gather(-1, ids[:, p:, None]).squeeze(-1)


def grpo_loss(model, ids, am, p, old_logp, adv, clip: float = 0.2):
    """Clipped surrogate, masked token mean over the completions (TRL's "grpo" normalisation per sequence)."""
    logp = token_logprobs(model, ids, am, p)
    m = am[:, p:].float()
    ratio = torch.exp(logp - old_logp)
    obj = torch.minimum(ratio * adv[:, None], ratio.clamp(1 - clip, 1 + clip) * adv[:, None])
    return -(((obj * m).sum(1) / m.sum(1).clamp_min(1)).mean())


def train(model, steps: int, prompts: int, group: int, prompt_len: int, new_tokens: int, inner: str,
          seed: int = 0, log=print, wrap=None) -> list[dict]:
    """The loop; ``wrap`` is the module the loss calls (a DDP/FSDP wrapper in the multi-process example)."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = torch.compile(grpo_loss, backend="replay", options={"inner": inner})
    run = wrap if wrap is not None else model
    vocab = model.config.vocab_size
    history = []
    for step in range(steps):
        t0 = time.perf_counter()
        batch = torch.randint(1, vocab, (prompts, prompt_len), generator=gen)
        ids, am, p = rollouts(model, batch, group, new_tokens, gen)
        r = reward(ids, am, p).view(prompts, group)
        adv = ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-4)).reshape(-1)
        with torch.no_grad():
            old_logp = token_logprobs(model, ids, am, p)
        t1 = time.perf_counter()
        loss = loss_fn(run, ids, am, p, old_logp, adv)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        st = replaycompile.last_stats() or {}
        rec = {"step": step, "loss": float(loss.detach()), "reward": float(r.mean()), "tokens_in": st.get("tokens_in"),
               "tokens_computed": st.get("tokens_computed"), "applied": st.get("applied"),
               "graphs": f"{st.get('graphs_packed')}/{len(st.get('graphs', []))}",
               "train_s": time.perf_counter() - t1, "rollout_s": t1 - t0}
        history.append(rec)
        log(f"step {step}: loss {rec['loss']:+.3e}  reward {rec['reward']:.3f}  tokens computed "
            f"{rec['tokens_computed']} of {rec['tokens_in']}  graphs packed {rec['graphs']}  "
            f"train {rec['train_s']:.2f} s (rollout {rec['rollout_s']:.2f} s)")
        if not st.get("applied"):
            log(f"  not packed: {st.get('fallback_reason')}")
    return history


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--prompts", type=int, default=2, help="prompts per batch")
    ap.add_argument("--group", type=int, default=4, help="completions per prompt (G)")
    ap.add_argument("--prompt-len", type=int, default=48)
    ap.add_argument("--new-tokens", type=int, default=12)
    ap.add_argument("--inner", default="inductor", choices=["inductor", "aot_eager"])
    args = ap.parse_args(argv)
    model = tiny_model("qwen3")
    return train(model, args.steps, args.prompts, args.group, args.prompt_len, args.new_tokens, args.inner)


if __name__ == "__main__":
    main()
