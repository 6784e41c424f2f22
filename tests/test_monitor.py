"""Monitor reports what MXNet 1.9.1's does (tests/data/viz/monitor_golden.json)."""
import json
import logging
import os
import sys

import numpy as np
import pytest

import minimod as mx

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "viz")
sys.path.insert(0, HERE)
import monitor_cases  # noqa: E402

with open(os.path.join(HERE, "monitor_golden.json")) as _f:
    GOLDEN = json.load(_f)



@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_matches_mxnet(name):
    got = monitor_cases.scenarios(mx)[name]
    want = GOLDEN[name]
    assert len(got) == len(want)
    for batch_got, batch_want in zip(got, want):
        assert [item[:2] for item in batch_got] == [item[:2] for item in batch_want]
        for (_, _, text_got), (_, key, text_want) in zip(batch_got, batch_want):
            assert text_got.endswith("\t")
            assert float(text_got) == pytest.approx(float(text_want), rel=1e-6), key


def test_monitor_all_reports_inputs_sorted():
    batch = monitor_cases.run(mx, monitor_all=True, sort=True, batches=1)[0]
    names = [item[1] for item in batch]
    assert names == sorted(names)
    assert {"fc_data", "fc_weight", "head_output", "bn_moving_mean"} <= set(names)


def test_custom_stat_and_toc_print(caplog):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=2, name="fc")
    exe = net.simple_bind(mx.cpu(), data=(2, 3))
    for arr in exe.arg_arrays:
        arr[:] = np.arange(arr.size, dtype=np.float32).reshape(arr.shape)
    mon = mx.mon.Monitor(1, stat_func=lambda x: [mx.nd.max(x), x], pattern="fc_bias")
    mon.install(exe)
    mon.tic()
    exe.forward()
    with caplog.at_level(logging.INFO, logger=""):
        mon.toc_print()
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["Batch: {:7d} {:30s} {:s}".format(1, "fc_bias", "1.0\t[0. 1.]\t")]
    assert mon.toc() == []  # inactive until the next tic


def test_statistic_is_the_root_mean_square():
    x = mx.nd.array(np.array([[3.0, 4.0]], dtype=np.float32))
    mon = mx.mon.Monitor(1)
    value = mon.stat_func(x)
    assert value.shape == (1,)
    assert value.asscalar() == pytest.approx(5.0 / np.sqrt(2.0))


def test_monitor_during_fit_reports_forward_and_gradient_nodes_as_mxnet():
    import numpy as np

    import minimod as mx
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    seen = []
    mon = mx.mon.Monitor(1, stat_func=lambda x: x, pattern=".*")
    real_toc = mon.toc

    def toc():
        res = real_toc()
        seen.extend(name for _, name, _ in res)
        return res
    mon.toc = toc
    it = mx.io.NDArrayIter(np.ones((8, 4), np.float32), np.zeros(8, np.float32), batch_size=4)
    mod = mx.mod.Module(net)
    mod.fit(it, num_epoch=1, monitor=mon, optimizer_params={"learning_rate": 0.1})
    # the names MXNet 1.9.1's monitor gives for this fit: every gradient node's outputs too,
    # one per argument of its forward node (softmax_backward_output1 is the label's)
    assert sorted(set(seen)) == [
        "data", "fc_backward_output0", "fc_backward_output1", "fc_backward_output2", "fc_bias",
        "fc_output", "fc_weight", "softmax_backward_output0", "softmax_backward_output1",
        "softmax_label", "softmax_output"]


def test_monitor_all_reports_inputs_before_the_node_runs():
    # MXNet reports a node's inputs before running it: an in-place activation's input is
    # still the previous node's output then (minimod plans tanh in place over fc's output)
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    net = mx.sym.FullyConnected(mx.sym.Activation(fc, act_type="tanh", name="act"),
                                num_hidden=2, name="fc2")
    exe = net.simple_bind(mx.cpu(), data=(2, 4))
    for arr in exe.arg_arrays:
        arr[:] = (np.arange(arr.size).reshape(arr.shape) % 5 - 2).astype(np.float32)
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append((name, arr.asnumpy())),
                             monitor_all=True)
    exe.forward()
    names = [name for name, _ in seen]
    values = dict(seen)
    assert names.index("act_input0") < names.index("act_output")
    assert names.index("fc_data") < names.index("fc_output")
    assert np.array_equal(values["act_input0"], values["fc_output"])
    assert np.array_equal(values["act_output"], np.tanh(values["fc_output"]))


def test_callback_written_for_mxnet_wraps_the_handle_it_gets():
    """MXNet's callbacks receive a handle and wrap it: NDArray(ctypes.cast(arr, NDArrayHandle))
    is then the same array; the callback stays on the executor a reshape makes."""
    import ctypes

    import numpy as np

    import minimod as mx
    from minimod.operator import NDArray, NDArrayHandle
    seen = {}

    def callback(name, arr):
        array = NDArray(ctypes.cast(arr, NDArrayHandle), writable=False)
        seen[name] = array.asnumpy().copy()

    net = mx.sym.Convolution(mx.sym.var("data"), kernel=(1, 1), num_filter=1, name="conv")
    exe = net.simple_bind(mx.cpu(), data=(1, 2, 3, 3), grad_req="null")
    exe.set_monitor_callback(callback, monitor_all=True)
    exe.arg_dict["data"][:] = 1
    exe.forward()
    np.testing.assert_array_equal(seen["conv_output"], exe.outputs[0].asnumpy())
    seen.clear()
    wider = exe.reshape(allow_up_sizing=True, data=(1, 2, 3, 5))
    wider.forward()
    assert seen["conv_output"].shape == (1, 1, 3, 5)
    assert {"data", "conv_data", "conv_weight", "conv_bias"} <= set(seen)


def test_two_arguments_bound_to_one_array_keep_their_names():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    one = mx.nd.ones((2, 2))
    exe = mx.sym.elemwise_add(a, b, name="p").bind(mx.cpu(), {"a": one, "b": one})
    names = []
    exe.set_monitor_callback(lambda name, arr: names.append(name), monitor_all=True)
    exe.forward()
    assert names == ["a", "p_lhs", "b", "p_rhs", "p_output"]
