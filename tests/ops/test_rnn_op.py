"""The RNN operator (and `reverse`): table-driven checks through tests/ops/harness.py (shape
inference, forward against a step-by-step NumPy reference, float64 numerical gradients), plus
the hidden `reserve` output that carries forward activations to backward. MXNet's own numbers
for this op are checked through FusedRNNCell in tests/rnn/test_rnn.py, and the executor path
(shared memory pools, forward/backward order) in tests/rnn/test_rnn_executor.py."""
import numpy as np
import pytest

from minimod.ops.registry import create_op
from minimod.ops.rnn_layout import rnn_param_size, rnn_param_slices, rnn_reserve_size

from .harness import Case, check_case, infer, numeric_grad, run_backward, run_forward

GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def reference_rnn(attrs, data, params, state, cell=None):
    """Step-by-step NumPy RNN, independent of the op's vectorised code."""
    mode, hidden, layers = attrs["mode"], attrs["state_size"], attrs["num_layers"]
    dirs = 2 if attrs.get("bidirectional") else 1
    lo, hi = attrs.get("lstm_state_clip_min"), attrs.get("lstm_state_clip_max")
    proj = attrs.get("projection_size")
    width = proj or hidden
    steps, batch, feat = data.shape
    slices = rnn_param_slices(mode, feat, hidden, layers, dirs == 2, proj)
    hT = np.zeros_like(state)
    cT = None if cell is None else np.zeros_like(cell)
    x = data
    for layer in range(layers):
        y = np.zeros((steps, batch, dirs * width))
        for d in range(dirs):
            row = layer * dirs + d
            w = {k: params[o:o + int(np.prod(s))].reshape(s) for k, (o, s) in slices[row].items()}
            h = state[row]
            c = None if cell is None else cell[row]
            for t in (range(steps - 1, -1, -1) if d else range(steps)):
                ax = x[t] @ w["wx"].T + w["bx"]
                ah = h @ w["wh"].T + w["bh"]
                if mode == "lstm":
                    i, f, g, o = np.split(ax + ah, 4, axis=1)
                    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
                    if lo is not None:
                        c = np.clip(c, lo, hi)
                    h = _sigmoid(o) * np.tanh(c)
                    if proj:
                        h = h @ w["wr"].T  # LSTMP: the projected state is the state
                elif mode == "gru":
                    xr, xz, xn = np.split(ax, 3, axis=1)
                    hr, hz, hn = np.split(ah, 3, axis=1)
                    r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
                    n = np.tanh(xn + r * hn)
                    h = (1 - z) * n + z * h
                elif mode == "rnn_tanh":
                    h = np.tanh(ax + ah)
                else:
                    h = np.maximum(ax + ah, 0)
                y[t, :, d * width:(d + 1) * width] = h
            hT[row] = h
            if cT is not None:
                cT[row] = c
        x = y
    outs = [x]
    if attrs.get("state_outputs"):
        outs.append(hT)
        if cell is not None:
            outs.append(cT)
    return outs


def _case(mode, steps=3, batch=2, feat=3, hidden=2, layers=1, bidirectional=False,
          state_outputs=False, seed=0, **extra):
    attrs = dict(state_size=hidden, num_layers=layers, mode=mode, **extra)
    if bidirectional:
        attrs["bidirectional"] = True
    if state_outputs:
        attrs["state_outputs"] = True
    rng = np.random.RandomState(seed)
    dirs = 2 if bidirectional else 1
    proj = extra.get("projection_size")
    size = rnn_param_size(mode, feat, hidden, layers, bidirectional, proj)
    inputs = [rng.uniform(-1, 1, (steps, batch, feat)), rng.uniform(-0.8, 0.8, (size,)),
              rng.uniform(-0.5, 0.5, (layers * dirs, batch, proj or hidden))]
    if mode == "lstm":
        inputs.append(rng.uniform(-0.5, 0.5, (layers * dirs, batch, hidden)))
    return Case("RNN", attrs, inputs, lambda *a: reference_rnn(attrs, *a), infer_from=[0],
                id="%s-L%d-D%d%s%s%s" % (mode, layers, dirs, "-states" if state_outputs else "",
                                         "-clip" if "lstm_state_clip_min" in extra else "",
                                         "-proj" if proj else ""))


