"""The dense layer: FullyConnected.

Its bound fast paths and its batch-last form live in `minimod.kernels.dense`.
"""
from __future__ import annotations

import dataclasses
import math

from ..backend import matmul, sum_into
from ..base import ShapeError
from .helpers import param_error, prod_or_none
from .registry import Op, fmt_shape, register

__all__ = ["FullyConnected"]


@dataclasses.dataclass(frozen=True)
class FullyConnectedAttrs:
    num_hidden: int
    no_bias: bool = False
    flatten: bool = True


@register
class FullyConnected(Op):
    """Dense layer: out = data . weight^T + bias.

    flatten=True: data (N, d1, d2, ...) is read as (N, d1*d2*...) and out is (N, num_hidden).
    flatten=False: the product runs over the last axis only, (..., k) -> (..., num_hidden).
    weight is (num_hidden, k), bias (num_hidden,) unless no_bias.
    """

    name = "FullyConnected"
    SIGNATURE_INPUTS = ("data", "weight", "bias")
    Attrs = FullyConnectedAttrs
    backward_inputs = (0, 1)  # data and weight; the bias gradient needs neither
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.num_hidden <= 0:
            raise param_error(self.name, "num_hidden must be positive, got %d"
                              % self.attrs.num_hidden)

    def arguments(self) -> list:
        return ["data", "weight"] if self.attrs.no_bias else ["data", "weight", "bias"]

    def infer_shape(self, in_shapes: list, out_shapes: list):
        a = self.attrs
        data = in_shapes[0]
        if data is None:  # as MXNet: weights are deduced from the data, never the other way
            return in_shapes, out_shapes
        k, out = self._flattened(in_shapes) if a.flatten else self._last_axis(in_shapes)
        why = "num_hidden=%d and data %s" % (a.num_hidden, fmt_shape(in_shapes[0]))
        self.set_in(in_shapes, 1, (a.num_hidden, k), why)
        if not a.no_bias:
            self.set_in(in_shapes, 2, (a.num_hidden,), "num_hidden=%d" % a.num_hidden)
        self.set_out(out_shapes, 0, out)
        if out_shapes[0] is not None:
            if a.flatten:
                self.set_in(in_shapes, 0, (out_shapes[0][0],) + (None,) * (len(in_shapes[0]) - 1))
            else:
                self.set_in(in_shapes, 0, tuple(out_shapes[0][:-1]) + (None,))
        return in_shapes, out_shapes

    def _flattened(self, in_shapes: list):
        """(k, output shape) for flatten=True; a 2-D data of unknown width takes the weight's."""
        data = in_shapes[0]
        if len(data) < 1:
            raise ShapeError("input 'data' has shape () but FullyConnected needs a batch axis")
        k = prod_or_none(data[1:])
        if k is None and in_shapes[1] is not None and len(in_shapes[1]) == 2:
            k = in_shapes[1][1]
            if len(data) == 2:
                self.set_in(in_shapes, 0, (data[0], k))
        return k, (data[0], self.attrs.num_hidden)

    def _last_axis(self, in_shapes: list):
        """(k, output shape) for flatten=False, the product over data's last axis."""
        data = in_shapes[0]
        k = data[-1] if data else None
        if k is None and in_shapes[1] is not None:
            k = in_shapes[1][1]
            self.set_in(in_shapes, 0, tuple(data[:-1]) + (k,))
        return k, tuple(data[:-1]) + (self.attrs.num_hidden,)

    def _as_2d(self, x):
        """x as (rows, features); with sizes spelt out, a zero-size batch reshapes too."""
        if self.attrs.flatten:
            return x.reshape(x.shape[0], math.prod(x.shape[1:]))
        return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])

    def forward(self, xp, inputs, aux, out, is_train):
        x2 = self._as_2d(inputs[0])
        y = out[0]
        direct = y.flags.c_contiguous and y.dtype == x2.dtype
        if direct:
            # a view: the GEMM writes straight into out
            y2 = y.reshape(x2.shape[0], self.attrs.num_hidden)
            matmul(xp, x2, inputs[1].T, out=y2)
        else:
            y2 = matmul(xp, x2, inputs[1].T)
        if not self.attrs.no_bias:
            y2 += inputs[2]
        if not direct:
            y[...] = y2.reshape(y.shape)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, weight = inputs[0], inputs[1]
        dx, dw = in_grads[0], in_grads[1]
        db = None if self.attrs.no_bias else in_grads[2]
        g2 = out_grads[0].reshape(math.prod(out_grads[0].shape[:-1]), self.attrs.num_hidden)
        # where the gradient array takes the GEMM's result as it is, the GEMM writes into it
        if dx is not None:
            if dx.flags.c_contiguous and dx.dtype == g2.dtype:
                matmul(xp, g2, weight, out=dx.reshape(g2.shape[0], weight.shape[1]))
            else:
                dx[...] = matmul(xp, g2, weight).reshape(x.shape)
        if dw is not None:
            if dw.flags.c_contiguous and dw.dtype == g2.dtype:
                matmul(xp, g2.T, self._as_2d(x), out=dw)
            else:
                dw[...] = matmul(xp, g2.T, self._as_2d(x))
        if db is not None:
            if db.flags.c_contiguous and db.dtype == g2.dtype:
                sum_into(xp, g2, 0, db)
            else:
                db[...] = g2.sum(axis=0)
