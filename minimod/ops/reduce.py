"""Reductions, index selection and products: sum/mean/prod/nansum/nanprod/max/min, norm,
argmax/argmin/argmax_channel, topk, dot, batch_dot, one_hot, take, pick.

Shape conventions of MXNet 1.9.1 kept here (checked against MXNet itself):

- a reduction over every axis without keepdims gives shape (1,), not a 0-d array; an empty
  `axis` tuple means every axis, like None;
- argmax/argmin/topk indices come back as floats in the input's dtype (topk: in `dtype`);
- index inputs (take, pick, one_hot) are float arrays holding integers, truncated toward zero;
- max/min send the head gradient to every position equal to the extreme (ties all get it).

Deviations, each where MXNet returns NaN: the gradient of prod at zeros is the product of the
other factors (MXNet: out / x), and norm's gradient at an all-zero slice is 0.

Outputs and gradient arrays are C-contiguous, so `reshape` of them is a view usable as `out=`.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Literal, Optional

from .. import backend
from ..base import MXNetError, OpParamError, ShapeError
from . import elemwise
from .registry import NoAttrs, Op, fmt_shape, register

__all__ = ["reduced_axes"]


# ============================================================================ axis helpers

def _normalize_axis(axis: int, ndim: int, shape) -> int:
    if not -ndim <= axis < ndim:
        raise ShapeError("axis %d is out of range for input 'data' of shape %s"
                         % (axis, fmt_shape(shape)))
    return axis % ndim


def reduced_axes(axis, exclude: bool, shape) -> tuple:
    """The sorted, non-negative axes of `shape` that a reduction with (axis, exclude) removes."""
    ndim = len(shape)
    if not axis:
        return tuple(range(ndim))
    axes = sorted({_normalize_axis(a, ndim, shape) for a in axis})
    if len(axes) != len(axis):
        raise ShapeError("axis %s repeats an axis of input 'data' of shape %s"
                         % (tuple(axis), fmt_shape(shape)))
    if exclude:
        axes = [a for a in range(ndim) if a not in axes]
    return tuple(axes)


def _reduced_shape(shape, axes, keepdims: bool):
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
            self.set_out(out_shapes, 0, _reduced_shape(data, self._axes(data),
                                                       self.attrs.keepdims))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        out[0][...] = self.reduce(xp, x, self._axes(x.shape)).reshape(out[0].shape)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is None:
            return
        kshape = _kept_shape(dx.shape, self._axes(dx.shape))
        y = None if outputs[0] is None else outputs[0].reshape(kshape)
        self.grad(xp, out_grads[0].reshape(kshape), inputs[0], y, dx)

    def reduce(self, xp, x, axes):
        raise NotImplementedError

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

    def grad(self, xp, dy, x, y, dx):
        xp.multiply(dy, x == y, out=dx)


@register
class MinOp(MaxOp):
    """out = minimum over the reduced axes; every position equal to it gets the head gradient."""

    name = "min"
    aliases = ("min_axis",)

    def reduce(self, xp, x, axes):
        return x.min(axis=axes, keepdims=True)


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
        return list(in_types), [elemwise.dtype_of(self.attrs.out_dtype)]

    def reduce(self, xp, x, axes):
        if self.attrs.ord == 1:
            return xp.abs(x).sum(axis=axes, keepdims=True)
        return xp.sqrt(xp.square(x).sum(axis=axes, keepdims=True))

    def grad(self, xp, dy, x, y, dx):
        if self.attrs.ord == 1:
            xp.multiply(dy, xp.sign(x), out=dx)
        else:
            xp.multiply(dy, x / xp.where(y == 0, 1, y), out=dx)


# ============================================================================ arg reductions

@dataclasses.dataclass(frozen=True)
class ArgReduceAttrs:
    axis: Optional[int] = None
    keepdims: bool = False


class _ArgReduce(Op):
    """Base of argmax/argmin: the index of the extreme along `axis` (None: of the flattened
    data, shape (1,) or all-1s with keepdims), as a float in data's dtype; first index on ties;
    no gradient."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    Attrs = ArgReduceAttrs
    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is not None:
            axis = self.attrs.axis
            axes = (tuple(range(len(data))) if axis is None
                    else (_normalize_axis(axis, len(data), data),))
            self.set_out(out_shapes, 0, _reduced_shape(data, axes, self.attrs.keepdims))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        x, o = inputs[0], out[0]
        if self.attrs.axis is None:
            o[...] = self.arg(x.reshape(-1), 0)
        else:
            o[...] = self.arg(x, self.attrs.axis).reshape(o.shape)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        elemwise._zero(in_grads)


