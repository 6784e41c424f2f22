"""`mx.sym.random`: random sampling in a graph (`mx.sym.random.normal(0, 1, shape=(N, 100))`).

Each function makes one of the `_random_*` nodes when its parameters are numbers, or the
`_sample_*` node when they are Symbols (one batch of `shape` samples per parameter element),
as MXNet's frontend does. The samples are drawn anew at every forward; see
minimod/ops/random.py for the distributions' parametrisations.
"""
from __future__ import annotations

from numbers import Number

from ..ops.random import PARAMETERS
from .symbol import Symbol, make_op_symbol

__all__ = ["uniform", "normal", "randn", "randint", "exponential", "gamma", "poisson",
           "negative_binomial", "generalized_negative_binomial", "shuffle", "uniform_like",
           "normal_like", "exponential_like", "gamma_like", "poisson_like",
           "negative_binomial_like", "generalized_negative_binomial_like", "multinomial"]


def _helper(dist: str, params: dict, sample_names: tuple, shape, dtype, kwargs: dict) -> Symbol:
    values = list(params.values())
    if all(isinstance(v, Number) for v in values):
        attrs = dict(kwargs, **params)
        if shape is not None:
            attrs["shape"] = shape
        if dtype is not None:
            attrs["dtype"] = dtype
        return make_op_symbol("_random_" + dist, [], attrs, hint="_random_" + dist)
    if all(isinstance(v, Symbol) for v in values):
        attrs = dict(kwargs, **dict(zip(sample_names, values)))
        if shape is not None:
            attrs["shape"] = shape
        if dtype is not None:
            attrs["dtype"] = dtype
        return make_op_symbol("_sample_" + dist, [], attrs, hint="_sample_" + dist)
    raise TypeError("mx.sym.random.%s: the parameters %s must be all numbers or all Symbols"
                    % (dist, ", ".join("%s=%r" % kv for kv in params.items())))


def uniform(low=0, high=1, shape=None, dtype=None, **kwargs) -> Symbol:
    return _helper("uniform", {"low": low, "high": high}, ("low", "high"), shape, dtype, kwargs)


def normal(loc=0, scale=1, shape=None, dtype=None, **kwargs) -> Symbol:
    return _helper("normal", {"loc": loc, "scale": scale}, ("mu", "sigma"), shape, dtype,
                   kwargs)


def randn(*shape, loc=0, scale=1, dtype=None, **kwargs) -> Symbol:
    return normal(loc, scale, shape, dtype, **kwargs)


def randint(low, high, shape=None, dtype=None, **kwargs) -> Symbol:
    attrs = dict(kwargs, low=low, high=high)
    if shape is not None:
        attrs["shape"] = shape
    if dtype is not None:
        attrs["dtype"] = dtype
    return make_op_symbol("_random_randint", [], attrs, hint="_random_randint")


def exponential(scale=1, shape=None, dtype=None, **kwargs) -> Symbol:
    """Rate 1/scale (MXNet's op takes the rate, lam)."""
    return _helper("exponential", {"lam": 1.0 / scale}, ("lam",), shape, dtype, kwargs)


def gamma(alpha=1, beta=1, shape=None, dtype=None, **kwargs) -> Symbol:
    return _helper("gamma", {"alpha": alpha, "beta": beta}, ("alpha", "beta"), shape, dtype,
                   kwargs)


def poisson(lam=1, shape=None, dtype=None, **kwargs) -> Symbol:
    return _helper("poisson", {"lam": lam}, ("lam",), shape, dtype, kwargs)


def negative_binomial(k=1, p=1, shape=None, dtype=None, **kwargs) -> Symbol:
    return _helper("negative_binomial", {"k": k, "p": p}, ("k", "p"), shape, dtype, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, **kwargs) -> Symbol:
    return _helper("generalized_negative_binomial", {"mu": mu, "alpha": alpha},
                   ("mu", "alpha"), shape, dtype, kwargs)


def shuffle(data, **kwargs) -> Symbol:
    return make_op_symbol("_shuffle", [data], kwargs, hint="_shuffle")


def _like(dist: str, names: tuple):
    def sample_like(data, *args, **kwargs) -> Symbol:
        params = dict(zip(names, args))
        return make_op_symbol("_random_%s_like" % dist, [data], dict(kwargs, **params),
                              hint="_random_%s_like" % dist)
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


def multinomial(data, shape=None, get_prob=False, dtype="int32", **kwargs) -> Symbol:
    """Class indices drawn from the categorical distributions in the last axis of `data`
    (`_sample_multinomial`); with `get_prob`, a second output of their log-probabilities."""
    attrs = dict(kwargs, get_prob=get_prob, dtype=dtype)
    if shape is not None:
        attrs["shape"] = shape
    return make_op_symbol("_sample_multinomial", [data], attrs, hint="_sample_multinomial")
