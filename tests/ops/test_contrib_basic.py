"""Tests of the general-purpose contrib operators (minimod/ops/contrib/basic.py, resize.py,
attention.py): the case table (shape inference, forward against NumPy references written
here, float64 numeric gradients), boolean_mask's value-dependent shape, MXNet 1.9.1 golden
values (tests/data/ops/contrib_basic_golden.npz), and parameter, shape and type errors."""
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
                           "contrib_basic_golden.npz")
_RS = np.random.RandomState(17)


def r(*shape):
    return _RS.randn(*shape)


def special():
    return np.array([[1.5, np.inf, -2.0], [np.nan, -np.inf, 0.0]])


# ----------------------------------------------------------------------------- references

def ref_adaptive(out_h, out_w):
    def ref(x):
        n, c, h, w = x.shape
        y = np.empty((n, c, out_h, out_w))
        for i in range(out_h):
            r0, r1 = (i * h) // out_h, -(-(i + 1) * h // out_h)
            for j in range(out_w):
                c0, c1 = (j * w) // out_w, -(-(j + 1) * w // out_w)
                y[:, :, i, j] = x[:, :, r0:r1, c0:c1].mean(axis=(2, 3))
        return [y]
    return ref


def _taps(n_in, n_out, align):
    """Per output index: (low input index, high input index, weight of high)."""
    if n_out > 1:
        ratio = (n_in - 1) / (n_out - 1) if align else n_in / n_out
    else:
        ratio = 0.0
    taps = []
    for i in range(n_out):
        src = ratio * i if align else max(ratio * (i + 0.5) - 0.5, 0.0)
        lo = int(src)
        taps.append((lo, lo + 1 if lo < n_in - 1 else lo, src - lo))
    return taps


def ref_bilinear(out_h, out_w, align=True):
    def ref(x, *like):
        oh = like[0].shape[2] if like else out_h
        ow = like[0].shape[3] if like else out_w
        y = np.empty(x.shape[:2] + (oh, ow))
        for i, (h0, h1, a) in enumerate(_taps(x.shape[2], oh, align)):
            for j, (w0, w1, b) in enumerate(_taps(x.shape[3], ow, align)):
                y[:, :, i, j] = ((1 - a) * ((1 - b) * x[:, :, h0, w0] + b * x[:, :, h0, w1])
                                 + a * ((1 - b) * x[:, :, h1, w0] + b * x[:, :, h1, w1]))
        return [y]
    return ref


def ref_selfatt_qk(heads):
    def ref(qkv):
        length, batch, width = qkv.shape
        d = width // (3 * heads)
        t = qkv.reshape(length, batch, heads, 3, d)
        scores = np.einsum("ibhd,jbhd->bhij", t[..., 0, :], t[..., 1, :]) / math.sqrt(d)
        return [scores.reshape(batch * heads, length, length)]
    return ref


def ref_selfatt_valatt(heads):
    def ref(qkv, att):
        length, batch, width = qkv.shape
        d = width // (3 * heads)
        v = qkv.reshape(length, batch, heads, 3, d)[..., 2, :]
        a = att.reshape(batch, heads, length, length)
        return [np.einsum("bhij,jbhd->ibhd", a, v).reshape(length, batch, heads * d)]
    return ref


def ref_encdec_qk(heads):
    def ref(q, kv):
        q_len, batch, width = q.shape
        d = width // heads
        k = kv.reshape(kv.shape[0], batch, heads, 2, d)[..., 0, :]
        scores = np.einsum("ibhd,jbhd->bhij", q.reshape(q_len, batch, heads, d), k)
        return [scores.reshape(batch * heads, q_len, kv.shape[0]) / math.sqrt(d)]
    return ref


def ref_encdec_valatt(heads):
    def ref(kv, att):
        k_len, batch, width = kv.shape
        d = width // (2 * heads)
        v = kv.reshape(k_len, batch, heads, 2, d)[..., 1, :]
        a = att.reshape(batch, heads, att.shape[1], k_len)
        return [np.einsum("bhij,jbhd->ibhd", a, v).reshape(att.shape[1], batch, heads * d)]
    return ref


