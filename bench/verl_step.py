"""verl's actor update step on CPU, with and without ``replaycompile.integrations.verl`` (issue 31's benchmark and
the equality tests' harness). Runs in a venv with verl 0.9.1 (``pip install -e '.[verl]'``; CI: ``.ci/verl``).

What runs is verl's own code: ``FSDPEngineWithLMHead.forward_backward_batch`` (micro-batching, dynamic batch
size, ``forward_step``, the padding-removed inputs, ``prepare_model_inputs`` / ``prepare_model_outputs``) with the
loss ``verl.workers.utils.losses.ppo_loss`` on the data layout verl's trainer hands it
(``left_right_2_no_padding`` of the rollout's rows). What does not: ``FSDPEngine.initialize`` (FSDP wrapping,
optimizer, checkpoint manager; it builds its model from a checkpoint path and a CUDA/NPU device mesh), so the
engine here is verl's class with the attributes ``forward_backward_batch`` reads set directly (:func:`bare_engine`),
the model unwrapped, and verl's platform is a CPU one registered through verl's own plugin hook
(``verl.plugin.platform.set_platform``; verl 0.9.1 ships CUDA, NPU and ROCm platforms only).

    python bench/verl_step.py                         # reference shape (G=8, 1K prompt, 64-128-token completions)
    python bench/verl_step.py --prompt 8192 --reps 3  # the 8K prompt
    python bench/verl_step.py --quick                 # tiny shapes, aot_eager: seconds

    replaycompile bench verl --prompt 8192            # the same, through the CLI

Systems, interleaved (the order rotates each rep), medians, each with a micro-batch per GRPO group:
``verl`` (verl's engine as it configures itself: padding removed, ``use_remove_padding=True``, its default),
``verl_padded`` (padding kept, ``use_remove_padding=False``) and ``verl_replay`` (the engine after
``compile_engine``, inner inductor). Both verl systems are baselines because on CPU the padding-removed path is
not verl's fast one: SDPA runs the G rows as one packed sequence under a block-diagonal ``[N, N]`` mask that costs
``(G * T)^2``, where a GPU user's flash-attention varlen kernel costs ``G * T^2``; padded rows cost ``G * T^2``
here too. The target is set against the faster of the two. verl's Prefix Grouper is not a third system: in verl 0.9.1 ``use_prefix_grouper`` only changes the
trainer's batch balancing (``ray_trainer._balance_batch``); the ``FSDPEngineWithLMHead`` forward has no Prefix
Grouper path (the peer's own numbers are ``replaycompile bench --systems prefix_grouper``).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


# ------------------------------------------------------------------------------------------- verl on CPU

def use_cpu_platform() -> None:
    """Register a CPU platform with verl (its plugin hook); verl's own detection picks CUDA on a machine with none."""
    from verl.plugin.platform import platform_manager
    from verl.plugin.platform.platform_base import PlatformBase

    if platform_manager._current_platform is not None and platform_manager._current_platform.device_name == "cpu":
        return

    class PlatformCPU(PlatformBase):
        device_name = "cpu"
        vendor_name = "cpu"
        device_module = torch.cpu

        def is_available(self): return True
        def current_device(self): return "cpu"
        def device_count(self): return 1
        def set_device(self, device_index): pass
        def synchronize(self, device_index=None): pass
        def manual_seed(self, seed): torch.manual_seed(seed)
        def manual_seed_all(self, seed): torch.manual_seed(seed)
        def set_allocator_settings(self, settings): pass
        def empty_cache(self): pass
        def get_device_capability(self, device_index=0): return (None, None)
        def communication_backend_name(self): return "gloo"
        def visible_devices_envvar(self): return "CUDA_VISIBLE_DEVICES"
        @contextlib.contextmanager
        def nvtx_range(self, msg): yield
        def profiler_start(self): pass
        def profiler_stop(self): pass
        def ray_resource_name(self): return "CPU"
        def ray_noset_envvars(self): return []
        def is_ipc_supported(self): return False
        def cudart(self): return None

    platform_manager.set_platform(PlatformCPU())


def init_process_group() -> None:
    """A one-process gloo group: ``forward_backward_batch`` all-reduces the batch's token count over it."""
    import torch.distributed as dist

    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
        dist.init_process_group("gloo", rank=0, world_size=1)


