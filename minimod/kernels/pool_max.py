"""Max pooling over disjoint windows as one GPU kernel each way, for Pooling on CuPy where
cuDNN does not pool (CuPy 14 has no cuDNN wrapper, and cuDNN's frontend has no pooling
gradient in Python).

The op's own path on CuPy copies the windows into a panel, takes the maxima, and finds each
window's first maximum in a handful of passes: about twelve kernel launches forward and three
backward per pooling layer (LeNet's two layers: 30 of its 59 kernels a step). Here one
thread per output walks its window: the maximum (NaN where the window holds one, as the
op's max), then the offset of the first entry equal to it (the last offset where none is:
a NaN window), which is the hidden 'mask' output. Backward, one thread per input element
finds the one window holding it and writes gy * (mask == its offset): the op's product,
so an infinite gradient at a losing entry is NaN there too. Elements no window covers get 0.

Served for max pooling, channels first, 1 to 3 spatial dims, float32 or float64, windows
that do not overlap (stride = kernel, or one window along a dim: the 2x2/2 pools of most
nets, and global pooling), C-contiguous arrays; overlapping windows go to
minimod/kernels/pool_overlap.py, which shares the geometry, and minimod/kernels/pool_gpu.py
binds Pooling's steps to either. Nothing here ran on a GPU when it was
written, so each GPU checks the kernels once per dtype against the op's own path before
they serve (`WindowMax.serves`, at bind time); a dtype where they disagree keeps the op's
path, and `status()` says why. The CPU tests compile the source with NVRTC and run its
reference (`host_forward`, `host_backward`) through the CuPy stand-in.
"""
from __future__ import annotations

import numpy as np

from ..ops.conv_helpers import offsets
from ..ops.pool_windows import disjoint
from ..ops.pooling import Pooling
from ..ops.registry import create_op
from .checked_kernels import CheckedKernels

__all__ = ["GEOMETRY_SOURCE", "KERNELS", "SOURCE", "WindowMax", "bind_backward", "bind_forward",
           "fields", "geometry", "host_backward", "host_forward", "scalars", "status"]

#: threads per block
THREADS = 256

#: what both pooling kernel families share: the window geometry, reading a window's entry,
#: and the geometry as kernel parameters (FIELDS' order: sixteen scalars every CuPy passes alike)
GEOMETRY_SOURCE = r"""
template <typename T> __device__ T neg_inf();
template <> __device__ float neg_inf<float>() { return __int_as_float(0xff800000); }
template <> __device__ double neg_inf<double>() {
  return __longlong_as_double(0xfff0000000000000ULL);
}

struct Geometry {  // spatial dims as 3-D (a 1-D or 2-D pool has leading dims of 1)
  long long planes, d, h, w, od, oh, ow, kd, kh, kw, sd, sh, sw, pd, ph, pw;
};

// the value at window position (kd, kh, kw) of output (zd, zh, zw), `fill` in the padding
template <typename T> __device__ T tap(const T* x, const Geometry& g, long long zd,
                                       long long zh, long long zw, long long kd,
                                       long long kh, long long kw, T fill) {
  long long id = zd * g.sd - g.pd + kd, ih = zh * g.sh - g.ph + kh, iw = zw * g.sw - g.pw + kw;
  if (id < 0 || id >= g.d || ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) return fill;
  return x[(id * g.h + ih) * g.w + iw];
}

// the flat index i of a (planes, n0, n1, n2) array as its three coordinates; returns the plane
__device__ long long unflatten(long long i, long long n0, long long n1, long long n2,
                               long long* c0, long long* c1, long long* c2) {
  *c2 = i % n2;
  i /= n2;
  *c1 = i % n1;
  i /= n1;
  *c0 = i % n0;
  return i / n0;
}

#define GEOMETRY_PARAMS                                                                     \
  long long planes, long long d, long long h, long long w, long long od, long long oh,     \
      long long ow, long long kd, long long kh, long long kw, long long sd, long long sh,  \
      long long sw, long long pd, long long ph, long long pw
#define GEOMETRY {planes, d, h, w, od, oh, ow, kd, kh, kw, sd, sh, sw, pd, ph, pw}
"""

