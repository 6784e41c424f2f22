"""The initializer base: InitDesc (a parameter name with its attributes), Initializer (the
dispatch on the name's suffix or the variable's `__init__` attribute), the registry behind
`create`, and the helpers the built-ins share.
"""
from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from math import sqrt
from typing import Any, Optional

import numpy as np

from .. import backend, registry
from ..base import MXNetError, ShapeError
from ..ndarray import NDArray


class InitError(MXNetError, ValueError):
    """An initializer that cannot initialise a parameter, or a bad initializer spec."""


class InitDesc(str):
    """A parameter name (a str) with the variable's `attrs` and the `global_init` in charge.

    `global_init` is the initializer the caller passed to `init_params`; initializers that
    delegate pieces of a parameter (FusedRNN) fall back on it.
    """

    def __new__(cls, name: str, attrs: Optional[dict] = None,
                global_init: Optional[Initializer] = None) -> InitDesc:
        desc = super().__new__(cls, name)
        desc.attrs = attrs or {}
        desc.global_init = global_init
        return desc


# ---------------------------------------------------------------------------------- helpers

def _xp_of(arr: Any) -> Any:
    if isinstance(arr, NDArray):
        return backend.xp_for(arr.context)
    return backend.array_module_of(arr)


def _rng_of(arr: Any) -> Any:
    return backend.rng(_xp_of(arr))


def _fill(arr: Any, values: Any) -> None:
    """Write `values` (a backend array of arr's kind, or a scalar) into `arr` in place."""
    arr[:] = values


# ---------------------------------------------------------------------------------- base

_HINT = ("give the variable its own initializer, e.g. mx.sym.Variable('{name}', "
         "init=mx.init.Xavier()), or wrap the initializer in mx.init.Mixed(['{name}', '.*'], "
         "[mx.init.Zero(), init])")


