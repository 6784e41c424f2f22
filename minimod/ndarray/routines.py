"""Math routines on NDArrays (`mx.nd.dot`, `mx.nd.sum`, `mx.nd.concat` ...).

Each routine works directly on the backend array module (`xp`) of its input's context; none go
through the operator registry (that is the symbolic executor's job). Contracts follow MXNet
1.9.1: results are new arrays (never views of the input), results keep the input dtype (argmax
of a float32 array gives float32 indices, the mean of an int32 array is truncated to int32),
reductions over every axis return shape (1,), and every routine accepts `out=` to write the result
into an existing NDArray instead.
"""
from __future__ import annotations

import builtins
import numbers
from collections.abc import Sequence
from typing import Any, Callable, Optional, Union

import numpy as np

from ..base import MXNetError, ShapeError
from .imperative import invoke
from .ndarray import (
    NDArray,
    as_backend_operand,
    binary_op,
    device_scope,
    normalize_dtype,
    wrap,
)

__all__ = [
    "METHODS",
    "histogram",
    "abs",
    "add",
    "add_n",
    "argmax",
    "argmin",
    "argsort",
    "batch_dot",
    "broadcast_add",
    "broadcast_div",
    "broadcast_maximum",
    "broadcast_minimum",
    "broadcast_mul",
    "broadcast_sub",
    "broadcast_to",
    "cast",
    "ceil",
    "clip",
    "concat",
    "concatenate",
    "cos",
    "divide",
    "dot",
    "elemwise_add",
    "elemwise_div",
    "elemwise_mul",
    "elemwise_sub",
    "equal",
    "exp",
    "expand_dims",
    "expm1",

    "flatten",
    "flip",
    "floor",
    "greater",
    "greater_equal",
    "lesser",
    "lesser_equal",
    "log",
    "log1p",
    "log_softmax",
    "logical_and",
    "logical_or",
    "logical_xor",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "modulo",
    "moveaxis",
    "multiply",
    "nansum",
    "negative",
    "norm",
    "not_equal",
    "one_hot",
    "ones_like",
    "pick",
    "power",
    "prod",
    "reciprocal",
    "relu",
    "repeat",
    "reshape",
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "sin",
    "slice_axis",
    "smooth_l1",
    "softmax",
    "sort",
    "split",
    "split_v2",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "subtract",
    "sum",
    "swapaxes",
    "take",
    "tanh",
    "tile",
    "topk",
    "transpose",
    "true_divide",
    "where",
    "zeros_like",
]

Axis = Optional[Union[int, Sequence[int]]]


def _result(data, like: NDArray, out: NDArray | None) -> NDArray:
    """Wrap backend array `data` on `like`'s context, or copy it into `out`."""
    if out is not None:
        out[:] = wrap(data, like.context)
        return out
    return wrap(data, like.context)


def _at_least_1d(data):
    return data.reshape((1,)) if data.ndim == 0 else data


def _unary(fn: Callable, kind: str = "math") -> Callable:
    """An elementwise routine keeping the input dtype, with the unary operators' dtype rules
    (ops/elemwise.py `_Unary`): "math" functions evaluate float16 in float32 and integers in
    float64, then cast back (truncating); "native" ones compute in the data's dtype;
    "rounding" ones leave integers unchanged."""
    def routine(data: NDArray, out: NDArray | None = None, **_ignored) -> NDArray:
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
    return routine


def _sigmoid(xp, x):
    return 1 / (1 + xp.exp(-x))


log = _unary(lambda xp, x: xp.log(x))
exp = _unary(lambda xp, x: xp.exp(x))
sqrt = _unary(lambda xp, x: xp.sqrt(x))
square = _unary(lambda xp, x: xp.square(x))
abs = _unary(lambda xp, x: xp.abs(x), "native")
sign = _unary(lambda xp, x: xp.sign(x), "native")
sigmoid = _unary(_sigmoid)
tanh = _unary(lambda xp, x: xp.tanh(x))
relu = _unary(lambda xp, x: xp.maximum(x, 0), "native")
negative = _unary(lambda xp, x: xp.negative(x), "native")
reciprocal = _unary(lambda xp, x: xp.reciprocal(x))
log1p = _unary(lambda xp, x: xp.log1p(x))
expm1 = _unary(lambda xp, x: xp.expm1(x))
floor = _unary(lambda xp, x: xp.floor(x), "rounding")
ceil = _unary(lambda xp, x: xp.ceil(x), "rounding")
round = _unary(lambda xp, x: xp.where(x >= 0, xp.floor(x + 0.5), xp.ceil(x - 0.5)),
               "rounding")
