"""mx.contrib.svrg_optimization: SVRGModule and its optimizers.

The trajectories are compared with MXNet 1.9.1's (tests/data/contrib/svrg_golden.npz, written
by gen_svrg_golden.py): a linear regression started from fixed parameters and trained by
`SVRGModule.fit`, on one device and on two CPU devices with a 'local' kvstore.
"""
import logging
import os

import numpy as np
import pytest

import minimod as mx
from minimod.contrib.svrg_optimization.svrg_module import SVRGModule
from minimod.contrib.svrg_optimization.svrg_optimizer import _AssignmentOptimizer, _SVRGOptimizer

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "contrib",
                              "svrg_golden.npz"))
X, Y, W0, B0 = GOLDEN["X"], GOLDEN["Y"], GOLDEN["W0"], GOLDEN["B0"]

SCENARIOS = {
    "one_dev": dict(ctx=[mx.cpu(0)], freq=2, epochs=5, opt=dict(learning_rate=0.05)),
    "one_dev_mom": dict(ctx=[mx.cpu(0)], freq=1, epochs=3,
                        opt=dict(learning_rate=0.05, momentum=0.9, wd=0.01)),
    "two_dev": dict(ctx=[mx.cpu(0), mx.cpu(1)], freq=2, epochs=4, opt=dict(learning_rate=0.05)),
}


def network():
    data = mx.sym.Variable("data")
    label = mx.sym.Variable("lin_reg_label")
    fc = mx.sym.FullyConnected(data, num_hidden=1, name="fc1")
    return mx.sym.LinearRegressionOutput(fc, label, name="lro")


def data_iter(x=X, y=Y, batch_size=10):
    return mx.io.NDArrayIter(x, y, batch_size=batch_size, shuffle=False,
                             label_name="lin_reg_label")


def flat(arg):
    return np.concatenate([arg["fc1_weight"].asnumpy().ravel(),
                           arg["fc1_bias"].asnumpy().ravel()])


def start_params():
    return {"fc1_weight": mx.nd.array(W0), "fc1_bias": mx.nd.array(B0)}


