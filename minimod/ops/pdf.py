"""Densities of samples under per-row distributions: `_random_pdf_<dist>` (also
`random_pdf_<dist>`) for uniform, normal, gamma, exponential, poisson, negative_binomial,
generalized_negative_binomial and dirichlet, with `is_log` for the log-density.

Shapes: each parameter array has shape P; `sample` has shape P + S (S any extra axes: the
samples of each row), and out has sample's shape. Dirichlet's `alpha` is P + (K,), its sample
P + S + (K,) and out P + S.

The log-densities, with MXNet's parametrisations (x the sample):

    uniform(low, high)     -log(high - low)                  (MXNet does not check the support)
    normal(mu, sigma)      -z^2 / 2 - log sigma - log(2 pi) / 2,     z = (x - mu) / sigma
    gamma(alpha, beta)     alpha log beta + (alpha - 1) log x - beta x - lgamma(alpha)
                           (beta a rate here, as MXNet's pdf has it; its sampler's is a scale)
    exponential(lam)       log lam - lam x
    poisson(lam)           x log lam - lam - lgamma(x + 1)
    negative_binomial(k, p)  lgamma(x + k) - lgamma(x + 1) - lgamma(k) + k log p
                             + x log(1 - p)
    generalized_negative_binomial(mu, alpha)  negative_binomial with k = 1 / alpha and
                             p = 1 / (1 + alpha mu)
    dirichlet(alpha)       lgamma(sum alpha) - sum lgamma(alpha) + sum (alpha - 1) log x

Gradients: of out with respect to the sample and to every parameter (summed over S); the
counts of the discrete distributions, and uniform's sample, get zero, as in MXNet.
"""
from __future__ import annotations

import dataclasses
import math

from ..base import ShapeError
from .registry import Op, fmt_shape, register
from .special_functions import _lanczos_gammaln as _lgamma
from .special_functions import digamma

__all__ = ["PDF_FAMILY"]


def _nb_logp(xp, x, k, p):
    return (_lgamma(xp, x + k) - _lgamma(xp, x + 1) - _lgamma(xp, k) + k * xp.log(p)
            + x * xp.log1p(-p))


def _nb_grads(xp, x, k, p):
    """d log p / d k and d log p / d p of the negative binomial."""
    return digamma(xp, x + k) - digamma(xp, k) + xp.log(p), k / p - x / (1 - p)


def _gnb_params(xp, mu, alpha):
    return 1 / alpha, 1 / (1 + alpha * mu)


# dist: (parameter names, log p (xp, x, *params), its gradients (xp, x, *params) ->
# (d/dx or None for zero, d/dparam ...))
def _uniform(xp, x, low, high):
    return -xp.log(high - low) + x * 0


def _uniform_grads(xp, x, low, high):
    inv = 1 / (high - low) + x * 0
    return None, inv, -inv


def _normal(xp, x, mu, sigma):
    z = (x - mu) / sigma
    return -z * z / 2 - xp.log(sigma) - math.log(2 * math.pi) / 2


def _normal_grads(xp, x, mu, sigma):
    z = (x - mu) / sigma
    return -z / sigma, z / sigma, (z * z - 1) / sigma


def _gamma(xp, x, alpha, beta):
    return alpha * xp.log(beta) + (alpha - 1) * xp.log(x) - beta * x - _lgamma(xp, alpha)


def _gamma_grads(xp, x, alpha, beta):
    return ((alpha - 1) / x - beta, xp.log(beta) + xp.log(x) - digamma(xp, alpha),
            alpha / beta - x)


def _exponential(xp, x, lam):
    return xp.log(lam) - lam * x


def _exponential_grads(xp, x, lam):
    return -lam + x * 0, 1 / lam - x


def _poisson(xp, x, lam):
    return x * xp.log(lam) - lam - _lgamma(xp, x + 1)


def _poisson_grads(xp, x, lam):
    return None, x / lam - 1


def _negative_binomial(xp, x, k, p):
    return _nb_logp(xp, x, k, p)


def _negative_binomial_grads(xp, x, k, p):
    return (None,) + _nb_grads(xp, x, k, p)


def _gnb(xp, x, mu, alpha):
    return _nb_logp(xp, x, *_gnb_params(xp, mu, alpha))


def _gnb_grads(xp, x, mu, alpha):
    k, p = _gnb_params(xp, mu, alpha)
    d_k, d_p = _nb_grads(xp, x, k, p)
    p2 = p * p
    return None, d_p * (-alpha * p2), d_k * (-k * k) + d_p * (-mu * p2)


PDF_FAMILY = {
    "uniform": (("low", "high"), _uniform, _uniform_grads),
    "normal": (("mu", "sigma"), _normal, _normal_grads),
    "gamma": (("alpha", "beta"), _gamma, _gamma_grads),
    "exponential": (("lam",), _exponential, _exponential_grads),
    "poisson": (("lam",), _poisson, _poisson_grads),
    "negative_binomial": (("k", "p"), _negative_binomial, _negative_binomial_grads),
    "generalized_negative_binomial": (("mu", "alpha"), _gnb, _gnb_grads),
}


