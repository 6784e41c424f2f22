"""ROI Align for two-stage detectors: ROIAlign (Mask R-CNN) and RROIAlign (rotated boxes).

Both read `data` (N, C, H, W) and `rois`: (R, 5) rows of (batch index, x1, y1, x2, y2)
in input-image pixels for ROIAlign, (R, 6) rows of (batch index, centre x, centre y, width,
height, angle in degrees) for RROIAlign, scaled to the feature map by `spatial_scale`, and
write one (R, C_out, ph, pw) block per ROI: each bin is the mean of bilinear samples on a
regular grid. The sums run through the shared ROI pooling core of `_util` (`gather_bins`,
`scatter_bins`): this module only chooses each bin's sample positions and weights.
Coordinates are computed in the data's dtype, as MXNet's kernels do, so float32 results
round as MXNet's do. ROIs are processed in chunks (`roi_chunks`) so the gathered samples stay
within a fixed number of elements whatever the number of ROIs.

The rois input gets a zero gradient, as in MXNet; RROIAlign has no gradient at all.
"""
from __future__ import annotations

import dataclasses
import math

from ...base import MXNetError, OpParamError, ShapeError
from ..registry import Op, register
from ._util import check_data_rois, checked_batch, gather_bins, roi_chunks, scatter_bins

__all__ = ["ROIAlign", "RROIAlign"]


# ----------------------------------------------------------------------------- sampling

def _bilinear(xp, y, x, height: int, width: int):
    """Caffe2's bilinear sample: flat positions (..., 4) and weights (..., 4) of the corners
    (y0, x0), (y0, x1), (y1, x0), (y1, x1).

    A point outside [-1, height] x [-1, width] gives zero weights; coordinates below 0 are
    read at 0, and at or beyond the last row / column they are read there (no interpolation
    toward the outside)."""
    t = y.dtype.type
    empty = (y < -1) | (y > height) | (x < -1) | (x > width)
    y = xp.maximum(y, t(0))
    x = xp.maximum(x, t(0))
    corners = []
    for v, size in ((y, height), (x, width)):
        low = v.astype("int64")
        edge = low >= size - 1
        low = xp.where(edge, size - 1, low)
        high = xp.where(edge, size - 1, low + 1)
        frac = xp.where(edge, t(0), v - low.astype(v.dtype))
        corners.append((low, high, t(1) - frac, frac))
    y0, y1, hy, ly = corners[0]
    x0, x1, hx, lx = corners[1]
    pos = xp.stack([y0 * width + x0, y0 * width + x1, y1 * width + x0, y1 * width + x1], -1)
    weight = xp.stack([hy * hx, hy * lx, ly * hx, ly * lx], -1)
    return pos, xp.where(empty[..., None], t(0), weight)


def _sample_grid(xp, start, size, bins: int, grid, t):
    """Sample coordinates along one axis: (R, bins, G) = start + b*bin + (i + 0.5)*bin/grid
    for i < grid[r], with G the largest grid; also the mask of the real samples."""
    bin_size = size / t(bins)
    steps = xp.arange(int(grid.max()), dtype=t)
    coord = (start[:, None, None] + xp.arange(bins, dtype=t)[None, :, None] * bin_size[:, None,
                                                                                         None]
             + (steps + t(0.5))[None, None, :] * bin_size[:, None, None]
             / grid.astype(t)[:, None, None])
    return coord, steps[None, None, :] < grid[:, None, None]


def _grid_size(xp, size, bins: int, ratio: int, t):
    """Samples per bin along one axis: `ratio` if positive, else ceil(size / bins)."""
    if ratio > 0:
        return xp.full(size.shape, ratio, dtype="int64")
    return xp.ceil(size / t(bins)).astype("int64")


# ----------------------------------------------------------------------------- ROIAlign

@dataclasses.dataclass(frozen=True)
class ROIAlignAttrs:
    pooled_size: tuple[int, ...]
    spatial_scale: float
    sample_ratio: int = -1
    position_sensitive: bool = False
    aligned: bool = False


