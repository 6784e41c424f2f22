"""Elementwise operators: binary (same shape, broadcast, with a scalar), unary, and creation ops.

Every family is table-driven: one registered class per MXNet op name, built by a small factory
from a row that gives the forward (array code writing into a preallocated output), the gradient,
and which inputs/outputs the gradient reads (that declaration drives liveness and in-place
planning, so it is exact: exp's gradient reads only its output, log's only its input).

Conventions shared by the whole file:

- `forward` may be handed `out[0] is inputs[i]` for the declared `inplace` pairs; every forward
  here reads an input element before it writes the same output element, or finishes reading the
  input before the first write.
- `backward` writes into `in_grads` (a None slot is skipped) and assumes the gradient arrays do
  not share storage with `out_grads` (no op here declares backward in-place pairs).
- Outputs are C-contiguous (views of the executor's flat blocks), so `o.reshape(...)` is a view
  that may be passed as `out=`.
- Comparisons and logical ops return 0/1 in the input dtype and carry no gradient.
- Deviations from MXNet 1.9.1 (each one where MXNet's result is NaN or an error, never where it is
  a number): see the docstrings of `broadcast_axis` (negative axes accepted).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Literal, Optional

from ..base import OpParamError, ShapeError
from .registry import Op, VariadicOp, fmt_shape, register

__all__ = ["DTYPE_NAMES", "dtype_of", "broadcast_shape", "reduce_to_shape", "like_infer_type"]

DTYPE_NAMES = ("float16", "float32", "float64", "uint8", "int8", "int32", "int64", "bool")
DTypeName = Literal["float16", "float32", "float64", "uint8", "int8", "int32", "int64", "bool"]


def dtype_of(name: str):
    """The NumPy dtype object called `name`.

    The passes describe the types of every backend with NumPy dtype objects (CuPy uses the same
    ones), so this is the one place an op touches NumPy itself; it makes no arrays.
    """
    import numpy  # noqa: PLC0415  (dtype objects only, see above)
    return numpy.dtype(name)


# ============================================================================ shape helpers

def broadcast_shape(lhs, rhs, what: str = "operands"):
    """NumPy broadcasting of two partial shapes (ranks left-padded with 1, as MXNet 1.9.1 does).

    A dim unknown on one side takes the other side's dim unless that one is 1; returns None while
    either rank is unknown. Raises ShapeError for dims that cannot broadcast.
    """
    if lhs is None or rhs is None:
        return None
    ndim = max(len(lhs), len(rhs))
    lhs = (1,) * (ndim - len(lhs)) + tuple(lhs)
    rhs = (1,) * (ndim - len(rhs)) + tuple(rhs)
    out = []
    for a, b in zip(lhs, rhs):
        if a == 1:
            out.append(b)
        elif b == 1 or b is None or a == b:
            out.append(a)
        elif a is None:
            out.append(b)
        else:
            raise ShapeError("%s could not be broadcast together with shapes %s %s"
                             % (what, fmt_shape(lhs), fmt_shape(rhs)))
    return tuple(out)


def reduce_to_shape(xp, grad, shape, out) -> None:
    """Write into `out` (of `shape`) the sum of `grad` over the axes that broadcasting added."""
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and grad.shape[lead + i] != 1)
    if axes:
        xp.copyto(out, grad.sum(axis=axes).reshape(shape))
    else:
        xp.copyto(out, grad)


def like_infer_type(op: Op, in_types: list, out_types: list):
    """dtype inference of the `*_like` ops (broadcast_like, reshape_like, slice_like): the
    output takes the first input's dtype; the second input only lends its shape, so its dtype
    is free (and not inferred)."""
    head, outs = Op.infer_type(op, list(in_types[:1]), list(out_types))
    return list(head) + list(in_types[1:]), outs


def _zero(grads) -> None:
    for g in grads:
        if g is not None:
            g.fill(0)


# ============================================================================ binary math table
# A gradient function is g(xp, dy, lhs, rhs, y, out) -> array: the gradient with respect to one
# operand before any broadcast reduction, written into `out` when it is given (None: a new array).

def _g_same(xp, dy, lhs, rhs, y, out):
    if out is None:
        return dy
    xp.copyto(out, dy)
    return out


def _g_neg(xp, dy, lhs, rhs, y, out):
    return xp.negative(dy, out=out)


def _g_mul_l(xp, dy, lhs, rhs, y, out):
    return xp.multiply(dy, rhs, out=out)


def _g_mul_r(xp, dy, lhs, rhs, y, out):
    return xp.multiply(dy, lhs, out=out)


def _g_div_l(xp, dy, lhs, rhs, y, out):
    return xp.divide(dy, rhs, out=out)


def _g_div_r(xp, dy, lhs, rhs, y, out):
    res = xp.multiply(dy, lhs, out=out)
    res /= rhs
    res /= rhs
    return xp.negative(res, out=res)


def _g_pow_l(xp, dy, lhs, rhs, y, out):
    res = xp.multiply(dy, rhs * xp.power(lhs, rhs - 1), out=out)
    return res


def _g_pow_r(xp, dy, lhs, rhs, y, out):
    return xp.multiply(dy, y * xp.log(lhs), out=out)


def _g_ge(xp, dy, lhs, rhs, y, out):
    return xp.multiply(dy, lhs >= rhs, out=out)


def _g_lt(xp, dy, lhs, rhs, y, out):
    return xp.multiply(dy, lhs < rhs, out=out)


def _g_le(xp, dy, lhs, rhs, y, out):
    return xp.multiply(dy, lhs <= rhs, out=out)


def _g_gt(xp, dy, lhs, rhs, y, out):
    return xp.multiply(dy, lhs > rhs, out=out)


def _g_hypot_l(xp, dy, lhs, rhs, y, out):
    return xp.multiply(dy, lhs / y, out=out)


def _g_hypot_r(xp, dy, lhs, rhs, y, out):
    return xp.multiply(dy, rhs / y, out=out)


def _integral(dtype) -> bool:
    return dtype.kind in "iub"


def _g_mod_l(xp, dy, lhs, rhs, y, out):
    # MXNet gives integer mod no gradient at all (its gradient kernels are float-only)
    if _integral(dy.dtype):
        return _g_zero(xp, dy, out)
    return _g_same(xp, dy, lhs, rhs, y, out)


def _g_mod_r(xp, dy, lhs, rhs, y, out):
    if _integral(dy.dtype):
        return _g_zero(xp, dy, out)
    return xp.multiply(dy, -xp.floor(lhs / rhs), out=out)


def _g_zero(xp, dy, out):
    if out is None:
        return xp.zeros_like(dy)
    out.fill(0)
    return out


@dataclasses.dataclass(frozen=True)
class _BinaryMath:
    """One row of the binary table: forward, the two gradients, what the gradients read."""

    doc: str
    fwd: Callable
    grad_lhs: Optional[Callable] = None     # None: zero gradient (comparisons)
    grad_rhs: Optional[Callable] = None
    reads_inputs: tuple = ()
    reads_output: bool = False


_BINARY = {
    "add": _BinaryMath("lhs + rhs", lambda xp, a, b, o: xp.add(a, b, out=o), _g_same, _g_same),
    "sub": _BinaryMath("lhs - rhs", lambda xp, a, b, o: xp.subtract(a, b, out=o),
                       _g_same, _g_neg),
    "mul": _BinaryMath("lhs * rhs", lambda xp, a, b, o: xp.multiply(a, b, out=o),
                       _g_mul_l, _g_mul_r, (0, 1)),
    "div": _BinaryMath("lhs / rhs", lambda xp, a, b, o: xp.divide(a, b, out=o),
                       _g_div_l, _g_div_r, (0, 1)),
    "power": _BinaryMath("lhs ** rhs (rhs gradient y * log(lhs), NaN for lhs <= 0 as in MXNet)",
                         lambda xp, a, b, o: xp.power(a, b, out=o),
                         _g_pow_l, _g_pow_r, (0, 1), True),
    "maximum": _BinaryMath("max(lhs, rhs); on ties the gradient goes to lhs",
                           lambda xp, a, b, o: xp.maximum(a, b, out=o), _g_ge, _g_lt, (0, 1)),
    "minimum": _BinaryMath("min(lhs, rhs); on ties the gradient goes to lhs",
                           lambda xp, a, b, o: xp.minimum(a, b, out=o), _g_le, _g_gt, (0, 1)),
    "hypot": _BinaryMath("sqrt(lhs**2 + rhs**2)", lambda xp, a, b, o: xp.hypot(a, b, out=o),
                         _g_hypot_l, _g_hypot_r, (0, 1), True),
    "mod": _BinaryMath("lhs mod rhs with the divisor's sign (Python's %); gradients 1 and "
                       "-floor(lhs / rhs) (none for integer dtypes, as in MXNet)",
                       lambda xp, a, b, o: xp.mod(a, b, out=o), _g_mod_l, _g_mod_r, (0, 1)),
    "equal": _BinaryMath("lhs == rhs", lambda xp, a, b, o: xp.equal(a, b, out=o)),
    "not_equal": _BinaryMath("lhs != rhs", lambda xp, a, b, o: xp.not_equal(a, b, out=o)),
    "greater": _BinaryMath("lhs > rhs", lambda xp, a, b, o: xp.greater(a, b, out=o)),
    "greater_equal": _BinaryMath("lhs >= rhs",
                                 lambda xp, a, b, o: xp.greater_equal(a, b, out=o)),
    "lesser": _BinaryMath("lhs < rhs", lambda xp, a, b, o: xp.less(a, b, out=o)),
    "lesser_equal": _BinaryMath("lhs <= rhs", lambda xp, a, b, o: xp.less_equal(a, b, out=o)),
    "logical_and": _BinaryMath("lhs != 0 and rhs != 0",
                               lambda xp, a, b, o: xp.logical_and(a, b, out=o)),
    "logical_or": _BinaryMath("lhs != 0 or rhs != 0",
                              lambda xp, a, b, o: xp.logical_or(a, b, out=o)),
    "logical_xor": _BinaryMath("(lhs != 0) xor (rhs != 0)",
                               lambda xp, a, b, o: xp.logical_xor(a, b, out=o)),
}


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_") if part)


def _define(base, name: str, aliases: tuple, doc: str, members: dict):
    """Create, register and export one op class (a row of a family table)."""
    cls = type(_camel(name) + "Op", (base,), dict(members, name=name, aliases=aliases,
                                                  __doc__=doc, __module__=__name__))
    register(cls)
    globals()[cls.__name__] = cls
    return cls


# ============================================================================ same-shape binary

class _SameShapeBinary(Op):
    """Base of `lhs (op) rhs` on two arrays of one shape (output shape = that shape)."""

    ARGUMENTS = ("lhs", "rhs")
    inplace = ((0, 0), (1, 0))
    spec: Optional[_BinaryMath] = None

    def forward(self, xp, inputs, aux, out, is_train):
        self.spec.fwd(xp, inputs[0], inputs[1], out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        m = self.spec
        if m.grad_lhs is None:
            _zero(in_grads)
            return
        dy, lhs, rhs, y = out_grads[0], inputs[0], inputs[1], outputs[0]
        if in_grads[0] is not None:
            m.grad_lhs(xp, dy, lhs, rhs, y, in_grads[0])
        if in_grads[1] is not None:
            m.grad_rhs(xp, dy, lhs, rhs, y, in_grads[1])


_SAME_SHAPE_NAMES = {
    # math key: (canonical name, aliases)
    "add": ("elemwise_add", ("_Plus", "_plus", "_add")),
    "sub": ("elemwise_sub", ("_Minus", "_minus", "_sub")),
    "mul": ("elemwise_mul", ("_Mul", "_mul")),
    "div": ("elemwise_div", ("_Div", "_div")),
    "power": ("_power", ("_Power",)),
    "maximum": ("_maximum", ("_Maximum",)),
    "minimum": ("_minimum", ("_Minimum",)),
    "hypot": ("_hypot", ("_Hypot",)),
    "mod": ("_mod", ("_Mod",)),
    "equal": ("_equal", ("_Equal",)),
    "not_equal": ("_not_equal", ("_Not_Equal",)),
    "greater": ("_greater", ("_Greater",)),
    "greater_equal": ("_greater_equal", ("_Greater_Equal",)),
    "lesser": ("_lesser", ("_Lesser",)),
    "lesser_equal": ("_lesser_equal", ("_Lesser_Equal",)),
    "logical_and": ("_logical_and", ("_Logical_And",)),
    "logical_or": ("_logical_or", ("_Logical_Or",)),
    "logical_xor": ("_logical_xor", ("_Logical_Xor",)),
}


def _binary_members(m: _BinaryMath) -> dict:
    return dict(spec=m, no_gradient=m.grad_lhs is None, backward_inputs=m.reads_inputs,
                backward_outputs=(0,) if m.reads_output else ())


for _key, (_name, _aliases) in _SAME_SHAPE_NAMES.items():
    _m = _BINARY[_key]
    _define(_SameShapeBinary, _name, _aliases,
            "out = %s, elementwise. lhs, rhs and out have one shape (inferred both ways)."
            % _m.doc, _binary_members(_m))

_define(_SameShapeBinary, "_grad_add", (),
        "out = lhs + rhs (the gradient-accumulation twin of elemwise_add).",
        _binary_members(_BINARY["add"]))


# ============================================================================ broadcast binary

class _BroadcastBinary(Op):
    """Base of `lhs (op) rhs` with NumPy broadcasting; gradients are summed back to each shape."""

    ARGUMENTS = ("lhs", "rhs")
    spec: Optional[_BinaryMath] = None

    def infer_shape(self, in_shapes, out_shapes):
        self.set_out(out_shapes, 0, broadcast_shape(in_shapes[0], in_shapes[1]),
                     "broadcasting lhs %s with rhs %s" % (fmt_shape(in_shapes[0]),
                                                         fmt_shape(in_shapes[1])))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        self.spec.fwd(xp, inputs[0], inputs[1], out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        m = self.spec
        if m.grad_lhs is None:
            _zero(in_grads)
            return
        dy, lhs, rhs, y = out_grads[0], inputs[0], inputs[1], outputs[0]
        for grad_fn, dx in ((m.grad_lhs, in_grads[0]), (m.grad_rhs, in_grads[1])):
            if dx is None:
                continue
            if dx.shape == dy.shape:
                grad_fn(xp, dy, lhs, rhs, y, dx)
            else:
                reduce_to_shape(xp, grad_fn(xp, dy, lhs, rhs, y, None), dx.shape, dx)


_BROADCAST_NAMES = {
    "add": ("broadcast_add", ("broadcast_plus",)),
    "sub": ("broadcast_sub", ("broadcast_minus",)),
    "mul": ("broadcast_mul", ()),
    "div": ("broadcast_div", ()),
    "power": ("broadcast_power", ()),
    "maximum": ("broadcast_maximum", ()),
    "minimum": ("broadcast_minimum", ()),
    "hypot": ("broadcast_hypot", ()),
    "mod": ("broadcast_mod", ()),
    "equal": ("broadcast_equal", ()),
    "not_equal": ("broadcast_not_equal", ()),
    "greater": ("broadcast_greater", ()),
    "greater_equal": ("broadcast_greater_equal", ()),
    "lesser": ("broadcast_lesser", ()),
    "lesser_equal": ("broadcast_lesser_equal", ()),
    "logical_and": ("broadcast_logical_and", ()),
    "logical_or": ("broadcast_logical_or", ()),
    "logical_xor": ("broadcast_logical_xor", ()),
}

for _key, (_name, _aliases) in _BROADCAST_NAMES.items():
    _m = _BINARY[_key]
    _define(_BroadcastBinary, _name, _aliases,
            "out = %s with NumPy broadcasting (the shorter shape is left-padded with 1s)."
            % _m.doc, _binary_members(_m))


# ============================================================================ scalar binary

@dataclasses.dataclass(frozen=True)
class ScalarAttrs:
    scalar: float = 1.0
    is_int: bool = True


def _as_scalar(value: float):
    # An integral scalar stays a Python int so that integer arrays keep their dtype.
    return int(value) if value.is_integer() and abs(value) < 2 ** 31 else value


@dataclasses.dataclass(frozen=True)
class _ScalarMath:
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
    spec: Optional[_ScalarMath] = None

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


def _sg_rdiv(xp, dy, x, y, s, dx):
    xp.multiply(dy, -s, out=dx)
    dx /= x
    dx /= x


def _sg_rpow(xp, dy, x, y, s, dx):
    xp.multiply(dy, y, out=dx)
    dx *= math.log(s) if s > 0 else math.nan


_SCALAR = {
    "_plus_scalar": (("_PlusScalar",), _ScalarMath(
        "data + scalar", lambda xp, x, s, o: xp.add(x, s, out=o),
        lambda xp, dy, x, y, s, dx: xp.copyto(dx, dy))),
    "_minus_scalar": (("_MinusScalar",), _ScalarMath(
        "data - scalar", lambda xp, x, s, o: xp.subtract(x, s, out=o),
        lambda xp, dy, x, y, s, dx: xp.copyto(dx, dy))),
    "_rminus_scalar": (("_RMinusScalar",), _ScalarMath(
        "scalar - data", lambda xp, x, s, o: xp.subtract(s, x, out=o),
        lambda xp, dy, x, y, s, dx: xp.negative(dy, out=dx))),
    "_mul_scalar": (("_MulScalar",), _ScalarMath(
        "data * scalar", lambda xp, x, s, o: xp.multiply(x, s, out=o),
        lambda xp, dy, x, y, s, dx: xp.multiply(dy, s, out=dx))),
    "_div_scalar": (("_DivScalar",), _ScalarMath(
        "data / scalar", lambda xp, x, s, o: xp.divide(x, s, out=o),
        lambda xp, dy, x, y, s, dx: xp.divide(dy, s, out=dx))),
    "_rdiv_scalar": (("_RDivScalar",), _ScalarMath(
        "scalar / data", lambda xp, x, s, o: xp.divide(s, x, out=o), _sg_rdiv, True)),
    "_power_scalar": (("_PowerScalar",), _ScalarMath(
        "data ** scalar", lambda xp, x, s, o: xp.power(x, s, out=o),
        lambda xp, dy, x, y, s, dx: xp.multiply(dy, s * xp.power(x, s - 1), out=dx), True)),
    "_rpower_scalar": (("_RPowerScalar",), _ScalarMath(
        "scalar ** data", lambda xp, x, s, o: xp.power(s, x, out=o), _sg_rpow, False, True)),
    "_maximum_scalar": (("_MaximumScalar",), _ScalarMath(
        "max(data, scalar); gradient 1 where data >= scalar",
        lambda xp, x, s, o: xp.maximum(x, s, out=o),
        lambda xp, dy, x, y, s, dx: xp.multiply(dy, x >= s, out=dx), True)),
    "_minimum_scalar": (("_MinimumScalar",), _ScalarMath(
        "min(data, scalar); gradient 1 where data <= scalar",
        lambda xp, x, s, o: xp.minimum(x, s, out=o),
        lambda xp, dy, x, y, s, dx: xp.multiply(dy, x <= s, out=dx), True)),
    "_hypot_scalar": (("_HypotScalar",), _ScalarMath(
        "sqrt(data**2 + scalar**2)", lambda xp, x, s, o: xp.hypot(x, s, out=o),
        lambda xp, dy, x, y, s, dx: xp.multiply(dy, x / y, out=dx), True, True)),
    "_mod_scalar": (("_ModScalar",), _ScalarMath(
        "data mod scalar (Python's %; no gradient for integer dtypes)",
        lambda xp, x, s, o: xp.mod(x, s, out=o),
        lambda xp, dy, x, y, s, dx: _g_mod_l(xp, dy, x, s, y, dx))),
    "_rmod_scalar": (("_RModScalar",), _ScalarMath(
        "scalar mod data (Python's %); gradient -floor(scalar / data) (none for integer "
        "dtypes)", lambda xp, x, s, o: xp.mod(s, x, out=o),
        lambda xp, dy, x, y, s, dx: _g_mod_r(xp, dy, s, x, y, dx), True)),
    "_equal_scalar": (("_EqualScalar",), _ScalarMath(
        "data == scalar", lambda xp, x, s, o: xp.equal(x, s, out=o))),
    "_not_equal_scalar": (("_NotEqualScalar",), _ScalarMath(
        "data != scalar", lambda xp, x, s, o: xp.not_equal(x, s, out=o))),
    "_greater_scalar": (("_GreaterScalar",), _ScalarMath(
        "data > scalar", lambda xp, x, s, o: xp.greater(x, s, out=o))),
    "_greater_equal_scalar": (("_GreaterEqualScalar",), _ScalarMath(
        "data >= scalar", lambda xp, x, s, o: xp.greater_equal(x, s, out=o))),
    "_lesser_scalar": (("_LesserScalar",), _ScalarMath(
        "data < scalar", lambda xp, x, s, o: xp.less(x, s, out=o))),
    "_lesser_equal_scalar": (("_LesserEqualScalar",), _ScalarMath(
        "data <= scalar", lambda xp, x, s, o: xp.less_equal(x, s, out=o))),
    "_logical_and_scalar": (("_LogicalAndScalar",), _ScalarMath(
        "data != 0 and scalar != 0", lambda xp, x, s, o: xp.logical_and(x, s, out=o))),
    "_logical_or_scalar": (("_LogicalOrScalar",), _ScalarMath(
        "data != 0 or scalar != 0", lambda xp, x, s, o: xp.logical_or(x, s, out=o))),
    "_logical_xor_scalar": (("_LogicalXorScalar",), _ScalarMath(
        "(data != 0) xor (scalar != 0)", lambda xp, x, s, o: xp.logical_xor(x, s, out=o))),
}

for _name, (_aliases, _sm) in _SCALAR.items():
    _define(_ScalarBinary, _name, _aliases,
            "out = %s, elementwise (comparisons give 0/1 in data's dtype, no gradient); "
            "params scalar=1.0, is_int=True; out has data's shape." % _sm.doc,
            dict(spec=_sm, no_gradient=_sm.grad is None,
                 backward_inputs=(0,) if _sm.reads_input else (),
                 backward_outputs=(0,) if _sm.reads_output else ()))


# ============================================================================ unary

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
        return "float64" if _integral(dtype) else "float32"

    def forward(self, xp, inputs, aux, out, is_train):
        x, o = inputs[0], out[0]
        wide_dtype = self._wide(o.dtype)
        if wide_dtype is not None:
            wide = xp.empty(o.shape, dtype=wide_dtype)
            self.fwd(xp, x.astype(wide_dtype), wide)
            xp.copyto(o, wide, casting="unsafe")
        elif self.kind == "rounding" and _integral(o.dtype):
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
            xp.copyto(dx, wide, casting="unsafe")
        else:
            self.grad(xp, dy, x, y, dx)


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


def _lanczos_gammaln(xp, x):
    # ln Gamma(x) for x > 0 by the Lanczos approximation (g = 7, 9 terms; ~1e-15 relative),
    # reflected for x < 0.5: ln|Gamma(x)| = ln(pi / |sin(pi x)|) - ln Gamma(1 - x).
    reflect = x < 0.5
    z = xp.where(reflect, 1 - x, x) - 1
    acc = z * 0 + _LANCZOS[0]
    for k, c in enumerate(_LANCZOS[1:], start=1):
        acc = acc + c / (z + k)
    t = z + 7.5
    value = 0.5 * math.log(2 * math.pi) + (z + 0.5) * xp.log(t) - t + xp.log(acc)
    flipped = math.log(math.pi) - xp.log(xp.abs(xp.sin(math.pi * x))) - value
    pole = reflect & (x == xp.floor(x))  # 0, -1, -2 ...: sin(pi x) is only rounded to ~0
    return xp.where(pole, xp.inf, xp.where(reflect, flipped, value))


_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)


def _digamma(xp, x):
    # psi(x): recurrence up to x >= 6, then the asymptotic series; reflection for x < 0.5.
    reflect = x < 0.5
    z = xp.where(reflect, 1 - x, x)
    shift = z * 0
    for _ in range(6):
        small = z < 6
        shift = shift - xp.where(small, 1 / z, 0)
        z = xp.where(small, z + 1, z)
    inv2 = 1 / (z * z)
    series = (xp.log(z) - 0.5 / z
              - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
                  1 / 240 - inv2 / 132)))))
    value = series + shift
    return xp.where(reflect, value - math.pi / xp.tan(math.pi * x), value)


def _gamma_sign(xp, x):
    # sign of Gamma(x): negative on (-2k-1, -2k) for x < 0
    return xp.where((x < 0) & (xp.floor(x) % 2 != 0), -1.0, 1.0)


# The special functions below evaluate in float64 whatever the data's float type: their series
# lose a few digits, which float64 absorbs, so a float32 result is correctly rounded as MXNet's
# (C library) one is.

def _f_gammaln(xp, x, o):
    x = x.astype("float64")
    value = xp.where((x == 1) | (x == 2), 0.0, _lanczos_gammaln(xp, x))  # exact, as C's lgamma
    xp.copyto(o, value, casting="unsafe")


def _f_gamma(xp, x, o):
    x = x.astype("float64")
    value = _gamma_sign(xp, x) * xp.exp(_lanczos_gammaln(xp, x))
    # at the poles, C's tgamma (MXNet's): +-inf at +-0, NaN at the negative integers
    value = xp.where(x == 0, xp.copysign(xp.inf, x), value)
    value = xp.where((x < 0) & (x == xp.floor(x)), xp.nan, value)
    # and exact factorials at 1, 2, ... 171 (Lanczos is off by an ulp or two there, which a
    # truncation to an integer dtype would turn into (n-1)! - 1)
    facts = xp.concatenate((xp.ones(1), xp.cumprod(xp.arange(1, 171, dtype="float64"))))
    exact = (x >= 1) & (x <= 171) & (x == xp.floor(x))
    index = (xp.clip(x, 1, 171) - 1).astype("int64")
    xp.copyto(o, xp.where(exact, facts[index], value), casting="unsafe")


def _erf_values(xp, x):
    # Maclaurin series for |x| < 2.5 (60 terms reach double precision there, losing about two
    # digits to cancellation), Laplace's continued fraction for erfc beyond.
    ax = xp.abs(x)
    term = ax
    total = ax * 1.0
    x2 = ax * ax
    for n in range(1, 60):
        term = term * (-x2) / n
        total = total + term / (2 * n + 1)
    series = total * (2 / math.sqrt(math.pi))
    big = xp.maximum(ax, 2.5)
    frac = big * 0
    for k in range(60, 0, -1):
        frac = (k / 2) / (big + frac)
    erfc = xp.exp(-big * big) / math.sqrt(math.pi) / (big + frac)
    value = xp.where(ax < 2.5, series, 1 - erfc)
    return xp.where(x < 0, -value, value)


def _f_erf(xp, x, o):
    xp.copyto(o, _erf_values(xp, x.astype("float64")), casting="unsafe")


def _f_erfinv(xp, x, o):
    # Winitzki's closed form (relative error about 2e-3) refined by Newton steps on the
    # float64 erf above: each step squares the error, so three reach double precision
    x = x.astype("float64")
    inner = xp.clip(x, -1 + 1e-16, 1 - 1e-16)  # the ends and beyond are set at the end
    a = 0.147
    ln = xp.log(1.0 - inner * inner)
    first = 2.0 / (math.pi * a) + ln / 2.0
    y = xp.sign(inner) * xp.sqrt(xp.sqrt(first * first - ln / a) - first)
    for _ in range(3):
        y = y - (_erf_values(xp, y) - inner) / ((2 / math.sqrt(math.pi)) * xp.exp(-y * y))
    y = xp.where(xp.abs(x) == 1, xp.copysign(xp.inf, x), y)
    xp.copyto(o, xp.where(xp.abs(x) > 1, xp.nan, y), casting="unsafe")


_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_DEG = 180.0 / math.pi
_RAD = math.pi / 180.0

# name -> (aliases, math, forward, gradient, reads: "in" / "out" / "both" / "")
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
    "relu": ("max(x, 0) (gradient 0 at 0)", lambda xp, x, o: xp.maximum(x, 0, out=o),
             lambda xp, dy, x, y, dx: xp.multiply(dy, y > 0, out=dx), "out"),
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
    "gamma": ("Gamma(x) (Lanczos approximation)", _f_gamma,
              lambda xp, dy, x, y, dx: xp.multiply(dy, y * _digamma(xp, x), out=dx), "both"),
    "gammaln": ("ln |Gamma(x)| (Lanczos approximation)", _f_gammaln,
                lambda xp, dy, x, y, dx: xp.multiply(dy, _digamma(xp, x), out=dx), "in"),
    "erf": ("the error function 2/sqrt(pi) * integral_0^x exp(-t*t) dt", _f_erf,
            lambda xp, dy, x, y, dx: xp.multiply(
                dy, (2 / math.sqrt(math.pi)) * xp.exp(-x * x), out=dx), "in"),
    "logical_not": ("x == 0 (0/1 in x's dtype)", _f_logical_not, None, ""),
    "erfinv": ("the inverse error function (|x| > 1 gives NaN, +-1 gives +-inf)", _f_erfinv,
               lambda xp, dy, x, y, dx: xp.multiply(
                   dy, (math.sqrt(math.pi) / 2) * xp.exp(y * y), out=dx), "out"),
    "rcbrt": ("1 / cbrt(x)", lambda xp, x, o: xp.reciprocal(xp.cbrt(x), out=o),
              lambda xp, dy, x, y, dx: xp.multiply(dy, y * y * y * y / -3, out=dx), "out"),
}

_UNARY_READS = {"in": ((0,), ()), "out": ((), (0,)), "both": ((0,), (0,)), "": ((), ())}

#: unary ops that compute in the data's own dtype (see `_Unary.kind`)
_UNARY_NATIVE = frozenset(("abs", "sign", "negative", "relu", "logical_not"))
_UNARY_ROUNDING = frozenset(("round", "rint", "floor", "ceil", "trunc", "fix"))

for _name, (_doc, _fwd, _grad, _reads) in _UNARY.items():
    _define(_Unary, _name, (),
            "out = %s, elementwise; out has data's shape and dtype." % _doc,
            dict(fwd=staticmethod(_fwd), grad=None if _grad is None else staticmethod(_grad),
                 no_gradient=_grad is None, backward_inputs=_UNARY_READS[_reads][0],
                 backward_outputs=_UNARY_READS[_reads][1],
                 kind="native" if _name in _UNARY_NATIVE else
                 "rounding" if _name in _UNARY_ROUNDING else "math"))


# ============================================================================ identity-like

@register
class CopyOp(Op):
    """out = data (a copy); the gradient passes through unchanged."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "_copy"
    aliases = ("identity",)
    inplace = ((0, 0),)
    backward_inputs = ()
    backward_outputs = ()

    def forward(self, xp, inputs, aux, out, is_train):
        if out[0] is not inputs[0]:
            xp.copyto(out[0], inputs[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            xp.copyto(in_grads[0], out_grads[0])


@register
class BlockGradOp(Op):
    """out = data; no gradient flows back (the input's gradient is zero)."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "BlockGrad"
    aliases = ("stop_gradient",)
    inplace = ((0, 0),)
    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True

    def forward(self, xp, inputs, aux, out, is_train):
        if out[0] is not inputs[0]:
            xp.copyto(out[0], inputs[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        _zero(in_grads)


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
        xp.clip(inputs[0], self.attrs.a_min, self.attrs.a_max, out=out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            x = inputs[0]
            xp.multiply(out_grads[0], (x >= self.attrs.a_min) & (x <= self.attrs.a_max),
                        out=in_grads[0])


@dataclasses.dataclass(frozen=True)
class CastAttrs:
    dtype: DTypeName


@register
class CastOp(Op):
    """out = data converted to `dtype` (same shape); the gradient is converted back."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "Cast"
    aliases = ("cast",)
    Attrs = CastAttrs
    backward_inputs = ()
    backward_outputs = ()

    def infer_type(self, in_types, out_types):
        return list(in_types), [dtype_of(self.attrs.dtype)]

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0], casting="unsafe")

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            xp.copyto(in_grads[0], out_grads[0], casting="unsafe")


