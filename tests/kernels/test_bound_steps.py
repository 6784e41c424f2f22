"""Bound fast paths (registered in minimod/kernels/, bound by `kernels.bind_forward` /
`kernels.bind_backward`) write exactly what the ops' general forward and backward write, and
the executor runs them.

A bound step is a closure over the node's planned arrays with every shape, layout and dtype
decision taken once at bind time; it must not change a single bit of the results (compared
here as raw bytes, so a negative zero or a NaN payload counts too).
"""
import numpy as np
import pytest

import minimod as mx
from minimod import kernels
from minimod.ops.registry import create_op


def _same_bits(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _forward_both(op, args, out_shapes):
    """(general outputs, bound outputs) of op on the same inputs; the bound path must exist."""
    general = [np.full(s, np.nan, np.float32) for s in out_shapes]
    op.forward(np, args, [], general, True)
    bound = [np.full(s, np.nan, np.float32) for s in out_shapes]
    run = kernels.bind_forward(np, op, args, [], bound)
    assert run is not None, "%s has no bound forward for plain float32 arrays" % op.name
    run(np, True)
    return general, bound


def _backward_both(op, out_grads, args, outs, grad_shapes):
    general = [None if s is None else np.full(s, np.nan, np.float32) for s in grad_shapes]
    op.backward(np, out_grads, args, outs, general, [])
    bound = [None if s is None else np.full(s, np.nan, np.float32) for s in grad_shapes]
    run = kernels.bind_backward(np, op, out_grads, args, outs, bound, [])
    assert run is not None, "%s has no bound backward for plain float32 arrays" % op.name
    run(np, True)
    return general, bound


@pytest.mark.parametrize("no_bias", [False, True])
@pytest.mark.parametrize("flatten,data_shape", [(True, (6, 3, 4)), (False, (2, 3, 12)),
                                                (True, (5, 12))])
@pytest.mark.parametrize("want_dx", [True, False])
def test_fully_connected_bound_equals_general(no_bias, flatten, data_shape, want_dx):
    rng = np.random.RandomState(1)
    hidden = 7
    op = create_op("FullyConnected", {"num_hidden": str(hidden), "no_bias": str(no_bias),
                                      "flatten": str(flatten)})
    k = int(np.prod(data_shape[1:])) if flatten else data_shape[-1]
    x = rng.randn(*data_shape).astype(np.float32)
    w = rng.randn(hidden, k).astype(np.float32)
    args = [x, w] + ([] if no_bias else [rng.randn(hidden).astype(np.float32)])
    out_shape = (data_shape[0], hidden) if flatten else data_shape[:-1] + (hidden,)
    general, bound = _forward_both(op, args, [out_shape])
    assert _same_bits(general[0], bound[0])
    head = rng.randn(*out_shape).astype(np.float32)
    shapes = [data_shape if want_dx else None, w.shape] + ([] if no_bias else [(hidden,)])
    general, bound = _backward_both(op, [head], args, [general[0]], shapes)
    for g, b in zip(general, bound):
        assert (g is None and b is None) or _same_bits(g, b)


@pytest.mark.parametrize("act", ["relu", "tanh"])
def test_activation_bound_equals_general(act):
    rng = np.random.RandomState(2)
    op = create_op("Activation", {"act_type": act})
    x = rng.randn(4, 9).astype(np.float32)
    x[0, :3] = [0.0, -0.0, 1e-30]
    general, bound = _forward_both(op, [x], [x.shape])
    assert _same_bits(general[0], bound[0])
    head = rng.randn(*x.shape).astype(np.float32)
    general, bound = _backward_both(op, [head], [None], [general[0]], [x.shape])
    assert _same_bits(general[0], bound[0])


@pytest.mark.parametrize("attrs", [{}, {"grad_scale": "0.25"}, {"normalization": "batch"},
                                   {"grad_scale": "3", "normalization": "batch"}])
@pytest.mark.parametrize("labels", ["in_range", "negative", "too_large", "fractional"])
def test_softmax_output_bound_equals_general(attrs, labels):
    rng = np.random.RandomState(3)
    rows, classes = 6, 5
    op = create_op("SoftmaxOutput", attrs)
    x = (rng.randn(rows, classes) * 4).astype(np.float32)
    label = rng.randint(0, classes, rows).astype(np.float32)
    if labels == "negative":
        label[2] = -1
    elif labels == "too_large":
        label[4] = classes
    elif labels == "fractional":
        label = label + np.float32(0.75)
        label[label >= classes] = 0.5
    general, bound = _forward_both(op, [x, label], [x.shape])
    assert _same_bits(general[0], bound[0])
    for with_label_grad in (False, True):
        shapes = [x.shape] + ([label.shape] if with_label_grad else [])
        g, b = _backward_both(op, [None], [x, label], [general[0]], shapes)
        for ga, ba in zip(g, b):
            assert _same_bits(ga, ba)
        if with_label_grad:
            assert not b[1].any()


def test_softmax_output_bound_backward_rechecks_labels_every_call():
    """The range check runs on every call, not once at bind time: labels that go out of
    range after binding still get the general path's result."""
    op = create_op("SoftmaxOutput", {})
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    label = np.array([0, 1, 2], np.float32)
    prob = np.empty_like(x)
    op.forward(np, [x, label], [], [prob], True)
    grad = np.empty_like(x)
    run = kernels.bind_backward(np, op, [None], [x, label], [prob], [grad], [])
    run(np, True)
    label[1] = 9  # out of range: that row's gradient is the probabilities, nothing subtracted
    run(np, True)
    expected = np.empty_like(x)
    op.backward(np, [None], [x, label], [prob], [expected], [])
    assert _same_bits(grad, expected)
    np.testing.assert_array_equal(grad[1], prob[1])


@pytest.mark.parametrize("attrs,data_shape,label_shape", [
    ({"multi_output": "True"}, (3, 4, 5), (3, 5)),
    ({"multi_output": "True", "use_ignore": "True", "ignore_label": "2"}, (3, 4, 5), (3, 5)),
    ({"preserve_shape": "True", "normalization": "batch"}, (2, 3, 4), (2, 3)),
    ({"use_ignore": "True", "ignore_label": "1", "normalization": "valid"}, (6, 4), (6,)),
    ({"grad_scale": "0.5"}, (4, 2, 3), (4,)),
])
def test_softmax_output_host_index_gradient_equals_the_one_hot_form(attrs, data_shape,
                                                                    label_shape):
    """Beyond the bound rows case, NumPy steps take the index form of the gradient
    (`kernels.loss.index_grad_into`): the same values as the op's one-hot backward (an
    ignored row may read -0 where the one-hot form reads 0)."""
    rng = np.random.RandomState(4)
    op = create_op("SoftmaxOutput", attrs)
    x = (rng.randn(*data_shape) * 3).astype(np.float32)
    label = rng.randint(-1, data_shape[1] + 1, label_shape).astype(np.float32)
    prob = np.empty_like(x)
    op.forward(np, [x, label], [], [prob], True)
    general, bound = _backward_both(op, [None], [x, label], [prob], [x.shape, label.shape])
    np.testing.assert_array_equal(bound[0], general[0])
    assert not bound[1].any()


def test_no_bound_path_for_arrays_it_cannot_take():
    op = create_op("FullyConnected", {"num_hidden": "3"})
    x = np.ones((4, 6), np.float32)[:, ::2]  # not contiguous
    w, b, y = np.ones((3, 3), np.float32), np.ones(3, np.float32), np.empty((4, 3), np.float32)
    assert kernels.bind_forward(np, op, [x, w, b], [], [y]) is None
    x64 = np.ones((4, 3), np.float64)  # mixed dtypes
    assert kernels.bind_forward(np, op, [x64, w, b], [], [y]) is None
    assert kernels.bind_forward(np, create_op("Activation", {"act_type": "softsign"}),
                                [y], [], [np.empty_like(y)]) is None


def test_executor_runs_the_bound_steps():
    """The executor binds every node of a plain float32 MLP through the fast paths, and the
    step it runs is the bound closure itself."""
    data = mx.sym.Variable("data")
    net = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=8, name="fc1"),
                            act_type="relu", name="relu1")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=3, name="fc2"),
                               name="softmax")
    exe = net.simple_bind(mx.cpu(), data=(4, 5))
    names = []
    for step in exe._steps.train:
        node, fn = step.node, step.run
        where = "%s.%s" % (fn.__module__, fn.__qualname__)
        assert fn.__module__.startswith("minimod.kernels."), (node.name, where)
        names.append(node.name)
    assert len(names) == 8  # 4 forward nodes and their 4 backward nodes


def test_bound_steps_call_numpy_through_xp_at_run_time(monkeypatch):
    """A bound step looks NumPy's functions up when it runs, not when it is bound, so a
    wrapper swapped in after binding (benchmarks/profile_steps.py times GEMMs this way) sees
    every call: 2 forward and 3 backward GEMMs for two FullyConnected layers (the first one's
    data gradient is not wanted), and one matrix-vector product for the bias gradient of fc1,
    whose output the layout pass stores batch-last."""
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(mx.sym.FullyConnected(data, num_hidden=4, name="fc1"),
                                num_hidden=3, name="fc2")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    exe = net.simple_bind(mx.cpu(), data=(2, 5), grad_req={"data": "null", "fc1_weight": "write",
                                                           "fc1_bias": "write",
                                                           "fc2_weight": "write",
                                                           "fc2_bias": "write",
                                                           "softmax_label": "null"})
    calls = []
    real = np.matmul

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(np, "matmul", counting)
    exe.forward(is_train=True)
    assert len(calls) == 2
    exe.backward()
    assert len(calls) == 6
