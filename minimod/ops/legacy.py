"""MXNet's legacy index operators and the private slice-assignment and helper operators that
its frontends and older scripts call: batch_take, fill_element_0index, _onehot_encode (behind
`mx.nd.onehot_encode`), _slice_assign (alias _crop_assign), _slice_assign_scalar (alias
_crop_assign_scalar), _identity_with_attr_like_rhs and _square_sum.

(`choose_element_0index` is not here: in MXNet 1.9.1 it is another name of `pick`.)

Index inputs hold integers, as floats or ints; floats are truncated toward zero. Out-of-range
indices are clipped by batch_take (as MXNet does) and write nothing in fill_element_0index and
_onehot_encode (MXNet leaves the one-hot row empty, and writes past its row in
fill_element_0index, which is not copied).

MXNet registers no gradient for batch_take, fill_element_0index, _onehot_encode and the two
slice assignments ("non-differentiable"): their `differentiable` is False and their backward
raises saying so. _identity_with_attr_like_rhs passes the head gradient to lhs and 0 to rhs;
_square_sum's gradient is 2 x times the head's.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar, Optional

from ..base import DTypeError, GraphError, OpParamError, ShapeError
from .helpers import dtype_of
from .reductions import _Reduce
from .registry import Op, fmt_shape, register

__all__ = [
    "BatchTake", "FillElement0Index", "OnehotEncode", "SliceAssign", "SliceAssignScalar",
    "IdentityWithAttrLikeRhs", "SquareSum",
]


class _NoGradient(Op):
    """An op MXNet registers without a gradient: asking for one is an error."""

    differentiable: ClassVar[bool] = False
    backward_inputs = ()
    backward_outputs = ()

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        raise GraphError("operator %s is non-differentiable: MXNet 1.9.1 registers no "
                         "gradient for it (stop the gradient before it with BlockGrad)"
                         % self.name)


# ----------------------------------------------------------------------------- index ops

@register
class BatchTake(_NoGradient):
    """out[i] = a[i, indices[i]] for `a` seen as rows of its last axis, (R, M), and
    `indices` of R elements (any shape: the output takes it). Indices are int32 (MXNet's type
    rule) and are clipped to [0, M-1]."""

    name = "batch_take"
    ARGUMENTS = ("a", "indices")

    def infer_shape(self, in_shapes, out_shapes):
        data, index = in_shapes
        self.set_out(out_shapes, 0, index)
        index = in_shapes[1] = out_shapes[0]
        if data is not None and len(data) < 1:
            raise ShapeError("batch_take: input 'a' must have at least one axis, got %s"
                             % fmt_shape(data))
        if data is not None and index is not None and None not in data + index:
            rows = 1
            for d in data[:-1]:
                rows *= d
            size = 1
            for d in index:
                size *= d
            if rows != size:
                raise ShapeError("batch_take: input 'indices' %s has %d elements but input "
                                 "'a' %s has %d rows (every axis but the last)"
                                 % (fmt_shape(index), size, fmt_shape(data), rows))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        int32 = dtype_of("int32")
        if in_types[1] is not None and in_types[1] != int32:
            raise DTypeError("batch_take: input 'indices' must be int32 (MXNet's type rule), "
                             "got %s" % dtype_of(in_types[1]).name)
        data = in_types[0] if in_types[0] is not None else out_types[0]
        return [data, int32], [data]

    def forward(self, xp, inputs, aux, out, is_train):
        data, index = inputs
        width = data.shape[-1]
        rows = data.reshape(-1, width)
        cols = xp.clip(index.reshape(-1).astype("int64"), 0, width - 1)
        xp.copyto(out[0].reshape(-1), rows[xp.arange(rows.shape[0]), cols])


def _row_targets(xp, index, width: int):
    """(row numbers, column numbers, whether each column lies in [0, width)) for one index per
    row, the index truncated toward zero."""
    cols = index.reshape(-1).astype("int64")
    inside = (cols >= 0) & (cols < width)
    return xp.arange(cols.shape[0]), xp.where(inside, cols, 0), inside


@register
class FillElement0Index(_NoGradient):
    """out = lhs with out[i, rhs[i]] = mhs[i] for each row i of the 2-D lhs (N, M); mhs and
    rhs hold N values. An index outside [0, M) leaves its row as it is."""

    name = "fill_element_0index"
    ARGUMENTS = ("lhs", "mhs", "rhs")

    def infer_shape(self, in_shapes, out_shapes):
        self.set_out(out_shapes, 0, in_shapes[0])
        self.set_in(in_shapes, 0, out_shapes[0])
        data = in_shapes[0]
        if data is not None:
            if len(data) != 2:
                raise ShapeError("fill_element_0index: input 'lhs' must be 2-D, got %s"
                                 % fmt_shape(data))
            for i in (1, 2):
                self.set_in(in_shapes, i, (data[0],), "lhs %s" % fmt_shape(data))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        # lhs, mhs and the output share a type; the index keeps its own
        head, outs = Op.infer_type(self, list(in_types[:2]), list(out_types))
        return head + [in_types[2]], outs

    def forward(self, xp, inputs, aux, out, is_train):
        lhs, values, index = inputs
        xp.copyto(out[0], lhs)
        rows, cols, inside = _row_targets(xp, index, lhs.shape[1])
        current = out[0][rows, cols]
        out[0][rows, cols] = xp.where(inside, values.reshape(-1).astype(lhs.dtype), current)


@register
class OnehotEncode(_NoGradient):
    """out = one-hot rows: out[i, lhs[i]] = 1, every other entry 0, shaped like the 2-D rhs
    (N, C), whose values are not read (`mx.nd.onehot_encode(indices, out)` passes `out` as
    rhs). An index outside [0, C) gives a row of zeros."""

    name = "_onehot_encode"
    ARGUMENTS = ("lhs", "rhs")

    def infer_shape(self, in_shapes, out_shapes):
        self.set_out(out_shapes, 0, in_shapes[1])
        self.set_in(in_shapes, 1, out_shapes[0])
        like = in_shapes[1]
        if like is not None:
            if len(like) != 2:
                raise ShapeError("_onehot_encode: input 'rhs' must be 2-D, got %s"
                                 % fmt_shape(like))
            self.set_in(in_shapes, 0, (like[0],), "rhs %s" % fmt_shape(like))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        dtype = in_types[1] if in_types[1] is not None else out_types[0]
        return [in_types[0], dtype], [dtype]

    def forward(self, xp, inputs, aux, out, is_train):
        y = out[0]
        y.fill(0)
        rows, cols, inside = _row_targets(xp, inputs[0], y.shape[1])
        y[rows, cols] = inside


# ----------------------------------------------------------------------------- slice assign

def _slice_index(op: str, begin: tuple, end: tuple, step: tuple) -> tuple:
    """The Python slices of MXNet's (begin, end, step) over the leading axes: None takes
    Python's default, out-of-range bounds are clipped, as in `slice`."""
    if len(begin) != len(end):
        raise OpParamError("operator %s: begin=%s and end=%s differ in length"
                           % (op, begin, end))
    if step and len(step) != len(begin):
        raise OpParamError("operator %s: step=%s must be empty or as long as begin=%s"
                           % (op, step, begin))
    steps = step or (None,) * len(begin)
    if 0 in steps:
        raise OpParamError("operator %s: step=%s has a zero step" % (op, step))
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, steps))


