"""GridGenerator, BilinearSampler, SpatialTransformer (minimod/ops/spatial.py) and Correlation
(minimod/ops/correlation.py).

Three layers of checks: loop-by-loop NumPy references written from the ops' definitions, with
float64 finite-difference gradients, on every backend (the `ctx` fixture); MXNet 1.9.1's own
outputs and gradients on small cases (tests/data/ops/spatial_golden.npz, written by
gen_spatial_golden.py) including points exactly on the border and far outside the input; and
shape inference, hidden outputs and errors through the symbol API.
"""
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError, OpParamError, ShapeError
from minimod.ops.registry import create_op
from tests.conftest import GPU_TOLERANCES

from .harness import Case, check_case, run_forward, run_on

_RS = np.random.RandomState(5)
GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "ops",
                              "spatial_golden.npz"))


def r(*shape):
    return _RS.randn(*shape)


def grid_points(low, high, *shape):
    """Uniform random grid values: a finite difference of step 1e-6 then straddles one of
    bilinear sampling's kinks (integer pixel coordinates) with negligible probability."""
    return _RS.uniform(low, high, shape)


# ----------------------------------------------------------------------------- references

def _norm(size):
    return -1.0 + np.arange(size) * (2.0 / (size - 1))


def ref_grid_affine(height, width):
    def ref(theta):
        xs, ys = np.meshgrid(_norm(width), _norm(height))
        t = theta.reshape(-1, 2, 3)
        out = (t[:, :, 0, None, None] * xs + t[:, :, 1, None, None] * ys
               + t[:, :, 2, None, None])
        return [out]
    return ref


def ref_grid_warp(flow):
    _, _, h, w = flow.shape
    out = np.empty_like(flow)
    out[:, 0] = (flow[:, 0] + np.arange(w)) / ((w - 1) / 2.0) - 1
    out[:, 1] = (flow[:, 1] + np.arange(h)[:, None]) / ((h - 1) / 2.0) - 1
    return [out]


def ref_bilinear(data, grid):
    """One point at a time: the four neighbours, each outside the input reading zero."""
    n, c, h, w = data.shape
    out = np.zeros((n, c) + grid.shape[2:])
    for b in range(n):
        for i in range(grid.shape[2]):
            for j in range(grid.shape[3]):
                x = (grid[b, 0, i, j] + 1) * (w - 1) / 2
                y = (grid[b, 1, i, j] + 1) * (h - 1) / 2
                x0, y0 = int(np.floor(x)), int(np.floor(y))
                for yy in (y0, y0 + 1):
                    for xx in (x0, x0 + 1):
                        if 0 <= yy < h and 0 <= xx < w:
                            weight = (1 - abs(x - xx)) * (1 - abs(y - yy))
                            out[b, :, i, j] += weight * data[b, :, yy, xx]
    return out


def ref_sampler(data, grid):
    return [ref_bilinear(data, grid)]


def ref_stn(height, width):
    def ref(data, loc):
        grid = ref_grid_affine(height, width)(loc)[0]
        return [ref_bilinear(data, grid)]
    return ref


