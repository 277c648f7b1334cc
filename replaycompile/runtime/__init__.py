"""Per-call code of the replay backend: what runs on every call of a packed graph, never a graph rewrite.

``plan`` (a batch's prefix tree and its index tensors), ``inputs`` (the packed graph's extra inputs from a plan,
following the contract ``passes.packed_graph.PackedGraph`` wrote down), ``masks`` (the attention masks verified across
calls; a window it finds is handed back to the backend, which has the passes rewrite), ``continuation`` (a batch
carried from graph to graph of one forward). Imports of the passes are their records and evaluators only
(``PackedGraph``, ``keep_positions``, ``mask_probe``)."""
