"""getnnz, edge_id and retain (minimod/ops/sparse_structure.py, ndarray/sparse/structure.py)
against MXNet 1.9.1's results (tests/data/sparse_structure), and what minimod adds: axis=0,
dense inputs, (u, v) outside the matrix, and retain's gradient in a training graph."""
import os

import numpy as np
import pytest

import minimod as mx

from ..data.sparse_structure.cases import run

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "sparse_structure",
                              "structure_golden.npz"))
GOT = {}


@pytest.mark.parametrize("key", sorted(GOLDEN.files))
def test_results_match_mxnet(key):
    if not GOT:
        GOT.update(run(mx))
    assert GOT[key].dtype == GOLDEN[key].dtype, key
    np.testing.assert_array_equal(GOT[key], GOLDEN[key], err_msg=key)


def _csr():
    return mx.nd.sparse.csr_matrix((np.array([1, 0, 3, 4], np.float32), [1, 0, 2, 2],
                                    [0, 1, 3, 3, 4]), shape=(4, 3))


def test_getnnz_per_column_and_on_dense_arrays():
    assert mx.nd.contrib.getnnz(_csr(), axis=0).asnumpy().tolist() == [1, 1, 2]
    dense = mx.nd.array([[0, 1, 0], [2, 0, 3]])
    assert mx.nd.contrib.getnnz(dense).asnumpy().tolist() == [3]
    assert mx.nd.contrib.getnnz(dense, axis=0).asnumpy().tolist() == [1, 1, 1]
    assert mx.nd.contrib.getnnz(dense, axis=1).dtype == np.int64
    with pytest.raises(ValueError, match="axis must be None, 0 or 1"):
        mx.nd.contrib.getnnz(_csr(), axis=2)
    with pytest.raises(mx.MXNetError, match="axis must be None, 0 or 1"):
        mx.sym.contrib.getnnz(mx.sym.var("x"), axis=3)


def test_edge_id_outside_the_matrix_is_minus_one_and_shapes_are_checked():
    u, v = mx.nd.array([9, -1, 0]), mx.nd.array([0, 1, 7])
    assert mx.nd.contrib.edge_id(_csr(), u, v).asnumpy().tolist() == [-1, -1, -1]
    dense = mx.nd.array([[0, 5], [6, 0]])
    assert mx.nd.contrib.edge_id(dense, mx.nd.array([0, 1, 1, 5]),
                                 mx.nd.array([1, 0, 1, 0])).asnumpy().tolist() == [5, 6, -1, -1]
    with pytest.raises(mx.MXNetError, match=r"u \(2,\) and v \(3,\)"):
        mx.nd.contrib.edge_id(dense, mx.nd.array([0, 1]), mx.nd.array([0, 1, 1]))
    with pytest.raises(ValueError, match="1-D of one length"):
        mx.nd.contrib.edge_id(_csr(), mx.nd.array([[0]]), mx.nd.array([[1]]))


def test_retain_in_a_training_graph_passes_the_gradient_to_the_kept_rows_only():
    net = mx.sym.sparse.retain(mx.sym.var("x"), mx.sym.var("i")) * 2
    exe = net.simple_bind(mx.cpu(), x=(4, 2), i=(3,), grad_req={"x": "write", "i": "null"})
    data = np.arange(8, dtype=np.float32).reshape(4, 2) + 1
    data[1, 0] = np.nan  # a dropped row's NaN does not leak into the result
    exe.arg_dict["x"][:] = data
    exe.arg_dict["i"][:] = mx.nd.array([2, 0, 7])  # 7: outside, names no row
    out = exe.forward(is_train=True)[0].asnumpy()
    np.testing.assert_array_equal(out, [[2, 4], [0, 0], [10, 12], [0, 0]])
    exe.backward(mx.nd.ones((4, 2)))
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), [[2, 2], [0, 0], [2, 2], [0, 0]])
    assert mx.sym.sparse.retain(mx.sym.var("x"), mx.sym.var("i")).tojson().count(
        '"_sparse_retain"') == 1
    assert "retain" in dir(mx.sym.sparse)


def test_every_device_gives_the_cpu_results(ctx):
    csr = _csr().as_in_context(ctx)
    u, v = mx.nd.array([0, 1, 1, 3, 9], ctx=ctx), mx.nd.array([1, 0, 1, 2, 0], ctx=ctx)
    assert mx.nd.contrib.edge_id(csr, u, v).asnumpy().tolist() == [1, 0, -1, 4, -1]
    for axis, want in ((None, [4]), (0, [1, 1, 2]), (1, [1, 2, 0, 1])):
        assert mx.nd.contrib.getnnz(csr, axis=axis).asnumpy().tolist() == want
    dense = csr.tostype("default")
    assert mx.nd.contrib.edge_id(dense, u, v).asnumpy().tolist() == [1, -1, -1, 4, -1]
    assert mx.nd.contrib.getnnz(dense, axis=1).asnumpy().tolist() == [1, 1, 0, 1]
    kept = mx.nd.sparse.retain(dense.tostype("row_sparse"), mx.nd.array([3, 0], ctx=ctx))
    assert kept.asnumpy().tolist() == [[0, 1, 0], [0, 0, 0], [0, 0, 0], [0, 0, 4]]
    retained = mx.nd._internal._sparse_retain(dense, mx.nd.array([3, 0], ctx=ctx))
    assert retained.context == ctx and retained.asnumpy().tolist() == kept.asnumpy().tolist()
