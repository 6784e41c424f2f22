"""Bounding-box utilities: box_iou, box_nms (alias box_non_maximum_suppression),
bipartite_matching, box_encode and box_decode.

Boxes are 4 numbers, either corners (xmin, ymin, xmax, ymax) or centres (x, y, width,
height), chosen by a `format` parameter. Areas and overlaps use the continuous convention
(width = xmax - xmin, no +1), and a negative width or height counts as zero area.

Only box_nms passes a gradient (to the records it kept, unchanged); MXNet's backward of the
others writes zeros, and so do these, which are marked `no_gradient` so that the gradient pass
gives their inputs zero gradients without running them or asking for head gradients.
"""
from __future__ import annotations

import dataclasses
from typing import Literal

from ...base import ShapeError
from ..registry import Op, fmt_shape, register
from ._util import descending_order, greedy_nms

__all__ = ["BoxIoU", "BoxNMS", "BipartiteMatching", "BoxEncode", "BoxDecode"]

BoxFormat = Literal["corner", "center"]


def _extent(xp, lo, size_or_hi, fmt: str):
    """(start, end) along one axis of boxes given as (x1, x2) or (centre, size)."""
    if fmt == "corner":
        return lo, size_or_hi
    half = size_or_hi / lo.dtype.type(2)
    return lo - half, lo + half


def _overlap(xp, a, b, fmt: str):
    """Overlap length along one axis of boxes a and b (broadcast), clamped at 0; a and b are
    (..., 3)-indexable as (start, _, end-or-size)."""
    a_lo, a_hi = _extent(xp, a[..., 0], a[..., 2], fmt)
    b_lo, b_hi = _extent(xp, b[..., 0], b[..., 2], fmt)
    width = xp.minimum(a_hi, b_hi) - xp.maximum(a_lo, b_lo)
    return xp.maximum(width, width.dtype.type(0))


def _area(xp, box, fmt: str):
    if fmt == "corner":
        w, h = box[..., 2] - box[..., 0], box[..., 3] - box[..., 1]
    else:
        w, h = box[..., 2], box[..., 3]
    zero = w.dtype.type(0)
    return xp.where((w < zero) | (h < zero), zero, w * h)


def _zero_grads(in_grads):
    for g in in_grads:
        if g is not None:
            g.fill(0)


def _last_is_4(op: Op, shape, name: str, min_rank: int):
    if shape is not None and (len(shape) < min_rank or shape[-1] not in (None, 4)):
        raise ShapeError("input '%s' has shape %s but %s needs rank >= %d with a last axis of "
                         "4 box coordinates" % (name, fmt_shape(shape), op.name, min_rank))


# ----------------------------------------------------------------------------- box_iou

@dataclasses.dataclass(frozen=True)
class BoxIoUAttrs:
    format: BoxFormat = "corner"


@register
class BoxIoU(Op):
    """Intersection over union of every lhs box with every rhs box: lhs (..., 4), rhs (..., 4)
    -> out (lhs.shape[:-1] + rhs.shape[:-1]); 0 where the boxes do not intersect."""

    name = "_contrib_box_iou"
    Attrs = BoxIoUAttrs
    ARGUMENTS = ("lhs", "rhs")
    no_gradient = True
    backward_inputs = ()
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        lhs, rhs = in_shapes
        _last_is_4(self, lhs, "lhs", 2)
        _last_is_4(self, rhs, "rhs", 2)
        if lhs is not None and rhs is not None:
            self.set_out(out_shapes, 0, tuple(lhs[:-1]) + tuple(rhs[:-1]))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        lhs, rhs = inputs
        fmt = self.attrs.format
        a = lhs.reshape(-1, 1, 4)
        b = rhs.reshape(1, -1, 4)
        inter = _overlap(xp, a, b, fmt) * _overlap(xp, a[..., 1:], b[..., 1:], fmt)
        union = _area(xp, a, fmt) + _area(xp, b, fmt) - inter
        zero = inter.dtype.type(0)
        iou = xp.where(inter > zero, inter / xp.where(inter > zero, union, 1), zero)
        xp.copyto(out[0], iou.reshape(out[0].shape))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        _zero_grads(in_grads)


# ----------------------------------------------------------------------------- box_nms

@dataclasses.dataclass(frozen=True)
class BoxNMSAttrs:
    overlap_thresh: float = 0.5
    valid_thresh: float = 0.0
    topk: int = -1
    coord_start: int = 2
    score_index: int = 1
    id_index: int = -1
    background_id: int = -1
    force_suppress: bool = False
    in_format: BoxFormat = "corner"
    out_format: BoxFormat = "corner"


