"""Tests of the contrib operators detection and NLP models build (minimod/ops/contrib/norm.py,
straight_through.py, modulated_deformable.py): the case table (shape inference, forward
against NumPy references written here, float64 numeric gradients), the straight-through
gradients, MXNet 1.9.1 golden values (tests/data/ops/contrib_models_golden.npz: outputs,
gradients and moving statistics), bound graphs, and parameter, shape and type errors."""
from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import DTypeError, OpParamError, ShapeError
from minimod.ops.registry import create_op
from tests.ops.harness import Case, check_case, infer, run_backward, run_forward

GOLDEN_PATH = os.path.join(os.path.dirname(__file__), "..", "data", "ops",
                           "contrib_models_golden.npz")
_RS = np.random.RandomState(23)


def r(*shape):
    return _RS.randn(*shape)


def norm_inputs(shape, axis=1):
    c = shape[axis]
    return [r(*shape) * 1.5 + 0.3, _RS.uniform(0.5, 1.5, c), r(c), r(c) * 0.2,
            _RS.uniform(0.5, 2.0, c)]


def dcn_offsets(*shape, reach=2):
    """Offsets whose fractional parts stay away from the integers, where the bilinear
    sampling has kinks that a central difference would straddle."""
    whole = _RS.randint(-reach, reach + 1, shape)
    return whole + _RS.uniform(0.15, 0.85, shape) * _RS.choice([-1, 1], shape)


# ----------------------------------------------------------------------------- references

def ref_batch_norm(eps=1e-3, fix_gamma=True, global_stats=False, relu=False, axis=1,
                   stats="none"):
    """out = (x - m) / sqrt(v + eps) * gamma + beta (then relu); stats 'var' adds the mean
    and variance outputs (SyncBatchNorm), 'invstd' the mean and 1/sqrt(v + eps)."""
    def ref(x, gamma, beta, moving_mean, moving_var):
        axes = tuple(i for i in range(x.ndim) if i != axis % x.ndim)
        if global_stats:
            mean, var = moving_mean, moving_var
        else:
            mean, var = x.mean(axis=axes), x.var(axis=axes)
        view = [1] * x.ndim
        view[axis % x.ndim] = -1
        g = np.ones_like(gamma) if fix_gamma else gamma
        out = ((x - mean.reshape(view)) / np.sqrt(var.reshape(view) + eps) * g.reshape(view)
               + beta.reshape(view))
        if relu:
            out = np.maximum(out, 0)
        if stats == "var":
            return [out, mean, var]
        if stats == "invstd":
            return [out, mean, 1 / np.sqrt(var + eps)]
        return [out]
    return ref


def _sample(plane, y, x):
    """Bilinear sample of `plane` at (y, x), zero outside the map (DCNv2's sampling)."""
    h, w = plane.shape
    if not (-1 < y < h and -1 < x < w):
        return 0.0
    y0, x0 = math.floor(y), math.floor(x)
    total = 0.0
    for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
        for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
            if 0 <= yy < h and 0 <= xx < w:
                total += wy * wx * plane[yy, xx]
    return total


def ref_mdcn(kernel, num_filter, stride=(1, 1), dilate=(1, 1), pad=(0, 0), groups=1,
             deformable_groups=1):
    kh, kw = kernel

    def ref(data, offset, mask, weight, bias=None):
        n, c, h, w = data.shape
        ho, wo = offset.shape[2:]
        cols = np.zeros((n, c, kh * kw, ho, wo))
        for b, ch, i, j, oy, ox in np.ndindex(n, c, kh, kw, ho, wo):
            d, k = ch // (c // deformable_groups), i * kw + j
            y = oy * stride[0] - pad[0] + i * dilate[0] + offset[b, d * 2 * kh * kw + 2 * k,
                                                                  oy, ox]
            x = ox * stride[1] - pad[1] + j * dilate[1] + offset[b, d * 2 * kh * kw + 2 * k + 1,
                                                                  oy, ox]
            cols[b, ch, k, oy, ox] = (_sample(data[b, ch], y, x)
                                      * mask[b, d * kh * kw + k, oy, ox])
        cg, fg = c // groups, num_filter // groups
        out = np.zeros((n, num_filter, ho, wo))
        for f in range(num_filter):
            g = f // fg
            out[:, f] = np.einsum("ck,nckyx->nyx", weight[f].reshape(cg, -1),
                                  cols[:, g * cg:(g + 1) * cg])
            if bias is not None:
                out[:, f] += bias[f]
        return [out]
    return ref


def ref_round(x):
    return [np.sign(x) * np.floor(np.abs(x) + 0.5)]


