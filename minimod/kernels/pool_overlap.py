"""Max, average and sum pooling over overlapping windows as one GPU kernel each way, for
Pooling on CuPy where cuDNN does not pool (CuPy 14's frontend path, `cudnn_off=True`).

The op's own path loops over the K kernel offsets: a 3x3 window with stride 2 (ResNet's
first pool) costs about thirty kernel launches forward and as many backward. Here one thread
per output walks its window in offset order, as the op's loop does:

- max: the first entry, then each later one strictly greater (padding is -inf), with the
  offset of the last replacement as the hidden 'mask' output; a NaN anywhere makes the
  window NaN with the last offset, as the op's `_pool_max` (and pool_max's kernels) do;
- average and sum: the entries added in offset order from the first (padding 0), divided by
  the op's own divisor (`Pooling._divisor`, computed once at bind time; ones for a sum,
  and x / 1 is x).

Backward, one thread per input element gathers from the windows holding it, in offset
order from 0: gy * (mask == offset) for max, gy / divisor for the others. The op adds the
same terms into a zeroed gradient in the same order, so the sums agree to the bit, and no
two threads write one element (no atomics, deterministic).

Served for max, avg and sum pooling whose windows overlap (disjoint max windows go to
minimod/kernels/pool_max.py, disjoint sums keep the op's one-panel path), channels first,
1 to 3 spatial dims, float32 or float64, C-contiguous arrays. Lp pooling keeps the op's
path. As with pool_max, nothing here ran on a GPU when it was written: each GPU checks the
kernels once per dtype against the op's path before they serve (`WindowPool`), and
`status()` says which runs. The CPU tests compile the source with NVRTC and hold its host
reference (`host_forward`, `host_backward`, written the kernels' way) to the op's path. A
review compiled the source as host C++ and ran it thread by thread against the op on about
51,000 geometries (every convention, padding, 1-3 D, NaN, infinities, -0): all equal.
"""
from __future__ import annotations

import numpy as np

from ..ops.conv_helpers import offsets
from ..ops.pooling import Pooling
from ..ops.registry import create_op
from .pool_max import GEOMETRY_SOURCE, WindowMax, fields, windows_disjoint

__all__ = ["CHECKS", "KERNELS", "SOURCE", "WindowPool", "backward_call", "bind_backward",
           "bind_forward", "divisor", "forward_call", "geometry", "host_backward",
           "host_forward", "status"]

