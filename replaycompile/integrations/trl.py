"""TRL: the training forward of a ``GRPOTrainer`` (or ``RLOOTrainer``) through the replay backend.

    from trl import GRPOConfig, GRPOTrainer
    from replaycompile.integrations.trl import compile_trainer

    trainer = compile_trainer(GRPOTrainer(model=model, ...), inner="inductor")   # replay backend options
    trainer.train()

What it changes, on the trainer and its model instances (no TRL class is modified; the guard at the end of this
docstring wraps one function in TRL's trainer modules):

- ``_get_per_token_logps_and_entropies``, the method every forward of the policy (and of the reference model)
  goes through, runs one ``torch.compile(..., backend="replay")`` function: backbone, the slice of the completion's
  predicting positions, LM head, temperature, log-softmax, the gather of the sampled tokens and the entropy. In
  one function the LM head and the log-softmax run on the *unique* predicting tokens only. It computes what TRL's
  fused LM head computes (``trl.trainer.utils.add_fused_lm_head``: log-probs and entropy of the next-token
  distribution, zero where the target is padding) and is called through the model TRL passes (the DDP wrapper
  included), so DDP's gradient reduction runs as without it. Inputs it does not cover (images, MoE aux loss)
  run TRL's own path.
- After each training forward (the ``compute_entropy=True`` call of ``_compute_loss``) ``last_stats()`` goes into
  the logged metrics: ``replay/tokens_in`` and ``replay/tokens_computed`` (summed over processes) and
  ``replay/applied`` (the fraction of forwards that were packed). ``trainer.replay_stats`` keeps this process's
  own values, one dict per training forward.
- Activation checkpointing (on in ``GRPOConfig`` by default) is turned off for the policy, with a warning: its
  regions traced with dynamic shapes are declined by the replay analysis, and transformers 5.24 adds an
  input-embedding hook at every enable, which TRL does after each generation (a recompile per step). The
  now useless ``make_inputs_require_grads`` hooks are removed (their ``requires_grad_()`` breaks the graph).
  Gradients are unchanged.
- ``group_placement=True`` (the default): after each generation, the rows of this process's generation batch
  are reordered so that each micro-batch (gradient accumulation step) holds whole prompt groups. TRL shuffles the
  generation batch before cutting it into ``steps_per_generation`` micro-batches, which spreads a prompt's
  completions over the micro-batches; replay can only share a prefix within one forward. Rows move only between
  micro-batches of the same optimizer step, and only where TRL's loss is a sum over those micro-batches that does
  not depend on their composition (see ``_placement_window``), so the gradient of every optimizer step is TRL's.
  Advantages are TRL's (computed per group on the gathered rewards before the batch reaches this code).

Across processes TRL already keeps groups together where it can: ``RepeatSampler`` yields a prompt's G copies
consecutively and accelerate hands each process a consecutive chunk of ``per_device_train_batch_size *
steps_per_generation`` rows, so a group straddles two processes only when that chunk is not a multiple of G, which
no placement with equal per-process batches can avoid (``bench/trl_ranks.py`` shows both on 2 processes, from
``trainer.replay_stats``).

``GRPOConfig(torch_compile=True, torch_compile_backend="replay")`` cannot work: accelerate validates the name
against its own ``DynamoBackend`` enum (``'REPLAY' is not a valid DynamoBackend``). And
``GRPOTrainer(model=torch.compile(model, backend="replay"))`` would silently never run replay: TRL replaces the
module's ``forward`` with its fused LM head, which calls the uncompiled backbone. Importing ``replaycompile``
installs a guard that refuses the latter with a message pointing here (``install_guard``).
"""

from __future__ import annotations

import collections
import functools
import importlib.abc
import logging
import sys

import torch

from replaycompile.inner import own_code

log = logging.getLogger("replaycompile")

__all__ = ["compile_trainer", "install_guard"]

METRIC_TOKENS_IN = "replay/tokens_in"
METRIC_TOKENS_COMPUTED = "replay/tokens_computed"
METRIC_APPLIED = "replay/applied"

