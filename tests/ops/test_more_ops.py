"""Operators that MXNet 1.9.1 scripts use for detection, segmentation and SVM heads and for
index and shape work: L2Normalization, GroupNorm, UpSampling, Crop, slice_like, smooth_l1,
hard_sigmoid, softmin, sort, argsort, shape_array, size_array, SVMOutput, diag,
depth_to_space, space_to_depth, moments, erfinv, rcbrt, gather_nd, scatter_nd.

Three layers of checks: NumPy float64 references with finite-difference gradients on every
backend (the `ctx` fixture), MXNet's own numbers through a bound executor (the golden cases
in tests/data/ops/nn_golden.npz, which also run op by op in test_nn.py), and errors.
"""
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import OpParamError, ShapeError

from .harness import Case, check_case

_RS = np.random.RandomState(11)
GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "ops", "nn_golden.npz"))


def r(*shape):
    return _RS.randn(*shape)


def distinct(*shape):
    return (_RS.permutation(int(np.prod(shape))) / 7.0 - 1.0).reshape(shape)


# ----------------------------------------------------------------------------- references

def ref_l2norm(axes, eps=1e-10):
    def ref(x):
        return [x / np.sqrt((x * x).sum(axis=axes, keepdims=True) + eps)]
    return ref


def ref_groupnorm(groups, eps=1e-5):
    def ref(x, gamma, beta):
        n, c = x.shape[:2]
        xg = x.reshape(n, groups, -1)
        mean, var = xg.mean(axis=2, keepdims=True), xg.var(axis=2, keepdims=True)
        y = (xg - mean) / np.sqrt(var + eps) * gamma[:, None] + beta[:, None]
        return [y.reshape(x.shape)]
    return ref


