"""The recurrent-bias rewrite (GPUs): a fused LSTM cell adds its hidden-to-hidden product's
bias itself, one kernel a step fewer (minimod/kernels/cell_bias.py says how and why the
numbers do not change).

A cell qualifies where the fusion pass made it one `LSTMCellCombine` and its second input
is a FullyConnected with a bias, on 2-D float32 or float64 data, that nothing else reads
and that is no graph output. Its product node then runs `ProductForCell` (h W^T only) and
the cell `BiasedLSTMCell`, which reads the bias as a fourth input; their gradient nodes run
the same ops, whose gradients are FullyConnected's and the plain cell's.

It runs on the graph with its gradient nodes, where the fusion pass runs (GPU plans; not
with `fusion(False)`) and on one device only, after the weight-gradient stacking and before
the gradient-sum fusion (`passes.stack_grads`, `passes.fuse_grads`): with the gradient nodes
already made, the cell's new input carries no gradient, and the bias's gradient stays the
product's own. A GRU cell multiplies part of its recurrent product, bias included, by the
reset gate and reads it again backward, so it keeps its product as written.
"""
from __future__ import annotations

from ..graph import Graph
from ..kernels.cell_bias import BiasedLSTMCell, ProductForCell
from ..kernels.fused_cells import LSTMCellCombine
from ..ops.dense import FullyConnected
from .gradient import BackwardOp
from .infer import FLOAT_DTYPES

__all__ = ["add_biases_in_cells"]



def add_biases_in_cells(graph: Graph, shapes: list, dtypes: list, first: int, ctx=None):
    """(graph, shapes, dtypes) of `graph`, whose gradient nodes start at node `first`, with
    each qualifying fused LSTM cell adding its recurrent product's bias (see the module
    docstring); the three given when none qualifies, or not on a GPU."""
    if ctx is None or ctx.device_type != "gpu":
        return graph, shapes, dtypes
    nodes, consumers, outputs = graph.nodes, graph.consumers(), set(graph.output_eids)
    uses: dict = {}
    for node in nodes:
        uses[id(node.op)] = uses.get(id(node.op), 0) + 1
    ops, inputs, new_op = [n.op for n in nodes], {}, {}
    for cid in range(first):
        cell = nodes[cid]
        if type(cell.op) is not LSTMCellCombine:
            continue
        eid = graph.input_eids[cid][1]
        fid = graph.entry_node(eid)
        fc = nodes[fid].op
        data = graph.input_eids[fid][0] if fc is not None else None
        if (type(fc) is not FullyConnected or fc.attrs.no_bias or consumers[eid] != [cid]
                or eid in outputs or len(shapes[data]) != 2 or dtypes[data] not in FLOAT_DTYPES
                or uses[id(fc)] != 1 or uses[id(cell.op)] != 1):
            continue
        ops[fid] = new_op[id(fc)] = ProductForCell.of(fc)
        ops[cid] = new_op[id(cell.op)] = BiasedLSTMCell(cell.op)
        inputs[cid] = list(cell.inputs) + [nodes[fid].inputs[2]]
    if not new_op:
        return graph, shapes, dtypes
    for nid in range(first, len(nodes)):
        op = nodes[nid].op
        if isinstance(op, BackwardOp) and id(op.fwd_op) in new_op:
            ops[nid] = BackwardOp(new_op[id(op.fwd_op)], op.wanted, op.moved)
    return graph.rebuilt(ops, inputs), shapes, dtypes
