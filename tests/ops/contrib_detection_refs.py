"""Plain-loop NumPy references of the detection operators (minimod/ops/contrib), written from
the operators' documented contracts one output element at a time, for small test inputs."""
from __future__ import annotations

import math

import numpy as np


def c_round(v):
    return math.floor(abs(v) + 0.5) * (1 if v >= 0 else -1)


# ----------------------------------------------------------------------------- ROI ops

def caffe2_bilinear(plane, y, x):
    h, w = plane.shape
    if y < -1 or y > h or x < -1 or x > w:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * plane[y0, x0] + (1 - ly) * lx * plane[y0, x1]
            + ly * (1 - lx) * plane[y1, x0] + ly * lx * plane[y1, x1])


def ref_roi_align(pooled, scale, ratio=-1, position_sensitive=False, aligned=False):
    ph_n, pw_n = pooled

    def ref(data, rois):
        c_in = data.shape[1]
        c_out = c_in // (ph_n * pw_n) if position_sensitive else c_in
        out = np.zeros((len(rois), c_out, ph_n, pw_n))
        for r, roi in enumerate(rois):
            b = int(roi[0])
            if b < 0:
                continue
            shift = 0.5 if aligned else 0.0
            x1, y1, x2, y2 = (v * scale - shift for v in roi[1:5])
            rw, rh = x2 - x1, y2 - y1
            if not aligned:
                rw, rh = max(rw, 1.0), max(rh, 1.0)
            gh = ratio if ratio > 0 else math.ceil(rh / ph_n)
            gw = ratio if ratio > 0 else math.ceil(rw / pw_n)
            for c in range(c_out):
                for ph in range(ph_n):
                    for pw in range(pw_n):
                        ch = c * ph_n * pw_n + ph * pw_n + pw if position_sensitive else c
                        acc = 0.0
                        for iy in range(gh):
                            y = y1 + ph * rh / ph_n + (iy + 0.5) * rh / ph_n / gh
                            for ix in range(gw):
                                x = x1 + pw * rw / pw_n + (ix + 0.5) * rw / pw_n / gw
                                acc += caffe2_bilinear(data[b, ch], y, x)
                        out[r, c, ph, pw] = acc / (gh * gw)
        return [out]
    return ref


def ref_rroi_align(pooled, scale, ratio=-1):
    ph_n, pw_n = pooled

    def ref(data, rois):
        out = np.zeros((len(rois), data.shape[1], ph_n, pw_n))
        for r, roi in enumerate(rois):
            b = int(roi[0])
            cx, cy, rw, rh = (v * scale for v in roi[1:5])
            rw, rh = max(rw, 1.0), max(rh, 1.0)
            theta = roi[5] * math.pi / 180
            gh = ratio if ratio > 0 else math.ceil(rh / ph_n)
            gw = ratio if ratio > 0 else math.ceil(rw / pw_n)
            for c in range(data.shape[1]):
                for ph in range(ph_n):
                    for pw in range(pw_n):
                        acc = 0.0
                        for iy in range(gh):
                            yy = -rh / 2 + ph * rh / ph_n + (iy + 0.5) * rh / ph_n / gh
                            for ix in range(gw):
                                xx = -rw / 2 + pw * rw / pw_n + (ix + 0.5) * rw / pw_n / gw
                                x = xx * math.cos(theta) + yy * math.sin(theta) + cx
                                y = yy * math.cos(theta) - xx * math.sin(theta) + cy
                                acc += caffe2_bilinear(data[b, c], y, x)
                        out[r, c, ph, pw] = acc / (gh * gw)
        return [out]
    return ref


def _rfcn_box(roi, scale, shift):
    x1, y1 = c_round(roi[1]) * scale - shift, c_round(roi[2]) * scale - shift
    x2, y2 = (c_round(roi[3]) + 1) * scale - shift, (c_round(roi[4]) + 1) * scale - shift
    return x1, y1, max(x2 - x1, 0.1), max(y2 - y1, 0.1)