SOURCE = GEOMETRY_SOURCE + r"""
template <typename T> __device__ void overlap_max(const T* x, T* y, T* mask, Geometry g) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= g.planes * g.od * g.oh * g.ow) return;
  long long zd, zh, zw, plane = unflatten(i, g.od, g.oh, g.ow, &zd, &zh, &zw);
  const T* xp = x + plane * g.d * g.h * g.w;
  T best = tap(xp, g, zd, zh, zw, 0, 0, 0, neg_inf<T>());
  long long k = 0, arg = 0, last = g.kd * g.kh * g.kw - 1;
  for (long long kd = 0; kd < g.kd; ++kd)
    for (long long kh = 0; kh < g.kh; ++kh)
      for (long long kw = 0; kw < g.kw; ++kw, ++k) {
        T v = tap(xp, g, zd, zh, zw, kd, kh, kw, neg_inf<T>());
        if (v != v) {  // a NaN: the window's maximum, with the last offset
          best = v;
          arg = last;
        } else if (v > best) {
          best = v;
          arg = k;
        }
      }
  y[i] = best;
  mask[i] = (T)arg;
}

template <typename T> __device__ void overlap_sum(const T* x, const T* div, T* y,
                                                  Geometry g) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= g.planes * g.od * g.oh * g.ow) return;
  long long zd, zh, zw, plane = unflatten(i, g.od, g.oh, g.ow, &zd, &zh, &zw);
  const T* xp = x + plane * g.d * g.h * g.w;
  T acc = tap(xp, g, zd, zh, zw, 0, 0, 0, (T)0);
  long long k = 0;
  for (long long kd = 0; kd < g.kd; ++kd)
    for (long long kh = 0; kh < g.kh; ++kh)
      for (long long kw = 0; kw < g.kw; ++kw, ++k)
        if (k) acc += tap(xp, g, zd, zh, zw, kd, kh, kw, (T)0);
  y[i] = acc / div[(zd * g.oh + zh) * g.ow + zw];
}

// the window along a dim whose offset f holds input position p; false if there is none
__device__ bool window_at(long long p, long long pad, long long f, long long s, long long o,
                          long long* z) {
  long long q = p + pad - f;
  if (q < 0 || q % s) return false;
  *z = q / s;
  return *z < o;
}

// MAX: the terms are gy * (mask == offset); else gy / div (`aux` is the mask or the divisor)
template <typename T, bool MAX> __device__ void overlap_grad(const T* gy, const T* aux, T* dx,
                                                             Geometry g) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= g.planes * g.d * g.h * g.w) return;
  long long id, ih, iw, plane = unflatten(i, g.d, g.h, g.w, &id, &ih, &iw);
  T acc = (T)0;
  long long k = 0, zd, zh, zw;
  for (long long fd = 0; fd < g.kd; ++fd)
    for (long long fh = 0; fh < g.kh; ++fh)
      for (long long fw = 0; fw < g.kw; ++fw, ++k) {
        if (!window_at(id, g.pd, fd, g.sd, g.od, &zd) ||
            !window_at(ih, g.ph, fh, g.sh, g.oh, &zh) ||
            !window_at(iw, g.pw, fw, g.sw, g.ow, &zw))
          continue;
        long long s = (zd * g.oh + zh) * g.ow + zw, win = plane * g.od * g.oh * g.ow + s;
        if (MAX)
          acc += gy[win] * (T)(aux[win] == (T)k);
        else
          acc += gy[win] / aux[s];
      }
  dx[i] = acc;
}

#define POOL_KERNELS(T, BITS)                                                                \
  extern "C" __global__ void minimod_overlap_max_##BITS(const T* x, T* y, T* mask,            \
                                                        GEOMETRY_PARAMS) {                  \
    overlap_max<T>(x, y, mask, Geometry GEOMETRY);                                          \
  }                                                                                         \
  extern "C" __global__ void minimod_overlap_max_grad_##BITS(const T* gy, const T* mask,      \
                                                             T* dx, GEOMETRY_PARAMS) {      \
    overlap_grad<T, true>(gy, mask, dx, Geometry GEOMETRY);                                 \
  }                                                                                         \
  extern "C" __global__ void minimod_overlap_sum_##BITS(const T* x, const T* div, T* y,       \
                                                        GEOMETRY_PARAMS) {                  \
    overlap_sum<T>(x, div, y, Geometry GEOMETRY);                                           \
  }                                                                                         \
  extern "C" __global__ void minimod_overlap_sum_grad_##BITS(const T* gy, const T* div,       \
                                                             T* dx, GEOMETRY_PARAMS) {      \
    overlap_grad<T, false>(gy, div, dx, Geometry GEOMETRY);                                 \
  }
POOL_KERNELS(float, f32)
POOL_KERNELS(double, f64)
"""

#: (stage, dtype char) -> kernel name; the stages are "<max|sum>_<forward|backward>"
KERNELS = {("%s_%s" % (kind, stage), char): "minimod_overlap_%s%s_%s" % (kind, suffix, bits)
           for kind in ("max", "sum")
           for stage, suffix in (("forward", ""), ("backward", "_grad"))
           for char, bits in (("f", "f32"), ("d", "f64"))}


def geometry(op: Pooling, in_shape: tuple):
    """The Geometry fields of `op` on data of `in_shape`, or None where these kernels do not
    serve it (see the module docstring)."""
    if op.attrs.pool_type not in ("max", "avg", "sum"):
        return None
    dims = fields(op, in_shape)
    return dims if dims is not None and not windows_disjoint(dims) else None


def divisor(xp, op: Pooling, in_shape: tuple, dtype):
    """What the sum kernels divide each output by: the op's own average divisor, or ones for
    a sum pool, as a C-ordered array of the output's spatial shape."""
    kernel, stride, pad_lo, _, out = op._geometry(tuple(in_shape[2:]))
    if op.attrs.pool_type != "avg":
        return xp.ones(out, dtype)
    return xp.ascontiguousarray(xp.broadcast_to(
        op._divisor(xp, tuple(in_shape[2:]), kernel, stride, pad_lo, out, dtype), out))


# ----------------------------------------------------------------------------- reference

def _panel(x, dims: dict, fill):
    """x (planes, d, h, w) padded with `fill` as (K, planes, od, oh, ow): each window's
    entries in offset order."""
    g = dims
    reach = [max((g["o" + a] - 1) * g["s" + a] + g["k" + a], g["p" + a] + g[a]) for a in "dhw"]
    pad = np.full((g["planes"],) + tuple(reach), fill, x.dtype)
    pad[:, g["pd"]:g["pd"] + g["d"], g["ph"]:g["ph"] + g["h"], g["pw"]:g["pw"] + g["w"]] = x
    return np.stack([pad[:, kd::g["sd"], kh::g["sh"], kw::g["sw"]][
        :, :g["od"], :g["oh"], :g["ow"]] for kd, kh, kw in offsets((g["kd"], g["kh"], g["kw"]))])


