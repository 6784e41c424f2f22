"""The RNN op's LSTM time steps on the host in fewer, wider NumPy passes (a bound fast path).

The reference step loops (ops/rnn_cells.py) make about 15 NumPy calls per forward step and 23
per backward step, most on a quarter of the (N, 4H) gate block. At the sizes of a language
model (N = 32, H = 200) a call costs more in dispatch than in arithmetic, so this path makes
the same operations on the same values in fewer calls:

- forward, per step: the four gate blocks activated by four calls over the whole block,
  g * s, tanh, * s, + o, with s = 0.5 and o = 0.5 in the sigmoid blocks (the reference's
  logistic function through tanh) and s = 1, o = -0.0 in the candidate's (both exact
  identities, signed zeros included), then the cell update as in the reference: 10 calls
  instead of 15;
- backward: everything that does not depend on the incoming gradients is computed for all
  T steps at once before the loop (the gates' derivatives, and (1 - tanh(c)^2) * o); each
  step then multiplies the four gate gradients by their derivatives in one call: 9 calls
  instead of 23.

Every product and sum is the reference's, in its order, so the results are the same to the
bit (tests/kernels/test_lstm_host.py). Scope: NumPy arrays of one float dtype, mode 'lstm'
without cell-state clipping; anything else runs the op's own passes. The layers, directions,
dropout and reserve are the op's (`RNN.drive_forward` / `drive_backward`), with this module's
(layer, direction) passes.

On the LSTM language model of benchmarks/ (T = 35, N = 32, H = 200, fused), with the
contiguous W_h^T that both paths now multiply by (`backend.repeated_rhs`) and b_h's gradient
copied from b_x's, a training step ran 1.10x [1.01-1.13] as fast as before (before_after.py,
5 lockstep rounds).
"""
from __future__ import annotations

from .. import backend
from ..backend import const
from ..ops import rnn_cells, rnn_fused
from ..ops.rnn import RNN
from ..ops.rnn_layout import prev_state
from .registry import fast_path, plain_numpy

__all__ = ["forward_direction", "backward_direction", "activate_gates", "gate_affine"]


def _applies(op, xp, arrays, step_kernel) -> bool:
    """lstm without clipping or projection, on plain NumPy arrays, where the backend has no
    fused kernel for the step (`step_kernel`; under `backend.emulate_fused_kernels` it has
    one, and the tests that set it run the op's own fused loops)."""
    return op.attrs.mode == "lstm" and not op.clips_state and not op.attrs.projection_size \
        and plain_numpy(xp, *[a for a in arrays if a is not None]) \
        and backend.elementwise(xp, step_kernel) is None


@fast_path(RNN, stage="forward")
def bind_forward(op, xp, inputs, aux, out):
    if not _applies(op, xp, list(inputs) + list(out), rnn_fused.LSTM_STEP):
        return None

    def run(xp, is_train):
        op.drive_forward(xp, inputs, out, is_train, forward_direction)
    return run


@fast_path(RNN, stage="backward")
def bind_backward(op, xp, out_grads, inputs, outputs, in_grads, aux):
    arrays = list(out_grads) + list(inputs) + list(outputs) + list(in_grads)
    if not _applies(op, xp, arrays, rnn_fused.LSTM_STEP_GRAD):
        return None

    def run(xp, is_train):
        op.drive_backward(xp, out_grads, inputs, outputs, in_grads, backward_direction)
    return run


def gate_affine(xp, hidden: int, dtype, scratch):
    """(s, o): per gate column, s = 0.5 and o = 0.5 for i, f, o; s = 1 and o = -0.0 for the
    candidate, so that tanh(g * s) * s + o is sigmoid or tanh, each as the reference has it."""
    scale = scratch(xp, "lstm_gate_scale", (4 * hidden,), dtype)
    offset = scratch(xp, "lstm_gate_offset", (4 * hidden,), dtype)
    half = const(xp, 0.5, dtype)
    xp.copyto(scale, half)
    xp.copyto(offset, half)
    xp.copyto(scale[2 * hidden:3 * hidden], const(xp, 1, dtype))
    cand = offset[2 * hidden:3 * hidden]
    xp.copyto(cand, const(xp, 0, dtype))
    xp.negative(cand, out=cand)  # -0.0 (const's cache holds 0.0 and -0.0 as one key)
    return scale, offset


def activate_gates(xp, g, scale, offset) -> None:
    """The four gate blocks of g (N, 4H) activated in place: tanh(g * s) * s + o."""
    g *= scale
    xp.tanh(g, out=g)
    g *= scale
    g += offset


