"""The layout pass (minimod/passes/layout.py): which edges it stores batch-last, and executors
with batch-last edges compute what executors without them compute (forward, gradients,
monitor, training), the plan's shapes saying how each array is stored."""
import numpy as np
import pytest

import minimod as mx
from minimod.passes import batch_last, compile_graph, fuse, layouts

from .graphs import (CONVNET_SHAPES, assert_same_step, bind_random, convnet, fit_convnet,
                     monitored, trained_pair)


def _convnet(act2="tanh", **kw):
    """The passes' convnet with tanh at act1 (`kw`: convnet's expose / reread)."""
    return convnet("tanh", act2, **kw)


def _shapes(wide=False):
    """14-wide data: conv1's 12-wide output works batch-last with or without the pass; 22-wide:
    conv1 works channels-by-batch without it."""
    return {"data": (3, 2, 22, 22), "softmax_label": (3,)} if wide else CONVNET_SHAPES


def _layouts(sym, ctx=None, wide=False):
    """{node name: (data_last, out_last)} of the forward nodes of sym's plan."""
    exe = sym.simple_bind(ctx or mx.cpu(), **_shapes(wide))
    plan = exe._plan
    return {n.name: (getattr(n.op, "data_last", False), getattr(n.op, "out_last", False))
            for n in plan.graph.nodes[:plan.num_forward_nodes] if n.op is not None}


def test_edges_between_convolutions_and_fused_pooling_are_batch_last():
    got = _layouts(_convnet())
    assert got["conv1"] == (False, True)   # the data variable is the user's: batch-first
    assert got["pool1"] == (True, True)
    assert got["conv2"] == (True, True)
    assert got["pool2"] == (True, False)   # Flatten reads it: batch-first
    assert got["fc"] == (False, False)


def test_plan_shapes_are_the_stored_ones():
    exe = _convnet().simple_bind(mx.cpu(), **_shapes())
    plan, graph = exe._plan, exe._plan.graph
    shapes = {graph.entry_name(e): plan.shapes[e] for e in range(graph.num_entries)}
    assert shapes["conv1_output"] == (4, 12, 12, 3)     # (C, H, W, N)
    assert shapes["pool1_output"] == (4, 6, 6, 3)
    assert shapes["pool1_mask"] == (4, 6, 6, 3)
    assert shapes["conv2_output"] == (5, 6, 6, 3)
    assert shapes["pool2_output"] == (3, 5, 3, 3)       # (N, C, H, W) for Flatten
    assert shapes["pool2_mask"] == (5, 3, 3, 3)         # the mask follows pool2's data
    # the gradients of batch-last edges are batch-last too
    assert shapes["conv2_backward_data_grad"] == (4, 6, 6, 3)
    assert shapes["pool2_backward_data_grad"] == (5, 6, 6, 3)
    assert "conv2 (Convolution [batch-last in, out])" in exe.debug_str()


@pytest.mark.parametrize("act2,kw,want", [
    # act2 is not fused: a plain Activation reads conv2, which writes batch-first
    ("sigmoid", {}, {"pool1": (True, True), "conv2": (True, False), "pool2": (False, False)}),
    # pool1's output is a graph output (the user sees (N, C, ...)), or read twice
    ("tanh", {"expose": "pool1"}, {"pool1": (True, False), "conv2": (False, True)}),
    ("tanh", {"reread": "pool1"}, {"pool1": (True, False), "conv2": (False, True)}),
])
def test_leaves_other_edges_batch_first(act2, kw, want):
    got = _layouts(_convnet(act2, **kw))
    assert {name: got[name] for name in want} == want
    assert got["conv1"] == (False, True)


def test_convolution_reading_a_convolution_and_the_switches():
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="c1")
    net = mx.sym.Convolution(net, kernel=(3, 3), num_filter=4, name="c2")
    sym = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=2, name="fc"),
                               name="softmax")
    got = _layouts(sym)
    assert got["c1"] == (False, True) and got["c2"] == (True, False)
    with layouts(False):
        assert _layouts(sym)["c1"] == (False, False)
    assert _layouts(sym)["c1"] == (False, True)  # the setting came back
    graph = sym._graph
    shapes = mx.passes.infer_graph_shapes(graph, _shapes())
    assert batch_last(graph, shapes, mx.cpu()) is not graph
    # on a GPU convolution is cuDNN's, in its own layout; making a gpu Context needs no device
    assert batch_last(graph, shapes, mx.gpu(0)) is graph
    assert len(compile_graph(graph, _shapes(), {}, {}).graph.nodes) == len(graph.nodes)


def _bound(sym, on, wide=False, seed=0):
    with layouts(on):
        return bind_random(sym, _shapes(wide), seed)


@pytest.mark.parametrize("act2", ["tanh", "relu"])
def test_batch_last_executor_equals_batch_first_to_the_byte(act2):
    sym = _convnet(act2)
    assert _layouts(sym)["conv2"] == (True, True)
    assert_same_step(*trained_pair(_bound, sym))


