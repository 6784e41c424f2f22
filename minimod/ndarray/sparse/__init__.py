"""`mx.nd.sparse`: NDArrays in MXNet's sparse storage types, row-sparse and CSR.

codec.py holds the formats and the conversions, arrays.py the classes (`RowSparseNDArray`,
`CSRNDArray`), creation.py what makes them, math.py their arithmetic and products.py `dot` and
`retain`, records.py their records in NDArray files; the optimizer kernels MXNet lists here
(`sgd_update`, `sgd_mom_update`, `adam_update`, `ftrl_update`; `adagrad_update`, MXNet's
sparse-only AdaGrad) are `mx.nd`'s (update_kernels.py), which update lazily on a row-sparse
gradient where MXNet's do (minimod/ndarray/update_rows.py). Any other
registered operator is reachable here too (`mx.nd.sparse.sqrt` ...): one with `keeps_sparse`
(f(0) = 0) maps the stored values and keeps the storage type; the others run on the dense
views, as MXNet falls back to dense storage for an operator without a sparse form.
"""
from __future__ import annotations

from ...ops.registry import list_ops
from ..imperative import op_function
from ..update_kernels import adagrad_update, adam_update, ftrl_update, sgd_mom_update, sgd_update
from . import math
from .arrays import BaseSparseNDArray, CSRNDArray, RowSparseNDArray, cast_to
from .creation import array, csr_matrix, empty, row_sparse_array, zeros
from .products import dot, retain, written

__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "array", "csr_matrix",
           "empty", "row_sparse_array", "zeros", "dot", "retain", "cast_storage", "add",
           "subtract", "multiply", "divide", "elemwise_add", "elemwise_sub", "elemwise_mul",
           "sgd_update", "sgd_mom_update", "adam_update", "ftrl_update", "adagrad_update"]


def cast_storage(data, stype: str, out=None, name=None):
    """A copy of `data` stored as `stype` ('default', 'row_sparse' or 'csr')."""
    return written(cast_to(data, stype), out)


def add(lhs, rhs):
    """lhs + rhs (see math.py for the storage type of the result)."""
    return lhs + rhs


def subtract(lhs, rhs):
    """lhs - rhs."""
    return lhs - rhs


def multiply(lhs, rhs):
    """lhs * rhs."""
    return lhs * rhs


def divide(lhs, rhs):
    """lhs / rhs."""
    return lhs / rhs


elemwise_add = math.elemwise_function("add", "elemwise_add")  # mx.nd's own (math.py)
elemwise_sub = math.elemwise_function("subtract", "elemwise_sub")
elemwise_mul = math.elemwise_function("multiply", "elemwise_mul")


def __getattr__(name: str):
    if name in list_ops():
        return op_function(name)
    raise AttributeError("module 'minimod.ndarray.sparse' has no attribute '%s'" % name)
