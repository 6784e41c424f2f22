"""ONNX conversions of the elementwise operators: unary math, binary and broadcast arithmetic,
the scalar forms, comparisons and logic (which give 0/1 in the input's dtype, as in MXNet),
clip, cast, add_n, where, smooth_l1 and the operators without inputs (constants).
"""
from __future__ import annotations

import math

import numpy as np

from .builder import Site, converts

_UNARY = {
    "abs": "Abs", "negative": "Neg", "reciprocal": "Reciprocal", "exp": "Exp", "log": "Log",
    "sqrt": "Sqrt", "sin": "Sin", "cos": "Cos", "tan": "Tan", "arcsin": "Asin",
    "arccos": "Acos", "arctan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "tanh": "Tanh",
    "arcsinh": "Asinh", "arccosh": "Acosh", "arctanh": "Atanh", "sigmoid": "Sigmoid",
    "relu": "Relu", "floor": "Floor", "ceil": "Ceil", "sign": "Sign", "erf": "Erf",
    "softsign": "Softsign", "_copy": "Identity",
}

_BINARY = {
    "elemwise_add": "Add", "broadcast_add": "Add", "elemwise_sub": "Sub",
    "broadcast_sub": "Sub", "elemwise_mul": "Mul", "broadcast_mul": "Mul",
    "elemwise_div": "Div", "broadcast_div": "Div", "_maximum": "Max",
    "broadcast_maximum": "Max", "_minimum": "Min", "broadcast_minimum": "Min",
    "_power": "Pow", "broadcast_power": "Pow",
}

# comparisons: ONNX op and whether its boolean result is negated
_COMPARE = {
    "_equal": ("Equal", False), "broadcast_equal": ("Equal", False),
    "_not_equal": ("Equal", True), "broadcast_not_equal": ("Equal", True),
    "_greater": ("Greater", False), "broadcast_greater": ("Greater", False),
    "_greater_equal": ("Less", True), "broadcast_greater_equal": ("Less", True),
    "_lesser": ("Less", False), "broadcast_lesser": ("Less", False),
    "_lesser_equal": ("Greater", True), "broadcast_lesser_equal": ("Greater", True),
}
_LOGIC = {"_logical_and": "And", "broadcast_logical_and": "And", "_logical_or": "Or",
          "broadcast_logical_or": "Or", "_logical_xor": "Xor", "broadcast_logical_xor": "Xor"}

# scalar op -> (ONNX op, scalar on the left)
_SCALAR = {
    "_plus_scalar": ("Add", False), "_minus_scalar": ("Sub", False),
    "_rminus_scalar": ("Sub", True), "_mul_scalar": ("Mul", False),
    "_div_scalar": ("Div", False), "_rdiv_scalar": ("Div", True),
    "_power_scalar": ("Pow", False), "_rpower_scalar": ("Pow", True),
    "_maximum_scalar": ("Max", False), "_minimum_scalar": ("Min", False),
}
_SCALAR_COMPARE = {
    "_equal_scalar": "_equal", "_not_equal_scalar": "_not_equal",
    "_greater_scalar": "_greater", "_greater_equal_scalar": "_greater_equal",
    "_lesser_scalar": "_lesser", "_lesser_equal_scalar": "_lesser_equal",
}
_SCALAR_LOGIC = {"_logical_and_scalar": "_logical_and", "_logical_or_scalar": "_logical_or",
                 "_logical_xor_scalar": "_logical_xor"}

_BOOL = 9


def _tensor_type(site: Site, dtype) -> int:
    return site.b.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _scalar(site: Site) -> str:
    return site.b.const(site.attrs.scalar, site.name + "_scalar", site.in_dtypes[0])


@converts(*_UNARY)
def _unary(site: Site) -> None:
    site.b.add(_UNARY[site.node.op.name], [site.ins[0]], out=site.outs[0])


@converts("rsqrt", "square", "log1p", "expm1", "round", "rint", "fix", "trunc", "log2", "log10",
          "degrees", "radians", "hard_sigmoid", "logical_not")
def _unary_composed(site: Site) -> None:
    b, x, out, name = site.b, site.ins[0], site.outs[0], site.node.op.name
    dtype = site.in_dtypes[0]

    def const(value, hint):
        return b.const(value, site.name + "_" + hint, dtype)

    if name == "rsqrt":
        b.add("Reciprocal", [b.add("Sqrt", [x])], out=out)
    elif name == "square":
        b.add("Mul", [x, x], out=out)
    elif name == "log1p":
        b.add("Log", [b.add("Add", [x, const(1, "one")])], out=out)
    elif name == "expm1":
        b.add("Sub", [b.add("Exp", [x]), const(1, "one")], out=out)
    elif name == "round":  # halves away from zero; ONNX's Round takes them to even
        magnitude = b.add("Floor", [b.add("Add", [b.add("Abs", [x]), const(0.5, "half")])])
        b.add("Mul", [b.add("Sign", [x]), magnitude], out=out)
    elif name == "rint":  # MXNet's rint takes halves down: -1.5 to -2, 1.5 to 1
        low = b.add("Floor", [x])
        above = b.add("Greater", [b.add("Sub", [x, low]), const(0.5, "half")])
        b.add("Where", [above, b.add("Ceil", [x]), low], out=out)
    elif name in ("fix", "trunc"):
        b.add("Mul", [b.add("Sign", [x]), b.add("Floor", [b.add("Abs", [x])])], out=out)
    elif name in ("log2", "log10"):
        base = math.log(2.0 if name == "log2" else 10.0)
        b.add("Div", [b.add("Log", [x]), const(base, "log_base")], out=out)
    elif name in ("degrees", "radians"):
        factor = 180 / math.pi if name == "degrees" else math.pi / 180
        b.add("Mul", [x, const(factor, "factor")], out=out)
    elif name == "hard_sigmoid":
        b.add("HardSigmoid", [x], out=out, alpha=site.attrs.alpha, beta=site.attrs.beta)
    else:  # logical_not: 1 where x is 0
        zero = b.add("Equal", [x, const(0, "zero")])
        b.add("Cast", [zero], out=out, to=_tensor_type(site, site.out_dtypes[0]))


