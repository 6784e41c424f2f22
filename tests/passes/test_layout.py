"""The layout pass (minimod/passes/layout.py): which edges it stores batch-last, and executors
with batch-last edges compute what executors without them compute (forward, gradients,
monitor, training), the plan's shapes saying how each array is stored."""
import numpy as np
import pytest

import minimod as mx
from minimod.passes import batch_last, compile_graph, fuse, layouts

from .graphs import (
    CONVNET_SHAPES,
    assert_same_step,
    bind_random,
    convnet,
    fit_convnet,
    head,
    mlp,
    monitored,
    trained_pair,
)


def _convnet(act2="tanh", **kw):
    """The passes' convnet with tanh at act1 (`kw`: convnet's expose / reread)."""
    return convnet("tanh", act2, **kw)


def _shapes(wide=False):
    """14-wide data: conv1's 12-wide output works batch-last with or without the pass; 22-wide:
    conv1 works channels-by-batch without it."""
    return {"data": (3, 2, 22, 22), "softmax_label": (3,)} if wide else CONVNET_SHAPES


def _layouts(sym, ctx=None, wide=False, shapes=None):
    """{node name: (data_last, out_last)} of the forward nodes of sym's plan."""
    exe = sym.simple_bind(ctx or mx.cpu(), **(shapes or _shapes(wide)))
    plan = exe._plan
    return {n.name: (getattr(n.op, "data_last", False), getattr(n.op, "out_last", False))
            for n in plan.graph.nodes[:plan.num_forward_nodes] if n.op is not None}


def test_edges_between_convolutions_and_fused_pooling_are_batch_last():
    got = _layouts(_convnet())
    assert got["conv1"] == (False, True)   # the data variable is the user's: batch-first
    assert got["pool1"] == (True, True)
    assert got["conv2"] == (True, True)
    assert got["pool2"] == (True, False)   # the Reshape reads it: batch-first
    assert got["fc"] == (False, False)


def test_plan_shapes_are_the_stored_ones():
    exe = _convnet().simple_bind(mx.cpu(), **_shapes())
    plan, graph = exe._plan, exe._plan.graph
    shapes = {graph.entry_name(e): plan.shapes[e] for e in range(graph.num_entries)}
    assert shapes["conv1_output"] == (4, 12, 12, 3)     # (C, H, W, N)
    assert shapes["pool1_output"] == (4, 6, 6, 3)
    assert shapes["pool1_mask"] == (4, 6, 6, 3)
    assert shapes["conv2_output"] == (5, 6, 6, 3)
    assert shapes["pool2_output"] == (3, 5, 3, 3)       # (N, C, H, W) for the Reshape
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
    assert got["c1"] == (False, True) and got["c2"] == (True, True)
    assert got["fc"] == (True, False)
    with layouts(False):
        assert _layouts(sym)["c1"] == (False, False)
    assert _layouts(sym)["c1"] == (False, True)  # the setting came back
    graph = sym._graph
    shapes = mx.passes.infer_graph_shapes(graph, _shapes())
    assert batch_last(graph, shapes, mx.cpu()) is not graph
    # on a GPU convolution is cuDNN's, in its own layout; making a gpu Context needs no device
    assert batch_last(graph, shapes, mx.gpu(0)) is graph
    assert len(compile_graph(graph, _shapes(), {}, {}).graph.nodes) == len(graph.nodes)


def _bound(sym, on, wide=False, seed=0, shapes=None):
    with layouts(on):
        return bind_random(sym, shapes or _shapes(wide), seed)


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


def _vgg(second_act=None, head_act=False, flatten="reshape"):
    """conv1 - relu1 [- second_act] - conv2 - relu2 - max pool (fused) - fc: the activations
    between convolutions pass the batch-last layout through. With head_act, a relu after the
    pooling feeds the FullyConnected (through graphs.head of kind `flatten`)."""
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
    return mx.sym.SoftmaxOutput(head(net, flatten), name="softmax")


