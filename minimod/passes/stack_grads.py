"""The weight-gradient stacking pass (GPUs): the gradient of a weight that every step of an
unrolled RNN multiplies, as one product over all the steps.

An unrolled cell gives each time step a FullyConnected of its own on the previous step's
output (the hidden-to-hidden product), all T with one weight and bias. The gradient pass then
makes T gradient nodes, each a GEMM for the data's gradient, a GEMM for the weight's and a
bias sum, and two `add_n` nodes summing the T weight and the T bias gradients: 3T + 2 kernels
for what is, over the sequence, one product. The recurrence keeps the forward products and
the data's gradients step by step (each step's needs the next step's), but the weight's and
the bias's gradients only add up what the steps leave behind. This pass, run on the graph
with its gradient nodes, makes each step's gradient node compute the data's gradient only,
and puts one `StepWeightGrad` (minimod/kernels/time_steps.py) where the sums were:

- the steps' output gradients are stacked by a `StepStack`, which the memory plan assembles
  in place (the node making each writes it into its part);
- the steps' data are read where they already lie stacked, in the join of the steps' outputs
  that `stack_steps` made (looking through reshapes such as its expand_dims): one GEMM per
  run of consecutive steps found there, one per step's data found nowhere (the begin state);
- the bias's gradient is one sum over all the steps' rows.

For an LSTM over 35 steps that is 3 kernels where there were 107.

A group is the FullyConnected gradient nodes whose weight gradients one `add_n` sums and
nothing else reads, two or more, with one weight, the same attributes and 2-D float32 or
float64 data of one shape; their bias gradients must be summed alike by one `add_n`, or not
asked for. A step's node left with nothing to compute (the first step's, when nobody asks
for the gradient of its begin state) stays, without outputs: it runs nothing, and is there
for the monitor.

It runs where `stack_steps` runs (GPU plans; not with `stacking(False)` or `fusion(False)`)
and on one device only: a placed plan (`group2ctx`) keeps its nodes. The products add in
another order than the add_n did, so the sums differ in the last bits; CPUs keep MXNet's
numbers. The monitor sees what it saw: each step's node with all its gradients (its
`BackwardOp.moved` ones computed again when a monitor asks) and the sums by their names.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple, Optional

from ..graph import Entry, Graph, Node
from ..kernels.time_steps import StepStack, StepWeightGrad
from ..ops.binary import AddNOp
from ..ops.dense import FullyConnected
from .gradient import BackwardOp
from .infer import FLOAT_DTYPES

__all__ = ["stack_weight_grads"]

_WEIGHT, _BIAS = 1, 2  # FullyConnected's argument positions


class _Group(NamedTuple):
    members: tuple  # the steps' gradient node ids, in the order of the steps
    sums: dict  # _WEIGHT (and _BIAS) -> the add_n node id summing its gradients


def stack_weight_grads(graph: Graph, shapes: list, dtypes: list, first: int, ctx=None):
    """(graph, shapes, dtypes) of `graph`, whose gradient nodes start at node `first`, with
    every group's weight and bias gradients computed at once (see the module docstring); the
    three given when there is none, or not on a GPU."""
    if ctx is None or ctx.device_type != "gpu":
        return graph, shapes, dtypes
    groups = _groups(graph, shapes, dtypes, first)
    if not groups:
        return graph, shapes, dtypes
    return _rebuild(graph, shapes, dtypes, groups, first)


def _groups(graph: Graph, shapes: list, dtypes: list, first: int) -> list:
    sums: dict = {}
    consumers = graph.consumers()
    for nid in range(first, len(graph.nodes)):
        if type(graph.nodes[nid].op) is AddNOp:
            found = _summed(graph, nid, consumers)
            if found is not None:
                sums.setdefault(found[0], {})[found[1]] = nid
    return [_Group(members, by_arg) for members, by_arg in sums.items()
            if _WEIGHT in by_arg and _stackable(graph, shapes, dtypes, members, by_arg)]


def _summed(graph: Graph, nid: int, consumers: list):
    """(the gradient nodes in step order, the argument) when add_n node `nid` sums the
    weight's or the bias's gradients of FullyConnected gradient nodes and nothing else reads
    those; else None."""
    members, args = [], set()
    for eid in graph.input_eids[nid]:
        bid = graph.entry_node(eid)
        op = graph.nodes[bid].op
        if (not isinstance(op, BackwardOp) or type(op.fwd_op) is not FullyConnected
                or consumers[eid] != [nid]):
            return None
        members.append(bid)
        args.add(op.wanted[eid - graph.row_ptr[bid]])
    if len(args) != 1 or len(set(members)) != len(members) or not args <= {_WEIGHT, _BIAS}:
        return None
    # the gradient pass makes gradient nodes in the reverse order of their forward nodes, so
    # this is the steps' order (which only decides how the steps' data join into runs)
    return tuple(sorted(members, reverse=True)), args.pop()


def _stackable(graph: Graph, shapes: list, dtypes: list, members: tuple, sums: dict) -> bool:
    ops = [graph.nodes[b].op for b in members]
    attrs = ops[0].fwd_op.attrs
    if any(op.fwd_op.attrs != attrs or set(op.wanted) - {0} != set(sums)
           or not {0, _WEIGHT} <= set(op.arg_pos) or op.n_head != 1 for op in ops):
        return False
    if len({_argument(graph, b, _WEIGHT) for b in members}) != 1:
        return False
    data = {(shapes[_argument(graph, b, 0)], dtypes[_argument(graph, b, 0)]) for b in members}
    heads = {(shapes[e], dtypes[e]) for e in (graph.input_eids[b][0] for b in members)}
    if len(data) != 1 or len(heads) != 1:
        return False
    (shape, dtype), = data
    return shape is not None and len(shape) == 2 and dtype in FLOAT_DTYPES


def _argument(graph: Graph, bid: int, arg: int) -> int:
    """The entry id of forward argument `arg` among gradient node `bid`'s inputs."""
    op = graph.nodes[bid].op
    return graph.input_eids[bid][op.n_head + op.arg_pos.index(arg)]


