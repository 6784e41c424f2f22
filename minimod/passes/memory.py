"""The memory planner: assign every entry a storage block, reusing dead ones.

Walks the nodes in execution order. Each output gets either the block of its input when the op
declares the output a view of that input (`Op.views`: a reshape or a copy, whose output is the
input's bytes unchanged; the input may stay live, since no step writes a value after making
it), or the block of an input that dies at this very node (when the op declares that pair
in-place and the sizes agree), or the smallest free block that fits, or the largest free block
grown to fit, or a new block. A block goes back to the free list once the last reader of
every entry it holds has run, so an in-place output never takes a block that a view still
reads. External entries (variables, head gradients, gradients bound straight into user
arrays) are not planned; pinned entries (the graph's outputs) are planned but never freed,
because the user reads them.

A plan placed over several devices (`passes.placement`) gives the device of every entry: a
block then holds values of one device only (`MemoryPlan.block_devices`), each device reusing
its own blocks, and the executor allocates each block on its device.
"""
from __future__ import annotations

import dataclasses
from typing import Collection, Optional, Sequence

import numpy as np

from ..graph import Graph
from .liveness import last_use

__all__ = ["MemoryPlan", "plan_memory", "entry_nbytes"]


@dataclasses.dataclass(frozen=True)
class MemoryPlan:
    """`storage[eid]` is a block id (-1: external) and `offsets[eid]` where in the block the
    entry starts, in bytes; `block_bytes[sid]` is a block's size, `block_devices[sid]` its
    device (None when the plan is for one device). `idle_nodes` are the ids of the nodes whose
    outputs the plan put where their values already are (views, parts, assembled joins), and
    of any without outputs: their steps compute nothing. `inplace_hits` counts outputs that
    took over a dying input's block, `view_hits` outputs placed as views, parts or join
    pieces."""

    storage: tuple
    block_bytes: tuple
    inplace_hits: int
    block_devices: Optional[tuple] = None
    view_hits: int = 0
    offsets: Optional[tuple] = None
    idle_nodes: frozenset = frozenset()

    def offset(self, eid: int) -> int:
        return 0 if self.offsets is None else self.offsets[eid]

    def shares(self, src: int, dst: int) -> bool:
        """Whether entries `src` and `dst` start at the same byte of the same block."""
        return (self.storage[src] >= 0 and self.storage[src] == self.storage[dst]
                and self.offset(src) == self.offset(dst))

    @property
    def planned_bytes(self) -> int:
        return int(sum(self.block_bytes))


def entry_nbytes(shape, dtype) -> int:
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def plan_memory(graph: Graph, shapes: Sequence, dtypes: Sequence, external: Collection[int],
                pinned: Collection[int], enable_inplace: bool = True,
                reuse: bool = True, devices: Optional[Sequence] = None) -> MemoryPlan:
    """Assign blocks; with reuse=False every entry gets a fresh block (the unplanned baseline
    that the safety tests compare against). `devices`, when given, is the device of every
    entry: values of different devices never share a block. `enable_inplace=False` turns
    off in-place outputs, views, parts and joins alike."""
    planner = _Planner(graph, shapes, dtypes, set(external), set(pinned), reuse, devices)
    share = enable_inplace and reuse
    joins = planner.find_joins() if share else {}
    for nid, node in enumerate(graph.nodes):
        if node.op is not None:
            planner.place_node(nid, node.op, share, joins)
    return planner.result()


