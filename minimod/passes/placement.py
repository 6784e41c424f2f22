"""The placement pass: which device runs each node of a model-parallel graph, and the copy
nodes between devices.

Nodes made inside `with mx.AttrScope(ctx_group='dev1'):` carry the attribute `__ctx_group__`;
a bind given `group2ctx={'dev1': mx.cpu(1), ...}` runs them on that device. The rules are
MXNet's PlaceDevice pass's, checked against MXNet 1.9.1:

- an op node of a group runs on its group's context;
- an op node of no group runs where its first input lives (an input-less one where its first
  reader runs, else on the default context: the bind's `ctx`);
- a variable lives where its bound array is (`bind`), else on its group's context, else on the
  default context (`simple_bind`); an aux state not bound elsewhere lives where the node that
  updates it runs, since a state cannot be updated across devices (MXNet refuses the bind
  instead);
- the nodes of the gradient pass: a gradient node runs with its forward node, a head gradient
  lives with its output, a sum of gradients (or a zero gradient) where its first input lives;
- then every edge whose ends are on two devices gets a `_CrossDeviceCopy` node (one per value
  and target device, named `<source>_<output index>_copy` as in MXNet), forward and backward
  alike (a gradient node reading a forward value from another device shares the forward
  pass's copy of it).

The pass runs, as MXNet's does, on the graph the gradient pass made, so the arithmetic is the
ungrouped graph's: the same nodes, the same sums in the same order, with copies between them.
A variable's gradient computed away from the variable gets one more copy, back to it (MXNet
refuses such a bind: a variable of no group feeding a grouped node), so every gradient lives
with its variable.

`placement_for` checks a bind's `group2ctx` (errors name the group and the context) and
returns None when there is nothing to place: no group2ctx, an empty one (MXNet then ignores
the groups), or one that puts every group the graph uses on the default context. A bind then
compiles exactly as without groups.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Optional, Sequence

from .. import backend
from ..base import BindError
from ..context import Context
from ..graph import Entry, Graph, Node
from ..ops.identity import CrossDeviceCopyOp

__all__ = ["Placement", "Placed", "placement_for", "place", "GROUP_KEY", "is_copy"]

#: the node attribute that names a node's group (`AttrScope(ctx_group=...)`)
GROUP_KEY = "__ctx_group__"


@dataclasses.dataclass(frozen=True)
class Placement:
    """What a model-parallel bind asks of the compiler: the `default` context (the bind's),
    the context of each group the graph uses (`group2ctx`), and the contexts of the arrays
    `bind` was given (`bound`, by variable name; empty for `simple_bind`)."""

    default: Context
    group2ctx: Mapping[str, Context]
    bound: Mapping[str, Context]

    @property
    def one_device_type(self) -> bool:
        """Whether every context is of the default's type (all CPUs, or all GPUs): then the
        rewrites for the default's device type suit every node."""
        kinds = {c.device_typeid for c in self.group2ctx.values()}
        kinds |= {c.device_typeid for c in self.bound.values()}
        return kinds <= {self.default.device_typeid}


def _check_type(group2ctx) -> None:
    if not isinstance(group2ctx, dict) or not all(
            isinstance(k, str) and isinstance(v, Context) for k, v in group2ctx.items()):
        raise BindError("group2ctx must be a dict {ctx_group name: Context}, such as "
                        "{'dev1': mx.cpu(1), 'dev2': mx.gpu(0)}; got %r" % (group2ctx,))


def _check_available(group: str, ctx: Context) -> None:
    if ctx.device_type == "gpu" and not backend.gpu_available(ctx.device_id):
        raise BindError("group2ctx puts ctx_group '%s' on %s, which this machine cannot use: %s"
                        % (group, ctx, backend.cupy_status() or "no such GPU"))


def _group_users(graph: Graph) -> dict:
    """Per group named by a node of `graph`, the names of its nodes, in graph order."""
    users: dict = {}
    for node in graph.nodes:
        group = node.attrs.get(GROUP_KEY)
        if group is not None:
            users.setdefault(group, []).append(node.name)
    return users


def placement_for(graph: Graph, group2ctx, default: Context,
                  bound: Optional[Mapping[str, Context]] = None) -> Optional[Placement]:
    """The Placement a bind of `graph` on `default` with `group2ctx` asks for, or None when
    every node runs on `default` (see the module docstring). Raises BindError for a group2ctx
    that is not a dict of Contexts, a group the graph uses that it does not name (as MXNet
    does), or a context of a used group that this machine lacks; groups it names that no
    node uses are ignored, as in MXNet."""
    if group2ctx is None:
        return None
    _check_type(group2ctx)
    if not group2ctx:
        return None
    users = _group_users(graph)
    missing = [g for g in users if g not in group2ctx]
    if missing:
        group = missing[0]
        raise BindError("ctx_group '%s' (nodes %s) has no context in group2ctx, which names "
                        "%s: every group the symbol uses needs one"
                        % (group, ", ".join(users[group][:4]), ", ".join(sorted(group2ctx))))
    for group in users:
        _check_available(group, group2ctx[group])
    if all(group2ctx[g] == default for g in users) and all(
            c == default for c in (bound or {}).values()):
        return None
    return Placement(default, {g: group2ctx[g] for g in users}, dict(bound or {}))


@dataclasses.dataclass(frozen=True)
class Placed:
    """A graph with its copy nodes: `graph`, the Context of each of its entries (`devices`),
    for each of its entries the entry of the unplaced graph whose value (shape, dtype) it
    holds (`origins`), the new id of each entry of the unplaced graph (`entry_map`), and how
    many of its nodes run in the forward pass (`num_forward_nodes`)."""

    graph: Graph
    devices: tuple
    origins: tuple
    entry_map: tuple
    num_forward_nodes: int


def place(full: Graph, fwd: Graph, sources: Mapping[int, int], wrt: Sequence[str],
          placement: Placement) -> Placed:
    """Place `full`, the forward graph `fwd` extended by the gradient pass (its outputs: those
    of `fwd`, then the gradient of each variable named in `wrt`; `sources`: the pass's
    `shape_source`), and put a copy node on every edge between devices, and after every
    gradient computed away from its variable."""
    contexts = _node_contexts(fwd, placement)
    contexts += _backward_contexts(full, fwd, sources, contexts)
    home = {fwd.nodes[i].name: contexts[i] for i in fwd.variable_ids()}
    wanted = [None] * len(fwd.outputs) + [home[name] for name in wrt]
    return _with_copies(full, contexts, wanted, len(fwd.nodes))


def _backward_contexts(full: Graph, fwd: Graph, sources: Mapping[int, int],
                       forward: list) -> list:
    """The context of every node the gradient pass added, given those of the forward nodes
    (`forward`): a gradient node runs with its forward node, a head gradient lives with its
    output, a sum or a zero gradient where its first input lives (MXNet's rules)."""
    node_of_op = {id(node.op): nid for nid, node in enumerate(fwd.nodes) if node.op is not None}
    contexts = list(forward)
    for nid in range(len(fwd.nodes), len(full.nodes)):
        node = full.nodes[nid]
        if node.op is None:
            contexts.append(contexts[fwd.entry_node(sources[full.row_ptr[nid]])])
        elif node.op.is_backward:
            contexts.append(contexts[node_of_op[id(node.op.fwd_op)]])
        else:
            contexts.append(contexts[full.entry_node(full.input_eids[nid][0])])
    return contexts[len(fwd.nodes):]


def _node_contexts(graph: Graph, placement: Placement) -> list:
    """The context of every node of `graph`, by the rules of the module docstring."""
    groups, bound, default = placement.group2ctx, placement.bound, placement.default
    contexts: list = [None] * len(graph.nodes)
    for nid, node in enumerate(graph.nodes):
        group = node.attrs.get(GROUP_KEY)
        if node.op is None:
            contexts[nid] = bound.get(node.name) or groups.get(group, default)
        elif group is not None:
            contexts[nid] = groups[group]
        else:
            contexts[nid] = next((contexts[graph.entry_node(e)] for e in graph.input_eids[nid]
                                  if contexts[graph.entry_node(e)] is not None), None)
    for nid in range(len(graph.nodes) - 1, -1, -1):  # input-less nodes: where their reader is
        for eid in graph.input_eids[nid]:
            src = graph.entry_node(eid)
            if contexts[src] is None:
                contexts[src] = contexts[nid]
    contexts = [default if c is None else c for c in contexts]
    _aux_with_updater(graph, contexts, bound)
    return contexts


def _aux_with_updater(graph: Graph, contexts: list, bound: Mapping[str, Context]) -> None:
    """Put every aux state where the node that updates it runs (in `contexts`); an aux array
    bound on another device is an error."""
    for nid, node in enumerate(graph.nodes):
        for pos in node.aux_input_positions():
            src = graph.entry_node(graph.input_eids[nid][pos])
            name = graph.nodes[src].name
            if name in bound and bound[name] != contexts[nid]:
                raise BindError(
                    "%s (%s) runs on %s but its aux state '%s' is bound on %s: a state is "
                    "updated where its node runs; bind it there" % (
                        node.name, node.op.name, contexts[nid], name, bound[name]))
            contexts[src] = contexts[nid]


def _copy_name(entry: Entry, ctx: Context, taken: set) -> str:
    name = "%s_%d_copy" % (entry.node.name, entry.index)
    if name in taken:  # the same value copied to a second device
        name = "%s_%s%d" % (name, ctx.device_type, ctx.device_id)
    taken.add(name)
    return name


class _Copier:
    """The nodes of a placed graph as they are made: the original nodes (copied where they
    read a copy) and the copy nodes, one per value and target device."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.nodes: list = []
        self.contexts: list = []   # per new node
        self.origins: list = []    # per new entry: the old entry it holds
        self.owners: list = []     # per new node: the old node it was made for
        self.renewed: dict = {}    # old node id -> its new node, where it changed
        self.copies: dict = {}     # (old entry id, target context) -> copy node
        self.taken: set = set()
        self.entry_map = [0] * graph.num_entries  # old entry id -> new entry id

    def entry(self, eid: int, e: Entry) -> Entry:
        return Entry(self.renewed.get(self.graph.entry_node(eid), e.node), e.index)

    def copy_to(self, eid: int, e: Entry, ctx: Context, owner: int) -> Entry:
        """An entry holding old entry `eid` (`e`) on `ctx`: the copy node made for it."""
        copy = self.copies.get((eid, ctx))
        if copy is None:
            copy = self.copies[(eid, ctx)] = Node(
                CrossDeviceCopyOp(), _copy_name(e, ctx, self.taken), {}, [self.entry(eid, e)])
            self.add(copy, ctx, [eid], owner)
        return Entry(copy, 0)

    def add(self, node: Node, ctx: Context, origins, owner: int) -> None:
        self.nodes.append(node)
        self.contexts.append(ctx)
        self.origins.extend(origins)
        self.owners.append(owner)

    def add_original(self, nid: int, node: Node, ctx: Context) -> None:
        """Old node `nid`, as `node` (itself or its copy reading copies)."""
        lo, hi = self.graph.row_ptr[nid], self.graph.row_ptr[nid + 1]
        for k, old in enumerate(range(lo, hi)):
            self.entry_map[old] = len(self.origins) + k
        self.add(node, ctx, range(lo, hi), nid)


def _with_copies(graph: Graph, contexts: Sequence, wanted: Sequence,
                 num_forward_nodes: int) -> Placed:
    """`graph` with a copy node before the first reader on another device of each value, and
    after each output produced away from the device `wanted` for it (None: anywhere)."""
    copier = _Copier(graph)
    for nid, node in enumerate(graph.nodes):
        here = contexts[nid]
        inputs = [copier.copy_to(eid, e, here, nid)
                  if contexts[graph.entry_node(eid)] != here else copier.entry(eid, e)
                  for e, eid in zip(node.inputs, graph.input_eids[nid])]
        if inputs != list(node.inputs):
            node = copier.renewed[nid] = Node(node.op, node.name, node.attrs, inputs)
        copier.add_original(nid, node, here)
    outputs = []
    for e, eid, ctx in zip(graph.outputs, graph.output_eids, wanted):
        there = contexts[graph.entry_node(eid)]
        outputs.append(copier.copy_to(eid, e, ctx, len(graph.nodes))
                       if ctx is not None and ctx != there else copier.entry(eid, e))
    placed = Graph(copier.nodes, outputs)
    devices = []
    for node, ctx in zip(placed.nodes, copier.contexts):
        devices.extend([ctx] * node.num_outputs())
    return Placed(placed, tuple(devices), tuple(copier.origins), tuple(copier.entry_map),
                  sum(1 for owner in copier.owners if owner < num_forward_nodes))


def is_copy(op) -> bool:
    """Whether `op` is a copy node's, moving a value between devices."""
    return isinstance(op, CrossDeviceCopyOp)
