"""Making sparse NDArrays: `csr_matrix`, `row_sparse_array`, `zeros`, `empty`, `array`.

The dtype defaults as in MXNet: the dtype of the values when they are an NDArray or a NumPy
array, float32 otherwise. The index arrays are stored as int64. Components given explicitly are
checked (sizes and index ranges), so a malformed array is refused where it is made;
`check_format()` also checks that indices are sorted and unique.
"""
from __future__ import annotations

import numpy as np

from ... import backend
from ...base import MXNetError, OpParamError
from ...context import Context, current_context
from ..core import NDArray, as_backend_operand, device_scope, wrap
from ..rules import normalize_dtype
from . import codec
from .arrays import BaseSparseNDArray, CSRNDArray, RowSparseNDArray, cast_to, encode, make_sparse

__all__ = ["csr_matrix", "row_sparse_array", "zeros", "empty", "array"]


def _ctx(ctx) -> Context:
    return current_context() if ctx is None else ctx


def _values_dtype(values, dtype):
    if dtype is not None:
        return normalize_dtype(dtype)
    if isinstance(values, NDArray):
        return values.dtype
    if isinstance(values, np.ndarray) or backend.is_gpu_array(values):
        return values.dtype.type
    return np.float32


def _backend(value, ctx: Context, dtype):
    return as_backend_operand(value if isinstance(value, NDArray) else np.asarray(value),
                              ctx, dtype)


def _is_shape(arg) -> bool:
    return isinstance(arg, tuple) and all(isinstance(d, (int, np.integer)) for d in arg)


def _is_scipy(arg) -> bool:
    return type(arg).__module__.startswith("scipy.sparse")


def _checked(out: BaseSparseNDArray) -> BaseSparseNDArray:
    out.check_format(full_check=False)  # sizes and ranges; check_format() checks the order
    return out


def zeros(stype: str, shape, ctx: Context | None = None, dtype=None, **kwargs) -> NDArray:
    """An all-zero array of storage type `stype` (nothing stored)."""
    ctx = _ctx(ctx)
    kind = normalize_dtype(dtype)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    xp = backend.xp_for(ctx)
    with device_scope(ctx):
        if stype == "default":
            return wrap(xp.zeros(shape, dtype=kind), ctx)
        if stype == "row_sparse":
            return make_sparse(stype, xp.zeros((0,) + shape[1:], dtype=kind),
                               (xp.zeros((0,), dtype=codec.INDEX),), shape, ctx)
        if stype == "csr":
            if len(shape) != 2:
                raise MXNetError("csr arrays are 2-D, not shape %s" % (shape,))
            return make_sparse(stype, xp.zeros((0,), dtype=kind),
                               (xp.zeros((shape[0] + 1,), dtype=codec.INDEX),
                                xp.zeros((0,), dtype=codec.INDEX)), shape, ctx)
    raise OpParamError("unknown storage type %r (default, row_sparse or csr)" % (stype,))


def empty(stype: str, shape, ctx: Context | None = None, dtype=None) -> NDArray:
    """An array of storage type `stype` with nothing stored (the same as `zeros`)."""
    return zeros(stype, shape, ctx, dtype)


def csr_matrix(arg1, shape=None, ctx: Context | None = None, dtype=None) -> CSRNDArray:
    """A CSRNDArray from `(data, indices, indptr)`, from COO `(data, (row, col))`, from a
    shape (empty), from a dense array (NDArray, NumPy, list), a CSRNDArray or a SciPy sparse
    matrix. `shape` is needed where the components cannot tell it (defaults: rows from
    indptr, columns to the largest index + 1)."""
    ctx = _ctx(ctx)
    if _is_shape(arg1) and len(arg1) == 2:
        return _of_shape(zeros("csr", arg1, ctx, dtype), shape)
    if isinstance(arg1, CSRNDArray):
        return _of_shape(arg1.copyto(ctx).astype(dtype or arg1.dtype, copy=False), shape)
    if _is_scipy(arg1):
        csr = arg1.tocsr()
        csr.sort_indices()
        csr.sum_duplicates()
        arg1 = (csr.data, csr.indices, csr.indptr)
        shape = shape or csr.shape
    if isinstance(arg1, tuple) and len(arg1) == 3:
        kind = _values_dtype(arg1[0], dtype)
        values = _backend(arg1[0], ctx, kind).reshape(-1)
        indices = _backend(arg1[1], ctx, codec.INDEX).reshape(-1)
        indptr = _backend(arg1[2], ctx, codec.INDEX).reshape(-1)
        if shape is None:
            if not indices.size:
                raise ValueError("csr_matrix: with no stored entry the number of columns "
                                 "cannot be inferred; give shape")
            shape = (int(indptr.shape[0]) - 1, int(indices.max()) + 1)
        return _checked(make_sparse("csr", values, (indptr, indices), shape, ctx))
    if isinstance(arg1, tuple) and len(arg1) == 2 and isinstance(arg1[1], tuple):
        return _from_coo(arg1[0], arg1[1], shape, ctx, dtype)
    if isinstance(arg1, BaseSparseNDArray):
        return _of_shape(cast_to(arg1, "csr").astype(dtype or arg1.dtype, copy=False), shape)
    dense = _dense_source(arg1, ctx, dtype)
    if dense.ndim != 2:
        raise MXNetError("csr_matrix: a dense source must be 2-D, not shape %s"
                         % (tuple(dense.shape),))
    return _of_shape(encode("csr", dense, ctx), shape)


