"""Module with a CSR data input and row_sparse weights (minimod/module/sparse_grads.py,
minimod/symbol/sparse.py): MXNet gives the right operand of `dot(csr, w)` a row-sparse
gradient on the CSR batch's stored columns, and its optimizers with lazy_update update only
those rows; Module keeps a `row_sparse` variable's parameter as a RowSparseNDArray. Every
case of tests/data/sparse_module/cases.py against MXNet 1.9.1's numbers."""
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError
from minimod.module.sparse_grads import sparse_grad_params

from ..data.sparse_module.cases import CASES, run

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "sparse_module",
                              "sparse_module_golden.npz"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_training_matches_mxnet(name):
    got = run(mx, name)
    assert sorted(got) == sorted(k for k in GOLDEN.files if k.startswith(name + "/"))
    for key, value in got.items():
        if key.endswith("/stype"):
            assert str(value) == str(GOLDEN[key]), key
        else:
            np.testing.assert_allclose(value, GOLDEN[key], rtol=1e-4, atol=1e-5,
                                       err_msg=key)


@pytest.mark.parametrize("name", ["sgd_momentum_wd", "fm"])
def test_training_on_each_device_matches_mxnet(name, ctx):
    got = run(mx, name, context=ctx)
    for key, value in got.items():
        if not key.endswith("/stype"):
            np.testing.assert_allclose(value, GOLDEN[key], rtol=1e-4, atol=1e-5, err_msg=key)


def test_the_lazy_update_leaves_untouched_rows_alone():
    """Against the same run with lazy_update=False: the rows no batch stored a value in
    keep their starting values only under the lazy update (weight decay moves them else)."""
    lazy, dense = GOLDEN["sgd_momentum_wd/w"], GOLDEN["sgd_not_lazy/w"]
    untouched = np.all(lazy == run(mx, "sgd_momentum_wd")["sgd_momentum_wd/w"], axis=1)
    assert untouched.all()
    assert not np.allclose(lazy, dense)


def _dot_net(lhs_from_x):
    x = mx.sym.var("data", stype="csr")
    w = mx.sym.var("w_weight", shape=(6, 2), stype="row_sparse")
    return mx.sym.LinearRegressionOutput(mx.sym.sparse.dot(lhs_from_x(x), w),
                                         mx.sym.var("label"))


def test_which_weights_get_row_sparse_gradients():
    assert sparse_grad_params(_dot_net(lambda x: x)) == ["w_weight"]
    x, w = mx.sym.var("data", stype="csr"), mx.sym.var("w")
    assert sparse_grad_params(mx.sym.dot(x, w, transpose_b=True)) == []
    assert sparse_grad_params(mx.sym.dot(mx.sym.var("dense_x"), w)) == []
    assert sparse_grad_params(mx.sym.dot(x, w) + mx.sym.sum(w)) == []
    # through the operators that keep a CSR input's columns, and back through scaling
    assert sparse_grad_params(mx.sym.dot(mx.sym.relu(x) * 2.0, -w / 3.0)) == ["w"]
    assert sparse_grad_params(mx.sym.dot(mx.sym.exp(x), w)) == []
    assert sparse_grad_params(mx.sym.dot(x, mx.sym.sqrt(w))) == []


def test_rows_from_a_computed_csr_operand_are_refused_with_the_fix():
    """MXNet's `dot(x + x, w)` gives w the rows of the CSR sum's columns; minimod reads the
    rows of CSR inputs and of operators that keep their columns only."""
    mod = mx.mod.Module(_dot_net(lambda x: x + x), data_names=["data"], label_names=["label"])
    mod.bind(data_shapes=[("data", (3, 6))], label_shapes=[("label", (3, 2))])
    mod.init_params(mx.init.One())
    with pytest.raises(MXNetError, match=r"'w_weight'.*'_plus\d+', which holds CSR data.*"
                                         r"lazy_update=False"):
        mod.init_optimizer(optimizer="sgd", optimizer_params=dict(momentum=0.9))
    mod.init_optimizer(optimizer="sgd", optimizer_params=dict(momentum=0.9,
                                                               lazy_update=False))


def test_row_sparse_parameters_are_initialised_with_every_row():
    mod = mx.mod.Module(_dot_net(lambda x: x), data_names=["data"], label_names=["label"])
    mod.bind(data_shapes=[("data", (3, 6))], label_shapes=[("label", (3, 2))])
    mod.init_params(mx.init.Constant(2.0))
    w = mod.get_params()[0]["w_weight"]
    assert w.stype == "row_sparse"
    np.testing.assert_array_equal(w.asnumpy(), np.full((6, 2), 2.0))
    np.testing.assert_array_equal(w.indices.asnumpy(), np.arange(6))


def test_variable_takes_an_int_shape_as_mxnet():
    b = mx.sym.var("b", shape=3)
    assert b.attr("__shape__") == "3"
    net = mx.sym.broadcast_add(mx.sym.var("x", shape=(2, 3)), b)
    assert net.infer_shape()[0] == [(2, 3), (3,)]


def _prepared_module(contexts, kvstore):
    mod = mx.mod.Module(_dot_net(lambda x: x), data_names=["data"], label_names=["label"],
                        context=contexts)
    mod.bind(data_shapes=[("data", (4, 6))], label_shapes=[("label", (4, 2))])
    mod.init_params(mx.init.One())
    mod.init_optimizer(kvstore=kvstore, optimizer="sgd")
    csr = mx.nd.array(np.eye(4, 6, 1, dtype=np.float32)).tostype("csr")
    return mod, mx.io.DataBatch([csr], [mx.nd.zeros((4, 2))])


def test_prepare_calls_sparse_row_id_fn_when_the_kvstore_updates():
    mod, batch = _prepared_module([mx.cpu(0), mx.cpu(1)], "local")
    seen = []
    mod.prepare(batch, sparse_row_id_fn=lambda b: seen.append(b) or
                {"w_weight": b.data[0].indices})
    assert seen == [batch]
    with pytest.raises(MXNetError, match="must return a dict.*got list"):
        mod.prepare(batch, sparse_row_id_fn=lambda b: [b.data[0].indices])
    with pytest.raises(MXNetError, match="names 'w', which is not a parameter.*w_weight"):
        mod.prepare(batch, sparse_row_id_fn=lambda b: {"w": b.data[0].indices})


def test_prepare_does_not_call_sparse_row_id_fn_without_kvstore_updates():
    mod, batch = _prepared_module([mx.cpu(0)], None)

    def fail(_):
        raise AssertionError("called")

    with pytest.warns(UserWarning, match="not called, the parameters are not updated on a "
                                         "kvstore"):
        mod.prepare(batch, sparse_row_id_fn=fail)
