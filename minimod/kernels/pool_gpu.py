"""Pooling's bound steps on CuPy: max pooling over disjoint windows runs pool_max.py's
kernels, max, average and sum pooling over overlapping windows pool_overlap.py's. Lp
pooling, sums over disjoint windows (one panel and one reduction already), float16,
non-contiguous arrays and NumPy keep the op's own path, as does a GPU where a family's
self-check failed.

They serve where cuDNN does not pool (CuPy 14's frontend path, no cuDNN, `cudnn_off=True`),
and are preferred to CuPy's cuDNN wrapper where they take every window of the op
(`preferred`: max pooling, and average pooling over overlapping windows): one kernel each
way as cuDNN's forward is, where the wrapper's backward returns a new array (an allocation
and a copy each step), and the op's own numbers (its first maximum, NaN handling and
divisors). Average pooling over disjoint windows (global pooling, 2x2/2) stays cuDNN's."""
from __future__ import annotations

import numpy as np

from .. import backend
from ..ops.pooling import Pooling
from . import pool_max, pool_overlap
from .registry import fast_path

__all__ = ["bind_backward", "bind_forward", "preferred", "status"]

_FAMILIES = (pool_max, pool_overlap)


@fast_path(Pooling, stage="forward")
def bind_forward(op, xp, inputs, aux, out):
    if op.channels_first is not None:  # channels last: the op moves the axis around its own path
        return None
    for family in _FAMILIES:
        run = family.bind_forward(op, xp, inputs, aux, out)
        if run is not None:
            return run
    return None


@fast_path(Pooling, stage="backward")
def bind_backward(op, xp, out_grads, inputs, outputs, in_grads, aux):
    if op.channels_first is not None:
        return None
    for family in _FAMILIES:
        run = family.bind_backward(op, xp, out_grads, inputs, outputs, in_grads, aux)
        if run is not None:
            return run
    return None


def preferred(op: Pooling, ctx, dtype) -> bool:
    """Whether these kernels rather than cuDNN should pool `op`'s `dtype` data on GPU
    context `ctx`, whatever its shape: max pooling, where one family or the other takes
    any windows, and average pooling whose windows overlap along a dim (stride below the
    kernel, not global), each family checked on the GPU first (`serves`)."""
    a = op.attrs
    if ctx is None or ctx.device_type != "gpu" or str(dtype) not in ("float32", "float64"):
        return False
    if a.pool_type == "max":
        families = (pool_max.WINDOW_MAX, pool_overlap.WINDOW_POOL)
    elif a.pool_type == "avg" and not a.global_pool and any(
            s < k for s, k in zip(a.stride or (1,) * len(a.kernel), a.kernel)):
        families = (pool_overlap.WINDOW_POOL,)
    else:
        return False
    xp = backend.xp_for(ctx)
    return xp is not np and all(f.serves(xp, ctx.device_id, dtype) for f in families)


def status() -> str:
    """Which GPU pooling kernels run, per family, device and dtype checked so far."""
    return "disjoint max windows: %s; overlapping windows: %s" % (pool_max.status(),
                                                                 pool_overlap.status())
