"""Matrix products on the GPU through cuBLAS called directly, so that they can sit inside a
captured CUDA graph.

CuPy refuses every cuBLAS call while a stream captures (its wrapper raises
"calling cuBLAS API during stream capture is currently unsupported" when it sets the
handle's stream), though cuBLAS itself allows GEMMs under capture. So float32/float64
products on CuPy arrays go through this module instead, 2-D ones as one GEMM and batched
ones ((..., m, k) @ (..., k, n), batch dims broadcast) as one strided batched GEMM. They
use one cuBLAS handle per GPU of our own, made through ctypes from the libcublas this
process loads, with a fixed workspace (cuBLAS allocates none during capture then), the
default math mode (no TF32) and host-pointer scalars. The same call runs whether a graph
captures or not, so graphs replay the very kernels an eager step runs. `backend.matmul` is
the one entry point; everything else (half precision, mixed dtypes, a vector times a batch)
goes to `cupy.matmul`, which a capture then refuses, so that step stays eager.
MINIMOD_CUBLAS=0 sends every product to `cupy.matmul`.

cuBLAS is column-major and NumPy row-major: a row-major X (r, c) whose rows are contiguous
is the column-major X^T with leading dimension = its row stride, one whose columns are
contiguous is column-major X itself. So C = A B is computed as C^T = B^T A^T, each operand
read as stored (`operand_layout`, `gemm_plan`); an operand in neither form is copied first.
"""
from __future__ import annotations

import ctypes
import glob
import os
import sys

import numpy as np

from .base import MXNetError
from .cuda_graph import CaptureError, capturing

__all__ = ["matmul", "matmul_through", "gemm_plan", "operand_layout", "blas_status"]

OP_N, OP_T = 0, 1
_WORKSPACE_BYTES = 32 << 20  # what cuBLAS asks for on Hopper; less on older GPUs


def operand_layout(shape: tuple, strides: tuple, itemsize: int):
    """How cuBLAS reads the row-major 2-D operand of `shape` and byte `strides` in place:
    (OP_N, ld) when its rows are contiguous (memory holds X^T column-major), (OP_T, ld) when
    its columns are (memory holds X column-major), None when neither (copy it first)."""
    rows, cols = shape
    if strides[0] % itemsize or strides[1] % itemsize or min(strides) < 0:
        return None
    s0, s1 = strides[0] // itemsize, strides[1] // itemsize
    if (s1 == 1 or cols == 1) and (rows == 1 or s0 >= max(1, cols)):
        return OP_N, (s0 if rows > 1 else max(1, cols))
    if (s0 == 1 or rows == 1) and (cols == 1 or s1 >= max(1, rows)):
        return OP_T, (s1 if cols > 1 else max(1, rows))
    return None


def gemm_plan(a_layout, b_layout, out_layout, m: int, n: int, k: int) -> tuple:
    """The column-major GEMM that computes out (m, n) = a (m, k) @ b (k, n): (transa, transb,
    M, N, K, lda, ldb, ldc) for cublas<t>gemm called with (b, a, out) as (A, B, C)."""
    (op_b, ld_b), (op_a, ld_a), (_, ld_c) = b_layout, a_layout, out_layout
    return op_b, op_a, n, m, k, ld_b, ld_a, ld_c


def _as_2d(a, b, out):
    """a, b and out as 2-D views (a vector operand is a one-row or one-column matrix)."""
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    shape = (a2.shape[0], b2.shape[1])
    out2 = None if out is None else out.reshape(shape) if out.ndim != 2 else out
    return a2, b2, out2


def matmul(xp, a, b, out=None, accumulate: bool = False):
    """a @ b for CuPy arrays (see the module docstring); `out`, when given, is written and
    returned, as with `cupy.matmul(a, b, out=out)`. With `accumulate`, the product is added
    to what `out` holds (GEMM's beta = 1: no temporary where `out` is a writable matrix)."""
    return matmul_through(_blas(xp), xp, a, b, out, accumulate)


