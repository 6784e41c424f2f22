"""The arithmetic operators of sparse NDArrays, with MXNet's storage type for each result.

What keeps a sparse result, as MXNet's operators do:

* `sparse * scalar`, `sparse / scalar`, `-sparse`: the operand's storage type; so does a
  comparison with a scalar, `sparse + scalar` and `sparse - scalar` when the scalar makes
  them map 0 to 0;
* `a + b`, `a - b`, `a * b` of two arrays of one sparse type: that type (row-sparse on the
  union of the stored rows, for `*` too); `sparse * dense`: the sparse operand's type (a
  row-sparse one keeps its rows); `csr * dense` and `csr / dense` with the dense operand
  broadcast (a row or a column): CSR, on the CSR operand's stored entries.

Everything else falls back to dense storage, as in MXNet: the operation reads the dense view of
each sparse operand and returns a dense array. The sparse operands are reached through their
own methods (`_like`, `_encode`, `_set_components`), so this module does not import the classes
(arrays.py, whose operators call it).
"""
from __future__ import annotations

import numbers

import numpy as np

from ...base import DTypeError, ShapeError
from ..core import NDArray, binary_op, device_scope
from ..rules import _BINARY, _scalar_as
from . import codec

__all__ = ["binary", "elemwise_function", "elemwise_keeps_sparse", "inplace", "negative"]

_SAME_TYPE_OPS = ("add", "subtract", "multiply")
#: with a scalar, MXNet keeps the sparse operand's storage type for these when they map its
#: zeros to zero (`y > 0`, `y == 1`, `y - 0` ... but not `y >= 0` or `y + 1`)
_ZERO_KEEPING = ("add", "subtract", "equal", "not_equal", "greater", "greater_equal",
                 "lesser", "lesser_equal")


def elemwise_keeps_sparse(name: str, lhs: NDArray, rhs: NDArray) -> bool:
    """Whether MXNet's `elemwise_<name>` of two arrays of one shape keeps sparse storage (then
    `binary` gives it): two arrays of one sparse type (add, subtract, multiply), or a sparse
    array multiplied by a dense one; else the result is dense."""
    if name == "divide" or (lhs.stype == "default" and rhs.stype == "default"):
        return False
    return lhs.stype == rhs.stype or (name == "multiply" and "default" in (lhs.stype,
                                                                           rhs.stype))


def elemwise_function(op: str, mx_name: str):
    """MXNet's `mx.nd.<mx_name>` (elemwise_add ...): `op` of two NDArrays of one shape (no
    broadcasting, no numbers), with MXNet's storage type of the result
    (`elemwise_keeps_sparse`), written into `out` when given. mx.nd and mx.nd.sparse serve
    the same functions."""
    def elemwise(lhs, rhs, out=None, name=None):
        for side, arg in (("lhs", lhs), ("rhs", rhs)):
            if not isinstance(arg, NDArray):
                raise DTypeError("%s: input '%s' must be an NDArray, got %s (mx.nd.%s takes "
                                 "a number)" % (mx_name, side, type(arg).__name__, op))
        if lhs.shape != rhs.shape:
            raise ShapeError("%s: input 'rhs' has shape %s but input 'lhs' has %s (it does "
                             "not broadcast: broadcast_%s does)" % (mx_name, rhs.shape,
                                                                    lhs.shape, mx_name[9:]))
        keeps = elemwise_keeps_sparse(op, lhs, rhs)
        if not keeps and (out is None or out.stype == "default"):
            return binary_op(op, lhs, rhs, out=out)
        result = binary(op, lhs, rhs) if keeps else binary_op(op, lhs, rhs)
        if out is None:
            return result
        result.copyto(out)  # in out's storage type
        return out
    elemwise.__name__ = elemwise.__qualname__ = mx_name
    return elemwise


def _csr_by_broadcast_dense(name: str, lhs, rhs) -> bool:
    """MXNet's CSR * dense and CSR / dense where the dense operand broadcasts (a row or a
    column): a CSR result on lhs's stored entries."""
    return (lhs.stype == "csr" and rhs.stype == "default" and rhs.ndim == 2
            and (name == "multiply" or (name == "divide" and rhs.shape != lhs.shape))
            and all(r in (1, n) for r, n in zip(rhs.shape, lhs.shape)))


