"""`MemoryPool`: the byte blocks on one device that a plan's entries are views into; `zeros`,
the arrays a bind allocates outside the pool (arguments, gradients, aux states).

Executors made with `shared_exec` (buckets, reshapes) draw on the same pool; a pool that must
grow replaces its blocks and every executor on it re-derives its views before its next run
(the pool's `generation` tells them).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .. import backend
from ..context import Context
from ..ndarray.ndarray import NDArray
from ..passes.memory import entry_nbytes
from ..profiler import RECORDER, device_name

__all__ = ["MemoryPool", "zeros"]


class MemoryPool:
    """Byte blocks on one device (or, for model-parallel plans, on each of their devices),
    shared by the executors of a bucketing or reshape family.

    Those executors take turns: each forward overwrites the others' activations, so only the
    executor that ran the last forward may run backward (checked; MXNet's buckets share memory
    the same way and BucketingModule always runs forward and backward back to back).
    """

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.xp = backend.xp_for(ctx)
        self.blocks: list = []
        self.block_contexts: list = []  # the device of each block
        self.generation = 0
        # executors on one pool overwrite each other's activations: backward is only valid
        # for the executor that ran the last forward
        self.last_forward = None

    def place(self, sizes: Sequence[int], contexts: Optional[Sequence[Context]] = None) -> list:
        """Pool block ids for a plan's blocks of `sizes` bytes, growing or adding blocks;
        `contexts` gives each block's device (None: all on the pool's).

        Blocks are matched by size rank (the plan's largest to the pool's largest ...) device
        by device, so executors of different shapes (buckets) overlap as much as they can: the
        pool ends up holding, per rank, the largest block any of them needs. Blocks only ever
        grow, so a placement stays valid; a grown block is replaced (old views go stale) and
        the generation changes, telling every executor on the pool to re-derive its views.
        """
        placement = [0] * len(sizes)
        if contexts is None:
            changed = self._place_on(self.ctx, range(len(sizes)), sizes, placement)
        else:
            changed = False
            for ctx in dict.fromkeys(contexts):
                ids = [i for i, c in enumerate(contexts) if c == ctx]
                changed = self._place_on(ctx, ids, sizes, placement) or changed
        if changed:
            self.generation += 1
        return placement

    def _place_on(self, ctx: Context, ids, sizes: Sequence[int], placement: list) -> bool:
        """Place the plan's blocks `ids`, all of device `ctx`, in `placement`; whether a pool
        block was added or grown."""
        mine = [b for b, c in enumerate(self.block_contexts) if c == ctx]
        ranked = sorted(mine, key=lambda b: (-self.blocks[b].nbytes, b))
        order = sorted(ids, key=lambda i: (-sizes[i], i))
        xp = backend.xp_for(ctx)
        changed = False
        with backend.device_scope(ctx):
            for rank, sid in enumerate(order):
                size = max(int(sizes[sid]), 1)
                if rank < len(ranked):
                    block = ranked[rank]
                    if self.blocks[block].nbytes < size:
                        self.blocks[block] = xp.empty(size, dtype=np.uint8)
                        changed = True
                else:
                    self.blocks.append(xp.empty(size, dtype=np.uint8))
                    self.block_contexts.append(ctx)
                    block = len(self.blocks) - 1
                    changed = True
                placement[sid] = block
        if changed and RECORDER.on and RECORDER.memory:
            held = sum(b.nbytes for b, c in zip(self.blocks, self.block_contexts) if c == ctx)
            RECORDER.counter("Device Storage", "Memory: " + device_name(ctx), int(held),
                             kb=True)
        return changed

    @property
    def total_bytes(self) -> int:
        return int(sum(b.nbytes for b in self.blocks))

    def view(self, block: int, shape, dtype, offset: int = 0):
        """The array of `shape` and `dtype` starting `offset` bytes into pool block `block`."""
        nbytes = entry_nbytes(shape, dtype)
        return self.blocks[block][offset:offset + nbytes].view(dtype).reshape(shape)


def zeros(shape, dtype, ctx: Context) -> NDArray:
    """A new zero-filled NDArray on `ctx`."""
    xp = backend.xp_for(ctx)
    with backend.device_scope(ctx):
        return NDArray(xp.zeros(shape, dtype=dtype), ctx)
