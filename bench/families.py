"""Family sweep (issue 30): one GRPO step of a tiny random-weight model of each causal-LM family transformers
ships, eager against ``torch.compile(step, backend="replay")``, and what the backend did with it.

    python bench/families.py --types issue --inner aot_eager --flat     # the issue's 27 families, quick
    python bench/families.py                                            # every causal-LM type, both layouts
    python bench/families.py --types gemma4_text,olmo3 --tree --json out.json
    python bench/families.py --from-json out.json --docs docs/families.md   # the page, from a run's results

Each family's config is transformers' own default (``AutoConfig.for_model``) shrunk by attribute name
(:func:`tiny_config`): hidden 64, 4 heads of 16 (2 KV heads), vocab 128, 4 experts top-2, small MLA / indexer /
linear-attention / Mamba dims, sliding windows and attention chunks of 8 (shorter than the prompt, so they bind),
index_topk 4 (fewer than the keys, so the indexer selects), dropout 0, and as many layers as it takes to hold one
layer of every kind the default config has (its ``layer_types`` / ``mlp_layer_types`` / ``no_rope_layers`` /
``first_k_dense_replace`` / shared-KV tail ...), verified by recomputing the kinds from the built config.

Per family and layout (:func:`run_family`): the status is
    packed      the backend packed every graph (last_stats()["applied"]) and loss, gradients and logits equal eager
    declined    equal to eager but not packed (reason: the stats' fallback_reason)
    wrong       loss, a gradient or the logits differ from eager beyond 1e-4 (relative; the loss relative to at
                least LOSS_FLOOR = 1e-2, as it can sit near zero), packed or not
    crashed     the compiled step raised
    eager_fails the eager step itself raised, or gave a non-finite loss, logit or gradient: nothing to compare to
    unbuildable no tiny text causal LM could be built from the config (encoder-decoder, multimodal wrapper with
                no text type, a default config transformers cannot build, a size the shrinking missed, ...)
A crash is checked once more with the inner compiler alone (``inner_alone``), to tell replay's crashes from the
compiler's underneath. The model is built under seed 0 in float32, in training mode (dropout 0 by config), with
SDPA attention (eager where the family has no SDPA); the padding token's embedding rows, which random init zeroes,
are given values as a trained checkpoint's have.

The default inner compiler (inductor) takes 5-30 s per graph on 2 CPU cores; ``--inner aot_eager`` is the quick
iteration mode.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import sys
import time
from typing import Any

import torch

import replaycompile
from replaycompile.testing.steps import group_batch, grpo_loss, tree_batch

# The 26 families of issue 30 (text configs of the multimodal wrappers: gemma4, qwen3_5, qwen3_5_moe, gemma3n,
# llama4), spelt as transformers spells their model types, plus gpt2 (absolute positions, Conv1D, no RoPE).
ISSUE_FAMILIES = (
    "gemma4_text", "olmo3", "seed_oss", "hunyuan_v1_dense", "hunyuan_v1_moe", "smollm3", "exaone4",
    "qwen3_5_text", "qwen3_5_moe_text", "olmo_hybrid", "nemotron_h", "granitemoehybrid", "kimi_linear",
    "falcon_h1", "lfm2", "deepseek_v3", "deepseek_v32", "glm4_moe_lite", "glm_moe_dsa", "glm4_moe", "minimax_m2",
    "ministral3", "ernie4_5_moe", "gemma3n_text", "llama4_text", "apertus", "gpt2",
)

TOL = 1e-4  # relative, on the loss, every gradient and the logits at real positions (fp32)
GRAD_FLOOR = 1e-5  # a parameter's gradient error is relative to at least this fraction of the whole gradient
HIDDEN, HEADS, KV_HEADS, HEAD_DIM, VOCAB = 64, 4, 2, 16, 128
WINDOW = 8  # sliding windows / attention chunks: shorter than either batch's prompt (10 and 9 tokens)
MAX_PARAMS = 20_000_000  # a tiny model past this missed an attribute: refused, not built
INDEX_TOPK = 4  # DSA indexer: fewer than the keys a query sees, so the selection is not everything

# ------------------------------------------------------------------------------------------ tiny configs

# attribute name -> the tiny value, applied where the default config has the attribute (and it is not None)
_SIZES: dict[str, Any] = {
    **dict.fromkeys(("hidden_size", "d_model", "n_embd", "n_embed", "embed_dim", "embedding_dim", "model_dim",
                     "dim"), HIDDEN),
    **dict.fromkeys(("intermediate_size", "ffn_dim", "d_ff", "n_inner", "ffn_hidden_size", "intermediate_size_mlp",
                     "inner_hidden_size", "dense_intermediate_size", "mlp_dim", "decoder_ffn_dim"), 128),
    **dict.fromkeys(("moe_intermediate_size", "shared_expert_intermediate_size", "shared_experts_intermediate_size",
                     "moe_shared_expert_intermediate_size", "shared_intermediate_size", "expert_intermediate_size",
                     "expert_ffn_hidden_size", "moe_ffn_hidden_size", "moe_latent_size"), 32),
    **dict.fromkeys(("num_attention_heads", "n_head", "n_heads", "num_heads", "decoder_attention_heads"), HEADS),
    **dict.fromkeys(("num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num",
                     "num_query_groups", "swa_num_key_value_heads"), KV_HEADS),
    **dict.fromkeys(("vocab_size", "vocab_size_per_layer_input", "padded_vocab_size"), VOCAB),
    **dict.fromkeys(("max_position_embeddings", "n_positions", "n_ctx", "max_seq_len", "seq_length",
                     "max_sequence_length", "model_max_length"), 4096),
    "hidden_size_per_layer_input": 16, "laurel_rank": 8, "emb_dim": HIDDEN,
    "rotary_dim": HEAD_DIM // 2,  # partial rotary (GPT-J, CodeGen): a part of the head
    # mixture of experts: 4 experts, top-2, two groups of which the router keeps one
    **dict.fromkeys(("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", "n_experts",
                     "num_routed_experts"), 4),
    **dict.fromkeys(("num_experts_per_tok", "moe_topk", "moe_k", "top_k_experts", "num_experts_per_token",
                     "moe_top_k", "router_top_k"), 2),
    **dict.fromkeys(("n_group", "num_expert_group", "moe_n_group"), 2),
    **dict.fromkeys(("topk_group", "moe_topk_group"), 1),
    # multi-head latent attention
    "q_lora_rank": 32, "kv_lora_rank": 32, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 16,
    # DeepSeek sparse attention's lightning indexer
    "index_topk": INDEX_TOPK, "index_head_dim": 16, "index_n_heads": 8, "indexer_kv_heads": 1,
    # linear attention (Gated DeltaNet, KDA, ...)
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 16, "linear_value_head_dim": 16, "linear_num_key_heads": 2,
    "linear_head_dim": 16, "linear_num_heads": 2,
    # Mamba / SSM (the head count and head dim are made to fit the inner size below)
    **dict.fromkeys(("ssm_state_size", "mamba_d_state", "state_size", "d_state"), 16),
    **dict.fromkeys(("n_groups", "mamba_n_groups", "mamba_ngroups", "ngroups"), 1),
    **dict.fromkeys(("chunk_size", "mamba_chunk_size"), 8),
    **dict.fromkeys(("conv_kernel", "mamba_d_conv", "d_conv"), 4),
    "mamba_d_ssm": 128,
}
# windows and attention chunks (only where the default has one wider than WINDOW)
_WINDOWS = ("sliding_window", "attention_chunk_size", "window_size", "sliding_window_size", "attention_window_size",
            "local_attention_window_len")
_LAYER_COUNTS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "decoder_layers")
# lists of layer indices (not one entry per layer)
_INDEX_LISTS = ("full_attn_idxs", "moe_layers", "mlp_only_layers", "attn_layer_indices", "hybrid_layer_ids",
                "local_layer_ids", "ple_layer_ids", "global_attn_layers", "swa_layers")
# rules "the first k layers are dense"
_DENSE_PREFIX = ("first_k_dense_replace", "num_dense_layers")
# (heads, head dim) pairs of Mamba mixers, whose product must equal the inner size (expand * hidden or d_ssm)
_SSM_HEADS = (("mamba_n_heads", "mamba_d_head"), ("mamba_num_heads", "mamba_head_dim"), ("num_heads", "head_dim"))

# Where the default config of a family has only one layer kind but its released checkpoints are hybrids, the base
# it is shrunk from: one layer of each kind.
_FAMILY_BASE: dict[str, dict] = {
    # LFM2's default makes every layer attention; the released models interleave short-conv and attention layers
    "lfm2": dict(num_hidden_layers=2, layer_types=["conv", "full_attention"], full_attn_idxs=[1]),
    # Granite 4.0-H: Mamba-2 layers with an attention layer every few (the default is all Mamba)
    "granitemoehybrid": dict(num_hidden_layers=2, layer_types=["linear_attention", "full_attention"]),
    # LFM2-MoE: the default leaves layer_types None (and the model needs them); a dense conv layer, then MoE ones
    "lfm2_moe": dict(num_hidden_layers=3, layer_types=["conv", "conv", "full_attention"], num_dense_layers=1),
}
# Extra tiny values for one family, on top of the generic ones.
_FAMILY_EXTRA: dict[str, dict] = {
    # the full-attention layers' head dim (per_layer_config, rebuilt from layer_types by Gemma4TextConfig)
    "gemma4_text": dict(global_head_dim=32),
    # attention temperature tuning of the NoPE layers: scale = 1 + attn_scale * log(floor((pos+1)/floor_scale)+1)
    # (a per-position op): with the default 8192 it is 1 at every position of the tiny batch
    "llama4_text": dict(floor_scale=WINDOW),
}

def _mapping() -> dict:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return MODEL_FOR_CAUSAL_LM_MAPPING_NAMES


def text_model_type(model_type: str) -> str:
    """The causal-LM text config type of a multimodal wrapper (``gemma4`` -> ``gemma4_text``), else itself."""
    from transformers import AutoConfig

    try:
        cfg = AutoConfig.for_model(model_type)
    except Exception:  # noqa: BLE001 - reported by tiny_config
        return model_type
    sub = getattr(cfg, "text_config", None) if "text_config" in (getattr(type(cfg), "sub_configs", None) or {}) \
        else None
    if sub is not None and getattr(sub, "model_type", model_type) != model_type and sub.model_type in _mapping():
        return sub.model_type
    return model_type


def all_model_types() -> list[str]:
    """Every causal-LM model type transformers maps, wrappers replaced by their text type, each once."""
    seen: dict[str, None] = {}
    for t in sorted(_mapping()):
        seen.setdefault(text_model_type(t), None)
    return list(seen)


def _num_layers(d: dict) -> tuple[str | None, int]:
    for k in _LAYER_COUNTS:
        if isinstance(d.get(k), int):
            return k, d[k]
    for k in ("layer_types", "layers_block_type"):  # Nemotron-H: the pattern is the layer count
        if isinstance(d.get(k), list):
            return None, len(d[k])
    return None, 0


def _per_layer_lists(d: dict, n: int) -> list[str]:
    """The attributes holding one value per layer (a two-entry list counts only when its name says layer)."""
    return [k for k, v in d.items() if isinstance(v, list) and len(v) == n and (n > 2 or "layer" in k)
            and k not in _INDEX_LISTS and all(isinstance(x, (str, int, float, bool)) for x in v)]


def _kinds(d: dict, lists: list[str] | None = None) -> list[tuple]:
    """Per layer, its kind: every per-layer attribute's value (sizes left out) and every rule that singles a layer
    out (first_k_dense_replace, decoder_sparse_step, a shared-KV tail, a per-layer override, ...). ``lists``: the
    per-layer attributes to read (default: those found in ``d``)."""
    _, n = _num_layers(d)
    if lists is None:
        lists = _kind_lists(d)
    cyclic = sorted(set(_cyclic_lists(d)) | {k for k in lists if isinstance(d.get(k), list) and len(d[k]) < n})
    lists = [k for k in lists if isinstance(d.get(k), list) and len(d[k]) == n]
    index_lists = {k: set(d[k]) for k in _INDEX_LISTS if isinstance(d.get(k), list)}
    plc = d.get("per_layer_config")
    plc_keys = {int(k) for k in plc} if isinstance(plc, dict) else set()
    kinds = []
    for i in range(n):
        kind = [(k, d[k][i]) for k in lists] + [(k, d[k][i % len(d[k])]) for k in cyclic]
        kind += [(k, i in s) for k, s in index_lists.items()]
        kind += [(k, i < d[k]) for k in _DENSE_PREFIX if isinstance(d.get(k), int)]
        if isinstance(d.get("decoder_sparse_step"), int) and d["decoder_sparse_step"] > 0:
            kind.append(("sparse_step", (i + 1) % d["decoder_sparse_step"] == 0))
        if isinstance(d.get("moe_layer_start_index"), int):
            s, e, iv = d["moe_layer_start_index"], d.get("moe_layer_end_index", n - 1), d.get("moe_layer_interval", 1)
            e = n - 1 if e in (None, -1) else e
            kind.append(("moe_range", s <= i <= e and (i - s) % max(iv, 1) == 0))
        if isinstance(d.get("num_kv_shared_layers"), int):
            kind.append(("kv_shared", i >= n - d["num_kv_shared_layers"]))
        if plc_keys:
            kind.append(("per_layer_config", i in plc_keys))
        for p, o in (("attn_layer_period", "attn_layer_offset"), ("expert_layer_period", "expert_layer_offset")):
            if isinstance(d.get(p), int) and d[p] > 0:
                kind.append((p, i % d[p] == d.get(o, 0)))
        if isinstance(d.get("moe_layer_freq"), int) and d["moe_layer_freq"] > 0:
            kind.append(("moe_layer_freq", i % d["moe_layer_freq"] == 0))
        kinds.append(tuple(kind))
    return kinds


def _choose_layers(kinds: list[tuple]) -> list[int]:
    """The first layer of each distinct kind, in order (or, when that is many, of each distinct attribute value)."""
    keep, seen = [], set()
    for i, k in enumerate(kinds):
        if k not in seen:
            seen.add(k)
            keep.append(i)
    if len(keep) > 8:
        keep, seen = [], set()
        for i, k in enumerate(kinds):
            if set(k) - seen:
                seen |= set(k)
                keep.append(i)
    if len(keep) < 2 and len(kinds) >= 2:  # at least two layers: one layer's output feeding the next
        keep = sorted(set(keep) | {next(i for i in range(len(kinds)) if i not in keep)})
    return keep


def _cyclic_lists(d: dict) -> list[str]:
    """Layer-type patterns shorter than the stack, repeated over it (RecurrentGemma's block_types)."""
    n = _num_layers(d)[1]
    return [k for k, v in d.items() if isinstance(v, list) and 2 <= len(v) < n and ("types" in k or "pattern" in k)
            and all(isinstance(x, str) for x in v)]


def _kind_lists(d: dict) -> list[str]:
    return [k for k in _per_layer_lists(d, _num_layers(d)[1]) if not any(s in k for s in ("size", "dim", "heads"))]


def _period(pattern: list[bool]) -> tuple[int, int] | None:
    """(period, offset) with pattern[i] == (i % period == offset), if one exists."""
    for period in range(1, len(pattern) + 2):
        for off in range(period):
            if all(p == (i % period == off) for i, p in enumerate(pattern)):
                return period, off
    return None


def _layer_overrides(d: dict, keep: list[int]) -> dict | None:
    """Config values that make the layers ``keep`` of ``d`` its only layers, None if a rule cannot be kept."""
    count_key, n = _num_layers(d)
    m = len(keep)
    out: dict[str, Any] = {}
    if count_key:
        out[count_key] = m
    for k in _per_layer_lists(d, n):
        out[k] = [d[k][i] for i in keep]
    for k in _INDEX_LISTS:
        if isinstance(d.get(k), list):
            out[k] = [j for j, i in enumerate(keep) if i in set(d[k])]
    for k in _DENSE_PREFIX:
        if isinstance(d.get(k), int):
            out[k] = sum(i < d[k] for i in keep)
    step = d.get("decoder_sparse_step")
    if isinstance(step, int) and step > 1:
        if "mlp_only_layers" not in d:
            return None
        only = set(d.get("mlp_only_layers") or [])
        out["decoder_sparse_step"] = 1
        out["mlp_only_layers"] = [j for j, i in enumerate(keep) if i in only or (i + 1) % step != 0]
    if isinstance(d.get("moe_layer_start_index"), int):
        s, e, iv = d["moe_layer_start_index"], d.get("moe_layer_end_index", n - 1), d.get("moe_layer_interval", 1)
        e = n - 1 if e in (None, -1) else e
        moe = [j for j, i in enumerate(keep) if s <= i <= e and (i - s) % max(iv, 1) == 0]
        if moe and moe != list(range(moe[0], moe[-1] + 1)):
            return None
        out.update(moe_layer_start_index=moe[0] if moe else m, moe_layer_end_index=moe[-1] if moe else m,
                   moe_layer_interval=1)
    if isinstance(d.get("num_kv_shared_layers"), int):
        out["num_kv_shared_layers"] = sum(i >= n - d["num_kv_shared_layers"] for i in keep)
    for p, o in (("attn_layer_period", "attn_layer_offset"), ("expert_layer_period", "expert_layer_offset"),
                 ("moe_layer_freq", None)):
        if isinstance(d.get(p), int) and d[p] > 0:
            po = _period([i % d[p] == (d.get(o, 0) if o else 0) for i in keep])
            if po is None or (o is None and po[1] != 0):
                return None
            out[p] = po[0]
            if o:
                out[o] = po[1]
    return out


def _special_token_ids(d: dict) -> dict:
    out, spare = {}, iter(range(3, 16))
    small = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
    for k, v in d.items():
        if not k.endswith("token_id") and k != "eos_token_id":
            continue
        if isinstance(v, int) and not isinstance(v, bool) and v >= VOCAB:
            out[k] = small.get(k) if k in small else next(spare)
        elif isinstance(v, list) and any(isinstance(x, int) and x >= VOCAB for x in v):
            out[k] = [x if x < VOCAB else 2 for x in v]
    return out


def _shrink(d: dict, model_type: str) -> dict:
    """The generic tiny values for the default config ``d`` (its to_dict), before the layer choice."""
    kw: dict[str, Any] = {}
    mla = isinstance(d.get("qk_rope_head_dim"), int)
    for k, v in _SIZES.items():
        if k not in d or (d[k] is None and k not in ("n_inner", "num_key_value_heads")) or isinstance(d[k], bool):
            continue  # (None: GPT-2's n_inner means 4 x hidden, a num_key_value_heads one per query head)
        if k in ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", "n_experts",
                 "num_routed_experts") and not (isinstance(d[k], int) and d[k] >= 1):
            continue
        if k in ("n_group", "num_expert_group", "moe_n_group", "topk_group", "moe_topk_group") and not any(
                isinstance(d.get(e), int) and d[e] >= 1 for e in ("n_routed_experts", "num_experts",
                                                                  "num_local_experts", "moe_num_experts")):
            continue
        if k == "dim" and not (isinstance(d[k], int) and d[k] > HIDDEN):
            continue
        kw[k] = [v] * len(d[k]) if isinstance(d[k], list) and k == "intermediate_size" else v
    experts = any(isinstance(d.get(e), int) and d[e] >= 1 for e in ("n_routed_experts", "num_experts",
                                                                     "num_local_experts", "moe_num_experts"))
    if experts and "num_experts_per_tok" in d and d["num_experts_per_tok"] is None:  # DeepSeek-V2's default
        kw["num_experts_per_tok"] = 2
    if isinstance(d.get("linear_num_value_heads"), int):
        kw["linear_num_value_heads"] = 4 if d["linear_num_value_heads"] > d.get("linear_num_key_heads", 0) else 2
    if "head_dim" in d and not mla:  # also where None (derived): HunYuan's modeling reads a None as is
        kw["head_dim"] = HEAD_DIM
    if mla:  # the RoPE slice is the "head_dim" the rotary embedding reads; K/V per query head, as released
        kw.update(head_dim=kw.get("qk_rope_head_dim", 8))
        if d.get("num_key_value_heads") == d.get("num_attention_heads"):
            kw["num_key_value_heads"] = HEADS
        if "qk_head_dim" in d:
            kw["qk_head_dim"] = kw.get("qk_nope_head_dim", 8) + kw.get("qk_rope_head_dim", 8)
    # Mamba heads x head dim = the inner size, where the default config ties them so
    hid = d.get("hidden_size") or d.get("d_model") or 0
    expand = d.get("mamba_expand", d.get("expand"))
    for hk, dk in _SSM_HEADS:
        if not (isinstance(d.get(hk), int) and isinstance(d.get(dk), int) and isinstance(expand, (int, float))):
            continue
        inner_default = d.get("mamba_d_ssm") or expand * hid
        if d[hk] * d[dk] == inner_default:
            inner = kw.get("mamba_d_ssm") if d.get("mamba_d_ssm") else int(expand * HIDDEN)
            kw[hk], kw[dk] = inner // 16, 16
    for k, v in d.items():  # other vocabularies (BLT's hash n-gram tables, ...)
        if "vocab" in k and k not in kw and isinstance(v, int) and not isinstance(v, bool) and v > VOCAB:
            kw[k] = VOCAB
    if isinstance(d.get("time_step_rank"), int):
        kw["time_step_rank"] = 8
    for k in _WINDOWS:
        if isinstance(d.get(k), int) and not isinstance(d[k], bool) and d[k] > WINDOW:
            kw[k] = WINDOW
    if d.get("sliding_window") is None and any("sliding" in str(t) for t in d.get("layer_types") or []):
        kw["sliding_window"] = WINDOW
    for k, v in d.items():  # dropout probabilities (and router jitter) to 0: the step must be deterministic
        if isinstance(v, float) and v > 0 and ("dropout" in k or "pdrop" in k or k.endswith("layerdrop")
                                               or k == "router_jitter_noise"):
            kw[k] = 0.0
    kw.update(_special_token_ids(d))
    if "per_layer_config" in d:  # rebuilt by the config from layer_types; its head dims are not tiny
        kw["global_head_dim"] = 2 * HEAD_DIM
    kw.update(_FAMILY_EXTRA.get(model_type, {}))
    return kw