def ref_psroi_pooling(scale, output_dim, pooled, group=0):
    group = group or pooled

    def ref(data, rois):
        _, _, h, w = data.shape
        out = np.zeros((len(rois), output_dim, pooled, pooled))
        for r, roi in enumerate(rois):
            b = int(roi[0])
            x1, y1, rw, rh = _rfcn_box(roi, scale, 0.0)
            for c in range(output_dim):
                for ph in range(pooled):
                    for pw in range(pooled):
                        h0 = min(max(math.floor(ph * rh / pooled + y1), 0), h)
                        h1 = min(max(math.ceil((ph + 1) * rh / pooled + y1), 0), h)
                        w0 = min(max(math.floor(pw * rw / pooled + x1), 0), w)
                        w1 = min(max(math.ceil((pw + 1) * rw / pooled + x1), 0), w)
                        gh = min(max(ph * group // pooled, 0), group - 1)
                        gw = min(max(pw * group // pooled, 0), group - 1)
                        ch = (c * group + gh) * group + gw
                        if h1 > h0 and w1 > w0:
                            out[r, c, ph, pw] = data[b, ch, h0:h1, w0:w1].mean()
        return [out]
    return ref


def plain_bilinear(plane, y, x):
    y0, y1, x0, x1 = math.floor(y), math.ceil(y), math.floor(x), math.ceil(x)
    dy, dx = y - y0, x - x0
    return ((1 - dx) * (1 - dy) * plane[y0, x0] + (1 - dx) * dy * plane[y1, x0]
            + dx * (1 - dy) * plane[y0, x1] + dx * dy * plane[y1, x1])


def ref_deformable_psroi(scale, output_dim, group, pooled, part=0, spp=1, trans_std=0.0,
                         no_trans=False):
    part = part or pooled

    def ref(data, rois, trans=None):
        _, _, h, w = data.shape
        classes = 1 if no_trans else trans.shape[1] // 2
        per_class = output_dim // classes
        out = np.zeros((len(rois), output_dim, pooled, pooled))
        for r, roi in enumerate(rois):
            b = int(roi[0])
            x1, y1, rw, rh = _rfcn_box(roi, scale, 0.5)
            for c in range(output_dim):
                k = c // per_class
                for ph in range(pooled):
                    for pw in range(pooled):
                        i, j = int(ph / pooled * part), int(pw / pooled * part)
                        tx = 0.0 if no_trans else trans[r, 2 * k, i, j] * trans_std
                        ty = 0.0 if no_trans else trans[r, 2 * k + 1, i, j] * trans_std
                        gh = min(ph * group // pooled, group - 1)
                        gw = min(pw * group // pooled, group - 1)
                        ch = (c * group + gh) * group + gw
                        total, count = 0.0, 0
                        for ih in range(spp):
                            for iw in range(spp):
                                y = ph * rh / pooled + y1 + ty * rh + ih * rh / pooled / spp
                                x = pw * rw / pooled + x1 + tx * rw + iw * rw / pooled / spp
                                if x < -0.5 or x > w - 0.5 or y < -0.5 or y > h - 0.5:
                                    continue
                                x, y = min(max(x, 0), w - 1), min(max(y, 0), h - 1)
                                total += plain_bilinear(data[b, ch], y, x)
                                count += 1
                        out[r, c, ph, pw] = total / count if count else 0.0
        return [out]
    return ref


# ----------------------------------------------------------------------------- deformable conv

def dcn_sample(plane, y, x):
    h, w = plane.shape
    if not (0 <= y < h and 0 <= x < w):
        return 0.0
    y0, x0 = math.floor(y), math.floor(x)
    ly, lx = y - y0, x - x0
    if y0 >= h - 1:
        y1, ly = y0, 0.0
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x1, lx = x0, 0.0
    else:
        x1 = x0 + 1
    return ((1 - ly) * (1 - lx) * plane[y0, x0] + (1 - ly) * lx * plane[y0, x1]
            + ly * (1 - lx) * plane[y1, x0] + ly * lx * plane[y1, x1])


def ref_deformable_conv(kernel, num_filter, stride=(1, 1), dilate=(1, 1), pad=(0, 0),
                        groups=1, deformable_groups=1):
    kh, kw = kernel

    def ref(data, offset, weight, bias=None):
        n, c, h, w = data.shape
        ho, wo = offset.shape[2:]
        cg, fg, cdg = c // groups, num_filter // groups, c // deformable_groups
        out = np.zeros((n, num_filter, ho, wo))
        for b in range(n):
            for f in range(num_filter):
                g = f // fg
                for oy in range(ho):
                    for ox in range(wo):
                        acc = 0.0 if bias is None else float(bias[f])
                        for ci in range(cg):
                            ch = g * cg + ci
                            d = ch // cdg
                            for i in range(kh):
                                for j in range(kw):
                                    k = i * kw + j
                                    y = (oy * stride[0] - pad[0] + i * dilate[0]
                                         + offset[b, d * 2 * kh * kw + 2 * k, oy, ox])
                                    x = (ox * stride[1] - pad[1] + j * dilate[1]
                                         + offset[b, d * 2 * kh * kw + 2 * k + 1, oy, ox])
                                    acc += weight[f, ci, i, j] * dcn_sample(data[b, ch], y, x)
                        out[b, f, oy, ox] = acc
        return [out]
    return ref


# ----------------------------------------------------------------------------- boxes

def _corner(box, fmt):
    if fmt == "corner":
        return tuple(box)
    x, y, w, h = box
    return x - w / 2, y - h / 2, x + w / 2, y + h / 2


def iou(a, b, fmt="corner", plus_one=0.0):
    a, b = _corner(a, fmt), _corner(b, fmt)
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]) + plus_one)
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]) + plus_one)
    inter = iw * ih

    def area(v):
        w, h = v[2] - v[0] + plus_one, v[3] - v[1] + plus_one
        return 0.0 if w < 0 or h < 0 else w * h
    if inter <= 0:
        return 0.0
    return inter / (area(a) + area(b) - inter)


