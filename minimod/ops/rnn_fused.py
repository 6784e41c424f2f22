"""The RNN op's time steps with their elementwise work as one GPU kernel each way.

For every mode, one step of one (layer, direction) pass is a recurrent matrix product plus a
chain of elementwise passes over (N, G*H) blocks. On CuPy that chain runs as one
ElementwiseKernel (`backend.elementwise`) per step, forward and backward:

- lstm: the recurrent sum, gate activations, cell update, tanh(c) and h (forward); dh += dy,
  dc and the four gate gradients (backward);
- gru: the recurrent bias, r and z, the candidate n = tanh(x_n + r * (W_hn h + b_hn)) and
  h = (h_prev - n) * z + n (forward); dh = z * dh + dW_h-product + dy, the input-side and
  recurrent-side gate gradients (backward: the product of the previous step's recurrent
  gradients is added here instead of in a pass of its own);
- rnn_tanh / rnn_relu: the recurrent sum and the activation (forward); dh += dy and the
  activation's derivative (backward).

Each kernel body is the arithmetic of the NumPy passes in rnn_cells.py in their order, so the
two agree to the last bit where the compiler keeps the order; NumPy runs those passes
(`backend.elementwise` gives it no kernel unless emulation is on). Gate names avoid `i` and
`n`, which CuPy's kernels reserve.
"""
from __future__ import annotations

from .. import backend
from .rnn_layout import prev_state

__all__ = ["LSTM_STEP", "LSTM_STEP_GRAD", "GRU_STEP", "GRU_STEP_GRAD", "VANILLA_STEP",
           "VANILLA_STEP_GRAD", "lstm_forward", "lstm_backward", "gru_forward", "gru_backward",
           "vanilla_forward", "vanilla_backward"]

# Gate order i, f, c (candidate), o. The gate blocks hold the input-side pre-activations on
# entry and the activated gates on exit; ri, rf, rc, ro are the blocks of W_h h_prev.
LSTM_STEP = backend.ElementwiseSpec(
    "lstm_step", "T ri, T rf, T rc, T ro, T c_prev", "T gi, T gf, T gc, T go, T c, T tc, T h",
    "gi = gi + ri; gi = tanh(gi * (T)0.5) * (T)0.5 + (T)0.5;"
    "gf = gf + rf; gf = tanh(gf * (T)0.5) * (T)0.5 + (T)0.5;"
    "gc = gc + rc; gc = tanh(gc);"
    "go = go + ro; go = tanh(go * (T)0.5) * (T)0.5 + (T)0.5;"
    "c = gf * c_prev + gi * gc;"
    "tc = tanh(c);"
    "h = go * tc;")
LSTM_STEP_GRAD = backend.ElementwiseSpec(
    "lstm_step_grad", "T dy, T gi, T gf, T gc, T go, T tc, T c_prev",
    "T dh, T dc, T da_i, T da_f, T da_c, T da_o",
    "dh = dh + dy;"
    "dc = dc + ((T)1 - tc * tc) * go * dh;"
    "da_o = dh * tc * (((T)1 - go) * go);"
    "da_i = dc * gc * (((T)1 - gi) * gi);"
    "da_f = dc * c_prev * (((T)1 - gf) * gf);"
    "da_c = dc * gi * ((T)1 - gc * gc);"
    "dc = dc * gf;")

# Gate order r, z, n. The gate blocks hold the input-side pre-activations (W_x x + b_x) on
# entry and the activated gates on exit; hr, hz, hh are the blocks of W_h h_prev, and b_r,
# b_z, b_n those of b_h (broadcast over the batch). hn keeps W_hn h_prev + b_hn for backward.
GRU_STEP = backend.ElementwiseSpec(
    "gru_step", "T hr, T hz, T hh, T b_r, T b_z, T b_n, T h_prev",
    "T gr, T gz, T gn, T hn, T h",
    "gr = gr + (hr + b_r);"
    "gr = tanh(gr * (T)0.5) * (T)0.5 + (T)0.5;"
    "gz = gz + (hz + b_z);"
    "gz = tanh(gz * (T)0.5) * (T)0.5 + (T)0.5;"
    "hn = hh + b_n;"
    "gn = tanh(gn + gr * hn);"
    "h = (h_prev - gn) * gz + gn;")
# dh holds z * dh of the step after this one, rec the product of that step's recurrent
# gradients with W_h (zero at the pass's last step); dah_* are the recurrent-side gradients,
# equal to the input-side ones but for the candidate, which r scales.
GRU_STEP_GRAD = backend.ElementwiseSpec(
    "gru_step_grad", "T dy, T rec, T gr, T gz, T gn, T hn, T h_prev",
    "T dh, T da_r, T da_z, T da_n, T dah_r, T dah_z, T dah_n",
    "dh = dh + rec + dy;"
    "da_n = dh * ((T)1 - gz) * ((T)1 - gn * gn);"
    "dah_n = da_n * gr;"
    "da_r = da_n * hn * (gr * ((T)1 - gr));"
    "da_z = (h_prev - gn) * dh * (gz * ((T)1 - gz));"
    "dah_r = da_r;"
    "dah_z = da_z;"
    "dh = dh * gz;")