def _of_shape(array: BaseSparseNDArray, shape) -> BaseSparseNDArray:
    """`array`, after checking that a `shape` given beside a shape or a source matches it
    (MXNet's ValueError otherwise)."""
    if shape is not None and tuple(shape) != tuple(array.shape):
        raise ValueError("Shape mismatch detected: the source has shape %s but shape=%s"
                         % (tuple(array.shape), tuple(shape)))
    return array


def _from_coo(data, coords, shape, ctx, dtype) -> CSRNDArray:
    row, col = coords
    kind = _values_dtype(data, dtype)
    values = _backend(data, ctx, kind).reshape(-1)
    rows = _backend(row, ctx, codec.INDEX).reshape(-1)
    cols = _backend(col, ctx, codec.INDEX).reshape(-1)
    if shape is None:
        shape = (int(rows.max()) + 1 if rows.size else 0, int(cols.max()) + 1 if cols.size else 0)
    for what, index, size in (("row", rows, shape[0]), ("column", cols, shape[1])):
        if index.size and (int(index.min()) < 0 or int(index.max()) >= size):
            raise ValueError("csr_matrix: a %s index of the COO input is outside [0, %d)"
                             % (what, size))
    xp = backend.xp_for(ctx)
    with device_scope(ctx):
        dense = xp.zeros(tuple(shape), dtype=kind)
        if values.size:  # repeated (row, column) pairs add up, as SciPy sums them
            backend.scatter_add(xp, dense, (rows, cols), values)
    return encode("csr", dense, ctx)


def row_sparse_array(arg1, shape=None, ctx: Context | None = None,
                     dtype=None) -> RowSparseNDArray:
    """A RowSparseNDArray from `(data, indices)` (the stored rows and their sorted row
    numbers), from a shape (empty), from a dense array or another RowSparseNDArray. `shape`
    defaults to (largest index + 1,) + the rows' shape."""
    ctx = _ctx(ctx)
    if _is_shape(arg1):
        return _of_shape(zeros("row_sparse", arg1, ctx, dtype), shape)
    if isinstance(arg1, RowSparseNDArray):
        return _of_shape(arg1.copyto(ctx).astype(dtype or arg1.dtype, copy=False), shape)
    if isinstance(arg1, tuple) and len(arg1) == 2:
        kind = _values_dtype(arg1[0], dtype)
        values = _backend(arg1[0], ctx, kind)
        indices = _backend(arg1[1], ctx, codec.INDEX).reshape(-1)
        if values.ndim == 0 or values.shape[0] != indices.shape[0]:
            raise MXNetError("row_sparse_array: %d index(es) for values of shape %s"
                             % (indices.shape[0], tuple(values.shape)))
        if shape is None:
            rows = int(indices.max()) + 1 if indices.size else 0
            shape = (rows,) + tuple(values.shape[1:])
        return _checked(make_sparse("row_sparse", values, (indices,), tuple(shape), ctx))
    if isinstance(arg1, BaseSparseNDArray):
        return _of_shape(cast_to(arg1, "row_sparse").astype(dtype or arg1.dtype, copy=False),
                         shape)
    return _of_shape(encode("row_sparse", _dense_source(arg1, ctx, dtype), ctx), shape)


def _dense_source(source, ctx: Context, dtype):
    if isinstance(source, NDArray):
        return as_backend_operand(source, ctx, normalize_dtype(dtype, default=source.dtype))
    host = np.asarray(source)
    if host.dtype == object:
        raise TypeError("cannot make a sparse array from %s" % type(source).__name__)
    kind = normalize_dtype(dtype, default=host.dtype.type) \
        if isinstance(source, np.ndarray) else normalize_dtype(dtype)
    return as_backend_operand(host, ctx, kind)


def array(source_array, ctx: Context | None = None, dtype=None) -> BaseSparseNDArray:
    """A sparse copy of a sparse NDArray or a SciPy sparse matrix (csr)."""
    if isinstance(source_array, BaseSparseNDArray):
        out = source_array.copyto(_ctx(ctx))
        return out.astype(dtype, copy=False) if dtype is not None else out
    if _is_scipy(source_array):
        return csr_matrix(source_array, ctx=ctx, dtype=dtype or source_array.dtype.type)
    raise ValueError("mx.nd.sparse.array takes a sparse NDArray or a scipy.sparse matrix, "
                     "not %s" % type(source_array).__name__)
