"""Position-sensitive ROI pooling for R-FCN: PSROIPooling and DeformablePSROIPooling
(Deformable R-FCN). Both read `data` (N, output_dim * group_size^2, H, W) and `rois` (R, 5)
rows of (batch index, x1, y1, x2, y2) in input pixels, and write (R, output_dim, pooled_size,
pooled_size); bin (ph, pw) of output channel c reads its own input channel (see `_PSBase`).
The sums run through the shared ROI pooling core of `_util` (`gather_bins` /
`scatter_bins`), in chunks of ROIs. The rois input gets a zero gradient, as in MXNet.
"""
from __future__ import annotations

import dataclasses

from ... import backend
from ...base import OpParamError, ShapeError
from ..registry import Op, fmt_shape, register
from ._util import (
    CHUNK_ELEMENTS,
    c_round,
    check_data_rois,
    checked_batch,
    gather_bins,
    roi_chunks,
    scatter_bins,
)

__all__ = ["PSROIPooling", "DeformablePSROIPooling"]


# ----------------------------------------------------------------------------- PSROIPooling

@dataclasses.dataclass(frozen=True)
class PSROIPoolingAttrs:
    spatial_scale: float
    output_dim: int
    pooled_size: int
    group_size: int = 0


def _rfcn_box(xp, rois, scale, t, shift):
    """R-FCN's ROI box: corners rounded to whole pixels (C rounding), the far ones one pixel
    further, times spatial_scale, minus `shift`; sides at least 0.1. (x1, y1, width, height)"""
    snapped = c_round(xp, rois[:, 1:5].astype(t))
    snapped = snapped + xp.asarray([0, 0, 1, 1], dtype=t)
    box = snapped * t(scale) - t(shift)
    x1, y1 = box[:, 0], box[:, 1]
    return x1, y1, xp.maximum(box[:, 2] - x1, t(0.1)), xp.maximum(box[:, 3] - y1, t(0.1))


def _group_cells(xp, pooled: int, group: int, t):
    """The group cell (0..group-1) each of `pooled` bins reads: floor(bin * group / pooled)."""
    cell = xp.floor(xp.arange(pooled, dtype=t) * t(group) / t(pooled)).astype("int64")
    return xp.clip(cell, 0, group - 1)


class _PSBase(Op):
    """Position-sensitive channel layout shared by PSROIPooling and DeformablePSROIPooling:
    data has output_dim * group_size^2 channels, and bin (ph, pw) of output channel c reads
    channel (c * group_size + gh) * group_size + gw, where (gh, gw) is the group cell the bin
    falls in."""

    def __init__(self, attrs=None):
        super().__init__(attrs)
        self._channel_maps: dict = {}  # (module, device, dtype) -> `_channel_map`

    def _group(self) -> int:
        return self.attrs.group_size or self.attrs.pooled_size

    def _check_params(self):
        a = self.attrs
        if a.output_dim < 1 or a.pooled_size < 1 or self._group() < 1:
            raise OpParamError("operator %s: output_dim, pooled_size and group_size must be "
                               ">= 1, got %d, %d, %d" % (self.name, a.output_dim,
                                                         a.pooled_size, self._group()))

    def _infer_common(self, in_shapes, out_shapes):
        data, rois = check_data_rois(self, in_shapes, 5, "(batch index, x1, y1, x2, y2)")
        a = self.attrs
        group = self._group()
        need = a.output_dim * group * group
        if data is not None and data[1] not in (None, need):
            raise ShapeError("input 'data' has %d channels but output_dim=%d and group_size=%d "
                             "need %d" % (data[1], a.output_dim, group, need))
        if rois is not None:
            shape = (rois[0], a.output_dim, a.pooled_size, a.pooled_size)
            for i in range(len(out_shapes)):
                self.set_out(out_shapes, i, shape)
        return in_shapes, out_shapes

    def _channel_map(self, xp, t):
        """(output_dim, P) input channel of each output channel and bin (made once per
        device and dtype: it depends on the attributes only)."""
        key = (xp.__name__, backend.current_device(xp), t)
        cache = self._channel_maps
        if key not in cache:
            a = self.attrs
            group = self._group()
            cells = _group_cells(xp, a.pooled_size, group, t)
            cell = cells[:, None] * group + cells[None, :]  # (PH, PW)
            cache[key] = (xp.arange(a.output_dim)[:, None] * (group * group)
                          + cell.reshape(1, -1))
        return cache[key]