def ref_box_iou(fmt="corner"):
    def ref(lhs, rhs):
        a, b = lhs.reshape(-1, 4), rhs.reshape(-1, 4)
        out = np.array([[iou(x, y, fmt) for y in b] for x in a])
        return [out.reshape(lhs.shape[:-1] + rhs.shape[:-1])]
    return ref


def ref_box_nms(overlap=0.5, valid=0.0, topk=-1, coord=2, score=1, id_index=-1,
                background=-1, force=False, in_format="corner", out_format="corner"):
    def ref(data):
        num, width = data.shape[-2:]
        rows = data.reshape(-1, num, width)
        out = -np.ones_like(rows, dtype=np.float64)
        for b, recs in enumerate(rows):
            cand = [i for i in range(num) if recs[i, score] > valid
                    and (id_index < 0 or recs[i, id_index] != background)]
            cand.sort(key=lambda i: -recs[i, score])
            if topk >= 0:
                cand = cand[:topk]
            kept = []
            for i in cand:
                if all(not ((force or id_index < 0 or int(recs[k, id_index])
                             == int(recs[i, id_index]))
                            and iou(recs[k, coord:coord + 4], recs[i, coord:coord + 4],
                                    in_format) > overlap) for k in kept):
                    kept.append(i)
            for slot, i in enumerate(kept):
                out[b, slot] = recs[i]
                box = out[b, slot, coord:coord + 4]
                if in_format != out_format and box[0] >= 0:
                    if out_format == "center":
                        box[:] = [(box[0] + box[2]) / 2, (box[1] + box[3]) / 2,
                                  box[2] - box[0], box[3] - box[1]]
                    else:
                        box[:] = [box[0] - box[2] / 2, box[1] - box[3] / 2,
                                  box[0] + box[2] / 2, box[1] + box[3] / 2]
        return [out.reshape(data.shape)]
    return ref


