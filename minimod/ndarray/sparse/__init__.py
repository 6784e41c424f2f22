"""`mx.nd.sparse`: NDArrays in MXNet's sparse storage types, row-sparse and CSR.

codec.py holds the formats and the conversions, arrays.py the classes (`RowSparseNDArray`,
`CSRNDArray`), creation.py what makes them, math.py their arithmetic and products.py `dot` and
`retain`. Any other operator is reachable here too (`mx.nd.sparse.sqrt` ...): it runs on the
dense views, as MXNet falls back to dense storage for an operator without a sparse form.
"""
from __future__ import annotations

from .arrays import BaseSparseNDArray, CSRNDArray, RowSparseNDArray, cast_to
from .creation import array, csr_matrix, empty, row_sparse_array, zeros
from .products import dot, retain

__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "array", "csr_matrix",
           "empty", "row_sparse_array", "zeros", "dot", "retain", "cast_storage", "add",
           "subtract", "multiply", "divide", "elemwise_add", "elemwise_sub", "elemwise_mul"]


def cast_storage(data, stype: str):
    """A copy of `data` stored as `stype` ('default', 'row_sparse' or 'csr')."""
    return cast_to(data, stype)


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


elemwise_add, elemwise_sub, elemwise_mul = add, subtract, multiply


def __getattr__(name: str):
    from .. import __getattr__ as nd_getattr
    from .. import routines
    if name in getattr(routines, "__all__", ()):
        return getattr(routines, name)
    return nd_getattr(name)
