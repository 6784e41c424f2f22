"""Random sampling operators: `_random_<dist>` (scalar parameters and a `shape`), their
`_random_<dist>_like` forms (data's shape and dtype) and `_sample_<dist>` (parameter arrays:
each element draws `shape` samples, so out is param.shape + shape).

Every op draws from `backend.rng(xp)`, the process-wide generator `mx.random.seed` resets, at
every forward (in training and inference alike, as MXNet's do); none has a gradient. On a GPU
uniform, normal, exponential and randint (spans up to 2**24 values) draw from
`backend.uniform` instead (minimod.device_rng, whose state lives on the device), so steps
that draw them can be captured as CUDA graphs; gamma, Poisson, the negative binomials and
shuffle still draw from CuPy's generator, and a capture refuses them. The streams are
minimod's own: a seed reproduces minimod's numbers, not MXNet's. Distributions
follow MXNet's parametrisations: gamma(alpha, beta) has shape alpha and scale beta,
exponential(lam) has rate lam, negative_binomial(k, p) counts failures before k successes of
probability p, generalized_negative_binomial(mu, alpha) is a gamma-Poisson mixture of mean
mu and dispersion alpha (Poisson(mu) when alpha is 0).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Literal, Optional

from .. import backend
from ..base import OpParamError, ShapeError
from .helpers import dtype_of, legacy_shape
from .registry import Op, fmt_shape, register

FloatName = Literal["float16", "float32", "float64"]


def _draw(xp, name: str, params: tuple, size: tuple):
    """Samples of distribution `name` with `params` (scalars, or arrays broadcasting against
    `size`), from the backend's generator."""
    if backend.draws_on_device(xp) and name in ("uniform", "normal", "exponential"):
        return _draw_on_device(xp, name, params, size)
    gen = backend.rng(xp)
    if name == "uniform":
        return gen.uniform(params[0], params[1], size)
    if name == "normal":
        return gen.normal(params[0], params[1], size)
    if name == "gamma":
        return gen.gamma(params[0], params[1], size)
    if name == "exponential":
        return gen.exponential(1.0 / xp.asarray(params[0], dtype="float64"), size)
    if name == "poisson":
        return gen.poisson(params[0], size)
    if name == "negative_binomial":  # k = 0 successes to wait for: no failure, as MXNet's
        k = xp.asarray(params[0], dtype="float64")
        draws = gen.negative_binomial(xp.where(k > 0, k, 1.0), params[1], size)
        return xp.where(k > 0, draws, 0)
    # generalized_negative_binomial: Poisson with a gamma-distributed rate of mean mu
    mu, alpha = (xp.asarray(p, dtype="float64") for p in params)
    safe = xp.where(alpha > 0, alpha, 1.0)
    rate = gen.gamma(1.0 / safe, safe * mu, size)
    return xp.where(alpha > 0, gen.poisson(rate), gen.poisson(xp.broadcast_to(mu, size)))


def _draw_on_device(xp, name: str, params: tuple, size: tuple):
    """Uniform, normal or exponential samples on a GPU from `backend.uniform`
    (minimod.device_rng, whose state lives on the device, so a step that draws them can be
    captured as a CUDA graph): low + (high - low) u, loc + scale sqrt(-2 log(1 - u1))
    cos(2 pi u2) (Box and Muller), or -log(1 - u) / lam (the inverse of the exponential's
    distribution function), in float32."""
    u = backend.uniform(xp, size)
    if name == "uniform":
        return params[0] + (params[1] - params[0]) * u
    if name == "exponential":
        return -xp.log1p(-u) / params[0]
    radius = xp.sqrt(-2 * xp.log1p(-u))
    return params[0] + params[1] * (radius * xp.cos(2 * math.pi * backend.uniform(xp, size)))


#: the parameter ranges of each distribution, as (test, what it needs), checked when an
#: op is made (as MXNet checks its scalar parameters): MXNet's, and p in (0, 1] for the
#: negative binomial, where MXNet draws garbage (p = 0) or zeros (p > 1)
PARAMETER_RULES = {
    "uniform": ((lambda a: a["high"] >= a["low"], "low <= high"),),
    "normal": ((lambda a: a["scale"] > 0, "scale > 0"),),
    "gamma": ((lambda a: a["alpha"] > 0, "alpha > 0"), (lambda a: a["beta"] > 0, "beta > 0")),
    "exponential": ((lambda a: a["lam"] > 0, "lam > 0"),),
    "poisson": ((lambda a: a["lam"] >= 0, "lam >= 0"),),
    "negative_binomial": ((lambda a: a["k"] >= 0, "k >= 0"),
                          (lambda a: 0 < a["p"] <= 1, "0 < p <= 1")),
    "generalized_negative_binomial": ((lambda a: a["mu"] >= 0, "mu >= 0"),
                                      (lambda a: a["alpha"] >= 0, "alpha >= 0")),
}


