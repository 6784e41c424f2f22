"""The gradient-sum fusion on GPUs: a fused RNN cell's gradient node reads the two gradients
of the cell's output and adds them itself, where the gradient pass put an add_n before it
(minimod/passes/fuse_grads.py, SummedCellGrad in minimod/kernels/fused_cells.py).

Which nodes it changes is checked on compiled plans everywhere. The executor cases need a
GPU or the CuPy stand-in (tests/test_fake_gpu.py runs this file on it). The kernel adds the
two as the add_n did, one rounding, so gradients and what the monitor sees must equal the
unfused gradient nodes' bit for bit on the stand-in (to rounding where NVRTC compiles).
"""
import numpy as np
import pytest

import minimod as mx
from minimod.kernels.fused_cells import SummedCellGrad
from minimod.passes import compiler, fusion
from minimod.passes.compiler import compile_graph

from ..conftest import needs_gpu
from .graphs import (
    assert_same_gradients,
    captured_with_and_without,
    gradient_steps,
    same_values,
    without_rewrite,
)


def _rnn(gru=False, seq_len=4, merge=True):
    cell = mx.rnn.GRUCell(5, prefix="g_") if gru else mx.rnn.LSTMCell(5, prefix="l_")
    outs, _ = cell.unroll(seq_len, mx.sym.Variable("data"), merge_outputs=merge)
    loss = (mx.sym.sum(outs * outs) if merge
            else mx.sym.add_n(*[mx.sym.sum(o * o) for o in outs]))
    return mx.sym.MakeLoss(loss, name="loss"), {"data": (3, seq_len, 4)}


def _summed(plan):
    return [n for n in plan.graph.nodes if type(n.op) is SummedCellGrad]


def _plan(sym, shapes, ctx=mx.gpu(0)):
    graph = sym._graph
    names = [graph.nodes[i].name for i in graph.argument_ids()]
    return compile_graph(graph, shapes, {n: np.dtype(np.float32) for n in names},
                         {n: "write" for n in names}, mx.passes.default_options(), ctx)


@pytest.mark.parametrize("gru", [False, True], ids=["LSTM", "GRU"])
def test_each_cell_gradient_absorbs_its_outputs_sum(gru):
    plan = _plan(*_rnn(gru))
    prefix, last = ("g_", "g_t3_") if gru else ("l_", "l_t3_")
    summed = _summed(plan)
    # the last step's output has one reader (the sequence), so no sum before its gradient
    assert sorted(n.name for n in summed) == ["%st%d_%s_backward" % (
        prefix, t, "out" if gru else "state") for t in range(3)]
    assert not any(n.name.startswith(last) for n in summed)
    for node in summed:  # a GRU's h' has a third reader: the next cell itself
        assert node.op.sum_name.endswith("_grad_sum") and node.op.more == (2 if gru else 1)
        assert len(node.inputs) == len(node.op.backward_op.arguments()) + node.op.more
    sums = {n.name for n in plan.graph.nodes if n.op is not None and n.op.name == "add_n"}
    assert not sums & {n.op.sum_name for n in summed}
    assert ("fuse_grads", True) in plan.rewrites


def test_cpu_plans_and_fusion_off_keep_the_sums():
    sym, shapes = _rnn()
    assert not _summed(_plan(sym, shapes, mx.cpu()))
    with fusion(False):
        plan = _plan(sym, shapes)
    assert not _summed(plan) and ("fuse_grads", True) not in plan.rewrites


def _train(sym, shapes, monitor=None, steps=2):
    exe = sym.simple_bind(mx.gpu(0), **shapes)
    rng = np.random.RandomState(0)
    for arr in exe.arg_dict.values():
        arr[:] = rng.uniform(-1, 1, arr.shape)
    if monitor is not None:
        exe.set_monitor_callback(lambda name, arr: monitor.__setitem__(name, arr.asnumpy()))
    return exe, gradient_steps(exe, steps)


@needs_gpu
@pytest.mark.parametrize("case", ["LSTM", "GRU", "per-step outputs"])
def test_fused_sums_compute_what_the_add_n_computed(case, monkeypatch):
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "0")
    sym, shapes = _rnn(gru=case == "GRU", merge=case != "per-step outputs")
    runs = {}
    for fused in (True, False):
        if not fused:
            monkeypatch.setattr(compiler, "fuse_gradient_sums", without_rewrite)
        seen = {}
        exe, grads = _train(sym, shapes, seen)
        assert bool(_summed(exe._plan)) == fused
        runs[fused] = grads, seen
    (grads, seen), (want_grads, want_seen) = runs[True], runs[False]
    same = same_values(rtol=1e-5, atol=1e-6)
    assert_same_gradients(grads, want_grads, same)
    # the monitor sees the sums and the cells' gradients by their names, as before
    assert sorted(seen) == sorted(want_seen)
    assert any(name.endswith("_grad_sum_output0") for name in seen)
    for name in seen:
        same(seen[name], want_seen[name], err_msg=name)


@needs_gpu
def test_a_captured_step_holds_a_kernel_fewer_per_step(monkeypatch):
    kernels, grads = captured_with_and_without(monkeypatch, "fuse_gradient_sums",
                                               *_rnn(seq_len=8))
    assert kernels[False] - kernels[True] == 7, kernels
    assert_same_gradients(grads[True], grads[False])
