"""Write contrib_detection_golden.npz: outputs and input gradients of MXNet 1.9.1's detection
operators (ROIAlign, RROIAlign, PSROIPooling, DeformablePSROIPooling, DeformableConvolution,
Proposal, MultiProposal, box_iou, box_nms, bipartite_matching, box_encode, box_decode,
MultiBoxPrior, MultiBoxTarget, MultiBoxDetection).

Run with an MXNet 1.9.1 environment (not needed by the tests):
    OMP_NUM_THREADS=1 python tests/data/ops/gen_contrib_detection_golden.py
Each case stores its inputs, the op's registered name and attrs (JSON), every visible output,
one head gradient per visible output and the gradients of the differentiated inputs.
"""
import json
import os

os.environ.setdefault("MXNET_MKLDNN_ENABLED", "0")  # the reference kernels, not oneDNN's

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

rs = np.random.RandomState(7)


def r(*shape, scale=1.0):
    return (rs.randn(*shape) * scale).astype("float32")


def u(lo, hi, *shape):
    return rs.uniform(lo, hi, shape).astype("float32")


def f32(rows):
    return np.array(rows, dtype="float32")


ROIS = f32([[0, 1.2, 0.7, 13.3, 10.1], [1, -4.0, -2.5, 6.0, 9.0], [1, 0.5, 0.5, 0.9, 0.9],
            [0, 2.5, 3.5, 17.5, 15.5], [1, 30.0, 2.0, 44.0, 12.0]])
RROIS = f32([[0, 8.0, 6.0, 10.0, 6.0, 30.0], [1, 4.0, 9.0, 20.0, 4.5, 135.0],
             [1, 12.5, 3.0, 1.0, 0.5, -60.0], [0, 0.0, 0.0, 7.0, 7.0, 0.0]])
PS_ROIS = f32([[0, 1.5, 2.5, 12.0, 10.0], [1, 0.0, 0.0, 17.0, 13.0], [1, 6.5, 4.5, 7.5, 5.2],
               [0, -3.0, 4.0, 9.5, 30.0]])
DPS_ROIS = f32([[0, 3.0, 2.0, 12.0, 10.0], [1, 4.4, 3.6, 14.0, 12.0], [0, 6.5, 4.5, 11.5, 9.5]])


def _boxes(n, lo=0.0, hi=1.0):
    a = rs.uniform(lo, hi, (n, 2))
    b = a + rs.uniform(0.05, 0.5, (n, 2)) * (hi - lo)
    return np.concatenate([a, b], 1).astype("float32")


def _nms_records(batch, count, classes=3):
    ids = rs.randint(0, classes, (batch, count, 1)).astype("float32")
    scores = rs.uniform(0, 1, (batch, count, 1)).astype("float32")
    corner = rs.uniform(0, 4, (batch, count, 2))
    boxes = np.concatenate([corner, corner + rs.uniform(1, 3, (batch, count, 2))], -1)
    return np.concatenate([ids, scores, boxes], -1).astype("float32")


def _prop_inputs(batch, anchors, h, w, im):
    cls = u(0, 1, batch, 2 * anchors, h, w)
    bbox = r(batch, 4 * anchors, h, w, scale=0.3)
    return [cls, bbox, f32(im)]


_MBT_LABELS = f32([[[1, 0.1, 0.1, 0.45, 0.5], [0, 0.5, 0.4, 0.9, 0.95], [2, 0.3, 0.6, 0.6, 0.8],
                    [-1, -1, -1, -1, -1]],
                   [[0, 0.0, 0.0, 0.3, 0.3], [-1, -1, -1, -1, -1], [-1, -1, -1, -1, -1],
                    [-1, -1, -1, -1, -1]]])

