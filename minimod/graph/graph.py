"""The graph records: Node, Entry and Graph.

A `Node` is one operator application (or a variable when `op` is None); its inputs are `Entry`s,
references to (node, output index). Nodes are shared between the symbols that contain them, as in
MXNet, so a node is compared by identity. A `Graph` is a frozen, topologically ordered view of the
nodes reachable from some output entries: the in-memory twin of MXNet's symbol JSON (nodes,
arg_nodes, node_row_ptr, heads). Passes work on a Graph through integer ids:

- `node_id`: position of a node in `nodes`;
- `entry_id`: `row_ptr[node_id] + output_index`, one id per output of every node, hidden
  outputs included (BatchNorm has 3, like MXNet's node_row_ptr).

Nothing here recurses: unrolled RNNs are thousands of nodes deep.
"""
from __future__ import annotations

from typing import Collection, Iterable, Mapping, Optional, Sequence

__all__ = ["Node", "Entry", "Graph", "topo_sort", "substitute", "AMP_CASTS", "without_amp_casts"]

#: the operators AMP's conversion inserts, which MXNet's `tojson()` leaves out by default
AMP_CASTS = ("amp_cast", "amp_multicast")


class Node:
    """An operator application (`op` is an Op instance) or a variable (`op` is None).

    `attrs` holds MXNet's string attributes: the explicitly given op parameters and the hidden
    `__key__` attributes. Apart from `_set_attr` (which MXNet also applies in place), a node is
    not changed after construction.
    """

    __slots__ = ("op", "name", "attrs", "inputs", "__weakref__")

    def __init__(self, op, name: str, attrs: Optional[Mapping[str, str]] = None,
                 inputs: Iterable["Entry"] = ()):
        self.op = op
        self.name = name
        self.attrs = dict(attrs or {})
        self.inputs = tuple(inputs)

    @property
    def is_variable(self) -> bool:
        return self.op is None

    @property
    def op_name(self) -> str:
        return "null" if self.op is None else self.op.name

    def num_outputs(self) -> int:
        return 1 if self.op is None else self.op.num_outputs()

    def num_visible_outputs(self) -> int:
        return 1 if self.op is None else self.op.num_visible_outputs()

    def output_names(self) -> list:
        return [self.name] if self.op is None else self.op.output_names(self.name)

    def aux_input_positions(self) -> range:
        """Input positions that are aux (mutable) states: they follow the arguments."""
        if self.op is None:
            return range(0)
        n_args = len(self.op.arguments())
        return range(n_args, n_args + len(self.op.aux_states()))

    def __repr__(self):
        return "Node(%s, %s)" % (self.op_name, self.name)


class Entry:
    """Output `index` of `node`."""

    __slots__ = ("node", "index")

    def __init__(self, node: Node, index: int = 0):
        self.node = node
        self.index = index

    def __eq__(self, other):
        return isinstance(other, Entry) and self.node is other.node and self.index == other.index

    def __hash__(self):
        return hash((id(self.node), self.index))

    def __repr__(self):
        return "Entry(%s, %d)" % (self.node.name, self.index)


def topo_sort(heads: Iterable[Entry]) -> list:
    """Nodes reachable from `heads` in DFS post-order, inputs visited in order (MXNet's order)."""
    order: list = []
    seen: set = set()
    for head in heads:
        if id(head.node) in seen:
            continue
        stack = [(head.node, 0)]
        seen.add(id(head.node))
        while stack:
            node, i = stack[-1]
            if i < len(node.inputs):
                stack[-1] = (node, i + 1)
                child = node.inputs[i].node
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, 0))
            else:
                stack.pop()
                order.append(node)
    return order


