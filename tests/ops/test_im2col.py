"""im2col and col2im (minimod/ops/im2col.py).

Four layers of checks: block-by-block NumPy references written from the definition, with float64
finite-difference gradients, in 1, 2 and 3 spatial dims on every backend (the `ctx` fixture);
MXNet 1.9.1's own outputs and gradients on 2-D cases (tests/data/ops/im2col_golden.npz, written
by gen_im2col_golden.py; MXNet's CPU kernels only run 2-D data); the two ops as each other's
adjoint and as the first half of a convolution; and shape inference both ways and errors.
"""
import itertools
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError, OpParamError, ShapeError
from minimod.ops.registry import create_op
from tests.conftest import GPU_TOLERANCES

from .harness import Case, check_case, infer, run_forward, run_on

_RS = np.random.RandomState(17)
GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "ops",
                              "im2col_golden.npz"))


def r(*shape):
    return _RS.randn(*shape)


# ----------------------------------------------------------------------------- references

def _geometry(spatial, kernel, stride, dilate, pad):
    nd = len(kernel)
    stride = stride or (1,) * nd
    dilate = dilate or (1,) * nd
    pad = pad or (0,) * nd
    grid = tuple((x + 2 * p - d * (k - 1) - 1) // s + 1
                 for x, k, s, d, p in zip(spatial, kernel, stride, dilate, pad))
    return stride, dilate, pad, grid


def _pixel(block, tap, stride, dilate, pad):
    """The unpadded coordinates block `block`, tap `tap` reads."""
    return tuple(b * s + t * d - p for b, t, s, d, p in zip(block, tap, stride, dilate, pad))


def ref_im2col(kernel, stride=(), dilate=(), pad=()):
    def ref(x):
        n, c = x.shape[:2]
        spatial = x.shape[2:]
        stride_, dilate_, pad_, grid = _geometry(spatial, kernel, stride, dilate, pad)
        taps = list(itertools.product(*(range(k) for k in kernel)))
        blocks = list(itertools.product(*(range(g) for g in grid)))
        out = np.zeros((n, c * len(taps), len(blocks)), dtype=x.dtype)
        for ch in range(c):
            for t, tap in enumerate(taps):
                for b, block in enumerate(blocks):
                    at = _pixel(block, tap, stride_, dilate_, pad_)
                    if all(0 <= i < x_ for i, x_ in zip(at, spatial)):
                        out[:, ch * len(taps) + t, b] = x[(slice(None), ch) + at]
        return [out]
    return ref


def ref_col2im(output_size, kernel, stride=(), dilate=(), pad=()):
    def ref(cols):
        n = cols.shape[0]
        stride_, dilate_, pad_, grid = _geometry(output_size, kernel, stride, dilate, pad)
        taps = list(itertools.product(*(range(k) for k in kernel)))
        blocks = list(itertools.product(*(range(g) for g in grid)))
        c = cols.shape[1] // len(taps)
        out = np.zeros((n, c) + tuple(output_size), dtype=cols.dtype)
        for ch in range(c):
            for t, tap in enumerate(taps):
                for b, block in enumerate(blocks):
                    at = _pixel(block, tap, stride_, dilate_, pad_)
                    if all(0 <= i < x_ for i, x_ in zip(at, output_size)):
                        out[(slice(None), ch) + at] += cols[:, ch * len(taps) + t, b]
        return [out]
    return ref


def i2c(kernel, stride=(), dilate=(), pad=()):
    return dict(kernel=kernel, stride=stride, dilate=dilate, pad=pad)


P1 = i2c((3,), (2,), (2,), (2,))
P2 = i2c((2, 3), (2, 1), (1, 2), (1, 1))
P2_SPARSE = i2c((2, 2), (3, 2), (), (2, 1))  # pixels in no block, blocks all padding
P3 = i2c((2, 2, 2), (1, 2, 1), (1, 1, 2), (1, 0, 1))


def col_shape(n, c, spatial, params):
    _, _, _, grid = _geometry(spatial, params["kernel"], params["stride"], params["dilate"],
                              params["pad"])
    return (n, c * int(np.prod(params["kernel"])), int(np.prod(grid)))


