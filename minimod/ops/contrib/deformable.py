"""Deformable convolution (Dai et al., "Deformable Convolutional Networks", arXiv 1703.06211):
a 2-D convolution whose kernel taps read the input at learned fractional offsets.

The op builds deformable columns, cols[n, c, k, l] = the input channel c of image n
bilinearly sampled at tap k of output position l moved by that tap's offset, then multiplies
them by the weights per channel group exactly as an ordinary convolution multiplies its
im2col columns. Gathers and scatters run over whole channel rows of a (N, groups, H*W,
channels-per-group) copy of the data, one bilinear corner at a time.
"""
from __future__ import annotations

import dataclasses
from typing import Literal, Optional

from ... import backend
from ...base import OpParamError, ShapeError
from ..registry import Op, fmt_shape, register

__all__ = ["DeformableConvolution"]


@dataclasses.dataclass(frozen=True)
class DeformableConvolutionAttrs:
    kernel: tuple[int, ...]
    num_filter: int
    stride: tuple[int, ...] = ()
    dilate: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()
    num_group: int = 1
    num_deformable_group: int = 1
    workspace: int = 1024
    no_bias: bool = False
    layout: Optional[Literal["NCW", "NCHW", "NCDHW"]] = None


def _pair(op: str, name: str, value: tuple, default: int) -> tuple:
    if not value:
        return (default, default)
    if len(value) != 2:
        raise OpParamError("operator %s: %s=%s needs 2 values (2-D kernels only)"
                           % (op, name, value))
    return tuple(value)