def bare_engine(model, dtype=torch.float32, **engine_config):
    """verl's ``FSDPEngineWithLMHead`` around an unwrapped ``model``: the attributes its forward path reads, as
    ``__init__`` and ``initialize`` set them for one process without sequence parallelism (``_autocast_dtype``
    float32: verl's mixed-precision param dtype for an fp32 run, no autocast; the entropy function compiled with
    ``torch.compile(dynamic=True)`` as verl does by default, ``use_torch_compile=True``)."""
    import verl.utils.torch_functional as verl_F
    from verl.workers.config import FSDPEngineConfig
    from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithLMHead

    use_cpu_platform()
    init_process_group()
    eng = FSDPEngineWithLMHead.__new__(FSDPEngineWithLMHead)
    eng.module = model
    eng.ulysses_device_mesh = None
    eng.use_ulysses_sp = False
    eng.ulysses_sequence_parallel_size = 1
    eng.pad_to_length = None
    eng.engine_config = FSDPEngineConfig(**engine_config)
    eng._autocast_dtype = dtype
    entropy = (verl_F.entropy_from_logits_with_chunking if eng.engine_config.entropy_from_logits_with_chunking
               else verl_F.entropy_from_logits)
    eng.compute_entropy_from_logits = (torch.compile(entropy, dynamic=True) if eng.engine_config.use_torch_compile
                                       else entropy)
    return eng


def actor_config(**kw):
    """verl's actor config (``FSDPActorConfig``) with this harness's defaults: GRPO's KL loss and an entropy bonus on,
    so the loss exercises every term of ``ppo_loss``."""
    from verl.workers.config import FSDPActorConfig, PolicyLossConfig

    if isinstance(kw.get("policy_loss"), dict):
        kw["policy_loss"] = PolicyLossConfig(**kw["policy_loss"])
    base = dict(strategy="fsdp", ppo_mini_batch_size=8, ppo_micro_batch_size_per_gpu=8, rollout_n=8,
                use_dynamic_bsz=False, entropy_coeff=0.01, use_kl_loss=True, kl_loss_coef=0.05,
                kl_loss_type="low_var_kl")
    base.update(kw)
    return FSDPActorConfig(**base)


def verl_batch(ids, am, adv, old, ref, prompt_len: int, *, micro_batch_size=None, max_token_len=None,
               temperature=1.0, calculate_entropy=True, use_remove_padding=True):
    """verl's mini-batch as its trainer hands it to the engine: the rollout's rows (prompt left-padded in
    ``prompt_len`` columns, response right-padded) through ``left_right_2_no_padding``, GRPO's per-sequence
    advantage broadcast over the response, and the non-tensor settings ``TrainingWorker.train_batch`` injects."""
    from tensordict import TensorDict
    from verl.utils import tensordict_utils as tu
    from verl.workers.utils.padding import left_right_2_no_padding

    b = ids.shape[0]
    resp_mask = am[:, prompt_len:].float()
    td = TensorDict(dict(input_ids=ids.clone(), attention_mask=am.clone(),
                         position_ids=(am.cumsum(1) - 1).clamp(min=0), prompts=ids[:, :prompt_len].clone(),
                         responses=ids[:, prompt_len:].clone(), response_mask=resp_mask,
                         old_log_probs=old.clone(), ref_log_prob=ref.clone(),
                         advantages=adv[:, None] * resp_mask), batch_size=[b])
    td = left_right_2_no_padding(td)
    dynamic = max_token_len is not None
    tu.assign_non_tensor(td, temperature=temperature, use_remove_padding=use_remove_padding,
                         use_dynamic_bsz=dynamic, micro_batch_size_per_gpu=micro_batch_size or b,
                         calculate_entropy=calculate_entropy, global_batch_size=b, use_fused_kernels=False)
    if dynamic:
        tu.assign_non_tensor(td, max_token_len_per_gpu=max_token_len)
    return td


