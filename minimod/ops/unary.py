"""Unary elementwise math: `out = f(data)`, same shape and dtype (exp, log, sqrt, tanh,
sigmoid, the trigonometric and hyperbolic functions, rounding, gamma, erf ...).

One table row per op gives the math (for the docstring), the forward writing into the
preallocated output, the gradient (None: zero gradient) and what the gradient reads ("in",
"out", "both" or ""), which drives liveness and in-place planning, so it is exact: exp's
gradient reads only its output, log's only its input. The special functions' series live in
special_functions.py. See binary.py for the conventions the elementwise families share.
"""
from __future__ import annotations

import math
from typing import Callable, Optional

from .helpers import cast_into, define_op, is_integral
from .registry import Op
from .special_functions import digamma, erf_into, erfinv_into, gamma_into, gammaln_into

__all__: list = []


class _Unary(Op):
    """Base of `out = f(data)`, same shape in and out.

    `kind` says how the op treats dtypes other than float32 and float64, as MXNet does:
    "math" ops evaluate float16 in float32 and integers in float64, then cast the result back
    (C truncation for integers, so tanh(9) is 0, and NaN and out-of-range values become the
    integer minimum); "native" ops (abs, sign, negation, relu ...) compute in the
    data's own dtype; "rounding" ops compute natively on floats and leave integers as they are.
    """

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    inplace = ((0, 0),)
    fwd: Callable = None        # fwd(xp, x, out)
    grad: Callable = None       # grad(xp, dy, x, y, dx); None: zero gradient
    kind: str = "math"

    def _wide(self, dtype) -> Optional[str]:
        """The dtype to evaluate in for data of `dtype`, None for the data's own."""
        if self.kind != "math" or dtype.name in ("float32", "float64"):
            return None
        return "float64" if is_integral(dtype) else "float32"

    def forward(self, xp, inputs, aux, out, is_train):
        x, o = inputs[0], out[0]
        wide_dtype = self._wide(o.dtype)
        if wide_dtype is not None:
            wide = xp.empty(o.shape, dtype=wide_dtype)
            self.fwd(xp, x.astype(wide_dtype), wide)
            cast_into(xp, o, wide)
        elif self.kind == "rounding" and is_integral(o.dtype):
            if o is not x:
                xp.copyto(o, x)
        else:
            self.fwd(xp, x, o)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is None:
            return
        if self.grad is None:
            dx.fill(0)
            return
        dy, x, y = out_grads[0], inputs[0], outputs[0]
        wide_dtype = self._wide(dx.dtype)
        if wide_dtype is not None:
            wide = xp.empty(dx.shape, dtype=wide_dtype)
            self.grad(xp, *(None if a is None else a.astype(wide_dtype) for a in (dy, x, y)),
                      wide)
            cast_into(xp, dx, wide)
        else:
            self.grad(xp, dy, x, y, dx)


def _b_relu(xp, dy, x, y, dx):
    xp.multiply(dy, y > 0, out=dx)
    xp.copyto(dx, y, where=xp.isnan(y))  # MXNet's relu gradient at a NaN is NaN


def _f_sigmoid(xp, x, o):
    xp.negative(x, out=o)
    xp.exp(o, out=o)
    o += 1
    xp.reciprocal(o, out=o)


def _f_rsqrt(xp, x, o):
    xp.sqrt(x, out=o)
    xp.reciprocal(o, out=o)


def _f_softsign(xp, x, o):
    xp.divide(x, 1 + xp.abs(x), out=o)


def _f_round(xp, x, o):
    # half away from zero (MXNet's round), unlike NumPy's half-to-even
    sign = xp.sign(x)  # read before `o`, which may be `x`, is overwritten
    xp.abs(x, out=o)
    o += 0.5
    xp.floor(o, out=o)
    o *= sign


def _f_rint(xp, x, o):
    # MXNet's rint rounds halves down: floor(x) + (x - floor(x) > 0.5)
    low = xp.floor(x)
    xp.add(low, (x - low) > 0.5, out=o)


def _f_logical_not(xp, x, o):
    xp.equal(x, 0, out=o)


_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_DEG = 180.0 / math.pi
_RAD = math.pi / 180.0