def ref_correlation(kernel_size=1, max_displacement=1, stride1=1, stride2=1, pad_size=0,
                    is_multiply=True):
    def ref(a, b):
        n, c, h, w = a.shape
        pa = np.pad(a, ((0, 0), (0, 0), (pad_size,) * 2, (pad_size,) * 2))
        pb = np.pad(b, ((0, 0), (0, 0), (pad_size,) * 2, (pad_size,) * 2))
        border = max_displacement + (kernel_size - 1) // 2
        out_h = int(np.ceil((h + 2 * pad_size - 2 * border) / stride1))
        out_w = int(np.ceil((w + 2 * pad_size - 2 * border) / stride1))
        radius = max_displacement // stride2
        grid = 2 * radius + 1
        out = np.zeros((n, grid * grid, out_h, out_w))
        k = kernel_size
        for i in range(out_h):
            for j in range(out_w):
                y1, x1 = i * stride1 + max_displacement, j * stride1 + max_displacement
                patch = pa[:, :, y1:y1 + k, x1:x1 + k]
                for t in range(grid * grid):
                    y2 = y1 + (t // grid - radius) * stride2
                    x2 = x1 + (t % grid - radius) * stride2
                    other = pb[:, :, y2:y2 + k, x2:x2 + k]
                    f = patch * other if is_multiply else np.abs(patch - other)
                    out[:, t, i, j] = f.sum(axis=(1, 2, 3)) / (k * k * c)
        return [out]
    return ref


STN = dict(transform_type="affine", sampler_type="bilinear")
THETA = np.array([[0.8, 0.15, 0.1, -0.1, 0.7, -0.05], [1.3, -0.2, 0.05, 0.25, 1.2, 0.1]])

CASES = [
    Case("GridGenerator", dict(transform_type="affine", target_shape=(3, 5)), [r(2, 6)],
         ref_grid_affine(3, 5), id="grid_affine"),
    Case("GridGenerator", dict(transform_type="affine", target_shape="(4, 2)"), [r(1, 6)],
         ref_grid_affine(4, 2), id="grid_affine_json_attr"),
    Case("GridGenerator", dict(transform_type="warp", target_shape=(9, 9)), [r(2, 2, 3, 4)],
         ref_grid_warp, id="grid_warp"),
    Case("BilinearSampler", {}, [r(2, 3, 4, 5), grid_points(-1.3, 1.3, 2, 2, 3, 4)],
         ref_sampler, id="sampler"),
    Case("BilinearSampler", dict(cudnn_off=True), [r(1, 2, 1, 3), grid_points(-1, 1, 1,
                                                                                     2, 2, 2)],
         ref_sampler, id="sampler_one_row"),
    Case("SpatialTransformer", dict(STN, target_shape=(3, 4)), [r(2, 2, 5, 6), THETA],
         ref_stn(3, 4), id="stn"),
    Case("SpatialTransformer", dict(STN, target_shape=(2, 2), cudnn_off=False),
         [r(2, 1, 3, 3), THETA[::-1].copy()], ref_stn(2, 2), id="stn_small"),
    Case("Correlation", {}, [r(2, 2, 4, 5), r(2, 2, 4, 5)], ref_correlation(),
         infer_from=[0], id="corr_defaults"),
    Case("Correlation", dict(kernel_size=3, max_displacement=2, stride1=2, stride2=2,
                             pad_size=2), [r(1, 2, 5, 6), r(1, 2, 5, 6)],
         ref_correlation(3, 2, 2, 2, 2), infer_from=[1], id="corr_strides"),
    Case("Correlation", dict(kernel_size=3, max_displacement=1, pad_size=1, is_multiply=False),
         [r(2, 2, 4, 3), r(2, 2, 4, 3)], ref_correlation(3, 1, 1, 1, 1, False),
         id="corr_subtract"),
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
    inputs = [GOLDEN["%s/in%d" % (name, i)] for i in range(meta["n_in"])]
    head = GOLDEN[name + "/head"]
    outs, grads = run_on(ctx, op, inputs, heads=[head], wrt=meta["wrt"])
    tol = 1e-5 if ctx.device_typeid == 1 else GPU_TOLERANCES["op_vs_float64_cpu"]
    np.testing.assert_allclose(outs[0], GOLDEN[name + "/out"], rtol=tol, atol=tol)
    for i in meta["wrt"]:
        np.testing.assert_allclose(grads[i], GOLDEN["%s/grad%d" % (name, i)], rtol=tol,
                                   atol=tol, err_msg="%s grad %d" % (name, i))


def test_stn_equals_grid_generator_then_sampler():
    name = "stn_zoom_out"
    data, loc = GOLDEN[name + "/in0"], GOLDEN[name + "/in1"]
    attrs = json.loads(str(GOLDEN[name + "/meta"]))["attrs"]
    grid = mx.nd.GridGenerator(mx.nd.array(loc), transform_type="affine",
                               target_shape=attrs["target_shape"])
    composed = mx.nd.BilinearSampler(mx.nd.array(data), grid).asnumpy()
    np.testing.assert_allclose(composed, GOLDEN[name + "/out"], rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- graph level

def test_hidden_outputs_and_json():
    d, g = mx.sym.Variable("data"), mx.sym.Variable("grid")
    cases = [
        (mx.sym.GridGenerator(d, transform_type="affine", target_shape=(4, 5)), 2),
        (mx.sym.BilinearSampler(d, g), 2),
        (mx.sym.SpatialTransformer(d, g, target_shape=(4, 5), transform_type="affine",
                                   sampler_type="bilinear"), 3),
        (mx.sym.Correlation(d, g), 3),
    ]
    for sym, n_out in cases:
        assert len(sym.list_outputs()) == 1
        graph = json.loads(sym.tojson())
        rows = graph["node_row_ptr"]
        assert rows[-1] - rows[-2] == n_out, graph["nodes"][-1]["op"]


def test_hidden_output_values():
    sym = mx.sym.SpatialTransformer(mx.sym.Variable("data"), mx.sym.Variable("loc"),
                                    target_shape=(2, 3), **STN)
    op = create_op("SpatialTransformer", dict(STN, target_shape=(2, 3)))
    _, _, outs = run_forward(op, [r(1, 1, 3, 3), THETA[:1]])
    np.testing.assert_allclose(outs[1], [[-1, 0, 1, -1, 0, 1], [-1, -1, -1, 1, 1, 1],
                                         [1, 1, 1, 1, 1, 1]])
    np.testing.assert_allclose(outs[2].reshape(1, 2, 2, 3), ref_grid_affine(2, 3)(THETA[:1])[0])
    assert sym.infer_shape(data=(1, 1, 3, 3))[1] == [(1, 1, 2, 3)]

    a, b = r(1, 2, 3, 4), r(1, 2, 3, 4)
    _, _, outs = run_forward(create_op("Correlation", dict(pad_size=1)), [a, b])
    padded = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1))).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(outs[1], padded)
    assert outs[2].shape == (1, 5, 6, 2)


