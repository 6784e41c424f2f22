"""General-purpose contrib operators: isinf, isnan, isfinite, allclose, div_sqrt_dim, quadratic,
index_copy, boolean_mask and index_array (arange_like lives with the other ranges in
minimod/ops/elemwise.py).

`mx.nd.contrib.isinf` / `isnan` / `isfinite` are Python functions in MXNet 1.9.1 (compositions of
abs and comparisons, giving 1/0 in the input's dtype), not registered operators; minimod
registers them as `_contrib_isinf` ... so that the contrib namespace serves them like the others.
A graph holding one cannot be loaded by MXNet, which never puts them in a graph.

`boolean_mask` is the one operator here whose output shape depends on input values (how many
index entries are non-zero). Shape inference leaves that dim unknown, as MXNet's does, so it
cannot be part of a bound graph, whose memory plan needs every shape; run imperatively, the op's
`forward_dynamic` computes the result and its shape together.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

from ...base import DTypeError, OpParamError, ShapeError
from ..helpers import cast_into, dtype_of
from ..registry import Op, fmt_shape, register

__all__ = ["IsInf", "IsNaN", "IsFinite", "AllClose", "DivSqrtDim", "Quadratic", "IndexCopy",
           "BooleanMask", "IndexArray"]


def _zero(grads) -> None:
    for g in grads:
        if g is not None:
            g.fill(0)


def _axis(op: Op, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ShapeError("%s: axis=%d is out of range for an input of rank %d"
                         % (op.name, axis, ndim))
    return axis % ndim


def _float_work(xp, x):
    """x itself when it is floating point, else x as float64: MXNet computes the maths of its
    integer inputs in floating point and truncates the result into the output."""
    return x if x.dtype.kind == "f" else x.astype("float64")


# ----------------------------------------------------------------------------- predicates

class _Predicate(Op):
    """out = 1 where the test holds, else 0, in data's dtype; no gradient."""

    no_gradient = True
    backward_inputs = ()
    backward_outputs = ()

    def _test(self, xp, x):
        raise NotImplementedError

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], self._test(xp, inputs[0]), casting="unsafe")

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        _zero(in_grads)


@register
class IsInf(_Predicate):
    """out = 1 where data is +inf or -inf."""

    name = "_contrib_isinf"

    def _test(self, xp, x):
        return xp.isinf(x)


@register
class IsNaN(_Predicate):
    """out = 1 where data is NaN."""

    name = "_contrib_isnan"

    def _test(self, xp, x):
        return xp.isnan(x)


@register
class IsFinite(_Predicate):
    """out = 1 where data is neither infinite nor NaN."""

    name = "_contrib_isfinite"

    def _test(self, xp, x):
        return xp.isfinite(x)


# ----------------------------------------------------------------------------- allclose

@dataclasses.dataclass(frozen=True)
class AllCloseAttrs:
    rtol: float = 1e-5
    atol: float = 1e-8
    equal_nan: bool = True


@register
class AllClose(Op):
    """out = 1 (uint8, shape ()) when |a - b| <= atol + rtol |b| for every element pair, else 0.
    Equal values (infinities included) are close; with equal_nan two NaNs are too. a and b
    have one shape and one dtype; no gradient."""

    name = "_contrib_allclose"
    Attrs = AllCloseAttrs
    ARGUMENTS = ("a", "b")
    no_gradient = True
    backward_inputs = ()
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        self.same_shape(in_shapes, [])
        self.set_out(out_shapes, 0, ())
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        in_types, _ = Op.infer_type(self, in_types, [])
        return in_types, [dtype_of("uint8")]

    def forward(self, xp, inputs, aux, out, is_train):
        a, b = (_float_work(xp, x) for x in inputs)
        p = self.attrs
        # non-finite values are close only to equal ones; zeroing them first keeps inf - inf
        # (NaN, and a warning) out of the difference
        finite = xp.isfinite(a) & xp.isfinite(b)
        a_f, b_f = xp.where(finite, a, 0), xp.where(finite, b, 0)
        close = (a == b) | (finite & (xp.abs(a_f - b_f) <= p.atol + p.rtol * xp.abs(b_f)))
        if p.equal_nan:
            close |= xp.isnan(a) & xp.isnan(b)
        xp.copyto(out[0], xp.all(close), casting="unsafe")

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        _zero(in_grads)


