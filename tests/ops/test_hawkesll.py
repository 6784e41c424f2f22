"""`mx.nd.contrib.hawkesll` (minimod/ops/contrib/hawkes.py) against MXNet 1.9.1's results
(tests/data/contrib/hawkesll_golden.npz), and its gradients against finite differences."""
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError

NAMES = ("lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time")
GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "contrib",
                              "hawkesll_golden.npz"))
CASES = ("small", "wide", "example")


def inputs(case, dtype="float32"):
    return [mx.nd.array(GOLDEN["%s/%s" % (case, n)], dtype="int32" if n == "marks" else dtype)
            for n in NAMES]


@pytest.mark.parametrize("case", CASES)
def test_imperative_matches_mxnet(case):
    arrays = inputs(case)
    for a in arrays[:3]:
        a.attach_grad()
    with mx.autograd.record():
        loglik, state = mx.nd.contrib.hawkesll(*arrays)
    loglik.backward()
    np.testing.assert_allclose(loglik.asnumpy(), GOLDEN[case + "/loglik"], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(state.asnumpy(), GOLDEN[case + "/out_state"], rtol=1e-5,
                               atol=1e-6)
    for name, a in zip(NAMES[:3], arrays[:3]):
        np.testing.assert_allclose(a.grad.asnumpy(), GOLDEN["%s/grad_%s" % (case, name)],
                                   rtol=1e-5, atol=1e-4, err_msg=name)


def test_bound_symbol_matches_mxnet():
    syms = [mx.sym.var(n) for n in NAMES]
    net = mx.sym.contrib.hawkesll(*syms)
    args = dict(zip(NAMES, inputs("wide")))
    grads = {n: mx.nd.zeros(args[n].shape) for n in NAMES[:4]}
    req = {n: "write" if n in grads else "null" for n in NAMES}
    exe = net.bind(mx.cpu(), args, args_grad=grads, grad_req=req)
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones(exe.outputs[0].shape), mx.nd.zeros(exe.outputs[1].shape)])
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), GOLDEN["wide/loglik"], rtol=1e-5,
                               atol=1e-4)
    for name in NAMES[:3]:
        np.testing.assert_allclose(grads[name].asnumpy(), GOLDEN["wide/grad_" + name],
                                   rtol=1e-5, atol=1e-4, err_msg=name)


def _objective(arrays, heads):
    loglik, state = mx.nd.contrib.hawkesll(*arrays)
    return float((loglik.asnumpy() * heads[0]).sum() + (state.asnumpy() * heads[1]).sum())


def test_gradients_of_both_outputs_match_finite_differences():
    """Every differentiable input, with head gradients on both outputs: the state's gradient
    and the out_state head are the two MXNet 1.9.1 leaves out (zero and ignored)."""
    arrays = inputs("small", dtype="float64")
    rng = np.random.RandomState(0)
    heads = [rng.uniform(0.5, 1.5, GOLDEN["small/loglik"].shape),
             rng.uniform(0.5, 1.5, GOLDEN["small/out_state"].shape)]
    for a in arrays[:4]:
        a.attach_grad()
    with mx.autograd.record():
        outs = mx.nd.contrib.hawkesll(*arrays)
    mx.autograd.backward(outs, [mx.nd.array(h, dtype="float64") for h in heads])
    eps = 1e-6
    for slot, name in enumerate(NAMES[:4]):
        base = arrays[slot].asnumpy()
        numeric = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            for sign in (1, -1):
                moved = base.copy()
                moved[idx] += sign * eps
                probe = list(arrays)
                probe[slot] = mx.nd.array(moved, dtype="float64")
                numeric[idx] += sign * _objective(probe, heads) / (2 * eps)
        np.testing.assert_allclose(arrays[slot].grad.asnumpy(), numeric, rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    assert np.abs(arrays[3].grad.asnumpy()).max() > 0.01  # a real gradient, not MXNet's 0


def test_no_gradient_for_the_observations():
    arrays = inputs("small")
    arrays[4].attach_grad()
    with mx.autograd.record():
        loglik, _ = mx.nd.contrib.hawkesll(*arrays)
    with pytest.raises(MXNetError, match="'lags' needs grad_req 'null'"):
        loglik.backward()


def test_shape_errors_name_the_input():
    arrays = inputs("small")
    with pytest.raises(MXNetError, match="input 'alpha'"):
        mx.nd.contrib.hawkesll(arrays[0], mx.nd.ones((7,)), *arrays[2:])
    net = mx.sym.contrib.hawkesll(*[mx.sym.var(n) for n in NAMES])
    _, outs, _ = net.infer_shape(lda=(4, 3), lags=(4, 6))
    assert outs == [(4,), (4, 3)]