# name: (registered op, attrs, [inputs], differentiate inputs)
CASES = {
    "roialign": ("_contrib_ROIAlign", dict(pooled_size=(2, 3), spatial_scale=0.5),
                 [r(2, 3, 7, 9), ROIS], [0]),
    "roialign_ratio2": ("_contrib_ROIAlign", dict(pooled_size=(3, 2), spatial_scale=0.5,
                                                  sample_ratio=2), [r(2, 2, 7, 9), ROIS], [0]),
    "roialign_ps": ("_contrib_ROIAlign", dict(pooled_size=(2, 2), spatial_scale=0.5,
                                              position_sensitive=True),
                    [r(2, 8, 7, 9), ROIS], [0]),
    "roialign_aligned": ("_contrib_ROIAlign", dict(pooled_size=(2, 2), spatial_scale=0.5,
                                                   aligned=True, sample_ratio=3),
                         [r(2, 2, 7, 9), ROIS], [0]),
    "rroialign": ("_contrib_RROIAlign", dict(pooled_size=(2, 3), spatial_scale=1.0),
                  [r(2, 2, 12, 14), RROIS], []),
    "rroialign_ratio2": ("_contrib_RROIAlign", dict(pooled_size=(3, 3), spatial_scale=0.8,
                                                    sampling_ratio=2),
                         [r(2, 2, 12, 14), RROIS], []),
    "psroipool": ("_contrib_PSROIPooling", dict(spatial_scale=0.5, output_dim=2,
                                                pooled_size=3),
                  [r(2, 18, 8, 9), PS_ROIS], [0]),
    "psroipool_group": ("_contrib_PSROIPooling", dict(spatial_scale=0.5, output_dim=3,
                                                      pooled_size=3, group_size=2),
                        [r(2, 12, 8, 9), PS_ROIS], [0]),
    "dpsroipool": ("_contrib_DeformablePSROIPooling",
                   dict(spatial_scale=0.5, output_dim=2, group_size=2, pooled_size=2,
                        sample_per_part=2, trans_std=0.1),
                   [r(2, 8, 8, 9), DPS_ROIS, u(-0.6, 0.6, 3, 4, 2, 2)], [0, 2]),
    "dpsroipool_parts": ("_contrib_DeformablePSROIPooling",
                         dict(spatial_scale=0.5, output_dim=4, group_size=2, pooled_size=3,
                              part_size=2, sample_per_part=3, trans_std=0.2),
                         [r(2, 16, 8, 9), DPS_ROIS, u(-0.6, 0.6, 3, 4, 2, 2)], [0, 2]),
    "dpsroipool_notrans": ("_contrib_DeformablePSROIPooling",
                           dict(spatial_scale=0.5, output_dim=2, group_size=3, pooled_size=3,
                                sample_per_part=2, no_trans=True),
                           [r(2, 18, 8, 9), DPS_ROIS], [0]),
    "dcn": ("_contrib_DeformableConvolution", dict(kernel=(3, 3), num_filter=4, pad=(1, 1)),
            [r(2, 3, 5, 6), u(-1.5, 1.5, 2, 18, 5, 6), r(4, 3, 3, 3, scale=0.3), r(4)],
            [0, 1, 2, 3]),
    "dcn_groups": ("_contrib_DeformableConvolution",
                   dict(kernel=(3, 2), num_filter=4, num_group=2, num_deformable_group=2,
                        stride=(2, 1), dilate=(1, 2), pad=(1, 1), no_bias=True),
                   [r(1, 4, 7, 6), u(-2, 2, 1, 24, 4, 6), r(4, 2, 3, 2, scale=0.3)],
                   [0, 1, 2]),
    "proposal": ("_contrib_Proposal", dict(scales=(2, 4), ratios=(0.5, 1, 2), feature_stride=8,
                                           rpn_pre_nms_top_n=60, rpn_post_nms_top_n=20,
                                           rpn_min_size=4, output_score=True),
                 _prop_inputs(1, 6, 6, 7, [[40, 50, 1.2]]), []),
    "proposal_iou": ("_contrib_Proposal", dict(scales=(2,), ratios=(1,), feature_stride=8,
                                               rpn_pre_nms_top_n=-1, rpn_post_nms_top_n=30,
                                               threshold=0.5, rpn_min_size=2, iou_loss=True,
                                               output_score=True),
                     _prop_inputs(1, 1, 5, 5, [[36, 30, 1.0]]), []),
    "multiproposal": ("_contrib_MultiProposal",
                      dict(scales=(2, 4), ratios=(1, 2), feature_stride=8,
                           rpn_pre_nms_top_n=40, rpn_post_nms_top_n=12, rpn_min_size=3,
                           threshold=0.6, output_score=True),
                      _prop_inputs(2, 4, 5, 6, [[40, 48, 1.0], [33, 20, 0.8]]), []),
    "box_iou": ("_contrib_box_iou", dict(), [_boxes(5), _boxes(3).reshape(1, 3, 4)], []),
    "box_iou_center": ("_contrib_box_iou", dict(format="center"),
                       [_boxes(4).reshape(2, 2, 4), _boxes(3)], []),
    "box_nms": ("_contrib_box_nms", dict(overlap_thresh=0.3), [_nms_records(2, 12)], [0]),
    "box_nms_ids": ("_contrib_box_nms", dict(overlap_thresh=0.2, valid_thresh=0.2, topk=6,
                                             id_index=0, background_id=2,
                                             out_format="center"),
                    [_nms_records(2, 10)], [0]),
    "box_nms_force": ("_contrib_box_nms", dict(overlap_thresh=0.25, id_index=0,
                                               force_suppress=True, in_format="center",
                                               coord_start=2, score_index=1),
                      [_nms_records(1, 9)], [0]),
    "bipartite": ("_contrib_bipartite_matching", dict(threshold=0.2),
                  [u(0, 1, 2, 4, 5)], []),
    "bipartite_asc_topk": ("_contrib_bipartite_matching",
                           dict(threshold=0.7, is_ascend=True, topk=2), [u(0, 1, 5, 3)], []),
    "box_encode": ("_contrib_box_encode", dict(),
                   [f32([[1, 0, 1, 1], [0, 1, 1, 0]]), f32([[0, 1, 2, 1], [1, 0, 0, 2]]),
                    np.stack([_boxes(4), _boxes(4)]), np.stack([_boxes(3), _boxes(3)]),
                    f32([0.1, -0.1, 0.0, 0.2]), f32([0.1, 0.1, 0.2, 0.2])], []),
    "box_decode": ("_contrib_box_decode", dict(std0=0.1, std1=0.1, std2=0.2, std3=0.2),
                   [r(2, 4, 4), np.abs(r(1, 4, 4)) + 0.2], []),
    "box_decode_corner_clip": ("_contrib_box_decode", dict(format="corner", clip=0.5),
                               [r(2, 3, 4), _boxes(3).reshape(1, 3, 4)], []),
    "mbprior": ("_contrib_MultiBoxPrior", dict(sizes=(0.5, 0.25, 0.1), ratios=(1, 2, 0.5)),
                [r(1, 2, 3, 5)], []),
    "mbprior_steps_clip": ("_contrib_MultiBoxPrior",
                           dict(sizes=(0.7,), ratios=(1, 3), steps=(0.3, 0.2),
                                offsets=(0.2, 0.7), clip=True), [r(2, 2, 4, 3)], []),
    "mbtarget": ("_contrib_MultiBoxTarget", dict(),
                 [_boxes(16, 0, 0.8).reshape(1, 16, 4), _MBT_LABELS, r(2, 4, 16)], []),
    "mbtarget_mining": ("_contrib_MultiBoxTarget",
                        dict(overlap_threshold=0.3, negative_mining_ratio=2,
                             negative_mining_thresh=0.4, ignore_label=-2,
                             variances=(0.2, 0.1, 0.3, 0.4)),
                        [_boxes(16, 0, 0.8).reshape(1, 16, 4), _MBT_LABELS, r(2, 4, 16)], []),
    "mbdetect": ("_contrib_MultiBoxDetection", dict(threshold=0.2, nms_threshold=0.4),
                 [u(0, 1, 2, 4, 10), r(2, 40, scale=0.5),
                  _boxes(10, 0, 0.7).reshape(1, 10, 4)], []),
    "mbdetect_force_topk": ("_contrib_MultiBoxDetection",
                            dict(threshold=0.1, nms_threshold=0.3, force_suppress=True,
                                 nms_topk=4, clip=False),
                            [u(0, 1, 1, 3, 10), r(1, 40, scale=0.5),
                             _boxes(10, 0, 0.7).reshape(1, 10, 4)], []),
    # a first ratio other than 1 shapes every size anchor (the op reads the shape only: no
    # draw, so the other cases keep their numbers)
    "mbprior_first_ratio": ("_contrib_MultiBoxPrior",
                            dict(sizes=(0.75, 0.3), ratios=(20, 2, 0.5), clip=True),
                            [np.zeros((1, 2, 4, 5), np.float32)], []),
}


