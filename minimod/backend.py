"""The array backends: NumPy for CPU contexts, CuPy for GPU contexts.

This is the only module that imports CuPy. Everything else asks it for the array module of a
Context (`xp_for`) and for the few helpers whose NumPy and CuPy spellings differ.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .base import MXNetError

__all__ = [
    "xp_for", "to_context", "asnumpy", "gpu_count", "synchronize", "is_gpu_array", "scatter_add",
    "rng", "seed", "empty_cache", "array_module_of",
]

try:  # CuPy is optional: the `gpu` extra.
    import cupy as _cupy  # noqa: F401
    try:
        _GPU_COUNT = _cupy.cuda.runtime.getDeviceCount()
    except Exception:  # a CuPy install without a usable driver
        _GPU_COUNT = 0
except ImportError:
    _cupy = None
    _GPU_COUNT = 0

_SEED = [None]
_RNGS: dict = {}


def gpu_count() -> int:
    return _GPU_COUNT


def _require_gpu(ctx):
    if _cupy is None:
        raise MXNetError("%s needs CuPy, which is not installed (pip install minimod[gpu])" % ctx)
    if ctx.device_id >= _GPU_COUNT:
        raise MXNetError("%s does not exist: this machine has %d GPU(s)" % (ctx, _GPU_COUNT))


def xp_for(ctx) -> Any:
    """The array module (numpy or cupy) that holds arrays of `ctx`."""
    if ctx.device_typeid == 2:
        _require_gpu(ctx)
        return _cupy
    return np


def array_module_of(arr) -> Any:
    if _cupy is not None and isinstance(arr, _cupy.ndarray):
        return _cupy
    return np


def is_gpu_array(arr) -> bool:
    return _cupy is not None and isinstance(arr, _cupy.ndarray)


class _DeviceScope:
    def __init__(self, ctx):
        self.ctx = ctx
        self.dev = None

    def __enter__(self):
        if self.ctx.device_typeid == 2:
            self.dev = _cupy.cuda.Device(self.ctx.device_id)
            self.dev.__enter__()
        return self

    def __exit__(self, *exc):
        if self.dev is not None:
            self.dev.__exit__(*exc)


def device_scope(ctx) -> _DeviceScope:
    """A `with` block inside which new arrays are created on `ctx` (a no-op on CPU)."""
    return _DeviceScope(ctx)


def to_context(arr, ctx, copy: bool = False):
    """`arr` (NumPy or CuPy) as an array of `ctx`'s kind; copies when it changes device."""
    if ctx.device_typeid == 2:
        _require_gpu(ctx)
        with _cupy.cuda.Device(ctx.device_id):
            if copy or not isinstance(arr, _cupy.ndarray) or arr.device.id != ctx.device_id:
                return _cupy.array(arr, copy=True)
            return arr
    if is_gpu_array(arr):
        return _cupy.asnumpy(arr)
    return np.array(arr, copy=True) if copy else np.asarray(arr)


def asnumpy(arr) -> np.ndarray:
    """A NumPy array with the values of `arr` (no copy for NumPy input)."""
    if is_gpu_array(arr):
        return _cupy.asnumpy(arr)
    return np.asarray(arr)


def synchronize(ctx=None) -> None:
    """Wait for queued device work (NumPy work is synchronous)."""
    if _cupy is not None and _GPU_COUNT:
        if ctx is None or ctx.device_typeid == 2:
            _cupy.cuda.runtime.deviceSynchronize()


def empty_cache(ctx=None) -> None:
    if _cupy is not None and (ctx is None or ctx.device_typeid == 2):
        _cupy.get_default_memory_pool().free_all_blocks()


def scatter_add(xp, target, indices, values) -> None:
    """target[indices] += values, accumulating repeated indices."""
    if xp is not np:
        import cupyx
        cupyx.scatter_add(target, indices, values)
        return
    if (isinstance(indices, np.ndarray) and indices.ndim == 1 and target.flags.c_contiguous
            and target.ndim > 1 and values.shape == indices.shape + target.shape[1:]
            and indices.size and indices.min() >= 0):
        # whole rows: NumPy's add.at is an order of magnitude faster on one flat index
        # (Embedding's weight gradient), with the same sums in the same order
        row = int(np.prod(target.shape[1:]))
        flat = (indices.astype(np.int64)[:, None] * row + np.arange(row)).reshape(-1)
        np.add.at(target.reshape(-1), flat, np.ascontiguousarray(values).reshape(-1))
        return
    np.add.at(target, indices, values)


def seed(seed_state: int) -> None:
    """Reseed every backend generator (used by `mx.random.seed`)."""
    _SEED[0] = int(seed_state)
    _RNGS.clear()


def rng(xp):
    """The process-wide random generator of array module `xp` (a `RandomState`-like object)."""
    gen = _RNGS.get(xp)
    if gen is None:
        gen = xp.random.RandomState(_SEED[0])
        _RNGS[xp] = gen
    return gen
