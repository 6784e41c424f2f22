"""`mx.init`: parameter initializers, MXNet 1.9.1's `mx.initializer`.

An initializer is called as `init(desc, arr)` with the parameter's name (an `InitDesc`, a str
subclass carrying the variable's attributes) and the NDArray to fill in place. The name decides
what to do: an `__init__` attribute on the variable (set by `mx.sym.Variable(..., init=...)`,
JSON like '["zero", {}]') names the initializer outright; otherwise the name's suffix does:
`weight` gets the initializer's own distribution, `bias`/`beta`/`min` 0, `gamma`/`max` 1. Any
other name is an error that names the variable and how to fix it.

Random initializers draw from `minimod.backend.rng(xp)`, the process-wide generator of the
array's backend, so `mx.random.seed(n)` makes initialisation reproducible. The numbers are
minimod's own (MXNet's generator is a different one); distributions and scales are MXNet's.

Where minimod bends MXNet:

* The InitDesc path also knows the BatchNorm statistics `moving_mean`/`moving_avg`/
  `moving_inv_var` (0) and `moving_var` (1), as MXNet's legacy str path does; MXNet relies on
  the symbol attaching an `__init__` attribute to them and fails otherwise.
* Invalid `rnd_type`/`factor_type`/`rand_type` are rejected when the initializer is built, not
  on first use; `Mixed` and `Load` failures name the parameter (MXNet's Mixed message does not).
* `Bilinear` is vectorised; `FusedRNN` initialises the pieces of the flat RNN parameter vector
  in place instead of unpacking, copying and repacking them.
"""
from __future__ import annotations

import json
import logging
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from math import sqrt
from typing import Any, Optional

import numpy as np

from . import backend
from .base import MXNetError, ShapeError
from .ndarray import NDArray
from .ndarray import load as nd_load
from .ndarray.ndarray import wrap

__all__ = [
    "Bilinear", "Constant", "FusedRNN", "InitDesc", "InitError", "Initializer", "LSTMBias",
    "Load", "MSRAPrelu", "Mixed", "Normal", "One", "Orthogonal", "Uniform", "Xavier", "Zero",
    "alias", "create", "register",
]


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


# ---------------------------------------------------------------------------------- registry

_REGISTRY: dict[str, type] = {}


def register(klass: type, name: Optional[str] = None) -> type:
    """Class decorator: make `klass` creatable by its lower-case class name (or `name`)."""
    if not (isinstance(klass, type) and issubclass(klass, Initializer)):
        raise InitError(f"only Initializer subclasses can be registered, got {klass!r}")
    key = (name or klass.__name__).lower()
    if key in _REGISTRY and _REGISTRY[key] is not klass:
        old = _REGISTRY[key]
        warnings.warn(f"initializer {klass.__module__}.{klass.__name__} registered as {key!r} "
                      f"replaces {old.__module__}.{old.__name__}", UserWarning, stacklevel=2)
    _REGISTRY[key] = klass
    return klass


def alias(*aliases: str) -> Callable[[type], type]:
    """Class decorator: register the class under extra names too."""
    def decorate(klass: type) -> type:
        for name in aliases:
            register(klass, name)
        return klass
    return decorate


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
        try:
            parsed = json.loads(spec)
        except json.JSONDecodeError as err:
            raise InitError(f"initializer spec {spec!r} is not valid JSON: {err}") from err
        if isinstance(parsed, dict):
            return create(**parsed)
        if not (isinstance(parsed, list) and len(parsed) == 2 and isinstance(parsed[1], dict)):
            raise InitError(f"initializer spec {spec!r} must look like '[\"name\", {{...}}]'")
        return create(parsed[0], **parsed[1])
    klass = _REGISTRY.get(spec.lower())
    if klass is None:
        raise InitError(f"initializer {spec!r} is not registered; known: "
                        f"{', '.join(sorted(_REGISTRY))} (register new ones with "
                        "mx.init.register)")
    return klass(*args, **kwargs)


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


# ---------------------------------------------------------------------------------- Load, Mixed

class Load:
    """Initialise from saved parameters: a dict name -> NDArray or a `.params` file name.

    `arg:` and `aux:` prefixes are stripped. Names not found go to `default_init` (an error
    when there is none); a stored array of another shape is an error.
    """

    def __init__(self, param: str | Mapping[str, NDArray], default_init: Optional[Any] = None,
                 verbose: bool = False):
        if isinstance(param, str):
            param = nd_load(param)
        if not isinstance(param, Mapping):
            raise InitError("Load needs a dict of named arrays or a .params file holding one, "
                            f"got {type(param).__name__}")
        self.param = {}
        for name, arr in param.items():
            if name.startswith("arg:") or name.startswith("aux:"):
                name = name[4:]
            self.param[name] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name: str, arr: Any) -> None:
        if name in self.param:
            stored = self.param[name]
            if tuple(arr.shape) != tuple(stored.shape):
                raise ShapeError(f"Parameter {name!r} cannot be initialized from loading: "
                                 f"shape mismatch, target {tuple(arr.shape)} vs loaded "
                                 f"{tuple(stored.shape)}")
            arr[:] = stored
            if self.verbose:
                logging.info("Initialized %s by loading", name)
            return
        if self.default_init is None:
            raise InitError(f"Cannot initialize {name!r}: not found in the loaded parameters "
                            "and no default_init was given")
        self.default_init(name, arr)
        if self.verbose:
            logging.info("Initialized %s by default", name)


