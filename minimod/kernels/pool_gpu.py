"""Pooling's bound steps on CuPy where cuDNN does not pool (CuPy 14's frontend path, no
cuDNN, `cudnn_off=True`): max pooling over disjoint windows runs pool_max.py's kernels,
max, average and sum pooling over overlapping windows pool_overlap.py's. Lp pooling, sums
over disjoint windows (one panel and one reduction already), float16, non-contiguous arrays
and NumPy keep the op's own path, as does a GPU where a family's self-check failed."""
from __future__ import annotations

from ..ops.pooling import Pooling
from . import pool_max, pool_overlap
from .registry import fast_path

__all__ = ["bind_backward", "bind_forward", "status"]

_FAMILIES = (pool_max, pool_overlap)


@fast_path(Pooling, stage="forward")
def bind_forward(op, xp, inputs, aux, out):
    for family in _FAMILIES:
        run = family.bind_forward(op, xp, inputs, aux, out)
        if run is not None:
            return run
    return None


@fast_path(Pooling, stage="backward")
def bind_backward(op, xp, out_grads, inputs, outputs, in_grads, aux):
    for family in _FAMILIES:
        run = family.bind_backward(op, xp, out_grads, inputs, outputs, in_grads, aux)
        if run is not None:
            return run
    return None


def status() -> str:
    """Which GPU pooling kernels run, per family, device and dtype checked so far."""
    return "disjoint max windows: %s; overlapping windows: %s" % (pool_max.status(),
                                                                 pool_overlap.status())
