"""The fusion pass: replace patterns of nodes by one fused op with the same numbers.

The compiler runs it (the rewrite `FUSE` of `minimod.passes.options`) on the forward graph
after the device pass and before the gradient pass, so the fused op gets its own backward node
and the memory plan sees the fused graph (the activation's full-size output, and its
gradient, are never planned). Only the plan's graph changes; the
symbol, its JSON and the names of its outputs stay as written.

One pattern so far (`minimod.kernels.fused.ActivationMaxPooling`): an Activation (relu or tanh)
read by nothing but a max Pooling over disjoint windows without padding, and not itself an
output. It applies on CPUs only: on a GPU the pooling is cuDNN's, and the tie analysis of the
fused op is written for NumPy's tanh.
"""
from __future__ import annotations

from typing import Sequence

from ..graph import Graph
from ..kernels.fused import ActivationMaxPooling

__all__ = ["fuse"]


def fuse(graph: Graph, shapes: Sequence, dtypes: Sequence, ctx=None) -> Graph:
    """`graph` with every fusible pattern replaced by its fused op (`graph` itself when there is
    none). `shapes` and `dtypes` are per entry of `graph`; `ctx` is the target Context."""
    if ctx is not None and ctx.device_type != "cpu":
        return graph
    consumers = graph.consumers()
    outputs = set(graph.output_eids)
    fused_ops: dict = {}  # pool node id -> fused op
    absorbed: set = set()  # activation node ids
    for nid, node in enumerate(graph.nodes):
        if node.op is None or not node.inputs or node.inputs[0].index != 0:
            continue
        src = graph.node_id[id(node.inputs[0].node)]
        act = graph.nodes[src]
        eid = graph.row_ptr[src]
        if (act.op is None or eid in outputs or consumers[eid] != [nid]
                or not ActivationMaxPooling.applies(act.op, node.op, shapes[eid],
                                                    dtypes[eid])):
            continue
        fused_ops[nid] = ActivationMaxPooling(act.op, node.op, act.name)
        absorbed.add(src)
    if not fused_ops:
        return graph
    ops = [fused_ops.get(nid, node.op) for nid, node in enumerate(graph.nodes)]
    # a fused node reads what its activation read
    inputs = {nid: graph.nodes[nid].inputs[0].node.inputs[:1] for nid in fused_ops}
    return graph.rebuilt(ops, inputs, drop=absorbed)
