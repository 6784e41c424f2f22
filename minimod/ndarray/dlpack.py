"""DLPack interchange: `mx.nd.to_dlpack_for_read`, `to_dlpack_for_write` and `from_dlpack`, as
MXNet 1.9.1 has them, so NDArrays pass to and from PyTorch, CuPy, NumPy, JAX ... without a copy.

- `to_dlpack_for_read(a)` / `to_dlpack_for_write(a)` (also NDArray methods) give a "dltensor"
  PyCapsule over a's memory (minimod computes eagerly, so there is no pending write to wait
  for, and the two differ only in intent).
- `from_dlpack(x)` gives an NDArray over the memory of a "dltensor" capsule (consumed: a
  capsule can be used once, as in MXNet) or, beyond MXNet 1.9.1, of any object with
  `__dlpack__` (a PyTorch tensor, a NumPy or CuPy array). CPU memory becomes a cpu(0) NDArray,
  CUDA memory a gpu(i) NDArray on the device it lies on.
- NDArray has `__dlpack__` / `__dlpack_device__` too, so `torch.from_dlpack(nd_array)` and
  `numpy.from_dlpack(nd_array)` work directly.
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .. import backend
from ..base import MXNetError
from ..context import Context
from .core import NDArray, wrap

__all__ = ["to_dlpack_for_read", "to_dlpack_for_write", "from_dlpack"]

_CPU, _CUDA = 1, 2  # DLDeviceType codes
_CAPSULE_NAME = b"dltensor"


def _capsule_device(capsule) -> tuple:
    """(device_type, device_id) of an unconsumed "dltensor" capsule: the DLDevice that
    follows the data pointer at the head of its DLManagedTensor."""
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    if get_name(capsule) != _CAPSULE_NAME:
        raise MXNetError("from_dlpack: the capsule is %r, not an unused 'dltensor' (a DLPack "
                         "capsule can be consumed only once)" % get_name(capsule))
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object,
                                                                  ctypes.c_char_p]
    head = get_pointer(capsule, _CAPSULE_NAME)
    device = (ctypes.c_int32 * 2).from_address(head + ctypes.sizeof(ctypes.c_void_p))
    return int(device[0]), int(device[1])


class _CapsuleProducer:
    """A bare capsule dressed as the producer object `from_dlpack` functions take."""

    def __init__(self, capsule, device: tuple):
        self._capsule, self._device = capsule, device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def _writable(arr: np.ndarray) -> np.ndarray:
    """arr, or a writable alias of its memory where NumPy made it read-only. NumPy marks what
    it takes from an unversioned capsule read-only (that format has no read-only flag), but
    a capsule from `to_dlpack_for_write`, MXNet's and minimod's alike, is there to be written
    through; the alias keeps arr (which holds the capsule's memory) alive."""
    if arr.flags.writeable or arr.size == 0 or any(s < 0 for s in arr.strides):
        return arr
    span = sum((n - 1) * s for n, s in zip(arr.shape, arr.strides)) + arr.itemsize
    memory = (ctypes.c_char * span).from_address(arr.__array_interface__["data"][0])
    memory.owner = arr
    return np.ndarray(arr.shape, arr.dtype, buffer=memory, strides=arr.strides)


def from_dlpack(dlpack: Any) -> NDArray:
    """An NDArray sharing the memory of a DLPack capsule or of an object with __dlpack__."""
    if hasattr(dlpack, "__dlpack__"):
        producer, device = dlpack, tuple(int(v) for v in dlpack.__dlpack_device__())
    elif type(dlpack).__name__ == "PyCapsule":
        device = _capsule_device(dlpack)
        producer = _CapsuleProducer(dlpack, device)
    else:
        raise TypeError("from_dlpack takes a DLPack capsule or an object with __dlpack__, "
                        "not %s" % type(dlpack).__name__)
    if device[0] == _CPU:
        return wrap(_writable(np.from_dlpack(producer)), Context("cpu", 0))
    if device[0] == _CUDA:
        ctx = Context("gpu", device[1])
        with backend.device_scope(ctx):
            return wrap(backend.xp_for(ctx).from_dlpack(producer), ctx)
    raise MXNetError("from_dlpack: memory on DLPack device type %d (device %d); minimod holds "
                     "CPU (1) and CUDA (2) memory" % device)


def _ndarray(data, fn: str) -> NDArray:
    if not isinstance(data, NDArray):
        raise TypeError("%s takes an NDArray, not %s" % (fn, type(data).__name__))
    return data


def to_dlpack_for_read(data: NDArray):
    """A "dltensor" capsule over data's memory, for a consumer that reads it."""
    return _ndarray(data, "to_dlpack_for_read").to_dlpack_for_read()


def to_dlpack_for_write(data: NDArray):
    """A "dltensor" capsule over data's memory, for a consumer that writes it (what it
    writes, data holds)."""
    return _ndarray(data, "to_dlpack_for_write").to_dlpack_for_write()
