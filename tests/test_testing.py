"""minimod.test_utils (also `minimod.testing`): the checks users run on their own graphs catch
what they should."""
import numpy as np
import pytest

import minimod as mx
from minimod import test_utils as testing
from minimod.ops.registry import get_op_class


def _net():
    x = mx.sym.Variable("x")
    w = mx.sym.Variable("w")
    return mx.sym.tanh(mx.sym.dot(x, w)) * 2


def test_numeric_gradient_passes_for_a_correct_graph():
    rng = np.random.RandomState(0)
    testing.check_numeric_gradient(_net(), {"x": rng.rand(3, 4), "w": rng.rand(4, 2)})


def test_numeric_gradient_catches_a_wrong_gradient(monkeypatch):
    op_cls = get_op_class("tanh")
    original = op_cls.backward

    def wrong(self, xp, out_grads, inputs, outputs, in_grads, aux):
        original(self, xp, out_grads, inputs, outputs, in_grads, aux)
        in_grads[0] *= 1.5
    monkeypatch.setattr(op_cls, "backward", wrong)
    rng = np.random.RandomState(0)
    with pytest.raises(AssertionError):
        testing.check_numeric_gradient(_net(), {"x": rng.rand(3, 4), "w": rng.rand(4, 2)})


def test_symbolic_forward_and_backward():
    x, w = np.arange(6.0).reshape(2, 3) / 10, np.ones((3, 2)) / 3
    y = np.tanh(x @ w) * 2
    testing.check_symbolic_forward(_net(), {"x": x, "w": w}, [y], rtol=1e-5)
    head = np.ones((2, 2))
    dz = head * 2 * (1 - np.tanh(x @ w) ** 2)
    testing.check_symbolic_backward(_net(), {"x": x, "w": w}, [head],
                                    {"x": dz @ w.T, "w": x.T @ dz}, rtol=1e-5)
    with pytest.raises(AssertionError):
        testing.check_symbolic_forward(_net(), {"x": x, "w": w}, [y + 0.1])


def test_consistency_over_contexts_and_dtypes():
    sym = _net()
    truth = testing.check_consistency(sym, [
        {"ctx": mx.cpu(0), "x": (3, 4), "w": (4, 2), "type_dict": {"x": np.float64,
                                                                     "w": np.float64}},
        {"ctx": mx.cpu(1), "x": (3, 4), "w": (4, 2)},
    ])
    # the reference is the float64 entry: its output and both gradients
    out_name = sym.list_outputs()[0]
    assert truth[out_name].shape == (3, 2) and truth[out_name].dtype == np.float64
    assert truth["w"].shape == (4, 2)


def test_create_sparse_array_helpers():
    np.random.seed(3)
    rsp = mx.test_utils.create_sparse_array((6, 2), "row_sparse", rsp_indices=[4, 0, 2],
                                            data_init=7.0)
    assert rsp.stype == "row_sparse" and rsp.indices.asnumpy().tolist() == [0, 2, 4]
    assert np.all(rsp.data.asnumpy() == 7)
    empty = mx.test_utils.create_sparse_array_zd((6, 2), "row_sparse", density=0.9)
    assert empty.indices.shape == (0,) and empty.shape == (6, 2)
    csr = mx.test_utils.create_sparse_array_zd((50, 40), "csr", density=0.3, dtype="float64")
    assert csr.stype == "csr" and csr.dtype == np.float64
    assert 0.2 < csr.indices.shape[0] / 2000 < 0.4
    with pytest.raises(AssertionError, match="Unknown storage type"):
        mx.test_utils.create_sparse_array((2, 2), "dense")
    with pytest.raises(AssertionError, match="3 row indices for 2 rows"):
        mx.test_utils.create_sparse_array_zd((2, 2), "row_sparse", 0, rsp_indices=[0, 1, 1])


def test_shuffle_csr_column_indices_permutes_within_rows():
    class Holder:
        indptr = np.array([0, 4, 4, 7])
        indices = np.arange(7)

    np.random.seed(1)
    holder = Holder()
    holder.indices = np.arange(7)
    mx.test_utils.shuffle_csr_column_indices(holder)
    assert sorted(holder.indices[:4]) == [0, 1, 2, 3]
    assert sorted(holder.indices[4:]) == [4, 5, 6]
    assert holder.indices.tolist() != list(range(7))
