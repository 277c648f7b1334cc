"""A memory model of one GRPO training step (forward + loss + backward) per rank, for the replay backend and the
eager baselines of ``bench/long_context.py``.

``predict_peak_bytes(config, group, prompt_len, response_len, mode, dtype, variant)`` predicts the peak of the
bytes allocated during the step above what was allocated before it (the batch and the weights are not in it;
the parameter gradients are), which is what the benchmark measures (glibc mallinfo2 high-water mark).

Accounting (b = bytes per element of ``dtype``; h hidden, L layers, hq/hkv heads, d head dim, qd = hq*d,
kd = hkv*d, ff intermediate, V vocab; G rows, prompt P, completions c_i, T = P + max c_i):

Saved activations per token (what autograd keeps from the forward until the backward uses it). The counts were
read once off ``torch.autograd.graph.saved_tensors_hooks`` on a model whose h, ff, qd, kd all differ (so each
saved tensor names its term), for the Hugging Face Qwen3 layer (sdpa, transformers 5) and for the graph the
replay backend hands inductor; they are counts of tensors of the model's own sizes, not fitted to peaks:

    eager, unpadded row (GQA SDPA, no mask)  per layer 6h + 4ff + 4qd + 4kd + 2hq + hkv + 2
    eager, padded batch (mask: repeat_kv)    per layer 6h + 4ff + 6qd + 2kd + 2hq + hkv + 2, plus the additive
                                             float mask SDPA saves per layer: L * G * T * T elements
    eager, once per token                    3h (final norm) + 2d (RoPE cos/sin) + 3 (ids, positions, rsqrt)
    replay (inductor's partition)            per layer 4h + 3ff + 4qd + 3kd + 2hq + hkv + 3, once h; the last
                                             layer only 2kd + 2hkv + 3 (its queries, output and MLP run on
                                             the loss's selected tokens: passes/selected_tokens.py); the
                                             attention saves K and V before GQA's repeat_kv (Packer.unrepeated_kv:
                                             2kd where the repeated ones were 2qd)
    replay detach_prefix, a branch token     per layer 4h + 3ff + 4qd + kd + 2hq + hkv + 3, once h, plus its K
                                             and V (below): the branch attention reads K/V before GQA's repeat

LM head over R projected rows (logits R x V):

    eager_keep                3 R V at the log-softmax backward (its saved output, the incoming gradient from
                              the gather, the gradient it returns); the forward's 2 R V is smaller
    eager_rows                4 R V: the same plus the row's logits, which the caller's ``out`` keeps alive
                              through the row's backward (bench/long_context.py holds it, as a loop would)
    eager (full logits)       G T V + 2 G C V: at the slice's backward a fresh G x T x V gradient, with two
                              G x C x V gradients (log-softmax's and the gather's) still alive
    replay, lm_head="plain"   M V: inductor keeps the M x V logits of the unique predicting rows (M = sum c_i,
                              the unique tokens of the loss's slice) and, where the loss reads them through
                              log_softmax(-1).gather (ops.replay_log_softmax_gather), writes their gradient into
                              that buffer (a saved tensor AOT autograd donates to the backward); 2 M V under
                              detach_prefix, whose logits are the two streams' concatenated (the gradient is
                              allocated beside them)
    replay, lm_head="chunked" (``replaycompile::chunked_pair_logprobs``) min(k, M) V in fp32 for chunks of k rows (k as
                              passes/fuse_lm_head.py picks it: the power of two at or below 64 MiB / (4 V), at most
                              4096): one chunk's logits at a time (softmax and gradient computed in place), plus
                              the V x h weight-gradient accumulator and the M x h saved rows
    replay, lm_head="auto"    (the backend's default) "chunked" where M V 4 bytes reach the backend's
                              LM_HEAD_AUTO_THRESHOLD_BYTES (1 GiB), else "plain"

Activation checkpointing of every decoder layer (``*_ckpt``): the forward keeps each layer's input (h per
token per layer) plus what it keeps outside the layers (eager 3h + 2d + 3, replay h; the packed graph's tree
attention carries its layer's recompute tags, passes/rewrite.py). The backward recomputes one layer at a time,
whose saved set (above) and its incoming and outgoing gradients (2h) are alive while that layer's backward
runs; under replay (inductor's backward graph) also the MLP's gradients, 3h + 3ff more (the one element fitted
to a measurement: the budget model's 8K peak). The LM head's backward runs before any layer's, and its buffers
are gone when the layers' start, so the peak is the larger of the two phases (measured: at a 2K prompt the
head's phase binds, at 8K the layer's).

Parameter gradients: every parameter once (b per element), plus for eager_rows one more embedding-sized
gradient while a row's gradient is added to the accumulated one.

Peaks per variant:

    eager_keep, eager     grads + G T S_tok + mask + head            (one padded batch)
    eager_rows            grads + n S_tok + 3 (c + 1) V, for the longest row n = P + c (earlier rows' gradients
                          are already there; its activations are freed before the next row)
    eager_rows_ckpt       grads + n C_tok + max(head, n (S_layer + 2h)), C_tok the checkpointed per-token set
    replay_ckpt           grads + N_u C_tok + max(head, N_u (S_layer + 2h))
    replay exact          grads + N_u S_tok + head, N_u = P + sum c_i unique tokens
    replay detach_prefix  (shared tokens without autograd, passes/rewrite.py, shared_chunks.py): the branch attention saves
                          every token's K and V per layer (the shared ones, then the branches'), 2 kd L elements
                          each; the branches (sum c_i tokens) keep their per-token set (above); both streams run
                          in one graph, layer by layer, so peak = K/V + branch activations + max(one layer's live
                          tensors of the shared tokens, (2h + 3ff) each, in the forward; grads + head in the
                          backward); with shared_chunks=K the shared tokens' term is (2h + 3ff) / K + h each

The one empirical element is the saved set itself (which tensors PyTorch's autograd and inductor's min-cut
partitioner keep); it was read off a different configuration than the ones it is checked on
(``tests/test_memory_model.py``, ``bench/long_context.py``), and inductor may choose differently in another
version. Allocator overhead, the LM-head weight's gradient scratch and small tensors (per-row scalars) are left
out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch

__all__ = ["predict_peak_bytes", "breakdown", "max_prompt_len", "longstraw_headline", "longstraw_headline_line",
           "QWEN3_32B_LIKE"]

VARIANTS = ("eager", "eager_keep", "eager_rows", "eager_rows_ckpt", "replay", "replay_ckpt", "replay_detach")
# the variants that run with activation checkpointing of every decoder layer (Hugging Face's
# gradient_checkpointing_enable(); under replay its regions keep AOT autograd's recompute tags in the packed graph)
CHECKPOINTED = ("eager_rows_ckpt", "replay_ckpt")


@dataclass(frozen=True)
class _Dims:
    h: int
    L: int
    hq: int
    hk: int
    d: int
    ff: int
    V: int
    tied: bool
    L_kv: int = -1  # layers that keep per-token K/V (full attention); the rest of a hybrid are linear attention

    def __post_init__(self):
        if self.L_kv < 0:
            object.__setattr__(self, "L_kv", self.L)

    @property
    def qd(self):
        return self.hq * self.d

    @property
    def kd(self):
        return self.hk * self.d

    def params(self) -> int:
        layer = (self.h * self.qd + 2 * self.h * self.kd + self.qd * self.h + 3 * self.h * self.ff
                 + 2 * self.h + 2 * self.d)
        return self.L * layer + self.V * self.h * (1 if self.tied else 2) + self.h


def _dims(config) -> _Dims:
    g = (lambda k, default=None: config.get(k, default)) if isinstance(config, dict) else (
        lambda k, default=None: getattr(config, k, default))
    h = g("hidden_size")
    hq = g("num_attention_heads")
    d = g("head_dim") or h // hq
    L = g("num_hidden_layers")
    types, every = g("layer_types"), g("full_attention_interval")
    # linear-attention layers (Gated DeltaNet and kin) keep a fixed-size state, not per-token K/V
    L_kv = (sum(t == "full_attention" or "sliding" in t for t in types) if types else
            L // every if every else L)
    return _Dims(h=h, L=L, hq=hq, hk=g("num_key_value_heads") or hq, d=d,
                 ff=g("intermediate_size"), V=g("vocab_size"), tied=bool(g("tie_word_embeddings", False)),
                 L_kv=L_kv)


def _elem(dtype) -> int:
    return torch.empty((), dtype=dtype).element_size() if isinstance(dtype, torch.dtype) else int(dtype)


def _per_token(m: _Dims, kind: str) -> float:
    """Saved elements per token, all layers (see the module docstring); "*_layer": one layer's, for the layer a
    checkpointed backward recomputes; "*_ckpt": what a checkpointed forward keeps."""
    if kind == "rows_layer":
        return 6 * m.h + 4 * m.ff + 4 * m.qd + 4 * m.kd + 2 * m.hq + m.hk + 2
    if kind == "replay_layer":
        return 4 * m.h + 3 * m.ff + 4 * m.qd + 3 * m.kd + 2 * m.hq + m.hk + 3
    if kind == "rows_ckpt":
        return m.L * m.h + 3 * m.h + 2 * m.d + 3
    if kind == "replay_ckpt":
        return m.L * m.h + m.h
    if kind == "rows":
        return m.L * (6 * m.h + 4 * m.ff + 4 * m.qd + 4 * m.kd + 2 * m.hq + m.hk + 2) + 3 * m.h + 2 * m.d + 3
    if kind == "padded":
        return m.L * (6 * m.h + 4 * m.ff + 6 * m.qd + 2 * m.kd + 2 * m.hq + m.hk + 2) + 3 * m.h + 2 * m.d + 3
    if kind == "replay":
        # the last layer runs its queries, attention output and MLP on the loss's selected tokens only
        # (passes/selected_tokens.py): on every token it keeps only what their attention reads (K, V)
        return (m.L - 1) * _per_token(m, "replay_layer") + 2 * m.kd + 2 * m.hk + 3 + m.h
    if kind == "branch":
        return m.L * (4 * m.h + 3 * m.ff + 4 * m.qd + m.kd + 2 * m.hq + m.hk + 3) + m.h
    raise ValueError(kind)


def lm_head_chunk_rows(vocab: int) -> int:
    """Rows per chunk of the chunked LM head (passes/fuse_lm_head.py's rule, read from there)."""
    from replaycompile.passes.fuse_lm_head import lm_head_chunk_rows as rule

    return rule(vocab)


def lm_head_auto(rows: int, vocab: int) -> str:
    """What the backend's lm_head="auto" runs for ``rows`` predicting rows (backend.LM_HEAD_AUTO_THRESHOLD_BYTES)."""
    from replaycompile.backend import LM_HEAD_AUTO_THRESHOLD_BYTES

    return "chunked" if rows * vocab * 4 >= LM_HEAD_AUTO_THRESHOLD_BYTES else "plain"


def breakdown(config, group: int, prompt_len: int, response_len, mode: str = "exact", dtype=torch.float32,
              variant: str = "replay", lm_head: str = "auto", shared_chunks: int = 1) -> dict:
    """The terms of the prediction in bytes (``peak`` is their combination at the peak). ``shared_chunks``: the
    backend option of that name (detach_prefix's shared stream run in that many chunks of its tokens)."""
    if shared_chunks < 1:
        raise ValueError(f"shared_chunks must be a positive int, got {shared_chunks!r}")
    m = _dims(config)
    b = _elem(dtype)
    comps = [int(response_len)] * group if isinstance(response_len, (int, float)) else [int(c) for c in response_len]
    if len(comps) != group:
        raise ValueError(f"response_len has {len(comps)} entries for group={group}")
    if variant == "replay_detach":
        variant, mode = "replay", "detach_prefix"
    if variant == "replay_ckpt" and mode != "exact":
        raise ValueError("replay_ckpt is the exact step with checkpointing; detach_prefix keeps no prompt activations")
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; one of {VARIANTS}")
    P, C, G = int(prompt_len), max(comps), group
    T = P + C
    grads = m.params() * b
    out = dict(grads=grads)
    if variant in ("eager", "eager_keep"):
        out["activations"] = G * T * _per_token(m, "padded") * b
        out["mask"] = m.L * G * T * T * 4 + G * T * T  # float mask saved per layer + the bool mask it came from
        out["head"] = (G * T * m.V + 2 * G * C * m.V) * b if variant == "eager" else 3 * G * (C + 1) * m.V * b
        out["peak"] = grads + out["activations"] + out["mask"] + out["head"]
    elif variant == "eager_rows_ckpt":
        n = P + C
        out["activations"] = n * _per_token(m, "rows_ckpt") * b
        out["layer_recompute"] = n * (_per_token(m, "rows_layer") + 2 * m.h) * b
        out["head"] = 4 * (C + 1) * m.V * b
        out["accumulate"] = m.V * m.h * b
        out["peak"] = grads + out["accumulate"] + out["activations"] + max(out["head"], out["layer_recompute"])
    elif variant == "eager_rows":
        c = C
        n = P + c
        out["activations"] = n * _per_token(m, "rows") * b
        out["head"] = 4 * (c + 1) * m.V * b
        out["accumulate"] = m.V * m.h * b
        out["peak"] = grads + out["activations"] + out["head"] + out["accumulate"]
    else:
        M = sum(comps)
        if lm_head == "auto":
            lm_head = lm_head_auto(M, m.V)
        if lm_head == "plain":
            out["head"] = (1 if mode == "exact" else 2) * M * m.V * b
        elif lm_head == "chunked":
            k = min(lm_head_chunk_rows(m.V), M)
            # one chunk's buffer (logits, then softmax and gradient in place), the V x h weight-gradient
            # accumulator and the M x h saved rows; the accumulator becomes the LM head's gradient (in float32
            # it is that tensor), so the gradients below leave that one out
            out["head"] = k * m.V * max(b, 4) + m.V * m.h * max(b, 4) + M * m.h * b
            grads -= m.V * m.h * b
        else:
            raise ValueError(f"lm_head must be 'auto', 'chunked' or 'plain', got {lm_head!r}")
        if mode == "exact" and variant == "replay_ckpt":
            nu = P + sum(comps)
            out["activations"] = nu * _per_token(m, "replay_ckpt") * b
            out["layer_recompute"] = nu * (_per_token(m, "replay_layer") + 5 * m.h + 3 * m.ff) * b
            # the head's phase, then the layers' (where a chunked head's accumulator is the LM head's gradient)
            lm_grad = m.V * m.h * b if lm_head == "chunked" else 0
            out["peak"] = grads + out["activations"] + max(out["head"], lm_grad + out["layer_recompute"])
        elif mode == "exact":
            out["activations"] = (P + sum(comps)) * _per_token(m, "replay") * b
            out["peak"] = grads + out["activations"] + out["head"]
        elif mode == "detach_prefix":
            out["kv"] = (P + M) * 2 * m.kd * m.L_kv * b
            # one stretch's live tensors of the shared tokens: whole, or one chunk's while the stretch's input
            # (the previous one's joined output, h per token) stays alive beside it
            out["shared_transient"] = P * (2 * m.h + 3 * m.ff) * b if shared_chunks == 1 else \
                P * ((2 * m.h + 3 * m.ff) / shared_chunks + m.h) * b
            out["activations"] = M * _per_token(m, "branch") * b
            # one graph runs both streams layer by layer: a shared layer's live tensors meet the branch
            # activations saved so far (all layers' at the last one), the gradients and head come in backward
            out["peak"] = out["kv"] + out["activations"] + max(out["shared_transient"], grads + out["head"])
        else:
            raise ValueError(f"unknown mode {mode!r}")
    return out


def predict_peak_bytes(config, group: int, prompt_len: int, response_len, mode: str = "exact",
                       dtype=torch.float32, variant: str = "replay", lm_head: str = "auto",
                       shared_chunks: int = 1) -> int:
    """Predicted peak bytes allocated during one training step (one rank, one process), above the start.

    ``config``: a transformers PretrainedConfig (or a dict of its fields): hidden_size, num_hidden_layers,
    num_attention_heads, num_key_value_heads, head_dim, intermediate_size, vocab_size. ``response_len``: one
    completion length for every row, or a sequence of ``group`` lengths. ``mode``: "exact" or "detach_prefix"
    (replay only). ``variant``: "eager" (padded, full logits), "eager_keep" (padded, logits_to_keep),
    "eager_rows" (row by row, unpadded), "eager_rows_ckpt" (row by row with every decoder layer checkpointed),
    "replay", "replay_ckpt" (replay exact with every layer checkpointed), "replay_detach" (= replay with
    detach_prefix). ``lm_head``
    (replay only): "auto" (the backend's default), "chunked" (replaycompile::chunked_pair_logprobs) or "plain" (M x V logits;
    the backend's ``lm_head="plain"`` option, or a graph whose LM head the rewrite does not chunk).
    ``shared_chunks``: detach_prefix's option of that name. The accounting is in the module docstring."""
    return int(breakdown(config, group, prompt_len, response_len, mode, dtype, variant, lm_head,
                         shared_chunks)["peak"])


def max_prompt_len(config, group: int, response_len, budget_bytes: float, dtype=torch.float32,
                   variant: str = "replay", mode: str = "exact", hi: int = 1 << 21, lm_head: str = "auto",
                   shared_chunks: int = 1) -> int:
    """The longest prompt whose predicted peak fits ``budget_bytes`` (0 if none; ``hi`` if all up to it do)."""
    def fits(p):
        return predict_peak_bytes(config, group, p, response_len, mode, dtype, variant, lm_head,
                                  shared_chunks) <= budget_bytes
    return longest_fitting(fits, hi)


def longest_fitting(fits, hi: int) -> int:
    """The longest prompt p in [1, hi] with fits(p), by bisection (0 if none; ``hi`` if all up to it fit); fits
    is monotone in p."""
    if not fits(1):
        return 0
    if fits(hi):
        return hi
    lo, up = 1, hi
    while up - lo > 1:
        mid = (lo + up) // 2
        lo, up = (mid, up) if fits(mid) else (lo, mid)
    return lo


# ------------------------------------------------------------------------------------ LongStraw's headline

QWEN3_32B_LIKE = dict(hidden_size=5120, num_hidden_layers=64, num_attention_heads=64, num_key_value_heads=8,
                      head_dim=128, intermediate_size=25600, vocab_size=151936, tie_word_embeddings=False)


def longstraw_headline(config=None, prompt_len: int = 2_088_960, response_len: int = 8192, ranks: int = 8,
                       rank_gb: float = 96.0, dtype=torch.bfloat16, optimizer_bytes_per_param: float = 12.0,
                       prefill_chunk: int | None = None) -> dict:
    """Per-rank memory of LongStraw's headline step (one 2,088,960-token prompt, one 8,192-token response) done
    by this project in detach_prefix mode, with context parallelism over ``ranks`` (each rank holds 1/ranks of
    the prompt's K/V and of the response's tokens) and FSDP2 (weights, gradients and optimizer state sharded
    ``ranks`` ways; one layer's full weights gathered at a time, two with prefetch).

    Terms (GB = 1e9 bytes): weights and gradients in ``dtype``, optimizer state ``optimizer_bytes_per_param``
    (AdamW with fp32 master weights and two moments: 12), all / ranks; two gathered layers; the prompt's K/V
    (2 kd L b per token) / ranks; the response's saved activations (replay's per-token set) / ranks; the LM head
    on the response's rows (chunked, as in ``breakdown``); and the shared tokens'
    forward without autograd, whose live tensors of one layer are (2h + 3ff) b per token: over the whole
    per-rank prompt at once (``prefill_chunk=None``, how detach_prefix runs the shared tokens today: one packed
    pass) or over ``prefill_chunk`` tokens at a time."""
    m = _dims(config or QWEN3_32B_LIKE)
    b = _elem(dtype)
    n = m.params()
    layer = n // m.L  # roughly: the embeddings are not gathered per layer
    local_prompt = math.ceil(prompt_len / ranks)
    local_resp = math.ceil(response_len / ranks)
    t = dict(
        params=n,
        weights=n * b / ranks,
        grads=n * b / ranks,
        optimizer=n * optimizer_bytes_per_param / ranks,
        gathered_layers=2 * layer * b,
        prompt_kv=local_prompt * 2 * m.kd * m.L * b,
        response_activations=local_resp * _per_token(m, "replay") * b,
        lm_head=4 * min(lm_head_chunk_rows(m.V), local_resp) * m.V * 4 + m.V * m.h * b,
        prefill_transient=(local_prompt if prefill_chunk is None else min(prefill_chunk, local_prompt))
        * (2 * m.h + 3 * m.ff) * b,
    )
    static = t["weights"] + t["grads"] + t["optimizer"] + t["gathered_layers"]
    t["peak"] = static + t["prompt_kv"] + max(t["prefill_transient"],
                                              t["response_activations"] + t["lm_head"])
    t["rank_bytes"] = rank_gb * 1e9
    t["fits"] = t["peak"] <= t["rank_bytes"]
    # what would have to give: the largest term that, removed, lets it fit
    return t


def longstraw_headline_line(**kw) -> str:
    a = longstraw_headline(**kw)
    c = longstraw_headline(prefill_chunk=8192, **kw)
    gb = 1e9

    def s(x):
        return f"{x / gb:.1f}"
    return (f"LongStraw headline (Qwen3-32B-like: h 5120, 64 layers, 64/8 heads, d 128, ff 25600, V 151936; "
            f"{a['params'] / 1e9:.1f}B params; 2,088,960 prompt + 8,192 response, bf16, 8 ranks x 96 GB, prompt K/V "
            f"split 8 ways, FSDP2) in detach_prefix mode, per rank: weights {s(a['weights'])} + grads "
            f"{s(a['grads'])} + AdamW state {s(a['optimizer'])} + 2 gathered layers {s(a['gathered_layers'])} + "
            f"prompt K/V {s(a['prompt_kv'])} + max(prefill of the shared tokens without autograd "
            f"{s(a['prefill_transient'])} in one pass / {s(c['prefill_transient'])} in 8K chunks, response "
            f"activations {s(a['response_activations'])} + LM head {s(a['lm_head'])}) = {s(a['peak'])} GB one pass, "
            f"{s(c['peak'])} GB chunked, of 96 ({'fits' if c['fits'] else 'does not fit'} chunked); the prompt K/V "
            f"alone is {100 * a['prompt_kv'] / a['rank_bytes']:.0f}% of a rank")
