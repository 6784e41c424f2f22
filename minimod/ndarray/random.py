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
from ..ops.random import PARAMETERS, check_parameters
from .core import NDArray, as_backend_operand, device_scope, wrap
from .imperative import invoke
from .rules import normalize_dtype

__all__ = ["normal", "randint", "shuffle", "uniform", "randn", "exponential", "gamma", "poisson",
           "multinomial",
           "negative_binomial", "generalized_negative_binomial", "uniform_like", "normal_like",
           "exponential_like", "gamma_like", "poisson_like", "negative_binomial_like",
           "generalized_negative_binomial_like"]

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


def _check_scalars(dist: str, **params) -> None:
    """MXNet's range checks of scalar parameters (ops/random.py `PARAMETER_RULES`); arrays of
    parameters are not checked, as in MXNet."""
    if not any(isinstance(v, NDArray) for v in params.values()):
        check_parameters("mx.nd.random." + dist, dist, params)


def uniform(low: float | NDArray = 0, high: float | NDArray = 1,
            shape: ShapeArg = None, dtype: Any = None, ctx: Context | None = None,
            out: NDArray | None = None, name: str | None = None) -> NDArray:
    """Samples from the uniform distribution on [low, high)."""
    _check_scalars("uniform", low=low, high=high)
    return _sample(lambda rng, lo, hi, size: rng.uniform(lo, hi, size), (low, high), shape,
                   dtype, ctx, out, np.float32)


def normal(loc: float | NDArray = 0, scale: float | NDArray = 1,
           shape: ShapeArg = None, dtype: Any = None, ctx: Context | None = None,
           out: NDArray | None = None, name: str | None = None) -> NDArray:
    """Samples from the normal distribution N(loc, scale**2)."""
    _check_scalars("normal", loc=loc, scale=scale)
    return _sample(lambda rng, mu, sigma, size: rng.normal(mu, sigma, size), (loc, scale),
                   shape, dtype, ctx, out, np.float32)


def randint(low: int, high: int, shape: ShapeArg = None, dtype: Any = None,
            ctx: Context | None = None, out: NDArray | None = None,
            name: str | None = None) -> NDArray:
    """Integers drawn uniformly from [low, high) (dtype int32 unless given)."""
    return _sample(lambda rng, lo, hi, size: rng.randint(lo, hi, size), (int(low), int(high)),
                   shape, dtype, ctx, out, np.int32)


def shuffle(data: NDArray, out: NDArray | None = None, name: str | None = None) -> NDArray:
    """A copy of `data` with its rows (axis 0) in random order."""
    xp = data._xp
    with device_scope(data.context):  # the generator of the array's own device
        order = backend.rng(xp).permutation(data.shape[0])
        result = data._data[xp.asarray(order)]
    if out is not None:
        out[:] = wrap(result, data.context)
        return out
    return wrap(result, data.context)


def randn(*shape, loc: float | NDArray = 0, scale: float | NDArray = 1, dtype: Any = None,
          ctx: Context | None = None, out: NDArray | None = None,
          name: str | None = None) -> NDArray:
    """normal(loc, scale) samples of the shape given as positional dimensions."""
    return normal(loc, scale, shape or None, dtype, ctx, out)


# The other distributions run the sampling operators (minimod/ops/random.py) imperatively:
# `_random_<dist>` for number parameters, `_sample_<dist>` for NDArray ones.

def _via_op(dist: str, params: dict, sample_names: tuple, shape: ShapeArg, dtype: Any,
            ctx: Context | None, out: NDArray | None) -> NDArray:
    values = list(params.values())
    extra = {"dtype": None if dtype is None else np.dtype(normalize_dtype(dtype)).name,
             "out": out}
    if any(isinstance(v, NDArray) for v in values):
        arrays = [v for v in values if isinstance(v, NDArray)]
        if len(arrays) != len(values):
            raise TypeError("mx.nd.random.%s: the parameters %s must be all numbers or all "
                            "NDArrays" % (dist, ", ".join(params)))
        return invoke("_sample_" + dist, (), dict(extra, shape=_shape_tuple(shape),
                                                  **dict(zip(sample_names, arrays))))
    size = _shape_tuple(shape) or (out.shape if out is not None else (1,))
    return invoke("_random_" + dist, (), dict(extra, shape=size, ctx=ctx, **params))


