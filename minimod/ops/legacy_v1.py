"""MXNet's deprecated first versions of three layers, kept because old scripts and symbol files
name them: Convolution_v1, Pooling_v1 and BatchNorm_v1.

What MXNet 1.9.1 computes with them, measured against it (tests/data/ops/v1_golden.npz):

- Convolution_v1 is Convolution restricted to 2-D kernels and the NCHW layout (MXNet's own
  fails on anything else: "1D convolution not supported", "Volume convolution is not
  implemented"). Its numbers are Convolution's; it always runs the im2col path.
- Pooling_v1 takes 4-D data and a 2-D kernel. Unlike Pooling, it pads with zeros for every
  pool type (so a max window over padding sees 0), divides an average by the whole kernel
  size k_h * k_w (also in windows clipped by the 'full' convention), and clips a window that
  runs past the padded input instead of padding it further. Max's gradient goes to every
  element equal to its window's maximum (ties share it), padding included.
- BatchNorm_v1 normalises axis 1 of 2-D or 4-D float32 data. Its `var` output is the variance
  (BatchNorm's holds 1/sqrt(var + eps)). Its data gradient is the batch-statistics formula
  evaluated at the mean m and variance v the forward used, with r = 1/sqrt(v + eps),
  d = x - m, h = head * gamma and n elements per channel:
      dvar  = -r^3/2 * sum(h d)
      dmean = -r * sum(h) - 2 dvar * sum(d) / n
      dx    = h r + 2 dvar d / n + dmean / n
  which is BatchNorm's training gradient when m, v are the batch's (sum(d) = 0), and what
  MXNet computes when a backward follows an inference forward (m, v the moving statistics).
  With use_global_stats, dx = h r. Moving statistics, fix_gamma and the gradients of gamma and
  beta are BatchNorm's.
"""
from __future__ import annotations

import dataclasses
from typing import Literal

from ..base import DTypeError, ShapeError
from .conv_helpers import offsets, padded, window
from .convolution import Convolution
from .helpers import (
    bias_view,
    check_rank,
    dtype_of,
    param_error,
    reduce_axes,
    spatial_tuple,
    write_grad,
)
from .normalization import BatchNorm
from .registry import Op, fmt_shape, register

__all__ = ["ConvolutionV1", "PoolingV1", "BatchNormV1"]


@register
class ConvolutionV1(Convolution):
    """Convolution of NCHW data with a 2-D kernel (see the module docstring)."""

    name = "Convolution_v1"

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if len(self.attrs.kernel) != 2:
            raise param_error(self.name, "kernel=%s: MXNet's Convolution_v1 computes 2-D "
                              "convolutions only (use Convolution)" % (self.attrs.kernel,))
        if self.attrs.layout not in (None, "NCHW"):
            raise param_error(self.name, "layout=%s: Convolution_v1 takes NCHW only"
                              % self.attrs.layout)


@dataclasses.dataclass(frozen=True)
class PoolingV1Attrs:
    kernel: tuple[int, ...] = ()
    pool_type: Literal["max", "avg", "sum"] = "max"
    global_pool: bool = False
    pooling_convention: Literal["valid", "full"] = "valid"
    stride: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()


