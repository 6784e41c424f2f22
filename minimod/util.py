"""`mx.util`: environment access and MXNet's NumPy-semantics switches.

MXNet 1.9.1 has two shape semantics, the legacy one (a 0 in a shape means "unknown") and
NumPy's (zero-size and 0-d arrays); `minimod.shape_semantics` says what each changes. Both are
here: `set_np_shape`, `np_shape(active)`, `use_np_shape` and `is_np_shape` switch and query
them per thread, as MXNet's do.

MXNet's NumPy *array* semantics (the `mx.np` / `mx.npx` namespaces and their ndarray type) are
not part of minimod. So `set_np(array=True)` (its default), `np_array(True)` and
`set_np_shape`'s siblings that ask for them raise NotImplementedError; `use_np` turns on the
shape semantics only (there is no `mx.np` array for its array half to switch to), and
`use_np_array` / `use_np_default_dtype` return what they decorate unchanged.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import os
from typing import Optional

from . import backend
from .shape_semantics import is_np_shape, np_shape, set_np_shape

__all__ = ["getenv", "setenv", "use_np", "use_np_shape", "use_np_array",
           "use_np_default_dtype", "is_np_shape", "is_np_array", "is_np_default_dtype",
           "set_np_shape", "set_np", "reset_np", "np_shape", "np_array", "set_module",
           "makedirs", "get_gpu_count", "get_gpu_memory"]

_NO_NP = ("minimod has MXNet's legacy arrays only (mx.nd / mx.sym): MXNet's NumPy array "
          "semantics (mx.np, mx.npx) are not implemented; NumPy shape semantics are "
          "(mx.np_shape, mx.set_np_shape, mx.use_np_shape)")


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


use_np_array = use_np_default_dtype = _unchanged


def _with_np_shape(func):
    """`func` run with NumPy shape semantics on (the previous state restored after)."""
    @functools.wraps(func)
    def call(*args, **kwargs):
        with np_shape(True):
            return func(*args, **kwargs)
    return call


def use_np_shape(func):
    """Decorator: run a function, or every method of a class, under NumPy shape semantics."""
    if inspect.isclass(func):
        for name, member in list(vars(func).items()):
            if inspect.isfunction(member):
                setattr(func, name, _with_np_shape(member))
        return func
    if not callable(func):
        raise TypeError("use_np_shape decorates a function or a class, got %r" % (func,))
    return _with_np_shape(func)


use_np = use_np_shape


def is_np_array() -> bool:
    return False


def is_np_default_dtype() -> bool:
    return False


def set_np(shape: bool = True, array: bool = True, dtype: bool = False) -> None:
    """Turn NumPy shape semantics on or off; the array and dtype semantics (`mx.np`) are not
    part of minimod, so asking for them raises NotImplementedError."""
    if array or dtype:
        raise NotImplementedError(_NO_NP)
    set_np_shape(shape)


def reset_np() -> None:
    """Back to the legacy semantics."""
    set_np_shape(False)


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