SOURCE = GEOMETRY_SOURCE + r"""

template <typename T> __device__ void window_max(const T* x, T* y, T* mask, Geometry g) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= g.planes * g.od * g.oh * g.ow) return;
  long long zd, zh, zw, plane = unflatten(i, g.od, g.oh, g.ow, &zd, &zh, &zw);
  const T* xp = x + plane * g.d * g.h * g.w;
  T best = tap(xp, g, zd, zh, zw, 0, 0, 0, neg_inf<T>());
  for (long long kd = 0; kd < g.kd; ++kd)
    for (long long kh = 0; kh < g.kh; ++kh)
      for (long long kw = 0; kw < g.kw; ++kw) {
        T v = tap(xp, g, zd, zh, zw, kd, kh, kw, neg_inf<T>());
        if (v > best || v != v) best = v;
      }
  long long k = 0, arg = g.kd * g.kh * g.kw - 1;
  bool found = false;
  for (long long kd = 0; kd < g.kd && !found; ++kd)
    for (long long kh = 0; kh < g.kh && !found; ++kh)
      for (long long kw = 0; kw < g.kw && !found; ++kw, ++k)
        if (tap(xp, g, zd, zh, zw, kd, kh, kw, neg_inf<T>()) == best) {
          arg = k;
          found = true;
        }
  y[i] = best;
  mask[i] = (T)arg;
}

// the one window along a dim holding input position p, and p's offset in it; false if none
__device__ bool locate(long long p, long long pad, long long k, long long s, long long o,
                       long long* z, long long* off) {
  *z = o == 1 ? 0 : (p + pad) / s;
  *off = p + pad - *z * s;
  return *z < o && *off < k;
}

template <typename T> __device__ void window_max_grad(const T* gy, const T* mask, T* dx,
                                                      Geometry g) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= g.planes * g.d * g.h * g.w) return;
  long long id, ih, iw, plane = unflatten(i, g.d, g.h, g.w, &id, &ih, &iw);
  long long zd, zh, zw, fd, fh, fw;  // the window and the offset in it
  if (!locate(id, g.pd, g.kd, g.sd, g.od, &zd, &fd) ||
      !locate(ih, g.ph, g.kh, g.sh, g.oh, &zh, &fh) ||
      !locate(iw, g.pw, g.kw, g.sw, g.ow, &zw, &fw)) {
    dx[i] = (T)0;
    return;
  }
  long long win = ((plane * g.od + zd) * g.oh + zh) * g.ow + zw;
  T k = (T)((fd * g.kh + fh) * g.kw + fw);
  dx[i] = gy[win] * (T)(mask[win] == k);
}

extern "C" __global__ void minimod_window_max_f32(const float* x, float* y, float* mask,
                                                  GEOMETRY_PARAMS) {
  window_max<float>(x, y, mask, Geometry GEOMETRY);
}
extern "C" __global__ void minimod_window_max_f64(const double* x, double* y, double* mask,
                                                  GEOMETRY_PARAMS) {
  window_max<double>(x, y, mask, Geometry GEOMETRY);
}
extern "C" __global__ void minimod_window_max_grad_f32(const float* gy, const float* mask,
                                                       float* dx, GEOMETRY_PARAMS) {
  window_max_grad<float>(gy, mask, dx, Geometry GEOMETRY);
}
extern "C" __global__ void minimod_window_max_grad_f64(const double* gy, const double* mask,
                                                       double* dx, GEOMETRY_PARAMS) {
  window_max_grad<double>(gy, mask, dx, Geometry GEOMETRY);
}
"""

#: (stage, dtype char) -> kernel name
KERNELS = {(stage, char): "minimod_window_max%s_%s" % (suffix, bits)
           for stage, suffix in (("forward", ""), ("backward", "_grad"))
           for char, bits in (("f", "f32"), ("d", "f64"))}

#: the Geometry struct's fields, in order
FIELDS = ("planes", "d", "h", "w", "od", "oh", "ow", "kd", "kh", "kw", "sd", "sh", "sw",
          "pd", "ph", "pw")


def fields(op: Pooling, in_shape: tuple):
    """The Geometry fields (a dict) of `op` on channels-first data of `in_shape` with 1 to 3
    spatial dims, as 3-D (leading dims of size 1), whatever the pool; None for other ranks."""
    spatial = tuple(in_shape[2:])
    if not 1 <= len(spatial) <= 3:  # (the op pools channels first)
        return None
    kernel, stride, pad_lo, _, out = op._geometry(spatial)
    lead = 3 - len(spatial)
    dims = dict(planes=int(np.prod(in_shape[:2])))
    for names, values, fill in ((("d", "h", "w"), spatial, 1), (("od", "oh", "ow"), out, 1),
                                (("kd", "kh", "kw"), kernel, 1), (("sd", "sh", "sw"), stride, 1),
                                (("pd", "ph", "pw"), pad_lo, 0)):
        dims.update(zip(names, (fill,) * lead + tuple(int(v) for v in values)))
    return dims


