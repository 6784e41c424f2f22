"""Embedding(sparse_grad=True) in Module training (minimod/module/sparse_grads.py): MXNet's
lazy updates of row-sparse gradients and its dense ones give MXNet's numbers
(tests/data/module/sparse_grad_golden.npz); what minimod cannot update lazily is refused with
what to change."""
import os
import sys

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError
from minimod.module.sparse_grads import sparse_grad_params

from ..conftest import needs_gpu

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "module")
sys.path.insert(0, HERE)
from sparse_grad_cases import BATCHES, CASES, module, train  # noqa: E402

GOLDEN = np.load(os.path.join(HERE, "sparse_grad_golden.npz"))


@pytest.mark.parametrize("k", range(len(CASES)), ids=[c[0] for c in CASES])
def test_updates_give_mxnets_numbers(k):
    name, params = CASES[k]
    with np.errstate(invalid="ignore"):  # Adamax divides 0 by 0 in rows never looked up
        table = train(mx, name, params)
    np.testing.assert_allclose(table, GOLDEN["case%d" % k], rtol=1e-6, atol=1e-7)


def test_a_batch_that_repeats_rows_gives_mxnets_numbers():
    got = train(mx, "adam", {"learning_rate": 0.1, "wd": 0.1}, wide=True)
    np.testing.assert_allclose(got, GOLDEN["wide"], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name, params", [
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.1}),
    ("adam", {"learning_rate": 0.1})])
def test_two_devices_update_the_union_of_their_rows(name, params):
    """Two devices summing their gradients in the kvstore train as one device on the whole
    batch. (MXNet 1.9.1 does not sum row-sparse gradients there: its kvstore pull skips
    sparse arrays, so each device steps on its own half; docs/compatibility.md.)"""
    got = train(mx, name, params, devices=2, wide=True)
    np.testing.assert_allclose(got, train(mx, name, params, wide=True), rtol=1e-6, atol=1e-7)
    assert not np.allclose(got, train(mx, name, params, sparse_grad=False, wide=True))