CASES = [
    _case("rnn_tanh"),
    _case("rnn_relu", layers=2, bidirectional=True, state_outputs=True, seed=1),
    _case("lstm"),
    _case("lstm", layers=2, bidirectional=True, state_outputs=True, seed=2),
    _case("lstm", state_outputs=True, lstm_state_clip_min=-0.3, lstm_state_clip_max=0.25,
          seed=3),
    _case("lstm", state_outputs=True, hidden=3, projection_size=2, seed=6),
    _case("lstm", layers=2, bidirectional=True, state_outputs=True, hidden=3,
          projection_size=2, seed=7),
    _case("lstm", layers=2, state_outputs=True, hidden=2, projection_size=3, seed=8,
          lstm_state_clip_min=-0.3, lstm_state_clip_max=0.25),
    _case("gru"),
    _case("gru", layers=2, bidirectional=True, state_outputs=True, hidden=3, seed=4),
    _case("rnn_tanh", layers=3, steps=4, batch=1, feat=2, state_outputs=True, seed=5),
    Case("reverse", {"axis": (1,)}, [np.arange(24.).reshape(2, 3, 4)],
         lambda x: [x[:, ::-1]], id="reverse-axis1"),
    Case("reverse", {"axis": (0, 2)}, [np.arange(24.).reshape(2, 3, 4)],
         lambda x: [x[::-1, :, ::-1]], id="reverse-axes02"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_op_case(case, ctx):
    check_case(case, ctx)


def test_parameter_size_formula_matches_mxnet():
    # sizes MXNet 1.9.1 infers for (mode, C=3, H=4, layers, bidirectional)
    assert rnn_param_size("lstm", 3, 4, 1) == 144
    assert rnn_param_size("gru", 3, 4, 1) == 108
    assert rnn_param_size("rnn_tanh", 3, 4, 1) == 36
    assert rnn_param_size("lstm", 3, 4, 2, True) == 736
    assert rnn_param_size("lstm", 3, 4, 1, projection_size=2) == 120


def test_shape_inference_backwards_and_outputs():
    op = create_op("RNN", dict(state_size=4, num_layers=2, mode="lstm", bidirectional=True,
                               state_outputs=True))
    assert op.outputs() == ["output", "state_output", "statecell_output", "reserve"]
    assert op.num_visible_outputs() == op.num_json_outputs() == 3
    assert op.arguments() == ["data", "parameters", "state", "state_cell"]
    ins, outs = op.infer_shape([(5, None, 3), None, (4, 7, 4), None], [None] * 4)
    assert ins == [(5, 7, 3), (736,), (4, 7, 4), (4, 7, 4)]
    # layer 0's hidden states (5, 7, 8), then per row gates (5, 7, 16), c and tanh(c) (5, 7, 4)
    assert outs == [(5, 7, 8), (4, 7, 4), (4, 7, 4), (5 * 7 * (8 + 4 * (16 + 4 + 4)),)]
    gru = create_op("RNN", dict(state_size=4, num_layers=1, mode="gru"))
    assert gru.arguments() == ["data", "parameters", "state"]
    assert gru.outputs() == ["output", "reserve"]
    assert gru.num_visible_outputs() == gru.num_json_outputs() == 1


def test_reserve_size():
    # rnn_*: nothing beyond the hidden states of the layers below the last
    assert rnn_reserve_size("rnn_tanh", 4, 1, steps=5, batch=3) == 0
    assert rnn_reserve_size("rnn_relu", 4, 3, True, steps=5, batch=3) == 2 * 5 * 3 * 8
    # + dropout masks of the inputs of layers 1 and 2
    assert rnn_reserve_size("rnn_relu", 4, 3, True, p=0.5, steps=5, batch=3) == 4 * 5 * 3 * 8
    # gru: gates and W_hn h + b_hn; lstm: gates, c, tanh(c) and the clip mask
    assert rnn_reserve_size("gru", 4, 1, steps=5, batch=3) == 5 * 3 * (12 + 4)
    assert rnn_reserve_size("lstm", 4, 1, clip=True, steps=5, batch=3) == 5 * 3 * (16 + 12)
    # the reserve is known from the output's shape alone, and has the data's dtype
    op = create_op("RNN", dict(state_size=4, num_layers=2, mode="gru", p=0.2))
    _, outs = op.infer_shape([None, None, None], [(5, 3, 4), None])
    assert outs[1] == (rnn_reserve_size("gru", 4, 2, p=0.2, steps=5, batch=3),)
    _, types = op.infer_type([np.dtype("float16"), None, None], [None, None])
    assert types == [np.dtype("float16")] * 2


def _run(op, inputs, is_train=True):
    """Forward with every output (the reserve too) allocated from the inferred shapes."""
    _, shapes = infer(op, [a.shape for a in inputs])
    out = [np.full(s, np.nan) for s in shapes]
    op.forward(np, inputs, [], out, is_train)
    return out


def _backward(op, inputs, outs, heads, declared_only=True):
    """Backward as the executor runs it: slots the op does not declare are None."""
    if declared_only:
        inputs = [a if i in op.backward_inputs else None for i, a in enumerate(inputs)]
        outs = [o if i in op.backward_outputs else None for i, o in enumerate(outs)]
    heads = list(heads) + [None] * (len(outs) - len(heads))
    grads = [np.full(a.shape, np.nan) for a in inputs]
    op.backward(np, heads, inputs, outs, grads, [])
    return grads


def test_backward_reads_only_what_it_declares():
    case = _case("lstm", layers=2, bidirectional=True, state_outputs=True, seed=6)
    inputs = [np.asarray(a) for a in case.inputs]
    op = create_op("RNN", case.attrs)
    assert op.backward_inputs == (0, 1, 2, 3) and op.backward_outputs == (0, 3)
    outs = _run(op, inputs)
    assert np.isfinite(outs[3]).all()   # forward wrote the whole reserve
    rng = np.random.RandomState(0)
    heads = [rng.uniform(-1, 1, o.shape) for o in outs[:3]]
    full = _backward(op, inputs, outs, heads, declared_only=False)
    assert all(np.isfinite(g).all() for g in full)
    # a fresh instance computes the same from the arrays alone: the op keeps no state
    fresh = _backward(create_op("RNN", case.attrs), inputs, outs, heads)
    for g, g2 in zip(full, fresh):
        np.testing.assert_array_equal(g, g2)
    # and backward leaves the reserve as it found it: a second backward is identical
    again = _backward(op, inputs, outs, heads)
    for g, g2 in zip(full, again):
        np.testing.assert_array_equal(g, g2)


def test_backward_follows_the_last_forward():
    case = _case("gru", layers=2, steps=4, batch=3, hidden=5, seed=8)
    inputs = [np.asarray(a) for a in case.inputs]
    other = [inputs[0] + 0.5] + inputs[1:]
    op = create_op("RNN", case.attrs)
    outs = _run(op, inputs, is_train=True)
    head = [np.random.RandomState(1).uniform(-1, 1, outs[0].shape)]
    # an inference forward on other data rewrites the reserve in the same arrays
    fresh = [np.full_like(o, np.nan) for o in outs]
    op.forward(np, other, [], fresh, False)
    for o, f in zip(outs, fresh):
        o[...] = f
    got = _backward(op, other, outs, head)
    want = _backward(op, other, _run(create_op("RNN", case.attrs), other), head)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_dropout_between_layers():
    case = _case("gru", layers=2, steps=4, batch=3, hidden=5, seed=7)
    inputs = [np.asarray(a) for a in case.inputs]
    plain = _run(create_op("RNN", case.attrs), inputs, is_train=True)
    op = create_op("RNN", dict(case.attrs, p=0.5))
    inferred = _run(op, inputs, is_train=False)
    np.testing.assert_allclose(inferred[0], plain[0], rtol=1e-12)
    dropped = _run(op, inputs, is_train=True)
    assert not np.allclose(dropped[0], plain[0])
    # backward uses the masks of the forward it follows, which the reserve carries: a fresh
    # instance gets the same gradients, and they differ from those without dropout
    head = [np.ones_like(dropped[0])]
    grads = _backward(op, inputs, dropped, head)
    assert all(np.isfinite(g).all() for g in grads)
    again = _backward(create_op("RNN", dict(case.attrs, p=0.5)), inputs, dropped, head)
    for g, g2 in zip(grads, again):
        np.testing.assert_array_equal(g, g2)
    no_drop = _backward(create_op("RNN", case.attrs), inputs, plain, head)
    assert not np.allclose(grads[1], no_drop[1])
    # after an inference forward (mask of ones) backward is that of the plain network
    after_inference = _backward(op, inputs, inferred, head)
    for g, g2 in zip(after_inference, no_drop):
        np.testing.assert_allclose(g, g2, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_dropout_gradient_is_numeric(mode):
    # training forwards draw the same masks every time (run_forward seeds), so the central
    # difference differentiates the network with those masks, which backward reads back
    case = _case(mode, layers=3, bidirectional=True, steps=3, batch=2, hidden=3, seed=9, p=0.4)
    op = create_op("RNN", case.attrs)
    inputs = [np.asarray(a, dtype=np.float64) for a in case.inputs]
    args, aux, outs = run_forward(op, inputs, True)
    heads = [np.random.RandomState(7).uniform(-1, 1, o.shape) for o in outs]
    grads = run_backward(op, args, aux, outs, heads, [0, 1, 2])
    for i in (0, 1, 2):
        want = numeric_grad(op, inputs, heads, i, True, 1e-6)
        np.testing.assert_allclose(grads[i], want, rtol=1e-4, atol=1e-5)
