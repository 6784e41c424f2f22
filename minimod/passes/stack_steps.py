"""The step-stacking pass (GPUs): a sequence's per-step work done once for all its steps.

Two patterns of an unrolled RNN, each T nodes (or T kernels) for what is one operation:

- The input products. `mx.rnn` unrolls a cell by splitting the input sequence into its T
  steps (SliceChannel with `squeeze_axis`, along the time axis of (N, T, k) or (T, N, k)
  data) and giving each step a FullyConnected of its own, all T with the same weight and
  bias (and num_hidden, no_bias). Where such a group reads every step of one split, once
  each, this pass puts one `StepProjection` node (minimod/kernels/time_steps.py) and one
  split of its time-major result along axis 0 (`StepSplit`) before the group's first node,
  and every reader of a step's product reads that split's output instead. The old split
  goes too when nothing else reads it. T GEMMs and T bias additions forward, and about 4T
  kernels backward, become three each (see the op's docstring).
- The join of the steps' outputs. `merge_outputs=True` stacks the T outputs, each given a
  time axis of size 1 (expand_dims), with a Concat along that axis (1 for NTC): T copies
  forward and T backward. Such a Concat becomes a stack of the steps along a new leading
  axis (`StepStack`), which the memory plan assembles in place (each cell writes its output
  straight into its part), and one transposing copy to the Concat's layout
  (`TimeMajorConcat`, which keeps the Concat's name): one kernel each way.

It runs after the fusion pass (the cells' fused nodes read the products, whoever makes them)
and only on GPUs (not on cpu_pinned either): its gradient sums add in another order than
the unstacked graph's, and CPUs keep MXNet's numbers. `with mx.passes.fusion(False):` turns
it off with the fusion pass, `with mx.passes.stacking(False):` alone. The new nodes keep the
hidden attributes (`ctx_group`) of the nodes they stand for. A step's product that is a
graph output, a group that misses a step or reads one twice, and half-precision data are
left as written.
The new nodes' results are the old ones' values (the join's exactly), and a monitor sees the
nodes as written, by their names.
"""
from __future__ import annotations

from typing import Sequence

from ..graph import Entry, Graph, Node
from ..kernels.time_steps import StepProjection, StepSplit, StepStack, TimeMajorConcat
from ..ops.dense import FullyConnected
from ..ops.join_split import Concat, SliceChannel
from .infer import FLOAT_DTYPES

__all__ = ["stack_steps"]


def stack_steps(graph: Graph, shapes: Sequence, dtypes: Sequence, ctx=None) -> Graph:
    """`graph` with every group of per-step products stacked and every join of the steps'
    outputs made time-major (`graph` itself when there is none, or on a CPU)."""
    if ctx is None or ctx.device_type != "gpu":
        return graph
    groups, joins = [], {}
    for nid, node in enumerate(graph.nodes):
        axis = _time_axis(graph, nid, shapes, dtypes)
        if axis is not None:
            groups += [(nid, axis, fcs) for fcs in _groups(graph, nid)]
        step_shape = _step_join(graph, nid, shapes)
        if step_shape is not None:
            joins[nid] = step_shape
    if not groups and not joins:
        return graph
    return _rebuild(graph, groups, joins)


def _step_join(graph: Graph, nid: int, shapes: Sequence):
    """The one shape of the inputs of Concat node `nid` when they are two or more step
    outputs joined along a time axis other than the first, on which each has size 1; else
    None."""
    op = graph.nodes[nid].op
    if type(op) is not Concat or len(graph.input_eids[nid]) < 2:
        return None
    in_shapes = {shapes[e] for e in graph.input_eids[nid]}
    shape = in_shapes.pop() if len(in_shapes) == 1 else None
    if shape is None or None in shape or len(shape) < 2:
        return None
    dim = op.attrs.dim % len(shape)
    # with every dim before `dim` of size 1 (a batch of one) the join is a leading one
    # already, which the memory plan assembles in place without a transpose
    leading = all(d == 1 for d in shape[:dim])
    return shape if dim >= 1 and shape[dim] == 1 and not leading else None


def _time_axis(graph: Graph, sid: int, shapes: Sequence, dtypes: Sequence):
    """0 or 1, the time axis of the 3-D float32/float64 data that node `sid` splits into its
    steps (a SliceChannel with squeeze_axis); None for any other node."""
    op = graph.nodes[sid].op
    if not isinstance(op, SliceChannel) or not op.attrs.squeeze_axis:
        return None
    eid = graph.entry_id(graph.nodes[sid].inputs[0])
    shape = shapes[eid]
    if shape is None or len(shape) != 3 or None in shape or dtypes[eid] not in FLOAT_DTYPES:
        return None
    axis = op.attrs.axis % 3
    return axis if axis in (0, 1) else None