def host_forward(kind: str, x, second, third, dims: dict) -> None:
    """What forward kernel `kind` ('max' or 'sum') computes, on the host, given the kernel's
    arrays: (x, y, mask) for max, (x, divisor, y) for sum."""
    g = dims
    x = x.reshape(g["planes"], g["d"], g["h"], g["w"])
    out = (g["planes"], g["od"], g["oh"], g["ow"])
    if kind == "max":
        panel = _panel(x, dims, -np.inf)
        best, arg = panel[0].copy(), np.zeros(out, third.dtype)
        for k in range(1, panel.shape[0]):
            better = panel[k] > best
            best[better], arg[better] = panel[k][better], k
        nan = np.isnan(panel).any(axis=0)
        best[nan], arg[nan] = np.nan, panel.shape[0] - 1
        second.reshape(out)[...], third.reshape(out)[...] = best, arg
        return
    panel = _panel(x, dims, 0)
    acc = panel[0].copy()
    for k in range(1, panel.shape[0]):
        acc += panel[k]
    third.reshape(out)[...] = acc / second.reshape(out[1:])


def host_backward(kind: str, gy, aux, dx, dims: dict) -> None:
    """What backward kernel `kind` computes, on the host, gathering as the kernel does; `aux`
    is the mask (max) or the divisor (sum)."""
    g = dims
    out = (g["planes"], g["od"], g["oh"], g["ow"])
    gy = gy.reshape(out)
    acc = np.zeros((g["planes"], g["d"], g["h"], g["w"]), dx.dtype)
    for k, taps in enumerate(offsets((g["kd"], g["kh"], g["kw"]))):
        index, valid = [], np.ones((g["d"], g["h"], g["w"]), bool)
        for axis, (a, f) in enumerate(zip("dhw", taps)):
            q = np.arange(g[a]) + g["p" + a] - f
            ok = (q >= 0) & (q % g["s" + a] == 0) & (q // g["s" + a] < g["o" + a])
            shape = [1, 1, 1]
            shape[axis] = g[a]
            index.append(np.where(ok, q // g["s" + a], 0).reshape(shape))
            valid &= ok.reshape(shape)
        if kind == "max":
            term = gy[:, index[0], index[1], index[2]] * (
                aux.reshape(out)[:, index[0], index[1], index[2]] == k)
        else:
            term = gy[:, index[0], index[1], index[2]] / aux.reshape(out[1:])[
                index[0], index[1], index[2]]
        acc += np.where(valid, term, 0)
    dx.reshape(acc.shape)[...] = acc


# ----------------------------------------------------------------------------- the kernels

#: (data shape, Pooling attributes) the kernels are checked on: overlapping windows with
#: padding, 'full' windows past the end, count_include_pad off, 1-D and 3-D pools
CHECKS = (((2, 3, 9, 8), {"kernel": "(3, 3)", "stride": "(2, 2)"}),
          ((1, 2, 7, 6), {"kernel": "(3, 3)", "stride": "(2, 1)", "pad": "(1, 1)",
                          "pooling_convention": "full"}),
          ((1, 2, 6, 6), {"kernel": "(3, 3)", "pad": "(1, 1)", "count_include_pad": "False"}),
          ((2, 2, 11), {"kernel": "(4,)", "stride": "(3,)", "pad": "(2,)"}),
          ((1, 2, 4, 5, 5), {"kernel": "(2, 3, 3)", "stride": "(1, 2, 2)"}))


class WindowPool(WindowMax):
    """The overlapping-window kernels on one array module, checked once per (device, dtype)
    against the op's own path (max, avg and sum on `CHECKS`, with ties and a NaN) before
    they serve."""

    SOURCE = SOURCE
    KERNELS = KERNELS
    unchecked = "not checked yet (no GPU pooling over overlapping windows has been bound)"

    def _compare(self, xp, dtype) -> str:
        rng = np.random.default_rng(5)
        for shape, attrs in CHECKS:
            host = rng.integers(-3, 4, shape).astype(dtype)  # ties in most windows
            host.reshape(-1)[[0, 9]] = np.nan  # a window's first entry, and a later one
            for pool in ("max", "avg", "sum"):
                why = self._compare_one(xp, create_op("Pooling", dict(attrs, pool_type=pool)),
                                        xp.asarray(host), rng)
                if why:
                    return "its %s of %s %s pooling differ from the op's (%s)" % (
                        why, shape, pool, dtype.name)
        return ""

    def _compare_one(self, xp, op, x, rng) -> str:
        """'' where the kernels give the op's numbers for `op` on `x`, else what differs."""
        dims, dtype = geometry(op, x.shape), x.dtype
        out_shape = tuple(op.infer_shape([x.shape], [None, None])[1][0])
        want = [xp.empty(out_shape, dtype) for _ in op.outputs()]
        op.forward(xp, [x], [], want, True)
        got = [xp.empty(out_shape, dtype) for _ in op.outputs()]
        div = _divisor(op, xp, x)
        gy = xp.asarray(rng.standard_normal(out_shape).astype(dtype))
        dx_want, dx_got = xp.empty(x.shape, dtype), xp.empty(x.shape, dtype)
        op.backward(xp, [gy], [x], want, [dx_want], [])
        self.launch(xp, *forward_call(op, dims, x, got, div))
        mask = got[1] if len(got) > 1 else None
        self.launch(xp, *backward_call(op, dims, gy, mask, dx_got, div))
        for name, a, b in list(zip(("outputs", "mask"), got, want)) + [
                ("gradient", dx_got, dx_want)]:
            if not np.array_equal(xp.asnumpy(a), xp.asnumpy(b), equal_nan=True):
                return name
        return ""


#: the process's one WindowPool
WINDOW_POOL = WindowPool()


def status() -> str:
    """Which GPU pooling over overlapping windows runs, per device and dtype checked so far,
    or why not these kernels."""
    return WINDOW_POOL.status()


def forward_call(op: Pooling, dims: dict, x, outputs, div) -> tuple:
    """The forward launch (`WindowMax.call`) of `op` on `x` into `outputs` (y, and the mask
    of a max pool); `div` is a sum pool's `divisor`."""
    if op.attrs.pool_type == "max":
        return WINDOW_POOL.call("max_forward", (x, outputs[0], outputs[1]), dims)
    return WINDOW_POOL.call("sum_forward", (x, div, outputs[0]), dims)


def backward_call(op: Pooling, dims: dict, gy, mask, dx, div) -> tuple:
    """The backward launch of `op`: the mask's windows (max) or the divisor's (sum)."""
    if op.attrs.pool_type == "max":
        return WINDOW_POOL.call("max_backward", (gy, mask, dx), dims)
    return WINDOW_POOL.call("sum_backward", (gy, div, dx), dims)


def _bound(op, xp, x, arrays):
    """The geometry where the kernels serve these arrays (CuPy, one float dtype, C order),
    else None."""
    if xp is np or any(a is None or a.dtype != x.dtype or not a.flags.c_contiguous
                       for a in arrays):
        return None
    dims = geometry(op, x.shape)
    if dims is None or not WINDOW_POOL.serves(xp, x.device.id, x.dtype):
        return None
    return dims


def _divisor(op, xp, x):
    return None if op.attrs.pool_type == "max" else divisor(xp, op, x.shape, x.dtype)


def bind_forward(op, xp, inputs, aux, out):
    """The bound forward step where the kernels serve `op` on these arrays, else None."""
    x, outputs = inputs[0], out[:len(op.outputs())]
    dims = _bound(op, xp, x, (x, *outputs))
    if dims is None or len(outputs) != len(op.outputs()):
        return None
    call = forward_call(op, dims, x, outputs, _divisor(op, xp, x))

    def run_window_pool(xp, is_train):
        WINDOW_POOL.launch(xp, *call)
    return run_window_pool


def bind_backward(op, xp, out_grads, inputs, outputs, in_grads, aux):
    """The bound backward step where the kernels serve `op` on these arrays, else None."""
    dx, gy = in_grads[0], out_grads[0]
    mask = outputs[1] if op.attrs.pool_type == "max" and len(outputs) > 1 else None
    if dx is None or (op.attrs.pool_type == "max" and mask is None):
        return None
    dims = _bound(op, xp, dx, (dx, gy) + ((mask,) if mask is not None else ()))
    if dims is None:
        return None
    call = backward_call(op, dims, gy, mask, dx, _divisor(op, xp, dx))

    def run_window_pool_grad(xp, is_train):
        WINDOW_POOL.launch(xp, *call)
    return run_window_pool_grad
