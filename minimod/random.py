"""`mx.random`: seeding of every backend generator, plus the common samplers.

`seed(n)` resets the process-wide NumPy and CuPy generators that `mx.nd.random.*`, the
initializers and random operators (Dropout, RReLU) draw from, and also seeds NumPy's global
`np.random`, which `NDArrayIter(shuffle=True)` uses (as in MXNet), so a whole training run
becomes reproducible: two runs after `mx.random.seed(s)` give identical parameters
(tests/test_nan_guard.py). MXNet's own seed leaves `np.random` alone, so its shuffles stay
unseeded; minimod bends here on purpose.
"""
from __future__ import annotations

import numbers

import numpy as np

from . import backend
from .context import Context
from .ndarray.random import (
    exponential,
    gamma,
    generalized_negative_binomial,
    multinomial,
    negative_binomial,
    normal,
    poisson,
    randint,
    randn,
    shuffle,
    uniform,
)

__all__ = ["exponential", "gamma", "generalized_negative_binomial", "multinomial",
           "negative_binomial",
           "normal", "poisson", "randint", "randn", "seed", "shuffle", "uniform"]


def seed(seed_state: int, ctx: str | Context = "all") -> None:
    """Reseed the random generators with integer `seed_state`.

    `ctx` is accepted for MXNet compatibility: minimod keeps one generator per array module,
    so seeding one context reseeds all of them (a superset of what MXNet does).
    """
    if not isinstance(seed_state, numbers.Integral) or isinstance(seed_state, bool):
        # ValueError, not TypeError: the exception MXNet raises here.
        raise ValueError(f"seed_state must be an int, got {seed_state!r}")  # noqa: TRY004
    backend.seed(int(seed_state) % (1 << 32))
    np.random.seed(int(seed_state) % (1 << 32))