def ref_index_copy(old, index, new):
    out = old.copy()
    out[index.astype(int)] = new
    return [out]


def ref_index_array(axes=None):
    def ref(x):
        grid = np.stack(np.indices(x.shape), axis=-1)
        return [grid if axes is None else grid[..., list(axes)]]
    return ref


CASES = [
    Case("_contrib_isinf", {}, [special()], lambda x: [np.isinf(x).astype(x.dtype)],
         check_grad=False),
    Case("_contrib_isnan", {}, [special()], lambda x: [np.isnan(x).astype(x.dtype)],
         check_grad=False),
    Case("_contrib_isfinite", {}, [special().astype(np.float32)],
         lambda x: [np.isfinite(x).astype(x.dtype)], check_grad=False),
    Case("_contrib_allclose", dict(rtol=1e-3, atol=0.0), [np.array([1.0, np.nan, np.inf]),
                                                          np.array([1.0009, np.nan, np.inf])],
         lambda a, b: [np.array(1, np.uint8)], check_grad=False, id="allclose_yes"),
    Case("_contrib_allclose", dict(equal_nan=False), [np.array([1.0, np.nan]),
                                                      np.array([1.0, np.nan])],
         lambda a, b: [np.array(0, np.uint8)], check_grad=False, id="allclose_nan"),
    Case("_contrib_div_sqrt_dim", {}, [r(2, 3, 5)], lambda x: [x / math.sqrt(5)]),
    Case("_contrib_quadratic", dict(a=0.7, b=-1.2, c=0.3), [r(3, 4)],
         lambda x: [0.7 * x * x - 1.2 * x + 0.3]),
    Case("_contrib_index_copy", {}, [r(5, 3), np.array([0.0, 4.0, 2.0]), r(3, 3)],
         ref_index_copy, grad_wrt=[0, 2], infer_from=[0, 2]),
    Case("_contrib_index_copy", {}, [r(4, 2, 2), np.array([3, 1], np.int64), r(2, 2, 2)],
         ref_index_copy, grad_wrt=[0, 2], infer_from=[0, 1], id="index_copy_int_index"),
    Case("_contrib_index_array", {}, [r(2, 3, 4)], ref_index_array(), check_grad=False),
    Case("_contrib_index_array", dict(axes=(-1, 0)), [r(2, 3, 4)], ref_index_array((2, 0)),
         check_grad=False, id="index_array_axes"),
    Case("_contrib_AdaptiveAvgPooling2D", dict(output_size=(3, 4)), [r(2, 2, 7, 9)],
         ref_adaptive(3, 4)),
    Case("_contrib_AdaptiveAvgPooling2D", dict(output_size=5), [r(1, 2, 3, 4)],
         ref_adaptive(5, 5), id="adaptive_up"),
    Case("_contrib_AdaptiveAvgPooling2D", {}, [r(2, 1, 3, 5)], ref_adaptive(1, 1),
         id="adaptive_global"),
    Case("_contrib_BilinearResize2D", dict(height=5, width=9), [r(1, 2, 4, 6)],
         ref_bilinear(5, 9)),
    Case("_contrib_BilinearResize2D", dict(height=7, width=3, align_corners=False),
         [r(2, 1, 4, 6)], ref_bilinear(7, 3, False), id="bilinear_unaligned"),
    Case("_contrib_BilinearResize2D", dict(height=1, width=2, align_corners=False),
         [r(1, 1, 4, 5)], ref_bilinear(1, 2, False), id="bilinear_to_one"),
    Case("_contrib_BilinearResize2D", dict(scale_height=1.7, scale_width=0.6),
         [r(1, 2, 5, 7)], ref_bilinear(8, 4), id="bilinear_scales"),
    Case("_contrib_BilinearResize2D", dict(scale_height=0.5, scale_width=2.5,
                                           mode="odd_scale"),
         [r(1, 1, 7, 8)], ref_bilinear(4, 20), id="bilinear_odd_scale"),
    Case("_contrib_BilinearResize2D", dict(mode="to_even_up"), [r(1, 1, 5, 6)],
         ref_bilinear(6, 6), id="bilinear_to_even_up"),
    Case("_contrib_BilinearResize2D", dict(mode="to_even_down"), [r(1, 1, 5, 6)],
         ref_bilinear(4, 6), id="bilinear_to_even_down"),
    Case("_contrib_BilinearResize2D", dict(mode="to_odd_up"), [r(1, 1, 5, 6)],
         ref_bilinear(5, 7), id="bilinear_to_odd_up"),
    Case("_contrib_BilinearResize2D", dict(mode="to_odd_down"), [r(1, 1, 5, 6)],
         ref_bilinear(5, 5), id="bilinear_to_odd_down"),
    Case("_contrib_BilinearResize2D", dict(mode="like", align_corners=False),
         [r(1, 2, 5, 6), r(3, 1, 3, 9)], ref_bilinear(None, None, False), grad_wrt=[0],
         id="bilinear_like"),
    Case("_contrib_interleaved_matmul_selfatt_qk", dict(heads=3), [r(4, 2, 18)],
         ref_selfatt_qk(3)),
    Case("_contrib_interleaved_matmul_selfatt_valatt", dict(heads=2), [r(3, 2, 12), r(4, 3, 3)],
         ref_selfatt_valatt(2), infer_from=[0]),
    Case("_contrib_interleaved_matmul_encdec_qk", dict(heads=3), [r(3, 2, 6), r(5, 2, 12)],
         ref_encdec_qk(3)),
    Case("_contrib_interleaved_matmul_encdec_valatt", dict(heads=2),
         [r(5, 2, 8), r(4, 3, 5)], ref_encdec_valatt(2)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_case(case, ctx):
    """On cpu(0) the full check; on gpu(0), where present, the device run against it."""
    check_case(case, ctx)


def test_zero_gradients_where_mxnet_gives_none():
    """index_copy's index and BilinearResize2D's like input get zero gradients."""
    for name, attrs, inputs, zero in [
            ("_contrib_index_copy", {}, [r(4, 2), np.array([1.0, 3.0]), r(2, 2)], 1),
            ("_contrib_BilinearResize2D", dict(mode="like"), [r(1, 1, 3, 3), r(1, 1, 5, 4)], 1)]:
        op = create_op(name, attrs)
        args, aux, outs = run_forward(op, inputs)
        grads = run_backward(op, args, aux, outs, [np.ones_like(outs[0])], [0, zero])
        assert not grads[zero].any()


# ----------------------------------------------------------------------------- boolean_mask

def test_boolean_mask_leaves_the_row_count_unknown():
    op = create_op("_contrib_boolean_mask", {})
    in_shapes, out_shapes = infer(op, [(5, 2, 3), None])
    assert in_shapes[1] == (5,) and out_shapes[0] == (None, 2, 3)


def test_boolean_mask_forward_dynamic_and_backward():
    op = create_op("_contrib_boolean_mask", {})
    data, index = r(5, 2), np.array([0, 1.5, 0, -1, 0])
    out = op.forward_dynamic(np, [data, index])[0]
    np.testing.assert_array_equal(out, data[[1, 3]])
    grad = np.full(data.shape, np.nan)
    d_index = np.full(index.shape, np.nan)
    head = r(2, 2)
    op.backward(np, [head], [data, index], [out], [grad, d_index], [])
    want = np.zeros_like(data)
    want[[1, 3]] = head
    np.testing.assert_array_equal(grad, want)
    assert not d_index.any()
    empty = op.forward_dynamic(np, [data, np.zeros(5)])[0]
    assert empty.shape == (0, 2)
    with pytest.raises(ShapeError):
        op.forward_dynamic(np, [data, np.ones(4)])


def test_boolean_mask_imperative():
    data = mx.nd.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    out = mx.nd.contrib.boolean_mask(data, mx.nd.array([0, 1, 0]))
    np.testing.assert_array_equal(out.asnumpy(), [[4, 5, 6]])
    assert mx.nd.contrib.boolean_mask(data, mx.nd.zeros(3)).shape == (0, 3)


def test_boolean_mask_in_a_bound_graph_is_a_shape_error():
    sym = mx.sym.contrib.boolean_mask(mx.sym.var("d"), mx.sym.var("i"), name="mask")
    with pytest.raises(ShapeError, match="mask .*depends on the input values"):
        sym.simple_bind(mx.cpu(), d=(3, 2), i=(3,))


def test_boolean_mask_errors():
    with pytest.raises(OpParamError, match="axis"):
        create_op("_contrib_boolean_mask", dict(axis=1))
    with pytest.raises(ShapeError):
        infer(create_op("_contrib_boolean_mask", {}), [(3, 2), (2,)])
    with pytest.raises(ShapeError, match="1-D"):
        infer(create_op("_contrib_boolean_mask", {}), [(3, 2), (3, 1)])


# ----------------------------------------------------------------------------- shapes, errors

@pytest.mark.parametrize("mode,shape,want", [
    ("to_even_down", (1, 1, 1, 1), (1, 1, 0, 0)),
    ("odd_scale", (1, 1, 21, 21), (1, 1, 3, 5)),
    ("size", (1, 1, 21, 21), (1, 1, 2, 4)),
])
def test_bilinear_output_sizes_match_mxnet(mode, shape, want):
    """Sizes MXNet 1.9.1 gives (scales 0.1, 0.2: int(s * 21) in float32)."""
    op = create_op("_contrib_BilinearResize2D", dict(mode=mode, scale_height=0.1,
                                                     scale_width=0.2))
    assert tuple(infer(op, [shape])[1][0]) == want


def test_bilinear_scale_width_alone_is_ignored_as_in_mxnet():
    op = create_op("_contrib_BilinearResize2D", dict(height=3, width=4, scale_width=2.0))
    assert tuple(infer(op, [(1, 1, 5, 6)])[1][0]) == (1, 1, 3, 4)


def test_bilinear_slots_follow_the_mode():
    assert create_op("_contrib_BilinearResize2D", {}).arguments() == ["data"]
    like = mx.sym.contrib.BilinearResize2D(mx.sym.var("x"), mx.sym.var("y"), mode="like")
    assert like.list_arguments() == ["x", "y"]
    plain = mx.sym.contrib.BilinearResize2D(mx.sym.var("x"), None, height=2)
    assert plain.list_arguments() == ["x"]
    node = json.loads(plain.tojson())["nodes"][-1]
    assert node["op"] == "_contrib_BilinearResize2D" and node["attrs"] == {"height": "2"}


@pytest.mark.parametrize("name,attrs,shapes,error", [
    ("_contrib_BilinearResize2D", dict(height=2, width=2), [(1, 5, 6)], ShapeError),
    ("_contrib_AdaptiveAvgPooling2D", dict(output_size=2), [(1, 4, 4)], ShapeError),
    ("_contrib_index_copy", {}, [(5, 3), (2,), (3, 3)], ShapeError),
    ("_contrib_index_copy", {}, [(5, 3), (2,), (2, 2)], ShapeError),
    ("_contrib_index_copy", {}, [(2, 3), (3,), (3, 3)], ShapeError),
    ("_contrib_index_copy", {}, [(5, 3), (2, 1), (2, 3)], ShapeError),
    ("_contrib_index_array", dict(axes=(3,)), [(2, 3)], ShapeError),
    ("_contrib_allclose", {}, [(2, 3), (3, 2)], ShapeError),
    ("_contrib_interleaved_matmul_selfatt_qk", dict(heads=4), [(3, 2, 18)], ShapeError),
    ("_contrib_interleaved_matmul_selfatt_valatt", dict(heads=3), [(4, 2, 18), (6, 4, 5)],
     ShapeError),
    ("_contrib_interleaved_matmul_encdec_qk", dict(heads=3), [(3, 2, 6), (5, 2, 6)],
     ShapeError),
    ("_contrib_interleaved_matmul_encdec_valatt", dict(heads=3), [(5, 2, 12), (5, 3, 5)],
     ShapeError),
])
def test_shape_errors(name, attrs, shapes, error):
    with pytest.raises(error):
        infer(create_op(name, attrs), shapes)


@pytest.mark.parametrize("name,attrs", [
    ("_contrib_AdaptiveAvgPooling2D", dict(output_size=(2, 2, 2))),
    ("_contrib_BilinearResize2D", dict(height=0)),
    ("_contrib_BilinearResize2D", dict(mode="odd_scale")),
    ("_contrib_BilinearResize2D", dict(scale_height=2.0)),
    ("_contrib_BilinearResize2D", dict(mode="nearest")),
    ("_contrib_interleaved_matmul_selfatt_qk", dict(heads=0)),
    ("_contrib_interleaved_matmul_encdec_qk", {}),
])
def test_param_errors(name, attrs):
    with pytest.raises(OpParamError):
        create_op(name, attrs)


def test_resampling_takes_floating_point_only():
    for name in ("_contrib_AdaptiveAvgPooling2D", "_contrib_BilinearResize2D"):
        with pytest.raises(DTypeError, match="floating point"):
            create_op(name, {}).infer_type([np.dtype("int32")], [None])


def test_dtypes():
    assert create_op("_contrib_allclose", {}).infer_type(
        [np.dtype("float64"), None], [None])[1] == [np.dtype("uint8")]
    assert create_op("_contrib_index_array", {}).infer_type(
        [np.dtype("float32")], [None])[1] == [np.dtype("int64")]
    types = create_op("_contrib_index_copy", {}).infer_type(
        [np.dtype("float32"), np.dtype("int64"), None], [None])
    assert types == ([np.dtype("float32"), np.dtype("int64"), np.dtype("float32")],
                     [np.dtype("float32")])
    with pytest.raises(DTypeError):
        create_op("_contrib_index_copy", {}).infer_type(
            [np.dtype("float32"), None, np.dtype("float64")], [None])
    like = create_op("_contrib_BilinearResize2D", dict(mode="like")).infer_type(
        [np.dtype("float32"), np.dtype("int32")], [None])
    assert like == ([np.dtype("float32"), np.dtype("int32")], [np.dtype("float32")])


def test_integer_and_half_inputs_follow_mxnet():
    quad = create_op("_contrib_quadratic", dict(a=1.5, b=1.0, c=0.5))
    out = run_forward(quad, [np.array([1, 2], np.int32)])[2][0]
    np.testing.assert_array_equal(out, [3, 8])  # 8.5 truncated, as MXNet gives
    half = run_forward(create_op("_contrib_BilinearResize2D", dict(height=3, width=2)),
                       [np.ones((1, 1, 5, 6), np.float16)])[2][0]
    assert half.dtype == np.float16 and np.all(half == 1)


# ----------------------------------------------------------------------------- imperative

def test_imperative_calls():
    x = mx.nd.array([[1.0, np.inf], [np.nan, -np.inf]])
    np.testing.assert_array_equal(mx.nd.contrib.isinf(x).asnumpy(), [[0, 1], [0, 1]])
    np.testing.assert_array_equal(mx.nd.contrib.isnan(x).asnumpy(), [[0, 0], [1, 0]])
    np.testing.assert_array_equal(mx.nd.contrib.isfinite(x).asnumpy(), [[1, 0], [0, 0]])
    close = mx.nd.contrib.allclose(mx.nd.ones((2, 3)), mx.nd.ones((2, 3)) + 1e-9)
    assert close.dtype == np.uint8 and close.asnumpy() == 1
    copied = mx.nd.contrib.index_copy(mx.nd.zeros((5, 3)), mx.nd.array([0, 4, 2]),
                                      mx.nd.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]]))
    np.testing.assert_array_equal(copied.asnumpy()[[0, 2, 4]], [[1, 2, 3], [7, 8, 9],
                                                                 [4, 5, 6]])
    pooled = mx.nd.contrib.AdaptiveAvgPooling2D(mx.nd.ones((1, 2, 5, 5)), output_size=(2, 3))
    assert pooled.shape == (1, 2, 2, 3)


