"""Tiny random-weight Hugging Face causal LMs built locally from configs (no model hub on our machines)."""

from __future__ import annotations

import torch

FAMILIES = ("qwen3", "qwen2", "llama", "mistral")

_TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16, vocab_size=128, max_position_embeddings=4096)


def tiny_config(family: str = "qwen3", attn_implementation: str = "sdpa", **overrides):
    from transformers import AutoConfig

    if family not in FAMILIES:
        raise ValueError(f"unknown model family {family!r}; built-in tiny configs exist for {list(FAMILIES)}")
    kw = {**_TINY, **overrides}
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