def matmul_through(blas, xp, a, b, out=None, accumulate: bool = False):
    """`matmul` with `blas` (a CublasLib, or None for `xp.matmul`) making the GEMM call."""
    if accumulate and (out is None or a.ndim != 2 or b.ndim != 2):
        if out is None:
            raise ValueError("an accumulating product needs the array it adds to")
        out += matmul_through(blas, xp, a, b)  # batched or vector operands: a temporary
        return out
    if blas is not None and min(a.ndim, b.ndim) >= 2 and max(a.ndim, b.ndim) >= 3:
        batch = _batch_shape(a, b, out)
        if batch is not None:
            return _batched(blas, xp, a, b, out, batch)
    if (blas is None or not 1 <= a.ndim <= 2 or not 1 <= b.ndim <= 2 or a.dtype != b.dtype
            or a.dtype.char not in "fd" or a.shape[-1] != b.shape[0]
            or (out is not None and (out.dtype != a.dtype
                                     or out.shape != _result_shape(a, b)))):
        if capturing():
            raise CaptureError("a %s @ %s product of %s/%s goes through cupy.matmul, which "
                               "CuPy refuses during capture" % (a.shape, b.shape, a.dtype,
                                                                 b.dtype))
        if accumulate:
            out += xp.matmul(a, b)
            return out
        return xp.matmul(a, b, out=out)
    return _single(blas, xp, a, b, out, accumulate)


def _single(blas, xp, a, b, out, accumulate: bool = False):
    """a @ b for 1-D or 2-D operands as one GEMM (see `matmul_through`); with `accumulate`,
    added to `out`."""
    a2, b2, out2 = _as_2d(a, b, out)
    m, k, n = a2.shape[0], a2.shape[1], b2.shape[1]
    result = xp.empty((m, n), dtype=a.dtype) if out2 is None else out2
    item = a.dtype.itemsize
    target = result
    out_layout = operand_layout(target.shape, target.strides, item)
    if out_layout is None or out_layout[0] != OP_N:
        target = xp.empty((m, n), dtype=a.dtype)
        out_layout = operand_layout(target.shape, target.strides, item)
    beta = 1 if accumulate and target is result else 0
    if m and n:
        if k == 0:
            if not beta:
                target.fill(0)
        else:
            a2, lay_a = _readable(xp, a2, item)
            b2, lay_b = _readable(xp, b2, item)
            blas.gemm(xp, a.dtype, gemm_plan(lay_a, lay_b, out_layout, m, n, k), b2, a2, target,
                      beta)
    if target is not result:
        if accumulate:
            result += target
        else:
            result[...] = target
    if out is not None:
        return out
    return result.reshape(_result_shape(a, b))


def _readable(xp, x, item: int) -> tuple:
    """(x, the layout of its matrices) for a matrix, or a (count, rows, cols) stack of them,
    that cuBLAS reads in place (`operand_layout`; a stack's matrices a whole number of
    elements apart); else the same for a C-order copy of x."""
    layout = operand_layout(x.shape[-2:], x.strides[-2:], item)
    if layout is None or (x.ndim == 3 and x.strides[0] % item):
        x = xp.ascontiguousarray(x)
        layout = operand_layout(x.shape[-2:], x.strides[-2:], item)
    return x, layout


def _result_shape(a, b) -> tuple:
    return tuple(a.shape[:-1]) + tuple(b.shape[1:])


# ----------------------------------------------------------------------------- batched

def _batch_shape(a, b, out):
    """The broadcast batch shape of a (..., m, k) @ (..., k, n) product that one strided
    batched GEMM serves (float32/float64, one dtype, `out` of the result's shape), or None."""
    if (a.dtype != b.dtype or a.dtype.char not in "fd" or a.shape[-1] != b.shape[-2]
            or (out is not None and out.dtype != a.dtype)):
        return None
    try:
        batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    except ValueError:
        return None
    if out is not None and out.shape != batch + (a.shape[-2], b.shape[-1]):
        return None
    return batch


def _stacked(xp, x, batch: tuple):
    """x broadcast to `batch` + its matrix shape, as a (count, rows, cols) view whose
    matrices lie one fixed stride apart (0 where x is broadcast), or a copy where its batch
    dimensions do not merge into one stride."""
    full = xp.broadcast_to(x, batch + x.shape[-2:])
    stride = _merged_stride(full.shape[:len(batch)], full.strides[:len(batch)])
    if stride is None:
        full = xp.ascontiguousarray(full)
        stride = full.strides[len(batch) - 1] if batch else 0
    count = int(np.prod(batch, dtype=np.int64))
    return xp.lib.stride_tricks.as_strided(full, shape=(count,) + full.shape[-2:],
                                           strides=(stride,) + full.strides[-2:])


