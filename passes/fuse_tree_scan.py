"""Fusion pass: a recurrent layer (Gated DeltaNet, Mamba-2) runs once on the prefix tree as one opaque op.

``recurrent.tree_scan_sites`` found the layers (module path -> ``TreeScanSite``: the layer's packed input, its
output, the nodes inside it, its weights); here each becomes one ``replaycompile::gated_deltanet_tree`` /
``mamba2_tree`` call on the packed tokens, its scan forking at each branch point, and the per-row nodes inside
it are not copied (option ``recurrent``; ``fusions`` name ``"tree_scan"``).
"""

from __future__ import annotations

import torch
import torch.fx as fx

import replaycompile.kernels.ssd_tree  # noqa: F401 - registers replaycompile::mamba2_tree
import replaycompile.kernels.tree_scan  # noqa: F401 - registers replaycompile::gated_deltanet_tree


def tree_scan_call(kind: str = "gated_deltanet"):
    """The op the packed graph calls for a recurrent layer of ``kind`` (``recurrent.TreeScanSite.kind``) run on
    the prefix tree: opaque to the inner compiler (kernels/tree_scan.py, kernels/ssd_tree.py), so inductor
    compiles the graph around it."""
    return {"gated_deltanet": torch.ops.replaycompile.gated_deltanet_tree.default,
            "mamba2": torch.ops.replaycompile.mamba2_tree.default}[kind]


class TreeScan:
    """The layers run on the prefix tree: their outputs (source node -> site), which the core packing step asks
    for through ``packed_value``, and the nodes inside them, which it skips."""

    name = "tree_scan"

    def __init__(self, sites: dict):
        self.sites = {s.output: s for s in sites.values()}
        self.inside = {n for s in self.sites.values() for n in s.inside}

    def packed_value(self, p, x: fx.Node, sp: int, st):
        """The layer's packed output straight from its packed input (one call per stream and space)."""
        key = (x, sp)
        if key not in st.rows:
            site = self.sites[x]
            st.rows[key] = p.g.call_function(
                tree_scan_call(site.kind),
                (st.env[site.hidden], [p.get_row(w) for w in site.weights], p.plan["scatter_index"],
                 p.plan["gather_index"], p.plan["seg_q"], *site.sizes))
        return st.rows[key]
