"""mx.nd.image / mx.sym.image operators (minimod/ops/image_ops.py): MXNet 1.9.1's outputs
for every call without random draws (tests/data/imageops, written by
gen_image_ops_golden.py), the random forms' contracts, the one MXNet bug not copied, the
shape checks and the gradients."""
import os
import sys

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError

pytest.importorskip("cv2", reason="the image extra (OpenCV) is not installed")

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "imageops")
sys.path.insert(0, HERE)
from image_op_cases import CASES, _hwc  # noqa: E402

GOLDEN = np.load(os.path.join(HERE, "image_ops_golden.npz"))
NOT_MXNETS = {"saturation"}  # MXNet's bug: see test_saturation_keeps_each_pixels_grey


@pytest.mark.parametrize("name", sorted(set(GOLDEN.files) - NOT_MXNETS))
def test_matches_mxnet(name):
    got = CASES[name](mx).asnumpy()
    want = GOLDEN[name]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5,
                               atol=1e-3)


def test_mxnet_refusals_are_kept():
    """The cases MXNet refuses (absent from the golden file) are refused here too."""
    for name in sorted(set(CASES) - set(GOLDEN.files)):
        with pytest.raises(MXNetError):
            CASES[name](mx)


def test_saturation_keeps_each_pixels_grey():
    """MXNet 1.9.1 mixes each pixel with 0.114 B instead of its grey (its output keeps no
    grey); minimod's keeps every pixel's grey, as saturation must."""
    x = _hwc(15, (5, 6, 3), np.float32)
    got = mx.nd.image.random_saturation(mx.nd.array(x), 1.4, 1.4).asnumpy()
    grey = np.array([0.299, 0.587, 0.114], np.float32)
    np.testing.assert_allclose(got @ grey, x @ grey, rtol=1e-5, atol=1e-3)
    mxnets = x * 1.4 - 0.4 * 0.114 * x[..., 2:3]
    np.testing.assert_allclose(GOLDEN["saturation"], mxnets, rtol=1e-5, atol=1e-3)


def test_random_forms_draw_within_their_ranges():
    mx.random.seed(5)
    x = mx.nd.array(_hwc(20, (6, 7, 3), np.float32))
    ratios = [float((mx.nd.image.random_brightness(x, 0.5, 1.5) / x).asnumpy().mean())
              for _ in range(20)]
    assert all(0.5 <= r <= 1.5 for r in ratios) and np.ptp(ratios) > 0.3
    flips = [np.array_equal(mx.nd.image.random_flip_left_right(x).asnumpy(),
                            x.asnumpy()[:, ::-1]) for _ in range(40)]
    assert 5 < sum(flips) < 35
    lit = mx.nd.image.random_lighting(x, alpha_std=0.1).asnumpy() - x.asnumpy()
    np.testing.assert_allclose(lit, np.broadcast_to(lit[:1, :1], lit.shape), atol=1e-3)
    jitter = mx.nd.image.random_color_jitter(mx.nd.array(_hwc(21)).astype("uint8"), 0.2,
                                             0.2, 0.2, 0.1)
    assert jitter.dtype == np.uint8 and jitter.shape == (5, 6, 3)


def test_symbols_and_gradients():
    data = mx.sym.var("data")
    net = mx.sym.image.flip_left_right(mx.sym.image.crop(data, 1, 1, 3, 2))
    x = mx.nd.array(_hwc(22, (4, 5, 3), np.float32))
    ex = net.simple_bind(mx.cpu(), data=(4, 5, 3))
    ex.arg_dict["data"][:] = x
    out = ex.forward(is_train=True)[0].asnumpy()
    np.testing.assert_array_equal(out, x.asnumpy()[1:3, 1:4][:, ::-1])
    head = np.arange(out.size, dtype=np.float32).reshape(out.shape)
    ex.backward(mx.nd.array(head))
    grad = np.zeros((4, 5, 3), np.float32)
    grad[1:3, 1:4] = head[:, ::-1]
    np.testing.assert_array_equal(ex.grad_dict["data"].asnumpy(), grad)
    resized = mx.sym.image.resize(data, size=(8, 6))
    assert resized.infer_shape(data=(4, 5, 3))[1] == [(6, 8, 3)]
    with pytest.raises(MXNetError, match="non-differentiable"):
        mx.sym.image.to_tensor(data).simple_bind(mx.cpu(), data=(4, 5, 3))