CASES = [
    Case("im2col", dict(kernel=(3,)), [r(2, 2, 6)], ref_im2col((3,)), infer_from=[0],
         id="im2col_1d_defaults"),
    Case("im2col", P1, [r(2, 2, 7)], ref_im2col(**P1), infer_from=[0], id="im2col_1d"),
    Case("im2col", dict(kernel=(2, 2)), [r(1, 2, 3, 4)], ref_im2col((2, 2)), infer_from=[0],
         id="im2col_2d_defaults"),
    Case("im2col", P2, [r(2, 2, 5, 6)], ref_im2col(**P2), infer_from=[0], id="im2col_2d"),
    Case("im2col", P2_SPARSE, [r(1, 2, 6, 5)], ref_im2col(**P2_SPARSE), infer_from=[0],
         id="im2col_2d_sparse"),
    Case("im2col", P3, [r(1, 2, 3, 4, 4)], ref_im2col(**P3), infer_from=[0], id="im2col_3d"),
    Case("col2im", dict(output_size=(7,), **P1), [r(*col_shape(2, 2, (7,), P1))],
         ref_col2im((7,), **P1), infer_from=[0], id="col2im_1d"),
    Case("col2im", dict(output_size=(5, 6), **P2), [r(*col_shape(2, 2, (5, 6), P2))],
         ref_col2im((5, 6), **P2), infer_from=[0], id="col2im_2d"),
    Case("col2im", dict(output_size=(4, 4), kernel=(3, 3)), [r(1, 18, 4)],
         ref_col2im((4, 4), (3, 3)), infer_from=[0], id="col2im_2d_defaults"),
    Case("col2im", dict(output_size=(6, 5), **P2_SPARSE),
         [r(*col_shape(1, 2, (6, 5), P2_SPARSE))], ref_col2im((6, 5), **P2_SPARSE),
         infer_from=[0], id="col2im_2d_sparse"),
    Case("col2im", dict(output_size=(3, 4, 4), **P3), [r(*col_shape(1, 2, (3, 4, 4), P3))],
         ref_col2im((3, 4, 4), **P3), infer_from=[0], id="col2im_3d"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_case(case, ctx):
    check_case(case, ctx)


# ----------------------------------------------------------------------------- MXNet's numbers

GOLDEN_NAMES = sorted({k.split("/")[0] for k in GOLDEN.files})


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_matches_mxnet(name, ctx):
    meta = json.loads(str(GOLDEN[name + "/meta"]))
    op = create_op(meta["op"], meta["attrs"])
    outs, grads = run_on(ctx, op, [GOLDEN[name + "/in0"]], heads=[GOLDEN[name + "/head"]],
                         wrt=[0])
    tol = 1e-5 if ctx.device_typeid == 1 else GPU_TOLERANCES["op_vs_float64_cpu"]
    np.testing.assert_allclose(outs[0], GOLDEN[name + "/out"], rtol=tol, atol=tol)
    np.testing.assert_allclose(grads[0], GOLDEN[name + "/grad0"], rtol=tol, atol=tol)


# ----------------------------------------------------------------------------- identities

@pytest.mark.parametrize("spatial,params", [((7,), P1), ((5, 6), P2), ((6, 5), P2_SPARSE),
                                            ((3, 4, 4), P3)], ids=["1d", "2d", "sparse", "3d"])
def test_adjoint(spatial, params):
    """<im2col(x), y> == <x, col2im(y)> for the same parameters."""
    x = r(2, 3, *spatial)
    y = r(*col_shape(2, 3, spatial, params))
    cols = run_forward(create_op("im2col", params), [x])[2][0]
    img = run_forward(create_op("col2im", dict(output_size=spatial, **params)), [y])[2][0]
    np.testing.assert_allclose(np.sum(cols * y), np.sum(x * img), rtol=1e-12)


def test_convolution_as_matmul():
    x = mx.nd.array(r(2, 3, 7, 6))
    w = mx.nd.array(r(4, 3, 3, 2))
    params = dict(kernel=(3, 2), stride=(2, 1), dilate=(1, 2), pad=(1, 1))
    cols = mx.nd.im2col(x, **params).asnumpy()
    want = mx.nd.Convolution(x, w, num_filter=4, no_bias=True, **params).asnumpy()
    got = np.einsum("fk,nkl->nfl", w.asnumpy().reshape(4, -1), cols)
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-4, atol=1e-5)


def test_executor_backward_and_positional_output_size():
    x = r(2, 2, 5, 4)
    data = mx.sym.Variable("data")
    cols = mx.sym.im2col(data, kernel=(2, 2), pad=(1, 0))
    img = mx.sym.col2im(cols, (5, 4), (2, 2), (), (), (1, 0))
    exe = img.simple_bind(mx.cpu(), data=x.shape)
    exe.forward(is_train=True, data=x)
    exe.backward(mx.nd.ones(x.shape))
    # d sum(col2im(im2col(x))) / dx = col2im(im2col(1)): how many blocks read each pixel
    counts = mx.nd.col2im(mx.nd.im2col(mx.nd.ones(x.shape), kernel=(2, 2), pad=(1, 0)),
                          output_size=(5, 4), kernel=(2, 2), pad=(1, 0)).asnumpy()
    assert counts.max() == 4 and counts.min() == 2  # pad 1: every row is in two blocks
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), counts)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), x * counts, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "int32", "uint8"])
def test_dtypes(dtype):
    x = np.arange(2 * 3 * 4 * 4).reshape(2, 3, 4, 4) % 11
    cols = mx.nd.im2col(mx.nd.array(x, dtype=dtype), kernel=(2, 2), stride=(2, 2))
    assert cols.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(cols.asnumpy(), ref_im2col((2, 2), (2, 2))(x)[0])
    img = mx.nd.col2im(cols, output_size=(4, 4), kernel=(2, 2), stride=(2, 2))
    assert img.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(img.asnumpy(), x)  # blocks tile the image exactly