def _sliced_shape(op, index: tuple, shape) -> Optional[tuple]:
    if shape is None:
        return None
    if len(shape) < len(index):
        raise ShapeError("%s: input %s has fewer axes than begin has entries (%d)"
                         % (op, fmt_shape(shape), len(index)))
    head = tuple(None if d is None else len(range(*s.indices(d))) for s, d in zip(index, shape))
    return head + tuple(shape[len(index):])


@register
class SliceAssign(_NoGradient):
    """out = lhs with out[b0:e0:s0, b1:e1:s1, ...] = rhs; rhs has the slice's shape. With
    out=lhs (how MXNet's NDArray frontend calls it) this assigns into lhs."""

    name = "_slice_assign"
    aliases = ("_crop_assign",)
    ARGUMENTS = ("lhs", "rhs")

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        begin: tuple[Optional[int], ...]
        end: tuple[Optional[int], ...]
        step: tuple[Optional[int], ...] = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        self._index = _slice_index(self.name, a.begin, a.end, a.step)

    def infer_shape(self, in_shapes, out_shapes):
        self.same_shape(in_shapes, out_shapes, in_idx=(0,))
        part = _sliced_shape(self.name, self._index, in_shapes[0])
        if part is not None:
            self.set_in(in_shapes, 1, part, "the slice of lhs %s" % fmt_shape(in_shapes[0]))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0])
        out[0][self._index] = inputs[1]


@register
class SliceAssignScalar(_NoGradient):
    """out = data with out[b0:e0:s0, ...] = scalar (cast to data's type)."""

    name = "_slice_assign_scalar"
    aliases = ("_crop_assign_scalar",)
    PARAM_ORDER = ("scalar", "begin", "end", "step")

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        begin: tuple[Optional[int], ...]
        end: tuple[Optional[int], ...]
        step: tuple[Optional[int], ...] = ()
        scalar: float = 0.0

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        self._index = _slice_index(self.name, a.begin, a.end, a.step)

    def infer_shape(self, in_shapes, out_shapes):
        self.same_shape(in_shapes, out_shapes)
        _sliced_shape(self.name, self._index, in_shapes[0])
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0])
        out[0][self._index] = self.attrs.scalar


# ----------------------------------------------------------------------------- helpers

@register
class IdentityWithAttrLikeRhs(Op):
    """out = lhs; lhs, rhs and out share one shape and type, so a shape known on any of them
    reaches the others (how MXNet's frontends pass a weight's shape backwards through a
    broadcast). The head gradient goes to lhs; rhs gets 0."""

    name = "_identity_with_attr_like_rhs"
    ARGUMENTS = ("lhs", "rhs")
    backward_inputs = ()
    backward_outputs = ()

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            xp.copyto(in_grads[0], out_grads[0])
        if in_grads[1] is not None:
            in_grads[1].fill(0)


@register
class SquareSum(_Reduce):
    """out = sum of data**2 over the reduced axes (axis, keepdims, exclude as `sum`); the
    gradient is 2 data times the head's. MXNet computes it for row-sparse data only; minimod
    has dense arrays, so it takes every array."""

    name = "_square_sum"
    backward_inputs = (0,)

    def reduce(self, xp, x, axes):
        return (x * x).sum(axis=axes, keepdims=True)

    def grad(self, xp, dy, x, y, dx):
        xp.multiply(x, dy, out=dx)
        dx *= 2
