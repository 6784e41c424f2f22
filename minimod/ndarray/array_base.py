"""NDArrayBase: what an NDArray holds and reports, as MXNet's class of that name holds the C
handle: the backend array, its Context and writability, the attributes (shape, dtype, size,
handle ...), copies to the host, pickling and the method forms of the routines. Nothing here
makes a new NDArray; core.py's NDArray, built on this class, does (views, copies, indexing,
arithmetic).
"""
from __future__ import annotations

import ctypes
import weakref

import numpy as np

from .. import backend
from ..base import MXNetError
from ..context import Context

#: id -> NDArray for the arrays whose handle was taken (see NDArray.handle)
_HANDLES: "weakref.WeakValueDictionary[int, NDArrayBase]" = weakref.WeakValueDictionary()


def _ctx_of_data(data) -> Context:
    if backend.is_gpu_array(data):
        return Context("gpu", data.device.id)
    return Context("cpu", 0)


def _is_backend_array(obj) -> bool:
    return isinstance(obj, np.ndarray) or backend.is_gpu_array(obj)


class NDArrayBase:
    """The state of an NDArray (`_data`, `_ctx`, `_writable`) and everything that only reads it.

    `NDArray(data, ctx)` wraps the backend array `data` (NumPy for CPU, CuPy for GPU) without
    copying; `ctx` defaults to where `data` lives. `NDArray(None)` is the empty placeholder
    pickling fills in through `__setstate__`.
    """

    #: `_ag`: where the array sits on the autograd tape (`tape.py`): None, a Leaf, or
    #: (node, output index)
    __slots__ = ("__weakref__", "_ctx", "_data", "_writable", "_ag")

    def __init__(self, data=None, ctx: Context | None = None, writable: bool = True):
        if isinstance(data, ctypes.c_void_p):  # MXNet's NDArray(handle): the same array
            source = _HANDLES.get(data.value)
            if source is None:
                raise MXNetError("NDArray(handle): %r is not the handle of a live NDArray"
                                 % (data,))
            data, ctx = source._data, source._ctx
        if data is None:
            data = np.zeros((0,), dtype=np.float32)
        elif not _is_backend_array(data):
            raise TypeError("NDArray(data, ctx) wraps a NumPy or CuPy array, got "
                            f"{type(data).__name__}; use "
                            "mx.nd.array to convert other data")
        self._data = data
        self._ctx = _ctx_of_data(data) if ctx is None else ctx
        self._writable = bool(writable)
        self._ag = None

    # ------------------------------------------------------------------ attributes
    @property
    def _xp(self):
        return backend.array_module_of(self._data)

    @property
    def shape(self) -> tuple:
        return tuple(self._data.shape)

    @property
    def dtype(self) -> type:
        """The element type as a NumPy scalar type (`np.float32`), as MXNet returns it."""
        return self._data.dtype.type

    @property
    def context(self) -> Context:
        return self._ctx

    ctx = context

    @property
    def stype(self) -> str:
        return "default"

    @property
    def size(self) -> int:
        return int(self._data.size)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def handle(self) -> ctypes.c_void_p:
        """An opaque handle, distinct per NDArray object: `NDArray(handle)` is a new NDArray
        over the same array, as in MXNet, for as long as this one lives (monitor callbacks
        written for MXNet receive handles and wrap them so)."""
        _HANDLES[id(self)] = self
        return ctypes.c_void_p(id(self))

    @property
    def _as_parameter_(self) -> ctypes.c_void_p:
        """What ctypes passes for an NDArray (`ctypes.cast(arr, NDArrayHandle)`): its handle."""
        return self.handle

    @property
    def writable(self) -> bool:
        return self._writable

    @property
    def grad(self):
        """The gradient buffer `attach_grad()` made (an NDArray), or None."""
        entry = self._ag
        return getattr(entry, "grad", None)

    @property
    def _fresh_grad(self) -> bool:
        """MXNet's flag: whether a backward wrote this variable's gradient since it was marked
        (or since the flag was last set False). False for an array that is no variable."""
        return bool(getattr(self._ag, "fresh", False))

    @_fresh_grad.setter
    def _fresh_grad(self, value: bool) -> None:
        if hasattr(self._ag, "fresh"):
            self._ag.fresh = bool(value)

    # ------------------------------------------------------------------ host copies, display
    def asnumpy(self) -> np.ndarray:
        """A NumPy copy of the values (a new array even on CPU, as MXNet). On a GPU this waits
        for the work queued on the array's device, like MXNet's `asnumpy`."""
        return np.array(backend.asnumpy(self._data), copy=True)

    def asscalar(self):
        """The single value as a NumPy scalar of this dtype; ValueError unless size is 1."""
        if self.size != 1:
            raise ValueError("The current array is not a scalar")
        return backend.asnumpy(self._data.reshape(-1))[0]

    def item(self):
        """The single value as a Python scalar; ValueError unless size is 1."""
        return self.asscalar().item()

    def __array__(self, dtype=None, copy=None):
        data = backend.asnumpy(self._data)
        if dtype is not None:
            data = data.astype(dtype, copy=False)
        return np.array(data, copy=True) if copy else data

    # ------------------------------------------------------------------ DLPack (dlpack.py)
    def __dlpack__(self, **kwargs):
        """A DLPack capsule over this array's memory (on a GPU, once the work queued on the
        array's device is done)."""
        self.wait_to_read()
        return self._data.__dlpack__(**kwargs)

    def to_dlpack_for_read(self):
        """A DLPack "dltensor" capsule over this array's memory, for a reader."""
        return self.__dlpack__()

    def to_dlpack_for_write(self):
        """A DLPack "dltensor" capsule over this array's memory, for a writer."""
        self._check_writable()
        return self.__dlpack__()

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def wait_to_read(self) -> None:
        """Block until the work queued on this array's GPU finishes (immediate with NumPy)."""
        if self._ctx.device_typeid == 2:
            backend.synchronize(self._ctx)

    wait_to_write = wait_to_read

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d NDArray")
        return self._data.shape[0]

    def _check_writable(self):
        if not self._writable:
            raise MXNetError("this NDArray is read-only (writable=False)")

    def __repr__(self) -> str:
        return "\n{}\n<{} {} @{}>".format(str(backend.asnumpy(self._data)), type(self).__name__,
                                      "x".join(str(d) for d in self.shape), self._ctx)

    def __getstate__(self) -> dict:
        from .serialization import write_record
        return {"handle": bytearray(write_record(self))}

    def __setstate__(self, state: dict) -> None:
        from .serialization import read_record
        raw = state.get("handle") if isinstance(state, dict) else state
        if raw is None:
            return
        if not isinstance(raw, (bytes, bytearray)):  # bytes(n) would allocate n bytes
            raise MXNetError("pickled NDArray state must hold bytes, got %s"
                             % type(raw).__name__)
        loaded, _ = read_record(bytes(raw), 0, source="pickled NDArray")
        if loaded is None:
            raise MXNetError("pickled NDArray holds a 'none' array record")
        self._data, self._ctx, self._writable = loaded._data, loaded._ctx, True

    # ------------------------------------------------------------------ method forms of routines
    def __getattr__(self, name: str):
        # Method forms (x.sum(), x.argmax(axis=1), x.log10() ...) of the routines and
        # operators, as MXNet provides.
        from . import imperative, routines
        fn = routines.METHODS.get(name)
        if fn is None and name in imperative.FLUENT:
            fn = imperative.op_function(name)
        if fn is None:
            raise AttributeError(f"'NDArray' object has no attribute {name!r}")
        return lambda *args, **kwargs: fn(self, *args, **kwargs)
