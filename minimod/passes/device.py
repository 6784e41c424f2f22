"""The device pass: give each op node the variant of its op that runs on the target device.

Most ops run the same code on every device through `xp`; an op with a device library (cuDNN's
convolution and pooling on GPUs) has a variant whose backward reads different arrays, so the
choice must be made before the gradient pass and the memory plan. `specialize` asks every op
node's op for `for_device(ctx, dtype)` (dtype: the node's first output's) and, when any answer
differs, returns a copy of the graph with those ops swapped in: the same nodes in the same order
with the same names, attrs and entries, so every entry id still means what it meant.
"""
from __future__ import annotations

from typing import Sequence

from ..symbol.graph import Entry, Graph, Node

__all__ = ["specialize"]


def specialize(graph: Graph, dtypes: Sequence, ctx) -> Graph:
    """`graph` with each op replaced by `op.for_device(ctx, dtype)`; `graph` itself when no op
    has a variant for `ctx` (always the case on CPUs)."""
    if ctx is None:
        return graph
    chosen = []
    for nid, node in enumerate(graph.nodes):
        op = node.op
        chosen.append(op if op is None else op.for_device(ctx, dtypes[graph.row_ptr[nid]]))
    if all(new is node.op for new, node in zip(chosen, graph.nodes)):
        return graph
    copies: dict = {}
    for node, op in zip(graph.nodes, chosen):
        if op is node.op and all(id(e.node) not in copies for e in node.inputs):
            continue  # untouched, and so is everything it reads
        copies[id(node)] = Node(op, node.name, node.attrs,
                                [Entry(copies.get(id(e.node), e.node), e.index)
                                 for e in node.inputs])
    nodes = [copies.get(id(n), n) for n in graph.nodes]
    outputs = [Entry(copies.get(id(e.node), e.node), e.index) for e in graph.outputs]
    return Graph(nodes, outputs)