def windows_disjoint(dims: dict) -> bool:
    """Whether no two windows of geometry `dims` overlap."""
    return disjoint(*([dims[p + a] for a in "dhw"] for p in ("k", "s", "o")))


def geometry(op: Pooling, in_shape: tuple):
    """The Geometry fields of `op` on data of `in_shape`, or None where these kernels do not
    serve it (see the module docstring)."""
    dims = fields(op, in_shape) if op.attrs.pool_type == "max" else None
    return dims if dims is not None and windows_disjoint(dims) else None


def scalars(dims: dict) -> tuple:
    """The geometry as the kernels take it: sixteen int64 scalars in FIELDS' order."""
    return tuple(np.int64(dims[f]) for f in FIELDS)


# ----------------------------------------------------------------------------- reference

def _windows(x, dims: dict):
    """x (planes, d, h, w) padded with -inf as (K, planes, od, oh, ow): each window's
    entries in offset order."""
    g = dims
    full = [(g["o" + a] - 1) * g["s" + a] + g["k" + a] for a in "dhw"]  # the windows' reach
    pad = np.full((g["planes"],) + tuple(max(f, g["p" + a] + n) for f, a, n in
                                         zip(full, "dhw", x.shape[1:])), -np.inf, x.dtype)
    pad[:, g["pd"]:g["pd"] + g["d"], g["ph"]:g["ph"] + g["h"], g["pw"]:g["pw"] + g["w"]] = x
    return np.stack([pad[:, kd::g["sd"], kh::g["sh"], kw::g["sw"]][
        :, :g["od"], :g["oh"], :g["ow"]] for kd, kh, kw in offsets((g["kd"], g["kh"], g["kw"]))])


def host_forward(x, y, mask, dims: dict) -> None:
    """What the forward kernel computes, on the host (arrays of any shape, C order)."""
    g = dims
    panel = _windows(x.reshape(g["planes"], g["d"], g["h"], g["w"]), dims)
    best = panel.max(axis=0)
    equal = panel == best
    arg = np.where(equal.any(axis=0), equal.argmax(axis=0), panel.shape[0] - 1)
    y.reshape(best.shape)[...] = best
    mask.reshape(best.shape)[...] = arg


def host_backward(gy, mask, dx, dims: dict) -> None:
    """What the backward kernel computes, on the host."""
    g = dims
    out = (g["planes"], g["od"], g["oh"], g["ow"])
    gy, mask = gy.reshape(out), mask.reshape(out)
    full = [max((g["o" + a] - 1) * g["s" + a] + g["k" + a], g["p" + a] + g[a]) for a in "dhw"]
    grad = np.zeros((g["planes"],) + tuple(full), dx.dtype)
    for k, (kd, kh, kw) in enumerate(offsets((g["kd"], g["kh"], g["kw"]))):
        grad[:, kd::g["sd"], kh::g["sh"], kw::g["sw"]][:, :g["od"], :g["oh"], :g["ow"]] = (
            gy * (mask == k))
    dx.reshape(g["planes"], g["d"], g["h"], g["w"])[...] = grad[
        :, g["pd"]:g["pd"] + g["d"], g["ph"]:g["ph"] + g["h"], g["pw"]:g["pw"] + g["w"]]


# ----------------------------------------------------------------------------- the kernels