@register
class ArgmaxOp(_ArgReduce):
    name = "argmax"
    __doc__ = _ArgReduce.__doc__.replace("the extreme", "the maximum")

    @staticmethod
    def arg(x, axis):
        return x.argmax(axis=axis)


@register
class ArgminOp(_ArgReduce):
    name = "argmin"
    __doc__ = _ArgReduce.__doc__.replace("the extreme", "the minimum")

    @staticmethod
    def arg(x, axis):
        return x.argmin(axis=axis)


@register
class ArgmaxChannelOp(_ArgReduce):
    """out = argmax of data along axis 1 (the channel axis), as a float in data's dtype."""

    name = "argmax_channel"
    Attrs = NoAttrs

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is not None:
            axis = _normalize_axis(1, len(data), data)
            self.set_out(out_shapes, 0, _reduced_shape(data, (axis,), False))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        out[0][...] = inputs[0].argmax(axis=1).reshape(out[0].shape)


@dataclasses.dataclass(frozen=True)
class TopkAttrs:
    axis: Optional[int] = -1
    k: int = 1
    ret_typ: Literal["both", "indices", "mask", "value"] = "indices"
    is_ascend: bool = False
    dtype: Literal["float16", "float32", "float64", "int32", "int64", "uint8"] = "float32"


@register
class TopkOp(Op):
    """The k largest (is_ascend: smallest) entries along `axis` (None: of the flattened data).

    ret_typ 'value': the entries, sorted; 'indices': their positions (in `dtype`); 'both': the
    two outputs (value, indices); 'mask': data's shape, 1 at the chosen positions. The axis
    dim becomes k. Ties keep the lower index first. Only 'value' and 'both' carry a gradient,
    which goes back to the chosen positions.
    """

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "topk"
    Attrs = TopkAttrs
    backward_inputs = ()
    backward_outputs = (1,)

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.k < 1:
            raise OpParamError("operator topk: k must be >= 1, got %d" % self.attrs.k)
        kind = self.attrs.ret_typ
        self.no_gradient = kind in ("indices", "mask")
        # value and indices are both computed; 'value' alone keeps indices as a hidden output
        self._outputs = ["output0", "output1"] if kind in ("both", "value") else ["output"]
        self._visible = 2 if kind == "both" else 1
        if kind != "both" and kind != "value":
            self.backward_outputs = ()

    def outputs(self) -> list:
        return list(self._outputs)

    def num_visible_outputs(self) -> int:
        return self._visible

    def output_names(self, node_name: str) -> list:
        # MXNet names the lone visible output of ret_typ='value' `<name>_output0`
        if self.attrs.ret_typ == "value":
            return ["%s_output0" % node_name]
        return super().output_names(node_name)

    def _axis(self, shape) -> Optional[int]:
        return None if self.attrs.axis is None else _normalize_axis(self.attrs.axis, len(shape),
                                                                    shape)

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        axis = self._axis(data)
        if self.attrs.ret_typ == "mask":
            self.set_out(out_shapes, 0, data)
            return in_shapes, out_shapes
        if axis is None:
            picked = (self.attrs.k,)
        else:
            if data[axis] is not None and data[axis] < self.attrs.k:
                raise ShapeError("input 'data' has shape %s but topk needs k=%d entries along "
                                 "axis %d" % (fmt_shape(data), self.attrs.k, axis))
            picked = data[:axis] + (self.attrs.k,) + data[axis + 1:]
        for i in range(len(out_shapes)):
            self.set_out(out_shapes, i, picked)
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        data = in_types[0]
        index = elemwise.dtype_of(self.attrs.dtype)
        kind = self.attrs.ret_typ
        if kind == "indices":
            return list(in_types), [index]
        if kind == "mask":
            return list(in_types), [data]
        return list(in_types), [data, index]

    def _select(self, xp, x):
        """(x, or x flattened when axis is None; the axis; the index tuple of the k chosen)."""
        axis = self._axis(x.shape)
        if axis is None:
            x, axis = x.reshape(-1), 0
        keys = x if self.attrs.is_ascend else -x
        order = xp.argsort(keys, axis=axis, kind="stable")
        idx = xp.take(order, xp.arange(self.attrs.k), axis=axis)
        return x, _along_axis(xp, idx, axis)

    def forward(self, xp, inputs, aux, out, is_train):
        flat, where = self._select(xp, inputs[0])
        kind = self.attrs.ret_typ
        if kind == "mask":
            out[0].fill(0)
            target = out[0].reshape(-1) if self.attrs.axis is None else out[0]
            target[where] = 1
            return
        axis = 0 if self.attrs.axis is None else self._axis(flat.shape)
        positions = where[axis]
        if kind == "indices":
            xp.copyto(out[0], positions.reshape(out[0].shape), casting="unsafe")
            return
        xp.copyto(out[0], flat[where].reshape(out[0].shape))
        xp.copyto(out[1], positions.reshape(out[1].shape), casting="unsafe")

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is None:
            return
        dx.fill(0)
        if self.no_gradient:
            return
        axis = self._axis(dx.shape)
        if axis is None:
            target, axis = dx.reshape(-1), 0
            positions = outputs[1].reshape(-1).astype("int64")
        else:
            target, positions = dx, outputs[1].astype("int64")
        where = _along_axis(xp, positions, axis)
        target[where] = out_grads[0].reshape(positions.shape)