class _AlignBase(Op):
    """Shared by ROIAlign and RROIAlign: average of bilinear samples on a regular grid.

    Bin (ph, pw) of a ROI of height h and width w (feature-map units) is h/PH x w/PW; it is
    sampled on a grid of g_h x g_w points at the centres of equal sub-cells, g = the sampling
    ratio when positive, else ceil(h / PH) (ceil(w / PW)); each sample is Caffe2's bilinear
    interpolation (`_bilinear`) and the bin's value is their mean. The loop over ROIs is
    chunked; within a chunk every ROI's grid is padded to the largest one and masked."""

    ARGUMENTS = ("data", "rois")
    backward_inputs = (1,)
    backward_outputs = ()
    ROI_COLS = 5

    def __init__(self, attrs=None):
        super().__init__(attrs)
        size = self.attrs.pooled_size
        if len(size) != 2 or min(size) < 1:
            raise OpParamError("operator %s: pooled_size must be two sizes >= 1, got %s"
                               % (self.name, size))

    def _out_channels(self, channels: int) -> int:
        return channels

    def infer_shape(self, in_shapes, out_shapes):
        data, rois = check_data_rois(self, in_shapes, self.ROI_COLS, self.ROI_TEXT)
        if data is not None and rois is not None:
            channels = None if data[1] is None else self._out_channels(data[1])
            self.set_out(out_shapes, 0, (rois[0], channels) + tuple(self.attrs.pooled_size))
        return in_shapes, out_shapes

    def _channel_map(self, xp, out_channels: int):
        return xp.broadcast_to(xp.arange(out_channels)[:, None], (out_channels, self._bins()))

    def _bins(self) -> int:
        return self.attrs.pooled_size[0] * self.attrs.pooled_size[1]

    def _chunk_samples(self, xp, rois, num_images, height, width, t):
        """(batch, pos (r, P, S), weight (r, P, S)) for a chunk of ROIs."""
        raise NotImplementedError

    def _sides(self, xp, rois, t):
        """(width, height) of each ROI on the feature map, as the samples use them."""
        raise NotImplementedError

    def _ratio(self) -> int:
        raise NotImplementedError

    def _per_roi(self, xp, rois, chan, t) -> int:
        """Gathered values per ROI at the largest sample grid: the chunking budget."""
        if not rois.shape[0]:
            return 1
        (ph, pw), ratio = self.attrs.pooled_size, self._ratio()
        roi_w, roi_h = self._sides(xp, rois, t)
        grid = (int(_grid_size(xp, roi_h, ph, ratio, t).max())
                * int(_grid_size(xp, roi_w, pw, ratio, t).max()))
        return chan.size * grid * 4

    def forward(self, xp, inputs, aux, out, is_train):
        data, rois = inputs
        n, c, height, width = data.shape
        t = data.dtype.type
        chan = self._channel_map(xp, out[0].shape[1])
        for sel in roi_chunks(rois.shape[0], self._per_roi(xp, rois, chan, t)):
            batch, pos, weight = self._chunk_samples(xp, rois[sel], n, height, width, t)
            out[0][sel] = gather_bins(xp, data, batch, chan, pos, weight).reshape(out[0][sel].shape)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx, d_rois = in_grads
        if d_rois is not None:
            d_rois.fill(0)
        if dx is None:
            return
        rois = inputs[1]
        n, c, height, width = dx.shape
        t = dx.dtype.type
        head = out_grads[0].reshape(out_grads[0].shape[:2] + (-1,))
        chan = self._channel_map(xp, head.shape[1])
        dx.fill(0)
        for sel in roi_chunks(rois.shape[0], self._per_roi(xp, rois, chan, t)):
            batch, pos, weight = self._chunk_samples(xp, rois[sel], n, height, width, t)
            scatter_bins(xp, dx, batch, chan, pos, weight.astype(dx.dtype), head[sel])


@register
class ROIAlign(_AlignBase):
    """ROI Align (Mask R-CNN): for ROI (b, x1, y1, x2, y2), the corners times spatial_scale
    (minus 0.5 when `aligned`, the half-pixel-centred convention) span the bins; without
    `aligned` a ROI narrower than one pixel is widened to 1 (with it, MXNet requires positive
    sizes). Sampling and averaging as in `_AlignBase`.

    data (N, C, H, W), rois (R, 5) -> out (R, C, PH, PW); with `position_sensitive`, out
    (R, C/(PH*PW), PH, PW) where bin (ph, pw) of output channel c reads input channel
    c*PH*PW + ph*PW + pw (R-FCN style). A ROI with a negative batch index gives zeros (and
    sends no gradient). Gradient: each sample's bilinear weights, divided by the grid size,
    carry the head gradient back to data."""

    name = "_contrib_ROIAlign"
    Attrs = ROIAlignAttrs
    ROI_TEXT = "(batch index, x1, y1, x2, y2)"

    def _out_channels(self, channels: int) -> int:
        if not self.attrs.position_sensitive:
            return channels
        bins = self._bins()
        if channels % bins:
            raise ShapeError("input 'data' has %d channels, not a multiple of pooled_size %s "
                             "(position_sensitive)" % (channels, self.attrs.pooled_size))
        return channels // bins

    def _channel_map(self, xp, out_channels: int):
        if not self.attrs.position_sensitive:
            return super()._channel_map(xp, out_channels)
        bins = self._bins()
        return xp.arange(out_channels)[:, None] * bins + xp.arange(bins)[None, :]

    def _ratio(self) -> int:
        return self.attrs.sample_ratio

    def _corners(self, rois, t):
        """(x1, y1) of each ROI on the feature map."""
        offset = t(0.5) if self.attrs.aligned else t(0)
        return rois[:, 1:3].astype(t) * t(self.attrs.spatial_scale) - offset

    def _sides(self, xp, rois, t):
        a = self.attrs
        offset = t(0.5) if a.aligned else t(0)
        corners = rois[:, 1:5].astype(t) * t(a.spatial_scale) - offset
        roi_w, roi_h = corners[:, 2] - corners[:, 0], corners[:, 3] - corners[:, 1]
        if not a.aligned:
            return xp.maximum(roi_w, t(1)), xp.maximum(roi_h, t(1))
        if roi_w.size and (bool((roi_w <= 0).any()) or bool((roi_h <= 0).any())):
            raise MXNetError("%s: aligned=True needs ROIs of positive width and height"
                             % self.name)
        return roi_w, roi_h

    def _chunk_samples(self, xp, rois, num_images, height, width, t):
        a = self.attrs
        ph, pw = a.pooled_size
        batch = checked_batch(xp, self.name, rois, num_images, allow_negative=True)
        corners = self._corners(rois, t)
        x1, y1 = corners[:, 0], corners[:, 1]
        roi_w, roi_h = self._sides(xp, rois, t)
        grid_h = _grid_size(xp, roi_h, ph, a.sample_ratio, t)
        grid_w = _grid_size(xp, roi_w, pw, a.sample_ratio, t)
        ys, y_ok = _sample_grid(xp, y1, roi_h, ph, grid_h, t)  # (r, PH, GH)
        xs, x_ok = _sample_grid(xp, x1, roi_w, pw, grid_w, t)  # (r, PW, GW)
        shape = ys.shape[:2] + xs.shape[1:2] + ys.shape[2:] + xs.shape[2:]
        y = xp.broadcast_to(ys[:, :, None, :, None], shape)
        x = xp.broadcast_to(xs[:, None, :, None, :], shape)
        pos, weight = _bilinear(xp, y, x, height, width)
        keep = (y_ok[:, :, None, :, None] & x_ok[:, None, :, None, :]
                & (batch >= 0)[:, None, None, None, None])
        count = (grid_h * grid_w).astype(t)[:, None, None, None, None, None]
        weight = xp.where(keep[..., None], weight / count, t(0))
        r = rois.shape[0]
        return (xp.maximum(batch, 0), pos.reshape(r, ph * pw, -1),
                weight.reshape(r, ph * pw, -1))


