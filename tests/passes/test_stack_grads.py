"""The weight-gradient stacking pass on GPUs: the steps of an unrolled RNN share the
hidden-to-hidden weight, and its gradient (and the bias's) becomes one StepWeightGrad over all
the steps instead of one GEMM and one bias sum per step and two add_n
(minimod/passes/stack_grads.py, minimod/kernels/time_steps.py).

Which nodes it makes is checked on compiled plans everywhere (a gpu Context needs no device
to compile). The executor cases need a GPU or the CuPy stand-in (tests/test_fake_gpu.py runs
this file on it). The stacked sums add in another order than the steps' add_n, so the
gradients match the unstacked executor's to rounding.
"""
import numpy as np
import pytest

import minimod as mx
from minimod.kernels.time_steps import StepStack, StepWeightGrad
from minimod.passes import compiler, stacking
from minimod.passes.compiler import compile_graph
from minimod.passes.gradient import BackwardOp

from ..conftest import needs_gpu
from .graphs import (
    assert_same_gradients,
    captured_with_and_without,
    gradient_steps,
    without_rewrite,
)


def _rnn(merge=True, gru=False, seq_len=4, begin=False):
    cell = mx.rnn.GRUCell(5, prefix="g_") if gru else mx.rnn.LSTMCell(5, prefix="l_")
    states = None
    if begin:  # the begin states fed as variables
        states = [mx.sym.Variable("begin%d" % i) for i in range(len(cell.state_info))]
    outs, _ = cell.unroll(seq_len, mx.sym.Variable("data"), begin_state=states,
                          merge_outputs=merge)
    loss = (mx.sym.sum(outs * outs) if merge
            else mx.sym.add_n(*[mx.sym.sum(o * o) for o in outs]))
    shapes = {"data": (3, seq_len, 4)}
    if begin:
        shapes.update({"begin%d" % i: (3, 5) for i in range(len(cell.state_info))})
    return mx.sym.MakeLoss(loss, name="loss"), shapes


def _plan(sym, shapes, ctx=mx.gpu(0), grad_req="write"):
    graph = sym._graph
    names = [graph.nodes[i].name for i in graph.argument_ids()]
    dtypes = {name: np.dtype(np.float32) for name in names}
    req = grad_req if isinstance(grad_req, dict) else {name: grad_req for name in names}
    return compile_graph(graph, shapes, dtypes, req, mx.passes.default_options(), ctx)


def _nodes(plan, cls):
    return [n for n in plan.graph.nodes if type(n.op) is cls]


@pytest.mark.parametrize("merge", [True, False], ids=["merged", "per-step outputs"])
def test_the_steps_weight_gradients_become_one_node(merge):
    plan = _plan(*_rnn(merge))
    grads, = _nodes(plan, StepWeightGrad)
    assert grads.name == "l_h2h_weight_step_grads" and grads.op.sum_names == [
        "l_h2h_weight_grad_sum", "l_h2h_bias_grad_sum"]
    assert ("stack_grads", True) in plan.rewrites
    # no add_n sums the h2h gradients any more; each step's node computes its data's only
    sums = [n.name for n in plan.graph.nodes if n.op is not None and n.op.name == "add_n"]
    assert not any(name.startswith("l_h2h") for name in sums)
    steps = {n.name: n.op for n in plan.graph.nodes if isinstance(n.op, BackwardOp)
             and n.name.endswith("_h2h_backward")}
    assert sorted(steps) == ["l_t%d_h2h_backward" % t for t in range(4)]
    assert all(op.moved == (1, 2) for op in steps.values())
    assert all(steps["l_t%d_h2h_backward" % t].wanted == (0,) for t in (1, 2, 3))
    # the first step's data is the begin state, whose gradient nobody asked for: its node
    # computes nothing and stays for the monitor
    first = plan.graph.node_id[id(next(n for n in plan.graph.nodes
                                       if n.name == "l_t0_h2h_backward"))]
    assert steps["l_t0_h2h_backward"].wanted == () and first in plan.memory.idle_nodes
    # the output gradients stacked in step order, and the data read as two runs: the begin
    # state alone, then steps 1-3 from the join of the outputs (or one made for them)
    heads = grads.inputs[0].node
    assert type(heads.op) is StepStack and len(heads.inputs) == 4
    if merge:
        assert grads.op.runs == [(0, 1), (0, 3)]
        assert grads.inputs[1].node.name == "l_begin_state_0"
        assert type(grads.inputs[2].node.op) is StepStack
    else:  # the begin state and steps 0-2's outputs joined for the product, in place
        assert grads.op.runs == [(0, 4)]
        data = grads.inputs[1].node
        assert type(data.op) is StepStack and data.name == "l_h2h_weight_step_data0"
        assert data.inputs[0].node.name == "l_begin_state_0"
    # the user's gradient arrays are written by the new node itself
    assert {"l_h2h_weight", "l_h2h_bias"} <= plan.direct_grads