# ----------------------------------------------------------------------------- scalings

@register
class DivSqrtDim(Op):
    """out = data / sqrt(d), d = data.shape[-1] (the attention-score scaling); gradient
    head / sqrt(d)."""

    name = "_contrib_div_sqrt_dim"
    backward_inputs = ()
    backward_outputs = ()
    inplace = ((0, 0),)

    def _scale(self, x):
        return x.dtype.type(math.sqrt(x.shape[-1]) if x.ndim else 1.0)

    def forward(self, xp, inputs, aux, out, is_train):
        xp.divide(inputs[0], self._scale(inputs[0]), out=out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            xp.divide(out_grads[0], self._scale(out_grads[0]), out=in_grads[0])


@dataclasses.dataclass(frozen=True)
class QuadraticAttrs:
    a: float = 0.0
    b: float = 0.0
    c: float = 0.0


@register
class Quadratic(Op):
    """out = a data^2 + b data + c elementwise (integer data: computed in floating point and
    truncated); gradient head (2 a data + b)."""

    name = "_contrib_quadratic"
    Attrs = QuadraticAttrs
    backward_inputs = (0,)
    backward_outputs = ()

    def forward(self, xp, inputs, aux, out, is_train):
        x, p = _float_work(xp, inputs[0]), self.attrs
        cast_into(xp, out[0], p.a * x * x + p.b * x + p.c)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            x, p = _float_work(xp, inputs[0]), self.attrs
            cast_into(xp, in_grads[0], out_grads[0] * (2 * p.a * x + p.b))


# ----------------------------------------------------------------------------- index_copy

def _rows(xp, index):
    """An index vector of any dtype as int64 rows (fractions truncated, as C's cast does)."""
    return index.astype("int64")


@register
class IndexCopy(Op):
    """out = old_tensor with row index_vector[i] replaced by new_tensor[i]: old_tensor (M, ...),
    index_vector (K,), new_tensor (K, ...) with K <= M (a repeated index keeps the last row
    written). Gradients: old_tensor gets the head with the replaced rows zeroed, new_tensor the
    head's rows at the index, index_vector zeros. Rows outside [0, M) are undefined behaviour
    in MXNet (it crashes); here NumPy raises IndexError and negative rows count from the end."""

    name = "_contrib_index_copy"
    ARGUMENTS = ("old_tensor", "index_vector", "new_tensor")
    backward_outputs = ()
    backward_inputs = (1,)

    def infer_shape(self, in_shapes, out_shapes):
        index = in_shapes[1]
        if index is not None and len(index) != 1:
            raise ShapeError("%s: input 'index_vector' has shape %s but must be 1-D"
                             % (self.name, fmt_shape(index)))
        self.same_shape(in_shapes, out_shapes, in_idx=[0], out_idx=[0])
        old, new = in_shapes[0], in_shapes[2]
        if new is not None:
            self.set_in(in_shapes, 1, (new[0],), "new_tensor %s" % fmt_shape(new))
        elif old is not None and index is not None:
            self.set_in(in_shapes, 2, (index[0],) + tuple(old[1:]),
                        "old_tensor %s and index_vector %s" % (fmt_shape(old),
                                                               fmt_shape(index)))
        old, new = in_shapes[0], in_shapes[2]
        if old is not None and new is not None:
            self._check(old, new)
        return in_shapes, out_shapes

    def _check(self, old, new):
        bad_rank = len(old) != len(new)
        bad_dims = not bad_rank and any(
            a is not None and b is not None and a != b for a, b in zip(old[1:], new[1:]))
        bad_rows = not bad_rank and None not in (old[0], new[0]) and new[0] > old[0]
        if bad_rank or bad_dims or bad_rows:
            raise ShapeError("%s: input 'new_tensor' %s must have the trailing dims of "
                             "'old_tensor' %s and at most its rows"
                             % (self.name, fmt_shape(new), fmt_shape(old)))

    def infer_type(self, in_types, out_types):
        old, index, new = in_types
        if old is not None and new is not None and old != new:
            raise DTypeError("%s: input 'new_tensor' has dtype %s but 'old_tensor' has %s"
                             % (self.name, new, old))
        known = next((t for t in (old, new, out_types[0]) if t is not None), None)
        return [known, index, known], [known]

    def forward(self, xp, inputs, aux, out, is_train):
        old, index, new = inputs
        if out[0] is not old:
            xp.copyto(out[0], old)
        out[0][_rows(xp, index)] = new

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g, rows = out_grads[0], _rows(xp, inputs[1])
        d_old, d_index, d_new = in_grads
        if d_old is not None:
            xp.copyto(d_old, g)
            d_old[rows] = 0
        if d_new is not None:
            d_new[...] = g[rows]
        _zero([d_index])


# ----------------------------------------------------------------------------- boolean_mask

@dataclasses.dataclass(frozen=True)
class BooleanMaskAttrs:
    axis: int = 0


@register
class BooleanMask(Op):
    """out = the rows data[i] (along axis 0) whose index[i] is non-zero, in order: data (N, ...),
    index (N,) of any dtype -> (count of non-zero entries, ...). Gradient: the head's rows go
    back to the selected rows of data, the others get 0; index gets 0.

    The output's first dim depends on index's values: shape inference leaves it unknown, and
    `forward_dynamic` (used by imperative calls) returns the result with its shape.
    """

    name = "_contrib_boolean_mask"
    Attrs = BooleanMaskAttrs
    ARGUMENTS = ("data", "index")
    backward_inputs = (1,)
    backward_outputs = ()
    #: the output's shape depends on the values of an input
    dynamic_shape = True

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.axis != 0:
            raise OpParamError("operator %s: axis=%d is not supported (MXNet 1.9.1 masks "
                               "axis 0 only)" % (self.name, self.attrs.axis))

    def infer_shape(self, in_shapes, out_shapes):
        data, index = in_shapes
        if index is not None and len(index) != 1:
            raise ShapeError("%s: input 'index' has shape %s but must be 1-D"
                             % (self.name, fmt_shape(index)))
        if data is not None:
            if len(data) < 1:
                raise ShapeError("%s: input 'data' must have at least one axis" % self.name)
            self.set_in(in_shapes, 1, (data[0],), "data %s" % fmt_shape(data))
            self.set_out(out_shapes, 0, (None,) + tuple(data[1:]))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        head, out_types = Op.infer_type(self, in_types[:1], out_types)
        return list(head) + list(in_types[1:]), out_types

    def forward_dynamic(self, xp, inputs) -> list:
        """The outputs, allocated here: their shape is known only once index is read."""
        data, index = inputs
        self.infer_shape([data.shape, index.shape], [None])  # a mismatch is a ShapeError
        return [data[index != 0]]

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], self.forward_dynamic(xp, inputs)[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        d_data, d_index = in_grads
        if d_data is not None:
            d_data.fill(0)
            d_data[inputs[1] != 0] = out_grads[0]
        _zero([d_index])


# ----------------------------------------------------------------------------- index tables

@dataclasses.dataclass(frozen=True)
class IndexArrayAttrs:
    axes: Optional[tuple[int, ...]] = None


@register
class IndexArray(Op):
    """out[i_1, ..., i_n, j] = i_{axes[j]} (int64): data (d_1, ..., d_n) -> (d_1, ..., d_n, m),
    m = len(axes), or n with every axis in order when axes is None. Only data's shape is read;
    gradient 0."""

    name = "_contrib_index_array"
    Attrs = IndexArrayAttrs
    no_gradient = True
    backward_inputs = ()
    backward_outputs = ()

    def _axes(self, ndim: int) -> tuple:
        if self.attrs.axes is None:
            return tuple(range(ndim))
        return tuple(_axis(self, a, ndim) for a in self.attrs.axes)

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is not None:
            self.set_out(out_shapes, 0, tuple(data) + (len(self._axes(len(data))),))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        return list(in_types), [dtype_of("int64")]

    def forward(self, xp, inputs, aux, out, is_train):
        shape = inputs[0].shape
        axes = self._axes(len(shape))
        if not axes or not out[0].size:
            return
        grids = xp.indices(shape, dtype="int64")
        out[0][...] = xp.moveaxis(grids[list(axes)], 0, -1)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        _zero(in_grads)