class _Planner:
    """The walk of `plan_memory`: blocks, their holders and free lists, entry placements."""

    def __init__(self, graph, shapes, dtypes, external, pinned, reuse, devices):
        self.graph, self.shapes, self.external, self.pinned = graph, shapes, external, pinned
        self.reuse, self.devices = reuse, devices
        self.dies_at = last_use(graph)
        self.nbytes = [entry_nbytes(s, t) if s is not None else 0
                       for s, t in zip(shapes, dtypes)]
        self.itemsize = [np.dtype(t).itemsize if t is not None else 1 for t in dtypes]
        self.storage = [-1] * graph.num_entries
        self.offsets = [0] * graph.num_entries
        self.block_bytes: list = []
        self.block_device: list = []
        self.holders: list = []  # live entries per block
        self.free: dict = {}  # device (None: the one device) -> block ids
        self.reserved: dict = {}  # join node id -> the block its pieces are written into
        self.pieces: dict = {}  # join node id -> (input entry, byte offset) per input
        self.idle: set = set()
        self.inplace_hits = self.view_hits = 0

    def device(self, eid: int):
        return None if self.devices is None else self.devices[eid]

    def result(self) -> MemoryPlan:
        return MemoryPlan(storage=tuple(self.storage), block_bytes=tuple(self.block_bytes),
                          inplace_hits=self.inplace_hits, view_hits=self.view_hits,
                          block_devices=(None if self.devices is None
                                         else tuple(self.block_device)),
                          offsets=tuple(self.offsets), idle_nodes=frozenset(self.idle))

    # ---------------------------------------------------------------- blocks
    def take_block(self, size: int, device) -> int:
        pool = self.free.get(device)
        if pool and self.reuse:
            fitting = [b for b in pool if self.block_bytes[b] >= size]
            if fitting:
                sid = min(fitting, key=lambda b: self.block_bytes[b])
            else:
                sid = max(pool, key=lambda b: self.block_bytes[b])
                self.block_bytes[sid] = size
            pool.remove(sid)
            return sid
        self.block_bytes.append(size)
        self.block_device.append(device)
        self.holders.append(0)
        return len(self.block_bytes) - 1

    def put(self, eid: int, sid: int, offset: int) -> None:
        self.storage[eid], self.offsets[eid] = sid, offset
        self.holders[sid] += 1

    def release(self, eid: int) -> None:
        sid = self.storage[eid]
        if sid < 0 or eid in self.pinned:
            return
        self.holders[sid] -= 1
        if self.holders[sid] == 0:
            self.free.setdefault(self.block_device[sid], []).append(sid)

    def can_take(self, src: int, dst: int) -> bool:
        """Whether `dst` may be placed in `src`'s bytes: both planned, dst not yet."""
        return (src not in self.external and dst not in self.external
                and self.storage[src] >= 0 and self.storage[dst] < 0
                and self.device(src) == self.device(dst))

    def can_view(self, src: int, dst: int) -> bool:
        """Whether `dst` may share `src`'s bytes while both live (a view or a part): as
        `can_take`, and neither a graph output (the user reads and may write those: two
        outputs of one value, such as CSE's copies of a repeated output, stay two arrays)."""
        return self.can_take(src, dst) and src not in self.pinned and dst not in self.pinned

    # ---------------------------------------------------------------- joins
    def find_joins(self) -> dict:
        """{piece entry: (join node id, byte offset)} for each node whose output is its
        inputs' bytes one after another (`Op.join_offsets`) where every input can be
        written straight into its place: planned, no graph output (nor the join's output),
        and a piece of no other join. An input that is a view (`Op.views`: a reshape)
        stands for the entry it views, which is then the piece: its producer writes it into
        the join, and the view shares its place."""
        graph, joins, join_outputs = self.graph, {}, set()
        for nid, node in enumerate(graph.nodes):
            if node.op is None or node.num_outputs() != 1:
                continue
            ins, out = graph.input_eids[nid], graph.row_ptr[nid]
            offsets = node.op.join_offsets([self.shapes[e] for e in ins], [self.shapes[out]])
            if offsets is None or out in self.external or out in self.pinned:
                continue
            pieces = [self.viewed(e) for e in ins]
            if (len(set(pieces)) != len(pieces) or any(e in self.pinned for e in ins)
                    or any(e in self.external or e in joins or e in join_outputs
                           or self.device(e) != self.device(out) for e in pieces)):
                continue
            join_outputs.add(out)  # a join of joins is left to copy
            item = self.itemsize[out]
            placed = [(e, off * item) for e, off in zip(pieces, offsets)]
            joins.update({e: (nid, off) for e, off in placed})
            self.pieces[nid] = [(e, off) for e, (_, off) in zip(ins, placed)]
        return joins

    def viewed(self, eid: int) -> int:
        """The planned entry `eid` is a view of, through any chain of reshapes (itself if it
        is no view, or a view of an entry the plan does not place)."""
        graph = self.graph
        while True:
            nid = graph.entry_node(eid)
            op = graph.nodes[nid].op
            pos = eid - graph.row_ptr[nid]
            src = [graph.input_eids[nid][i] for i, o in (op.views if op else ()) if o == pos]
            if (not src or src[0] in self.external or src[0] in self.pinned
                    or self.nbytes[src[0]] != self.nbytes[eid]):
                return eid
            eid = src[0]

    def place_piece(self, dst: int, joins: dict) -> None:
        nid, offset = joins[dst]
        out = self.graph.row_ptr[nid]
        if nid not in self.reserved:
            self.reserved[nid] = self.take_block(self.nbytes[out], self.device(out))
        self.put(dst, self.reserved[nid], offset)
        self.view_hits += 1

    # ---------------------------------------------------------------- one node
    def place_node(self, nid: int, op, share: bool, joins: dict) -> None:
        graph = self.graph
        ins, first, end = graph.input_eids[nid], graph.row_ptr[nid], graph.row_ptr[nid + 1]
        outs = range(first, end)
        if first == end:  # a node without outputs, there for the monitor, computes nothing
            self.idle.add(nid)
        if nid in self.reserved:  # a join whose pieces were written into its block
            self.put(first, self.reserved[nid], 0)
            if all(self.storage[e] == self.reserved[nid] and self.offsets[e] == off
                   for e, off in self.pieces[nid]):
                self.idle.add(nid)
        for dst in outs:
            if dst in joins:
                self.place_piece(dst, joins)
        if share:
            self.place_views(nid, op, ins, first)
            self.place_inplace(nid, op, ins, first)
        for dst in outs:
            if dst not in self.external and self.storage[dst] < 0:
                self.put(dst, self.take_block(self.nbytes[dst], self.device(dst)), 0)
        for src in set(ins):
            if self.dies_at[src] == nid and src not in self.external:
                self.release(src)
        for dst in outs:
            if self.dies_at[dst] == -1 and dst not in self.external:
                self.release(dst)

    def place_views(self, nid: int, op, ins, first: int) -> None:
        """Outputs that are their input's bytes (`Op.views`) or runs of them
        (`Op.part_offsets`), placed there; a node whose every output is, computes nothing."""
        placed = []
        for pos_in, pos_out in op.views:
            src, dst = ins[pos_in], first + pos_out
            if self.can_view(src, dst) and self.nbytes[src] == self.nbytes[dst]:
                self.put(dst, self.storage[src], self.offsets[src])
                placed.append(dst)
        parts = op.part_offsets([self.shapes[e] for e in ins],
                                [self.shapes[first + k] for k in range(op.num_outputs())])
        if parts is not None:
            src = ins[0]
            for k, off in enumerate(parts):
                if self.can_view(src, first + k):
                    self.put(first + k, self.storage[src],
                             self.offsets[src] + off * self.itemsize[src])
                    placed.append(first + k)
        self.view_hits += len(placed)
        if placed and len(placed) == op.num_outputs():
            self.idle.add(nid)

    def place_inplace(self, nid: int, op, ins, first: int) -> None:
        """Outputs that take over the block of an input dying here (`Op.inplace`)."""
        taken = set()
        for pos_in, pos_out in op.inplace:
            src, dst = ins[pos_in], first + pos_out
            if (not self.can_take(src, dst) or self.nbytes[src] != self.nbytes[dst]
                    or src in self.pinned or self.dies_at[src] != nid or src in taken
                    or self.holders[self.storage[src]] != 1 or ins.count(src) != 1):
                continue
            self.put(dst, self.storage[src], self.offsets[src])
            taken.add(src)
            self.inplace_hits += 1