# ----------------------------------------------------------------------------- MXNet golden

def _golden():
    data = np.load(GOLDEN_PATH)
    names = sorted({k.split("/")[0] for k in data.files})
    mine = [n for n in names if json.loads(str(data[n + "/meta"]))["op"].startswith("_contrib_")]
    return data, mine


GOLDEN_DATA, GOLDEN_NAMES = _golden()


def check_golden(data, name):
    """Forward and backward of golden case `name` equal MXNet's (shared with test_misc_ops)."""
    meta = json.loads(str(data[name + "/meta"]))
    op = create_op(meta["op"], meta["attrs"])
    inputs = [data["%s/in%d" % (name, i)] for i in range(meta["n_in"])]
    if getattr(op, "dynamic_shape", False):
        args, aux, outs = inputs, [], op.forward_dynamic(np, inputs)
    else:
        args, aux, outs = run_forward(op, inputs)
    assert op.num_visible_outputs() == meta["n_out"]
    for i in range(meta["n_out"]):
        want = data["%s/out%d" % (name, i)]
        assert outs[i].dtype == want.dtype and outs[i].shape == want.shape, (name, i)
        tol = 2e-3 if want.dtype == np.float16 else 1e-5
        np.testing.assert_allclose(outs[i], want, rtol=tol, atol=tol,
                                   err_msg="%s output %d" % (name, i))
    if not meta["wrt"]:
        return
    heads = [data["%s/head%d" % (name, i)] for i in range(meta["n_out"])]
    grads = run_backward(op, args, aux, outs, heads, meta["wrt"])
    for i in meta["wrt"]:
        want = data["%s/grad%d" % (name, i)]
        assert grads[i].dtype == want.dtype, (name, i)
        tol = 2e-3 if want.dtype == np.float16 else 1e-5
        np.testing.assert_allclose(grads[i], want, rtol=tol, atol=tol,
                                   err_msg="%s grad %d" % (name, i))


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_matches_mxnet(name):
    check_golden(GOLDEN_DATA, name)


