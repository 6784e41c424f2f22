"""The SSD (single-shot detector) operators: MultiBoxPrior (anchor boxes), MultiBoxTarget
(training targets of the anchors) and MultiBoxDetection (decoded, NMS-filtered detections).

Boxes are corners (xmin, ymin, xmax, ymax) in image-relative units (0..1). MXNet's kernels
for these ops take float32 only, and so do these; none has a gradient (their backward writes
zeros).
"""
from __future__ import annotations

import dataclasses

from ...base import OpParamError, ShapeError
from ..registry import Op, fmt_shape, register
from ._util import descending_order, float32_only, greedy_nms

__all__ = ["MultiBoxPrior", "MultiBoxTarget", "MultiBoxDetection"]


class _NoGradient(Op):
    """float32-only slots and a backward of zeros (MXNet's); the gradient pass skips the op
    (`no_gradient`): requested input gradients are zeros and no head gradient is read."""

    no_gradient = True
    backward_inputs = ()
    backward_outputs = ()

    def infer_type(self, in_types, out_types):
        return float32_only(self, in_types, out_types)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        for g in in_grads:
            if g is not None:
                g.fill(0)


def _corner_iou(xp, a, b):
    """IoU of corner boxes a (..., 4) and b (..., 4), broadcast; 0 where the union is 0."""
    zero = a.dtype.type(0)
    w = xp.maximum(zero, xp.minimum(a[..., 2], b[..., 2]) - xp.maximum(a[..., 0], b[..., 0]))
    h = xp.maximum(zero, xp.minimum(a[..., 3], b[..., 3]) - xp.maximum(a[..., 1], b[..., 1]))
    inter = w * h
    union = ((a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1])
             + (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1]) - inter)
    return inter, union


# ----------------------------------------------------------------------------- MultiBoxPrior

@dataclasses.dataclass(frozen=True)
class MultiBoxPriorAttrs:
    sizes: tuple[float, ...] = (1.0,)
    ratios: tuple[float, ...] = (1.0,)
    clip: bool = False
    steps: tuple[float, ...] = (-1.0, -1.0)
    offsets: tuple[float, ...] = (0.5, 0.5)


@register
class MultiBoxPrior(_NoGradient):
    """Anchor boxes for a feature map: data (N, C, H, W) -> (1, H*W*(S + R - 1), 4).

    Centres sit at ((c + offsets[1]) * step_x, (r + offsets[0]) * step_y) for cell (r, c),
    steps = (step_y, step_x) (either <= 0: (1/H, 1/W)). Per cell, in order: one box per size
    s with the first ratio r0, half-extents (s * H / W * sqrt(r0) / 2, s / sqrt(r0) / 2); then
    one box per ratio r after the first with size sizes[0], half-extents
    (sizes[0] * H / W * sqrt(r) / 2, sizes[0] / sqrt(r) / 2). With clip, coordinates are
    clipped to [0, 1]. Only data's spatial shape is read."""

    name = "_contrib_MultiBoxPrior"
    Attrs = MultiBoxPriorAttrs

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        if not a.sizes or not a.ratios:
            raise OpParamError("operator %s: sizes and ratios must not be empty" % self.name)
        if len(a.steps) != 2 or len(a.offsets) != 2:
            raise OpParamError("operator %s: steps and offsets need 2 values each (y, x), got "
                               "%s and %s" % (self.name, a.steps, a.offsets))
        if a.steps[0] * a.steps[1] < 0:
            raise OpParamError("operator %s: give both steps or neither, got %s"
                               % (self.name, a.steps))
        if not all(0 <= o <= 1 for o in a.offsets):
            raise OpParamError("operator %s: offsets must lie in [0, 1], got %s"
                               % (self.name, a.offsets))

    def _per_cell(self) -> int:
        return len(self.attrs.sizes) + len(self.attrs.ratios) - 1

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        if len(data) < 4:
            raise ShapeError("input 'data' has shape %s but %s needs (batch, channel, y, x)"
                             % (fmt_shape(data), self.name))
        h, w = data[2], data[3]
        count = None if h is None or w is None else h * w * self._per_cell()
        self.set_out(out_shapes, 0, (1, count, 4))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        a = self.attrs
        f = xp.float32
        height, width = inputs[0].shape[2], inputs[0].shape[3]
        step_y, step_x = (f(s) for s in a.steps)
        if step_y <= 0 or step_x <= 0:
            step_y, step_x = f(1) / f(height), f(1) / f(width)
        cy = (xp.arange(height).astype(f) + f(a.offsets[0])) * step_y
        cx = (xp.arange(width).astype(f) + f(a.offsets[1])) * step_x
        sizes = xp.asarray(a.sizes, dtype=f)
        root = xp.sqrt(xp.asarray(a.ratios, dtype=f))  # the first for every size
        half_w = xp.concatenate([sizes * f(height) / f(width) * root[0] / f(2),
                                 sizes[0] * f(height) / f(width) * root[1:] / f(2)])
        half_h = xp.concatenate([sizes / root[0] / f(2), sizes[0] / root[1:] / f(2)])
        cx = cx[None, :, None]
        cy = cy[:, None, None]
        boxes = xp.stack(xp.broadcast_arrays(cx - half_w, cy - half_h, cx + half_w,
                                             cy + half_h), -1)
        if a.clip:
            boxes = xp.clip(boxes, f(0), f(1))
        xp.copyto(out[0], boxes.reshape(out[0].shape))


