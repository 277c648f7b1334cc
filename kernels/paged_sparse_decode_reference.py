"""Reference of Sparrow decode over a paged cache (``paged_sparse_decode.py``): the rows' keys and values as plain
tensors, the budget from the schedule's page table, and the selection and attention rules of
``sparse_decode_reference.py`` (pages of ``page_size`` keys; every key of a row is real, so the sink pages are the
row's first). A page that the budget covers entirely is dense decode attention."""

from __future__ import annotations

import torch
from torch import Tensor

from .sparse_decode_reference import select_pages_reference, sparse_decode_reference

__all__ = ["paged_sparse_decode_reference"]


def paged_sparse_decode_reference(query: Tensor, keys: list, values: list, topk: list, page_size: int, sink: int,
                                  local: int, scale: float) -> Tensor:
    """query [n, Hq, D]; keys[i], values[i] [Hkv, L_i, D] (row i's cache, current token included); topk[i] the pages
    row i selects by score. Returns [n, Hq, D] in query.dtype (float64 math)."""
    out = []
    for i in range(query.shape[0]):
        k, v = keys[i][None], values[i][None]
        length = k.shape[2]
        visible = torch.ones(1, length, dtype=torch.bool)
        q = query[i][None, :, None]
        kept = select_pages_reference(q, k, visible, length, int(topk[i]), page_size, sink, local)
        out.append(sparse_decode_reference(q, k, v, visible, kept, page_size, scale)[0, :, 0])
    return torch.stack(out)
