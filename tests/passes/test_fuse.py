"""The fusion pass (minimod/passes/fuse.py): which nodes it fuses, and executors with fused
nodes compute what executors without them compute (forward, gradients, monitor, training)."""
import numpy as np
import pytest

import minimod as mx
from minimod.passes import compile_graph, fuse, fusion

from .graphs import (
    CONVNET_SHAPES,
    assert_same_step,
    bind_random,
    convnet,
    fit_convnet,
    monitored,
    trained_pair,
)

SHAPES = CONVNET_SHAPES


def _plan_ops(sym, ctx=None):
    exe = sym.simple_bind(ctx or mx.cpu(), **SHAPES)
    return [(n.name, n.op.name) for n in exe._plan.graph.nodes[:exe._plan.num_forward_nodes]
            if n.op is not None]


def test_fuses_tanh_and_relu_before_disjoint_max_pooling():
    ops = _plan_ops(convnet())
    assert ("pool1", "Activation+Pooling") in ops and ("pool2", "Activation+Pooling") in ops
    assert not any(name in ("act1", "act2") for name, _ in ops)


@pytest.mark.parametrize("kw", [
    {"act1": "sigmoid"},                                         # not a fused activation
    {"pool1": {"pool_type": "avg"}},                             # not max pooling
    {"pool1": {"kernel": (3, 3), "stride": (2, 2)}},             # overlapping windows
    {"pool1": {"pad": (1, 1)}},                                  # padding
    {"pool1": {"pooling_convention": "full", "kernel": (5, 5),
               "stride": (5, 5)}},                               # 'full' pads 12 to 15
    {"expose": "act1"},                                          # activation is an output
    {"reread": "act1"},                                          # activation read twice
])
def test_leaves_other_patterns_alone(kw):
    ops = _plan_ops(convnet(**kw))
    assert ("act1", "Activation") in ops
    assert ("pool1", "Pooling") in ops


def test_off_switch_and_non_cpu_contexts_keep_the_graph():
    sym = convnet()
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
        return bind_random(sym, SHAPES, seed, grad_req)


@pytest.mark.parametrize("act_type", ["tanh", "relu"])
def test_fused_executor_equals_unfused_forward_and_backward(act_type):
    a, b = trained_pair(_bound, convnet(act_type))
    assert_same_step(a, b, exact=False)
    # the activation's full-size output and its gradient are not planned
    assert a._plan.memory.planned_bytes < b._plan.memory.planned_bytes


def test_monitor_sees_the_fused_activation_as_the_unfused_executor_does():
    sym = convnet()
    seen = {fused: monitored(_bound(sym, fused)) for fused in (True, False)}
    assert [n for n, _ in seen[True]] == [n for n, _ in seen[False]]
    assert "act1_output" in [n for n, _ in seen[True]]
    for (name, x), (_, y) in zip(seen[True], seen[False]):
        assert np.array_equal(x, y), name


def test_module_training_with_fused_nodes_matches_unfused():
    sym = convnet()
    params = {}
    for fused in (True, False):
        with fusion(fused):
            mod, _ = fit_convnet(sym, mx.cpu(), 3)
        params[fused] = mod.get_params()[0]
    for name in params[True]:
        assert np.array_equal(params[True][name].asnumpy(), params[False][name].asnumpy()), name