def check_parameters(where: str, dist: str, values: dict) -> None:
    """Raise OpParamError naming `where` when scalar `values` break `dist`'s ranges."""
    for test, need in PARAMETER_RULES.get(dist, ()):
        if not test(values):
            raise OpParamError("%s: %s needs %s, got %s" % (
                where, dist, need, ", ".join("%s=%g" % kv for kv in values.items())))


class _Random(Op):
    """Base of `_random_<dist>`: no inputs, out of `shape` (0 = unknown dim, inferred from
    the consumer) and `dtype` (float32 when not given). Scalar parameters outside their
    distribution's range are refused when the op is made (`PARAMETER_RULES`)."""

    ARGUMENTS = ()
    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True
    deterministic = False  # draws new numbers at every run: never merged by CSE
    dist: str = ""
    params: tuple = ()
    default_dtype = "float32"

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.dist:
            check_parameters("operator " + self.name, self.dist,
                             dict(zip(self.params, self._values())))

    def infer_shape(self, in_shapes, out_shapes):
        self.set_out(out_shapes, 0, legacy_shape(self.attrs.shape), "its shape parameter")
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        return list(in_types), [dtype_of(self.attrs.dtype or self.default_dtype)]

    def _values(self) -> tuple:
        return tuple(getattr(self.attrs, p) for p in self.params)

    def forward(self, xp, inputs, aux, out, is_train):
        o = out[0]
        xp.copyto(o, _draw(xp, self.dist, self._values(), o.shape), casting="unsafe")

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        pass


class _RandomLike(_Random):
    """Base of `_random_<dist>_like`: out has data's shape and dtype; data gets no gradient."""

    ARGUMENTS = ("data",)

    def infer_shape(self, in_shapes, out_shapes):
        return self.same_shape(in_shapes, out_shapes)

    def infer_type(self, in_types, out_types):
        return Op.infer_type(self, in_types, out_types)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            in_grads[0].fill(0)


class _Sample(Op):
    """Base of `_sample_<dist>`: the inputs are parameter arrays of one shape; each element
    draws `shape` samples, so out is param.shape + shape. No gradient."""

    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True
    deterministic = False  # draws new numbers at every run: never merged by CSE
    dist: str = ""

    def infer_shape(self, in_shapes, out_shapes):
        known = [s for s in in_shapes if s is not None]
        if not known:
            return in_shapes, out_shapes
        first = known[0]
        for slot, shape in zip(self.arguments(), in_shapes):
            if shape is not None and shape != first:
                raise ShapeError("input '%s' has shape %s but the parameters of %s need one "
                                 "shape, %s" % (slot, fmt_shape(shape), self.name,
                                                fmt_shape(first)))
        in_shapes = [first] * len(in_shapes)
        self.set_out(out_shapes, 0, tuple(first) + tuple(self.attrs.shape))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        in_types, _ = Op.infer_type(self, in_types, [None])
        dtype = self.attrs.dtype
        return in_types, [dtype_of(dtype) if dtype else (in_types[0] if in_types[0]
                                                          is not None else None)]

    def forward(self, xp, inputs, aux, out, is_train):
        o = out[0]
        extra = (1,) * len(self.attrs.shape)
        params = tuple(p.reshape(p.shape + extra).astype("float64") for p in inputs)
        xp.copyto(o, _draw(xp, self.dist, params, o.shape), casting="unsafe")

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        for g in in_grads:
            if g is not None:
                g.fill(0)


def _attrs(fields: dict, shaped: bool = True):
    """An Attrs dataclass with the distribution's parameters (name -> default), then, unless
    the op takes data's shape and dtype, shape, ctx and dtype, as MXNet orders them."""
    spec = [(name, float, dataclasses.field(default=default)) for name, default in
            fields.items()]
    if shaped:
        spec += [("shape", tuple[int, ...], dataclasses.field(default=())),
                 ("ctx", str, dataclasses.field(default="")),
                 ("dtype", Optional[FloatName], dataclasses.field(default=None))]
    return dataclasses.make_dataclass("Attrs", spec, frozen=True)


