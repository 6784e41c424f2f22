"""BatchNorm on float16 data keeps its parameters, moving statistics and mean/var outputs in
float32 and accumulates the statistics there, as MXNet 1.9.1 does (and as AMP's converted
graphs need), against MXNet's numbers (tests/data/ops/batchnorm_float16_golden.npz)."""
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import DTypeError

G = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "ops",
                         "batchnorm_float16_golden.npz"))


def test_types_follow_mxnets_rule():
    net = mx.sym.BatchNorm(mx.sym.var("x"), fix_gamma=False, name="bn")
    args, outs, aux = net.infer_type(x=np.float16)
    assert args == [np.float16, np.float32, np.float32] and outs == [np.float16]
    assert aux == [np.float32, np.float32]
    assert net.infer_type(x=np.float64)[2] == [np.float64, np.float64]
    with pytest.raises(DTypeError, match="bn_gamma|gamma"):
        net.infer_type(x=np.float16, bn_gamma=np.float16)


def test_float16_training_step_matches_mxnet():
    net = mx.sym.BatchNorm(mx.sym.var("x"), fix_gamma=False, name="bn")
    exe = net.simple_bind(mx.cpu(), x=G["x"].shape, type_dict={"x": np.float16})
    exe.arg_dict["x"][:] = G["x"]
    exe.arg_dict["bn_gamma"][:] = G["gamma"]
    exe.arg_dict["bn_beta"][:] = G["beta"]
    exe.forward(is_train=True)
    exe.backward(mx.nd.array(G["head"], dtype=np.float16))
    got = {"out": exe.outputs[0], "dx": exe.grad_dict["x"], "dgamma": exe.grad_dict["bn_gamma"],
           "dbeta": exe.grad_dict["bn_beta"], "moving_mean": exe.aux_dict["bn_moving_mean"],
           "moving_var": exe.aux_dict["bn_moving_var"]}
    for key, arr in got.items():
        assert arr.dtype == G[key].dtype, key
        # float16 data: MXNet and minimod round the same float32 sums to float16 apart
        tol = 2e-3 if key in ("out", "dx", "dgamma", "moving_var") else 1e-5
        np.testing.assert_allclose(arr.asnumpy(), G[key], rtol=tol, atol=tol, err_msg=key)
