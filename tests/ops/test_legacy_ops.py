"""The legacy and helper operators of minimod/ops/legacy.py: batch_take, fill_element_0index,
_onehot_encode (and mx.nd.onehot_encode), _slice_assign / _crop_assign,
_slice_assign_scalar / _crop_assign_scalar, _identity_with_attr_like_rhs and _square_sum.

NumPy references on every backend (the `ctx` fixture) with float64 finite-difference
gradients where MXNet has a gradient, MXNet 1.9.1's numbers (tests/data/ops/
ctc_legacy_golden.npz), the calls MXNet's frontends make, and errors."""
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import DTypeError, GraphError, OpParamError, ShapeError
from minimod.ops.registry import create_op, get_op_class

from .harness import Case, check_case, infer, run_forward

_RS = np.random.RandomState(3)
GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "ops",
                              "ctc_legacy_golden.npz"))


def r(*shape):
    return _RS.randn(*shape)


def i32(values):
    return np.array(values, dtype="int32")


# ----------------------------------------------------------------------------- references

def ref_batch_take(a, index):
    rows = a.reshape(-1, a.shape[-1])
    cols = np.clip(index.reshape(-1).astype(np.int64), 0, a.shape[-1] - 1)
    return [rows[np.arange(rows.shape[0]), cols].reshape(index.shape)]


def ref_fill(lhs, values, index):
    out = lhs.copy()
    for i, (v, k) in enumerate(zip(values, index.astype(np.int64))):
        if 0 <= k < lhs.shape[1]:
            out[i, k] = v
    return [out]


def ref_onehot(index, like):
    out = np.zeros_like(like)
    for i, k in enumerate(index.astype(np.int64)):
        if 0 <= k < like.shape[1]:
            out[i, k] = 1
    return [out]


def ref_slice_assign(index):
    def ref(lhs, rhs):
        out = lhs.copy()
        out[index] = rhs
        return [out]
    return ref


def ref_slice_assign_scalar(index, value):
    def ref(data):
        out = data.copy()
        out[index] = value
        return [out]
    return ref


def ref_square_sum(axis=None, keepdims=False):
    def ref(x):
        out = (x * x).sum(axis=axis, keepdims=keepdims)
        return [out.reshape(1) if out.ndim == 0 else out]
    return ref