rsqrt = _unary(lambda xp, x: 1 / xp.sqrt(x))
cos = _unary(lambda xp, x: xp.cos(x))
sin = _unary(lambda xp, x: xp.sin(x))


def _binary(name: str) -> Callable:
    def routine(lhs, rhs, out: NDArray | None = None, **_ignored):
        return binary_op(name, lhs, rhs, out=out)
    routine.__name__ = name
    return routine


add = broadcast_add = elemwise_add = _binary("add")
subtract = broadcast_sub = elemwise_sub = _binary("subtract")
multiply = broadcast_mul = elemwise_mul = _binary("multiply")
divide = broadcast_div = elemwise_div = _binary("divide")
power = _binary("power")
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


def add_n(*args: NDArray, out: NDArray | None = None, **_ignored) -> NDArray:
    """The elementwise sum of arrays of one shape."""
    total = args[0].copy()
    for arg in args[1:]:
        total += arg
    return _result(total._data, total, out)


def clip(data: NDArray, a_min: float, a_max: float, out: NDArray | None = None) -> NDArray:
    """Values limited to [a_min, a_max]."""
    dtype = data._data.dtype
    # NumPy scalars (not 0-d arrays): CuPy takes them as kernel arguments
    lo, hi = np.array(a_min).astype(dtype)[()], np.array(a_max).astype(dtype)[()]
    with device_scope(data.context):
        return _result(data._xp.clip(data._data, lo, hi), data, out)


def cast(data: NDArray, dtype: Any, out: NDArray | None = None) -> NDArray:
    with device_scope(data.context):
        return _result(data._data.astype(normalize_dtype(dtype)), data, out)


# --------------------------------------------------------------------------- reductions

def _axes(ndim: int, axis: Axis, exclude: bool = False) -> tuple | None:
    """Normalised reduction axes; None means every axis."""
    if axis is None or axis == ():
        return None
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    axes = tuple(sorted(int(a) % ndim if ndim else 0 for a in axes))
    if exclude:
        axes = tuple(a for a in range(ndim) if a not in axes)
    return axes


def _reduce(fn: Callable, name: str) -> Callable:
    def routine(data: NDArray, axis: Axis = None, keepdims: bool = False, exclude: bool = False,
                out: NDArray | None = None, **_ignored) -> NDArray:
        xp, x = data._xp, data._data
        axes = _axes(x.ndim, axis, exclude)
        with np.errstate(all="ignore"), device_scope(data.context):
            result = fn(xp, x, axes, keepdims)
            if result.dtype != x.dtype:
                result = result.astype(x.dtype)
        return _result(_at_least_1d(result), data, out)
    routine.__name__ = name
    return routine


def _sum_fn(xp, x, axes, keepdims):
    return xp.sum(x, axis=axes, keepdims=keepdims)


def _mean_fn(xp, x, axes, keepdims):
    if np.issubdtype(x.dtype, np.integer):
        # MXNet divides the integer sum by the count in the integer type (truncation).
        total = xp.sum(x, axis=axes, keepdims=keepdims, dtype=np.int64)
        count = x.size // builtins.max(total.size, 1)
        return xp.trunc(total / builtins.max(count, 1))
    return xp.mean(x, axis=axes, keepdims=keepdims)


sum = _reduce(_sum_fn, "sum")
mean = _reduce(_mean_fn, "mean")
max = _reduce(lambda xp, x, axes, keepdims: xp.max(x, axis=axes, keepdims=keepdims), "max")
min = _reduce(lambda xp, x, axes, keepdims: xp.min(x, axis=axes, keepdims=keepdims), "min")
prod = _reduce(lambda xp, x, axes, keepdims: xp.prod(x, axis=axes, keepdims=keepdims), "prod")
nansum = _reduce(lambda xp, x, axes, keepdims: xp.nansum(x, axis=axes, keepdims=keepdims),
                 "nansum")


