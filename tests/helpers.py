"""Shared pieces of the backend tests: rollout batches, a GRPO-shaped loss, and exactness checks."""

from __future__ import annotations


import torch

from replaycompile.testing.steps import group_batch, grpo_loss, old_logprobs, run, step_loss  # noqa: F401

AOT = {"inner": "aot_eager", "min_shared_tokens": 1}


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
    token. Written independently of replaycompile.runtime.plan, so a plan (or a backend stat) that packs too much or
    too little disagrees with it."""
    keys, m = prefix_keys(ids, mask, pos)
    return len({keys[b][t] for b in range(len(keys)) for t in range(len(keys[b])) if m[b][t]})


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
