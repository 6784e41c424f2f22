"""Convolution_v1, Pooling_v1 and BatchNorm_v1: MXNet 1.9.1's numbers (tests/data/ops/
v1_golden.npz, written by gen_v1_golden.py), finite-difference gradients, and the inputs
MXNet's versions refuse, refused here with a message."""
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import DTypeError, OpParamError, ShapeError

from .harness import Case, check_case

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "ops", "v1_golden.npz"))
CASES = sorted({k.split("/")[0] for k in GOLDEN.files})


def _tol(ctx):
    return 1e-5 if ctx.device_type == "cpu" else 1e-3


@pytest.mark.parametrize("name", CASES)
def test_mxnets_numbers(name, ctx):
    meta = json.loads(str(GOLDEN[name + "/meta"]))
    net = getattr(mx.sym, meta["op"])(mx.sym.Variable("data"), name="op", **meta["attrs"])
    assert net.list_arguments() == meta["args"]
    assert net.list_auxiliary_states() == meta["aux"]
    exe = net.simple_bind(ctx, data=GOLDEN[name + "/arg_data"].shape)
    for n in meta["args"]:
        exe.arg_dict[n][:] = GOLDEN["%s/arg_%s" % (name, n)]
    for n in meta["aux"]:
        exe.aux_dict[n][:] = GOLDEN["%s/aux_%s" % (name, n)]
    outs = exe.forward(is_train=meta["is_train"])
    assert len(outs) == meta["n_out"]
    exe.backward([mx.nd.array(GOLDEN["%s/head%d" % (name, i)], ctx=ctx)
                  for i in range(len(outs))])
    tol = _tol(ctx)
    for i, y in enumerate(outs):
        np.testing.assert_allclose(y.asnumpy(), GOLDEN["%s/out%d" % (name, i)],
                                   rtol=tol, atol=tol, err_msg="output %d" % i)
    for n in meta["args"]:
        np.testing.assert_allclose(exe.grad_dict[n].asnumpy(), GOLDEN["%s/grad_%s" % (name, n)],
                                   rtol=10 * tol, atol=10 * tol, err_msg="gradient of " + n)
    for n in meta["aux"]:
        np.testing.assert_allclose(exe.aux_dict[n].asnumpy(), GOLDEN["%s/auxout_%s" % (name, n)],
                                   rtol=tol, atol=tol, err_msg="aux " + n)


def test_golden_covers_the_differences_from_pooling():
    """The cases where Pooling_v1 and Pooling part ways are in the golden file: a max window
    over padding sees zeros, and the full convention's clipped average divides by k_h * k_w."""
    x = GOLDEN["pool_max_negative_pad/arg_data"]
    assert x.max() < 0 and GOLDEN["pool_max_negative_pad/out0"].max() == 0
    new = mx.nd.Pooling(mx.nd.array(x), kernel=(3, 3), pad=(2, 2), stride=(2, 2))
    assert new.asnumpy().max() < 0
    old = mx.nd.Pooling_v1(mx.nd.array(x), kernel=(3, 3), pad=(2, 2), stride=(2, 2))
    np.testing.assert_array_equal(old.asnumpy(), GOLDEN["pool_max_negative_pad/out0"])


