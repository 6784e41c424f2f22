"""Tests of the detection operators in minimod/ops/contrib: the case table (shape inference,
forward against the plain-loop references of contrib_detection_refs.py, float64 numeric
gradients), MXNet 1.9.1 golden values, the zero or missing gradients, parameter, shape and
type errors, and the symbol-level names."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import DTypeError, MXNetError, OpParamError, ShapeError
from minimod.ops.registry import create_op, get_op_class
from tests.ops import contrib_detection_refs as refs
from tests.ops.harness import Case, check_case, infer, run_backward, run_forward

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "data", "ops",
                      "contrib_detection_golden.npz")
_RS = np.random.RandomState(3)


def r(*shape, dtype=np.float64):
    return _RS.randn(*shape).astype(dtype)


def u(lo, hi, *shape, dtype=np.float64):
    return _RS.uniform(lo, hi, shape).astype(dtype)


def f64(rows):
    return np.array(rows, dtype=np.float64)


def boxes(n, lo=0.0, hi=1.0, dtype=np.float64):
    a = _RS.uniform(lo, hi, (n, 2))
    return np.concatenate([a, a + _RS.uniform(0.1, 0.5, (n, 2)) * (hi - lo)], 1).astype(dtype)


ROIS = f64([[0, 1.3, 0.6, 9.1, 7.7], [1, -3.2, -1.4, 5.2, 9.3], [1, 0.4, 0.6, 0.9, 0.8],
            [0, 2.2, 3.7, 15.6, 12.3]])
RROIS = f64([[0, 5.1, 4.2, 6.3, 4.1, 25.0], [1, 3.3, 6.2, 9.5, 3.1, 140.0],
             [0, 7.2, 2.1, 1.2, 0.7, -70.0]])
PS_ROIS = f64([[0, 1.5, 2.5, 12.2, 10.4], [1, 0.2, 0.1, 15.6, 13.3], [1, 6.5, 4.5, 7.5, 5.2],
               [0, -3.0, 4.0, 9.5, 30.0]])
DPS_ROIS = f64([[0, 5.0, 4.0, 12.0, 10.0], [1, 6.0, 5.0, 13.0, 11.0]])
_CORNERS = _RS.uniform(0, 4, (2, 8, 2))
NMS_DATA = np.concatenate([  # (class, score, x1, y1, x2, y2), distinct scores, many overlaps
    _RS.randint(0, 3, (2, 8, 1)), _RS.permutation(16).reshape(2, 8, 1) / 16.0 + 0.01,
    _CORNERS, _CORNERS + _RS.uniform(1, 3, (2, 8, 2))], -1)
MBT_LABEL = np.array([[[1, 0.1, 0.1, 0.45, 0.5], [0, 0.5, 0.4, 0.9, 0.95],
                       [-1, -1, -1, -1, -1]],
                      [[2, 0.0, 0.0, 0.3, 0.3], [-1, -1, -1, -1, -1], [-1, -1, -1, -1, -1]]],
                     dtype=np.float32)


def _prop_inputs(batch, anchors, h, w, im):
    return [u(0, 1, batch, 2 * anchors, h, w, dtype=np.float32),
            r(batch, 4 * anchors, h, w, dtype=np.float32) * np.float32(0.3),
            np.array(im, dtype=np.float32)]


CASES = [
    Case("_contrib_ROIAlign", dict(pooled_size=(2, 3), spatial_scale=0.5),
         [r(2, 2, 6, 7), ROIS], refs.ref_roi_align((2, 3), 0.5), grad_wrt=[0], id="roialign"),
    Case("_contrib_ROIAlign", dict(pooled_size=(2, 2), spatial_scale=0.5, sample_ratio=2,
                                   position_sensitive=True),
         [r(2, 8, 6, 7), ROIS], refs.ref_roi_align((2, 2), 0.5, 2, position_sensitive=True),
         grad_wrt=[0], id="roialign_ps"),
    Case("_contrib_ROIAlign", dict(pooled_size=(3, 2), spatial_scale=0.5, aligned=True),
         [r(2, 2, 6, 7), ROIS], refs.ref_roi_align((3, 2), 0.5, aligned=True), grad_wrt=[0],
         id="roialign_aligned"),
    Case("_contrib_RROIAlign", dict(pooled_size=(2, 2), spatial_scale=1.0),
         [r(2, 2, 8, 9), RROIS], refs.ref_rroi_align((2, 2), 1.0), check_grad=False,
         id="rroialign"),
    Case("_contrib_RROIAlign", dict(pooled_size=(3, 2), spatial_scale=0.7, sampling_ratio=2),
         [r(2, 2, 8, 9), RROIS], refs.ref_rroi_align((3, 2), 0.7, 2), check_grad=False,
         id="rroialign_ratio"),
    Case("_contrib_PSROIPooling", dict(spatial_scale=0.5, output_dim=2, pooled_size=3),
         [r(2, 18, 7, 8), PS_ROIS], refs.ref_psroi_pooling(0.5, 2, 3), grad_wrt=[0],
         id="psroipool"),
    Case("_contrib_PSROIPooling", dict(spatial_scale=0.5, output_dim=2, pooled_size=3,
                                       group_size=2),
         [r(2, 8, 7, 8), PS_ROIS], refs.ref_psroi_pooling(0.5, 2, 3, 2), grad_wrt=[0],
         id="psroipool_group"),
    Case("_contrib_DeformablePSROIPooling",
         dict(spatial_scale=0.5, output_dim=2, group_size=2, pooled_size=2, sample_per_part=2,
              trans_std=0.1),
         [r(2, 8, 9, 9), DPS_ROIS, u(-0.3, 0.3, 2, 4, 2, 2)],
         refs.ref_deformable_psroi(0.5, 2, 2, 2, spp=2, trans_std=0.1), grad_wrt=[0, 2],
         id="dpsroipool"),
    Case("_contrib_DeformablePSROIPooling",
         dict(spatial_scale=0.5, output_dim=2, group_size=2, pooled_size=3, part_size=2,
              sample_per_part=2, trans_std=0.2),
         [r(2, 8, 9, 9), DPS_ROIS, u(-0.3, 0.3, 2, 2, 2, 2)],
         refs.ref_deformable_psroi(0.5, 2, 2, 3, part=2, spp=2, trans_std=0.2),
         grad_wrt=[0, 2], id="dpsroipool_parts"),
    Case("_contrib_DeformablePSROIPooling",
         dict(spatial_scale=0.5, output_dim=2, group_size=2, pooled_size=2, no_trans=True),
         [r(2, 8, 9, 9), PS_ROIS], refs.ref_deformable_psroi(0.5, 2, 2, 2, no_trans=True),
         grad_wrt=[0], id="dpsroipool_notrans"),
    Case("_contrib_DeformableConvolution", dict(kernel=(3, 3), num_filter=2, pad=(1, 1)),
         [r(1, 2, 4, 5), u(-1.5, 1.5, 1, 18, 4, 5), r(2, 2, 3, 3), r(2)],
         refs.ref_deformable_conv((3, 3), 2, pad=(1, 1)), infer_from=[0], id="dcn"),
    Case("_contrib_DeformableConvolution",
         dict(kernel=(2, 3), num_filter=4, num_group=2, num_deformable_group=2, stride=(2, 1),
              dilate=(1, 2), pad=(1, 0), no_bias=True),
         [r(1, 4, 5, 6), u(-2, 2, 1, 24, 3, 2), r(4, 2, 2, 3)],
         refs.ref_deformable_conv((2, 3), 4, (2, 1), (1, 2), (1, 0), 2, 2), infer_from=[0],
         id="dcn_groups"),
    Case("_contrib_box_iou", dict(), [boxes(4), boxes(3).reshape(1, 3, 4)], refs.ref_box_iou(),
         check_grad=False, id="box_iou"),
    Case("_contrib_box_iou", dict(format="center"), [boxes(4).reshape(2, 2, 4), boxes(3)],
         refs.ref_box_iou("center"), check_grad=False, id="box_iou_center"),
    Case("_contrib_box_nms", dict(overlap_thresh=0.3), [NMS_DATA], refs.ref_box_nms(0.3),
         id="box_nms"),
    Case("_contrib_box_nms", dict(overlap_thresh=0.2, valid_thresh=0.2, topk=5, id_index=0,
                                  background_id=2, out_format="center"),
         [NMS_DATA], refs.ref_box_nms(0.2, 0.2, 5, id_index=0, background=2,
                                      out_format="center"),
         check_grad=False, id="box_nms_ids"),  # MXNet's gradient ignores the conversion
    Case("_contrib_box_nms", dict(overlap_thresh=0.25, id_index=0, force_suppress=True,
                                  in_format="center", out_format="corner"),
         [NMS_DATA[:1]], refs.ref_box_nms(0.25, id_index=0, force=True, in_format="center"),
         check_grad=False, id="box_nms_force"),
    Case("_contrib_bipartite_matching", dict(threshold=0.2), [u(0, 1, 2, 4, 5)],
         refs.ref_bipartite(0.2), check_grad=False, id="bipartite"),
    Case("_contrib_bipartite_matching", dict(threshold=0.8, is_ascend=True, topk=2),
         [u(0, 1, 5, 3)], refs.ref_bipartite(0.8, True, 2), check_grad=False,
         id="bipartite_ascend_topk"),
    Case("_contrib_box_encode", dict(),
         [f64([[1, 0, 1], [0, 1, 1]]), f64([[0, 1, 1], [1, 0, 0]]),
          np.stack([boxes(3), boxes(3)]), np.stack([boxes(2), boxes(2)]),
          f64([0.1, -0.1, 0.0, 0.2]), f64([0.1, 0.1, 0.2, 0.2])],
         refs.ref_box_encode, infer_from=[0, 1, 2, 3], check_grad=False, id="box_encode"),
    Case("_contrib_box_decode", dict(std0=0.1, std1=0.1, std2=0.2, std3=0.2),
         [r(2, 3, 4), np.abs(r(1, 3, 4)) + 0.2], refs.ref_box_decode((0.1, 0.1, 0.2, 0.2)),
         check_grad=False, id="box_decode"),
    Case("_contrib_box_decode", dict(format="corner", clip=0.3),
         [r(2, 3, 4), boxes(3).reshape(1, 3, 4)], refs.ref_box_decode(clip=0.3, fmt="corner"),
         check_grad=False, id="box_decode_corner"),
    Case("_contrib_MultiBoxPrior", dict(sizes=(0.5, 0.2), ratios=(1, 2, 0.5)),
         [np.zeros((1, 2, 3, 4), np.float32)], refs.ref_multibox_prior((0.5, 0.2), (1, 2, 0.5)),
         check_grad=False, id="mbprior"),
    Case("_contrib_MultiBoxPrior", dict(sizes=(0.7,), ratios=(1, 3), steps=(0.3, 0.2),
                                        offsets=(0.2, 0.7), clip=True),
         [np.zeros((2, 1, 4, 3), np.float32)],
         refs.ref_multibox_prior((0.7,), (1, 3), True, (0.3, 0.2), (0.2, 0.7)),
         check_grad=False, id="mbprior_clip"),
    Case("_contrib_MultiBoxPrior", dict(sizes=(0.5, 0.2), ratios=(4, 2, 0.5)),
         [np.zeros((1, 2, 3, 4), np.float32)], refs.ref_multibox_prior((0.5, 0.2), (4, 2, 0.5)),
         check_grad=False, id="mbprior_first_ratio"),
    Case("_contrib_MultiBoxTarget", dict(),
         [boxes(12, 0, 0.8, np.float32).reshape(1, 12, 4), MBT_LABEL,
          r(2, 3, 12, dtype=np.float32)], refs.ref_multibox_target(), check_grad=False,
         id="mbtarget"),
    Case("_contrib_MultiBoxTarget", dict(overlap_threshold=0.3, negative_mining_ratio=2,
                                         negative_mining_thresh=0.4, ignore_label=-2),
         [boxes(12, 0, 0.8, np.float32).reshape(1, 12, 4), MBT_LABEL,
          r(2, 3, 12, dtype=np.float32)],
         refs.ref_multibox_target(0.3, -2, 2, 0.4), check_grad=False, id="mbtarget_mining"),
    Case("_contrib_MultiBoxDetection", dict(threshold=0.2, nms_threshold=0.4),
         [u(0, 1, 2, 3, 10, dtype=np.float32), r(2, 40, dtype=np.float32) * np.float32(0.5),
          boxes(10, 0, 0.7, np.float32).reshape(1, 10, 4)],
         refs.ref_multibox_detection(threshold=0.2, nms_threshold=0.4), check_grad=False,
         id="mbdetect"),
    Case("_contrib_MultiBoxDetection", dict(threshold=0.1, nms_threshold=0.3,
                                            force_suppress=True, nms_topk=3, clip=False),
         [u(0, 1, 1, 3, 10, dtype=np.float32), r(1, 40, dtype=np.float32) * np.float32(0.5),
          boxes(10, 0, 0.7, np.float32).reshape(1, 10, 4)],
         refs.ref_multibox_detection(False, 0.1, 0.3, True, nms_topk=3), check_grad=False,
         id="mbdetect_force_topk"),
    Case("_contrib_Proposal", dict(scales=(2, 4), ratios=(0.5, 1, 2), feature_stride=8,
                                   rpn_pre_nms_top_n=50, rpn_post_nms_top_n=15,
                                   rpn_min_size=4, output_score=True),
         _prop_inputs(1, 6, 4, 5, [[30, 34, 1.1]]),
         refs.ref_proposal(50, 15, 0.7, 4, (2, 4), (0.5, 1, 2), 8), infer_from=[0],
         check_grad=False, id="proposal"),
    Case("_contrib_Proposal", dict(scales=(3,), ratios=(1,), feature_stride=8,
                                   rpn_pre_nms_top_n=-1, rpn_post_nms_top_n=40, threshold=0.5,
                                   rpn_min_size=2, iou_loss=True, output_score=True),
         _prop_inputs(1, 1, 4, 4, [[28, 25, 1.0]]),
         refs.ref_proposal(-1, 40, 0.5, 2, (3,), (1,), 8, iou_loss=True), check_grad=False,
         id="proposal_iou_cycle"),
    Case("_contrib_MultiProposal", dict(scales=(2, 4), ratios=(1, 2), feature_stride=8,
                                        rpn_pre_nms_top_n=30, rpn_post_nms_top_n=10,
                                        rpn_min_size=3, threshold=0.6, output_score=True),
         _prop_inputs(2, 4, 4, 5, [[30, 38, 1.0], [25, 20, 0.8]]),
         refs.ref_proposal(30, 10, 0.6, 3, (2, 4), (1, 2), 8), check_grad=False,
         id="multiproposal"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_case(case, ctx):
    """On cpu(0) the full check; on gpu(0), where present, the device run against it."""
    check_case(case, ctx)


# ----------------------------------------------------------------------------- MXNet golden

def _golden():
    data = np.load(GOLDEN)
    return data, sorted({k.split("/")[0] for k in data.files})


GOLDEN_DATA, GOLDEN_NAMES = _golden()


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_matches_mxnet(name):
    data = GOLDEN_DATA
    meta = json.loads(str(data[name + "/meta"]))
    op = create_op(meta["op"], meta["attrs"])
    inputs = [data["%s/in%d" % (name, i)] for i in range(meta["n_in"])]
    args, aux, outs = run_forward(op, inputs)
    assert op.num_visible_outputs() == meta["n_out"]
    for i in range(meta["n_out"]):
        np.testing.assert_allclose(outs[i], data["%s/out%d" % (name, i)], rtol=1e-5,
                                   atol=1e-5, err_msg="%s output %d" % (name, i))
    if not meta["wrt"]:
        return
    heads = [data["%s/head%d" % (name, i)] for i in range(meta["n_out"])]
    heads += [np.zeros_like(o) for o in outs[meta["n_out"]:]]
    grads = run_backward(op, args, aux, outs, heads, meta["wrt"])
    for i in meta["wrt"]:
        np.testing.assert_allclose(grads[i], data["%s/grad%d" % (name, i)], rtol=1e-5,
                                   atol=1e-5, err_msg="%s grad %d" % (name, i))


# ----------------------------------------------------------------------------- gradients

ZERO_GRAD = ["box_iou", "box_iou_center", "bipartite", "box_encode", "box_decode", "mbprior",
             "mbtarget", "mbdetect", "proposal", "multiproposal"]


@pytest.mark.parametrize("case", [c for c in CASES if c.id in ZERO_GRAD], ids=str)
def test_backward_writes_zeros_like_mxnet(case):
    op = create_op(case.op, case.attrs)
    args, aux, outs = run_forward(op, case.inputs)
    heads = [np.ones_like(o) for o in outs]
    wrt = list(range(len(args)))
    for g in run_backward(op, args, aux, outs, heads, wrt):
        np.testing.assert_array_equal(g, 0)


def test_rroialign_has_no_gradient():
    case = CASES[3]
    op = create_op(case.op, case.attrs)
    args, aux, outs = run_forward(op, case.inputs)
    with pytest.raises(MXNetError, match="non-differentiable"):
        run_backward(op, args, aux, outs, [np.ones_like(outs[0])], [0])


def test_box_nms_gradient_follows_the_kept_records():
    op = create_op("_contrib_box_nms", dict(overlap_thresh=0.3, topk=0))
    args, aux, outs = run_forward(op, [NMS_DATA])
    np.testing.assert_array_equal(outs[0], NMS_DATA)  # topk=0 copies
    head = r(*NMS_DATA.shape)
    np.testing.assert_array_equal(run_backward(op, args, aux, outs, [head], [0])[0], head)


# ----------------------------------------------------------------------------- behaviour

def test_roialign_negative_batch_index_gives_zeros():
    data = r(1, 2, 5, 5)
    rois = f64([[-1, 0, 0, 3, 3], [0, 0, 0, 3, 3]])
    op = create_op("_contrib_ROIAlign", dict(pooled_size=(2, 2), spatial_scale=1.0))
    args, aux, outs = run_forward(op, [data, rois])
    np.testing.assert_array_equal(outs[0][0], 0)
    np.testing.assert_allclose(outs[0][1], refs.ref_roi_align((2, 2), 1.0)(data, rois[1:])[0][0])
    grad = run_backward(op, args, aux, outs, [np.ones_like(outs[0])], [0])[0]
    assert grad.sum() == pytest.approx(outs[0][1].size)  # only the second ROI sends gradient


def test_multiproposal_stacks_proposal():
    cls, bbox, info = _prop_inputs(3, 3, 5, 5, [[40, 38, 1.0], [30, 40, 0.9], [24, 26, 1.2]])
    attrs = dict(scales=(2, 3, 4), ratios=(1,), feature_stride=8, rpn_pre_nms_top_n=40,
                 rpn_post_nms_top_n=8, rpn_min_size=2, output_score=True)
    multi = run_forward(create_op("_contrib_MultiProposal", attrs), [cls, bbox, info])[2]
    single = create_op("_contrib_Proposal", attrs)
    for b in range(3):
        outs = run_forward(single, [cls[b:b + 1], bbox[b:b + 1], info[b:b + 1]])[2]
        rows = slice(8 * b, 8 * b + 8)
        np.testing.assert_array_equal(multi[0][rows, 1:], outs[0][:, 1:])
        np.testing.assert_array_equal(multi[0][rows, 0], b)
        np.testing.assert_array_equal(multi[1][rows], outs[1])


def test_nd_and_sym_frontends():
    data = mx.nd.array(NMS_DATA.astype(np.float32))
    out = mx.nd.contrib.box_non_maximum_suppression(data, overlap_thresh=0.3)
    np.testing.assert_allclose(out.asnumpy(), refs.ref_box_nms(0.3)(NMS_DATA)[0], rtol=1e-6)
    d, o = mx.sym.Variable("data"), mx.sym.Variable("offset")
    dcn = mx.sym.contrib.DeformableConvolution(data=d, offset=o, kernel=(3, 3), num_filter=2,
                                               pad=(1, 1), name="dcn")
    assert dcn.list_arguments() == ["data", "offset", "dcn_weight", "dcn_bias"]
    arg_shapes, out_shapes, _ = dcn.infer_shape(data=(2, 4, 6, 5))
    assert arg_shapes == [(2, 4, 6, 5), (2, 18, 6, 5), (2, 4, 3, 3), (2,)]
    assert out_shapes == [(2, 2, 6, 5)]
    assert mx.sym.contrib.box_nms(d, name="nms").list_outputs() == ["nms_output0"]
    prop = mx.sym.contrib.Proposal(d, o, d, output_score=True, name="p")
    assert prop.list_outputs() == ["p_output", "p_score"]
    assert mx.sym.contrib.Proposal(d, o, d, name="q").list_outputs() == ["q_output"]
    dps = mx.sym.contrib.DeformablePSROIPooling(data=d, rois=o, spatial_scale=1.0, output_dim=2,
                                               group_size=2, pooled_size=2, no_trans=True)
    assert dps.list_arguments() == ["data", "offset"]
    assert get_op_class("_contrib_box_non_maximum_suppression") is get_op_class(
        "_contrib_box_nms")


def test_hidden_outputs_and_json_counts():
    assert create_op("_contrib_box_nms").num_outputs() == 2
    assert create_op("_contrib_DeformablePSROIPooling", dict(
        spatial_scale=1, output_dim=1, group_size=1, pooled_size=1)).num_outputs() == 2
    proposal = create_op("_contrib_Proposal")
    assert (proposal.num_outputs(), proposal.num_visible_outputs()) == (2, 1)


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize("op, attrs", [
    ("_contrib_ROIAlign", dict(pooled_size=(2,), spatial_scale=1.0)),
    ("_contrib_ROIAlign", dict(pooled_size=(2, 0), spatial_scale=1.0)),
    ("_contrib_PSROIPooling", dict(spatial_scale=1.0, output_dim=0, pooled_size=2)),
    ("_contrib_DeformablePSROIPooling", dict(spatial_scale=1.0, output_dim=2, group_size=2,
                                             pooled_size=2, sample_per_part=0)),
    ("_contrib_DeformableConvolution", dict(kernel=(3, 3, 3), num_filter=2)),
    ("_contrib_DeformableConvolution", dict(kernel=(3, 3), num_filter=3, num_group=2)),
    ("_contrib_DeformableConvolution", dict(kernel=(3, 3), num_filter=2, layout="NHWC")),
    ("_contrib_Proposal", dict(scales=())),
    ("_contrib_MultiBoxPrior", dict(steps=(0.1, -1))),
    ("_contrib_MultiBoxPrior", dict(offsets=(0.5, 1.5))),
    ("_contrib_MultiBoxTarget", dict(variances=(0.1, 0.2))),
    ("_contrib_box_nms", dict(in_format="diagonal")),
    ("_contrib_bipartite_matching", dict()),
])
def test_bad_parameters(op, attrs):
    with pytest.raises(OpParamError):
        create_op(op, attrs)


@pytest.mark.parametrize("op, attrs, shapes, match", [
    ("_contrib_ROIAlign", dict(pooled_size=(2, 2), spatial_scale=1.0), [(1, 3, 5, 5), (2, 4)],
     "rois"),
    ("_contrib_ROIAlign", dict(pooled_size=(2, 2), spatial_scale=1.0, position_sensitive=True),
     [(1, 6, 5, 5), (2, 5)], "multiple"),
    ("_contrib_RROIAlign", dict(pooled_size=(2, 2), spatial_scale=1.0), [(1, 3, 5, 5), (2, 5)],
     "rois"),
    ("_contrib_PSROIPooling", dict(spatial_scale=1.0, output_dim=2, pooled_size=2),
     [(1, 7, 5, 5), (2, 5)], "channels"),
    ("_contrib_DeformablePSROIPooling", dict(spatial_scale=1.0, output_dim=2, group_size=2,
                                             pooled_size=2),
     [(1, 8, 5, 5), (2, 5), (2, 3, 2, 2)], "trans"),
    ("_contrib_DeformableConvolution", dict(kernel=(3, 3), num_filter=2),
     [(1, 4, 5, 5), (1, 18, 5, 5), None, None], "offset"),
    ("_contrib_DeformableConvolution", dict(kernel=(3, 3), num_filter=2,
                                            num_deformable_group=3),
     [(1, 4, 5, 5), None, None, None], "num_deformable_group"),
    ("_contrib_Proposal", dict(scales=(8,), ratios=(1, 2)), [(1, 6, 3, 3), None, None],
     "channels"),
    ("_contrib_box_nms", dict(score_index=3), [(2, 5, 6)], "score_index"),
    ("_contrib_box_nms", dict(id_index=0), [(2, 5, 5)], "at least 6"),
    ("_contrib_box_iou", dict(), [(3, 5), (2, 4)], "lhs"),
    ("_contrib_box_decode", dict(), [(2, 3, 4), (1, 4, 4)], "anchors"),
    ("_contrib_MultiBoxTarget", dict(), [(2, 4, 4), (2, 3, 5), (2, 3, 4)], "anchor"),
    ("_contrib_MultiBoxDetection", dict(), [(2, 3, 4), (2, 12), (1, 4, 4)], "disagree"),
])
def test_bad_shapes(op, attrs, shapes, match):
    with pytest.raises(ShapeError, match=match):
        infer(create_op(op, attrs), shapes)


def test_float32_only_ops_reject_float64():
    for name in ("_contrib_Proposal", "_contrib_MultiBoxPrior", "_contrib_MultiBoxDetection"):
        op = create_op(name)
        with pytest.raises(DTypeError, match="float32"):
            op.infer_type([np.dtype("float64")] + [None] * (len(op.arguments()) - 1),
                          [None] * op.num_outputs())


@pytest.mark.parametrize("op, attrs, inputs, match", [
    ("_contrib_Proposal", dict(scales=(2,), ratios=(1,)),
     _prop_inputs(2, 1, 3, 3, [[40, 40, 1], [40, 40, 1]]), "one"),
    ("_contrib_Proposal", dict(scales=(2,), ratios=(1,)),
     _prop_inputs(1, 1, 3, 3, [[400, 40, 1]]), "larger"),
    ("_contrib_ROIAlign", dict(pooled_size=(2, 2), spatial_scale=1.0),
     [r(1, 1, 4, 4), f64([[3, 0, 0, 2, 2]])], "image 3"),
    ("_contrib_ROIAlign", dict(pooled_size=(2, 2), spatial_scale=1.0, aligned=True),
     [r(1, 1, 4, 4), f64([[0, 1, 1, 1, 2]])], "positive"),
])
def test_bad_values(op, attrs, inputs, match):
    with pytest.raises(MXNetError, match=match):
        run_forward(create_op(op, attrs), inputs)
