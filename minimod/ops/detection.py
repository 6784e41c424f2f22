"""Layers of detection and segmentation networks: UpSampling (nearest or bilinear enlargement
of feature maps) and ROIPooling (max pooling of regions of interest)."""
from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Literal

from .. import backend
from ..base import OpParamError, ShapeError
from .convolution import Deconvolution
from .registry import Op, VariadicOp, fmt_shape, register

__all__ = ["UpSampling", "ROIPooling"]


@dataclasses.dataclass(frozen=True)
class UpSamplingAttrs:
    scale: int
    sample_type: Literal["nearest", "bilinear"]  # required, as in MXNet
    num_filter: int = 0
    multi_input_mode: Literal["concat", "sum"] = "concat"
    num_args: int = 1
    workspace: int = 512


@register
class UpSampling(VariadicOp):
    """Enlarge NCHW feature maps by an integer `scale`.

    'nearest': each of the num_args inputs (arg0, arg1, ...) is repeated up to arg0's size
    times scale (so input i needs an integer factor scale * H0 / Hi), and the results are
    concatenated along the channels or summed ('multi_input_mode'); the gradient sums each
    block back. 'bilinear': one input `data` and a learnt `weight` of shape (C, 1, k, k),
    k = 2 * scale - scale % 2 (initialise it with mx.init.Bilinear): the per-channel
    transposed convolution MXNet runs for it, stride scale, pad ceil((scale - 1) / 2),
    num_filter = num_group = C.
    """

    name = "UpSampling"
    Attrs = UpSamplingAttrs

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        if a.scale < 1:
            raise OpParamError("operator UpSampling: scale must be >= 1, got %d" % a.scale)
        self._deconv = None
        if a.sample_type == "bilinear":
            if a.num_filter < 1:
                raise OpParamError("operator UpSampling: sample_type='bilinear' needs "
                                   "num_filter (the channels)")
            k = 2 * a.scale - a.scale % 2
            pad = math.ceil((a.scale - 1) / 2)
            self._deconv = Deconvolution(dict(
                kernel=(k, k), stride=(a.scale, a.scale), pad=(pad, pad),
                num_filter=a.num_filter, num_group=a.num_filter, no_bias=True))
            self._args = ["data", "weight"]
            self.backward_inputs = self._deconv.backward_inputs
            self.backward_outputs = self._deconv.backward_outputs
        else:
            self.backward_outputs = ()

    def infer_shape(self, in_shapes: list, out_shapes: list):
        if self._deconv is not None:
            return self._deconv.infer_shape(in_shapes, out_shapes)
        first, scale = in_shapes[0], self.attrs.scale
        if first is None or any(s is None for s in in_shapes):
            return in_shapes, out_shapes
        for i, shape in enumerate(in_shapes):
            if len(shape) != 4 or shape[0] != first[0] or (first[2] * scale) % shape[2] or \
                    (first[3] * scale) % shape[3] or first[2] * shape[3] != first[3] * shape[2]:
                raise ShapeError("input 'arg%d' has shape %s but UpSampling needs NCHW inputs "
                                 "that integer factors enlarge to arg0's %s times scale=%d"
                                 % (i, fmt_shape(shape), fmt_shape(first), scale))
        channels = [shape[1] for shape in in_shapes]
        if self.attrs.multi_input_mode == "sum" and len(set(channels)) > 1:
            raise ShapeError("UpSampling multi_input_mode='sum' needs inputs with one channel "
                             "count, got %s" % channels)
        c = channels[0] if self.attrs.multi_input_mode == "sum" else sum(channels)
        self.set_out(out_shapes, 0, (first[0], c, first[2] * scale, first[3] * scale))
        return in_shapes, out_shapes

    @staticmethod
    def _blocks(part, shape):
        """`part` of the output (a view) as (N, C, H, f, W, f) over an input of `shape`."""
        f = part.shape[2] // shape[2]
        return part.reshape(shape[0], shape[1], shape[2], f, shape[3], f)

    def _parts(self, out, inputs):
        """Per input, the part of the output it fills (its channels in 'concat' mode)."""
        if self.attrs.multi_input_mode == "sum":
            return [out] * len(inputs)
        bounds = list(itertools.accumulate(x.shape[1] for x in inputs))
        return [out[:, hi - x.shape[1]:hi] for x, hi in zip(inputs, bounds)]

    def forward(self, xp, inputs, aux, out, is_train):
        if self._deconv is not None:
            self._deconv.forward(xp, inputs, aux, out, is_train)
            return
        summing = self.attrs.multi_input_mode == "sum" and len(inputs) > 1
        if summing:
            out[0].fill(0)
        for x, part in zip(inputs, self._parts(out[0], inputs)):
            blocks = self._blocks(part, x.shape)
            if summing:
                blocks += x[:, :, :, None, :, None]
            else:
                blocks[...] = x[:, :, :, None, :, None]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if self._deconv is not None:
            self._deconv.backward(xp, out_grads, inputs, outputs, in_grads, aux)
            return
        for x, part, dx in zip(inputs, self._parts(out_grads[0], inputs), in_grads):
            if dx is not None:
                xp.sum(self._blocks(part, x.shape), axis=(3, 5), out=dx)