def _groups(graph: Graph, sid: int) -> list:
    """The groups of FullyConnected nodes reading split `sid`'s steps: for each (weight,
    bias, num_hidden, no_bias) that reads every step exactly once as its data, and no other
    way, the node ids step by step."""
    nodes, row = graph.nodes, graph.row_ptr
    consumers, outputs = graph.consumers(), set(graph.output_eids)
    steps = nodes[sid].op.attrs.num_outputs
    found: dict = {}
    for t in range(steps):
        for n in set(consumers[row[sid] + t]):
            op, ins = nodes[n].op, graph.input_eids[n]
            if (type(op) is not FullyConnected or ins[0] != row[sid] + t
                    or row[sid] + t in ins[1:] or row[n] in outputs):
                continue
            key = (tuple(ins[1:]), op.attrs.num_hidden, op.attrs.no_bias)
            found.setdefault(key, [[] for _ in range(steps)])[t].append(n)
    return [[ids[0] for ids in per_step] for per_step in found.values()
            if all(len(ids) == 1 for ids in per_step)]


def _rebuild(graph: Graph, groups: list, joins: dict) -> Graph:
    """The graph with each group's nodes and each join replaced (see the module
    docstring)."""
    drop = _dropped(graph, groups) | set(joins)
    insert: dict = {}  # node id -> the new nodes that go in before it
    redirect: dict = {}  # (node id, output) -> the entry standing for it from now on
    reported = set()  # removed splits a stacked node reports to the monitor
    for sid, axis, fcs in sorted(groups, key=lambda group: min(group[2])):
        split = None
        if sid in drop and sid not in reported:
            split = (graph.nodes[sid].name, graph.nodes[sid].op)
            reported.add(sid)
        insert.setdefault(min(fcs), []).extend(
            _projection(graph, sid, axis, fcs, split, redirect))
    for nid, step_shape in joins.items():
        insert.setdefault(nid, []).extend(_time_major_join(graph, nid, step_shape, redirect))
    return graph.rebuilt([node.op for node in graph.nodes], drop=drop, redirect=redirect,
                         insert=insert)


def _dropped(graph: Graph, groups: list) -> set:
    """The ids of the groups' nodes, and of each split nothing else reads."""
    row, consumers = graph.row_ptr, graph.consumers()
    stacked = {n for group in groups for n in group[2]}
    drop = set(stacked)
    for sid in {g[0] for g in groups}:
        eids = range(row[sid], row[sid + 1])
        if all(set(consumers[e]) <= stacked and e not in graph.output_eids for e in eids):
            drop.add(sid)
    return drop


def _projection(graph: Graph, sid: int, axis: int, fcs: list, split, redirect: dict) -> list:
    """The StepProjection and StepSplit nodes standing for the FullyConnected nodes `fcs`
    reading split `sid`'s steps; readers of their products read the split from now on
    (`redirect`)."""
    nodes = graph.nodes
    first = nodes[fcs[0]]
    op = StepProjection(first.op, axis, [nodes[n].name for n in fcs], split)
    hidden = _hidden_attrs(first)
    stack = Node(op, first.name + "_steps", hidden,
                 [nodes[sid].inputs[0]] + list(first.inputs[1:]))
    parts = Node(StepSplit(len(fcs)), first.name + "_split", hidden, [Entry(stack, 0)])
    redirect.update({(n, 0): Entry(parts, t) for t, n in enumerate(fcs)})
    return [stack, parts]


def _time_major_join(graph: Graph, nid: int, step_shape: tuple, redirect: dict) -> list:
    """The stack and the transposing copy that stand for Concat node `nid`; readers of the
    Concat read the copy from now on (`redirect`)."""
    concat = graph.nodes[nid]
    steps, hidden = len(concat.inputs), _hidden_attrs(concat)
    stack = Node(StepStack(steps), concat.name + "_steps", hidden, list(concat.inputs))
    dim = concat.op.attrs.dim % len(step_shape)
    join = Node(TimeMajorConcat(concat.op, dim, step_shape), concat.name, hidden,
                [Entry(stack, 0)])
    redirect[(nid, 0)] = Entry(join, 0)
    return [stack, join]


def _hidden_attrs(node: Node) -> dict:
    """The hidden `__key__` attributes of `node` (its `ctx_group` for model parallelism,
    ...), which the nodes standing for it keep."""
    return {k: v for k, v in node.attrs.items() if k.startswith("__")}
