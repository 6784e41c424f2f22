"""The gradient-sum fusion (GPUs): a fused RNN cell's gradient node adds up the gradients of
the cell's output itself.

In an unrolled RNN whose outputs are used (merged into one sequence, or each step's), every
step's output h' is read twice: by the next step's recurrent product and by the sequence's
output. The gradient pass sums its two gradients with an `add_n` just before the cell's
gradient node: one kernel a step, 34 of an unrolled LSTM's 244 over 35 steps. Where the
fusion pass made the cell one op (`LSTMCellCombine`, `GRUCellCombine`, or a form of them),
this pass gives the cell's gradient node the addends instead (`SummedCellGrad`,
minimod/kernels/fused_cells.py), and its kernel adds them as it reads them, in add_n's order
and roundings, so the numbers do not change.

An add_n qualifies when it is a gradient sum of two to four entries (a GRU's h' has three
readers: the next cell too) that the cell's gradient node alone reads, as the gradient of the
cell's output h'. It runs where the fusion pass runs (GPU
plans; not with `fusion(False)`), on one device only, after the weight-gradient stacking
(`passes.stack_grads`). The monitor sees the add_n and the cell's gradient node as before,
by their names (`SummedCellGrad.gradient_reports`).
"""
from __future__ import annotations

from ..graph import Graph
from ..kernels.fused_cells import MAX_TERMS, GRUCellCombine, LSTMCellCombine, SummedCellGrad
from ..ops.binary import AddNOp
from .gradient import BackwardOp

__all__ = ["fuse_gradient_sums"]

_CELLS = (LSTMCellCombine, GRUCellCombine)


def fuse_gradient_sums(graph: Graph, shapes: list, dtypes: list, first: int, ctx=None):
    """(graph, shapes, dtypes) of `graph`, whose gradient nodes start at node `first`, with
    each fused cell's gradient node summing its output's gradients itself (see the module
    docstring); the three given when none applies, or not on a GPU."""
    if ctx is None or ctx.device_type != "gpu":
        return graph, shapes, dtypes
    nodes, consumers, outputs = graph.nodes, graph.consumers(), set(graph.output_eids)
    forward = {id(nodes[nid].op): nid for nid in range(first)
               if isinstance(nodes[nid].op, _CELLS)}
    ops, inputs, drop = [n.op for n in nodes], {}, set()
    for nid in range(first, len(nodes)):
        op = nodes[nid].op
        if not isinstance(op, BackwardOp) or not isinstance(op.fwd_op, _CELLS):
            continue
        head = op.fwd_op.OUTPUTS.index("out")
        eid = graph.input_eids[nid][head]
        sid = graph.entry_node(eid)
        terms = nodes[sid].inputs
        if (sid < first or type(nodes[sid].op) is not AddNOp
                or not 2 <= len(terms) <= MAX_TERMS or consumers[eid] != [nid]
                or eid in outputs):
            continue
        cell = forward[id(op.fwd_op)]
        count = len(op.fwd_op.gradient_arguments())
        arg_shapes = [shapes[e] for e in graph.input_eids[cell][:count]]
        ins = list(nodes[nid].inputs)
        ins[head] = terms[0]
        inputs[nid] = ins + list(terms[1:])
        ops[nid] = SummedCellGrad(op, head, len(terms) - 1, nodes[sid].name, arg_shapes)
        drop.add(sid)
    if not drop:
        return graph, shapes, dtypes
    kept = [e for nid in range(len(nodes)) if nid not in drop
            for e in range(graph.row_ptr[nid], graph.row_ptr[nid + 1])]
    return (graph.rebuilt(ops, inputs, drop), [shapes[e] for e in kept],
            [dtypes[e] for e in kept])
