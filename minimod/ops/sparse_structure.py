"""Operators that read the structure of a sparse matrix: `getnnz` and `edge_id`
(`mx.sym.contrib`, MXNet's graph helpers over CSR adjacency matrices), and `retain`
(`mx.sym.sparse.retain`, the named rows of a row-sparse array).

minimod's executors keep a graph's arrays dense (storage.py), so in a graph an entry is
"stored" when it is not zero: a CSR input with explicitly stored zeros counts them in MXNet
and not here. `mx.nd.contrib.getnnz` / `edge_id` on a CSRNDArray read its stored entries
(minimod/ndarray/sparse/structure.py), as MXNet's do.

Beyond MXNet 1.9.1: getnnz takes axis=0 (MXNet: "not supported yet"), the three take dense
inputs (MXNet's refuse them), and edge_id gives -1 for a (u, v) outside the matrix where
MXNet reads past its arrays.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from ..base import OpParamError, ShapeError
from .helpers import zero_grads
from .registry import NoAttrs, Op, fmt_shape, register

__all__ = ["GetnnzOp", "EdgeIdOp", "RetainOp"]


def _matrix(op: Op, shape) -> None:
    if shape is not None and len(shape) != 2:
        raise ShapeError("operator %s: data must be a 2-D matrix, got shape %s"
                         % (op.name, fmt_shape(shape)))


@dataclasses.dataclass(frozen=True)
class GetnnzAttrs:
    axis: Optional[int] = None


@register
class GetnnzOp(Op):
    """out = the number of non-zero entries of the 2-D data: in all (shape (1,)), per
    column (axis=0, shape (cols,)) or per row (axis=1, shape (rows,)); int64; no gradient."""

    name = "_contrib_getnnz"
    Attrs = GetnnzAttrs
    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.axis not in (None, 0, 1, -1, -2):
            raise OpParamError("operator getnnz: axis must be None, 0 or 1, got %r"
                               % self.attrs.axis)

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        _matrix(self, data)
        if data is not None:
            axis = self.attrs.axis
            self.set_out(out_shapes, 0, (1,) if axis is None else (data[1 - axis % 2],))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        return list(in_types), [np.dtype(np.int64)]

    def forward(self, xp, inputs, aux, out, is_train):
        nonzero = inputs[0] != 0
        axis = self.attrs.axis
        out[0][...] = (nonzero.sum(dtype=np.int64) if axis is None
                       else nonzero.sum(axis=axis % 2, dtype=np.int64))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        zero_grads(in_grads)


@register
class EdgeIdOp(Op):
    """out[i] = data[u[i], v[i]] where that entry is non-zero, else -1 (also for a (u, v)
    outside the matrix): data 2-D, u and v 1-D of one length, indices given as numbers of
    any type; out has u's shape and data's dtype; no gradient."""

    name = "_contrib_edge_id"
    Attrs = NoAttrs
    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True

    ARGUMENTS = ("data", "u", "v")

    def infer_shape(self, in_shapes, out_shapes):
        data, u, v = in_shapes
        _matrix(self, data)
        for label, shape in (("u", u), ("v", v)):
            if shape is not None and len(shape) != 1:
                raise ShapeError("operator edge_id: %s must be 1-D, got shape %s"
                                 % (label, fmt_shape(shape)))
        if u is not None and v is not None and u != v:
            raise ShapeError("operator edge_id: u %s and v %s must have one shape"
                             % (fmt_shape(u), fmt_shape(v)))
        known = u if u is not None else v
        if known is not None:
            in_shapes = [data, known, known]
            self.set_out(out_shapes, 0, known)
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        return list(in_types), [in_types[0]]

    def forward(self, xp, inputs, aux, out, is_train):
        data, u, v = inputs
        rows, cols = data.shape
        u, v = u.astype(np.int64), v.astype(np.int64)
        inside = (u >= 0) & (u < rows) & (v >= 0) & (v < cols)
        values = data[xp.where(inside, u, 0), xp.where(inside, v, 0)]
        out[0][...] = xp.where(inside & (values != 0), values, data.dtype.type(-1))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        zero_grads(in_grads)


@register
class RetainOp(Op):
    """out = data with the rows `indices` names kept and every other row zero (shape of data;
    indices 1-D, numbers of any type; one outside [0, rows) names no row). The gradient
    reaches the kept rows only; indices get none."""

    name = "_sparse_retain"
    Attrs = NoAttrs
    backward_inputs = (1,)
    backward_outputs = ()

    ARGUMENTS = ("data", "indices")

    def infer_shape(self, in_shapes, out_shapes):
        data, indices = in_shapes
        if indices is not None and len(indices) != 1:
            raise ShapeError("operator retain: indices must be 1-D, got shape %s"
                             % fmt_shape(indices))
        if data is not None:
            self.set_out(out_shapes, 0, data)
        elif out_shapes[0] is not None:
            in_shapes = [out_shapes[0], indices]
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        known = in_types[0] if in_types[0] is not None else out_types[0]
        return [known, in_types[1]], [known]

    @staticmethod
    def _kept(xp, rows: int, ndim: int, indices):
        """(rows, 1, ...) booleans: True on a kept row (no host read)."""
        idx = indices.astype(np.int64)
        idx = xp.where((idx >= 0) & (idx < rows), idx, rows)  # outside: the spare last slot
        mask = xp.zeros(rows + 1, dtype=bool)
        mask[idx] = True
        return mask[:rows].reshape((rows,) + (1,) * (ndim - 1))

    def forward(self, xp, inputs, aux, out, is_train):
        data, indices = inputs
        kept = self._kept(xp, data.shape[0], data.ndim, indices)
        out[0][...] = xp.where(kept, data, data.dtype.type(0))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            grad = out_grads[0]
            kept = self._kept(xp, grad.shape[0], grad.ndim, inputs[1])
            in_grads[0][...] = xp.where(kept, grad, grad.dtype.type(0))
        if in_grads[1] is not None:
            in_grads[1][...] = 0