def _pool_v1_ref(kernel, stride, pad, pool_type, convention):
    def ref(x):
        n, c, h, w = x.shape
        (kh, kw), (sh, sw), (ph, pw) = kernel, stride, pad
        xp = np.zeros((n, c, h + 2 * ph, w + 2 * pw))
        xp[:, :, ph:ph + h, pw:pw + w] = x
        rnd = (lambda a, s: a // s) if convention == "valid" else (lambda a, s: -(-a // s))
        oh, ow = rnd(h + 2 * ph - kh, sh) + 1, rnd(w + 2 * pw - kw, sw) + 1
        y = np.zeros((n, c, oh, ow))
        for i in range(oh):
            for j in range(ow):
                win = xp[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw]
                y[:, :, i, j] = win.max(axis=(2, 3)) if pool_type == "max" else win.sum((2, 3))
        return [y / (kh * kw) if pool_type == "avg" else y]
    return ref


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
@pytest.mark.parametrize("convention", ["valid", "full"])
def test_pooling_v1_against_reference(pool_type, convention, ctx):
    rng = np.random.RandomState(3)
    # distinct values, none equal to a padding zero, keep max's finite differences off ties
    x = rng.permutation(2 * 3 * 7 * 6).reshape(2, 3, 7, 6) / 50.0 - 2.01
    attrs = dict(kernel=(3, 2), stride=(2, 3), pad=(1, 1), pool_type=pool_type,
                 pooling_convention=convention)
    check_case(Case("Pooling_v1", attrs, [x], _pool_v1_ref((3, 2), (2, 3), (1, 1), pool_type,
                                                          convention), eps=1e-4,
                    id="pool_v1"), ctx)


def test_pooling_v1_max_ties_share_the_gradient():
    x = mx.nd.array(np.ones((1, 1, 2, 2)))
    net = mx.sym.Pooling_v1(mx.sym.Variable("data"), kernel=(2, 2))
    exe = net.simple_bind(mx.cpu(), data=(1, 1, 2, 2))
    exe.arg_dict["data"][:] = x
    exe.forward(is_train=True)
    exe.backward([mx.nd.array([[[[3.0]]]])])
    np.testing.assert_array_equal(exe.grad_dict["data"].asnumpy(), np.full((1, 1, 2, 2), 3.0))


def test_batchnorm_v1_inference_backward_is_the_general_formula(ctx):
    """After an inference forward MXNet's BatchNorm_v1 differentiates through the batch
    formula at the moving statistics; BatchNorm's gradient is a plain rescale there."""
    name = "bn_4d_infer_gamma"
    x = GOLDEN[name + "/arg_data"]
    v1 = GOLDEN[name + "/grad_data"]
    mv = GOLDEN[name + "/aux_op_moving_var"]
    gamma = GOLDEN[name + "/arg_op_gamma"]
    plain = GOLDEN[name + "/head0"] * (gamma / np.sqrt(mv + 1e-5)).reshape(1, -1, 1, 1)
    assert np.abs(v1 - plain).max() > 1e-2
    assert x.shape == v1.shape


@pytest.mark.parametrize("kwargs, error, text", [
    (dict(kernel=(3,), num_filter=2), OpParamError, "2-D convolutions only"),
    (dict(kernel=(3, 3, 3), num_filter=2), OpParamError, "2-D convolutions only"),
    (dict(kernel=(3, 3), num_filter=2, layout="NHWC"), OpParamError, "NCHW"),
])
def test_convolution_v1_refuses_what_mxnet_cannot_compute(kwargs, error, text):
    with pytest.raises(error, match=text):
        mx.sym.Convolution_v1(mx.sym.Variable("data"), **kwargs)


def test_pooling_v1_refusals():
    data = mx.sym.Variable("data")
    with pytest.raises(OpParamError, match="two positive dims"):
        mx.sym.Pooling_v1(data, kernel=(2, 2, 2))
    with pytest.raises(OpParamError, match="two positive dims"):
        mx.sym.Pooling_v1(data, global_pool=True)
    with pytest.raises(OpParamError, match="stride must be positive"):
        mx.sym.Pooling_v1(data, kernel=(2, 2), stride=(0, 1))
    with pytest.raises(OpParamError, match="p_value"):
        mx.sym.Pooling_v1(data, kernel=(2, 2), p_value=2)
    with pytest.raises(ShapeError, match=r"\(1, 1, 5\).*4 dims"):
        mx.sym.Pooling_v1(data, kernel=(2, 2)).infer_shape(data=(1, 1, 5))
    with pytest.raises(ShapeError, match="smaller than kernel"):
        mx.sym.Pooling_v1(data, kernel=(8, 8)).infer_shape(data=(1, 1, 5, 5))


def test_batchnorm_v1_refusals():
    bn = mx.sym.BatchNorm_v1(mx.sym.Variable("data"))
    with pytest.raises(ShapeError, match=r"\(4, 3, 5\).*\(N, C\) or"):
        bn.infer_shape(data=(4, 3, 5))
    with pytest.raises(DTypeError, match="float32 only"):
        bn.infer_type(data="float64")
    with pytest.raises(OpParamError, match="axis"):
        mx.sym.BatchNorm_v1(mx.sym.Variable("data"), axis=2)


def test_v1_ops_round_trip_through_json():
    data = mx.sym.Variable("data")
    net = mx.sym.Pooling_v1(mx.sym.BatchNorm_v1(mx.sym.Convolution_v1(
        data, kernel=(3, 3), num_filter=4, name="c"), name="bn"), kernel=(2, 2),
        pool_type="avg", name="p")
    again = mx.sym.load_json(net.tojson())
    assert [n["op"] for n in json.loads(again.tojson())["nodes"] if n["op"] != "null"] == [
        "Convolution_v1", "BatchNorm_v1", "Pooling_v1"]
    assert again.infer_shape(data=(2, 3, 8, 8))[1] == [(2, 4, 5, 5)]
    assert net.list_outputs() == ["p_output"]
