"""The RNN operator (and `reverse`): table-driven checks through tests/ops/harness.py (shape
inference, forward against a step-by-step NumPy reference, float64 numerical gradients), plus
the per-executor record that carries forward activations to backward. MXNet's own numbers for
this op are checked through FusedRNNCell in tests/rnn/test_rnn.py."""
import numpy as np
import pytest

from minimod.ops.registry import create_op
from minimod.ops.rnn import rnn_param_size, rnn_param_slices

from .harness import Case, check_case

GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def reference_rnn(attrs, data, params, state, cell=None):
    """Step-by-step NumPy RNN, independent of the op's vectorised code."""
    mode, hidden, layers = attrs["mode"], attrs["state_size"], attrs["num_layers"]
    dirs = 2 if attrs.get("bidirectional") else 1
    lo, hi = attrs.get("lstm_state_clip_min"), attrs.get("lstm_state_clip_max")
    steps, batch, feat = data.shape
    slices = rnn_param_slices(mode, feat, hidden, layers, dirs == 2)
    hT = np.zeros_like(state)
    cT = None if cell is None else np.zeros_like(cell)
    x = data
    for layer in range(layers):
        y = np.zeros((steps, batch, dirs * hidden))
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
                y[t, :, d * hidden:(d + 1) * hidden] = h
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
    size = rnn_param_size(mode, feat, hidden, layers, bidirectional)
    inputs = [rng.uniform(-1, 1, (steps, batch, feat)), rng.uniform(-0.8, 0.8, (size,)),
              rng.uniform(-0.5, 0.5, (layers * dirs, batch, hidden))]
    if mode == "lstm":
        inputs.append(rng.uniform(-0.5, 0.5, (layers * dirs, batch, hidden)))
    return Case("RNN", attrs, inputs, lambda *a: reference_rnn(attrs, *a), infer_from=[0],
                id="%s-L%d-D%d%s%s" % (mode, layers, dirs, "-states" if state_outputs else "",
                                       "-clip" if "lstm_state_clip_min" in extra else ""))


CASES = [
    _case("rnn_tanh"),
    _case("rnn_relu", layers=2, bidirectional=True, state_outputs=True, seed=1),
    _case("lstm"),
    _case("lstm", layers=2, bidirectional=True, state_outputs=True, seed=2),
    _case("lstm", state_outputs=True, lstm_state_clip_min=-0.3, lstm_state_clip_max=0.25,
          seed=3),
    _case("gru"),
    _case("gru", layers=2, bidirectional=True, state_outputs=True, hidden=3, seed=4),
    _case("rnn_tanh", layers=3, steps=4, batch=1, feat=2, state_outputs=True, seed=5),
    Case("reverse", {"axis": (1,)}, [np.arange(24.).reshape(2, 3, 4)],
         lambda x: [x[:, ::-1]], id="reverse-axis1"),
    Case("reverse", {"axis": (0, 2)}, [np.arange(24.).reshape(2, 3, 4)],
         lambda x: [x[::-1, :, ::-1]], id="reverse-axes02"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_op_case(case):
    check_case(case)


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
    assert op.outputs() == ["output", "state_output", "statecell_output"]
    assert op.arguments() == ["data", "parameters", "state", "state_cell"]
    ins, outs = op.infer_shape([(5, None, 3), None, (4, 7, 4), None], [None, None, None])
    assert ins == [(5, 7, 3), (736,), (4, 7, 4), (4, 7, 4)]
    assert outs == [(5, 7, 8), (4, 7, 4), (4, 7, 4)]
    gru = create_op("RNN", dict(state_size=4, num_layers=1, mode="gru"))
    assert gru.arguments() == ["data", "parameters", "state"] and gru.outputs() == ["output"]


def _run(op, inputs, is_train=True):
    steps, batch, _ = inputs[0].shape
    dirs = 2 if op.attrs.bidirectional else 1
    out = [np.empty((steps, batch, dirs * op.attrs.state_size))]
    op.forward(np, inputs, [], out, is_train)
    return out


def test_backward_recomputes_without_a_record():
    case = _case("lstm", layers=2, bidirectional=True, seed=6)
    inputs = [np.asarray(a) for a in case.inputs]
    op = create_op("RNN", case.attrs)
    out = _run(op, inputs)
    head = np.random.RandomState(0).uniform(-1, 1, out[0].shape)
    grads = [np.empty_like(a) for a in inputs]
    op.backward(np, [head], inputs, out, grads, [])
    fresh = create_op("RNN", case.attrs)
    grads2 = [np.empty_like(a) for a in inputs]
    fresh.backward(np, [head], inputs, out, grads2, [])
    for g, g2 in zip(grads, grads2):
        np.testing.assert_allclose(g, g2, rtol=1e-12)


def test_dropout_between_layers():
    case = _case("gru", layers=2, steps=4, batch=3, hidden=5, seed=7)
    inputs = [np.asarray(a) for a in case.inputs]
    plain = _run(create_op("RNN", case.attrs), inputs, is_train=True)[0]
    op = create_op("RNN", dict(case.attrs, p=0.5))
    np.testing.assert_allclose(_run(op, inputs, is_train=False)[0], plain, rtol=1e-12)
    dropped = _run(op, inputs, is_train=True)
    assert not np.allclose(dropped[0], plain)
    # backward uses the masks of the forward it follows: grads are finite and data's differs
    grads = [np.empty_like(a) for a in inputs]
    op.backward(np, [np.ones_like(dropped[0])], inputs, dropped, grads, [])
    assert all(np.isfinite(g).all() for g in grads)
    with pytest.raises(Exception, match="dropout"):
        create_op("RNN", dict(case.attrs, p=0.5)).backward(
            np, [np.ones_like(dropped[0])], inputs, dropped, grads, [])
