"""`mx.nd.contrib.getnnz` and `edge_id` on a CSRNDArray, read from its stored entries as
MXNet's do (an explicitly stored zero counts, and is an edge of weight 0). Any other array
goes to the operators of the same name (minimod/ops/sparse_structure.py), which count the
non-zero entries of the dense values."""
from __future__ import annotations

import numpy as np

from ..core import NDArray, device_scope, wrap
from ..imperative import invoke
from . import codec
from .arrays import CSRNDArray

__all__ = ["getnnz", "edge_id"]


def _result(value, like: CSRNDArray, out):
    result = wrap(value, like.context)
    if out is None:
        return result
    out[:] = result
    return out


def getnnz(data, axis=None, out=None, name=None) -> NDArray:
    """The number of stored entries of `data`: in all (shape (1,)), per column (axis=0) or
    per row (axis=1), as int64."""
    if not isinstance(data, CSRNDArray):
        return invoke("_contrib_getnnz", (data,), {"axis": axis, "out": out})
    xp, (indptr, indices) = data._xp, data._aux
    with device_scope(data.context):
        if axis is None:
            value = xp.asarray([indices.shape[0]], dtype=np.int64)
        elif axis in (1, -1):
            value = xp.diff(indptr).astype(np.int64)
        elif axis in (0, -2):
            value = xp.bincount(indices.astype(np.int64), minlength=data.shape[1])
            value = value.astype(np.int64)
        else:
            raise ValueError("getnnz: axis must be None, 0 or 1, got %r" % (axis,))
    return _result(value, data, out)


def edge_id(data, u, v, out=None, name=None) -> NDArray:
    """out[i] = the stored value of `data` at (u[i], v[i]), or -1 where it stores none (or
    (u, v) is outside the matrix); in data's dtype."""
    if not isinstance(data, CSRNDArray):
        return invoke("_contrib_edge_id", (data, u, v), {"out": out})
    if u.ndim != 1 or u.shape != v.shape:
        raise ValueError("edge_id: u %s and v %s must be 1-D of one length"
                         % (u.shape, v.shape))
    xp, (indptr, indices), values = data._xp, data._aux, data._values
    rows, cols = data.shape
    with device_scope(data.context):
        keys = codec.csr_rows(xp, indptr).astype(np.int64) * cols + indices.astype(np.int64)
        order = xp.argsort(keys)  # the keys of a valid csr array are distinct
        keys = keys[order]
        uu, vv = u._data.astype(np.int64), v._data.astype(np.int64)
        inside = (uu >= 0) & (uu < rows) & (vv >= 0) & (vv < cols)
        wanted = xp.where(inside, uu * cols + vv, -1)
        at = xp.minimum(xp.searchsorted(keys, wanted), max(keys.shape[0] - 1, 0))
        found = inside & (keys.shape[0] > 0)
        if keys.shape[0]:
            found = found & (keys[at] == wanted)
            picked = values[order[at]]
        else:
            picked = xp.zeros(wanted.shape, dtype=values.dtype)
        value = xp.where(found, picked, values.dtype.type(-1)).astype(values.dtype)
    return _result(value, data, out)
