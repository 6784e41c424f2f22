"""Module calls into Optimizer subclasses exactly as MXNet 1.9.1 does: which method, with
which index type (an int, a parameter name, a list of them), on one device and on two through
the kvstore (tests/data/optimizer/subclass_calls.json, written by MXNet). An SGD subclass that
replaces only `update` is never called (MXNet's SGD goes straight to its kernels), an Adam
subclass gets `update` one index at a time, a replaced `update_multi_precision` gets MXNet's
aggregated lists, and the parameters end where MXNet's do."""
import json
import os
import sys

import numpy as np
import pytest

import minimod as mx

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "optimizer")
sys.path.insert(0, HERE)
from subclass_calls import run  # noqa: E402

GOLDEN = json.load(open(os.path.join(HERE, "subclass_calls.json")))
OURS = run(mx)


@pytest.mark.parametrize("case", sorted(GOLDEN))
def test_calls_and_parameters_are_mxnets(case):
    assert OURS[case]["calls"] == GOLDEN[case]["calls"]
    for name, want in GOLDEN[case]["params"].items():
        np.testing.assert_allclose(OURS[case]["params"][name], want, rtol=1e-5, atol=1e-6)


def test_class_flags_are_set_once_per_class():
    class Mine(mx.optimizer.SGD):
        def update(self, index, weight, grad, state):
            raise AssertionError("MXNet's SGD never calls a replaced update")

    assert Mine.replaces_update and not Mine.replaces_update_multi_precision
    assert not mx.optimizer.SGD.replaces_update
    updater = mx.optimizer.get_updater(Mine(learning_rate=0.1))
    weight, grad = mx.nd.ones((3,)), mx.nd.ones((3,))
    updater(0, grad, weight)  # goes to SGD's own step
    np.testing.assert_allclose(weight.asnumpy(), 0.9)
