"""The array backends: NumPy for CPU contexts, CuPy for GPU contexts.

This is the only module that imports CuPy. Everything else asks it for the array module of a
Context (`xp_for`) and for the few helpers whose NumPy and CuPy spellings differ: moving data
between devices (`to_context`, `copy_into`), waiting for queued device work (`synchronize`),
scatter-adds, random generators, the NCCL bindings (`nccl_module`), the cuDNN binding
(`cudnn_library`: CuPy's wrapper, else nvidia-cudnn-frontend; called by
`minimod.kernels.cudnn`), fused elementwise kernels (`elementwise`), matrix products
(`matmul`: on CuPy through minimod's own cuBLAS handle, `minimod.gemm`, which CUDA graphs can
capture), and the few array calls whose fast spelling differs (`const`, `sum_into`,
`clip_into`, `take_rows` ...), so that operators hold one code path for both. While a CUDA
graph records a step (`minimod.cuda_graph`), the helpers that would read the device on the
host, copy host data in, wait for the GPU or draw random numbers refuse with a CaptureError.

Without CuPy (or without a usable CUDA driver) minimod imports and runs on the CPU as before;
only using a `gpu(i)` context raises an MXNetError that says why.
"""
from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from . import device_rng as _device_rng
from . import gemm as _gemm
from .base import MXNetError
from .cuda_graph import forbid_in_capture

