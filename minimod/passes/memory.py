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
    """`storage[eid]` is a block id (-1: external); `block_bytes[sid]` its size;
    `block_devices[sid]` its device, or None when the plan is for one device. `inplace_hits`
    counts outputs that took over a dying input's block, `view_hits` outputs that share a
    live input's block as its view."""

    storage: tuple
    block_bytes: tuple
    inplace_hits: int
    block_devices: Optional[tuple] = None
    view_hits: int = 0

    def shares(self, src: int, dst: int) -> bool:
        """Whether entries `src` and `dst` are planned into the same block (hence, being of
        one size, into the same bytes)."""
        return self.storage[src] >= 0 and self.storage[src] == self.storage[dst]

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
    entry: values of different devices never share a block."""
    external = set(external)
    pinned = set(pinned)
    dies_at = last_use(graph)
    nbytes = [entry_nbytes(s, t) if s is not None else 0 for s, t in zip(shapes, dtypes)]
    storage = [-1] * graph.num_entries
    block_bytes: list = []
    block_device: list = []
    holders: list = []          # live entries per block
    free: dict = {}             # device (None: the one device) -> block ids
    inplace_hits = view_hits = 0

    def can_share(src: int, dst: int) -> bool:
        return (src not in external and dst not in external and storage[src] >= 0
                and storage[dst] < 0 and nbytes[src] == nbytes[dst]
                and (devices is None or devices[src] == devices[dst]))

    def take_block(size: int, device) -> int:
        pool = free.get(device)
        if pool and reuse:
            fitting = [b for b in pool if block_bytes[b] >= size]
            if fitting:
                sid = min(fitting, key=lambda b: block_bytes[b])
            else:
                sid = max(pool, key=lambda b: block_bytes[b])
                block_bytes[sid] = size
            pool.remove(sid)
            return sid
        block_bytes.append(size)
        block_device.append(device)
        holders.append(0)
        return len(block_bytes) - 1

    def release(eid: int) -> None:
        sid = storage[eid]
        if sid < 0 or eid in pinned:
            return
        holders[sid] -= 1
        if holders[sid] == 0:
            free.setdefault(block_device[sid], []).append(sid)

    for nid, node in enumerate(graph.nodes):
        if node.op is None:
            continue
        in_eids = graph.input_eids[nid]
        first = graph.row_ptr[nid]
        taken = set()
        for pos_in, pos_out in node.op.views if enable_inplace and reuse else ():
            src, dst = in_eids[pos_in], first + pos_out
            if can_share(src, dst):
                storage[dst] = storage[src]
                holders[storage[src]] += 1
                view_hits += 1
        inplace = node.op.inplace if enable_inplace and reuse else ()
        for pos_in, pos_out in inplace:
            src = in_eids[pos_in]
            dst = first + pos_out
            if (not can_share(src, dst) or src in pinned or dies_at[src] != nid
                    or src in taken or holders[storage[src]] != 1
                    or in_eids.count(src) != 1):
                continue
            storage[dst] = storage[src]
            holders[storage[src]] += 1
            taken.add(src)
            inplace_hits += 1
        for dst in range(first, graph.row_ptr[nid + 1]):
            if dst in external or storage[dst] >= 0:
                continue
            sid = take_block(nbytes[dst], None if devices is None else devices[dst])
            storage[dst] = sid
            holders[sid] += 1
        for src in set(in_eids):
            if dies_at[src] == nid and src not in external:
                release(src)
        for dst in range(first, graph.row_ptr[nid + 1]):
            if dies_at[dst] == -1 and dst not in external:
                release(dst)
    return MemoryPlan(storage=tuple(storage), block_bytes=tuple(block_bytes),
                      inplace_hits=inplace_hits, view_hits=view_hits,
                      block_devices=None if devices is None else tuple(block_device))
