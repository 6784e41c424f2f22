"""The RNN op's fused step kernels (minimod/ops/rnn_fused.py) against its NumPy passes.

With `backend.emulate_fused_kernels(True)` the op on NumPy takes the fused step loops, each
kernel's CUDA body evaluated by NumPy; without it, the reference passes of rnn_cells.py. The
two must agree on every output and gradient, for GRU and the vanilla modes (the LSTM's are in
test_fused_kernels.py, the NVRTC compile check of every body there too).
"""
import numpy as np
import pytest

import minimod as mx
from minimod import backend
from minimod.ops import rnn_fused

V = mx.sym.Variable


def _rnn(mode, layers, bidirectional, state_outputs, hidden):
    args = [V("data"), V("params"), V("state")] + ([V("state_cell")] if mode == "lstm" else [])
    return mx.sym.RNN(*args, state_size=hidden, num_layers=layers, bidirectional=bidirectional,
                      mode=mode, state_outputs=state_outputs, name="rnn")


def _run(sym, shapes, dtype, emulate, heads_on=None):
    """Outputs and gradients of one training step; `heads_on` lists the outputs that get a
    head gradient (all when None; the others get none)."""
    previous = backend.emulate_fused_kernels(emulate)
    try:
        exe = sym.simple_bind(mx.cpu(), type_dict={k: dtype for k in shapes}, **shapes)
        rng = np.random.RandomState(7)
        for name in sorted(exe.arg_dict):
            exe.arg_dict[name][:] = rng.uniform(-1, 1, exe.arg_dict[name].shape)
        outs = [o.asnumpy() for o in exe.forward(is_train=True)]
        heads = [mx.nd.array(rng.uniform(-1, 1, o.shape), dtype=dtype)
                 if heads_on is None or k in heads_on else mx.nd.zeros(o.shape, dtype=dtype)
                 for k, o in enumerate(outs)]
        exe.backward(out_grads=heads)
        return outs, {k: v.asnumpy() for k, v in exe.grad_dict.items()}
    finally:
        backend.emulate_fused_kernels(previous)


def _assert_fused_equals_reference(sym, shapes, dtype, heads_on=None):
    want = _run(sym, shapes, dtype, False, heads_on)
    got = _run(sym, shapes, dtype, True, heads_on)
    assert len(got[0]) == len(want[0])
    for a, b in zip(want[0], got[0]):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
    assert set(got[1]) == set(want[1])
    for name in want[1]:
        assert np.abs(want[1][name]).max() > 0, name  # a gradient that really flows
        np.testing.assert_allclose(got[1][name], want[1][name], rtol=1e-5, atol=1e-6,
                                   err_msg=name)


def _shapes(mode, steps, batch, feat, hidden, layers, bidirectional):
    rows = layers * (2 if bidirectional else 1)
    shapes = {"data": (steps, batch, feat), "state": (rows, batch, hidden)}
    if mode == "lstm":
        shapes["state_cell"] = (rows, batch, hidden)
    return shapes


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("steps,batch,feat,hidden,layers,bidirectional,state_outputs", [
    (5, 3, 4, 6, 1, False, False),
    (5, 3, 4, 6, 1, False, True),
    (1, 2, 3, 4, 1, True, True),
    (4, 1, 7, 3, 2, False, True),
    (3, 4, 2, 5, 2, True, False),
    (6, 2, 5, 8, 2, True, True),
])
def test_fused_gru_step_equals_the_ufunc_passes(steps, batch, feat, hidden, layers,
                                                bidirectional, state_outputs, dtype):
    sym = _rnn("gru", layers, bidirectional, state_outputs, hidden)
    shapes = _shapes("gru", steps, batch, feat, hidden, layers, bidirectional)
    _assert_fused_equals_reference(sym, shapes, dtype)


