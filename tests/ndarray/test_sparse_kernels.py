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