def tiny_config_info(model_type: str):
    """(config or the reason none can be built, notes): :func:`tiny_config` with what it chose."""
    from transformers import AutoConfig

    mapping = _mapping()
    t = text_model_type(model_type)
    notes: dict[str, Any] = {"model_type": t}
    if t not in mapping:
        return f"{t!r} is not a causal-LM model type of transformers", notes
    try:
        base = AutoConfig.for_model(t, **_FAMILY_BASE.get(t, {}))
    except Exception as e:  # noqa: BLE001
        return f"the default config does not build: {_first_line(e)}", notes
    if getattr(base, "is_encoder_decoder", False):
        return "encoder-decoder model (the sweep is for decoder-only causal LMs)", notes
    if mapping[t].endswith("ForConditionalGeneration"):
        return f"multimodal wrapper ({mapping[t]}) with no text causal-LM config type", notes
    d = base.to_dict()
    kinds = _kinds(d)
    keep = _choose_layers(kinds)
    layers = _layer_overrides(d, keep) if kinds else {}
    if layers is None or _cyclic_lists(d):
        # a rule could not be carried over, or a repeated pattern cannot skip layers: the shortest prefix holding
        # every kind instead
        m = min(max(max(kinds.index(k) for k in set(kinds)) + 1, 2), len(kinds))
        keep = list(range(m))
        count_key, n = _num_layers(d)
        layers = {**({count_key: m} if count_key else {}),
                  **{k: d[k][:m] for k in _per_layer_lists(d, n)}}
    small = _shrink(d, t)
    for k, v in layers.items():  # per-layer sizes (Gemma 3n's intermediate_size): the kept layers' tiny values
        if isinstance(v, list) and isinstance(small.get(k), list) and len(small[k]) == len(d[k]):
            layers[k] = [small[k][i] for i in keep]
    kw = {**small, **_FAMILY_BASE.get(t, {}), **layers}
    if not kinds:  # no layer structure found: two layers
        count_key, _ = _num_layers(d)
        if count_key:
            kw[count_key] = 2
    kw["is_decoder"] = True  # encoder families that map a causal LM (BERT-like) attend causally only as decoders
    try:
        cfg = AutoConfig.for_model(t, **kw)
    except Exception as e:  # noqa: BLE001
        return f"the tiny config does not build: {_first_line(e)}", notes
    got = {frozenset(k) for k in _kinds(cfg.to_dict(), _kind_lists(d) + _cyclic_lists(d))}
    notes.update(layers_kept=keep, num_layers=_num_layers(cfg.to_dict())[1],
                 missing_kinds=[k for k in set(kinds) if frozenset(k) not in got])
    return cfg, notes


