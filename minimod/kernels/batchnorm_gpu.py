"""BatchNorm on CuPy as one kernel forward and one backward, a block of threads per channel.

The op's passes on CuPy take about 18 kernel launches forward (the mean, the variance, the
inverse deviation, the scale, the centring, scaling and shifting, each a pass) and 23
backward (the moving statistics, xhat, the two sums, the data's gradient): a residual
network's BatchNorm layers were 533 of its 631 kernels a step. Here one block per channel:

- forward, with batch statistics: the channel's sum, then the sum of its squared deviations
  from the mean (two passes over the data, no cancellation), each reduced across the block;
  the mean, 1/sqrt(var + eps) and, with fix_gamma in training, gamma = 1 written by the
  block; then y = (x - mean) * scale + beta. With the moving statistics (inference,
  use_global_stats) only the last pass runs, and y is the op's to the bit;
- backward: the moving statistics updated as the op updates them (from the saved mean and
  1/std), dbeta = sum g and dgamma = sum g * xhat reduced across the block, then
  dx = scale * (g - (dbeta + xhat * dgamma) / count) (or g * scale with the moving
  statistics).

Each product, sum and difference is rounded on its own (`__fmul_rn` and friends: no fused
multiply-adds), as the op's passes round them, so given the same statistics the elementwise
results are the op's bit for bit; the sums are taken in another order than CuPy's
reductions, so the batch statistics, and what depends on them, may differ from the op's in
the last bits, as the NumPy fast path (kernels/batchnorm.py) may differ from the op on the
CPU.

Served for the channel axis 1 of data with at least 2 dims, float32 or float64 data whose
parameters and statistics share its dtype (not float16 data, whose statistics are float32),
C-contiguous arrays. Nothing here ran on a GPU when it was written: each GPU checks the
kernels once per dtype against the op's passes (to 1e-5 for float32, 1e-12 for float64,
relative to each value and to the array's largest, `agrees`) before they serve, and
`status()` says which runs. The CPU tests compile the source with NVRTC and hold its host
reference (`host_forward`, `host_backward`) to the op. A review compiled the source as host
C++ and ran it thread by thread (block barriers and warp shuffles emulated) against the op
on about 1,900 cases: no kernel mismatch, and it found the float32 check's first tolerance,
relative to each element alone, too tight for dx's cancellation.
"""
from __future__ import annotations

import numpy as np

from ..ops.registry import create_op
from .checked_kernels import CheckedKernels

__all__ = ["KERNELS", "SOURCE", "ChannelNorm", "agrees", "bind_backward", "bind_forward",
           "host_backward", "host_forward", "status"]

#: threads per block (one block per channel)
THREADS = 512

#: forward modes: batch statistics; fix_gamma (scale = 1/std); write gamma = 1 (training)
BATCH_STATS, FIX_GAMMA, WRITE_GAMMA = 1, 2, 4
#: backward modes, besides BATCH_STATS and FIX_GAMMA: which gradients to write
WRITE_DX, WRITE_DGAMMA, WRITE_DBETA = 8, 16, 32

