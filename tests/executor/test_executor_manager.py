"""mx.executor_manager (minimod/executor_manager.py), the pre-Module data-parallel executors.
Their training numbers are checked against MXNet 1.9.1 by the oracle scenario
executor_manager_train; here: what minimod does where MXNet fails, the sharing, the errors."""
import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError
from minimod.executor_manager import (
    DataParallelExecutorManager,
    _bind_exec,
    _check_arguments,
    _load_data,
)

SIZE = 4


def _seq_net(length):
    hidden = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=5, flatten=False,
                                   name="fc1")
    pooled = mx.sym.mean(mx.sym.relu(hidden), axis=1)
    fc2 = mx.sym.FullyConnected(pooled, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def _batch(length, key, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, (SIZE, length, 2)).astype(np.float32)
    y = rng.randint(0, 3, size=(SIZE,)).astype(np.float32)
    return mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)], bucket_key=key,
                           provide_data=[mx.io.DataDesc("data", x.shape)],
                           provide_label=[mx.io.DataDesc("softmax_label", (SIZE,))])


def _manager(default_length, ctx=(mx.cpu(0), mx.cpu(1)), **kwargs):
    net = _seq_net(default_length)
    it = mx.io.NDArrayIter(np.zeros((SIZE, default_length, 2), np.float32),
                           np.zeros(SIZE, np.float32), batch_size=SIZE)
    it.default_bucket_key = default_length
    names = net.list_arguments()
    return DataParallelExecutorManager(
        net, list(ctx), it, names, [n for n in names if n not in ("data", "softmax_label")],
        net.list_auxiliary_states(), **kwargs)