def tiny_config(model_type: str):
    """A tiny text config of ``model_type`` (any key of transformers' causal-LM mapping; a multimodal wrapper gives
    its text config), or a string saying why none can be built."""
    cfg, _ = tiny_config_info(model_type)
    return cfg


def build_model(cfg):
    """The random-weight causal LM of ``cfg`` (seed 0, float32, training mode), and the attention implementation
    it got: SDPA, else eager where the family does not support SDPA."""
    from transformers import AutoModelForCausalLM

    last = None
    for impl in ("sdpa", "eager"):
        cfg._attn_implementation = impl
        try:
            with torch.device("meta"):  # its size first: an attribute the shrinking missed can take the memory
                n = sum(q.numel() for q in AutoModelForCausalLM.from_config(cfg).parameters())
        except Exception:  # noqa: BLE001 - built for real below, which tells
            n = 0
        if n > MAX_PARAMS:
            raise ValueError(f"the tiny config still has {n / 1e6:.0f}M parameters (over {MAX_PARAMS / 1e6:.0f}M)")
        try:
            with torch.random.fork_rng():
                torch.manual_seed(0)
                model = AutoModelForCausalLM.from_config(cfg)
        except Exception as e:  # noqa: BLE001
            last = e
            if impl == "sdpa" and any(w in str(e) for w in ("sdpa", "scaled_dot_product_attention")):
                continue
            raise
        _fill_padding_rows(model)
        return model.float().train(), impl
    raise last


