"""Reused work arrays for operators: the process-wide scratch cache and shared index ranges.

An op that needs temporaries (im2col columns, padded copies, reduction results, index arrays)
takes them from here instead of allocating them on every call, so a planned training step
allocates no array once it has run once (`minimod.testing.count_allocations` checks this).
"""
from __future__ import annotations

import math

from .. import backend

_SCRATCH_CACHE: dict = {}
_ARANGE_CACHE: dict = {}
_ROW_STARTS: dict = {}


def _arange(xp, n: int, dtype="int64"):
    """A shared, read-only arange(n) (index arithmetic without a fresh array). One per device
    under CuPy: a kernel may only read arrays of the device it runs on."""
    key = (xp, backend.current_device(xp), n, xp.dtype(dtype))
    arr = _ARANGE_CACHE.get(key)
    if arr is None:
        if len(_ARANGE_CACHE) > 64:
            _ARANGE_CACHE.clear()
        arr = _ARANGE_CACHE[key] = backend.read_only(xp, xp.arange(n, dtype=dtype))
    return arr


def _row_starts(xp, rows: int, width: int):
    """A shared, read-only int64 array [0, width, 2 * width, ...] of `rows` entries: the flat
    offsets of the rows of a (rows, width) array (one per device, like `_arange`)."""
    key = (xp, backend.current_device(xp), rows, width)
    arr = _ROW_STARTS.get(key)
    if arr is None:
        if len(_ROW_STARTS) > 64:
            _ROW_STARTS.clear()
        arr = _ROW_STARTS[key] = backend.read_only(
            xp, xp.arange(0, rows * width, width, dtype="int64"))
    return arr


class _ScratchMixin:
    """Work arrays (im2col columns, padded copies, masks) reused from call to call.

    Ops stay stateless in their results: a scratch array never carries anything from one call
    that the next call reads, except the zero border of a padded copy whose owner only ever
    writes inside it (`zero=True` buffers). One cache serves the whole process, keyed by op
    class, role, shape and dtype, so layers of the same kind and size share their arrays and
    the memory held is bounded however deep the network: the least recently used arrays are
    dropped beyond `_SCRATCH_KEEP` entries or `_SCRATCH_BYTES` in all. Reusing the arrays
    spares NumPy the page faults of fresh multi-MB temporaries on every call. Arrays above
    `_SCRATCH_BIG` bytes, and every array of a backend with its own memory pool (CuPy), are
    allocated per call instead. Executors run one op at a time, so sharing is safe.
    """

    _SCRATCH_KEEP = 64
    _SCRATCH_BYTES = 256 << 20
    _SCRATCH_BIG = 96 << 20

    def _scratch(self, xp, role: str, shape, dtype, zero: bool = False):
        shape = tuple(shape)
        dtype = xp.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if backend.pools_memory(xp) or nbytes > self._SCRATCH_BIG:
            return xp.zeros(shape, dtype=dtype) if zero else xp.empty(shape, dtype=dtype)
        cache = _SCRATCH_CACHE
        key = (type(self).__name__, role, shape, dtype)
        arr = cache.pop(key, None)
        if arr is None:
            arr = xp.zeros(shape, dtype=dtype) if zero else xp.empty(shape, dtype=dtype)
            held = sum(a.nbytes for a in cache.values())
            while cache and (len(cache) >= self._SCRATCH_KEEP
                             or held + nbytes > self._SCRATCH_BYTES):
                held -= cache.pop(next(iter(cache))).nbytes
        cache[key] = arr  # most recently used last
        return arr