SOURCE = r"""
__device__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }

// the sum of every thread's v, in every thread; `part` holds 32 values
template <typename T> __device__ T block_sum(T v, T* part) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? part[lane] : (T)0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) part[0] = v;
  }
  __syncthreads();
  T total = part[0];
  __syncthreads();  // (part is written again by the next call)
  return total;
}

// element i of channel ch's n * r elements in (n, c, r) data
__device__ long long at(long long i, long long ch, long long c, long long r) {
  return (i / r * c + ch) * r + i % r;
}

template <typename T> __device__ void norm_forward(
    const T* x, T* gamma, const T* beta, T* y, T* mean, T* invstd, const T* moving_mean,
    const T* moving_var, long long n, long long c, long long r, T eps, int mode, T* part) {
  long long ch = blockIdx.x, count = n * r;
  T m, v;
  if (mode & 1) {
    T s = (T)0;
    for (long long i = threadIdx.x; i < count; i += blockDim.x) s += x[at(i, ch, c, r)];
    m = block_sum(s, part) / (T)count;
    T q = (T)0;
    for (long long i = threadIdx.x; i < count; i += blockDim.x) {
      T d = sub_rn(x[at(i, ch, c, r)], m);
      q = add_rn(q, mul_rn(d, d));
    }
    v = block_sum(q, part) / (T)count;
  } else {
    m = moving_mean[ch];
    v = moving_var[ch];
  }
  T inv = (T)1 / sqrt(add_rn(v, eps));
  T scale = (mode & 2) ? inv : mul_rn(inv, gamma[ch]), shift = beta[ch];
  __syncthreads();  // every thread has read gamma before it is written
  if (threadIdx.x == 0) {
    mean[ch] = m;
    invstd[ch] = inv;
    if (mode & 4) gamma[ch] = (T)1;
  }
  for (long long i = threadIdx.x; i < count; i += blockDim.x) {
    long long k = at(i, ch, c, r);
    y[k] = add_rn(mul_rn(sub_rn(x[k], m), scale), shift);
  }
}

template <typename T> __device__ void norm_backward(
    const T* x, const T* gamma, const T* g, const T* mean, const T* invstd, T* dx, T* dgamma,
    T* dbeta, T* moving_mean, T* moving_var, long long n, long long c, long long r,
    T momentum, T rest, T eps, int mode, T* part) {
  long long ch = blockIdx.x, count = n * r;
  T m = mean[ch], inv = invstd[ch], sg = (T)0, sgx = (T)0;
  for (long long i = threadIdx.x; i < count; i += blockDim.x) {
    long long k = at(i, ch, c, r);
    sg += g[k];
    sgx = add_rn(sgx, mul_rn(g[k], mul_rn(sub_rn(x[k], m), inv)));
  }
  T sum_g = block_sum(sg, part), sum_gx = block_sum(sgx, part);
  if (threadIdx.x == 0) {
    if (mode & 1) {
      moving_mean[ch] = add_rn(mul_rn(moving_mean[ch], momentum), mul_rn(rest, m));
      T var = sub_rn((T)1 / mul_rn(inv, inv), eps);
      moving_var[ch] = add_rn(mul_rn(moving_var[ch], momentum), mul_rn(rest, var));
    }
    if (mode & 32) dbeta[ch] = sum_g;
    if (mode & 16) dgamma[ch] = (mode & 2) ? (T)0 : sum_gx;
  }
  if (!(mode & 8)) return;
  T scale = (mode & 2) ? inv : mul_rn(inv, gamma[ch]);
  for (long long i = threadIdx.x; i < count; i += blockDim.x) {
    long long k = at(i, ch, c, r);
    if (mode & 1) {
      T xhat = mul_rn(sub_rn(x[k], m), inv);
      T t = add_rn(sum_g, mul_rn(xhat, sum_gx)) / (T)count;
      dx[k] = mul_rn(scale, sub_rn(g[k], t));
    } else {
      dx[k] = mul_rn(g[k], scale);
    }
  }
}

#define NORM_KERNELS(T, BITS)                                                               \
  extern "C" __global__ void minimod_channel_norm_##BITS(                                   \
      const T* x, T* gamma, const T* beta, T* y, T* mean, T* invstd, const T* moving_mean,  \
      const T* moving_var, long long n, long long c, long long r, T eps, int mode) {        \
    __shared__ T part[32];                                                                 \
    norm_forward<T>(x, gamma, beta, y, mean, invstd, moving_mean, moving_var, n, c, r, eps, \
                    mode, part);                                                           \
  }                                                                                         \
  extern "C" __global__ void minimod_channel_norm_grad_##BITS(                              \
      const T* x, const T* gamma, const T* g, const T* mean, const T* invstd, T* dx,        \
      T* dgamma, T* dbeta, T* moving_mean, T* moving_var, long long n, long long c,         \
      long long r, T momentum, T rest, T eps, int mode) {                                   \
    __shared__ T part[32];                                                                 \
    norm_backward<T>(x, gamma, g, mean, invstd, dx, dgamma, dbeta, moving_mean, moving_var, \
                     n, c, r, momentum, rest, eps, mode, part);                            \
  }
NORM_KERNELS(float, f32)
NORM_KERNELS(double, f64)
"""

#: (stage, dtype char) -> kernel name
KERNELS = {(stage, char): "minimod_channel_norm%s_%s" % (suffix, bits)
           for stage, suffix in (("forward", ""), ("backward", "_grad"))
           for char, bits in (("f", "f32"), ("d", "f64"))}


def _rows(a):
    """(N, C, *spatial) as (N, C, R)."""
    return a.reshape(a.shape[0], a.shape[1], -1)


# ----------------------------------------------------------------------------- reference