def _fill_padding_rows(model) -> None:
    """Give the padding token's embedding rows values: random init zeroes them (``padding_idx``), a trained
    checkpoint's are not zero, and a zero row is not harmless: Gemma 3n's eager step at a left-padded row then has
    NaN gradients (its AltUp normalises by the embedding's magnitude)."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for mod in model.modules():
            idx = getattr(mod, "padding_idx", None)
            w = getattr(mod, "weight", None)
            if isinstance(mod, torch.nn.Embedding) and idx is not None and w is not None and not w[idx].any():
                w[idx] = (torch.randn(w.shape[1], generator=g) * w.float().std()).to(w.dtype)


# --------------------------------------------------------------------------------------------- the step

def grpo_step(model, ids, am, adv, p):
    """Forward and loss of one GRPO step; the logits come back too, to compare them at the real positions."""
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    return grpo_loss(logits, ids, am, adv, p), logits


def _run(fn, model, batch):
    for q in model.parameters():
        q.grad = None
    loss, logits = fn(model, *batch)
    loss.backward()
    grads = {k: q.grad.detach().clone() for k, q in model.named_parameters() if q.grad is not None}
    return loss.detach(), logits.detach().clone(), grads


def _first_line(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:400]


def _where(e: BaseException) -> str:
    """The innermost frame of the exception, file:line function."""
    import traceback

    tb = traceback.extract_tb(e.__traceback__)
    return f"{os.path.basename(tb[-1].filename)}:{tb[-1].lineno} {tb[-1].name}" if tb else ""


def _inner_alone(model, batch, inner: str, ref=None) -> str:
    """Whether the step compiles and runs with the inner compiler alone (no replay), and (given eager's loss and
    logits ``ref``) equals eager: tells replay's crash or error from one of the compiler underneath it."""
    torch._dynamo.reset()
    try:
        loss, logits, _ = _run(torch.compile(grpo_step, backend=inner), model, batch)
    except Exception as e:  # noqa: BLE001
        return _first_line(e)
    finally:
        torch._dynamo.reset()
    if ref is not None:
        real = batch[1].bool()
        err = max(_rel(loss.reshape(1), ref[0].reshape(1), LOSS_FLOOR), _rel(logits[real], ref[1][real]))
        if not err <= TOL:
            return f"differs from eager too (loss/logits {err:.1e})"
    return "ok"