class Graph:
    """A frozen, topologically ordered graph with integer ids for nodes and entries."""

    __slots__ = ("nodes", "outputs", "node_id", "row_ptr", "input_eids", "output_eids",
                 "aux_nodes", "_consumers")

    def __init__(self, nodes: Iterable[Node], outputs: Iterable[Entry]):
        self.nodes = tuple(nodes)
        self.outputs = tuple(outputs)
        self.node_id = {id(n): i for i, n in enumerate(self.nodes)}
        row_ptr = [0]
        for n in self.nodes:
            row_ptr.append(row_ptr[-1] + n.num_outputs())
        self.row_ptr = tuple(row_ptr)
        input_eids = []
        aux_nodes = set()
        for nid, n in enumerate(self.nodes):
            eids = []
            for e in n.inputs:
                src = self.node_id.get(id(e.node))
                if src is None or src >= nid:
                    raise ValueError("graph is not topologically ordered at node %s" % n.name)
                eids.append(self.row_ptr[src] + e.index)
            for pos in n.aux_input_positions():
                if pos < len(n.inputs):
                    aux_nodes.add(self.node_id[id(n.inputs[pos].node)])
            input_eids.append(tuple(eids))
        self.input_eids = tuple(input_eids)
        self.output_eids = tuple(self.entry_id(e) for e in self.outputs)
        self.aux_nodes = frozenset(aux_nodes)
        self._consumers = None

    @classmethod
    def from_heads(cls, heads: Iterable[Entry]) -> "Graph":
        heads = tuple(heads)
        return cls(topo_sort(heads), heads)

    @property
    def num_entries(self) -> int:
        return self.row_ptr[-1]

    def entry_id(self, entry: Entry) -> int:
        return self.row_ptr[self.node_id[id(entry.node)]] + entry.index

    def entry_node(self, eid: int) -> int:
        """The id of the node that produces entry `eid`."""
        lo, hi = 0, len(self.nodes) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.row_ptr[mid] <= eid:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def entry_name(self, eid: int) -> str:
        nid = self.entry_node(eid)
        node = self.nodes[nid]
        index = eid - self.row_ptr[nid]
        if node.op is None:
            return node.name
        names = node.op.outputs()
        return "%s_%s" % (node.name, names[index])

    def variable_ids(self) -> list:
        return [i for i, n in enumerate(self.nodes) if n.op is None]

    def argument_ids(self) -> list:
        return [i for i, n in enumerate(self.nodes) if n.op is None and i not in self.aux_nodes]

    def aux_ids(self) -> list:
        return [i for i, n in enumerate(self.nodes) if n.op is None and i in self.aux_nodes]

    def rebuilt(self, ops: Sequence, inputs: Optional[Mapping[int, Sequence["Entry"]]] = None,
                drop: Collection[int] = (), redirect: Optional[Mapping[tuple, "Entry"]] = None,
                insert: Optional[Mapping[int, Sequence["Node"]]] = None) -> "Graph":
        """A copy where node i runs `ops[i]`, reads `inputs[i]` where given (entries of this
        graph), and the nodes in `drop` are left out.

        `insert` maps a node id to new nodes that go in just before it (dropped or not),
        reading entries of this graph or of new nodes put in before them. `redirect` maps an
        entry of this graph, as (node id, output index), to the entry (of this graph or of an
        inserted node) that stands for it from now on: readers of a dropped node's output,
        and the graph's outputs, read their redirected entry instead, which must come earlier
        in the new order than any of its readers; nothing kept may read a dropped node
        otherwise. The new order is, for each node id of this graph, its inserted nodes, then
        the node unless dropped. Nodes that change, or read a node that changed, are copied
        with their names and attrs; the rest are shared. This graph itself when nothing
        changes."""
        inputs, insert = inputs or {}, insert or {}
        moved = {(id(self.nodes[nid]), index): to
                 for (nid, index), to in (redirect or {}).items()}
        copies: dict = {}

        def entry(e: "Entry") -> "Entry":
            e = moved.get((id(e.node), e.index), e)
            return Entry(copies.get(id(e.node), e.node), e.index)

        def carried(node: "Node", op, ins: Sequence["Entry"], changed: bool) -> "Node":
            if not changed and all(id(e.node) not in copies and (id(e.node), e.index) not in moved
                                   for e in ins):
                return node  # untouched, and so is everything it reads
            copies[id(node)] = Node(op, node.name, node.attrs, [entry(e) for e in ins])
            return copies[id(node)]

        nodes = []
        for nid, node in enumerate(self.nodes):
            nodes += [carried(new, new.op, new.inputs, False) for new in insert.get(nid, ())]
            if nid not in drop:
                changed = ops[nid] is not node.op or nid in inputs
                nodes.append(carried(node, ops[nid], inputs.get(nid, node.inputs), changed))
        if not copies and not drop and not insert:
            return self
        return Graph(nodes, [entry(e) for e in self.outputs])

    def consumers(self) -> list:
        """Per entry id, the ids of the nodes that read it."""
        if self._consumers is None:
            table: list = [[] for _ in range(self.num_entries)]
            for nid, eids in enumerate(self.input_eids):
                for eid in eids:
                    table[eid].append(nid)
            self._consumers = table
        return self._consumers


def substitute(graph: Graph, replacement: dict) -> tuple:
    """Output entries of `graph` with variables named in `replacement` swapped for entries."""
    new_node: dict = {}
    for node in graph.nodes:
        if node.op is None:
            if node.name in replacement:
                new_node[id(node)] = replacement[node.name]
            continue
        changed = False
        inputs = []
        for e in node.inputs:
            mapped = new_node.get(id(e.node))
            if mapped is None:
                inputs.append(e)
            elif isinstance(mapped, Entry):  # a replaced variable
                inputs.append(mapped)
                changed = True
            else:
                inputs.append(Entry(mapped, e.index))
                changed = True
        if changed:
            new_node[id(node)] = Node(node.op, node.name, node.attrs, inputs)
    outputs = []
    for e in graph.outputs:
        mapped = new_node.get(id(e.node))
        if mapped is None:
            outputs.append(e)
        elif isinstance(mapped, Entry):
            outputs.append(mapped)
        else:
            outputs.append(Entry(mapped, e.index))
    return tuple(outputs)


def without_amp_casts(heads: Sequence[Entry]) -> list:
    """The output entries of a copy of the graph in which no node reads through an
    `amp_cast` or `amp_multicast` (each reads the cast's source instead); the outputs
    themselves are kept, as in MXNet's `tojson(remove_amp_cast=True)`; nodes that read no
    cast are not copied."""
    def is_cast(node: Node) -> bool:
        return node.op is not None and node.op.name in AMP_CASTS

    copies: dict = {}

    def source(e: Entry) -> Entry:
        # casts of casts resolve through the copies, made first in topological order
        node = copies.get(id(e.node), e.node)
        if is_cast(node):
            inner = node.inputs[0] if node.op.name == "amp_cast" else node.inputs[e.index]
            return inner
        return Entry(node, e.index)

    for node in topo_sort(heads):
        if node.op is None:
            continue
        inputs = [source(e) for e in node.inputs]
        changed = any(a.node is not b.node or a.index != b.index
                      for a, b in zip(inputs, node.inputs))
        if changed:
            copies[id(node)] = Node(node.op, node.name, node.attrs, inputs)
    return [Entry(copies.get(id(e.node), e.node), e.index) for e in heads]