def host_forward(x, gamma, beta, y, mean, invstd, moving_mean, moving_var, n, c, r, eps,
                 mode) -> None:
    """What the forward kernel computes, on the host (the kernel's arguments)."""
    dtype = x.dtype.type
    x3 = x.reshape(int(n), int(c), int(r))
    if mode & BATCH_STATS:
        m = x3.mean(axis=(0, 2), dtype=x.dtype)
        d = x3 - m[:, None]
        v = (d * d).mean(axis=(0, 2), dtype=x.dtype)
    else:
        m, v = moving_mean.copy(), moving_var.copy()
    inv = dtype(1) / np.sqrt(v + dtype(eps))
    scale = inv if mode & FIX_GAMMA else inv * gamma
    shift = beta.copy()
    mean[...], invstd[...] = m, inv
    if mode & WRITE_GAMMA:
        gamma[...] = 1
    y.reshape(x3.shape)[...] = (x3 - m[:, None]) * scale[:, None] + shift[:, None]


def host_backward(x, gamma, g, mean, invstd, dx, dgamma, dbeta, moving_mean, moving_var,
                  n, c, r, momentum, rest, eps, mode) -> None:
    """What the backward kernel computes, on the host (the kernel's arguments; the arrays
    its mode does not write may be placeholders)."""
    dtype = x.dtype.type
    x3, g3 = x.reshape(int(n), int(c), int(r)), g.reshape(int(n), int(c), int(r))
    xhat = (x3 - mean[:, None]) * invstd[:, None]
    sum_g = g3.sum(axis=(0, 2), dtype=x.dtype)
    sum_gx = (g3 * xhat).sum(axis=(0, 2), dtype=x.dtype)
    if mode & BATCH_STATS:
        moving_mean[...] = moving_mean * dtype(momentum) + dtype(rest) * mean
        var = dtype(1) / (invstd * invstd) - dtype(eps)
        moving_var[...] = moving_var * dtype(momentum) + dtype(rest) * var
    if mode & WRITE_DBETA:
        dbeta[...] = sum_g
    if mode & WRITE_DGAMMA:
        dgamma[...] = 0 if mode & FIX_GAMMA else sum_gx
    if not mode & WRITE_DX:
        return
    scale = invstd if mode & FIX_GAMMA else invstd * gamma
    if mode & BATCH_STATS:
        t = (sum_g[:, None] + xhat * sum_gx[:, None]) / dtype(int(n) * int(r))
        dx.reshape(x3.shape)[...] = scale[:, None] * (g3 - t)
    else:
        dx.reshape(x3.shape)[...] = g3 * scale[:, None]


# ----------------------------------------------------------------------------- the kernels

#: (data shape, BatchNorm attributes) the kernels are checked on
CHECKS = (((6, 3, 5, 7), {"fix_gamma": "False", "eps": "1e-5", "momentum": "0.8"}),
          ((4, 2, 40, 33), {}),  # more elements a channel than threads, fix_gamma
          ((9, 5), {"fix_gamma": "False"}),
          ((3, 4, 6), {"use_global_stats": "True", "fix_gamma": "False"}))


def agrees(got, want, tol: float) -> bool:
    """Whether `got` is `want` to `tol` relative to each value and to the array's largest
    value: dx = scale * (g - t) cancels, so two orders of summing may part by more than
    `tol` of a small element while both are as close to the exact value as the dtype
    allows."""
    return np.allclose(got, want, rtol=tol, atol=tol * float(np.abs(want).max(initial=0)))


class ChannelNorm(CheckedKernels):
    """The two kernels on one array module, checked once per (device, dtype) against the
    op's passes on `CHECKS`, training and inference, with every output and gradient."""

    SOURCE = SOURCE
    KERNELS = KERNELS
    unchecked = "not checked yet (no GPU BatchNorm has been bound)"

    def launch(self, xp, stage: str, channels: int, args: tuple) -> None:
        """Run kernel (`stage`, the data's dtype) with a block per channel."""
        if channels:
            self.function(xp, (stage, args[0].dtype.char))((channels,), (THREADS,), args)

    def _compare(self, xp, dtype) -> str:
        rng = np.random.default_rng(13)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        for shape, attrs in CHECKS:
            op = create_op("BatchNorm", attrs)
            host = [(rng.standard_normal(s) * 3 + 1).astype(dtype)
                    for s in (shape, shape[1:2], shape[1:2], shape[1:2], shape)]
            host[3] = np.abs(host[3]) + 0.5  # a moving variance
            for is_train in (True, False):
                got, want = (self._run(xp, op, host, is_train, fast)
                             for fast in (True, False))
                for k, (a, b) in enumerate(zip(got, want)):
                    if not agrees(xp.asnumpy(a), xp.asnumpy(b), tol):
                        return "its result %d of %s (is_train=%s) differs from the op's" % (
                            k, shape, is_train)
        return ""

    def _run(self, xp, op, host, is_train, fast) -> list:
        """Every array a training (or inference) step of `op` writes, on the kernels
        (`fast`) or the op's passes."""
        x, gamma, beta, moving_var, g = (xp.asarray(a.copy()) for a in host)  # written
        moving_mean = xp.asarray(host[1][::-1].copy())
        c = x.shape[1]
        y, mean, invstd = xp.empty_like(x), xp.empty(c, x.dtype), xp.empty(c, x.dtype)
        dx, dgamma, dbeta = xp.empty_like(x), xp.empty(c, x.dtype), xp.empty(c, x.dtype)
        inputs, outs, aux = [x, gamma, beta], [y, mean, invstd], [moving_mean, moving_var]
        if fast:
            bind_forward(op, xp, inputs, aux, outs, checked=True)(xp, is_train)
        else:
            op.forward(xp, inputs, aux, outs, is_train)
        if not is_train:
            return [y, mean, invstd, gamma]
        if fast:
            bind_backward(op, xp, [g], inputs, outs, [dx, dgamma, dbeta], aux,
                          checked=True)(xp, True)
        else:
            op.backward(xp, [g], inputs, outs, [dx, dgamma, dbeta], aux)
        return [y, mean, invstd, gamma, dx, dgamma, dbeta, moving_mean, moving_var]