def norm(data: NDArray, ord: int = 2, axis: Axis = None, keepdims: bool = False,
         out: NDArray | None = None, **_ignored) -> NDArray:
    """The L1 or L2 norm over `axis` (all axes by default: shape (1,))."""
    if ord not in (1, 2):
        raise MXNetError(f"norm: ord must be 1 or 2, got {ord!r}")
    xp, x = data._xp, data._data
    axes = _axes(x.ndim, axis)
    with device_scope(data.context):
        if ord == 1:
            result = xp.sum(xp.abs(x), axis=axes, keepdims=keepdims)
        else:
            wide = x.astype(np.float64) if x.dtype == np.float16 else x
            result = xp.sqrt(xp.sum(wide * wide, axis=axes, keepdims=keepdims))
        result = result.astype(x.dtype, copy=False)
    return _result(_at_least_1d(result), data, out)


def _arg_reduce(fn_name: str) -> Callable:
    def routine(data: NDArray, axis: int | None = None, keepdims: bool = False,
                out: NDArray | None = None, **_ignored) -> NDArray:
        xp, x = data._xp, data._data
        with device_scope(data.context):
            if axis is None:
                result = getattr(xp, fn_name)(x.reshape(-1)).reshape((1,) * (
                    x.ndim if keepdims else 1))
            else:
                result = getattr(xp, fn_name)(x, axis=int(axis))
                if keepdims:
                    result = xp.expand_dims(result, int(axis))
            result = result.astype(x.dtype)
        return _result(_at_least_1d(result), data, out)
    routine.__name__ = fn_name
    return routine


argmax = _arg_reduce("argmax")
argmin = _arg_reduce("argmin")


def topk(data: NDArray, axis: int = -1, k: int = 1, ret_typ: str = "indices",
         is_ascend: bool = False, dtype: Any = np.float32,
         out: NDArray | None = None) -> NDArray | list[NDArray]:
    """The k largest (or smallest) entries along `axis`: indices, values or both."""
    xp, x = data._xp, data._data
    ctx = data.context
    with device_scope(ctx):
        order = xp.argsort(x if is_ascend else -x, axis=axis, kind="stable")
        idx = xp.take(order, xp.arange(int(k)), axis=axis)
        values = xp.take_along_axis(x, idx, axis=axis)
        indices = wrap(idx.astype(normalize_dtype(dtype)), ctx)
    if ret_typ == "indices":
        return _result(indices._data, data, out)
    if ret_typ == "value":
        return _result(values, data, out)
    if ret_typ == "both":
        return [wrap(values, ctx), indices]
    if ret_typ == "mask":
        with device_scope(ctx):
            mask = xp.zeros_like(x)
            xp.put_along_axis(mask, idx, 1, axis=axis)
        return _result(mask, data, out)
    raise MXNetError(f"topk: unknown ret_typ {ret_typ!r}")


def sort(data: NDArray, axis: int = -1, is_ascend: bool = True,
         out: NDArray | None = None) -> NDArray:
    with device_scope(data.context):
        result = data._xp.sort(data._data, axis=axis)
        if not is_ascend:
            result = data._xp.flip(result, axis=axis)
        return _result(result.copy(), data, out)


def argsort(data: NDArray, axis: int = -1, is_ascend: bool = True, dtype: Any = np.float32,
            out: NDArray | None = None) -> NDArray:
    x = data._data
    with device_scope(data.context):
        result = data._xp.argsort(x if is_ascend else -x, axis=axis, kind="stable")
        return _result(result.astype(normalize_dtype(dtype)), data, out)


# --------------------------------------------------------------------------- indexing