@dataclasses.dataclass(frozen=True)
class AddNAttrs:
    num_args: int


@register
class AddNOp(VariadicOp):
    """out = arg0 + arg1 + ... (num_args arrays of one shape); each gradient is the head's."""

    name = "add_n"
    aliases = ("ElementWiseSum",)
    Attrs = AddNAttrs
    inplace = ((0, 0),)
    backward_inputs = ()
    backward_outputs = ()

    def forward(self, xp, inputs, aux, out, is_train):
        o = out[0]
        if len(inputs) == 1:
            if o is not inputs[0]:
                xp.copyto(o, inputs[0])
            return
        # out may share storage with arg0 only, which is read by the first addition
        xp.add(inputs[0], inputs[1], out=o)
        for x in inputs[2:]:
            o += x

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        for g in in_grads:
            if g is not None:
                xp.copyto(g, out_grads[0])


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
        self.same_shape(in_shapes, out_shapes, in_idx=(1, 2), out_idx=(0,))
        cond, full = in_shapes[0], in_shapes[1]
        if cond is not None and full is not None and len(cond) != len(full):
            if len(cond) != 1:
                raise ShapeError("input 'condition' has shape %s but x has %s: it must have x's "
                                 "shape or be 1-D over x's first axis"
                                 % (fmt_shape(cond), fmt_shape(full)))
            self.set_in(in_shapes, 0, full[:1], "a 1-D condition over x's first axis")
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