@register
class BoxNMS(Op):
    """Non-maximum suppression over records (..., N, W): each row holds a score at
    score_index, 4 coordinates from coord_start and, with id_index >= 0, a class id.

    Per batch (the leading axes): the records scoring above valid_thresh (and, with ids, not
    of class background_id) are ordered by descending score (ties: index order), the first
    topk of them (topk < 0: all) run greedy NMS (IoU > overlap_thresh suppresses; only within
    a class unless force_suppress), and the kept records are written first, in that order,
    the remaining rows set to -1. Boxes are converted to out_format, except rows whose first
    coordinate is negative, which MXNet leaves as they are. topk = 0 copies the input.

    The hidden second output records which input row each output row came from (-1 for none);
    the gradient of a kept record is its output row's head gradient, other rows get 0. The
    loop over batches and the greedy loop are sequential (see `greedy_nms`)."""

    name = "_contrib_box_nms"
    aliases = ("_contrib_box_non_maximum_suppression",)
    Attrs = BoxNMSAttrs
    OUTPUTS = ("output0", "output1")
    backward_inputs = ()
    backward_outputs = (1,)

    def num_visible_outputs(self) -> int:
        return 1

    def output_names(self, node_name: str) -> list:
        return ["%s_output0" % node_name]  # MXNet counts the hidden record in the naming

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        if len(data) < 2:
            raise ShapeError("input 'data' has shape %s but %s needs (..., num_boxes, width)"
                             % (fmt_shape(data), self.name))
        width = data[-1]
        if width is not None:
            self._check_columns(width)
        self.set_out(out_shapes, 0, tuple(data))
        self.set_out(out_shapes, 1, tuple(data[:-1]) + (1,))
        return in_shapes, out_shapes

    def _check_columns(self, width: int):
        a = self.attrs
        need = 6 if a.id_index >= 0 else 5
        coords = range(a.coord_start, a.coord_start + 4)
        problems = []
        if width < need:
            problems.append("each record needs at least %d values" % need)
        if not 0 <= a.score_index < width or a.score_index in coords:
            problems.append("score_index=%d is out of range or inside the coordinates"
                            % a.score_index)
        if a.coord_start < 0 or a.coord_start + 3 >= width:
            problems.append("coordinates %d..%d are out of range" % (a.coord_start,
                                                                    a.coord_start + 3))
        if a.id_index >= 0 and (a.id_index >= width or a.id_index in coords
                                or a.id_index == a.score_index):
            problems.append("id_index=%d is out of range or clashes with the score or the "
                            "coordinates" % a.id_index)
        if problems:
            raise ShapeError("input 'data' has records of %d values but %s: %s"
                             % (width, self.name, "; ".join(problems)))

    def forward(self, xp, inputs, aux, out, is_train):
        a = self.attrs
        data = inputs[0]
        num, width = data.shape[-2], data.shape[-1]
        records = data.reshape(-1, num, width)
        result = out[0].reshape(records.shape)
        record = out[1].reshape(records.shape[0], num)
        topk = num if a.topk < 0 else min(num, a.topk)
        if topk < 1:
            xp.copyto(result, records)
            xp.copyto(record, xp.arange(record.size).reshape(record.shape))
            return
        result.fill(-1)
        record.fill(-1)
        t = data.dtype.type
        for b in range(records.shape[0]):
            kept = self._batch(xp, records[b], topk, t)
            if kept.size:
                result[b, :kept.size] = records[b, kept]
                record[b, :kept.size] = kept + b * num
        if a.in_format != a.out_format:
            self._convert(xp, result[..., a.coord_start:a.coord_start + 4], a.out_format)

    def _batch(self, xp, rows, topk: int, t):
        """Indices of the records kept from one batch, in output order."""
        a = self.attrs
        score = rows[:, a.score_index]
        valid = score > t(xp.float32(a.valid_thresh))
        if a.id_index >= 0:
            valid = valid & (rows[:, a.id_index] != t(a.background_id))
        candidates = xp.nonzero(valid)[0]
        order = candidates[descending_order(xp, score[candidates])][:topk]
        boxes = rows[order, a.coord_start:a.coord_start + 4]
        fmt = a.in_format
        area = _area(xp, boxes, fmt)
        by_class = a.id_index >= 0 and not a.force_suppress
        cls = rows[order, a.id_index].astype("int64") if by_class else None
        thresh = t(xp.float32(a.overlap_thresh))

        def suppresses(i, rest):
            inter = (_overlap(xp, boxes[i], boxes[rest], fmt)
                     * _overlap(xp, boxes[i, 1:], boxes[rest, 1:], fmt))
            hit = inter / (area[i] + area[rest] - inter) > thresh
            return hit & (cls[rest] == cls[i]) if by_class else hit

        keep = greedy_nms(xp, order.size, suppresses)
        return order[xp.asarray(keep, dtype="int64")]

    @staticmethod
    def _convert(xp, box, fmt: str):
        """Convert boxes in place to `fmt`, skipping rows whose first value is negative."""
        t = box.dtype.type
        a0, a1, a2, a3 = (box[..., i] for i in range(4))
        if fmt == "center":
            new = [(a0 + a2) / t(2), (a1 + a3) / t(2), a2 - a0, a3 - a1]
        else:
            new = [a0 - a2 / t(2), a1 - a3 / t(2), a0 + a2 / t(2), a1 + a3 / t(2)]
        skip = (a0 < t(0))[..., None]
        box[...] = xp.where(skip, box, xp.stack(new, -1))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is None:
            return
        width = dx.shape[-1]
        record = outputs[1].reshape(-1).astype("int64")
        head = out_grads[0].reshape(-1, width)
        flat = dx.reshape(-1, width)
        flat.fill(0)
        hit = record >= 0
        flat[record[hit]] = head[hit]


