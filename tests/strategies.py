"""Hypothesis strategies for batches of RL rollouts (shared by the plan and backend tests)."""

from __future__ import annotations

import torch
from hypothesis import strategies as st

VOCAB = 4  # small on purpose: coincidental equalities between branches
MAX_B = 16
MAX_T = 40

tok = st.integers(0, VOCAB - 1)


@st.composite
def rollout_batches(draw):
    """TRL-shaped batches: left-padded prompts, right-padded completions.

    Completions grow as a tree of depth 1-3 below each prompt (a completion
    may branch again from a shared stem).  Several prompt groups give rows
    that share nothing (or share by coincidence, given the tiny vocab).
    """
    rows: list[tuple[list[int], list[int]]] = []  # (prompt, completion)

    def grow(prompt, stem, depth):
        g = draw(st.integers(1, 16))
        for _ in range(g):
            if len(rows) >= MAX_B:
                return
            piece = stem + draw(st.lists(tok, max_size=8))  # may be empty
            if depth > 1 and draw(st.booleans()):
                grow(prompt, piece, depth - 1)
            else:
                rows.append((prompt, piece))

    n_groups = draw(st.integers(1, 3))
    for _ in range(n_groups):
        if len(rows) >= MAX_B:
            break
        prompt = draw(st.lists(tok, max_size=8))
        grow(prompt, [], draw(st.integers(1, 3)))
    if draw(st.booleans()):  # exact duplicate rows
        rows += rows[: draw(st.integers(0, MAX_B - len(rows)))]

    pw = max(len(p) for p, _ in rows)
    cw = max(len(c) for _, c in rows)
    if pw + cw == 0:
        cw = 1  # T >= 1: an all-pad batch
    pad_id = draw(tok)  # pad id collides with real ids on purpose
    ids, mask = [], []
    for p, c in rows:
        lp, rp = pw - len(p), cw - len(c)
        ids.append([pad_id] * lp + p + c + [pad_id] * rp)
        mask.append([0] * lp + [1] * (len(p) + len(c)) + [0] * rp)
    ids = torch.tensor(ids)
    mask = torch.tensor(mask)
    pos = None
    mode = draw(st.sampled_from(["none", "cumsum", "broadcast"]))
    if mode == "cumsum":  # left-pad-aware positions, as HF generate uses
        pos = (mask.cumsum(1) - 1).clamp(min=0)
    elif mode == "broadcast":
        pos = torch.arange(ids.shape[1])[None, :] + draw(st.integers(0, 2))
    if draw(st.booleans()):
        mask = mask.bool()
    return ids, mask, pos


@st.composite
def mutated_batches(draw):
    """Arbitrary masks (pads anywhere) and positions, rows derived from one
    base row by mutating a suffix so sharing at every depth is common."""
    T = draw(st.integers(1, 12))
    B = draw(st.integers(1, 8))
    base_ids = draw(st.lists(st.integers(0, 2), min_size=T, max_size=T))
    base_m = draw(st.lists(st.integers(0, 1), min_size=T, max_size=T))
    ids, mask = [], []
    for _ in range(B):
        cut = draw(st.integers(0, T))
        ids.append(base_ids[:cut] + draw(st.lists(st.integers(0, 2), min_size=T - cut, max_size=T - cut)))
        mask.append(base_m[:cut] + draw(st.lists(st.integers(0, 1), min_size=T - cut, max_size=T - cut)))
    pos = None
    if draw(st.booleans()):
        pos = torch.tensor(draw(st.lists(st.lists(st.integers(0, 1), min_size=T, max_size=T), min_size=B, max_size=B)))
    return torch.tensor(ids), torch.tensor(mask), pos


any_batch = st.one_of(rollout_batches(), mutated_batches())
