"""Helpers the benchmark scripts share: memory measurement, the reference workload, timing, packed trees.

A script in ``bench/`` imports them as ``from common import ...`` (``python bench/x.py`` puts ``bench/`` first on
``sys.path``; the scripts loaded by path, as ``replaycompile bench`` and the tests load them, put it there
themselves). Nothing here is a benchmark of its own.

- Memory: ``heap_in_use`` (glibc's ``mallinfo2``), ``PeakHeap`` (its high-water mark during a step, optionally
  with the exact tensor peak from torch's profiler), ``tensor_peak``.
- The reference workload (a Qwen3-shaped model, G=8 rollouts of a 1K prompt, 64-128-token completions):
  ``reference_config``, ``model_variant`` (the same shape as MoE or sliding-window models), ``make_batch``,
  ``with_old_logprobs``, ``grpo_loss_from_logp``, ``make_loss_full``, ``build_variants``; ``mlp_macs`` (an MLP's
  multiply-adds per token, MoE included) for the FLOP models.
- The test suite's GRPO step on its batches, re-exported from ``replaycompile.testing.steps`` (one copy for the
  tests and the benchmarks): ``group_batch``, ``old_logprobs``, ``grpo_loss``, ``step_loss``, ``run``.
- Timing: ``sync``, ``time_variants`` (round-robin over variants, medians), ``rel``.
- Packed trees: ``branch_tree`` (a prompt and completions hanging off it, as the runtime plan lays them out),
  ``visible_pairs``.
"""

from __future__ import annotations

import ctypes
import statistics
import threading
import time

import torch

from replaycompile.testing.steps import group_batch, grpo_loss, old_logprobs, run, step_loss  # noqa: F401 - shared

# ------------------------------------------------------------------------------------------------ memory


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


_libc = []  # glibc, loaded on the first heap_in_use() call (importing this module needs no glibc)


def heap_in_use() -> int:
    """Bytes malloc has handed out and not got back (all arenas, mmapped chunks included). Unlike RSS it
    does not keep memory that the allocator caches after a free, so variants run in one process compare."""
    if not _libc:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        _libc.append(libc)
    m = _libc[0].mallinfo2()
    return m.uordblks + m.hblkhd


class PeakHeap:
    """High-water mark of heap_in_use() above the starting point, sampled every 0.5 ms in a thread.

    With ``tensors=True`` the step also runs under torch's profiler recording memory events, and ``delta`` is the
    larger of the sampled heap peak and the exact peak of tensor bytes allocated above the start
    (``tensor_delta``). The sampler alone can miss a short-lived buffer when the machine is loaded (it read 86 MB
    for a step whose tensors alone peak at 137 MB: the LM head's M x V logits came and went between samples);
    the tensor peak is deterministic but leaves out what is not a tensor (inductor's kernels' scratch, about 20 MB
    on a tiny packed step), so neither alone is the heap's peak."""

    def __init__(self, tensors: bool = False):
        self.tensors = tensors

    def __enter__(self):
        self.base = heap_in_use()
        self.peak = self.base
        self._stop = False
        self._prof = None
        if self.tensors:
            from torch.profiler import ProfilerActivity, profile
            self._prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
            self._prof.__enter__()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def _run(self):
        while not self._stop:
            self.peak = max(self.peak, heap_in_use())
            self._sampled()
            time.sleep(0.0005)

    def _sampled(self):
        """Called after every sample (subclasses act on the peak so far)."""

    def __exit__(self, *exc):
        self._stop = True
        self._t.join()
        self.peak = max(self.peak, heap_in_use())
        self.delta = self.peak - self.base
        self.tensor_delta = None
        if self._prof is not None:
            self._prof.__exit__(*exc)
            self.tensor_delta = tensor_peak(self._prof)
            self.delta = max(self.delta, self.tensor_delta)


