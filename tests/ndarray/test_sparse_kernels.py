"""mx.nd.sparse.sgd_update, sgd_mom_update, adam_update and ftrl_update on every storage mix
of weight, gradient and states (minimod/ndarray/update_rows.py) against MXNet 1.9.1's numbers
(tests/data/sparse_kernels): lazy on the gradient's rows exactly where MXNet's kernels are."""
import os

import numpy as np
import pytest

import minimod as mx

from ..data.sparse_kernels.cases import run

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "sparse_kernels",
                              "sparse_kernels_golden.npz"))
GOT = {}


def _got():
    if not GOT:
        GOT.update(run(mx))
    return GOT


@pytest.mark.parametrize("key", sorted(GOLDEN.files))
def test_kernel_results_match_mxnet(key):
    got = _got()[key]
    if key.endswith("/stype"):
        assert str(got) == str(GOLDEN[key])
    else:
        np.testing.assert_allclose(got, GOLDEN[key], rtol=1e-6, atol=1e-7, err_msg=key)


def test_the_lazy_cases_leave_the_other_rows_alone():
    got = _got()
    lazy = got["sgd_mom_update/default-row_sparse-default/True/weight"]
    dense = got["sgd_mom_update/default-row_sparse-default/False/weight"]
    untouched = [0, 2, 4]  # no row of the gradient: weight decay moves them in the dense one
    assert not np.allclose(lazy[untouched], dense[untouched])
    first = mx.nd.array(np.random.RandomState(3).uniform(-1, 1, (5, 3)).astype(np.float32))
    np.testing.assert_array_equal(lazy[untouched], first.asnumpy()[untouched])


@pytest.mark.parametrize("grad_stype, wd", [("default", 0.0), ("row_sparse", 0.1)])
def test_sparse_adagrad_takes_only_what_mxnets_kernel_takes(grad_stype, wd):
    weight, history = mx.nd.ones((3, 2)), mx.nd.zeros((3, 2))
    grad = mx.nd.ones((3, 2)).tostype(grad_stype)
    with pytest.raises(mx.MXNetError, match="row_sparse gradient and wd=0"):
        mx.nd.sparse.adagrad_update(weight, grad, history, lr=0.1, wd=wd, out=weight)


def test_group_adagrad_kernel_on_a_dense_gradient_is_the_optimizers_step():
    """MXNet 1.9.1 has no CPU kernel for a dense gradient; minimod's updates every row, as the
    GroupAdaGrad optimizer does (whose steps match MXNet's, tests/test_optimizer.py)."""
    rng = np.random.RandomState(5)
    w0, g = rng.uniform(-1, 1, (4, 3)), rng.uniform(-2, 2, (4, 3))
    weight, history = mx.nd.array(w0), mx.nd.zeros((4, 1))
    opt = mx.optimizer.create("groupadagrad", learning_rate=0.1, rescale_grad=0.5,
                              clip_gradient=0.8, eps=0.01)
    ref_w, ref_state = mx.nd.array(w0), opt.create_state(0, mx.nd.array(w0))
    for _ in range(2):
        out = mx.nd.contrib.group_adagrad_update(weight, mx.nd.array(g), history, lr=0.1,
                                                 rescale_grad=0.5, clip_gradient=0.8,
                                                 epsilon=0.01, out=weight)
        opt.update(0, ref_w, mx.nd.array(g), ref_state)
    assert out is weight
    np.testing.assert_array_equal(weight.asnumpy(), ref_w.asnumpy())
    np.testing.assert_array_equal(history.asnumpy(), ref_state.asnumpy())
    assert not np.allclose(weight.asnumpy(), w0)


def test_group_adagrad_kernel_without_out_leaves_the_weight_and_names_bad_shapes():
    weight, history = mx.nd.ones((3, 2)), mx.nd.zeros((3, 1))
    new = mx.nd.contrib.group_adagrad_update(weight, mx.nd.ones((3, 2)), history, lr=0.1)
    assert np.all(weight.asnumpy() == 1) and np.all(new.asnumpy() < 1)
    assert np.all(history.asnumpy() > 0)
    with pytest.raises(mx.MXNetError, match=r"history has shape \(3, 2\).*\(3, 1\)"):
        mx.nd.contrib.group_adagrad_update(weight, weight, mx.nd.zeros((3, 2)), lr=0.1)
    with pytest.raises(mx.MXNetError, match="at least 2 axes"):
        mx.nd.contrib.group_adagrad_update(mx.nd.ones(3), mx.nd.ones(3), history, lr=0.1)
