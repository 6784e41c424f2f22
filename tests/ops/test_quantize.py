"""contrib.quantize, quantize_v2, dequantize and requantize (minimod/ops/contrib/quantization.py)
bit for bit against MXNet 1.9.1 (tests/data/contrib/quantize_golden.npz)."""
import os
import sys

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError

from ..conftest import needs_gpu

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "contrib")
sys.path.insert(0, HERE)
from quantize_cases import RANGES, data, run  # noqa: E402

GOLDEN = np.load(os.path.join(HERE, "quantize_golden.npz"))


def test_codes_ranges_and_values_are_mxnets():
    got = run(mx)
    assert sorted(got) == sorted(GOLDEN.files)
    for key in GOLDEN.files:
        assert got[key].dtype == GOLDEN[key].dtype, key
        np.testing.assert_array_equal(got[key], GOLDEN[key], err_msg=key)


@needs_gpu
def test_on_a_gpu_too():
    with mx.gpu(0):
        got = run(mx)
    for key in GOLDEN.files:
        np.testing.assert_array_equal(got[key], GOLDEN[key], err_msg=key)


def test_bound_graph_quantizes_as_the_imperative_call():
    q = mx.sym.contrib.quantize(mx.sym.var("x"), mx.sym.var("lo"), mx.sym.var("hi"),
                                out_type="int8")
    back = mx.sym.contrib.dequantize(q[0], q[1], q[2])
    x = data()[:64]
    exe = mx.sym.Group([q[0], back]).bind(mx.cpu(), {
        "x": mx.nd.array(x), "lo": mx.nd.array([RANGES[1][0]]), "hi": mx.nd.array([RANGES[1][1]])})
    codes, restored = (o.asnumpy() for o in exe.forward())
    np.testing.assert_array_equal(codes, GOLDEN["q1_int8"][:64])
    # dequantize of these codes and range: MXNet's value for each code (codes -128..127)
    np.testing.assert_array_equal(restored, GOLDEN["dq1_int8"][codes.astype(int) + 128])


def test_the_gradient_is_zero_as_in_mxnet():
    x = mx.nd.array([0.3, -0.7])
    x.attach_grad()
    with mx.autograd.record():
        q, _, _ = mx.nd.contrib.quantize(x, mx.nd.array([-1.0]), mx.nd.array([1.0]))
    q.backward()
    assert not x.grad.asnumpy().any()


def test_dtypes_are_checked_by_name():
    with pytest.raises(MXNetError, match="input 'data' must be float32"):
        mx.nd.contrib.quantize(mx.nd.ones(3, dtype="float64"), mx.nd.array([0.0]),
                               mx.nd.array([1.0]))
    with pytest.raises(MXNetError, match="input 'data' must be int8 or uint8"):
        mx.nd.contrib.dequantize(mx.nd.ones(3), mx.nd.array([0.0]), mx.nd.array([1.0]))
    with pytest.raises(MXNetError, match="input 'data' must be int32"):
        mx.nd.contrib.requantize(mx.nd.ones(3), mx.nd.array([0.0]), mx.nd.array([1.0]))
    with pytest.raises(MXNetError, match="min_calib_range and max_calib_range go together"):
        mx.nd.contrib.quantize_v2(mx.nd.ones(3), min_calib_range=0.0)