def ref_bipartite(threshold, is_ascend=False, topk=-1):
    def ref(data):
        rows, cols = data.shape[-2:]
        flat = data.reshape(-1, rows, cols)
        rmark = -np.ones((flat.shape[0], rows))
        cmark = -np.ones((flat.shape[0], cols))
        for b, scores in enumerate(flat):
            pairs = sorted(range(rows * cols),
                           key=lambda p: scores.flat[p] if is_ascend else -scores.flat[p])
            count = 0
            for p in pairs:
                r, c = divmod(p, cols)
                if rmark[b, r] != -1 or cmark[b, c] != -1:
                    continue
                s = scores.flat[p]
                if not (s < threshold if is_ascend else s > threshold):
                    break
                rmark[b, r], cmark[b, c] = c, r
                count += 1
                if 0 < topk < count:
                    break
        return [rmark.reshape(data.shape[:-1]), cmark.reshape(data.shape[:-2] + (cols,))]
    return ref


def _centre(box):
    w, h = box[2] - box[0], box[3] - box[1]
    return box[0] + w / 2, box[1] + h / 2, w, h


def ref_box_encode(samples, matches, anchors, refs, means, stds):
    out = np.zeros(anchors.shape)
    mask = np.zeros(anchors.shape)
    for b in range(anchors.shape[0]):
        for i in range(anchors.shape[1]):
            if samples[b, i] <= 0.5:
                continue
            rx, ry, rw, rh = _centre(refs[b, int(matches[b, i])])
            ax, ay, aw, ah = _centre(anchors[b, i])
            raw = [(rx - ax) / aw, (ry - ay) / ah, math.log(rw / aw), math.log(rh / ah)]
            out[b, i] = [(v - m) / s for v, m, s in zip(raw, means, stds)]
            mask[b, i] = 1
    return [out, mask]


def ref_box_decode(stds=(1, 1, 1, 1), clip=-1.0, fmt="center"):
    def ref(data, anchors):
        out = np.zeros(data.shape)
        for b in range(data.shape[0]):
            for i in range(data.shape[1]):
                a = anchors.reshape(-1, 4)[i]
                ax, ay, aw, ah = _centre(a) if fmt == "corner" else a
                d = [v * s for v, s in zip(data[b, i], stds)]
                if clip > 0:
                    d[2], d[3] = min(d[2], clip), min(d[3], clip)
                ox, oy = d[0] * aw + ax, d[1] * ah + ay
                ow, oh = math.exp(d[2]) * aw / 2, math.exp(d[3]) * ah / 2
                out[b, i] = [ox - ow, oy - oh, ox + ow, oy + oh]
        return [out]
    return ref


# ----------------------------------------------------------------------------- SSD

def ref_multibox_prior(sizes, ratios, clip=False, steps=(-1, -1), offsets=(0.5, 0.5)):
    def ref(data):
        h, w = data.shape[2:4]
        sy, sx = steps if steps[0] > 0 and steps[1] > 0 else (1 / h, 1 / w)
        boxes = []
        for r in range(h):
            for c in range(w):
                cy, cx = (r + offsets[0]) * sy, (c + offsets[1]) * sx
                first = math.sqrt(ratios[0])  # the size anchors take the first ratio
                shapes = [(s * h / w * first / 2, s / first / 2) for s in sizes]
                shapes += [(sizes[0] * h / w * math.sqrt(q) / 2, sizes[0] / math.sqrt(q) / 2)
                           for q in ratios[1:]]
                boxes += [[cx - hw, cy - hh, cx + hw, cy + hh] for hw, hh in shapes]
        out = np.array(boxes)[None]
        return [np.clip(out, 0, 1) if clip else out]
    return ref


