"""The reader-bias rewrite on GPUs: a FullyConnected's bias added by the op that reads it,
a fused LSTM cell or a relu / tanh / sigmoid Activation, and the product node computing
data . weight^T only (minimod/passes/reader_bias.py, minimod/kernels/reader_bias.py).

Which nodes it changes is checked on compiled plans everywhere. The executor cases need a
GPU or the CuPy stand-in (tests/test_fake_gpu.py runs this file on it): values, gradients
and what the monitor sees equal the nodes' as written, bit for bit where the stand-in
evaluates the kernel bodies. The fused-cell cases (tests/passes/test_fuse_cells.py) run
with this rewrite on as well.
"""
import numpy as np
import pytest

import minimod as mx
from minimod import backend
from minimod.kernels.cudnn import CudnnConvolution
from minimod.kernels.fused_cells import SummedCellGrad
from minimod.kernels.reader_bias import (
    LSTM_CELL_BIASED,
    BiasActivation,
    BiasedLSTMCell,
    ConvolutionWithoutBias,
    ProductWithoutBias,
)
from minimod.passes import compiler, fusion
from minimod.passes.compiler import compile_graph
from minimod.passes.gradient import BackwardOp

from ..conftest import needs_gpu
from .graphs import (
    assert_same_gradients,
    captured_with_and_without,
    gradient_steps,
    same_values,
    without_rewrite,
)


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
    products, cells = _of(plan, ProductWithoutBias), _of(plan, BiasedLSTMCell)
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
    assert ("reader_bias", True) in plan.rewrites


def test_grus_cpus_and_fusion_off_keep_the_products():
    assert not _of(_plan(*_rnn(gru=True)), ProductWithoutBias)
    assert not _of(_plan(*_rnn(), ctx=mx.cpu()), ProductWithoutBias)
    with fusion(False):
        assert not _of(_plan(*_rnn()), ProductWithoutBias)
    # a product that something else reads too keeps its bias
    cell = mx.rnn.LSTMCell(5, prefix="l_")
    outs, _ = cell.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    h2h = outs.get_internals()["l_t1_h2h_output"]
    loss = mx.sym.MakeLoss(mx.sym.sum(outs) + mx.sym.sum(h2h), name="loss")
    plan = _plan(loss, {"data": (3, 2, 4)})
    assert [n.name for n in _of(plan, ProductWithoutBias)] == ["l_t0_h2h"]


def test_the_cell_kernel_adds_the_bias_to_the_product_first():
    body = LSTM_CELL_BIASED.body
    assert "T pi = hi + bi; gi = xi + pi;" in body and "T po = ho + bo; go = xo + po;" in body
    assert LSTM_CELL_BIASED.name in backend.FUSED_SPECS


@needs_gpu
def test_a_captured_step_holds_a_kernel_fewer_per_step(monkeypatch):
    kernels, grads = captured_with_and_without(monkeypatch, "add_biases_in_readers",
                                               *_rnn(seq_len=8))
    assert kernels[False] - kernels[True] == 8, kernels
    assert_same_gradients(grads[True], grads[False])


def _runs_with_and_without(monkeypatch, sym, shapes, steps=2) -> tuple:
    """((gradients, monitored), the same without the rewrite) of `steps` eager training
    steps of `sym` on gpu(0), a monitor with monitor_all recording every value."""
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "0")
    runs = {}
    for biased in (True, False):
        if not biased:
            monkeypatch.setattr(compiler, "add_biases_in_readers", without_rewrite)
        exe = sym.simple_bind(mx.gpu(0), **shapes)
        rng = np.random.RandomState(0)
        for arr in exe.arg_dict.values():
            arr[:] = rng.uniform(-1, 1, arr.shape)
        seen = {}
        exe.set_monitor_callback(lambda name, arr: seen.__setitem__(name, arr.asnumpy()),
                                 monitor_all=True)
        grads = gradient_steps(exe, steps)
        assert any(type(n.op) in (ProductWithoutBias, ConvolutionWithoutBias)
                   for n in exe._plan.graph.nodes) == biased
        runs[biased] = grads, seen
    return runs[True], runs[False]


def _assert_same_runs(got_run, want_run) -> None:
    """Gradients and monitored values equal: bit for bit where the stand-in evaluates the
    kernel bodies, to rounding where NVRTC compiles them."""
    same = same_values(rtol=1e-6, atol=1e-7)
    (grads, seen), (want_grads, want_seen) = got_run, want_run
    assert_same_gradients(grads, want_grads, same)
    assert sorted(seen) == sorted(want_seen)
    for name in seen:
        same(seen[name], want_seen[name], err_msg=name)


@needs_gpu
def test_the_monitor_sees_the_same_names_and_values(monkeypatch):
    """The cell's bias input carries no gradient: its gradient node reports the plain
    cell's three arguments, and the product node h W^T + b."""
    got, want = _runs_with_and_without(monkeypatch, *_rnn(), steps=1)
    assert {"l_t1_h2h_output", "l_t1_state_backward_output2"} <= set(got[1])
    _assert_same_runs(got, want)

