"""The layout pass: keep data batch-last, (C, *spatial, N) or (features, N), between ops that
work that way.

Convolution computes in a batch-last work layout and turns its result back into MXNet's
(N, C, *spatial), which the next convolution (or the fused activation-pooling op between them)
turns straight back; pooling windows, too, are gathered faster batch-last, where each is a run
of N contiguous values; and FullyConnected's GEMMs run faster on the transposed operands,
out^T = weight . data^T, at small batches. This pass finds every edge from such an op's output
0 to such an op's input 0 and puts on both ends the batch-last forms of their ops, which store
that edge batch-last (`minimod.kernels.layout`). An Activation between two such ops (VGG's
conv-relu-conv, an MLP's fc-relu-fc) passes the layout through: being elementwise it runs on
batch-last data as it is, so its data and output are stored batch-last together or not at all.
So does Flatten, whose (C * H * W, N) is the batch-last form of its (N, C * H * W): a pooling
output reaches the first dense layer without a transpose. The compiler then infers shapes
again, so the plan's shapes, and the gradients the backward pass sizes from them, follow.

An edge qualifies when its one reader is the other op, reading it once, as its data, and it is
not a graph output (the user sees every output in MXNet's layout). Runs on CPUs, after the
fusion pass and before the gradient pass; only the plan's graph changes. The arithmetic is
that of the batch-first plan (the same GEMMs over the same columns, the same windows), in the
same order too where a convolution worked batch-last before; one that worked channels-by-batch
(outputs 16 or more wide) now sums its GEMM and its weight and bias gradients over the pixels
in another order, which can change the last bits, and so does a FullyConnected with a
batch-last output (its GEMM runs with the operands swapped, its bias gradient is a
matrix-vector product). The compiler runs it as the rewrite `BATCH_LAST`
(`minimod.passes.options`); `minimod.passes.layouts(False)` leaves it out of the binds in a
block.
"""
from __future__ import annotations

from typing import Sequence

from ..graph import Graph
from ..kernels.layout import batch_last_class, batch_last_form

__all__ = ["batch_last"]


def _capable(op) -> bool:
    """Whether `op` has a batch-last form its attributes allow (exact types: a device variant
    such as the cuDNN convolution works in its library's layout). Ops that compute batch-last
    (Convolution, ActivationMaxPooling, FullyConnected) have one, and so do the ops that run on
    batch-last data as it is (Activation, Flatten: `transparent`)."""
    form = None if op is None else batch_last_class(op)
    return form is not None and form.applies(op)


def _transparent(graph: Graph, nid: int) -> bool:
    return batch_last_class(graph.nodes[nid].op).transparent


def batch_last(graph: Graph, shapes: Sequence, ctx=None) -> Graph:
    """`graph` with every qualifying edge stored batch-last (`graph` itself when none does).
    `shapes` are per entry of `graph` (MXNet's layout); `ctx` is the target Context."""
    if ctx is not None and ctx.device_type != "cpu":
        return graph
    consumers = graph.consumers()
    outputs = set(graph.output_eids)
    edges = {}  # producer node id -> reader node id, of the edges that may be batch-last
    for nid, node in enumerate(graph.nodes):
        if not _capable(node.op):
            continue
        eid = graph.row_ptr[nid]
        readers = consumers[eid]
        if eid in outputs or len(readers) != 1 or shapes[eid] is None or len(shapes[eid]) < 2:
            continue
        reader = readers[0]
        if _capable(graph.nodes[reader].op) and graph.input_eids[reader][0] == eid:
            edges[nid] = reader
    # an elementwise node stores its data and output alike: one with a batch-last edge on one
    # side only gives it up, which may leave a neighbour in the same case (a chain of them)
    while True:
        into = {reader: nid for nid, reader in edges.items()}
        lone = [nid for nid in set(edges) ^ set(into) if _transparent(graph, nid)]
        if not lone:
            break
        for nid in lone:
            edges.pop(nid, None)
            edges.pop(into.get(nid), None)
    if not edges:
        return graph
    out_last, data_last = set(edges), set(edges.values())
    ops = [batch_last_form(node.op, nid in data_last, nid in out_last)
           if nid in data_last or nid in out_last else node.op
           for nid, node in enumerate(graph.nodes)]
    return graph.rebuilt(ops)
