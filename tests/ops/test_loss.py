"""Loss heads: NumPy references with MXNet's analytic gradients, MXNet golden values, inference.

tests/data/ops/loss_golden.npz holds MXNet 1.9.1's outputs and gradients, written by
tests/data/ops/gen_loss.py (run under an MXNet venv).
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from minimod.base import OpParamError, ShapeError
from minimod.ops.registry import create_op, get_op_class
from tests.ops.harness import Case, check_case

DATA_DIR = os.path.join(os.path.dirname(__file__), "..", "data", "ops")
sys.path.insert(0, DATA_DIR)
from gen_loss import CASES as GOLDEN_CASES  # noqa: E402

sys.path.remove(DATA_DIR)

RNG = np.random.RandomState(3)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def labels(n, classes, shape=None):
    return RNG.randint(0, classes, shape or (n,)).astype(np.float64)


def sm_grad(grad_scale=1.0, ignore_label=-1.0, use_ignore=False, normalization="null",
            smooth_alpha=0.0, mode="flat"):
    """MXNet's SoftmaxOutput data gradient, one explicit loop per label."""
    def ref(x, label):
        if mode == "flat":
            p = softmax(x.reshape(x.shape[0], -1), 1)
            rows = [(p[i], int(label.reshape(-1)[i])) for i in range(p.shape[0])]
            per_sample = label.size // x.shape[0]
            n_batch = x.shape[0]
        elif mode == "preserve":
            p = softmax(x, -1).reshape(-1, x.shape[-1])
            rows = [(p[i], int(v)) for i, v in enumerate(label.reshape(-1))]
            per_sample, n_batch = 1, p.shape[0]
        else:
            p = softmax(x, 1).reshape(x.shape[0], x.shape[1], -1)
            lab = label.reshape(x.shape[0], -1)
            rows = [(p[i, :, j], int(lab[i, j])) for i in range(p.shape[0])
                    for j in range(p.shape[2])]
            per_sample, n_batch = p.shape[2], x.shape[0]
        grads = []
        valid = 0
        for prob, k in rows:
            off = smooth_alpha / (prob.size - 1) if smooth_alpha and prob.size > 1 else 0.0
            target = np.full(prob.shape, off)
            if 0 <= k < prob.size:
                target[k] = 1.0 - smooth_alpha
            g = prob - target
            if k != int(ignore_label):
                valid += 1
            elif use_ignore:
                g = 0 * g
            grads.append(g)
        if normalization == "valid":
            scale = grad_scale / max(valid, 1)
        else:
            scale = grad_scale / per_sample / (n_batch if normalization == "batch" else 1)
        g = np.array(grads) * scale
        if mode == "multi":
            g = g.reshape(x.shape[0], x.shape[2:] and int(np.prod(x.shape[2:])) or 1,
                          x.shape[1]).transpose(0, 2, 1)
        return [g.reshape(x.shape), np.zeros_like(label)]
    return ref


def sm_case(x, label, attrs, mode="flat", **kw):
    if mode == "flat":
        def fwd(a, b):
            return [softmax(a.reshape(a.shape[0], -1), 1).reshape(a.shape)]
    elif mode == "preserve":
        def fwd(a, b):
            return [softmax(a, -1)]
    else:
        def fwd(a, b):
            return [softmax(a, 1)]
    ref_attrs = {k: v for k, v in attrs.items()
                 if k in ("grad_scale", "ignore_label", "use_ignore", "normalization",
                          "smooth_alpha")}
    return Case("SoftmaxOutput", attrs, [x, label], fwd,
                grad_ref=sm_grad(mode=mode, **ref_attrs), infer_from=[0], **kw)