def test_a_gru_a_fed_begin_state_and_an_unwanted_bias():
    for sym, shapes in (_rnn(gru=True), _rnn(begin=True)):
        grads, = _nodes(_plan(sym, shapes), StepWeightGrad)
        assert grads.op.runs == [(0, 1), (0, 3)]
    # a fed begin state: its gradient is asked for, so the first step's node stays
    plan = _plan(*_rnn(begin=True))
    assert any(n.name == "l_t0_h2h_backward" for n in plan.graph.nodes)
    sym, shapes = _rnn()
    names = [sym._graph.nodes[i].name for i in sym._graph.argument_ids()]
    req = {name: "null" if name == "l_h2h_bias" else "write" for name in names}
    grads, = _nodes(_plan(sym, shapes, grad_req=req), StepWeightGrad)
    assert grads.op.no_bias and grads.op.outputs() == ["weight_grad"]


def test_cpu_plans_placed_plans_and_stacking_off_keep_the_steps():
    sym, shapes = _rnn()
    for ctx in (mx.cpu(), mx.cpu_pinned(0)):
        assert not _nodes(_plan(sym, shapes, ctx), StepWeightGrad)
    with stacking(False):
        assert not _nodes(_plan(sym, shapes), StepWeightGrad)
    # a weight shared with a product outside the steps: its sum is not the steps' alone
    data = mx.sym.Variable("data")
    weight = mx.sym.Variable("w")
    parts = mx.sym.SliceChannel(data, axis=1, num_outputs=3, squeeze_axis=True)
    h = mx.sym.FullyConnected(parts[0], weight=weight, num_hidden=4, no_bias=True)
    for t in (1, 2):
        h = mx.sym.FullyConnected(h + parts[t], weight=weight, num_hidden=4, no_bias=True)
    extra = mx.sym.FullyConnected(mx.sym.Variable("x"), weight=weight, num_hidden=4,
                                  no_bias=True, flatten=False)
    loss = mx.sym.MakeLoss(mx.sym.sum(h) + mx.sym.sum(extra))
    plan = _plan(loss, {"data": (2, 3, 4), "x": (2, 1, 4)})
    assert not _nodes(plan, StepWeightGrad)


def _train(sym, shapes, stacked, grad_req="write", steps=2):
    with stacking(stacked):
        exe = sym.simple_bind(mx.gpu(0), grad_req=grad_req, **shapes)
    rng = np.random.RandomState(0)
    for arr in exe.arg_dict.values():  # quarters: every product and partial sum is exact
        arr[:] = rng.randint(-4, 5, arr.shape) * 0.25
    for grad in exe.grad_dict.values():
        if grad is not None:
            grad[:] = 0.5
    return exe, gradient_steps(exe, steps)