def _indices(index: NDArray, size: int, mode: str, xp):
    """Float or int index values as int64, clipped or wrapped into [0, size)."""
    idx = index._data.astype(np.int64)
    if mode == "clip":
        return xp.clip(idx, 0, size - 1)
    if mode == "wrap":
        return xp.mod(idx, size)
    if mode == "raise":
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= size):
            raise MXNetError(f"index out of range [0, {size})")
        return idx
    raise MXNetError(f"unknown index mode {mode!r} (expected 'clip', 'wrap' or 'raise')")


def pick(data: NDArray, index: NDArray, axis: int = -1, keepdims: bool = False,
         mode: str = "clip", out: NDArray | None = None) -> NDArray:
    """data[..., index[...], ...]: one entry along `axis` per position of `index`."""
    xp, x = data._xp, data._data
    axis = int(axis) % x.ndim
    with device_scope(data.context):
        idx = _indices(index.as_in_context(data.context), x.shape[axis], mode, xp)
        idx = xp.expand_dims(idx.reshape(x.shape[:axis] + x.shape[axis + 1:]), axis)
        result = xp.take_along_axis(x, idx, axis=axis)
        if not keepdims:
            result = result.squeeze(axis)
        return _result(_at_least_1d(result), data, out)


def take(a: NDArray, indices: NDArray, axis: int = 0, mode: str = "clip",
         out: NDArray | None = None) -> NDArray:
    """Entries of `a` along `axis` at `indices` (result shape: indices.shape spliced in)."""
    xp = a._xp
    axis = int(axis) % a.ndim
    with device_scope(a.context):
        idx = _indices(indices.as_in_context(a.context), a.shape[axis], mode, xp)
        return _result(xp.take(a._data, idx, axis=axis), a, out)


def one_hot(indices: NDArray, depth: int, on_value: float = 1.0, off_value: float = 0.0,
            dtype: Any = np.float32, out: NDArray | None = None) -> NDArray:
    """A new last axis of size `depth` with `on_value` at each index; out-of-range rows are
    all `off_value`."""
    xp = indices._xp
    kind = normalize_dtype(dtype)
    with device_scope(indices.context):
        idx = indices._data.astype(np.int64)
        hot = idx[..., None] == xp.arange(int(depth))
        # NumPy scalars (not 0-d arrays): CuPy takes them as kernel arguments
        result = xp.where(hot, np.array(on_value).astype(kind)[()],
                          np.array(off_value).astype(kind)[()])
        return _result(result.astype(kind, copy=False), indices, out)


def where(condition: NDArray, x: NDArray, y: NDArray, out: NDArray | None = None) -> NDArray:
    """x where condition is nonzero, else y; condition has x's shape or is 1-D over axis 0."""
    xp = x._xp
    cond = as_backend_operand(condition, x.context) != 0
    if cond.shape != x.shape:
        if cond.ndim != 1 or cond.shape[0] != x.shape[0]:
            raise ShapeError(f"where: condition shape {tuple(cond.shape)} must be {x.shape} "
                             f"or ({x.shape[0]},)")
        cond = cond.reshape((-1,) + (1,) * (x.ndim - 1))
    with device_scope(x.context):
        return _result(xp.where(cond, x._data, as_backend_operand(y, x.context)), x, out)


# --------------------------------------------------------------------------- joining, splitting

def concat(*data: NDArray, dim: int = 1, out: NDArray | None = None, **_ignored) -> NDArray:
    """The arrays joined along axis `dim` (they must agree in every other dim)."""
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = tuple(data[0])
    first = data[0]
    parts = [as_backend_operand(d, first.context) for d in data]
    try:
        with device_scope(first.context):
            result = first._xp.concatenate(parts, axis=dim)
    except ValueError as err:
        raise ShapeError(f"concat along dim {dim}: shapes {[d.shape for d in data]} "
                         "do not fit") from err
    return _result(result, first, out)


def concatenate(arrays: Sequence[NDArray], axis: int = 0, always_copy: bool = True) -> NDArray:
    """The arrays joined along `axis`; one array is returned as is unless always_copy."""
    if not arrays:
        raise MXNetError("concatenate needs at least one array")
    if len(arrays) == 1 and not always_copy:
        return arrays[0]
    return concat(*arrays, dim=axis)


