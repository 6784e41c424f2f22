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
- GPUs: the elementwise part of an LSTM or GRU cell as `mx.rnn.LSTMCell` and `mx.rnn.GRUCell`
  write it (`_lstm_cell`, `_gru_cell` below; `minimod.kernels.fused_cells`): eleven or
  fifteen nodes and about forty kernels a time step become two. On a CPU the nodes' own
  NumPy passes keep MXNet's numbers.

A pattern is fused only where nothing outside it reads its inner entries and none of them is
a graph output; its two results, the new cell and hidden states, may be read by anything.
"""
from __future__ import annotations

from typing import Sequence

from ..graph import Entry, Graph
from ..kernels.fused import ActivationMaxPooling
from ..kernels.fused_cells import GRUCellCombine, LSTMCellCombine
from ..ops.activation import Activation
from ..ops.join_split import SliceChannel
from ..ops.scalar import RminusScalarOp
from .infer import FLOAT_DTYPES

__all__ = ["fuse"]


def fuse(graph: Graph, shapes: Sequence, dtypes: Sequence, ctx=None) -> Graph:
    """`graph` with every fusible pattern replaced by its fused op (`graph` itself when there is
    none). `shapes` and `dtypes` are per entry of `graph`; `ctx` is the target Context."""
    if ctx is not None and ctx.device_type == "gpu":
        return _fuse_cells(graph, shapes, dtypes)
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


def _fuse_cells(graph: Graph, shapes: Sequence, dtypes: Sequence) -> Graph:
    """Every LSTM and GRU cell of `graph` as one fused node, which takes the place of the node
    making the cell's last result (c' for an LSTM, h' for a GRU); readers of an LSTM's h'
    read the fused node's second output."""
    ops = [node.op for node in graph.nodes]
    inputs, drop, redirect = {}, set(), {}
    for sid, node in enumerate(graph.nodes):
        if isinstance(node.op, SliceChannel):
            cell = _lstm_cell(graph, sid, shapes, dtypes) or _gru_cell(graph, sid, shapes,
                                                                       dtypes)
            if cell is not None and not (cell["drop"] & drop):
                ops[cell["node"]] = cell["op"]
                inputs[cell["node"]] = cell["inputs"]
                drop |= cell["drop"]
                redirect.update(cell["redirect"])
    if not drop:
        return graph
    return graph.rebuilt(ops, inputs, drop=drop, redirect=redirect)


def _absorbed(graph: Graph, node_ids, roles: dict) -> list:
    """(name, op, input roles, output roles) of each node of `node_ids`, in graph order, with
    `roles` naming every entry they read and write."""
    nodes, row = graph.nodes, graph.row_ptr
    return [(nodes[n].name, nodes[n].op, [roles[graph.entry_id(e)] for e in nodes[n].inputs],
             [roles[row[n] + k] for k in range(nodes[n].num_outputs())])
            for n in sorted(node_ids)]


def _lstm_cell(graph: Graph, sid: int, shapes: Sequence, dtypes: Sequence):
    """The LSTM cell around SliceChannel node `sid` as a fused node, or None where the nodes
    around it are not one (see the module docstring): {"node": the node it replaces, "op",
    "inputs": [i2h, h2h, prev_c] entries, "drop": the cell's other nodes, "redirect"}."""
    found = _find_lstm(graph, sid, shapes, dtypes)
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
    return {"node": c, "op": LSTMCellCombine(_absorbed(graph, cell | {c}, roles)),
            "inputs": [*nodes[add].inputs, prev], "drop": cell,
            "redirect": {(h, 0): Entry(nodes[c], 1)}}


def _find_lstm(graph: Graph, sid: int, shapes: Sequence, dtypes: Sequence):
    """(add, [the four gate activations], i * g, f * c, c', tanh(c'), h', the prev_c entry)
    as node ids (and an entry) for the cell around SliceChannel node `sid`, or None."""
    nodes, row, consumers = graph.nodes, graph.row_ptr, graph.consumers()

    def reader(eid, kind, act=None):
        return _only_reader(graph, eid, kind, act)

    split, source = nodes[sid], graph.entry_id
    gate_shape = _split_shape(graph, sid, 4, shapes, dtypes)
    if gate_shape is None:
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