_FORWARD_KW = "_replay_logps"  # the keyword the policy's forward wrapper answers
# multimodal inputs of _get_per_token_logps_and_entropies: TRL's own path runs them
_MULTIMODAL = ("pixel_values", "image_grid_thw", "num_images", "pixel_attention_mask", "spatial_shapes", "num_tiles",
               "image_sizes", "token_type_ids", "mm_token_type_ids", "image_position_ids")

COMPILED_MODEL_MESSAGE = (
    "replay: the model passed to the TRL trainer is compiled with torch.compile(backend='replay'). TRL replaces the "
    "model's forward with its fused LM head, which calls the uncompiled backbone, so replay would never run. Pass the "
    "uncompiled model to the trainer and call replaycompile.integrations.trl.compile_trainer(trainer, **options) "
    "(the options are the replay backend's, e.g. inner='aot_eager').")


# ------------------------------------------------------------------------------------------ the compiled step

def _replay_logps(model, input_ids, attention_mask, completion_mask, inv_temperature, logit_scale, softcap,
                  compute_entropy, fp32_head):
    """TRL's fused LM head (``add_fused_lm_head``'s forward, then ``[:, -logits_to_keep:]``) written out for the
    compiler: the completion's log-probs ``[B, K]`` and, if asked, the entropies, zero where the target is padding
    (``completion_mask`` is ``attention_mask[:, -K:]``; K comes from its shape, so a new completion width is a new
    value of a dynamic size, not a recompile). The slice comes before the LM head, so the packed graph runs the head
    on the unique predicting tokens only."""
    k = completion_mask.shape[1]
    hidden = model.base_model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
    hidden = hidden[:, -k - 1:-1]
    head = model.get_output_embeddings()
    if fp32_head:  # cast_lm_head_to_fp32: as TRL, the projection in float32 outside autocast
        with torch.autocast(hidden.device.type, enabled=False):
            logits = head(hidden.float())
    else:
        logits = head(hidden)
    z = logits.float()
    if logit_scale != 1.0:
        z = z * logit_scale
    if softcap is not None:
        z = softcap * torch.tanh(z / softcap)
    if inv_temperature != 1.0:
        z = z * inv_temperature
    logp_all = z.log_softmax(-1)
    targets = input_ids[:, -k:]
    padded = completion_mask == 0
    logps = logp_all.gather(-1, targets.unsqueeze(-1)).squeeze(-1).masked_fill(padded, 0.0)
    if not compute_entropy:
        return logps, None
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logps, entropy.masked_fill(padded, 0.0)


_steps: dict = {}


def _compiled_step(options: dict):
    """The compiled ``_replay_logps`` for these backend options, one per process and options: trainers whose models
    have the same structure then share its graphs (Dynamo guards on the modules' structure, not on which instance
    they are), so a second trainer does not compile again. Each options set gets a code object of its own, since
    Dynamo caches per code object."""
    key = tuple(sorted((k, repr(v)) for k, v in options.items()))
    if key not in _steps:
        fn = own_code(_replay_logps, "_replay_logps")
        # not dynamic=True: it would turn float module attributes (attention_dropout) into graph inputs, and the
        # analysis could no longer see that dropout is off; batch and lengths are marked dynamic per call instead
        _steps[key] = torch.compile(fn, backend="replay", options=dict(options))
    return _steps[key]


def _head_transform(model) -> tuple[float, float | None]:
    """``logit_scale`` and ``final_logit_softcapping`` exactly as ``trl.trainer.utils.add_fused_lm_head`` (1.16)
    reads them from the text config."""
    cfg = model.config.get_text_config()
    softcap = getattr(cfg, "final_logit_softcapping", None)
    scale = getattr(cfg, "logit_scale", None)
    if scale is None:
        scale = getattr(cfg, "output_multiplier", None)
    if scale is None:
        scale = getattr(cfg, "lm_head_multiplier", None)
    if scale is None and getattr(cfg, "logits_scaling", None) is not None:
        scale = cfg.logits_scaling if cfg.model_type == "hyperclovax" else 1 / cfg.logits_scaling
    return (1.0 if scale is None else float(scale)), softcap


