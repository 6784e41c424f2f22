"""Operators that make an array bigger by repeating its values: broadcast_to, broadcast_axis
and broadcast_like (size-1 axes stretched), tile (the whole array repeated), repeat (each
element repeated) and Pad (a border added, constant or copied from the edge).

Their gradients fold the head gradient back onto the values that were copied: a sum over the
copies. None of them reads an input value in backward, only the gradient arrays' shapes, so
they declare `backward_inputs = ()` and the planner may free their inputs after the forward.
"""
from __future__ import annotations

import dataclasses
from typing import Literal, Optional

from ..base import OpParamError, ShapeError
from ..shape_semantics import is_np_shape
from .helpers import axis_index, broadcast_shape, like_infer_type, prod_or_none, reduce_to_shape
from .registry import Op, fmt_shape, register

__all__ = ["BroadcastToOp", "BroadcastAxisOp", "BroadcastLikeOp", "Tile", "Repeat", "Pad"]


# ----------------------------------------------------------------------------- broadcast

@dataclasses.dataclass(frozen=True)
class BroadcastToAttrs:
    shape: tuple[int, ...] = ()


class _BroadcastUnary(Op):
    """Base of ops that broadcast `data` to a bigger shape; the gradient sums back."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    backward_inputs = ()
    backward_outputs = ()

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            reduce_to_shape(xp, out_grads[0], in_grads[0].shape, in_grads[0])


@register
class BroadcastToOp(_BroadcastUnary):
    """out = data broadcast to `shape` (same rank; 0 in `shape` keeps data's dim; data's dims
    must be 1 or equal to the target)."""

    name = "broadcast_to"
    Attrs = BroadcastToAttrs

    def infer_shape(self, in_shapes, out_shapes):
        target = self.attrs.shape
        data = in_shapes[0]
        if data is None:
            if target and 0 not in target:
                self.set_out(out_shapes, 0, target)
            return in_shapes, out_shapes
        if len(data) != len(target):
            raise ShapeError("input 'data' of shape %s cannot be broadcast to %s: ranks differ"
                             % (fmt_shape(data), fmt_shape(target)))
        shape = []
        for d, t in zip(data, target):
            if t == 0:
                shape.append(d)
            elif d is None or d == 1 or d == t:
                shape.append(t)
            else:
                raise ShapeError("input 'data' of shape %s cannot be broadcast to %s"
                                 % (fmt_shape(data), fmt_shape(target)))
        self.set_out(out_shapes, 0, tuple(shape))
        return in_shapes, out_shapes


@dataclasses.dataclass(frozen=True)
class BroadcastAxisAttrs:
    axis: tuple[int, ...] = ()
    size: tuple[int, ...] = ()


@register
class BroadcastAxisOp(_BroadcastUnary):
    """out = data repeated along each `axis[i]` (a dim of size 1) to `size[i]`.

    Negative axes count from the end (MXNet 1.9.1 rejects them).
    """

    name = "broadcast_axis"
    aliases = ("broadcast_axes",)
    Attrs = BroadcastAxisAttrs

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if len(self.attrs.axis) != len(self.attrs.size):
            raise OpParamError("operator broadcast_axis: axis %s and size %s differ in length"
                               % (self.attrs.axis, self.attrs.size))

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        shape = list(data)
        for axis, size in zip(self.attrs.axis, self.attrs.size):
            if not -len(shape) <= axis < len(shape):
                raise ShapeError("axis %d is out of range for input 'data' of shape %s"
                                 % (axis, fmt_shape(data)))
            if shape[axis] not in (None, 1):
                raise ShapeError("input 'data' has shape %s but broadcast axis %d must have "
                                 "size 1" % (fmt_shape(data), axis))
            shape[axis] = size
        self.set_out(out_shapes, 0, tuple(shape))
        return in_shapes, out_shapes


@dataclasses.dataclass(frozen=True)
class BroadcastLikeAttrs:
    lhs_axes: Optional[tuple[int, ...]] = None
    rhs_axes: Optional[tuple[int, ...]] = None


@register
class BroadcastLikeOp(Op):
    """out = lhs broadcast to rhs's shape (or, with lhs_axes/rhs_axes, lhs with the dims at
    lhs_axes replaced by rhs's dims at rhs_axes). rhs only lends its shape: zero gradient, and
    it may have any dtype (out has lhs's)."""

    name = "broadcast_like"
    ARGUMENTS = ("lhs", "rhs")
    Attrs = BroadcastLikeAttrs
    backward_inputs = ()
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        la, ra = self.attrs.lhs_axes, self.attrs.rhs_axes
        if (la is None) != (ra is None) or (la is not None and len(la) != len(ra)):
            raise OpParamError("operator broadcast_like: lhs_axes %s and rhs_axes %s must both "
                               "be given with one length" % (la, ra))
        if la is not None and not la:
            raise OpParamError("operator broadcast_like: lhs_axes and rhs_axes are empty; give "
                               "at least one axis each, or neither")

    def infer_type(self, in_types, out_types):
        return like_infer_type(self, in_types, out_types)

    def infer_shape(self, in_shapes, out_shapes):
        lhs, rhs = in_shapes
        if lhs is None or rhs is None:
            return in_shapes, out_shapes
        if self.attrs.lhs_axes is None:
            if len(lhs) != len(rhs):
                raise ShapeError("input 'lhs' has shape %s but rhs has %s: ranks differ"
                                 % (fmt_shape(lhs), fmt_shape(rhs)))
            target = rhs
        else:
            target = list(lhs)
            for la, ra in zip(self.attrs.lhs_axes, self.attrs.rhs_axes):
                target[la] = rhs[ra]
        shape = broadcast_shape(lhs, tuple(target), "lhs and rhs")
        self.set_out(out_shapes, 0, shape)
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            reduce_to_shape(xp, out_grads[0], in_grads[0].shape, in_grads[0])
        if in_grads[1] is not None:
            in_grads[1].fill(0)


# ----------------------------------------------------------------------------- tile / repeat

def check_reps(reps) -> None:
    """tile's reps: at least 1 each; a 0 (an empty result) only under NumPy shape semantics,
    where 0 is a size, as MXNet decides."""
    low = 0 if is_np_shape() else 1
    if any(r is None or r < low for r in reps):
        raise OpParamError("operator tile: reps=%s must be %s" % (
            tuple(reps), "non-negative" if low == 0 else
            "positive (0 only under mx.np_shape(True), where zero-size arrays exist)"))


@register
class Tile(Op):
    """Repeat the whole array `reps[i]` times along axis i (NumPy's tile).

    When reps and data differ in rank, the shorter one is padded with leading 1s. Backward sums
    the head gradient over the copies.
    """

    name = "tile"
    backward_inputs = ()
    backward_outputs = ()

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        reps: tuple[int, ...]

    def __init__(self, attrs=None):
        super().__init__(attrs)
        check_reps(self.attrs.reps)

    def _aligned(self, ndim: int) -> tuple:
        reps = self.attrs.reps
        rank = max(ndim, len(reps))
        return rank, (1,) * (rank - len(reps)) + tuple(reps)

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        rank, reps = self._aligned(len(data))
        padded = (1,) * (rank - len(data)) + tuple(data)
        self.set_out(out_shapes, 0, tuple(None if d is None else d * r
                                          for d, r in zip(padded, reps)))
        out = out_shapes[0]
        back = tuple(None if o is None or not r else o // r for o, r in zip(out, reps))
        self.set_in(in_shapes, 0, back[rank - len(data):], "output %s" % fmt_shape(out))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], xp.tile(inputs[0], self.attrs.reps))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = in_grads[0]
        if g is None:
            return
        rank, reps = self._aligned(g.ndim)
        padded = (1,) * (rank - g.ndim) + g.shape
        split = []
        for r, d in zip(reps, padded):
            split += [r, d]
        summed = out_grads[0].reshape(split).sum(axis=tuple(range(0, 2 * rank, 2)))
        xp.copyto(g, summed.reshape(g.shape))