def stack(*data: NDArray, axis: int = 0, out: NDArray | None = None, **_ignored) -> NDArray:
    """The arrays (one shape) joined along a new axis."""
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = tuple(data[0])
    first = data[0]
    parts = [as_backend_operand(d, first.context) for d in data]
    with device_scope(first.context):
        return _result(first._xp.stack(parts, axis=axis), first, out)


def split(data: NDArray, num_outputs: int, axis: int = 1,
          squeeze_axis: bool = False) -> NDArray | list[NDArray]:
    """`num_outputs` equal parts along `axis` (a single NDArray when num_outputs is 1)."""
    with device_scope(data.context):
        if data.shape[axis] % num_outputs:
            raise ShapeError(f"split: dim {axis} of shape {data.shape} is not divisible by "
                             f"num_outputs={num_outputs}")
        parts = data._xp.split(data._data, num_outputs, axis=axis)
        if squeeze_axis:
            parts = [p.squeeze(axis) for p in parts]
        outs = [wrap(p.copy(), data.context) for p in parts]
        return outs[0] if num_outputs == 1 else outs


def split_v2(ary: NDArray, indices_or_sections: int | tuple, axis: int = 0,
             squeeze_axis: bool = False) -> NDArray | list[NDArray]:
    """Split `ary` along `axis` into N equal parts (indices_or_sections=N, which must divide
    the axis: ValueError otherwise) or at the sorted boundaries of a tuple ((2, 3) gives
    ary[:2], ary[2:3], ary[3:]), through the `_split_v2` operator. With squeeze_axis the parts
    (of size 1 along the axis) lose that axis. One part comes back as an NDArray."""
    if isinstance(indices_or_sections, bool):
        raise ValueError("indices_or_sections must be an int or a tuple of ints")
    if isinstance(indices_or_sections, numbers.Integral):
        sections = int(indices_or_sections)
        size = ary.shape[axis]
        if sections < 1 or size % sections:
            raise ValueError(f"split_v2: {sections} sections do not divide axis {axis} of "
                             f"shape {ary.shape} equally")
        indices = tuple(range(0, size, size // sections)) if size else (0,) * sections
    elif isinstance(indices_or_sections, tuple):
        indices = (0,) + tuple(int(i) for i in indices_or_sections)
    else:
        raise ValueError("indices_or_sections must be an int or a tuple of ints, got "
                         f"{type(indices_or_sections).__name__}")
    return invoke("_split_v2", (ary,),
                  dict(indices=indices, axis=axis, squeeze_axis=squeeze_axis))


def moveaxis(tensor: NDArray, source: int | Sequence[int],
             destination: int | Sequence[int]) -> NDArray:
    """A copy of `tensor` with the axes at `source` moved to `destination` (ints or sequences
    of one length; negatives count from the end) and the other axes kept in order. Axes out
    of range or repeated raise ValueError."""
    ndim = tensor.ndim

    def normalize(axes, what):
        axes = [axes] if isinstance(axes, numbers.Integral) else list(axes)
        out = []
        for a in axes:
            if not -ndim <= int(a) < ndim:
                raise ValueError(f"moveaxis: {what} axis {a} is out of range for an array "
                                 f"of {ndim} dimensions")
            out.append(int(a) % ndim)
        if len(set(out)) != len(out):
            raise ValueError(f"moveaxis: repeated axis in {what} {axes}")
        return out

    src, dst = normalize(source, "source"), normalize(destination, "destination")
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination need the same number of axes, got "
                         f"{len(src)} and {len(dst)}")
    order = [a for a in range(ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(tensor, axes=order)


def slice_axis(data: NDArray, axis: int, begin: int, end: int | None,
               out: NDArray | None = None) -> NDArray:
    """A copy of data[begin:end] along `axis` (negative begin/end count from the end)."""
    with device_scope(data.context):
        axis = int(axis) % data.ndim
        key = (slice(None),) * axis + (slice(begin, end),)
        return _result(data._data[key].copy(), data, out)


def tile(data: NDArray, reps: Sequence[int], out: NDArray | None = None) -> NDArray:
    with device_scope(data.context):
        return _result(data._xp.tile(data._data, tuple(reps)), data, out)


def repeat(data: NDArray, repeats: int, axis: int | None = None,
           out: NDArray | None = None) -> NDArray:
    with device_scope(data.context):
        return _result(data._xp.repeat(data._data, int(repeats), axis=axis), data, out)


def flip(data: NDArray, axis: int | Sequence[int],
         out: NDArray | None = None) -> NDArray:
    with device_scope(data.context):
        return _result(data._xp.flip(data._data, axis=axis).copy(), data, out)


# --------------------------------------------------------------------------- products

def dot(lhs: NDArray, rhs: NDArray, transpose_a: bool = False, transpose_b: bool = False,
        out: NDArray | None = None, **_ignored) -> NDArray:
    """Sum over the last axis of lhs and the first axis of rhs (after optional transposes,
    which reverse all axes): shape lhs.shape[:-1] + rhs.shape[1:]; 1-D . 1-D gives (1,)."""
    xp = lhs._xp
    a = lhs._data.transpose() if transpose_a else lhs._data
    b = rhs._data.transpose() if transpose_b else rhs._data
    if a.shape[-1] != b.shape[0]:
        raise ShapeError(f"dot: shapes {tuple(a.shape)} and {tuple(b.shape)} do not align "
                         f"({a.shape[-1]} != {b.shape[0]})")
    with device_scope(lhs.context):
        result = xp.tensordot(a, b, axes=1)
    return _result(_at_least_1d(result), lhs, out)


def batch_dot(lhs: NDArray, rhs: NDArray, transpose_a: bool = False, transpose_b: bool = False,
              out: NDArray | None = None, **_ignored) -> NDArray:
    """Matrix products of matching batches: (B, M, K) x (B, K, N) -> (B, M, N)."""
    xp = lhs._xp
    a = xp.swapaxes(lhs._data, -1, -2) if transpose_a else lhs._data
    b = xp.swapaxes(rhs._data, -1, -2) if transpose_b else rhs._data
    try:
        with device_scope(lhs.context):
            result = xp.matmul(a, b)
    except ValueError as err:
        raise ShapeError(f"batch_dot: shapes {tuple(a.shape)} and {tuple(b.shape)} "
                         "do not align") from err
    return _result(result, lhs, out)


# --------------------------------------------------------------------------- activations

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


def log_softmax(data: NDArray, axis: int = -1, temperature: float | None = None,
                out: NDArray | None = None, **_ignored) -> NDArray:
    """log(softmax(x / T)) along `axis`, computed stably."""
    with device_scope(data.context):
        xp, x = data._xp, data._data
        scaled = x / temperature if temperature else x
        shifted = scaled - xp.max(scaled, axis=axis, keepdims=True)
        result = shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))
        return _result(result.astype(x.dtype, copy=False), data, out)


def smooth_l1(data: NDArray, scalar: float = 1.0, out: NDArray | None = None) -> NDArray:
    with device_scope(data.context):
        xp, x = data._xp, data._data
        s2 = scalar * scalar
        result = xp.where(xp.abs(x) < 1.0 / s2, 0.5 * s2 * x * x, xp.abs(x) - 0.5 / s2)
        return _result(result.astype(x.dtype, copy=False), data, out)


# --------------------------------------------------------------------------- shapes

def transpose(data: NDArray, axes: Sequence[int] | None = None,
              out: NDArray | None = None) -> NDArray:
    """A copy with axes permuted (reversed by default or for axes=())."""
    with device_scope(data.context):
        axes = tuple(axes) if axes else None
        return _result(data._data.transpose(axes).copy(), data, out)


def swapaxes(data: NDArray, dim1: int = 0, dim2: int = 0,
             out: NDArray | None = None) -> NDArray:
    with device_scope(data.context):
        return _result(data._xp.swapaxes(data._data, dim1, dim2).copy(), data, out)


def expand_dims(data: NDArray, axis: int, out: NDArray | None = None) -> NDArray:
    with device_scope(data.context):
        return _result(data._xp.expand_dims(data._data, int(axis)).copy(), data, out)


def squeeze(data: NDArray, axis: int | Sequence[int] | None = None,
            out: NDArray | None = None) -> NDArray:
    with device_scope(data.context):
        axis = tuple(axis) if isinstance(axis, (list, tuple)) else axis
        return _result(_at_least_1d(data._data.squeeze(axis)).copy(), data, out)


def flatten(data: NDArray, out: NDArray | None = None) -> NDArray:
    """A copy of shape (dim0, product of the other dims)."""
    with device_scope(data.context):
        n = data.shape[0] if data.ndim else 1
        return _result(data._data.reshape((n, -1)).copy(), data, out)


def reshape(data: NDArray, shape: Sequence[int], reverse: bool = False,
            out: NDArray | None = None, **_ignored) -> NDArray:
    """A copy with a new shape (MXNet's 0/-1/-2/-3/-4 codes allowed)."""
    with device_scope(data.context):
        result = data.reshape(shape=shape, reverse=reverse)._data.copy()
        return _result(result, data, out)


def broadcast_to(data: NDArray, shape: Sequence[int], out: NDArray | None = None) -> NDArray:
    """A copy broadcast to `shape`; a 0 in `shape` keeps that input dim."""
    with device_scope(data.context):
        target = tuple(d if t == 0 else t for t, d in zip(shape, data.shape))
        try:
            result = data._xp.broadcast_to(data._data, target).copy()
        except ValueError as err:
            raise ShapeError(f"broadcast_to: cannot broadcast {data.shape} to {target}") from err
        return _result(result, data, out)


def histogram(a: NDArray, bins: int | NDArray = 10, range: tuple | None = None):  # noqa: A002
    """(counts, bin edges) of `a`, as NumPy's histogram: over the edges in the NDArray `bins`,
    or `bins` equal bins spanning `range` (default: the data's min to max)."""
    if isinstance(bins, NDArray):
        return invoke("_histogram", (a, bins), {})
    if not isinstance(bins, numbers.Integral) or isinstance(bins, bool):
        raise ValueError("histogram: bins must be an integer or an NDArray, got %s"
                         % type(bins).__name__)
    if range is None:
        values = a.asnumpy()
        range = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
    return invoke("_histogram", (a,), {"bin_cnt": int(bins), "range": tuple(range)})


def zeros_like(data: NDArray, out: NDArray | None = None, **_ignored) -> NDArray:
    with device_scope(data.context):
        return _result(data._xp.zeros_like(data._data), data, out)


def ones_like(data: NDArray, out: NDArray | None = None, **_ignored) -> NDArray:
    with device_scope(data.context):
        return _result(data._xp.ones_like(data._data), data, out)


def _method_broadcast_to(data: NDArray, shape: Sequence[int]) -> NDArray:
    return broadcast_to(data, shape)


METHODS: dict[str, Callable] = {
    "sum": sum, "mean": mean, "max": max, "min": min, "prod": prod, "nansum": nansum,
    "norm": norm, "argmax": argmax, "argmin": argmin, "topk": topk, "sort": sort,
    "argsort": argsort, "pick": pick, "take": take, "one_hot": one_hot, "clip": clip,
    "log": log, "exp": exp, "sqrt": sqrt, "square": square, "abs": abs, "sign": sign,
    "sigmoid": sigmoid, "tanh": tanh, "relu": relu, "softmax": softmax,
    "log_softmax": log_softmax, "transpose": transpose, "swapaxes": swapaxes,
    "expand_dims": expand_dims, "squeeze": squeeze, "flatten": flatten,
    "broadcast_to": _method_broadcast_to, "zeros_like": zeros_like, "ones_like": ones_like,
    "slice_axis": slice_axis, "split": split, "tile": tile, "repeat": repeat, "flip": flip,
    "reciprocal": reciprocal, "floor": floor, "ceil": ceil, "round": round, "log1p": log1p,
    "expm1": expm1, "rsqrt": rsqrt, "cos": cos, "sin": sin, "dot": dot,
    "as_in_ctx": lambda data, ctx: data.as_in_context(ctx),
    "split_v2": lambda data, *args, **kwargs: split_v2(data, *args, **kwargs),
}
