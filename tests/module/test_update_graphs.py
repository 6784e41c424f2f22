"""The optimizer's update as a CUDA graph: on a GPU, the kernels of each flat buffer's update
are captured once after a warm-up and replayed, reading their scalars from device memory, so
training equals the eager run bit for bit while the learning rate moves every step.

These cases need a GPU or the strict CuPy stand-in (tests/test_fake_gpu.py runs this file on
it), where a capture records kernels without running them and a launch runs the recording:
a scalar baked into the graph as a number would keep its first value, and the runs below,
whose learning rate changes every step, would drift from the eager ones.
"""
import os
import sys

import numpy as np
import pytest

import minimod as mx
from minimod.flat import update_graph_status
from minimod.ndarray import update_steps

from ..conftest import needs_gpu, needs_two_gpus

BATCH, FEATURES, CLASSES, STEPS = 8, 6, 3, 6

OPTIMIZERS = {
    "sgd-momentum-wd": ("sgd", {"momentum": 0.9, "wd": 1e-3}),
    "sgd-clip": ("sgd", {"clip_gradient": 0.05}),
    "sgd-plain": ("sgd", {}),
    "adam-wd-clip": ("adam", {"wd": 1e-3, "clip_gradient": 0.5}),
}


def _net():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=10, name="fc1")
    net = mx.sym.Activation(net, act_type="tanh", name="act1")
    net = mx.sym.FullyConnected(net, num_hidden=CLASSES, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _train(monkeypatch, graphs, contexts, optimizer, params, kvstore=None, steps=STEPS,
           between=None):
    """Parameters and optimizer states after `steps` steps, the learning rate decaying every
    step; `between(mod, i)` runs before step i."""
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1" if graphs else "0")
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (4 * BATCH, FEATURES)).astype(np.float32)
    y = rng.randint(0, CLASSES, 4 * BATCH).astype(np.float32)
    init = np.random.RandomState(1)
    mod = mx.mod.Module(_net(), context=contexts)
    mod.bind(data_shapes=[("data", (BATCH, FEATURES))],
             label_shapes=[("softmax_label", (BATCH,))])
    mod.init_params(arg_params={
        "fc1_weight": mx.nd.array(init.uniform(-.5, .5, (10, FEATURES))),
        "fc1_bias": mx.nd.array(init.uniform(-.5, .5, 10)),
        "fc2_weight": mx.nd.array(init.uniform(-.5, .5, (CLASSES, 10))),
        "fc2_bias": mx.nd.array(init.uniform(-.5, .5, CLASSES))})
    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.8, base_lr=0.1)
    mod.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                       optimizer_params=dict(params, lr_scheduler=sched))
    for i in range(steps):
        if between is not None:
            between(mod, i)
        sl = slice((i % 4) * BATCH, (i % 4 + 1) * BATCH)
        mod.forward_backward(mx.io.DataBatch([mx.nd.array(x[sl])], [mx.nd.array(y[sl])]))
        mod.update()
    args, _ = mod.get_params()
    updater = mod._kvstore.updater if mod._update_on_kvstore else mod._updater
    states = {k: s for k, s in updater.states.items()}
    return mod, updater, {k: v.asnumpy() for k, v in args.items()}, _host_states(states)


def _host_states(states):
    def host(s):
        if isinstance(s, (tuple, list)):
            return tuple(host(x) for x in s)
        return None if s is None else s.asnumpy()
    return {k: host(s) for k, s in states.items()}


def _assert_same(got, want):
    assert sorted(got) == sorted(want)
    for key in want:
        np.testing.assert_equal(got[key], want[key], err_msg=str(key))


SETUPS = {
    "one-gpu": dict(contexts=[mx.gpu(0)]),
    "two-gpus-update-on-kvstore": dict(contexts=[mx.gpu(0), mx.gpu(1)], kvstore="device"),
    "two-gpus-update-on-devices": dict(contexts=[mx.gpu(0), mx.gpu(1)], kvstore="device",
                                       on_kvstore="0"),
}


@pytest.mark.parametrize("setup", [
    pytest.param("one-gpu", marks=needs_gpu),
    pytest.param("two-gpus-update-on-kvstore", marks=needs_two_gpus),
    pytest.param("two-gpus-update-on-devices", marks=needs_two_gpus)])