def _install_forward(target, step, trainer) -> None:
    """Let ``target(..., _replay_logps=(logits_to_keep, compute_entropy))`` run the compiled step. The trainer calls
    the model it was handed (a DDP wrapper, a PEFT model), which passes the keyword down to this forward, so
    whatever the wrappers do around a forward (DDP's reducer preparation) still happens."""
    if getattr(target, "_replay_forward", False):
        return
    prev = target.forward
    scale, softcap = _head_transform(target)
    inv_t = 1.0 / float(trainer.temperature)
    fp32_head = bool(getattr(trainer.args, "cast_lm_head_to_fp32", False))

    @functools.wraps(prev)
    def forward(*args, **kwargs):
        spec = kwargs.pop(_FORWARD_KW, None)
        if spec is None:
            return prev(*args, **kwargs)
        logits_to_keep, compute_entropy = spec
        ids, am = kwargs["input_ids"], kwargs["attention_mask"]
        cm = am[:, -logits_to_keep:].clone()  # a tensor of its own, not a view (Dynamo guards on views)
        for t in (ids, am, cm):  # batch and lengths change from step to step: one graph for all of them
            torch._dynamo.maybe_mark_dynamic(t, 0)
            torch._dynamo.maybe_mark_dynamic(t, 1)
        # under DDP, Dynamo's DDP optimizer splits the graph at gradient buckets; the backend packs every piece
        # from the activations the one before it passes on, so the all-reduce overlap stays
        return step(target, ids, am, cm, inv_t, scale, softcap, compute_entropy, fp32_head)

    target.forward = forward
    target._replay_forward = True


def _drop_input_require_grads_hooks(model) -> None:
    """Remove transformers' ``make_inputs_require_grads`` hooks from the input embeddings. They exist for activation
    checkpointing (TRL adds one for PEFT models, transformers one per enable); without checkpointing they do
    nothing useful, and their ``requires_grad_()`` on an intermediate breaks the compiled graph in two."""
    try:
        emb = model.get_input_embeddings()
    except (AttributeError, NotImplementedError):
        return
    for key, hook in list(getattr(emb, "_forward_hooks", {}).items()):
        if getattr(hook, "__name__", "") == "make_inputs_require_grads":
            del emb._forward_hooks[key]
            getattr(emb, "_forward_hooks_with_kwargs", {}).pop(key, None)
            getattr(emb, "_forward_hooks_always_called", {}).pop(key, None)


def _hf_model(trainer, model):
    """The ``PreTrainedModel`` behind what the trainer passes (accelerate / DDP wrapper, PEFT)."""
    from accelerate.utils import is_peft_model

    m = trainer.accelerator.unwrap_model(model)
    return m.get_base_model() if is_peft_model(m) else m


# ------------------------------------------------------------------------------------------------ stats

def _stats_call() -> int | None:
    from replaycompile.stats import last_stats

    st = last_stats()
    return None if st is None else st.get("call")


def _fresh_stats(before) -> dict | None:
    from replaycompile.stats import last_stats

    st = last_stats()
    if st is None or st.get("call") == before:
        return None
    return st


def _record(trainer, local: dict) -> None:
    """This process's stats of one training forward into ``trainer.replay_stats``; the sums over processes into
    TRL's metrics (``_metrics[mode]`` lists, averaged per logging step by ``log``). Every process computes the loss
    in lockstep, so the reduce here pairs up as TRL's own reduces in ``_compute_loss`` do."""
    trainer.replay_stats.append(local)
    acc = trainer.accelerator
    t = torch.tensor([local["tokens_in"], local["tokens_computed"], float(local["applied"]), 1.0],
                     dtype=torch.float64, device=acc.device)
    if acc.num_processes > 1:
        t = acc.reduce(t, reduction="sum")
    tin, tcomp, applied, n = t.tolist()
    mode = "train" if trainer.model.training else "eval"
    trainer._metrics[mode][METRIC_TOKENS_IN].append(tin)
    trainer._metrics[mode][METRIC_TOKENS_COMPUTED].append(tcomp)
    trainer._metrics[mode][METRIC_APPLIED].append(applied / n)


# ------------------------------------------------------------------------------------------- group placement