__all__ = [
    "xp_for", "to_context", "copy_into", "asnumpy", "gpu_count", "gpu_available", "synchronize",
    "is_gpu_array", "scatter_add", "rng", "seed", "uniform", "draws_on_device", "empty_cache",
    "array_module_of",
    "device_scope", "device_of", "current_device", "nccl_module", "cupy_status",
    "cudnn_library", "cudnn_status", "elementwise", "ElementwiseSpec", "const", "sum_into",
    "max_into", "pools_memory", "read_only", "clip_into", "take_rows", "matmul",
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

#: the seed every generator starts from: fixed, so a script run twice draws the same numbers
#: without calling mx.random.seed, as with MXNet (its generators also start from a fixed seed)
_SEED = [0]
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


def gpu_memory(device_id: int) -> tuple:
    """(free, total) bytes of memory on GPU `device_id`."""
    if not gpu_available(device_id):
        raise MXNetError("gpu(%d) is not available: %s" % (device_id, cupy_status()))
    with _cupy.cuda.Device(int(device_id)):
        return tuple(int(v) for v in _cupy.cuda.runtime.memGetInfo())


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


_HOST_SCOPE = _DeviceScope(-1)  # holds no state, so every CPU context shares it


def device_scope(ctx) -> _DeviceScope:
    """A `with` block that makes `ctx`'s GPU the current CUDA device (`cupy.cuda.Device(i)`):
    arrays created and kernels launched inside it run there. A no-op for CPU contexts."""
    if ctx.device_typeid == 2:
        _require_gpu(ctx)
        return _DeviceScope(ctx.device_id)
    return _HOST_SCOPE


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
        return asnumpy(arr)
    return np.array(arr, copy=True) if copy else np.asarray(arr)


def copy_into(dst, src) -> None:
    """dst[...] = src where `dst` and `src` may live on different devices (or the host).

    The write runs on dst's device, so a kernel never touches an array of another GPU (CuPy
    refuses that without peer access). `src` broadcasts and casts as in NumPy assignment.
    """
    if _cupy is None:  # a host-only install: plain NumPy assignment
        dst[...] = src
        return
    if isinstance(dst, _cupy.ndarray):
        device_id = dst.device.id
        with _cupy.cuda.Device(device_id):
            if is_gpu_array(src):
                if src.device.id != device_id:
                    src = src.copy()  # peer copy onto dst's device
                dst[...] = src
            else:
                forbid_in_capture("copying host data to the device")
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


def address(arr) -> int:
    """The address of `arr`'s first element: device memory for a CuPy array (`data.ptr`),
    host memory for a NumPy array."""
    ptr = getattr(getattr(arr, "data", None), "ptr", None)
    return int(ptr) if ptr is not None else int(arr.__array_interface__["data"][0])


def asnumpy(arr) -> np.ndarray:
    """A NumPy array with the values of `arr` (no copy for NumPy input). For a CuPy array this
    waits for the work queued on its device."""
    if is_gpu_array(arr):
        forbid_in_capture("reading device values on the host")
        return _cupy.asnumpy(arr)
    return np.asarray(arr)


def synchronize(ctx=None) -> None:
    """Wait for queued device work: on `ctx`'s GPU, or on every GPU when ctx is None (NumPy
    work is synchronous, so CPU contexts return at once)."""
    if _cupy is None or not _GPU_COUNT:
        return
    forbid_in_capture("waiting for the GPU")
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
        at = getattr(xp.add, "at", None)  # CuPy 14 deprecates cupyx.scatter_add for add.at
        if at is None:
            import cupyx
            cupyx.scatter_add(target, indices, values)
        else:
            at(target, indices, values)
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
    _device_rng.reseed(seed_state)


def rng(xp):
    """The process-wide random generator of array module `xp` (a `RandomState`-like object).

    CuPy keeps one generator per GPU (a generator's state lives on its device), all seeded
    alike: the current device picks it.
    """
    if xp is not np:
        forbid_in_capture("drawing random numbers (the generator's state would be frozen)")
    key = xp if xp is np else (xp, _cupy.cuda.runtime.getDevice())
    gen = _RNGS.get(key)
    if gen is None:
        gen = xp.random.RandomState(_SEED[0])
        _RNGS[key] = gen
    return gen


def draws_on_device(xp) -> bool:
    """Whether `uniform(xp, ...)` draws from minimod.device_rng (a GPU) rather than `rng`."""
    return xp is not np


def uniform(xp, shape: tuple):
    """Uniform numbers in [0, 1) of `shape`, for the dropout masks and the uniform and normal
    samplers: on the CPU from `rng(np)` (float64, MXNet's CPU numbers); on a GPU float32 from
    `minimod.device_rng`, whose state lives on the device, so a step that draws can be
    captured as a CUDA graph and each replay draws anew."""
    if xp is np:
        return rng(np).uniform(0, 1, shape)
    return _device_rng.uniform(xp, _cupy.cuda.runtime.getDevice(), tuple(shape))


# ---------------------------------------------------------------------------- array calls
# Where NumPy and CuPy spell the fast form of a call differently, ops call one of these instead
# of testing which module `xp` is.

_CONSTS: dict = {}


def const(xp, value, dtype):
    """`value` as a ufunc argument of `dtype`: on NumPy a shared read-only 0-d array (a plain
    Python number would be boxed into a fresh 0-d array on every call); CuPy takes plain
    numbers as kernel arguments, so it gets `value` itself."""
    if xp is not np:
        return value
    key = (value, np.dtype(dtype))
    arr = _CONSTS.get(key)
    if arr is None:
        arr = _CONSTS[key] = np.array(value, dtype=dtype)
        arr.flags.writeable = False
    return arr


def matmul(xp, a, b, out=None, accumulate: bool = False):
    """a @ b (into `out` when given), as `xp.matmul`; with `accumulate`, added to `out`. On
    CuPy, 2-D float products go through our own cuBLAS handle (`minimod.gemm`), which CUDA
    graphs can capture, and accumulate in the GEMM itself."""
    if xp is np:
        if accumulate:
            out += np.matmul(a, b)
            return out
        return np.matmul(a, b, out=out)
    return _gemm.matmul(xp, a, b, out, accumulate)


def repeated_rhs(xp, b, make_buf):
    """`b` as the right operand of a run of products with few rows on the left (an RNN's
    recurrent step): on CuPy `b` itself, since cuBLAS reads a transposed operand at no cost;
    on NumPy a C-contiguous copy of `b` in `make_buf()` where `b` is not C-contiguous, since
    OpenBLAS multiplies 32 rows by a transposed (200, 800) matrix in about 1.7x the time."""
    if xp is not np or b.flags.c_contiguous:
        return b
    buf = make_buf()
    np.copyto(buf, b)
    return buf


def sum_into(xp, a, axis, out, keepdims: bool = False):
    """xp.sum(a, axis=axis, out=out, keepdims=keepdims); on NumPy without its Python-level
    wrapper (a few microseconds per call, which add up over the thousand nodes of an unrolled
    RNN)."""
    if xp is np:
        return np.add.reduce(a, axis=axis, out=out, keepdims=keepdims)
    return xp.sum(a, axis=axis, out=out, keepdims=keepdims)


def max_into(xp, a, axis, out, keepdims: bool = False):
    """The maximum along `axis`, like `sum_into`."""
    if xp is np:
        return np.maximum.reduce(a, axis=axis, out=out, keepdims=keepdims)
    return xp.max(a, axis=axis, out=out, keepdims=keepdims)


def pools_memory(xp) -> bool:
    """Whether `xp` recycles freed memory itself (CuPy's memory pool), so work arrays are
    best allocated per call; NumPy's fresh multi-MB arrays page-fault, so ops reuse them."""
    return xp is not np


def read_only(xp, arr):
    """arr, marked read-only where the backend can (NumPy), for arrays shared between calls."""
    if xp is np:
        arr.flags.writeable = False
    return arr


def clip_into(xp, src, lo, hi, out) -> None:
    """out[...] = clip(src, lo, hi) cast to out's dtype (float indices into int64 rows): one
    pass on NumPy; CuPy's clip takes no casting, so it clips and then casts."""
    if xp is np:
        np.clip(src, lo, hi, out=out, casting="unsafe")
    else:
        xp.copyto(out, xp.clip(src, lo, hi), casting="unsafe")


def take_rows(xp, table, rows, out) -> None:
    """out[...] = table[rows] for rows already within the table, written in place. NumPy's
    take buffers its output under its default mode='raise'; 'clip' (a no-op for such rows)
    writes directly. CuPy's take has no mode."""
    if xp is np:
        np.take(table, rows, axis=0, out=out, mode="clip")
    else:
        xp.take(table, rows, axis=0, out=out)


# ---------------------------------------------------------------------------- cuDNN

_CUDNN_PROBE: list = []  # [(kind, library) or None, why-not text], filled on first use


def _frontend_version(frontend) -> str:
    """'cuDNN 9.x.y through nvidia-cudnn-frontend 1.x.y'; raises where no libcudnn loads (the
    frontend imports without one and fails at its first backend call)."""
    text = getattr(frontend, "backend_version_string", None)
    backend_version = text() if text is not None else str(frontend.backend_version())
    return "cuDNN %s through nvidia-cudnn-frontend %s" % (
        backend_version, getattr(frontend, "__version__", "(unknown version)"))


def _probe_cudnn():
    """Which cuDNN binding serves convolution (and pooling) here, and why not where none does.

    The first element is None or a tagged pair: ("cupy", (wrapper, lib)) for CuPy's own cuDNN
    wrapper and constants (`cupyx.cudnn`, formerly `cupy.cudnn`, shipped by CuPy up to v13 and
    importable only where a libcudnn loads), preferred where present; else ("frontend", module)
    for NVIDIA's cuDNN frontend (`import cudnn`, PyPI nvidia-cudnn-frontend) whose backend
    library answers. The second is the status line (`cudnn_status`)."""
    if _CUDNN_PROBE:
        return _CUDNN_PROBE
    found, text = None, ""
    if _cupy is None or not _GPU_COUNT:
        text = "no cuDNN: %s" % (_CUPY_ERROR or "no GPU")
    elif os.environ.get("MINIMOD_CUDNN", "1") == "0":
        text = "no cuDNN: MINIMOD_CUDNN=0"
    else:
        try:
            try:
                from cupyx import cudnn as wrapper
            except ImportError:
                from cupy import cudnn as wrapper
            from cupy.cuda import cudnn as lib
            found, text = ("cupy", (wrapper, lib)), "cuDNN via CuPy's wrapper"
        except Exception as err:  # no wrapper (CuPy >= 14) or no loadable libcudnn
            cupy_why = "CuPy's cuDNN wrapper is unavailable (%s: %s)" % (type(err).__name__, err)
            try:
                import cudnn as frontend
                text = _frontend_version(frontend)
                found = ("frontend", frontend)
            except Exception as ferr:  # not installed, or its libcudnn does not load
                text = ("no cuDNN: %s; nvidia-cudnn-frontend is unavailable (%s: %s); "
                        "convolution runs im2col + cuBLAS" % (cupy_why, type(ferr).__name__,
                                                              ferr))
    _CUDNN_PROBE[:] = [found, text]
    return _CUDNN_PROBE


def cudnn_library():
    """The cuDNN binding that `minimod.kernels.cudnn` calls, as a tagged pair, or None.

    ("cupy", (wrapper, lib)): CuPy's cuDNN wrapper module and cuDNN's constants (CuPy <= 13 with
    a loadable libcudnn), preferred where present. ("frontend", module): the `cudnn` module of
    nvidia-cudnn-frontend (CuPy >= 14 has no wrapper). None without either, without CuPy or a
    GPU, or when the environment sets MINIMOD_CUDNN=0."""
    return _probe_cudnn()[0]


def cudnn_status() -> str:
    """One line: which cuDNN binding convolution and pooling run through on GPUs here ("cuDNN
    via CuPy's wrapper", "cuDNN 9.x through nvidia-cudnn-frontend 1.x"), or "no cuDNN: " and
    why (they then run im2col + cuBLAS), followed by what the binding refused since
    (`note_cudnn`)."""
    return "; ".join([_probe_cudnn()[1]] + _CUDNN_NOTES)


_CUDNN_NOTES: list = []


def note_cudnn(text: str) -> None:
    """Add to `cudnn_status` what the cuDNN binding turned out not to serve (the kernels' self-
    check, kernels/cudnn_frontend.py)."""
    if text not in _CUDNN_NOTES:
        _CUDNN_NOTES.append(text)


# ---------------------------------------------------------------------------- fused kernels

class ElementwiseSpec:
    """One fused elementwise kernel: CuPy's ElementwiseKernel parameters and CUDA body.

    `in_params` / `out_params` use CuPy's notation ("T g, T y" / "T dx"); output parameters
    may also be read (an in-place update). The body keeps to a small subset of C that reads the
    same in Python: `T name = expr;` and `name = expr;` statements over + - * /, comparisons,
    `(T)` casts and the functions tanh exp log sqrt log1p expm1 fabs max min (max and min
    CUDA's: a NaN operand loses to the other). That keeps it checkable on a machine without
    a GPU (`emulate_fused_kernels`).
    """

    __slots__ = ("name", "in_params", "out_params", "body")

    def __init__(self, name: str, in_params: str, out_params: str, body: str):
        self.name, self.in_params, self.out_params, self.body = name, in_params, out_params, body
        FUSED_SPECS[name] = self

    @staticmethod
    def _names(params: str) -> list:
        return [p.split()[-1] for p in params.split(",") if p.strip()]

    def param_names(self) -> tuple:
        return tuple(self._names(self.in_params)), tuple(self._names(self.out_params))


FUSED_SPECS: dict = {}
_FUSED_KERNELS: dict = {}
_EMULATE_FUSED = [False]


def elementwise(xp, spec: ElementwiseSpec):
    """The fused kernel of `spec` for array module `xp`, called as kernel(*inputs, *outputs)
    and writing the outputs in place; None under NumPy, where ops run their own sequence of
    in-place ufuncs (NumPy has no kernel fusion, and that sequence is what MXNet parity was
    measured on). Under CuPy one compiled kernel per spec, cached (CuPy caches the binary
    per device)."""
    if xp is np:
        return _EmulatedKernel(spec) if _EMULATE_FUSED[0] else None
    kernel = _FUSED_KERNELS.get(spec.name)
    if kernel is None:
        kernel = _FUSED_KERNELS[spec.name] = _cupy.ElementwiseKernel(
            spec.in_params, spec.out_params, spec.body, "minimod_" + spec.name)
    return kernel


def emulate_fused_kernels(on: bool) -> bool:
    """Make `elementwise` hand NumPy callers a NumPy evaluation of each kernel's body, so the
    fused code paths (argument order, in-place outputs, the body's arithmetic) run and are
    tested on machines without a GPU. Returns the previous setting. For tests only: it is
    slower than the ops' own NumPy sequences."""
    previous = _EMULATE_FUSED[0]
    _EMULATE_FUSED[0] = bool(on)
    return previous


# max and min as CUDA's (fmax, fmin): a NaN operand loses to the other
_EMULATED_FUNCS = {"tanh": np.tanh, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
                   "log1p": np.log1p, "expm1": np.expm1, "fabs": np.abs, "max": np.fmax,
                   "min": np.fmin}


class _EmulatedKernel:
    """A spec's body evaluated statement by statement with NumPy arrays (see ElementwiseSpec
    for the subset of C it reads)."""

    def __init__(self, spec: ElementwiseSpec):
        self.spec = spec
        self.inputs, self.outputs = spec.param_names()
        self.statements = []
        for text in spec.body.split(";"):
            text = re.sub(r"\(T\)", "", text).strip()
            if not text:
                continue
            target, expr = text.split("=", 1)
            words = target.split()
            if len(words) not in (1, 2) or (len(words) == 2 and words[0] != "T"):
                raise ValueError("%s: statement %r is outside the emulated subset"
                                 % (spec.name, text))
            self.statements.append((words[-1], compile(expr.strip(), spec.name, "eval")))

    def __call__(self, *args) -> None:
        names = self.inputs + self.outputs
        if len(args) != len(names):
            raise TypeError("%s takes %d arrays, got %d" % (self.spec.name, len(names),
                                                            len(args)))
        scope = dict(zip(names, args))
        outputs = {n: a for n, a in zip(names, args) if n in self.outputs}
        with np.errstate(all="ignore"):
            for name, code in self.statements:
                scope[name] = eval(code, {"__builtins__": {}}, {**_EMULATED_FUNCS, **scope})
        for name, arr in outputs.items():
            if scope[name] is not arr:
                arr[...] = scope[name]