def tensor_peak(prof) -> int:
    """Peak of tensor bytes allocated minus freed since the profiler started, from its memory events in time
    order (a free of a tensor allocated before the start counts negative, so this is the rise above the start)."""
    events = sorted((e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"),
                    key=lambda e: e.start_ns())
    now = peak = 0
    for e in events:
        now += e.nbytes()
        peak = max(peak, now)
    return peak


# ------------------------------------------------------------------------------------------ the reference workload


def reference_config(quick: bool = False):
    """The reference configuration (Qwen3-shaped model config, and G, prompt length, completion length range);
    ``quick``: a small one for smoke runs. Shared with the other benchmarks that compare on it."""
    if quick:
        cfg = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                   head_dim=16, intermediate_size=192, vocab_size=2000)
        return cfg, (8, 256, 16, 32)
    cfg = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
               head_dim=64, intermediate_size=768, vocab_size=32000)
    return cfg, (8, 1024, 64, 128)


MODELS = ("qwen3", "qwen3_moe", "mistral_window")


def model_variant(name: str, cfg: dict, prompt_len: int):
    """The model families the benchmark runs on the reference workload, each the reference shape: ``qwen3`` (dense),
    ``qwen3_moe`` (8 experts, top-2, experts half as wide, so a token's active MLP FLOPs equal the dense model's),
    ``mistral_window`` (Mistral, every layer a sliding window of a quarter of the prompt). Returns the HF family
    and the config overrides."""
    if name == "qwen3":
        return "qwen3", dict(cfg)
    if name == "qwen3_moe":
        return "qwen3_moe", dict(cfg, num_experts=8, num_experts_per_tok=2,
                                 moe_intermediate_size=cfg["intermediate_size"] // 2, norm_topk_prob=True,
                                 decoder_sparse_step=1, mlp_only_layers=[])
    if name == "mistral_window":
        return "mistral", dict(cfg, sliding_window=prompt_len // 4)
    raise ValueError(f"unknown --model {name!r}; choose from {MODELS}")


def mlp_macs(cfg, layer: int) -> int:
    """Multiply-adds per token of layer ``layer``'s MLP (``cfg``: a transformers config or a dict of its fields):
    dense gate/up/down, or a sparse MoE layer's routed experts and router (Qwen3-MoE's rule for which layers are
    sparse: ``decoder_sparse_step``, ``mlp_only_layers``; Mixtral-style configs name ``num_local_experts``)."""
    get = cfg.get if isinstance(cfg, dict) else lambda k, d=None: getattr(cfg, k, d)
    h = get("hidden_size")
    experts = get("num_experts") or get("num_local_experts") or 0
    sparse = (experts > 0 and layer not in (get("mlp_only_layers") or [])
              and (layer + 1) % (get("decoder_sparse_step") or 1) == 0)
    if not sparse:
        return 3 * h * get("intermediate_size")
    return get("num_experts_per_tok") * 3 * h * (get("moe_intermediate_size") or get("intermediate_size")) \
        + h * experts


def make_batch(group: int, prompt_len: int, cmin: int, cmax: int, vocab: int, share: bool, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    prompt = torch.randint(3, vocab, (prompt_len,), generator=g)
    lens = torch.randint(cmin, cmax + 1, (group,), generator=g)
    t = prompt_len + cmax
    ids = torch.zeros(group, t, dtype=torch.long)
    am = torch.zeros(group, t, dtype=torch.long)
    for i in range(group):
        p = prompt if share else torch.randint(3, vocab, (prompt_len,), generator=g)
        ids[i, :prompt_len] = p
        ids[i, prompt_len:prompt_len + lens[i]] = torch.randint(3, vocab, (int(lens[i]),), generator=g)
        am[i, :prompt_len + lens[i]] = 1
    adv = torch.randn(group, generator=g)
    return ids, am, adv


def with_old_logprobs(model, batch, P: int):
    """The batch plus the rollout policy's log-probs of the completion tokens: those of a perturbed copy of the model
    (``replaycompile.testing.models.behaviour_logprobs``, as after an optimizer step; one row per forward), so the
    clipped ratio and the loss value depend on the model's logits."""
    from replaycompile.testing.models import behaviour_logprobs

    ids, am, adv = batch
    return ids, am, adv, behaviour_logprobs(model, ids, am, P, seed=7, rows=1)


def grpo_loss_from_logp(logp, old_logp, adv, cmask):
    """Per-token GRPO (ratio against the rollout's log-probs, clipped), masked mean over completion tokens."""
    ratio = torch.exp(logp - old_logp)
    obj = torch.minimum(ratio * adv[:, None], ratio.clamp(0.8, 1.2) * adv[:, None])
    return -(obj * cmask).sum() / cmask.sum()


def make_loss_full(P: int):
    """The GRPO step as a user writes it: full logits, then the completion positions."""
    def loss_full(model, ids, am, adv, old_logp):
        logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
        logp = logits[:, P - 1:-1].float().log_softmax(-1).gather(-1, ids[:, P:, None]).squeeze(-1)
        return grpo_loss_from_logp(logp, old_logp, adv, am[:, P:].float())
    return loss_full


def build_variants(model, prompt_len: int, completion_len: int):
    """The reference step's variants by name: eager as written and with ``logits_to_keep``, plain inductor, replay
    exact and ``detach_prefix``, and replay with the model compiled alone (the loss outside the graph)."""
    P, C = prompt_len, completion_len
    loss_full = make_loss_full(P)

    def loss_keep(model, ids, am, adv, old_logp):
        logits = model(input_ids=ids, attention_mask=am, use_cache=False, logits_to_keep=C + 1).logits[:, :-1]
        logp = logits.float().log_softmax(-1).gather(-1, ids[:, P:, None]).squeeze(-1)
        return grpo_loss_from_logp(logp, old_logp, adv, am[:, P:].float())

    replay_model = torch.compile(model, backend="replay")

    def loss_replay_model_only(model, ids, am, adv, old_logp):
        return loss_full(replay_model, ids, am, adv, old_logp)

    return {
        "eager (full logits, as written)": loss_full,
        "eager logits_to_keep (TRL baseline)": loss_keep,
        "plain inductor": torch.compile(loss_full),
        "replay exact": torch.compile(loss_full, backend="replay"),
        "replay detach_prefix (approximate)": torch.compile(loss_full, backend="replay",
                                                            options={"mode": "detach_prefix"}),
        "replay, model compiled alone": loss_replay_model_only,
    }


# ------------------------------------------------------------------------------------------------ timing


def sync(device) -> None:
    """Wait for the device's queued work (a no-op on the CPU), so a timer brackets what ran."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def time_variants(variants: dict, reps: int, device="cpu") -> dict:
    """Round-robin over variants, ``reps`` rounds after one warm-up round; median seconds per variant."""
    times = {k: [] for k in variants}
    for r in range(reps + 1):
        for name, fn in variants.items():
            sync(device)
            t = time.perf_counter()
            fn()
            sync(device)
            if r:
                times[name].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    """Relative L2 distance of ``a`` from ``b``, in float64."""
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


# ------------------------------------------------------------------------------------------------ packed trees


def branch_tree(prompt: int, lens: list[int]):
    """A prompt of ``prompt`` tokens and one completion per entry of ``lens`` hanging off its last token, in DFS
    order: (subtree_end [N], seg_q, seg_kv_ptr, kv_ranges) as the runtime plan would build them."""
    n = prompt + sum(lens)
    se = torch.empty(n, dtype=torch.int64)
    se[:prompt] = n
    seg_q, ptr, ranges = [[0, prompt]], [0, 1], [[0, prompt]]
    pos = prompt
    for c in lens:
        se[pos:pos + c] = pos + c
        seg_q.append([pos, pos + c])
        ranges += [[0, prompt], [pos, pos + c]]
        ptr.append(len(ranges))
        pos += c
    t = lambda x: torch.tensor(x, dtype=torch.int64)  # noqa: E731
    return se, t(seg_q).reshape(-1, 2), t(ptr), t(ranges).reshape(-1, 2)


def visible_pairs(prompt: int, lens: list[int]) -> int:
    """Visible (query, key) pairs of ``branch_tree(prompt, lens)``: the prompt's causal triangle, and each
    completion's view of the prompt and of itself."""
    return prompt * (prompt + 1) // 2 + sum(c * prompt + c * (c + 1) // 2 for c in lens)
