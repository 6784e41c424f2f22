"""The step-stacking pass on GPUs: an unrolled RNN's per-step input products (one
FullyConnected per time step, all with the same weight) become one StepProjection node and a
split of its time-major result (minimod/passes/stack_steps.py,
minimod/kernels/time_steps.py), and executors with it compute what executors without it
compute.

Which nodes the pass stacks is checked on graphs everywhere (a gpu Context needs no device).
The executor cases need a GPU or the CuPy stand-in (tests/test_fake_gpu.py runs this file on
it). With data and weights on a grid of quarters, every product and partial sum is exact,
so the forward values must match bit for bit; the weight's and bias's gradients add in
another order and match to rounding.
"""
import numpy as np
import pytest

import minimod as mx
from minimod import backend
from minimod.kernels.time_steps import StepProjection, StepStack, TimeMajorConcat
from minimod.passes import stack_steps, stacking

from ..conftest import needs_gpu
from ..fake_cuda_graphs import captured_kernels

STACKED = StepProjection.name


def _rnn(layout="NTC", seq_len=4, gru=False, merge=True):
    cell = mx.rnn.GRUCell(5, prefix="g_") if gru else mx.rnn.LSTMCell(5, prefix="l_")
    outs, _ = cell.unroll(seq_len, mx.sym.Variable("data"), layout=layout,
                          merge_outputs=merge)
    loss = (mx.sym.sum(outs * outs) if merge
            else mx.sym.add_n(*[mx.sym.sum(o * o) for o in outs]))
    shape = (3, seq_len, 4) if layout == "NTC" else (seq_len, 3, 4)
    return mx.sym.MakeLoss(loss, name="loss"), {"data": shape}


def _stacked(sym, shapes, ctx=mx.gpu(0), dtype=np.float32):
    graph = sym._graph
    fwd_shapes = mx.passes.infer_graph_shapes(graph, shapes)
    types = mx.passes.infer_graph_types(graph, {"data": np.dtype(dtype)})
    return graph, stack_steps(graph, fwd_shapes, types, ctx)


def _ops(graph):
    return [(n.name, n.op.name) for n in graph.nodes if n.op is not None]


@pytest.mark.parametrize("layout", ["NTC", "TNC"])
def test_each_sequence_of_step_products_becomes_one_node_on_a_gpu(layout):
    sym, shapes = _rnn(layout)
    graph, stacked = _stacked(sym, shapes)
    ops = _ops(stacked)
    assert [name for name, op in ops if op == STACKED] == ["l_t0_i2h_steps"]
    node = [n for n in stacked.nodes if n.op is not None and n.op.name == STACKED][0]
    assert node.op.names == ["l_t%d_i2h" % t for t in range(4)]
    assert node.op.axis == (1 if layout == "NTC" else 0)
    assert not any(name.endswith("_i2h") for name, _ in ops)  # the four products are gone
    assert sum(1 for _, op in ops if op == "FullyConnected") == 4  # the h2h products stay
    # the data's own split is gone; the stacked result's split feeds the cells
    splits = [n for n in stacked.nodes if n.op is not None and n.op.name == "SliceChannel"
              and n.op.attrs.squeeze_axis]
    assert [n.name for n in splits] == ["l_t0_i2h_split"]
    assert splits[0].op.attrs.axis == 0 and splits[0].inputs[0].node is node
    # NTC: the Concat of the steps' outputs along axis 1 becomes a stack and a transpose,
    # which keeps the Concat's name; TNC's Concat along axis 0 is a leading join already
    joins = [(n.name, type(n.op)) for n in stacked.nodes if n.op is not None
             and type(n.op) in (StepStack, TimeMajorConcat)]
    concat = [n.name for n in graph.nodes if n.op is not None and n.op.name == "Concat"]
    assert joins == ([(concat[0] + "_steps", StepStack), (concat[0], TimeMajorConcat)]
                     if layout == "NTC" else [])
    assert len(graph.nodes) - len(stacked.nodes) == 4 + 1 - 2 - len(joins) // 2
    assert _stacked(sym, shapes, mx.cpu())[1] is graph


