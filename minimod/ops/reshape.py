"""Reshaping operators: the data keeps its values and their order and gets another shape
(Flatten, Reshape, reshape_like, expand_dims, squeeze).

They move no values, so their backward needs only the head gradient and the input's shape,
which the gradient array itself carries (`in_grads[i].shape`): they declare
`backward_inputs = ()` and `backward_outputs = ()` so that the memory planner may free their
inputs right after the forward step. They also declare their output a view of their input
(`views`, `grad_views`), so that a bound graph never copies for them.

Inference runs both ways wherever the math allows it (an output shape plus an input with a
single unknown dim gives that dim), which the legacy MXNet frontends rely on (batch size 0 =
unknown in `mx.rnn` begin states).
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from ..base import OpParamError, ShapeError
from .helpers import axis_index, like_infer_type, prod_or_none
from .registry import Op, Shape, fmt_shape, register, shape_is_known
from .reshape_codes import infer_reshape

__all__ = ["Flatten", "Reshape", "ReshapeLike", "ExpandDims", "Squeeze"]


# ----------------------------------------------------------------------------- helpers

def _fill_one_unknown(shape: tuple, size: int) -> Optional[tuple]:
    """If `shape` has exactly one unknown dim, fill it so that the total size is `size`."""
    unknown = [i for i, d in enumerate(shape) if d is None]
    if len(unknown) != 1:
        return None
    known = prod_or_none(d for d in shape if d is not None)
    if known == 0 or size % known:
        return None
    filled = list(shape)
    filled[unknown[0]] = size // known
    return tuple(filled)


def _reverse_fill_input(op: Op, in_shapes: list, out_shape: Shape) -> None:
    """Size-preserving ops: a known output fills the one unknown dim of the input."""
    if in_shapes[0] is None or not shape_is_known(out_shape):
        return
    filled = _fill_one_unknown(in_shapes[0], prod_or_none(out_shape))
    if filled is not None:
        op.set_in(in_shapes, 0, filled, "output %s" % fmt_shape(out_shape))


def _check_size(op: Op, in_shape: Shape, out_shape: Shape) -> None:
    if shape_is_known(in_shape) and shape_is_known(out_shape) \
            and prod_or_none(in_shape) != prod_or_none(out_shape):
        raise ShapeError("input '%s' has shape %s (size %d) but the output %s has size %d"
                         % (op.arguments()[0], fmt_shape(in_shape), prod_or_none(in_shape),
                            fmt_shape(out_shape), prod_or_none(out_shape)))


class _Relabel(Op):
    """Base of ops that only give data another shape (Flatten, Reshape, expand_dims ...).

    Forward copies the input into the output under the output's shape; backward reshapes the
    head gradient back. Neither reads any input or output value. The planner lets the output
    (the gradient) share the input's (the head gradient's) storage wherever both are planned,
    and the executor then skips the step: a reshape costs nothing.
    """

    inplace = ((0, 0),)
    views = ((0, 0),)
    grad_views = ((0, 0),)
    backward_inputs = ()
    backward_outputs = ()

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0].reshape(out[0].shape))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            xp.copyto(in_grads[0], out_grads[0].reshape(in_grads[0].shape))


@register
class Flatten(_Relabel):
    """Collapse every axis after the first: (d0, d1, ..., dk) -> (d0, d1*...*dk).

    A 1-D input (n,) gives (n, 1). Backward reshapes the head gradient to the input shape.
    (Its batch-last form is `minimod.kernels.layout.BatchLastFlatten`.)
    """

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "Flatten"
    aliases = ("flatten",)

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is not None:
            if len(data) == 0:
                raise ShapeError("input 'data' is a scalar (); Flatten needs rank >= 1")
            self.set_out(out_shapes, 0, (data[0], prod_or_none(data[1:])))
        out = out_shapes[0]
        if out is not None:
            if len(out) != 2:
                raise ShapeError("output 'output' has shape %s but Flatten gives rank 2"
                                 % fmt_shape(out))
            if data is not None:
                self.set_in(in_shapes, 0, (out[0],) + tuple(data[1:]), "output %s"
                            % fmt_shape(out))
                rest = _fill_one_unknown(in_shapes[0][1:], out[1]) if out[1] is not None \
                    else None
                if rest is not None:
                    self.set_in(in_shapes, 0, (in_shapes[0][0],) + rest)
        return in_shapes, out_shapes


@register
class Reshape(_Relabel):
    """Reshape without moving data; the output has the input's size.

    `shape` uses MXNet's special codes (see `infer_reshape`); the deprecated `target_shape`
    (0 = infer, `keep_highest` keeps dim 0) is honoured when `shape` is empty. With neither, the
    output shape must come from elsewhere (backward inference). A known output and an input with
    one unknown dim give that dim.
    """

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "Reshape"
    aliases = ("reshape",)

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        shape: tuple[int, ...] = ()
        reverse: bool = False
        target_shape: tuple[int, ...] = ()
        keep_highest: bool = False

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        codes = a.shape
        if not codes and a.target_shape:
            legacy = [-1 if d == 0 else d for d in a.target_shape]
            if a.keep_highest:
                legacy[0] = 0
            codes = tuple(legacy)
        for c in codes:
            if c is None or c < -4:
                raise OpParamError("operator Reshape: shape=%s has an invalid code %r"
                                   % (a.shape, c))
        self.codes = tuple(codes)
        self.reverse = a.reverse
        # all positive codes: the output is known even when the input is not
        self.fixed = self.codes if self.codes and all(c > 0 for c in self.codes) else None

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if self.codes:
            if data is not None:
                oshape = infer_reshape(self.codes, data, self.reverse)
                _check_size(self, data, oshape)
                self.set_out(out_shapes, 0, oshape)
            elif self.fixed is not None:
                self.set_out(out_shapes, 0, self.fixed)
        _reverse_fill_input(self, in_shapes, out_shapes[0])
        _check_size(self, in_shapes[0], out_shapes[0])
        return in_shapes, out_shapes


@register
class ReshapeLike(_Relabel):
    """Reshape `lhs` to (part of) the shape of `rhs`.

    out.shape = lhs.shape[:lhs_begin] + rhs.shape[rhs_begin:rhs_end] + lhs.shape[lhs_end:]
    (None bounds mean the whole range; negative bounds count from the end). Sizes must match.
    `rhs` only lends its shape: its gradient is zero and its dtype is free (out has lhs's).
    """

    name = "reshape_like"
    ARGUMENTS = ("lhs", "rhs")

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        lhs_begin: Optional[int] = None
        lhs_end: Optional[int] = None
        rhs_begin: Optional[int] = None
        rhs_end: Optional[int] = None

    @staticmethod
    def _range(begin, end, ndim, side):
        b = 0 if begin is None else begin + ndim if begin < 0 else begin
        e = ndim if end is None else end + ndim if end < 0 else end
        if not 0 <= b <= e <= ndim:
            raise ShapeError("reshape_like: %s_begin/%s_end = %s/%s are out of range for rank %d"
                             % (side, side, begin, end, ndim))
        return b, e

    def infer_type(self, in_types, out_types):
        return like_infer_type(self, in_types, out_types)

    def infer_shape(self, in_shapes, out_shapes):
        lhs, rhs = in_shapes
        a = self.attrs
        if lhs is not None and rhs is not None:
            lb, le = self._range(a.lhs_begin, a.lhs_end, len(lhs), "lhs")
            rb, re_ = self._range(a.rhs_begin, a.rhs_end, len(rhs), "rhs")
            oshape = tuple(lhs[:lb]) + tuple(rhs[rb:re_]) + tuple(lhs[le:])
            _check_size(self, lhs, oshape)
            self.set_out(out_shapes, 0, oshape)
        _reverse_fill_input(self, in_shapes, out_shapes[0])
        return in_shapes, out_shapes

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        super().backward(xp, out_grads, inputs, outputs, in_grads, aux)
        if in_grads[1] is not None:
            in_grads[1].fill(0)


@register
class ExpandDims(_Relabel):
    """Insert a size-1 axis at position `axis` (in [-ndim-1, ndim])."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "expand_dims"

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        axis: int

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is not None:
            ax = axis_index(self.attrs.axis, len(data), extra=1)
            self.set_out(out_shapes, 0, tuple(data[:ax]) + (1,) + tuple(data[ax:]))
        out = out_shapes[0]
        if out is not None:
            if len(out) == 0:
                raise ShapeError("output 'output' has shape () but expand_dims gives rank >= 1")
            ax = axis_index(self.attrs.axis, len(out) - 1, extra=1)
            self.set_out(out_shapes, 0, tuple(out[:ax]) + (1,) + tuple(out[ax + 1:]))
            self.set_in(in_shapes, 0, tuple(out[:ax]) + tuple(out[ax + 1:]),
                        "output %s" % fmt_shape(out))
        return in_shapes, out_shapes


@register
class Squeeze(_Relabel):
    """Remove size-1 axes: all of them (axis=None) or the listed ones, which must have size 1.

    Removing every axis gives shape (1,), as in MXNet.
    """

    name = "squeeze"

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        axis: Optional[tuple[int, ...]] = None

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        axis = self.attrs.axis
        if axis is None:
            if any(d is None for d in data):
                return in_shapes, out_shapes
            drop = {i for i, d in enumerate(data) if d == 1}
        else:
            drop = {axis_index(a, len(data)) for a in axis}
            if len(drop) != len(axis):
                raise ShapeError("squeeze: axis=%s names an axis twice" % (axis,))
            for i in drop:
                if data[i] not in (None, 1):
                    raise ShapeError("input 'data' has shape %s but squeeze axis %d needs "
                                     "size 1" % (fmt_shape(data), i))
            self.set_in(in_shapes, 0, tuple(1 if i in drop else d for i, d in enumerate(data)))
            data = in_shapes[0]
        kept = tuple(d for i, d in enumerate(data) if i not in drop)
        self.set_out(out_shapes, 0, kept or (1,))
        return in_shapes, out_shapes