@register
class DeformableConvolution(Op):
    """2-D deformable convolution, NCHW.

    data (N, C, H, W), offset (N, dg*2*kh*kw, Ho, Wo), weight (F, C/g, kh, kw), bias (F,)
    -> out (N, F, Ho, Wo), Ho = floor((H + 2*pad - dilate*(kh-1) - 1) / stride) + 1 (W alike);
    g = num_group, dg = num_deformable_group. Channel group d of the input (C/dg channels)
    moves tap k = i*kw + j of output position (ho, wo) by (offset[n, d*2K + 2k, ho, wo],
    offset[n, d*2K + 2k + 1, ho, wo]) (rows, then columns) from its regular place
    (ho*stride - pad + i*dilate, wo*stride - pad + j*dilate). A moved tap inside
    [0, H) x [0, W) reads the bilinear interpolation of its four neighbours, a neighbour
    beyond the last row / column being that row / column itself; outside it reads 0.

    out[n, f, l] = sum_{c in f's group, k} weight[f, c, k] * cols[n, c, k, l] + bias[f].
    Backward: the weight and bias gradients as a convolution's over the columns; the columns'
    gradient flows to data through the bilinear weights and to the offsets through the
    bilinear slopes (d cols / d position), summed over the channels of each deformable group.
    """

    name = "_contrib_DeformableConvolution"
    Attrs = DeformableConvolutionAttrs
    SIGNATURE_INPUTS = ("data", "offset", "weight", "bias")
    PARAM_ORDER = ("kernel", "stride", "dilate", "pad", "num_filter", "num_group",
                   "num_deformable_group", "workspace", "no_bias", "layout")
    #: the index of `weight` among the inputs (`bias` follows it)
    WEIGHT_SLOT = 2

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        if len(a.kernel) != 2 or min(a.kernel) < 1:
            raise OpParamError("operator %s: kernel=%s must be two sizes >= 1 (2-D only)"
                               % (self.name, a.kernel))
        self.stride = _pair(self.name, "stride", a.stride, 1)
        self.dilate = _pair(self.name, "dilate", a.dilate, 1)
        self.pad = _pair(self.name, "pad", a.pad, 0)
        if min(self.stride) < 1 or min(self.dilate) < 1 or min(self.pad) < 0:
            raise OpParamError("operator %s: stride and dilate must be >= 1 and pad >= 0"
                               % self.name)
        if min(a.num_filter, a.num_group, a.num_deformable_group) < 1:
            raise OpParamError("operator %s: num_filter, num_group and num_deformable_group "
                               "must be >= 1" % self.name)
        if a.num_filter % a.num_group:
            raise OpParamError("operator %s: num_filter=%d is not a multiple of num_group=%d"
                               % (self.name, a.num_filter, a.num_group))
        if a.layout not in (None, "NCHW"):
            raise OpParamError("operator %s: layout=%s is not supported (only NCHW)"
                               % (self.name, a.layout))

    def arguments(self) -> list:
        args = ["data", "offset", "weight"]
        return args if self.attrs.no_bias else args + ["bias"]

    # ------------------------------------------------------------------ shapes

    def _out_size(self, size, axis):
        if size is None:
            return None
        k, s, d, p = self.attrs.kernel[axis], self.stride[axis], self.dilate[axis], self.pad[axis]
        return (size + 2 * p - d * (k - 1) - 1) // s + 1

    def infer_shape(self, in_shapes, out_shapes):
        a = self.attrs
        data = in_shapes[0]
        if data is not None and len(data) != 4:
            raise ShapeError("input 'data' has shape %s but %s needs NCHW data"
                             % (fmt_shape(data), self.name))
        channels = None if data is None else data[1]
        weight = in_shapes[self.WEIGHT_SLOT]
        if channels is None and weight is not None and weight[1] is not None:
            channels = weight[1] * a.num_group
        if channels is not None:
            for what, count in (("num_group", a.num_group),
                                ("num_deformable_group", a.num_deformable_group)):
                if channels % count:
                    raise ShapeError("input 'data' has %d channels, not a multiple of %s=%d"
                                     % (channels, what, count))
        kh, kw = a.kernel
        self.set_in(in_shapes, self.WEIGHT_SLOT, (a.num_filter, None if channels is None
                                                  else channels // a.num_group, kh, kw),
                    "num_filter=%d, num_group=%d and kernel %s" % (a.num_filter, a.num_group,
                                                                  a.kernel))
        if not a.no_bias:
            self.set_in(in_shapes, self.WEIGHT_SLOT + 1, (a.num_filter,),
                        "num_filter=%d" % a.num_filter)
        if data is None:
            return in_shapes, out_shapes
        self.set_in(in_shapes, 0, (None, channels, None, None))
        ho, wo = self._out_size(data[2], 0), self._out_size(data[3], 1)
        if (ho is not None and ho < 1) or (wo is not None and wo < 1):
            raise ShapeError("input 'data' has shape %s, too small for kernel %s with dilate %s "
                             "and pad %s" % (fmt_shape(data), a.kernel, self.dilate, self.pad))
        self.set_in(in_shapes, 1, (data[0], a.num_deformable_group * 2 * kh * kw, ho, wo),
                    "num_deformable_group=%d, kernel %s and data %s"
                    % (a.num_deformable_group, a.kernel, fmt_shape(data)))
        self.set_out(out_shapes, 0, (data[0], a.num_filter, ho, wo))
        return in_shapes, out_shapes

    # ------------------------------------------------------------------ sampling

    def _taps(self, xp, offset, height, width, t):
        """For every (image, deformable group, tap, output position): the four bilinear
        corners as flat positions in the H*W plane, their weights (zero outside the map),
        the fractional parts (ly, lx) and the in-map mask. Arrays (N, dg, K, L)."""
        a = self.attrs
        n, _, ho, wo = offset.shape
        kh, kw = a.kernel
        (sh, sw), (dh, dw), (ph, pw) = self.stride, self.dilate, self.pad
        off = offset.reshape(n, a.num_deformable_group, kh * kw, 2, ho, wo)
        tap_i = xp.repeat(xp.arange(kh), kw)[:, None, None]  # (K, 1, 1)
        tap_j = xp.tile(xp.arange(kw), kh)[:, None, None]
        row0 = (xp.arange(ho) * sh - ph)[None, :, None]  # (1, Ho, 1)
        col0 = (xp.arange(wo) * sw - pw)[None, None, :]
        # coordinates relative to the window's corner, as the kernels form them
        rel_y = (tap_i * dh).astype(t) + off[:, :, :, 0]
        rel_x = (tap_j * dw).astype(t) + off[:, :, :, 1]
        abs_y = (row0 + tap_i * dh).astype(t) + off[:, :, :, 0]
        abs_x = (col0 + tap_j * dw).astype(t) + off[:, :, :, 1]
        inside = (abs_y >= 0) & (abs_y < height) & (abs_x >= 0) & (abs_x < width)
        fy, fx = xp.floor(rel_y), xp.floor(rel_x)
        y0 = fy.astype("int64") + row0
        x0 = fx.astype("int64") + col0
        ly, lx = rel_y - fy, rel_x - fx
        edge_y, edge_x = y0 >= height - 1, x0 >= width - 1
        y0 = xp.clip(y0, 0, height - 1)
        x0 = xp.clip(x0, 0, width - 1)
        y1 = xp.where(edge_y, y0, y0 + 1)
        x1 = xp.where(edge_x, x0, x0 + 1)
        zero = t(0)
        ly = xp.where(edge_y | ~inside, zero, ly)
        lx = xp.where(edge_x | ~inside, zero, lx)
        hy, hx = t(1) - ly, t(1) - lx
        pos = [y0 * width + x0, y0 * width + x1, y1 * width + x0, y1 * width + x1]
        weight = [xp.where(inside, w, zero) for w in (hy * hx, hy * lx, ly * hx, ly * lx)]
        shape = (n, a.num_deformable_group, kh * kw, ho * wo)
        return ([p.reshape(shape) for p in pos], [w.reshape(shape) for w in weight],
                ly.reshape(shape), lx.reshape(shape), inside.reshape(shape))

    def _rows(self, xp, data):
        """data as (N, dg, H*W, C/dg): each (image, group, position) a contiguous row."""
        n, c, h, w = data.shape
        dg = self.attrs.num_deformable_group
        return xp.ascontiguousarray(data.reshape(n, dg, c // dg, h * w).transpose(0, 1, 3, 2))

    @staticmethod
    def _corner_values(xp, rows, pos):
        n, dg = pos.shape[:2]
        return rows[xp.arange(n)[:, None, None, None], xp.arange(dg)[None, :, None, None], pos]

    def _columns(self, xp, data, pos, weight):
        """(N, C, K, L) deformable columns."""
        rows = self._rows(xp, data)
        cols = None
        for p, w in zip(pos, weight):
            part = self._corner_values(xp, rows, p) * w[..., None]  # (N, dg, K, L, cpg)
            cols = part if cols is None else cols + part
        n, dg, k, l_, cpg = cols.shape
        return cols.transpose(0, 1, 4, 2, 3).reshape(n, dg * cpg, k, l_)

    # ------------------------------------------------------------------ compute

    def _grouped_weight(self, weight):
        g = self.attrs.num_group
        f = weight.shape[0]
        return weight.reshape(g, f // g, -1)  # (G, F/G, C/G * K)

    def forward(self, xp, inputs, aux, out, is_train):
        data, offset, weight = inputs[:3]
        n, c, height, width = data.shape
        t = data.dtype.type
        pos, wts, _, _, _ = self._taps(xp, offset, height, width, t)
        cols = self._columns(xp, data, pos, wts)
        self._convolve(xp, cols, weight, None if self.attrs.no_bias else inputs[3], out[0])

    def _convolve(self, xp, cols, weight, bias, out):
        """out (N, F, Ho, Wo) = the grouped product of weight and the (N, C, K, L) columns,
        plus bias (or None)."""
        n, g = cols.shape[0], self.attrs.num_group
        cols = cols.reshape(n, g, -1, cols.shape[-1])  # (N, G, C/G * K, L)
        result = xp.einsum("gfk,ngkl->ngfl", self._grouped_weight(weight), cols)
        result = result.reshape(out.shape)
        if bias is not None:
            result = result + bias[None, :, None, None]
        xp.copyto(out, result)

    def _scatter_rows(self, xp, d_rows, pos, wts, d_data):
        """d_data (N, C, H, W) = the adjoint of the corner gathers: d_rows (N, dg, K, L, C/dg),
        the columns' gradient in the gathered rows' layout, goes to each corner's position
        times that corner's weight."""
        n, c, height, width = d_data.shape
        dg = self.attrs.num_deformable_group
        rows_grad = xp.zeros((n * dg * height * width, c // dg), dtype=d_data.dtype)
        base = (xp.arange(n)[:, None, None, None] * dg
                + xp.arange(dg)[None, :, None, None]) * (height * width)
        for p, w in zip(pos, wts):
            backend.scatter_add(xp, rows_grad, (base + p).reshape(-1),
                                (d_rows * w[..., None]).reshape(-1, c // dg))
        rows_grad = rows_grad.reshape(n, dg, height * width, c // dg)
        xp.copyto(d_data, rows_grad.transpose(0, 1, 3, 2).reshape(d_data.shape))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        a = self.attrs
        data, offset, weight = inputs[:3]
        d_data, d_offset, d_weight = in_grads[:3]
        n, c, height, width = data.shape
        t = data.dtype.type
        g = a.num_group
        head = out_grads[0].reshape(n, g, a.num_filter // g, -1)  # (N, G, F/G, L)
        if not a.no_bias and in_grads[3] is not None:
            xp.copyto(in_grads[3], out_grads[0].sum(axis=(0, 2, 3)))
        if d_data is None and d_offset is None and d_weight is None:
            return
        pos, wts, ly, lx, inside = self._taps(xp, offset, height, width, t)
        if d_weight is not None:
            cols = self._columns(xp, data, pos, wts).reshape(n, g, -1, head.shape[-1])
            xp.copyto(d_weight, xp.einsum("ngfl,ngkl->gfk", head, cols).reshape(weight.shape))
        if d_data is None and d_offset is None:
            return
        dg = a.num_deformable_group
        k = a.kernel[0] * a.kernel[1]
        d_cols = xp.einsum("gfk,ngfl->ngkl", self._grouped_weight(weight), head)
        # (N, C, K, L) -> (N, dg, K, L, C/dg), the layout of the gathered rows
        d_cols = d_cols.reshape(n, dg, c // dg, k, -1).transpose(0, 1, 3, 4, 2)
        if d_data is not None:
            self._scatter_rows(xp, d_cols, pos, wts, d_data)
        if d_offset is not None:
            rows = self._rows(xp, data)
            v00, v01, v10, v11 = (self._corner_values(xp, rows, p) for p in pos)
            one = t(1)
            hy, hx = (one - ly)[..., None], (one - lx)[..., None]
            slope_y = hx * (v10 - v00) + lx[..., None] * (v11 - v01)
            slope_x = hy * (v01 - v00) + ly[..., None] * (v11 - v10)
            gy = xp.where(inside, (slope_y * d_cols).sum(axis=-1), t(0))
            gx = xp.where(inside, (slope_x * d_cols).sum(axis=-1), t(0))
            grad = xp.stack([gy, gx], axis=3)  # (N, dg, K, 2, L)
            xp.copyto(d_offset, grad.reshape(d_offset.shape))