# ----------------------------------------------------------------------------- bipartite

@dataclasses.dataclass(frozen=True)
class BipartiteMatchingAttrs:
    threshold: float
    is_ascend: bool = False
    topk: int = -1


@register
class BipartiteMatching(Op):
    """Greedy bipartite matching of a score matrix: data (..., R, C) -> row_marker (..., R)
    (the column matched to each row, -1 for none) and col_marker (..., C) (the row matched to
    each column).

    Per batch, the pairs are taken in order of score (descending, or ascending with
    is_ascend; ties in index order); a pair whose row and column are both free is matched if
    its score passes the threshold (> threshold, or < with is_ascend), and the first free
    pair that does not pass ends the matching. With topk > 0 the matching also ends once more
    than topk pairs are matched (so topk + 1 pairs, as MXNet's loop does). Each step finds the
    best free pair with one masked reduction, so the loop runs once per match."""

    name = "_contrib_bipartite_matching"
    Attrs = BipartiteMatchingAttrs
    PARAM_ORDER = ("is_ascend", "threshold", "topk")
    OUTPUTS = ("output0", "output1")
    no_gradient = True
    backward_inputs = ()
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        if len(data) < 2:
            raise ShapeError("input 'data' has shape %s but %s needs a (..., rows, columns) "
                             "score matrix" % (fmt_shape(data), self.name))
        self.set_out(out_shapes, 0, tuple(data[:-1]))
        self.set_out(out_shapes, 1, tuple(data[:-2]) + (data[-1],))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        a = self.attrs
        data = inputs[0]
        rows, cols = data.shape[-2], data.shape[-1]
        scores = data.reshape(-1, rows * cols)
        row_marker = out[0].reshape(-1, rows)
        col_marker = out[1].reshape(-1, cols)
        row_marker.fill(-1)
        col_marker.fill(-1)
        t = data.dtype.type
        thresh = t(xp.float32(a.threshold))
        # descending: the best free pair is the first maximum; ascending: the first minimum
        key = -scores if a.is_ascend else scores
        key = xp.where(xp.isnan(key), -xp.inf, key)
        for b in range(scores.shape[0]):
            free = xp.ones((rows, cols), dtype=bool)
            for count in range(1, min(rows, cols) + 1):
                flat = int(xp.argmax(xp.where(free.reshape(-1), key[b], -xp.inf)))
                if not bool(free.reshape(-1)[flat]):  # every free pair scores -inf
                    flat = int(xp.argmax(free.reshape(-1)))
                best = scores[b, flat]
                if not bool(best < thresh if a.is_ascend else best > thresh):
                    break
                r, c = divmod(flat, cols)
                row_marker[b, r] = c
                col_marker[b, c] = r
                if 0 < a.topk < count:
                    break
                free[r, :] = False
                free[:, c] = False

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        _zero_grads(in_grads)


# ----------------------------------------------------------------------------- encode/decode

