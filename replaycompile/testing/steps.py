"""A GRPO-shaped step on a tiny model, the way the tests and benchmarks run one: a rollout batch (one prompt
sampled G times, or a two-level tree: ``tree_batch``), the clipped policy-gradient loss against stored old log-probs, and the step's loss and
gradients (``run``). Shared by ``tests/`` and ``bench/`` (one copy)."""

from __future__ import annotations

import math

import torch

__all__ = ["group_batch", "tree_batch", "old_logprobs", "grpo_loss", "step_loss", "run"]


def group_batch(prompt_len=10, lens=(5, 3, 6, 4), vocab=128, left_pad=2, seed=0, pad_id=0):
    """One prompt (left-padded by ``left_pad``) sampled len(lens) times; completions right-padded."""
    g = torch.Generator().manual_seed(seed)
    prompt = torch.randint(1, vocab, (prompt_len,), generator=g)
    c = max(lens)
    rows, masks = [], []
    for n in lens:
        comp = torch.randint(1, vocab, (n,), generator=g)
        rows.append(torch.cat([torch.full((left_pad,), pad_id), prompt, comp, torch.full((c - n,), pad_id)]))
        masks.append(torch.cat([torch.zeros(left_pad), torch.ones(prompt_len + n), torch.zeros(c - n)]))
    ids = torch.stack(rows).long()
    am = torch.stack(masks).long()
    adv = torch.randn(len(lens), generator=g)
    return ids, am, adv, left_pad + prompt_len


def tree_batch(prompt_len=9, stems=((2, (4, 3)), (3, (5, 1, 2))), vocab=128, seed=0):
    """Rows prompt + stem_j + tail_ji, right-padded; first tokens of sibling stems and tails differ, so the
    shared part of each row is exactly its prompt and stem."""
    g = torch.Generator().manual_seed(seed)
    prompt = torch.randint(1, vocab, (prompt_len,), generator=g)
    rows = []
    for j, (stem_len, tails) in enumerate(stems):
        stem = torch.randint(1, vocab, (stem_len,), generator=g)
        if stem_len:
            stem[0] = 1 + j
        for i, n in enumerate(tails):
            tail = torch.randint(1, vocab, (n,), generator=g)
            tail[0] = 10 + i
            rows.append(torch.cat([prompt, stem, tail]))
    t = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), t, dtype=torch.long)
    am = torch.zeros(len(rows), t, dtype=torch.long)
    for b, r in enumerate(rows):
        ids[b, :len(r)] = r
        am[b, :len(r)] = 1
    adv = torch.randn(len(rows), generator=g)
    return ids, am, adv, prompt_len


def old_logprobs(ids, p, vocab):
    """Stand-in for the rollout-time log-probs a trainer stores: a fixed function of the tokens that differs
    from the current policy's log-probs, so the ratio, and therefore the loss *value*, depend on the logits.
    (Against ``logp.detach()`` the ratio is exactly 1 and the loss a constant: comparing it proves nothing.)"""
    return -math.log(vocab) + 0.1 * torch.cos(ids[:, p:].float())


def grpo_loss(logits, ids, am, adv, p):
    """Clipped per-token policy-gradient loss over the completion tokens (columns >= p) against stored old
    log-probs, plus a small log-likelihood term, masked token mean (as TRL computes it)."""
    logp = logits[:, p - 1:-1].float().log_softmax(-1).gather(-1, ids[:, p:, None]).squeeze(-1)
    cm = am[:, p:].float()
    ratio = torch.exp(logp - old_logprobs(ids, p, logits.shape[-1]))
    obj = torch.minimum(ratio * adv[:, None], ratio.clamp(0.8, 1.2) * adv[:, None])
    return -((obj + 0.01 * logp) * cm).sum() / cm.sum()


def step_loss(model, ids, am, adv, p):
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    return grpo_loss(logits, ids, am, adv, p)


def run(fn, model, *args):
    """Loss and every parameter's gradient of one step."""
    for q in model.parameters():
        q.grad = None
    loss = fn(model, *args)
    loss.backward()
    return loss.detach(), {k: q.grad.detach().clone() for k, q in model.named_parameters() if q.grad is not None}
