"""Devices: `Context`, `cpu(i)`, `gpu(i)`, `current_context()`.

A Context names a device; it holds no resources. `cpu(0)` and `cpu(1)` are distinct devices with
distinct arrays, which is how every multi-device code path is exercised on a CPU-only machine.
"""
from __future__ import annotations

import threading
import warnings

__all__ = ["Context", "cpu", "gpu", "cpu_pinned", "current_context", "num_gpus"]


class _ContextType(type):
    """Context's metaclass, for MXNet's deprecated class property `Context.default_ctx` (the
    default device: read it as `current_context()`, set it with `with ctx:`)."""

    @property
    def default_ctx(cls) -> "Context":
        warnings.warn("Context.default_ctx is deprecated (as in MXNet): use "
                      "mx.context.current_context()", DeprecationWarning, stacklevel=2)
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, value: "Context") -> None:
        warnings.warn("Context.default_ctx is deprecated (as in MXNet): use a `with ctx:` "
                      "block or test_utils.set_default_context", DeprecationWarning,
                      stacklevel=2)
        if not isinstance(value, Context):
            raise TypeError("Context.default_ctx must be a Context, got %r" % (value,))
        Context._default.value = value


class Context(metaclass=_ContextType):
    """A device: `Context('cpu', 0)`, `Context('gpu', 1)`, or a copy of another Context.

    Usable as a context manager: `with mx.gpu(0): ...` makes it the default device.
    """

    devtype2str = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type = {name: code for code, name in devtype2str.items()}
    _default = threading.local()

    def __init__(self, device_type, device_id: int = 0):
        if isinstance(device_type, Context):
            self.device_typeid = device_type.device_typeid
            self.device_id = device_type.device_id
        else:
            if device_type not in self.devstr2type:
                raise ValueError(
                    "unknown device type %r; expected one of %s"
                    % (device_type, sorted(self.devstr2type)))
            self.device_typeid = self.devstr2type[device_type]
            self.device_id = int(device_id)
        self._old_ctx = None

    @property
    def device_type(self) -> str:
        return self.devtype2str[self.device_typeid]

    def __hash__(self):
        return hash((self.device_typeid, self.device_id))

    def __eq__(self, other):
        return (isinstance(other, Context) and self.device_typeid == other.device_typeid
                and self.device_id == other.device_id)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __str__(self):
        return "%s(%d)" % (self.device_type, self.device_id)

    __repr__ = __str__

    def __enter__(self):
        self._old_ctx = current_context()
        Context._default.value = self
        return self

    def __exit__(self, *exc):
        Context._default.value = self._old_ctx

    def empty_cache(self):
        """Release cached device memory (a no-op on CPU)."""
        from . import backend
        backend.empty_cache(self)


def cpu(device_id: int = 0) -> Context:
    """The CPU device `device_id`; ids only separate array sets, they share the same cores."""
    return Context("cpu", device_id)


def cpu_pinned(device_id: int = 0) -> Context:
    return Context("cpu_pinned", device_id)


def gpu(device_id: int = 0) -> Context:
    """The GPU `device_id`: its arrays are CuPy arrays on `cupy.cuda.Device(device_id)`.

    Making the Context needs nothing; putting an array or an executor on it needs CuPy
    (`pip install minimod[gpu]`) and that GPU, else an MXNetError says which is missing.
    """
    return Context("gpu", device_id)


def current_context() -> Context:
    """The default device: the innermost `with ctx:` block, else `cpu(0)`."""
    ctx = getattr(Context._default, "value", None)
    return ctx if ctx is not None else Context("cpu", 0)


def num_gpus() -> int:
    from . import backend
    return backend.gpu_count()