@register
class PSROIPooling(_PSBase):
    """Position-sensitive ROI average pooling (R-FCN). A ROI's corners are rounded to whole
    pixels, the far corner taken one pixel further, and scaled by spatial_scale (sides at
    least 0.1); bin (ph, pw) covers the whole pixels [floor(start), ceil(end)) clipped to the
    map, and its value is the mean of those pixels of the bin's channel (see `_PSBase`), or 0
    when the window is empty.

    data (N, output_dim * group_size^2, H, W), rois (R, 5) -> out (R, output_dim, pooled_size,
    pooled_size); group_size 0 means pooled_size. The gradient spreads each bin's head gradient
    evenly over its pixels. The windows of a chunk of ROIs are padded to the largest one."""

    name = "_contrib_PSROIPooling"
    Attrs = PSROIPoolingAttrs
    ARGUMENTS = ("data", "rois")
    backward_inputs = (1,)
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        self._check_params()

    def infer_shape(self, in_shapes, out_shapes):
        return self._infer_common(in_shapes, out_shapes)

    def _per_roi(self, xp, rois, chan, t, height: int, width: int) -> int:
        """Gathered values per ROI at the largest window: the chunking budget. A window holds
        at most the whole map, so when that bound keeps every ROI in one chunk it is the
        budget, with no read of the ROIs on the host."""
        if not rois.shape[0]:
            return 1
        if rois.shape[0] * chan.size * height * width <= CHUNK_ELEMENTS:
            return chan.size * height * width
        _, _, roi_w, roi_h = _rfcn_box(xp, rois, self.attrs.spatial_scale, t, 0)
        pooled = self.attrs.pooled_size
        window = ((int(xp.ceil(roi_h.max() / t(pooled))) + 1)
                  * (int(xp.ceil(roi_w.max() / t(pooled))) + 1))
        return chan.size * window

    def _chunk_windows(self, xp, rois, num_images, height, width, t):
        pooled = self.attrs.pooled_size
        batch = checked_batch(xp, self.name, rois, num_images)
        x1, y1, roi_w, roi_h = _rfcn_box(xp, rois, self.attrs.spatial_scale, t, 0)
        bounds = []
        for start, size, limit in ((y1, roi_h, height), (x1, roi_w, width)):
            bin_size = size / t(pooled)
            steps = xp.arange(pooled + 1, dtype=t)[None, :] * bin_size[:, None] + start[:, None]
            lo = xp.clip(xp.floor(steps[:, :-1]).astype("int64"), 0, limit)
            hi = xp.clip(xp.ceil(steps[:, 1:]).astype("int64"), 0, limit)
            bounds.append((lo, xp.maximum(hi - lo, 0), limit))
        # the widest window along each axis, in one read on the host
        widest = backend.asnumpy(xp.stack([span.max() for _, span, _ in bounds])) \
            if rois.shape[0] else (1, 1)
        axes = []
        for (lo, span, limit), k in zip(bounds, widest):
            k = max(1, int(k))
            cells = lo[:, :, None] + xp.arange(k)[None, None, :]  # (r, pooled, k)
            axes.append((xp.minimum(cells, limit - 1), xp.arange(k)[None, None, :]
                         < span[:, :, None], span))
        (rows, row_ok, h_span), (cols, col_ok, w_span) = axes
        pos = rows[:, :, None, :, None] * width + cols[:, None, :, None, :]
        area = (h_span[:, :, None] * w_span[:, None, :]).astype(t)  # (r, PH, PW)
        ok = row_ok[:, :, None, :, None] & col_ok[:, None, :, None, :]
        weight = xp.where(ok, t(1) / xp.maximum(area, t(1))[:, :, :, None, None], t(0))
        r = rois.shape[0]
        return batch, pos.reshape(r, pooled * pooled, -1), weight.reshape(r, pooled * pooled, -1)

    def forward(self, xp, inputs, aux, out, is_train):
        data, rois = inputs
        n, _, height, width = data.shape
        t = data.dtype.type
        chan = self._channel_map(xp, t)
        for sel in roi_chunks(rois.shape[0], self._per_roi(xp, rois, chan, t, height, width)):
            batch, pos, weight = self._chunk_windows(xp, rois[sel], n, height, width, t)
            out[0][sel] = gather_bins(xp, data, batch, chan, pos, weight).reshape(out[0][sel].shape)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx, d_rois = in_grads
        if d_rois is not None:
            d_rois.fill(0)
        if dx is None:
            return
        rois = inputs[1]
        n, _, height, width = dx.shape
        t = dx.dtype.type
        chan = self._channel_map(xp, t)
        head = out_grads[0].reshape(out_grads[0].shape[:2] + (-1,))
        dx.fill(0)
        for sel in roi_chunks(rois.shape[0], self._per_roi(xp, rois, chan, t, height, width)):
            batch, pos, weight = self._chunk_windows(xp, rois[sel], n, height, width, t)
            scatter_bins(xp, dx, batch, chan, pos, weight, head[sel])


