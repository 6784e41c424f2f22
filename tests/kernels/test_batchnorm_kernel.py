"""BatchNorm's bound steps (minimod/kernels/batchnorm.py) against the reference BatchNorm:
outputs, the saved mean and 1/std, gradients, the moving statistics and fix_gamma's write-back
agree (to rounding: the sums run in another order), in training, in inference and with the
global statistics, and the executor trains a network through them to the reference's numbers."""
import numpy as np
import pytest

import minimod as mx
from minimod import kernels
from minimod.kernels import registry
from minimod.ops.normalization import BatchNorm
from minimod.ops.registry import create_op


def _run(op, x, gamma, beta, head, train, bound, want=(True, True, True)):
    """Forward then backward of `op` (bound or reference) on fresh copies of the state;
    returns [out, mean, invstd, dx, dgamma, dbeta, moving_mean, moving_var, gamma]."""
    c, dtype = x.shape[1], x.dtype
    gamma = gamma.copy()
    aux = [np.linspace(-0.5, 0.5, c).astype(dtype), np.linspace(0.5, 2.0, c).astype(dtype)]
    outs = [np.full(x.shape, np.nan, dtype), np.full(c, np.nan, dtype),
            np.full(c, np.nan, dtype)]
    grads = [np.full(s, np.nan, dtype) if w else None
             for s, w in zip((x.shape, (c,), (c,)), want)]
    if bound:
        run = kernels.bind_forward(np, op, [x, gamma, beta], aux, outs)
        run_back = kernels.bind_backward(np, op, [head, None, None], [x, gamma, None], outs,
                                         grads, aux)
        assert run is not None and run_back is not None
        run(np, train)
        run_back(np, train)
    else:
        op.forward(np, [x, gamma, beta], aux, outs, train)
        op.backward(np, [head, None, None], [x, gamma, None], outs, grads, aux)
    return outs + grads + aux + [gamma]


def _compare(attrs, shape, dtype=np.float32, train=True, shift=0.0, want=(True, True, True)):
    rng = np.random.RandomState(0)
    op = create_op("BatchNorm", attrs)
    x = (rng.randn(*shape) * 2 + shift).astype(dtype)
    gamma = (rng.rand(shape[1]) + 0.5).astype(dtype)
    beta = rng.randn(shape[1]).astype(dtype)
    head = rng.randn(*shape).astype(dtype)
    reference = _run(op, x, gamma, beta, head, train, False, want)
    bound = _run(op, x, gamma, beta, head, train, True, want)
    rtol = 2e-5 if dtype == np.float32 else 1e-12
    for ref, got in zip(reference, bound):
        if ref is None:
            assert got is None
            continue
        np.testing.assert_allclose(got, ref, rtol=rtol,
                                   atol=rtol * max(float(np.abs(ref).max()), 1.0))


@pytest.mark.parametrize("attrs", [{"fix_gamma": "False"}, {"fix_gamma": "True"},
                                   {"fix_gamma": "False", "use_global_stats": "True"},
                                   {"fix_gamma": "False", "eps": "2e-5", "momentum": "0.8"}])
@pytest.mark.parametrize("shape", [(4, 3, 5, 6), (3, 5, 7), (2, 3, 4, 3, 5)])
def test_bound_steps_equal_the_reference(attrs, shape):
    _compare(attrs, shape)


def test_float64_inference_and_offset_data():
    _compare({"fix_gamma": "False"}, (4, 3, 5, 6), dtype=np.float64)
    _compare({"fix_gamma": "False"}, (4, 3, 5, 6), train=False)
    # a mean far from zero: the centred variance keeps its digits
    _compare({"fix_gamma": "False"}, (8, 3, 6, 6), shift=300.0)


@pytest.mark.parametrize("want", [(False, True, True), (True, False, True),
                                  (True, True, False)])
def test_gradients_nobody_wants(want):
    _compare({"fix_gamma": "False"}, (4, 3, 5, 6), want=want)


@pytest.mark.parametrize("attrs,shape,dtype", [({"axis": "-1"}, (4, 3, 5), np.float32),
                                               ({}, (4, 3), np.float32),
                                               ({}, (4, 3, 5), np.float16)])
def test_declines_other_layouts_and_dtypes(attrs, shape, dtype):
    op = create_op("BatchNorm", attrs)
    x = np.zeros(shape, dtype)
    c = shape[op._axis(len(shape))]
    stats = np.float32 if dtype == np.float16 else dtype
    params = [np.ones(c, stats), np.zeros(c, stats)]
    outs = [np.empty(shape, dtype), np.empty(c, stats), np.empty(c, stats)]
    assert kernels.bind_forward(np, op, [x] + params, [np.zeros(c, stats),
                                                       np.ones(c, stats)], outs) is None


def _train(monkeypatch, fast: bool):
    if not fast:
        for table in (registry._FORWARD, registry._BACKWARD):
            monkeypatch.delitem(table, BatchNorm)
    data = mx.sym.Variable("data")
    net = mx.sym.BatchNorm(data, fix_gamma=False, momentum=0.7, name="bn")
    net = mx.sym.FullyConnected(mx.sym.Activation(net, act_type="relu"), num_hidden=3,
                                name="fc")
    exe = net.simple_bind(mx.cpu(), data=(6, 4, 5, 5))
    rng = np.random.RandomState(5)
    for arr in exe.arg_dict.values():
        arr[:] = rng.randn(*arr.shape).astype(np.float32)
    results = []
    for _ in range(2):
        exe.forward(is_train=True)
        exe.backward([mx.nd.array(rng.randn(6, 3).astype(np.float32))])
        results += [exe.outputs[0].asnumpy()] + [exe.grad_dict[k].asnumpy()
                                                 for k in sorted(exe.grad_dict)]
        results += [exe.aux_dict[k].asnumpy() for k in sorted(exe.aux_dict)]
    exe.forward(is_train=False)
    results.append(exe.outputs[0].asnumpy())
    return results, [step.run.__module__ for step in exe._steps.train]


def test_executor_binds_the_path_and_matches_the_reference(monkeypatch):
    fast, modules = _train(monkeypatch, fast=True)
    assert modules.count("minimod.kernels.batchnorm") == 2
    with monkeypatch.context() as m:
        reference, _ = _train(m, fast=False)
    for got, ref in zip(fast, reference):
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * float(np.abs(ref).max()))