def _placement_window(trainer) -> int:
    """How many consecutive micro-batches of a generation batch may exchange rows without changing any optimizer
    step's gradient (1: none).

    Micro-batch j of a generation batch is used at steps s0 + i * steps_per_generation + j (iteration i), s0 a
    multiple of steps_per_generation * num_iterations; gradient accumulation sums accum consecutive steps. If accum
    is a multiple of steps_per_generation every iteration's micro-batches fall in one optimizer step (window: all
    of them); if steps_per_generation is a multiple of accum, in blocks of accum. Within a step the sum over
    micro-batches does not depend on their composition for TRL's per-sequence and globally normalised losses
    (grpo, dr_grpo, dapo, luspo, cispo, sapo, vespo; RLOO's sequence mean) with equal micro-batch sizes; it does
    for a per-micro-batch token mean (bnpo, the entropy bonus), for the high-entropy mask (a quantile over one
    micro-step's tokens) and for an MoE aux loss, so those keep TRL's micro-batches."""
    args = trainer.args
    if getattr(trainer, "loss_type", None) == "bnpo" or getattr(trainer, "_entropy_bonus_enabled", False) or \
            getattr(trainer, "top_entropy_quantile", 1.0) < 1.0 or getattr(trainer, "aux_loss_enabled", False):
        return 1
    spg, accum = int(args.steps_per_generation), int(args.gradient_accumulation_steps)
    if accum % spg == 0:
        return spg
    if spg % accum == 0:
        return accum
    return 1


def _group_keys(batch: dict) -> list:
    ids, mask = batch["prompt_ids"], batch["prompt_mask"].bool()
    return [tuple(ids[i][mask[i]].tolist()) for i in range(ids.shape[0])]


def _regroup(batches: list[dict], window: int) -> list[dict]:
    """Within each window of consecutive micro-batches: rows sorted by prompt (groups in order of first appearance,
    TRL's order within a group), cut again into micro-batches of the same sizes."""
    out = []
    for w0 in range(0, len(batches), window):
        win = batches[w0:w0 + window]
        if len(win) == 1:
            out.extend(win)
            continue
        sizes = [int(b["prompt_ids"].shape[0]) for b in win]
        keys = [k for b in win for k in _group_keys(b)]
        first: dict = {}
        for i, k in enumerate(keys):
            first.setdefault(k, i)
        order = sorted(range(len(keys)), key=lambda i: (first[keys[i]], i))
        joined = {}
        for key, v in win[0].items():
            if isinstance(v, torch.Tensor) and v.ndim > 0:
                joined[key] = torch.cat([b[key] for b in win])[torch.tensor(order, device=v.device)]
            else:
                joined[key] = v  # None or a 0-d tensor (num_items_in_batch): the same in every micro-batch
        start = 0
        for n in sizes:
            out.append({k: (v[start:start + n] if isinstance(v, torch.Tensor) and v.ndim > 0 else v)
                        for k, v in joined.items()})
            start += n
    return out


def _placeable(batches: list[dict]) -> str | None:
    b = batches[0]
    if "prompt_ids" not in b or "prompt_mask" not in b:
        return "the batch has no prompt_ids / prompt_mask"
    for key, v in b.items():
        if key in _MULTIMODAL and v is not None:
            return f"the batch carries {key}"
        if v is not None and not isinstance(v, torch.Tensor):
            return f"the batch carries the non-tensor field {key!r}"
    return None


# --------------------------------------------------------------------------------------------- compile_trainer