def test_activations_between_convolutions_pass_the_layout_through():
    got = _layouts(_vgg())
    assert got["conv1"] == (False, True) and got["relu1"] == (True, True)
    assert got["conv2"] == (True, True) and got["pool2"] == (True, False)
    # a chain of two activations: both batch-last
    got = _layouts(_vgg("sigmoid"))
    assert got["relu1"] == got["act1b"] == (True, True) and got["conv2"] == (True, True)
    # an activation after the last batch-last op, read by the Reshape: batch-first throughout
    got = _layouts(_vgg(head_act=True))
    assert got["pool2"] == (True, False) and got["relu3"] == (False, False)
    # the same activation read through Flatten by the FullyConnected: batch-last to fc's data
    got = _layouts(_vgg(head_act=True, flatten="flatten"))
    assert got["pool2"] == got["relu3"] == got["flat"] == (True, True)
    assert got["fc"] == (True, False)


def test_activation_with_a_batch_first_side_stays_batch_first():
    # conv - relu - tanh - average pooling: the activations' output goes to an op that needs
    # (N, C, ...), so neither of their sides is batch-last and the convolution writes
    # batch-first
    net = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=4, name="c1")
    net = mx.sym.Activation(net, act_type="relu", name="r1")
    net = mx.sym.Activation(net, act_type="tanh", name="r2")
    net = mx.sym.Pooling(net, pool_type="avg", kernel=(2, 2), stride=(2, 2), name="avg")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=2, name="fc"),
                               name="softmax")
    got = _layouts(net)
    assert got["c1"] == got["r1"] == got["r2"] == got["avg"] == (False, False)


@pytest.mark.parametrize("second_act", [None, "sigmoid"])
def test_activation_pass_through_gives_the_same_bytes(second_act):
    sym = _vgg(second_act)
    assert_same_step(*trained_pair(_bound, sym))
    seen = {on: monitored(_bound(sym, on), is_train=True) for on in (True, False)}
    assert [n for n, _ in seen[True]] == [n for n, _ in seen[False]]
    assert "relu1_output" in [n for n, _ in seen[True]]
    for (name, x), (_, y) in zip(seen[True], seen[False]):
        assert x.shape == y.shape and x.tobytes() == y.tobytes(), name


# ----------------------------------------------------------------------------- FullyConnected

def _assert_close(a, b, what):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6 * max(np.abs(b).max(), 1),
                               err_msg=what)


def test_fully_connected_layers_and_activations_between_them_are_batch_last():
    sym, shapes = mlp()  # fc1 - relu1 - fc2 - tanh2 - fc3 - softmax
    got = _layouts(sym, shapes=shapes)
    assert got["fc1"] == (False, True)  # it reads the user's data
    assert got["relu1"] == got["fc2"] == got["tanh2"] == (True, True)
    assert got["fc3"] == (True, False)  # softmax reads it as (N, classes)
    exe = sym.simple_bind(mx.cpu(), **shapes)
    plan, graph = exe._plan, exe._plan.graph
    stored = {graph.entry_name(e): plan.shapes[e] for e in range(graph.num_entries)}
    assert stored["fc1_output"] == (16, 6) and stored["fc3_output"] == (6, 5)
    assert stored["fc2_backward_data_grad"] == (16, 6)
    assert "fc2 (FullyConnected [batch-last in, out])" in exe.debug_str()


def test_fully_connected_edges_that_stay_batch_first():
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    fc2 = mx.sym.FullyConnected(fc1, num_hidden=6, name="fc2")
    out = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(fc2, num_hidden=3, name="fc3"),
                               name="softmax")
    shapes = {"data": (4, 5), "softmax_label": (4,)}
    # fc2's output is a graph output as well: the user sees it as (N, 6)
    got = _layouts(mx.sym.Group([out, fc2]), shapes=shapes)
    assert got["fc1"] == (False, True) and got["fc2"] == (True, False)
    assert got["fc3"] == (False, False)
    # flatten=False keeps every leading axis, so it has no one batch axis to store last
    fc2 = mx.sym.FullyConnected(fc1, num_hidden=6, flatten=False, name="fc2")
    out = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(fc2, num_hidden=3, name="fc3"),
                               name="softmax")
    got = _layouts(out, shapes=shapes)
    assert got["fc1"] == got["fc2"] == (False, False) and got["fc3"] == (False, False)


