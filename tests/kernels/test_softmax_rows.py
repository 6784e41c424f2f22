"""SoftmaxOutput's forward on CuPy as one row-softmax kernel (minimod/kernels/softmax_rows.py).

The source compiles with NVRTC here. Its reference, and the binding around it, run on a GPU
or the CuPy stand-in (tests/test_fake_gpu.py runs this file on it), whose RawModule runs the
reference; on a GPU the kernel itself is held to the op's passes.
"""
import numpy as np
import pytest

import minimod as mx
from minimod import backend
from minimod.kernels import softmax_rows
from minimod.ops.loss import softmax_into

from ..conftest import needs_gpu
from ..ops.test_fused_kernels import _compile, _nvrtc


@pytest.mark.skipif(_nvrtc() is None, reason="NVRTC not installed (pip install -e '.[nvrtc]')")
def test_source_compiles_with_nvrtc():
    status, log = _compile(_nvrtc(), softmax_rows.SOURCE, "softmax_rows.cu")
    assert status == 0, log


def test_host_reference_is_the_ops_softmax():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((6, 300)) * 20).astype(np.float32)
    want, got = np.empty_like(x), np.empty_like(x)
    softmax_into(np, x, 1, want, red=np.empty((6, 1), np.float32))
    softmax_rows.host_softmax_rows(x, got)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got.sum(axis=1), 1, rtol=1e-5)


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1), (4, 10), (3, 127), (2, 129), (5, 2000)])
def test_kernel_equals_the_passes(shape, dtype):
    rng = np.random.default_rng(shape[1])
    host = (rng.standard_normal(shape) * 10).astype(dtype)
    with backend.device_scope(mx.gpu(0)):
        xp = backend.xp_for(mx.gpu(0))
        x = xp.asarray(host)
        want, got = xp.empty_like(x), xp.empty_like(x)
        softmax_into(xp, x, 1, want, red=xp.empty((shape[0], 1), x.dtype))
        softmax_rows.ROWS.run(xp, x, got)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(backend.asnumpy(got), backend.asnumpy(want), rtol=tol,
                                   atol=tol * 1e-2)
        softmax_rows.ROWS.run(xp, x, x)  # in place
        np.testing.assert_allclose(backend.asnumpy(x), backend.asnumpy(want), rtol=tol,
                                   atol=tol * 1e-2)


def _softmax_net(**kw):
    data = mx.sym.Variable("data")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=7, name="fc"),
                                name="softmax", **kw)


@needs_gpu
@pytest.mark.parametrize("kw,shape", [({}, (5, 4)), ({"preserve_shape": True}, (5, 4))])
def test_softmax_output_runs_the_kernel_and_matches_the_cpu(kw, shape):
    launches = []
    real = softmax_rows.ROWS.run
    softmax_rows.ROWS.run = lambda xp, x, y: (launches.append(x.shape), real(xp, x, y))
    try:
        outs = {}
        for ctx in (mx.cpu(), mx.gpu(0)):
            exe = _softmax_net(**kw).simple_bind(ctx, data=shape, grad_req="null")
            rng = np.random.RandomState(0)
            for name, arr in exe.arg_dict.items():
                arr[:] = rng.uniform(-2, 2, arr.shape) if name != "softmax_label" else 1
            outs[ctx.device_type] = exe.forward()[0].asnumpy()
    finally:
        softmax_rows.ROWS.run = real
    assert launches.count((shape[0], 7)) == 1  # (and the check's, on first use)
    np.testing.assert_allclose(outs["gpu"], outs["cpu"], rtol=1e-5, atol=1e-7)
    assert "gpu(0) float32: kernel" in softmax_rows.status()


@needs_gpu
def test_a_kernel_that_disagrees_is_not_served():
    checker = softmax_rows.RowSoftmax()
    xp = backend.xp_for(mx.gpu(0))

    def wrong(x, y):
        y[...] = 0
    with backend.device_scope(mx.gpu(0)):
        assert not checker.serves(xp, 0, np.float32, wrong)
        assert checker.serves(xp, 0, np.float64, lambda x, y: softmax_into(
            xp, x, 1, y, red=xp.empty((x.shape[0], 1), x.dtype)))
        assert not checker.serves(xp, 0, np.float16, wrong)  # no kernel for half
    assert "float32: its (5, 3) rows differ" in checker.status()
    assert "float64: kernel" in checker.status()