@register
class BoxEncode(Op):
    """Regression targets of anchors towards their matched reference boxes (corner format):
    samples (B, N) (> 0.5 marks a positive anchor), matches (B, N) (index of the matched
    box in refs), anchors (B, N, 4), refs (B, M, 4), means (4,), stds (4,) -> targets
    (B, N, 4) = ((dx / w_a, dy / h_a, log(w_r / w_a), log(h_r / h_a)) - means) / stds for
    positive anchors and 0 elsewhere (d = centre of ref - centre of anchor), masks (B, N, 4)
    = 1 for positive anchors, 0 elsewhere."""

    name = "_contrib_box_encode"
    ARGUMENTS = ("samples", "matches", "anchors", "refs", "means", "stds")
    OUTPUTS = ("output0", "output1")
    no_gradient = True
    backward_inputs = ()
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        samples, matches, anchors, refs = in_shapes[:4]
        if samples is not None and len(samples) != 2:
            raise ShapeError("input 'samples' has shape %s but %s needs (B, N)"
                             % (fmt_shape(samples), self.name))
        if matches is not None and len(matches) < 2:
            raise ShapeError("input 'matches' has shape %s but %s needs (B, N)"
                             % (fmt_shape(matches), self.name))
        _last_is_4(self, anchors, "anchors", 3)
        _last_is_4(self, refs, "refs", 3)
        self.set_in(in_shapes, 4, (4,))
        self.set_in(in_shapes, 5, (4,))
        if anchors is not None:
            self.set_out(out_shapes, 0, tuple(anchors))
            self.set_out(out_shapes, 1, tuple(anchors))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        samples, matches, anchors, refs, means, stds = inputs
        b, n = anchors.shape[0], anchors.shape[1]
        t = anchors.dtype.type
        anchors = anchors.reshape(b, n, 4)
        refs = refs.reshape(b, -1, 4)
        index = xp.clip(matches.reshape(b, n).astype("int64"), 0, refs.shape[1] - 1)
        ref = xp.take_along_axis(refs, index[..., None], axis=1)  # (B, N, 4)
        half = t(0.5)

        def centre_form(box):
            w, h = box[..., 2] - box[..., 0], box[..., 3] - box[..., 1]
            return box[..., 0] + w * half, box[..., 1] + h * half, w, h

        rx, ry, rw, rh = centre_form(ref)
        ax, ay, aw, ah = centre_form(anchors)
        valid = samples.reshape(b, n) > half
        raw = xp.stack([(rx - ax) / aw, (ry - ay) / ah, xp.log(rw / aw), xp.log(rh / ah)], -1)
        target = (raw - means.astype(t)) / stds.astype(t)
        xp.copyto(out[0], xp.where(valid[..., None], target, t(0)).reshape(out[0].shape))
        xp.copyto(out[1], xp.broadcast_to(valid[..., None], (b, n, 4)).astype(t)
                  .reshape(out[1].shape))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        _zero_grads(in_grads)


@dataclasses.dataclass(frozen=True)
class BoxDecodeAttrs:
    std0: float = 1.0
    std1: float = 1.0
    std2: float = 1.0
    std3: float = 1.0
    clip: float = -1.0
    format: BoxFormat = "center"


@register
class BoxDecode(Op):
    """Decode box regressions against anchors: data (B, N, 4), anchors (1, N, 4) in `format`
    -> corner boxes (B, N, 4) with centre = (data[0] * std0 * w_a + x_a, data[1] * std1 * h_a
    + y_a) and size = (exp(data[2] * std2) * w_a, exp(data[3] * std3) * h_a), the scaled log
    sizes first capped at `clip` when clip > 0."""

    name = "_contrib_box_decode"
    Attrs = BoxDecodeAttrs
    ARGUMENTS = ("data", "anchors")
    no_gradient = True
    backward_inputs = ()
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        data, anchors = in_shapes
        if data is not None and (len(data) != 3 or data[-1] not in (None, 4)):
            raise ShapeError("input 'data' has shape %s but %s needs (B, N, 4)"
                             % (fmt_shape(data), self.name))
        _last_is_4(self, anchors, "anchors", 3)
        if data is not None:
            self.set_out(out_shapes, 0, tuple(data))
            if anchors is not None and None not in anchors and data[1] is not None \
                    and anchors[0] * anchors[1] * anchors[2] != data[1] * 4:
                raise ShapeError("input 'anchors' has shape %s but data %s needs (1, %d, 4)"
                                 % (fmt_shape(anchors), fmt_shape(data), data[1]))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        a = self.attrs
        data, anchors = inputs
        t = data.dtype.type
        anc = anchors.reshape(1, data.shape[1], 4)
        if a.format == "corner":
            aw, ah = anc[..., 2] - anc[..., 0], anc[..., 3] - anc[..., 1]
            ax, ay = anc[..., 0] + aw * t(0.5), anc[..., 1] + ah * t(0.5)
        else:
            ax, ay, aw, ah = (anc[..., i] for i in range(4))
        stds = [t(xp.float32(s)) for s in (a.std0, a.std1, a.std2, a.std3)]
        ox = data[..., 0] * stds[0] * aw + ax
        oy = data[..., 1] * stds[1] * ah + ay
        dw, dh = data[..., 2] * stds[2], data[..., 3] * stds[3]
        if a.clip > 0:
            cap = t(xp.float32(a.clip))
            dw, dh = xp.minimum(dw, cap), xp.minimum(dh, cap)
        ow = xp.exp(dw) * aw * t(0.5)
        oh = xp.exp(dh) * ah * t(0.5)
        xp.copyto(out[0], xp.stack([ox - ow, oy - oh, ox + ow, oy + oh], -1))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        _zero_grads(in_grads)