def _rebuild(graph: Graph, shapes: list, dtypes: list, groups: list, first: int) -> tuple:
    nodes, row = graph.nodes, graph.row_ptr
    ops = [node.op for node in nodes]
    drop, insert, redirect = set(), {}, {}
    added: dict = {}  # id(new node) -> (shape, dtype) per output
    pieces = _stacked_steps(graph, first)
    for group in groups:
        drop.update(group.sums.values())
        for bid in group.members:
            op = nodes[bid].op
            keep = tuple(a for a in op.wanted if a not in group.sums)
            ops[bid] = BackwardOp(op.fwd_op, keep, moved=tuple(sorted(group.sums)))
        insert.setdefault(min(group.sums.values()), []).extend(
            _stacked(graph, shapes, dtypes, group, pieces, redirect, added))
    new = graph.rebuilt(ops, drop=drop, redirect=redirect, insert=insert)
    table = []  # (shape, dtype) per entry of `new`, in the order `Graph.rebuilt` keeps
    for nid in range(len(nodes)):
        table += [fact for node in insert.get(nid, ()) for fact in added[id(node)]]
        if nid in drop:
            continue
        # a step's node keeps its first outputs (the data's gradient)
        count = 1 if ops[nid] is None else ops[nid].num_outputs()
        table += [(shapes[e], dtypes[e]) for e in range(row[nid], row[nid] + count)]
    return new, [s for s, _ in table], [d for _, d in table]