@dataclasses.dataclass(frozen=True)
class PdfAttrs:
    is_log: bool = False


class _Pdf(Op):
    """Base of `_random_pdf_<dist>` (module docstring); `dist` names the family entry."""

    Attrs = PdfAttrs
    dist = ""
    vector = False  # dirichlet: the parameters and samples carry a last axis of K classes

    def infer_shape(self, in_shapes, out_shapes):
        sample, params = in_shapes[0], in_shapes[1:]
        known = next((p for p in params if p is not None), None)
        for i, shape in enumerate(params, start=1):
            if shape is not None and shape != known:
                raise ShapeError("input '%s' has shape %s but '%s' has %s: the parameters of "
                                 "%s share one shape" % (self._in_name(i), fmt_shape(shape),
                                                         self._in_name(1), fmt_shape(known),
                                                         self.name))
        if sample is None or known is None:
            return in_shapes, out_shapes
        rows = known[:-1] if self.vector else known
        fits = tuple(sample[:len(rows)]) == tuple(rows) and (
            not self.vector or sample[-1] == known[-1])
        if not fits:
            raise ShapeError("input 'sample' has shape %s but parameters of shape %s need %s"
                             % (fmt_shape(sample), fmt_shape(known),
                                "P + S + (K,)" if self.vector else "P + S"))
        self.set_out(out_shapes, 0, tuple(sample[:-1]) if self.vector else tuple(sample))
        return in_shapes, out_shapes

    def _parts(self, xp, inputs):
        """(sample, parameters reshaped to broadcast over S), in float64."""
        x = inputs[0].astype("float64")
        extra = x.ndim - inputs[1].ndim
        params = [p.astype("float64").reshape(p.shape + (1,) * extra) for p in inputs[1:]]
        return x, params

    def _logp(self, xp, x, params):
        return PDF_FAMILY[self.dist][1](xp, x, *params)

    def forward(self, xp, inputs, aux, out, is_train):
        x, params = self._parts(xp, inputs)
        logp = self._logp(xp, x, params)
        xp.copyto(out[0], logp if self.attrs.is_log else xp.exp(logp), casting="unsafe")

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, params = self._parts(xp, inputs)
        scale = out_grads[0].astype("float64")
        if not self.attrs.is_log:
            scale = scale * xp.exp(self._logp(xp, x, params))
        grads = PDF_FAMILY[self.dist][2](xp, x, *params)
        if in_grads[0] is not None:
            d = grads[0]
            xp.copyto(in_grads[0], 0 if d is None else scale * d, casting="unsafe")
        for g, d in zip(in_grads[1:], grads[1:]):
            if g is not None:
                total = (scale * d).reshape(g.shape + (-1,)).sum(axis=-1)
                xp.copyto(g, total, casting="unsafe")


class _DirichletPdf(_Pdf):
    vector = True

    def _parts(self, xp, inputs):
        x = inputs[0].astype("float64")
        alpha = inputs[1].astype("float64")
        extra = x.ndim - alpha.ndim
        rows = alpha.shape[:-1]
        return x, [alpha.reshape(rows + (1,) * extra + alpha.shape[-1:])]

    def _logp(self, xp, x, params):
        alpha = params[0]
        return (_lgamma(xp, alpha.sum(axis=-1)) - _lgamma(xp, alpha).sum(axis=-1)
                + ((alpha - 1) * xp.log(x)).sum(axis=-1))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, (alpha,) = self._parts(xp, inputs)
        scale = out_grads[0].astype("float64")
        if not self.attrs.is_log:
            scale = scale * xp.exp(self._logp(xp, x, [alpha]))
        scale = scale[..., None]
        if in_grads[0] is not None:
            xp.copyto(in_grads[0], scale * (alpha - 1) / x, casting="unsafe")
        if in_grads[1] is not None:
            d = digamma(xp, alpha.sum(axis=-1, keepdims=True)) - digamma(xp, alpha) + xp.log(x)
            g = in_grads[1]
            total = xp.moveaxis(scale * d, -1, 0).reshape((g.shape[-1],) + g.shape[:-1] + (-1,))
            xp.copyto(g, xp.moveaxis(total.sum(axis=-1), 0, -1), casting="unsafe")


for _dist, (_params, _, _) in PDF_FAMILY.items():
    register(type("Pdf_" + _dist, (_Pdf,), dict(
        __doc__="Densities of `sample` under %s(%s), per row of the parameters."
                % (_dist, ", ".join(_params)),
        name="_random_pdf_" + _dist, aliases=("random_pdf_" + _dist,),
        ARGUMENTS=("sample",) + _params, dist=_dist)))
register(type("Pdf_dirichlet", (_DirichletPdf,), dict(
    __doc__="Densities of `sample` (its last axis the K proportions) under dirichlet(alpha).",
    name="_random_pdf_dirichlet", aliases=("random_pdf_dirichlet",),
    ARGUMENTS=("sample", "alpha"), dist="dirichlet")))