@dataclasses.dataclass(frozen=True)
class RROIAlignAttrs:
    pooled_size: tuple[int, ...]
    spatial_scale: float
    sampling_ratio: int = -1


@register
class RROIAlign(_AlignBase):
    """Rotated ROI Align: ROI (b, cx, cy, w, h, theta) is a w x h box (in input pixels, times
    spatial_scale; each side at least 1) centred on (cx, cy) and turned by theta degrees; its
    grid points (xx, yy), relative to the centre, are read at
    x = xx cos(theta) + yy sin(theta) + cx, y = yy cos(theta) - xx sin(theta) + cy.
    Sampling and averaging as in `_AlignBase`. data (N, C, H, W), rois (R, 6) -> out
    (R, C, PH, PW).

    MXNet registers no gradient for this op; asking for one raises."""

    name = "_contrib_RROIAlign"
    differentiable = False  # as MXNet registers it: a gradient through it is refused at bind
    Attrs = RROIAlignAttrs
    ROI_COLS = 6
    ROI_TEXT = "(batch index, centre x, centre y, width, height, angle)"

    def _ratio(self) -> int:
        return self.attrs.sampling_ratio

    def _sides(self, xp, rois, t):
        sides = rois[:, 3:5].astype(t) * t(self.attrs.spatial_scale)
        return xp.maximum(sides[:, 0], t(1)), xp.maximum(sides[:, 1], t(1))

    def _chunk_samples(self, xp, rois, num_images, height, width, t):
        a = self.attrs
        ph, pw = a.pooled_size
        batch = checked_batch(xp, self.name, rois, num_images)
        centre = rois[:, 1:3].astype(t) * t(a.spatial_scale)
        cx, cy = centre[:, 0], centre[:, 1]
        roi_w, roi_h = self._sides(xp, rois, t)
        theta = (rois[:, 5].astype("float64") * math.pi / 180.0).astype(t)
        cos, sin = xp.cos(theta), xp.sin(theta)
        grid_h = _grid_size(xp, roi_h, ph, a.sampling_ratio, t)
        grid_w = _grid_size(xp, roi_w, pw, a.sampling_ratio, t)
        yy, y_ok = _sample_grid(xp, -roi_h / t(2), roi_h, ph, grid_h, t)
        xx, x_ok = _sample_grid(xp, -roi_w / t(2), roi_w, pw, grid_w, t)
        yy, xx = yy[:, :, None, :, None], xx[:, None, :, None, :]
        c5, s5 = cos[:, None, None, None, None], sin[:, None, None, None, None]
        x = xx * c5 + yy * s5 + cx[:, None, None, None, None]
        y = yy * c5 - xx * s5 + cy[:, None, None, None, None]
        pos, weight = _bilinear(xp, y, x, height, width)
        keep = y_ok[:, :, None, :, None] & x_ok[:, None, :, None, :]
        count = (grid_h * grid_w).astype(t)[:, None, None, None, None, None]
        weight = xp.where(keep[..., None], weight / count, t(0))
        r = rois.shape[0]
        return batch, pos.reshape(r, ph * pw, -1), weight.reshape(r, ph * pw, -1)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        raise MXNetError("Operator %s is non-differentiable: MXNet registers no gradient "
                         "for it" % self.name)
