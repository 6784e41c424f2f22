"""BatchNorm on CuPy as one kernel each way (minimod/kernels/batchnorm_gpu.py).

The source compiles with NVRTC here, and its host reference is held to the op's NumPy path:
to the last bits where the batch statistics are summed (in another order), exactly where
the moving statistics stand in. The binding runs on a GPU or the CuPy stand-in
(tests/test_fake_gpu.py runs this file on it), whose RawModule runs the reference.
"""
import numpy as np
import pytest

import minimod as mx
from minimod import backend, kernels
from minimod.kernels import batchnorm_gpu as bn
from minimod.ops.registry import create_op

from ..conftest import needs_gpu
from ..ops.test_fused_kernels import _compile, _nvrtc

#: (data shape, BatchNorm attributes)
CASES = [
    ((6, 3, 5, 7), {"fix_gamma": "False", "eps": "1e-5", "momentum": "0.8"}),
    ((4, 2, 40, 33), {}),
    ((9, 5), {"fix_gamma": "False"}),
    ((2, 3, 4, 5, 3), {"fix_gamma": "False"}),
    ((3, 4, 6), {"use_global_stats": "True", "fix_gamma": "False"}),
    ((3, 4, 6), {"use_global_stats": "True"}),
]


def _arrays(shape, dtype, seed=0):
    """x, gamma, beta, moving_mean, moving_var and an output gradient, on the host."""
    rng = np.random.default_rng(seed)
    c = shape[1]
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    gamma, beta, mean = (rng.standard_normal(c).astype(dtype) for _ in range(3))
    var = (np.abs(rng.standard_normal(c)) + 0.5).astype(dtype)
    return x, gamma, beta, mean, var, rng.standard_normal(shape).astype(dtype)


def _step(xp, op, host, is_train, binders=None):
    """Every array a step writes: y, mean, invstd, gamma, and after a training step's
    backward dx, dgamma, dbeta and the moving statistics; on the op's passes, or the bound
    steps of `binders` (forward, backward)."""
    x, gamma, beta, mm, mv, g = (xp.asarray(a.copy()) for a in host)
    c = x.shape[1]
    y, mean, invstd = xp.empty_like(x), xp.empty(c, x.dtype), xp.empty(c, x.dtype)
    dx, dgamma, dbeta = xp.empty_like(x), xp.empty(c, x.dtype), xp.empty(c, x.dtype)
    inputs, outs, aux = [x, gamma, beta], [y, mean, invstd], [mm, mv]
    if binders:
        run = binders[0](xp, op, inputs, aux, outs)
        assert run is not None, bn.status()
        run(xp, is_train)
    else:
        op.forward(xp, inputs, aux, outs, is_train)
    if not is_train:
        return [backend.asnumpy(a) for a in (y, mean, invstd, gamma)]
    if binders:
        binders[1](xp, op, [g], inputs, outs, [dx, dgamma, dbeta], aux)(xp, True)
    else:
        op.backward(xp, [g], inputs, outs, [dx, dgamma, dbeta], aux)
    return [backend.asnumpy(a) for a in (y, mean, invstd, gamma, dx, dgamma, dbeta, mm, mv)]


def _host_binders():
    """Binders running the host reference, as the stand-in's kernels do."""
    def forward(xp, op, inputs, aux, outs):
        x = inputs[0]
        n, c, r = x.shape[0], x.shape[1], x.size // (x.shape[0] * x.shape[1])
        a = op.attrs

        def run(xp, is_train):
            mode = (bn.BATCH_STATS if is_train and not a.use_global_stats else 0) | (
                (bn.FIX_GAMMA | (bn.WRITE_GAMMA if is_train else 0)) if a.fix_gamma else 0)
            bn.host_forward(*inputs, *outs, *aux, n, c, r, a.eps, mode)
        return run

    def backward(xp, op, out_grads, inputs, outs, grads, aux):
        x, a = inputs[0], op.attrs
        n, c, r = x.shape[0], x.shape[1], x.size // (x.shape[0] * x.shape[1])
        mode = (0 if a.use_global_stats else bn.BATCH_STATS) | (
            bn.FIX_GAMMA if a.fix_gamma else 0) | bn.WRITE_DX | bn.WRITE_DGAMMA | bn.WRITE_DBETA
        return lambda xp, is_train: bn.host_backward(
            x, inputs[1], out_grads[0], outs[1], outs[2], *grads, *aux, n, c, r, a.momentum,
            1 - a.momentum, a.eps, mode)
    return forward, backward


def _assert_close(got, want, dtype, exact=False):
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for k, (a, b) in enumerate(zip(got, want)):
        if exact:
            np.testing.assert_array_equal(a, b, err_msg=str(k))
        else:
            assert bn.agrees(a, b, tol), (k, a, b)


def test_agreement_allows_cancellation_not_errors():
    """dx's small elements come out of a cancellation: two summing orders may part by more
    than the tolerance of such an element, and agree to the array's scale. A wrong value
    does not."""
    want = np.array([1.0, -0.8, 0.010056975], np.float32)
    assert bn.agrees(np.array([1.0, -0.8, 0.0100567425], np.float32), want, 1e-5)
    assert not bn.agrees(np.array([1.0, -0.8, 0.0101], np.float32), want, 1e-5)
    assert not bn.agrees(want * 1.001, want, 1e-5)


