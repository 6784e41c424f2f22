"""Reductions: sum, mean, max, min, prod, nansum, norm, argmax/argmin, topk, sort, argsort and
histogram. Over every axis they return shape (1,); results keep the input dtype.
"""
from __future__ import annotations

import builtins
import numbers
from collections.abc import Sequence
from typing import Any, Callable, Optional, Union

import numpy as np

from ...base import MXNetError
from ..core import NDArray, device_scope, wrap
from ..imperative import invoke
from ..rules import normalize_dtype
from .common import _at_least_1d, _result, recorded

Axis = Optional[Union[int, Sequence[int]]]


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
        if x.size == 0 and name in ("max", "min"):
            reduced = range(x.ndim) if axes is None else axes
            if any(x.shape[a] == 0 for a in reduced):
                raise MXNetError("mx.nd.%s: cannot reduce an array of shape %s over a "
                                 "zero-size axis: %s of nothing is undefined"
                                 % (name, tuple(x.shape), name))
        with np.errstate(all="ignore"), device_scope(data.context):
            result = fn(xp, x, axes, keepdims)
            if result.dtype != x.dtype:
                result = result.astype(x.dtype)
        return _result(_at_least_1d(result), data, out)
    routine.__name__ = routine.__qualname__ = name
    return recorded(name)(routine)


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


@recorded("norm")
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
                out: NDArray | None = None, name: str | None = None) -> NDArray:
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
    routine.__name__ = routine.__qualname__ = fn_name
    return routine


argmax = _arg_reduce("argmax")
argmin = _arg_reduce("argmin")


@recorded("topk")
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


@recorded("sort")
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