# a is W_x x + b_x + b_h, rec is W_h h_prev. relu as a - min(a, 0), not max(a, 0): CUDA's max
# drops a NaN where NumPy's maximum (the reference) keeps it.
VANILLA_STEP = {
    "rnn_tanh": backend.ElementwiseSpec("rnn_tanh_step", "T a, T rec", "T h",
                                        "h = tanh(a + rec);"),
    "rnn_relu": backend.ElementwiseSpec("rnn_relu_step", "T a, T rec", "T h",
                                        "T s = a + rec; h = s - min(s, (T)0);"),
}
VANILLA_STEP_GRAD = {
    "rnn_tanh": backend.ElementwiseSpec("rnn_tanh_step_grad", "T dy, T h", "T dh, T da",
                                        "dh = dh + dy; da = ((T)1 - h * h) * dh;"),
    "rnn_relu": backend.ElementwiseSpec("rnn_relu_step_grad", "T dy, T h", "T dh, T da",
                                        "dh = dh + dy; da = dh * (T)(h > (T)0);"),
}


def _blocks(a, count: int) -> list:
    """The `count` equal column blocks of a (N, count*H) array, as views."""
    width = a.shape[-1] // count
    return [a[..., k * width:(k + 1) * width] for k in range(count)]


# ============================================================================ forward

def lstm_forward(xp, fused, gates, wh_t, res, hs, h0, c0, order, rec_buf) -> None:
    """The LSTM steps of one pass (no clipping)."""
    cs, tanh_cs = res["c"], res["tanh_c"]
    h_prev, c_prev = h0, c0
    rec = _blocks(rec_buf, 4)
    for t in order:
        backend.matmul(xp, h_prev, wh_t, out=rec_buf)
        fused(*rec, c_prev, *_blocks(gates[t], 4), cs[t], tanh_cs[t], hs[t])
        h_prev, c_prev = hs[t], cs[t]


def gru_forward(xp, fused, gates, wh_t, bh, hns, hs, h0, order, rec_buf) -> None:
    """The GRU steps of one pass: per step the recurrent product, then one kernel."""
    b_h = _blocks(bh, 3)
    h_prev = h0
    for t in order:
        backend.matmul(xp, h_prev, wh_t, out=rec_buf)
        fused(*_blocks(rec_buf, 3), *b_h, h_prev, *_blocks(gates[t], 3), hns[t], hs[t])
        h_prev = hs[t]


def vanilla_forward(xp, fused, gates, wh_t, hs, h0, order, rec_buf) -> None:
    """The rnn_tanh / rnn_relu steps of one pass."""
    h_prev = h0
    for t in order:
        backend.matmul(xp, h_prev, wh_t, out=rec_buf)
        fused(gates[t], rec_buf, hs[t])
        h_prev = hs[t]


# ============================================================================ backward

def lstm_backward(xp, fused, res, wh, dy, c0, dh, dc, d_gates, order, reverse) -> None:
    """The LSTM backward steps of one pass (no clipping)."""
    gates, cs, tanh_cs = res["gates"], res["c"], res["tanh_c"]
    for t in reversed(order):
        da = d_gates[t]
        fused(dy[t], *_blocks(gates[t], 4), tanh_cs[t], prev_state(cs, c0, t, reverse), dh, dc,
              *_blocks(da, 4))
        backend.matmul(xp, da, wh, out=dh)


def gru_backward(xp, fused, res, hs, wh, dy, h0, dh, d_gates, d_gates_h, rec, order,
                 reverse) -> None:
    """The GRU backward steps of one pass; `rec` is a (N, H) work array."""
    gates, hns = res["gates"], res["hn"]
    rec.fill(0)
    for t in reversed(order):
        dah = d_gates_h[t]
        fused(dy[t], rec, *_blocks(gates[t], 3), hns[t], prev_state(hs, h0, t, reverse), dh,
              *_blocks(d_gates[t], 3), *_blocks(dah, 3))
        backend.matmul(xp, dah, wh, out=rec)
    dh += rec


def vanilla_backward(xp, fused, hs, wh, dy, dh, d_gates, order) -> None:
    """The rnn_tanh / rnn_relu backward steps of one pass."""
    for t in reversed(order):
        da = d_gates[t]
        fused(dy[t], hs[t], dh, da)
        backend.matmul(xp, da, wh, out=dh)