# name -> (math, forward, gradient, reads: "in" / "out" / "both" / "")
_UNARY = {
    "exp": ("exp(x)", lambda xp, x, o: xp.exp(x, out=o),
            lambda xp, dy, x, y, dx: xp.multiply(dy, y, out=dx), "out"),
    "log": ("ln(x)", lambda xp, x, o: xp.log(x, out=o),
            lambda xp, dy, x, y, dx: xp.divide(dy, x, out=dx), "in"),
    "log2": ("log2(x)", lambda xp, x, o: xp.log2(x, out=o),
             lambda xp, dy, x, y, dx: xp.divide(dy, x * _LN2, out=dx), "in"),
    "log10": ("log10(x)", lambda xp, x, o: xp.log10(x, out=o),
              lambda xp, dy, x, y, dx: xp.divide(dy, x * _LN10, out=dx), "in"),
    "log1p": ("ln(1 + x)", lambda xp, x, o: xp.log1p(x, out=o),
              lambda xp, dy, x, y, dx: xp.divide(dy, x + 1, out=dx), "in"),
    "expm1": ("exp(x) - 1", lambda xp, x, o: xp.expm1(x, out=o),
              lambda xp, dy, x, y, dx: xp.multiply(dy, y + 1, out=dx), "out"),
    "sqrt": ("sqrt(x)", lambda xp, x, o: xp.sqrt(x, out=o),
             lambda xp, dy, x, y, dx: xp.divide(dy, 2 * y, out=dx), "out"),
    "rsqrt": ("1 / sqrt(x)", _f_rsqrt,
              lambda xp, dy, x, y, dx: xp.multiply(dy, -0.5 * y * y * y, out=dx), "out"),
    "cbrt": ("x ** (1/3)", lambda xp, x, o: xp.cbrt(x, out=o),
             lambda xp, dy, x, y, dx: xp.divide(dy, 3 * y * y, out=dx), "out"),
    "square": ("x * x", lambda xp, x, o: xp.square(x, out=o),
               lambda xp, dy, x, y, dx: xp.multiply(dy, 2 * x, out=dx), "in"),
    "abs": ("|x| (gradient sign(x), 0 at 0)", lambda xp, x, o: xp.abs(x, out=o),
            lambda xp, dy, x, y, dx: xp.multiply(dy, xp.sign(x), out=dx), "in"),
    "sign": ("sign(x)", lambda xp, x, o: xp.sign(x, out=o), None, ""),
    "round": ("x rounded to the nearest integer, halves away from zero", _f_round, None, ""),
    "rint": ("x rounded to the nearest integer, halves down (MXNet's rint)", _f_rint, None, ""),
    "floor": ("floor(x)", lambda xp, x, o: xp.floor(x, out=o), None, ""),
    "ceil": ("ceil(x)", lambda xp, x, o: xp.ceil(x, out=o), None, ""),
    "trunc": ("x rounded toward zero", lambda xp, x, o: xp.trunc(x, out=o), None, ""),
    "fix": ("x rounded toward zero", lambda xp, x, o: xp.trunc(x, out=o), None, ""),
    "negative": ("-x", lambda xp, x, o: xp.negative(x, out=o),
                 lambda xp, dy, x, y, dx: xp.negative(dy, out=dx), ""),
    "reciprocal": ("1 / x", lambda xp, x, o: xp.reciprocal(x, out=o),
                   lambda xp, dy, x, y, dx: xp.multiply(dy, -(y * y), out=dx), "out"),
    "sigmoid": ("1 / (1 + exp(-x))", _f_sigmoid,
                lambda xp, dy, x, y, dx: xp.multiply(dy, y * (1 - y), out=dx), "out"),
    "tanh": ("tanh(x)", lambda xp, x, o: xp.tanh(x, out=o),
             lambda xp, dy, x, y, dx: xp.multiply(dy, 1 - y * y, out=dx), "out"),
    "relu": ("max(x, 0) (gradient 0 at 0; a NaN passes through both ways)",
             lambda xp, x, o: xp.maximum(x, 0, out=o), _b_relu, "out"),
    "softsign": ("x / (1 + |x|)", _f_softsign,
                 lambda xp, dy, x, y, dx: xp.divide(dy, xp.square(1 + xp.abs(x)), out=dx),
                 "in"),
    "sin": ("sin(x)", lambda xp, x, o: xp.sin(x, out=o),
            lambda xp, dy, x, y, dx: xp.multiply(dy, xp.cos(x), out=dx), "in"),
    "cos": ("cos(x)", lambda xp, x, o: xp.cos(x, out=o),
            lambda xp, dy, x, y, dx: xp.multiply(dy, -xp.sin(x), out=dx), "in"),
    "tan": ("tan(x)", lambda xp, x, o: xp.tan(x, out=o),
            lambda xp, dy, x, y, dx: xp.multiply(dy, 1 + y * y, out=dx), "out"),
    "arcsin": ("arcsin(x)", lambda xp, x, o: xp.arcsin(x, out=o),
               lambda xp, dy, x, y, dx: xp.divide(dy, xp.sqrt(1 - x * x), out=dx), "in"),
    "arccos": ("arccos(x)", lambda xp, x, o: xp.arccos(x, out=o),
               lambda xp, dy, x, y, dx: xp.divide(dy, -xp.sqrt(1 - x * x), out=dx), "in"),
    "arctan": ("arctan(x)", lambda xp, x, o: xp.arctan(x, out=o),
               lambda xp, dy, x, y, dx: xp.divide(dy, 1 + x * x, out=dx), "in"),
    "sinh": ("sinh(x)", lambda xp, x, o: xp.sinh(x, out=o),
             lambda xp, dy, x, y, dx: xp.multiply(dy, xp.cosh(x), out=dx), "in"),
    "cosh": ("cosh(x)", lambda xp, x, o: xp.cosh(x, out=o),
             lambda xp, dy, x, y, dx: xp.multiply(dy, xp.sinh(x), out=dx), "in"),
    "arcsinh": ("arcsinh(x)", lambda xp, x, o: xp.arcsinh(x, out=o),
                lambda xp, dy, x, y, dx: xp.divide(dy, xp.sqrt(x * x + 1), out=dx), "in"),
    "arccosh": ("arccosh(x)", lambda xp, x, o: xp.arccosh(x, out=o),
                lambda xp, dy, x, y, dx: xp.divide(dy, xp.sqrt(x * x - 1), out=dx), "in"),
    "arctanh": ("arctanh(x)", lambda xp, x, o: xp.arctanh(x, out=o),
                lambda xp, dy, x, y, dx: xp.divide(dy, 1 - x * x, out=dx), "in"),
    "degrees": ("x * 180 / pi", lambda xp, x, o: xp.multiply(x, _DEG, out=o),
                lambda xp, dy, x, y, dx: xp.multiply(dy, _DEG, out=dx), ""),
    "radians": ("x * pi / 180", lambda xp, x, o: xp.multiply(x, _RAD, out=o),
                lambda xp, dy, x, y, dx: xp.multiply(dy, _RAD, out=dx), ""),
    "gamma": ("Gamma(x) (Lanczos approximation)", gamma_into,
              lambda xp, dy, x, y, dx: xp.multiply(dy, y * digamma(xp, x), out=dx), "both"),
    "gammaln": ("ln |Gamma(x)| (Lanczos approximation)", gammaln_into,
                lambda xp, dy, x, y, dx: xp.multiply(dy, digamma(xp, x), out=dx), "in"),
    "erf": ("the error function 2/sqrt(pi) * integral_0^x exp(-t*t) dt", erf_into,
            lambda xp, dy, x, y, dx: xp.multiply(
                dy, (2 / math.sqrt(math.pi)) * xp.exp(-x * x), out=dx), "in"),
    "logical_not": ("x == 0 (0/1 in x's dtype)", _f_logical_not, None, ""),
    "erfinv": ("the inverse error function (|x| > 1 gives NaN, +-1 gives +-inf)", erfinv_into,
               lambda xp, dy, x, y, dx: xp.multiply(
                   dy, (math.sqrt(math.pi) / 2) * xp.exp(y * y), out=dx), "out"),
    "rcbrt": ("1 / cbrt(x)", lambda xp, x, o: xp.reciprocal(xp.cbrt(x), out=o),
              lambda xp, dy, x, y, dx: xp.multiply(dy, y * y * y * y / -3, out=dx), "out"),
}

