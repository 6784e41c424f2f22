"""A row softmax as one GPU kernel, for SoftmaxOutput's forward on CuPy.

The op's softmax is five passes (the row maxima, the subtraction, exp, the row sums, the
division), five kernel launches a step; here one block of threads per row finds the row's
maximum and sum with warp shuffles and writes exp(x - max) / sum. The reductions add in
another order than CuPy's, so the probabilities may differ from the passes' in the last
bits; graphs and eager steps run the same kernel.

Nothing here ran on a GPU when it was written, so each GPU checks the kernel once per dtype
against the passes before it serves (`RowSoftmax.serves`), at bind time: a dtype where they
disagree keeps the passes, and `status()` says why. The CPU tests compile the source with
NVRTC and run its reference (`host_softmax_rows`) through the CuPy stand-in.
"""
from __future__ import annotations

import numpy as np

from .checked_kernels import CheckedKernels

__all__ = ["KERNELS", "SOURCE", "RowSoftmax", "host_softmax_rows", "status"]

#: threads per row
THREADS = 128

SOURCE = r"""
template <typename T> __device__ T neg_inf();
template <> __device__ float neg_inf<float>() { return __int_as_float(0xff800000); }
template <> __device__ double neg_inf<double>() {
  return __longlong_as_double(0xfff0000000000000ULL);
}

template <typename T, bool MAX> __device__ T warp_all(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    T other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = MAX ? fmax(v, other) : v + other;
  }
  return v;
}

// the maximum (MAX) or sum of every thread's v, in every thread; `part` holds 32 values
template <typename T, bool MAX> __device__ T block_all(T v, T* part) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = warp_all<T, MAX>(v);
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? part[lane] : (MAX ? neg_inf<T>() : (T)0);
    v = warp_all<T, MAX>(v);
    if (lane == 0) part[0] = v;
  }
  __syncthreads();
  return part[0];
}

template <typename T> __device__ void softmax_row(const T* x, T* y, long long cols, T* part) {
  const T* xr = x + (long long)blockIdx.x * cols;
  T* yr = y + (long long)blockIdx.x * cols;
  T m = neg_inf<T>();
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) m = fmax(m, xr[j]);
  m = block_all<T, true>(m, part);
  T s = 0;
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
    T e = exp(xr[j] - m);
    yr[j] = e;
    s += e;
  }
  s = block_all<T, false>(s, part);
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = yr[j] / s;
}

extern "C" __global__ void minimod_softmax_rows_f32(const float* x, float* y, long long cols) {
  __shared__ float part[32];
  softmax_row<float>(x, y, cols, part);
}

extern "C" __global__ void minimod_softmax_rows_f64(const double* x, double* y,
                                                    long long cols) {
  __shared__ double part[32];
  softmax_row<double>(x, y, cols, part);
}
"""

#: dtype char -> kernel name
KERNELS = {"f": "minimod_softmax_rows_f32", "d": "minimod_softmax_rows_f64"}


def host_softmax_rows(x: np.ndarray, y: np.ndarray) -> None:
    """What the kernel computes, on the host: y = exp(x - max) / sum, row by row."""
    e = np.exp(x - x.max(axis=1, keepdims=True))
    y[...] = e / e.sum(axis=1, keepdims=True)


class RowSoftmax(CheckedKernels):
    """The kernel on one array module, checked once per (device, dtype) before it serves:
    its rows of a test matrix (narrow and wide rows, large and tiny values) must match
    `reference(x, y)` (the op's passes), which `serves` takes as its last argument."""

    SOURCE = SOURCE
    KERNELS = KERNELS
    unchecked = "not checked yet (no GPU softmax has been bound)"
    served = "kernel"

    def run(self, xp, x, y) -> None:
        """y = softmax of each row of the C-contiguous 2-D x (y alike, may be x)."""
        rows, cols = x.shape
        if rows and cols:
            self.function(xp, x.dtype.char)((rows,), (THREADS,), (x, y, np.int64(cols)))

    def _compare(self, xp, dtype, reference) -> str:
        rng = np.random.default_rng(7)
        for shape, scale in (((5, 3), 1.0), ((3, 1000), 30.0), ((2, 129), 1e3)):
            host = (rng.standard_normal(shape) * scale).astype(dtype)
            x = xp.asarray(host)
            want, got = xp.empty_like(x), xp.empty_like(x)
            reference(x, want)
            self.run(xp, x, got)
            tol = 1e-5 if dtype == np.float32 else 1e-12
            if not np.allclose(xp.asnumpy(got), xp.asnumpy(want), rtol=tol, atol=tol * 1e-2):
                return "its %s rows differ from the passes' (%s)" % (shape, dtype.name)
        return ""


#: the process's one RowSoftmax
ROWS = RowSoftmax()


def status() -> str:
    """Which GPU softmax runs, per device and dtype checked so far, or why not the kernel."""
    return ROWS.status()
