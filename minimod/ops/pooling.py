"""Pooling: max, average, sum and Lp pooling over the spatial dims of channels-first data, or of
channels-last data (layout NWC, NHWC, NDHWC), which MXNet's CPU pools as the transposed
channels-first data and so does minimod (moving the channel axis around the same op)."""
from __future__ import annotations

import dataclasses
import math
from typing import Literal, Optional

from ..base import ShapeError
from .conv_helpers import Layout, check_layout, is_channels_last, offsets, padded, window
from .helpers import check_rank, param_error, spatial_tuple
from .pool_windows import backward_disjoint, disjoint, forward_disjoint
from .registry import Op, fmt_shape, register
from .scratch import _ScratchMixin

__all__ = ["Pooling"]


@dataclasses.dataclass(frozen=True)
class PoolingAttrs:
    kernel: tuple[int, ...] = ()
    pool_type: Literal["max", "avg", "sum", "lp"] = "max"
    global_pool: bool = False
    cudnn_off: bool = False
    pooling_convention: Literal["valid", "full", "same"] = "valid"
    stride: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()
    p_value: Optional[int] = None
    count_include_pad: Optional[bool] = None
    layout: Layout = None



@register
class Pooling(_ScratchMixin, Op):
    """Max / average / sum / Lp pooling over the spatial dims of channels-first data.

    Per spatial dim, with kernel k, stride s (default 1), pad p: 'valid' gives
    floor((x + 2p - k) / s) + 1 outputs, 'full' gives ceil(...) + 1 (the last window may run past
    the padding), 'same' gives ceil(x / s) windows starting at 0, s, 2s ... of which the last
    ones run past the end (MXNet's placement; pad must be zeros, and avg divides by the real
    elements). MXNet allows 'same' for 1-D data only; minimod takes 2-D and 3-D too.
    global_pool pools each whole map to size 1. Max ignores padding; avg divides by the window
    size clipped to the padded input when count_include_pad (the default) and by the number of
    real elements otherwise; lp computes (sum x^p)^(1/p) for p_value in 1, 2, 3.
    Max's gradient goes to the first maximum of each window in row-major order. A window
    holding a NaN gives NaN (its gradient goes to the window's last offset), as NumPy's max
    and PyTorch's max pooling do; MXNet 1.9.1 skips NaN entries (docs/compatibility.md).

    Windows that do not overlap (stride == kernel, or one window per dim, as in most 2x2 / 2
    pools and global pooling) are copied once into a panel and reduced in one call
    (`minimod.ops.pool_windows`); overlapping windows loop over the kernel offsets. The cuDNN
    variant lives in `minimod.kernels.cudnn`.
    """

    name = "Pooling"
    Attrs = PoolingAttrs
    backward_inputs = (0,)
    backward_outputs = (0,)

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        if not a.global_pool:
            if not a.kernel:
                raise param_error(self.name, "kernel is required unless global_pool=True")
            nd = len(a.kernel)
            if nd not in (1, 2, 3) or any(k <= 0 for k in a.kernel):
                raise param_error(self.name, "kernel=%s must have 1, 2 or 3 positive dims"
                                   % (a.kernel,))
            stride = spatial_tuple(self.name, "stride", a.stride, nd, 1)
            if a.pooling_convention == "same":
                # MXNet takes no padding with 'same' (it places the windows itself) and reads
                # a pad of any length, (0, 0, 0) in its own tests, as long as it is all zeros
                if any(a.pad):
                    raise param_error(self.name, "pooling_convention='same' places the "
                                       "windows itself: pad=%s must be zeros" % (a.pad,))
                pad = (0,) * nd
            else:
                pad = spatial_tuple(self.name, "pad", a.pad, nd, 0)
            if any(s <= 0 for s in stride) or any(p < 0 for p in pad):
                raise param_error(self.name, "stride must be positive and pad non-negative")
            check_layout(self.name, a.layout, nd, channels_last=True)
        if a.pool_type == "lp" and a.p_value not in (1, 2, 3):
            raise param_error(self.name, "pool_type='lp' needs p_value 1, 2 or 3, got %s"
                               % a.p_value)
        # channels-last data pools through a channels-first twin (None for channels-first data)
        self.channels_first = Pooling(
            {k: v for k, v in self.raw_attrs.items() if k != "layout"}) \
            if is_channels_last(a.layout) else None
        # avg and sum gradients need neither the input nor the output values; max reads only
        # its hidden 'mask' output (the winning kernel offset of every window), which is also
        # why MXNet's JSON counts two outputs for max pooling
        if a.pool_type in ("avg", "sum"):
            self.backward_inputs = ()
            self.backward_outputs = ()
        elif a.pool_type == "max":
            self.backward_inputs = ()
            self.backward_outputs = (1,)

    def outputs(self) -> list:
        return ["output", "mask"] if self.attrs.pool_type == "max" else ["output"]

    def num_visible_outputs(self) -> int:
        return 1

    def _geometry(self, spatial: tuple):
        """kernel, stride, pad before, pad after (to cover every window), output size per dim."""
        a = self.attrs
        nd = len(spatial)
        if a.global_pool:
            return (tuple(spatial), (1,) * nd, (0,) * nd, (0,) * nd, (1,) * nd)
        kernel = tuple(a.kernel)
        stride = spatial_tuple(self.name, "stride", a.stride, nd, 1)
        same = a.pooling_convention == "same"
        pad = (0,) * nd if same else spatial_tuple(self.name, "pad", a.pad, nd, 0)
        pad_lo, pad_hi, out = [], [], []
        for x, k, s, p in zip(spatial, kernel, stride, pad):
            if same:
                y = -(-x // s)
                lo = 0
            else:
                span = x + 2 * p - k
                y = (span // s if a.pooling_convention == "valid" else -(-span // s)) + 1
                lo = p
            pad_lo.append(lo)
            pad_hi.append(max((y - 1) * s + k - x - lo, 0))
            out.append(y)
        return kernel, stride, tuple(pad_lo), tuple(pad_hi), tuple(out)

    def infer_shape(self, in_shapes: list, out_shapes: list):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        if self.channels_first is not None:  # channels last: the channels-first op's shapes, moved
            _, outs = self.channels_first.infer_shape([_to_first(data)], [None] * len(out_shapes))
            for i, shape in enumerate(outs):
                if shape is not None:
                    self.set_out(out_shapes, i, _to_last(shape))
            return in_shapes, out_shapes
        a = self.attrs
        nd = len(data) - 2
        if a.global_pool:
            if nd < 1:
                raise ShapeError("input 'data' has shape %s but Pooling needs (N, C, ...)"
                                 % fmt_shape(data))
            self.set_out(out_shapes, 0, tuple(data[:2]) + (1,) * nd)
            if len(out_shapes) > 1:
                self.set_out(out_shapes, 1, self._mask_shape(out_shapes[0]))
            return in_shapes, out_shapes
        check_rank(data, len(a.kernel) + 2, "kernel %s" % (a.kernel,))
        if any(x is None for x in data[2:]):
            out = (None,) * nd
        else:
            kernel, _, _, _, out = self._geometry(tuple(data[2:]))
            pad = (0,) * nd if a.pooling_convention == "same" else (a.pad or (0,) * nd)
            if any(y <= 0 for y in out) or (a.pooling_convention != "same" and any(
                    x + 2 * p < k for x, p, k in zip(data[2:], pad, kernel))):
                raise ShapeError("input 'data' has shape %s, smaller than kernel %s"
                                 % (fmt_shape(data), kernel))
        self.set_out(out_shapes, 0, tuple(data[:2]) + tuple(out))
        if len(out_shapes) > 1:
            self.set_out(out_shapes, 1, self._mask_shape(out_shapes[0]))
        return in_shapes, out_shapes

    def _mask_shape(self, out_shape):
        return out_shape

    def _divisor(self, xp, spatial, kernel, stride, pad_lo, out, dtype):
        """Per-output element count of an avg window, broadcastable to (N, C, *out). A window
        of the 'full' convention can lie wholly past the (padded) input: it counts 1, so its
        average is its empty sum, 0, as in MXNet."""
        same = self.attrs.pooling_convention == "same"
        include = self.attrs.count_include_pad is not False and not same
        pad = (0,) * len(spatial) if self.attrs.global_pool or same else spatial_tuple(
            self.name, "pad", self.attrs.pad, len(spatial), 0)
        total = None
        for axis, (x, k, s, lo, y, p) in enumerate(zip(spatial, kernel, stride, pad_lo, out,
                                                       pad)):
            start = xp.arange(y) * s - lo
            end = xp.minimum(start + k, x + p)
            if not include:
                start = xp.maximum(start, 0)
                end = xp.minimum(end, x)
            count = xp.maximum(end - start, 1).astype(dtype)
            shape = [1] * len(spatial)
            shape[axis] = y
            count = count.reshape(shape)
            total = count if total is None else total * count
        return total

    def _pool_sum(self, xp, xpad, kernel, stride, out_spatial, y):
        first = True
        for offs in offsets(kernel):
            win = xpad[(Ellipsis,) + tuple(window(o, s, 1, m)
                                          for o, s, m in zip(offs, stride, out_spatial))]
            if first:
                y[...] = win
                first = False
            elif self.attrs.pool_type == "max":
                xp.maximum(y, win, out=y)
            else:
                y += win

    def _pool_max(self, xp, xpad, kernel, stride, out_spatial, y, mask):
        """y = window maxima; mask = offset index of each window's first maximum. A window
        holding a NaN gives NaN with the last offset as its mask, as the disjoint path's."""
        last = math.prod(kernel) - 1
        for k, offs in enumerate(offsets(kernel)):
            win = xpad[(Ellipsis,) + tuple(window(o, s, 1, m)
                                          for o, s, m in zip(offs, stride, out_spatial))]
            if k == 0:
                y[...] = win
                mask[...] = 0
            else:
                better = win > y
                xp.copyto(y, win, where=better)
                xp.copyto(mask, k, where=better)
            nan = xp.isnan(win)
            xp.copyto(y, win, where=nan)
            xp.copyto(mask, last, where=nan)

    def forward(self, xp, inputs, aux, out, is_train):
        if self.channels_first is not None:
            self._forward_channels_last(xp, inputs, aux, out, is_train)
            return
        x = inputs[0]
        y = out[0]
        a = self.attrs
        kernel, stride, pad_lo, pad_hi, out_spatial = self._geometry(x.shape[2:])
        fill = -xp.inf if a.pool_type == "max" else 0
        src = x
        if a.pool_type == "lp" and a.p_value > 1:
            src = x ** a.p_value
        xpad = padded(xp, src, pad_lo, pad_hi, fill)
        if disjoint(kernel, stride, out_spatial):
            forward_disjoint(self, xp, xpad, kernel, out_spatial, y,
                             out[1] if a.pool_type == "max" else None)
            if a.pool_type == "max":
                return
        elif a.pool_type == "max":
            self._pool_max(xp, xpad, kernel, stride, out_spatial, y, out[1])
            return
        else:
            self._pool_sum(xp, xpad, kernel, stride, out_spatial, y)
        if a.pool_type == "avg":
            y /= self._divisor(xp, x.shape[2:], kernel, stride, pad_lo, out_spatial, y.dtype)
        elif a.pool_type == "lp" and a.p_value == 2:
            xp.sqrt(y, out=y)
        elif a.pool_type == "lp" and a.p_value == 3:
            xp.cbrt(y, out=y)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is None:
            return
        if self.channels_first is not None:
            self._backward_channels_last(xp, out_grads, inputs, outputs, dx, aux)
            return
        a = self.attrs
        gy = out_grads[0]
        kernel, stride, pad_lo, pad_hi, out_spatial = self._geometry(dx.shape[2:])
        if a.pool_type == "avg":
            gy = gy / self._divisor(xp, dx.shape[2:], kernel, stride, pad_lo, out_spatial,
                                    gy.dtype)
        elif a.pool_type == "lp" and a.p_value > 1:
            y = outputs[0]
            safe = xp.where(y == 0, 1, y)
            gy = xp.where(y == 0, 0, gy / safe ** (a.p_value - 1))
        if a.pool_type != "lp" and disjoint(kernel, stride, out_spatial):
            backward_disjoint(self, xp, gy, outputs[1] if a.pool_type == "max" else None, dx,
                              kernel, pad_lo, pad_hi, out_spatial)
            return
        xpad = None
        if a.pool_type == "lp":
            xpad = padded(xp, inputs[0], pad_lo, pad_hi, 0)
        gpad = xp.zeros(dx.shape[:2] + tuple(n + lo + hi for n, lo, hi in zip(
            dx.shape[2:], pad_lo, pad_hi)), dtype=dx.dtype)
        for k, offs in enumerate(offsets(kernel)):
            sl = (Ellipsis,) + tuple(window(o, s, 1, m)
                                    for o, s, m in zip(offs, stride, out_spatial))
            if a.pool_type == "max":
                gpad[sl] += gy * (outputs[1] == k)
            elif a.pool_type == "lp" and a.p_value > 1:
                gpad[sl] += gy * xpad[sl] ** (a.p_value - 1)
            else:
                gpad[sl] += gy
        dx[...] = gpad[(Ellipsis,) + tuple(slice(lo, lo + n)
                                           for lo, n in zip(pad_lo, dx.shape[2:]))]

    # ------------------------------------------------------------------ channels last
    def _forward_channels_last(self, xp, inputs, aux, out, is_train) -> None:
        outs = [xp.empty(_to_first(o.shape), dtype=o.dtype) for o in out]
        self.channels_first.forward(xp, [_moved_first(xp, inputs[0])], aux, outs, is_train)
        for whole, part in zip(out, outs):
            whole[...] = xp.moveaxis(part, 1, -1)

    def _backward_channels_last(self, xp, out_grads, inputs, outputs, dx, aux) -> None:
        dx_first = xp.empty(_to_first(dx.shape), dtype=dx.dtype)
        self.channels_first.backward(xp, [_moved_first(xp, g) for g in out_grads],
                                     [_moved_first(xp, x) for x in inputs],
                                     [_moved_first(xp, y) for y in outputs], [dx_first], aux)
        dx[...] = xp.moveaxis(dx_first, 1, -1)


def _to_first(shape: tuple) -> tuple:
    """(N, *spatial, C) -> (N, C, *spatial)."""
    return (shape[0], shape[-1]) + tuple(shape[1:-1])


def _to_last(shape: tuple) -> tuple:
    """(N, C, *spatial) -> (N, *spatial, C)."""
    return (shape[0],) + tuple(shape[2:]) + (shape[1],)


def _moved_first(xp, array):
    """A channels-last array as a contiguous channels-first one (None stays None)."""
    return None if array is None else xp.ascontiguousarray(xp.moveaxis(array, -1, 1))
