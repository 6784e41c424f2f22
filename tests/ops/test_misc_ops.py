"""Tests of minimod/ops/misc.py: all_finite, multi_all_finite, amp_cast, amp_multicast,
_histogram, _ravel_multi_index / _unravel_index and _image_normalize. The case table (shape
inference, forward against NumPy, float64 numeric gradients of the casts and the
normalisation), MXNet 1.9.1 golden values (the non-contrib cases of
tests/data/ops/contrib_basic_golden.npz), type rules, graphs and errors."""
from __future__ import annotations

import json

import numpy as np
import pytest

import minimod as mx
from minimod.base import DTypeError, OpParamError, ShapeError
from minimod.ops.registry import create_op, get_op_class
from tests.ops.harness import Case, check_case, infer, run_forward
from tests.ops.test_contrib_basic import GOLDEN_DATA, check_golden

_RS = np.random.RandomState(23)


def r(*shape):
    return _RS.randn(*shape)


def with_inf():
    x = r(2, 3)
    x[1, 2] = np.inf
    return x


def ref_hist(bins, value_range=None):
    def ref(x, *edges):
        counts, bin_edges = np.histogram(x, edges[0] if edges else bins, range=value_range)
        return [counts.astype(np.int64), bin_edges.astype(x.dtype)]
    return ref


def ref_normalize(mean, std):
    def ref(x):
        c = x.shape[-3]
        m = np.resize(np.asarray(mean, float), c).reshape(c, 1, 1)
        s = np.resize(np.asarray(std, float), c).reshape(c, 1, 1)
        return [(x - m) / s]
    return ref


RAVEL_DATA = np.array([[0, 2, 1, 2], [3, 0, 1, 3], [4, 1, 0, 2]], dtype=np.float64)