def compile_trainer(trainer, *, group_placement: bool = True, **options):
    """Run the training forward of a constructed TRL ``GRPOTrainer`` / ``RLOOTrainer`` (or a subclass sharing their
    ``_get_per_token_logps_and_entropies``) through the replay backend; returns the trainer.

    ``options`` are the replay backend's (``torch.compile(..., backend="replay", options=options)``), validated
    here. ``group_placement`` (default True): each micro-batch of a generation batch holds whole prompt groups
    where that leaves every optimizer step's gradient unchanged (module docstring). Call it before ``train()``.
    """
    from torch._dynamo.eval_frame import OptimizedModule

    from replaycompile.backend import parse_options

    parse_options(options)  # unknown keys or values raise ValueError here, not at the first training step
    for name in ("_get_per_token_logps_and_entropies", "_prepare_inputs", "_metrics", "accelerator", "model"):
        if not hasattr(trainer, name):
            raise TypeError(f"compile_trainer: {type(trainer).__name__} has no {name!r}; it takes a TRL GRPOTrainer or "
                            f"RLOOTrainer (trl==1.16) or a subclass of one")
    if getattr(trainer, "_replay_compiled", False):
        raise ValueError("compile_trainer: this trainer is already compiled with replay")
    if isinstance(trainer.model, OptimizedModule) or any(isinstance(m, OptimizedModule) for m in trainer.model.modules()):
        raise ValueError(COMPILED_MODEL_MESSAGE if _replay_backend_options(trainer.model) is not None else
                         "compile_trainer: the trainer's model is a torch.compile'd module; TRL's fused LM head calls "
                         "the uncompiled backbone around it. Pass the uncompiled model to the trainer.")
    if getattr(trainer.args, "torch_compile", False):
        raise ValueError("compile_trainer: args.torch_compile=True compiles the model a second time (accelerate); "
                         "set torch_compile=False and let compile_trainer compile the training forward")

    if getattr(trainer.args, "activation_checkpointing", False) or getattr(trainer.args, "gradient_checkpointing", False):
        # GRPOConfig turns activation checkpointing on by default. Its regions, traced with dynamic shapes, hold
        # `Tensor.size` calls the replay analysis declines (every batch would run unpacked), and transformers 5.24
        # adds an input-embedding hook at every enable without removing it at disable, which TRL does around each
        # generation, so every step would recompile. The packed forward saves activations of unique tokens only.
        log.warning("replay: TRL integration: activation checkpointing turned off for the replayed policy (TRL's "
                    "default is on); gradients are unchanged")
        for flag in ("activation_checkpointing", "gradient_checkpointing"):
            if hasattr(trainer.args, flag):
                setattr(trainer.args, flag, False)
        policy = _hf_model(trainer, trainer.model)
        if getattr(policy, "is_activation_checkpointing", getattr(policy, "is_gradient_checkpointing", False)):
            (getattr(policy, "activation_checkpointing_disable", None) or policy.gradient_checkpointing_disable)()
        _drop_input_require_grads_hooks(policy)

    step = _compiled_step(options)
    policy = _hf_model(trainer, trainer.model)
    _install_forward(policy, step, trainer)
    if getattr(trainer, "ref_model", None) is not None:
        _install_forward(_hf_model(trainer, trainer.ref_model), step, trainer)

    original = trainer._get_per_token_logps_and_entropies
    warned: set = set()

    def _get_per_token_logps_and_entropies(model, input_ids, attention_mask, logits_to_keep, batch_size=None,
                                           compute_entropy=False, compute_aux_loss=False, **extra):
        why = None
        if compute_aux_loss:
            why = "the MoE load-balancing loss is requested"
        elif any(extra.get(k) is not None for k in extra):
            why = f"multimodal inputs ({', '.join(k for k in extra if extra[k] is not None)})"
        elif not getattr(_hf_model(trainer, model), "_replay_forward", False):
            why = "the model is not one compile_trainer prepared"
        if why is not None:
            if why not in warned:
                warned.add(why)
                log.warning("replay: TRL integration: running TRL's own forward: %s", why)
            return original(model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                            compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **extra)
        bs = batch_size or input_ids.size(0)
        logps, ents = [], []
        local = {"tokens_in": 0, "tokens_computed": 0, "applied": True, "fallback_reason": None, "calls": 0}
        if compute_entropy:  # how many prompt groups this forward holds (what replay can share)
            pm = attention_mask[:, :-logits_to_keep].bool()
            pi = input_ids[:, :-logits_to_keep]
            local["prompts"] = len({tuple(pi[i][pm[i]].tolist()) for i in range(pi.shape[0])})
        for start in range(0, input_ids.size(0), bs):
            ids, am = input_ids[start:start + bs], attention_mask[start:start + bs]
            before = _stats_call()
            with trainer.accelerator.autocast():
                lp, ent = model(input_ids=ids, attention_mask=am, **{_FORWARD_KW: (logits_to_keep, compute_entropy)})
            logps.append(lp)
            if compute_entropy:
                ents.append(ent)
            st = _fresh_stats(before)
            local["calls"] += 1
            if st is None:  # Dynamo ran the function without the backend (e.g. past its recompile limit)
                local["tokens_in"] += int(am.sum())
                local["tokens_computed"] += int(ids.numel())
                local["applied"] = False
                local["fallback_reason"] = "the replay backend did not run (no stats were recorded)"
            else:
                local["tokens_in"] += int(st["tokens_in"] if st.get("tokens_in") is not None else am.sum())
                local["tokens_computed"] += int(st["tokens_computed"] if st.get("tokens_computed") is not None
                                                else ids.numel())
                local["applied"] = local["applied"] and bool(st.get("applied"))
                local["fallback_reason"] = local["fallback_reason"] or st.get("fallback_reason")
        if compute_entropy:  # the training forward of _compute_loss (train or eval mode)
            _record(trainer, local)
        return torch.cat(logps), (torch.cat(ents) if compute_entropy else None), None

    trainer._get_per_token_logps_and_entropies = _get_per_token_logps_and_entropies

    if group_placement:
        prepare = trainer._prepare_inputs

        def _prepare_inputs(generation_batch):
            before = getattr(trainer, "_buffered_inputs", None)
            inputs = prepare(generation_batch)
            after = getattr(trainer, "_buffered_inputs", None)
            if not trainer.model.training or after is None or after is before:
                return inputs
            window = _placement_window(trainer)
            why = _placeable(after)
            if window > 1 and why is None:
                trainer._buffered_inputs = _regroup(after, window)
                inputs = trainer._buffered_inputs[trainer._step % trainer.args.steps_per_generation]
            elif window > 1 and why not in warned:
                warned.add(why)
                log.warning("replay: TRL integration: group placement skipped: %s", why)
            return inputs

        trainer._prepare_inputs = _prepare_inputs

    trainer.replay_stats = collections.deque(maxlen=10000)
    trainer.replay_options = dict(options)
    trainer.replay_group_placement = bool(group_placement)
    trainer._replay_compiled = True
    return trainer