# ------------------------------------------------------------------- DeformablePSROIPooling

@dataclasses.dataclass(frozen=True)
class DeformablePSROIPoolingAttrs:
    spatial_scale: float
    output_dim: int
    group_size: int
    pooled_size: int
    part_size: int = 0
    sample_per_part: int = 1
    trans_std: float = 0.0
    no_trans: bool = False


@register
class DeformablePSROIPooling(_PSBase):
    """Deformable position-sensitive ROI pooling (Deformable R-FCN, arXiv 1703.06211).

    The ROI box is R-FCN's (`_rfcn_box`) shifted by -0.5 (pixel centres). Bin (ph, pw) of
    output channel c starts at its regular place plus an offset read from `trans`:
    (trans[r, 2k, i, j], trans[r, 2k+1, i, j]) * trans_std * (ROI width, height), where k is
    the class of c (output_dim / num_classes channels per class, num_classes = trans channels
    / 2) and (i, j) = floor((ph, pw) / pooled_size * part_size) its part cell. The bin is
    sampled on a sample_per_part^2 grid (sub-bin corners); samples outside [-0.5, size-0.5]
    are skipped, the rest clamped into the map and read by plain bilinear interpolation
    between floor and ceil; the bin's value is their mean (0 with no sample), and the count
    is the hidden output `top_count`.

    data (N, output_dim * group_size^2, H, W), rois (R, 5), trans (R, 2 * num_classes,
    part_size, part_size) unless no_trans -> out (R, output_dim, pooled_size, pooled_size).
    Gradients: data as the bilinear weights over the count; trans, as MXNet's, the bilinear
    slope at the clamped sample times trans_std and the ROI side (the clamp itself is not
    differentiated); rois zero."""

    name = "_contrib_DeformablePSROIPooling"
    Attrs = DeformablePSROIPoolingAttrs
    SIGNATURE_INPUTS = ("data", "rois", "trans")
    OUTPUTS = ("output", "top_count")
    backward_outputs = (1,)

    def __init__(self, attrs=None):
        super().__init__(attrs)
        self._check_params()
        if self.attrs.sample_per_part < 1:
            raise OpParamError("operator %s: sample_per_part must be >= 1, got %d"
                               % (self.name, self.attrs.sample_per_part))

    def arguments(self) -> list:
        return ["data", "rois"] if self.attrs.no_trans else ["data", "rois", "trans"]

    def num_visible_outputs(self) -> int:
        return 1

    def _part(self) -> int:
        return self.attrs.part_size or self.attrs.pooled_size

    def infer_shape(self, in_shapes, out_shapes):
        self._infer_common(in_shapes, out_shapes)
        if self.attrs.no_trans:
            return in_shapes, out_shapes
        trans = in_shapes[2]
        part = self._part()
        if trans is not None and (len(trans) != 4 or trans[2] not in (None, part)
                                  or trans[3] not in (None, part)
                                  or (trans[1] is not None and (trans[1] % 2 or not trans[1]
                                                                or self.attrs.output_dim
                                                                % (trans[1] // 2)))):
            raise ShapeError("input 'trans' has shape %s but %s needs (R, 2 * num_classes, "
                             "%d, %d) with num_classes dividing output_dim=%d"
                             % (fmt_shape(trans), self.name, part, part,
                                self.attrs.output_dim))
        rois = in_shapes[1]
        if rois is not None and trans is not None and rois[0] is not None \
                and trans[0] not in (None, rois[0]):
            raise ShapeError("input 'trans' has %d rows but rois has %d" % (trans[0], rois[0]))
        return in_shapes, out_shapes

    def _samples(self, xp, rois, trans, num_images, height, width, t):
        """Per chunk: batch, box sides, class/part cells and the clamped sample points."""
        a = self.attrs
        pooled, spp, part = a.pooled_size, a.sample_per_part, self._part()
        batch = checked_batch(xp, self.name, rois, num_images)
        x1, y1, roi_w, roi_h = _rfcn_box(xp, rois, a.spatial_scale, t, 0.5)
        bins = xp.arange(pooled, dtype=t)
        cell = xp.floor(bins / t(pooled) * t(part)).astype("int64")  # part cell per bin
        if a.no_trans:
            cls = xp.zeros(a.output_dim, dtype="int64")
            shift = xp.zeros((rois.shape[0], a.output_dim, pooled, pooled, 2), dtype=t)
        else:
            per_class = a.output_dim // (trans.shape[1] // 2)
            cls = xp.arange(a.output_dim) // per_class
            picked = trans[:, (2 * cls)[:, None] + xp.arange(2)[None, :]]  # (r, C, 2, pt, pt)
            picked = picked[:, :, :, cell[:, None], cell[None, :]]  # (r, C, 2, P, P)
            shift = picked.transpose(0, 1, 3, 4, 2).astype(t) * t(a.trans_std)
        sub = xp.arange(spp, dtype=t)
        starts, points = [], []
        for axis, (start, size) in enumerate(((x1, roi_w), (y1, roi_h))):
            bin_size = size / t(pooled)
            lead = (bins[None, :] * bin_size[:, None] + start[:, None])  # (r, P)
            lead = (lead[:, None, None, :] if axis == 0 else lead[:, None, :, None])
            begin = lead + shift[..., axis] * size[:, None, None, None]  # (r, C, P, P)
            starts.append(begin)
            points.append(begin[..., None] + sub * (bin_size / t(spp))[:, None, None, None, None])
        w = points[0][..., None, :]  # (r, C, P, P, 1, spp): iw varies fastest
        h = points[1][..., :, None]  # (r, C, P, P, spp, 1)
        w, h = xp.broadcast_arrays(w, h)
        valid = (w >= t(-0.5)) & (w <= t(width - 0.5)) & (h >= t(-0.5)) & (h <= t(height - 0.5))
        w = xp.clip(w, t(0), t(width - 1))
        h = xp.clip(h, t(0), t(height - 1))
        return batch, cls, cell, roi_w, roi_h, w, h, valid

    @staticmethod
    def _corners(xp, w, h, width):
        x0, y0 = xp.floor(w), xp.floor(h)
        x1, y1 = xp.ceil(w), xp.ceil(h)
        dx, dy = w - x0, h - y0
        x0, x1, y0, y1 = (v.astype("int64") for v in (x0, x1, y0, y1))
        # corners (y0, x0), (y1, x0), (y0, x1), (y1, x1)
        pos = xp.stack([y0 * width + x0, y1 * width + x0, y0 * width + x1, y1 * width + x1], -1)
        one = dx.dtype.type(1)
        weight = xp.stack([(one - dx) * (one - dy), (one - dx) * dy, dx * (one - dy), dx * dy],
                          -1)
        return pos, weight, dx, dy

    def forward(self, xp, inputs, aux, out, is_train):
        data, rois = inputs[0], inputs[1]
        trans = None if self.attrs.no_trans else inputs[2]
        n, _, height, width = data.shape
        t = data.dtype.type
        chan = self._channel_map(xp, t)  # (C, P*P)
        per_roi = chan.size * self.attrs.sample_per_part ** 2 * 4
        for sel in roi_chunks(rois.shape[0], per_roi):
            batch, _, _, _, _, w, h, valid = self._samples(
                xp, rois[sel], None if trans is None else trans[sel], n, height, width, t)
            pos, weight, _, _ = self._corners(xp, w, h, width)
            r, c = w.shape[:2]
            weight = xp.where(valid[..., None], weight, t(0))
            count = valid.sum(axis=(-2, -1))  # (r, C, P, P)
            total = gather_bins(xp, data, batch, chan, pos.reshape(r, c, chan.shape[1], -1),
                            weight.reshape(r, c, chan.shape[1], -1))
            total = total.reshape(count.shape)
            out[0][sel] = xp.where(count > 0, total / xp.maximum(count, 1).astype(t), t(0))
            out[1][sel] = count.astype(out[1].dtype)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        a = self.attrs
        data, rois = inputs[0], inputs[1]
        trans = None if a.no_trans else inputs[2]
        dx, d_rois = in_grads[0], in_grads[1]
        d_trans = None if a.no_trans else in_grads[2]
        if d_rois is not None:
            d_rois.fill(0)
        for g in (dx, d_trans):
            if g is not None:
                g.fill(0)
        if dx is None and d_trans is None:
            return
        n, _, height, width = data.shape
        t = data.dtype.type
        chan = self._channel_map(xp, t)
        count = outputs[1]
        per_roi = chan.size * a.sample_per_part ** 2 * 4
        for sel in roi_chunks(rois.shape[0], per_roi):
            batch, cls, cell, roi_w, roi_h, w, h, valid = self._samples(
                xp, rois[sel], None if trans is None else trans[sel], n, height, width, t)
            pos, weight, dx_frac, dy_frac = self._corners(xp, w, h, width)
            r, c = w.shape[:2]
            cnt = count[sel]
            diff = xp.where(cnt > 0, out_grads[0][sel] / xp.maximum(cnt, t(1)), t(0))
            weight = xp.where(valid[..., None], weight, t(0))
            flat = (r, c, chan.shape[1], -1)
            if dx is not None:
                scatter_bins(xp, dx, batch, chan, pos.reshape(flat), weight.reshape(flat),
                         diff.reshape(r, c, -1))
            if d_trans is None:
                continue
            plane = data.reshape(n, data.shape[1], -1)
            ch = chan.reshape(1, c, a.pooled_size, a.pooled_size, 1, 1)
            v00, v01, v10, v11 = (plane[batch[:, None, None, None, None, None], ch, pos[..., k]]
                                  for k in range(4))
            one = t(1)
            slope_x = (v11 * dy_frac + v10 * (one - dy_frac) - v01 * dy_frac
                       - v00 * (one - dy_frac))
            slope_y = (v11 * dx_frac + v01 * (one - dx_frac) - v10 * dx_frac
                       - v00 * (one - dx_frac))
            scale = diff * t(a.trans_std)
            gx = (xp.where(valid, slope_x, t(0)).sum(axis=(-2, -1)) * scale
                  * roi_w[:, None, None, None])
            gy = (xp.where(valid, slope_y, t(0)).sum(axis=(-2, -1)) * scale
                  * roi_h[:, None, None, None])
            part = self._part()
            rows = xp.arange(sel.start, sel.stop)[:, None, None, None]
            base = ((rows * trans.shape[1] + 2 * cls[None, :, None, None]) * part
                    + cell[None, None, :, None]) * part + cell[None, None, None, :]
            plane_size = part * part
            index = xp.concatenate([base.reshape(-1), (base + plane_size).reshape(-1)])
            values = xp.concatenate([gx.reshape(-1), gy.reshape(-1)]).astype(d_trans.dtype)
            backend.scatter_add(xp, d_trans.reshape(-1), index, values)