# ----------------------------------------------------------------------------- MultiBoxTarget

@dataclasses.dataclass(frozen=True)
class MultiBoxTargetAttrs:
    overlap_threshold: float = 0.5
    ignore_label: float = -1.0
    negative_mining_ratio: float = -1.0
    negative_mining_thresh: float = 0.5
    minimum_negative_samples: int = 0
    variances: tuple[float, ...] = (0.1, 0.1, 0.2, 0.2)


@register
class MultiBoxTarget(_NoGradient):
    """Training targets of SSD anchors: anchor (1, A, 4), label (B, L, >= 5) rows of (class,
    xmin, ymin, xmax, ymax, ...) padded with class -1 rows (the first such row ends the
    labels), cls_pred (B, classes, A) -> loc_target (B, A*4), loc_mask (B, A*4), cls_target
    (B, A).

    Per image, as MXNet's CPU kernel: (1) greedy bipartite matching, repeatedly pairing the
    free anchor and free ground truth of highest IoU (> 1e-6) until every ground truth is
    matched or none overlaps; (2) with overlap_threshold > 0, every other anchor takes its
    best ground truth and is positive when that IoU exceeds the threshold; (3) with
    negative_mining_ratio > 0, the int(positives * ratio) non-positive anchors whose best IoU
    is below negative_mining_thresh and whose softmax background probability is lowest become
    negatives, the rest ignored; otherwise every non-positive anchor is negative.
    Positives: cls_target = class + 1, mask 1, loc_target = ((gx - ax) / aw / v0,
    (gy - ay) / ah / v1, log(gw / aw) / v2, log(gh / ah) / v3) (centres and sizes);
    negatives: cls_target 0; ignored anchors (and every anchor of an image without labels):
    cls_target = ignore_label; loc_target and loc_mask 0 except on positives.
    minimum_negative_samples is accepted and, as on MXNet's CPU, unused. The loops over
    images and over matched ground truths are sequential; each step is vectorised."""

    name = "_contrib_MultiBoxTarget"
    Attrs = MultiBoxTargetAttrs
    ARGUMENTS = ("anchor", "label", "cls_pred")
    OUTPUTS = ("loc_target", "loc_mask", "cls_target")

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if len(self.attrs.variances) != 4:
            raise OpParamError("operator %s: variances needs 4 values, got %s"
                               % (self.name, self.attrs.variances))

    def infer_shape(self, in_shapes, out_shapes):
        anchor, label, pred = in_shapes
        if anchor is not None and (len(anchor) != 3 or anchor[0] not in (None, 1)
                                   or anchor[2] not in (None, 4)):
            raise ShapeError("input 'anchor' has shape %s but %s needs (1, num_anchors, 4)"
                             % (fmt_shape(anchor), self.name))
        if label is not None and (len(label) != 3 or (label[2] is not None and label[2] < 5)):
            raise ShapeError("input 'label' has shape %s but %s needs (batch, labels, >= 5)"
                             % (fmt_shape(label), self.name))
        if pred is not None and len(pred) != 3:
            raise ShapeError("input 'cls_pred' has shape %s but %s needs (batch, classes, "
                             "num_anchors)" % (fmt_shape(pred), self.name))
        if anchor is not None and pred is not None and None not in (anchor[1], pred[2]) \
                and anchor[1] != pred[2]:
            raise ShapeError("input 'cls_pred' has %d anchors but 'anchor' has %d"
                             % (pred[2], anchor[1]))
        if anchor is not None and label is not None:
            num = anchor[1]
            self.set_out(out_shapes, 0, (label[0], None if num is None else num * 4))
            self.set_out(out_shapes, 1, (label[0], None if num is None else num * 4))
            self.set_out(out_shapes, 2, (label[0], num))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        anchor, label, pred = inputs
        anchors = anchor.reshape(-1, 4)
        num = anchors.shape[0]
        loc_target = out[0].reshape(-1, num, 4)
        loc_mask = out[1].reshape(-1, num, 4)
        out[0].fill(0)
        out[1].fill(0)
        out[2].fill(xp.float32(self.attrs.ignore_label))
        for b in range(label.shape[0]):
            self._image(xp, anchors, label[b], pred[b], loc_target[b], loc_mask[b], out[2][b])

    def _image(self, xp, anchors, label, pred, loc_target, loc_mask, cls_target):
        a = self.attrs
        f = xp.float32
        ends = xp.nonzero(label[:, 0] == f(-1))[0]
        valid = int(ends[0]) if ends.size else label.shape[0]
        if valid == 0:
            return
        gts = label[:valid]
        inter, union = _corner_iou(xp, anchors[:, None, :], gts[None, :, 1:5])
        iou = xp.where(union == f(0), f(0), inter / xp.where(union == f(0), f(1), union))
        num = anchors.shape[0]
        match = xp.full(num, -1, dtype="int64")  # ground truth of each anchor
        best_iou = xp.full(num, -1, dtype=f)
        positive = xp.zeros(num, dtype=bool)
        free_gt = xp.ones(valid, dtype=bool)
        for _ in range(valid):
            masked = xp.where(~positive[:, None] & free_gt[None, :], iou, f(-1))
            flat = int(xp.argmax(masked))
            j, k = divmod(flat, valid)
            if not bool(masked[j, k] > f(1e-6)):
                break
            match[j], best_iou[j], positive[j], free_gt[k] = k, masked[j, k], True, False
        others = ~positive
        if a.overlap_threshold > 0 or a.negative_mining_ratio > 0:
            # the best ground truth of every other anchor (first maximum)
            nearest = xp.argmax(iou, axis=1)
            nearest_iou = xp.take_along_axis(iou, nearest[:, None], axis=1)[:, 0]
            match = xp.where(others, nearest, match)
            best_iou = xp.where(others, nearest_iou, best_iou)
        if a.overlap_threshold > 0:
            positive = positive | (others & (best_iou > f(a.overlap_threshold)))
        negative = self._negatives(xp, positive, best_iou, pred)
        gt = gts[xp.maximum(match, 0)]
        cls_target[...] = xp.where(positive, gt[:, 0] + f(1),
                                   xp.where(negative, f(0), cls_target))
        loc_mask[...] = positive[:, None].astype(f)
        loc_target[...] = xp.where(positive[:, None], self._encode(xp, anchors, gt[:, 1:5]),
                                   f(0))

    def _negatives(self, xp, positive, best_iou, pred):
        a = self.attrs
        f = xp.float32
        if a.negative_mining_ratio <= 0:
            return ~positive
        num_pos = int(positive.sum())
        count = min(int(f(num_pos) * f(a.negative_mining_ratio)), positive.size - num_pos)
        negative = xp.zeros_like(positive)
        if count <= 0:
            return negative
        candidates = xp.nonzero(~positive & (best_iou < f(a.negative_mining_thresh)))[0]
        logits = pred[:, candidates]
        top = logits.max(axis=0)
        prob = xp.exp(logits[0] - top) / xp.exp(logits - top).sum(axis=0)
        # lowest background probability first: the hardest negatives
        hardest = candidates[descending_order(xp, -prob)][:count]
        negative[hardest] = True
        return negative

    def _encode(self, xp, anchors, gt):
        f = xp.float32
        v = [f(x) for x in self.attrs.variances]
        aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
        ax, ay = (anchors[:, 0] + anchors[:, 2]) * f(0.5), (anchors[:, 1] + anchors[:, 3]) * f(0.5)
        gw, gh = gt[:, 2] - gt[:, 0], gt[:, 3] - gt[:, 1]
        gx, gy = (gt[:, 0] + gt[:, 2]) * f(0.5), (gt[:, 1] + gt[:, 3]) * f(0.5)
        return xp.stack([(gx - ax) / aw / v[0], (gy - ay) / ah / v[1],
                         xp.log(gw / aw) / v[2], xp.log(gh / ah) / v[3]], -1)