@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_update_graphs_train_as_eager_with_a_moving_learning_rate(opt, setup, monkeypatch):
    name, params = OPTIMIZERS[opt]
    spec = dict(SETUPS[setup])
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", spec.pop("on_kvstore", "1"))
    _, _, want, want_states = _train(monkeypatch, False, optimizer=name, params=params, **spec)
    mod, updater, got, got_states = _train(monkeypatch, True, optimizer=name, params=params,
                                           **spec)
    _assert_same(got, want)
    _assert_same(got_states, want_states)
    status = update_graph_status(updater)
    # one graph per flat buffer stepped: the store's copy, or each device's buffer
    copies = 1 if setup == "two-gpus-update-on-kvstore" else len(spec["contexts"])
    assert len(status) == copies and set(status.values()) == {"graph"}, status
    assert mod._update_on_kvstore == (setup == "two-gpus-update-on-kvstore")


@needs_gpu
def test_a_changed_clip_captures_the_other_kernel_form(monkeypatch):
    def toggle(mod, i):
        if i == 3:
            mod._optimizer.clip_gradient = 0.01
    _, _, want, _ = _train(monkeypatch, False, [mx.gpu(0)], "sgd", {"momentum": 0.9},
                           between=toggle)
    _, updater, got, _ = _train(monkeypatch, True, [mx.gpu(0)], "sgd", {"momentum": 0.9},
                                between=toggle)
    _assert_same(got, want)
    status = update_graph_status(updater)
    assert sorted(key[2] for key in status) == [("update", (False,)), ("update", (True,))]
    assert set(status.values()) == {"graph"}, status


@needs_gpu
@pytest.mark.parametrize("opt,copies_per_step", [("sgd", 0), ("adam", 1)])
def test_scalars_reach_the_device_only_when_they_change(opt, copies_per_step, monkeypatch):
    """SGD with a constant learning rate copies its scalars once per run; Adam's bias
    correction moves every step, so each of its runs copies every step."""
    writes = []
    real = update_steps.DeviceScalars.write
    monkeypatch.setattr(update_steps.DeviceScalars, "write",
                        lambda self, values: (writes.append(len(values)), real(self, values)))
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1")
    mod = mx.mod.Module(_net(), context=mx.gpu(0))
    mod.bind(data_shapes=[("data", (BATCH, FEATURES))],
             label_shapes=[("softmax_label", (BATCH,))])
    mod.init_params()
    mod.init_optimizer(optimizer=opt, optimizer_params={"wd": 1e-3})
    batch = mx.io.DataBatch([mx.nd.ones((BATCH, FEATURES))], [mx.nd.zeros(BATCH)])
    for _ in range(STEPS):
        mod.forward_backward(batch)
        mod.update()
    (state,) = mod._updater.flat_states.values()
    runs = len(state.runs)
    assert runs == 2  # weights, then the biases (no weight decay)
    assert len(writes) == runs * (1 + copies_per_step * (STEPS - 1)), writes
    assert set(update_graph_status(mod._updater).values()) == {"graph"}


@needs_gpu
def test_an_optimizer_with_numbers_in_its_kernels_stays_eager_and_says_why(monkeypatch):
    _, _, want, _ = _train(monkeypatch, False, [mx.gpu(0)], "rmsprop", {"wd": 1e-3})
    _, updater, got, _ = _train(monkeypatch, True, [mx.gpu(0)], "rmsprop", {"wd": 1e-3})
    _assert_same(got, want)
    assert set(update_graph_status(updater).values()) == {
        "eager: RMSProp's update takes its scalars as numbers"}


def test_a_cpu_update_captures_nothing(monkeypatch):
    _, updater, _, _ = _train(monkeypatch, True, [mx.cpu(0)], "sgd", {"momentum": 0.9},
                              steps=3)
    assert set(update_graph_status(updater).values()) == {"eager: not on a GPU"}


@needs_gpu
def test_the_benchmark_reports_the_update_graph(monkeypatch):
    bench = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")
    sys.path.insert(0, bench)
    try:
        import bench_gpu
    finally:
        sys.path.remove(bench)
    mod, _, _, _ = _train(monkeypatch, True, [mx.gpu(0)], "sgd", {"momentum": 0.9}, steps=3)
    assert bench_gpu.graph_summary(mod) == "train: graph; update: graph"
