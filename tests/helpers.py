"""Shared pieces of the backend tests: rollout batches, a GRPO-shaped loss, and exactness checks."""

from __future__ import annotations

import math

import torch

AOT = {"inner": "aot_eager", "min_shared_tokens": 1}


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


def full_inputs(ids, mask, pos):
    B, T = ids.shape
    mask = torch.ones(B, T, dtype=torch.long) if mask is None else mask.long()
    pos = torch.arange(T).expand(B, T) if pos is None else pos.expand(B, T)
    return ids.tolist(), mask.tolist(), pos.tolist()


def prefix_keys(ids, mask, pos):
    """keys[b][t] = tuple of (id, mask, pos) for columns 0..t of row b."""
    ids, mask, pos = full_inputs(ids, mask, pos)
    keys = []
    for b in range(len(ids)):
        row, acc = [], ()
        for t in range(len(ids[b])):
            acc = acc + ((ids[b][t], mask[b][t], pos[b][t]),)
            row.append(acc)
        keys.append(row)
    return keys, mask


def unique_prefix_tokens(ids, mask=None, pos=None) -> int:
    """How many tokens a correct plan computes: distinct (id, mask bit, position) prefixes that end at a real
    token. Written independently of replaycompile.plan, so a plan (or a backend stat) that packs too much or
    too little disagrees with it."""
    keys, m = prefix_keys(ids, mask, pos)
    return len({keys[b][t] for b in range(len(keys)) for t in range(len(keys[b])) if m[b][t]})


def run(fn, model, *args):
    """Loss and every parameter's gradient of one step."""
    for q in model.parameters():
        q.grad = None
    loss = fn(model, *args)
    loss.backward()
    return loss.detach(), {k: q.grad.detach().clone() for k, q in model.named_parameters() if q.grad is not None}


def assert_same_step(ref, got, rtol=1e-5):
    (l0, g0), (l1, g1) = ref, got
    torch.testing.assert_close(l1, l0, rtol=rtol, atol=rtol)
    assert g0.keys() == g1.keys()
    for k in g0:
        err = ((g1[k] - g0[k]).norm() / g0[k].norm().clamp_min(1e-12)).item()
        assert err <= rtol, f"gradient of {k} differs: relative error {err:.2e}"


def instances_of(monkeypatch, cls) -> list:
    """Every instance of ``cls`` constructed while the test runs (the backend's per-graph objects)."""
    made = []
    orig = cls.__init__

    def spy(self, *a, **k):
        orig(self, *a, **k)
        made.append(self)

    monkeypatch.setattr(cls, "__init__", spy)
    return made


def largest_tensor_mode():
    """A dispatch mode recording the largest number of elements of any tensor an aten op outputs under it
    (``mode.numel``): the memory promises (never N x N, never [M, V]) are checked with it."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class LargestTensor(TorchDispatchMode):
        numel = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(t, torch.Tensor):
                    self.numel = max(self.numel, t.numel())
            return out

    return LargestTensor()


def load_script(relpath: str, name: str | None = None):
    """A script of the checkout (``examples/x.py``, ``bench/x.py``: not installed packages) loaded as a module,
    so a test can call its functions as the command line would."""
    import importlib.util
    import pathlib
    import sys

    path = pathlib.Path(__file__).resolve().parents[1] / relpath
    spec = importlib.util.spec_from_file_location(name or f"checkout_{path.parent.name}_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def free_port() -> int:
    """A free TCP port on localhost, for a test's process group."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