#: the process's one ChannelNorm
NORM = ChannelNorm()


def status() -> str:
    """Which GPU BatchNorm runs, per device and dtype checked so far, or why not these
    kernels."""
    return NORM.status()


def _serves(op, xp, x, arrays, checked: bool) -> bool:
    return (xp is not np and x.ndim >= 2 and op._axis(x.ndim) == 1
            and x.dtype.char in "fd" and x.shape[0] * x.shape[1] > 0
            and all(a.dtype == x.dtype and a.flags.c_contiguous for a in arrays)
            and (checked or NORM.serves(xp, x.device.id, x.dtype)))


def bind_forward(op, xp, inputs, aux, out, checked: bool = False):
    """The bound forward step where the kernels serve these arrays, else None. `checked`
    skips the GPU check (the check itself binds this way)."""
    x, gamma, beta = inputs
    y, mean, invstd = out
    if not _serves(op, xp, x, (x, gamma, beta, y, mean, invstd, *aux), checked):
        return None
    a = op.attrs
    n, c, r = _rows(x).shape
    dtype = x.dtype.type
    shape = (np.int64(n), np.int64(c), np.int64(r), dtype(a.eps))

    def mode(is_train):
        batch = BATCH_STATS if is_train and not a.use_global_stats else 0
        fixed = FIX_GAMMA | (WRITE_GAMMA if is_train else 0) if a.fix_gamma else 0
        return np.int32(batch | fixed)
    args = {is_train: (x, gamma, beta, y, mean, invstd, *aux, *shape, mode(is_train))
            for is_train in (True, False)}

    def run_channel_norm(xp, is_train):
        NORM.launch(xp, "forward", c, args[bool(is_train)])
    return run_channel_norm


def bind_backward(op, xp, out_grads, inputs, outputs, in_grads, aux, checked: bool = False):
    """The bound backward step where the kernels serve these arrays, else None."""
    x, gamma, g = inputs[0], inputs[1], out_grads[0]
    mean, invstd = outputs[1], outputs[2]
    written = [a for a in in_grads if a is not None]
    if not written or not _serves(op, xp, x, (x, gamma, g, mean, invstd, *written, *aux),
                                  checked):
        return None
    a = op.attrs
    n, c, r = _rows(x).shape
    dtype = x.dtype.type
    dx, dgamma, dbeta = in_grads
    mode = (0 if a.use_global_stats else BATCH_STATS) | (FIX_GAMMA if a.fix_gamma else 0)
    for flag, grad in ((WRITE_DX, dx), (WRITE_DGAMMA, dgamma), (WRITE_DBETA, dbeta)):
        mode |= flag if grad is not None else 0
    # a gradient nobody needs is not written: its argument is any array of the dtype
    args = (x, gamma, g, mean, invstd, dx if dx is not None else x,
            dgamma if dgamma is not None else mean, dbeta if dbeta is not None else mean,
            *aux, np.int64(n), np.int64(c), np.int64(r), dtype(a.momentum),
            dtype(1 - a.momentum), dtype(a.eps), np.int32(mode))

    def run_channel_norm_grad(xp, is_train):
        NORM.launch(xp, "backward", c, args)
    return run_channel_norm_grad