LOSS_FLOOR = 1e-2  # the loss's error is relative to max(|loss|, this)


def _rel(a: torch.Tensor, b: torch.Tensor, floor=0.0) -> float:
    """|a - b| / max(|b|, floor) (norms), b the eager reference; inf where a is not finite."""
    if not torch.isfinite(a).all():
        return math.inf
    return ((a.double() - b.double()).norm() / b.double().norm().clamp_min(max(float(floor), 1e-12))).item()


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        if record.name.startswith("replaycompile"):
            self.messages.append(record.getMessage())


def _forget_logged_reasons() -> None:
    """The library logs each decline reason once per process (stats.warn_once): forget them, so each family's run
    logs its own."""
    import replaycompile.stats as stats

    stats._WARNED.clear()


def run_family(model_type: str, layout: str = "flat", inner: str | None = None) -> dict:
    """One GRPO step of ``model_type``'s tiny model, eager and replay-compiled; the status and the evidence."""
    assert layout in ("flat", "tree"), layout
    t0 = time.perf_counter()
    res: dict[str, Any] = dict(type=model_type, layout=layout, inner=inner or "inductor", status=None, reason=None,
                               loss_rel_err=None, worst_grad_rel_err=None, worst_grad_param=None,
                               logits_rel_err=None, tokens_computed=None, tokens_in=None, applied=None,
                               graph_fallbacks=[], warnings=[], unpacked_warned=None, attn_implementation=None,
                               num_layers=None, missing_kinds=[], recurrent_per_row=None, recurrent_tree_scan=None,
                               where=None, inner_alone=None, seconds={})

    def done(status, reason=None):
        res.update(status=status, reason=reason)
        res["seconds"]["total"] = round(time.perf_counter() - t0, 2)
        return res

    cfg, notes = tiny_config_info(model_type)
    res.update(type=notes["model_type"], num_layers=notes.get("num_layers"),
               missing_kinds=[dict(k) for k in notes.get("missing_kinds", [])])
    if isinstance(cfg, str):
        return done("unbuildable", cfg)
    try:
        model, impl = build_model(cfg)
    except Exception as e:  # noqa: BLE001
        return done("unbuildable", f"from_config fails: {_first_line(e)}")
    res["attn_implementation"] = impl
    res["seconds"]["build"] = round(time.perf_counter() - t0, 2)
    batch = group_batch(vocab=VOCAB) if layout == "flat" else tree_batch(vocab=VOCAB)
    ids, am = batch[0], batch[1]

    t = time.perf_counter()
    try:
        ref_loss, ref_logits, ref_grads = _run(grpo_step, model, batch)
    except Exception as e:  # noqa: BLE001
        return done("eager_fails", _first_line(e))
    res["seconds"]["eager"] = round(time.perf_counter() - t, 2)
    if not torch.isfinite(ref_loss):
        return done("eager_fails", f"eager loss is {ref_loss.item()}")
    nonfinite = [k for k, g in ref_grads.items() if not torch.isfinite(g).all()]
    if nonfinite or not torch.isfinite(ref_logits[am.bool()]).all():
        return done("eager_fails", f"eager gradients of {len(nonfinite)} parameters are not finite ({nonfinite[:2]})"
                    if nonfinite else "eager logits are not finite")

    torch._dynamo.reset()
    _forget_logged_reasons()
    before = replaycompile.last_stats()
    before_call = before.get("call") if before else None
    cap = _Capture()
    logger = logging.getLogger("replaycompile")
    logger.addHandler(cap)
    t = time.perf_counter()
    try:
        step = torch.compile(grpo_step, backend="replay", options={} if inner is None else {"inner": inner})
        loss, logits, grads = _run(step, model, batch)
    except Exception as e:  # noqa: BLE001
        res["where"] = _where(e)
        crash = _first_line(e)
    else:
        crash = None
    finally:
        logger.removeHandler(cap)
        res["seconds"]["compiled"] = round(time.perf_counter() - t, 2)
        res["warnings"] = cap.messages
        torch._dynamo.reset()

    if crash is not None:
        res["inner_alone"] = _inner_alone(model, batch, inner or "inductor")
        return done("crashed", crash if res["inner_alone"] == "ok" else
                    f"[{inner or 'inductor'} alone fails too: {res['inner_alone'][:60]}] {crash}")
    st = replaycompile.last_stats()
    fresh = st is not None and st.get("call") != before_call
    if fresh:
        res.update(applied=bool(st["applied"]), tokens_computed=st.get("tokens_computed"),
                   tokens_in=st.get("tokens_in"), recurrent_per_row=st.get("recurrent_per_row"),
                   recurrent_tree_scan=st.get("recurrent_tree_scan"),
                   graph_fallbacks=[dict(graph=g.get("graph"), reason=g.get("fallback_reason"))
                                    for g in st.get("graphs", []) if not g.get("applied")])
    real = am.bool()
    # the loss is a masked mean of per-token terms of either sign and can sit near zero (a tiny random model's
    # advantages cancel): relative to at least LOSS_FLOOR, so rounding of 1e-8 on a loss of 1e-4 is not "wrong"
    res["loss_rel_err"] = _rel(loss.reshape(1), ref_loss.reshape(1), LOSS_FLOOR)
    res["logits_rel_err"] = _rel(logits[real], ref_logits[real])
    # a gradient one side has and the other has not is equal only if it is all zeros (an expert no token reached:
    # eager leaves .grad None where a compiled graph accumulates zeros)
    for k in set(grads) ^ set(ref_grads):
        g = grads.get(k, ref_grads.get(k))
        if g.any():
            side = "replay" if k in grads else "eager"
            return done("wrong", f"only {side} gives {k} a gradient (and it is not zero)")
        (ref_grads if k in grads else grads)[k] = torch.zeros_like(g)
    # each parameter relative to its own gradient's norm, floored at GRAD_FLOOR of the whole gradient's norm: an
    # analytically zero gradient (a key bias, which softmax cancels) is rounding noise of ~1e-10
    floor = GRAD_FLOOR * torch.stack([g.double().norm() for g in ref_grads.values()]).norm() if ref_grads else 0
    errs = {k: _rel(grads[k], ref_grads[k], floor) for k in ref_grads}
    if errs:
        worst = max(errs, key=errs.get)
        res.update(worst_grad_rel_err=errs[worst], worst_grad_param=worst)
    bad = [f"{name} {err:.1e}" for name, err in (("loss", res["loss_rel_err"]), ("logits", res["logits_rel_err"]),
                                                 (f"grad {res['worst_grad_param']}", res["worst_grad_rel_err"] or 0))
           if not err <= TOL]
    if bad:
        res["inner_alone"] = _inner_alone(model, batch, inner or "inductor", (ref_loss, ref_logits))
        return done("wrong", "differs from eager: " + ", ".join(bad)
                    + ("" if not fresh else " (packed)" if st["applied"] else " (not packed)")
                    + ("" if res["inner_alone"] == "ok" else f" [{inner or 'inductor'} alone: {res['inner_alone']}]"))
    if fresh and st["applied"]:
        return done("packed")
    reason = (st.get("fallback_reason") or "applied=False without a reason") if fresh else "no stats record"
    # did the decline reach the user? (each unpacked graph's reason among the warnings logged during the run)
    reasons = [g["reason"] for g in res["graph_fallbacks"] if g["reason"]] or [reason]
    res["unpacked_warned"] = bool(cap.messages) and all(any(r in m for m in cap.messages) for r in reasons)
    return done("declined", reason)