def test_non_contiguous_destinations():
    """Outputs and gradients that are strided views get the same numbers."""
    x, head = r(1, 2, 4, 5), r(1, 8, 20)
    for name, attrs, data, grad_head in [
            ("im2col", dict(kernel=(2, 2), pad=(1, 0)), x, head),
            ("col2im", dict(output_size=(4, 5), kernel=(2, 2), pad=(1, 0)), head, x)]:
        op = create_op(name, attrs)
        _, _, (want,) = run_forward(op, [data])
        out = np.zeros(want.shape[:-1] + (2 * want.shape[-1],))[..., ::2]
        op.forward(np, [data], [], [out], True)
        np.testing.assert_allclose(out, want)
        dense = np.zeros(data.shape)
        op.backward(np, [grad_head], [data], [want], [dense], [])
        strided = np.zeros(data.shape[:-1] + (2 * data.shape[-1],))[..., ::2]
        op.backward(np, [grad_head], [data], [want], [strided], [])
        np.testing.assert_allclose(strided, dense)


# ----------------------------------------------------------------------------- shapes

def test_im2col_shape_inference():
    op = create_op("im2col", P2)
    assert infer(op, [(None, 3, 5, 6)])[1] == [(None, 18, 12)]
    assert infer(op, [(2, None, 5, None)])[1] == [(2, None, None)]
    # backwards: batch and channels from the output, the spatial size stays open
    op_out = [(2, 18, 12)]
    assert op.infer_shape([None], op_out)[0] == [(2, 3, None, None)]
    assert infer(op, [None])[1] == [None]


def test_col2im_shape_inference():
    op = create_op("col2im", dict(output_size=(5, 6), **P2))
    assert infer(op, [(2, 12, 12)])[1] == [(2, 2, 5, 6)]
    # the block count follows from the parameters alone
    assert infer(op, [None]) == ([(None, None, 12)], [(None, None, 5, 6)])
    assert op.infer_shape([None], [(4, 3, 5, 6)])[0] == [(4, 18, 12)]