def ref_multibox_target(overlap=0.5, ignore=-1.0, mining_ratio=-1.0, mining_thresh=0.5,
                        variances=(0.1, 0.1, 0.2, 0.2)):
    def ref(anchor, label, cls_pred):
        anchors = anchor.reshape(-1, 4)
        num = len(anchors)
        batch = label.shape[0]
        loc = np.zeros((batch, num, 4))
        mask = np.zeros((batch, num, 4))
        cls = np.full((batch, num), ignore, dtype=np.float64)
        for b in range(batch):
            gts = []
            for row in label[b]:
                if row[0] == -1:
                    break
                gts.append(row)
            if not gts:
                continue
            ious = np.array([[iou(a, g[1:5]) for g in gts] for a in anchors])
            match = [-1] * num
            best = [-1.0] * num
            flag = [-1] * num
            gt_done = [False] * len(gts)
            while not all(gt_done):
                pick, top = None, 1e-6
                for j in range(num):
                    for k in range(len(gts)):
                        if flag[j] != 1 and not gt_done[k] and ious[j, k] > top:
                            pick, top = (j, k), ious[j, k]
                if pick is None:
                    break
                j, k = pick
                match[j], best[j], flag[j], gt_done[k] = k, top, 1, True
            for j in range(num):
                if flag[j] == 1:
                    continue
                k = int(np.argmax(ious[j]))
                match[j], best[j] = k, ious[j, k]
                if overlap > 0 and ious[j, k] > overlap:
                    flag[j] = 1
            positives = sum(f == 1 for f in flag)
            if mining_ratio > 0:
                want = min(int(positives * mining_ratio), num - positives)
                pool = []
                for j in range(num):
                    if flag[j] != 1 and best[j] < mining_thresh:
                        z = cls_pred[b, :, j] - cls_pred[b, :, j].max()
                        pool.append((math.exp(z[0]) / np.exp(z).sum(), j))
                pool.sort(key=lambda e: e[0])
                for _, j in pool[:max(want, 0)]:
                    flag[j] = 0
            else:
                flag = [1 if f == 1 else 0 for f in flag]
            for j in range(num):
                if flag[j] == 1:
                    g = gts[match[j]]
                    ax, ay, aw, ah = _centre(anchors[j])
                    gx, gy, gw, gh = _centre(g[1:5])
                    loc[b, j] = [(gx - ax) / aw / variances[0], (gy - ay) / ah / variances[1],
                                 math.log(gw / aw) / variances[2],
                                 math.log(gh / ah) / variances[3]]
                    mask[b, j] = 1
                    cls[b, j] = g[0] + 1
                elif flag[j] == 0:
                    cls[b, j] = 0
        return [loc.reshape(batch, -1), mask.reshape(batch, -1), cls]
    return ref


def ref_multibox_detection(clip=True, threshold=0.01, nms_threshold=0.5, force=False,
                           variances=(0.1, 0.1, 0.2, 0.2), nms_topk=-1):
    def ref(cls_prob, loc_pred, anchor):
        batch, classes, num = cls_prob.shape
        anchors = anchor.reshape(-1, 4)
        out = -np.ones((batch, num, 6))
        for b in range(batch):
            found = []
            for i in range(num):
                probs = cls_prob[b, 1:, i]
                k = int(np.argmax(probs)) if classes > 1 else -1
                if k < 0 or probs[k] < threshold:
                    continue
                ax, ay, aw, ah = _centre(anchors[i])
                p = loc_pred[b, 4 * i:4 * i + 4]
                ox, oy = p[0] * variances[0] * aw + ax, p[1] * variances[1] * ah + ay
                ow = math.exp(p[2] * variances[2]) * aw / 2
                oh = math.exp(p[3] * variances[3]) * ah / 2
                box = [ox - ow, oy - oh, ox + ow, oy + oh]
                if clip:
                    box = [min(max(v, 0.0), 1.0) for v in box]
                found.append([k, probs[k]] + box)
            if found and 0 < nms_threshold <= 1:
                order = sorted(range(len(found)), key=lambda i: -found[i][1])
                keep_n = nms_topk if 0 < nms_topk < len(found) else len(found)
                head = [list(found[i]) for i in order[:keep_n]]  # before the cut below
                for i in range(keep_n, len(found)):
                    found[i][0] = -1
                for i in range(keep_n):
                    if head[i][0] < 0:
                        continue
                    for j in range(i + 1, keep_n):
                        if head[j][0] >= 0 and (force or head[i][0] == head[j][0]) and \
                                iou(head[i][2:], head[j][2:]) >= nms_threshold:
                            head[j][0] = -1
                found[:keep_n] = head
            for i, row in enumerate(found):
                out[b, i] = row
        return [out]
    return ref


