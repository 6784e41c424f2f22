"""im2col and col2im: the sliding blocks of a convolution as columns, and their sum back.

For data (N, C, *spatial) with 1, 2 or 3 spatial dims, a kernel k, stride s, dilate d and zero
padding p (each one value per spatial dim), the blocks are those a convolution with the same
parameters reads: out_i = (spatial_i + 2 p_i - d_i (k_i - 1) - 1) // s_i + 1 of them along dim
i, L = prod(out) in all. im2col lays them out as columns of an (N, C * prod(k), L) array whose
rows run channel-major, then over the kernel taps in row-major order; col2im sums such columns
back into an image (overlapping taps add up). Each is the other's adjoint, so each one's
gradient is the other applied to the head gradient.

Both work on a strided view (N, C, *k, *out) of the zero-padded image: im2col copies it whole
into its output in one call; col2im adds one kernel tap's (N, C, *out) block at a time (a fixed,
small count of vectorised adds: the taps' windows overlap, which rules out a single copy).

MXNet 1.9.1 documents 1-D, 2-D and 3-D data, and its shape inference takes all three, but its CPU
kernels fail at run time on 1-D and 3-D; we follow the documented contract. Where MXNet reads
only the leading dims of data whose rank does not fit the kernel, or takes a negative pad, we
raise an error instead.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

from ..base import ShapeError
from .conv_helpers import conv_out_dim, offsets, padded, window
from .helpers import param_error, spatial_tuple
from .registry import Op, fmt_shape, register

__all__ = ["Col2im", "Im2col"]


@dataclasses.dataclass(frozen=True)
class Im2colAttrs:
    kernel: tuple[int, ...]
    stride: tuple[int, ...] = ()
    dilate: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class Col2imAttrs:
    output_size: tuple[int, ...]
    kernel: tuple[int, ...]
    stride: tuple[int, ...] = ()
    dilate: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()


# ----------------------------------------------------------------------------- helpers

def _blocks_view(xp, xp_padded, kernel: tuple, stride: tuple, dilate: tuple, out: tuple):
    """The strided view (N, C, *kernel, *out) of a padded image (N, C, *padded): element
    [n, c, *t, *o] is xp_padded[n, c, *(o * stride + t * dilate)]."""
    st = xp_padded.strides
    sp = st[2:]
    return xp.lib.stride_tricks.as_strided(
        xp_padded, xp_padded.shape[:2] + tuple(kernel) + tuple(out),
        st[:2] + tuple(a * d for a, d in zip(sp, dilate))
        + tuple(a * s for a, s in zip(sp, stride)))


def _write_as(dst, shape: tuple, src) -> None:
    """dst[...] = src, where src has `shape`, a reshaping of dst's: straight into dst when
    it is contiguous (its reshape is then a view), else through one reshaped copy."""
    if dst.flags.c_contiguous:
        dst.reshape(shape)[...] = src
    else:
        dst[...] = src.reshape(dst.shape)


class _Blocks(Op):
    """The parameter checks and geometry that im2col and col2im share."""

    ARGUMENTS = ("data",)
    backward_inputs = ()
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        nd = len(a.kernel)
        if nd not in (1, 2, 3):
            raise param_error(self.name, "kernel=%s must have 1, 2 or 3 dims (the spatial "
                               "dims of the image)" % (a.kernel,))
        if any(k <= 0 for k in a.kernel):
            raise param_error(self.name, "kernel=%s must be positive" % (a.kernel,))
        self.kernel = tuple(a.kernel)
        self.stride = spatial_tuple(self.name, "stride", a.stride, nd, 1)
        self.dilate = spatial_tuple(self.name, "dilate", a.dilate, nd, 1)
        self.pad = spatial_tuple(self.name, "pad", a.pad, nd, 0)
        if any(s <= 0 for s in self.stride):
            raise param_error(self.name, "stride=%s must be positive" % (a.stride,))
        if any(d <= 0 for d in self.dilate):
            raise param_error(self.name, "dilate=%s must be positive" % (a.dilate,))
        if any(p < 0 for p in self.pad):
            raise param_error(self.name, "pad=%s must not be negative" % (a.pad,))
        self.taps = math.prod(self.kernel)

    def _grid(self, spatial: tuple, what: str) -> tuple:
        """Blocks along each spatial dim of an image of size `spatial` (None: unknown)."""
        grid = tuple(conv_out_dim(x, k, s, d, p) for x, k, s, d, p in zip(
            spatial, self.kernel, self.stride, self.dilate, self.pad))
        if any(g is not None and g <= 0 for g in grid):
            raise ShapeError("operator %s: %s %s is smaller than kernel %s with dilate %s "
                             "(pad %s)" % (self.name, what, fmt_shape(spatial), self.kernel,
                                           self.dilate, self.pad))
        return grid

    def _check_rank(self, shape, rank: int, role: str, what: str) -> None:
        if shape is not None and len(shape) != rank:
            raise ShapeError("operator %s: %s has shape %s but needs %d dims (%s)"
                             % (self.name, role, fmt_shape(shape), rank, what))

    def _gather(self, xp, image, cols) -> None:
        """cols (N, C * taps, L) = the blocks of image (N, C, *spatial)."""
        grid = self._grid(image.shape[2:], "image of spatial size")
        image = padded(xp, image, self.pad, self.pad)
        view = _blocks_view(xp, image, self.kernel, self.stride, self.dilate, grid)
        _write_as(cols, image.shape[:2] + self.kernel + grid, view)

    def _scatter(self, xp, cols, image) -> None:
        """image (N, C, *spatial) = the sum of the blocks in cols (N, C * taps, L)."""
        n, c = image.shape[:2]
        spatial = image.shape[2:]
        grid = self._grid(spatial, "image of spatial size")
        blocks = cols.reshape((n, c, self.taps) + grid)
        if any(self.pad):
            acc = xp.zeros((n, c) + tuple(x + 2 * p for x, p in zip(spatial, self.pad)),
                           dtype=image.dtype)
        else:
            acc = image  # no border to drop: sum straight into the result
            acc.fill(0)
        # one vectorised add per kernel tap: taps may hit the same pixels, a single strided
        # assignment would lose those sums
        for tap, offs in enumerate(offsets(self.kernel)):
            win = tuple(window(o, s, d, g) for o, s, d, g in zip(
                offs, self.stride, self.dilate, grid))
            acc[(slice(None), slice(None)) + win] += blocks[:, :, tap]
        if acc is not image:
            image[...] = acc[(Ellipsis,) + tuple(slice(p, p + x)
                                                 for p, x in zip(self.pad, spatial))]


# ----------------------------------------------------------------------------- the ops

@register
class Im2col(_Blocks):
    """Sliding blocks of data (N, C, *spatial) as columns (N, C * prod(kernel), L).

    output[n, (c * K + t), l] = padded[n, c, *(o(l) * stride + tap(t) * dilate)], with
    K = prod(kernel), tap(t) the t-th kernel offset in row-major order, o(l) the l-th block in
    row-major order over the grid out = (spatial + 2 pad - dilate (kernel - 1) - 1) // stride
    + 1, L = prod(out), and `padded` data with `pad` zeros on both sides of every spatial dim.
    stride and dilate default to 1, pad to 0. Gradient: col2im of the head gradient.
    Shapes: N and C carry over both ways; L needs every spatial dim.
    """

    name = "im2col"
    Attrs = Im2colAttrs

    def infer_shape(self, in_shapes, out_shapes):
        nd = len(self.kernel)
        data, out = in_shapes[0], out_shapes[0]
        self._check_rank(data, nd + 2, "input 'data'", "batch, channel and the %d spatial "
                         "dims of kernel %s" % (nd, self.kernel))
        self._check_rank(out, 3, "output", "batch, channel * prod(kernel), blocks")
        if out is not None:
            ck = out[1]
            if ck is not None and ck % self.taps:
                raise ShapeError("operator im2col: output has shape %s whose dim 1 is not a "
                                 "multiple of prod(kernel %s) = %d"
                                 % (fmt_shape(out), self.kernel, self.taps))
            self.set_in(in_shapes, 0, (out[0], None if ck is None else ck // self.taps)
                        + (None,) * nd, "output %s" % fmt_shape(out))
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        grid = self._grid(tuple(data[2:]), "input 'data' of spatial size")
        blocks = None if None in grid else math.prod(grid)
        channels = None if data[1] is None else data[1] * self.taps
        self.set_out(out_shapes, 0, (data[0], channels, blocks), "data %s" % fmt_shape(data))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        self._gather(xp, inputs[0], out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            self._scatter(xp, out_grads[0], in_grads[0])


@register
class Col2im(_Blocks):
    """Columns data (N, C * prod(kernel), L) summed into an image (N, C, *output_size).

    output = the adjoint of im2col for an image of size output_size with the same kernel,
    stride, dilate and pad: every column entry adds into the pixel im2col would have read it
    from, and entries that fall on the padding are dropped. L must be the block count im2col
    gives for output_size. Gradient: im2col of the head gradient.
    Shapes: N carries over both ways, C from data's dim 1 (and back); L is fixed by the
    parameters.
    """

    name = "col2im"
    Attrs = Col2imAttrs

    def __init__(self, attrs=None):
        super().__init__(attrs)
        size = self.attrs.output_size
        if len(size) != len(self.kernel):
            raise param_error(self.name, "output_size=%s must have as many dims as kernel=%s"
                               % (size, self.kernel))
        if any(x <= 0 for x in size):
            raise param_error(self.name, "output_size=%s must be positive" % (size,))
        self.output_size = tuple(size)

    def _blocks(self) -> int:
        return math.prod(self._grid(self.output_size, "output_size"))

    def infer_shape(self, in_shapes, out_shapes):
        nd = len(self.kernel)
        data, out = in_shapes[0], out_shapes[0]
        self._check_rank(data, 3, "input 'data'", "batch, channel * prod(kernel), blocks")
        self._check_rank(out, nd + 2, "output", "batch, channel and output_size %s"
                         % (self.output_size,))
        blocks = self._blocks()
        why = "output_size=%s, kernel=%s, stride=%s, dilate=%s and pad=%s" % (
            self.output_size, self.kernel, self.stride, self.dilate, self.pad)
        self.set_in(in_shapes, 0, (None, None, blocks), why)
        data = in_shapes[0]
        ck = data[1]
        if ck is not None and ck % self.taps:
            raise ShapeError("operator col2im: input 'data' has shape %s whose dim 1 is not a "
                             "multiple of prod(kernel %s) = %d"
                             % (fmt_shape(data), self.kernel, self.taps))
        channels: Optional[int] = None if ck is None else ck // self.taps
        self.set_out(out_shapes, 0, (data[0], channels) + self.output_size, why)
        out = out_shapes[0]
        self.set_in(in_shapes, 0, (out[0], None if out[1] is None else out[1] * self.taps,
                                   blocks), "output %s" % fmt_shape(out))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        self._scatter(xp, inputs[0], out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            self._gather(xp, out_grads[0], in_grads[0])