@dataclasses.dataclass(frozen=True)
class SortAttrs:
    axis: Optional[int] = -1
    is_ascend: bool = True


@register
class SortOp(Op):
    """data sorted along `axis` (None: the flattened data), ascending or descending; equal
    entries keep their order. The hidden output holds the positions the values came from,
    and the gradient goes back to them."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "sort"
    Attrs = SortAttrs
    OUTPUTS = ("output0", "output1")
    backward_inputs = ()
    backward_outputs = (1,)

    def num_visible_outputs(self) -> int:
        return 1

    def output_names(self, node_name: str) -> list:
        return ["%s_output0" % node_name]  # MXNet's name for the lone visible output

    def _axis(self, shape) -> Optional[int]:
        return None if self.attrs.axis is None else _normalize_axis(self.attrs.axis, len(shape),
                                                                    shape)

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is not None:
            shape = (_prod_or_none(data),) if self.attrs.axis is None else data
            if self.attrs.axis is not None:
                self._axis(data)
            self.set_out(out_shapes, 0, shape)
            self.set_out(out_shapes, 1, shape)
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        return list(in_types), [in_types[0], elemwise.dtype_of("float32")]

    def _order(self, xp, x):
        """(x, flattened when axis is None; the axis; the sorting positions along it)."""
        axis = self._axis(x.shape)
        if axis is None:
            x, axis = x.reshape(-1), 0
        keys = x if self.attrs.is_ascend else -x
        return x, axis, xp.argsort(keys, axis=axis, kind="stable")

    def forward(self, xp, inputs, aux, out, is_train):
        x, axis, order = self._order(xp, inputs[0])
        out[0][...] = x[_along_axis(xp, order, axis)].reshape(out[0].shape)
        xp.copyto(out[1], order.reshape(out[1].shape), casting="unsafe")

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is None:
            return
        axis = self._axis(dx.shape)
        target = dx.reshape(-1) if axis is None else dx
        positions = outputs[1].astype("int64")
        dx.fill(0)
        target[_along_axis(xp, positions, 0 if axis is None else axis)] = out_grads[0]


@dataclasses.dataclass(frozen=True)
class ArgsortAttrs:
    axis: Optional[int] = -1
    is_ascend: bool = True
    dtype: Literal["float16", "float32", "float64", "int32", "int64", "uint8"] = "float32"


@register
class ArgsortOp(SortOp):
    """The positions that sort data along `axis` (None: the flattened data), in `dtype`;
    equal entries keep their order. No gradient."""

    name = "argsort"
    Attrs = ArgsortAttrs
    OUTPUTS = ("output",)
    backward_outputs = ()
    no_gradient = True

    def output_names(self, node_name: str) -> list:
        return ["%s_output" % node_name]

    def infer_shape(self, in_shapes, out_shapes):
        in_shapes, out_shapes = super().infer_shape(in_shapes, out_shapes + [None])
        return in_shapes, out_shapes[:1]

    def infer_type(self, in_types, out_types):
        return list(in_types), [elemwise.dtype_of(self.attrs.dtype)]

    def forward(self, xp, inputs, aux, out, is_train):
        _, _, order = self._order(xp, inputs[0])
        xp.copyto(out[0], order.reshape(out[0].shape), casting="unsafe")

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            in_grads[0].fill(0)


def _prod_or_none(shape) -> Optional[int]:
    return None if any(d is None for d in shape) else math.prod(shape)


def _along_axis(xp, idx, axis: int) -> tuple:
    """The fancy index that picks, along `axis`, position idx[..., j, ...] (others in place)."""
    parts = []
    for d, size in enumerate(idx.shape):
        if d == axis:
            parts.append(idx)
        else:
            shape = [1] * idx.ndim
            shape[d] = size
            parts.append(xp.arange(size).reshape(shape))
    return tuple(parts)


# ============================================================================ products

@dataclasses.dataclass(frozen=True)
class DotAttrs:
    transpose_a: bool = False
    transpose_b: bool = False
    forward_stype: Optional[Literal["csr", "default", "row_sparse"]] = None


@register
class DotOp(Op):
    """out = lhs . rhs, contracting lhs's last axis (its first when transpose_a) with rhs's
    first axis (its last when transpose_b).

    Shapes: lhs (*A, K) or with transpose_a (K, *A); rhs (K, *B) or with transpose_b (*B, K);
    out (*A, *B), or (1,) when both are vectors. The work is one matrix product of lhs seen as
    (prod A, K) and rhs as (K, prod B).
    """

    name = "dot"
    ARGUMENTS = ("lhs", "rhs")
    Attrs = DotAttrs
    backward_inputs = (0, 1)
    backward_outputs = ()

    def _split(self, lhs, rhs):
        ta, tb = self.attrs.transpose_a, self.attrs.transpose_b
        if (ta and len(lhs) == 1) or (tb and len(rhs) == 1):
            raise ShapeError("dot cannot transpose a vector (lhs %s, rhs %s)"
                             % (fmt_shape(lhs), fmt_shape(rhs)))
        k_lhs, rest_lhs = (lhs[0], lhs[1:]) if ta else (lhs[-1], lhs[:-1])
        k_rhs, rest_rhs = (rhs[-1], rhs[:-1]) if tb else (rhs[0], rhs[1:])
        return k_lhs, rest_lhs, k_rhs, rest_rhs

    def infer_shape(self, in_shapes, out_shapes):
        lhs, rhs = in_shapes
        if lhs is None or rhs is None:
            return in_shapes, out_shapes
        k_lhs, rest_lhs, k_rhs, rest_rhs = self._split(lhs, rhs)
        if k_lhs is not None and k_rhs is not None and k_lhs != k_rhs:
            raise ShapeError("input 'lhs' has shape %s and input 'rhs' has %s: the contracted "
                             "dims %d and %d differ (transpose_a=%s, transpose_b=%s)"
                             % (fmt_shape(lhs), fmt_shape(rhs), k_lhs, k_rhs,
                                self.attrs.transpose_a, self.attrs.transpose_b))
        k = k_lhs if k_lhs is not None else k_rhs
        if k is not None:
            ta, tb = self.attrs.transpose_a, self.attrs.transpose_b
            self.set_in(in_shapes, 0, ((k,) + rest_lhs) if ta else (rest_lhs + (k,)))
            self.set_in(in_shapes, 1, (rest_rhs + (k,)) if tb else ((k,) + rest_rhs))
        self.set_out(out_shapes, 0, (rest_lhs + rest_rhs) or (1,))
        return in_shapes, out_shapes

    def _matrices(self, lhs, rhs):
        k = lhs.shape[0] if self.attrs.transpose_a else lhs.shape[-1]
        m, n = lhs.size // k, rhs.size // k
        a = lhs.reshape(k, m).T if self.attrs.transpose_a else lhs.reshape(m, k)
        b = rhs.reshape(n, k).T if self.attrs.transpose_b else rhs.reshape(k, n)
        return a, b, k, m, n

    def forward(self, xp, inputs, aux, out, is_train):
        a, b, _, m, n = self._matrices(inputs[0], inputs[1])
        xp.matmul(a, b, out=out[0].reshape(m, n))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        a, b, k, m, n = self._matrices(inputs[0], inputs[1])
        dy = out_grads[0].reshape(m, n)
        da, db = in_grads
        if da is not None:
            if self.attrs.transpose_a:
                xp.matmul(b, dy.T, out=da.reshape(k, m))
            else:
                xp.matmul(dy, b.T, out=da.reshape(m, k))
        if db is not None:
            if self.attrs.transpose_b:
                xp.matmul(dy.T, a, out=db.reshape(n, k))
            else:
                xp.matmul(a.T, dy, out=db.reshape(k, n))


@register
class BatchDotOp(Op):
    """out[b] = lhs[b] . rhs[b] for every batch index b.

    Shapes: lhs (*B, M, K) (transpose_a: (*B, K, M)), rhs (*B, K, N) (transpose_b: (*B, N, K)),
    out (*B, M, N); lhs and rhs have one rank >= 3 and the same batch dims *B.
    """

    name = "batch_dot"
    ARGUMENTS = ("lhs", "rhs")
    Attrs = DotAttrs
    backward_inputs = (0, 1)
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        lhs, rhs = in_shapes
        if lhs is None or rhs is None:
            return in_shapes, out_shapes
        if len(lhs) < 3 or len(lhs) != len(rhs):
            raise ShapeError("batch_dot needs lhs and rhs of one rank >= 3, got %s and %s"
                             % (fmt_shape(lhs), fmt_shape(rhs)))
        m, k_lhs = (lhs[-1], lhs[-2]) if self.attrs.transpose_a else (lhs[-2], lhs[-1])
        k_rhs, n = (rhs[-1], rhs[-2]) if self.attrs.transpose_b else (rhs[-2], rhs[-1])
        batch = []
        for i, (p, q) in enumerate(zip(lhs[:-2], rhs[:-2])):
            if p is not None and q is not None and p != q:
                raise ShapeError("input 'lhs' has shape %s and input 'rhs' has %s: batch dim %d "
                                 "differs" % (fmt_shape(lhs), fmt_shape(rhs), i))
            batch.append(p if p is not None else q)
        if k_lhs is not None and k_rhs is not None and k_lhs != k_rhs:
            raise ShapeError("input 'lhs' has shape %s and input 'rhs' has %s: the contracted "
                             "dims %d and %d differ" % (fmt_shape(lhs), fmt_shape(rhs),
                                                        k_lhs, k_rhs))
        self.set_out(out_shapes, 0, tuple(batch) + (m, n))
        return in_shapes, out_shapes

    def _operands(self, xp, lhs, rhs):
        a = xp.swapaxes(lhs, -1, -2) if self.attrs.transpose_a else lhs
        b = xp.swapaxes(rhs, -1, -2) if self.attrs.transpose_b else rhs
        return a, b

    def forward(self, xp, inputs, aux, out, is_train):
        a, b = self._operands(xp, inputs[0], inputs[1])
        xp.matmul(a, b, out=out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        a, b = self._operands(xp, inputs[0], inputs[1])
        dy = out_grads[0]
        dy_t = xp.swapaxes(dy, -1, -2)
        da, db = in_grads
        if da is not None:
            if self.attrs.transpose_a:
                xp.matmul(b, dy_t, out=da)
            else:
                xp.matmul(dy, xp.swapaxes(b, -1, -2), out=da)
        if db is not None:
            if self.attrs.transpose_b:
                xp.matmul(dy_t, a, out=db)
            else:
                xp.matmul(xp.swapaxes(a, -1, -2), dy, out=db)


# ============================================================================ indexing

class _IndexTypes(Op):
    """Outputs take the dtype of the first (data) input; the index input keeps its own."""

    def infer_type(self, in_types, out_types):
        head, outs = super().infer_type(list(in_types[:1]), list(out_types))
        return list(head) + list(in_types[1:]), outs


@dataclasses.dataclass(frozen=True)
class OneHotAttrs:
    depth: int
    on_value: float = 1.0
    off_value: float = 0.0
    dtype: elemwise.DTypeName = "float32"


@register
class OneHotOp(Op):
    """out[..., j] = on_value if int(indices[...]) == j else off_value, j < depth.

    out has indices' shape plus (depth,) and dtype `dtype`; indices outside [0, depth) give a row
    of off_value. No gradient.
    """

    name = "one_hot"
    ARGUMENTS = ("indices",)
    Attrs = OneHotAttrs
    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.depth < 1:
            raise OpParamError("operator one_hot: depth must be >= 1, got %d" % self.attrs.depth)

    def infer_shape(self, in_shapes, out_shapes):
        if in_shapes[0] is not None:
            self.set_out(out_shapes, 0, tuple(in_shapes[0]) + (self.attrs.depth,))
        if out_shapes[0] is not None:
            self.set_in(in_shapes, 0, tuple(out_shapes[0][:-1]))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        return list(in_types), [elemwise.dtype_of(self.attrs.dtype)]

    def forward(self, xp, inputs, aux, out, is_train):
        idx = inputs[0].astype("int64")[..., None]
        hit = idx == xp.arange(self.attrs.depth)
        xp.copyto(out[0], xp.where(hit, self.attrs.on_value, self.attrs.off_value),
                  casting="unsafe")

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        elemwise._zero(in_grads)


def _fix_indices(xp, indices, size: int, mode: str):
    idx = indices.astype("int64")
    if mode == "clip":
        xp.clip(idx, 0, size - 1, out=idx)
    elif mode == "wrap":
        xp.mod(idx, size, out=idx)
    elif bool(((idx < 0) | (idx >= size)).any()):
        # mode='raise' must raise before the op returns, so it reads the check on the host: the
        # one deliberate GPU round trip among the ops ('clip', the default, and 'wrap' have none)
        raise MXNetError("take: indices out of bounds for an axis of size %d (mode='raise')"
                         % size)
    return idx


@dataclasses.dataclass(frozen=True)
class TakeAttrs:
    axis: int = 0
    mode: Literal["clip", "raise", "wrap"] = "clip"


@register
class TakeOp(_IndexTypes):
    """out = a indexed along `axis` by int(indices): shape a[:axis] + indices.shape +
    a[axis+1:]. Out-of-range indices are clipped, wrapped, or rejected per `mode`.

    The gradient of `a` accumulates the head at every index taken (repeats add up); indices get
    none.
    """

    name = "take"
    ARGUMENTS = ("a", "indices")
    Attrs = TakeAttrs
    backward_inputs = (1,)
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        a, idx = in_shapes
        if a is not None and idx is not None:
            axis = _normalize_axis(self.attrs.axis, len(a), a)
            self.set_out(out_shapes, 0, a[:axis] + tuple(idx) + a[axis + 1:])
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        a, indices = inputs
        axis = self.attrs.axis % a.ndim
        idx = _fix_indices(xp, indices, a.shape[axis], self.attrs.mode)
        xp.take(a, idx, axis=axis, out=out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        da, d_indices = in_grads
        if d_indices is not None:
            d_indices.fill(0)
        if da is None:
            return
        indices = inputs[1]
        axis = self.attrs.axis % da.ndim
        idx = _fix_indices(xp, indices, da.shape[axis], self.attrs.mode)
        dy = out_grads[0]
        if axis:
            dy = xp.moveaxis(dy, tuple(range(axis, axis + idx.ndim)), tuple(range(idx.ndim)))
        da.fill(0)
        backend.scatter_add(xp, xp.moveaxis(da, axis, 0), idx, dy)


@dataclasses.dataclass(frozen=True)
class PickAttrs:
    axis: Optional[int] = -1
    keepdims: bool = False
    mode: Literal["clip", "wrap"] = "clip"


@register
class PickOp(_IndexTypes):
    """out[i..., j...] = data[i..., int(index[i..., j...]), j...] along `axis`.

    out and index have data's shape without `axis` (with 1 there when keepdims); out-of-range
    indices are clipped or wrapped per `mode`. data's gradient gets the head at the picked
    positions; index gets none.
    """

    name = "pick"
    aliases = ("choose_element_0index",)  # MXNet's older name of pick along axis -1
    ARGUMENTS = ("data", "index")
    Attrs = PickAttrs
    backward_inputs = (1,)
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.axis is None:
            raise OpParamError("operator pick: axis=None is not supported; give an axis")

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        self.same_shape(in_shapes, out_shapes, in_idx=(1,), out_idx=(0,))
        if data is not None:
            axis = _normalize_axis(self.attrs.axis, len(data), data)
            picked = _reduced_shape(data, (axis,), self.attrs.keepdims)
            self.set_out(out_shapes, 0, picked, "picking along axis %d of %s"
                         % (axis, fmt_shape(data)))
            self.same_shape(in_shapes, out_shapes, in_idx=(1,), out_idx=(0,))
        elif out_shapes[0] is not None:
            out = tuple(out_shapes[0])
            ndim = len(out) if self.attrs.keepdims else len(out) + 1
            axis = self.attrs.axis % ndim
            if self.attrs.keepdims:
                guess = out[:axis] + (None,) + out[axis + 1:]
            else:
                guess = out[:axis] + (None,) + out[axis:]
            self.set_in(in_shapes, 0, guess)
        return in_shapes, out_shapes

    def _layout(self, xp, shape, index):
        axis = self.attrs.axis % len(shape)
        pre, post = 1, 1
        for d in shape[:axis]:
            pre *= d
        for d in shape[axis + 1:]:
            post *= d
        size = shape[axis]
        idx = _fix_indices(xp, index, size, self.attrs.mode).reshape(pre, post)
        rows = xp.arange(pre).reshape(pre, 1)
        cols = xp.arange(post).reshape(1, post)
        return (pre, size, post), (rows, idx, cols)

    def forward(self, xp, inputs, aux, out, is_train):
        data, index = inputs
        shape3, where = self._layout(xp, data.shape, index)
        xp.copyto(out[0], data.reshape(shape3)[where].reshape(out[0].shape))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx, d_index = in_grads
        if d_index is not None:
            d_index.fill(0)
        if dx is None:
            return
        shape3, where = self._layout(xp, dx.shape, inputs[1])
        dx.fill(0)
        backend.scatter_add(xp, dx.reshape(shape3), where,
                             out_grads[0].reshape(shape3[0], shape3[2]))


# ============================================================================ gather / scatter

@register
class GatherNdOp(_IndexTypes):
    """out[y...] = data[indices[0, y...], ..., indices[M-1, y...]]: indices (M, Y...) picks
    along data's first M axes, so out is Y... + data.shape[M:]. The gradient adds the head at
    every picked position (repeats add up); indices get none."""

    name = "gather_nd"
    ARGUMENTS = ("data", "indices")
    backward_inputs = (1,)
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        data, indices = in_shapes
        if data is None or indices is None or None in data or None in indices:
            return in_shapes, out_shapes
        if not indices or indices[0] > len(data):
            raise ShapeError("input 'indices' has shape %s but gather_nd needs (M, ...) with M "
                             "<= %d, the rank of data %s" % (fmt_shape(indices), len(data),
                                                              fmt_shape(data)))
        self.set_out(out_shapes, 0, tuple(indices[1:]) + tuple(data[indices[0]:]))
        return in_shapes, out_shapes

    @staticmethod
    def _where(indices) -> tuple:
        return tuple(indices.astype("int64"))

    def forward(self, xp, inputs, aux, out, is_train):
        data, indices = inputs
        out[0][...] = data[self._where(indices)]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx, d_indices = in_grads
        if d_indices is not None:
            d_indices.fill(0)
        if dx is not None:
            dx.fill(0)
            backend.scatter_add(xp, dx, self._where(inputs[1]), out_grads[0])


@dataclasses.dataclass(frozen=True)
class ScatterNdAttrs:
    shape: tuple[int, ...]


@register
class ScatterNdOp(_IndexTypes):
    """out = zeros(shape) with out[indices[0, y...], ..., indices[M-1, y...]] = data[y...]:
    the inverse of gather_nd (a position named twice keeps one of the values, as in MXNet,
    where the winner is unspecified). data's gradient gathers the head back."""

    name = "scatter_nd"
    ARGUMENTS = ("data", "indices")
    Attrs = ScatterNdAttrs
    backward_inputs = (1,)
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        self.set_out(out_shapes, 0, tuple(self.attrs.shape), "its shape parameter")
        indices = in_shapes[1]
        if indices is not None and None not in indices:
            self.set_in(in_shapes, 0, tuple(indices[1:]) + tuple(self.attrs.shape[indices[0]:]),
                        "indices %s and shape %s" % (fmt_shape(indices), self.attrs.shape))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        data, indices = inputs
        out[0].fill(0)
        out[0][GatherNdOp._where(indices)] = data

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx, d_indices = in_grads
        if d_indices is not None:
            d_indices.fill(0)
        if dx is not None:
            dx[...] = out_grads[0][GatherNdOp._where(inputs[1])]


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
        return tuple(sorted({_normalize_axis(a, len(shape), shape) for a in self.attrs.axes}))

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
