"""The fusion pass on GPUs: each LSTM or GRU cell's elementwise nodes become one
LSTMCellCombine or GRUCellCombine node (minimod/kernels/fused_cells.py), and executors with
fused cells compute what executors without them compute.

Which nodes the pass fuses is checked on graphs everywhere (a gpu Context needs no device).
The executor cases need a GPU or the strict CuPy stand-in (tests/test_fake_gpu.py runs this
file on it), whose kernels evaluate their bodies statement by statement: there the fused
cells give the unfused nodes' numbers bit for bit.
"""
import numpy as np
import pytest

import minimod as mx
from minimod import backend
from minimod.kernels.fused_cells import (
    GRU_CELL,
    GRU_CELL_GRAD,
    LSTM_CELL,
    LSTM_CELL_GRAD,
    GRUCellCombine,
    LSTMCellCombine,
)
from minimod.passes import fuse, fusion, stacking

from ..conftest import needs_gpu
from ..fake_cuda_graphs import captured_kernels
from .graphs import lstm

FUSED = LSTMCellCombine.name
GRU_FUSED = GRUCellCombine.name


def _cells(seq_len=3, hidden=5, merge=True, expose_gate=False, gru=False):
    """An LSTM of mx.rnn.LSTMCell (a GRU of mx.rnn.GRUCell with `gru`) unrolled over
    `seq_len` steps, summed into a loss; with `expose_gate` the first step's input gate (the
    GRU's update gate) is an output too."""
    cell = mx.rnn.GRUCell(hidden, prefix="g_") if gru else mx.rnn.LSTMCell(hidden, prefix="l_")
    outs, states = cell.unroll(seq_len, mx.sym.Variable("data"), layout="NTC",
                               merge_outputs=merge)
    loss = mx.sym.MakeLoss(mx.sym.sum(outs * outs) if merge else
                           mx.sym.add_n(*[mx.sym.sum(out) for out in outs]))
    heads = [loss, mx.sym.BlockGrad(states[-1])]
    if expose_gate:
        gate = "g_t0__z_act_output" if gru else "l_t0_i_output"
        heads.append(mx.sym.BlockGrad(loss.get_internals()[gate]))
    return mx.sym.Group(heads), {"data": (2, seq_len, 4)}


def _fused_graph(sym, shapes, ctx):
    graph = sym._graph
    fwd_shapes = mx.passes.infer_graph_shapes(graph, shapes)
    fwd_types = mx.passes.infer_graph_types(graph, {"data": np.dtype(np.float32)})
    return graph, fuse(graph, fwd_shapes, fwd_types, ctx)


def _op_names(graph):
    return [n.op.name for n in graph.nodes if n.op is not None]


def test_each_cell_becomes_one_node_on_a_gpu_and_none_on_a_cpu():
    sym, shapes = _cells()
    graph, fused = _fused_graph(sym, shapes, mx.gpu(0))
    names = _op_names(fused)
    assert names.count(FUSED) == 3
    # per cell: the add, the split, four gate activations, two products, tanh and the
    # output product are gone; the fused node took the place of the new state's sum
    assert len(graph.nodes) - len(fused.nodes) == 3 * 10
    assert names.count("SliceChannel") == 1 and "Activation" not in names  # the input split
    cells = [n for n in fused.nodes if n.op is not None and n.op.name == FUSED]
    assert [n.name for n in cells] == ["l_t0_state", "l_t1_state", "l_t2_state"]
    # the next cell reads this one's hidden state (output 1) and cell state (output 0)
    h2h = [n for n in fused.nodes if n.name == "l_t1_h2h"][0]
    assert (h2h.inputs[0].node, h2h.inputs[0].index) == (cells[0], 1)
    assert (cells[1].inputs[2].node, cells[1].inputs[2].index) == (cells[0], 0)
    assert _fused_graph(sym, shapes, mx.cpu())[1] is graph