# ----------------------------------------------------------------------------- ROIPooling

@dataclasses.dataclass(frozen=True)
class ROIPoolingAttrs:
    pooled_size: tuple[int, ...]
    spatial_scale: float


@register
class ROIPooling(Op):
    """Max pooling of regions of interest (Fast R-CNN): each row of `rois`, (batch index, x1,
    y1, x2, y2) in input pixels, is scaled by spatial_scale and rounded to the feature map,
    split into pooled_size bins (floor/ceil edges, as MXNet forms them in the data's type),
    and each bin's maximum taken per channel; an empty bin (outside the map) gives 0. Out
    (R, C, ph, pw); the hidden output `maxidx` holds each maximum's flat position in data
    (-1 for empty bins), as MXNet's does, and the data's gradient goes back to it; rois get
    none.

    The bins are gathered ROI chunk by ROI chunk into padded windows, so memory stays
    bounded whatever the number of ROIs."""

    name = "ROIPooling"
    Attrs = ROIPoolingAttrs
    ARGUMENTS = ("data", "rois")
    OUTPUTS = ("output", "maxidx")
    backward_inputs = ()
    backward_outputs = (1,)
    _CHUNK_ELEMENTS = 1 << 22  # gathered values per chunk of ROIs

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if len(self.attrs.pooled_size) != 2 or min(self.attrs.pooled_size) < 1:
            raise OpParamError("operator ROIPooling: pooled_size must be two sizes >= 1, got %s"
                               % (self.attrs.pooled_size,))

    def num_visible_outputs(self) -> int:
        return 1

    def infer_type(self, in_types, out_types):
        in_types, outs = super().infer_type(in_types, [None])
        return in_types, [outs[0], "int32"]  # maxidx is int32, as in MXNet

    def infer_shape(self, in_shapes, out_shapes):
        data, rois = in_shapes
        if data is not None and len(data) != 4:
            raise ShapeError("input 'data' has shape %s but ROIPooling needs NCHW"
                             % fmt_shape(data))
        if rois is not None and (len(rois) != 2 or rois[1] not in (None, 5)):
            raise ShapeError("input 'rois' has shape %s but ROIPooling needs (R, 5) rows of "
                             "(batch index, x1, y1, x2, y2)" % fmt_shape(rois))
        if data is not None and rois is not None:
            shape = (rois[0], data[1]) + tuple(self.attrs.pooled_size)
            self.set_out(out_shapes, 0, shape)
            self.set_out(out_shapes, 1, shape)
        return in_shapes, out_shapes

    def _bins(self, xp, rois, height: int, width: int, dtype):
        """Per ROI: batch index and the (start, end) rows and columns of every bin."""
        t = dtype.type
        scaled = rois[:, 1:5].astype(dtype) * t(self.attrs.spatial_scale)
        coords = (xp.floor(xp.abs(scaled) + t(0.5)) * xp.sign(scaled)).astype("int64")
        x1, y1, x2, y2 = coords.T
        ph, pw = self.attrs.pooled_size

        def edges(start, end, bins, limit):
            size = xp.maximum(end - start + 1, 1).astype(dtype) / t(bins)
            steps = xp.arange(bins, dtype=dtype)
            lo = xp.floor(steps[None, :] * size[:, None]).astype("int64") + start[:, None]
            hi = xp.ceil((steps[None, :] + t(1)) * size[:, None]).astype("int64") \
                + start[:, None]
            return xp.clip(lo, 0, limit), xp.clip(hi, 0, limit)

        return (rois[:, 0].astype("int64"), edges(y1, y2, ph, height),
                edges(x1, x2, pw, width))

    def forward(self, xp, inputs, aux, out, is_train):
        data, rois = inputs
        _, c, height, width = data.shape
        batch, (h_lo, h_hi), (w_lo, w_hi) = self._bins(xp, rois, height, width, data.dtype)
        kh = int(xp.max(h_hi - h_lo)) if h_lo.size else 0
        kw = int(xp.max(w_hi - w_lo)) if w_lo.size else 0
        ph, pw = self.attrs.pooled_size
        out[0].fill(0)
        out[1].fill(-1)
        if not rois.shape[0] or kh <= 0 or kw <= 0:
            return
        chunk = max(1, self._CHUNK_ELEMENTS // max(1, c * ph * pw * kh * kw))
        for lo in range(0, rois.shape[0], chunk):
            sel = slice(lo, lo + chunk)
            rows = h_lo[sel][:, :, None] + xp.arange(kh)  # (r, ph, kh)
            cols = w_lo[sel][:, :, None] + xp.arange(kw)  # (r, pw, kw)
            valid = ((rows < h_hi[sel][:, :, None])[:, :, :, None, None]
                     & (cols < w_hi[sel][:, :, None])[:, None, None, :, :])
            window = data[batch[sel][:, None, None, None, None], :,
                          xp.minimum(rows, height - 1)[:, :, :, None, None],
                          xp.minimum(cols, width - 1)[:, None, None, :, :]]
            # window: (r, ph, kh, pw, kw, C) -> (r, C, ph, pw, kh * kw)
            window = xp.where(valid[..., None], window, -xp.inf).transpose(0, 5, 1, 3, 2, 4)
            window = window.reshape(window.shape[:4] + (kh * kw,))
            best = xp.argmax(window, axis=-1)  # (r, C, ph, pw), first maximum in the bin
            value = xp.take_along_axis(window, best[..., None], axis=-1)[..., 0]
            empty = ~valid.any(axis=(2, 4))[:, None, :, :]  # (r, 1, ph, pw)
            r_ix = xp.arange(rows.shape[0])[:, None, None, None]
            at_h = rows[r_ix, xp.arange(ph)[None, None, :, None], best // kw]
            at_w = cols[r_ix, xp.arange(pw)[None, None, None, :], best % kw]
            plane = batch[sel][:, None, None, None] * c + xp.arange(c)[None, :, None, None]
            out[0][sel] = xp.where(empty, 0, value)
            out[1][sel] = xp.where(empty, -1, (plane * height + at_h) * width + at_w)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx, d_rois = in_grads
        if d_rois is not None:
            d_rois.fill(0)
        if dx is None:
            return
        maxidx, g = outputs[1], out_grads[0]
        dx.fill(0)
        hit = maxidx >= 0
        backend.scatter_add(xp, dx.reshape(-1), maxidx[hit].astype("int64"), g[hit])