def test_the_new_nodes_keep_the_ctx_group_and_cpu_pinned_plans_keep_the_steps():
    with mx.AttrScope(ctx_group="dev2"):
        sym, shapes = _rnn()
    graph, stacked = _stacked(sym, shapes)
    made = [n for n in stacked.nodes if n.op is not None
            and type(n.op) in (StepProjection, StepStack, TimeMajorConcat)]
    assert len(made) == 3 and all(n.attrs.get("__ctx_group__") == "dev2" for n in made)
    assert _stacked(sym, shapes, mx.cpu_pinned(0))[1] is graph
    # a batch of one: the Concat along axis 1 is a leading join already, left as written
    sym, _ = _rnn()
    ops = [type(n.op) for n in _stacked(sym, {"data": (1, 4, 4)})[1].nodes]
    assert StepProjection in ops and TimeMajorConcat not in ops


def test_a_gru_and_per_step_outputs_stack_too():
    for sym, shapes in (_rnn(gru=True), _rnn(merge=False)):
        assert [op for _, op in _ops(_stacked(sym, shapes)[1])].count(STACKED) == 1


def _per_step(weights, read=None, expose=None, steps=3):
    """Per-step products of a (2, steps, 4) sequence: step t's weight is named weights[t];
    `read` lists the steps multiplied (default all); `expose` makes a step's product a
    graph output."""
    data = mx.sym.Variable("data")
    parts = mx.sym.SliceChannel(data, axis=1, num_outputs=steps, squeeze_axis=True)
    read = range(steps) if read is None else read
    variables = {name: mx.sym.Variable(name) for name in weights}
    prods = [mx.sym.FullyConnected(parts[t], weight=variables[weights[t]],
                                   no_bias=True, num_hidden=3, name="p%d" % t) for t in read]
    heads = [mx.sym.MakeLoss(mx.sym.add_n(*[mx.sym.sum(p) for p in prods]))]
    if expose is not None:
        heads.append(prods[expose])
    return mx.sym.Group(heads), {"data": (2, steps, 4)}


def test_groups_that_are_not_one_product_per_step_are_left_alone():
    sym, shapes = _per_step(["w", "w", "w"])
    assert [op for _, op in _ops(_stacked(sym, shapes)[1])].count(STACKED) == 1
    for sym, shapes in (_per_step(["w", "v", "w"]),  # another weight at step 1
                        _per_step(["w", "w", "w"], read=[0, 2]),  # step 1 not read
                        _per_step(["w", "w", "w"], read=[0, 1, 1, 2]),  # step 1 read twice
                        _per_step(["w", "w", "w"], expose=1)):  # a product is an output
        graph, stacked = _stacked(sym, shapes)
        assert stacked is graph
    sym, shapes = _per_step(["w", "w", "w"])
    graph, stacked = _stacked(sym, shapes, dtype=np.float16)
    assert stacked is graph


def _train(sym, shapes, stacked, steps=2):
    with stacking(stacked):
        exe = sym.simple_bind(mx.gpu(0), **shapes)
    rng = np.random.RandomState(0)
    for arr in exe.arg_dict.values():  # quarters: every product and partial sum is exact
        arr[:] = rng.randint(-4, 5, arr.shape) * 0.25
    seen = []
    for _ in range(steps):
        exe.forward(is_train=True)
        exe.backward()
        seen.append(([o.asnumpy() for o in exe.outputs],
                     {k: g.asnumpy() for k, g in exe.grad_dict.items() if g is not None}))
    return exe, seen


@needs_gpu
@pytest.mark.parametrize("build", [lambda: _rnn("NTC"), lambda: _rnn("TNC"),
                                   lambda: _rnn(gru=True), lambda: _rnn(merge=False)],
                         ids=["LSTM-NTC", "LSTM-TNC", "GRU", "step-outputs"])