def ref_nearest(scale, mode="concat"):
    def ref(*xs):
        h = xs[0].shape[2] * scale
        ups = [x.repeat(h // x.shape[2], axis=2).repeat(h // x.shape[2], axis=3) for x in xs]
        return [sum(ups) if mode == "sum" else np.concatenate(ups, axis=1)]
    return ref


def ref_crop(y0, x0, h, w):
    def ref(x, *like):
        return [x[:, :, y0:y0 + h, x0:x0 + w]]
    return ref


def ref_smooth_l1(sigma):
    def ref(x):
        s = sigma * sigma
        return [np.where(np.abs(x) < 1 / s, 0.5 * s * x * x, np.abs(x) - 0.5 / s)]
    return ref


def ref_softmin(axis, t=1.0):
    def ref(x):
        z = np.exp(-x / t - (-x / t).max(axis=axis, keepdims=True))
        return [z / z.sum(axis=axis, keepdims=True)]
    return ref


CASES = [
    Case("L2Normalization", {}, [r(2, 3, 4)], ref_l2norm((1, 2)), infer_from=[0],
         id="l2norm_instance"),
    Case("L2Normalization", dict(mode="channel"), [r(2, 3, 2, 2)], ref_l2norm((1,)),
         id="l2norm_channel"),
    Case("L2Normalization", dict(mode="spatial", eps=1e-3), [r(2, 3, 2, 2)],
         ref_l2norm((2, 3), 1e-3), id="l2norm_spatial"),
    Case("GroupNorm", dict(num_groups=2), [r(2, 4, 3), r(2), r(2)], ref_groupnorm(2),
         infer_from=[0], id="groupnorm"),
    Case("UpSampling", dict(scale=2, sample_type="nearest", num_args=1), [r(2, 2, 3, 4)],
         ref_nearest(2), id="upsampling_nearest"),
    Case("UpSampling", dict(scale=2, sample_type="nearest", num_args=2),
         [r(1, 2, 4, 4), r(1, 3, 2, 2)], ref_nearest(2), id="upsampling_concat"),
    Case("UpSampling", dict(scale=3, sample_type="nearest", num_args=2,
                            multi_input_mode="sum"),
         [r(1, 2, 2, 2), r(1, 2, 1, 1)], ref_nearest(3, "sum"), id="upsampling_sum"),
    Case("Crop", dict(num_args=2, center_crop=True), [r(1, 2, 6, 7), r(1, 3, 3, 4)],
         ref_crop(1, 1, 3, 4), grad_wrt=[0], id="crop_like_center"),
    Case("Crop", dict(num_args=1, h_w=(2, 3), offset=(3, 1)), [r(2, 1, 5, 5)],
         ref_crop(3, 1, 2, 3), id="crop_offset"),
    Case("slice_like", dict(axes=(-2,)), [r(2, 3, 5), r(4, 2)],
         lambda x, like: [x[:, :2, :]], grad_wrt=[0], id="slice_like_negative_axis"),
    Case("smooth_l1", dict(scalar=1.5), [3 * r(4, 5)], ref_smooth_l1(1.5), id="smooth_l1"),
    Case("hard_sigmoid", {}, [5 * r(4, 5)], lambda x: [np.clip(0.2 * x + 0.5, 0, 1)],
         id="hard_sigmoid"),
    Case("softmin", dict(axis=1, temperature=0.5), [r(3, 4)], ref_softmin(1, 0.5),
         id="softmin"),
    Case("sort", dict(axis=1, is_ascend=False), [distinct(3, 4)],
         lambda x: [-np.sort(-x, axis=1)], id="sort_desc"),
    Case("sort", dict(axis=None), [distinct(2, 3)], lambda x: [np.sort(x, axis=None)],
         id="sort_flat"),
    Case("argsort", dict(axis=0), [distinct(3, 4)],
         lambda x: [np.argsort(x, axis=0).astype(np.float32)], check_grad=False,
         id="argsort"),
    Case("shape_array", {}, [r(2, 3, 4)], lambda x: [np.array([2, 3, 4])], check_grad=False,
         id="shape_array"),
    Case("size_array", {}, [r(2, 3, 4)], lambda x: [np.array([24])], check_grad=False,
         id="size_array"),
    Case("SVMOutput", {}, [r(3, 4), np.array([0.0, 3.0, 1.0])], lambda x, label: [x],
         check_grad=False, id="svm_output"),
    Case("diag", dict(k=1), [r(3)], lambda x: [np.diag(x, 1)], id="diag_vector"),
    Case("diag", dict(k=-1, axis1=1, axis2=2), [r(2, 3, 4)],
         lambda x: [np.diagonal(x, -1, 1, 2)], id="diag_planes"),
    Case("depth_to_space", dict(block_size=2), [r(1, 8, 2, 2)],
         lambda x: [x.reshape(1, 2, 2, 2, 2, 2).transpose(0, 3, 4, 1, 5, 2).reshape(1, 2, 4, 4)],
         id="depth_to_space"),
    Case("space_to_depth", dict(block_size=3), [r(1, 1, 3, 6)],
         lambda x: [x.reshape(1, 1, 1, 3, 2, 3).transpose(0, 3, 5, 1, 2, 4).reshape(1, 9, 1, 2)],
         id="space_to_depth"),
    Case("moments", dict(axes=(1,)), [r(3, 4)],
         lambda x: [x.mean(axis=1), x.var(axis=1)], id="moments"),
    Case("erfinv", {}, [np.linspace(-0.9, 0.9, 7)], lambda x: [_erfinv_reference(x)],
         id="erfinv"),
    Case("rcbrt", {}, [np.abs(r(5)) + 0.5], lambda x: [1 / np.cbrt(x)], id="rcbrt"),
    Case("gather_nd", {}, [r(3, 4), np.array([[2.0, 0.0, 2.0], [1.0, 3.0, 1.0]])],
         lambda x, idx: [x[idx.astype(int)[0], idx.astype(int)[1]]], grad_wrt=[0],
         id="gather_nd_repeats"),
]


def _roi_pool_reference(pooled, scale):
    """Fast R-CNN's ROI max pooling written out bin by bin (a reference for small inputs)."""
    def ref(data, rois):
        ph, pw = pooled
        out = np.zeros((len(rois), data.shape[1], ph, pw))
        for r, (b, *xy) in enumerate(rois):
            x1, y1, x2, y2 = (int(np.floor(abs(v * scale) + 0.5) * np.sign(v)) for v in xy)
            rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
            for i in range(ph):
                h0 = min(max(int(np.floor(i * rh / ph)) + y1, 0), data.shape[2])
                h1 = min(max(int(np.ceil((i + 1) * rh / ph)) + y1, 0), data.shape[2])
                for j in range(pw):
                    w0 = min(max(int(np.floor(j * rw / pw)) + x1, 0), data.shape[3])
                    w1 = min(max(int(np.ceil((j + 1) * rw / pw)) + x1, 0), data.shape[3])
                    if h1 > h0 and w1 > w0:
                        out[r, :, i, j] = data[int(b), :, h0:h1, w0:w1].max(axis=(1, 2))
        return [out]
    return ref


CASES.append(Case("ROIPooling", dict(pooled_size=(2, 3), spatial_scale=0.5),
                  [distinct(2, 2, 6, 7), np.array([[0, 0, 0, 11, 9], [1, 3, 2, 13, 13],
                                                   [1, -8, -8, 3, 30], [0, 20, 20, 30, 30]],
                                                  dtype=np.float64)],
                  _roi_pool_reference((2, 3), 0.5), grad_wrt=[0], id="roi_pooling"))


def _erfinv_reference(x):
    """erfinv by bisection on math.erf (a reference independent of minimod's Newton steps)."""
    import math
    lo, hi = np.full_like(x, -6.0), np.full_like(x, 6.0)
    for _ in range(80):
        mid = (lo + hi) / 2
        below = np.array([math.erf(m) for m in mid]) < x
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return (lo + hi) / 2


@pytest.mark.parametrize("case", CASES, ids=str)
def test_case(case, ctx):
    check_case(case, ctx)


# ----------------------------------------------------------------------------- MXNet's numbers

ADDED = ["l2norm_instance", "l2norm_channel", "l2norm_spatial", "groupnorm", "groupnorm_one",
         "upsampling_nearest", "upsampling_concat", "upsampling_sum", "upsampling_bilinear",
         "upsampling_bilinear3", "crop_like", "crop_center", "crop_offset", "slice_like_axes",
         "slice_like_all", "sort_desc", "sort_flat", "argsort", "smooth_l1", "hard_sigmoid",
         "softmin", "shape_array", "size_array", "svm_l2", "svm_l1", "diag_vector",
         "diag_matrix", "diag_axes", "depth_to_space", "space_to_depth", "moments_axes",
         "moments_keep", "erfinv", "rcbrt", "gather_nd", "scatter_nd", "roi_pooling",
         "roi_pooling_unit"]


@pytest.mark.parametrize("name", ADDED)
def test_bound_executor_matches_mxnet(name):
    """The golden case through simple_bind, forward and backward: the executor hands each
    backward only the arrays its op declares, in its planned (possibly shared) buffers."""
    meta = json.loads(str(GOLDEN[name + "/meta"]))
    inputs = [GOLDEN["%s/in%d" % (name, i)] for i in range(meta["n_in"])]
    names = ["in%d" % i for i in range(len(inputs))]
    variables = [mx.sym.var(n) for n in names]
    out = getattr(mx.sym, meta["op"])(*variables, name="op", **meta["attrs"])
    grad_req = {n: ("write" if i in meta["wrt"] else "null") for i, n in enumerate(names)}
    exe = out.simple_bind(mx.cpu(), grad_req=grad_req,
                          type_dict={n: a.dtype for n, a in zip(names, inputs)},
                          **{n: a.shape for n, a in zip(names, inputs)})
    for n, a in zip(names, inputs):
        exe.arg_dict[n][:] = a
    outs = exe.forward(is_train=meta["train"])
    for i in range(meta["n_compare"]):
        np.testing.assert_allclose(outs[i].asnumpy(), GOLDEN["%s/out%d" % (name, i)],
                                   rtol=1e-4, atol=1e-5, err_msg="%s output %d" % (name, i))
    if not meta["wrt"]:
        return
    heads = [mx.nd.array(GOLDEN[name + "/head"])] + [mx.nd.zeros(o.shape) for o in outs[1:]]
    exe.backward(heads)
    for i in meta["wrt"]:
        np.testing.assert_allclose(exe.grad_dict[names[i]].asnumpy(),
                                   GOLDEN["%s/grad%d" % (name, i)], rtol=1e-4, atol=1e-5,
                                   err_msg="%s grad %d" % (name, i))


def test_every_added_op_has_mxnet_golden_numbers():
    names = {k.split("/")[0] for k in GOLDEN.files}
    assert set(ADDED) <= names
    ops = {json.loads(str(GOLDEN[n + "/meta"]))["op"] for n in ADDED}
    assert ops == {"L2Normalization", "GroupNorm", "UpSampling", "Crop", "slice_like", "sort",
                   "argsort", "smooth_l1", "hard_sigmoid", "softmin", "shape_array",
                   "size_array", "SVMOutput", "diag", "depth_to_space", "space_to_depth",
                   "moments", "erfinv", "rcbrt", "gather_nd", "scatter_nd", "ROIPooling"}


# ----------------------------------------------------------------------------- in a model

def test_svm_head_trains_a_separable_problem_through_module_fit():
    rng = np.random.RandomState(0)
    x = rng.randn(200, 4).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.float32)
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    net = mx.sym.SVMOutput(net, name="svm")
    mod = mx.mod.Module(net, label_names=("svm_label",))
    it = mx.io.NDArrayIter(x, y, batch_size=20, label_name="svm_label")
    mod.fit(it, num_epoch=10, optimizer_params={"learning_rate": 0.01},
            initializer=mx.init.Xavier())
    assert mod.score(it, "acc")[0][1] > 0.95


def test_fcn_style_upsampling_and_crop_shapes_and_bilinear_init():
    data = mx.sym.var("data")
    score = mx.sym.Convolution(data, kernel=(3, 3), num_filter=2, pad=(1, 1), name="score")
    pooled = mx.sym.Pooling(score, kernel=(2, 2), stride=(2, 2), pool_type="max")
    up = mx.sym.UpSampling(pooled, scale=2, sample_type="bilinear", num_filter=2, name="up")
    out = mx.sym.Crop(up, data, center_crop=True, name="crop")
    assert out.list_arguments() == ["data", "score_weight", "score_bias", "up_weight"]
    arg_shapes, out_shapes, _ = out.infer_shape(data=(1, 3, 10, 10))
    assert arg_shapes[3] == (2, 1, 4, 4)
    assert out_shapes == [(1, 2, 10, 10)]
    # mx.init.Bilinear's kernel turns the bilinear UpSampling into interpolation: a constant
    # map stays constant away from the borders
    weight = mx.nd.zeros((2, 1, 4, 4))
    mx.init.Bilinear()(mx.init.InitDesc("up_weight"), weight)
    flat = mx.nd.UpSampling(mx.nd.ones((1, 2, 4, 4)), weight, scale=2,
                            sample_type="bilinear", num_filter=2)
    np.testing.assert_allclose(flat.asnumpy()[:, :, 1:-1, 1:-1], 1.0, rtol=1e-6)


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize("build, shapes, match", [
    (lambda x, y: mx.sym.Crop(x, num_args=1, h_w=(5, 5), offset=(2, 0)), dict(x=(1, 1, 6, 6)),
     r"input 'arg0' has shape \(1, 1, 6, 6\), too small for a 5x5 crop at offset \(2, 0\)"),
    (lambda x, y: mx.sym.UpSampling(x, y, scale=2, sample_type="nearest", num_args=2),
     dict(x=(1, 1, 6, 6), y=(1, 1, 4, 2)),
     r"input 'arg1' has shape \(1, 1, 4, 2\) but UpSampling needs NCHW inputs"),
    (lambda x, y: mx.sym.slice_like(x, y), dict(x=(1, 1, 6, 6), y=(1, 1, 7, 2)),
     r"'shape_like' \(1, 1, 7, 2\) is larger than 'data' \(1, 1, 6, 6\) on axis 2"),
    (lambda x, y: mx.sym.L2Normalization(x, mode="channel"), dict(x=(6, 6)),
     r"L2Normalization mode='channel' needs 3 or more dims"),
    (lambda x, y: mx.sym.GroupNorm(x, num_groups=4), dict(x=(1, 6, 6)),
     r"C divisible by num_groups=4"),
])
def test_bad_shapes_name_the_input(build, shapes, match):
    with pytest.raises(ShapeError, match=match):
        build(mx.sym.var("x"), mx.sym.var("y")).infer_shape(**shapes)


def test_bad_parameters():
    with pytest.raises(OpParamError, match="sample_type"):
        mx.sym.UpSampling(mx.sym.var("x"), scale=2)
    with pytest.raises(OpParamError, match="bilinear' needs num_filter"):
        mx.sym.UpSampling(mx.sym.var("x"), scale=2, sample_type="bilinear")
    with pytest.raises(OpParamError, match="num_args must be 1 or 2"):
        mx.sym.Crop(mx.sym.var("x"), num_args=3)


def test_svm_labels_out_of_range_are_refused():
    out = mx.sym.SVMOutput(mx.sym.var("x"), name="svm")
    exe = out.simple_bind(mx.cpu(), x=(2, 3))
    exe.arg_dict["svm_label"][:] = np.array([0, 3])
    exe.forward(is_train=True)
    with pytest.raises(mx.base.MXNetError, match=r"SVMOutput: labels must lie in \[0, 3\)"):
        exe.backward()


@pytest.mark.parametrize("bad, axis", [(3, 1), (-5, 1), (2, 0)])
def test_gather_nd_refuses_an_index_out_of_bounds_on_every_device(bad, axis, ctx):
    """NumPy raises for such an index and CuPy wraps it: both devices raise IndexError (as
    MXNet's kernels on both), and a negative index in range still counts from the end."""
    data = mx.nd.array([[0, 1, 2], [3, 4, 5]], ctx=ctx)
    idx = [[0, 1, 0], [0, 1, 2]]
    idx[axis][1] = bad
    with pytest.raises(IndexError, match="%d is out of bounds for axis %d" % (bad, axis)):
        mx.nd.gather_nd(data, mx.nd.array(idx, ctx=ctx)).asnumpy()
    wrapped = mx.nd.gather_nd(data, mx.nd.array([[-1, 0], [-3, 2]], ctx=ctx)).asnumpy()
    np.testing.assert_array_equal(wrapped, [3, 2])
