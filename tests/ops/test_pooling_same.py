"""Pooling with pooling_convention='same': MXNet's window placement (ceil(x / s) windows
starting at 0, s, 2s ..., the last ones running past the end; avg divides by the real
elements), checked against MXNet 1.9.1 (tests/data/ops/pooling_same.json), its gradient by
finite differences, and MXNet's refusal of a nonzero pad."""
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import OpParamError

from .harness import Case, check_case

GOLDEN = json.load(open(os.path.join(os.path.dirname(__file__), "..", "data", "ops",
                                     "pooling_same.json")))


@pytest.mark.parametrize("case", GOLDEN["cases"],
                         ids=lambda c: "k%d_s%d_%s" % (c["kernel"], c["stride"], c["pool_type"]))
def test_same_pooling_gives_mxnets_numbers(case):
    x = mx.nd.array(np.array(GOLDEN["data"], dtype=np.float32))
    y = mx.nd.Pooling(x, kernel=case["kernel"], stride=case["stride"], pad=(0, 0, 0),
                      pool_type=case["pool_type"], pooling_convention="same")
    assert y.shape[2] == -(-x.shape[2] // case["stride"])
    np.testing.assert_allclose(y.asnumpy(), case["output"], rtol=1e-6, atol=1e-6)


def _ref_same(kernel, stride, pool_type):
    def ref(x):
        n = x.shape[-1]
        outs = []
        for i in range(-(-n // stride)):
            window = x[..., i * stride:min(i * stride + kernel, n)]
            outs.append({"max": window.max(-1), "sum": window.sum(-1),
                         "avg": window.mean(-1)}[pool_type])
        return [np.stack(outs, axis=-1)]
    return ref


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
def test_same_pooling_forward_and_gradient(pool_type):
    x = np.random.RandomState(5).permutation(2 * 2 * 9).reshape(2, 2, 9) / 7.0
    check_case(Case("Pooling", dict(kernel=(3,), stride=(2,), pool_type=pool_type,
                                    pooling_convention="same"), [x],
                    _ref_same(3, 2, pool_type), id="same_" + pool_type))


def test_same_pooling_refuses_padding():
    x = mx.nd.ones((1, 1, 10))
    with pytest.raises(OpParamError, match="must be zeros"):
        mx.nd.Pooling(x, kernel=2, stride=2, pad=2, pool_type="max", pooling_convention="same")
