"""mx.kv.KVStoreBase: stores written in Python join mx.kv.create through
KVStoreBase.register, and Module trains with them: TestStore (MXNet's 'teststore', no
optimizer, so the devices update) gives the numbers of the built-in 'local' store."""
import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError


class CountingStore(mx.kv.TestStore):
    """TestStore that counts its calls (registered once, below)."""

    calls = {"broadcast": 0, "pushpull": 0}

    def broadcast(self, key, value, out, priority=0):
        CountingStore.calls["broadcast"] += 1
        super().broadcast(key, value, out, priority)

    def pushpull(self, key, value, out=None, priority=0):
        CountingStore.calls["pushpull"] += 1
        super().pushpull(key, value, out, priority)


mx.kv.KVStoreBase.register(CountingStore)


def _train(kvstore):
    rng = np.random.RandomState(0)
    x = rng.randn(32, 6).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    it = mx.io.NDArrayIter(x, y, batch_size=8, label_name="softmax_label")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2,
                                                     name="fc"), name="softmax")
    mod = mx.mod.Module(net, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.Xavier(rnd_type="gaussian", magnitude=1.0))
    arg, aux = mod.get_params()
    mod.init_params(arg_params={k: mx.nd.array(np.full(v.shape, 0.1, np.float32))
                                for k, v in arg.items()}, force_init=True)
    mod.init_optimizer(kvstore=kvstore, optimizer="sgd",
                       optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    for _ in range(3):
        it.reset()
        for batch in it:
            mod.forward_backward(batch)
            mod.update()
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


def test_teststore_trains_like_the_local_store():
    local, test = _train("local"), _train("teststore")
    for name in local:
        np.testing.assert_allclose(test[name], local[name], rtol=1e-5, atol=1e-6)


def test_a_registered_store_is_created_by_name_and_used():
    kv = mx.kv.create("CountingStore")
    assert isinstance(kv, mx.kv.KVStoreBase) and kv.type == "teststore"
    assert not kv.is_capable(mx.kv.KVStoreBase.OPTIMIZER)
    before = dict(CountingStore.calls)
    _train(kv)
    assert CountingStore.calls["broadcast"] > before["broadcast"]
    assert CountingStore.calls["pushpull"] >= before["pushpull"] + 12


def test_register_checks():
    with pytest.raises(MXNetError, match="already registered"):
        mx.kv.KVStoreBase.register(CountingStore)
    with pytest.raises(MXNetError, match="KVStoreBase subclass"):
        mx.kv.KVStoreBase.register(dict)
    assert isinstance(mx.kv.create("local"), mx.kv.KVStoreBase)
    with pytest.raises(NotImplementedError):
        mx.kv.KVStoreBase().pushpull("w", mx.nd.zeros(2))
