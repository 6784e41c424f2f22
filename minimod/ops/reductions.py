"""Reductions over axes: sum, mean, prod, nansum, nanprod, max, min, norm, and moments (mean
and variance together).

Shape conventions of MXNet 1.9.1 kept here (checked against MXNet itself): a reduction over
every axis without keepdims gives shape (1,), not a 0-d array; an empty `axis` tuple means
every axis, like None. max/min send the head gradient to every position equal to the extreme
(ties all get it).

Deviations, each where MXNet returns NaN: the gradient of prod at zeros is the product of the
other factors (MXNet: out / x), and norm's gradient at an all-zero slice is 0.

Outputs and gradient arrays are C-contiguous, so `reshape` of them is a view usable as `out=`.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Literal, Optional

import numpy as np

from .. import backend
from ..base import OpParamError, ShapeError
from .helpers import data_axis, dtype_of
from .registry import Op, fmt_shape, register

__all__ = ["reduced_axes", "reduced_shape"]


# ============================================================================ axis helpers

def reduced_axes(axis, exclude: bool, shape) -> tuple:
    """The sorted, non-negative axes of `shape` that a reduction with (axis, exclude) removes."""
    ndim = len(shape)
    if not axis:
        return tuple(range(ndim))
    axes = sorted({data_axis(a, ndim, shape) for a in axis})
    if len(axes) != len(axis):
        raise ShapeError("axis %s repeats an axis of input 'data' of shape %s"
                         % (tuple(axis), fmt_shape(shape)))
    if exclude:
        axes = [a for a in range(ndim) if a not in axes]
    return tuple(axes)


def reduced_shape(shape, axes, keepdims: bool):
    """`shape` with `axes` removed (set to 1 with keepdims); (1,) when nothing is left."""
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    kept = tuple(d for i, d in enumerate(shape) if i not in axes)
    return kept or (1,)


def _kept_shape(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


# ============================================================================ reductions

@dataclasses.dataclass(frozen=True)
class ReduceAttrs:
    axis: Optional[tuple[int, ...]] = None
    keepdims: bool = False
    exclude: bool = False


class _Reduce(Op):
    """Base of reductions over `axis` (None or (): every axis; exclude: every other axis).

    Output: data's shape without the reduced axes (or with 1s there when keepdims); (1,) when
    nothing is left. Subclasses give `reduce(xp, x, axes)` (keepdims result) and `grad`.
    """

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    Attrs = ReduceAttrs
    backward_inputs = ()
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        self._axes_by_shape: dict = {}

    def _axes(self, shape) -> tuple:
        axes = self._axes_by_shape.get(len(shape))
        if axes is None:
            axes = reduced_axes(self.attrs.axis, self.attrs.exclude, shape)
            self._axes_by_shape[len(shape)] = axes
        return axes

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is not None:
            self.set_out(out_shapes, 0, reduced_shape(data, self._axes(data),
                                                       self.attrs.keepdims))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        axes = self._axes(x.shape)
        if out[0].flags.c_contiguous:  # a view of the output with x's rank
            self.reduce_into(xp, x, axes, out[0].reshape(_kept_shape(x.shape, axes)))
        else:
            out[0][...] = self.reduce(xp, x, axes).reshape(out[0].shape)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is None:
            return
        kshape = _kept_shape(dx.shape, self._axes(dx.shape))
        y = None if outputs[0] is None else outputs[0].reshape(kshape)
        self.grad(xp, out_grads[0].reshape(kshape), inputs[0], y, dx)

    def reduce(self, xp, x, axes):
        raise NotImplementedError

    def reduce_into(self, xp, x, axes, out) -> None:
        """Write the keepdims reduction into `out`; subclasses whose NumPy call takes `out=`
        with the same arithmetic write it there directly."""
        out[...] = self.reduce(xp, x, axes)

    def grad(self, xp, dy, x, y, dx):
        """Write into dx the gradient, given dy and y reshaped to keepdims form."""
        raise NotImplementedError


@register
class SumOp(_Reduce):
    """out = sum of data over the reduced axes; the gradient broadcasts the head back."""

    name = "sum"
    aliases = ("sum_axis",)

    def reduce(self, xp, x, axes):
        return x.sum(axis=axes, keepdims=True)

    def reduce_into(self, xp, x, axes, out) -> None:
        backend.sum_into(xp, x, axes, out, keepdims=True)

    def grad(self, xp, dy, x, y, dx):
        xp.copyto(dx, dy)


@register
class MeanOp(_Reduce):
    """out = mean of data over the reduced axes (integer inputs truncate, as in MXNet)."""

    name = "mean"

    def reduce(self, xp, x, axes):
        return x.mean(axis=axes, keepdims=True)

    def grad(self, xp, dy, x, y, dx):
        xp.copyto(dx, dy)
        dx *= dy.size / dx.size


def _product_grad(xp, dy, x, axes, dx):
    # d prod / d x_i = product of the other factors, computed without dividing by zero.
    is_zero = x == 0
    zeros = is_zero.sum(axis=axes, keepdims=True)
    nonzero_prod = xp.where(is_zero, 1, x).prod(axis=axes, keepdims=True)
    safe_x = xp.where(is_zero, 1, x)
    grad = xp.where(zeros == 0, nonzero_prod / safe_x,
                    xp.where(is_zero & (zeros == 1), nonzero_prod, 0))
    xp.multiply(dy, grad, out=dx)


@register
class ProdOp(_Reduce):
    """out = product of data over the reduced axes; gradient = product of the other factors."""

    name = "prod"
    backward_inputs = (0,)

    def reduce(self, xp, x, axes):
        return x.prod(axis=axes, keepdims=True)

    def grad(self, xp, dy, x, y, dx):
        _product_grad(xp, dy, x, self._axes(x.shape), dx)


@register
class NansumOp(_Reduce):
    """out = sum over the reduced axes with NaNs counted as 0; NaN positions get no gradient."""

    name = "nansum"
    backward_inputs = (0,)

    def reduce(self, xp, x, axes):
        return xp.nansum(x, axis=axes, keepdims=True)

    def grad(self, xp, dy, x, y, dx):
        xp.multiply(dy, ~xp.isnan(x), out=dx)


@register
class NanprodOp(_Reduce):
    """out = product over the reduced axes with NaNs counted as 1; NaN positions get no
    gradient."""

    name = "nanprod"
    backward_inputs = (0,)

    def reduce(self, xp, x, axes):
        return xp.nanprod(x, axis=axes, keepdims=True)

    def grad(self, xp, dy, x, y, dx):
        nan = xp.isnan(x)
        _product_grad(xp, dy, xp.where(nan, 1, x), self._axes(x.shape), dx)
        # a masked copy, not dx[nan] = 0: CuPy's boolean-mask assignment counts the hits on the
        # host, a GPU round trip
        xp.copyto(dx, 0, where=nan)


@register
class MaxOp(_Reduce):
    """out = maximum over the reduced axes; every position equal to it gets the head gradient."""

    name = "max"
    aliases = ("max_axis",)
    backward_inputs = (0,)
    backward_outputs = (0,)

    def reduce(self, xp, x, axes):
        return x.max(axis=axes, keepdims=True)

    def reduce_into(self, xp, x, axes, out) -> None:
        x.max(axis=axes, keepdims=True, out=out)

    def grad(self, xp, dy, x, y, dx):
        xp.equal(x, y, out=dx)  # the mask as 1 / 0 in dx's dtype, then times the head
        dx *= dy


@register
class MinOp(MaxOp):
    """out = minimum over the reduced axes; every position equal to it gets the head gradient."""

    name = "min"
    aliases = ("min_axis",)

    def reduce(self, xp, x, axes):
        return x.min(axis=axes, keepdims=True)

    def reduce_into(self, xp, x, axes, out) -> None:
        if xp is np:
            x.min(axis=axes, keepdims=True, out=out)
        else:  # CuPy 14.2's ndarray.min(out=...) fails in its CUB path (a TypeError)
            xp.copyto(out, x.min(axis=axes, keepdims=True))


@dataclasses.dataclass(frozen=True)
class NormAttrs:
    ord: int = 2
    axis: Optional[tuple[int, ...]] = None
    out_dtype: Optional[Literal["float16", "float32", "float64", "int32", "int64", "int8"]] = None
    keepdims: bool = False


@register
class NormOp(_Reduce):
    """out = the L2 (ord=2) or L1 (ord=1) norm over `axis` (None: all axes, giving (1,)).

    Gradient: x / out for L2 (0 where out is 0), sign(x) for L1. out_dtype sets the output dtype
    (default: data's).
    """

    name = "norm"
    Attrs = NormAttrs
    backward_inputs = (0,)
    backward_outputs = (0,)

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.ord not in (1, 2):
            raise OpParamError("operator norm: ord must be 1 or 2, got %r" % self.attrs.ord)

    def _axes(self, shape) -> tuple:
        axes = self._axes_by_shape.get(len(shape))
        if axes is None:
            axes = reduced_axes(self.attrs.axis, False, shape)
            self._axes_by_shape[len(shape)] = axes
        return axes

    def infer_type(self, in_types, out_types):
        if self.attrs.out_dtype is None:
            return super().infer_type(in_types, out_types)
        return list(in_types), [dtype_of(self.attrs.out_dtype)]

    def reduce(self, xp, x, axes):
        if self.attrs.ord == 1:
            return xp.abs(x).sum(axis=axes, keepdims=True)
        return xp.sqrt(xp.square(x).sum(axis=axes, keepdims=True))

    def grad(self, xp, dy, x, y, dx):
        if self.attrs.ord == 1:
            xp.multiply(dy, xp.sign(x), out=dx)
        else:
            xp.multiply(dy, x / xp.where(y == 0, 1, y), out=dx)


# ============================================================================ moments

@dataclasses.dataclass(frozen=True)
class MomentsAttrs:
    axes: Optional[tuple[int, ...]] = None
    keepdims: bool = False


@register
class MomentsOp(Op):
    """Two outputs: the mean and the (population) variance of data over `axes` (all of them
    when not given). Gradient: head_mean / n + head_var * 2 (x - mean) / n."""

    name = "moments"
    Attrs = MomentsAttrs
    OUTPUTS = ("output0", "output1")  # the mean and the variance, under MXNet's names
    backward_inputs = (0,)
    backward_outputs = (0,)

    def _axes(self, shape) -> tuple:
        if self.attrs.axes is None:
            return tuple(range(len(shape)))
        return tuple(sorted({data_axis(a, len(shape), shape) for a in self.attrs.axes}))

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        axes = self._axes(data)
        if self.attrs.keepdims:
            shape = tuple(1 if i in axes else d for i, d in enumerate(data))
        else:
            shape = tuple(d for i, d in enumerate(data) if i not in axes)
        for i in range(2):
            self.set_out(out_shapes, i, shape)
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        axes = self._axes(x.shape)
        mean = x.mean(axis=axes, keepdims=True)
        out[0][...] = mean.reshape(out[0].shape)
        out[1][...] = ((x - mean) ** 2).mean(axis=axes).reshape(out[1].shape)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is None:
            return
        x = inputs[0]
        axes = self._axes(x.shape)
        kept = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        n = math.prod(x.shape[i] for i in axes)
        mean = outputs[0].reshape(kept)
        g_mean = 0 if out_grads[0] is None else out_grads[0].reshape(kept)
        g_var = 0 if out_grads[1] is None else out_grads[1].reshape(kept)
        dx[...] = (g_mean + g_var * 2 * (x - mean)) / n