@pytest.mark.skipif(_nvrtc() is None, reason="NVRTC not installed (pip install -e '.[nvrtc]')")
def test_source_compiles_with_nvrtc():
    status, log = _compile(_nvrtc(), bn.SOURCE, "batchnorm_gpu.cu")
    assert status == 0, log


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,attrs", CASES)
def test_host_reference_is_the_ops_path(shape, attrs, dtype):
    op = create_op("BatchNorm", attrs)
    host = _arrays(shape, dtype)
    for is_train in (False, True):
        got = _step(np, op, host, is_train, _host_binders())
        want = _step(np, op, host, is_train)
        # with the moving statistics (inference, use_global_stats) every value is the op's
        exact = not is_train or attrs.get("use_global_stats") == "True"
        _assert_close(got[:4], want[:4], dtype, exact=exact)
        _assert_close(got[4:], want[4:], dtype)
    if attrs.get("fix_gamma", "True") == "True":  # training wrote gamma = 1; its gradient 0
        assert (got[3] == 1).all() and (got[5] == 0).all()
    moved = not np.allclose(got[7], host[3])
    assert moved == (attrs.get("use_global_stats") != "True")  # the moving statistics


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,attrs", CASES)
def test_bound_kernels_give_the_ops_numbers(shape, attrs, dtype):
    op = create_op("BatchNorm", attrs)
    host = _arrays(shape, dtype)
    xp = backend.xp_for(mx.gpu(0))
    with backend.device_scope(mx.gpu(0)):
        for is_train in (True, False):
            got = _step(xp, op, host, is_train, (kernels.bind_forward, kernels.bind_backward))
            want = _step(xp, op, host, is_train)
            exact = not is_train or attrs.get("use_global_stats") == "True"
            _assert_close(got[:4], want[:4], dtype, exact=exact)
            _assert_close(got[4:], want[4:], dtype)
    assert "kernels" in bn.status()


@needs_gpu
def test_unserved_arrays_keep_the_ops_path():
    xp = backend.xp_for(mx.gpu(0))
    with backend.device_scope(mx.gpu(0)):
        x = xp.zeros((2, 3, 4, 4), np.float16)
        params = [xp.zeros(3, np.float32) for _ in range(6)]
        op = create_op("BatchNorm", {})
        assert kernels.bind_forward(xp, op, [x] + params[:2], params[4:],
                                    [xp.zeros_like(x)] + params[2:4]) is None
        last = create_op("BatchNorm", {"axis": "-1"})  # channels last
        x32 = xp.zeros((2, 4, 4, 3), np.float32)
        assert kernels.bind_forward(xp, last, [x32] + params[:2], params[4:],
                                    [xp.zeros_like(x32)] + params[2:4]) is None


@needs_gpu
def test_a_kernel_that_disagrees_keeps_the_ops_path(monkeypatch):
    if not hasattr(backend._cupy, "host_reads"):
        pytest.skip("makes the stand-in's kernel wrong")
    checker = bn.ChannelNorm()
    xp = backend.xp_for(mx.gpu(0))
    right = bn.host_backward

    def wrong(*args):
        right(*args)
        args[7][...] *= 2  # dbeta
    monkeypatch.setattr(bn, "host_backward", wrong)
    assert not checker.serves(xp, 0, np.float32)
    assert "differs from the op's" in checker.status()
    monkeypatch.setattr(bn, "host_backward", right)
    assert checker.serves(xp, 0, np.float64)


@needs_gpu
def test_a_residual_block_step_takes_two_kernels_a_batchnorm(monkeypatch):
    """conv-BN-relu-conv-BN plus the identity: a captured training step (on the stand-in)
    holds one kernel per BatchNorm each way instead of about forty, and trains as the
    op's passes do."""
    from ..fake_cuda_graphs import captured_kernels
    if not hasattr(backend._cupy, "host_reads"):
        pytest.skip("counts the stand-in's recorded kernels")
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1")
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, name="c1")
    net = mx.sym.Activation(mx.sym.BatchNorm(net, fix_gamma=False, name="bn1"), "relu")
    net = mx.sym.Convolution(net, kernel=(3, 3), pad=(1, 1), num_filter=4, name="c2")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn2") + data
    sym = mx.sym.MakeLoss(mx.sym.sum(net * net))
    x = np.random.default_rng(1).standard_normal((8, 4, 6, 6)).astype(np.float32)
    counts, grads = {}, {}
    checked = bn.NORM.serves
    for served in (True, False):
        monkeypatch.setattr(bn.NORM, "serves", checked if served else lambda *a: False)
        exe = sym.simple_bind(mx.gpu(0), data=x.shape)
        rng = np.random.default_rng(2)
        for name in sorted(exe.arg_dict):
            exe.arg_dict[name][:] = x if name == "data" else rng.standard_normal(
                exe.arg_dict[name].shape).astype(np.float32) * 0.3
        for _ in range(3):
            exe.forward(is_train=True)
            exe.backward()
        counts[served] = captured_kernels(exe)
        grads[served] = {k: v.asnumpy() for k, v in exe.grad_dict.items()}
        grads[served].update({k: v.asnumpy() for k, v in exe.aux_dict.items()})
    for name, want in grads[False].items():
        np.testing.assert_allclose(grads[True][name], want, rtol=1e-4, atol=1e-4,
                                   err_msg=name)
    assert counts[False] - counts[True] >= 60, counts
