"""Embedding on CuPy (minimod/kernels/embedding.py): the lookup as one kernel, and the
weight gradient as a counting sort and ordered row sums: deterministic, and NumPy's add.at
sums bit for bit.

The source compiles with NVRTC here, and its host reference is held to the op's NumPy path.
The binding runs on a GPU or the CuPy stand-in (tests/test_fake_gpu.py runs this file on it),
whose RawModule runs the reference.
"""
import numpy as np
import pytest

import minimod as mx
from minimod import backend, kernels
from minimod.kernels import embedding
from minimod.ops.registry import create_op

from ..conftest import needs_gpu
from ..ops.test_fused_kernels import _compile, _nvrtc

DATA_DTYPES = [np.float32, np.float64, np.int32, np.int64]


def _case(data_dtype, grad_dtype, shape=(6, 35), dim=9, cols=4, seed=0):
    """(op, data, output gradient): repeated rows, indices off both ends, fractions."""
    rng = np.random.default_rng(seed)
    data = rng.integers(-2, dim + 2, shape).astype(data_dtype)
    if np.dtype(data_dtype).kind == "f":
        data += 0.75
    gy = rng.standard_normal(shape + (cols,)).astype(grad_dtype)
    op = create_op("Embedding", {"input_dim": str(dim), "output_dim": str(cols)})
    return op, data, gy


def _op_grad(op, data, gy):
    dw = np.full((op.attrs.input_dim, op.attrs.output_dim), 7, gy.dtype)
    op.backward(np, [gy], [data], [], [None, dw], [])
    return dw


@pytest.mark.skipif(_nvrtc() is None, reason="NVRTC not installed (pip install -e '.[nvrtc]')")
def test_source_compiles_with_nvrtc():
    status, log = _compile(_nvrtc(), embedding.SOURCE, "embedding.cu")
    assert status == 0, log