class Mixed:
    """Pick the initializer by name: the first regex in `patterns` that matches (re.match)
    the parameter name wins."""

    def __init__(self, patterns: Sequence[str], initializers: Sequence[Any]):
        if len(patterns) != len(initializers):
            raise InitError(f"Mixed needs one initializer per pattern, got {len(patterns)} "
                            f"patterns and {len(initializers)} initializers")
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name: str, arr: Any) -> None:
        for pattern, init in self.map:
            if pattern.match(name):
                init(name, arr)
                return
        raise InitError(f"Parameter name {name!r} did not match any pattern of Mixed "
                        f"{[p.pattern for p, _ in self.map]}; add a '.*' pattern at the end "
                        "with a default initializer")


# ---------------------------------------------------------------------------------- built-ins

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


@register
class LSTMBias(Initializer):
    """An LSTM bias of 4 gates: all 0 except the forget gate (the second quarter)."""

    def __init__(self, forget_bias: float = 1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, _: str, arr: Any) -> None:
        arr[:] = 0.0
        num_hidden = int(arr.shape[0] / 4)
        arr[num_hidden:2 * num_hidden] = self.forget_bias


_RNN_GATES = {"rnn_relu": ("",), "rnn_tanh": ("",), "lstm": ("_i", "_f", "_c", "_o"),
              "gru": ("_r", "_z", "_o")}


def rnn_param_layout(size: int, num_hidden: int, num_layers: int, mode: str,
                     bidirectional: bool = False) -> list[tuple[str, int, tuple]]:
    """The pieces of the flat parameter vector of MXNet's fused RNN operator.

    Returns `(name, offset, shape)` per piece, in storage order: first all weights, layer by
    layer, direction by direction ('l', then 'r'), the i2h gate matrices then the h2h ones;
    then all biases in the same order. Names are like 'l0_i2h_f_weight'. The input size is
    worked out from `size`.
    """
    if mode not in _RNN_GATES:
        raise InitError(f"RNN mode must be one of {sorted(_RNN_GATES)}, got {mode!r}")
    gates = _RNN_GATES[mode]
    directions = ("l", "r") if bidirectional else ("l",)
    dirs, ngates, hidden = len(directions), len(gates), num_hidden
    per_input = dirs * ngates * hidden
    rest = size - (num_layers - 1) * per_input * (hidden + dirs * hidden + 2) \
        - per_input * (hidden + 2)
    if hidden <= 0 or num_layers <= 0 or rest <= 0 or rest % per_input:
        raise ShapeError(f"a fused {mode} parameter vector of {size} values does not fit "
                         f"num_hidden={num_hidden}, num_layers={num_layers}, "
                         f"bidirectional={bidirectional}")
    num_input = rest // per_input
    pieces, offset = [], 0
    for layer in range(num_layers):
        layer_input = num_input if layer == 0 else dirs * hidden
        for direction in directions:
            for kind, cols in (("i2h", layer_input), ("h2h", hidden)):
                for gate in gates:
                    name = "%s%d_%s%s_weight" % (direction, layer, kind, gate)
                    pieces.append((name, offset, (hidden, cols)))
                    offset += hidden * cols
    for layer in range(num_layers):
        for direction in directions:
            for kind in ("i2h", "h2h"):
                for gate in gates:
                    pieces.append(("%s%d_%s%s_bias" % (direction, layer, kind, gate), offset,
                                   (hidden,)))
                    offset += hidden
    return pieces


@register
class FusedRNN(Initializer):
    """Initialise the flat parameter vector of a fused RNN operator piece by piece.

    Each gate matrix and bias (see `rnn_param_layout`) is initialised by `init` (or by the
    global initializer when `init` is None) under its own name, so weights get `init`'s
    distribution and biases 0; LSTM forget-gate biases get `forget_bias`.
    """

    def __init__(self, init: Optional[Initializer | str], num_hidden: int, num_layers: int,
                 mode: str, bidirectional: bool = False, forget_bias: float = 1.0):
        if isinstance(init, str):
            init = create(init)
        if mode not in _RNN_GATES:
            raise InitError(f"FusedRNN: mode must be one of {sorted(_RNN_GATES)}, got {mode!r}")
        super().__init__(init=init.dumps() if init is not None else None,
                         num_hidden=num_hidden, num_layers=num_layers, mode=mode,
                         bidirectional=bidirectional, forget_bias=forget_bias)
        self._init = init
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._forget_bias = forget_bias

    def _init_weight(self, desc: str, arr: Any) -> None:
        fallback = getattr(desc, "global_init", None)
        init = self._init if self._init is not None else fallback
        if init is None:
            raise InitError(f"FusedRNN for {desc!r} has init=None and no global initializer to "
                            "fall back on; pass init=mx.init.Xavier() (for example)")
        data = arr._data if isinstance(arr, NDArray) else arr
        flat = data.reshape(-1)
        if not data.flags.c_contiguous:
            raise InitError(f"FusedRNN: parameter {desc!r} must be a contiguous array")
        pieces = rnn_param_layout(int(flat.size), self._num_hidden, self._num_layers,
                                  self._mode, self._bidirectional)
        ctx = arr.context if isinstance(arr, NDArray) else None
        for name, offset, shape in pieces:
            size = int(np.prod(shape))
            view = flat[offset:offset + size].reshape(shape)
            piece = wrap(view, ctx) if ctx is not None else view
            if self._mode == "lstm" and name.endswith("_f_bias"):
                piece[:] = self._forget_bias
            else:
                init(InitDesc(name, global_init=fallback), piece)
