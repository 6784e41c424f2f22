"""The built-in distributions: Zero, One, Constant, Uniform, Normal, Orthogonal, Xavier,
MSRAPrelu and Bilinear.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import ShapeError
from .base import (
    InitError,
    Initializer,
    _bilinear_kernel,
    _fill,
    _rng_of,
    _xp_of,
    alias,
    register,
)


@register
@alias("zeros")
class Zero(Initializer):
    """Weights 0."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _: str, arr: Any) -> None:
        arr[:] = 0


@register
@alias("ones")
class One(Initializer):
    """Weights 1."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _: str, arr: Any) -> None:
        arr[:] = 1


@register
class Constant(Initializer):
    """Weights set to `value` (a scalar, or an array broadcast to the weight)."""

    def __init__(self, value: Any):
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, _: str, arr: Any) -> None:
        arr[:] = self.value

    def dumps(self) -> str:
        value = self._kwargs["value"]
        if not np.isscalar(value):
            value = value.tolist() if isinstance(value, np.ndarray) else value.asnumpy().tolist()
        self._kwargs["value"] = value
        return json.dumps([type(self).__name__.lower(), self._kwargs])


@register
class Uniform(Initializer):
    """Weights drawn from U(-scale, scale)."""

    def __init__(self, scale: float = 0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _: str, arr: Any) -> None:
        _fill(arr, _rng_of(arr).uniform(-self.scale, self.scale, size=tuple(arr.shape)))


@register
class Normal(Initializer):
    """Weights drawn from N(0, sigma^2)."""

    def __init__(self, sigma: float = 0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _: str, arr: Any) -> None:
        _fill(arr, _rng_of(arr).normal(0.0, self.sigma, size=tuple(arr.shape)))


@register
class Orthogonal(Initializer):
    """A random orthogonal matrix times `scale`, reshaped to the weight.

    The weight is viewed as (shape[0], prod(shape[1:])); a random matrix of that shape
    (`rand_type` 'uniform' on [-1, 1) or 'normal') is replaced by the orthogonal factor of its
    SVD with the same shape.
    """

    def __init__(self, scale: float = 1.414, rand_type: str = "uniform"):
        if rand_type not in ("uniform", "normal"):
            raise InitError(f"Orthogonal: rand_type must be 'uniform' or 'normal', got "
                            f"{rand_type!r}")
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, name: str, arr: Any) -> None:
        if len(arr.shape) < 1:
            raise ShapeError(f"Orthogonal cannot initialise scalar parameter {name!r}")
        nout, nin = arr.shape[0], int(np.prod(arr.shape[1:]))
        xp, gen = _xp_of(arr), _rng_of(arr)
        if self.rand_type == "uniform":
            sample = gen.uniform(-1.0, 1.0, size=(nout, nin))
        else:
            sample = gen.normal(0.0, 1.0, size=(nout, nin))
        u, _, v = xp.linalg.svd(xp.asarray(sample), full_matrices=False)
        factor = u if u.shape == sample.shape else v
        _fill(arr, self.scale * factor.reshape(arr.shape))


_FACTOR_TYPES = ("avg", "in", "out")
_RND_TYPES = ("uniform", "gaussian")


@register
class Xavier(Initializer):
    """Glorot/Xavier: scale = sqrt(magnitude / factor).

    fan_in = shape[1] * prod(shape[2:]), fan_out = shape[0] * prod(shape[2:]); factor is their
    mean ('avg'), fan_in ('in') or fan_out ('out'). Weights are drawn from U(-scale, scale)
    (`rnd_type='uniform'`) or N(0, scale^2) ('gaussian'). Needs a weight of at least 2 dims.
    """

    def __init__(self, rnd_type: str = "uniform", factor_type: str = "avg",
                 magnitude: float = 3):
        if rnd_type not in _RND_TYPES:
            raise InitError(f"Xavier: rnd_type must be one of {_RND_TYPES}, got {rnd_type!r}")
        if factor_type not in _FACTOR_TYPES:
            raise InitError(f"Xavier: factor_type must be one of {_FACTOR_TYPES}, got "
                            f"{factor_type!r}")
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _scale(self, name: str, shape: Sequence[int]) -> float:
        if len(shape) < 2:
            raise InitError(f"Xavier initializer cannot be applied to vector {name!r} of shape "
                            f"{tuple(shape)}: it needs at least 2 dims (give the variable "
                            "another init, e.g. init=mx.init.Uniform())")
        receptive = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[
            self.factor_type]
        return float(np.sqrt(self.magnitude / factor))

    def _init_weight(self, name: str, arr: Any) -> None:
        scale = self._scale(name, arr.shape)
        gen = _rng_of(arr)
        if self.rnd_type == "uniform":
            _fill(arr, gen.uniform(-scale, scale, size=tuple(arr.shape)))
        else:
            _fill(arr, gen.normal(0.0, scale, size=tuple(arr.shape)))


@register
class MSRAPrelu(Xavier):
    """He/MSRA initialisation for PReLU nets: Gaussian Xavier with magnitude
    2 / (1 + slope^2)."""

    def __init__(self, factor_type: str = "avg", slope: float = 0.25):
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope ** 2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Bilinear(Initializer):
    """Bilinear upsampling kernels for a 4-D Deconvolution weight."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _: str, arr: Any) -> None:
        _fill(arr, _bilinear_kernel(arr.shape))
