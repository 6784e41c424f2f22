"""The gradient pass: append backward nodes to a forward graph.

For every forward node through which a gradient flows, one `<name>_backward` node is appended
whose op is a `BackwardOp` wrapping the forward op. Its inputs are the head gradients of the
forward node's visible outputs (unless the op is a loss head), the forward inputs and outputs its
backward declares it reads, and the aux states. Its outputs are the gradients of exactly those
forward arguments that lead to a requested gradient (the pruning that `grad_req` asks for). An
entry read by several nodes gets the sum of their contributions (an `add_n` node); a requested
gradient that nothing contributes to is `zeros_like` of its variable. A gradient that would
have to pass through an op registered without one (`differentiable = False`) is an error here,
at compile time.

Backward entries take their shapes and dtypes from forward entries (`shape_source`), so shape
inference runs on the forward graph only.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

from ..base import GraphError
from ..ops.registry import create_op
from ..symbol.graph import Entry, Graph, Node

__all__ = ["BackwardOp", "GradientGraph", "build_gradient"]


class BackwardOp:
    """The backward half of a forward op, as a graph node's op.

    Input layout: [head grads of visible outputs (if the op reads them)] + [forward arguments
    listed in `arg_pos`] + [forward outputs listed in `out_pos`] + [aux states].
    Output k is the gradient of forward argument `wanted[k]`.
    """

    is_backward = True
    needs_out_grad = True
    inplace = ()
    no_gradient = True

    def __init__(self, fwd_op, wanted: Sequence[int]):
        self.fwd_op = fwd_op
        self.name = "_backward_%s" % fwd_op.name
        self.wanted = tuple(wanted)
        n_args = len(fwd_op.arguments())
        n_out = fwd_op.num_outputs()
        self.n_head = fwd_op.num_visible_outputs() if fwd_op.needs_out_grad else 0
        self.arg_pos = tuple(range(n_args)) if fwd_op.backward_inputs == "all" else tuple(
            fwd_op.backward_inputs)
        self.out_pos = tuple(range(n_out)) if fwd_op.backward_outputs == "all" else tuple(
            fwd_op.backward_outputs)
        self.n_aux = len(fwd_op.aux_states())
        self.raw_attrs = {}

    def arguments(self) -> list:
        fwd = self.fwd_op
        names = ["head_grad_%s" % o for o in fwd.outputs()[:self.n_head]]
        names += [fwd.arguments()[i] for i in self.arg_pos]
        names += ["out_%s" % fwd.outputs()[i] for i in self.out_pos]
        return names + list(fwd.aux_states())

    def aux_states(self) -> list:
        return []

    def outputs(self) -> list:
        return ["%s_grad" % self.fwd_op.arguments()[i] for i in self.wanted]

    def num_outputs(self) -> int:
        return len(self.wanted)

    def num_visible_outputs(self) -> int:
        return len(self.wanted)

    def output_names(self, node_name: str) -> list:
        return ["%s_%s" % (node_name, o) for o in self.outputs()]

    def _in_name(self, i: int) -> str:
        return self.arguments()[i]

    def split_arrays(self, inputs: list, outputs: list) -> tuple:
        """This node's input and output arrays as the arguments of the forward op's backward:
        (out_grads, forward inputs, forward outputs, in_grads, aux), with None in the slots
        backward does not read or nobody asked for."""
        fwd = self.fwd_op
        n_args = len(fwd.arguments())
        pos = 0
        out_grads = [None] * fwd.num_outputs()
        for i in range(self.n_head):
            out_grads[i] = inputs[pos]
            pos += 1
        fwd_inputs = [None] * n_args
        for i in self.arg_pos:
            fwd_inputs[i] = inputs[pos]
            pos += 1
        fwd_outputs = [None] * fwd.num_outputs()
        for i in self.out_pos:
            fwd_outputs[i] = inputs[pos]
            pos += 1
        aux = list(inputs[pos:pos + self.n_aux])
        in_grads = [None] * n_args
        for k, i in enumerate(self.wanted):
            in_grads[i] = outputs[k]
        return out_grads, fwd_inputs, fwd_outputs, in_grads, aux


@dataclasses.dataclass(frozen=True)
class GradientGraph:
    """A forward graph extended with backward nodes.

    `graph.outputs` are the forward outputs followed by one gradient entry per `wrt` name.
    `head_grad_nodes[i]` is the id of the variable node that receives the head gradient of
    forward output i, or None when that output is a loss head (or carries no gradient).
    `shape_source[eid]` gives, for each entry added by the pass, the forward entry whose shape
    and dtype it has.
    """

    graph: Graph
    num_forward_nodes: int
    num_forward_outputs: int
    wrt: tuple
    grad_eids: tuple
    head_grad_nodes: tuple
    shape_source: dict


def build_gradient(fwd: Graph, wrt: Sequence[str]) -> GradientGraph:
    """Extend `fwd` with the backward nodes that the gradients of variables `wrt` need."""
    wrt = tuple(wrt)
    var_eid = {fwd.nodes[i].name: fwd.row_ptr[i] for i in fwd.variable_ids()}
    depends = [False] * fwd.num_entries
    for name in wrt:
        depends[var_eid[name]] = True
    for nid, node in enumerate(fwd.nodes):
        if node.op is None or node.op.no_gradient:
            continue
        n_args = len(node.op.arguments())
        if any(depends[e] for e in fwd.input_eids[nid][:n_args]):
            for e in range(fwd.row_ptr[nid], fwd.row_ptr[nid + 1]):
                depends[e] = True

    new_nodes: list = []
    shape_source: dict = {}
    contributions: list = [[] for _ in range(fwd.num_entries)]
    entry_of = _entry_table(fwd)

    head_grad_nodes = []
    head_vars = []
    last_occurrence = {eid: i for i, eid in enumerate(fwd.output_eids)}
    for i, eid in enumerate(fwd.output_eids):
        node = fwd.nodes[fwd.entry_node(eid)]
        # an output listed twice in a Group takes the head gradient of its last listing only,
        # as in MXNet
        if not depends[eid] or last_occurrence[eid] != i or (
                node.op is not None and not node.op.needs_out_grad) or (
                node.op is not None and node.op.no_gradient):
            head_grad_nodes.append(None)
            continue
        var = Node(None, "_head_grad%d" % i)
        head_vars.append(var)
        head_grad_nodes.append(len(fwd.nodes) + len(head_vars) - 1)
        contributions[eid].append(Entry(var, 0))
        shape_source[("var", id(var))] = eid

    def summed(eid: int):
        parts = contributions[eid]
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        node = Node(create_op("add_n", {"num_args": str(len(parts))}),
                    "%s_grad_sum" % fwd.entry_name(eid), {"num_args": str(len(parts))}, parts)
        new_nodes.append(node)
        shape_source[("node", id(node), 0)] = eid
        entry = Entry(node, 0)
        contributions[eid] = [entry]
        return entry

    def zeros_for(eid: int):
        node = Node(create_op("zeros_like"), "%s_zero_grad" % fwd.entry_name(eid), {},
                    [entry_of[eid]])
        new_nodes.append(node)
        shape_source[("node", id(node), 0)] = eid
        return Entry(node, 0)

    for nid in range(len(fwd.nodes) - 1, -1, -1):
        node = fwd.nodes[nid]
        op = node.op
        if op is None or op.no_gradient:
            continue
        n_args = len(op.arguments())
        in_eids = fwd.input_eids[nid]
        needed = [i for i in range(n_args) if depends[in_eids[i]]]
        if not needed:
            continue
        # some ops (Concat) can only place a gradient if every slot gets an array
        wanted = list(range(n_args)) if getattr(op, "grads_all_inputs", False) else needed
        first = fwd.row_ptr[nid]
        head_entries = []
        if op.needs_out_grad:
            visible = range(first, first + op.num_visible_outputs())
            grads = [summed(e) for e in visible]
            if all(g is None for g in grads):
                continue
            head_entries = [g if g is not None else zeros_for(e) for g, e in zip(grads, visible)]
        if not getattr(op, "differentiable", True):
            # a gradient reaches the node and is asked of its inputs, but the op has none
            # (MXNet refuses such a bind the same way, before anything runs)
            raise GraphError(
                "%s (%s) is non-differentiable: MXNet registers no gradient for it, yet the "
                "gradient of %s is requested through it (grad_req 'null' for those, or a "
                "BlockGrad after the node)" % (node.name, op.name, ", ".join(
                    fwd.entry_name(in_eids[i]) for i in needed)))
        bop = BackwardOp(op, wanted)
        inputs = list(head_entries)
        inputs += [node.inputs[i] for i in bop.arg_pos]
        inputs += [Entry(node, i) for i in bop.out_pos]
        inputs += list(node.inputs[n_args:])
        bnode = Node(bop, "%s_backward" % node.name, {}, inputs)
        new_nodes.append(bnode)
        for k, i in enumerate(wanted):
            shape_source[("node", id(bnode), k)] = in_eids[i]
            if depends[in_eids[i]]:
                contributions[in_eids[i]].append(Entry(bnode, k))

    grad_entries = []
    for name in wrt:
        eid = var_eid[name]
        entry = summed(eid)
        grad_entries.append(entry if entry is not None else zeros_for(eid))

    graph = Graph(list(fwd.nodes) + head_vars + new_nodes, list(fwd.outputs) + grad_entries)
    sources = {}
    for key, src in shape_source.items():
        if key[0] == "var":
            sources[graph.row_ptr[graph.node_id[key[1]]]] = src
        else:
            sources[graph.row_ptr[graph.node_id[key[1]]] + key[2]] = src
    return GradientGraph(graph=graph, num_forward_nodes=len(fwd.nodes),
                         num_forward_outputs=len(fwd.outputs), wrt=wrt,
                         grad_eids=tuple(graph.output_eids[len(fwd.outputs):]),
                         head_grad_nodes=tuple(head_grad_nodes), shape_source=sources)


def _entry_table(graph: Graph) -> list:
    table = []
    for node in graph.nodes:
        table.extend(Entry(node, i) for i in range(node.num_outputs()))
    return table
