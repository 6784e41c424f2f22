"""Max pooling over disjoint windows as one kernel each way on CuPy
(minimod/kernels/pool_max.py).

The source compiles with NVRTC here, and its host reference is held to the op's own NumPy
path on the CPU. The binding runs on a GPU or the CuPy stand-in (tests/test_fake_gpu.py runs
this file on it), whose RawModule runs the reference; on a GPU the kernels themselves are
held to the op's path, once per dtype, before they serve.
"""
import numpy as np
import pytest

import minimod as mx
from minimod import backend, kernels
from minimod.kernels import pool_max
from minimod.ops.registry import create_op

from ..conftest import needs_gpu
from ..ops.test_fused_kernels import _compile, _nvrtc

#: (data shape, Pooling attributes): disjoint windows with ties, padding, edges no window
#: covers, 'full' and 'same' windows running past the end, 1-D, 3-D and global pools
CASES = [
    ((2, 3, 8, 6), {"kernel": "(2, 2)", "stride": "(2, 2)"}),
    ((2, 2, 7, 5), {"kernel": "(2, 2)", "stride": "(2, 2)"}),
    ((1, 2, 7, 7), {"kernel": "(3, 3)", "stride": "(3, 3)", "pad": "(1, 1)"}),
    ((1, 2, 7, 5), {"kernel": "(2, 2)", "stride": "(2, 2)", "pooling_convention": "full"}),
    ((3, 2, 9), {"kernel": "(3,)", "stride": "(3,)"}),
    ((2, 2, 7), {"kernel": "(2,)", "stride": "(2,)", "pooling_convention": "same"}),
    ((1, 2, 4, 4, 6), {"kernel": "(2, 2, 3)", "stride": "(2, 2, 3)"}),
    ((2, 3, 5, 4), {"kernel": "(1, 1)", "global_pool": "True"}),
]


def _op(attrs):
    return create_op("Pooling", dict(attrs, pool_type="max"))


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, shape).astype(dtype)  # ties in most windows
    x.reshape(-1)[[1, 7]] = np.nan
    return x


def _reference(xp, op, x, gy_seed=1):
    """The op's own forward (maxima, mask) and backward on `xp`."""
    out_shape = tuple(op.infer_shape([x.shape], [None, None])[1][0])
    out = [xp.empty(out_shape, x.dtype), xp.empty(out_shape, x.dtype)]
    op.forward(xp, [x], [], out, True)
    gy = xp.asarray(np.random.default_rng(gy_seed).standard_normal(out_shape).astype(x.dtype))
    dx = xp.empty(x.shape, x.dtype)
    op.backward(xp, [gy], [x], out, [dx], [])
    return out, gy, dx


def _host(a):
    return backend.asnumpy(a)


@pytest.mark.skipif(_nvrtc() is None, reason="NVRTC not installed (pip install -e '.[nvrtc]')")
def test_source_compiles_with_nvrtc():
    status, log = _compile(_nvrtc(), pool_max.SOURCE, "pool_max.cu")
    assert status == 0, log


@pytest.mark.parametrize("shape,attrs", CASES)
def test_host_reference_is_the_ops_own_path(shape, attrs):
    op = _op(attrs)
    x = _data(shape, np.float32)
    (y, mask), gy, dx = _reference(np, op, x)
    dims = pool_max.geometry(op, shape)
    got_y, got_mask, got_dx = np.empty_like(y), np.empty_like(mask), np.empty_like(dx)
    pool_max.host_forward(x, got_y, got_mask, dims)
    pool_max.host_backward(gy, got_mask, got_dx, dims)
    for got, want in ((got_y, y), (got_mask, mask), (got_dx, dx)):
        np.testing.assert_array_equal(got, want)
    assert np.isnan(y).any() and (mask > 0).any()  # the cases do hold NaNs and later maxima


def test_overlapping_windows_and_other_pools_are_not_served():
    for attrs in ({"kernel": "(3, 3)", "stride": "(2, 2)"},  # overlapping
                  {"kernel": "(2, 2)", "stride": "(1, 1)"}):
        assert pool_max.geometry(_op(attrs), (1, 1, 8, 8)) is None
    avg = create_op("Pooling", {"kernel": "(2, 2)", "stride": "(2, 2)", "pool_type": "avg"})
    assert pool_max.geometry(avg, (1, 1, 8, 8)) is None