def test_each_gru_cell_becomes_one_node_on_a_gpu():
    sym, shapes = _cells(gru=True)
    graph, fused = _fused_graph(sym, shapes, mx.gpu(0))
    names = _op_names(fused)
    assert names.count(GRU_FUSED) == 3 and FUSED not in names
    # per cell: two splits, three sums, two sigmoids, r * h2h_o, the tanh, 1 - z and two
    # products are gone; the fused node took the place of the sum making h'
    assert len(graph.nodes) - len(fused.nodes) == 3 * 12
    assert names.count("SliceChannel") == 1 and "_rminus_scalar" not in names
    cells = [n for n in fused.nodes if n.op is not None and n.op.name == GRU_FUSED]
    assert [n.name for n in cells] == ["g_t0_out", "g_t1_out", "g_t2_out"]
    assert (cells[1].inputs[2].node, cells[1].inputs[2].index) == (cells[0], 0)
    sym, shapes = _cells(gru=True, expose_gate=True)
    assert _op_names(_fused_graph(sym, shapes, mx.gpu(0))[1]).count(GRU_FUSED) == 2


def test_a_hand_written_cell_and_step_outputs_fuse_too():
    sym, shapes = lstm(seq_len=4)  # primitive ops, h zeros at first
    assert _op_names(_fused_graph(sym, shapes, mx.gpu(0))[1]).count(FUSED) == 4
    sym, shapes = _cells(merge=False)  # each step's h is read by the graph's outputs
    graph, fused = _fused_graph(sym, shapes, mx.gpu(0))
    assert _op_names(fused).count(FUSED) == 3


def test_a_cell_whose_inner_entry_is_read_elsewhere_is_left_alone():
    sym, shapes = _cells(expose_gate=True)
    names = _op_names(_fused_graph(sym, shapes, mx.gpu(0))[1])
    assert names.count(FUSED) == 2  # step 0's input gate is an output: that cell stays
    assert names.count("SliceChannel") == 2  # the input split, and that cell's


def test_other_activations_and_half_precision_are_left_alone():
    data = mx.sym.Variable("data")
    gates = mx.sym.FullyConnected(data, num_hidden=8) + mx.sym.FullyConnected(data,
                                                                             num_hidden=8)
    i, f, g, o = mx.sym.SliceChannel(gates, num_outputs=4)
    c = (mx.sym.Activation(f, act_type="sigmoid") * mx.sym.Variable("c0")
         + mx.sym.Activation(i, act_type="sigmoid") * mx.sym.Activation(g, act_type="relu"))
    h = mx.sym.Activation(o, act_type="sigmoid") * mx.sym.Activation(c, act_type="tanh")
    graph, fused = _fused_graph(h, {"data": (2, 3), "c0": (2, 2)}, mx.gpu(0))
    assert fused is graph  # a relu candidate is not LSTMCell's
    with_tanh = mx.sym.Activation(g, act_type="tanh")
    c = (mx.sym.Activation(f, act_type="sigmoid") * mx.sym.Variable("c0")
         + mx.sym.Activation(i, act_type="sigmoid") * with_tanh)
    h = mx.sym.Activation(o, act_type="sigmoid") * mx.sym.Activation(c, act_type="tanh")
    graph = h._graph
    shapes = mx.passes.infer_graph_shapes(graph, {"data": (2, 3), "c0": (2, 2)})
    for dtype, fuses in ((np.float32, True), (np.float16, False)):
        types = mx.passes.infer_graph_types(graph, {"data": np.dtype(dtype)})
        assert (fuse(graph, shapes, types, mx.gpu(0)) is not graph) == fuses


def test_kernels_are_in_the_compiled_set():
    """The two bodies are ElementwiseSpecs, so the NVRTC check compiles them
    (tests/ops/test_fused_kernels.py) and the emulation runs them."""
    assert {LSTM_CELL.name, LSTM_CELL_GRAD.name, GRU_CELL.name,
            GRU_CELL_GRAD.name} <= set(backend.FUSED_SPECS)