# ============================================================================ broadcast_to & co

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


# ============================================================================ creation

@dataclasses.dataclass(frozen=True)
class InitAttrs:
    shape: tuple[int, ...] = ()
    ctx: str = ""
    dtype: DTypeName = "float32"


@dataclasses.dataclass(frozen=True)
class FullAttrs:
    value: float
    shape: tuple[int, ...] = ()
    ctx: str = ""
    dtype: DTypeName = "float32"


def _legacy_shape(shape: tuple):
    """MXNet's legacy shape: () is an unknown shape and a 0 (or -1) dim is an unknown dim."""
    if not shape:
        return None
    return tuple(None if d <= 0 else d for d in shape)


class _Fill(Op):
    """Base of the input-less creation ops: out (of `shape`, 0 = unknown dim) filled with a
    constant; unknown dims are inferred backwards from the consumer."""

    ARGUMENTS = ()
    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True
    fill_value: float = 0.0

    def infer_shape(self, in_shapes, out_shapes):
        self.set_out(out_shapes, 0, _legacy_shape(self.attrs.shape), "its shape parameter")
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        return list(in_types), [dtype_of(self.attrs.dtype)]

    def forward(self, xp, inputs, aux, out, is_train):
        out[0].fill(self.fill_value)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        pass


@register
class ZerosOp(_Fill):
    """out = 0 of `shape` and `dtype`."""

    name = "_zeros"
    Attrs = InitAttrs