def _mlp(acts=("relu", "tanh", "sigmoid", "softrelu")):
    """FullyConnected layers, each read by one Activation of `acts`, then a loss."""
    net = mx.sym.Variable("data")
    for k, act in enumerate(acts):
        net = mx.sym.FullyConnected(net, num_hidden=6, name="fc%d" % k)
        net = mx.sym.Activation(net, act_type=act, name="act%d" % k)
    return mx.sym.MakeLoss(mx.sym.sum(net * net), name="loss"), {"data": (5, 7)}


def test_relu_tanh_and_sigmoid_add_the_bias_of_the_product_they_read():
    plan = _plan(*_mlp())
    acts = _of(plan, BiasActivation)
    assert [(n.name, n.op.attrs.act_type) for n in acts] == [
        ("act0", "relu"), ("act1", "tanh"), ("act2", "sigmoid")]  # not softrelu
    assert [n.name for n in _of(plan, ProductWithoutBias)] == ["fc0", "fc1", "fc2"]
    for node in acts:
        assert node.inputs[1].node.name == node.inputs[0].node.name + "_bias"
        assert node.op.gradient_arguments() == ["data"] and node.op.plain.name == "Activation"
    # a product read twice, or an output, keeps its bias
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=6, name="fc")
    twice = mx.sym.MakeLoss(mx.sym.sum(mx.sym.Activation(net, act_type="tanh") + net))
    exposed = mx.sym.Group([mx.sym.MakeLoss(mx.sym.sum(mx.sym.Activation(net, act_type="tanh"))),
                            net])
    for sym in (twice, exposed):
        assert not _of(_plan(sym, {"data": (5, 7)}), ProductWithoutBias)
    assert not _of(_plan(*_mlp(), ctx=mx.cpu()), BiasActivation)


@needs_gpu
def test_activations_with_the_bias_compute_what_the_nodes_compute(monkeypatch):
    got, want = _runs_with_and_without(monkeypatch, *_mlp())
    assert {"fc1_output", "act1_input0", "act1_output", "act1_backward_output"} <= set(got[1])
    _assert_same_runs(got, want)


@needs_gpu
def test_a_captured_step_holds_a_kernel_fewer_per_activation(monkeypatch):
    kernels, _ = captured_with_and_without(monkeypatch, "add_biases_in_readers", *_mlp())
    assert kernels[False] - kernels[True] == 3, kernels


def _convnet():
    """A convolution read by a tanh, one read by a pooling (not served), then a loss."""
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv0")
    net = mx.sym.Activation(net, act_type="tanh", name="act0")
    net = mx.sym.Convolution(net, kernel=(3, 3), num_filter=4, name="conv1")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    return mx.sym.MakeLoss(mx.sym.sum(net * net), name="loss"), {"data": (2, 3, 9, 9)}


@needs_gpu
def test_a_frontend_convolution_read_by_an_activation_leaves_it_the_bias(monkeypatch):
    sym, shapes = _convnet()
    plan = _plan(sym, shapes)
    convs = [n.op for n in plan.graph.nodes if type(n.op) is CudnnConvolution]
    if not _of(plan, ConvolutionWithoutBias):
        # im2col, or CuPy's wrapper, which adds the bias in its convolution call
        assert all(not op.cudnn.bias_apart for op in convs)
        pytest.skip("cuDNN's frontend does not run the convolutions here")
    assert [n.name for n in _of(plan, ConvolutionWithoutBias)] == ["conv0"]
    assert [n.name for n in _of(plan, BiasActivation)] == ["act0"]
    got, want = _runs_with_and_without(monkeypatch, sym, shapes)
    assert {"conv0_output", "act0_input0", "act0_output"} <= set(got[1])
    _assert_same_runs(got, want)


@needs_gpu
def test_the_fused_relu_of_nan_is_zero_as_in_mxnet():
    """CUDA's max (fmax) drops a NaN, as MXNet's relu (NaN > 0 is false) does: 0; the op's
    own GPU path (CuPy's maximum) keeps the NaN. The stand-in evaluates max as CUDA does."""
    ctx = mx.gpu(0)
    xp = backend.xp_for(ctx)
    relu = mx.sym.Activation(mx.sym.Variable("x"), act_type="relu")._graph.nodes[-1].op
    with backend.device_scope(ctx):
        x = xp.asarray(np.array([[np.nan, -1.0, 2.0]], np.float32))
        b = xp.asarray(np.array([0.5, 0.5, 0.5], np.float32))
        fused, plain = xp.empty_like(x), xp.empty_like(x)
        BiasActivation.of(relu).forward(xp, [x, b], [], [fused], True)
        relu.forward(xp, [x + b], [], [plain], True)
    assert backend.asnumpy(fused).tolist() == [[0.0, 0.0, 2.5]]
    assert np.isnan(backend.asnumpy(plain)[0, 0])