class Initializer:
    """Base class: dispatches `init(desc, arr)` on the parameter's name and attributes.

    Subclasses implement `_init_weight(name, arr)` (what a `*weight` parameter gets) and keep
    their constructor arguments in `self._kwargs` (what `dumps()` writes).
    """

    def __init__(self, **kwargs: Any):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func: Optional[Callable[[Any], str]] = None

    def set_verbosity(self, verbose: bool = False,
                      print_func: Optional[Callable[[Any], str]] = None) -> Initializer:
        """Log each initialised parameter with `print_func(arr)` (default: its RMS)."""
        self._verbose = verbose
        self._print_func = print_func if print_func is not None else _rms
        return self

    def _verbose_print(self, desc: str, how: str, arr: Any) -> None:
        if self._verbose and self._print_func:
            logging.info("Initialized %s as %s: %s", desc, how, self._print_func(arr))

    def dumps(self) -> str:
        """JSON `[name, kwargs]`, e.g. '["xavier", {"rnd_type": "uniform", ...}]'; `create`
        reads it back."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "%s(%s)" % (type(self).__name__,
                           ", ".join("%s=%r" % item for item in self._kwargs.items()))

    # ------------------------------------------------------------------ dispatch
    def __call__(self, desc: str, arr: Any) -> None:
        """Initialise `arr` in place according to `desc` (an InitDesc, or a plain name)."""
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        spec = desc.attrs.get("__init__", "")
        if spec:
            create(spec)._init_weight(desc, arr)
            self._verbose_print(desc, spec, arr)
            return
        for suffix, method in _SUFFIXES:
            if desc.endswith(suffix):
                getattr(self, method)(desc, arr)
                self._verbose_print(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    def _legacy_init(self, name: str, arr: Any) -> None:
        warnings.warn("calling an initializer with a plain str name is deprecated; pass "
                      "mx.init.InitDesc(name, attrs) instead", DeprecationWarning, stacklevel=3)
        if not isinstance(name, str):
            raise TypeError(f"parameter name must be a str, got {type(name).__name__}")
        if not isinstance(arr, NDArray):
            raise TypeError(f"parameter {name!r}: arr must be an NDArray, got "
                            f"{type(arr).__name__}")
        if name.startswith("upsampling"):
            self._init_bilinear(name, arr)
        elif name.startswith("stn_loc") and name.endswith("weight"):
            self._init_zero(name, arr)
        elif name.startswith("stn_loc") and name.endswith("bias"):
            self._init_loc_bias(name, arr)
        else:
            for suffix, method in _LEGACY_SUFFIXES:
                if name.endswith(suffix):
                    getattr(self, method)(name, arr)
                    return
            self._init_default(name, arr)

    # ------------------------------------------------------------------ fillers
    def _init_bilinear(self, _: str, arr: Any) -> None:
        _fill(arr, _bilinear_kernel(arr.shape))

    def _init_loc_bias(self, name: str, arr: Any) -> None:
        if tuple(arr.shape) != (6,):
            raise ShapeError(f"parameter {name!r}: a spatial-transformer location bias has "
                             f"shape (6,), got {tuple(arr.shape)}")
        _fill(arr, _xp_of(arr).asarray([1.0, 0, 0, 0, 1.0, 0]))

    def _init_zero(self, _: str, arr: Any) -> None:
        arr[:] = 0.0

    def _init_one(self, _: str, arr: Any) -> None:
        arr[:] = 1.0

    def _init_bias(self, _: str, arr: Any) -> None:
        arr[:] = 0.0

    def _init_gamma(self, _: str, arr: Any) -> None:
        arr[:] = 1.0

    def _init_beta(self, _: str, arr: Any) -> None:
        arr[:] = 0.0

    def _init_quantized_bias(self, _: str, arr: Any) -> None:
        arr[:] = 0

    def _init_quantized_weight(self, _: str, arr: Any) -> None:
        _fill(arr, _rng_of(arr).randint(-127, 127, size=tuple(arr.shape)).astype(np.int8))

    def _init_weight(self, name: str, arr: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not define _init_weight, so it "
                                  f"cannot initialise {name!r}")

    def _init_default(self, name: str, _: Any) -> None:
        hint = _HINT.format(name=name)
        if name.endswith("parameters"):
            hint = ("for a fused RNN parameter vector use init=mx.init.FusedRNN(init, "
                    "num_hidden, num_layers, mode) on the variable; or " + hint)
        elif name.endswith("label"):
            hint = ("if it is a label, list it in the module's label_names so it is not "
                    "treated as a parameter; otherwise " + hint)
        raise InitError(f"Unknown initialization pattern for {name!r}: {type(self).__name__} "
                        "initialises names ending in weight, bias, gamma (1), beta (0), "
                        f"min (0), max (1) and moving_mean/var/inv_var/avg; {hint}")


# The InitDesc path: first matching suffix wins (order matters: 'weight' before 'quantize').
_SUFFIXES = (
    ("weight", "_init_weight"), ("bias", "_init_bias"), ("gamma", "_init_gamma"),
    ("beta", "_init_beta"), ("min", "_init_zero"), ("max", "_init_one"),
    ("weight_quantize", "_init_quantized_weight"), ("bias_quantize", "_init_quantized_bias"),
    ("moving_mean", "_init_zero"), ("moving_var", "_init_one"),
    ("moving_inv_var", "_init_zero"), ("moving_avg", "_init_zero"),
)
# The legacy str path, in MXNet's order.
_LEGACY_SUFFIXES = (
    ("bias", "_init_bias"), ("gamma", "_init_gamma"), ("beta", "_init_beta"),
    ("weight", "_init_weight"), ("moving_mean", "_init_zero"), ("moving_var", "_init_one"),
    ("moving_inv_var", "_init_zero"), ("moving_avg", "_init_zero"), ("min", "_init_zero"),
    ("max", "_init_one"),
)


# ---------------------------------------------------------------------------------- registry

_REGISTRY: dict[str, type] = registry.table(Initializer)
register = registry.get_register_func(Initializer, "initializer")
alias = registry.get_alias_func(Initializer, "initializer")


def create(*args: Any, **kwargs: Any) -> Initializer:
    """An initializer from a name (+ constructor arguments), a JSON spec or an instance.

    `create('xavier', magnitude=2)`, `create('["xavier", {"magnitude": 2}]')` (what `dumps()`
    writes), `create({'initializer': 'zero'})` and `create(instance)` (returned as is).
    """
    if args:
        spec, args = args[0], args[1:]
    elif "initializer" in kwargs:
        spec = kwargs.pop("initializer")
    else:
        raise InitError("create() needs an initializer name, JSON spec or instance")
    if isinstance(spec, Initializer):
        if args or kwargs:
            raise InitError(f"{spec.dumps()} is already an initializer; extra arguments "
                            f"{args or ''}{kwargs or ''} are not allowed")
        return spec
    if isinstance(spec, Mapping):
        return create(**spec)
    if not isinstance(spec, str):
        raise TypeError(f"initializer must be a name, JSON spec or Initializer, got "
                        f"{type(spec).__name__}")
    if spec.startswith("[") or spec.startswith("{"):
        if args or kwargs:
            raise InitError(f"initializer spec {spec!r} is complete; extra arguments are "
                            "not allowed")
        return _create_from_json(spec)
    klass = _REGISTRY.get(spec.lower())
    if klass is None:
        raise InitError(f"initializer {spec!r} is not registered; known: "
                        f"{', '.join(sorted(_REGISTRY))} (register new ones with "
                        "mx.init.register)")
    return klass(*args, **kwargs)



def _create_from_json(spec: str) -> Initializer:
    """An initializer from the JSON `dumps()` writes, '["name", {...}]', or a config dict."""
    try:
        parsed = json.loads(spec)
    except json.JSONDecodeError as err:
        raise InitError(f"initializer spec {spec!r} is not valid JSON: {err}") from err
    if isinstance(parsed, dict):
        return create(**parsed)
    if not (isinstance(parsed, list) and len(parsed) == 2 and isinstance(parsed[1], dict)):
        raise InitError(f"initializer spec {spec!r} must look like '[\"name\", {{...}}]'")
    return create(parsed[0], **parsed[1])


def _rms(arr: Any) -> str:
    data = arr._data if isinstance(arr, NDArray) else arr
    xp = backend.array_module_of(data)
    norm = float(xp.linalg.norm(data.astype(np.float64).reshape(-1)))
    return str(np.float32(norm / sqrt(max(int(data.size), 1))))


def _bilinear_kernel(shape: Sequence[int]) -> np.ndarray:
    """The bilinear upsampling kernel for a 4-D (out, in, h, w) weight, repeated over
    out and in."""
    if len(shape) != 4:
        raise ShapeError(f"a bilinear kernel needs a 4-D weight (out, in, h, w), got shape "
                         f"{tuple(shape)}")
    height, width = shape[2], shape[3]
    f = np.ceil(width / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    wx = 1 - np.abs(np.arange(width) / f - c)
    wy = 1 - np.abs(np.arange(height) / f - c)
    kernel = (wy[:, None] * wx[None, :]).astype(np.float32)
    return np.broadcast_to(kernel, tuple(shape))
