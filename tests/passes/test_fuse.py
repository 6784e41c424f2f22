"""The fusion pass (minimod/passes/fuse.py): which nodes it fuses, and executors with fused
nodes compute what executors without them compute (forward, gradients, monitor, training)."""
import numpy as np
import pytest

import minimod as mx
from minimod.passes import compile_graph, fuse, fusion
from minimod.symbol.graph import Graph


def _convnet(act_type="tanh", pool_kw=None, extra=None):
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv1")
    act = mx.sym.Activation(net, act_type=act_type, name="act1")
    kw = dict(pool_type="max", kernel=(2, 2), stride=(2, 2))
    kw.update(pool_kw or {})
    pool = mx.sym.Pooling(act, name="pool1", **kw)
    net = mx.sym.Convolution(pool, kernel=(3, 3), num_filter=5, pad=(1, 1), name="conv2")
    net = mx.sym.Activation(net, act_type="relu", name="act2")
    net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
    net = mx.sym.FullyConnected(mx.sym.Flatten(net), num_hidden=3, name="fc")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    if extra == "act_output":
        return mx.sym.Group([net, act])
    if extra == "second_reader":
        return mx.sym.Group([net, mx.sym.sum(act, name="side")])
    return net


SHAPES = {"data": (3, 2, 14, 14), "softmax_label": (3,)}


def _plan_ops(sym, ctx=None):
    exe = sym.simple_bind(ctx or mx.cpu(), **SHAPES)
    return [(n.name, n.op.name) for n in exe._plan.graph.nodes[:exe._plan.num_forward_nodes]
            if n.op is not None]


def test_fuses_tanh_and_relu_before_disjoint_max_pooling():
    ops = _plan_ops(_convnet())
    assert ("pool1", "Activation+Pooling") in ops and ("pool2", "Activation+Pooling") in ops
    assert not any(name in ("act1", "act2") for name, _ in ops)


@pytest.mark.parametrize("act_type,pool_kw,extra", [
    ("sigmoid", None, None),                                    # not a fused activation
    ("tanh", {"pool_type": "avg"}, None),                        # not max pooling
    ("tanh", {"kernel": (3, 3), "stride": (2, 2)}, None),        # overlapping windows
    ("tanh", {"pad": (1, 1)}, None),                             # padding
    ("tanh", {"pooling_convention": "full", "kernel": (5, 5),
              "stride": (5, 5)}, None),                          # 'full' pads 12 to 15
    ("tanh", None, "act_output"),                                # activation is an output
    ("tanh", None, "second_reader"),                             # activation read twice
])
def test_leaves_other_patterns_alone(act_type, pool_kw, extra):
    ops = _plan_ops(_convnet(act_type, pool_kw, extra))
    assert ("act1", "Activation") in ops
    assert ("pool1", "Pooling") in ops


def test_off_switch_and_non_cpu_contexts_keep_the_graph():
    sym = _convnet()
    with fusion(False):
        assert ("act1", "Activation") in _plan_ops(sym)
    assert ("act1", "Activation") not in _plan_ops(sym)  # the setting came back
    graph = sym._graph
    assert len(compile_graph(graph, SHAPES, {}, {}).graph.nodes) < len(graph.nodes)
    fwd_shapes = mx.passes.infer_graph_shapes(graph, SHAPES)
    fwd_types = mx.passes.infer_graph_types(graph, {"data": np.dtype(np.float32)})
    assert fuse(graph, fwd_shapes, fwd_types, mx.cpu()) is not graph
    # on a GPU the pooling is cuDNN's (or a tie analysis written for NumPy's tanh would not
    # hold): the graph stays as written; making a gpu Context needs no device
    assert fuse(graph, fwd_shapes, fwd_types, mx.gpu(0)) is graph


def _bound(sym, fused, seed=0, grad_req="write"):
    with fusion(fused):
        exe = sym.simple_bind(mx.cpu(), grad_req=grad_req, **SHAPES)
    rng = np.random.RandomState(seed)
    for name, arr in exe.arg_dict.items():
        if name == "softmax_label":
            arr[:] = rng.randint(0, 3, arr.shape)
        else:
            arr[:] = (rng.randn(*arr.shape) * 2).astype(np.float32)
    return exe


def _bits(arr):
    return arr.asnumpy().tobytes()


@pytest.mark.parametrize("act_type", ["tanh", "relu"])
def test_fused_executor_equals_unfused_forward_and_backward(act_type):
    sym = _convnet(act_type)
    a, b = _bound(sym, True), _bound(sym, False)
    for exe in (a, b):
        exe.forward(is_train=True)
        exe.backward()
    assert _bits(a.outputs[0]) == _bits(b.outputs[0])
    for name in a.grad_dict:
        if a.grad_dict[name] is not None:
            assert np.array_equal(a.grad_dict[name].asnumpy(), b.grad_dict[name].asnumpy()), name
    # the activation's full-size output and its gradient are not planned
    assert a._plan.memory.planned_bytes < b._plan.memory.planned_bytes


def test_monitor_sees_the_fused_activation_as_the_unfused_executor_does():
    sym = _convnet()
    seen = {}
    for fused in (True, False):
        exe = _bound(sym, fused)
        got = []
        exe.set_monitor_callback(lambda name, arr, got=got: got.append((name, arr.asnumpy())),
                                 monitor_all=True)
        exe.forward(is_train=False)
        seen[fused] = got
    assert [n for n, _ in seen[True]] == [n for n, _ in seen[False]]
    assert "act1_output" in [n for n, _ in seen[True]]
    for (name, x), (_, y) in zip(seen[True], seen[False]):
        assert np.array_equal(x, y), name


def test_module_training_with_fused_nodes_matches_unfused():
    sym = _convnet()
    rng = np.random.RandomState(3)
    data = rng.randn(12, 2, 14, 14).astype(np.float32)
    label = rng.randint(0, 3, 12).astype(np.float32)
    params = {}
    for fused in (True, False):
        with fusion(fused):
            mod = mx.mod.Module(sym, context=mx.cpu())
            it = mx.io.NDArrayIter(data, label, batch_size=3)
            mx.random.seed(1)
            mod.fit(it, num_epoch=2, optimizer="sgd", initializer=mx.init.Xavier(),
                    optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
        params[fused] = mod.get_params()[0]
    for name in params[True]:
        assert np.array_equal(params[True][name].asnumpy(), params[False][name].asnumpy()), name
