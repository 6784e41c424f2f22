"""Reused work arrays for operators: the process-wide scratch cache and shared index ranges
(and `_plain_numpy`, the test of arrays that the ops' bound fast paths share).

An op that needs temporaries (im2col columns, padded copies, reduction results, index arrays)
takes them from here instead of allocating them on every call, so a planned training step
allocates no array once it has run once (`minimod.testing.count_allocations` checks this).
"""
from __future__ import annotations

import math

from .. import backend

_SCRATCH_CACHE: dict = {}
_ARANGE_CACHE: dict = {}


def _arange(xp, n: int, dtype="int64"):
    """A shared, read-only arange(n) (index arithmetic without a fresh array). Under CuPy one
    per GPU: a kernel may only read arrays of the device it runs on."""
    key = (xp.__name__, backend.current_device(xp), n, xp.dtype(dtype))
    arr = _ARANGE_CACHE.get(key)
    if arr is None:
        if len(_ARANGE_CACHE) > 64:
            _ARANGE_CACHE.clear()
        arr = _ARANGE_CACHE[key] = xp.arange(n, dtype=dtype)
        if xp.__name__ == "numpy":
            arr.flags.writeable = False
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
    `_SCRATCH_BIG` bytes, and every array under CuPy (whose memory pool already recycles device
    memory), are allocated per call instead. Executors run one op at a time, so sharing is safe.
    """

    _SCRATCH_KEEP = 64
    _SCRATCH_BYTES = 256 << 20
    _SCRATCH_BIG = 96 << 20

    def _scratch(self, xp, role: str, shape, dtype, zero: bool = False):
        shape = tuple(shape)
        dtype = xp.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if xp.__name__ != "numpy" or nbytes > self._SCRATCH_BIG:
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


_ROW_STARTS: dict = {}


def _row_starts(xp, rows: int, width: int):
    """A shared, read-only int64 array [0, width, 2 * width, ...] of `rows` entries: the flat
    offsets of the rows of a (rows, width) array (one per GPU under CuPy, like `_arange`)."""
    key = (xp.__name__, backend.current_device(xp), rows, width)
    arr = _ROW_STARTS.get(key)
    if arr is None:
        if len(_ROW_STARTS) > 64:
            _ROW_STARTS.clear()
        arr = _ROW_STARTS[key] = xp.arange(0, rows * width, width, dtype="int64")
        if xp.__name__ == "numpy":
            arr.flags.writeable = False
    return arr


_CONSTS: dict = {}


def _const(xp, value, dtype):
    """A shared 0-d array holding `value` as `dtype` for ufunc arguments: a plain Python number
    would be boxed into a fresh 0-d array on every call. CuPy takes plain numbers as kernel
    arguments, so it gets `value` itself."""
    if xp.__name__ != "numpy":
        return value
    key = (value, xp.dtype(dtype))
    arr = _CONSTS.get(key)
    if arr is None:
        arr = _CONSTS[key] = xp.array(value, dtype=dtype)
        arr.flags.writeable = False
    return arr


def _sum(xp, a, axis, out, keepdims: bool = False):
    """xp.sum(a, axis=axis, out=out, keepdims=keepdims) without NumPy's Python-level wrapper
    (a few microseconds per call, which adds up over the thousand nodes of an unrolled RNN)."""
    if xp.__name__ == "numpy":
        return xp.add.reduce(a, axis=axis, out=out, keepdims=keepdims)
    return xp.sum(a, axis=axis, out=out, keepdims=keepdims)


def _max(xp, a, axis, out, keepdims: bool = False):
    """The maximum along `axis`, like `_sum`."""
    if xp.__name__ == "numpy":
        return xp.maximum.reduce(a, axis=axis, out=out, keepdims=keepdims)
    return xp.max(a, axis=axis, out=out, keepdims=keepdims)


def _plain_numpy(xp, *arrays) -> bool:
    """Whether a bound fast path may take these arrays as they are: NumPy arrays, all
    C-contiguous and of one dtype (so every reshape is a view, and a BLAS call writes into
    its `out=` directly). Anything else runs the op's general forward / backward."""
    if xp.__name__ != "numpy":
        return False
    dtype = arrays[0].dtype
    return all(a.flags.c_contiguous and a.dtype == dtype for a in arrays)