# ------------------------------------------------------------------------------------------------------ CLI

def _short(s: str | None, n: int = 150) -> str:
    s = (s or "").replace("|", "/").replace("\n", " ")
    return s if len(s) <= n else s[:n - 3] + "..."


def _cell(r: dict | None) -> str:
    if r is None:
        return ""
    if r["status"] == "packed" and r.get("tokens_in"):
        return f"packed {r['tokens_computed']}/{r['tokens_in']}"
    return r["status"]


def table(results: list[dict]) -> str:
    by: dict[str, dict] = {}
    for r in results:
        by.setdefault(r["type"], {})[r["layout"]] = r
    lines = ["| type | flat | tree | reason | s |", "|---|---|---|---|---|"]
    for t, rs in by.items():
        reasons = {lay: r["reason"] for lay, r in rs.items() if r.get("reason")}
        if len(set(reasons.values())) == 1:
            why = next(iter(reasons.values()))
        else:
            why = "; ".join(f"{lay}: {w}" for lay, w in reasons.items())
        secs = "+".join(f"{r['seconds'].get('total', 0):.0f}" for r in rs.values())
        lines.append(f"| {t} | {_cell(rs.get('flat'))} | {_cell(rs.get('tree'))} | {_short(why)} | {secs} |")
    return "\n".join(lines)


