"""Region proposals for Faster R-CNN's region proposal network: Proposal (one image) and
MultiProposal (a batch), MXNet's port of py-faster-rcnn's proposal layer.

Per image: anchors of every (ratio, scale) pair are laid on the feature map every
`feature_stride` pixels, moved by the predicted deltas, clipped to the image, filtered by
size, sorted by foreground score, cut to `rpn_pre_nms_top_n`, thinned by greedy NMS to at
most `rpn_post_nms_top_n`, and written out, repeated cyclically when fewer survive. Boxes use
the inclusive-pixel convention (width = x2 - x1 + 1) throughout, as the original does.
Arithmetic is float32 (MXNet's kernels are float-only), with the double-precision steps of
its C++ reproduced where they round differently.

Neither op has a gradient: MXNet's backward writes zeros, and so does this one.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ... import backend
from ...base import MXNetError, OpParamError, ShapeError
from ..registry import Op, fmt_shape, register
from ._util import descending_order, float32_only, greedy_nms

__all__ = ["Proposal", "MultiProposal", "generate_anchors"]


@dataclasses.dataclass(frozen=True)
class ProposalAttrs:
    rpn_pre_nms_top_n: int = 6000
    rpn_post_nms_top_n: int = 300
    threshold: float = 0.7
    rpn_min_size: int = 16
    scales: tuple[float, ...] = (4.0, 8.0, 16.0, 32.0)
    ratios: tuple[float, ...] = (0.5, 1.0, 2.0)
    feature_stride: int = 16
    output_score: bool = False
    iou_loss: bool = False


def generate_anchors(xp, feature_stride: int, ratios, scales):
    """(A, 4) float32 anchors centred on the stride-sized base box (0, 0, s-1, s-1), ratio
    major, scale minor: for ratio r and scale k, w = round(sqrt(floor(s*s / r))) * k and
    h = round(w / k * r) * k (rounding half up), corners centre -+ (size - 1) / 2."""
    f = xp.float32
    side = f(feature_stride)  # base width = (s - 1) - 0 + 1
    centre = f(0.5) * (side - f(1))
    ratio = xp.asarray(ratios, dtype=f)[:, None]
    scale = xp.asarray(scales, dtype=f)[None, :]
    size_ratios = xp.floor(side * side / ratio)
    new_w = xp.floor(xp.sqrt(size_ratios) + f(0.5)) * scale
    new_h = xp.floor(new_w / scale * ratio + f(0.5)) * scale
    half_w, half_h = f(0.5) * (new_w - f(1)), f(0.5) * (new_h - f(1))
    anchors = xp.stack([centre - half_w, centre - half_h, centre + half_w, centre + half_h], -1)
    return anchors.reshape(-1, 4)


def _to32(xp, x):
    return x.astype(xp.float32)


class _ProposalBase(Op):
    """Shared shape rules and the per-image proposal pipeline."""

    Attrs = ProposalAttrs
    ARGUMENTS = ("cls_prob", "bbox_pred", "im_info")
    OUTPUTS = ("output", "score")
    # MXNet's backward writes zeros and reads no head gradient: the gradient pass skips the
    # op (requested input gradients are zeros) and asks for no head gradient of its outputs
    no_gradient = True
    backward_inputs = ()
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        if not a.scales or not a.ratios:
            raise OpParamError("operator %s: scales and ratios must not be empty" % self.name)
        if a.feature_stride < 1 or a.rpn_post_nms_top_n < 1:
            raise OpParamError("operator %s: feature_stride and rpn_post_nms_top_n must be "
                               ">= 1" % self.name)

    def num_visible_outputs(self) -> int:
        return 2 if self.attrs.output_score else 1

    def _rows(self, batch):
        return self.attrs.rpn_post_nms_top_n

    def infer_shape(self, in_shapes, out_shapes):
        a = self.attrs
        cls = in_shapes[0]
        if cls is None:
            return in_shapes, out_shapes
        if len(cls) != 4:
            raise ShapeError("input 'cls_prob' has shape %s but %s needs (N, 2 * anchors, H, W)"
                             % (fmt_shape(cls), self.name))
        anchors = len(a.scales) * len(a.ratios)
        if cls[1] not in (None, 2 * anchors):
            raise ShapeError("input 'cls_prob' has %d channels but %d scales x %d ratios need %d"
                             % (cls[1], len(a.scales), len(a.ratios), 2 * anchors))
        self.set_in(in_shapes, 1, (cls[0], None if cls[1] is None else 2 * cls[1],
                                   cls[2], cls[3]), "cls_prob %s" % fmt_shape(cls))
        self.set_in(in_shapes, 2, (cls[0], 3), "cls_prob %s" % fmt_shape(cls))
        rows = self._rows(cls[0])
        self.set_out(out_shapes, 0, (rows, 5))
        self.set_out(out_shapes, 1, (rows, 1))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        return float32_only(self, in_types, out_types)

    # ------------------------------------------------------------------ the pipeline

    def _image(self, xp, anchors, scores, deltas, im_info):
        """Proposals of one image: (boxes (rows, 4), scores (rows,)) float32.

        scores (A, H, W) foreground scores, deltas (4A, H, W), im_info (3,)."""
        a = self.attrs
        f = xp.float32
        num_anchors, height, width = scores.shape
        stride = a.feature_stride
        im_h, im_w, im_scale = (float(v) for v in im_info)
        real_h = int(f(im_h) / f(stride))
        real_w = int(f(im_w) / f(stride))
        if real_h > height or real_w > width:
            raise MXNetError("%s: im_info (%g, %g) over feature_stride %d needs a %dx%d map, "
                             "larger than the %dx%d given"
                             % (self.name, im_h, im_w, stride, real_h, real_w, height, width))
        # (H, W, A, 4) shifted anchors, anchor index fastest as MXNet lays them out
        shift_x = (xp.arange(width) * stride).astype(f)[None, :, None]
        shift_y = (xp.arange(height) * stride).astype(f)[:, None, None]
        x1 = anchors[None, None, :, 0] + shift_x
        y1 = anchors[None, None, :, 1] + shift_y
        x2 = anchors[None, None, :, 2] + shift_x
        y2 = anchors[None, None, :, 3] + shift_y
        d = deltas.reshape(num_anchors, 4, height, width).transpose(2, 3, 0, 1)
        dx, dy, dw, dh = (d[..., i] for i in range(4))
        if a.iou_loss:
            boxes = [x1 + dx, y1 + dy, x2 + dw, y2 + dh]  # corner offsets
        else:
            w = _to32(xp, (x2 - x1).astype("float64") + 1.0)
            h = _to32(xp, (y2 - y1).astype("float64") + 1.0)
            cx = _to32(xp, x1.astype("float64") + 0.5 * (w.astype("float64") - 1.0))
            cy = _to32(xp, y1.astype("float64") + 0.5 * (h.astype("float64") - 1.0))
            pcx = (dx * w + cx).astype("float64")
            pcy = (dy * h + cy).astype("float64")
            half_w = 0.5 * ((xp.exp(dw) * w).astype("float64") - 1.0)
            half_h = 0.5 * ((xp.exp(dh) * h).astype("float64") - 1.0)
            boxes = [_to32(xp, pcx - half_w), _to32(xp, pcy - half_h),
                     _to32(xp, pcx + half_w), _to32(xp, pcy + half_h)]
        limits = (f(im_w) - f(1), f(im_h) - f(1), f(im_w) - f(1), f(im_h) - f(1))
        boxes = xp.stack([xp.maximum(xp.minimum(b, lim), f(0))
                          for b, lim in zip(boxes, limits)], -1).reshape(-1, 4)
        score = scores.transpose(1, 2, 0).astype(f)
        padded = ((xp.arange(height) >= real_h)[:, None, None]
                  | (xp.arange(width) >= real_w)[None, :, None])
        score = xp.where(padded, f(-1), score).reshape(-1)
        # too small: grown by min_size / 2 on every side and scored -1
        min_size = f(a.rpn_min_size) * f(im_scale)
        bw = boxes[:, 2] - boxes[:, 0] + f(1)
        bh = boxes[:, 3] - boxes[:, 1] + f(1)
        small = (bw < min_size) | (bh < min_size)
        grow = (min_size / f(2)) * xp.asarray([-1, -1, 1, 1], dtype=f)
        boxes = xp.where(small[:, None], boxes + grow, boxes)
        score = xp.where(small, f(-1), score)

        count = score.shape[0]
        pre = a.rpn_pre_nms_top_n if a.rpn_pre_nms_top_n > 0 else count
        pre = min(pre, count)
        post = min(a.rpn_post_nms_top_n, pre)
        order = descending_order(xp, score)[:pre]
        boxes, score = boxes[order], score[order]
        keep = _nms(xp, boxes, f(a.threshold), post)
        rows = xp.asarray(keep, dtype="int64")[xp.arange(a.rpn_post_nms_top_n) % len(keep)]
        return boxes[rows], score[rows]

    def _run(self, xp, inputs, out):
        cls_prob, bbox_pred, im_info = inputs
        anchors = generate_anchors(xp, self.attrs.feature_stride, self.attrs.ratios,
                                   self.attrs.scales)
        num_anchors = cls_prob.shape[1] // 2
        rows = self.attrs.rpn_post_nms_top_n
        for b in range(cls_prob.shape[0]):
            boxes, score = self._image(xp, anchors, cls_prob[b, num_anchors:],
                                       bbox_pred[b], im_info[b])
            part = slice(b * rows, (b + 1) * rows)
            out[0][part, 0] = b
            out[0][part, 1:] = boxes
            out[1][part, 0] = score

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        for g in in_grads:
            if g is not None:
                g.fill(0)


def _nms(xp, boxes, threshold, max_keep: int) -> list:
    """Greedy NMS over score-sorted boxes (inclusive-pixel areas); IoU > threshold
    suppresses. Returns the kept indices. On a GPU the boxes are copied to the host once and
    the loop runs there (on the device each of its steps would wait for a host read)."""
    if xp.__name__ != "numpy":
        boxes, xp = backend.asnumpy(boxes), np
    f = xp.float32
    x1, y1, x2, y2 = (xp.ascontiguousarray(boxes[:, i]) for i in range(4))
    area = (x2 - x1 + f(1)) * (y2 - y1 + f(1))

    def suppresses(i, rest):
        w = xp.maximum(f(0), xp.minimum(x2[i], x2[rest]) - xp.maximum(x1[i], x1[rest]) + f(1))
        h = xp.maximum(f(0), xp.minimum(y2[i], y2[rest]) - xp.maximum(y1[i], y1[rest]) + f(1))
        inter = w * h
        return inter / (area[i] + area[rest] - inter) > threshold

    return greedy_nms(xp, boxes.shape[0], suppresses, max_keep)


@register
class Proposal(_ProposalBase):
    """Region proposals for one image (see the module docstring).

    cls_prob (1, 2A, H, W) (background then foreground probabilities of the A = len(scales) *
    len(ratios) anchors), bbox_pred (1, 4A, H, W) deltas (dx, dy, dw, dh) per anchor (with
    iou_loss: corner offsets (dx1, dy1, dx2, dy2)), im_info (1, 3) (height, width, scale) ->
    output (rpn_post_nms_top_n, 5) rows of (0, x1, y1, x2, y2) and, visible with
    output_score, score (rpn_post_nms_top_n, 1). A box is moved as
    centre += d * size, size *= exp(d); anchors on padded cells (beyond im_info / stride) and
    boxes narrower than rpn_min_size * scale score -1 (the latter grown by half that size on
    each side) but still take part."""

    name = "_contrib_Proposal"

    def forward(self, xp, inputs, aux, out, is_train):
        if inputs[0].shape[0] != 1:
            raise MXNetError("%s: cls_prob has %d images; Proposal takes one (use "
                             "MultiProposal)" % (self.name, inputs[0].shape[0]))
        self._run(xp, inputs, out)


@register
class MultiProposal(_ProposalBase):
    """Proposal for a batch: the per-image pipeline of Proposal on each image b, its rows
    (b, x1, y1, x2, y2) stacked. cls_prob (N, 2A, H, W), bbox_pred (N, 4A, H, W), im_info
    (N, 3) -> output (N * rpn_post_nms_top_n, 5), score (N * rpn_post_nms_top_n, 1). The loop
    over images is sequential, as is each image's NMS."""

    name = "_contrib_MultiProposal"

    def _rows(self, batch):
        return None if batch is None else batch * self.attrs.rpn_post_nms_top_n

    def forward(self, xp, inputs, aux, out, is_train):
        self._run(xp, inputs, out)