def reg_case(name, x, label, attrs, infer=True):
    grad_scale = attrs.get("grad_scale", 1.0)
    act = (lambda a: 1 / (1 + np.exp(-a))) if name == "LogisticRegressionOutput" else \
        (lambda a: a)

    def ref_grad(a, b):
        diff = act(a) - b.reshape(a.shape)
        if name == "MAERegressionOutput":
            diff = np.sign(diff)
        return [diff * grad_scale / (b.size // b.shape[0]), np.zeros_like(b)]
    return Case(name, attrs, [x, label], lambda a, b: [act(a)], grad_ref=ref_grad,
                infer_from=[0] if infer else None,
                id="%s%s%s" % (name, x.shape, label.shape))


X45 = RNG.randn(4, 5)
CASES = [
    sm_case(X45, labels(4, 5), {}, id="sm-null"),
    sm_case(X45, labels(4, 5), {"normalization": "batch", "grad_scale": 2.0}, id="sm-batch"),
    sm_case(RNG.randn(6, 5), np.array([0, 2, 2, 4, 1, 2.0]),
            {"normalization": "valid", "use_ignore": True, "ignore_label": 2}, id="sm-valid"),
    sm_case(RNG.randn(6, 5), np.array([0, 2, 2, 4, 1, 2.0]),
            {"normalization": "valid", "ignore_label": 2}, id="sm-valid-no-use_ignore"),
    sm_case(RNG.randn(3, 4), np.array([1.0, 1.0, 1.0]),
            {"normalization": "valid", "use_ignore": True, "ignore_label": 1},
            id="sm-valid-all-ignored"),
    sm_case(RNG.randn(6, 5), np.array([0, 3, 0, 4, 1, 2.0]),
            {"use_ignore": True, "ignore_label": 0, "smooth_alpha": 0.2}, id="sm-smooth"),
    # one class: its target is 1 - a and no other class shares a (MXNet 1.9.1: 0.1 for
    # a = 0.1); MXNet ignores smooth_alpha with multi_output (docs/compatibility.md)
    sm_case(RNG.randn(3, 1), np.zeros(3), {"smooth_alpha": 0.1}, id="sm-smooth-one-class"),
    sm_case(RNG.randn(2, 1, 3), np.zeros((2, 3)), {"multi_output": True, "smooth_alpha": 0.1},
            mode="multi", id="sm-multi-smooth-one-class"),
    sm_case(RNG.randn(2, 3, 4), labels(2, 3, (2, 4)), {"multi_output": True,
                                                       "smooth_alpha": 0.2},
            mode="multi", id="sm-multi-smooth"),
    sm_case(RNG.randn(3, 4), np.array([0, -1, 3.0]), {}, id="sm-unignored-negative"),
    sm_case(RNG.randn(2, 3, 4), labels(2, 4, (2, 4)), {"multi_output": True},
            mode="multi", id="sm-multi"),
    sm_case(RNG.randn(2, 3, 4, 5), labels(2, 3, (2, 20)),
            {"multi_output": True, "normalization": "batch"}, mode="multi",
            id="sm-multi-batch"),
    sm_case(RNG.randn(2, 3, 4), np.array([[1, 0, 1, 2], [2, 1, 0, 0.0]]),
            {"multi_output": True, "normalization": "valid", "use_ignore": True,
             "ignore_label": 1}, mode="multi", id="sm-multi-valid"),
    sm_case(RNG.randn(2, 3, 4), labels(2, 4, (2, 3)), {"preserve_shape": True},
            mode="preserve", id="sm-preserve"),
    sm_case(RNG.randn(2, 3, 4), labels(2, 4, (2, 3)),
            {"preserve_shape": True, "normalization": "batch"}, mode="preserve",
            id="sm-preserve-batch"),
    sm_case(RNG.randn(2, 3, 4), labels(2, 12, (2, 3)), {"normalization": "batch"},
            id="sm-flat-3d"),
    reg_case("LinearRegressionOutput", RNG.randn(4, 1), RNG.randn(4), {"grad_scale": 3.0}),
    reg_case("LinearRegressionOutput", RNG.randn(4, 3), RNG.randn(4, 3), {}),
    reg_case("LinearRegressionOutput", RNG.randn(2, 3, 2), RNG.randn(2, 6), {}, infer=False),
    reg_case("LogisticRegressionOutput", RNG.randn(4, 3), RNG.rand(4, 3), {}),
    reg_case("LogisticRegressionOutput", RNG.randn(5, 1), RNG.rand(5), {"grad_scale": 0.5}),
    reg_case("MAERegressionOutput", RNG.randn(4, 3), RNG.randn(4, 3), {}),
    reg_case("MAERegressionOutput", RNG.randn(4, 1), RNG.randn(4), {"grad_scale": 2.0}),
    Case("MakeLoss", {"grad_scale": 2.0}, [RNG.randn(3, 4)], lambda a: [a],
         grad_ref=lambda a: [np.full(a.shape, 2.0)], id="MakeLoss-null"),
    Case("make_loss", {"normalization": "batch"}, [RNG.randn(3, 4)], lambda a: [a],
         grad_ref=lambda a: [np.full(a.shape, 1 / 3)], id="MakeLoss-batch"),
    Case("MakeLoss", {"normalization": "valid", "valid_thresh": 0.1}, [RNG.randn(3, 4)],
         lambda a: [a], grad_ref=lambda a: [np.full(a.shape, 1.0 / max(1, (a > 0.1).sum()))],
         id="MakeLoss-valid"),
    Case("softmax_cross_entropy", {}, [X45, labels(4, 5)],
         lambda a, b: [np.array([-np.log(softmax(a, 1)[np.arange(4), b.astype(int)]).sum()])],
         grad_wrt=[0], infer_from=[0]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_op(case, ctx):
    check_case(case, ctx)


GOLDEN = np.load(os.path.join(DATA_DIR, "loss_golden.npz"))


@pytest.mark.parametrize("cid", sorted(GOLDEN_CASES))
def test_mxnet_golden(cid):
    name, attrs, _, kind = GOLDEN_CASES[cid]
    if cid == "sm_out_grad":
        pytest.skip("MXNet 1.9.1 multiplies by the softmax output, not the head gradient, "
                    "even inside a graph; minimod multiplies by the head")
    op = create_op(name, attrs)
    inputs = [GOLDEN[cid + "/data"]] + ([GOLDEN[cid + "/label"]] if kind else [])
    ins, outs = op.infer_shape([a.shape for a in inputs], [None])
    assert ins == [a.shape for a in inputs]
    out = [np.full(outs[0], np.nan)]
    op.forward(np, inputs, [], out, True)
    np.testing.assert_allclose(out[0], GOLDEN[cid + "/out"], rtol=1e-6, atol=1e-7)
    grads = [np.full(a.shape, np.nan) for a in inputs]
    heads = [GOLDEN[cid + "/head"] if op.needs_out_grad else None]
    op.backward(np, heads, inputs, out, grads, [])
    np.testing.assert_allclose(grads[0], GOLDEN[cid + "/grad"], rtol=1e-6, atol=1e-7)
    if cid + "/label_grad" in GOLDEN:
        np.testing.assert_array_equal(grads[1], GOLDEN[cid + "/label_grad"])


def test_out_grad_multiplies_head():
    op = create_op("SoftmaxOutput", {"out_grad": True})
    assert op.needs_out_grad
    x, label, head = RNG.randn(3, 4), np.array([0, 2, 1.0]), RNG.randn(3, 4)
    out = [np.empty((3, 4))]
    op.forward(np, [x, label], [], out, True)
    g = [np.empty((3, 4)), None]
    op.backward(np, [head], [x, label], out, g, [])
    np.testing.assert_allclose(g[0], (softmax(x, 1) - np.eye(4)[[0, 2, 1]]) * head)


# ----------------------------------------------------------------------------- shape inference

def infer(name, attrs, in_shapes):
    op = create_op(name, attrs)
    ins, outs = list(in_shapes), [None] * op.num_outputs()
    for _ in range(2):
        ins, outs = op.infer_shape(ins, outs)
    return ins, outs


@pytest.mark.parametrize("attrs,data,label,want", [
    ({}, (4, 5), None, (4,)),
    ({}, (4, 5, 6), None, (4, 5)),                      # MXNet: data.shape[:-1]
    ({}, (4, 5, 6), (4,), (4,)),                        # accepted here as well
    ({}, (4, 5), (4, 5), (4, 5)),                       # probabilities
    ({"multi_output": True}, (4, 5, 6), None, (4, 6)),
    ({"multi_output": True}, (4, 5, 6, 7), None, (4, 42)),
    ({"multi_output": True}, (4, 5, 6, 7), (4, 6, 7), (4, 6, 7)),
    ({"multi_output": True}, (4, 5, 6, 7), (4, 1, 6, 7), (4, 1, 6, 7)),
    ({"preserve_shape": True}, (4, 5, 6), None, (4, 5)),
    ({"preserve_shape": True}, (4, 5, 6), (4, 5, 6), (4, 5, 6)),
])
def test_softmax_label_inference(attrs, data, label, want):
    ins, outs = infer("SoftmaxOutput", attrs, [data, label])
    assert ins == [data, want] and outs == [data]


def test_batch_from_label():
    ins, outs = infer("SoftmaxOutput", {}, [(None, 5), (4,)])
    assert ins == [(4, 5), (4,)] and outs == [(4, 5)]
    ins, outs = infer("SoftmaxOutput", {"multi_output": True}, [(None, 5, 6), (4, 6)])
    assert ins == [(4, 5, 6), (4, 6)]
    ins, outs = infer("LinearRegressionOutput", {}, [(None, 3), (4, 3)])
    assert ins == [(4, 3), (4, 3)] and outs == [(4, 3)]
    ins, _ = infer("softmax_cross_entropy", {}, [(None, 5), (4,)])
    assert ins == [(4, 5), (4,)]


@pytest.mark.parametrize("data,label,want", [
    ((4, 1), None, (4,)), ((4, 1), (4,), (4,)), ((4, 3), None, (4, 3)),
    ((4, 3, 2), (4, 6), (4, 6)), ((4,), (4,), (4,)), ((4,), (4, 1), (4, 1)),
])
def test_regression_label_inference(data, label, want):
    for name in ("LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput"):
        ins, outs = infer(name, {}, [data, label])
        assert ins == [data, want] and outs == [data]


@pytest.mark.parametrize("name,attrs,data,label", [
    ("SoftmaxOutput", {}, (4, 5), (5,)),
    ("SoftmaxOutput", {}, (4, 5, 6), (4, 30)),
    ("SoftmaxOutput", {"multi_output": True}, (4, 5, 6), (4, 5)),
    ("SoftmaxOutput", {"preserve_shape": True}, (4, 5, 6), (4,)),
    ("LinearRegressionOutput", {}, (4, 3), (4,)),
    ("LinearRegressionOutput", {}, (4, 3), (12,)),
    ("MAERegressionOutput", {}, (4, 3), (3, 4)),
    ("softmax_cross_entropy", {}, (4, 5), (4, 5)),
])
def test_bad_label_shapes(name, attrs, data, label):
    with pytest.raises(ShapeError, match="label"):
        infer(name, attrs, [data, label])


@pytest.mark.parametrize("name,attrs", [
    ("SoftmaxOutput", {"normalization": "mean"}),
    ("SoftmaxOutput", {"grad_scale": "big"}),
    ("SoftmaxOutput", {"label_smoothing": 0.1}),
    ("MakeLoss", {"normalization": "sum"}),
    ("LinearRegressionOutput", {"normalization": "batch"}),
])
def test_bad_params(name, attrs):
    with pytest.raises(OpParamError):
        create_op(name, attrs)


def test_contract():
    assert get_op_class("Softmax") is get_op_class("SoftmaxOutput")
    assert get_op_class("make_loss") is get_op_class("MakeLoss")
    for name in ("SoftmaxOutput", "LinearRegressionOutput", "LogisticRegressionOutput",
                 "MAERegressionOutput", "MakeLoss"):
        op = create_op(name, {})
        assert not op.needs_out_grad
        assert op.arguments() == (["data"] if name == "MakeLoss" else ["data", "label"])
    assert create_op("softmax_cross_entropy", {}).needs_out_grad