@register
class OnesOp(_Fill):
    """out = 1 of `shape` and `dtype`."""

    name = "_ones"
    Attrs = InitAttrs
    fill_value = 1.0


@register
class FullOp(_Fill):
    """out = `value` of `shape` and `dtype`."""

    name = "_full"
    PARAM_ORDER = ("shape", "ctx", "dtype", "value")
    Attrs = FullAttrs

    def __init__(self, attrs=None):
        super().__init__(attrs)
        self.fill_value = self.attrs.value


class _FillLike(Op):
    """Base of zeros_like / ones_like: out has data's shape and dtype; no gradient."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True
    fill_value: float = 0.0

    def forward(self, xp, inputs, aux, out, is_train):
        out[0].fill(self.fill_value)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        _zero(in_grads)


@register
class ZerosLikeOp(_FillLike):
    """out = 0 with data's shape and dtype."""

    name = "zeros_like"


@register
class OnesLikeOp(_FillLike):
    """out = 1 with data's shape and dtype."""

    name = "ones_like"
    fill_value = 1.0


class _Sequence(Op):
    """Base of the input-less, gradient-less value generators (_arange, _linspace, _eye):
    out has the op's own shape and `dtype`."""

    ARGUMENTS = ()
    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True

    def infer_type(self, in_types, out_types):
        return list(in_types), [dtype_of(self.attrs.dtype)]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        pass