# -------------------------------------------------------------------------- MultiBoxDetection

@dataclasses.dataclass(frozen=True)
class MultiBoxDetectionAttrs:
    clip: bool = True
    threshold: float = 0.01
    background_id: int = 0
    nms_threshold: float = 0.5
    force_suppress: bool = False
    variances: tuple[float, ...] = (0.1, 0.1, 0.2, 0.2)
    nms_topk: int = -1


@register
class MultiBoxDetection(_NoGradient):
    """SSD detections: cls_prob (B, classes, A), loc_pred (B, A*4), anchor (1, A, 4) -> out
    (B, A, 6) rows of (class id, score, xmin, ymin, xmax, ymax).

    Per anchor: the most probable class other than 0 (the background; background_id is
    accepted and, as in MXNet, unused) with its probability; below `threshold` the anchor is
    background. The box is the anchor moved by the prediction: centre += p * variance * size,
    size *= exp(p * variance), clipped to [0, 1] with `clip`. Per image, the foreground
    anchors (id = class - 1 >= 0) are packed to the front in anchor order; when
    0 < nms_threshold <= 1 they are then sorted by score (ties in anchor order), only the
    first nms_topk kept when nms_topk > 0 (the packed rows after them get id -1), and greedy
    NMS (IoU >= nms_threshold, within a class unless force_suppress) sets the id of each
    suppressed row to -1. Rows past the foreground anchors are all -1. The loop over images
    and the greedy NMS (`greedy_nms`) are sequential; the rest is vectorised."""

    name = "_contrib_MultiBoxDetection"
    Attrs = MultiBoxDetectionAttrs
    ARGUMENTS = ("cls_prob", "loc_pred", "anchor")

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if len(self.attrs.variances) != 4:
            raise OpParamError("operator %s: variances needs 4 values, got %s"
                               % (self.name, self.attrs.variances))

    def infer_shape(self, in_shapes, out_shapes):
        cls, loc, anchor = in_shapes
        for name, shape, rank in (("cls_prob", cls, 3), ("loc_pred", loc, 2),
                                  ("anchor", anchor, 3)):
            if shape is not None and len(shape) != rank:
                raise ShapeError("input '%s' has shape %s but %s needs rank %d"
                                 % (name, fmt_shape(shape), self.name, rank))
        num = next((s for s in (None if cls is None else cls[2],
                                None if anchor is None else anchor[1],
                                None if loc is None or loc[1] is None else loc[1] // 4)
                    if s is not None), None)
        if num is not None:
            checks = ((cls, 2, num), (loc, 1, 4 * num), (anchor, 1, num), (anchor, 2, 4))
            if any(shape is not None and shape[axis] not in (None, size)
                   for shape, axis, size in checks):
                raise ShapeError("%s: cls_prob %s, loc_pred %s and anchor %s disagree on the "
                                 "number of anchors" % (self.name, fmt_shape(cls),
                                                        fmt_shape(loc), fmt_shape(anchor)))
        if cls is not None and num is not None:
            self.set_out(out_shapes, 0, (cls[0], num, 6))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        cls_prob, loc_pred, anchor = inputs
        a = self.attrs
        f = xp.float32
        num = anchor.shape[1]
        anchors = anchor.reshape(num, 4)
        out[0].fill(-1)
        if cls_prob.shape[1] > 1:
            fg = cls_prob[:, 1:, :]
            best = xp.argmax(fg, axis=1)  # first maximum, as the kernel's strict >
            score = xp.take_along_axis(fg, best[:, None, :], axis=1)[:, 0]
            ident = xp.where(score < f(a.threshold), 0, best + 1)
        else:
            score = xp.full((cls_prob.shape[0], num), -1, dtype=f)
            ident = xp.zeros((cls_prob.shape[0], num), dtype="int64")
        boxes = self._decode(xp, anchors, loc_pred.reshape(-1, num, 4))
        rows = xp.concatenate([(ident - 1).astype(f)[..., None], score[..., None], boxes], -1)
        for b in range(rows.shape[0]):
            found = rows[b][ident[b] > 0]
            count = found.shape[0]
            if count and 0 < a.nms_threshold <= 1:
                found = self._suppress(xp, found)
            out[0][b, :count] = found

    def _decode(self, xp, anchors, pred):
        f = xp.float32
        v = [f(x) for x in self.attrs.variances]
        aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
        ax, ay = (anchors[:, 0] + anchors[:, 2]) / f(2), (anchors[:, 1] + anchors[:, 3]) / f(2)
        ox = pred[..., 0] * v[0] * aw + ax
        oy = pred[..., 1] * v[1] * ah + ay
        ow = xp.exp(pred[..., 2] * v[2]) * aw / f(2)
        oh = xp.exp(pred[..., 3] * v[3]) * ah / f(2)
        boxes = xp.stack([ox - ow, oy - oh, ox + ow, oy + oh], -1)
        return xp.clip(boxes, f(0), f(1)) if self.attrs.clip else boxes

    def _suppress(self, xp, found):
        """Sort the packed foreground rows by score, cut to nms_topk, and mark the rows NMS
        suppresses with id -1."""
        a = self.attrs
        f = xp.float32
        order = descending_order(xp, found[:, 1])
        keep_n = found.shape[0]
        if 0 < a.nms_topk < keep_n:
            keep_n = a.nms_topk
        result = found.copy()
        result[keep_n:, 0] = f(-1)
        result[:keep_n] = found[order[:keep_n]]
        head = result[:keep_n]
        ids = head[:, 0]
        thresh = f(a.nms_threshold)

        def suppresses(i, rest):
            inter, union = _corner_iou(xp, head[i, 2:6], head[rest, 2:6])
            iou = xp.where(union <= f(0), f(0), inter / xp.where(union <= f(0), f(1), union))
            hit = iou >= thresh
            return hit if a.force_suppress else hit & (ids[rest] == ids[i])

        kept = greedy_nms(xp, keep_n, suppresses)
        gone = xp.ones(keep_n, dtype=bool)
        gone[xp.asarray(kept, dtype="int64")] = False
        head[:, 0] = xp.where(gone, f(-1), ids)
        return result
