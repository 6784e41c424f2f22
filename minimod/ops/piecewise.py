"""Elementwise functions that choose a branch per element: clip, where, smooth_l1 and
hard_sigmoid. Each gradient is the head gradient times the derivative of the branch the
element took (where: the head gradient goes to x or to y, as the condition chose)."""
from __future__ import annotations

import dataclasses

from ..base import ShapeError
from .registry import Op, fmt_shape, register, shape_is_known

__all__ = ["ClipOp", "ClipAttrs", "WhereOp", "SmoothL1Op", "HardSigmoidOp"]


@dataclasses.dataclass(frozen=True)
class ClipAttrs:
    a_min: float
    a_max: float


@register
class ClipOp(Op):
    """out = min(max(data, a_min), a_max); gradient 1 inside [a_min, a_max] (ends included)."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "clip"
    Attrs = ClipAttrs
    inplace = ((0, 0),)
    backward_inputs = (0,)
    backward_outputs = ()

    def forward(self, xp, inputs, aux, out, is_train):
        low, high = self.attrs.a_min, self.attrs.a_max
        kind = inputs[0].dtype
        if kind.kind in "iu":  # MXNet casts the bounds to an integer array's type first
            low, high = kind.type(low), kind.type(high)
        xp.clip(inputs[0], low, high, out=out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            x = inputs[0]
            xp.multiply(out_grads[0], (x >= self.attrs.a_min) & (x <= self.attrs.a_max),
                        out=in_grads[0])


class _ConditionArgs(Op):
    ARGUMENTS = ("condition", "x", "y")


@register
class WhereOp(_ConditionArgs):
    """out = x where condition != 0, else y.

    x, y and out share one shape; condition has that shape, or is 1-D with the length of the first
    axis (choosing whole rows). Gradients: x gets the head where condition holds, y elsewhere,
    condition none. condition may have its own dtype.
    """

    name = "where"
    backward_inputs = (0,)
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        if not shape_is_known(in_shapes[0]):  # as MXNet: nothing until condition is known
            return in_shapes, out_shapes
        cond = in_shapes[0]
        full = next((s for s in (in_shapes[1], in_shapes[2], out_shapes[0]) if s is not None),
                    None)
        if full is None:  # a 1-D condition may go with x of any rank: wait for x's
            return in_shapes, out_shapes
        if len(cond) == len(full):  # condition has x's shape
            self.same_shape(in_shapes, out_shapes, in_idx=(0, 1, 2), out_idx=(0,))
            return in_shapes, out_shapes
        self.same_shape(in_shapes, out_shapes, in_idx=(1, 2), out_idx=(0,))
        if len(cond) != 1:
            raise ShapeError("input 'condition' has shape %s but x has %s: it must have x's "
                             "shape or be 1-D over x's first axis"
                             % (fmt_shape(cond), fmt_shape(full)))
        self.set_in(in_shapes, 0, out_shapes[0][:1], "a 1-D condition over x's first axis")
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        tail, out_types = super().infer_type(list(in_types[1:]), list(out_types))
        return [in_types[0]] + list(tail), out_types

    def _mask(self, cond, ndim):
        mask = cond != 0
        if cond.ndim == 1 and ndim != 1:
            mask = mask.reshape(mask.shape + (1,) * (ndim - 1))
        return mask

    def forward(self, xp, inputs, aux, out, is_train):
        cond, x, y = inputs
        xp.copyto(out[0], xp.where(self._mask(cond, x.ndim), x, y))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dy = out_grads[0]
        mask = self._mask(inputs[0], dy.ndim)
        if in_grads[0] is not None:
            in_grads[0].fill(0)
        if in_grads[1] is not None:
            xp.multiply(dy, mask, out=in_grads[1])
        if in_grads[2] is not None:
            xp.multiply(dy, ~mask, out=in_grads[2])


@dataclasses.dataclass(frozen=True)
class SmoothL1Attrs:
    scalar: float = 1.0


@register
class SmoothL1Op(Op):
    """The smooth L1 (Huber) function with s = scalar**2: out = s * x**2 / 2 where |x| < 1/s,
    else |x| - 1/(2 s); gradient s * x inside, sign(x) outside (Fast R-CNN's box loss)."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "smooth_l1"
    Attrs = SmoothL1Attrs
    inplace = ((0, 0),)
    backward_inputs = (0,)
    backward_outputs = ()

    def _terms(self, xp, dtype):
        s = dtype.type(self.attrs.scalar) * dtype.type(self.attrs.scalar)
        return s, dtype.type(1) / s

    def forward(self, xp, inputs, aux, out, is_train):
        x, o = inputs[0], out[0]
        s, inv = self._terms(xp, o.dtype)
        inside = xp.abs(x) < inv
        outer = xp.abs(x) - inv * o.dtype.type(0.5)
        xp.multiply(x, x, out=o)  # x is read before o is written (o may be x)
        o *= s * o.dtype.type(0.5)
        xp.copyto(o, outer, where=~inside)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is None:
            return
        x = inputs[0]
        s, inv = self._terms(xp, dx.dtype)
        inside = xp.abs(x) < inv
        xp.sign(x, out=dx)
        xp.copyto(dx, x * s, where=inside)
        dx *= out_grads[0]


@dataclasses.dataclass(frozen=True)
class HardSigmoidAttrs:
    alpha: float = 0.2
    beta: float = 0.5


@register
class HardSigmoidOp(Op):
    """out = clip(alpha * x + beta, 0, 1); gradient alpha where 0 < alpha * x + beta < 1."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "hard_sigmoid"
    Attrs = HardSigmoidAttrs
    inplace = ((0, 0),)
    backward_inputs = ()
    backward_outputs = (0,)

    def forward(self, xp, inputs, aux, out, is_train):
        o, t = out[0], out[0].dtype.type
        xp.multiply(inputs[0], t(self.attrs.alpha), out=o)
        o += t(self.attrs.beta)
        xp.clip(o, t(0), t(1), out=o)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is None:
            return
        y, t = outputs[0], dx.dtype.type
        xp.multiply(out_grads[0], t(self.attrs.alpha), out=dx)
        dx *= (y > t(0)) & (y < t(1))