def _merged_stride(shape: tuple, strides: tuple):
    """The one stride between consecutive matrices of batch dims `shape` with `strides`, or
    None where they do not lie one fixed (non-negative) stride apart."""
    dims = [(n, s) for n, s in zip(shape, strides) if n != 1]
    if not dims:
        return 0
    for (_, outer), (n, inner) in zip(dims, dims[1:]):
        if outer != inner * n:
            return None
    return dims[-1][1] if dims[-1][1] >= 0 else None


def _batched(blas, xp, a, b, out, batch: tuple):
    """a @ b over the batch dims as one strided batched GEMM (see `matmul_through`)."""
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    result = xp.empty(batch + (m, n), dtype=a.dtype) if out is None else out
    count = int(np.prod(batch, dtype=np.int64))
    item = a.dtype.itemsize
    target3 = _writable_stack(xp, result, count, item)
    target = result if target3 is not None else xp.empty(result.shape, a.dtype)
    if target3 is None:
        target3 = target.reshape(count, m, n)
    if count and m and n:
        if k == 0:
            target.fill(0)
        else:
            a3, lay_a = _readable(xp, _stacked(xp, a, batch), item)
            b3, lay_b = _readable(xp, _stacked(xp, b, batch), item)
            lay_c = operand_layout((m, n), target3.strides[1:], item)
            strides = (b3.strides[0] // item, a3.strides[0] // item, target3.strides[0] // item)
            blas.gemm_batched(xp, a.dtype, gemm_plan(lay_a, lay_b, lay_c, m, n, k), strides,
                              count, b3, a3, target3)
    if target is not result:
        result[...] = target
    return result


def _writable_stack(xp, out, count: int, item: int):
    """`out` as a (count, m, n) view cuBLAS writes in place, its matrices with contiguous rows
    and one fixed stride apart (a C-contiguous array, or a strided view such as a transpose
    of the batch axes); None where it is not one."""
    if out.flags.c_contiguous:
        return out.reshape((count,) + out.shape[-2:])
    stride = _merged_stride(out.shape[:-2], out.strides[:-2])
    layout = operand_layout(out.shape[-2:], out.strides[-2:], item)
    if stride is None or stride % item or layout is None or layout[0] != OP_N:
        return None
    return xp.lib.stride_tricks.as_strided(out, shape=(count,) + out.shape[-2:],
                                           strides=(stride,) + out.strides[-2:])


# ----------------------------------------------------------------------------- the library

_LOADED: list = []  # [CublasLib or None, why-not text], filled on first use


def _blas(xp):
    if not _LOADED:
        _LOADED.extend(_load(xp))
    return _LOADED[0]


def blas_status() -> str:
    """Which way GPU matrix products run, or why not through our cuBLAS handle."""
    if not _LOADED:
        return "not probed yet (no GPU product has run)"
    return "cuBLAS direct (%s)" % _LOADED[0].path if _LOADED[0] is not None else _LOADED[1]


def _load(xp) -> tuple:
    if os.environ.get("MINIMOD_CUBLAS", "1") == "0":
        return None, "cupy.matmul (MINIMOD_CUBLAS=0)"
    stand_in = getattr(xp.cuda, "minimod_stand_in_blas", None)  # tests' NumPy CuPy stand-in
    if stand_in is not None:
        return stand_in, ""
    try:  # CuPy's own handle first: CuPy then maps its libcublas, which we look for first
        xp.cuda.device.get_cublas_handle()
    except Exception:  # noqa: BLE001 - a CuPy without it: the other paths remain
        pass
    why = "cupy.matmul (no libcublas found)"
    for path in _library_paths():
        try:
            return CublasLib(ctypes.CDLL(path), path), ""
        except (OSError, AttributeError) as err:
            why = "cupy.matmul (could not load %s: %s)" % (path, err)
    return None, why


def _library_paths() -> list:
    """The libcublas this process already maps (CuPy's), then the usual names and the NVIDIA
    wheel's directory."""
    paths = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                if "/libcublas.so" in path and path not in paths:
                    paths.append(path)
    except OSError:
        pass
    for site in sys.path:
        paths.extend(sorted(glob.glob(os.path.join(site, "nvidia", "cu*", "lib",
                                                   "libcublas.so.*"))))
        paths.extend(sorted(glob.glob(os.path.join(site, "nvidia", "cublas", "lib",
                                                   "libcublas.so.*"))))
    return paths + ["libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"]


class CublasLib:
    """cuBLAS through ctypes: a handle per GPU with a fixed workspace, and S/D GEMMs on the
    current CuPy stream."""

    def __init__(self, lib, path: str):
        self.lib, self.path = lib, path
        vp, i, c, ll = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_longlong
        batched = [vp, i, i, i, i, i, vp, vp, i, ll, vp, i, ll, vp, vp, i, ll, i]
        for name, args in (("cublasCreate_v2", [ctypes.POINTER(vp)]),
                           ("cublasSetStream_v2", [vp, vp]),
                           ("cublasSetWorkspace_v2", [vp, vp, c]),
                           ("cublasSetMathMode", [vp, i]),
                           ("cublasSgemm_v2", [vp, i, i, i, i, i, vp, vp, i, vp, i, vp, vp, i]),
                           ("cublasDgemm_v2", [vp, i, i, i, i, i, vp, vp, i, vp, i, vp, vp, i]),
                           ("cublasSgemmStridedBatched", batched),
                           ("cublasDgemmStridedBatched", batched)):
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, ctypes.c_int
        self.handles: dict = {}  # device id -> (handle, workspace array kept alive)
        self.scalars = {np.dtype("float32"): (ctypes.c_float(1), ctypes.c_float(0)),
                        np.dtype("float64"): (ctypes.c_double(1), ctypes.c_double(0))}

    def _check(self, status: int, what: str) -> None:
        if status:
            raise MXNetError("cuBLAS %s failed with status %d" % (what, status))

    def _handle(self, xp, device_id: int):
        kept = self.handles.get(device_id)
        if kept is None:
            forbid = capturing()
            if forbid:
                raise CaptureError("the first cuBLAS call on gpu(%d) makes its handle"
                                   % device_id)
            handle = ctypes.c_void_p()
            self._check(self.lib.cublasCreate_v2(ctypes.byref(handle)), "cublasCreate")
            self._check(self.lib.cublasSetMathMode(handle, 0), "cublasSetMathMode")
            workspace = xp.empty(_WORKSPACE_BYTES, dtype=np.uint8)
            self._check(self.lib.cublasSetWorkspace_v2(handle, workspace.data.ptr,
                                                       _WORKSPACE_BYTES), "cublasSetWorkspace")
            kept = self.handles[device_id] = (handle, workspace)
        return kept[0]

    def gemm(self, xp, dtype, plan: tuple, a, b, c, beta: int = 0) -> None:
        """C = op(A) op(B) (+ C where `beta` is 1), column-major, with (transa, transb, m,
        n, k, lda, ldb, ldc) = `plan`, on CuPy's (`xp`'s) current stream."""
        handle = self._on_stream(xp, a)
        one, zero = self.scalars[np.dtype(dtype)]
        keep = one if beta else zero
        fn = self.lib.cublasSgemm_v2 if np.dtype(dtype) == np.float32 else self.lib.cublasDgemm_v2
        ta, tb, m, n, k, lda, ldb, ldc = plan
        self._check(fn(handle, ta, tb, m, n, k, ctypes.byref(one), a.data.ptr, lda, b.data.ptr,
                       ldb, ctypes.byref(keep), c.data.ptr, ldc), "gemm")

    def gemm_batched(self, xp, dtype, plan: tuple, strides: tuple, count: int, a, b,
                     c) -> None:
        """`gemm` for `count` matrices at once: A, B and C's i-th matrices start
        strides[0], strides[1] and strides[2] elements after their (i-1)-th."""
        handle = self._on_stream(xp, a)
        one, zero = self.scalars[np.dtype(dtype)]
        fn = (self.lib.cublasSgemmStridedBatched if np.dtype(dtype) == np.float32
              else self.lib.cublasDgemmStridedBatched)
        ta, tb, m, n, k, lda, ldb, ldc = plan
        self._check(fn(handle, ta, tb, m, n, k, ctypes.byref(one), a.data.ptr, lda,
                       strides[0], b.data.ptr, ldb, strides[1], ctypes.byref(zero),
                       c.data.ptr, ldc, strides[2], count), "gemmStridedBatched")

    def _on_stream(self, xp, a):
        """The handle of a's GPU, set to CuPy's current stream."""
        handle = self._handle(xp, a.device.id)
        self._check(self.lib.cublasSetStream_v2(handle, xp.cuda.get_current_stream().ptr),
                    "cublasSetStream")
        return handle