# ------------------------------------------------------------------------------------------------- the guard

_GUARDED = ("trl.trainer.grpo_trainer", "trl.trainer.rloo_trainer")


def _replay_backend_options(module) -> dict | None:
    """The options of a module compiled with ``torch.compile(..., backend="replay")``, None for anything else."""
    from torch._dynamo.eval_frame import OptimizedModule

    if not isinstance(module, OptimizedModule):
        return None
    x = getattr(getattr(module, "dynamo_ctx", None), "callback", None)
    for _ in range(8):  # CatchErrorsWrapper -> ConvertFrame -> WrapBackendDebug -> _TorchCompileWrapper -> fn
        if x is None:
            return None
        if getattr(x, "compiler_name", None) == "replay":
            return dict((getattr(x, "kwargs", None) or {}).get("options") or {})
        x = getattr(x, "_torchdynamo_orig_backend", None)
    return None


def _guard_module(mod) -> None:
    fn = getattr(mod, "add_fused_lm_head", None)
    if fn is None or getattr(fn, "_replay_guard", False):
        return

    @functools.wraps(fn)
    def add_fused_lm_head(model, *args, **kwargs):
        if _replay_backend_options(model) is not None:
            raise ValueError(COMPILED_MODEL_MESSAGE)
        return fn(model, *args, **kwargs)

    add_fused_lm_head._replay_guard = True
    mod.add_fused_lm_head = add_fused_lm_head


class _GuardFinder(importlib.abc.MetaPathFinder):
    """Guards TRL's trainer modules when they are imported after replaycompile (and does nothing else)."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in _GUARDED:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module

        def exec_and_guard(module):
            exec_module(module)
            _guard_module(module)

        loader.exec_module = exec_and_guard
        return spec


_finder = _GuardFinder()


def install_guard() -> None:
    """Refuse ``GRPOTrainer(model=torch.compile(model, backend="replay"))`` (and RLOO's) with a message pointing to
    ``compile_trainer``: TRL's trainer modules get a checking ``add_fused_lm_head`` (the function their ``__init__``
    calls on the model), now if loaded, else when imported. Idempotent; other models pass through unchanged."""
    for name in _GUARDED:
        if name in sys.modules:
            _guard_module(sys.modules[name])
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