def test_numpy_keeps_the_ops_path():
    op = _op(CASES[0][1])
    x = _data(CASES[0][0], np.float32)
    out = [np.empty((2, 3, 4, 3), np.float32), np.empty((2, 3, 4, 3), np.float32)]
    assert kernels.bind_forward(np, op, [x], [], out) is None


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,attrs", CASES)
def test_bound_kernels_give_the_ops_numbers(shape, attrs, dtype):
    ctx = mx.gpu(0)
    xp = backend.xp_for(ctx)
    op = _op(attrs)
    with backend.device_scope(ctx):
        x = xp.asarray(_data(shape, dtype))
        (y, mask), gy, dx = _reference(xp, op, x)
        got = [xp.full(y.shape, 7, dtype), xp.full(y.shape, 7, dtype)]
        run = kernels.bind_forward(xp, op, [x], [], got)
        assert run is not None, pool_max.status()
        run(xp, True)
        got_dx = xp.full(x.shape, 7, dtype)
        back = kernels.bind_backward(xp, op, [gy], [None], got, [got_dx], [])
        assert back is not None
        back(xp, True)
    for a, b in ((got[0], y), (got[1], mask), (got_dx, dx)):
        np.testing.assert_array_equal(_host(a), _host(b))
    assert "kernels" in pool_max.status()


@needs_gpu
def test_float16_keeps_the_ops_path_and_overlapping_windows_are_not_these_kernels():
    ctx = mx.gpu(0)
    xp = backend.xp_for(ctx)
    with backend.device_scope(ctx):
        x = xp.zeros((1, 1, 8, 8), np.float16)
        out = [xp.zeros((1, 1, 4, 4), np.float16), xp.zeros((1, 1, 4, 4), np.float16)]
        assert kernels.bind_forward(xp, _op(CASES[0][1]), [x], [], out) is None
        x32 = x.astype(np.float32)
        out32 = [xp.zeros((1, 1, 3, 3), np.float32), xp.zeros((1, 1, 3, 3), np.float32)]
        overlapping = _op({"kernel": "(3, 3)", "stride": "(2, 2)"})
        # (Pooling's GPU step serves these with pool_overlap.py's kernels)
        assert pool_max.bind_forward(overlapping, xp, [x32], [], out32) is None


def captured_pool_steps(monkeypatch, checker, data, **pool_attrs) -> tuple:
    """({served: kernels in a captured training step}, {served: data gradient}) of a loss
    over one Pooling (`cudnn_off=True`) on `data`, with the kernels of `checker` serving it
    and not: the stand-in's recorded kernels."""
    from ..fake_cuda_graphs import captured_kernels
    if not hasattr(backend._cupy, "host_reads"):
        pytest.skip("counts the stand-in's recorded kernels")
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1")
    pool = mx.sym.Pooling(mx.sym.Variable("data"), name="pool", cudnn_off=True, **pool_attrs)
    sym = mx.sym.MakeLoss(mx.sym.sum(pool * pool))
    counts, grads = {}, {}
    for served in (True, False):
        if not served:
            monkeypatch.setattr(checker, "serves", lambda *args: False)
        exe = sym.simple_bind(mx.gpu(0), data=data.shape)
        exe.arg_dict["data"][:] = data
        for _ in range(3):
            exe.forward(is_train=True)
            exe.backward()
        counts[served] = captured_kernels(exe)
        grads[served] = exe.grad_dict["data"].asnumpy()
    return counts, grads


@needs_gpu
def test_a_lenet_pool_is_one_kernel_each_way(monkeypatch):
    """Where cuDNN does not pool (the frontend path, MINIMOD_CUDNN=0, or here
    `cudnn_off=True`), a captured step of a 2x2/2 max pool holds one kernel forward and one
    backward: the op's path takes over a dozen more."""
    counts, grads = captured_pool_steps(monkeypatch, pool_max.WINDOW_MAX,
                                        _data((4, 3, 8, 8), np.float32), pool_type="max",
                                        kernel=(2, 2), stride=(2, 2))
    np.testing.assert_array_equal(grads[True], grads[False])
    assert counts[False] - counts[True] >= 10, counts