def counts(results: list[dict]) -> str:
    from collections import Counter

    status = Counter(r["status"] for r in results)
    out = [", ".join(f"{k}: {status[k]}" for k in ("packed", "declined", "wrong", "crashed", "eager_fails",
                                                    "unbuildable") if status[k]) + f" (of {len(results)} runs)"]
    for st in ("declined", "crashed", "wrong", "eager_fails", "unbuildable"):
        # grouped with their shapes left out (the flat and the tree batch differ in them)
        why = Counter(_short(re.sub(r"\[[0-9, ]+\]", "[...]", r["reason"] or ""), 110)
                      for r in results if r["status"] == st)
        if why:
            out.append(f"{st} by reason:")
            out += [f"  {n} x {w}" for w, n in why.most_common()]
    unwarned = [f"{r['type']}/{r['layout']}" for r in results if r["status"] == "declined" and not r["unpacked_warned"]]
    if unwarned:
        out.append(f"declined without a replaycompile warning: {', '.join(unwarned)}")
    return "\n".join(out)


def by_type(results: list[dict]) -> dict:
    """Per model type, one verdict over its layouts: ``packed`` when every layout packed exactly, else the worst
    status (wrong > crashed > declined > eager_fails > unbuildable) with that run's reason."""
    rank = ["wrong", "crashed", "declined", "eager_fails", "unbuildable", "packed"]
    out: dict[str, dict] = {}
    for r in results:
        cur = out.get(r["type"])
        if cur is None or rank.index(r["status"]) < rank.index(cur["status"]):
            out[r["type"]] = dict(status=r["status"], reason=r["reason"], layout=r["layout"])
    return out