CASES = [
    Case("batch_take", {}, [r(4, 5), i32([0, 4, 7, -2])], ref_batch_take, check_grad=False,
         id="batch_take_clipped"),
    Case("batch_take", {}, [r(3, 2, 4), i32([[1, 3], [2, 0], [0, 1]])], ref_batch_take,
         check_grad=False, id="batch_take_rows_of_last_axis"),
    Case("fill_element_0index", {}, [r(4, 5), r(4), np.array([0, 4, 9, -1.0])], ref_fill,
         check_grad=False, infer_from=[0]),
    Case("_onehot_encode", {}, [np.array([1, 4, 7, -1, 2.7]), r(5, 5)], ref_onehot,
         check_grad=False, infer_from=[1]),
    Case("_slice_assign", dict(begin=(1, None), end=(None, -2), step=(2, 2)), [r(4, 6), r(2, 2)],
         ref_slice_assign((slice(1, None, 2), slice(None, -2, 2))), check_grad=False,
         infer_from=[0]),
    Case("_crop_assign", dict(begin=(3, 4), end=(None, 1), step=(-2, -2)), [r(4, 6), r(2, 2)],
         ref_slice_assign((slice(3, None, -2), slice(4, 1, -2))), check_grad=False,
         id="crop_assign_negative_step"),
    Case("_slice_assign_scalar", dict(scalar=2.5, begin=(0, 1), end=(3, 5), step=(1, 3)),
         [r(4, 6)], ref_slice_assign_scalar((slice(0, 3), slice(1, 5, 3)), 2.5),
         check_grad=False),
    Case("_crop_assign_scalar", dict(begin=(1,), end=(None,)), [r(3, 2, 2)],
         ref_slice_assign_scalar((slice(1, None),), 0.0), check_grad=False,
         id="crop_assign_scalar_default"),
    Case("_identity_with_attr_like_rhs", {}, [r(3, 4), r(3, 4)], lambda a, b: [a],
         infer_from=[1]),
    Case("_square_sum", dict(axis=(1,)), [r(5, 3)], ref_square_sum(1)),
    Case("_square_sum", dict(axis=(0,), keepdims=True), [r(5, 3)], ref_square_sum(0, True),
         id="square_sum_keepdims"),
    Case("_square_sum", {}, [r(2, 3, 2)], ref_square_sum(), id="square_sum_all"),
    Case("_square_sum", dict(axis=(1,), exclude=True), [r(2, 3, 2)], ref_square_sum((0, 2)),
         id="square_sum_exclude"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_case(case, ctx):
    check_case(case, ctx)


# ----------------------------------------------------------------------------- MXNet's numbers

LEGACY_GOLDEN = sorted(k.split("/")[0] for k in GOLDEN.files
                       if k.endswith("/meta") and not k.startswith("ctc_"))


@pytest.mark.parametrize("name", LEGACY_GOLDEN)
def test_imperative_call_matches_mxnet(name):
    meta = json.loads(str(GOLDEN[name + "/meta"]))
    inputs = [mx.nd.array(GOLDEN["%s/in%d" % (name, i)],
                          dtype=GOLDEN["%s/in%d" % (name, i)].dtype)
              for i in range(meta["n_in"])]
    out = getattr(mx.nd._internal, meta["op"])(*inputs, **meta["attrs"])
    np.testing.assert_allclose(out.asnumpy(), GOLDEN[name + "/out0"], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", [n for n in LEGACY_GOLDEN
                                  if json.loads(str(GOLDEN[n + "/meta"]))["wrt"]])
def test_gradients_match_mxnet(name):
    meta = json.loads(str(GOLDEN[name + "/meta"]))
    inputs = [GOLDEN["%s/in%d" % (name, i)] for i in range(meta["n_in"])]
    names = ["in%d" % i for i in range(len(inputs))]
    out = getattr(mx.sym._internal, meta["op"])(*[mx.sym.var(n) for n in names],
                                                **meta["attrs"])
    exe = out.simple_bind(mx.cpu(), **{n: a.shape for n, a in zip(names, inputs)})
    for n, a in zip(names, inputs):
        exe.arg_dict[n][:] = a
    exe.forward(is_train=True)
    exe.backward([mx.nd.array(GOLDEN[name + "/head"])])
    for i in meta["wrt"]:
        np.testing.assert_allclose(exe.grad_dict[names[i]].asnumpy(),
                                   GOLDEN["%s/grad%d" % (name, i)], rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- frontends

def test_onehot_encode_writes_into_out():
    out = mx.nd.ones((3, 4))
    result = mx.nd.onehot_encode(mx.nd.array([1, 3, 5]), out)
    assert result is out
    np.testing.assert_array_equal(out.asnumpy(), [[0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]])


def test_crop_assign_into_lhs_as_the_ndarray_frontend_calls_it():
    x = mx.nd.ones((2, 3, 4))
    mx.nd._internal._crop_assign(x, mx.nd.zeros((2, 1, 3)), begin=(0, 0, 0), end=(2, 1, 3),
                                 out=x)
    want = np.ones((2, 3, 4))
    want[:, :1, :3] = 0
    np.testing.assert_array_equal(x.asnumpy(), want)
    mx.nd._internal._crop_assign_scalar(x, scalar=5, begin=(0, 0, 0), end=(2, 1, 3), out=x)
    want[:, :1, :3] = 5
    np.testing.assert_array_equal(x.asnumpy(), want)


def test_identity_like_rhs_carries_a_shape_backwards():
    weight, shift = mx.sym.var("weight"), mx.sym.var("wshift")
    tied = mx.sym._internal._identity_with_attr_like_rhs(mx.sym.broadcast_add(weight, shift),
                                                         weight)
    net = mx.sym.FullyConnected(mx.sym.var("data"), weight=tied, num_hidden=11, no_bias=True)
    args, _, _ = net.infer_shape(data=(7, 100), wshift=(1,))
    assert dict(zip(net.list_arguments(), args))["weight"] == (11, 100)


def test_names_and_canonical_ops():
    for alias, name in (("_crop_assign", "_slice_assign"),
                        ("_crop_assign_scalar", "_slice_assign_scalar")):
        assert get_op_class(alias).name == name
    out = mx.sym._internal._crop_assign(mx.sym.var("a"), mx.sym.var("b"), begin=(0,), end=(1,))
    assert json.loads(out.tojson())["nodes"][-1]["op"] == "_slice_assign"
    assert mx.sym.batch_take(mx.sym.var("a"), mx.sym.var("i")).list_arguments() == ["a", "i"]


def test_batch_take_indices_are_int32():
    op = create_op("batch_take")
    in_types, out_types = op.infer_type([np.dtype("float64"), None], [None])
    assert in_types[1] == np.int32 and out_types == [np.float64]
    with pytest.raises(DTypeError, match="'indices' must be int32"):
        op.infer_type([np.dtype("float32"), np.dtype("float32")], [None])


@pytest.mark.parametrize("name", ["batch_take", "fill_element_0index", "_onehot_encode",
                                  "_slice_assign", "_slice_assign_scalar"])
def test_ops_without_an_mxnet_gradient_refuse_backward(name):
    cls = get_op_class(name)
    assert cls.differentiable is False
    attrs = dict(begin=(0,), end=(1,)) if "slice" in name else {}
    with pytest.raises(GraphError, match="non-differentiable"):
        create_op(name, attrs).backward(np, [np.ones(2)], [], [], [np.zeros(2)], [])


@pytest.mark.parametrize("name, attrs, shapes, match", [
    ("batch_take", {}, [(4, 5), (3,)], "has 3 elements but input 'a'"),
    ("fill_element_0index", {}, [(2, 3, 4), None, None], "must be 2-D"),
    ("fill_element_0index", {}, [(4, 5), (3,), None], "input 'mhs' has shape"),
    ("_onehot_encode", {}, [None, (5,)], "must be 2-D"),
    ("_slice_assign", dict(begin=(0, 1), end=(2, 3)), [(3, 4), (2, 3)], "input 'rhs'"),
    ("_slice_assign", dict(begin=(0, 1), end=(2, 3)), [(3,), None], "fewer axes"),
])
def test_bad_shapes_name_the_input(name, attrs, shapes, match):
    with pytest.raises(ShapeError, match=match):
        infer(create_op(name, attrs), shapes)


@pytest.mark.parametrize("attrs, match", [
    (dict(begin=(0, 1), end=(2,)), "differ in length"),
    (dict(begin=(0,), end=(2,), step=(1, 1)), "must be empty or as long"),
    (dict(begin=(0,), end=(2,), step=(0,)), "zero step"),
])
def test_bad_slice_parameters(attrs, match):
    with pytest.raises(OpParamError, match=match):
        create_op("_slice_assign", attrs)


def test_square_sum_of_integers_keeps_the_type():
    op = create_op("_square_sum", dict(axis=(1,)))
    outs = run_forward(op, [np.arange(6, dtype=np.int32).reshape(2, 3)])[2]
    assert outs[0].dtype == np.int32 and outs[0].tolist() == [5, 50]
