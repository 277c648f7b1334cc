"""``replaycompile plan``: per-rank peak memory and FLOPs of one GRPO training step, before launching it.

Given a transformers config (a ``config.json`` path, a config object or dict, or a built-in name), G, the prompt
and completion lengths, the dtype and the parallel layout (``dp`` data-parallel ranks with FSDP2, ``cp``
context-parallel ranks), ``plan_step`` predicts for each way of running the step

    eager            the padded batch with ``logits_to_keep`` (TRL's baseline)
    eager_rows       row by row, unpadded, gradients accumulated (the eager baseline that fits longest)
    eager_rows_ckpt  the same with Hugging Face's activation checkpointing of every decoder layer
    replay           ``backend="replay"``, exact
    replay_ckpt      replay exact on a model with activation checkpointing (the packed graph keeps the recompute
                     tags: every layer recomputed in backward)
    replay_detach    replay with ``mode="detach_prefix"`` (LongStraw's approximation: no gradient through the
                     prompt)

its per-rank step peak (the bytes the step allocates above what was there before it: saved activations,
logits buffers, parameter gradients; what ``bench/long_context.py`` measures), the rank's total (plus the
weights, the optimizer state and, under FSDP2, the gathered layers), the forward+backward FLOPs per rank, and the
longest prompt whose rank total fits ``budget_bytes``. The accounting of the step is ``replaycompile.planning.memory``'s,
term by term, checked against measured peaks (``tests/test_memory_model.py``, ``bench/long_context.py``).

Parallel layout. FSDP2 shards weights, gradients and optimizer state over all ``dp * cp`` ranks (as torchtitan
shards over its ``dp_shard_cp`` mesh) and gathers two layers' weights at a time (one in use, one prefetched).
Context parallelism is modelled as ``replaycompile.context_parallel`` builds it for the exact step (each rank
holds ``1/cp`` of the packed tokens, balanced by attention work (its last layer at its tokens of the loss's
positions only, as on one process), plus one layer's all-gathered K/V in flight; its LM head is the plain one, on its
own tokens); detach_prefix splits the shared tokens only (the branch tokens run whole on every rank); under
checkpointing it is a prediction (the report says so whenever ``cp > 1``), and the eager variants do not use it (they run whole rows on every rank). Gated DeltaNet / linear-attention layers of hybrid configs
(``layer_types``) are counted as attention layers of the same widths: an approximation, flagged in the report.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field

import torch

from replaycompile.planning import memory

__all__ = ["plan_step", "StepPlanReport", "BUILTIN_CONFIGS", "load_config", "step_flops"]

PLANNED = ("eager", "eager_rows", "eager_rows_ckpt", "replay", "replay_ckpt", "replay_detach")
# the memory model's name of each planned variant
_MEMORY_VARIANT = {"eager": "eager_keep"}

BUILTIN_CONFIGS = {
    # LongStraw's headline model class: a 27B Qwen3.5-style hybrid (64 layers, one full-attention layer in four,
    # the rest Gated DeltaNet). Our reading of the public Qwen3.5-27B shape; pass the real config.json to be sure.
    "qwen3.5-27b": dict(model_type="qwen3_5_text", hidden_size=5120, num_hidden_layers=64, num_attention_heads=24,
                        num_key_value_heads=4, head_dim=256, intermediate_size=17408, vocab_size=248320,
                        tie_word_embeddings=False, full_attention_interval=4),
    # a dense 32B of the Qwen3 family (every layer full attention): the memory model's earlier headline
    "qwen3-32b": dict(memory.QWEN3_32B_LIKE, model_type="qwen3"),
    # bench/long_context.py's budget model (the measured points) and the sweep's small model
    "budget": dict(model_type="qwen3", hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=64, intermediate_size=768, vocab_size=32000),
    "small": dict(model_type="qwen3", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=16, intermediate_size=192, vocab_size=32000),
}


def load_config(config) -> dict:
    """A config as a dict of its fields: a built-in name, a path to a ``config.json`` (read as JSON, nothing
    executed), a transformers PretrainedConfig, or a dict. A multimodal config's ``text_config`` is used."""
    if isinstance(config, str) and config in BUILTIN_CONFIGS:
        return dict(BUILTIN_CONFIGS[config])
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        if not os.path.exists(path):
            raise FileNotFoundError(f"replaycompile plan: config {path!r} is neither a built-in name "
                                    f"({', '.join(BUILTIN_CONFIGS)}) nor a file")
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        with open(path) as f:
            d = json.load(f)
    elif isinstance(config, dict):
        d = dict(config)
    else:
        d = config.to_dict()
    if "text_config" in d and isinstance(d["text_config"], dict):
        d = {**d["text_config"], "tie_word_embeddings": d.get("tie_word_embeddings",
                                                               d["text_config"].get("tie_word_embeddings"))}
    missing = [k for k in ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                           "vocab_size") if d.get(k) is None]
    if missing:
        raise ValueError(f"replaycompile plan: the config has no {', '.join(missing)} (a decoder-only LM config "
                         f"is needed)")
    return d


