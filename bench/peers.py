"""Peer systems the benchmarks compare against, each given its best CPU setup.

Prefix Grouper (PyPI ``prefix_grouper``, what verl ships as ``use_prefix_grouper``): the G rows of a group become
one row ``[prompt, completion_1, ..., completion_G]``; each attention layer runs the prompt's self-attention once
and every completion's attention against the prompt's K/V repeated per completion. Its best setup here is what a
user of it would write:

- its own data API: ``PrefixGrouper.from_ungrouped_masks`` per batch, ``concat_input`` for the token ids and the
  hand-built position ids (the prompt 0..P-1, every completion P..P+c-1), ``split_output`` for the hidden states;
- an SDPA adapter registered through transformers' ``AttentionInterface`` (the package ships one for
  flash-attention only, which has no CPU build): the prompt's call is plain causal SDPA, each completion's call a
  boolean mask that is causal aligned to the last key (its queries are the last positions of its keys);
- no mask built by transformers (an attention implementation without a mask function gets none), and the LM
  head applied to the completion positions only.

What a user writes to adopt it is this module's ``prefix_grouper_loss`` plus the registration (about 40 lines),
and the data path has to hand over the prompt and the completions apart.
"""

from __future__ import annotations

import torch

ATTN_NAME = "prefix_grouper_sdpa"


def _sdpa_for_prefix_grouper(q, k, v, key_mask, module, **kwargs):
    """Prefix Grouper's ``attn_func`` contract: q/k/v [b, heads, n, d], a 2-D key padding mask [b, Nk]; returns
    [b, n, heads, d]. The prompt's call (Nq == Nk, no padding) is causal SDPA without a mask; a completion's call
    attends to every valid prompt key and causally to its own keys."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    nq, nk = q.shape[2], k.shape[2]
    kwargs.pop("is_causal", None)
    if nq == nk and bool(key_mask.all()):
        return sdpa_attention_forward(module, q, k, v, None, is_causal=True, **kwargs)[0]
    qi = torch.arange(nq, device=q.device)[:, None] + (nk - nq)
    kj = torch.arange(nk, device=q.device)[None, :]
    mask = key_mask.to(torch.bool)[:, None, None, :] & (kj <= qi)[None, None]
    return sdpa_attention_forward(module, q, k, v, mask, is_causal=False, **kwargs)[0]


def _attention(module, query, key, value, attention_mask, *args, prefix_grouper, **kwargs):
    from prefix_grouper.forward import AttentionForward
    # attention_mask is None (no mask function is registered for this implementation); Prefix Grouper's own
    # masks are used instead
    return AttentionForward(_sdpa_for_prefix_grouper)(prefix_grouper, query, key, value, module, *args,
                                                      **kwargs), None


def use_prefix_grouper(model):
    """Register the SDPA adapter and switch ``model`` (a transformers causal LM) to it; returns a function that
    switches it back."""
    from transformers import AttentionInterface
    AttentionInterface.register(ATTN_NAME, _attention)
    configs = {id(m.config): m.config for m in model.modules() if hasattr(getattr(m, "config", None),
                                                                            "_attn_implementation")}
    before = {k: c._attn_implementation for k, c in configs.items()}
    for c in configs.values():
        c._attn_implementation = ATTN_NAME

    def restore():
        for k, c in configs.items():
            c._attn_implementation = before[k]
    return restore


def prefix_grouper_logp(model, ids, am, prompt_len: int):
    """Per-token log-probs of the completions ([G, C], zero where padded) of one group: ``ids``/``am`` [G, T]
    right-padded rows that share their first ``prompt_len`` tokens."""
    from prefix_grouper import PrefixGrouper

    g = ids.shape[0]
    p = prompt_len
    prefix = ids[:1, :p]
    prefix_mask = am[:1, :p].bool()
    suffix, suffix_mask = ids[:, p:], am[:, p:].bool()
    pg = PrefixGrouper.from_ungrouped_masks(prefix_mask, suffix_mask, group_sizes=g, device=ids.device)
    pos_prefix = torch.arange(p, device=ids.device)[None]
    pos_suffix = (p + torch.arange(suffix.shape[1], device=ids.device))[None].expand(g, -1)
    grouped_ids = pg.concat_input(prefix, prefix_mask, suffix, suffix_mask)
    grouped_pos = pg.concat_input(pos_prefix, prefix_mask, pos_suffix, suffix_mask)
    hidden = model.model(input_ids=grouped_ids, position_ids=grouped_pos, use_cache=False,
                         prefix_grouper=pg).last_hidden_state
    # include_prefix_last=1: the prompt's last position predicts each completion's first token
    _, _, suffix_hidden, _ = pg.split_output(hidden, include_prefix_last=1)
    c = suffix.shape[1]
    logits = model.lm_head(suffix_hidden[:, :c])
    logp = logits.float().log_softmax(-1).gather(-1, suffix[..., None]).squeeze(-1)
    return logp * suffix_mask
