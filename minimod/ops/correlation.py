"""FlowNet's Correlation layer with MXNet 1.9.1's parameters and numbers.

The output compares patches of data1 with patches of data2 shifted by every displacement in a
(2r + 1) x (2r + 1) neighbourhood. The work is one vectorised pass per displacement and per
kernel tap (both small fixed counts), over the whole batch and image at once.

MXNet's hidden outputs `tmp1` and `tmp2` (the padded inputs, channels last) are kept for the
monitor and for JSON row counts; backward does not read them but re-pads its inputs, so the
memory planner may free them straight after the forward step. Arithmetic runs in float32 for
float16 data and in the data's own type otherwise.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from ..base import OpParamError, ShapeError
from .registry import Op, register
from .spatial import _check_rank, _work_dtype

__all__ = ["Correlation"]


@dataclasses.dataclass(frozen=True)
class CorrelationAttrs:
    kernel_size: int = 1
    max_displacement: int = 1
    stride1: int = 1
    stride2: int = 1
    pad_size: int = 0
    is_multiply: bool = True


@register
class Correlation(Op):
    """FlowNet's correlation of two feature maps data1, data2 of one shape (N, C, H, W), both
    zero-padded by pad_size to (Hp, Wp).

    With k = kernel_size, m = max_displacement, r = m // stride2, D = 2 r + 1 and border
    b = m + (k - 1) // 2, the output is (N, D*D, Ht, Wt), Ht = ceil((Hp - 2 b) / stride1)
    (likewise Wt). For output pixel (i, j) the data1 patch starts at (y1, x1) = (m + i stride1,
    m + j stride1), and channel t = (p + r) D + (q + r), for p, q in -r..r, compares it with
    the data2 patch at (y1 + p stride2, x1 + q stride2):
        output = sum over the k x k patch and the channels of f(a, b) / (k * k * C),
    f(a, b) = a * b when is_multiply, else |a - b| (whose gradient takes sign +1 where a >= b).
    kernel_size must be odd (MXNet refuses an even one when it runs).

    Hidden outputs `tmp1`, `tmp2` (N, Hp, Wp, C): the padded inputs, channels last.
    """

    name = "Correlation"
    Attrs = CorrelationAttrs
    ARGUMENTS = ("data1", "data2")
    OUTPUTS = ("output", "tmp1", "tmp2")
    backward_inputs = (0, 1)
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        for key in ("kernel_size", "stride1", "stride2"):
            if getattr(a, key) < 1:
                raise OpParamError("operator Correlation: %s=%d must be >= 1"
                                   % (key, getattr(a, key)))
        for key in ("max_displacement", "pad_size"):
            if getattr(a, key) < 0:
                raise OpParamError("operator Correlation: %s=%d must be >= 0"
                                   % (key, getattr(a, key)))
        if a.kernel_size % 2 == 0:
            raise OpParamError("operator Correlation: kernel_size=%d must be odd"
                               % a.kernel_size)

    def num_visible_outputs(self) -> int:
        return 1

    @property
    def _radius(self) -> int:
        return self.attrs.max_displacement // self.attrs.stride2

    def _out_size(self, size: Optional[int]) -> Optional[int]:
        if size is None:
            return None
        a = self.attrs
        border = a.max_displacement + (a.kernel_size - 1) // 2
        span = size + 2 * a.pad_size - 2 * border
        out = -(-span // a.stride1)
        if out < 1:
            raise ShapeError("input 'data1' of spatial size %d (pad_size=%d) is too small: "
                             "max_displacement=%d and kernel_size=%d need at least %d"
                             % (size, a.pad_size, a.max_displacement, a.kernel_size,
                                2 * border - 2 * a.pad_size + 1))
        return out

    def infer_shape(self, in_shapes, out_shapes):
        _check_rank(in_shapes, 0, "data1", 4, "batch, channel, y, x")
        _check_rank(in_shapes, 1, "data2", 4, "batch, channel, y, x")
        in_shapes, out_shapes = self.same_shape(in_shapes, out_shapes, [0, 1], [])
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        n, c, h, w = data
        pad = self.attrs.pad_size
        grid = 2 * self._radius + 1
        self.set_out(out_shapes, 0, (n, grid * grid, self._out_size(h), self._out_size(w)))
        padded = (n, None if h is None else h + 2 * pad, None if w is None else w + 2 * pad, c)
        self.set_out(out_shapes, 1, padded)
        self.set_out(out_shapes, 2, padded)
        return in_shapes, out_shapes

    def _geometry(self, h: int, w: int) -> tuple:
        """(Ht, Wt, rows, cols, offsets): output size, the rows and columns one displacement's
        product map spans, and the (dy, dx) data2 shift of every output channel."""
        a, radius = self.attrs, self._radius
        out_h, out_w = self._out_size(h), self._out_size(w)
        rows = (out_h - 1) * a.stride1 + a.kernel_size
        cols = (out_w - 1) * a.stride1 + a.kernel_size
        steps = range(-radius, radius + 1)
        offsets = [(p * a.stride2, q * a.stride2) for p in steps for q in steps]
        return out_h, out_w, rows, cols, offsets

    def _padded(self, xp, x, dtype):
        """x (N, C, H, W) zero-padded by pad_size on all four sides."""
        n, c, h, w = x.shape
        pad = self.attrs.pad_size
        padded = xp.zeros((n, c, h + 2 * pad, w + 2 * pad), dtype)
        padded[:, :, pad:pad + h, pad:pad + w] = x
        return padded

    def _windows(self, out_h: int, out_w: int):
        """Slices of a product map (rows, cols) that one kernel tap (dy, dx) of every output
        pixel reads, for each of the k * k taps."""
        a = self.attrs
        for dy in range(a.kernel_size):
            for dx in range(a.kernel_size):
                yield (slice(dy, dy + (out_h - 1) * a.stride1 + 1, a.stride1),
                       slice(dx, dx + (out_w - 1) * a.stride1 + 1, a.stride1))

    def forward(self, xp, inputs, aux, out, is_train):
        x1, x2 = inputs
        n, c, h, w = x1.shape
        dtype = _work_dtype(xp, x1.dtype)
        out_h, out_w, rows, cols, offsets = self._geometry(h, w)
        m = self.attrs.max_displacement
        p1, p2 = self._padded(xp, x1, dtype), self._padded(xp, x2, dtype)
        first = p1[:, :, m:m + rows, m:m + cols]
        # one vectorised pass per displacement: the displacement count is a small constant
        maps = xp.empty((n, len(offsets), rows, cols), dtype)
        for t, (dy, dx) in enumerate(offsets):
            second = p2[:, :, m + dy:m + dy + rows, m + dx:m + dx + cols]
            if self.attrs.is_multiply:
                maps[:, t] = xp.einsum("nchw,nchw->nhw", first, second)
            else:
                maps[:, t] = xp.abs(first - second).sum(axis=1)
        total = xp.zeros((n, len(offsets), out_h, out_w), dtype)
        for ys, xs in self._windows(out_h, out_w):
            total += maps[:, :, ys, xs]
        out[0][...] = total / (self.attrs.kernel_size ** 2 * c)
        out[1][...] = p1.transpose(0, 2, 3, 1)
        out[2][...] = p2.transpose(0, 2, 3, 1)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x1, x2 = inputs
        d1, d2 = in_grads
        if d1 is None and d2 is None:
            return
        n, c, h, w = x1.shape
        dtype = _work_dtype(xp, x1.dtype)
        out_h, out_w, rows, cols, offsets = self._geometry(h, w)
        m, pad = self.attrs.max_displacement, self.attrs.pad_size
        head = out_grads[0].astype(dtype) / (self.attrs.kernel_size ** 2 * c)
        d_maps = xp.zeros((n, len(offsets), rows, cols), dtype)
        for ys, xs in self._windows(out_h, out_w):
            d_maps[:, :, ys, xs] += head
        p1, p2 = self._padded(xp, x1, dtype), self._padded(xp, x2, dtype)
        g1, g2 = xp.zeros_like(p1), xp.zeros_like(p2)
        first, d_first = p1[:, :, m:m + rows, m:m + cols], g1[:, :, m:m + rows, m:m + cols]
        for t, (dy, dx) in enumerate(offsets):
            window = (slice(None), slice(None), slice(m + dy, m + dy + rows),
                      slice(m + dx, m + dx + cols))
            second = p2[window]
            d_map = d_maps[:, t, None]
            if self.attrs.is_multiply:
                d_first += d_map * second
                g2[window] += d_map * first
            else:
                signed = xp.where(first >= second, d_map, -d_map)
                d_first += signed
                g2[window] -= signed
        if d1 is not None:
            d1[...] = g1[:, :, pad:pad + h, pad:pad + w]
        if d2 is not None:
            d2[...] = g2[:, :, pad:pad + h, pad:pad + w]