@register
class Repeat(Op):
    """Repeat each element `repeats` times along `axis`; axis=None flattens first (1-D out)."""

    name = "repeat"
    backward_inputs = ()
    backward_outputs = ()

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        repeats: int
        axis: Optional[int] = None

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.repeats < 0:
            raise OpParamError("operator repeat: repeats=%d must be >= 0" % self.attrs.repeats)

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        r = self.attrs.repeats
        if self.attrs.axis is None:
            size = prod_or_none(data)
            self.set_out(out_shapes, 0, (None if size is None else size * r,))
            return in_shapes, out_shapes
        ax = axis_index(self.attrs.axis, len(data))
        along = None if data[ax] is None else data[ax] * r
        self.set_out(out_shapes, 0, data[:ax] + (along,) + data[ax + 1:])
        out = out_shapes[0]
        self.set_in(in_shapes, 0, out[:ax] + (data[ax],) + out[ax + 1:],
                    "output %s" % fmt_shape(out))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], xp.repeat(inputs[0], self.attrs.repeats, axis=self.attrs.axis))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = in_grads[0]
        if g is None:
            return
        r = self.attrs.repeats
        if self.attrs.axis is None:
            xp.copyto(g, out_grads[0].reshape(-1, r).sum(axis=1).reshape(g.shape))
            return
        ax = axis_index(self.attrs.axis, g.ndim)
        split = g.shape[:ax] + (g.shape[ax], r) + g.shape[ax + 1:]
        xp.copyto(g, out_grads[0].reshape(split).sum(axis=ax + 1))


