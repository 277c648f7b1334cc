"""A Llama-shaped test model with real retrieval heads, set by hand, and its associative-recall task.

Random-weight models attend almost uniformly, so sparse attention looks harmless on them. This model does what
long-context models do on recall: most tokens are predicted locally, a few need one far-away key. Decoding it
sparsely shows Sparrow's effect: the mean acceptance stays high while the 5th percentile collapses once the
budget misses the page that holds the answer.

The task: a context of filler tokens with ``n_pairs`` (key, value) pairs planted at random positions; later a key
appears again and the next token must be its value. Tokens: 0 BOS, 1..15 fillers, 16..39 keys, 40..63 values.

The weights (exact, no training) implement an induction circuit in 8 layers, head_dim 128, 2 query heads and 1
KV head, ``rope_theta=1e12`` so that frequency pairs 0..15 rotate fast (positional attention) and pairs 32..63
barely move over 64K tokens (content attention):

* layer 0, a previous-token head: a constant query and key rotated by one position, so the RoPE score
  ``sum_f cos(theta_f (j - i + 1))`` peaks at key ``j = i - 1``; it copies that token into a "previous" slot;
* layer 2, the retrieval head: a key token's query is its code (a one-hot in the content dims) plus half the BOS
  code; position j's key is the code of its *previous* token, so the query of key k matches the position right
  after k's earlier occurrence, whose value token is written to an "answer" slot. Without a match the query lands
  on BOS (value 0). Every key also carries ``noise`` times a fixed random direction per previous token, which
  blurs page centroids (as real keys do) without confusing the exact attention;
* the LM head reads the answer slot (the retrieved value), and otherwise a fixed bigram table: fillers cycle,
  with a small chance of emitting a key (a query), values are followed by fillers;
* layers 1 and 3-7 and every MLP are zero (identity on the residual), but they are real layers: Sparrow keeps
  layers 0-1 dense and makes the other six sparse, as on a real model.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = ["retrieval_model", "weakened_recall_model", "recall_sequences", "first_window_start", "BOS", "FILLERS",
           "KEYS", "VALUES", "recall_accuracy"]

BOS = 0
FILLERS = list(range(1, 16))
KEYS = list(range(16, 40))
VALUES = list(range(40, 64))
VOCAB = 64
HIDDEN = 256
HEAD_DIM = 128
# residual slots
_TOK, _CONST, _PREV, _ANS = 0, 64, 65, 129
# head-dim ranges: RoPE pairs (f, f + 64) share frequency f
_POS_DIMS = list(range(0, 16))
_CONTENT_DIMS = list(range(32, 64)) + list(range(96, 128))


def _rope_config(num_layers: int):
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=64, num_hidden_layers=num_layers,
                       num_attention_heads=2, num_key_value_heads=1, head_dim=HEAD_DIM, rope_theta=1e12,
                       max_position_embeddings=1 << 17, rms_norm_eps=1e-6, tie_word_embeddings=False,
                       bos_token_id=BOS, eos_token_id=None, pad_token_id=BOS, attention_bias=False, mlp_bias=False)


def _rotate(x: Tensor, pos: float, theta: Tensor) -> Tensor:
    """HF's rotate-half RoPE of a head vector x [128] to position ``pos``."""
    half = HEAD_DIM // 2
    ang = pos * theta
    cos, sin = torch.cos(ang).repeat(2), torch.sin(ang).repeat(2)
    rot = torch.cat([-x[half:], x[:half]])
    return x * cos + rot * sin


