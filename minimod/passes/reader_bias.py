"""The reader-bias rewrite (GPUs): a product's bias added by the op that reads it, one
kernel fewer per product (minimod/kernels/reader_bias.py says how, and why the numbers do not
change).

A product with a bias, that one node alone reads and that is no graph output, on float32 or
float64 data, qualifies: a FullyConnected on 2-D data where that node is
- a fused LSTM cell (`LSTMCellCombine`, made by the fusion pass), reading it as its
  recurrent product: the cell becomes `BiasedLSTMCell`, which reads the bias as a fourth
  input;
- a relu, tanh or sigmoid Activation: it becomes `BiasActivation`, reading the bias as a
  second input;
and a Convolution through cuDNN's frontend (which adds the bias in a pass of its own) where
that node is such an Activation. The product node then runs
`ProductWithoutBias` (data . weight^T only) or `ConvolutionWithoutBias`, and the gradient
nodes of both run the new ops, whose gradients are the product's and the plain reader's.

It runs on the graph with its gradient nodes, where the fusion pass runs (GPU plans; not
with `fusion(False)`) and on one device only, after the weight-gradient stacking and before
the gradient-sum fusion (`passes.stack_grads`, `passes.fuse_grads`): with the gradient nodes
already made, the reader's new input carries no gradient, and the bias's gradient stays the
product's own. A GRU cell multiplies part of its recurrent product, bias included, by the
reset gate and reads it again backward, so it keeps its product as written.
"""
from __future__ import annotations

from ..graph import Graph
from ..kernels.cudnn import CudnnConvolution
from ..kernels.fused_cells import LSTMCellCombine
from ..kernels.reader_bias import (
    BIAS_ACTIVATIONS,
    BiasActivation,
    BiasedLSTMCell,
    ConvolutionWithoutBias,
    ProductWithoutBias,
)
from ..ops.activation import Activation
from ..ops.dense import FullyConnected
from .gradient import BackwardOp
from .infer import FLOAT_DTYPES

__all__ = ["add_biases_in_readers"]


def _reader(op):
    """(the input where `op` reads a product, what makes the op that adds the product's bias
    as it reads it) for an op that can, else None."""
    if type(op) is LSTMCellCombine:
        return 1, BiasedLSTMCell
    if type(op) is Activation and op.attrs.act_type in BIAS_ACTIVATIONS:
        return 0, BiasActivation.of
    return None


def _product(op, data_shape, slot: int):
    """What makes the op computing `op`'s product without its bias, for a product with one
    (a FullyConnected on 2-D data; a cuDNN Convolution whose binding adds the bias apart,
    through the frontend, read by an Activation at slot 0), else None."""
    if type(op) is FullyConnected and data_shape is not None and len(data_shape) == 2:
        return ProductWithoutBias.of
    if type(op) is CudnnConvolution and slot == 0 and op.cudnn.bias_apart:
        return ConvolutionWithoutBias.of
    return None


def add_biases_in_readers(graph: Graph, shapes: list, dtypes: list, first: int, ctx=None):
    """(graph, shapes, dtypes) of `graph`, whose gradient nodes start at node `first`, with
    each qualifying product's bias added by its reader (see the module docstring); the three
    given when none qualifies, or not on a GPU."""
    if ctx is None or ctx.device_type != "gpu":
        return graph, shapes, dtypes
    nodes, consumers, outputs = graph.nodes, graph.consumers(), set(graph.output_eids)
    uses: dict = {}
    for node in nodes:
        uses[id(node.op)] = uses.get(id(node.op), 0) + 1
    ops, inputs, new_op = [n.op for n in nodes], {}, {}
    for rid in range(first):
        reader = nodes[rid]
        found = _reader(reader.op)
        if found is None:
            continue
        slot, biased = found
        eid = graph.input_eids[rid][slot]
        fid = graph.entry_node(eid)
        producer = nodes[fid].op
        data = graph.input_eids[fid][0] if producer is not None else None
        product = _product(producer, shapes[data] if data is not None else None, slot)
        if (product is None or producer.attrs.no_bias or eid != graph.row_ptr[fid]
                or consumers[eid] != [rid] or eid in outputs or dtypes[data] not in FLOAT_DTYPES
                or uses[id(producer)] != 1 or uses[id(reader.op)] != 1):
            continue
        ops[fid] = new_op[id(producer)] = product(producer)
        ops[rid] = new_op[id(reader.op)] = biased(reader.op)
        inputs[rid] = list(reader.inputs) + [nodes[fid].inputs[2]]
    if not new_op:
        return graph, shapes, dtypes
    for nid in range(first, len(nodes)):
        op = nodes[nid].op
        if isinstance(op, BackwardOp) and id(op.fwd_op) in new_op:
            ops[nid] = BackwardOp(new_op[id(op.fwd_op)], op.wanted, op.moved)
    return graph.rebuilt(ops, inputs), shapes, dtypes
