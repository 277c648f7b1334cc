"""Rollouts for RL: batched sampling from a Hugging Face causal LM with a static KV cache, dense or Sparrow-sparse.

``generate`` prefills the left-padded prompts densely, then decodes one token per step against a preallocated
``StaticCache`` (transformers' default cache copies itself every step, which at long context costs more than
attention). With a ``schedule`` the decode step is compiled with ``backend="replay"`` and that schedule, so
every sparse layer's attention reads only its budgeted pages (see ``replaycompile.sparrow``).
"""

from __future__ import annotations

import copy
import sys
import time
import weakref
from dataclasses import dataclass

import torch
from torch import Tensor

from replaycompile.stats import warn_once

from .graph import SparseSteps
from replaycompile.kernels.block_sparse import cdiv
from replaycompile.kernels.sparse_decode import SparseDecodeState

__all__ = ["Rollout", "DecodeSession", "generate"]


@dataclass
class Rollout:
    """What ``generate`` returns.

    sequences [B, T + L]: the prompts as given (left-padded) followed by the completions; positions after a row's
    EOS hold the pad token. logprobs [B, L] float32: the log-probability of each sampled token under the
    distribution it was sampled from (``log_softmax(logits / temperature)``, before top-p; temperature 1 for
    greedy); 0 where the mask is 0. completion_mask [B, L]: 1 for generated tokens up to and including EOS.
    """

    sequences: Tensor
    logprobs: Tensor
    completion_mask: Tensor
    prompt_length: int
    logits: Tensor | None = None  # [B, L, V] float32 when asked for (acceptance measurements)
    # with ``reference=``: the reference decoder's logits [B, L, V] float32 for the same tokens (teacher-forced)
    reference_logits: Tensor | None = None
    # seconds: ``prefill`` (the prompts' dense prefill, once per prompt), ``step`` (each decode step of the
    # rollout) and ``reference_step`` (each of the reference's, interleaved with the rollout's)
    timing: dict | None = None

    @property
    def completions(self) -> Tensor:
        return self.sequences[:, self.prompt_length:]


_compiled: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


# Every compiled decode step of a model shares the model's forward code object, and Dynamo keeps at most
# ``recompile_limit`` graphs per code object before it silently runs the function eagerly (dense). Each
# (schedule, batch, cache length) needs a graph, so raise the limit while stepping and check the step ran sparse.
_RECOMPILE_LIMIT = 64
_CACHE_ROUND = 1024  # cache lengths are rounded up to this, so prompts of similar length share a graph


def _decode_step(model, schedule, inner: str, attention: str):
    if schedule is None:
        return model
    per_model = _compiled.setdefault(model, {})
    key = (id(schedule), inner, attention)
    if key not in per_model:
        compiled = torch.compile(model, backend="replay", dynamic=False,
                                 options={"schedule": schedule, "inner": inner, "attention": attention})

        def step(**kw):
            with torch._dynamo.config.patch(recompile_limit=max(_RECOMPILE_LIMIT,
                                                                torch._dynamo.config.recompile_limit)), \
                    SparseSteps() as ran:
                out = compiled(**kw)
            if not ran.steps:
                _warn_dense_fallback()
            return out

        per_model[key] = (schedule, step)
    return per_model[key][1]


_DENSE_REFERENCE: list = []


def _dense_reference():
    """One dense schedule object for every ``reference="dense"`` rollout: decode steps are compiled per schedule
    object, so a new one per call would compile again."""
    if not _DENSE_REFERENCE:
        from .schedule import SparrowSchedule

        _DENSE_REFERENCE.append(SparrowSchedule.dense(dense_layers=()))
    return _DENSE_REFERENCE[0]




def _warn_dense_fallback() -> None:
    warn_once("rollout dense fallback",
              "rollout: a decode step ran without the Sparrow rewrite (torch.compile fell back to eager, e.g. after "
              "too many recompiles; TORCH_LOGS=recompiles says why): these tokens were decoded densely")


def _cache_kwarg(model) -> str:
    """The forward argument that takes the KV cache: ``cache`` since transformers renamed it (5.2x; passing
    ``past_key_values`` there warns that it goes in 5.40), ``past_key_values`` before."""
    import inspect

    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # a forward without a readable signature: the older name is the safe one
        return "past_key_values"
    return "cache" if "cache" in params else "past_key_values"