def exponential(scale: float | NDArray = 1, shape: ShapeArg = None, dtype: Any = None,
                ctx: Context | None = None, out: NDArray | None = None,
                name: str | None = None) -> NDArray:
    """Exponential samples of mean `scale` (rate 1/scale)."""
    return _via_op("exponential", {"lam": 1.0 / scale}, ("lam",), shape, dtype, ctx, out)


def gamma(alpha: float | NDArray = 1, beta: float | NDArray = 1, shape: ShapeArg = None,
          dtype: Any = None, ctx: Context | None = None, out: NDArray | None = None,
          name: str | None = None) -> NDArray:
    """Gamma samples of shape `alpha` and scale `beta`."""
    return _via_op("gamma", {"alpha": alpha, "beta": beta}, ("alpha", "beta"), shape, dtype,
                   ctx, out)


def poisson(lam: float | NDArray = 1, shape: ShapeArg = None, dtype: Any = None,
            ctx: Context | None = None, out: NDArray | None = None,
            name: str | None = None) -> NDArray:
    """Poisson samples of rate `lam`."""
    return _via_op("poisson", {"lam": lam}, ("lam",), shape, dtype, ctx, out)


def negative_binomial(k: float | NDArray = 1, p: float | NDArray = 1, shape: ShapeArg = None,
                      dtype: Any = None, ctx: Context | None = None,
                      out: NDArray | None = None, name: str | None = None) -> NDArray:
    """Failures before the k-th success of probability p."""
    return _via_op("negative_binomial", {"k": k, "p": p}, ("k", "p"), shape, dtype, ctx, out)


def generalized_negative_binomial(mu: float | NDArray = 1, alpha: float | NDArray = 1,
                                  shape: ShapeArg = None, dtype: Any = None,
                                  ctx: Context | None = None, out: NDArray | None = None,
                                  name: str | None = None) -> NDArray:
    """Gamma-Poisson samples of mean `mu` and dispersion `alpha`."""
    return _via_op("generalized_negative_binomial", {"mu": mu, "alpha": alpha},
                   ("mu", "alpha"), shape, dtype, ctx, out)


def _like(dist: str, names: tuple):
    def sample_like(data: NDArray, *args, out: NDArray | None = None, **kwargs) -> NDArray:
        kwargs.pop("name", None)
        return invoke("_random_%s_like" % dist, (data,),
                      dict(kwargs, out=out, **dict(zip(names, args))))
    sample_like.__name__ = sample_like.__qualname__ = "%s_like" % dist
    sample_like.__doc__ = "Samples of %s(%s) of data's shape and dtype." % (dist,
                                                                             ", ".join(names))
    return sample_like


uniform_like = _like("uniform", PARAMETERS["uniform"])
normal_like = _like("normal", PARAMETERS["normal"])
exponential_like = _like("exponential", PARAMETERS["exponential"])
gamma_like = _like("gamma", PARAMETERS["gamma"])
poisson_like = _like("poisson", PARAMETERS["poisson"])
negative_binomial_like = _like("negative_binomial", PARAMETERS["negative_binomial"])
generalized_negative_binomial_like = _like("generalized_negative_binomial",
                                           PARAMETERS["generalized_negative_binomial"])


def multinomial(data: NDArray, shape: ShapeArg = None, get_prob: bool = False,
                out: NDArray | None = None, dtype: Any = "int32", name: str | None = None):
    """Class indices drawn from the categorical distributions in the last axis of `data`
    (the `_sample_multinomial` operator): `shape` more draws per distribution; with
    `get_prob`, also the log-probability of each draw."""
    attrs = {"get_prob": get_prob, "dtype": np.dtype(normalize_dtype(dtype)).name}
    if shape is not None:
        attrs["shape"] = _shape_tuple(shape)
    return invoke("_sample_multinomial", (data,), dict(attrs, out=out))