class WindowMax(CheckedKernels):
    """The two kernels on one array module, checked once per (device, dtype) against the
    op's own path before they serve: they must give the op's numbers on test pools (ties, a
    NaN, padding, an uncovered edge, one window with stride 1)."""

    SOURCE = SOURCE
    KERNELS = KERNELS
    unchecked = "not checked yet (no GPU max pooling has been bound)"

    def forward(self, xp, x, y, mask, dims: dict) -> None:
        self.launch(xp, *self.call("forward", (x, y, mask), dims))

    def backward(self, xp, gy, mask, dx, dims: dict) -> None:
        self.launch(xp, *self.call("backward", (gy, mask, dx), dims))

    @staticmethod
    def call(stage: str, arrays: tuple, dims: dict) -> tuple:
        """(stage, threads, kernel arguments) of one launch: a thread per output forward,
        per input element backward; the arrays, then the geometry's scalars."""
        spatial = ("od", "oh", "ow") if stage.endswith("forward") else ("d", "h", "w")
        count = dims["planes"] * dims[spatial[0]] * dims[spatial[1]] * dims[spatial[2]]
        return stage, count, tuple(arrays) + scalars(dims)

    def launch(self, xp, stage: str, count: int, args: tuple) -> None:
        """Run kernel (`stage`, the first array's dtype) on `count` threads."""
        if count:
            blocks = (count + THREADS - 1) // THREADS
            self.function(xp, (stage, args[0].dtype.char))((blocks,), (THREADS,), args)

    def _compare(self, xp, dtype) -> str:
        rng = np.random.default_rng(3)
        for shape, attrs in (((2, 3, 7, 6), {"kernel": "(2, 2)", "stride": "(2, 2)"}),
                             ((1, 2, 5, 5), {"kernel": "(3, 3)", "stride": "(3, 3)",
                                             "pad": "(1, 1)", "pooling_convention": "full"}),
                             ((2, 2, 9), {"kernel": "(3,)", "stride": "(3,)"}),
                             ((1, 2, 3, 5), {"kernel": "(3, 5)"})):  # one window, stride 1
            op = create_op("Pooling", dict(attrs, pool_type="max"))
            host = rng.integers(-3, 4, shape).astype(dtype)  # ties in most windows
            host.reshape(-1)[5] = np.nan
            dims = geometry(op, shape)
            x = xp.asarray(host)
            out_shape = (shape[0], shape[1]) + tuple(dims[k] for k in ("od", "oh", "ow")
                                                      [3 - len(shape[2:]):])
            want = [xp.empty(out_shape, dtype), xp.empty(out_shape, dtype)]
            op.forward(xp, [x], [], want, True)
            got = [xp.empty(out_shape, dtype), xp.empty(out_shape, dtype)]
            self.forward(xp, x, got[0], got[1], dims)
            gy = xp.asarray(rng.standard_normal(out_shape).astype(dtype))
            dx_want, dx_got = xp.empty(shape, dtype), xp.empty(shape, dtype)
            op.backward(xp, [gy], [x], want, [dx_want], [])
            self.backward(xp, gy, got[1], dx_got, dims)
            for name, a, b in (("maxima", got[0], want[0]), ("mask", got[1], want[1]),
                               ("gradient", dx_got, dx_want)):
                if not np.array_equal(xp.asnumpy(a), xp.asnumpy(b), equal_nan=True):
                    return "its %s of %s differ from the op's (%s)" % (name, shape, dtype.name)
        return ""


#: the process's one WindowMax
WINDOW_MAX = WindowMax()


def status() -> str:
    """Which GPU max pooling runs, per device and dtype checked so far, or why not these
    kernels."""
    return WINDOW_MAX.status()


def _bound(op, xp, x, arrays) -> dict:
    """The geometry where the kernels serve these arrays (CuPy, one float dtype, C order),
    else None."""
    if xp is np or any(
            a.dtype != x.dtype or not a.flags.c_contiguous for a in arrays):
        return None
    dims = geometry(op, x.shape)
    if dims is None or not WINDOW_MAX.serves(xp, x.device.id, x.dtype):
        return None
    return dims


def bind_forward(op, xp, inputs, aux, out):
    x, y = inputs[0], out[0]
    mask = out[1] if len(out) > 1 else None  # max pooling's hidden output
    if mask is None:
        return None
    dims = _bound(op, xp, x, (x, y, mask))
    if dims is None:
        return None

    call = WINDOW_MAX.call("forward", (x, y, mask), dims)

    def run_window_max(xp, is_train):
        WINDOW_MAX.launch(xp, *call)
    return run_window_max


def bind_backward(op, xp, out_grads, inputs, outputs, in_grads, aux):
    dx, gy = in_grads[0], out_grads[0]
    if dx is None or len(outputs) < 2 or outputs[1] is None:
        return None
    mask = outputs[1]
    dims = _bound(op, xp, dx, (dx, gy, mask))
    if dims is None:
        return None

    call = WINDOW_MAX.call("backward", (gy, mask, dx), dims)

    def run_window_max_grad(xp, is_train):
        WINDOW_MAX.launch(xp, *call)
    return run_window_max_grad
