"""Installed as ``replaycompile.passes`` (pyproject.toml's package-dir maps this top-level folder there).

Graph passes of the replay backend, in the order ``backend.ReplayGraph`` runs them (one entry function each):

1. ``sink_slices.sink_slices``, ``inline_checkpoint.inline_checkpoints``: semantics-preserving clean-ups.
2. ``region.analyze``: facts (``attention_sites``, ``roles``), then the decision (each node's ``Kind``, or the
   reason the graph is declined). No mutation.
3. ``rewrite.rewrite``: the packed graph, and the contract of its extra inputs (``packed_graph.PackedGraph``;
   ``replaycompile.runtime.inputs`` builds them per call). The core packing step (``rewrite.Packer``) and, each
   behind the option ``fusions``, the fusion passes: ``fuse_lm_head``, ``fuse_log_softmax``, ``fuse_tree_scan``,
   ``selected_tokens``; ``shared_chunks`` chunks detach_prefix's shared stream (its own option, ``shared_chunks``).
4. ``mask_probe``: the mask subgraphs the runtime's ``MaskVerifier`` (``replaycompile/runtime/masks.py``)
   evaluates across calls.

``sparrow_rewrite.rewrite_decode`` rewrites decode steps for Sparrow. ``nodes`` is their shared vocabulary.
Every pass counts what it did in ``torch._dynamo.utils.counters["replay"]``.
"""