def run(op, attrs, inputs, wrt):
    args = [mx.nd.array(a, dtype=a.dtype) for a in inputs]
    for i in wrt:
        args[i].attach_grad()
    fn = getattr(mx.nd.contrib, op[len("_contrib_"):])
    with mx.autograd.record():
        outs = fn(*args, **attrs)
    outs = outs if isinstance(outs, list) else [outs]
    heads = [rs.uniform(-1, 1, o.shape).astype("float32") for o in outs]
    if wrt:
        mx.autograd.backward(outs, [mx.nd.array(h) for h in heads])
    return [o.asnumpy() for o in outs], heads, [args[i].grad.asnumpy() for i in wrt]


def main():
    store = {}
    for name, (op, attrs, inputs, wrt) in CASES.items():
        outs, heads, grads = run(op, attrs, inputs, wrt)
        store[name + "/meta"] = np.array(json.dumps(dict(op=op, attrs=attrs, wrt=wrt,
                                                         n_in=len(inputs), n_out=len(outs))))
        for i, a in enumerate(inputs):
            store["%s/in%d" % (name, i)] = a
        for i, (o, h) in enumerate(zip(outs, heads)):
            store["%s/out%d" % (name, i)] = o
            store["%s/head%d" % (name, i)] = h
        for i, g in zip(wrt, grads):
            store["%s/grad%d" % (name, i)] = g
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "contrib_detection_golden.npz")
    np.savez_compressed(path, **store)
    print("wrote", path, len(CASES), "cases")


if __name__ == "__main__":
    main()
