"""Elementwise routines: the unary math functions with MXNet's dtype rules, the binary ones
(arithmetic, comparisons, logic, with broadcasting), add_n, clip, cast, and the row-wise
activations softmax, log_softmax and smooth_l1.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...ops.helpers import cast as cast_array
from ...ops.registry import get_op_class
from ..core import NDArray, binary_op, device_scope
from ..rules import normalize_dtype
from ..sparse import math as sparse_math
from .common import _result, recorded


def _unary(fn: Callable, kind: str = "math", op: str = "") -> Callable:
    """An elementwise routine keeping the input dtype, with the unary operators' dtype rules
    (ops/elemwise.py `_Unary`): "math" functions evaluate float16 in float32 and integers in
    float64, then cast back (truncating); "native" ones compute in the data's dtype;
    "rounding" ones leave integers unchanged. Where operator `op` keeps a sparse input's
    storage type (`Op.keeps_sparse`), so does the routine."""
    def routine(data: NDArray, out: NDArray | None = None, name: str | None = None) -> NDArray:
        if out is None and data.stype != "default" and op and get_op_class(op).keeps_sparse:
            return data._map_values(routine)
        xp, x = data._xp, data._data
        with np.errstate(all="ignore"), device_scope(data.context):
            if kind == "rounding" and x.dtype.kind in "iub":
                result = x.copy()
            elif kind == "math" and x.dtype not in (np.float32, np.float64):
                wide = np.float64 if x.dtype.kind in "iub" else np.float32
                result = fn(xp, x.astype(wide)).astype(x.dtype)
            else:
                result = fn(xp, x)
                if result.dtype != x.dtype:
                    result = result.astype(x.dtype)
        return _result(result, data, out)
    if op:
        routine.__name__ = routine.__qualname__ = op
    return routine


def _sigmoid(xp, x):
    return 1 / (1 + xp.exp(-x))


log = recorded("log")(_unary(lambda xp, x: xp.log(x)))
exp = recorded("exp")(_unary(lambda xp, x: xp.exp(x)))
sqrt = recorded("sqrt")(_unary(lambda xp, x: xp.sqrt(x), op="sqrt"))
square = recorded("square")(_unary(lambda xp, x: xp.square(x), op="square"))
abs = recorded("abs")(_unary(lambda xp, x: xp.abs(x), "native", "abs"))
sign = _unary(lambda xp, x: xp.sign(x), "native", "sign")
sigmoid = recorded("sigmoid")(_unary(_sigmoid))
tanh = recorded("tanh")(_unary(lambda xp, x: xp.tanh(x), op="tanh"))
relu = recorded("relu")(_unary(lambda xp, x: xp.maximum(x, 0), "native", "relu"))
negative = recorded("negative")(_unary(lambda xp, x: xp.negative(x), "native",
                                              "negative"))
reciprocal = recorded("reciprocal")(_unary(lambda xp, x: xp.reciprocal(x)))
log1p = recorded("log1p")(_unary(lambda xp, x: xp.log1p(x), op="log1p"))
expm1 = recorded("expm1")(_unary(lambda xp, x: xp.expm1(x), op="expm1"))
floor = _unary(lambda xp, x: xp.floor(x), "rounding", "floor")
ceil = _unary(lambda xp, x: xp.ceil(x), "rounding", "ceil")
round = _unary(lambda xp, x: xp.where(x >= 0, xp.floor(x + 0.5), xp.ceil(x - 0.5)),
               "rounding", "round")
rsqrt = recorded("rsqrt")(_unary(lambda xp, x: 1 / xp.sqrt(x)))
cos = recorded("cos")(_unary(lambda xp, x: xp.cos(x)))
sin = recorded("sin")(_unary(lambda xp, x: xp.sin(x), op="sin"))


def _binary(op: str) -> Callable:
    def routine(lhs, rhs, out: NDArray | None = None, name: str | None = None):
        if out is None and _keeps_sparse(op, lhs, rhs):
            return sparse_math.binary(op, lhs, rhs)
        return binary_op(op, lhs, rhs, out=out)
    routine.__name__ = routine.__qualname__ = op
    return routine


def _is_sparse(value) -> bool:
    return isinstance(value, NDArray) and value.stype != "default"


def _keeps_sparse(op: str, lhs, rhs) -> bool:
    """Whether MXNet's `mx.nd.<op>` keeps a sparse operand's storage type (sparse/math.py
    then says which): with a number, or for multiply(CSR, dense); two arrays otherwise go
    through its broadcasting operators, which give dense results."""
    if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
        return op in ("multiply", "divide") and lhs.stype == "csr" and rhs.stype == "default"
    return _is_sparse(lhs) or _is_sparse(rhs)


add = broadcast_add = _binary("add")
subtract = broadcast_sub = _binary("subtract")
multiply = broadcast_mul = _binary("multiply")
divide = broadcast_div = _binary("divide")
elemwise_add = sparse_math.elemwise_function("add", "elemwise_add")
elemwise_sub = sparse_math.elemwise_function("subtract", "elemwise_sub")
elemwise_mul = sparse_math.elemwise_function("multiply", "elemwise_mul")
elemwise_div = sparse_math.elemwise_function("divide", "elemwise_div")


def power(base, exp, out: NDArray | None = None, name: str | None = None):
    """base ** exp, broadcasting (either may be a number)."""
    return binary_op("power", base, exp, out=out)


modulo = _binary("mod")
equal = _binary("equal")
not_equal = _binary("not_equal")
greater = _binary("greater")
greater_equal = _binary("greater_equal")
lesser = _binary("lesser")
lesser_equal = _binary("lesser_equal")
logical_and = _binary("logical_and")
logical_or = _binary("logical_or")
logical_xor = _binary("logical_xor")
true_divide = divide
maximum = broadcast_maximum = _binary("maximum")
minimum = broadcast_minimum = _binary("minimum")


@recorded("add_n", variadic=True)
def add_n(*args: NDArray, out: NDArray | None = None, **_ignored) -> NDArray:
    """The elementwise sum of arrays of one shape (row-sparse when every one is, as MXNet's)."""
    if out is None and len(args) > 1 and all(a.stype == "row_sparse" for a in args):
        total = args[0]
        for arg in args[1:]:
            total = sparse_math.binary("add", total, arg)
        return total
    total = args[0].copy()
    for arg in args[1:]:
        total += arg
    return _result(total._data, total, out)


@recorded("clip")
def clip(data: NDArray, a_min: float, a_max: float, out: NDArray | None = None) -> NDArray:
    """Values limited to [a_min, a_max]; a sparse array keeps its storage type where the
    range holds 0 (as MXNet's)."""
    if out is None and data.stype != "default" and a_min <= 0 <= a_max:
        return data._map_values(lambda values: clip(values, a_min, a_max))
    dtype = data._data.dtype
    # NumPy scalars (not 0-d arrays): CuPy takes them as kernel arguments
    lo, hi = np.array(a_min).astype(dtype)[()], np.array(a_max).astype(dtype)[()]
    with device_scope(data.context):
        return _result(data._xp.clip(data._data, lo, hi), data, out)


@recorded("Cast")
def cast(data: NDArray, dtype: Any, out: NDArray | None = None) -> NDArray:
    with device_scope(data.context):
        return _result(cast_array(data._xp, data._data, normalize_dtype(dtype)), data, out)



@recorded("softmax")
def softmax(data: NDArray, axis: int = -1, temperature: float | None = None,
            out: NDArray | None = None, **_ignored) -> NDArray:
    """exp(x / T) normalised to sum 1 along `axis`."""
    with device_scope(data.context):
        xp, x = data._xp, data._data
        scaled = x / temperature if temperature else x
        shifted = scaled - xp.max(scaled, axis=axis, keepdims=True)
        e = xp.exp(shifted)
        result = e / xp.sum(e, axis=axis, keepdims=True)
        return _result(result.astype(x.dtype, copy=False), data, out)


@recorded("log_softmax")
def log_softmax(data: NDArray, axis: int = -1, temperature: float | None = None,
                out: NDArray | None = None, **_ignored) -> NDArray:
    """log(softmax(x / T)) along `axis`, computed stably."""
    with device_scope(data.context):
        xp, x = data._xp, data._data
        scaled = x / temperature if temperature else x
        shifted = scaled - xp.max(scaled, axis=axis, keepdims=True)
        result = shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))
        return _result(result.astype(x.dtype, copy=False), data, out)


@recorded("smooth_l1")
def smooth_l1(data: NDArray, scalar: float = 1.0, out: NDArray | None = None) -> NDArray:
    with device_scope(data.context):
        xp, x = data._xp, data._data
        s2 = scalar * scalar
        result = xp.where(xp.abs(x) < 1.0 / s2, 0.5 * s2 * x * x, xp.abs(x) - 0.5 / s2)
        return _result(result.astype(x.dtype, copy=False), data, out)
