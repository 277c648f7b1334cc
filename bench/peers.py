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


def _sdpa_for_prefix_grouper(q, k, v, key_mask, module, sliding_window=None, **kwargs):
    """Prefix Grouper's ``attn_func`` contract: q/k/v [b, heads, n, d], a 2-D key padding mask [b, Nk]; returns
    [b, n, heads, d]. The prompt's call (Nq == Nk, no padding, no window that binds) is causal SDPA without a
    mask; a completion's call attends to every valid prompt key and causally to its own keys. A layer's sliding
    window (transformers passes it to the attention function: key k visible from query q iff q - k < window) is
    applied to both calls: the keys' indices are their positions, as the prompt is never padded."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    nq, nk = q.shape[2], k.shape[2]
    kwargs.pop("is_causal", None)
    window = sliding_window if sliding_window is not None and sliding_window < nk else None
    if nq == nk and window is None and bool(key_mask.all()):
        return sdpa_attention_forward(module, q, k, v, None, is_causal=True, **kwargs)[0]
    qi = torch.arange(nq, device=q.device)[:, None] + (nk - nq)
    kj = torch.arange(nk, device=q.device)[None, :]
    visible = kj <= qi
    if window is not None:
        visible = visible & (qi - kj < window)
    mask = key_mask.to(torch.bool)[:, None, None, :] & visible[None, None]
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
    return use_attention(model, ATTN_NAME, _attention)


def use_attention(model, name: str, fn):
    """Register ``fn`` as the attention implementation ``name`` (transformers' ``AttentionInterface``) and switch
    ``model`` to it; returns a function that switches it back (the benchmarks share one model between systems)."""
    from transformers import AttentionInterface
    AttentionInterface.register(name, fn)
    configs = {id(m.config): m.config for m in model.modules() if hasattr(getattr(m, "config", None),
                                                                            "_attn_implementation")}
    before = {k: c._attn_implementation for k, c in configs.items()}
    for c in configs.values():
        c._attn_implementation = name

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


# ------------------------------------------------------------------------------------------- tree packing peers
#
# AReaL's and TRL's tree packing: the batch's rows become one packed row holding each distinct token once (a
# prefix tree in depth-first order, positions = depth), attention restricted to each token's ancestors. The
# packing here is replaycompile.runtime.plan.build_plan (the data pipeline's part; any trie builder gives the same
# layout); what differs between the two peers is how the attention sees the tree:
#
# - dense: an [N, N] boolean mask through SDPA (what runs on any device; every (query, key) pair is computed)
# - flex:  FlexAttention with a BlockMask built from the same tree (skips the blocks no query sees; GPU only:
#          torch 2.13 has no CPU backward for it)

DENSE_TREE_ATTN = "dense_tree_mask_sdpa"
FLEX_TREE_ATTN = "flex_tree_attention"


def _dense_tree_attention(module, query, key, value, attention_mask, *args, tree_mask=None, sliding_window=None,
                          **kwargs):
    """SDPA over the packed row with the tree's dense [1, 1, N, N] boolean mask (``tree_mask(window)``: key
    visible iff ancestor, and within the layer's sliding window where it has one)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    kwargs.pop("is_causal", None)
    return sdpa_attention_forward(module, query, key, value, tree_mask(sliding_window), is_causal=False, **kwargs)


_flex_compiled = None


def _flex_tree_attention(module, query, key, value, attention_mask, *args, block_mask=None, sliding_window=None,
                         **kwargs):
    """FlexAttention over the packed row with the tree's BlockMask (``block_mask(window)``); returns
    [b, n, heads, d] as transformers expects."""
    global _flex_compiled
    from torch.nn.attention.flex_attention import flex_attention
    if _flex_compiled is None:  # compiled once: eager flex_attention materialises every score
        _flex_compiled = torch.compile(flex_attention, dynamic=True)
    out = _flex_compiled(query, key, value, block_mask=block_mask(sliding_window), scale=module.scaling,
                         enable_gqa=query.shape[1] != key.shape[1])
    return out.transpose(1, 2).contiguous(), None


def tree_visibility(subtree_end, depth=None, window=None):
    """The packed tree's mask rule: key k is visible to query q iff k <= q < subtree_end[k] (k is q's ancestor
    or q itself) and, with a sliding window, depth[q] - depth[k] < window (transformers' rule on positions), as a
    FlexAttention ``mask_mod``."""
    def mask_mod(b, h, q, k):
        visible = (k <= q) & (q < subtree_end[k])
        return visible if window is None else visible & (depth[q] - depth[k] < window)
    return mask_mod


def packed_tree_logp(model, ids, am, prompt_len: int, attention: str = "dense"):
    """Per-token log-probs of the completions ([B, C], zero where padded) computed on the batch packed as a
    prefix tree, the attention restricted by the tree (``attention``: "dense" or "flex"); the LM head runs on the
    distinct predicting rows only."""
    from replaycompile.runtime.plan import build_plan

    plan = build_plan(ids, am)
    dev = ids.device
    packed = ids.reshape(-1).index_select(0, plan.gather_index.to(dev))[None]
    pos = plan.columns.to(dev)[None]
    se = plan.subtree_end.to(dev)
    n = plan.num_packed
    if attention == "dense":
        q = torch.arange(n, device=dev)[:, None]
        k = torch.arange(n, device=dev)[None, :]

        def build(mask_mod):  # FlexAttention's rule, evaluated on every (query, key) pair
            return mask_mod(None, None, q, k)[None, None]
        kwarg, name, fn = "tree_mask", DENSE_TREE_ATTN, _dense_tree_attention
    elif attention == "flex":
        from torch.nn.attention.flex_attention import create_block_mask

        def build(mask_mod):
            return create_block_mask(mask_mod, None, None, n, n, device=dev)
        kwarg, name, fn = "block_mask", FLEX_TREE_ATTN, _flex_tree_attention
    else:
        raise ValueError(f"attention must be 'dense' or 'flex', got {attention!r}")
    masks = {}  # one per window the layers ask for (None: full attention), built on first use

    def mask_for(window):
        if window not in masks:
            masks[window] = build(tree_visibility(se, pos[0], window))
        return masks[window]
    extra = {kwarg: mask_for}
    restore = use_attention(model, name, fn)
    try:
        hidden = model.model(input_ids=packed, position_ids=pos, use_cache=False, **extra).last_hidden_state[0]
    finally:
        restore()
    # the rows that predict the completion tokens: columns [P-1, T-1) of every row, each distinct one once
    sub, where = plan.select_columns(prompt_len - 1, ids.shape[1] - 1)
    sub, where = sub.to(dev), where.to(dev)
    logp_rows = model.lm_head(hidden.index_select(0, sub)).float().log_softmax(-1)  # [M, V]
    valid = where < sub.numel()
    logp = logp_rows[where.clamp_max(max(sub.numel() - 1, 0)), ids[:, prompt_len:]]
    return logp * valid