_UNARY_READS = {"in": ((0,), ()), "out": ((), (0,)), "both": ((0,), (0,)), "": ((), ())}

#: unary ops that compute in the data's own dtype (see `_Unary.kind`)
_UNARY_NATIVE = frozenset(("abs", "sign", "negative", "relu", "logical_not"))
_UNARY_ROUNDING = frozenset(("round", "rint", "floor", "ceil", "trunc", "fix"))
#: f(0) = 0: MXNet keeps a sparse input's storage type (checked against MXNet 1.9.1)
_UNARY_KEEPS_SPARSE = _UNARY_NATIVE - {"logical_not"} | _UNARY_ROUNDING | frozenset((
    "sqrt", "cbrt", "square", "expm1", "log1p", "sin", "sinh", "tan", "tanh", "arcsin",
    "arcsinh", "arctan", "degrees", "radians"))

for _name, (_doc, _fwd, _grad, _reads) in _UNARY.items():
    define_op(globals(), _Unary, _name, (),
              "out = %s, elementwise; out has data's shape and dtype." % _doc,
              dict(fwd=staticmethod(_fwd), grad=None if _grad is None else staticmethod(_grad),
                   no_gradient=_grad is None, backward_inputs=_UNARY_READS[_reads][0],
                   backward_outputs=_UNARY_READS[_reads][1],
                   kind="native" if _name in _UNARY_NATIVE else
                   "rounding" if _name in _UNARY_ROUNDING else "math",
                   keeps_sparse=_name in _UNARY_KEEPS_SPARSE))