@converts(*_BINARY)
def _binary(site: Site) -> None:
    site.b.add(_BINARY[site.node.op.name], site.ins[:2], out=site.outs[0])


def _compare(site: Site, kind: str, lhs: str, rhs: str) -> None:
    b = site.b
    op_type, negate = _COMPARE[kind]
    flag = b.add(op_type, [lhs, rhs], hint=site.name + "_cmp")
    if negate:
        flag = b.add("Not", [flag], hint=site.name + "_not")
    b.add("Cast", [flag], out=site.outs[0], to=_tensor_type(site, site.out_dtypes[0]))


def _logic(site: Site, kind: str, lhs: str, rhs: str) -> None:
    b = site.b
    flags = [b.add("Cast", [v], hint=site.name + "_bool", to=_BOOL) for v in (lhs, rhs)]
    result = b.add(_LOGIC[kind], flags, hint=site.name + "_logic")
    b.add("Cast", [result], out=site.outs[0], to=_tensor_type(site, site.out_dtypes[0]))


@converts(*_COMPARE)
def _comparison(site: Site) -> None:
    _compare(site, site.node.op.name, site.ins[0], site.ins[1])


@converts(*_LOGIC)
def _logical(site: Site) -> None:
    _logic(site, site.node.op.name, site.ins[0], site.ins[1])


@converts(*_SCALAR)
def _scalar_arith(site: Site) -> None:
    op_type, left = _SCALAR[site.node.op.name]
    pair = [_scalar(site), site.ins[0]] if left else [site.ins[0], _scalar(site)]
    site.b.add(op_type, pair, out=site.outs[0])


@converts(*_SCALAR_COMPARE)
def _scalar_comparison(site: Site) -> None:
    _compare(site, _SCALAR_COMPARE[site.node.op.name], site.ins[0], _scalar(site))


@converts(*_SCALAR_LOGIC)
def _scalar_logical(site: Site) -> None:
    _logic(site, _SCALAR_LOGIC[site.node.op.name], site.ins[0], _scalar(site))


@converts("clip")
def _clip(site: Site) -> None:
    b, a, dtype = site.b, site.attrs, site.in_dtypes[0]
    b.add("Clip", [site.ins[0], b.const(a.a_min, site.name + "_min", dtype),
                   b.const(a.a_max, site.name + "_max", dtype)], out=site.outs[0])


@converts("Cast", "amp_cast")
def _cast(site: Site) -> None:
    site.b.add("Cast", [site.ins[0]], out=site.outs[0],
               to=_tensor_type(site, site.out_dtypes[0]))


@converts("add_n")
def _add_n(site: Site) -> None:
    site.b.add("Sum", site.ins, out=site.outs[0])


@converts("where")
def _where(site: Site) -> None:
    b = site.b
    cond = b.add("Cast", [site.ins[0]], hint=site.name + "_cond", to=_BOOL)
    rank = site.rank(1)
    if site.rank(0) == 1 and rank > 1:  # a 1-D condition picks whole rows
        cond = b.unsqueeze(cond, list(range(1, rank)), hint=site.name + "_rows")
    b.add("Where", [cond, site.ins[1], site.ins[2]], out=site.outs[0])


@converts("zeros_like", "ones_like")
def _constant_like(site: Site) -> None:
    b = site.b
    value = 0 if site.node.op.name == "zeros_like" else 1
    fill = b.helper.make_tensor("value", _tensor_type(site, site.out_dtypes[0]), [1], [value])
    b.add("ConstantOfShape", [b.add("Shape", [site.ins[0]], hint=site.name + "_shape")],
          out=site.outs[0], value=fill)


@converts("_zeros", "_ones", "_full", "_arange", "_linspace", "_eye")
def _constant(site: Site) -> None:
    """Operators without inputs are constants: their values, computed by the op itself."""
    value = np.empty(site.fixed_shape(0, "output"), site.out_dtypes[0])
    site.node.op.forward(np, [], [], [value], False)
    site.b.add("Identity", [site.b.const(value, site.name + "_value")], out=site.outs[0])


@converts("smooth_l1")
def _smooth_l1(site: Site) -> None:
    """0.5 (s x)^2 where |x| < 1/s^2, else |x| - 0.5/s^2 (s = scalar)."""
    b, x, dtype = site.b, site.ins[0], site.in_dtypes[0]
    s2 = float(site.attrs.scalar) ** 2
    size = b.add("Abs", [x], hint=site.name + "_abs")
    inside = b.add("Less", [size, b.const(1 / s2, site.name + "_knee", dtype)])
    square = b.add("Mul", [b.add("Mul", [x, x]), b.const(0.5 * s2, site.name + "_half_s2",
                                                        dtype)])
    linear = b.add("Sub", [size, b.const(0.5 / s2, site.name + "_offset", dtype)])
    b.add("Where", [inside, square, linear], out=site.outs[0])