# ----------------------------------------------------------------------------- the case table

CASES = [
    Case("_contrib_SyncBatchNorm", dict(key="t1", fix_gamma=False, momentum=0.8),
         norm_inputs((3, 4, 2, 5)), ref_batch_norm(fix_gamma=False), infer_from=[0],
         grad_wrt=[0, 1, 2], id="syncbn"),
    Case("_contrib_SyncBatchNorm", dict(key="t2", eps=1e-4),
         norm_inputs((4, 3, 5)), ref_batch_norm(eps=1e-4), grad_wrt=[0, 1, 2],
         id="syncbn_fix_gamma"),
    Case("_contrib_SyncBatchNorm", dict(key="t3", fix_gamma=False, output_mean_var=True),
         norm_inputs((6, 5)), ref_batch_norm(fix_gamma=False, stats="var"), check_grad=False,
         id="syncbn_mean_var"),
    Case("_contrib_SyncBatchNorm", dict(key="t4", fix_gamma=False, use_global_stats=True),
         norm_inputs((2, 3, 4)), ref_batch_norm(fix_gamma=False, global_stats=True),
         grad_wrt=[0, 1, 2], id="syncbn_global"),
    Case("_contrib_SyncBatchNorm", dict(key="t5", fix_gamma=False, output_mean_var=True,
                                        ndev=4),
         norm_inputs((2, 3, 4)), ref_batch_norm(fix_gamma=False, global_stats=True,
                                                stats="var"),
         is_train=False, check_grad=False, id="syncbn_inference_ndev4"),
    Case("_contrib_BatchNormWithReLU", dict(fix_gamma=False),
         norm_inputs((3, 4, 2, 5)), ref_batch_norm(fix_gamma=False, relu=True),
         infer_from=[0], grad_wrt=[0, 1, 2], id="bnrelu"),
    Case("_contrib_BatchNormWithReLU", dict(momentum=0.7, axis=-1),
         norm_inputs((4, 3, 5), axis=-1), ref_batch_norm(relu=True, axis=-1),
         grad_wrt=[0, 1, 2], id="bnrelu_fix_gamma_axis"),
    Case("_contrib_BatchNormWithReLU", dict(fix_gamma=False, output_mean_var=True),
         norm_inputs((2, 3, 4, 4)), ref_batch_norm(fix_gamma=False, relu=True,
                                                   stats="invstd"),
         check_grad=False, id="bnrelu_mean_var"),
    Case("_contrib_BatchNormWithReLU", dict(fix_gamma=False, use_global_stats=True),
         norm_inputs((2, 3, 4)), ref_batch_norm(fix_gamma=False, global_stats=True,
                                                relu=True),
         grad_wrt=[0, 1, 2], id="bnrelu_global"),
    Case("_contrib_gradientmultiplier", dict(scalar=-0.5), [r(3, 4)], lambda x: [x],
         check_grad=False, id="gradmult"),
    Case("_contrib_round_ste", dict(), [np.array([-2.5, -0.5, 0.5, 1.5, 0.49, -3.7])],
         ref_round, check_grad=False, id="round_ste"),
    Case("_contrib_sign_ste", dict(), [np.array([-2.0, 0.0, 3.5, -0.1])],
         lambda x: [np.sign(x)], check_grad=False, id="sign_ste"),
    Case("_contrib_ModulatedDeformableConvolution", dict(kernel=(3, 3), num_filter=2,
                                                         pad=(1, 1)),
         [r(1, 2, 4, 5), dcn_offsets(1, 18, 4, 5), _RS.uniform(0, 1, (1, 9, 4, 5)),
          r(2, 2, 3, 3), r(2)],
         ref_mdcn((3, 3), 2, pad=(1, 1)), infer_from=[0], id="mdcn"),
    Case("_contrib_ModulatedDeformableConvolution",
         dict(kernel=(2, 3), num_filter=4, num_group=2, num_deformable_group=2, stride=(2, 1),
              dilate=(1, 2), pad=(1, 0), no_bias=True, im2col_step=1),
         [r(2, 4, 5, 6), dcn_offsets(2, 24, 3, 2, reach=3), _RS.uniform(0, 1, (2, 12, 3, 2)),
          r(4, 2, 2, 3)],
         ref_mdcn((2, 3), 4, (2, 1), (1, 2), (1, 0), 2, 2), infer_from=[0],
         id="mdcn_groups"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_case(case, ctx):
    """On cpu(0) the full check; on gpu(0), where present, the device run against it."""
    check_case(case, ctx)


@pytest.mark.parametrize("name,attrs,scale", [
    ("_contrib_gradientmultiplier", dict(scalar=-0.3), -0.3),
    ("_contrib_gradientmultiplier", dict(), 1.0),
    ("_contrib_round_ste", dict(), 1.0),
    ("_contrib_sign_ste", dict(), 1.0),
])
def test_straight_through_gradient(name, attrs, scale):
    """The gradient is the head times the scale, whatever the forward's derivative."""
    op = create_op(name, attrs)
    args, aux, outs = run_forward(op, [r(4, 3)])
    head = r(4, 3)
    grad = run_backward(op, args, aux, outs, [head], [0])[0]
    np.testing.assert_allclose(grad, head * scale, rtol=1e-15)


@pytest.mark.parametrize("dtype", [np.int32, np.float16, np.uint8])
def test_straight_through_keeps_the_type(dtype):
    x = np.array([1, 2, 0, 5]).astype(dtype)
    for name in ("_contrib_round_ste", "_contrib_sign_ste", "_contrib_gradientmultiplier"):
        op = create_op(name, {})
        assert op.infer_type([np.dtype(dtype)], [None])[1] == [np.dtype(dtype)]
        out = run_forward(op, [x])[2][0]
        assert out.dtype == dtype
        want = np.sign(x) if name == "_contrib_sign_ste" else x
        np.testing.assert_array_equal(out, want)


# ----------------------------------------------------------------------------- MXNet golden

def _golden():
    data = np.load(GOLDEN_PATH)
    return data, sorted({k.split("/")[0] for k in data.files})


GOLDEN_DATA, GOLDEN_NAMES = _golden()


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_matches_mxnet(name):
    """Outputs, gradients, and every input after backward (the moving statistics, gamma
    written as ones under fix_gamma) equal MXNet's."""
    data = GOLDEN_DATA
    meta = json.loads(str(data[name + "/meta"]))
    op = create_op(meta["op"], meta["attrs"])
    inputs = [data["%s/in%d" % (name, i)] for i in range(meta["n_in"])]
    args, aux, outs = run_forward(op, inputs, is_train=meta["train"])
    assert op.num_visible_outputs() == meta["n_out"]
    for i in range(meta["n_out"]):
        want = data["%s/out%d" % (name, i)]
        assert outs[i].dtype == want.dtype and outs[i].shape == want.shape, (name, i)
        np.testing.assert_allclose(outs[i], want, rtol=1e-5, atol=1e-5,
                                   err_msg="%s output %d" % (name, i))
    if meta["wrt"]:
        heads = [data[name + "/head0"]] + [np.zeros_like(o) for o in outs[1:]]
        grads = run_backward(op, args, aux, outs, heads, meta["wrt"])
        for i in meta["wrt"]:
            np.testing.assert_allclose(grads[i], data["%s/grad%d" % (name, i)], rtol=1e-5,
                                       atol=1e-5, err_msg="%s grad %d" % (name, i))
    for i, got in enumerate(list(args) + list(aux)):
        np.testing.assert_allclose(got, data["%s/after%d" % (name, i)], rtol=1e-5, atol=1e-6,
                                   err_msg="%s input %d afterwards" % (name, i))


# ----------------------------------------------------------------------------- in graphs

def _bind(out, inputs, aux_inputs=()):
    names = out.list_arguments() + out.list_auxiliary_states()
    shapes = dict(zip(names, [a.shape for a in list(inputs) + list(aux_inputs)]))
    exe = out.simple_bind(mx.cpu(), type_dict={n: np.float64 for n in names}, **shapes)
    for n, a in zip(out.list_arguments(), inputs):
        exe.arg_dict[n][:] = a
    for n, a in zip(out.list_auxiliary_states(), aux_inputs):
        exe.aux_dict[n][:] = a
    return exe


@pytest.mark.parametrize("name,attrs,inputs", [
    ("_contrib_SyncBatchNorm", dict(key="g", fix_gamma=False), norm_inputs((2, 3, 4))),
    ("_contrib_BatchNormWithReLU", dict(fix_gamma=False), norm_inputs((2, 3, 2, 2))),
    ("_contrib_gradientmultiplier", dict(scalar=3.0), [r(2, 3)]),
    ("_contrib_sign_ste", dict(), [r(2, 3)]),
    ("_contrib_ModulatedDeformableConvolution", dict(kernel=(2, 2), num_filter=2),
     [r(2, 2, 3, 4), dcn_offsets(2, 8, 2, 3), _RS.uniform(0, 1, (2, 4, 2, 3)),
      r(2, 2, 2, 2), r(2)]),
])
def test_bound_graph_equals_the_op(name, attrs, inputs):
    """Forward, backward and the moving statistics through an executor (which gives
    backward only the arrays the op declares it reads) equal the op-level results."""
    op = create_op(name, attrs)
    n_args = len(op.arguments())
    syms = [mx.sym.var("in%d" % i) for i in range(len(inputs))]
    out = getattr(mx.sym._internal, name)(*syms, **attrs)
    exe = _bind(out, inputs[:n_args], inputs[n_args:])
    got = exe.forward(is_train=True)[0].asnumpy()
    args, aux, outs = run_forward(op, inputs)
    np.testing.assert_allclose(got, outs[0], rtol=1e-12, atol=1e-12)
    head = r(*got.shape)
    exe.backward([mx.nd.array(head, dtype=np.float64)])
    heads = [head] + [np.zeros_like(o) for o in outs[1:]]
    want = run_backward(op, args, aux, outs, heads, list(range(n_args)))
    for n, g in zip(out.list_arguments(), want):
        np.testing.assert_allclose(exe.grad_dict[n].asnumpy(), g, rtol=1e-12, atol=1e-12)
    for n, a in zip(out.list_auxiliary_states(), aux):
        np.testing.assert_allclose(exe.aux_dict[n].asnumpy(), a, rtol=1e-12, atol=1e-12)


def test_symbol_slots_and_names():
    d = mx.sym.var("data")
    m = mx.sym.contrib.ModulatedDeformableConvolution(d, kernel=(3, 3), num_filter=4,
                                                      pad=(1, 1), name="m")
    assert m.list_arguments() == ["data", "m_offset", "m_mask", "m_weight", "m_bias"]
    arg_shapes, out_shapes, _ = m.infer_shape(data=(2, 6, 5, 7))
    assert arg_shapes == [(2, 6, 5, 7), (2, 18, 5, 7), (2, 9, 5, 7), (4, 6, 3, 3), (4,)]
    assert out_shapes == [(2, 4, 5, 7)]
    m = mx.sym.contrib.ModulatedDeformableConvolution(d, kernel=(3, 3), num_filter=4,
                                                      no_bias=True, name="m")
    assert m.list_arguments() == ["data", "m_offset", "m_mask", "m_weight"]
    b = mx.sym.contrib.BatchNormWithReLU(d, name="bn")
    assert b.list_outputs() == ["bn_output"]
    assert b.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert json.loads(b.tojson())["node_row_ptr"][-2:] == [5, 9]  # four outputs, as MXNet
    b = mx.sym.contrib.BatchNormWithReLU(d, output_mean_var=True, name="bn")
    assert b.list_outputs() == ["bn_output", "bn_mean", "bn_var"]
    s = mx.sym.contrib.SyncBatchNorm(d, key="k", name="sbn")
    assert s.list_arguments() == ["data", "sbn_gamma", "sbn_beta"]
    assert s.list_auxiliary_states() == ["sbn_moving_mean", "sbn_moving_var"]
    node = json.loads(mx.sym.contrib.gradientmultiplier(d, scalar=2).tojson())["nodes"][-1]
    assert node["op"] == "_contrib_gradientmultiplier" and node["attrs"] == {"scalar": "2"}


# ----------------------------------------------------------------------------- types

def test_norm_types_keep_float16_parameters_in_float32():
    f16, f32 = np.dtype("float16"), np.dtype("float32")
    for name, attrs, n_out in (("_contrib_SyncBatchNorm", dict(key="k"), 3),
                               ("_contrib_BatchNormWithReLU", {}, 4)):
        op = create_op(name, attrs)
        in_types, out_types = op.infer_type([f16, None, None, None, None], [None] * n_out)
        assert [str(t) for t in in_types] == ["float16"] + ["float32"] * 4
        assert [str(t) for t in out_types] == ["float16"] + ["float32"] * (n_out - 1)
        with pytest.raises(DTypeError, match="gamma"):
            op.infer_type([f16, f16, None, None, None], [None] * n_out)
        in_types, _ = op.infer_type([np.dtype("float64")] + [None] * 4, [None] * n_out)
        assert all(str(t) == "float64" for t in in_types)
    x = norm_inputs((2, 3, 4))
    op = create_op("_contrib_BatchNormWithReLU", {})
    args, aux, outs = run_forward(op, [x[0].astype(f16)] + [a.astype(f32) for a in x[1:]])
    assert outs[0].dtype == f16 and outs[3].dtype == f32
    np.testing.assert_allclose(outs[0], ref_batch_norm(relu=True)(*x)[0], atol=2e-2)


def test_mdcn_needs_one_type():
    op = create_op("_contrib_ModulatedDeformableConvolution", dict(kernel=(3, 3),
                                                                  num_filter=2))
    f32, f64 = np.dtype("float32"), np.dtype("float64")
    with pytest.raises(DTypeError, match="weight"):
        op.infer_type([f32, None, None, f64, None], [None])


# ----------------------------------------------------------------------------- errors

def test_sync_batch_norm_refuses_cross_device_training():
    op = create_op("_contrib_SyncBatchNorm", dict(key="k", ndev=2))
    with pytest.raises(OpParamError, match="ndev=2 .*across devices.*not implement"):
        run_forward(op, norm_inputs((2, 3, 4)), is_train=True)
    run_forward(op, norm_inputs((2, 3, 4)), is_train=False)
    create_op("_contrib_SyncBatchNorm", dict(key="k", ndev=2, use_global_stats=True))


@pytest.mark.parametrize("name,attrs,match", [
    ("_contrib_SyncBatchNorm", {}, "key"),
    ("_contrib_SyncBatchNorm", dict(key="k", ndev=0), "ndev"),
    ("_contrib_SyncBatchNorm", dict(key="k", axis=2), "axis"),
    ("_contrib_SyncBatchNorm", dict(key="k", eps=0), "eps"),
    ("_contrib_BatchNormWithReLU", dict(key="k"), "key"),
    ("_contrib_gradientmultiplier", dict(scale=2), "scale"),
    ("_contrib_round_ste", dict(scalar=2), "no parameters"),
    ("_contrib_ModulatedDeformableConvolution", dict(kernel=(3,), num_filter=2), "kernel"),
    ("_contrib_ModulatedDeformableConvolution", dict(kernel=(3, 3)), "num_filter"),
    ("_contrib_ModulatedDeformableConvolution", dict(kernel=(3, 3), num_filter=3,
                                                     num_group=2), "num_group"),
    ("_contrib_ModulatedDeformableConvolution", dict(kernel=(3, 3), num_filter=2,
                                                     im2col_step=0), "im2col_step"),
    ("_contrib_ModulatedDeformableConvolution", dict(kernel=(3, 3), num_filter=2,
                                                     layout="NCW"), "layout"),
])
def test_bad_parameters(name, attrs, match):
    with pytest.raises(OpParamError, match=match):
        create_op(name, attrs)


@pytest.mark.parametrize("attrs,shapes,match", [
    (dict(kernel=(3, 3), num_filter=2, im2col_step=2), [(3, 2, 5, 5), None, None, None, None],
     "im2col_step"),
    (dict(kernel=(3, 3), num_filter=2, num_deformable_group=3),
     [(1, 4, 5, 5), None, None, None, None], "num_deformable_group"),
    (dict(kernel=(3, 3), num_filter=2), [(1, 2, 5, 5), None, (1, 9, 4, 3), None, None],
     "mask"),
    (dict(kernel=(3, 3), num_filter=2), [(1, 2, 5, 5), (1, 16, 3, 3), None, None, None],
     "offset"),
    (dict(kernel=(3, 3), num_filter=2), [(1, 2, 5, 5), None, None, (2, 3, 3, 3), None],
     "weight"),
    (dict(kernel=(3, 3), num_filter=2), [(1, 2, 2, 5), None, None, None, None], "too small"),
    (dict(kernel=(3, 3), num_filter=2), [(2, 5, 5), None, None, None, None], "NCHW"),
])
def test_mdcn_bad_shapes(attrs, shapes, match):
    op = create_op("_contrib_ModulatedDeformableConvolution", attrs)
    with pytest.raises(ShapeError, match=match):
        infer(op, shapes)


def test_mdcn_infers_offset_and_mask_from_data():
    op = create_op("_contrib_ModulatedDeformableConvolution",
                   dict(kernel=(2, 3), num_filter=4, num_deformable_group=2, stride=(2, 1)))
    in_shapes, out_shapes = infer(op, [(4, 6, 7, 8), None, None, None, None])
    assert in_shapes == [(4, 6, 7, 8), (4, 24, 3, 6), (4, 12, 3, 6), (4, 6, 2, 3), (4,)]
    assert out_shapes == [(4, 4, 3, 6)]


def test_norm_bad_shapes():
    op = create_op("_contrib_BatchNormWithReLU", {})
    with pytest.raises(ShapeError, match="gamma"):
        infer(op, [(2, 3, 4), (4,), None, None, None])
    op = create_op("_contrib_SyncBatchNorm", dict(key="k"))
    with pytest.raises(ShapeError, match="axis"):
        infer(op, [(5,), None, None, None, None])
