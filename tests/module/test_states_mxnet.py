"""`Module.save_optimizer_states_mxnet(fname)`: the one line that writes optimizer states as
the pickle MXNet 1.9.1's `Module.load(..., load_optimizer_states=True)` reads (checked against
MXNet by hand with tests/data/module/check_states_in_mxnet.py). Here: the file is a pickle
keyed as MXNet's Module keys its states, and minimod resumes from it exactly."""
import importlib.util
import pickle
import pickletools

import numpy as np
import pytest

import minimod as mx


def _fit(ndev):
    rng = np.random.RandomState(0)
    x, y = rng.randn(16, 5).astype("float32"), rng.randint(0, 3, 16).astype("float32")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3,
                                                     name="fc"), name="softmax")
    mod = mx.mod.Module(net, context=[mx.cpu(i) for i in range(ndev)])
    mod.fit(mx.io.NDArrayIter(x, y, batch_size=8), num_epoch=1, optimizer="sgd",
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    return mod


@pytest.mark.parametrize("ndev, keys", [(1, {0, 1}), (2, {"fc_weight", "fc_bias"})])
def test_states_pickle_is_keyed_like_mxnets_module_and_resumes(tmp_path, ndev, keys):
    mod = _fit(ndev)
    prefix = str(tmp_path / "mlp")
    mod.save_checkpoint(prefix, 1)
    mod.save_optimizer_states_mxnet(prefix + "-0001.states")
    payload = open(prefix + "-0001.states", "rb").read()
    globals_used = {arg for op, arg, _ in pickletools.genops(payload)
                    if op.name == "GLOBAL"}
    assert globals_used == {"mxnet.ndarray.ndarray NDArray", "builtins bytearray"}
    if importlib.util.find_spec("mxnet") is None:  # only MXNet (or minimod's reader) loads it
        with pytest.raises(ModuleNotFoundError):
            pickle.loads(payload)
    updater = mod._kvstore._updater if mod._update_on_kvstore else mod._updater
    assert set(updater.states) == keys
    resumed = mx.mod.Module.load(prefix, 1, load_optimizer_states=True,
                                 context=[mx.cpu(i) for i in range(ndev)])
    resumed.bind(data_shapes=[("data", (8, 5))], label_shapes=[("softmax_label", (8,))])
    resumed.init_optimizer(optimizer="sgd",
                           optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    again = resumed._kvstore._updater if resumed._update_on_kvstore else resumed._updater
    for key, state in updater.states.items():
        np.testing.assert_array_equal(again.states[key].asnumpy(), state.asnumpy())