def type_counts(results: list[dict]) -> str:
    """The sweep's headline: packed and exact in every layout, of the types a tiny model could be built and run
    eagerly for, and what the rest did."""
    from collections import Counter

    verdicts = by_type(results)
    st = Counter(v["status"] for v in verdicts.values())
    buildable = sum(n for k, n in st.items() if k not in ("unbuildable", "eager_fails"))
    pct = 100.0 * st["packed"] / buildable if buildable else 0.0
    return (f"{len(verdicts)} causal-LM types; {buildable} buildable (a tiny model builds and its eager step runs); "
            f"packed and exact in every layout: {st['packed']} of {buildable} ({pct:.1f}%); declined (exact, "
            f"with a reason): {st['declined']}; wrong: {st['wrong']}; crashed: {st['crashed']}; unbuildable: "
            f"{st['unbuildable']}; eager fails: {st['eager_fails']}")


def docs_page(results: list[dict], inner: str | None) -> str:
    import transformers

    verdicts = by_type(results)
    layouts = sorted({r["layout"] for r in results})
    head = [
        "# Model families: what the replay backend packs",
        "",
        "Written by `python bench/families.py --docs docs/families.md` (bench/families.py's docstring says how each",
        "tiny model is built and what each status means): one GRPO step per causal-LM type of transformers, eager",
        f"against `torch.compile(step, backend=\"replay\")`, layouts {', '.join(layouts)}, inner compiler "
        f"`{inner or 'inductor'}`, transformers {transformers.__version__}, torch {torch.__version__}.",
        "",
        type_counts(results),
        "",
        "## Counts by run and by reason",
        "",
        "```",
        counts(results),
        "```",
        "",
        "## Per type",
        "",
        table(results),
        "",
        "## Not packed, by type",
        "",
    ]
    head += [f"- **{t}** ({v['status']}, {v['layout']}): {_short(v['reason'], 300)}"
             for t, v in sorted(verdicts.items()) if v["status"] != "packed"]
    return "\n".join(head) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--types", default="all", help="comma-separated model types, 'issue' (ISSUE_FAMILIES) or 'all' "
                                                   "(every causal-LM type of transformers; the default)")
    lay = ap.add_mutually_exclusive_group()
    lay.add_argument("--flat", action="store_const", const=("flat",), dest="layouts", help="the flat group only")
    lay.add_argument("--tree", action="store_const", const=("tree",), dest="layouts", help="the two-level tree only")
    ap.add_argument("--inner", choices=["inductor", "aot_eager", "eager"], default=None,
                    help="the replay backend's inner compiler (default: the backend's own, inductor)")
    ap.add_argument("--json", help="write every result to this file")
    ap.add_argument("--from-json", help="render the results of an earlier run (its --json file) instead of running")
    ap.add_argument("--docs", help="also write the per-family page (docs/families.md) to this file")
    args = ap.parse_args(argv)
    if args.from_json:
        with open(args.from_json) as f:
            results = json.load(f)  # our own sweep's output: plain JSON, no pickle
        inner = results[0].get("inner") if results else None
        print(table(results) + "\n\n" + counts(results) + "\n\n" + type_counts(results))
        if args.docs:
            with open(args.docs, "w") as f:
                f.write(docs_page(results, inner))
        return 0
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    logging.getLogger("transformers").setLevel(logging.ERROR)
    if args.types == "all":
        types = all_model_types()
    elif args.types == "issue":
        types = list(ISSUE_FAMILIES)
    else:
        types = [t.strip() for t in args.types.split(",") if t.strip()]
    layouts = args.layouts or ("flat", "tree")
    results = []
    for i, t in enumerate(types):
        for layout in layouts:
            r = run_family(t, layout, args.inner)
            results.append(r)
            print(f"[{i + 1}/{len(types)}] {r['type']} {layout}: {_cell(r)}"
                  + (f" ({_short(r['reason'], 200)})" if r["reason"] else "") + f" {r['seconds']['total']:.1f} s",
                  file=sys.stderr, flush=True)
            if args.json:  # written as it goes: a long sweep killed midway keeps what it did
                with open(args.json, "w") as f:
                    json.dump(results, f, indent=1, default=str)
    print(table(results))
    print()
    print(counts(results))
    print()
    print(type_counts(results))
    if args.docs:
        with open(args.docs, "w") as f:
            f.write(docs_page(results, args.inner))
    return 0


if __name__ == "__main__":
    sys.exit(main())