@pytest.mark.parametrize("heads_on", [(0,), (1,)])
def test_fused_gru_with_one_head_gradient(heads_on):
    """Only `output` or only `state_output` gets a head gradient: the step that starts the
    backward pass (dh from the final state, or zero) is handled alike by both paths."""
    sym = _rnn("gru", 2, True, True, 4)
    shapes = _shapes("gru", 4, 3, 5, 4, 2, True)
    _assert_fused_equals_reference(sym, shapes, "float32", heads_on)


@pytest.mark.parametrize("mode", ["rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("layers,bidirectional,state_outputs", [(1, False, False),
                                                                (2, True, True)])
def test_fused_vanilla_step_equals_the_ufunc_passes(mode, layers, bidirectional,
                                                    state_outputs):
    sym = _rnn(mode, layers, bidirectional, state_outputs, 5)
    shapes = _shapes(mode, 4, 3, 6, 5, layers, bidirectional)
    _assert_fused_equals_reference(sym, shapes, "float32")


def test_fused_lstm_step_with_head_gradients_on_the_final_states():
    sym = _rnn("lstm", 2, True, True, 4)
    shapes = _shapes("lstm", 3, 2, 5, 4, 2, True)
    _assert_fused_equals_reference(sym, shapes, "float64", heads_on=(1, 2))


@pytest.mark.parametrize("mode,names", [
    ("lstm", {"lstm_step", "lstm_step_grad"}),
    ("gru", {"gru_step", "gru_step_grad"}),
    ("rnn_tanh", {"rnn_tanh_step", "rnn_tanh_step_grad"}),
    ("rnn_relu", {"rnn_relu_step", "rnn_relu_step_grad"}),
])
def test_the_step_kernels_really_run_under_emulation(monkeypatch, mode, names):
    calls = []
    real = backend.elementwise

    def spy(xp, spec):
        calls.append(spec.name)
        return real(xp, spec)

    monkeypatch.setattr(backend, "elementwise", spy)
    sym = _rnn(mode, 1, True, False, 3)
    _run(sym, _shapes(mode, 2, 2, 3, 3, 1, True), "float32", True)
    assert names <= set(calls)
    calls.clear()
    _run(sym, _shapes(mode, 2, 2, 3, 3, 1, True), "float32", False)
    assert names <= set(calls)  # asked for, but NumPy without emulation gets no kernel


def test_gru_kernel_arithmetic_on_one_step():
    """The forward kernel alone, against the GRU formulas written out."""
    rng = np.random.RandomState(1)
    hr, hz, hh, xr, xz, xn, h_prev = (rng.uniform(-2, 2, (3, 4)) for _ in range(7))
    b_r, b_z, b_n = (rng.uniform(-1, 1, 4) for _ in range(3))
    gr, gz, gn = xr.copy(), xz.copy(), xn.copy()
    hn, h = np.empty((3, 4)), np.empty((3, 4))
    backend._EmulatedKernel(rnn_fused.GRU_STEP)(hr, hz, hh, b_r, b_z, b_n, h_prev,
                                                gr, gz, gn, hn, h)
    r = 1 / (1 + np.exp(-(xr + hr + b_r)))
    z = 1 / (1 + np.exp(-(xz + hz + b_z)))
    n = np.tanh(xn + r * (hh + b_n))
    np.testing.assert_allclose(gr, r, rtol=1e-12)
    np.testing.assert_allclose(gz, z, rtol=1e-12)
    np.testing.assert_allclose(gn, n, rtol=1e-12)
    np.testing.assert_allclose(hn, hh + b_n, rtol=1e-12)
    np.testing.assert_allclose(h, (1 - z) * n + z * h_prev, rtol=1e-12, atol=1e-12)


def test_relu_step_keeps_nan_as_numpy_does():
    a = np.array([[-1.0, 0.0, 2.0, np.nan]])
    h = np.empty_like(a)
    backend._EmulatedKernel(rnn_fused.VANILLA_STEP["rnn_relu"])(a, np.zeros_like(a), h)
    np.testing.assert_array_equal(h, np.maximum(a, 0))