# ----------------------------------------------------------------------------- in graphs

@pytest.mark.parametrize("name,attrs,inputs", [
    ("_contrib_index_copy", {}, [r(5, 3), np.array([0.0, 4.0, 2.0]), r(3, 3)]),
    ("_contrib_quadratic", dict(a=0.5, b=2.0, c=-1.0), [r(2, 3)]),
    ("_contrib_AdaptiveAvgPooling2D", dict(output_size=(2, 3)), [r(1, 2, 5, 7)]),
    ("_contrib_BilinearResize2D", dict(mode="like"), [r(1, 2, 3, 4), r(1, 1, 5, 2)]),
    ("_contrib_interleaved_matmul_selfatt_valatt", dict(heads=2), [r(3, 2, 12), r(4, 3, 3)]),
    ("_contrib_interleaved_matmul_encdec_qk", dict(heads=2), [r(3, 2, 4), r(5, 2, 8)]),
])
def test_bound_graph_equals_the_op(name, attrs, inputs):
    """Forward and backward through an executor (which passes backward only the arrays the
    op declares it reads) give the op-level results."""
    names = ["in%d" % i for i in range(len(inputs))]
    out = getattr(mx.sym._internal, name)(*[mx.sym.var(n) for n in names], **attrs)
    exe = out.simple_bind(mx.cpu(), type_dict={n: np.float64 for n in names},
                          **{n: a.shape for n, a in zip(names, inputs)})
    for n, a in zip(names, inputs):
        exe.arg_dict[n][:] = a
    got = exe.forward(is_train=True)[0].asnumpy()
    op = create_op(name, attrs)
    args, aux, outs = run_forward(op, [np.asarray(a, np.float64) for a in inputs])
    np.testing.assert_allclose(got, outs[0], rtol=1e-12, atol=1e-12)
    head = r(*got.shape)
    exe.backward([mx.nd.array(head, dtype=np.float64)])
    want = run_backward(op, args, aux, outs, [head], list(range(len(inputs))))
    for n, g in zip(names, want):
        np.testing.assert_allclose(exe.grad_dict[n].asnumpy(), g, rtol=1e-12, atol=1e-12)


def test_index_array_of_a_scalar_is_empty():
    op = create_op("_contrib_index_array", {})
    assert infer(op, [()])[1][0] == (0,)
    out = run_forward(op, [np.ones(())])[2][0]
    assert out.shape == (0,) and out.dtype == np.int64
