"""`mx.util`: environment access and MXNet's NumPy-semantics switches.

MXNet 1.9.1 has two array semantics: the legacy one (`mx.nd`, `mx.sym`; a 0 in a shape means
"unknown") and NumPy's (`mx.np`, `mx.npx`; zero-size and 0-d arrays). minimod has the legacy
semantics only. So:

- the decorators `use_np`, `use_np_shape`, `use_np_array` and `use_np_default_dtype` return
  what they decorate unchanged: the code runs with the legacy semantics;
- the queries `is_np_shape`, `is_np_array`, `is_np_default_dtype` answer False;
- turning NumPy semantics on (`set_np_shape(True)`, `np_shape(True)`, `set_np()`,
  `np_array(True)`) raises NotImplementedError, since code that asks for them would otherwise
  run with other shapes than it expects; turning them off is accepted.
"""
from __future__ import annotations

import contextlib
import os
from typing import Optional

from . import backend

__all__ = ["getenv", "setenv", "use_np", "use_np_shape", "use_np_array",
           "use_np_default_dtype", "is_np_shape", "is_np_array", "is_np_default_dtype",
           "set_np_shape", "set_np", "reset_np", "np_shape", "np_array", "set_module",
           "makedirs", "get_gpu_count", "get_gpu_memory"]

_NO_NP = ("minimod has MXNet's legacy array semantics only (mx.nd / mx.sym); NumPy "
          "semantics (mx.np, np_shape) are not implemented")


def getenv(name: str) -> Optional[str]:
    """The value of environment variable `name`, or None when it is unset."""
    return os.environ.get(name)


def setenv(name: str, value: Optional[str]) -> None:
    """Set environment variable `name` (None unsets it)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


def _unchanged(func=None):
    """A decorator usable bare or called: returns its argument unchanged."""
    if func is None:
        return lambda f: f
    return func


use_np = use_np_shape = use_np_array = use_np_default_dtype = _unchanged


def is_np_shape() -> bool:
    return False


def is_np_array() -> bool:
    return False


def is_np_default_dtype() -> bool:
    return False


def set_np_shape(active: bool) -> bool:
    """Turn NumPy shape semantics on (refused) or off; returns the previous state (False)."""
    if active:
        raise NotImplementedError(_NO_NP)
    return False


def set_np(shape: bool = True, array: bool = True, dtype: bool = False) -> None:
    if shape or array or dtype:
        raise NotImplementedError(_NO_NP)


def reset_np() -> None:
    """Back to the legacy semantics: what minimod always has."""


@contextlib.contextmanager
def np_shape(active: bool = True):
    """`with np_shape(False):` runs the block with the legacy shape semantics (a no-op);
    `np_shape(True)` raises NotImplementedError."""
    set_np_shape(active)
    yield


@contextlib.contextmanager
def np_array(active: bool = True):
    if active:
        raise NotImplementedError(_NO_NP)
    yield


def set_module(module: str):
    """Decorator: give a function or class the `__module__` it is documented under."""
    def decorate(obj):
        obj.__module__ = module
        return obj
    return decorate


def makedirs(path: str) -> None:
    """Create `path` and its parents; an existing directory is fine."""
    os.makedirs(os.path.expanduser(path), exist_ok=True)


def get_cuda_compute_capability(ctx) -> int:
    """The CUDA compute capability of GPU context `ctx` as an int (90 for sm_90)."""
    if getattr(ctx, "device_type", None) != "gpu":
        raise ValueError("Expecting a gpu context to get cuda compute capability, while "
                         "received ctx %s" % (ctx,))
    xp = backend.xp_for(ctx)  # CuPy, or an MXNetError saying why gpu(i) is not there
    return int(xp.cuda.Device(ctx.device_id).compute_capability)


def get_gpu_count() -> int:
    """How many GPUs minimod can use."""
    return backend.gpu_count()


def get_gpu_memory(gpu_dev_id: int) -> tuple:
    """(free, total) bytes of memory on GPU `gpu_dev_id`."""
    return backend.gpu_memory(gpu_dev_id)