def _hybrid(d: dict) -> int:
    """How many layers are linear attention (Gated DeltaNet and kin) rather than full attention."""
    types = d.get("layer_types")
    if types:
        return sum(t != "full_attention" and "sliding" not in t for t in types)
    k = d.get("full_attention_interval")
    return d["num_hidden_layers"] - d["num_hidden_layers"] // k if k else 0


def step_flops(config, variant: str, prompt_len: int, comps, head_rows: int | None = None) -> float:
    """Forward+backward FLOPs of one step (backward = 2x forward) for the rows ``variant`` computes.

    per token (body)   f_tok = L * 2 * (h*hq*d + 2*h*hkv*d + hq*d*h + 3*h*ff)       q, k, v, o, gate/up/down
    attention          L * 4 * hq * d per (query, visible key) pair                  QK^T and PV
    LM head            2 * h * V per row that is projected
    eager, eager_keep: G*T tokens, G*T*T pairs (the [G, 1, T, T] mask is applied to every pair), head on G*T
                       (eager) or G*(C+1) (eager_keep) rows
    eager_rows:        sum n_i tokens, sum n_i^2/2 pairs (causal), sum (c_i + 1) head rows
    replay:            the unique tokens N_u = P + sum c_i, P^2/2 + sum (P*c_i + c_i^2/2) pairs, head on the unique
                       rows of the loss's slice
    replay_detach:     the same forward; the backward (2x) only for the branches' tokens and query pairs
    prefix_grouper:    replay's tokens and pairs, head on G*C rows (every completion position, padded ones too)
    *_ckpt:            one more forward of the body (the head is not recomputed)
    """
    d = load_config(config)
    h, L, V = d["hidden_size"], d["num_hidden_layers"], d["vocab_size"]
    hq = d["num_attention_heads"]
    hk = d.get("num_key_value_heads") or hq
    hd = d.get("head_dim") or h // hq
    ff = d["intermediate_size"]
    f_tok = L * 2 * (h * hq * hd + 2 * h * hk * hd + hq * hd * h + 3 * h * ff)
    f_pair = L * 4 * hq * hd
    comps = list(comps)
    P, G = prompt_len, len(comps)
    T = P + max(comps)
    ckpt = variant.endswith("_ckpt")
    base = variant[:-len("_ckpt")] if ckpt else variant
    if base in ("eager", "eager_keep"):
        rows = G * T if base == "eager" else G * (max(comps) + 1)
        body = G * T * f_tok + G * T * T * f_pair
        return 3 * (body + rows * 2 * h * V) + (body if ckpt else 0)
    if base == "eager_rows":
        n = [P + c for c in comps]
        body = sum(n) * f_tok + sum(x * x / 2 for x in n) * f_pair
        return 3 * (body + sum(c + 1 for c in comps) * 2 * h * V) + (body if ckpt else 0)
    nu = P + sum(comps)
    rows = head_rows if head_rows is not None else 1 + sum(comps)
    shared_pairs = P * P / 2
    branch_pairs = sum(P * c + c * c / 2 for c in comps)
    body = nu * f_tok + (shared_pairs + branch_pairs) * f_pair
    fwd = body + rows * 2 * h * V
    if base == "replay":
        return 3 * fwd + (body if ckpt else 0)
    if base == "prefix_grouper":
        return 3 * (fwd + (G * max(comps) - rows) * 2 * h * V)
    if base != "replay_detach":
        raise ValueError(f"no FLOP count for variant {variant!r}")
    return fwd + 2 * (sum(comps) * f_tok + branch_pairs * f_pair + rows * 2 * h * V)