_DISTRIBUTIONS = {
    # name: (parameters with MXNet's defaults, the _sample_ op's input names)
    "uniform": ({"low": 0.0, "high": 1.0}, ("low", "high")),
    "normal": ({"loc": 0.0, "scale": 1.0}, ("mu", "sigma")),
    "gamma": ({"alpha": 1.0, "beta": 1.0}, ("alpha", "beta")),
    "exponential": ({"lam": 1.0}, ("lam",)),
    "poisson": ({"lam": 1.0}, ("lam",)),
    "negative_binomial": ({"k": 1.0, "p": 1.0}, ("k", "p")),
    "generalized_negative_binomial": ({"mu": 1.0, "alpha": 1.0}, ("mu", "alpha")),
}

#: each distribution's parameters in MXNet's order (the frontends' `<dist>_like` take them)
PARAMETERS = {dist: tuple(params) for dist, (params, _) in _DISTRIBUTIONS.items()}

for _dist, (_params, _inputs) in _DISTRIBUTIONS.items():
    register(type("Random_" + _dist, (_Random,), dict(
        __doc__="Samples of %s(%s) of `shape`." % (_dist, ", ".join(_params)),
        name="_random_" + _dist, aliases=("random_" + _dist,) + (
            (_dist,) if _dist in ("uniform", "normal") else ()),
        Attrs=_attrs(_params), dist=_dist, params=tuple(_params))))
    register(type("RandomLike_" + _dist, (_RandomLike,), dict(
        __doc__="Samples of %s(%s) of data's shape and dtype." % (_dist, ", ".join(_params)),
        name="_random_%s_like" % _dist, Attrs=_attrs(_params, shaped=False), dist=_dist,
        params=tuple(_params))))
    register(type("Sample_" + _dist, (_Sample,), dict(
        __doc__="`shape` samples of %s for each element of the parameter arrays %s."
                % (_dist, ", ".join(_inputs)),
        name="_sample_" + _dist, aliases=("sample_" + _dist,), ARGUMENTS=_inputs,
        Attrs=dataclasses.make_dataclass("Attrs", [
            ("shape", tuple[int, ...], dataclasses.field(default=())),
            ("dtype", Optional[FloatName], dataclasses.field(default=None))], frozen=True),
        dist=_dist)))


#: the widest span randint draws from the device's float32 uniforms (their 2**24 steps)
_EXACT_SPAN = 1 << 24


@dataclasses.dataclass(frozen=True)
class RandintAttrs:
    low: int
    high: int
    shape: tuple[int, ...] = ()
    ctx: str = ""
    dtype: Optional[Literal["int32", "int64"]] = None


@register
class RandomRandint(_Random):
    """Integers drawn uniformly from [low, high) of `shape` (int32 when dtype is not given)."""

    name = "_random_randint"
    aliases = ("random_randint",)
    Attrs = RandintAttrs
    default_dtype = "int32"

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.high <= self.attrs.low:
            raise OpParamError("operator _random_randint: high=%d must exceed low=%d"
                               % (self.attrs.high, self.attrs.low))

    def forward(self, xp, inputs, aux, out, is_train):
        a = self.attrs
        span = a.high - a.low
        if backend.draws_on_device(xp) and span <= _EXACT_SPAN:
            # floor(u * span) from the device's float32 uniforms: every integer of the span
            # is reachable while the span has no more values than u has steps
            u = backend.uniform(xp, out[0].shape).astype("float64")
            picks = xp.minimum(xp.floor(u * span), span - 1)
            out[0][...] = picks.astype(out[0].dtype) + a.low
        else:
            out[0][...] = backend.rng(xp).randint(a.low, a.high, out[0].shape)


@register
class Shuffle(Op):
    """data with its first axis randomly permuted (one permutation per forward)."""

    name = "_shuffle"
    deterministic = False  # draws a new order at every run: never merged by CSE
    aliases = ("shuffle",)
    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        out[0][...] = x[backend.rng(xp).permutation(x.shape[0])] if x.ndim else x

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            in_grads[0].fill(0)
