"""Modulated deformable convolution (Zhu et al., "Deformable ConvNets v2", arXiv 1811.11168):
a deformable convolution whose every kernel tap also has a learned weight, the mask.

It shares `DeformableConvolution`'s parameters, shape contract, column layout and GEMMs
(minimod/ops/contrib/deformable.py) and differs in two places: the columns are the bilinear
samples times the mask, and the sampling pads the map with zeros instead of clamping to its
edge, as MXNet's two kernels do.
"""
from __future__ import annotations

import dataclasses
from typing import Literal, Optional

from ...base import OpParamError, ShapeError
from ..registry import fmt_shape, register
from .deformable import DeformableConvolution

__all__ = ["ModulatedDeformableConvolution"]


@dataclasses.dataclass(frozen=True)
class ModulatedDeformableConvolutionAttrs:
    kernel: tuple[int, ...]
    num_filter: int
    stride: tuple[int, ...] = ()
    dilate: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()
    num_group: int = 1
    num_deformable_group: int = 1
    workspace: int = 1024
    no_bias: bool = False
    im2col_step: int = 64
    layout: Optional[Literal["NCW", "NCHW", "NCDHW"]] = None


@dataclasses.dataclass(frozen=True)
class _Taps:
    """Where every (image, deformable group, tap, output position) samples, arrays
    (N, dg, K, L): per bilinear corner its flat position in the H*W plane (clamped into the
    map so that it can be gathered), its weight and whether it lies in the map (`valid`,
    False for every corner of a tap outside (-1, H) x (-1, W)); and the fractional parts
    (ly, lx) of the sampling point."""

    pos: list
    weight: list
    valid: list
    ly: object
    lx: object


