"""Gradients of activations whose output was changed in place before backward, against MXNet
1.9.1 (tests/data/ops/activation_inplace.json). MXNet's two builds differ there: its reference
kernels differentiate sigmoid, tanh, softrelu, leaky and elu from the output, its default
oneDNN build from the input. minimod takes relu's mask (y > 0) and softsign's input form,
where both builds agree; Activation's other gradients of the output (the reference, which lets
the output take the input's memory) and LeakyReLU's of the input (the default build). selu's
MXNet gradient is wrong in both builds (README), so minimod's is the true derivative."""
import json
import os
import sys

import numpy as np
import pytest

import minimod as mx

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "ops")
sys.path.insert(0, HERE)
from activation_inplace_cases import X, run  # noqa: E402

GOLDEN = json.load(open(os.path.join(HERE, "activation_inplace.json")))
OURS = run(mx)
FOLLOWS = {"Activation_relu": "both", "Activation_softsign": "both", "LeakyReLU_gelu": "both",
           "Activation_sigmoid": "reference", "Activation_tanh": "reference",
           "Activation_softrelu": "reference", "LeakyReLU_leaky": "onednn",
           "LeakyReLU_elu": "onednn"}


@pytest.mark.parametrize("case", sorted(FOLLOWS))
def test_gradient_after_the_output_changed_in_place_is_mxnets(case):
    builds = ("onednn", "reference") if FOLLOWS[case] == "both" else (FOLLOWS[case],)
    for build in builds:
        np.testing.assert_allclose(OURS[case], GOLDEN[build][case], rtol=1e-5, atol=1e-6)


def test_relu_masks_where_the_user_made_the_output_negative():
    grad = np.array(OURS["Activation_relu"])
    assert ((np.maximum(X, 0) - 1.5 > 0) == (grad == 1)).all() and set(grad.ravel()) <= {0, 1}


def test_selu_is_the_true_derivative_of_the_input():
    lam, alpha = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717
    want = lam * np.where(X > 0, 1, alpha * np.exp(X))
    np.testing.assert_allclose(OURS["LeakyReLU_selu"], want, rtol=1e-5)


def test_prelu_gamma_gradient_reads_the_input_after_another_op():
    """MXNet 1.9.1 lets PReLU's output take its input's memory when the input comes from
    another op, then forms gamma's gradient from the output: gamma times the true one
    (docs/compatibility.md, MXNet bugs). minimod's is the true gradient."""
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (2, 4, 3, 3)).astype(np.float32)
    gamma = rng.uniform(0.2, 1.2, (4,)).astype(np.float32)
    net = mx.sym.LeakyReLU(mx.sym.tanh(mx.sym.var("x")), gamma=mx.sym.var("g"),
                           act_type="prelu")
    net = mx.sym.MakeLoss(mx.sym.sum(net * net))
    exe = net.bind(mx.cpu(), {"x": mx.nd.array(x), "g": mx.nd.array(gamma)},
                   args_grad={"x": mx.nd.zeros(x.shape), "g": mx.nd.zeros((4,))})
    exe.forward(is_train=True)
    exe.backward()
    h = np.tanh(x)
    p = np.where(h > 0, h, gamma.reshape(1, 4, 1, 1) * h)
    np.testing.assert_allclose(exe.grad_dict["g"].asnumpy(),
                               (2 * p * h * (h < 0)).sum(axis=(0, 2, 3)), rtol=1e-5)