def forward_direction(xp, attrs, x, w, res, hs, h0, c0, reverse: bool, scratch) -> None:
    """rnn_cells.forward_direction for lstm without clipping."""
    steps, batch, _ = x.shape
    hidden = hs.shape[-1]
    gates = rnn_cells.input_gates(xp, attrs, x, w, res, scratch)
    wh_t = rnn_cells.recurrent_rhs(xp, w["wh"], scratch)
    scale, offset = gate_affine(xp, hidden, x.dtype, scratch)
    rec = scratch(xp, "rec", (batch, 4 * hidden), x.dtype)
    ic = rec[:, :hidden]  # free again once added into the gates
    cs, tanh_cs = res["c"], res["tanh_c"]
    h_prev, c_prev = h0, c0
    for t in rnn_cells.step_order(steps, reverse):
        g = gates[t]
        xp.matmul(h_prev, wh_t, out=rec)
        g += rec
        activate_gates(xp, g, scale, offset)
        c = cs[t]
        xp.multiply(g[:, hidden:2 * hidden], c_prev, out=c)
        xp.multiply(g[:, :hidden], g[:, 2 * hidden:3 * hidden], out=ic)
        c += ic
        xp.tanh(c, out=tanh_cs[t])
        xp.multiply(g[:, 3 * hidden:], tanh_cs[t], out=hs[t])
        h_prev, c_prev = hs[t], c


def _derivatives(xp, gates, tanh_cs, scratch):
    """For all steps at once: d (T, N, 4H), each activated gate's derivative (s (1 - s) for
    i, f, o; 1 - c~^2 for the candidate), and p (T, N, H) = (1 - tanh(c)^2) * o."""
    steps, batch, width = gates.shape
    hidden = width // 4
    one = const(xp, 1, gates.dtype)
    d = scratch(xp, "lstm_gate_deriv", gates.shape, gates.dtype)
    xp.subtract(one, gates, out=d)
    d *= gates
    cand = gates[:, :, 2 * hidden:3 * hidden]
    xp.multiply(cand, cand, out=d[:, :, 2 * hidden:3 * hidden])
    xp.subtract(one, d[:, :, 2 * hidden:3 * hidden], out=d[:, :, 2 * hidden:3 * hidden])
    p = scratch(xp, "lstm_cell_deriv", tanh_cs.shape, gates.dtype)
    xp.multiply(tanh_cs, tanh_cs, out=p)
    xp.subtract(one, p, out=p)
    p *= gates[:, :, 3 * hidden:]
    return d, p


def backward_direction(xp, attrs, x, res, hs, w, gw, dy, h0, c0, dh_last, dc_last, dx,
                       reverse: bool, scratch):
    """rnn_cells.backward_direction for lstm without clipping."""
    steps, batch, hidden = hs.shape
    dtype = hs.dtype
    dh = rnn_cells.filled(scratch(xp, "dh", (batch, hidden), dtype), dh_last)
    dc = rnn_cells.filled(scratch(xp, "dc", (batch, hidden), dtype), dc_last)
    d_gates = scratch(xp, "d_gates", (steps, batch, 4 * hidden), dtype)
    tmp = scratch(xp, "tmp", (batch, hidden), dtype)
    gates, cs, tanh_cs = res["gates"], res["c"], res["tanh_c"]
    deriv, cell_deriv = _derivatives(xp, gates, tanh_cs, scratch)
    wh = w["wh"]
    for t in reversed(rnn_cells.step_order(steps, reverse)):
        g, da = gates[t], d_gates[t]
        dh += dy[t]
        xp.multiply(cell_deriv[t], dh, out=tmp)
        dc += tmp
        xp.multiply(dc, g[:, 2 * hidden:3 * hidden], out=da[:, :hidden])
        xp.multiply(dc, prev_state(cs, c0, t, reverse), out=da[:, hidden:2 * hidden])
        xp.multiply(dc, g[:, :hidden], out=da[:, 2 * hidden:3 * hidden])
        xp.multiply(dh, tanh_cs[t], out=da[:, 3 * hidden:])
        da *= deriv[t]
        dc *= g[:, hidden:2 * hidden]
        xp.matmul(da, wh, out=dh)
    rnn_cells.weight_grads(xp, x, hs, w, gw, h0, d_gates, d_gates, dx, reverse, scratch)
    return dh, dc