@pytest.mark.parametrize("grad_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("data_dtype", DATA_DTYPES)
def test_host_reference_is_the_ops_add_at(data_dtype, grad_dtype):
    op, data, gy = _case(data_dtype, grad_dtype)
    n, last = data.size, op.attrs.input_dim - 1
    order = np.full(n, -1, np.int64)
    embedding.host_order(data, order, n, last)
    rows = embedding.host_rows(data, last)
    assert sorted(order) == list(range(n))  # a permutation
    keys = list(zip(rows[order], order))
    assert keys == sorted(keys)  # by row, then by position
    dw = np.zeros((op.attrs.input_dim, op.attrs.output_dim), grad_dtype)
    embedding.host_row_sums(data, order, gy, dw, n, op.attrs.output_dim, last)
    np.testing.assert_array_equal(dw, _op_grad(op, data, gy))
    assert (np.bincount(rows) > 2).any() and rows.min() == 0 and rows.max() == last


def _op_rows(op, data, table):
    y = np.full(data.shape + (op.attrs.output_dim,), 7, table.dtype)
    op.forward(np, [data, table], [], [y], True)
    return y


@pytest.mark.parametrize("table_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("data_dtype", DATA_DTYPES)
def test_host_lookup_is_the_ops_forward(data_dtype, table_dtype):
    op, data, _ = _case(data_dtype, table_dtype)
    table = np.random.default_rng(4).standard_normal((9, 4)).astype(table_dtype)
    y = np.full(data.shape + (4,), 7, table_dtype)
    embedding.host_lookup(data, table, y, data.size, 4, 8)
    np.testing.assert_array_equal(y, _op_rows(op, data, table))


def test_rows_past_two_to_the_24_stay_in_the_table():
    """float32 cannot hold every row number of a table over 2^24 rows: the clipped index
    may round past the last row, which the kernels clip again (the op's take clips it)."""
    last = 2 ** 24 + 3  # float32(last) is last + 1
    data = np.array([1e30, last, 2 ** 24 + 1], np.float32)
    assert embedding.host_rows(data, last).tolist() == [last, last, 2 ** 24]
    assert "return row > last ? last : row;" in embedding.SOURCE
    assert "tile[%d]" % embedding.THREADS in embedding.SOURCE  # the sort's tile is a block


def test_a_nan_index_is_row_zero():
    rows = embedding.host_rows(np.array([np.nan, -np.inf, np.inf, 2.9], np.float32), 5)
    assert rows.tolist() == [0, 0, 5, 2]


def test_numpy_keeps_the_ops_path():
    op, data, gy = _case(np.float32, np.float32)
    dw = np.zeros((9, 4), np.float32)
    assert kernels.bind_backward(np, op, [gy], [data], [], [None, dw], []) is None


def _bound_grad(op, data, gy, data_grad=False):
    """dw (and the data's gradient) from the bound GPU step, on host arrays; None when the
    kernels do not serve."""
    ctx = mx.gpu(0)
    xp = backend.xp_for(ctx)
    with backend.device_scope(ctx):
        x, g = xp.asarray(data), xp.asarray(gy)
        dw = xp.full((op.attrs.input_dim, op.attrs.output_dim), 7, gy.dtype)
        dx = xp.full(data.shape, 7, data.dtype) if data_grad else None
        run = kernels.bind_backward(xp, op, [g], [x], [], [dx, dw], [])
        if run is None:
            return None
        for _ in range(2):  # a step runs again on the same arrays
            run(xp, True)
        return backend.asnumpy(dw), None if dx is None else backend.asnumpy(dx)


@needs_gpu
@pytest.mark.parametrize("grad_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("data_dtype", DATA_DTYPES)
def test_bound_kernels_give_numpys_sums(data_dtype, grad_dtype):
    op, data, gy = _case(data_dtype, grad_dtype, shape=(20, 35))  # 700 positions: 3 tiles
    dw, dx = _bound_grad(op, data, gy, data_grad=True)
    np.testing.assert_array_equal(dw, _op_grad(op, data, gy))
    assert (dx == 0).all()
    assert "kernels" in embedding.status()


@needs_gpu
@pytest.mark.parametrize("table_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("data_dtype", DATA_DTYPES)
def test_bound_lookup_gives_the_ops_rows(data_dtype, table_dtype):
    op, data, _ = _case(data_dtype, table_dtype)
    table = np.random.default_rng(4).standard_normal((9, 4)).astype(table_dtype)
    ctx = mx.gpu(0)
    xp = backend.xp_for(ctx)
    with backend.device_scope(ctx):
        y = xp.full(data.shape + (4,), 7, table_dtype)
        run = kernels.bind_forward(xp, op, [xp.asarray(data), xp.asarray(table)], [], [y])
        assert run is not None, embedding.status()
        run(xp, True)
    np.testing.assert_array_equal(backend.asnumpy(y), _op_rows(op, data, table))


@needs_gpu
def test_too_many_positions_and_float16_keep_the_ops_path(monkeypatch):
    op, data, gy = _case(np.float32, np.float32)
    monkeypatch.setattr(embedding, "MAX_POSITIONS", data.size - 1)
    assert _bound_grad(op, data, gy) is None
    monkeypatch.undo()
    assert _bound_grad(op, data, gy.astype(np.float16)) is None


@needs_gpu
def test_a_kernel_that_disagrees_keeps_the_ops_path(monkeypatch):
    if not hasattr(backend._cupy, "host_reads"):
        pytest.skip("makes the stand-in's kernel wrong")
    checker = embedding.TableKernels()
    xp = backend.xp_for(mx.gpu(0))
    right = embedding.host_order

    def reversed_order(data, order, n, last):  # each row's positions backwards
        right(data, order, n, last)
        rows = embedding.host_rows(data, last)[order[:n]]
        order[:n] = order[:n][np.lexsort((-order[:n], rows))]
    monkeypatch.setattr(embedding, "host_order", reversed_order)
    assert not checker.serves(xp, 0, np.float32)
    assert "gradient for" in checker.status() and "differ from the op's" in checker.status()
    monkeypatch.setattr(embedding, "host_order", right)
    assert checker.serves(xp, 0, np.float64)


@needs_gpu
def test_a_training_step_matches_the_cpu_bit_for_bit(monkeypatch):
    """An embedding and a loss over repeated tokens: the GPU's weight gradient (a captured
    step) is the CPU's exactly, where atomic adds would be free to differ from run to run;
    on the stand-in, the step also takes fewer kernels than with the op's scatter_add."""
    from ..fake_cuda_graphs import captured_kernels
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1")
    emb = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=50, output_dim=8, name="embed")
    sym = mx.sym.MakeLoss(mx.sym.sum(emb * emb))  # every device's exact 2 * row
    rng = np.random.default_rng(2)
    tokens = rng.integers(0, 12, (16, 35)).astype(np.float32)  # 560 positions, 12 rows
    weight = rng.standard_normal((50, 8)).astype(np.float32)
    grads, counts = {}, {}
    checked = embedding.TABLE.serves
    for ctx, served in ((mx.cpu(), None), (mx.gpu(0), False), (mx.gpu(0), True)):
        monkeypatch.setattr(embedding.TABLE, "serves",
                            checked if served else lambda *args: False)
        exe = sym.simple_bind(ctx, data=tokens.shape)
        exe.arg_dict["data"][:] = tokens
        exe.arg_dict["embed_weight"][:] = weight
        for _ in range(3):
            exe.forward(is_train=True)
            exe.backward()
        grads[served] = exe.grad_dict["embed_weight"].asnumpy()
        if served is not None and hasattr(backend._cupy, "host_reads"):
            counts[served] = captured_kernels(exe)
    np.testing.assert_array_equal(grads[True], grads[None])
    assert (grads[True][12:] == 0).all() and (grads[True][:12] != 0).all()
    if counts:
        assert counts[True] < counts[False], counts
