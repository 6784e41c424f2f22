"""Common-subexpression elimination: one node for each computation written twice.

Two op nodes compute the same values when they run the same operator with the same attributes
on the same input entries; the later one is dropped and its readers read the earlier one. The
pass runs on the forward graph first in `compile_graph`, before inference, so every later pass
and the memory plan see the smaller graph (`(a+b) + (a+b)` computes `a+b` once, and its
gradient flows back once).

A node is never merged when its outputs depend on more than its inputs and attributes, or
when running it has effects of its own:

- its op says so (`Op.deterministic` is False: random draws, dropout masks, stateful ops);
- it has aux states, which it updates in place (BatchNorm's moving statistics);
- it is a variable (two variables are two inputs, whatever their names).

MXNet 1.9.1 runs the same rewrite at bind time (environment variable
`MXNET_ELIMINATE_COMMON_EXPR`, on unless "0"; read by the executor, not here). Like MXNet, the
pass keeps every requested output a distinct array: when it merged anything and several
outputs are one entry (`Group([a*d, a*d])`), each repeat reads a `_copy` node named
`<node>_<k>_copy`, so the number of outputs and what the user binds do not change (a graph
with nothing to merge is returned as it is, repeated outputs included, as MXNet does).
Attribute maps are compared as written: a parameter given at its default value and one left
out differ, as they do in MXNet.
"""
from __future__ import annotations

from ..graph import Entry, Graph, Node
from ..ops.registry import create_op

__all__ = ["eliminate_common_expr", "mergeable"]


def mergeable(node: Node) -> bool:
    """Whether two applications of `node`'s op on the same inputs always agree."""
    op = node.op
    return (op is not None and op.deterministic
            and not op.aux_states())


def eliminate_common_expr(graph: Graph) -> Graph:
    """`graph` with each repeated computation kept once (`graph` itself when none repeats).
    Nodes keep their order, names and attributes; variables keep theirs, so argument and
    aux-state order do not change."""
    keep_of: dict = {}  # id(dropped node) -> the node kept in its place
    first: dict = {}  # (op class, attrs, input entries) -> node
    for node in graph.nodes:
        if not mergeable(node):
            continue
        inputs = tuple((id(keep_of.get(id(e.node), e.node)), e.index) for e in node.inputs)
        key = (type(node.op), tuple(sorted(node.attrs.items())), inputs)
        kept = first.setdefault(key, node)
        if kept is not node:
            keep_of[id(node)] = kept
    if not keep_of:
        return graph
    outputs = [_redirect(e, keep_of) for e in graph.outputs]
    copies: dict = {}  # id(original node) -> its copy reading redirected inputs
    nodes = []
    for node in graph.nodes:
        if id(node) in keep_of:
            continue
        ins = [_redirect(e, keep_of) for e in node.inputs]
        ins = [Entry(copies.get(id(e.node), e.node), e.index) for e in ins]
        if any(a.node is not b.node for a, b in zip(ins, node.inputs)):
            copies[id(node)] = Node(node.op, node.name, node.attrs, ins)
        nodes.append(copies.get(id(node), node))
    outputs = [Entry(copies.get(id(e.node), e.node), e.index) for e in outputs]
    return Graph(nodes + _isolate_repeats(outputs), outputs)


def _redirect(entry: Entry, keep_of: dict) -> Entry:
    kept = keep_of.get(id(entry.node))
    return entry if kept is None else Entry(kept, entry.index)


def _isolate_repeats(outputs: list) -> list:
    """Replace, in place, each repeat of an output entry by a `_copy` of it; the new nodes."""
    repeats: dict = {}
    added = []
    for i, entry in enumerate(outputs):
        if entry not in repeats:
            repeats[entry] = 0
            continue
        name = "%s_%d_copy" % (entry.node.name, repeats[entry])
        repeats[entry] += 1
        copy = Node(create_op("_copy"), name, {}, [entry])
        added.append(copy)
        outputs[i] = Entry(copy, 0)
    return added
