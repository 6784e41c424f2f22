"""The array backends: NumPy for CPU contexts, CuPy for GPU contexts.

This is the only module that imports CuPy. Everything else asks it for the array module of a
Context (`xp_for`) and for the few helpers whose NumPy and CuPy spellings differ: moving data
between devices (`to_context`, `copy_into`), waiting for queued device work (`synchronize`),
scatter-adds, random generators and the NCCL bindings (`nccl_module`).

Without CuPy (or without a usable CUDA driver) minimod imports and runs on the CPU as before;
only using a `gpu(i)` context raises an MXNetError that says why.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .base import MXNetError

__all__ = [
    "xp_for", "to_context", "copy_into", "asnumpy", "gpu_count", "gpu_available", "synchronize",
    "is_gpu_array", "scatter_add", "rng", "seed", "empty_cache", "array_module_of",
    "device_scope", "device_of", "current_device", "nccl_module", "cupy_status",
]

_CUPY_ERROR = ""
try:  # CuPy is optional: the `gpu` extra.
    import cupy as _cupy  # noqa: F401
    try:
        _GPU_COUNT = int(_cupy.cuda.runtime.getDeviceCount())
    except Exception as _err:  # a CuPy install without a usable driver or device
        _GPU_COUNT = 0
        _CUPY_ERROR = "CuPy is installed but sees no usable GPU (%s: %s)" % (
            type(_err).__name__, _err)
except ImportError as _err:
    _cupy = None
    _GPU_COUNT = 0
    _CUPY_ERROR = "CuPy is not installed (pip install minimod[gpu]): %s" % _err

_SEED = [None]
_RNGS: dict = {}


def gpu_count() -> int:
    """How many GPUs CuPy can use (0 without CuPy or without a driver)."""
    return _GPU_COUNT


def gpu_available(device_id: int = 0) -> bool:
    """True when `gpu(device_id)` can hold arrays on this machine."""
    return _cupy is not None and 0 <= int(device_id) < _GPU_COUNT


def cupy_status() -> str:
    """One line on the GPU backend: the CuPy version and GPU count, or why there is none."""
    if _cupy is not None and _GPU_COUNT:
        return "CuPy %s with %d GPU(s)" % (_cupy.__version__, _GPU_COUNT)
    return _CUPY_ERROR


def _require_gpu(ctx):
    if _cupy is None:
        raise MXNetError("%s needs CuPy, which is not installed (pip install minimod[gpu])"
                         % ctx)
    if not 0 <= ctx.device_id < _GPU_COUNT:
        detail = "" if _GPU_COUNT else " (%s)" % _CUPY_ERROR
        raise MXNetError("%s does not exist: this machine has %d usable GPU(s)%s"
                         % (ctx, _GPU_COUNT, detail))


def xp_for(ctx) -> Any:
    """The array module (numpy or cupy) that holds arrays of `ctx`."""
    if ctx.device_typeid == 2:
        _require_gpu(ctx)
        return _cupy
    return np


def array_module_of(arr) -> Any:
    if _cupy is not None and isinstance(arr, _cupy.ndarray):
        return _cupy
    return np


def is_gpu_array(arr) -> bool:
    return _cupy is not None and isinstance(arr, _cupy.ndarray)


def current_device(xp) -> int:
    """The id of the GPU that array module `xp` allocates on now (CuPy's current device, set by
    `device_scope`), -1 for NumPy. Keys caches of device arrays, which are per GPU."""
    if xp is np:
        return -1
    return int(_cupy.cuda.runtime.getDevice())


def device_of(arr) -> int:
    """The GPU id holding CuPy array `arr`, -1 for a host (NumPy) array."""
    return int(arr.device.id) if is_gpu_array(arr) else -1


class _DeviceScope:
    __slots__ = ("device_id", "dev")

    def __init__(self, device_id: int):
        self.device_id = device_id
        self.dev = None

    def __enter__(self):
        if self.device_id >= 0:
            self.dev = _cupy.cuda.Device(self.device_id)
            self.dev.__enter__()
        return self

    def __exit__(self, *exc):
        if self.dev is not None:
            self.dev.__exit__(*exc)
            self.dev = None


def device_scope(ctx) -> _DeviceScope:
    """A `with` block that makes `ctx`'s GPU the current CUDA device (`cupy.cuda.Device(i)`):
    arrays created and kernels launched inside it run there. A no-op for CPU contexts."""
    if ctx.device_typeid == 2:
        _require_gpu(ctx)
        return _DeviceScope(ctx.device_id)
    return _DeviceScope(-1)


def _to_gpu(arr, device_id: int, copy: bool):
    """`arr` (host or any GPU) as a CuPy array on GPU `device_id`."""
    with _cupy.cuda.Device(device_id):
        if isinstance(arr, _cupy.ndarray):
            if arr.device.id == device_id:
                return arr.copy() if copy else arr
            # a peer copy: ndarray.copy() makes the copy on the current device, reading the
            # source on its own device (cudaMemcpyPeer under the hood)
            return arr.copy()
        return _cupy.array(np.asarray(arr), copy=True)


def to_context(arr, ctx, copy: bool = False):
    """`arr` (NumPy or CuPy) as an array of `ctx`'s kind; copies when it changes device.

    host -> GPU is one host-to-device transfer, GPU -> host one device-to-host transfer (which
    waits for the work queued on that GPU, as MXNet's `asnumpy` does), GPU -> other GPU a peer
    copy. Without `copy`, an array already on `ctx`'s device is returned as is.
    """
    if ctx.device_typeid == 2:
        _require_gpu(ctx)
        return _to_gpu(arr, ctx.device_id, copy)
    if is_gpu_array(arr):
        return _cupy.asnumpy(arr)
    return np.array(arr, copy=True) if copy else np.asarray(arr)


def copy_into(dst, src) -> None:
    """dst[...] = src where `dst` and `src` may live on different devices (or the host).

    The write runs on dst's device, so a kernel never touches an array of another GPU (CuPy
    refuses that without peer access). `src` broadcasts and casts as in NumPy assignment.
    """
    if is_gpu_array(dst):
        device_id = dst.device.id
        with _cupy.cuda.Device(device_id):
            if is_gpu_array(src):
                if src.device.id != device_id:
                    src = src.copy()  # peer copy onto dst's device
                dst[...] = src
            else:
                host = np.asarray(src)
                if (host.shape == dst.shape and host.dtype == dst.dtype
                        and dst.flags.c_contiguous):
                    dst.set(np.ascontiguousarray(host))  # one host-to-device transfer
                else:
                    dst[...] = _cupy.asarray(host)
        return
    if is_gpu_array(src):
        src = _cupy.asnumpy(src)
    dst[...] = src


def asnumpy(arr) -> np.ndarray:
    """A NumPy array with the values of `arr` (no copy for NumPy input). For a CuPy array this
    waits for the work queued on its device."""
    if is_gpu_array(arr):
        return _cupy.asnumpy(arr)
    return np.asarray(arr)


def synchronize(ctx=None) -> None:
    """Wait for queued device work: on `ctx`'s GPU, or on every GPU when ctx is None (NumPy
    work is synchronous, so CPU contexts return at once)."""
    if _cupy is None or not _GPU_COUNT:
        return
    if ctx is None:
        for device_id in range(_GPU_COUNT):
            with _cupy.cuda.Device(device_id):
                _cupy.cuda.runtime.deviceSynchronize()
    elif ctx.device_typeid == 2:
        _require_gpu(ctx)
        with _cupy.cuda.Device(ctx.device_id):
            _cupy.cuda.runtime.deviceSynchronize()


def empty_cache(ctx=None) -> None:
    if _cupy is not None and (ctx is None or ctx.device_typeid == 2):
        _cupy.get_default_memory_pool().free_all_blocks()


def can_access_peer(device_a: int, device_b: int) -> bool:
    """Whether GPU `device_a` can read GPU `device_b`'s memory directly."""
    if device_a == device_b:
        return True
    if _cupy is None or not _GPU_COUNT:
        return False
    return bool(_cupy.cuda.runtime.deviceCanAccessPeer(device_a, device_b))


