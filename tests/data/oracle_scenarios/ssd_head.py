"""An SSD-style detection head trained 3 SGD steps: a small conv body, MultiBoxPrior anchors,
MultiBoxTarget (hard negative mining) feeding a SoftmaxOutput class loss and a smooth_l1
MakeLoss location loss, then MultiBoxDetection with non-maximum suppression in inference;
also ROIAlign / ROIPooling over the feature map and box_nms / box_iou on the detections."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import det_params, to_nd, train_steps  # noqa: E402

N, CLASSES = 2, 3


def _net(mx):
    data = mx.sym.Variable("data")  # (N, 3, 16, 16)
    label = mx.sym.Variable("label")  # (N, 3 objects, 5)
    body = mx.sym.Activation(mx.sym.Convolution(data, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                                num_filter=8, name="c1"), act_type="relu")
    feat = mx.sym.Activation(mx.sym.Convolution(body, kernel=(3, 3), stride=(2, 2),
                                                pad=(1, 1), num_filter=8, name="c2"),
                             act_type="relu")  # (N, 8, 4, 4)
    anchors = mx.sym.contrib.MultiBoxPrior(feat, sizes=(0.3, 0.6), ratios=(1, 2),
                                           clip=True, name="anchors")  # 3 per cell
    cls = mx.sym.Convolution(feat, kernel=(3, 3), pad=(1, 1), num_filter=3 * (CLASSES + 1),
                             name="cls")
    loc = mx.sym.Convolution(feat, kernel=(3, 3), pad=(1, 1), num_filter=3 * 4, name="loc")
    cls = mx.sym.Reshape(mx.sym.transpose(cls, axes=(0, 2, 3, 1)), shape=(0, -1, CLASSES + 1))
    cls = mx.sym.transpose(cls, axes=(0, 2, 1))  # (N, classes + 1, anchors)
    loc = mx.sym.Flatten(mx.sym.transpose(loc, axes=(0, 2, 3, 1)))
    loc_target, loc_mask, cls_target = mx.sym.contrib.MultiBoxTarget(
        anchors, label, cls, overlap_threshold=0.4, negative_mining_ratio=3,
        negative_mining_thresh=0.5, variances=(0.1, 0.1, 0.2, 0.2), name="target")
    cls_prob = mx.sym.SoftmaxOutput(cls, cls_target, multi_output=True, use_ignore=True,
                                    ignore_label=-1, normalization="valid", name="cls_prob")
    loc_loss = mx.sym.MakeLoss(mx.sym.smooth_l1(loc_mask * (loc - loc_target), scalar=1.0),
                               normalization="valid", name="loc_loss")
    det = mx.sym.contrib.MultiBoxDetection(cls_prob, loc, anchors, nms_threshold=0.5,
                                           force_suppress=False, nms_topk=20,
                                           variances=(0.1, 0.1, 0.2, 0.2), name="det")
    rois = mx.sym.Variable("rois")
    align = mx.sym.contrib.ROIAlign(feat, rois, pooled_size=(2, 2), spatial_scale=0.25,
                                    sample_ratio=2, name="align")
    pool = mx.sym.ROIPooling(feat, rois, pooled_size=(2, 2), spatial_scale=0.25, name="roip")
    roi_loss = mx.sym.MakeLoss(mx.sym.mean(align + pool) * 0.1)
    return mx.sym.Group([cls_prob, loc_loss, mx.sym.BlockGrad(cls_target),
                         mx.sym.BlockGrad(det), roi_loss])


def run(mx):
    rng = np.random.RandomState(47)
    x = rng.uniform(-1, 1, size=(3 * N, 3, 16, 16)).astype(np.float32)
    boxes = []
    for _ in range(3 * N):
        rows = []
        for k in range(3):
            x0, y0 = rng.uniform(0, 0.6, 2)
            w, h = rng.uniform(0.2, 0.4, 2)
            box = [rng.randint(0, CLASSES), x0, y0, x0 + w, y0 + h]
            rows.append(box if k < 2 else [-1] * 5)  # the third is padding
        boxes.append(rows)
    labels = np.array(boxes, np.float32)
    rois = np.array([[0, 0, 0, 8, 8], [1, 2, 2, 14, 10], [0, 4, 1, 12, 15]], np.float32)
    with mx.name.NameManager():
        sym = _net(mx)
    shapes = dict(data=(N, 3, 16, 16), label=(N, 3, 5), rois=(3, 5))
    args, auxs = det_params(sym, scale=0.2, **shapes)
    mod = mx.mod.Module(sym, data_names=["data", "rois"], label_names=["label"],
                        context=mx.cpu())
    mod.bind(data_shapes=[("data", shapes["data"]),
                          mx.io.DataDesc("rois", (3, 5), layout="C")],
             label_shapes=[("label", shapes["label"])], inputs_need_grad=True)
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.05,
                                                          "momentum": 0.9})
    out = train_steps(mx, mod, [
        mx.io.DataBatch([mx.nd.array(x[N * i:N * (i + 1)]), mx.nd.array(rois)],
                        [mx.nd.array(labels[N * i:N * (i + 1)])]) for i in range(3)])
    det = mod.get_outputs()[3]
    flat = mx.nd.reshape(det, shape=(-1, 6))
    out["nms"] = mx.nd.contrib.box_nms(flat, overlap_thresh=0.3, coord_start=2, score_index=1,
                                       id_index=0, force_suppress=True).asnumpy()
    out["iou"] = mx.nd.contrib.box_iou(mx.nd.array(labels[0, :2, 1:]),
                                       mx.nd.array(labels[1, :2, 1:])).asnumpy()
    return out
