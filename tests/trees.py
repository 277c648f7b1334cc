"""Packed prefix trees built independently of the runtime plan (a token-level tree, DFS preorder), and q/k/v
makers: the tree-attention and block-sparse kernel tests check kernels against the spec with these. Also
``compile_for_hopper``, the ahead-of-time sm_90 compile the kernel tests share."""

from __future__ import annotations

import json
import os
import platform
import sys
from importlib import metadata

import pytest
import torch


class Tree:
    """Packed tree metadata in DFS preorder, plus each position's parent."""

    def __init__(self, parent, subtree_end, seg_q, seg_kv_ptr, kv_ranges):
        self.parent = parent
        self.subtree_end = subtree_end
        self.seg_q = seg_q
        self.seg_kv_ptr = seg_kv_ptr
        self.kv_ranges = kv_ranges

    @property
    def n(self):
        return len(self.parent)

    def meta(self):
        return (self.subtree_end, self.seg_q, self.seg_kv_ptr, self.kv_ranges)

    def path_to(self, pos):
        """Root-to-pos token positions (ascending)."""
        path = []
        while pos >= 0:
            path.append(pos)
            pos = self.parent[pos]
        return path[::-1]

    def leaves(self):
        has_child = set(p for p in self.parent if p >= 0)
        return [i for i in range(self.n) if i not in has_child]


def build_tree(segs, rng=None, split_prob=0.0, split_at_branch=True):
    """Build packed metadata from a segment-level description.

    segs: list of (parent_seg, cut, length); parent_seg is -1 for a root, else
    an earlier index, and the segment's first token hangs off token ``cut`` of
    that parent segment. Children keep creation order in the DFS. With
    ``split_at_branch`` a token whose parent has several children starts a new
    segment (else a parent's first child continues the parent's run); with
    ``split_prob`` chain runs are randomly cut into more segments. Either way
    an ancestor range may end right where the own range begins.
    """
    # token-level tree in creation numbering
    tok_parent, seg_tokens = [], []
    for ps, cut, length in segs:
        toks = []
        for i in range(length):
            if i == 0:
                p = -1 if ps < 0 else seg_tokens[ps][cut]
            else:
                p = toks[-1]
            tok_parent.append(p)
            toks.append(len(tok_parent) - 1)
        seg_tokens.append(toks)
    n = len(tok_parent)
    children = [[] for _ in range(n)]
    roots = []
    for t, p in enumerate(tok_parent):
        (roots if p < 0 else children[p]).append(t)
    # DFS preorder (iterative; trees can be deep chains)
    order = []
    stack = list(reversed(roots))
    while stack:
        t = stack.pop()
        order.append(t)
        stack.extend(reversed(children[t]))
    pos_of = {t: i for i, t in enumerate(order)}
    parent = [-1 if tok_parent[t] < 0 else pos_of[tok_parent[t]] for t in order]
    # subtree sizes, children after parents in preorder so walk backwards
    size = [1] * n
    for i in range(n - 1, -1, -1):
        if parent[i] >= 0:
            size[parent[i]] += size[i]
    subtree_end = [i + size[i] for i in range(n)]
    # segments: maximal chain runs (optionally split further)
    n_children = [0] * n
    for p in parent:
        if p >= 0:
            n_children[p] += 1
    starts = [
        i
        for i in range(n)
        if i == 0
        or parent[i] != i - 1
        or (split_at_branch and n_children[i - 1] > 1)
        or (rng is not None and rng.random() < split_prob)
    ]
    seg_q, ptr, ranges = [], [0], []
    for j, s0 in enumerate(starts):
        e = starts[j + 1] if j + 1 < len(starts) else n
        anc = []
        a = parent[s0]
        while a >= 0:
            anc.append(a)
            a = parent[a]
        anc.sort()
        # merge consecutive ancestor positions into [start, stop) ranges
        for a in anc:
            if ranges[ptr[-1]:] and ranges[-1][1] == a:
                ranges[-1][1] = a + 1
            else:
                ranges.append([a, a + 1])
        ranges.append([s0, e])
        ptr.append(len(ranges))
        seg_q.append([s0, e])
    t = lambda x: torch.tensor(x, dtype=torch.int64)  # noqa: E731
    return Tree(parent, t(subtree_end), t(seg_q).reshape(-1, 2), t(ptr), t(ranges).reshape(-1, 2))


def random_segs(rng, n_roots, n_children, max_len):
    segs = [(-1, 0, rng.randint(1, max_len)) for _ in range(n_roots)]
    for _ in range(n_children):
        ps = rng.randrange(len(segs))
        segs.append((ps, rng.randrange(segs[ps][2]), rng.randint(1, max_len)))
    return segs


def make_qkv(n, hq, hkv, d, dv, dtype, seed, transposed=False):
    g = torch.Generator().manual_seed(seed)

    def mk(h, dd):
        if transposed:  # HF layout: [1, N, H, D] viewed as [1, H, N, D]
            x = torch.randn(1, n, h, dd, generator=g).to(dtype).transpose(1, 2)
        else:
            x = torch.randn(1, h, n, dd, generator=g).to(dtype)
        return x

    return mk(hq, d), mk(hkv, d), mk(hkv, dv)


# ------------------------------------------------------------------------------------------------ sm_90 compile


def _wheel_ships_ptxas() -> bool:
    """Triton's Linux x86_64 wheels bundle ptxas (triton/backends/nvidia/bin); a source build may not."""
    if sys.platform != "linux" or platform.machine() != "x86_64":
        return False
    try:
        direct = metadata.distribution("triton").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return False
    # pip writes direct_url.json for local / VCS installs only; a local directory means a source build
    return not (direct and "dir_info" in json.loads(direct))


def compile_for_hopper(fn, signature: dict, constants: dict, **options):
    """Compile the Triton kernel function ``fn`` ahead of time for sm_90 (Triton's compiler and ptxas, no GPU)
    and return it; the cubin is checked to exist, so ptxas really ran. This is CI's only Hopper check, so a
    missing ptxas fails where the Triton wheel ships one, and skips (saying so) elsewhere."""
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile
    from triton.runtime.jit import JITFunction

    try:
        knobs.nvidia.ptxas  # noqa: B018 - resolving the knob runs `ptxas --version`; RuntimeError if none works
    except RuntimeError as e:
        bundled = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
        where = f"{bundled} or $TRITON_PTXAS_PATH={os.environ.get('TRITON_PTXAS_PATH')!r}"
        if _wheel_ships_ptxas():
            pytest.fail(f"{e} ({where}), which the Triton wheel for Linux x86_64 bundles: reinstall triton from "
                        f"the wheel (pip install --force-reinstall triton=={triton.__version__}) or point "
                        f"TRITON_PTXAS_PATH at a CUDA 12.8+ ptxas")
        pytest.skip(f"{e} ({where}) and this Triton install is not a Linux x86_64 wheel")
    from replaycompile.kernels import triton_build

    triton_build.bind(fn)  # the kernel's module reads Triton and the shared device functions late (triton_build.py)
    compiled = compile(ASTSource(JITFunction(fn), signature, constants), target=GPUTarget("cuda", 90, 32),
                       options=options)
    assert compiled.asm.get("cubin"), "Triton returned no cubin for sm_90"
    return compiled