# ----------------------------------------------------------------------------- proposals

def ref_anchors(stride, ratios, scales):
    out = []
    ctr = 0.5 * (stride - 1)
    for q in ratios:
        for s in scales:
            w = math.floor(math.sqrt(math.floor(stride * stride / q)) + 0.5) * s
            h = math.floor(w / s * q + 0.5) * s
            out.append([ctr - 0.5 * (w - 1), ctr - 0.5 * (h - 1),
                        ctr + 0.5 * (w - 1), ctr + 0.5 * (h - 1)])
    return out


def ref_proposal(pre=6000, post=300, threshold=0.7, min_size=16, scales=(4, 8, 16, 32),
                 ratios=(0.5, 1, 2), stride=16, iou_loss=False, multi=False):
    def image(scores, deltas, info, b):
        na, h, w = scores.shape
        base = ref_anchors(stride, ratios, scales)
        boxes, conf = [], []
        real_h, real_w = int(info[0] / stride), int(info[1] / stride)
        for y in range(h):
            for x in range(w):
                for a in range(na):
                    x1, y1 = base[a][0] + x * stride, base[a][1] + y * stride
                    x2, y2 = base[a][2] + x * stride, base[a][3] + y * stride
                    d = deltas[4 * a:4 * a + 4, y, x]
                    if iou_loss:
                        box = [x1 + d[0], y1 + d[1], x2 + d[2], y2 + d[3]]
                    else:
                        bw, bh = x2 - x1 + 1, y2 - y1 + 1
                        cx, cy = x1 + 0.5 * (bw - 1), y1 + 0.5 * (bh - 1)
                        cx, cy = d[0] * bw + cx, d[1] * bh + cy
                        pw, ph = math.exp(d[2]) * bw, math.exp(d[3]) * bh
                        box = [cx - 0.5 * (pw - 1), cy - 0.5 * (ph - 1),
                               cx + 0.5 * (pw - 1), cy + 0.5 * (ph - 1)]
                    lim = [info[1] - 1, info[0] - 1] * 2
                    box = [min(max(v, 0.0), m) for v, m in zip(box, lim)]
                    s = scores[a, y, x] if y < real_h and x < real_w else -1.0
                    ms = min_size * info[2]
                    if box[2] - box[0] + 1 < ms or box[3] - box[1] + 1 < ms:
                        box = [box[0] - ms / 2, box[1] - ms / 2, box[2] + ms / 2,
                               box[3] + ms / 2]
                        s = -1.0
                    boxes.append(box)
                    conf.append(s)
        order = sorted(range(len(conf)), key=lambda i: -conf[i])
        top = pre if pre > 0 else len(order)
        order = order[:min(top, len(order))]
        limit = min(post, len(order))
        kept = []
        for i in order:
            if len(kept) >= limit:
                break
            if all(iou(boxes[k], boxes[i], plus_one=1.0) <= threshold for k in kept):
                kept.append(i)
        rows = [kept[i % len(kept)] for i in range(post)]
        return ([[b] + boxes[i] for i in rows], [[conf[i]] for i in rows])

    def ref(cls_prob, bbox_pred, im_info):
        na = cls_prob.shape[1] // 2
        outs, scores = [], []
        for b in range(cls_prob.shape[0]):
            o, s = image(cls_prob[b, na:], bbox_pred[b], im_info[b], b)
            outs += o
            scores += s
        return [np.array(outs), np.array(scores)]
    return ref