@dataclasses.dataclass(frozen=True)
class ArangeAttrs:
    start: float
    stop: Optional[float] = None
    step: float = 1.0
    repeat: int = 1
    infer_range: bool = False
    ctx: str = ""
    dtype: DTypeName = "float32"


@register
class ArangeOp(_Sequence):
    """out = start, start + step, ... up to (excluding) stop, each value repeated `repeat` times
    (stop None: the range is [0, start)). With infer_range the length comes from the consumer."""

    name = "_arange"
    Attrs = ArangeAttrs

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        if a.step == 0 or a.repeat < 1:
            raise OpParamError("operator _arange: step must be non-zero and repeat >= 1, got "
                               "step=%r repeat=%r" % (a.step, a.repeat))
        start, stop = (0.0, a.start) if a.stop is None else (a.start, a.stop)
        self.start = start
        count = max(0, math.ceil((stop - start) / a.step))
        self.length = None if a.infer_range else count * a.repeat

    def infer_shape(self, in_shapes, out_shapes):
        self.set_out(out_shapes, 0, (self.length,), "its range")
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        _fill_range(xp, out[0], self.start, self.attrs.step, self.attrs.repeat)


def _fill_range(xp, out, start: float, step: float, repeat: int) -> None:
    """out.flat[j] = start + (j // repeat) * step, computed as MXNet's range kernel does: in the
    output dtype for float32/float64, and with start and step first truncated to integers for
    integer dtypes and (an MXNet quirk kept for equal results) float16; integers wrap around."""
    dtype = out.dtype
    index = xp.arange(out.size, dtype="int64") // repeat
    if dtype.kind in "iub" or dtype.name == "float16":
        values = index * int(step) + int(start)
    else:
        values = index.astype(dtype) * dtype.type(step) + dtype.type(start)
    xp.copyto(out, values.reshape(out.shape), casting="unsafe")