def test_lazy_rows_keep_their_values_and_states():
    """Row 5 is never looked up: MXNet's lazy SGD leaves it and its momentum alone, where a
    dense update would decay it."""
    table = train(mx, "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.1})
    np.testing.assert_array_equal(table[5], np.full(2, 0.3, np.float32))
    dense = train(mx, "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.1},
                  sparse_grad=False)
    assert (dense[5] < 0.3).all()


@pytest.mark.parametrize("name, params", [("lars", {"momentum": 0.9}), ("lbsgd", {})])
def test_norm_scaled_lazy_updates_are_refused_with_the_fix(name, params):
    mod = module(mx)
    with pytest.raises(MXNetError, match=r"'emb_weight'.*sparse_grad=True.*lazy_update=False"):
        mod.init_optimizer(optimizer=name, optimizer_params=dict(params, learning_rate=0.1))
    mod.init_optimizer(optimizer=name, optimizer_params=dict(params, learning_rate=0.1,
                                                             lazy_update=False))


def test_a_kvstore_that_updates_takes_the_rows_of_every_device():
    got = train(mx, "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.1}, devices=2,
                wide=True, in_store=True)
    np.testing.assert_allclose(got, GOLDEN["in_store"], rtol=1e-6, atol=1e-7)


def test_stores_without_rows_and_computed_indices_are_refused():
    class PlainStore(mx.kv.KVStoreBase):  # a store written in Python: no push_rows
        type = "plainstore"

        def broadcast(self, key, value, out, priority=0):
            for o in out:
                value.copyto(o)

        def pushpull(self, key, value, out=None, priority=0):
            pass

        def is_capable(self, capability):
            return True

        def set_optimizer(self, optimizer):
            pass

    mod = module(mx, contexts=[mx.cpu(0), mx.cpu(1)])
    with pytest.raises(MXNetError, match="takes no rows"):
        mod.init_optimizer(kvstore=PlainStore(), optimizer="sgd",
                           optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    data = mx.sym.var("data")
    emb = mx.sym.Embedding(data + 1, input_dim=6, output_dim=2, sparse_grad=True, name="emb")
    net = mx.sym.LinearRegressionOutput(mx.sym.sum(emb, axis=1), name="lro")
    mod = mx.mod.Module(net, label_names=["lro_label"])
    mod.bind(data_shapes=[("data", (2, 2))], label_shapes=[("lro_label", (2, 2))])
    mod.init_params()
    with pytest.raises(MXNetError, match="computed in the graph"):
        mod.init_optimizer(optimizer="adam")


def test_which_weights_get_sparse_gradients():
    data = mx.sym.var("data")
    shared = mx.sym.var("shared_weight")
    net = mx.sym.Embedding(data, input_dim=5, output_dim=2, sparse_grad=True, name="a")
    net = net + mx.sym.contrib.SparseEmbedding(data, input_dim=5, output_dim=2, name="b")
    net = net + mx.sym.Embedding(data, shared, input_dim=5, output_dim=2, sparse_grad=True)
    net = net + mx.sym.Embedding(data, input_dim=5, output_dim=2, name="c")
    assert sparse_grad_params(net) == ["a_weight", "b_weight", "shared_weight"]
    # a weight that something else reads too gets a dense gradient, as in MXNet
    both = net + mx.sym.FullyConnected(shared, num_hidden=2, name="fc")
    assert sparse_grad_params(both) == ["a_weight", "b_weight"]


def test_bucketing_modules_update_lazily_in_every_bucket():
    def sym_gen(seq_len):
        data, label = mx.sym.var("data"), mx.sym.var("softmax_label")
        emb = mx.sym.Embedding(data, input_dim=20, output_dim=4, sparse_grad=True, name="emb")
        pred = mx.sym.FullyConnected(mx.sym.reshape(emb, (-1, 4)), num_hidden=20, name="fc")
        return (mx.sym.SoftmaxOutput(pred, mx.sym.reshape(label, (-1,)), name="softmax"),
                ("data",), ("softmax_label",))

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=5)
    mod.bind(data_shapes=[("data", (2, 5))], label_shapes=[("softmax_label", (2, 5))])
    mod.init_params(mx.init.Constant(0.1))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1,
                                                          "momentum": 0.9, "wd": 0.01})
    rng = np.random.RandomState(0)
    for key in (5, 3, 5, 3):  # tokens 0-9 only: rows 10-19 are never looked up
        ids = mx.nd.array(rng.randint(0, 10, (2, key)))
        mod.forward(mx.io.DataBatch([ids], [ids], bucket_key=key,
                                    provide_data=[mx.io.DataDesc("data", (2, key))],
                                    provide_label=[mx.io.DataDesc("softmax_label", (2, key))]),
                    is_train=True)
        mod.backward()
        mod.update()
    table = mod.get_params()[0]["emb_weight"].asnumpy()
    assert (table[10:] == np.float32(0.1)).all() and (table[:10] != np.float32(0.1)).any()


@needs_gpu
def test_lazy_updates_on_a_gpu_give_mxnets_numbers():
    """The rows and states gathered and written back on the device (the CPU goldens)."""
    name, params = CASES[2]  # SGD with momentum and weight decay, multi-precision
    mod = module(mx, contexts=[mx.gpu(0)])
    mod.init_optimizer(optimizer=name, optimizer_params=dict(params))
    for batch in BATCHES:
        mod.forward(mx.io.DataBatch([mx.nd.array(batch)], [mx.nd.ones((2, 2))]),
                    is_train=True)
        mod.backward()
        mod.update()
    np.testing.assert_allclose(mod.get_params()[0]["emb_weight"].asnumpy(), GOLDEN["case2"],
                               rtol=1e-5, atol=1e-6)