def _eos_ids(model, eos_token_id) -> list[int]:
    if eos_token_id is None:
        gc = getattr(model, "generation_config", None)
        eos_token_id = getattr(gc, "eos_token_id", None) if gc is not None else None
        if eos_token_id is None:
            eos_token_id = getattr(model.config, "eos_token_id", None)
    if eos_token_id is None:
        return []
    return [eos_token_id] if isinstance(eos_token_id, int) else list(eos_token_id)


def _check_left_padded(attention_mask: Tensor) -> None:
    m = attention_mask.bool()
    # left padding: once a row has a real token, every later token is real
    bad = (m.long().cummax(-1).values.bool() & ~m).any(-1)
    if bool(bad.any()):
        row = int(torch.nonzero(bad)[0])
        raise ValueError(f"rollout.generate: prompts must be left-padded, but attention_mask row {row} has a pad "
                         f"after a real token: {attention_mask[row].tolist()}")
    empty = ~m.any(-1)
    if bool(empty.any()):
        raise ValueError(f"rollout.generate: prompt row {int(torch.nonzero(empty)[0])} has no real token")


def _sample(logits: Tensor, temperature: float, top_p: float, generator) -> tuple[Tensor, Tensor]:
    logits = logits.float()
    if temperature == 0:
        tok = logits.argmax(-1)
        return tok, logits.log_softmax(-1).gather(-1, tok[:, None]).squeeze(-1)
    logp = (logits / temperature).log_softmax(-1)
    probs = logp.exp()
    if top_p < 1.0:
        sp, si = probs.sort(-1, descending=True)
        drop = sp.cumsum(-1) - sp > top_p  # keep the smallest prefix whose mass reaches top_p
        sp = sp.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter_(-1, si, sp)
    tok = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
    return tok, logp.gather(-1, tok[:, None]).squeeze(-1)


