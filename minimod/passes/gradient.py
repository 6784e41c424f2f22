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
from ..graph import Entry, Graph, Node
from ..ops.registry import Op, create_op

__all__ = ["BackwardOp", "GradientGraph", "build_gradient"]


class BackwardOp(Op):
    """The backward half of a forward op, as a graph node's op.

    Input layout: [head grads of visible outputs (if the op reads them)] + [forward arguments
    listed in `arg_pos`] + [forward outputs listed in `out_pos`] + [aux states].
    Output k is the gradient of forward argument `wanted[k]`. It computes nothing itself: the
    executor binds the node to `fwd_op.backward` (or its kernel) over `split_arrays`. Shapes
    and dtypes of its entries come from forward entries, so it is never asked to infer them.
    `moved` lists the arguments whose gradient a rewrite computes elsewhere
    (`passes.stack_grads`); only a monitor asks for them, and gets them computed again.
    """

    is_backward = True
    no_gradient = True

    def __init__(self, fwd_op: Op, wanted: Sequence[int], moved: Sequence[int] = ()):
        super().__init__()
        self.fwd_op = fwd_op
        self.name = "_backward_%s" % fwd_op.name
        self.wanted = tuple(wanted)
        self.moved = tuple(moved)
        n_args = len(fwd_op.arguments())
        n_out = fwd_op.num_outputs()
        self.n_head = fwd_op.num_visible_outputs() if fwd_op.needs_out_grad else 0
        self.arg_pos = tuple(range(n_args)) if fwd_op.backward_inputs == "all" else tuple(
            fwd_op.backward_inputs)
        self.out_pos = tuple(range(n_out)) if fwd_op.backward_outputs == "all" else tuple(
            fwd_op.backward_outputs)
        self.n_aux = len(fwd_op.aux_states())
        # a gradient that is a head gradient unchanged (a reshape's) may share its storage
        self.views = tuple((o, self.wanted.index(a)) for o, a in fwd_op.grad_views
                           if o < self.n_head and a in self.wanted)

    def arguments(self) -> list:
        fwd = self.fwd_op
        names = ["head_grad_%s" % o for o in fwd.outputs()[:self.n_head]]
        names += [fwd.arguments()[i] for i in self.arg_pos]
        names += ["out_%s" % fwd.outputs()[i] for i in self.out_pos]
        return names + list(fwd.aux_states())

    def aux_states(self) -> list:
        return []

    def _reads_head_grads_only(self) -> bool:
        return not self.arg_pos and not self.out_pos and not self.n_aux

    def join_offsets(self, in_shapes: list, out_shapes: list):
        """A split's gradient is its head gradients joined where the split took its parts."""
        fwd = self.fwd_op
        if (self._reads_head_grads_only() and self.wanted == (0,) and len(fwd.arguments()) == 1
                and self.n_head == fwd.num_outputs()):
            return fwd.part_offsets(out_shapes, in_shapes)
        return None

    def part_offsets(self, in_shapes: list, out_shapes: list):
        """A join's gradients are parts of its head gradient, where the join put them."""
        fwd = self.fwd_op
        if (self._reads_head_grads_only() and self.n_head == 1 == fwd.num_outputs()
                and self.wanted == tuple(range(len(fwd.arguments())))):
            return fwd.join_offsets(out_shapes, in_shapes)
        return None

    def outputs(self) -> list:
        return ["%s_grad" % self.fwd_op.arguments()[i] for i in self.wanted]

    def num_outputs(self) -> int:
        return len(self.wanted)

    def num_visible_outputs(self) -> int:
        return len(self.wanted)

    def output_names(self, node_name: str) -> list:
        return ["%s_%s" % (node_name, o) for o in self.outputs()]

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
    builder = _Builder(fwd, _depends_on(fwd, [var_eid[name] for name in wrt]))
    head_vars, head_grad_nodes = builder.head_gradients()
    for nid in range(len(fwd.nodes) - 1, -1, -1):  # reverse topological order
        builder.backward_node(nid)
    grad_entries = []
    for name in wrt:
        eid = var_eid[name]
        entry = builder.summed(eid)
        grad_entries.append(entry if entry is not None else builder.zeros_for(eid))
    graph = Graph(list(fwd.nodes) + head_vars + builder.new_nodes,
                  list(fwd.outputs) + grad_entries)
    return GradientGraph(graph=graph, num_forward_nodes=len(fwd.nodes),
                         num_forward_outputs=len(fwd.outputs), wrt=wrt,
                         grad_eids=tuple(graph.output_eids[len(fwd.outputs):]),
                         head_grad_nodes=tuple(head_grad_nodes),
                         shape_source=builder.sources_in(graph))


def _depends_on(fwd: Graph, eids: list) -> list:
    """Per entry of `fwd`: whether it depends on one of the entries `eids` (through arguments
    of ops that carry a gradient)."""
    depends = [False] * fwd.num_entries
    for eid in eids:
        depends[eid] = True
    for nid, node in enumerate(fwd.nodes):
        if node.op is None or node.op.no_gradient:
            continue
        n_args = len(node.op.arguments())
        if any(depends[e] for e in fwd.input_eids[nid][:n_args]):
            for e in range(fwd.row_ptr[nid], fwd.row_ptr[nid + 1]):
                depends[e] = True
    return depends