def test_a_bucket_smaller_than_the_default_reads_a_view_of_its_input_buffer():
    """MXNet 1.9.1 raises here (its reshape of the shared buffer refuses a smaller size)."""
    manager = _manager(6, sym_gen=_seq_net)
    manager.set_params({n: mx.nd.ones(a[0].shape) * 0.1 for n, a in
                        zip(manager.param_names, manager.param_arrays)}, {})
    manager.load_data_batch(_batch(4, key=4, seed=1))
    small, default = manager.execgrp_bucket[4], manager.execgrp_bucket[6]
    for k in range(2):
        big = default.train_execs[k].arg_dict["data"]
        view = small.train_execs[k].arg_dict["data"]
        assert view.shape == (2, 4, 2)
        np.testing.assert_array_equal(big.asnumpy().reshape(-1)[:view.size],
                                      view.asnumpy().reshape(-1))
        # one set of weights: the small bucket's parameters are the default bucket's arrays
        assert small.train_execs[k].arg_dict["fc1_weight"] is \
            default.train_execs[k].arg_dict["fc1_weight"]
    manager.forward(is_train=True)
    manager.backward()
    # the same numbers as an executor bound on its own for that shape
    alone = _seq_net(4).simple_bind(mx.cpu(), data=(2, 4, 2), softmax_label=(2,))
    alone.copy_params_from({n: mx.nd.ones(a[0].shape) * 0.1 for n, a in
                            zip(manager.param_names, manager.param_arrays)})
    batch = _batch(4, key=4, seed=1)
    alone.forward(is_train=True, data=batch.data[0][2:], softmax_label=batch.label[0][2:])
    alone.backward()
    np.testing.assert_allclose(small.train_execs[1].outputs[0].asnumpy(),
                               alone.outputs[0].asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(small.train_execs[1].grad_dict["fc1_weight"].asnumpy(),
                               alone.grad_dict["fc1_weight"].asnumpy(), rtol=1e-5)


def test_copy_to_writes_the_devices_mean_in_the_targets_dtype():
    manager = _manager(3)
    for k, weight in enumerate(manager.param_arrays[0]):
        weight[:] = k + 1.0  # device 0 holds 1, device 1 holds 2
    name = manager.param_names[0]
    out = {n: mx.nd.zeros(a[0].shape) for n, a in zip(manager.param_names,
                                                      manager.param_arrays)}
    out[name] = mx.nd.zeros(manager.param_arrays[0][0].shape, dtype="float64")
    manager.copy_to(out, {})
    assert out[name].dtype == np.float64
    np.testing.assert_array_equal(out[name].asnumpy(), 1.5)


def test_work_load_list_splits_the_batch_and_the_metric_reads_each_share():
    manager = _manager(3, ctx=(mx.cpu(0), mx.cpu(1), mx.cpu(2)), work_load_list=[1, 2, 1])
    assert [(s.start, s.stop) for s in manager.slices] == [(0, 1), (1, 3), (3, 4)]
    batch = _batch(3, key=3, seed=2)
    manager.load_data_batch(batch)
    np.testing.assert_array_equal(manager.curr_execgrp.train_execs[1].arg_dict["data"]
                                  .asnumpy(), batch.data[0].asnumpy()[1:3])
    manager.forward()
    metric = mx.metric.Accuracy()
    manager.update_metric(metric, batch.label)
    assert metric.num_inst == SIZE


def test_the_monitor_sees_every_device():
    manager = _manager(3)
    monitor = mx.mon.Monitor(1, stat_func=lambda a: mx.nd.norm(a), pattern="fc2_output")
    manager.install_monitor(monitor)
    monitor.tic()
    manager.load_data_batch(_batch(3, key=3))
    manager.forward()
    seen = monitor.toc()
    assert [name for _, name, _ in seen] == ["fc2_output", "fc2_output"]
    with pytest.raises(NotImplementedError, match="BucketingModule"):
        _manager(3, sym_gen=_seq_net).install_monitor(monitor)


def test_errors_name_what_is_wrong():
    with pytest.raises(MXNetError, match="one number per device"):
        _manager(3, work_load_list=[1])
    with pytest.raises(MXNetError, match="call load_data_batch first"):
        _manager(3).forward()
    x, w = mx.sym.var("x"), mx.sym.var("w")
    shared = mx.sym.FullyConnected(x, weight=w, num_hidden=2, name="a") + \
        mx.sym.FullyConnected(x, weight=w, num_hidden=2, no_bias=True, name="b")
    _check_arguments(shared)  # one variable read twice is one argument
    clash = mx.sym.FullyConnected(x, weight=mx.sym.var("w"), num_hidden=2, name="a") + \
        mx.sym.FullyConnected(x, weight=mx.sym.var("w"), num_hidden=2, name="b")
    with pytest.raises(ValueError, match="more than one argument named 'w'"):
        _check_arguments(clash)
    base = _bind_exec(_seq_net(3), mx.cpu(), {"data": (2, 3, 2), "softmax_label": (2,)},
                      ["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"], need_grad=True)
    wide = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=7,
                                                      name="fc2"), name="softmax")
    with pytest.raises(MXNetError, match=r"parameter 'fc2_weight'.*\(7, 6\).*\(3, 5\)"):
        _bind_exec(wide, mx.cpu(), {"data": (2, 6), "softmax_label": (2,)},
                   ["fc2_weight", "fc2_bias"], need_grad=True, base_exec=base)
    with pytest.raises(MXNetError, match="need_grad"):
        _bind_exec(_seq_net(3), mx.cpu(), {"data": (2, 3, 2)}, [], need_grad="yes")


def test_load_data_checks_the_batch_size():
    target = mx.nd.zeros((2, 3))
    batch = mx.io.DataBatch([mx.nd.ones((3, 3))], [])
    with pytest.raises(mx.base.ShapeError, match=r"batch of 3 rows.*bound for 2"):
        _load_data(batch, [[(slice(0, 2), target)]])
    _load_data(mx.io.DataBatch([mx.nd.ones((2, 3))], []), [[(slice(0, 2), target)]])
    np.testing.assert_array_equal(target.asnumpy(), 1)