@needs_gpu
@pytest.mark.parametrize("case", ["merged", "per-step", "gru", "begin", "add"])
def test_stacked_gradients_equal_the_steps_gradients(case, monkeypatch):
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "0")
    sym, shapes = _rnn(merge=case != "per-step", gru=case == "gru", begin=case == "begin")
    req = "add" if case == "add" else "write"
    stacked, got = _train(sym, shapes, True, req)
    plain, want = _train(sym, shapes, False, req)
    assert _nodes(stacked._plan, StepWeightGrad) and not _nodes(plain._plan, StepWeightGrad)
    assert_same_gradients(got, want, lambda a, b, err_msg: np.testing.assert_allclose(
        a, b, rtol=1e-5, atol=1e-6, err_msg=err_msg))


@needs_gpu
def test_the_monitor_sees_each_steps_gradients_and_the_sums(monkeypatch):
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "0")
    sym, shapes = _rnn()
    seen = {}
    for stacked in (True, False):
        if not stacked:
            monkeypatch.setattr(compiler, "stack_weight_grads", without_rewrite)
        exe, _ = _train(sym, shapes, True, steps=0)
        got = {}
        exe.set_monitor_callback(lambda name, arr: got.__setitem__(name, arr.asnumpy()))
        exe.forward(is_train=True)
        exe.backward()
        seen[stacked] = got
    names = {"l_t2_h2h_backward_output1", "l_t2_h2h_backward_output2",
             "l_t0_h2h_backward_output1", "l_t0_h2h_backward_output2",
             "l_h2h_weight_grad_sum_output0", "l_h2h_bias_grad_sum_output0"}
    assert names <= set(seen[True])
    assert np.abs(seen[True]["l_t2_h2h_backward_output1"]).sum() > 0
    for name in names:
        np.testing.assert_allclose(seen[True][name], seen[False][name], rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    # the same names, the pass's own stacks reporting nothing, and the same values
    assert sorted(seen[True]) == sorted(seen[False])
    for name in seen[True]:
        np.testing.assert_allclose(seen[True][name], seen[False][name], rtol=1e-5, atol=1e-6,
                                   err_msg=name)


@needs_gpu
def test_the_output_gradients_are_written_straight_into_their_stack(monkeypatch):
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "0")
    for merge in (True, False):
        exe, _ = _train(*_rnn(merge), True, steps=1)
        plan = exe._plan
        joins = [i for i, n in enumerate(plan.graph.nodes) if type(n.op) is StepStack
                 and n.name.startswith("l_h2h_weight_step")]
        assert len(joins) == (1 if merge else 2)
        assert set(joins) <= plan.memory.idle_nodes


@needs_gpu
def test_a_captured_step_holds_fewer_kernels(monkeypatch):
    kernels, _ = captured_with_and_without(monkeypatch, "stack_weight_grads", *_rnn(seq_len=8))
    # per step a weight GEMM and a bias sum, and the two sums of eight: three kernels instead
    assert kernels[False] - kernels[True] >= 2 * 8 + 2 - 3, kernels


def test_the_step_weight_gradient_reads_its_runs():
    """Reference math: rows of the stacked output gradients pair with each run of steps."""
    rng = np.random.default_rng(0)
    g = rng.standard_normal((4, 3, 5))
    begin, rest = rng.standard_normal((3, 2)), rng.standard_normal((5, 3, 1, 2))
    op = StepWeightGrad(5, 2, False, [(0, 1), (1, 3)], ["w_sum", "b_sum"])
    out = [np.full((5, 2), np.nan), np.full(5, np.nan)]
    op.forward(np, [g, begin, rest], [], out, True)
    xs = [begin] + [rest[t, :, 0] for t in (1, 2, 3)]
    np.testing.assert_allclose(out[0], sum(g[t].T @ xs[t] for t in range(4)), rtol=1e-12)
    np.testing.assert_allclose(out[1], g.sum((0, 1)), rtol=1e-12)
    assert op.gradient_reports(np, "n", [g, begin, rest], out) == [("w_sum_output0", out[0]),
                                                                  ("b_sum_output0", out[1])]