@torch.no_grad()
def retrieval_model(noise: float = 1.0, num_layers: int = 8, seed: int = 0, dtype=torch.float32,
                    attn_implementation: str = "sdpa"):
    """The hand-set recall model (``LlamaForCausalLM``). ``noise`` scales the per-token random key directions:
    larger blurs page centroids more, so a sparse decoder needs more pages to find the answer."""
    from transformers import LlamaForCausalLM

    if num_layers < 3:
        raise ValueError("retrieval_model: needs at least 3 layers (previous-token head in 0, retrieval in 2)")
    cfg = _rope_config(num_layers)
    cfg._attn_implementation = attn_implementation
    model = LlamaForCausalLM(cfg)
    for p in model.parameters():
        p.zero_()
    g = torch.Generator().manual_seed(seed)
    half = HEAD_DIM // 2
    theta = 1e12 ** (-torch.arange(half, dtype=torch.float64) * 2 / HEAD_DIM)
    sqrt_d = math.sqrt(HEAD_DIM)

    emb = model.model.embed_tokens.weight
    for t in range(VOCAB):
        emb[t, _TOK + t] = 1.0
        emb[t, _CONST] = 1.0
    layers = model.model.layers
    # RMSNorm weights that undo the norm of the expected residual (2, then 3 unit entries)
    for i, layer in enumerate(layers):
        layer.input_layernorm.weight.fill_(math.sqrt((2 if i == 0 else 3) / HIDDEN))
        layer.post_attention_layernorm.weight.fill_(1.0)
    model.model.norm.weight.fill_(math.sqrt(3.5 / HIDDEN))

    # layer 0: previous-token head (query head 0; head 1 and its output stay zero)
    a0 = layers[0].self_attn
    u = torch.zeros(HEAD_DIM, dtype=torch.float64)
    u[_POS_DIMS] = math.sqrt(40.0 * sqrt_d)  # margin 0.815 * 16 pairs ... * 40 -> a one-hot softmax
    a0.q_proj.weight[:HEAD_DIM, _CONST] = u.float()
    a0.k_proj.weight[:, _CONST] = _rotate(u, 1.0, theta).float()
    for t in range(VOCAB):
        a0.v_proj.weight[t, _TOK + t] = 1.0
        a0.o_proj.weight[_PREV + t, t] = 1.0

    # layer 2: retrieval head (both query heads identical, sharing the KV head)
    a2 = layers[2].self_attn
    beta = 60.0 * sqrt_d
    code = {BOS: _CONTENT_DIMS[0]}
    for i, k in enumerate(KEYS):
        code[k] = _CONTENT_DIMS[1 + i]
    directions = torch.randn(VOCAB, len(_CONTENT_DIMS), generator=g, dtype=torch.float64)
    directions /= directions.norm(dim=1, keepdim=True)
    for t in range(VOCAB):
        kcol = torch.zeros(HEAD_DIM, dtype=torch.float64)
        if t in code:
            kcol[code[t]] = 1.0
        kcol[_CONTENT_DIMS] += noise * directions[t] * (t != BOS)
        a2.k_proj.weight[:, _PREV + t] = (kcol * math.sqrt(beta)).float()
        qcol = torch.zeros(HEAD_DIM, dtype=torch.float64)
        qcol[code[BOS]] = 0.5
        if t in KEYS:
            qcol[code[t]] = 1.0
        for h in range(2):
            a2.q_proj.weight[h * HEAD_DIM:(h + 1) * HEAD_DIM, _TOK + t] = (qcol * math.sqrt(beta)).float()
    for t in VALUES:
        a2.v_proj.weight[t, _TOK + t] = 1.0
        for h in range(2):  # the two heads are equal: average them
            a2.o_proj.weight[_ANS + t, h * HEAD_DIM + t] = 0.5

    # LM head: the answer slot, else the bigram table
    w = model.lm_head.weight
    gamma, delta = 12.0, 10.0
    for t in VALUES:
        w[t, _ANS + t] = gamma
    for j, f in enumerate(FILLERS):
        w[FILLERS[(j + 1) % len(FILLERS)], _TOK + f] = delta
        for k in KEYS:
            w[k, _TOK + f] = delta - 5.0  # a query now and then: about 14% after a filler
    for v in VALUES:
        for f in FILLERS:
            w[f, _TOK + v] = delta - 2.0
    w[FILLERS[0], _TOK + BOS] = delta
    model.to(dtype)
    model.eval()
    return model