def test_symbol_api():
    data = mx.sym.Variable("data")
    sym = mx.sym.col2im(mx.sym.im2col(data, kernel=(3, 3), pad=(1, 1)), (4, 5), (3, 3),
                        pad=(1, 1))
    args, outs, _ = sym.infer_shape(data=(2, 3, 4, 5))
    assert args == [(2, 3, 4, 5)] and outs == [(2, 3, 4, 5)]
    nodes = json.loads(sym.tojson())["nodes"]
    assert [n["op"] for n in nodes] == ["null", "im2col", "col2im"]
    assert nodes[2]["attrs"]["output_size"] == "(4, 5)"


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize("name,attrs,match", [
    ("im2col", dict(kernel=(2, 2, 2, 2)), "1, 2 or 3 dims"),
    ("im2col", dict(kernel=()), "1, 2 or 3 dims"),
    ("im2col", dict(kernel=(0, 3)), "kernel=.* must be positive"),
    ("im2col", dict(kernel=(2, 3), stride=(2,)), "stride=.* has 1 value"),
    ("im2col", dict(kernel=(2, 3), dilate=(1, 2, 1)), "dilate=.* has 3 value"),
    ("im2col", dict(kernel=(2, 3), pad=(1,)), "pad=.* has 1 value"),
    ("im2col", dict(kernel=(2, 3), stride=(0, 1)), "stride=.* must be positive"),
    ("im2col", dict(kernel=(2, 3), dilate=(1, 0)), "dilate=.* must be positive"),
    ("im2col", dict(kernel=(2, 3), pad=(-1, 0)), "pad=.* must not be negative"),
    ("im2col", dict(stride=(1, 1)), "kernel"),
    ("im2col", dict(kernel=(2, 2), output_size=(3, 3)), "no parameter 'output_size'"),
    ("col2im", dict(kernel=(2, 2)), "output_size"),
    ("col2im", dict(output_size=(5,), kernel=(2, 2)), "as many dims as kernel"),
    ("col2im", dict(output_size=(5, 0), kernel=(2, 2)), "output_size=.* must be positive"),
])
def test_parameter_errors(name, attrs, match):
    with pytest.raises(OpParamError, match=match):
        create_op(name, attrs)


@pytest.mark.parametrize("name,attrs,shape,match", [
    ("im2col", dict(kernel=(2,)), (2, 3, 5, 6), r"'data' has shape \(2, 3, 5, 6\) but needs 3"),
    ("im2col", dict(kernel=(2, 3)), (2, 3, 5), r"'data' has shape \(2, 3, 5\) but needs 4"),
    ("im2col", dict(kernel=(7, 3)), (2, 3, 5, 6), r"\(5, 6\) is smaller than kernel \(7, 3\)"),
    ("im2col", dict(kernel=(3, 3), dilate=(3, 1), pad=(1, 1)), (1, 1, 4, 4),
     "smaller than kernel"),
    ("col2im", dict(output_size=(5, 6), kernel=(2, 2)), (2, 13, 20),
     r"dim 1 is not a multiple of prod\(kernel \(2, 2\)\) = 4"),
    ("col2im", dict(output_size=(5, 6), kernel=(2, 2)), (2, 12, 21),
     r"'data' has shape \(2, 12, 21\) but output_size=\(5, 6\)"),
    ("col2im", dict(output_size=(5, 6), kernel=(2, 2)), (2, 240), "needs 3 dims"),
    ("col2im", dict(output_size=(5, 6), kernel=(7, 2)), (2, 28, 5), "output_size"),
])
def test_shape_errors(name, attrs, shape, match):
    with pytest.raises(ShapeError, match=match):
        infer(create_op(name, attrs), [shape])


def test_errors_through_the_frontends():
    with pytest.raises(MXNetError, match="smaller than kernel"):
        mx.nd.im2col(mx.nd.ones((1, 1, 3, 3)), kernel=(4, 4))
    data = mx.sym.Variable("data")
    with pytest.raises(MXNetError, match="not a multiple"):
        mx.sym.col2im(data, output_size=(3, 3), kernel=(2, 2)).infer_shape(data=(1, 6, 4))
    with pytest.raises(ShapeError, match="output"):
        create_op("im2col", dict(kernel=(2, 2))).infer_shape([None], [(1, 6, 4)])
