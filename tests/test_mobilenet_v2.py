"""MobileNet-v2 as MXNet's model zoo builds it (ReLU6 clip, depthwise convolutions, BatchNorm
with fix_gamma=False, linear bottlenecks, residual adds): in float64 every gradient equals MXNet
1.9.1's (tests/data/model/mobilenet_golden.npz), so an op whose backward differs from MXNet's
anywhere in such a net fails here. (In float32 this randomly initialised net amplifies rounding:
any two float32 implementations, MXNet's own oneDNN and reference kernels included, differ by
percents, which is why the comparison is made in float64.)"""
import os
import sys

import numpy as np
import pytest

import minimod as mx

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "model")
sys.path.insert(0, HERE)
from mobilenet_v2 import run  # noqa: E402

GOLDEN = np.load(os.path.join(HERE, "mobilenet_golden.npz"))
OURS = run(mx)


def test_every_argument_has_mxnets_gradient_keys():
    assert sorted(OURS) == sorted(GOLDEN.files)


@pytest.mark.parametrize("key", sorted(GOLDEN.files))
def test_float64_output_and_gradients_equal_mxnets(key):
    want = GOLDEN[key]
    # the linear bottlenecks' BatchNorm beta gradients are zero in exact arithmetic (the next
    # BatchNorm removes any per-channel offset): compare those on the absolute scale
    atol = 1e-12 * max(1.0, np.abs(want).max())
    np.testing.assert_allclose(OURS[key], want, rtol=1e-7, atol=max(atol, 1e-12))