class DecodeSession:
    """A batch's static KV cache after a dense prefill, stepped one token at a time (dense, or sparse with a
    schedule). ``logits`` holds the next-token logits [B, V] of the last position fed.

    The session owns what sparse decoding keeps between its steps (``decode_state``: the page statistics of its
    cache, scratch buffers) and makes it current around each step; a clone starts with a fresh one."""

    def __init__(self, model, input_ids: Tensor, attention_mask: Tensor, max_len: int, schedule=None,
                 inner: str = "eager", attention: str = "auto", chunk: int = 4096):
        from transformers import StaticCache

        _check_left_padded(attention_mask)
        dev = input_ids.device
        b, t = input_ids.shape
        # a sparse step gathers whole pages: a cache not sized in pages would be padded and copied every step
        page = max(_CACHE_ROUND, schedule.page_size) if schedule is not None else 16
        self.max_len = cdiv(max_len, page) * page
        self.model, self.t, self.fed = model, 0, 0
        self.cache_kwarg = _cache_kwarg(model)
        self.decode_state = SparseDecodeState()
        self.cache = StaticCache(config=model.config, max_cache_len=self.max_len)
        self.am = torch.zeros(b, self.max_len, dtype=attention_mask.dtype, device=dev)
        self.am[:, :t] = attention_mask
        self.am[:, t:] = 1  # later slots; the cache's causal mask hides the ones not written yet
        pos = (attention_mask.long().cumsum(-1) - 1).clamp_min(0)
        self.next_pos = pos[:, :1] * 0  # position of the first token: set by extend
        self._prefill(input_ids, pos, chunk)
        self.set_schedule(schedule, inner, attention)

    @torch.no_grad()
    def _prefill(self, ids: Tensor, pos: Tensor, chunk: int) -> None:
        # dense, in chunks: the model's [B, 1, q, L] mask is q x L booleans
        start = self.t
        for c0 in range(0, ids.shape[1], chunk):
            c1 = min(c0 + chunk, ids.shape[1])
            out = self.model(input_ids=ids[:, c0:c1], attention_mask=self.am[:, :start + c1],
                             position_ids=pos[:, c0:c1], cache_position=torch.arange(start + c0, start + c1,
                                                                                       device=ids.device),
                             use_cache=True, logits_to_keep=1, **{self.cache_kwarg: self.cache})
        self.logits = out.logits[:, -1]
        self.t = start + ids.shape[1]
        self.next_pos = pos[:, -1:] + 1

    def extend(self, tokens: Tensor, chunk: int = 4096) -> Tensor:
        """Feed more tokens [B, n] densely (a chunked prefill, whatever the schedule); returns the next logits."""
        if self.fed:
            raise ValueError("DecodeSession.extend: only before the first decode step")
        if self.t + tokens.shape[1] > self.max_len:
            raise ValueError(f"DecodeSession.extend: {self.t} + {tokens.shape[1]} tokens exceed the cache's "
                             f"{self.max_len}")
        pos = self.next_pos + torch.arange(tokens.shape[1], device=tokens.device)[None]
        self._prefill(tokens, pos, chunk)
        return self.logits

    def set_schedule(self, schedule, inner: str = "eager", attention: str = "auto") -> None:
        if schedule is not None and self.max_len % schedule.page_size:
            warn_once(("cache size", self.max_len, schedule.page_size),
                      "DecodeSession: the cache holds %d tokens, not a whole number of the schedule's %d-token "
                      "pages, so every sparse step pads and copies it: pass the schedule when creating the session "
                      "(its cache is then sized in pages)", self.max_len, schedule.page_size)
        self.schedule = schedule
        self.step_fn = _decode_step(self.model, schedule, inner, attention)

    def clone(self) -> "DecodeSession":
        other = copy.copy(self)
        other.cache = copy.deepcopy(self.cache)
        other.decode_state = SparseDecodeState()  # its page statistics are rebuilt from its own cache
        return other

    def repeat_interleave(self, repeats: int) -> "DecodeSession":
        """A session of ``B * repeats`` rows, row ``i * repeats + j`` holding row i's cache (and its logits):
        GRPO's G completions of a prompt after one prefill of it. Only before the first decode step."""
        if self.fed:
            raise ValueError("DecodeSession.repeat_interleave: only before the first decode step")
        other = self.clone()
        for layer in other.cache.layers:
            if getattr(layer, "is_initialized", False):
                layer.keys = layer.keys.repeat_interleave(repeats, 0)
                layer.values = layer.values.repeat_interleave(repeats, 0)
                if hasattr(layer, "max_batch_size"):
                    layer.max_batch_size = layer.keys.shape[0]
                if hasattr(layer, "batch_size"):
                    layer.batch_size = layer.keys.shape[0]
        other.am = self.am.repeat_interleave(repeats, 0)
        other.next_pos = self.next_pos.repeat_interleave(repeats, 0)
        other.logits = self.logits.repeat_interleave(repeats, 0)
        return other

    def position(self) -> int:
        """Tokens in the cache (prompt, extensions and decoded steps)."""
        return self.t + self.fed

    @torch.no_grad()
    def step(self, tokens: Tensor) -> Tensor:
        if self.position() >= self.max_len:
            raise ValueError(f"DecodeSession: the cache holds {self.max_len} tokens; it is full")
        with self.decode_state.active():
            out = self.step_fn(input_ids=tokens[:, None], attention_mask=self.am, position_ids=self.next_pos,
                               cache_position=torch.tensor([self.t + self.fed], device=tokens.device),
                               use_cache=True, **{self.cache_kwarg: self.cache})
        self.fed += 1
        self.next_pos = self.next_pos + 1
        self.logits = out.logits[:, -1]
        return self.logits


