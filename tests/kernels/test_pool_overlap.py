"""Max, average and sum pooling over overlapping windows as one kernel each way on CuPy
(minimod/kernels/pool_overlap.py, bound through minimod/kernels/pool_gpu.py).

The source compiles with NVRTC here, and its host reference, written the kernels' way
(strictly greater replaces, the gradient gathered per input element), is held to the op's
own NumPy path bit for bit. The binding runs on a GPU or the CuPy stand-in
(tests/test_fake_gpu.py runs this file on it), whose RawModule runs the reference.
"""
import numpy as np
import pytest

import minimod as mx
from minimod import backend, kernels
from minimod.kernels import pool_gpu, pool_overlap
from minimod.ops.registry import create_op

from ..conftest import needs_gpu
from ..ops.test_fused_kernels import _compile, _nvrtc
from .test_pool_max import captured_pool_steps

#: (data shape, Pooling attributes): overlapping windows, with padding, 'full' windows past
#: the end, count_include_pad off, windows overlapping along one dim only, 1-D and 3-D
CASES = [
    ((2, 3, 9, 8), {"kernel": "(3, 3)", "stride": "(2, 2)"}),
    ((1, 2, 8, 7), {"kernel": "(3, 3)", "stride": "(2, 2)", "pad": "(1, 1)"}),
    ((1, 2, 7, 6), {"kernel": "(3, 3)", "stride": "(2, 1)", "pad": "(1, 1)",
                    "pooling_convention": "full"}),
    ((2, 2, 6, 6), {"kernel": "(3, 3)", "pad": "(1, 1)", "count_include_pad": "False"}),
    ((1, 2, 6, 8), {"kernel": "(2, 4)", "stride": "(2, 2)"}),
    ((2, 2, 11), {"kernel": "(4,)", "stride": "(3,)", "pad": "(2,)"}),
    ((1, 2, 4, 5, 5), {"kernel": "(2, 3, 3)", "stride": "(1, 2, 2)"}),
]
POOLS = ["max", "avg", "sum"]


def _op(attrs, pool):
    return create_op("Pooling", dict(attrs, pool_type=pool))


def _data(shape, dtype, seed=0):
    x = np.random.default_rng(seed).integers(-3, 4, shape).astype(dtype)  # ties
    x.reshape(-1)[[0, 7]] = np.nan  # a first entry of a window, and a later one
    return x


def test_a_nan_makes_its_windows_nan_on_both_paths():
    """Max pooling propagates a NaN whether the windows overlap or not, and sends a NaN
    window's gradient to its last offset on both paths (MXNet 1.9.1 skips NaN entries;
    docs/compatibility.md)."""
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    x[0, 0, 0, 1] = np.nan  # the second entry of the first windows
    for kernel, stride in (((2, 2), (2, 2)), ((3, 3), (1, 1)), ((2, 2), (1, 1))):
        op = _op({"kernel": str(kernel), "stride": str(stride)}, "max")
        (y, mask), gy, dx = _reference(np, op, x)
        rows, cols = np.indices(y.shape[2:])
        holds = ((rows * stride[0] <= 0) & (0 < rows * stride[0] + kernel[0])
                 & (cols * stride[1] <= 1) & (1 < cols * stride[1] + kernel[1]))
        np.testing.assert_array_equal(np.isnan(y[0, 0]), holds)
        assert (mask[0, 0][holds] == np.prod(kernel) - 1).all()
        if stride == kernel:  # one window holds it: its gradient lands on (1, 1)
            assert dx[0, 0, 1, 1] == gy[0, 0, 0, 0] and dx[0, 0, 0, 1] == 0


def _reference(xp, op, x, gy_seed=1):
    """The op's own forward outputs and backward on `xp`."""
    out_shape = tuple(op.infer_shape([x.shape], [None, None])[1][0])
    out = [xp.empty(out_shape, x.dtype) for _ in op.outputs()]
    op.forward(xp, [x], [], out, True)
    gy = xp.asarray(np.random.default_rng(gy_seed).standard_normal(out_shape).astype(x.dtype))
    dx = xp.empty(x.shape, x.dtype)
    op.backward(xp, [gy], [x], out, [dx], [])
    return out, gy, dx


@pytest.mark.skipif(_nvrtc() is None, reason="NVRTC not installed (pip install -e '.[nvrtc]')")
def test_source_compiles_with_nvrtc():
    status, log = _compile(_nvrtc(), pool_overlap.SOURCE, "pool_overlap.cu")
    assert status == 0, log


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("pool", POOLS)
@pytest.mark.parametrize("shape,attrs", CASES)
def test_host_reference_is_the_ops_own_path(shape, attrs, pool, dtype):
    op = _op(attrs, pool)
    x = _data(shape, dtype)
    want, gy, dx = _reference(np, op, x)
    dims = pool_overlap.geometry(op, shape)
    assert dims is not None
    got = [np.full_like(w, 7) for w in want]
    got_dx = np.full_like(dx, 7)
    if pool == "max":
        pool_overlap.host_forward("max", x, got[0], got[1], dims)
        pool_overlap.host_backward("max", gy, got[1], got_dx, dims)
    else:
        div = pool_overlap.divisor(np, op, shape, dtype)
        pool_overlap.host_forward("sum", x, div, got[0], dims)
        pool_overlap.host_backward("sum", gy, div, got_dx, dims)
    for a, b in list(zip(got, want)) + [(got_dx, dx)]:
        np.testing.assert_array_equal(a, b)
    assert np.isfinite(want[0]).any() and np.isnan(want[0]).any()
    if pool == "max":  # later maxima; a window holding a NaN is NaN, its mask the last offset
        assert (want[1][np.isfinite(want[0])] > 0).any()
        size = dims["kd"] * dims["kh"] * dims["kw"]
        assert (want[1][np.isnan(want[0])] == size - 1).all()