def test_stacked_executors_compute_what_the_steps_compute(build, monkeypatch):
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "0")
    sym, shapes = build()
    stacked, got = _train(sym, shapes, True)
    plain, want = _train(sym, shapes, False)
    assert STACKED in [op for _, op in _ops(stacked._plan.graph)]
    assert STACKED not in [op for _, op in _ops(plain._plan.graph)]
    for (outs, grads), (want_outs, want_grads) in zip(got, want):
        for x, y in zip(outs, want_outs):
            np.testing.assert_array_equal(x, y)
        assert grads.keys() == want_grads.keys()
        for k in grads:
            np.testing.assert_allclose(grads[k], want_grads[k], rtol=1e-5, atol=1e-5,
                                       err_msg=k)


@needs_gpu
def test_the_monitor_sees_each_step_product(monkeypatch):
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "0")
    sym, shapes = _rnn()
    seen = {}
    for stacked in (True, False):
        exe, _ = _train(sym, shapes, stacked, steps=0)
        got = {}
        exe.set_monitor_callback(lambda name, arr: got.__setitem__(name, arr.asnumpy()),
                                 monitor_all=True)
        exe.forward(is_train=True)
        seen[stacked] = got
    assert sorted(seen[True]) == sorted(seen[False])  # no name of the pass's own nodes
    names = {n.name: n.op.name for n in sym._graph.nodes if n.op is not None}
    split, concat = (next(k for k, v in names.items() if v == op)
                     for op in ("SliceChannel", "Concat"))
    assert {"l_t2_i2h_data", "l_t2_i2h_weight", "l_t2_i2h_output", split + "_output2",
            concat + "_arg2", concat + "_output"} <= set(seen[True])
    for name, value in seen[True].items():  # quarters: every value exactly as unstacked
        np.testing.assert_array_equal(value, seen[False][name], err_msg=name)


@needs_gpu
def test_the_steps_outputs_are_written_straight_into_their_join(monkeypatch):
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "0")
    sym, shapes = _rnn(seq_len=5)
    exe, _ = _train(sym, shapes, True, steps=1)
    plan = exe._plan
    graph, memory = plan.graph, plan.memory
    stack = [i for i, n in enumerate(graph.nodes) if type(n.op) is StepStack][0]
    split = [i for i, n in enumerate(graph.nodes) if n.name == "l_t0_i2h_split"][0]
    assert {stack, split} <= memory.idle_nodes
    block = memory.storage[graph.row_ptr[stack]]
    step_bytes = 3 * 5 * 4
    for t in range(5):  # each cell's h' (the fused node's output 1) lies in its part
        cell = [i for i, n in enumerate(graph.nodes) if n.name == "l_t%d_state" % t][0]
        h = graph.row_ptr[cell] + 1
        assert (memory.storage[h], memory.offset(h)) == (block, t * step_bytes)


@needs_gpu
def test_a_captured_step_holds_far_fewer_kernels(monkeypatch):
    if not hasattr(backend._cupy, "host_reads"):
        pytest.skip("counts the stand-in's recorded kernels")
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1")
    sym, shapes = _rnn(seq_len=8)
    kernels = {}
    for stacked in (True, False):
        exe, _ = _train(sym, shapes, stacked, steps=3)
        kernels[stacked] = captured_kernels(exe)
    # per step: a GEMM and a bias forward, three backward, the split's copies and the
    # join's, all gone; eight kernels for the whole sequence instead
    assert kernels[False] - kernels[True] >= 8 * 8 - 8, kernels


def test_a_step_stack_not_assembled_in_place_binds_as_a_stack():
    """The kernel registry matches exact classes: StepStack has Stack's CuPy binding (per-
    input copies from nine inputs on, which a CUDA graph can hold), and none on NumPy."""
    from minimod import kernels
    from minimod.kernels import joins
    op = StepStack(10)
    xs = [np.ones((2, 3), np.float32) * k for k in range(10)]
    out = [np.empty((10, 2, 3), np.float32)]
    assert kernels.bind_forward(np, op, xs, [], out) is None  # NumPy: the op's own stack
    assert kernels.registry._FORWARD[StepStack] is joins.bind_stack