def test_shape_inference():
    d, loc = mx.sym.Variable("data"), mx.sym.Variable("loc")
    # the localisation net's output shape comes back from the data's batch size
    stn = mx.sym.SpatialTransformer(d, loc, target_shape=(3, 3), **STN)
    args, outs, _ = stn.infer_shape(data=(4, 2, 9, 9))
    assert args == [(4, 2, 9, 9), (4, 6)] and outs == [(4, 2, 3, 3)]

    sampler = mx.sym.BilinearSampler(d, mx.sym.Variable("grid"))
    args, outs, _ = sampler.infer_shape(data=(2, 3, 4, 5), grid=(2, 2, 6, 7))
    assert outs == [(2, 3, 6, 7)]
    warp = mx.sym.GridGenerator(d, transform_type="warp")
    assert warp.infer_shape(data=(2, 2, 4, 5))[1] == [(2, 2, 4, 5)]
    affine = mx.sym.GridGenerator(d, transform_type="affine", target_shape=(4, 5))
    assert affine.infer_shape(data=(2, 6))[1] == [(2, 2, 4, 5)]

    corr = mx.sym.Correlation(mx.sym.Variable("a"), mx.sym.Variable("b"), kernel_size=3,
                              max_displacement=2, stride1=2, stride2=2, pad_size=2)
    args, outs, _ = corr.infer_shape(a=(2, 3, 10, 12))
    assert args == [(2, 3, 10, 12)] * 2 and outs == [(2, 9, 4, 5)]
    assert mx.sym.Correlation(mx.sym.Variable("a"), mx.sym.Variable("b")).infer_shape(
        a=(2, 3, 10, 12))[1] == [(2, 9, 8, 10)]


def test_type_inference():
    corr = mx.sym.Correlation(mx.sym.Variable("a"), mx.sym.Variable("b"))
    args, outs, _ = corr.infer_type(b="float16")
    assert args == [np.float16, np.float16] and outs == [np.float16]


def test_float16_correlation_and_sampler():
    a, b = r(1, 3, 5, 5), r(1, 3, 5, 5)
    want = ref_correlation(3, 1, 1, 1, 1)(a, b)[0]
    got = mx.nd.Correlation(mx.nd.array(a, dtype="float16"), mx.nd.array(b, dtype="float16"),
                            kernel_size=3, pad_size=1)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-2, atol=1e-2)
    grid = grid_points(-1, 1, 1, 2, 3, 3)
    out = mx.nd.BilinearSampler(mx.nd.array(a, dtype="float16"),
                                mx.nd.array(grid, dtype="float16"))
    np.testing.assert_allclose(out.asnumpy(), ref_bilinear(a, grid), rtol=1e-2, atol=1e-2)


def test_executor_backward_stn():
    """Through bind: the loc gradient flows into a localisation net (as MXNet's test_stn)."""
    data = mx.sym.Variable("data")
    loc = mx.sym.FullyConnected(mx.sym.Flatten(data), num_hidden=6, name="fc")
    stn = mx.sym.SpatialTransformer(data, loc, target_shape=(3, 3), **STN)
    x = r(2, 1, 5, 5).astype("float32")
    args = {"data": mx.nd.array(x), "fc_weight": mx.nd.zeros((6, 25)),
            "fc_bias": mx.nd.array([0.5, 0, 0, 0, 0.5, 0])}
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    exe = stn.bind(mx.cpu(), args=args, args_grad=grads)
    exe.forward(is_train=True)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), x[:, :, 1:4, 1:4], rtol=1e-5,
                               atol=1e-6)
    exe.backward([mx.nd.ones((2, 1, 3, 3))])
    np.testing.assert_allclose(grads["data"].asnumpy()[:, :, 1:4, 1:4], 1.0, rtol=1e-6)
    assert np.abs(grads["fc_bias"].asnumpy()).sum() > 0