@dataclass
class VariantPlan:
    variant: str
    step_peak: int          # bytes above the step's start, one rank (what bench/long_context.py measures)
    rank_total: int         # + weights, optimizer state, gathered layers (FSDP2)
    flops: float            # forward + backward, one rank
    longest_prompt: int | None = None   # within the budget (None: no budget given)
    min_cp: int | None = None           # the fewest CP ranks (powers of two, dp kept) that fit the budget
    terms: dict = field(default_factory=dict)


@dataclass
class StepPlanReport:
    config_name: str
    params: int
    group: int
    prompt_len: int
    response_len: list
    dtype: torch.dtype
    dp: int
    cp: int
    budget_bytes: float | None
    static: dict
    variants: dict
    notes: list

    def fits(self, variant: str) -> bool | None:
        return None if self.budget_bytes is None else self.variants[variant].rank_total <= self.budget_bytes

    def table(self) -> str:
        gb = 1e9
        c = self.response_len
        comp = f"{c[0]}" if len(set(c)) == 1 else f"{min(c)}-{max(c)}"
        lines = [f"replaycompile plan: {self.config_name} ({self.params / 1e9:.2f}B parameters), G={self.group}, "
                 f"prompt {self.prompt_len:,} + completions {comp}, {str(self.dtype).replace('torch.', '')}, "
                 f"{self.dp} DP (FSDP2) x {self.cp} CP rank(s)",
                 "per rank: weights {:.2f} GB, optimizer state {:.2f} GB, gathered layers {:.2f} GB".format(
                     self.static["weights"] / gb, self.static["optimizer"] / gb, self.static["gathered_layers"] / gb),
                 "",
                 "| variant | step peak GB | rank total GB | TFLOPs/rank | fits | longest prompt that fits | "
                 "CP ranks to fit |",
                 "|---|---|---|---|---|---|---|"]
        for v, p in self.variants.items():
            fit = self.fits(v)
            lp = "-" if p.longest_prompt is None else (f"{p.longest_prompt:,}" if p.longest_prompt else "none")
            mc = "-" if self.budget_bytes is None or not v.startswith("replay") else (
                str(p.min_cp) if p.min_cp else "over 4096")
            lines.append(f"| {v} | {p.step_peak / gb:.2f} | {p.rank_total / gb:.2f} | {p.flops / 1e12:.1f} | "
                         f"{'-' if fit is None else 'yes' if fit else 'no'} | {lp} | {mc} |")
        if self.budget_bytes is not None:
            lines.append(f"budget {self.budget_bytes / gb:.2f} GB per rank (rank total)")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def plan_step(config, group: int, prompt_len: int, response_len, dtype=torch.bfloat16, dp: int = 1, cp: int = 1,
              budget_bytes: float | None = None, optimizer_bytes_per_param: float = 12.0,
              lm_head: str = "auto", variants=PLANNED, cp_search: bool = True, fsdp: bool = True,
              shared_chunks: int = 1) -> StepPlanReport:
    """Predict each variant's per-rank memory and FLOPs (module docstring). ``response_len``: one completion
    length for every row or ``group`` lengths. ``budget_bytes``: a rank's memory; the longest prompt whose rank
    total fits it is searched per variant, and for the replay variants the fewest CP ranks (a power of two, up
    to 4096) at which this prompt fits. ``optimizer_bytes_per_param``: AdamW with fp32 master weights and
    two moments 12 (bf16 training), 8 in fp32 (the weights are the master copy), 0 if offloaded.
    ``shared_chunks``: replay_detach's shared stream in that many chunks (the backend option)."""
    if dp < 1 or cp < 1:
        raise ValueError(f"dp and cp are rank counts (>= 1), got dp={dp}, cp={cp}")
    unknown = [v for v in variants if v not in PLANNED]
    if unknown:
        raise ValueError(f"unknown variant(s) {unknown}; one of {PLANNED}")
    name = config if isinstance(config, str) else getattr(config, "name_or_path", None) or "config"
    d = load_config(config)
    comps = ([int(response_len)] * group if isinstance(response_len, (int, float))
             else [int(c) for c in response_len])
    if len(comps) != group:
        raise ValueError(f"response_len has {len(comps)} entries for group={group}")
    m = memory._dims(d)
    b = memory._elem(dtype)
    n = m.params()
    # fsdp=False: weights, gradients and optimizer state whole on every rank (a bare CP group, as
    # bench/cp_step.py runs it, or DDP)
    shard = dp * cp if fsdp else 1
    layer = (n - m.V * m.h * (1 if m.tied else 2)) // m.L
    static = dict(weights=n * b / shard, optimizer=n * optimizer_bytes_per_param / shard,
                  gathered_layers=2 * layer * b if shard > 1 else 0)
    notes = []
    if cp > 1:
        notes.append(f"cp={cp}: replay holds 1/{cp} of the packed tokens per rank plus one attention layer's gathered K/V in flight; replay_detach 1/{cp} of the shared tokens "
                     f"and every branch token (options={{'context_parallel': group}}: built, measured by "
                     f"bench/cp_step.py); under CP replay_ckpt is exact (tests/test_context_parallel.py) but its memory "
                     f"is a prediction, not measured; the eager variants do not split rows (their figures are "
                     f"cp=1's)")
    lin = _hybrid(d)
    if lin:
        notes.append(f"{lin} of {m.L} layers are linear attention (Gated DeltaNet): they keep no per-token K/V "
                     f"(detach_prefix holds the prompt's K/V of the {m.L_kv} full-attention layers only); their "
                     f"saved activations are counted as an attention layer's of the same widths (an approximation: "
                     f"no hybrid point has been measured)")

    def rank_bytes(v: str, p: int) -> tuple[int, dict]:
        mv = _MEMORY_VARIANT.get(v, v)
        split = cp if v.startswith("replay") else 1
        pr = math.ceil(p / split)
        # detach_prefix under CP splits the shared tokens only: the branch tokens run whole on every rank
        cr = list(comps) if v == "replay_detach" else [math.ceil(c / split) for c in comps]
        # the CP step runs the plain LM head (the chunked one is not built for it)
        head = ("plain" if split > 1 else lm_head) if v.startswith("replay") else "auto"
        t = memory.breakdown(d, group, pr, cr, dtype=dtype, variant=mv, lm_head=head,
                             shared_chunks=shared_chunks if v == "replay_detach" else 1)
        step = t["peak"]
        if shard > 1:  # FSDP2: the gradients are reduce-scattered layer by layer; a rank keeps its shard
            step -= t["grads"] - t["grads"] / shard
        if split > 1:
            # replaycompile::cp_tree_attention keeps each layer's own K/V and gathers every rank's for the layer
            # it runs, in forward and again in backward: one layer's gathered K and V (and a reordering buffer)
            # and their float32 gradients before the reduce-scatter are in flight (a rank's logits stay on it:
            # its log-probs are summed)
            # (detach_prefix: the shared keys, gathered for the shared and the branch queries alike)
            n_all = p + sum(comps)
            t["cp_kv"] = (3 * n_all * m.kd * b + 2 * n_all * m.kd * max(b, 4)) if m.L_kv else 0
            if mv == "replay":
                # the gathered K/V are in flight at an attention's backward, after the LM head's is done
                step += max(t["cp_kv"] - t["head"], 0)
            else:
                step += t["cp_kv"]
        return int(step), t

    out = {}
    for v in variants:
        step, terms = rank_bytes(v, prompt_len)
        total = int(step + sum(static.values()))
        split = cp if v.startswith("replay") else 1
        fv = _MEMORY_VARIANT.get(v, v) if v != "eager" else "eager_keep"
        whole = step_flops(d, fv, prompt_len, comps)
        fl = whole / split
        if v == "replay_detach" and split > 1:
            # the shared tokens' work is split (about a one-token completion's step), the branch tokens' is not
            fl = whole - step_flops(d, fv, prompt_len, [1] * group) * (1 - 1 / split)
        vp = VariantPlan(v, step, total, fl, terms=terms)
        if budget_bytes is not None:
            def fits(p, v=v):
                return rank_bytes(v, p)[0] + sum(static.values()) <= budget_bytes
            vp.longest_prompt = memory.longest_fitting(fits, 1 << 26)
            if v.startswith("replay") and cp_search:
                for c in (1 << i for i in range(13)):
                    sub = plan_step(d, group, prompt_len, comps, dtype, dp, c, None, optimizer_bytes_per_param,
                                    lm_head, [v], cp_search=False, fsdp=fsdp, shared_chunks=shared_chunks)
                    if sub.variants[v].rank_total <= budget_bytes:
                        vp.min_cp = c
                        break
        out[v] = vp
    return StepPlanReport(name, n, group, prompt_len, comps, dtype, dp, cp, budget_bytes, static, out, notes)