def _stacked(graph: Graph, shapes: list, dtypes: list, group: _Group, pieces: dict,
             redirect: dict, added: dict) -> list:
    """The StepStack of the group's output gradients and the StepWeightGrad standing for its
    sums; readers of the sums read the new node from now on (`redirect`). `added` gets the
    new nodes' shapes and dtypes."""
    nodes = graph.nodes
    heads = [nodes[b].inputs[0] for b in group.members]
    head = graph.input_eids[group.members[0]][0]
    weight = _argument(graph, group.members[0], _WEIGHT)
    name = graph.entry_name(weight)
    stack = Node(StepStack(len(heads)), name + "_step_out_grads", {}, heads)
    added[id(stack)] = [((len(heads),) + tuple(shapes[head]), dtypes[head])]
    data = [_argument(graph, b, 0) for b in group.members]
    runs, sources, joins = _sources(graph, shapes, dtypes, data, pieces, added, name)
    sums = sorted(group.sums)
    op = StepWeightGrad(shapes[head][1], shapes[data[0]][1], _BIAS not in group.sums, runs,
                        [nodes[group.sums[a]].name for a in sums])
    grads = Node(op, name + "_step_grads", {}, [Entry(stack, 0)] + sources)
    redirect.update({(group.sums[a], 0): Entry(grads, k) for k, a in enumerate(sums)})
    added[id(grads)] = [(shapes[row], dtypes[row]) for row in
                        (graph.row_ptr[group.sums[a]] for a in sums)]
    return [stack] + joins + [grads]


def _sources(graph: Graph, shapes: list, dtypes: list, data: list, pieces: dict, added: dict,
             name: str) -> tuple:
    """([(start, count)] per source, the source entries, the joins made for them) for the
    steps' `data`, run by run (`_runs`)."""
    runs, sources, joins = [], [], []
    for run in _runs(graph, data, pieces):
        runs.append((run.start, len(run.entries)))
        if run.stack is not None:  # a forward stack of the steps' outputs
            sources.append(Entry(graph.nodes[run.stack], 0))
        elif len(run.entries) == 1:
            sources.append(_entry(graph, run.entries[0]))
        else:  # the steps' data joined for the product, in place where the plan can
            join = Node(StepStack(len(run.entries)), "%s_step_data%d" % (name, len(joins)), {},
                        [_entry(graph, e) for e in run.entries])
            step = run.entries[0]
            added[id(join)] = [((len(run.entries),) + tuple(shapes[step]), dtypes[step])]
            joins.append(join)
            sources.append(Entry(join, 0))
    return runs, sources, joins


def _stacked_steps(graph: Graph, first: int) -> dict:
    """{entry: (StepStack node id, position)} for each entry a forward StepStack joins, the
    entry a reshape of it views standing for the reshape."""
    found: dict = {}
    for nid in range(first):
        if type(graph.nodes[nid].op) is StepStack:
            for pos, eid in enumerate(graph.input_eids[nid]):
                found.setdefault(_viewed(graph, eid), (nid, pos))
    return found


def _viewed(graph: Graph, eid: int) -> int:
    """The entry `eid` holds the bytes of through any chain of views (`Op.views`)."""
    while True:
        nid = graph.entry_node(eid)
        op = graph.nodes[nid].op
        src = [graph.input_eids[nid][i] for i, o in (op.views if op is not None else ())
               if o == eid - graph.row_ptr[nid]]
        if not src:
            return eid
        eid = src[0]


@dataclasses.dataclass
class _Run:
    """Consecutive steps whose data lie together: parts `start`, `start + 1`, ... of forward
    StepStack node `stack`, or (`stack` None) entries no stack joins, to be joined."""

    stack: Optional[int]
    start: int
    entries: list  # the steps' data entry ids


def _runs(graph: Graph, data: list, pieces: dict) -> list:
    """The steps' `data` in order as `_Run`s. A variable (a begin state the user feeds) is
    a run of its own: a join cannot hold it in place."""
    runs: list = []
    for eid in data:
        hit = pieces.get(eid)
        last = runs[-1] if runs else None
        if (hit and last and last.stack == hit[0]
                and last.start + len(last.entries) == hit[1]):
            last.entries.append(eid)
        elif hit:
            runs.append(_Run(hit[0], hit[1], [eid]))
        elif (last and last.stack is None and _made(graph, eid)
              and _made(graph, last.entries[-1])):
            last.entries.append(eid)
        else:
            runs.append(_Run(None, 0, [eid]))
    return runs


def _made(graph: Graph, eid: int) -> bool:
    return graph.nodes[graph.entry_node(eid)].op is not None


def _entry(graph: Graph, eid: int) -> Entry:
    nid = graph.entry_node(eid)
    return Entry(graph.nodes[nid], eid - graph.row_ptr[nid])
