"""Products with sparse operands: `dot` (MXNet's `sparse.dot`) and `retain`.

`dot(csr, dense or row_sparse)` is dense; `dot(csr.T, dense)` (transpose_a) is row-sparse, on
the columns the csr array uses; other combinations fall back to the dense product.
"""
from __future__ import annotations

import numpy as np

from ... import backend
from ...base import MXNetError, ShapeError
from ..core import NDArray, device_scope, wrap
from ..imperative import invoke
from . import codec
from .arrays import BaseSparseNDArray, CSRNDArray, RowSparseNDArray, make_sparse

__all__ = ["dot", "retain", "written"]


def written(result: NDArray, out) -> NDArray:
    """`result`, or, given MXNet's `out=`, `out` holding it (converted to out's storage type).
    The functions here take MXNet's `name=` too and drop it, as its imperative calls do."""
    if out is None:
        return result
    result.copyto(out)
    return out


def retain(data: RowSparseNDArray, indices, out=None, name=None) -> RowSparseNDArray:
    """The rows of `data` that `indices` (an NDArray or array of row numbers) names and
    `data` stores, as a new row-sparse array (MXNet's `sparse.retain`)."""
    if not isinstance(data, RowSparseNDArray):
        raise MXNetError("retain: data must be a RowSparseNDArray, not %s storage"
                         % getattr(data, "stype", type(data).__name__))
    return written(data.retain(indices), out)


def dot(lhs: NDArray, rhs: NDArray, transpose_a: bool = False, transpose_b: bool = False,
        forward_stype=None, out=None, name=None) -> NDArray:
    """Matrix product with sparse operands (MXNet's `sparse.dot`); see the module docstring
    for the storage type of the result. `forward_stype`, when given, converts the result."""
    return written(_dot(lhs, rhs, transpose_a, transpose_b, forward_stype), out)


def _dot(lhs, rhs, transpose_a, transpose_b, forward_stype) -> NDArray:
    if isinstance(lhs, CSRNDArray) and not transpose_b and rhs.ndim == 2:
        out = _csr_dot(lhs, rhs, transpose_a)
    else:
        out = invoke("dot", (_dense(lhs), _dense(rhs)),
                     {"transpose_a": transpose_a, "transpose_b": transpose_b})
    if forward_stype is not None and forward_stype != out.stype:
        out = out.tostype(forward_stype)
    return out


def _dense(array: NDArray) -> NDArray:
    return wrap(array._data, array.context) if isinstance(array, BaseSparseNDArray) else array


def _csr_dot(lhs: CSRNDArray, rhs: NDArray, transpose_a: bool) -> NDArray:
    rows_in = lhs.shape[1] if transpose_a else lhs.shape[0]
    inner = lhs.shape[0] if transpose_a else lhs.shape[1]
    if rhs.shape[0] != inner:
        raise ShapeError("dot: shapes %s%s and %s do not match"
                         % (lhs.shape, ".T" if transpose_a else "", rhs.shape))
    if lhs.dtype != rhs.dtype:
        raise MXNetError("dot: operands have different dtypes %s and %s"
                         % (np.dtype(lhs.dtype).name, np.dtype(rhs.dtype).name))
    xp, ctx = lhs._xp, lhs.context
    with device_scope(ctx):
        dense_rhs = rhs._data if rhs.context == ctx else backend.to_context(rhs._data, ctx)
        rows = codec.csr_rows(xp, lhs._aux[0])
        cols = lhs._aux[1]
        src, dst = (rows, cols) if transpose_a else (cols, rows)
        contrib = lhs._values[:, None] * xp.take(dense_rhs, src, axis=0)
        out = xp.zeros((rows_in, rhs.shape[1]), dtype=lhs.dtype)
        if contrib.size:
            backend.scatter_add(xp, out, dst, contrib)
        if not transpose_a:
            return wrap(out, ctx)
        used = xp.unique(cols).astype(codec.INDEX)
        return make_sparse("row_sparse", xp.take(out, used, axis=0), (used,), out.shape, ctx)
