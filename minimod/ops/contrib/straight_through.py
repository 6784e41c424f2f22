"""Ops whose gradient is deliberately not the derivative of their forward:

- `_contrib_gradientmultiplier`: forward identity, backward scales the gradient by `scalar`
  (a negative scalar makes the gradient-reversal layer of domain-adversarial training);
- `_contrib_round_ste`, `_contrib_sign_ste`: round / sign forward with the straight-through
  estimator's identity gradient (quantisation-aware training), where the true derivative is
  zero almost everywhere.

All three keep the data's shape and type (integer data included) and read nothing in
backward but the head gradient.
"""
from __future__ import annotations

import dataclasses

from ..registry import Op, register
from ._util import c_round

__all__ = ["GradientMultiplier", "RoundSTE", "SignSTE"]


class _ElementwiseSTE(Op):
    """Base: out has data's shape and type; backward writes head * `_grad_scale()`."""

    positional_inputs = True  # MXNet's monitor names the input input0
    inplace = ((0, 0),)
    backward_inputs = ()
    backward_outputs = ()

    def _grad_scale(self):
        return 1

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is None:
            return
        scale = self._grad_scale()
        if scale == 1:
            xp.copyto(in_grads[0], out_grads[0])
        else:
            xp.multiply(out_grads[0], scale, out=in_grads[0])


@dataclasses.dataclass(frozen=True)
class GradientMultiplierAttrs:
    scalar: float = 1.0
    is_int: bool = True


@register
class GradientMultiplier(_ElementwiseSTE):
    """out = data; d data = scalar * d out. `is_int` (whether scalar is an integer, as in the
    scalar arithmetic ops) changes nothing here."""

    name = "_contrib_gradientmultiplier"
    Attrs = GradientMultiplierAttrs

    def _grad_scale(self):
        return self.attrs.scalar

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0])


@register
class RoundSTE(_ElementwiseSTE):
    """out = data rounded to the nearest integer, halves away from zero (MXNet's round);
    d data = d out."""

    name = "_contrib_round_ste"

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        xp.copyto(out[0], x if x.dtype.kind in "iub" else c_round(xp, x))


@register
class SignSTE(_ElementwiseSTE):
    """out = sign(data) (-1, 0 or 1); d data = d out."""

    name = "_contrib_sign_ste"

    def forward(self, xp, inputs, aux, out, is_train):
        xp.sign(inputs[0], out=out[0])
