"""Random sampling into NDArrays (`mx.nd.random.uniform`, `normal`, `randint`, `shuffle`).

Every sampler draws from `minimod.backend.rng(xp)`, the process-wide generator of the target
context's array module, so `mx.random.seed(n)` makes a run reproducible. Streams are minimod's
own: the same seed gives the same numbers across minimod runs, not the numbers MXNet draws.

Shapes follow MXNet: with scalar parameters the result has `shape` (an omitted shape gives
(1,)); with NDArray parameters each element of the parameters draws `shape` samples, giving
shape `param.shape + shape`. dtype defaults to float32 (int32 for randint), or to `out`'s dtype.
"""
from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any, Callable, Optional, Union

import numpy as np

from .. import backend
from ..context import Context, current_context
from .ndarray import NDArray, as_backend_operand, device_scope, normalize_dtype, wrap

__all__ = ["normal", "randint", "shuffle", "uniform"]

ShapeArg = Optional[Union[int, Sequence[int]]]


def _shape_tuple(shape: ShapeArg) -> tuple:
    if shape is None:
        return ()
    if isinstance(shape, numbers.Integral):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def _sample(draw: Callable, params: Sequence[Any], shape: ShapeArg, dtype: Any,
            ctx: Context | None, out: NDArray | None, default_dtype: type) -> NDArray:
    """Run `draw(rng, *params, size)` and deliver the samples as an NDArray (or into `out`)."""
    arrays = [p for p in params if isinstance(p, NDArray)]
    if ctx is None:
        ctx = out.context if out is not None else (
            arrays[0].context if arrays else current_context())
    base_shape = _shape_tuple(shape)
    if not base_shape and out is not None and not arrays:
        base_shape = out.shape
    if arrays:
        lead = arrays[0].shape
        values = [as_backend_operand(p, ctx).astype(np.float64).reshape(
            lead + (1,) * len(base_shape)) if isinstance(p, NDArray) else p for p in params]
        size = lead + base_shape
    else:
        values = list(params)
        size = base_shape or (1,)
    if dtype is None:
        kind = out.dtype if out is not None else default_dtype
    else:
        kind = normalize_dtype(dtype)
    xp = backend.xp_for(ctx)
    with device_scope(ctx):
        samples = draw(backend.rng(xp), *values, size).astype(kind, copy=False)
    if out is not None:
        out[:] = wrap(samples, ctx)
        return out
    return wrap(samples, ctx)


def uniform(low: float | NDArray = 0, high: float | NDArray = 1,
            shape: ShapeArg = None, dtype: Any = None, ctx: Context | None = None,
            out: NDArray | None = None, **_ignored) -> NDArray:
    """Samples from the uniform distribution on [low, high)."""
    return _sample(lambda rng, lo, hi, size: rng.uniform(lo, hi, size), (low, high), shape,
                   dtype, ctx, out, np.float32)


def normal(loc: float | NDArray = 0, scale: float | NDArray = 1,
           shape: ShapeArg = None, dtype: Any = None, ctx: Context | None = None,
           out: NDArray | None = None, **_ignored) -> NDArray:
    """Samples from the normal distribution N(loc, scale**2)."""
    return _sample(lambda rng, mu, sigma, size: rng.normal(mu, sigma, size), (loc, scale),
                   shape, dtype, ctx, out, np.float32)


def randint(low: int, high: int, shape: ShapeArg = None, dtype: Any = None,
            ctx: Context | None = None, out: NDArray | None = None,
            **_ignored) -> NDArray:
    """Integers drawn uniformly from [low, high) (dtype int32 unless given)."""
    return _sample(lambda rng, lo, hi, size: rng.randint(lo, hi, size), (int(low), int(high)),
                   shape, dtype, ctx, out, np.int32)


def shuffle(data: NDArray, out: NDArray | None = None, **_ignored) -> NDArray:
    """A copy of `data` with its rows (axis 0) in random order."""
    xp = data._xp
    with device_scope(data.context):  # the generator of the array's own device
        order = backend.rng(xp).permutation(data.shape[0])
        result = data._data[xp.asarray(order)]
    if out is not None:
        out[:] = wrap(result, data.context)
        return out
    return wrap(result, data.context)