class _Builder:
    """The nodes the gradient pass adds to `fwd`, and the gradient contributions collected
    per forward entry as the backward nodes are made."""

    def __init__(self, fwd: Graph, depends: list):
        self.fwd = fwd
        self.depends = depends
        self.new_nodes: list = []
        self.contributions: list = [[] for _ in range(fwd.num_entries)]
        self.entry_of = _entry_table(fwd)
        # new node (or head-gradient variable) -> the forward entry it takes its shape from
        self.shape_source: dict = {}

    def head_gradients(self) -> tuple:
        """(the head-gradient variables, per forward output the id its variable will have in
        the extended graph or None): a loss head, or an output nothing wanted depends on,
        takes none."""
        fwd = self.fwd
        head_vars, head_grad_nodes = [], []
        last_occurrence = {eid: i for i, eid in enumerate(fwd.output_eids)}
        for i, eid in enumerate(fwd.output_eids):
            op = fwd.nodes[fwd.entry_node(eid)].op
            # an output listed twice in a Group takes the head gradient of its last listing
            # only, as in MXNet
            if not self.depends[eid] or last_occurrence[eid] != i or (
                    op is not None and (not op.needs_out_grad or op.no_gradient)):
                head_grad_nodes.append(None)
                continue
            var = Node(None, "_head_grad%d" % i)
            head_vars.append(var)
            head_grad_nodes.append(len(fwd.nodes) + len(head_vars) - 1)
            self.contributions[eid].append(Entry(var, 0))
            self.shape_source[("var", id(var))] = eid
        return head_vars, head_grad_nodes

    def summed(self, eid: int):
        """The gradient of forward entry `eid`: its one contribution, an `add_n` of several,
        or None when nothing contributes."""
        parts = self.contributions[eid]
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        node = Node(create_op("add_n", {"num_args": str(len(parts))}),
                    "%s_grad_sum" % self.fwd.entry_name(eid), {"num_args": str(len(parts))},
                    parts)
        self.new_nodes.append(node)
        self.shape_source[("node", id(node), 0)] = eid
        entry = Entry(node, 0)
        self.contributions[eid] = [entry]
        return entry

    def zeros_for(self, eid: int) -> Entry:
        node = Node(create_op("zeros_like"), "%s_zero_grad" % self.fwd.entry_name(eid), {},
                    [self.entry_of[eid]])
        self.new_nodes.append(node)
        self.shape_source[("node", id(node), 0)] = eid
        return Entry(node, 0)

    def backward_node(self, nid: int) -> None:
        """Add `<node>_backward` for forward node `nid` when a wanted gradient flows
        through it."""
        fwd, node = self.fwd, self.fwd.nodes[nid]
        op = node.op
        if op is None or op.no_gradient:
            return
        n_args = len(op.arguments())
        in_eids = fwd.input_eids[nid]
        needed = [i for i in range(n_args) if self.depends[in_eids[i]]]
        if not needed:
            return
        # some ops (Concat) can only place a gradient if every slot gets an array
        wanted = list(range(n_args)) if op.grads_all_inputs else needed
        head_entries = []
        if op.needs_out_grad:
            visible = range(fwd.row_ptr[nid], fwd.row_ptr[nid] + op.num_visible_outputs())
            grads = [self.summed(e) for e in visible]
            if all(g is None for g in grads):
                return
            head_entries = [g if g is not None else self.zeros_for(e)
                            for g, e in zip(grads, visible)]
        if not op.differentiable:
            _refuse(fwd, nid, needed)
        bop = BackwardOp(op, wanted)
        inputs = list(head_entries)
        inputs += [node.inputs[i] for i in bop.arg_pos]
        inputs += [Entry(node, i) for i in bop.out_pos]
        inputs += list(node.inputs[n_args:])
        bnode = Node(bop, "%s_backward" % node.name, {}, inputs)
        self.new_nodes.append(bnode)
        for k, i in enumerate(wanted):
            self.shape_source[("node", id(bnode), k)] = in_eids[i]
            if self.depends[in_eids[i]]:
                self.contributions[in_eids[i]].append(Entry(bnode, k))

    def sources_in(self, graph: Graph) -> dict:
        """`shape_source` by entry id of the extended `graph`."""
        sources = {}
        for key, src in self.shape_source.items():
            base = graph.row_ptr[graph.node_id[key[1]]]
            sources[base if key[0] == "var" else base + key[2]] = src
        return sources


def _refuse(fwd: Graph, nid: int, needed: list) -> None:
    """A gradient reaches node `nid` and is asked of its inputs `needed`, but its op has none:
    MXNet refuses such a bind the same way, before anything runs."""
    node = fwd.nodes[nid]
    raise GraphError(
        "%s (%s) is non-differentiable: MXNet registers no gradient for it, yet the gradient "
        "of %s is requested through it (grad_req 'null' for those, or a BlockGrad after the "
        "node)" % (node.name, node.op.name, ", ".join(fwd.entry_name(fwd.input_eids[nid][i])
                                                      for i in needed)))


def _entry_table(graph: Graph) -> list:
    table = []
    for node in graph.nodes:
        table.extend(Entry(node, i) for i in range(node.num_outputs()))
    return table