@torch.no_grad()
def weakened_recall_model(readout: float, noise: float = 1.0, seed: int = 0):
    """The recall model with its value readout scaled by ``readout`` (<1: a weak skill that RL can improve, and
    a missed retrieval's acceptance well below 1: see README, "Why 0.8076")."""
    model = retrieval_model(noise=noise, seed=seed)
    for v in VALUES:
        model.lm_head.weight[v, _ANS + v] *= readout
    return model


def first_window_start(n_pairs: int = 24) -> int:
    """The earliest position ``recall_sequences`` accepts for a window: its ``n_pairs`` pairs are planted before
    the first window, past the sink page."""
    return 4 * n_pairs + 32


def recall_sequences(batch: int, context: int, window: int = 64, n_pairs: int = 24, query_every: int = 8,
                     seed: int = 0, windows=None, return_pairs: bool = False):
    """Teacher-forcing data: [B, context + window] token ids and a bool mask of the positions whose *next*
    token is a retrieved value (the query keys); with ``return_pairs``, also each row's planted pairs as a
    ``{key: value}`` dict (a reward needs them; scanning the tokens for them would also pick up chance
    key-value bigrams of the windows).

    BOS, then random fillers with ``n_pairs`` (key, value) pairs planted at random positions before the first
    window; every window (``window`` tokens starting at each of ``windows``, default ``[context]``) asks for
    planted keys every ``query_every`` tokens, each followed by its value.
    """
    n = context + window
    windows = [context] if windows is None else sorted(int(w) for w in windows)
    if n_pairs > len(KEYS):
        raise ValueError(f"recall_sequences: at most {len(KEYS)} pairs")
    if windows[0] < first_window_start(n_pairs) or windows[-1] + window > n:
        raise ValueError(f"recall_sequences: windows {windows} leave no room for {n_pairs} pairs before them, or "
                         f"end past {n} tokens")
    g = torch.Generator().manual_seed(seed)
    seqs = torch.empty(batch, n, dtype=torch.long)
    is_query = torch.zeros(batch, n, dtype=torch.bool)
    pairs = []
    fill = torch.tensor(FILLERS)
    for b in range(batch):
        # random fillers: pages differ, so page centroids carry noise as in real text
        s = fill[torch.randint(len(FILLERS), (n,), generator=g)]
        s[0] = BOS
        keys = torch.tensor(KEYS)[torch.randperm(len(KEYS), generator=g)[:n_pairs]]
        vals = torch.tensor(VALUES)[torch.randint(len(VALUES), (n_pairs,), generator=g)]
        # distinct slots for the pairs, away from the sink page and before the first window
        slots = torch.randperm((windows[0] - 32) // 2, generator=g)[:n_pairs] * 2 + 16
        for key, val, p in zip(keys.tolist(), vals.tolist(), slots.tolist()):
            s[p], s[p + 1] = key, val
        pairs.append(dict(zip(keys.tolist(), vals.tolist())))
        for w in windows:
            for p in range(w, w + window - 1, query_every):
                i = int(torch.randint(n_pairs, (1,), generator=g))
                s[p], s[p + 1] = keys[i], vals[i]
                is_query[b, p] = True
        seqs[b] = s
    return (seqs, is_query, pairs) if return_pairs else (seqs, is_query)


@torch.no_grad()
def recall_accuracy(model, seqs: Tensor, is_query: Tensor) -> float:
    """Fraction of query positions whose greedy next token is the planted value (one dense forward)."""
    logits = model(input_ids=seqs).logits
    pred = logits[:, :-1].argmax(-1)
    hit = pred == seqs[:, 1:]
    q = is_query[:, :-1]
    return float(hit[q].float().mean())
