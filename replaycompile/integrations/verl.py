"""verl: the actor of verl's FSDP training engine (``FSDPEngineWithLMHead``, verl 0.9) through the replay backend.

    from replaycompile.integrations.verl import compile_engine

    compile_engine(engine, inner="inductor")     # the engine verl built; replay backend options as keywords

Where to call it: after the engine is initialised (``engine.initialize()``), e.g. in your worker once
``TrainingWorker`` has built ``self.engine``. What it changes, on that engine instance only (no verl class or
function is modified):

- ``forward_step``, which every forward of the engine goes through (old, reference and current log-probs in
  ``infer_batch``, the policy update in ``train_batch``), runs the model through one ``torch.compile(...,
  backend="replay")`` function. verl's micro-batch holds its sequences without padding (nested ``input_ids``,
  ``position_ids`` restarting per sequence): it is laid out as the rows verl's rollout produced (prompt left-padded,
  response right-padded, the same position ids), so rows sharing a prompt are a prefix tree the backend can see,
  and the LM head runs on the response's predicting positions only (``logits_to_keep``), on the unique ones once
  packed. Log-probs (and entropies when asked) are verl's formulas (``logprobs_from_logits``,
  ``entropy_from_logits``, temperature as ``_scale_logits_by_temperature``) and are handed back in verl's layout
  (nested, one value per token of each sequence), so verl's own loss function runs unchanged on them
  (``ppo_loss``: every ``compute_policy_loss`` variant, ``agg_loss`` mode, entropy and KL term), and so do its
  metrics and its ``loss.backward()``. Positions outside the response (which verl's readers,
  ``no_padding_2_padding``, never read) hold NaN, so a reader of them fails loudly instead of reading zeros.
- Micro-batches keep GRPO groups whole (``group_placement=True``): where the mini-batch's rows come in runs of
  ``G`` identical prompts and verl's dynamic batch size is on, the engine's own ``force_group_size`` is set to
  ``G`` for this call (verl's balancer then moves whole groups), but only where the loss does not depend on how
  rows are split into micro-batches (``ppo_loss`` normalises by the global batch, except
  ``seq-mean-token-sum-norm`` without ``loss_scale_factor``); with a fixed ``micro_batch_size_per_gpu`` that is
  not a multiple of ``G`` a warning says that groups are split (the micro-batch size is the user's memory budget).
- After each forward, ``replaycompile.last_stats()`` goes into the micro-batch's metrics (``replay/tokens_in``,
  ``replay/tokens_computed``, ``replay/applied``) and ``engine.replay_stats``.

Micro-batches it does not cover run verl's own ``forward_step``, with one warning per reason: Ulysses sequence
parallelism, fused kernels, multimodal inputs, distillation, ``calculate_sum_pi_squared``, 3-D (mrope) position
ids, a pad mode other than no-padding, and loss functions other than ``ppo_loss`` (a loss that reads prompt
positions, as ``sft_loss`` does, needs the full-sequence log-probs this path does not compute).
"""

from __future__ import annotations

import functools
import logging
from contextlib import nullcontext

import torch

from replaycompile.inner import own_code
from .trl import _fresh_stats, _stats_call  # the stats of one forward, as the TRL integration reads them

log = logging.getLogger("replaycompile")

__all__ = ["compile_engine", "METRIC_TOKENS_IN", "METRIC_TOKENS_COMPUTED", "METRIC_APPLIED"]

METRIC_TOKENS_IN = "replay/tokens_in"
METRIC_TOKENS_COMPUTED = "replay/tokens_computed"
METRIC_APPLIED = "replay/applied"


# ------------------------------------------------------------------------------------------ the compiled step