def _gru_cell(graph: Graph, sid: int, shapes: Sequence, dtypes: Sequence):
    """The GRU cell whose i2h SliceChannel is node `sid` as a fused node (as `_lstm_cell`),
    or None."""
    found = _find_gru(graph, sid, shapes, dtypes)
    if found is None:
        return None
    nodes, row = graph.nodes, graph.row_ptr
    h_split, add_r, add_z, reset, update, mul_r, add_o, cand, minus, keep_c, keep_h, out, \
        prev = found
    roles = {graph.entry_id(nodes[sid].inputs[0]): "i2h",
             graph.entry_id(nodes[h_split].inputs[0]): "h2h", graph.entry_id(prev): "prev_h"}
    roles.update({row[sid] + k: "i2h_" + g for k, g in enumerate("rzo")})
    roles.update({row[h_split] + k: "h2h_" + g for k, g in enumerate("rzo")})
    roles.update(zip((row[n] for n in (add_r, add_z, reset, update, mul_r, add_o, cand, minus,
                                       keep_c, keep_h, out)),
                     ("sum_r", "sum_z", "reset", "update", "reset_h2h_o", "sum_o",
                      "candidate", "one_minus_update", "keep_candidate", "keep_h", "out")))
    cell = {sid, h_split, add_r, add_z, reset, update, mul_r, add_o, cand, minus, keep_c,
            keep_h}
    return {"node": out, "op": GRUCellCombine(_absorbed(graph, cell | {out}, roles)),
            "inputs": [nodes[sid].inputs[0], nodes[h_split].inputs[0], prev], "drop": cell,
            "redirect": {}}


def _find_gru(graph: Graph, sid: int, shapes: Sequence, dtypes: Sequence):
    """The node ids of the GRU cell whose i2h SliceChannel is `sid` (h2h's SliceChannel,
    the reset and update sums and sigmoids, r * h2h_o, its sum with i2h_o, the candidate's
    tanh, 1 - z, (1 - z) * candidate, z * h, h'), and the prev_h entry; or None."""
    nodes, row, source = graph.nodes, graph.row_ptr, graph.entry_id
    wide = _split_shape(graph, sid, 3, shapes, dtypes)
    if wide is None:
        return None
    adds = [_only_reader(graph, row[sid] + k, "add") for k in range(3)]
    if None in adds:
        return None
    h_side = [e for e in nodes[adds[0]].inputs if source(e) != row[sid]]
    h_split = graph.node_id[id(h_side[0].node)] if len(h_side) == 1 else None
    if (h_split is None or h_side[0].index or _split_shape(graph, h_split, 3, shapes,
                                                           dtypes) != wide
            or _only_reader(graph, row[h_split], "add") != adds[0]
            or _only_reader(graph, row[h_split] + 1, "add") != adds[1]):
        return None
    reset = _only_reader(graph, row[adds[0]], "act", "sigmoid")
    update = _only_reader(graph, row[adds[1]], "act", "sigmoid")
    mul_r = None if reset is None else _only_reader(graph, row[reset], "mul")
    if (update is None or mul_r is None
            or _only_reader(graph, row[h_split] + 2, "mul") != mul_r
            or _only_reader(graph, row[mul_r], "add") != adds[2]):
        return None
    cand = _only_reader(graph, row[adds[2]], "act", "tanh")
    tail = None if cand is None else _gru_update(graph, update, cand, (wide[0], wide[1] // 3),
                                                 shapes)
    if tail is None:
        return None
    minus, keep_c, keep_h, out, prev = tail
    cell = (sid, h_split, *adds[:2], reset, update, mul_r, adds[2], cand, minus, keep_c,
            keep_h)
    if graph.node_id[id(prev.node)] in cell:
        return None
    return (*cell[1:], out, prev)


def _gru_update(graph: Graph, update: int, cand: int, cell_shape: tuple, shapes: Sequence):
    """(1 - z, (1 - z) * candidate, z * h, h' node ids and the prev_h entry) of a GRU cell
    whose update gate and candidate are nodes `update` and `cand`; or None."""
    nodes, row, source = graph.nodes, graph.row_ptr, graph.entry_id
    readers = graph.consumers()[row[update]]
    minus = [n for n in readers if isinstance(nodes[n].op, RminusScalarOp)
             and nodes[n].op.scalar == 1]
    keep_h = [n for n in readers if _is(nodes[n].op, "mul")]
    if (len(readers) != 2 or len(minus) != 1 or len(keep_h) != 1
            or row[update] in graph.output_eids):
        return None
    keep_c = _only_reader(graph, row[minus[0]], "mul")
    prev = [e for e in nodes[keep_h[0]].inputs if source(e) != row[update]]
    if (keep_c is None or _only_reader(graph, row[cand], "mul") != keep_c or len(prev) != 1
            or shapes[source(prev[0])] != cell_shape):
        return None
    out = _only_reader(graph, row[keep_c], "add")
    if out is None or _only_reader(graph, row[keep_h[0]], "add") != out:
        return None
    return minus[0], keep_c, keep_h[0], out, prev[0]


def _split_shape(graph: Graph, sid: int, parts: int, shapes: Sequence, dtypes: Sequence):
    """The (N, parts * H) shape SliceChannel node `sid` splits into `parts` along axis 1, or
    None where it splits otherwise (or not a float32/float64 array)."""
    node = graph.nodes[sid]
    if not isinstance(node.op, SliceChannel):
        return None
    a = node.op.attrs
    shape = shapes[graph.entry_id(node.inputs[0])]
    if (a.num_outputs != parts or a.squeeze_axis or shape is None or len(shape) != 2
            or a.axis not in (1, -1) or dtypes[graph.row_ptr[sid]] not in FLOAT_DTYPES):
        return None
    return shape


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
