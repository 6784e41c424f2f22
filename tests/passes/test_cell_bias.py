"""The recurrent-bias rewrite on GPUs: a fused LSTM cell adds its hidden-to-hidden product's
bias, and the product node computes h W^T only (minimod/passes/cell_bias.py,
minimod/kernels/cell_bias.py).

Which nodes it changes is checked on compiled plans everywhere. The executor cases need a
GPU or the CuPy stand-in (tests/test_fake_gpu.py runs this file on it); that the values
equal the unfused nodes' bit for bit, and that the monitor sees every node as written, is
checked with the other fused-cell cases (tests/passes/test_fuse_cells.py), which run with
this rewrite on.
"""
import numpy as np
import pytest

import minimod as mx
from minimod import backend
from minimod.kernels.cell_bias import LSTM_CELL_BIASED, BiasedLSTMCell, ProductForCell
from minimod.kernels.fused_cells import SummedCellGrad
from minimod.passes import compiler, fusion
from minimod.passes.compiler import compile_graph
from minimod.passes.gradient import BackwardOp

from ..conftest import needs_gpu
from .graphs import captured_with_and_without, gradient_steps, without_rewrite


def _rnn(gru=False, seq_len=4):
    cell = mx.rnn.GRUCell(5, prefix="g_") if gru else mx.rnn.LSTMCell(5, prefix="l_")
    outs, _ = cell.unroll(seq_len, mx.sym.Variable("data"), merge_outputs=True)
    return mx.sym.MakeLoss(mx.sym.sum(outs * outs), name="loss"), {"data": (3, seq_len, 4)}


def _plan(sym, shapes, ctx=mx.gpu(0), req="write"):
    graph = sym._graph
    names = [graph.nodes[i].name for i in graph.argument_ids()]
    return compile_graph(graph, shapes, {n: np.dtype(np.float32) for n in names},
                         {n: req for n in names}, mx.passes.default_options(), ctx)


def _of(plan, cls):
    return [n for n in plan.graph.nodes if type(n.op) is cls]


@pytest.mark.parametrize("req", ["write", "null"], ids=["training", "inference"])
def test_each_lstm_cell_reads_its_recurrent_bias(req):
    plan = _plan(*_rnn(), req=req)
    products, cells = _of(plan, ProductForCell), _of(plan, BiasedLSTMCell)
    assert [n.name for n in products] == ["l_t%d_h2h" % t for t in range(4)]
    assert [n.name for n in cells] == ["l_t%d_state" % t for t in range(4)]
    for product, cell in zip(products, cells):
        assert cell.inputs[1].node is product
        assert cell.inputs[3].node.name == "l_h2h_bias" == product.inputs[2].node.name
        assert product.op.plain.attrs == product.op.attrs and not product.op.attrs.no_bias
    if req == "null":  # a plan without gradients: its forward nodes alone
        assert len(plan.graph.nodes) == plan.num_forward_nodes
        return
    # the gradient nodes run the new ops: their gradients are FullyConnected's and the cell's
    # (the cells' may absorb a sum)
    bwd = [n.op.backward_op if type(n.op) is SummedCellGrad else n.op
           for n in plan.graph.nodes if isinstance(n.op, (BackwardOp, SummedCellGrad))]
    ran = {id(op.fwd_op) for op in bwd}
    assert all(id(n.op) in ran for n in products + cells)
    assert ("cell_bias", True) in plan.rewrites


def test_grus_cpus_and_fusion_off_keep_the_products():
    assert not _of(_plan(*_rnn(gru=True)), ProductForCell)
    assert not _of(_plan(*_rnn(), ctx=mx.cpu()), ProductForCell)
    with fusion(False):
        assert not _of(_plan(*_rnn()), ProductForCell)
    # a product that something else reads too keeps its bias
    cell = mx.rnn.LSTMCell(5, prefix="l_")
    outs, _ = cell.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    h2h = outs.get_internals()["l_t1_h2h_output"]
    loss = mx.sym.MakeLoss(mx.sym.sum(outs) + mx.sym.sum(h2h), name="loss")
    plan = _plan(loss, {"data": (3, 2, 4)})
    assert [n.name for n in _of(plan, ProductForCell)] == ["l_t0_h2h"]


def test_the_cell_kernel_adds_the_bias_to_the_product_first():
    body = LSTM_CELL_BIASED.body
    assert "T pi = hi + bi; gi = xi + pi;" in body and "T po = ho + bo; go = xo + po;" in body
    assert LSTM_CELL_BIASED.name in backend.FUSED_SPECS


@needs_gpu
def test_a_captured_step_holds_a_kernel_fewer_per_step(monkeypatch):
    kernels, grads = captured_with_and_without(monkeypatch, "add_biases_in_cells",
                                               *_rnn(seq_len=8))
    assert kernels[False] - kernels[True] == 8, kernels
    for got, want in zip(grads[True], grads[False]):
        for k in want:
            np.testing.assert_array_equal(got[k], want[k], err_msg=k)


@needs_gpu
def test_the_monitor_sees_the_same_names_and_values(monkeypatch):
    """The cell's bias input carries no gradient: its gradient node reports the plain
    cell's three arguments, and the product node h W^T + b."""
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "0")
    sym, shapes = _rnn()
    seen = {}
    for biased in (True, False):
        if not biased:
            monkeypatch.setattr(compiler, "add_biases_in_cells", without_rewrite)
        exe = sym.simple_bind(mx.gpu(0), **shapes)
        rng = np.random.RandomState(0)
        for arr in exe.arg_dict.values():
            arr[:] = rng.uniform(-1, 1, arr.shape)
        got = {}
        exe.set_monitor_callback(lambda name, arr: got.__setitem__(name, arr.asnumpy()),
                                 monitor_all=True)
        gradient_steps(exe, 1)
        seen[biased] = got
    assert sorted(seen[True]) == sorted(seen[False])
    assert {"l_t1_h2h_output", "l_t1_state_backward_output2"} <= set(seen[True])
    for name, value in seen[True].items():
        np.testing.assert_allclose(value, seen[False][name], rtol=1e-6, atol=1e-7,
                                   err_msg=name)