def test_mlp_with_batch_last_layers_computes_what_batch_first_does():
    # the GEMMs run on transposed operands: the same values up to the order of their sums
    sym, shapes = mlp()
    a, b = trained_pair(lambda s, on: _bound(s, on, shapes=shapes), sym)
    _assert_close(a.outputs[0].asnumpy(), b.outputs[0].asnumpy(), "output")
    for name, grad in a.grad_dict.items():
        if grad is not None:
            assert grad.shape == b.grad_dict[name].shape
            _assert_close(grad.asnumpy(), b.grad_dict[name].asnumpy(), name)
    seen = {on: monitored(_bound(sym, on, shapes=shapes), is_train=True) for on in (True, False)}
    assert [n for n, _ in seen[True]] == [n for n, _ in seen[False]]
    assert "relu1_output" in [n for n, _ in seen[True]]
    for (name, x), (_, y) in zip(seen[True], seen[False]):
        assert x.shape == y.shape, name
        _assert_close(x, y, name)


def test_module_fit_with_batch_last_layers():
    sym, _ = mlp()
    rng = np.random.RandomState(5)
    data = rng.randn(24, 10).astype(np.float32)
    label = rng.randint(0, 5, 24).astype(np.float32)
    params, batch_last_nodes = {}, {}
    for on in (True, False):
        with layouts(on):  # two devices, each executor with its own plan
            mod = mx.mod.Module(sym, context=[mx.cpu(0), mx.cpu(1)])
            it = mx.io.NDArrayIter(data, label, batch_size=8)
            mx.random.seed(1)
            mod.fit(it, num_epoch=3, optimizer="sgd", initializer=mx.init.Xavier(),
                    optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
        params[on] = mod.get_params()[0]
        assert mod.predict(it).shape == (24, 5)
        batch_last_nodes[on] = [n.name for n in mod._exec_group.execs[1]._plan.graph.nodes
                                if getattr(n.op, "out_last", False)]
    assert batch_last_nodes == {True: ["fc1", "relu1", "fc2", "tanh2"], False: []}
    for name in params[True]:
        _assert_close(params[True][name].asnumpy(), params[False][name].asnumpy(), name)


def test_flatten_passes_the_layout_on_to_the_fully_connected():
    sym = _convnet(flatten="flatten")
    got = _layouts(sym)
    assert got["pool2"] == got["flat"] == (True, True)
    assert got["fc"] == (True, False)  # softmax reads it as (N, classes)
    exe = sym.simple_bind(mx.cpu(), **_shapes())
    plan, graph = exe._plan, exe._plan.graph
    stored = {graph.entry_name(e): plan.shapes[e] for e in range(graph.num_entries)}
    assert stored["pool2_output"] == (5, 3, 3, 3) and stored["flat_output"] == (45, 3)
    assert stored["fc_output"] == (3, 3)
    # the FullyConnected's GEMM reads transposed data: the same values up to its sums' order
    a, b = trained_pair(_bound, sym)
    _assert_close(a.outputs[0].asnumpy(), b.outputs[0].asnumpy(), "output")
    for name, grad in a.grad_dict.items():
        if grad is not None:
            _assert_close(grad.asnumpy(), b.grad_dict[name].asnumpy(), name)
    seen = {on: monitored(_bound(sym, on), is_train=True) for on in (True, False)}
    assert [n for n, _ in seen[True]] == [n for n, _ in seen[False]]
    for (name, x), (_, y) in zip(seen[True], seen[False]):
        assert x.shape == y.shape, name
        _assert_close(x, y, name)
