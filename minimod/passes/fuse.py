"""The fusion pass: replace patterns of nodes by one fused op with the same numbers.

The compiler runs it (the rewrite `FUSE` of `minimod.passes.options`) on the forward graph
after the device pass and before the gradient pass, so the fused op gets its own backward node
and the memory plan sees the fused graph (the activation's full-size output, and its
gradient, are never planned). Only the plan's graph changes; the
symbol, its JSON and the names of its outputs stay as written.

Two patterns, each on one kind of device:

- CPUs: an Activation (relu or tanh) read by nothing but a max Pooling over disjoint windows
  without padding, and not itself an output (`minimod.kernels.fused.ActivationMaxPooling`).
  On a GPU the pooling is cuDNN's, and the tie analysis of the fused op is written for
  NumPy's tanh.
- GPUs: the elementwise part of an LSTM cell as `mx.rnn.LSTMCell` writes it (`_lstm_cell`
  below; `minimod.kernels.fused_lstm.LSTMCellCombine`): eleven nodes and about forty kernels
  a time step become two. On a CPU the nodes' own NumPy passes keep MXNet's numbers.

A pattern is fused only where nothing outside it reads its inner entries and none of them is
a graph output; its two results, the new cell and hidden states, may be read by anything.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..graph import Graph
from ..kernels.fused import ActivationMaxPooling
from ..kernels.fused_lstm import LSTMCellCombine
from ..ops.activation import Activation
from ..ops.join_split import SliceChannel

__all__ = ["fuse"]


def fuse(graph: Graph, shapes: Sequence, dtypes: Sequence, ctx=None) -> Graph:
    """`graph` with every fusible pattern replaced by its fused op (`graph` itself when there is
    none). `shapes` and `dtypes` are per entry of `graph`; `ctx` is the target Context."""
    if ctx is not None and ctx.device_type != "cpu":
        return _fuse_lstm_cells(graph, shapes, dtypes)
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


def _fuse_lstm_cells(graph: Graph, shapes: Sequence, dtypes: Sequence) -> Graph:
    """Every LSTM cell of `graph` as one LSTMCellCombine node, which takes the place of the
    node making the new cell state; readers of the new hidden state read the fused node's
    second output."""
    ops = [node.op for node in graph.nodes]
    inputs, drop, redirect = {}, set(), {}
    for sid, node in enumerate(graph.nodes):
        if isinstance(node.op, SliceChannel):
            cell = _lstm_cell(graph, sid, shapes, dtypes)
            if cell is not None and not (cell["drop"] & drop):
                ops[cell["c"]] = LSTMCellCombine(cell["absorbed"])
                inputs[cell["c"]] = cell["inputs"]
                drop |= cell["drop"]
                redirect[(cell["h"], 0)] = (cell["c"], 1)
    if not drop:
        return graph
    return graph.rebuilt(ops, inputs, drop=drop, redirect=redirect)


def _lstm_cell(graph: Graph, sid: int, shapes: Sequence, dtypes: Sequence):
    """The LSTM cell around SliceChannel node `sid`, or None where the nodes around it are
    not one (see the module docstring): {"c": id of the node making c', "h": id of the node
    making h', "inputs": [i2h, h2h, prev_c] entries, "drop": the ids of every other node of
    the cell, "absorbed": LSTMCellCombine's list of them}."""
    found = _find_cell(graph, sid, shapes, dtypes)
    if found is None:
        return None
    nodes, row = graph.nodes, graph.row_ptr
    add, acts, mul_i, mul_f, c, tanh, h, prev = found
    roles = {graph.entry_id(e): r for e, r in zip(nodes[add].inputs, ("i2h", "h2h"))}
    roles.update({graph.entry_id(prev): "prev_c", row[add]: "sum", row[mul_f]: "forget_c",
                  row[mul_i]: "in_candidate", row[c]: "state", row[tanh]: "tanh_state",
                  row[h]: "out"})
    roles.update({row[sid] + k: "slice%d" % k for k in range(4)})
    roles.update(zip((row[n] for n in acts),
                     ("in_gate", "forget_gate", "candidate", "out_gate")))
    cell = {add, sid, *acts, mul_i, mul_f, tanh, h}
    absorbed = [(nodes[n].name, nodes[n].op, [roles[graph.entry_id(e)] for e in nodes[n].inputs],
                 [roles[row[n] + k] for k in range(nodes[n].num_outputs())])
                for n in sorted(cell | {c})]
    return {"c": c, "h": h, "inputs": [*nodes[add].inputs, prev], "drop": cell,
            "absorbed": absorbed}


def _find_cell(graph: Graph, sid: int, shapes: Sequence, dtypes: Sequence):
    """(add, [the four gate activations], i * g, f * c, c', tanh(c'), h', the prev_c entry)
    as node ids (and an entry) for the cell around SliceChannel node `sid`, or None."""
    nodes, row, consumers = graph.nodes, graph.row_ptr, graph.consumers()

    def reader(eid, kind, act=None):
        return _only_reader(graph, eid, kind, act)

    split, source = nodes[sid], graph.entry_id
    a = split.op.attrs
    gate_shape = shapes[source(split.inputs[0])]
    if (a.num_outputs != 4 or a.squeeze_axis or gate_shape is None or len(gate_shape) != 2
            or a.axis not in (1, -1) or dtypes[row[sid]] not in _FLOATS):
        return None
    add = graph.node_id[id(split.inputs[0].node)]
    if (split.inputs[0].index or not _is(nodes[add].op, "add")
            or reader(row[add], SliceChannel) != sid
            or any(shapes[source(e)] != gate_shape for e in nodes[add].inputs)):
        return None
    acts = [reader(row[sid] + k, "act", kind) for k, kind in enumerate(_GATES)]
    if None in acts:
        return None
    gate = [row[n] for n in acts]  # the activated gates' entries, i f c o
    mul_i, mul_f = reader(gate[0], "mul"), reader(gate[1], "mul")
    if (mul_i is None or mul_f is None or mul_i == mul_f or reader(gate[2], "mul") != mul_i
            or {source(e) for e in nodes[mul_i].inputs} != {gate[0], gate[2]}):
        return None
    prev = [e for e in nodes[mul_f].inputs if source(e) != gate[1]]
    if len(prev) != 1 or shapes[source(prev[0])] != (gate_shape[0], gate_shape[1] // 4):
        return None
    c = reader(row[mul_f], "add")
    if c is None or reader(row[mul_i], "add") != c:
        return None
    tanh = [n for n in consumers[row[c]] if _is(nodes[n].op, "act", "tanh")]
    h = reader(row[tanh[0]], "mul") if len(tanh) == 1 else None
    if h is None or reader(gate[3], "mul") != h or graph.node_id[id(prev[0].node)] in (
            add, sid, *acts, mul_i, mul_f, tanh[0], h):
        return None
    return add, acts, mul_i, mul_f, c, tanh[0], h, prev[0]


def _only_reader(graph: Graph, eid: int, kind, act=None):
    """The one node reading entry `eid`, if it is of `kind` (and activation `act`, see `_is`)
    and `eid` is no graph output; else None."""
    readers = graph.consumers()[eid]
    if (len(readers) != 1 or eid in graph.output_eids
            or not _is(graph.nodes[readers[0]].op, kind, act)):
        return None
    return readers[0]


#: the activation of each gate, in SliceChannel's order (i, f, candidate, o)
_GATES = ("sigmoid", "sigmoid", "tanh", "sigmoid")
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_BINARY = {"add": ("elemwise_add", "broadcast_add"), "mul": ("elemwise_mul", "broadcast_mul")}


def _is(op, kind, act=None) -> bool:
    """Whether `op` is an elementwise add or mul of two operands (kind 'add', 'mul'), an
    Activation of `act` (kind 'act'), or of class `kind`."""
    if op is None:
        return False
    if kind == "act":
        return type(op) is Activation and op.attrs.act_type == act
    if isinstance(kind, str):
        return op.name in _BINARY[kind]
    return isinstance(op, kind)