def test_the_divisor_counts_what_the_op_counts():
    op = _op({"kernel": "(3, 3)", "pad": "(1, 1)", "count_include_pad": "False"}, "avg")
    div = pool_overlap.divisor(np, op, (1, 1, 4, 4), np.float32)
    assert div.shape == (4, 4) and div.flags.c_contiguous
    assert div[0, 0] == 4 and div[0, 1] == 6 and div[1, 1] == 9  # corner, edge, inside
    ones = pool_overlap.divisor(np, _op({"kernel": "(3, 3)"}, "sum"), (1, 1, 5, 5), np.float64)
    assert ones.shape == (3, 3) and (ones == 1).all()


def test_disjoint_windows_and_lp_pools_are_not_served():
    for pool in POOLS:  # disjoint windows: pool_max's kernels or the op's one panel
        assert pool_overlap.geometry(_op({"kernel": "(2, 2)", "stride": "(2, 2)"}, pool),
                                     (1, 1, 8, 8)) is None
    lp = create_op("Pooling", {"kernel": "(3, 3)", "stride": "(2, 2)", "pool_type": "lp",
                               "p_value": "2"})
    assert pool_overlap.geometry(lp, (1, 1, 8, 8)) is None
    assert pool_overlap.geometry(_op({"kernel": "(3, 3)", "stride": "(2, 2)"}, "avg"),
                                 (1, 1, 8, 8)) is not None


def test_numpy_keeps_the_ops_path():
    op = _op(CASES[0][1], "avg")
    x = _data(CASES[0][0], np.float32)
    assert kernels.bind_forward(np, op, [x], [], [np.empty((2, 3, 4, 3), np.float32)]) is None


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("pool", POOLS)
@pytest.mark.parametrize("shape,attrs", CASES)
def test_bound_kernels_give_the_ops_numbers(shape, attrs, pool, dtype):
    ctx = mx.gpu(0)
    xp = backend.xp_for(ctx)
    op = _op(attrs, pool)
    with backend.device_scope(ctx):
        x = xp.asarray(_data(shape, dtype))
        want, gy, dx = _reference(xp, op, x)
        got = [xp.full(w.shape, 7, dtype) for w in want]
        run = kernels.bind_forward(xp, op, [x], [], got)
        assert run is not None, pool_gpu.status()
        run(xp, True)
        got_dx = xp.full(x.shape, 7, dtype)
        back = kernels.bind_backward(xp, op, [gy], [None], got + [None] * (2 - len(got)),
                                     [got_dx], [])
        assert back is not None
        back(xp, True)
    for a, b in list(zip(got, want)) + [(got_dx, dx)]:
        np.testing.assert_array_equal(backend.asnumpy(a), backend.asnumpy(b))
    assert "kernels" in pool_overlap.status()


@needs_gpu
def test_a_kernel_that_disagrees_keeps_the_ops_path(monkeypatch):
    """The self-check holds each kernel's numbers to the op's: a wrong gradient (here the
    stand-in's reference, made wrong) is caught and named, and the op's path serves."""
    if not hasattr(backend._cupy, "host_reads"):
        pytest.skip("makes the stand-in's kernel wrong")
    checker = pool_overlap.WindowPool()
    xp = backend.xp_for(mx.gpu(0))
    right = pool_overlap.host_backward

    def wrong(kind, gy, aux, dx, dims):
        right(kind, gy, aux, dx, dims)
        dx.reshape(-1)[-1] += 1
    monkeypatch.setattr(pool_overlap, "host_backward", wrong)
    assert not checker.serves(xp, 0, np.float32)
    assert "gradient" in checker.status() and "float32" in checker.status()
    monkeypatch.setattr(pool_overlap, "host_backward", right)
    assert checker.serves(xp, 0, np.float64)
    assert not checker.serves(xp, 0, np.float16)  # no kernel for half


@needs_gpu
@pytest.mark.parametrize("pool,kernel,stride,pad", [("max", (3, 3), (2, 2), (1, 1)),
                                                    ("avg", (3, 3), (1, 1), (1, 1))])
def test_an_overlapping_pool_is_one_kernel_each_way(monkeypatch, pool, kernel, stride, pad):
    """Where cuDNN does not pool (here `cudnn_off=True`), a captured step of ResNet's 3x3/2
    max pool, or of an Inception 3x3/1 average pool, holds one kernel forward and one
    backward; the op's loop over the nine offsets takes dozens more. The gradients agree."""
    counts, grads = captured_pool_steps(monkeypatch, pool_overlap.WINDOW_POOL,
                                        _data((4, 3, 9, 9), np.float32), pool_type=pool,
                                        kernel=kernel, stride=stride, pad=pad)
    np.testing.assert_array_equal(grads[True], grads[False])
    assert counts[False] - counts[True] >= 40, counts
