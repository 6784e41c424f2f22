"""Products: dot (a contraction over one axis) and batch_dot (matrix products of batches).

`dot` of a sparse operand is `mx.nd.sparse.dot`, as in MXNet (the storage type of the result
follows the operands')."""
from __future__ import annotations

from ...base import ShapeError
from ..core import NDArray, device_scope
from ..sparse.products import dot as sparse_dot
from .common import _at_least_1d, _result, recorded


@recorded("dot")
def dot(lhs: NDArray, rhs: NDArray, transpose_a: bool = False, transpose_b: bool = False,
        out: NDArray | None = None, forward_stype: str | None = None, **_ignored) -> NDArray:
    """Sum over the last axis of lhs and the first axis of rhs (after optional transposes,
    which reverse all axes): shape lhs.shape[:-1] + rhs.shape[1:]; 1-D . 1-D gives (1,)."""
    if out is None and (lhs.stype != "default" or rhs.stype != "default"):
        return sparse_dot(lhs, rhs, transpose_a, transpose_b, forward_stype)
    xp = lhs._xp
    a = lhs._data.transpose() if transpose_a else lhs._data
    b = rhs._data.transpose() if transpose_b else rhs._data
    if a.shape[-1] != b.shape[0]:
        raise ShapeError(f"dot: shapes {tuple(a.shape)} and {tuple(b.shape)} do not align "
                         f"({a.shape[-1]} != {b.shape[0]})")
    with device_scope(lhs.context):
        result = xp.tensordot(a, b, axes=1)
    return _result(_at_least_1d(result), lhs, out)


@recorded("batch_dot")
def batch_dot(lhs: NDArray, rhs: NDArray, transpose_a: bool = False, transpose_b: bool = False,
              out: NDArray | None = None, **_ignored) -> NDArray:
    """Matrix products of matching batches: (B, M, K) x (B, K, N) -> (B, M, N)."""
    xp = lhs._xp
    a = xp.swapaxes(lhs._data, -1, -2) if transpose_a else lhs._data
    b = xp.swapaxes(rhs._data, -1, -2) if transpose_b else rhs._data
    try:
        with device_scope(lhs.context):
            result = xp.matmul(a, b)
    except ValueError as err:
        raise ShapeError(f"batch_dot: shapes {tuple(a.shape)} and {tuple(b.shape)} "
                         "do not align") from err
    return _result(result, lhs, out)