@torch.no_grad()
def generate(model, input_ids: Tensor, attention_mask: Tensor | None = None, *, max_new_tokens: int,
             schedule=None, temperature: float = 1.0, top_p: float = 1.0, generator: torch.Generator | None = None,
             eos_token_id: int | list[int] | None = None, pad_token_id: int | None = None, inner: str = "eager",
             attention: str = "auto", return_logits: bool = False, progress: bool | None = None, group: int = 1,
             reference=None) -> Rollout:
    """Sample ``max_new_tokens`` per row (fewer once every row has emitted EOS).

    ``temperature=0`` is greedy (the same tokens as ``model.generate(do_sample=False)`` for a dense rollout);
    sampling is reproducible given ``generator``. ``schedule`` (a ``SparrowSchedule``) decodes sparsely; the decode
    step is compiled once per (model, schedule) with ``inner`` as the inner compiler (``"eager"`` by default: the
    rewritten graph runs as is, cache writes in place; ``"inductor"`` fuses the rest of the step). ``progress`` (default: for
    more than 256 new tokens) prints tokens/s to stderr.

    ``group``: completions per prompt (GRPO's G). Each prompt is prefilled once and its cache repeated, so the
    rollout has ``B * group`` rows, row ``i * group + j`` the j-th completion of prompt i (``sequences`` repeats
    the prompts the same way).

    ``reference``: a second decoder fed the rollout's own tokens (teacher forcing), one step after each rollout
    step, from a copy of the same prefilled cache: ``"dense"`` (the same compiled step with every page,
    ``SparrowSchedule.dense(dense_layers=())``: exact dense attention over the written slots), ``"eager"`` (the
    model's own forward) or a schedule. Its logits come back in ``reference_logits`` (the distributions the
    acceptance ``alpha`` compares against ``logits``; ``return_logits`` is implied), and its step times beside the
    rollout's in ``timing``: a dense decode at the same batch and lengths, interleaved with the sparse one, is
    the fair throughput baseline. The first token of a row is sampled from the prefill's logits, the same on
    both sides.
    """
    if max_new_tokens < 1:
        raise ValueError(f"rollout.generate: max_new_tokens={max_new_tokens} must be at least 1")
    if temperature < 0 or not (0 < top_p <= 1):
        raise ValueError(f"rollout.generate: temperature={temperature} must be >= 0 and top_p={top_p} in (0, 1]")
    if group < 1:
        raise ValueError(f"rollout.generate: group={group} must be at least 1")
    dev = input_ids.device
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids)
    eos = torch.tensor(_eos_ids(model, eos_token_id), dtype=torch.long, device=dev)
    if pad_token_id is None:
        pad_token_id = getattr(model.config, "pad_token_id", None)
        pad_token_id = pad_token_id if pad_token_id is not None else (int(eos[0]) if eos.numel() else 0)
    if isinstance(reference, str):
        if reference not in ("dense", "eager"):
            raise ValueError(f"rollout.generate: reference={reference!r} must be 'dense', 'eager', a schedule or None")
        reference = _dense_reference() if reference == "dense" else False
    measure = reference is not None
    return_logits = return_logits or measure
    was_training = model.training
    model.eval()
    timing = dict(prefill=0.0, step=[], reference_step=[])
    try:
        t = input_ids.shape[1]
        t0 = time.perf_counter()
        sess = DecodeSession(model, input_ids, attention_mask, t + max_new_tokens, schedule, inner, attention)
        timing["prefill"] = time.perf_counter() - t0
        ref = None
        if measure:  # before the repeat: one copy of each prompt's cache, repeated below
            ref = sess.clone()
            ref.set_schedule(None if reference is False else reference, inner, attention)
        if group > 1:
            sess = sess.repeat_interleave(group)
            ref = ref.repeat_interleave(group) if ref is not None else None
            input_ids = input_ids.repeat_interleave(group, 0)
        b = input_ids.shape[0]
        toks, logps, masks, all_logits, ref_logits = [], [], [], [], []
        done = torch.zeros(b, dtype=torch.bool, device=dev)
        logits = sess.logits
        if ref is not None:
            ref_logits.append(ref.logits.float())
        show = progress if progress is not None else max_new_tokens > 256
        t0 = time.perf_counter()
        for i in range(max_new_tokens):
            tok, lp = _sample(logits, temperature, top_p, generator)
            live = ~done
            tok = torch.where(live, tok, torch.full_like(tok, pad_token_id))
            toks.append(tok)
            logps.append(torch.where(live, lp, torch.zeros_like(lp)))
            masks.append(live.to(torch.long))
            if return_logits:
                all_logits.append(logits.float())
            if eos.numel():
                done = done | (live & torch.isin(tok, eos))
            if bool(done.all()) or i == max_new_tokens - 1:
                break
            s0 = time.perf_counter()
            logits = sess.step(tok)
            s1 = time.perf_counter()
            timing["step"].append(s1 - s0)
            if ref is not None:
                ref_logits.append(ref.step(tok).float())
                timing["reference_step"].append(time.perf_counter() - s1)
            if show and (i + 1) % 256 == 0:
                rate = (i + 1) * b / (time.perf_counter() - t0)
                print(f"rollout: {i + 1}/{max_new_tokens} tokens per row, {rate:.1f} tokens/s "
                      f"({int(done.sum())}/{b} rows finished)", file=sys.stderr, flush=True)
    finally:
        model.train(was_training)
    completions = torch.stack(toks, 1)
    return Rollout(sequences=torch.cat([input_ids, completions], 1), logprobs=torch.stack(logps, 1),
                   completion_mask=torch.stack(masks, 1), prompt_length=t,
                   logits=torch.stack(all_logits, 1) if return_logits else None,
                   reference_logits=torch.stack(ref_logits, 1) if measure else None, timing=timing)
