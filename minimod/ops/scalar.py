"""Arithmetic with a scalar: `data (op) scalar` and `scalar (op) data` (_plus_scalar,
_rdiv_scalar, _power_scalar ...), the ops behind `symbol + 1`, `2 / symbol` and friends.

Table-driven like binary.py: one row per op gives the forward, the gradient with respect to
data and what that gradient reads. The comparison rows (_equal_scalar ...) live in compare.py.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Optional

from .binary import grad_mod_lhs, grad_mod_rhs
from .helpers import define_op
from .registry import Op

__all__ = ["ScalarAttrs", "ScalarMath", "define_scalar"]


@dataclasses.dataclass(frozen=True)
class ScalarAttrs:
    scalar: float = 1.0
    is_int: bool = True


def _as_scalar(value: float):
    # An integral scalar stays a Python int so that integer arrays keep their dtype.
    return int(value) if value.is_integer() and abs(value) < 2 ** 31 else value


@dataclasses.dataclass(frozen=True)
class ScalarMath:
    """One row of the scalar table: forward, the gradient, what the gradient reads."""

    doc: str
    fwd: Callable                      # fwd(xp, x, s, out)
    grad: Optional[Callable] = None    # grad(xp, dy, x, y, s, dx); None: zero gradient
    reads_input: bool = False
    reads_output: bool = False


class _ScalarBinary(Op):
    """Base of `data (op) scalar`: same shape in and out."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    Attrs = ScalarAttrs
    inplace = ((0, 0),)
    spec: Optional[ScalarMath] = None

    def __init__(self, attrs=None):
        super().__init__(attrs)
        self.scalar = _as_scalar(self.attrs.scalar)

    def forward(self, xp, inputs, aux, out, is_train):
        self.spec.fwd(xp, inputs[0], self.scalar, out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is None:
            return
        if self.spec.grad is None:
            in_grads[0].fill(0)
            return
        self.spec.grad(xp, out_grads[0], inputs[0], outputs[0], self.scalar, in_grads[0])


def define_scalar(namespace: dict, name: str, aliases: tuple, m: ScalarMath):
    """Register `name`: out = data (m) scalar, elementwise."""
    return define_op(namespace, _ScalarBinary, name, aliases,
                     "out = %s, elementwise (comparisons give 0/1 in data's dtype, no "
                     "gradient); params scalar=1.0, is_int=True; out has data's shape." % m.doc,
                     dict(spec=m, no_gradient=m.grad is None,
                          backward_inputs=(0,) if m.reads_input else (),
                          backward_outputs=(0,) if m.reads_output else ()))


def _sg_rdiv(xp, dy, x, y, s, dx):
    xp.multiply(dy, -s, out=dx)
    dx /= x
    dx /= x


def _sg_rpow(xp, dy, x, y, s, dx):
    xp.multiply(dy, y, out=dx)
    dx *= math.log(s) if s > 0 else math.nan


_SCALAR = {
    "_plus_scalar": (("_PlusScalar",), ScalarMath(
        "data + scalar", lambda xp, x, s, o: xp.add(x, s, out=o),
        lambda xp, dy, x, y, s, dx: xp.copyto(dx, dy))),
    "_minus_scalar": (("_MinusScalar",), ScalarMath(
        "data - scalar", lambda xp, x, s, o: xp.subtract(x, s, out=o),
        lambda xp, dy, x, y, s, dx: xp.copyto(dx, dy))),
    "_rminus_scalar": (("_RMinusScalar",), ScalarMath(
        "scalar - data", lambda xp, x, s, o: xp.subtract(s, x, out=o),
        lambda xp, dy, x, y, s, dx: xp.negative(dy, out=dx))),
    "_mul_scalar": (("_MulScalar",), ScalarMath(
        "data * scalar", lambda xp, x, s, o: xp.multiply(x, s, out=o),
        lambda xp, dy, x, y, s, dx: xp.multiply(dy, s, out=dx))),
    "_div_scalar": (("_DivScalar",), ScalarMath(
        "data / scalar", lambda xp, x, s, o: xp.divide(x, s, out=o),
        lambda xp, dy, x, y, s, dx: xp.divide(dy, s, out=dx))),
    "_rdiv_scalar": (("_RDivScalar",), ScalarMath(
        "scalar / data", lambda xp, x, s, o: xp.divide(s, x, out=o), _sg_rdiv, True)),
    "_power_scalar": (("_PowerScalar",), ScalarMath(
        "data ** scalar", lambda xp, x, s, o: xp.power(x, s, out=o),
        lambda xp, dy, x, y, s, dx: xp.multiply(dy, s * xp.power(x, s - 1), out=dx), True)),
    "_rpower_scalar": (("_RPowerScalar",), ScalarMath(
        "scalar ** data", lambda xp, x, s, o: xp.power(s, x, out=o), _sg_rpow, False, True)),
    "_maximum_scalar": (("_MaximumScalar",), ScalarMath(
        "max(data, scalar); gradient 1 where data >= scalar",
        lambda xp, x, s, o: xp.maximum(x, s, out=o),
        lambda xp, dy, x, y, s, dx: xp.multiply(dy, x >= s, out=dx), True)),
    "_minimum_scalar": (("_MinimumScalar",), ScalarMath(
        "min(data, scalar); gradient 1 where data <= scalar",
        lambda xp, x, s, o: xp.minimum(x, s, out=o),
        lambda xp, dy, x, y, s, dx: xp.multiply(dy, x <= s, out=dx), True)),
    "_hypot_scalar": (("_HypotScalar",), ScalarMath(
        "sqrt(data**2 + scalar**2)", lambda xp, x, s, o: xp.hypot(x, s, out=o),
        lambda xp, dy, x, y, s, dx: xp.multiply(dy, x / y, out=dx), True, True)),
    "_mod_scalar": (("_ModScalar",), ScalarMath(
        "data mod scalar (Python's %; no gradient for integer dtypes)",
        lambda xp, x, s, o: xp.mod(x, s, out=o),
        lambda xp, dy, x, y, s, dx: grad_mod_lhs(xp, dy, x, s, y, dx))),
    "_rmod_scalar": (("_RModScalar",), ScalarMath(
        "scalar mod data (Python's %); gradient -floor(scalar / data) (none for integer "
        "dtypes)", lambda xp, x, s, o: xp.mod(s, x, out=o),
        lambda xp, dy, x, y, s, dx: grad_mod_rhs(xp, dy, s, x, y, dx), True)),
}

for _name, (_aliases, _sm) in _SCALAR.items():
    define_scalar(globals(), _name, _aliases, _sm)