DTYPES = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp16": torch.float16, "float16": torch.float16,
          "fp32": torch.float32, "float32": torch.float32}


def add_arguments(ap) -> None:
    ap.add_argument("--config", default="qwen3.5-27b",
                    help=f"a config.json (or a folder holding one) or a built-in name: {', '.join(BUILTIN_CONFIGS)}")
    ap.add_argument("--group", type=int, default=8, help="rollouts per prompt (G)")
    ap.add_argument("--prompt", type=int, default=16384, help="prompt length (tokens)")
    ap.add_argument("--completion", type=int, nargs="+", default=[512],
                    help="completion length: one for every row, or G of them")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    ap.add_argument("--dp", type=int, default=1, help="data-parallel ranks (FSDP2)")
    ap.add_argument("--cp", type=int, default=1, help="context-parallel ranks")
    ap.add_argument("--budget-gb", type=float, default=None, help="memory per rank (GB, 1e9 bytes)")
    ap.add_argument("--optimizer-bytes", type=float, default=12.0,
                    help="optimizer state bytes per parameter (AdamW + fp32 master: 12; fp32 AdamW: 8; offloaded: 0)")
    ap.add_argument("--lm-head", choices=["auto", "chunked", "plain"], default="auto")
    ap.add_argument("--shared-chunks", type=int, default=1,
                    help="replay_detach: the shared stream in this many chunks (the backend option shared_chunks)")
    ap.add_argument("--longstraw", action="store_true",
                    help="LongStraw's headline setting: qwen3.5-27b, G=1, 2,088,960 + 8,192 positions, bf16, "
                         "8 ranks of 96 GB (DP 1 x CP 8)")


def run(args) -> int:
    if args.longstraw:
        args.config, args.group, args.prompt, args.completion = "qwen3.5-27b", 1, 2_088_960, [8192]
        args.dtype, args.dp, args.cp, args.budget_gb = "bf16", 1, 8, 96.0
    comps = args.completion[0] if len(args.completion) == 1 else args.completion
    rep = plan_step(args.config, args.group, args.prompt, comps, dtype=DTYPES[args.dtype], dp=args.dp, cp=args.cp,
                    budget_bytes=None if args.budget_gb is None else args.budget_gb * 1e9,
                    optimizer_bytes_per_param=args.optimizer_bytes, lm_head=args.lm_head,
                    shared_chunks=args.shared_chunks)
    print(rep.table())
    return 0