@dataclasses.dataclass(frozen=True)
class ArangeLikeAttrs:
    start: float = 0.0
    step: float = 1.0
    repeat: int = 1
    ctx: str = ""
    axis: Optional[int] = None


@register
class ArangeLikeOp(Op):
    """out = start, start + step, ... (each value repeated `repeat` times) in data's shape, or
    along data's `axis` as a 1-D array of that axis's size; data lends only its shape and dtype
    (MXNet's contrib.arange_like); its gradient is zero."""

    name = "_contrib_arange_like"
    Attrs = ArangeLikeAttrs
    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.repeat < 1:
            raise OpParamError("operator _contrib_arange_like: repeat must be >= 1, got %d"
                               % self.attrs.repeat)

    def infer_shape(self, in_shapes, out_shapes):
        data, axis = in_shapes[0], self.attrs.axis
        if data is None:
            return in_shapes, out_shapes
        if axis is None:
            self.set_out(out_shapes, 0, tuple(data))
        else:
            if not -len(data) <= axis < len(data):
                raise ShapeError("input 'data' has shape %s: axis=%d is out of range"
                                 % (fmt_shape(data), axis))
            self.set_out(out_shapes, 0, (data[axis],))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        a = self.attrs
        _fill_range(xp, out[0], a.start, a.step, a.repeat)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        _zero(in_grads)


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


