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
    kept_as: dict = {}  # id(node) -> the node computing its values (itself where kept)
    first: dict = {}  # (op class, attrs, input entries) -> node
    drop, redirect = set(), {}
    for nid, node in enumerate(graph.nodes):
        if not mergeable(node):
            continue
        inputs = tuple((id(kept_as.get(id(e.node), e.node)), e.index) for e in node.inputs)
        key = (type(node.op), tuple(sorted(node.attrs.items())), inputs)
        kept = kept_as[id(node)] = first.setdefault(key, node)
        if kept is not node:
            drop.add(nid)
            redirect.update({(nid, k): Entry(kept, k) for k in range(node.num_outputs())})
    if not drop:
        return graph
    merged = graph.rebuilt([node.op for node in graph.nodes], drop=drop, redirect=redirect)
    outputs = list(merged.outputs)
    return Graph(list(merged.nodes) + _isolate_repeats(outputs), outputs)


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