def _train(sym, shapes, fused, steps=3):
    """Outputs and gradients of `steps` forward-backward runs of an executor on gpu(0), its
    time steps' input products as written (the stacking pass adds gradients in another
    order: tests/passes/test_stack_steps.py)."""
    with fusion(fused), stacking(False):
        exe = sym.simple_bind(mx.gpu(0), **shapes)
    rng = np.random.RandomState(0)
    for name, arr in exe.arg_dict.items():
        arr[:] = (rng.randint(0, 9, arr.shape) if name in ("data", "softmax_label")
                  and sym.list_outputs()[0] == "softmax_output" else
                  rng.uniform(-1, 1, arr.shape))
    seen = []
    for _ in range(steps):
        exe.forward(is_train=True)
        exe.backward()
        seen.append([o.asnumpy() for o in exe.outputs]
                    + [g.asnumpy() for g in exe.grad_arrays if g is not None])
    return exe, seen


@needs_gpu
@pytest.mark.parametrize("build", [_cells, lambda: _cells(merge=False), lstm,
                                   lambda: _cells(gru=True),
                                   lambda: _cells(gru=True, merge=False)],
                         ids=["LSTMCell", "LSTMCell-step-outputs", "hand-written",
                              "GRUCell", "GRUCell-step-outputs"])
def test_fused_cells_compute_what_the_nodes_compute(build, monkeypatch):
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "0")
    sym, shapes = build()
    fused, got = _train(sym, shapes, True)
    plain, want = _train(sym, shapes, False)
    cells = (LSTMCellCombine, GRUCellCombine)  # an LSTM cell may add its recurrent bias too
    assert sum(isinstance(n.op, cells) for n in fused._plan.graph.nodes) >= 3
    assert not any(isinstance(n.op, cells) for n in plain._plan.graph.nodes)
    exact = hasattr(backend._cupy, "host_reads")  # the stand-in evaluates bodies exactly
    for step, (a, b) in enumerate(zip(want, got)):
        for x, y in zip(a, b):
            if exact:
                np.testing.assert_array_equal(y, x, err_msg="step %d" % step)
            else:  # NVRTC may contract a product and a sum into one rounding
                np.testing.assert_allclose(y, x, rtol=1e-5, atol=1e-6)


@needs_gpu
@pytest.mark.parametrize("gru", [False, True], ids=["LSTMCell", "GRUCell"])
def test_the_monitor_sees_every_node_of_a_fused_cell(gru, monkeypatch):
    sym, shapes = _cells(gru=gru)
    seen = {}
    for fused in (True, False):
        exe, _ = _train(sym, shapes, fused, steps=0)
        got = []
        exe.set_monitor_callback(lambda name, arr: got.append((name, arr.asnumpy())),
                                 monitor_all=True)
        exe.forward(is_train=True)
        seen[fused] = got
    # the same reports; a fused cell reports its nodes together where it runs, so a node
    # the cell does not read (the GRU's h2h product) may come before rather than between
    assert sorted(n for n, _ in seen[True]) == sorted(n for n, _ in seen[False])
    if not gru:
        assert [n for n, _ in seen[True]] == [n for n, _ in seen[False]]
    inner = ({"g_t1__r_act_output", "g_t1__h_act_output", "g_t1_out_output"} if gru else
             {"l_t1_i_output", "l_t1_state_output", "l_t1_out_output"})
    assert inner <= set(dict(seen[True]))
    _same = (np.testing.assert_array_equal if hasattr(backend._cupy, "host_reads") else
             lambda x, y, err_msg: np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6,
                                                              err_msg=err_msg))
    unfused = dict(seen[False])
    for name, x in seen[True]:
        _same(x, unfused[name], err_msg=name)


@needs_gpu
def test_graph_replays_hold_a_third_of_the_kernels(monkeypatch):
    """What the fusion is for: an unrolled LSTM's captured step holds far fewer kernels."""
    if not hasattr(backend._cupy, "host_reads"):
        pytest.skip("counts the stand-in's recorded kernels")
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1")
    sym, shapes = _cells(seq_len=6)
    kernels = {}
    for fused in (True, False):
        exe, _ = _train(sym, shapes, fused, steps=3)
        kernels[fused] = captured_kernels(exe)
    assert kernels[True] * 2 < kernels[False], kernels
