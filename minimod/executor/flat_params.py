"""`FlatParams`: parameters of one executor and one dtype, and their gradients, laid end to end
in two flat arrays, each parameter's NDArray a view into them.

`simple_bind` allocates them (`flat_buffers`); the fast update of `minimod.flat` then reduces a
device's whole buffer in one operation and updates it in a few vectorised passes. This module
holds the layout only: what runs over the buffers lives in `minimod.flat`.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np

from .. import backend
from ..context import Context
from ..ndarray.ndarray import NDArray
from ..optimizer import Optimizer

__all__ = ["FlatParams", "flat_buffers"]


class FlatParams:
    """Parameters `names` of one dtype (with `shapes`), in that order, and their gradients, laid
    end to end in `weight` and `grad`.

    `weights[name]` is an NDArray view into `weight`, `grads[name]` one into `grad` (None for a
    name whose `with_grads` entry is False); `offsets[i]:offsets[i + 1]` is the i-th name's
    part of both arrays.
    """

    def __init__(self, names: Sequence[str], shapes: Sequence[tuple], dtype, ctx: Context,
                 with_grads: Sequence[bool]):
        self.names = list(names)
        self.shapes = [tuple(s) for s in shapes]
        self.sizes = [int(np.prod(s, dtype=np.int64)) for s in self.shapes]
        self.offsets = [0]
        for size in self.sizes:
            self.offsets.append(self.offsets[-1] + size)
        self.dtype = np.dtype(dtype)
        self.ctx = ctx
        self.scope = backend.device_scope(ctx)  # `with flat.scope:` runs work on ctx's device
        total = self.offsets[-1]
        xp = backend.xp_for(ctx)
        with backend.device_scope(ctx):
            self.weight = xp.zeros(total, dtype=self.dtype)
            self.grad = xp.zeros(total, dtype=self.dtype)
        self.weights, self.grads = {}, {}
        for name, shape, lo, hi, need in zip(self.names, self.shapes, self.offsets,
                                             self.offsets[1:], with_grads):
            self.weights[name] = NDArray(self.weight[lo:hi].reshape(shape), ctx)
            self.grads[name] = NDArray(self.grad[lo:hi].reshape(shape), ctx) if need else None

    def covers(self, name: str, weight, grad) -> bool:
        """Whether `weight` and `grad` are this buffer's own views for `name`."""
        return self.weights.get(name) is weight and self.grads.get(name) is grad


def flat_buffers(params: Sequence[tuple], ctx: Context,
                 contexts: Optional[Mapping[str, Context]] = None) -> dict:
    """One FlatParams with gradients on `ctx` per dtype of `params` [(name, shape, dtype)]:
    {name: the buffer holding it}.

    The names the optimizer decays by default come first (`Optimizer.decays_by_default`:
    weights and gammas, then biases and betas), so that with MXNet's default multipliers a
    buffer is two runs of equal hyperparameters for the fused update.

    `contexts` ({name: Context}, a model-parallel bind's) puts each parameter on its own
    device: one buffer per device and dtype. The fused update then steps each buffer on its
    device, and the kvstore sums each across the data-parallel copies, as for one device.
    """
    if contexts is not None:
        flats: dict = {}
        for device in dict.fromkeys(contexts.get(p[0], ctx) for p in params):
            flats.update(flat_buffers([p for p in params if contexts.get(p[0], ctx) == device],
                                      device))
        return flats
    flats = {}
    for dtype in dict.fromkeys(np.dtype(d) for _, _, d in params):
        members = sorted((p for p in params if np.dtype(p[2]) == dtype),
                         key=lambda p: not Optimizer.decays_by_default(p[0]))
        flat = FlatParams([m[0] for m in members], [m[1] for m in members], dtype, ctx,
                          [True] * len(members))
        for m in members:
            flats[m[0]] = flat
    return flats