@dataclasses.dataclass(frozen=True)
class LinspaceAttrs(ArangeAttrs):
    num: int = 50
    endpoint: bool = True


@register
class LinspaceOp(_Sequence):
    """out = `num` evenly spaced values from start to stop (stop itself only with endpoint).
    No inputs, no gradient."""

    name = "_linspace"
    # MXNet's frontend signature shows the range parameters it shares with _arange; num and
    # endpoint come by keyword (mx.sym.linspace passes them)
    PARAM_ORDER = ("start", "stop", "step", "repeat", "infer_range", "ctx", "dtype")
    Attrs = LinspaceAttrs

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.num < 0 or self.attrs.stop is None:
            raise OpParamError("operator _linspace: needs stop and num >= 0, got stop=%r num=%r"
                               % (self.attrs.stop, self.attrs.num))

    def infer_shape(self, in_shapes, out_shapes):
        self.set_out(out_shapes, 0, (self.attrs.num,), "its num")
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        # start + i * step in float64, as MXNet (the last value may differ from stop by an
        # ulp, where NumPy's linspace sets it to stop), then cast (integers truncate)
        a = self.attrs
        intervals = a.num - 1 if a.endpoint else a.num
        step = (a.stop - a.start) / intervals if intervals > 0 else 0.0
        values = xp.arange(a.num, dtype="float64") * step + a.start
        xp.copyto(out[0], values, casting="unsafe")


@dataclasses.dataclass(frozen=True)
class EyeAttrs:
    N: int
    M: int = 0
    k: int = 0
    ctx: str = ""
    dtype: DTypeName = "float32"


@register
class EyeOp(_Sequence):
    """out = an N x M (M = 0: N x N) matrix of zeros with ones on the k-th diagonal (k > 0
    above the main one). No inputs, no gradient."""

    name = "_eye"
    Attrs = EyeAttrs

    def infer_shape(self, in_shapes, out_shapes):
        a = self.attrs
        self.set_out(out_shapes, 0, (a.N, a.M or a.N), "its N and M")
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        a = self.attrs
        xp.copyto(out[0], xp.eye(a.N, a.M or a.N, a.k), casting="unsafe")