def train(spec, **extra):
    mod = SVRGModule(network(), data_names=["data"], label_names=["lin_reg_label"],
                     context=spec["ctx"], update_freq=spec["freq"])
    per_batch, per_epoch, snaps = [], [], []

    def on_batch(param):
        per_batch.append(flat(param.locals["self"].get_params()[0]))

    def on_epoch(epoch, sym, arg, aux):
        per_epoch.append(flat(arg))
        snaps.append(np.stack([flat(d) for d in mod._param_dict]))

    mod.fit(data_iter(), eval_metric="mse", optimizer="sgd", optimizer_params=spec["opt"],
            num_epoch=spec["epochs"], kvstore="local", arg_params=start_params(),
            batch_end_callback=on_batch, epoch_end_callback=on_epoch, **extra)
    return mod, np.stack(per_batch), np.stack(per_epoch), np.stack(snaps)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_trajectory_matches_mxnet(name):
    _, batch, epoch, snaps = train(SCENARIOS[name])
    np.testing.assert_allclose(batch, GOLDEN[name + "/batch"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(epoch, GOLDEN[name + "/epoch"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(snaps, GOLDEN[name + "/full_grads"], rtol=1e-5, atol=1e-6)


def test_manual_loop_is_fit():
    """bind / init_params / init_optimizer, then update_full_grads every update_freq epochs
    and forward_backward + update per batch: the same steps as fit."""
    spec = SCENARIOS["one_dev"]
    it = data_iter()
    mod = SVRGModule(network(), data_names=["data"], label_names=["lin_reg_label"],
                     update_freq=spec["freq"])
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params(arg_params=start_params())
    mod.init_optimizer(kvstore="local", optimizer="sgd", optimizer_params=spec["opt"])
    epochs = []
    for epoch in range(spec["epochs"]):
        if epoch % mod.update_freq == 0:
            mod.update_full_grads(it)
        it.reset()
        for batch in it:
            mod.forward_backward(batch)
            mod.update()
        epochs.append(flat(mod.get_params()[0]))
    np.testing.assert_allclose(np.stack(epochs), GOLDEN["one_dev/epoch"], rtol=1e-5, atol=1e-6)


def test_converges_on_linear_regression():
    rs = np.random.RandomState(0)
    x = rs.uniform(-1, 1, (200, 3)).astype("float32")
    w_true = np.array([1.5, -2.0, 0.5], dtype="float32")
    y = x @ w_true + 0.3 + 0.01 * rs.randn(200).astype("float32")
    mod = SVRGModule(network(), data_names=["data"], label_names=["lin_reg_label"],
                     update_freq=2, logger=logging.getLogger("svrg-test"))
    mod.fit(data_iter(x, y, batch_size=20), eval_metric="mse", optimizer="sgd",
            optimizer_params={"learning_rate": 0.2}, num_epoch=30,
            initializer=mx.init.Zero())
    arg = mod.get_params()[0]
    solution, *_ = np.linalg.lstsq(np.hstack([x, np.ones((200, 1), "float32")]), y, rcond=None)
    np.testing.assert_allclose(flat(arg), solution, atol=2e-3)
    score = dict(mod.score(data_iter(x, y, batch_size=20), "mse"))
    assert score["mse"] < 2e-4


def test_svrg_gradient_rule():
    """After forward_backward, update() replaces each gradient with g - g_snapshot + mu."""
    it = data_iter()
    mod = SVRGModule(network(), data_names=["data"], label_names=["lin_reg_label"],
                     update_freq=1)
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params(arg_params=start_params())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.0})
    mod.update_full_grads(it)
    mu = {k: v.asnumpy().copy() for k, v in mod._param_dict[0].items()}
    # move the live parameters away from the snapshot so the two gradients differ
    mod.set_params({"fc1_weight": mx.nd.array(W0 + 0.5), "fc1_bias": mx.nd.array(B0 - 0.2)}, {})
    it.reset()
    batch = next(iter(it))
    mod.forward_backward(batch)
    names = mod._exec_group.param_names
    g = [mod._exec_group.grad_arrays[i][0].asnumpy().copy() for i in range(len(names))]
    g_snap = [mod._mod_aux._exec_group.grad_arrays[i][0].asnumpy().copy()
              for i in range(len(names))]
    assert not np.allclose(g[0], g_snap[0])
    mod._update_svrg_gradients()
    for i, name in enumerate(names):
        np.testing.assert_allclose(mod._exec_group.grad_arrays[i][0].asnumpy(),
                                   g[i] - g_snap[i] + mu[name], rtol=1e-6, atol=1e-7)


def test_snapshot_module_runs_only_in_training():
    it = data_iter()
    mod = SVRGModule(network(), data_names=["data"], label_names=["lin_reg_label"],
                     update_freq=1)
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params(arg_params=start_params())
    mod.init_optimizer()
    mod.update_full_grads(it)
    it.reset()
    batch = next(iter(it))
    aux_out = mod._mod_aux.get_outputs()[0].asnumpy().copy()
    mod.forward(mx.io.DataBatch([mx.nd.array(X[10:20] * 3)], [mx.nd.array(Y[10:20])]))
    np.testing.assert_array_equal(mod._mod_aux.get_outputs()[0].asnumpy(), aux_out)
    mod.forward(batch, is_train=True)
    assert not np.array_equal(mod._mod_aux.get_outputs()[0].asnumpy(), aux_out)


def test_inference_bind_has_no_snapshot():
    mod = SVRGModule(network(), data_names=["data"], label_names=["lin_reg_label"],
                     update_freq=1)
    mod.bind(data_shapes=[("data", (10, 3))], for_training=False)
    assert mod.binded and not mod._mod_aux.binded


@pytest.mark.parametrize("freq, exc", [(None, TypeError), (1.5, TypeError), (True, TypeError),
                                       (0, ValueError), (-2, ValueError)])
def test_update_freq_must_be_a_positive_int(freq, exc):
    with pytest.raises(exc, match="update_freq"):
        SVRGModule(network(), data_names=["data"], label_names=["lin_reg_label"],
                   update_freq=freq)


# ------------------------------------------------------------------------------ optimizers

def test_optimizers_are_registered_under_mxnet_names():
    opt = mx.optimizer.create("_SVRGOptimizer", default_optimizer="sgd", learning_rate=0.5,
                              momentum=0.9, param_idx2name={0: "w", 1: "w_full"})
    assert isinstance(opt, _SVRGOptimizer)
    assert isinstance(opt.default_opt, mx.optimizer.SGD)
    assert opt.default_opt.momentum == 0.9 and opt.default_opt.lr == 0.5
    assert isinstance(opt.aux_opt, _AssignmentOptimizer)
    assert isinstance(mx.optimizer.create("_AssignmentOptimizer"), _AssignmentOptimizer)
    # the wrapper keeps only the base Optimizer's arguments for itself
    assert opt.lr == 0.5 and not hasattr(opt, "momentum")


def test_full_keys_are_assigned_and_others_stepped():
    opt = mx.optimizer.create("_SVRGOptimizer", default_optimizer="sgd", learning_rate=0.5,
                              param_idx2name={0: "w", 1: "w_full"})
    updater = mx.optimizer.get_updater(opt)
    w = mx.nd.array([1.0, 2.0])
    full = mx.nd.array([0.0, 0.0])
    grad = mx.nd.array([4.0, -2.0])
    updater(0, grad, w)
    updater(1, grad, full)
    np.testing.assert_allclose(w.asnumpy(), [-1.0, 3.0])
    np.testing.assert_allclose(full.asnumpy(), [4.0, -2.0])
    # a kvstore calls with the parameter name itself
    updater("w_full", mx.nd.array([7.0, 7.0]), full)
    np.testing.assert_allclose(full.asnumpy(), [7.0, 7.0])
    assert opt.create_state(1, full) is None


def test_default_optimizer_may_be_an_instance():
    inner = mx.optimizer.SGD(learning_rate=0.1, momentum=0.5)
    opt = _SVRGOptimizer(inner, param_idx2name={0: "w"})
    assert opt.default_opt is inner
    state = opt.create_state(0, mx.nd.zeros((2,)))
    assert state is not None  # SGD's momentum buffer


def test_idx2name_has_the_full_keys():
    it = data_iter()
    mod = SVRGModule(network(), data_names=["data"], label_names=["lin_reg_label"],
                     context=[mx.cpu(0), mx.cpu(1)], update_freq=1)
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params(arg_params=start_params())
    mod.init_optimizer(kvstore="local")
    assert mod._optimizer.idx2name == {0: "fc1_weight", 1: "fc1_bias", 2: "fc1_weight_full",
                                       3: "fc1_bias_full"}
    assert "fc1_weight_full" in mod._kvstore._store
    mod1 = SVRGModule(network(), data_names=["data"], label_names=["lin_reg_label"],
                      update_freq=1)
    mod1.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod1.init_params(arg_params=start_params())
    mod1.init_optimizer(kvstore=None)
    assert mod1._optimizer.idx2name == {0: "fc1_weight", 1: "fc1_bias", 2: "fc1_weight_full",
                                        3: "fc1_bias_full"}
    assert mod1._kvstore is None


def test_contrib_namespace():
    assert mx.contrib.svrg_optimization.SVRGModule is SVRGModule
    assert mx.contrib.svrg_optimization.svrg_module.SVRGModule is SVRGModule
    assert issubclass(SVRGModule, mx.mod.Module)


def test_unnamed_fullyconnected_layers_train():
    """Auto-named layers ("fullyconnected0_weight") are trained, not taken for full-gradient
    keys (MXNet 1.9.1 routes any name containing "full" to the assignment, and overwrites
    such weights with their gradient)."""
    rs = np.random.RandomState(1)
    x = rs.uniform(-1, 1, (40, 3)).astype("float32")
    y = x @ np.array([1.0, -1.0, 2.0], dtype="float32")
    data = mx.sym.var("data")
    with mx.name.NameManager():
        fc = mx.sym.FullyConnected(data, num_hidden=1)
    net = mx.sym.LinearRegressionOutput(fc, mx.sym.var("lin_reg_label"))
    assert "fullyconnected0_weight" in net.list_arguments()
    mod = SVRGModule(net, data_names=["data"], label_names=["lin_reg_label"], update_freq=1)
    mod.fit(data_iter(x, y), eval_metric="mse", optimizer_params={"learning_rate": 0.2},
            num_epoch=20, initializer=mx.init.Zero())
    weight = mod.get_params()[0]["fullyconnected0_weight"].asnumpy()
    np.testing.assert_allclose(weight, [[1.0, -1.0, 2.0]], atol=0.05)
    opt = mod._optimizer
    assert opt._route("fullyconnected0_weight") is opt.default_opt
    assert opt._route("fullyconnected0_weight_full") is opt.aux_opt