@register
class PoolingV1(Op):
    """Max / average / sum pooling of (N, C, H, W) data, MXNet's first version (see the module
    docstring for how it differs from Pooling). Per spatial dim with kernel k, stride s and
    pad p, the zero-padded input has x + 2p elements and 'valid' gives floor((x + 2p - k)/s) + 1
    windows, 'full' ceil(...) + 1. global_pool takes one window over each whole map (kernel,
    stride and pad are then ignored)."""

    name = "Pooling_v1"
    Attrs = PoolingV1Attrs
    backward_inputs = ()
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        if len(a.kernel) != 2 or any(k <= 0 for k in a.kernel):
            raise param_error(self.name, "kernel=%s must be two positive dims (MXNet's "
                              "Pooling_v1 pools 2-D maps only)" % (a.kernel,))
        stride = spatial_tuple(self.name, "stride", a.stride, 2, 1)
        pad = spatial_tuple(self.name, "pad", a.pad, 2, 0)
        if any(s <= 0 for s in stride) or any(p < 0 for p in pad):
            raise param_error(self.name, "stride must be positive and pad non-negative")
        if a.pool_type == "max":  # the gradient compares the input with its window's maximum
            self.backward_inputs = (0,)
            self.backward_outputs = (0,)

    def _geometry(self, spatial: tuple):
        """kernel, stride, pad, the fill past the padded input (to cover clipped windows) and
        the output size, per spatial dim."""
        a = self.attrs
        if a.global_pool:
            return tuple(spatial), (1, 1), (0, 0), (0, 0), (1, 1)
        stride = spatial_tuple(self.name, "stride", a.stride, 2, 1)
        pad = spatial_tuple(self.name, "pad", a.pad, 2, 0)
        extra, out = [], []
        for x, k, s, p in zip(spatial, a.kernel, stride, pad):
            span = x + 2 * p - k
            y = (span // s if a.pooling_convention == "valid" else -(-span // s)) + 1
            extra.append(max((y - 1) * s + k - x - 2 * p, 0))
            out.append(y)
        return tuple(a.kernel), stride, pad, tuple(extra), tuple(out)

    def infer_shape(self, in_shapes: list, out_shapes: list):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        check_rank(data, 4, "Pooling_v1 (N, C, H, W)")
        if any(d is None for d in data[2:]):
            self.set_out(out_shapes, 0, tuple(data[:2]) + (None, None))
            return in_shapes, out_shapes
        kernel, _, pad, _, out = self._geometry(tuple(data[2:]))
        if any(x + 2 * p < k for x, p, k in zip(data[2:], pad, kernel)):
            raise ShapeError("input 'data' has shape %s, smaller than kernel %s with pad %s"
                             % (fmt_shape(data), kernel, pad))
        self.set_out(out_shapes, 0, tuple(data[:2]) + out)
        return in_shapes, out_shapes

    def _padded_input(self, xp, x, pad, extra):
        """x zero-padded by `pad`, then past that by `extra` with what a clipped window
        ignores (-inf for max, 0 for the sums)."""
        xpad = padded(xp, x, pad, pad, 0)
        fill = -xp.inf if self.attrs.pool_type == "max" else 0
        return padded(xp, xpad, (0, 0), extra, fill)

    def _windows(self, kernel, stride, out):
        for offs in offsets(kernel):
            yield (Ellipsis,) + tuple(window(o, s, 1, m) for o, s, m in zip(offs, stride, out))

    def forward(self, xp, inputs, aux, out, is_train):
        x, y = inputs[0], out[0]
        kernel, stride, pad, extra, out_spatial = self._geometry(x.shape[2:])
        xpad = self._padded_input(xp, x, pad, extra)
        for i, sl in enumerate(self._windows(kernel, stride, out_spatial)):
            if i == 0:
                y[...] = xpad[sl]
            elif self.attrs.pool_type == "max":
                xp.maximum(y, xpad[sl], out=y)
            else:
                y += xpad[sl]
        if self.attrs.pool_type == "avg":
            y /= kernel[0] * kernel[1]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is None:
            return
        gy = out_grads[0]
        kernel, stride, pad, extra, out_spatial = self._geometry(dx.shape[2:])
        if self.attrs.pool_type == "avg":
            gy = gy / (kernel[0] * kernel[1])
        xpad = None
        if self.attrs.pool_type == "max":
            xpad = self._padded_input(xp, inputs[0], pad, extra)
        gpad = xp.zeros(dx.shape[:2] + tuple(n + 2 * p + e for n, p, e in zip(
            dx.shape[2:], pad, extra)), dtype=dx.dtype)
        for sl in self._windows(kernel, stride, out_spatial):
            if xpad is None:
                gpad[sl] += gy
            else:
                gpad[sl] += gy * (xpad[sl] == outputs[0])
        dx[...] = gpad[(Ellipsis,) + tuple(slice(p, p + n) for p, n in zip(pad, dx.shape[2:]))]


@dataclasses.dataclass(frozen=True)
class BatchNormV1Attrs:
    eps: float = 1e-3
    momentum: float = 0.9
    fix_gamma: bool = True
    use_global_stats: bool = False
    output_mean_var: bool = False


@register
class BatchNormV1(BatchNorm):
    """Batch normalisation over axis 1 of (N, C) or (N, C, H, W) float32 data, MXNet's first
    version: BatchNorm's arithmetic, except that the `var` output is the variance and the data
    gradient is the general formula of the module docstring."""

    name = "BatchNorm_v1"
    Attrs = BatchNormV1Attrs
    SIGNATURE_INPUTS = ("data", "gamma", "beta")  # MXNet's frontend names no moving statistics

    def _axis(self, ndim: int) -> int:
        return 1

    def _shape_note(self, data) -> str:
        return "data %s" % fmt_shape(data)

    def infer_shape(self, in_shapes: list, out_shapes: list):
        data = in_shapes[0]
        if data is not None and len(data) not in (2, 4):
            raise ShapeError("input 'data' has shape %s but BatchNorm_v1 takes (N, C) or "
                             "(N, C, H, W) data" % fmt_shape(data))
        return super().infer_shape(in_shapes, out_shapes)

    def infer_type(self, in_types: list, out_types: list):
        for i, t in enumerate(in_types):
            if t is not None and dtype_of(t) != dtype_of("float32"):
                raise DTypeError("input '%s' has dtype %s but BatchNorm_v1 computes in float32 "
                                 "only (as MXNet's does; BatchNorm takes others)"
                                 % (self._in_name(i), dtype_of(t)))
        f32 = dtype_of("float32")
        return [f32] * len(in_types), [f32] * len(out_types)

    def forward(self, xp, inputs, aux, out, is_train):
        x, gamma, beta = inputs
        a = self.attrs
        axes = reduce_axes(x.ndim, 1)
        if is_train and a.fix_gamma:
            gamma[...] = 1
        if is_train and not a.use_global_stats:
            out[1][...] = x.mean(axis=axes)
            out[2][...] = x.var(axis=axes)
        else:
            out[1][...] = aux[0]
            out[2][...] = aux[1]
        scale = 1 / xp.sqrt(out[2] + a.eps)
        if not a.fix_gamma:
            scale *= gamma
        out[0][...] = (x - bias_view(out[1], x.ndim)) * bias_view(scale, x.ndim) \
            + bias_view(beta, x.ndim)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, gamma = inputs[0], inputs[1]
        g = out_grads[0]
        a = self.attrs
        axes = reduce_axes(x.ndim, 1)
        mean, var = outputs[1], outputs[2]
        if not a.use_global_stats:
            for moving, stat in zip(aux, (mean, var)):
                moving *= a.momentum
                moving += (1 - a.momentum) * stat
        r = 1 / xp.sqrt(var + a.eps)
        d = x - bias_view(mean, x.ndim)
        write_grad(in_grads[2], g.sum(axis=axes))
        if in_grads[1] is not None:
            in_grads[1][...] = 0 if a.fix_gamma else (g * d).sum(axis=axes) * r
        if in_grads[0] is None:
            return
        h = g if a.fix_gamma else g * bias_view(gamma, x.ndim)
        if a.use_global_stats:
            in_grads[0][...] = h * bias_view(r, x.ndim)
            return
        n = x.size // x.shape[1]
        dvar = (h * d).sum(axis=axes) * (-0.5 * r * r * r)
        dmean = -r * h.sum(axis=axes) - 2 * dvar * d.sum(axis=axes) / n
        in_grads[0][...] = h * bias_view(r, x.ndim) + bias_view(2 * dvar / n, x.ndim) * d \
            + bias_view(dmean / n, x.ndim)
