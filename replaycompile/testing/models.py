"""Tiny random-weight Hugging Face causal LMs built locally from configs (no model hub on our machines)."""

from __future__ import annotations

import torch

FAMILIES = ("qwen3", "qwen2", "llama", "mistral")
MOE_FAMILIES = ("qwen3_moe", "mixtral", "gpt_oss")  # mixture-of-experts: top-k routing over 4 experts
HYBRID_FAMILIES = ("qwen3_next",)  # recurrent (Gated DeltaNet) layers interleaved with attention

_TINY_MOE = {
    # every layer sparse; norm_topk_prob as the released Qwen3-MoE checkpoints set it
    "qwen3_moe": dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, norm_topk_prob=True,
                      decoder_sparse_step=1, mlp_only_layers=[]),
    "mixtral": dict(num_local_experts=4, num_experts_per_tok=2, intermediate_size=32, sliding_window=None),
    # full attention in both layers (GPT-OSS's attention sinks apply to every layer regardless)
    "gpt_oss": dict(num_local_experts=4, num_experts_per_tok=2, intermediate_size=32,
                    layer_types=["full_attention", "full_attention"]),
}

# Qwen3-Next: a Gated DeltaNet layer then an attention layer (the released model interleaves 3:1), GQA-style
# linear heads (2 key heads, 4 value heads), a 4-expert top-2 MoE with its shared expert in every layer. Without
# flash-linear-attention / causal-conv1d installed HF runs its torch fallbacks (torch_chunk_gated_delta_rule).
_TINY_HYBRID = {
    "qwen3_next": dict(layer_types=["linear_attention", "full_attention"], linear_conv_kernel_dim=4,
                       linear_key_head_dim=16, linear_value_head_dim=16, linear_num_key_heads=2,
                       linear_num_value_heads=4, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                       shared_expert_intermediate_size=32, decoder_sparse_step=1, mlp_only_layers=[]),
}

_TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16, vocab_size=128, max_position_embeddings=4096)


def tiny_config(family: str = "qwen3", attn_implementation: str = "sdpa", **overrides):
    from transformers import AutoConfig

    known = FAMILIES + MOE_FAMILIES + HYBRID_FAMILIES
    if family not in known:
        raise ValueError(f"unknown model family {family!r}; built-in tiny configs exist for {list(known)}")
    kw = {**_TINY, **_TINY_MOE.get(family, {}), **_TINY_HYBRID.get(family, {}), **overrides}
    if family in HYBRID_FAMILIES:
        # the layer pattern follows num_hidden_layers (or sets it), as the released configs derive one from the other
        n = overrides.get("num_hidden_layers", len(kw["layer_types"]))
        kw["layer_types"] = (list(kw["layer_types"]) * n)[:n]
        kw["num_hidden_layers"] = n
    if family == "mistral":
        kw.setdefault("sliding_window", None)
    cfg = AutoConfig.for_model(family, **kw)
    cfg._attn_implementation = attn_implementation
    return cfg


def tiny_model(family: str = "qwen3", attn_implementation: str = "sdpa", seed: int = 0,
               dtype: torch.dtype = torch.float32, **overrides):
    """A random-weight causal LM of ``family`` (dropout probabilities 0), deterministic for a seed."""
    from transformers import AutoModelForCausalLM

    cfg = tiny_config(family, attn_implementation, **overrides)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(cfg)
    return model.to(dtype)


def perturbed_copy(model, seed: int = 0, scale: float = 0.02):
    """A deep copy of ``model`` with every parameter moved by ``scale`` times its own standard deviation (seeded
    Gaussian noise; a parameter with zero or undefined spread, e.g. a norm weight of ones, stays put): a policy a
    small update away from ``model``, as the rollout policy is from the one being trained."""
    import copy

    old = copy.deepcopy(model)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for q in old.parameters():
            q.add_(scale * q.float().std().nan_to_num(0.0).item() * torch.randn(q.shape, generator=g).to(q))
    return old


def behaviour_logprobs(model, input_ids, attention_mask, prompt_len: int, seed: int = 0, scale: float = 0.02,
                       rows: int | None = None) -> torch.Tensor:
    """The stored rollout ("old") log-probs of a GRPO/PPO batch, for tests, demos and benchmarks: [B, C] float32
    log-probs of the completion tokens ``input_ids[:, prompt_len:]`` under :func:`perturbed_copy` of ``model``,
    computed under no_grad, ``rows`` rows per forward (all at once by default).

    Why a perturbed copy: the old log-probs must come from parameters other than the ones trained. The current
    model's own log-probs plus noise make the ratio exp(logp - old_logp) equal exp(-noise) at evaluation, so the
    loss value no longer depends on the model at all, and "the compiled loss equals eager's" proves nothing."""
    old = perturbed_copy(model, seed, scale)
    c = input_ids.shape[1] - prompt_len
    b = input_ids.shape[0]
    rows = b if rows is None else rows
    out = []
    with torch.no_grad():
        for i in range(0, b, rows):
            logits = old(input_ids=input_ids[i:i + rows], attention_mask=attention_mask[i:i + rows], use_cache=False,
                         logits_to_keep=c + 1).logits[:, :-1]
            out.append(logits.float().log_softmax(-1).gather(-1, input_ids[i:i + rows, prompt_len:, None]).squeeze(-1))
    return torch.cat(out)