def nccl_module():
    """CuPy's NCCL bindings (`cupy.cuda.nccl`) when they load, else None."""
    if _cupy is None or not _GPU_COUNT:
        return None
    try:
        from cupy.cuda import nccl
    except Exception:  # pragma: no cover - depends on the CuPy build
        return None
    return nccl if getattr(nccl, "available", True) else None


def scatter_add(xp, target, indices, values) -> None:
    """target[indices] += values, accumulating repeated indices."""
    if xp is not np:
        import cupyx
        cupyx.scatter_add(target, indices, values)
        return
    if (isinstance(indices, np.ndarray) and indices.ndim == 1 and target.flags.c_contiguous
            and target.ndim > 1 and values.shape == indices.shape + target.shape[1:]
            and indices.size and indices.min() >= 0):
        # whole rows: NumPy's add.at is an order of magnitude faster on one flat index
        # (Embedding's weight gradient), with the same sums in the same order
        row = int(np.prod(target.shape[1:]))
        flat = (indices.astype(np.int64)[:, None] * row + np.arange(row)).reshape(-1)
        np.add.at(target.reshape(-1), flat, np.ascontiguousarray(values).reshape(-1))
        return
    np.add.at(target, indices, values)


def seed(seed_state: int) -> None:
    """Reseed every backend generator (used by `mx.random.seed`)."""
    _SEED[0] = int(seed_state)
    _RNGS.clear()


def rng(xp):
    """The process-wide random generator of array module `xp` (a `RandomState`-like object).

    CuPy keeps one generator per GPU (a generator's state lives on its device), all seeded
    alike: the current device picks it.
    """
    key = xp if xp is np else (xp, _cupy.cuda.runtime.getDevice())
    gen = _RNGS.get(key)
    if gen is None:
        gen = xp.random.RandomState(_SEED[0])
        _RNGS[key] = gen
    return gen
