"""Pooling over channels-last data (NWC, NHWC, NDHWC): MXNet 1.9.1's numbers for every pool type
(tests/data/ops/pool_channels_last_golden.npz), on every device, and the layouts refused."""
import os
import sys

import numpy as np
import pytest

import minimod as mx

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "ops")
sys.path.insert(0, HERE)
from pool_channels_last_cases import run  # noqa: E402

GOLDEN = np.load(os.path.join(HERE, "pool_channels_last_golden.npz"))


def test_every_case_matches_mxnet(ctx):
    got = run(mx, ctx)
    assert sorted(got) == sorted(GOLDEN.files)
    for key in GOLDEN.files:
        np.testing.assert_allclose(got[key], GOLDEN[key], rtol=1e-5, atol=1e-6, err_msg=key)


def test_shapes_and_refusals():
    net = mx.sym.Pooling(mx.sym.var("x"), kernel=(2, 2), stride=(2, 2), layout="NHWC")
    _, out, _ = net.infer_shape(x=(4, 8, 6, 5))
    assert out == [(4, 4, 3, 5)]
    with pytest.raises(mx.MXNetError, match="layout=NHWC is not supported for 1-D data"):
        mx.sym.Pooling(mx.sym.var("x"), kernel=(2,), layout="NHWC")
    with pytest.raises(mx.MXNetError, match="layout=NHWC is not supported"):
        mx.sym.Convolution(mx.sym.var("x"), kernel=(2, 2), num_filter=2, layout="NHWC")