def _maps_zero_to_zero(name: str, array, scalar, array_first: bool) -> bool:
    zero = np.zeros((), array.dtype)
    value = _scalar_as(np, scalar, array.dtype)
    pair = (zero, value) if array_first else (value, zero)
    return not bool(_BINARY[name](np, *pair))


def _is_scalar(value) -> bool:
    return isinstance(value, (numbers.Number, np.generic))


def binary(name: str, lhs, rhs):
    """`lhs <name> rhs` (one operand at least sparse) with MXNet's result storage type."""
    if _is_scalar(lhs) or _is_scalar(rhs):
        array, scalar = (rhs, lhs) if _is_scalar(lhs) else (lhs, rhs)
        if name == "multiply" or (name == "divide" and array is lhs):
            return _scale(name, array, scalar)
        if name in _ZERO_KEEPING and _maps_zero_to_zero(name, array, scalar, array is lhs):
            return array._encode(binary_op(name, lhs, rhs)._data)
        return binary_op(name, lhs, rhs)
    if not (isinstance(lhs, NDArray) and isinstance(rhs, NDArray)):
        return binary_op(name, lhs, rhs)  # its own error for the operand type
    if _csr_by_broadcast_dense(name, lhs, rhs):
        with device_scope(lhs.context):
            result = binary_op(name, lhs, rhs)._data  # computed where lhs stores values only
            return lhs._encode(lhs._xp.where(lhs._data != 0, result, 0).astype(result.dtype))
    if lhs.shape != rhs.shape or name not in _SAME_TYPE_OPS:
        return binary_op(name, lhs, rhs)
    if lhs.dtype != rhs.dtype or lhs.context != rhs.context:
        return binary_op(name, lhs, rhs)  # its own error for the mismatch
    if lhs.stype == rhs.stype == "row_sparse":
        return _rsp_rsp(name, lhs, rhs)
    if name == "multiply" and "row_sparse" in (lhs.stype, rhs.stype) \
            and "default" in (lhs.stype, rhs.stype):
        sparse, dense = (lhs, rhs) if lhs.stype == "row_sparse" else (rhs, lhs)
        with device_scope(sparse.context):
            rows = sparse._aux[0]
            values = sparse._values * sparse._xp.take(dense._data, rows, axis=0)
        return sparse._like(values, (rows.copy(),))
    if lhs.stype == rhs.stype or name == "multiply":
        sparse = lhs if lhs.stype != "default" else rhs
        return sparse._encode(binary_op(name, lhs, rhs)._data)
    return binary_op(name, lhs, rhs)


def _scale(name: str, array, scalar):
    xp = array._xp
    factor = _scalar_as(xp, scalar, array.dtype)
    with np.errstate(all="ignore"), device_scope(array.context):
        values = _BINARY[name](xp, array._values, factor).astype(array.dtype, copy=False)
    return array._like(values, [a.copy() for a in array._aux])


def _rsp_rsp(name: str, lhs, rhs):
    xp = lhs._xp
    with device_scope(lhs.context):
        rows = codec.row_union(xp, lhs._aux[0], rhs._aux[0])  # for `*` too, as MXNet
        row_shape = lhs.shape[1:]
        a = codec.rsp_gather(xp, lhs._values, lhs._aux[0], rows, row_shape)
        b = codec.rsp_gather(xp, rhs._values, rhs._aux[0], rows, row_shape)
        values = _BINARY[name](xp, a, b).astype(lhs.dtype, copy=False)
    return lhs._like(values, (rows,))


def negative(array):
    """-array, in its storage type."""
    with device_scope(array.context):
        return array._like(-array._values, [a.copy() for a in array._aux])


def inplace(target, name: str, other):
    """`target <name>= other`: the result stored back into `target` in its storage type."""
    target._check_writable()
    result = binary(name, target, other)
    if result.shape != target.shape:
        raise ShapeError("in-place %s would change shape %s to %s"
                         % (name, target.shape, result.shape))
    if result.stype == target.stype:
        target._set_components(result._values, result._aux, result.shape)
    else:
        target._store_dense(result._data)
    return target