# ----------------------------------------------------------------------------- Pad

@register
class Pad(Op):
    """Pad every axis i with pad_width[2i] entries before and pad_width[2i+1] after.

    Modes: 'constant' (fill with constant_value), 'edge' (repeat the border value), 'reflect'
    (mirror without repeating the border; each pad must be smaller than its axis). MXNet only
    pads the spatial axes of 4-D/5-D data; here any rank is accepted. Backward folds the
    gradient of the padding back onto the values it copies.
    """

    name = "Pad"
    aliases = ("pad",)
    backward_inputs = ()
    backward_outputs = ()

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        mode: Literal["constant", "edge", "reflect"]
        pad_width: tuple[int, ...]
        constant_value: float = 0.0

    def __init__(self, attrs=None):
        super().__init__(attrs)
        pw = self.attrs.pad_width
        if len(pw) % 2 or any(p is None or p < 0 for p in pw):
            raise OpParamError("operator Pad: pad_width=%s must be non-negative (before, after) "
                               "pairs" % (pw,))
        self._pairs = tuple((pw[i], pw[i + 1]) for i in range(0, len(pw), 2))
        self._np_mode = {"constant": "constant", "edge": "edge", "reflect": "reflect"}[
            self.attrs.mode]

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        if len(data) != len(self._pairs):
            raise ShapeError("input 'data' has rank %d but pad_width=%s covers %d axes"
                             % (len(data), self.attrs.pad_width, len(self._pairs)))
        if self.attrs.mode == "reflect":
            for ax, (d, (b, a)) in enumerate(zip(data, self._pairs)):
                if d is not None and max(b, a) >= d:
                    raise ShapeError("input 'data' has shape %s: reflect padding of axis %d "
                                     "needs pads < %d, got %s" % (fmt_shape(data), ax, d, (b, a)))
        self.set_out(out_shapes, 0, tuple(None if d is None else d + b + a
                                          for d, (b, a) in zip(data, self._pairs)))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        if self._np_mode == "constant":
            res = xp.pad(inputs[0], self._pairs, mode="constant",
                         constant_values=self.attrs.constant_value)
        else:
            res = xp.pad(inputs[0], self._pairs, mode=self._np_mode)
        xp.copyto(out[0], res)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = in_grads[0]
        if g is None:
            return
        acc = out_grads[0]
        mode = self.attrs.mode
        for ax in range(g.ndim - 1, -1, -1):
            b, a = self._pairs[ax]
            if b == 0 and a == 0:
                continue
            d = g.shape[ax]
            lead = (slice(None),) * ax
            core = acc[lead + (slice(b, b + d),)]
            if mode != "constant":
                core = core.copy()
                before = acc[lead + (slice(0, b),)]
                after = acc[lead + (slice(b + d, b + d + a),)]
                if mode == "edge":
                    if b:
                        core[lead + (slice(0, 1),)] += before.sum(axis=ax, keepdims=True)
                    if a:
                        core[lead + (slice(d - 1, d),)] += after.sum(axis=ax, keepdims=True)
                else:
                    if b:
                        core[lead + (slice(1, b + 1),)] += xp.flip(before, axis=ax)
                    if a:
                        core[lead + (slice(d - 1 - a, d - 1),)] += xp.flip(after, axis=ax)
            acc = core
        xp.copyto(g, acc)
