"""The device pass: give each op node the variant of its op that runs on the target device.

Most ops run the same code on every device through `xp`; an op with a device library (cuDNN's
convolution and pooling on GPUs) has a variant whose backward reads different arrays, so the
choice must be made before the gradient pass and the memory plan. `specialize` asks the kernel
registry for every op node's `device_variant(op, ctx, dtype)` (dtype: the node's first
output's) and, when any answer differs, returns a copy of the graph with those ops swapped in:
the same nodes in the same order with the same names, attrs and entries, so every entry id
still means what it meant.
"""
from __future__ import annotations

from typing import Sequence

from ..graph import Graph
from ..kernels import device_variant

__all__ = ["specialize"]


def specialize(graph: Graph, dtypes: Sequence, ctx) -> Graph:
    """`graph` with each op replaced by `device_variant(op, ctx, dtype)`; `graph` itself when
    no op has a variant for `ctx` (always the case on CPUs)."""
    if ctx is None:
        return graph
    chosen = []
    for nid, node in enumerate(graph.nodes):
        op = node.op
        chosen.append(op if op is None else device_variant(op, ctx, dtypes[graph.row_ptr[nid]]))
    return graph.rebuilt(chosen)