def test_size_one_target_is_nan_as_in_mxnet():
    out = mx.nd.GridGenerator(mx.nd.array([[1, 0, 0, 0, 1, 0]]), transform_type="affine",
                              target_shape=(1, 3)).asnumpy()
    assert np.isnan(out).all()
    warp = mx.nd.GridGenerator(mx.nd.ones((1, 2, 1, 3)), transform_type="warp").asnumpy()
    np.testing.assert_allclose(warp[0, 0, 0], [0, 1, 2])
    assert np.isposinf(warp[0, 1]).all()


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize("build, shapes, words", [
    (lambda d, g: mx.sym.GridGenerator(d, transform_type="affine"), dict(data=(2, 6)),
     "target_shape"),
    (lambda d, g: mx.sym.GridGenerator(d, transform_type="affine", target_shape=(3, 4)),
     dict(data=(2, 5)), "data"),
    (lambda d, g: mx.sym.GridGenerator(d, transform_type="warp"), dict(data=(2, 3, 4, 5)),
     "data"),
    (lambda d, g: mx.sym.GridGenerator(d, transform_type="warp"), dict(data=(2, 2, 4)),
     "4-D"),
    (lambda d, g: mx.sym.BilinearSampler(d, g), dict(data=(2, 3, 4, 5), grid=(2, 3, 6, 7)),
     "grid"),
    (lambda d, g: mx.sym.BilinearSampler(d, g), dict(data=(2, 3, 4, 5), grid=(3, 2, 6, 7)),
     "grid"),
    (lambda d, g: mx.sym.BilinearSampler(d, g), dict(data=(2, 3, 4), grid=(2, 2, 6, 7)),
     "'data'"),
    (lambda d, g: mx.sym.SpatialTransformer(d, g, target_shape=(3, 3), **STN),
     dict(data=(2, 3, 4, 5), grid=(2, 5)), "loc"),
    (lambda d, g: mx.sym.SpatialTransformer(d, g, target_shape=(3, 3), **STN),
     dict(data=(2, 3, 4, 5), grid=(3, 6)), "loc"),
    (lambda d, g: mx.sym.SpatialTransformer(d, g, **STN), dict(data=(2, 3, 4, 5)),
     "target_shape"),
    (lambda d, g: mx.sym.Correlation(d, g), dict(data=(1, 2, 5, 5), grid=(1, 3, 5, 5)),
     "data2"),
    (lambda d, g: mx.sym.Correlation(d, g, kernel_size=3, max_displacement=2),
     dict(data=(1, 1, 5, 5)), "too small"),
    (lambda d, g: mx.sym.Correlation(d, g), dict(data=(1, 2, 5)), "4-D"),
])
def test_shape_errors(build, shapes, words):
    sym = build(mx.sym.Variable("data"), mx.sym.Variable("grid"))
    with pytest.raises(ShapeError if words != "target_shape" else OpParamError) as err:
        sym.infer_shape(**shapes)
    assert words in str(err.value)


@pytest.mark.parametrize("attrs, words", [
    (dict(kernel_size=2), "odd"),
    (dict(kernel_size=0), "kernel_size"),
    (dict(stride1=0), "stride1"),
    (dict(stride2=0), "stride2"),
])
def test_correlation_param_errors(attrs, words):
    with pytest.raises(OpParamError, match=words):
        create_op("Correlation", attrs)


def test_required_and_unknown_params():
    with pytest.raises(OpParamError, match="transform_type"):
        create_op("GridGenerator", {})
    with pytest.raises(OpParamError, match="sampler_type"):
        create_op("SpatialTransformer", dict(transform_type="affine"))
    with pytest.raises(OpParamError, match="transform_type"):
        create_op("SpatialTransformer", dict(transform_type="warp", sampler_type="bilinear"))
    with pytest.raises(MXNetError):
        mx.nd.Correlation(mx.nd.ones((1, 1, 28, 28)), mx.nd.ones((1, 1, 28, 28)),
                          kernel_size=27)
