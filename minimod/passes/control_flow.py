"""Unrolling `_foreach` nodes (minimod/ops/control_flow.py): the compiler's first step on a
graph that has them.

A loop of T steps becomes: one `split` per data array (T slices along axis 0, the axis
squeezed, except that a 1-D array's steps are (1,) in MXNet's legacy shape semantics, which
have no 0-d arrays, as MXNet's foreach gives them), T copies of the body, each reading its
step's slices, the states the step before left (the initial states at step 0) and the
loop's other inputs, and one `stack` per data output. The loop's final states are the last
copy's. The copies' nodes are named `<loop>_t<step>_<body node>`; a loop inside the body is
copied as it is and unrolled on the next round, once shapes inferred through the unrolled
outer loop give its length.

Every other node keeps its place and its variables their order, so the arguments of the
unrolled graph are listed as the symbol lists them; T comes from shape inference, and a loop
whose length cannot be inferred is an error naming it. Gradients, the memory plan and the
rewrites then work on an ordinary graph (an unrolled RNN, as mx.rnn's `unroll` makes).
"""
from __future__ import annotations

from typing import Mapping

from ..base import GraphError, ShapeError
from ..graph import Entry, Graph, Node
from ..ops.registry import create_op, fmt_shape
from ..shape_semantics import is_np_shape
from .infer import infer_graph_shapes

__all__ = ["has_loops", "unroll_loops"]


def _is_loop(node: Node) -> bool:
    return node.op is not None and bool(node.op.subgraphs)


def has_loops(graph: Graph) -> bool:
    return any(_is_loop(n) for n in graph.nodes)


def _data_eids(graph: Graph, nid: int) -> list:
    """The entry ids of loop node `nid`'s data inputs."""
    return [graph.input_eids[nid][p] for p, (role, _) in
            enumerate(graph.nodes[nid].op.input_roles()) if role == "data"]


def _fresh(op):
    """A new instance of `op` (the copies of a body node must not share scratch arrays)."""
    copy = type(op)(op.raw_attrs)
    if op.subgraphs:
        copy.subgraphs = op.subgraphs
    return copy


def _unroll(loop: Node, steps: int, inputs: list, ranks: list, emit) -> list:
    """The output entries of `loop` unrolled over `steps`, its nodes passed to `emit`;
    `ranks`: the number of axes of each data input."""
    op, body = loop.op, loop.op.body
    if body.aux_nodes:
        raise GraphError("%s (_foreach): its body has auxiliary states (%s); a loop over a "
                         "layer with moving statistics is not supported" % (
                             loop.name, ", ".join(body.nodes[i].name for i in body.aux_nodes)))
    var_ids = body.variable_ids()
    entry_of = {}  # body variable position -> the entry it reads (at this step)
    slices = []
    ranks = iter(ranks)
    for pos, (role, loc) in enumerate(op.input_roles()):
        if role == "data":  # a 1-D array's steps keep their axis (see the module docstring)
            attrs = {"num_outputs": str(steps), "axis": "0",
                     "squeeze_axis": str(next(ranks) != 1 or is_np_shape())}
            split = Node(create_op("SliceChannel", attrs),
                         "%s_split%d" % (loop.name, len(slices)), attrs, [inputs[pos]])
            emit(split)
            slices.append((loc, split))
        else:
            entry_of[loc] = inputs[pos]
    state_locs, n_out = op.attrs.in_state_locs, op.attrs.num_out_data
    stacked: list = [[] for _ in range(n_out)]
    for t in range(steps):
        for loc, split in slices:
            entry_of[loc] = Entry(split, t)
        outs = _copy_body(body, "%s_t%d_" % (loop.name, t),
                          {id(body.nodes[v]): entry_of[k] for k, v in enumerate(var_ids)}, emit)
        for k in range(n_out):
            stacked[k].append(outs[k])
        for k, loc in enumerate(state_locs):
            entry_of[loc] = outs[n_out + k]
    results = []
    for k, parts in enumerate(stacked):
        attrs = {"num_args": str(steps), "axis": "0"}
        stack = Node(create_op("stack", attrs), "%s_stack%d" % (loop.name, k), attrs, parts)
        emit(stack)
        results.append(Entry(stack, 0))
    return results + [entry_of[loc] for loc in state_locs]


def _copy_body(body: Graph, prefix: str, copies: dict, emit) -> list:
    """The output entries of a copy of `body` whose variables read the entries `copies`
    holds (by id of the variable node); its nodes are named `prefix + name`."""
    for node in body.nodes:
        if node.op is not None:
            new = Node(_fresh(node.op), prefix + node.name, node.attrs,
                       [_mapped(copies, e) for e in node.inputs])
            copies[id(node)] = new
            emit(new)
    return [_mapped(copies, e) for e in body.outputs]


def _mapped(copies: dict, e: Entry) -> Entry:
    target = copies[id(e.node)]
    return target if isinstance(target, Entry) else Entry(target, e.index)


def _unroll_once(graph: Graph, shapes: list) -> tuple:
    """(graph with every loop of known length unrolled, how many were)."""
    nodes: list = []
    remap: dict = {}  # id(old node) -> new node, or the list of a loop's output entries
    unrolled = 0

    def entry(e: Entry) -> Entry:
        target = remap.get(id(e.node))
        if target is None:
            return e
        return target[e.index] if isinstance(target, list) else Entry(target, e.index)

    for nid, node in enumerate(graph.nodes):
        inputs = [entry(e) for e in node.inputs]
        if _is_loop(node):
            data = [shapes[e] for e in _data_eids(graph, nid)]
            lengths = {s[0] for s in data if s and s[0] is not None}
            if len(lengths) == 1 and all(s is not None for s in data):
                remap[id(node)] = _unroll(node, lengths.pop(), inputs,
                                          [len(s) for s in data], nodes.append)
                unrolled += 1
                continue
        if any(a is not b for a, b in zip(inputs, node.inputs)):
            node = remap.setdefault(id(node), Node(node.op, node.name, node.attrs, inputs))
        nodes.append(node)
    outputs = [entry(e) for e in graph.outputs]
    return Graph(_reachable(nodes, outputs), outputs), unrolled


def _reachable(nodes: list, outputs: list) -> list:
    """`nodes` (in order) that some output depends on."""
    live, stack = set(), [e.node for e in outputs]
    while stack:
        node = stack.pop()
        if id(node) not in live:
            live.add(id(node))
            stack.extend(e.node for e in node.inputs)
    return [n for n in nodes if id(n) in live]


def unroll_loops(graph: Graph, known: Mapping[str, tuple]) -> Graph:
    """`graph` with every `_foreach` unrolled, the loops' lengths inferred from `known`
    argument shapes (nested loops: round after round)."""
    while has_loops(graph):
        shapes = infer_graph_shapes(graph, known)
        graph, unrolled = _unroll_once(graph, shapes)
        if not unrolled:
            nid = next(i for i, n in enumerate(graph.nodes) if _is_loop(n))
            loop = graph.nodes[nid]
            data = [fmt_shape(shapes[e]) for e in _data_eids(graph, nid)]
            raise ShapeError("%s (_foreach): cannot tell the loop's length from its data "
                             "(shapes %s): give the data's shape" % (loop.name,
                                                                     ", ".join(data)))
    return graph