def _verl_logps(model, input_ids, attention_mask, position_ids, response_mask, temperature, compute_entropy):
    """verl's log-probs of the response tokens ``[B, R]`` (and entropies), zero where the response is padding, from
    rows laid out as the rollout made them (``R = response_mask.shape[1]`` response columns on the right). The LM
    head sees only the ``R`` predicting positions (``logits_to_keep``), so the packed graph runs it on the unique
    ones; ``temperature`` is ``None`` (verl's unit-temperature fast path) or ``[B, 1, 1]``."""
    r = response_mask.shape[1]
    out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False,
                logits_to_keep=r + 1)
    logits = out.logits[:, :-1]
    if temperature is not None:  # verl's _scale_logits_by_temperature
        logits = logits / temperature.clamp(min=1e-8).to(logits.dtype)
    labels = input_ids[:, -r:]
    if logits.dtype in (torch.float32, torch.float64):  # verl's logprobs_from_logits_v2, batched
        logps = logits.gather(-1, labels.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)
    else:  # its half-precision branch: log_softmax, then the gather
        logps = torch.log_softmax(logits, dim=-1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    padded = response_mask == 0
    logps = logps.masked_fill(padded, 0.0)
    if not compute_entropy:
        return logps, None
    pd = torch.softmax(logits, dim=-1)  # verl's entropy_from_logits
    entropy = torch.logsumexp(logits, dim=-1) - torch.sum(pd * logits, dim=-1)
    return logps, entropy.masked_fill(padded, 0.0)


_steps: dict = {}


def _compiled_step(options: dict):
    """One compiled ``_verl_logps`` per options set and process (a code object of its own each: Dynamo caches per
    code object), shared by engines of the same model structure."""
    key = tuple(sorted((k, repr(v)) for k, v in options.items()))
    if key not in _steps:
        fn = own_code(_verl_logps, "_verl_logps")
        _steps[key] = torch.compile(fn, backend="replay", options=dict(options))
    return _steps[key]


# ------------------------------------------------------------------------------------------------ layout

def _lengths(micro_batch):
    """Prompt and response length of each sequence, as verl's ``no_padding_2_padding`` reads them."""
    prompts, responses = micro_batch["prompts"], micro_batch["responses"]
    if prompts.is_nested:
        return prompts.offsets().diff(), responses.offsets().diff()
    am = micro_batch["attention_mask"]
    return am[:, : prompts.shape[1]].sum(dim=1), am[:, prompts.shape[1]:].sum(dim=1)


def rows_from_nested(micro_batch, pad_token_id: int = 0):
    """The rollout's rows from verl's no-padding micro-batch: ``input_ids``, ``attention_mask`` and ``position_ids``
    ``[B, P + R]`` (prompt right-aligned in ``P`` columns, response left-aligned in ``R``), the response mask
    ``[B, R]``, and ``flat_index`` of the response's predicting positions in verl's packed layout (a token's
    log-prob sits at the position before it, as verl rolls its labels) in row order."""
    ids_nt, pos_nt = micro_batch["input_ids"], micro_batch["position_ids"]
    offsets = ids_nt.offsets()
    seq_lens = offsets.diff()
    prompt_lens, resp_lens = _lengths(micro_batch)
    prompt_lens, resp_lens = prompt_lens.to(offsets.device), resp_lens.to(offsets.device)
    if not torch.equal(prompt_lens + resp_lens, seq_lens):
        raise ValueError("verl micro-batch: prompt + response lengths do not add up to the sequence lengths "
                         f"({(prompt_lens + resp_lens).tolist()} vs {seq_lens.tolist()})")
    b = seq_lens.numel()
    p, r = int(prompt_lens.max()), int(resp_lens.max())
    row = torch.repeat_interleave(torch.arange(b, device=offsets.device), seq_lens)
    t = torch.arange(int(offsets[-1]), device=offsets.device) - offsets[:-1][row]  # index inside the sequence
    pl = prompt_lens[row]
    col = torch.where(t < pl, p - pl + t, p + (t - pl))
    ids = ids_nt.values().new_full((b, p + r), pad_token_id)
    ids[row, col] = ids_nt.values()
    am = torch.zeros(b, p + r, dtype=torch.long, device=offsets.device)
    am[row, col] = 1
    pos = torch.zeros(b, p + r, dtype=pos_nt.values().dtype, device=offsets.device)
    pos[row, col] = pos_nt.values()
    resp_mask = am[:, p:]
    j = torch.arange(r, device=offsets.device)
    keep = j.unsqueeze(0) < resp_lens.unsqueeze(1)
    flat = offsets[:-1].unsqueeze(1) + prompt_lens.unsqueeze(1) - 1 + j.unsqueeze(0)
    return ids, am, pos, resp_mask, flat[keep]


def _to_verl_layout(values_br, resp_mask, flat_index, offsets, total: int):
    """``[B, R]`` response values into verl's nested per-token layout (NaN outside the response slice)."""
    flat = values_br.new_full((total,), float("nan"))
    flat = flat.index_put((flat_index,), values_br[resp_mask.bool()])
    return torch.nested.nested_tensor_from_jagged(flat, offsets)


# --------------------------------------------------------------------------------------------- the engine

def _unsupported(engine, micro_batch, loss_function) -> str | None:
    """Why this micro-batch runs verl's own ``forward_step``, or None."""
    from verl.utils import tensordict_utils as tu
    from verl.utils.dataset.dataset_utils import DatasetPadMode

    def get(key, default=None):
        return tu.get_non_tensor_data(data=micro_batch, key=key, default=default)

    if get("pad_mode", DatasetPadMode.NO_PADDING) != DatasetPadMode.NO_PADDING:
        return f"pad_mode {get('pad_mode')} (only verl's no-padding mode is laid out)"
    if getattr(engine, "use_ulysses_sp", False):
        return "Ulysses sequence parallelism (each rank holds a slice of the packed sequence, not whole rows)"
    if get("use_fused_kernels", False):
        return "use_fused_kernels (verl's fused LM head computes the log-probs inside the model)"
    if get("distillation_use_topk", False) or get("distillation_only", False):
        return "distillation (its loss reads the teacher's top-k at every position)"
    if get("calculate_sum_pi_squared", False):
        return "calculate_sum_pi_squared"
    if len(micro_batch.get("multi_modal_inputs", [])):
        return "multimodal inputs"
    if micro_batch["position_ids"].dim() == 3:
        return "3-D (mrope) position ids"
    if "prompts" not in micro_batch.keys() or "responses" not in micro_batch.keys():
        return "no prompts/responses in the micro-batch (the response slice is not known)"
    if loss_function is not None:
        from verl.workers.utils.losses import ppo_loss

        fn = loss_function.func if isinstance(loss_function, functools.partial) else loss_function
        if fn is not ppo_loss:
            return (f"loss function {getattr(fn, '__qualname__', fn)!r}: only verl's ppo_loss is known to read the "
                    "response positions alone")
    return None


def _warn_once(engine, reason: str) -> None:
    if reason not in engine._replay_declined:
        engine._replay_declined.add(reason)
        log.warning("replay: verl micro-batch runs verl's own forward_step: %s", reason)


def _forward_step(engine, original, step, micro_batch, loss_function, forward_only):
    """verl's ``FSDPEngineWithLMHead.forward_step`` with the model and the log-prob head through ``step``."""
    from verl.utils import tensordict_utils as tu
    from verl.utils.device import get_device_id, get_device_name
    from verl.workers.engine.utils import detach_tree

    reason = _unsupported(engine, micro_batch, loss_function)
    if reason is not None:
        _warn_once(engine, reason)
        engine.replay_stats.append(dict(applied=False, reason=reason))
        return original(micro_batch, loss_function, forward_only)
    micro_batch = micro_batch.to(get_device_id())
    ids, am, pos, resp_mask, flat_index = rows_from_nested(
        micro_batch, pad_token_id=tu.get_non_tensor_data(data=micro_batch, key="pad_token_id", default=0))
    temperature = micro_batch["temperature"]
    from verl.workers.engine.fsdp.transformer_impl import _is_scalar_unit_temperature

    if _is_scalar_unit_temperature(temperature):
        temp = None
    else:
        temp = temperature if isinstance(temperature, torch.Tensor) else torch.tensor([temperature] * ids.shape[0])
        temp = temp.to(device=ids.device, dtype=torch.float32).reshape(-1, 1, 1)
    compute_entropy = bool(tu.get_non_tensor_data(data=micro_batch, key="calculate_entropy", default=False))
    for t in (ids, am, pos, resp_mask):  # batch and lengths change between micro-batches: one graph for all
        torch._dynamo.maybe_mark_dynamic(t, 0)
        torch._dynamo.maybe_mark_dynamic(t, 1)
    autocast_dtype = getattr(engine, "_autocast_dtype", torch.bfloat16)  # as verl's forward_step
    autocast_ctx = (nullcontext() if autocast_dtype == torch.float32
                    else torch.autocast(device_type=get_device_name(), dtype=autocast_dtype))
    before = _stats_call()
    with autocast_ctx:
        logps, entropy = step(engine.module, ids, am, pos, resp_mask, temp, compute_entropy)
        offsets = micro_batch["input_ids"].offsets()
        total = int(offsets[-1])
        model_output = {"log_probs": _to_verl_layout(logps, resp_mask, flat_index, offsets, total)}
        if compute_entropy:
            model_output["entropy"] = _to_verl_layout(entropy, resp_mask, flat_index, offsets, total)
        if loss_function is not None:
            loss, metrics = loss_function(model_output=model_output, data=micro_batch,
                                          dp_group=engine.get_data_parallel_group())
        else:
            loss = torch.tensor(1.0, device=get_device_name())
            metrics = {}
    st = _fresh_stats(before)
    local = dict(applied=bool(st and st.get("applied")), tokens_in=int(am.sum()),
                 tokens_computed=int(st["tokens_computed"]) if st and st.get("tokens_computed") is not None
                 else int(am.sum()), reason=(st or {}).get("fallback_reason"))
    engine.replay_stats.append(local)
    metrics = dict(metrics)
    metrics[METRIC_TOKENS_IN] = local["tokens_in"]
    metrics[METRIC_TOKENS_COMPUTED] = local["tokens_computed"]
    metrics[METRIC_APPLIED] = float(local["applied"])
    return loss, {"model_output": detach_tree(model_output), "loss": loss.detach().item(), "metrics": metrics}


# ------------------------------------------------------------------------------------------- group placement

def group_size(data) -> int:
    """``G`` where the batch's rows come in consecutive runs of ``G`` identical prompts (verl's rollout repeats each
    prompt ``rollout.n`` times, interleaved), else 1."""
    prompts = data["prompts"]
    if prompts.is_nested:
        rows = [t for t in prompts.unbind()]
    else:
        am = data["attention_mask"][:, : prompts.shape[1]].bool()
        rows = [prompts[i][am[i]] for i in range(prompts.shape[0])]
    runs, i = [], 0
    while i < len(rows):
        j = i + 1
        while j < len(rows) and torch.equal(rows[j], rows[i]):
            j += 1
        runs.append(j - i)
        i = j
    return runs[0] if runs and len(set(runs)) == 1 and runs[0] > 1 else 1


def _placement(engine, data, loss_function, forward_only) -> tuple[int | None, str | None]:
    """(``force_group_size`` to set, or None; a warning to give, or None)."""
    from verl.utils import tensordict_utils as tu

    if tu.get_non_tensor_data(data=data, key="force_group_size", default=1) != 1:
        return None, None  # the user's own
    if "prompts" not in data.keys():
        return None, None
    g = group_size(data)
    if g <= 1 or len(data) % g:
        return None, None
    if not forward_only and loss_function is not None:
        cfg = loss_function.keywords.get("config") if isinstance(loss_function, functools.partial) else None
        mode = getattr(cfg, "loss_agg_mode", None)
        if mode is None:
            return None, None
        if mode == "seq-mean-token-sum-norm" and getattr(cfg, "loss_scale_factor", None) is None:
            return None, ("replay: groups are not re-placed: loss_agg_mode='seq-mean-token-sum-norm' without "
                          "loss_scale_factor normalises each micro-batch by its own width")
    if tu.get_non_tensor_data(data=data, key="use_dynamic_bsz", default=True):
        return g, None
    mbs = tu.get_non_tensor_data(data=data, key="micro_batch_size_per_gpu", default=None)
    if mbs is not None and int(mbs) % g:
        return None, (f"replay: micro_batch_size_per_gpu={mbs} splits the groups of {g} rollouts that share a "
                      f"prompt, so their prefix is computed once per micro-batch: use a multiple of {g} or "
                      "use_dynamic_bsz")
    return None, None


def _forward_backward_batch(engine, original, group_placement, data, loss_function, forward_only=False):
    from verl.utils import tensordict_utils as tu

    if group_placement:
        g, warning = _placement(engine, data, loss_function, forward_only)
        if warning and warning not in engine._replay_declined:
            engine._replay_declined.add(warning)
            log.warning(warning)
        if g is not None:
            tu.assign_non_tensor(data, force_group_size=g)
            try:
                return original(data, loss_function, forward_only)
            finally:
                tu.assign_non_tensor(data, force_group_size=1)
    return original(data, loss_function, forward_only)


def compile_engine(engine, *, group_placement: bool = True, **options):
    """Run ``engine`` (verl's ``FSDPEngineWithLMHead``, initialised) through the replay backend; ``options`` are the
    backend's (``replaycompile.parse_options``). Returns the engine. Calling it twice is a no-op."""
    from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithLMHead, FSDPEngineWithValueHead

    if not isinstance(engine, FSDPEngineWithLMHead) or isinstance(engine, FSDPEngineWithValueHead):
        raise TypeError(f"compile_engine takes verl's FSDPEngineWithLMHead (the actor / reference engine), not "
                        f"{type(engine).__qualname__}")
    if getattr(engine, "_replay_compiled", False):
        return engine
    from replaycompile import parse_options

    parse_options(options)  # a bad option fails here, not at the first forward
    step = _compiled_step(options)
    engine.replay_stats = []
    engine._replay_declined = set()
    engine.forward_step = functools.partial(_forward_step, engine, engine.forward_step, step)
    engine.forward_backward_batch = functools.partial(_forward_backward_batch, engine, engine.forward_backward_batch,
                                                      group_placement)
    engine._replay_compiled = True
    return engine
