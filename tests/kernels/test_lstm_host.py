"""The RNN op's host LSTM path (minimod/kernels/lstm_host.py) writes the very bits of the op's
own forward and backward: outputs, final states, the reserve that backward reads, and every
gradient, over layers, directions, dropout, head gradients of the final states and dtypes."""
import numpy as np
import pytest

import minimod as mx
from minimod import kernels
from minimod.kernels import lstm_host
from minimod.ops.registry import create_op


def _same_bits(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _op(**attrs):
    base = {"state_size": "6", "num_layers": "1", "mode": "lstm"}
    base.update({k: str(v) for k, v in attrs.items()})
    return create_op("RNN", base)


def _arrays(op, steps, batch, feat, dtype, seed):
    rng = np.random.RandomState(seed)
    in_shapes = [(steps, batch, feat)] + [None] * (len(op.arguments()) - 1)
    in_shapes, out_shapes = op.infer_shape(in_shapes, [None] * len(op.outputs()))
    args = [rng.uniform(-1, 1, s).astype(dtype) for s in in_shapes]
    args[1] *= 0.5
    heads = [rng.uniform(-1, 1, s).astype(dtype) for s in out_shapes[:-1]]
    return args, out_shapes, heads


def _run_both(op, args, out_shapes, heads, dtype, seed=0):
    """((outputs, grads) of the op's own passes, (outputs, grads) of the bound host path)."""
    results = []
    for bound in (False, True):
        outs = [np.full(s, np.nan, dtype) for s in out_shapes]
        grads = [np.full(a.shape, np.nan, dtype) for a in args]
        mx.random.seed(seed)
        if bound:
            run = kernels.bind_forward(np, op, args, [], outs)
            assert run is not None
            run(np, True)
            run = kernels.bind_backward(np, op, heads, args, outs, grads, [])
            assert run is not None
            run(np, True)
        else:
            op.forward(np, args, [], outs, True)
            op.backward(np, heads, args, outs, grads, [])
        results.append((outs, grads))
    return results


@pytest.mark.parametrize("layers,bidirectional,state_outputs", [
    (1, False, False), (1, True, True), (2, False, True), (2, True, False)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_host_lstm_writes_the_ops_bits(layers, bidirectional, state_outputs, dtype):
    op = _op(num_layers=layers, bidirectional=bidirectional, state_outputs=state_outputs)
    args, out_shapes, heads = _arrays(op, steps=5, batch=3, feat=4, dtype=dtype, seed=layers)
    (ref_out, ref_grad), (out, grad) = _run_both(op, args, out_shapes, heads, dtype)
    for name, a, b in zip(op.outputs(), ref_out, out):
        assert _same_bits(a, b), name
    for name, a, b in zip(op.arguments(), ref_grad, grad):
        assert _same_bits(a, b), name
    assert np.isfinite(ref_grad[1]).all() and np.abs(ref_grad[1]).max() > 0


def test_host_lstm_with_dropout_and_a_single_row_batch():
    """Dropout between layers draws the same mask through the op's driver; a batch of one
    row takes OpenBLAS's matrix-vector products, whose order differs with the operand's
    layout, and still matches (both paths multiply by the same contiguous W_h^T)."""
    op = _op(num_layers=2, p=0.4, state_outputs=True)
    args, out_shapes, heads = _arrays(op, steps=7, batch=1, feat=3, dtype=np.float32, seed=5)
    (ref_out, ref_grad), (out, grad) = _run_both(op, args, out_shapes, heads, np.float32, 3)
    assert all(_same_bits(a, b) for a, b in zip(ref_out, out))
    assert all(_same_bits(a, b) for a, b in zip(ref_grad, grad))


def test_gate_activation_is_the_references_to_the_bit_on_special_values():
    """tanh(g * s) * s + o, with s = 1 and o = -0.0 in the candidate block, is the
    reference's sigmoid (through tanh) and plain tanh bit for bit, signed zeros, subnormals,
    infinities and values that saturate included."""
    from minimod.ops.rnn_cells import _sigmoid_
    hidden = 8
    special = np.array([-0.0, 0.0, 1e-40, -1e-40, 1e-38, -3e-39, 20.0, -20.0, np.inf, -np.inf,
                        9.5, -0.5], np.float32)
    rng = np.random.RandomState(0)
    g = rng.uniform(-6, 6, (len(special) + 2, 4 * hidden)).astype(np.float32)
    for k in range(4):
        g[:len(special), k * hidden] = special
    expected = g.copy()
    _sigmoid_(np, expected[:, :2 * hidden])
    np.tanh(expected[:, 2 * hidden:3 * hidden], out=expected[:, 2 * hidden:3 * hidden])
    _sigmoid_(np, expected[:, 3 * hidden:])
    scale, offset = lstm_host.gate_affine(
        np, hidden, np.float32, lambda xp, role, shape, dtype: np.empty(shape, dtype))
    lstm_host.activate_gates(np, g, scale, offset)
    assert _same_bits(g, expected)
    assert np.signbit(g[0, 2 * hidden]) and not np.signbit(g[1, 2 * hidden])


@pytest.mark.parametrize("attrs", [{"mode": "gru"}, {"mode": "rnn_tanh"},
                                   {"lstm_state_clip_min": -1, "lstm_state_clip_max": 1}])
def test_host_lstm_leaves_other_modes_and_clipping_to_the_op(attrs):
    op = _op(**attrs)
    args, out_shapes, _ = _arrays(op, steps=3, batch=2, feat=4, dtype=np.float32, seed=1)
    outs = [np.empty(s, np.float32) for s in out_shapes]
    assert kernels.bind_forward(np, op, args, [], outs) is None


def test_host_lstm_leaves_mixed_dtypes_to_the_op():
    op = _op()
    args, out_shapes, _ = _arrays(op, steps=3, batch=2, feat=4, dtype=np.float32, seed=1)
    outs = [np.empty(s, np.float64) for s in out_shapes]
    assert kernels.bind_forward(np, op, args, [], outs) is None


def test_an_executor_runs_the_fused_lstm_through_the_host_path(monkeypatch):
    """A bound FusedRNNCell graph on the CPU runs its passes through lstm_host, and its
    gradients are the op's own (bound steps off: no fast path bound at all)."""
    calls = []
    real = lstm_host.backward_direction

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(lstm_host, "backward_direction", counting)
    cell = mx.rnn.FusedRNNCell(5, num_layers=1, mode="lstm", prefix="l_")
    out, _ = cell.unroll(4, inputs=mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    net = mx.sym.MakeLoss(mx.sym.sum(out * out))
    grads = []
    for bound in (True, False):
        if not bound:
            monkeypatch.setattr(kernels, "bind_forward", lambda *a: None)
            monkeypatch.setattr(kernels, "bind_backward", lambda *a: None)
        exe = net.simple_bind(mx.cpu(), data=(4, 3, 2))
        rng = np.random.RandomState(0)
        for name, arr in exe.arg_dict.items():
            arr[:] = rng.uniform(-0.5, 0.5, arr.shape)
        exe.forward(is_train=True)
        exe.backward()
        grads.append({k: v.asnumpy() for k, v in exe.grad_dict.items() if v is not None})
    assert len(calls) == 1
    assert grads[0].keys() == grads[1].keys()
    assert all(_same_bits(grads[0][k], grads[1][k]) for k in grads[0])
