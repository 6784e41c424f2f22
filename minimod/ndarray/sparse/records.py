"""Sparse arrays in MXNet's NDArray file records (minimod/ndarray/serialization.py has the
layout): a row_sparse record holds its stored rows (storage shape (k,) + row shape) and one
int64 aux array, the row indices; a csr record its values (storage shape (nnz,)) and two,
indptr and the column indices. Loading checks every index against the shape before the array
is made (a record comes from a file: nothing in it is trusted) and keeps the storage type, as
MXNet does; saving writes the components as they are."""
from __future__ import annotations

import numpy as np

from ... import backend
from ...context import Context
from ...graph.attrs import STYPE_CODES, STYPE_NAMES
from . import codec
from .arrays import BaseSparseNDArray, make_sparse

__all__ = ["from_record", "record_parts"]


def _why_invalid(stype: int, shape: tuple, values: np.ndarray, aux: list) -> str | None:
    if any(a.ndim != 1 for a in aux):
        return "index arrays of shapes %s, where they are 1-D" % [a.shape for a in aux]
    if stype == 1:
        if not shape or values.shape != aux[0].shape[:1] + shape[1:]:
            return ("values of shape %s for row indices of shape %s in shape %s"
                    % (values.shape, aux[0].shape, shape))
        return codec.check_rsp(np, aux[0], shape, full=True)
    if len(shape) != 2:
        return "shape %s, where csr arrays are 2-D" % (shape,)
    if values.shape != aux[1].shape:
        return "%d values for %d column indices" % (values.size, aux[1].size)
    return codec.check_csr(np, aux[0], aux[1], shape, full=True)


def from_record(stype: int, shape: tuple, values: np.ndarray, aux: list,
                ctx: Context) -> BaseSparseNDArray:
    """The sparse array of a record's host components, on `ctx`; ValueError saying why when
    they do not form one."""
    aux = [a.astype(codec.INDEX, copy=False) for a in aux]
    why = _why_invalid(stype, tuple(shape), values, aux)
    if why:
        raise ValueError("%s record: %s" % (STYPE_NAMES[stype], why))
    with backend.device_scope(ctx):
        return make_sparse(STYPE_NAMES[stype], backend.to_context(values, ctx),
                           [backend.to_context(a, ctx) for a in aux], tuple(shape), ctx)


def record_parts(array: BaseSparseNDArray) -> tuple:
    """(storage type code, values, [aux arrays]) of `array` as host arrays."""
    return (STYPE_CODES[array.stype], backend.asnumpy(array._values),
            [backend.asnumpy(a) for a in array._aux])