@register
class ModulatedDeformableConvolution(DeformableConvolution):
    """2-D modulated deformable convolution (DCNv2), NCHW.

    data (N, C, H, W), offset (N, dg*2*K, Ho, Wo), mask (N, dg*K, Ho, Wo),
    weight (F, C/g, kh, kw), bias (F,) -> out (N, F, Ho, Wo); K = kh*kw, Ho and Wo as a
    convolution's, g = num_group, dg = num_deformable_group.

    Tap k = i*kw + j of output position (ho, wo) of channel group d (C/dg channels) samples
    the point y = ho*stride - pad + i*dilate + offset[n, d*2K + 2k, ho, wo],
    x = wo*stride - pad + j*dilate + offset[n, d*2K + 2k + 1, ho, wo]. A point inside
    (-1, H) x (-1, W) reads the bilinear interpolation of its four neighbours, a neighbour
    outside the map counting as 0; a point outside reads 0. The column is that sample s times
    mask[n, d*K + k, ho, wo], and
        out[n, f, l] = sum_{c in f's group, k} weight[f, c, k] * s[n, c, k, l] * mask[.., k, l]
                       + bias[f].
    Backward: weight and bias as a convolution's over the columns; with dcol the columns'
    gradient, d mask = sum over the group's channels of s * dcol; dcol * mask flows to data
    through the bilinear weights and to the offsets through the bilinear slopes.

    im2col_step, MXNet's count of images per column buffer, changes no number; as in MXNet
    the batch must be a multiple of min(im2col_step, N).
    """

    name = "_contrib_ModulatedDeformableConvolution"
    Attrs = ModulatedDeformableConvolutionAttrs
    SIGNATURE_INPUTS = ("data", "offset", "mask", "weight", "bias")
    PARAM_ORDER = ("kernel", "stride", "dilate", "pad", "num_filter", "num_group",
                   "num_deformable_group", "workspace", "no_bias", "im2col_step", "layout")
    WEIGHT_SLOT = 3

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.im2col_step < 1:
            raise OpParamError("operator %s: im2col_step=%d must be >= 1"
                               % (self.name, self.attrs.im2col_step))

    def arguments(self) -> list:
        args = ["data", "offset", "mask", "weight"]
        return args if self.attrs.no_bias else args + ["bias"]

    def infer_shape(self, in_shapes, out_shapes):
        in_shapes, out_shapes = super().infer_shape(in_shapes, out_shapes)
        a = self.attrs
        offset, batch = in_shapes[1], None
        if offset is not None:
            batch = offset[0]
            taps = a.num_deformable_group * a.kernel[0] * a.kernel[1]
            self.set_in(in_shapes, 2, (offset[0], taps, offset[2], offset[3]),
                        "num_deformable_group=%d, kernel %s and offset %s"
                        % (a.num_deformable_group, a.kernel, fmt_shape(offset)))
        if batch and batch % min(a.im2col_step, batch):
            raise ShapeError("input 'data' has batch size %d but %s needs a multiple of "
                             "im2col_step=%d (or fewer images)" % (batch, self.name,
                                                                  a.im2col_step))
        return in_shapes, out_shapes

    # ------------------------------------------------------------------ sampling

    def _zero_padded_taps(self, xp, offset, height, width, t) -> _Taps:
        """The sampling points of every tap, as DCNv2 samples: a map padded with zeros
        (`DeformableConvolution._taps` clamps to the map's edge instead)."""
        a = self.attrs
        n, _, ho, wo = offset.shape
        kh, kw = a.kernel
        (sh, sw), (dh, dw), (ph, pw) = self.stride, self.dilate, self.pad
        dg = a.num_deformable_group
        off = offset.reshape(n, dg, kh * kw, 2, ho, wo)
        tap_i = xp.repeat(xp.arange(kh), kw)[:, None, None]  # (K, 1, 1)
        tap_j = xp.tile(xp.arange(kw), kh)[:, None, None]
        row0 = (xp.arange(ho) * sh - ph)[None, :, None]  # (1, Ho, 1)
        col0 = (xp.arange(wo) * sw - pw)[None, None, :]
        y = (row0 + tap_i * dh).astype(t) + off[:, :, :, 0]  # (N, dg, K, Ho, Wo)
        x = (col0 + tap_j * dw).astype(t) + off[:, :, :, 1]
        inside = (y > -1) & (x > -1) & (y < height) & (x < width)
        # clipping moves only points outside, whose corners all read 0, and keeps the
        # integer conversion of far-away points in range
        fy, fx = xp.floor(xp.clip(y, -1, height)), xp.floor(xp.clip(x, -1, width))
        ly, lx = y - fy, x - fx
        y0, x0 = fy.astype("int64"), fx.astype("int64")
        one = t(1)
        shape = (n, dg, kh * kw, ho * wo)
        pos, weight, valid = [], [], []
        for dy, wy in ((0, one - ly), (1, ly)):
            for dx, wx in ((0, one - lx), (1, lx)):
                yc, xc = y0 + dy, x0 + dx
                ok = inside & (yc >= 0) & (yc < height) & (xc >= 0) & (xc < width)
                flat = xp.clip(yc, 0, height - 1) * width + xp.clip(xc, 0, width - 1)
                pos.append(flat.reshape(shape))
                weight.append(xp.where(ok, wy * wx, t(0)).reshape(shape))
                valid.append(ok.reshape(shape))
        return _Taps(pos, weight, valid, ly.reshape(shape), lx.reshape(shape))

    def _samples(self, xp, data, taps):
        """(N, dg, C/dg, K, L): the bilinear samples of every channel, before the mask."""
        n, c = data.shape[:2]
        dg = self.attrs.num_deformable_group
        cols = self._columns(xp, data, taps.pos, taps.weight)
        return cols.reshape(n, dg, c // dg, cols.shape[2], cols.shape[3])

    def _mask(self, mask):
        n, _, ho, wo = mask.shape
        dg = self.attrs.num_deformable_group
        return mask.reshape(n, dg, 1, -1, ho * wo)  # broadcasts over a group's channels

    # ------------------------------------------------------------------ compute

    def forward(self, xp, inputs, aux, out, is_train):
        data, offset, mask, weight = inputs[:4]
        n, c, height, width = data.shape
        taps = self._zero_padded_taps(xp, offset, height, width, data.dtype.type)
        cols = self._samples(xp, data, taps) * self._mask(mask)
        cols = cols.reshape(n, c, cols.shape[3], cols.shape[4])
        self._convolve(xp, cols, weight, None if self.attrs.no_bias else inputs[4], out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        a = self.attrs
        data, offset, mask, weight = inputs[:4]
        d_data, d_offset, d_mask, d_weight = in_grads[:4]
        n, c, height, width = data.shape
        g, dg = a.num_group, a.num_deformable_group
        head = out_grads[0].reshape(n, g, a.num_filter // g, -1)  # (N, G, F/G, L)
        if not a.no_bias and in_grads[4] is not None:
            xp.copyto(in_grads[4], out_grads[0].sum(axis=(0, 2, 3)))
        if d_data is None and d_offset is None and d_mask is None and d_weight is None:
            return
        taps = self._zero_padded_taps(xp, offset, height, width, data.dtype.type)
        m = self._mask(mask)
        samples = None
        if d_weight is not None or d_mask is not None:
            samples = self._samples(xp, data, taps)
        if d_weight is not None:
            cols = (samples * m).reshape(n, g, -1, head.shape[-1])
            xp.copyto(d_weight, xp.einsum("ngfl,ngkl->gfk", head, cols).reshape(weight.shape))
        if d_data is None and d_offset is None and d_mask is None:
            return
        k = a.kernel[0] * a.kernel[1]
        d_cols = xp.einsum("gfk,ngfl->ngkl", self._grouped_weight(weight), head)
        d_cols = d_cols.reshape(n, dg, c // dg, k, -1)
        if d_mask is not None:
            xp.copyto(d_mask, (samples * d_cols).sum(axis=2).reshape(d_mask.shape))
        # the gradient of the unmasked samples, in the gathered rows' (N, dg, K, L, C/dg)
        d_rows = (d_cols * m).transpose(0, 1, 3, 4, 2)
        if d_data is not None:
            self._scatter_rows(xp, d_rows, taps.pos, taps.weight, d_data)
        if d_offset is not None:
            self._offset_grad(xp, data, taps, d_rows, d_offset)

    def _offset_grad(self, xp, data, taps, d_rows, d_offset):
        """d_offset = the samples' slopes along y and x (corners outside the map being 0)
        against their gradient, summed over each deformable group's channels."""
        rows = self._rows(xp, data)
        v00, v01, v10, v11 = (self._corner_values(xp, rows, p) * ok[..., None]
                              for p, ok in zip(taps.pos, taps.valid))
        one = data.dtype.type(1)
        ly, lx = taps.ly[..., None], taps.lx[..., None]
        slope_y = (one - lx) * (v10 - v00) + lx * (v11 - v01)
        slope_x = (one - ly) * (v01 - v00) + ly * (v11 - v10)
        gy = (slope_y * d_rows).sum(axis=-1)
        gx = (slope_x * d_rows).sum(axis=-1)
        grad = xp.stack([gy, gx], axis=3)  # (N, dg, K, 2, L)
        xp.copyto(d_offset, grad.reshape(d_offset.shape))
