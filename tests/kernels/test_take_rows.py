"""`take` along axis 0 in 'clip' mode on CuPy through Embedding's kernels
(minimod/kernels/take_rows.py): the rows the op takes, and the gradient of `a` as NumPy's
add.at sums it, bit for bit and the same on every run.

The row mapping is checked here against the op's on the host; the bound paths run on a GPU or
the CuPy stand-in (tests/test_fake_gpu.py runs this file on it), whose RawModule runs the
kernels' host reference.
"""
import numpy as np
import pytest

import minimod as mx
from minimod import backend, kernels
from minimod.kernels import embedding
from minimod.ops.indexing import _fix_indices
from minimod.ops.registry import create_op

from ..conftest import needs_gpu

INDEX_DTYPES = [np.float32, np.float64, np.int32, np.int64]
SHAPES = [(9,), (9, 4), (9, 2, 3)]


def _indices(dtype, shape=(6, 35), rows=9, seed=0):
    """Repeated rows, indices off both ends, fractions (and a NaN for floats)."""
    rng = np.random.default_rng(seed)
    data = rng.integers(-3, rows + 3, shape).astype(dtype)
    if np.dtype(dtype).kind == "f":
        data += 0.75
        data.reshape(-1)[5] = np.nan
    return data


@pytest.mark.parametrize("dtype", INDEX_DTYPES)
def test_the_kernels_rows_are_the_ops_rows(dtype):
    data = _indices(dtype)
    with np.errstate(invalid="ignore"):
        want = _fix_indices(np, data, 9, "clip").reshape(-1)
    np.testing.assert_array_equal(embedding.host_rows(data, 8), want)
    assert want.min() == 0 and want.max() == 8


def _op(**attrs):
    return create_op("take", {k: str(v) for k, v in attrs.items()})


def test_numpy_keeps_the_ops_path():
    op, a, idx = _op(), np.zeros((9, 4), np.float32), _indices(np.float32)
    y = np.zeros(idx.shape + (4,), np.float32)
    assert kernels.bind_forward(np, op, [a, idx], [], [y]) is None
    assert kernels.bind_backward(np, op, [y], [a, idx], [y], [a.copy(), None], []) is None


def _on_gpu(op, a, idx, gy, data_grad=False):
    """(y, da, d_indices) from the bound GPU steps, on the host; None where not served."""
    ctx = mx.gpu(0)
    xp = backend.xp_for(ctx)
    with backend.device_scope(ctx):
        a_dev, idx_dev, gy_dev = xp.asarray(a), xp.asarray(idx), xp.asarray(gy)
        y = xp.full(gy.shape, 7, a.dtype)
        da = xp.full(a.shape, 7, a.dtype)
        dind = xp.full(idx.shape, 7, idx.dtype) if data_grad else None
        fwd = kernels.bind_forward(xp, op, [a_dev, idx_dev], [], [y])
        bwd = kernels.bind_backward(xp, op, [gy_dev], [a_dev, idx_dev], [y], [da, dind], [])
        if fwd is None or bwd is None:
            return None
        for _ in range(2):  # a step runs again on the same arrays
            fwd(xp, True)
            bwd(xp, True)
        return (backend.asnumpy(y), backend.asnumpy(da),
                None if dind is None else backend.asnumpy(dind))


def _on_cpu(op, a, idx, gy):
    y, da = np.empty(gy.shape, a.dtype), np.empty(a.shape, a.dtype)
    with np.errstate(invalid="ignore"):
        op.forward(np, [a, idx], [], [y], True)
        op.backward(np, [gy], [a, idx], [y], [da, None], [])
    return y, da


@needs_gpu
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_bound_take_gives_the_cpus_rows_and_sums(index_dtype, dtype, shape):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape).astype(dtype)
    idx = _indices(index_dtype, shape=(20, 35))  # 700 positions: the sort's tiles
    gy = rng.standard_normal(idx.shape + shape[1:]).astype(dtype)
    op = _op(axis=-len(shape))  # axis 0, spelled from the end
    got = _on_gpu(op, a, idx, gy, data_grad=True)
    assert got is not None, embedding.status()
    want_y, want_da = _on_cpu(op, a, idx, gy)
    np.testing.assert_array_equal(got[0], want_y)
    np.testing.assert_array_equal(got[1], want_da)
    assert (got[2] == 0).all()


@needs_gpu
def test_other_modes_axes_and_dtypes_keep_the_ops_path(monkeypatch):
    a = np.zeros((9, 4), np.float32)
    idx = _indices(np.float32)
    gy = np.ones(idx.shape + (4,), np.float32)
    assert _on_gpu(_op(mode="wrap"), a, idx, gy) is None
    assert _on_gpu(_op(mode="raise"), a, idx.clip(0, 8), gy) is None
    gy1 = np.ones((9,) + idx.shape, np.float32)
    assert _on_gpu(_op(axis=1), a, idx, gy1) is None
    assert _on_gpu(_op(), a.astype(np.float16), idx, gy.astype(np.float16)) is None
    monkeypatch.setattr(embedding, "MAX_POSITIONS", idx.size - 1)
    assert _on_gpu(_op(), a, idx, gy) is None


@needs_gpu
def test_a_training_step_with_take_matches_the_cpu_bit_for_bit(monkeypatch):
    """A lookup table through `take` with repeated indices, each position's gradient row a
    different one: the GPU's gradient is the CPU's exactly, where the op's atomic adds would
    be free to add a row's terms in another order on every run."""
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1")
    table = mx.sym.Variable("table")
    picked = mx.sym.take(table, mx.sym.Variable("idx"))
    sym = mx.sym.MakeLoss(mx.sym.sum(picked * mx.sym.Variable("coef")))
    rng = np.random.default_rng(5)
    idx = rng.integers(0, 12, (16, 35)).astype(np.float32)
    weight = rng.standard_normal((50, 8)).astype(np.float32)
    coef = rng.standard_normal((16, 35, 8)).astype(np.float32)
    grads = {}
    for ctx in (mx.cpu(), mx.gpu(0)):
        exe = sym.simple_bind(ctx, table=weight.shape, idx=idx.shape, coef=coef.shape,
                              grad_req={"table": "write", "idx": "null", "coef": "null"})
        exe.arg_dict["idx"][:] = idx
        exe.arg_dict["table"][:] = weight
        exe.arg_dict["coef"][:] = coef
        for _ in range(3):
            exe.forward(is_train=True)
            exe.backward()
        grads[str(ctx)] = exe.grad_dict["table"].asnumpy()
    np.testing.assert_array_equal(grads["gpu(0)"], grads["cpu(0)"])
    assert (grads["gpu(0)"][12:] == 0).all() and (grads["gpu(0)"][:12] != 0).all()