def test_wide_first_convolution_differs_only_in_the_order_of_sums():
    # a 20-wide conv1 works channels-batch batch-first and batch-last here: its GEMM and its
    # weight and bias gradient sums run over the pixels in another order
    sym = _convnet()
    a, b = trained_pair(lambda s, on: _bound(s, on, wide=True), sym)
    np.testing.assert_allclose(a.outputs[0].asnumpy(), b.outputs[0].asnumpy(), rtol=1e-5)
    for name, grad in a.grad_dict.items():
        if grad is not None:
            want = b.grad_dict[name].asnumpy()
            np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-4,
                                       atol=1e-5 * np.abs(want).max(), err_msg=name)


def test_monitor_sees_every_array_in_mxnets_layout():
    sym = _convnet()
    seen = {on: monitored(_bound(sym, on), is_train=True) for on in (True, False)}
    assert [n for n, _ in seen[True]] == [n for n, _ in seen[False]]
    names = [n for n, _ in seen[True]]
    assert "conv1_output" in names and "pool1_mask" in names and "conv2_data" in names
    for (name, x), (_, y) in zip(seen[True], seen[False]):
        assert x.shape == y.shape and x.tobytes() == y.tobytes(), name


def test_module_training_with_batch_last_edges_matches_batch_first():
    sym = _convnet()
    params = {}
    for on in (True, False):
        with layouts(on):  # on two devices: each executor has its own plan
            mod, it = fit_convnet(sym, [mx.cpu(0), mx.cpu(1)], 6)
        params[on] = mod.get_params()[0]
        assert mod.predict(it).shape == (12, 3)
    for name in params[True]:
        assert params[True][name].asnumpy().tobytes() == params[False][name].asnumpy().tobytes()


def test_layout_pass_runs_after_fusion():
    # without the fusion, Activation sits between each convolution and its pooling: nothing
    # is batch-last (an Activation is not one of the ops that store batch-last)
    sym = _convnet()
    graph = sym._graph
    shapes = mx.passes.infer_graph_shapes(graph, _shapes())
    types = mx.passes.infer_graph_types(graph, {"data": np.dtype(np.float32)})
    assert batch_last(graph, shapes, mx.cpu()) is graph
    fused = fuse(graph, shapes, types, mx.cpu())
    assert batch_last(fused, mx.passes.infer_graph_shapes(fused, _shapes()), mx.cpu()) \
        is not fused


def _vgg(second_act=None, head_act=False):
    """conv1 - relu1 [- second_act] - conv2 - relu2 - max pool (fused) - fc: the activations
    between convolutions pass the batch-last layout through. With head_act, a relu after the
    pooling feeds the FullyConnected."""
    net = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=4, pad=(1, 1),
                             name="conv1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    if second_act:
        net = mx.sym.Activation(net, act_type=second_act, name="act1b")
    net = mx.sym.Convolution(net, kernel=(3, 3), num_filter=5, pad=(1, 1), name="conv2")
    net = mx.sym.Activation(net, act_type="relu", name="relu2")
    net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
    if head_act:
        net = mx.sym.Activation(net, act_type="relu", name="relu3")
    net = mx.sym.FullyConnected(mx.sym.Flatten(net), num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def test_activations_between_convolutions_pass_the_layout_through():
    got = _layouts(_vgg())
    assert got["conv1"] == (False, True) and got["relu1"] == (True, True)
    assert got["conv2"] == (True, True) and got["pool2"] == (True, False)
    # a chain of two activations: both batch-last
    got = _layouts(_vgg("sigmoid"))
    assert got["relu1"] == got["act1b"] == (True, True) and got["conv2"] == (True, True)
    # an activation after the last batch-last op, read by Flatten: batch-first throughout
    got = _layouts(_vgg(head_act=True))
    assert got["pool2"] == (True, False) and got["relu3"] == (False, False)


def test_activation_with_a_batch_first_side_stays_batch_first():
    # conv - relu - FullyConnected: the relu's output goes to an op that needs (N, C, ...), so
    # neither of its sides is batch-last and the convolution writes batch-first
    net = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=4, name="c1")
    net = mx.sym.Activation(net, act_type="relu", name="r1")
    net = mx.sym.Activation(net, act_type="tanh", name="r2")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=2, name="fc"),
                               name="softmax")
    got = _layouts(net)
    assert got["c1"] == got["r1"] == got["r2"] == (False, False)


@pytest.mark.parametrize("second_act", [None, "sigmoid"])
def test_activation_pass_through_gives_the_same_bytes(second_act):
    sym = _vgg(second_act)
    assert_same_step(*trained_pair(_bound, sym))
    seen = {on: monitored(_bound(sym, on), is_train=True) for on in (True, False)}
    assert [n for n, _ in seen[True]] == [n for n, _ in seen[False]]
    assert "relu1_output" in [n for n, _ in seen[True]]
    for (name, x), (_, y) in zip(seen[True], seen[False]):
        assert x.shape == y.shape and x.tobytes() == y.tobytes(), name