def rollout_rows(groups: int, g: int, prompt_len: int, cmin: int, cmax: int, vocab: int, seed: int = 0,
                 prompt_jitter: int = 0):
    """``groups`` prompts, each sampled ``g`` times, as verl's rollout lays them out (rows of one prompt next to each
    other, prompt left-padded to ``prompt_len``, responses right-padded to ``cmax``); prompts ``prompt_jitter``
    tokens shorter each so the left padding varies. Returns ids, attention mask, per-row advantages, old and
    reference log-probs of the response tokens (stand-ins of the right shape and range)."""
    gen = torch.Generator().manual_seed(seed)
    b = groups * g
    ids = torch.zeros(b, prompt_len + cmax, dtype=torch.long)
    am = torch.zeros_like(ids)
    for i in range(groups):
        n = prompt_len - i * prompt_jitter
        prompt = torch.randint(3, vocab, (n,), generator=gen)
        for j in range(g):
            r = i * g + j
            ids[r, prompt_len - n:prompt_len] = prompt
            am[r, prompt_len - n:prompt_len] = 1
            c = int(torch.randint(cmin, cmax + 1, (1,), generator=gen))
            ids[r, prompt_len:prompt_len + c] = torch.randint(3, vocab, (c,), generator=gen)
            am[r, prompt_len:prompt_len + c] = 1
    adv = torch.randn(b, generator=gen)
    old = -torch.rand(b, cmax, generator=gen) * 4
    ref = old + 0.1 * torch.randn(b, cmax, generator=gen)
    mask = am[:, prompt_len:] == 0
    return ids, am, adv, old.masked_fill(mask, 0), ref.masked_fill(mask, 0)


def metric_values(metrics: dict) -> dict:
    """verl's metrics as plain lists of floats (``Metric`` objects hold theirs in ``.values``)."""
    from verl.utils.metric import Metric

    out = {}
    for k, v in metrics.items():
        vals = v if isinstance(v, list) else [v]
        flat = []
        for x in vals:
            x = x.values if isinstance(x, Metric) else [x]
            flat.extend(float(y.detach()) if isinstance(y, torch.Tensor) else float(y) for y in x)
        out[k] = flat
    return out


def train_step(engine, td, loss_fn):
    """One update step as ``BaseEngine.train_batch`` runs it, minus the optimizer: zero the grads, verl's
    ``forward_backward_batch``. Returns its output (loss per micro-batch, metrics)."""
    for p in engine.module.parameters():
        p.grad = None
    return engine.forward_backward_batch(td, loss_fn, forward_only=False)


# --------------------------------------------------------------------------------------------- benchmark

# name -> (use_remove_padding, batched log-probs); verl_replay removes padding as verl does by default
SYSTEMS = {"verl": (True, False), "verl_batched": (True, True), "verl_padded": (False, False),
           "verl_padded_batched": (False, True), "verl_replay": (True, False)}


