"""Indexing routines: pick, take, one_hot and where (index values clipped, wrapped or checked
as MXNet's `mode` says).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import backend
from ...base import MXNetError, ShapeError
from ..core import NDArray, as_backend_operand, device_scope
from ..rules import normalize_dtype
from .common import _at_least_1d, _result, recorded


def _indices(index: NDArray, size: int, mode: str, xp):
    """Float or int index values as int64, clipped or wrapped into [0, size)."""
    idx = index._data.astype(np.int64)
    if mode == "clip":
        return xp.clip(idx, 0, size - 1)
    if mode == "wrap":
        return xp.mod(idx, size)
    if mode == "raise":
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= size):
            raise MXNetError(f"index out of range [0, {size})")
        return idx
    raise MXNetError(f"unknown index mode {mode!r} (expected 'clip', 'wrap' or 'raise')")


@recorded("pick")
def pick(data: NDArray, index: NDArray, axis: int = -1, keepdims: bool = False,
         mode: str = "clip", out: NDArray | None = None) -> NDArray:
    """data[..., index[...], ...]: one entry along `axis` per position of `index`."""
    xp, x = data._xp, data._data
    axis = int(axis) % x.ndim
    with device_scope(data.context):
        idx = _indices(index.as_in_context(data.context), x.shape[axis], mode, xp)
        idx = xp.expand_dims(idx.reshape(x.shape[:axis] + x.shape[axis + 1:]), axis)
        result = xp.take_along_axis(x, idx, axis=axis)
        if not keepdims:
            result = result.squeeze(axis)
        return _result(_at_least_1d(result), data, out)


@recorded("take")
def take(a: NDArray, indices: NDArray, axis: int = 0, mode: str = "clip",
         out: NDArray | None = None) -> NDArray:
    """Entries of `a` along `axis` at `indices` (result shape: indices.shape spliced in).
    Rows of a CSR array by a 1-D index are a CSR array, as in MXNet."""
    xp = a._xp
    axis = int(axis) % a.ndim
    with device_scope(a.context):
        idx = _indices(indices.as_in_context(a.context), a.shape[axis], mode, xp)
        if a.stype == "csr" and axis == 0 and idx.ndim == 1 and out is None:
            return a.take_rows(backend.asnumpy(idx))
        return _result(xp.take(a._data, idx, axis=axis), a, out)


def one_hot(indices: NDArray, depth: int, on_value: float = 1.0, off_value: float = 0.0,
            dtype: Any = np.float32, out: NDArray | None = None) -> NDArray:
    """A new last axis of size `depth` with `on_value` at each index; out-of-range rows are
    all `off_value`."""
    xp = indices._xp
    kind = normalize_dtype(dtype)
    with device_scope(indices.context):
        idx = indices._data.astype(np.int64)
        hot = idx[..., None] == xp.arange(int(depth))
        # NumPy scalars (not 0-d arrays): CuPy takes them as kernel arguments
        result = xp.where(hot, np.array(on_value).astype(kind)[()],
                          np.array(off_value).astype(kind)[()])
        return _result(result.astype(kind, copy=False), indices, out)


@recorded("where")
def where(condition: NDArray, x: NDArray, y: NDArray, out: NDArray | None = None) -> NDArray:
    """x where condition is nonzero, else y; condition has x's shape or is 1-D over axis 0."""
    xp = x._xp
    cond = as_backend_operand(condition, x.context) != 0
    if cond.shape != x.shape:
        if cond.ndim != 1 or cond.shape[0] != x.shape[0]:
            raise ShapeError(f"where: condition shape {tuple(cond.shape)} must be {x.shape} "
                             f"or ({x.shape[0]},)")
        cond = cond.reshape((-1,) + (1,) * (x.ndim - 1))
    with device_scope(x.context):
        return _result(xp.where(cond, x._data, as_backend_operand(y, x.context)), x, out)
