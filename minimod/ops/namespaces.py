"""MXNet's namespaces of prefixed operators: `mx.sym.contrib.X` / `mx.nd.contrib.X` is operator
`_contrib_X`, `linalg.X` is `_linalg_X`, `image.X` is `_image_X`. The modules
`minimod/symbol/{contrib,linalg,image}.py` and `minimod/ndarray/{contrib,linalg,image}.py` are
these namespaces; `module_hooks` gives each its module-level `__getattr__` and `__dir__`.
`log_uniform_candidates` is the one contrib function both frontends compose from other
operators (`contrib.rand_zipfian`)."""
from __future__ import annotations

import math
from typing import Callable

from .registry import list_ops

__all__ = ["module_hooks", "prefixed_name", "prefixed_names", "log_uniform_candidates"]


def prefixed_name(prefix: str, name: str):
    """The registered operator `<prefix><name>`, or None when there is none."""
    if name.startswith("__"):
        return None
    full = prefix + name
    return full if full in list_ops() else None


def prefixed_names(prefix: str) -> list:
    """Every short name the namespace of `prefix` offers."""
    return sorted(k[len(prefix):] for k in list_ops() if k.startswith(prefix))


def module_hooks(module_globals: dict, prefix: str, make: Callable) -> tuple:
    """(`__getattr__`, `__dir__`) for a namespace module over the operators `<prefix>X`;
    `make(short, op_name)` builds the function for `X` (a symbol constructor, or an imperative
    call). Each function is made on first use and kept in the module."""
    module_name = module_globals["__name__"]

    def __getattr__(short: str):
        op_name = prefixed_name(prefix, short)
        if op_name is None:
            raise AttributeError("module '%s' has no attribute '%s'" % (module_name, short))
        fn = make(short, op_name)
        module_globals[short] = fn
        return fn

    def __dir__():
        return sorted(set(module_globals) | set(prefixed_names(prefix)))

    return __getattr__, __dir__


def log_uniform_candidates(uniform, true_classes, num_sampled: int, range_max: int):
    """MXNet's `contrib.rand_zipfian`, for NDArrays and Symbols alike (it calls only methods
    both have): `num_sampled` classes drawn with replacement from [0, range_max) with
    P(c) = log((c + 2) / (c + 1)) / log(range_max + 1), as int64, and the expected counts
    (float64) of the true classes and of the drawn ones in `num_sampled` draws.
    `uniform(low, high, shape, dtype)` draws the float64 uniforms in the caller's frontend.

    A class is exp(u) - 1 truncated for u uniform in [0, log(range_max + 1)), taken modulo
    range_max (which only folds the measure-zero top value back into range)."""
    if num_sampled <= 0 or range_max <= 0:
        raise ValueError("rand_zipfian: num_sampled=%r and range_max=%r must be positive"
                         % (num_sampled, range_max))
    log_range = math.log(range_max + 1)
    draws = uniform(0, log_range, (num_sampled,), "float64")
    sampled = (draws.exp() - 1).astype("int64") % range_max

    def expected_count(classes):
        c = classes.astype("float64")
        return ((c + 2.0) / (c + 1.0)).log() / log_range * num_sampled

    return sampled, expected_count(true_classes), expected_count(sampled)