@contextlib.contextmanager
def batched_logprobs():
    """verl's engine with its log-probs computed in one batched op (``gather - logsumexp`` over the whole
    ``[tokens, vocab]`` logits). Without flash-attn's fused cross-entropy (a GPU kernel) verl falls back to
    ``logprobs_from_logits_v2``, which loops in Python over the rows: for the padding-removed ``[N, vocab]`` logits
    that is one ``logsumexp`` per token (9K of them at the reference shape), a cost a GPU user does not pay. The
    batched form is the same formula (``logprobs_from_logits_v2``'s float32 branch without its loop)."""
    import verl.workers.engine.fsdp.transformer_impl as impl

    def batched(logits, labels, inplace_backward=True):
        return logits.gather(-1, labels.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)

    prev = impl.logprobs_from_logits
    impl.logprobs_from_logits = batched
    try:
        yield
    finally:
        impl.logprobs_from_logits = prev


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompt", type=int, default=None, help="prompt length (default: the reference 1024)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="tiny shapes, inner aot_eager")
    ap.add_argument("--inner", default=None, help="replay's inner compiler (default inductor; aot_eager with --quick)")
    ap.add_argument("--systems", nargs="+", choices=list(SYSTEMS), default=["verl", "verl_batched", "verl_padded",
                                                                             "verl_replay"])
    ap.add_argument("--baseline-micro-batch", type=int, default=None,
                    help="micro_batch_size_per_gpu of the verl baselines (default G: the whole group; smaller where "
                         "their [rows, T, vocab] logits would not fit in memory); replay takes the whole group")
    args = ap.parse_args(argv)
    if "verl_replay" not in args.systems or len(args.systems) < 2:
        ap.error("--systems needs verl_replay and at least one verl baseline")

    sys.path.insert(0, HERE)
    import transformers
    from common import reference_config
    from verl.workers.utils.losses import ppo_loss

    from replaycompile.integrations.verl import compile_engine

    mcfg, (g, p, cmin, cmax) = reference_config(quick=args.quick)
    p = args.prompt or p
    inner = args.inner or ("aot_eager" if args.quick else "inductor")
    mbs = {n: g if n == "verl_replay" else (args.baseline_micro_batch or g) for n in SYSTEMS}
    cfg = transformers.Qwen3Config(**mcfg, max_position_embeddings=max(4096, 2 * (p + cmax)))
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg).float().train()
    systems = {}
    for name in args.systems:
        eng = bare_engine(copy.deepcopy(model))
        systems[name] = compile_engine(eng, inner=inner) if name == "verl_replay" else eng
    loss_fn = functools.partial(ppo_loss, config=actor_config(rollout_n=g, ppo_mini_batch_size=g,
                                                              ppo_micro_batch_size_per_gpu=g))
    rows = rollout_rows(1, g, p, cmin, cmax, mcfg["vocab_size"], seed=1)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {torch.get_num_threads()} threads; "
          f"model {mcfg}; G={g}, prompt {p}, completions {cmin}-{cmax}; verl {_verl_version()}; replay inner {inner}; "
          f"micro-batch rows {mbs}", flush=True)

    def run(name):
        remove_padding, batched = SYSTEMS[name]
        td = verl_batch(*rows, prompt_len=p, micro_batch_size=mbs[name], use_remove_padding=remove_padding)
        with batched_logprobs() if batched else contextlib.nullcontext():
            t = time.perf_counter()
            out = train_step(systems[name], td, loss_fn)
            return time.perf_counter() - t, out

    first = {}
    for name in systems:  # first calls: compilation, and the exactness check
        first[name] = run(name)
        print(f"first call {name}: {first[name][0]:.1f} s", flush=True)
    baselines = [n for n in systems if n != "verl_replay"]
    ref = baselines[0]
    loss = {n: sum(first[n][1]["loss"]) for n in systems}  # ppo_loss normalises globally: micro-batches sum
    loss_rel = abs(loss[ref] - loss["verl_replay"]) / abs(loss[ref])
    m1, m2 = systems[ref].module, systems["verl_replay"].module
    worst = max(((a.grad - b.grad).norm() / a.grad.norm().clamp(min=1e-30)).item()
                for a, b in zip(m1.parameters(), m2.parameters()) if a.grad is not None)
    st = systems["verl_replay"].replay_stats[-1]
    times = {n: [] for n in systems}
    order = list(systems)
    for rep in range(args.reps):
        k = rep % len(order)
        for name in order[k:] + order[:k]:
            times[name].append(run(name)[0])
            print(f"  rep {rep + 1}/{args.reps} {name}: {times[name][-1]:.3f} s", flush=True)
    med = {n: statistics.median(v) for n, v in times.items()}
    tokens_in = int(rows[1].sum())
    best = min(baselines, key=med.get)
    print("| system | padding removed | batched log-probs | micro-batch rows | median s | replay speedup over it |\n"
          "|---|---|---|---|---|---|")
    for n in systems:
        print(f"| {n} | {SYSTEMS[n][0]} | {SYSTEMS[n][1]} | {mbs[n]} | {med[n]:.3f} | "
              f"{med[n] / med['verl_replay']:.2f}x |")
    for n in baselines[1:]:
        print(f"{n} vs {ref}: loss rel {abs(loss[n] - loss[ref]) / abs(loss[ref]):.1e}")
    print(f"the faster verl here: {best}")
    print(f"verl_replay: packed {st['applied']}, tokens computed {st['tokens_computed']} of {tokens_in} "
          f"(ideal speedup by tokens {tokens_in / max(st['tokens_computed'], 1):.2f}x); loss rel {loss_rel:.1e}, "
          f"worst grad rel {worst:.1e} (against {ref})")
    target = 3.0 if p <= 1024 else 4.0
    ratio = med[best] / med["verl_replay"]
    print(f"verl update step with replay >= {target:g}x verl's own ({best}) at prompt {p}, exact: {ratio:.2f}x, loss "
          f"{loss_rel:.1e}, grad {worst:.1e} -> {'MET' if ratio >= target and worst < 1e-4 else 'NOT MET'}")
    return 0


def _verl_version() -> str:
    import verl

    return getattr(verl, "__version__", "?")


if __name__ == "__main__":
    sys.exit(main())