CASES = [
    Case("all_finite", {}, [r(2, 3)], lambda x: [np.ones(1, np.float32)], check_grad=False),
    Case("all_finite", {}, [with_inf()], lambda x: [np.zeros(1, np.float32)],
         check_grad=False, id="all_finite_inf"),
    Case("multi_all_finite", dict(num_arrays=3), [r(2), r(3, 1), with_inf()],
         lambda *xs: [np.zeros(1, np.float32)], check_grad=False),
    Case("amp_cast", dict(dtype="float64"), [r(2, 3).astype(np.float32)],
         lambda x: [x.astype(np.float64)]),
    Case("amp_cast", dict(dtype="float16"), [np.arange(4, dtype=np.int32)],
         lambda x: [x], check_grad=False, id="amp_cast_int_passes"),
    Case("amp_multicast", dict(num_outputs=2), [r(2, 2), r(3)], lambda a, b: [a, b]),
    Case("_histogram", dict(bin_cnt=5, range=(-1.0, 1.5)), [r(3, 7)],
         ref_hist(5, (-1.0, 1.5)), check_grad=False),
    Case("_histogram", dict(bin_cnt=2, range=(0.5, 0.5)), [np.array([0.1, 0.5, 0.9, 2.0])],
         ref_hist(2, (0.5, 0.5)), check_grad=False, id="histogram_empty_range"),
    Case("_histogram", {}, [r(20), np.array([-1.0, -0.2, 0.0, 0.5, 2.0])], ref_hist(None),
         check_grad=False, id="histogram_bins"),
    Case("_ravel_multi_index", dict(shape=(3, 4, 5)), [RAVEL_DATA],
         lambda d: [np.ravel_multi_index(d.astype(int), (3, 4, 5)).astype(d.dtype)],
         check_grad=False),
    Case("_unravel_index", dict(shape=(3, 4, 5)), [np.array([0.0, 7, 59, 13])],
         lambda d: [np.array(np.unravel_index(d.astype(int), (3, 4, 5)), d.dtype)],
         check_grad=False),
    Case("_image_normalize", dict(mean=(0.1, 0.2, 0.3), std=(0.5, 2.0, 1.0)), [r(2, 3, 4, 5)],
         ref_normalize((0.1, 0.2, 0.3), (0.5, 2.0, 1.0))),
    Case("_image_normalize", dict(mean=0.5, std=2.0), [r(3, 2, 3)],
         ref_normalize(0.5, 2.0), id="image_normalize_shared"),
    Case("_image_normalize", dict(mean=(0.5,), std=(4.0,)), [r(1, 3, 3)],
         ref_normalize(0.5, 4.0), id="image_normalize_gray"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_case(case, ctx):
    """On cpu(0) the full check; on gpu(0), where present, the device run against it."""
    check_case(case, ctx)


MISC_GOLDEN = sorted({k.split("/")[0] for k in GOLDEN_DATA.files
                      if not json.loads(str(GOLDEN_DATA[k.split("/")[0] + "/meta"]))[
                          "op"].startswith("_contrib_")})


@pytest.mark.parametrize("name", MISC_GOLDEN)
def test_matches_mxnet(name):
    check_golden(GOLDEN_DATA, name)


# ----------------------------------------------------------------------------- semantics

def test_all_finite_keeps_a_zero_without_init_output():
    op = create_op("all_finite", dict(init_output=False))
    out = np.zeros(1, np.float32)
    op.forward(np, [r(3)], [], [out], False)
    assert out[0] == 0
    out[0] = 1
    op.forward(np, [with_inf()], [], [out], False)
    assert out[0] == 0


@pytest.mark.parametrize("types,narrow,want", [
    (["float16", "float32"], False, ["float32", "float32"]),
    (["float16", "float32"], True, ["float16", "float16"]),
    (["float32", "float32"], True, ["float32", "float32"]),
    (["float16", "float64", "int32"], False, ["float16", "float64", "int32"]),
    (["float32", "float64"], True, ["float32", "float64"]),
])
def test_amp_multicast_types_follow_mxnet(types, narrow, want):
    op = create_op("amp_multicast", dict(num_outputs=len(types), cast_narrow=narrow))
    _, outs = op.infer_type([np.dtype(t) for t in types], [None] * len(types))
    assert [t.name for t in outs] == want


def test_amp_cast_types():
    op = create_op("amp_cast", dict(dtype="float16"))
    assert op.infer_type([np.dtype("float32")], [None])[1] == [np.dtype("float16")]
    assert op.infer_type([np.dtype("int32")], [None])[1] == [np.dtype("int32")]
    truncated = run_forward(create_op("amp_cast", dict(dtype="int8")),
                            [np.array([1.5, 2.7, -1.5], np.float32)])[2][0]
    np.testing.assert_array_equal(truncated, [1, 2, -1])


def test_histogram_integer_data_uses_truncated_edges_as_mxnet():
    op = create_op("_histogram", dict(bin_cnt=4, range=(0.5, 9.5)))
    counts, edges = run_forward(op, [np.arange(10, dtype=np.int32)])[2]
    np.testing.assert_array_equal(edges, [0, 2, 5, 7, 9])
    np.testing.assert_array_equal(counts, [1, 3, 2, 3])  # MXNet 1.9.1's numbers
    assert counts.dtype == np.int64 and edges.dtype == np.int32


def test_histogram_ignores_nan_and_out_of_range():
    op = create_op("_histogram", dict(bin_cnt=2, range=(0.0, 1.0)))
    counts, _ = run_forward(op, [np.array([0.1, np.nan, np.inf, -1.0, 1.0])])[2]
    np.testing.assert_array_equal(counts, [1, 1])


def test_unravel_follows_mxnet_past_the_end_and_below_zero():
    op = create_op("_unravel_index", dict(shape=(-1, 4)))
    out = run_forward(op, [np.array([5.0, 13.0, -1.0])])[2][0]
    np.testing.assert_array_equal(out, [[1, 3, 0], [1, 1, -1]])
    ravel = create_op("_ravel_multi_index", dict(shape=(-1, 4)))
    flat = run_forward(ravel, [np.array([[1.0, 7.0], [0.0, 3.0]])])[2][0]
    np.testing.assert_array_equal(flat, [4, 31])


def test_ravel_aliases_and_slots():
    assert get_op_class("ravel_multi_index") is get_op_class("_ravel_multi_index")
    assert get_op_class("unravel_index") is get_op_class("_unravel_index")
    assert create_op("multi_all_finite", dict(num_arrays=2)).arguments() == ["array_0",
                                                                             "array_1"]
    multicast = mx.sym.amp_multicast(mx.sym.var("x"), mx.sym.var("y"), num_outputs=2,
                                     name="a")
    assert multicast.list_outputs() == ["a_output0", "a_output1"]
    hist = mx.sym._internal._histogram(mx.sym.var("x"), bin_cnt=3, range=(0, 1), name="h")
    assert hist.list_arguments() == ["x"] and hist.list_outputs() == ["h_output0",
                                                                     "h_output1"]


# ----------------------------------------------------------------------------- graphs

def test_all_finite_and_multicast_in_bound_graphs():
    data, data2 = mx.sym.var("data"), mx.sym.var("data2")
    z = mx.sym.multi_all_finite(data, data2, num_arrays=2)
    exe = z.bind(mx.cpu(), {"data": mx.nd.array([[0, 0]]),
                            "data2": mx.nd.array([[np.inf, 0]])})
    assert exe.forward(is_train=False)[0].asnumpy()[0] == 0
    x = mx.sym.var("x", dtype=np.float16)
    y = mx.sym.var("y", dtype=np.float32)
    res = mx.sym.amp_multicast(x, y, num_outputs=2)
    exe = res.bind(mx.cpu(), {"x": mx.nd.ones((2, 2), dtype=np.float16),
                              "y": mx.nd.ones((2, 2), dtype=np.float32)})
    assert [o.dtype for o in exe.forward(is_train=True)] == [np.float32, np.float32]


def test_image_normalize_gradient_in_a_graph():
    img = mx.sym.image.normalize(mx.sym.var("data"), mean=(0, 1, 2), std=(3, 2, 1))
    exe = img.simple_bind(mx.cpu(), data=(3, 2, 2))
    exe.arg_dict["data"][:] = np.ones((3, 2, 2))
    out = exe.forward(is_train=True)[0].asnumpy()
    np.testing.assert_allclose(out[:, 0, 0], [1 / 3, 0, -1], rtol=1e-6)
    exe.backward([mx.nd.ones((3, 2, 2))])
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy()[:, 0, 0], [1 / 3, 0.5, 1])


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize("name,attrs", [
    ("amp_cast", dict(dtype="bfloat16")),
    ("amp_multicast", dict(num_outputs=0)),
    ("multi_all_finite", dict(num_arrays=0)),
    ("_histogram", dict(bin_cnt=3)),
    ("_histogram", dict(range=(0, 1))),
    ("_histogram", dict(bin_cnt=3, range=(1, 0))),
    ("_histogram", dict(bin_cnt=0, range=(0, 1))),
    ("_ravel_multi_index", {}),
    ("_unravel_index", dict(shape=(3, 0))),
])
def test_param_errors(name, attrs):
    with pytest.raises(OpParamError):
        create_op(name, attrs)


@pytest.mark.parametrize("name,attrs,shapes", [
    ("_ravel_multi_index", dict(shape=(3, 4)), [(3, 5)]),
    ("_ravel_multi_index", dict(shape=(3, 4)), [(1, 2, 2)]),
    ("_unravel_index", dict(shape=(3, 4)), [(2, 2)]),
    ("_histogram", {}, [(5,), (2, 3)]),
    ("_histogram", {}, [(5,), (1,)]),
    ("_image_normalize", dict(mean=(1.0,), std=(1.0,)), [(2, 2)]),
    ("_image_normalize", dict(mean=(1.0,), std=(1.0,)), [(4, 2, 2)]),
    ("_image_normalize", dict(mean=(1.0, 2.0), std=(1.0,)), [(3, 2, 2)]),
    ("_image_normalize", {}, [(3, 2, 2)]),  # MXNet's default mean has 4 values: never valid
])
def test_shape_errors(name, attrs, shapes):
    with pytest.raises(ShapeError):
        infer(create_op(name, attrs), shapes)


def test_type_errors():
    with pytest.raises(DTypeError, match="floating point"):
        create_op("all_finite", {}).infer_type([np.dtype("int32")], [None])
    with pytest.raises(DTypeError):
        create_op("_histogram", {}).infer_type([np.dtype("float32"), np.dtype("float64")],
                                               [None, None])


@pytest.mark.parametrize("bins", [5, 6, 7])
def test_histogram_edges_are_numpys_exactly_on_every_device(bins, ctx):
    """The edges of bin_cnt and range are NumPy's linspace to the last bit (CuPy's own
    linspace puts the middle edge of (-2.5, 2.5) at 1.1e-16, not 0)."""
    x = mx.nd.array(np.linspace(-3, 3, 40), ctx=ctx, dtype="float64")
    counts, edges = mx.nd.histogram(x, bins=bins, range=(-2.5, 2.5))
    want_counts, want_edges = np.histogram(x.asnumpy(), bins, range=(-2.5, 2.5))
    np.testing.assert_array_equal(edges.asnumpy(), want_edges)
    np.testing.assert_array_equal(counts.asnumpy(), want_counts)
