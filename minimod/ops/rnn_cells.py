"""The cell kernels of the RNN operator: one (layer, direction) pass over all time steps,
forward and backward, for each mode (lstm, gru, rnn_relu / rnn_tanh). rnn.py drives them layer
by layer; the math per step is in its docstring.

Per pass, the input projection of all T steps is ONE matrix product, the T recurrent products
run back to back, and the gate math works on whole (N, G*H) blocks. Backward mirrors it: the
step loop only propagates dh (and dc) and collects the gate gradients of all steps, then dW_x,
dW_h, the biases and dx are each one product over all steps (`weight_grads`).

Every pass takes `scratch(xp, role, shape, dtype)`, the op's work-array cache, and the views
`res` of its piece of the reserve (rnn_layout.py), which forward writes and backward reads.

The elementwise work of each step is written here as NumPy passes, the reference; where
`backend.elementwise` gives a kernel (CuPy), the step loops of rnn_fused.py run it instead,
one kernel per step each way, with the same arithmetic (LSTM with state clipping excepted).
"""
from __future__ import annotations

from .. import backend
from ..backend import const as _const
from ..backend import sum_into as _sum
from . import rnn_fused as _fused
from .rnn_layout import prev_state

__all__ = ["forward_direction", "backward_direction", "input_gates", "recurrent_rhs",
           "weight_grads", "filled", "step_order"]


def _sigmoid_(xp, a) -> None:
    """In-place logistic function (through tanh: no overflow warnings, one transcendental)."""
    half = _const(xp, 0.5, a.dtype)
    xp.multiply(a, half, out=a)
    xp.tanh(a, out=a)
    xp.multiply(a, half, out=a)
    xp.add(a, half, out=a)


def _dsigmoid_into(xp, s, out) -> None:
    """out = s * (1 - s), the logistic function's derivative from its value s."""
    xp.subtract(_const(xp, 1, s.dtype), s, out=out)
    out *= s


def step_order(steps: int, reverse: bool):
    """The time steps of a pass in the order forward visits them."""
    return range(steps - 1, -1, -1) if reverse else range(steps)


# ============================================================================ forward

def input_gates(xp, attrs, x, w, res, scratch):
    """The input side of every step's pre-activations, (T, N, G*H): W_x x + b_x (+ b_h but
    for gru, whose b_h sits inside the candidate), the input projection of all T steps in
    one product, into the reserve's 'gates' where it has them (else a work array)."""
    steps, batch, _ = x.shape
    gh = w["wh"].shape[0]
    gates = res["gates"] if "gates" in res else scratch(xp, "gates", (steps, batch, gh),
                                                          x.dtype)
    backend.matmul(xp, x.reshape(steps * batch, x.shape[2]), w["wx"].T,
                   out=gates.reshape(steps * batch, gh))
    gates += w["bx"]
    if attrs.mode != "gru":
        gates += w["bh"]
    return gates


def recurrent_rhs(xp, wh, scratch):
    """W_h^T, the right operand of every step's recurrent product (`backend.repeated_rhs`)."""
    return backend.repeated_rhs(xp, wh.T, lambda: scratch(xp, "wh_t", wh.T.shape, wh.dtype))


def forward_direction(xp, attrs, x, w, res, hs, h0, c0, reverse: bool, scratch) -> None:
    """One (layer, direction) pass with input x (T, N, in): hidden states into `hs` (T, N, H),
    possibly a strided view of the layer's output, and what backward needs into the reserve
    views `res`. `w` holds the views 'wx', 'wh', 'bx', 'bh' of the parameters."""
    steps, batch, _ = x.shape
    gh = w["wh"].shape[0]
    gates = input_gates(xp, attrs, x, w, res, scratch)
    wh_t = recurrent_rhs(xp, w["wh"], scratch)
    order = step_order(steps, reverse)
    rec_buf = scratch(xp, "rec", (batch, gh), x.dtype)
    if attrs.mode == "lstm":
        proj = None if "wr" not in w else (w["wr"], scratch(xp, "proj", hs.shape[1:], x.dtype))
        _lstm_forward(xp, attrs, gates, wh_t, res, hs, h0, c0, order, rec_buf, proj)
    elif attrs.mode == "gru":
        fused = backend.elementwise(xp, _fused.GRU_STEP)
        if fused is not None:
            _fused.gru_forward(xp, fused, gates, wh_t, w["bh"], res["hn"], hs, h0, order,
                               rec_buf)
        else:
            _gru_forward(xp, gates, wh_t, w["bh"], res["hn"], hs, h0, order, rec_buf)
    else:
        fused = backend.elementwise(xp, _fused.VANILLA_STEP[attrs.mode])
        if fused is not None:
            _fused.vanilla_forward(xp, fused, gates, wh_t, hs, h0, order, rec_buf)
        else:
            _vanilla_forward(xp, attrs.mode == "rnn_relu", gates, wh_t, hs, h0, order,
                             rec_buf)


def _lstm_forward(xp, attrs, gates, wh_t, res, hs, h0, c0, order, rec_buf, proj) -> None:
    """proj: None, or (W_r, a work array (N, R)) for an LSTM with a projection."""
    plain = "clip" not in res and proj is None
    fused = backend.elementwise(xp, _fused.LSTM_STEP) if plain else None
    if fused is not None:
        _fused.lstm_forward(xp, fused, gates, wh_t, res, hs, h0, c0, order, rec_buf)
    else:
        _lstm_forward_unfused(xp, attrs, gates, wh_t, res, hs, h0, c0, order, rec_buf, proj)


def _lstm_forward_unfused(xp, attrs, gates, wh_t, res, hs, h0, c0, order, rec_buf,
                          proj=None) -> None:
    hidden = res["c"].shape[-1]
    cs, tanh_cs, clip_mask = res["c"], res["tanh_c"], res.get("clip")
    h_prev, c_prev = h0, c0
    for t in order:
        g = gates[t]
        backend.matmul(xp, h_prev, wh_t, out=rec_buf)
        g += rec_buf
        _sigmoid_(xp, g[:, :2 * hidden])
        xp.tanh(g[:, 2 * hidden:3 * hidden], out=g[:, 2 * hidden:3 * hidden])
        _sigmoid_(xp, g[:, 3 * hidden:])
        c = cs[t]
        xp.multiply(g[:, hidden:2 * hidden], c_prev, out=c)
        ic = rec_buf[:, :hidden]  # free again once added into the gates
        xp.multiply(g[:, :hidden], g[:, 2 * hidden:3 * hidden], out=ic)
        c += ic
        if clip_mask is not None:
            lo, hi = attrs.lstm_state_clip_min, attrs.lstm_state_clip_max
            if attrs.lstm_state_clip_nan:
                c[...] = xp.where(xp.isnan(c), lo, c)
            clip_mask[t] = (c >= lo) & (c <= hi)
            xp.clip(c, lo, hi, out=c)
        tc = tanh_cs[t]
        xp.tanh(c, out=tc)
        if proj is None:
            xp.multiply(g[:, 3 * hidden:], tc, out=hs[t])
        else:  # r = W_r h is the state the next step and layer read
            xp.multiply(g[:, 3 * hidden:], tc, out=res["h"][t])
            hs[t] = backend.matmul(xp, res["h"][t], proj[0].T, out=proj[1])
        h_prev, c_prev = hs[t], c


def _gru_forward(xp, gates, wh_t, bh, hns, hs, h0, order, rec_buf) -> None:
    hidden = hs.shape[-1]
    h_prev = h0
    for t in order:
        g = gates[t]
        backend.matmul(xp, h_prev, wh_t, out=rec_buf)
        rec_buf += bh
        g[:, :2 * hidden] += rec_buf[:, :2 * hidden]
        _sigmoid_(xp, g[:, :2 * hidden])
        hn = hns[t]
        hn[...] = rec_buf[:, 2 * hidden:]
        n = g[:, 2 * hidden:]
        r_hn = rec_buf[:, :hidden]  # free again once added into the gates
        xp.multiply(g[:, :hidden], hn, out=r_hn)
        n += r_hn
        xp.tanh(n, out=n)
        z = g[:, hidden:2 * hidden]
        # h' = n + z * (h - n)
        h = hs[t]
        xp.subtract(h_prev, n, out=h)
        h *= z
        h += n
        h_prev = h


def _vanilla_forward(xp, relu: bool, gates, wh_t, hs, h0, order, rec_buf) -> None:
    h_prev = h0
    zero = _const(xp, 0, hs.dtype)
    for t in order:
        backend.matmul(xp, h_prev, wh_t, out=rec_buf)
        h = hs[t]
        xp.add(gates[t], rec_buf, out=h)
        if relu:
            xp.maximum(h, zero, out=h)
        else:
            xp.tanh(h, out=h)
        h_prev = h


# ============================================================================ backward

def filled(buf, value):
    """buf holding `value` (a head gradient of a final state), or zeros when value is None."""
    if value is not None:
        buf[...] = value
    else:
        buf.fill(0)
    return buf


def backward_direction(xp, attrs, x, res, hs, w, gw, dy, h0, c0, dh_last, dc_last, dx,
                       reverse: bool, scratch):
    """Gradients of one (layer, direction) pass with input x, reserve views `res` and hidden
    states `hs`: writes gw (weights and biases), adds into dx (when not None), returns the
    gradients of the initial states (dh0, and dc0 for lstm, else None). dh_last and dc_last
    are the head gradients of the final states (None: zero)."""
    steps, batch, width = hs.shape  # width: H, or R with a projection
    hidden, gh, dtype = res["c"].shape[-1] if "c" in res else width, w["wh"].shape[0], hs.dtype
    order = list(step_order(steps, reverse))
    # the returned initial-state gradients live in scratch too: the caller copies them out
    dh = filled(scratch(xp, "dh", (batch, width), dtype), dh_last)
    d_gates = scratch(xp, "d_gates", (steps, batch, gh), dtype)
    tmp = scratch(xp, "tmp", (batch, hidden), dtype)
    tmp2 = scratch(xp, "tmp2", (batch, hidden), dtype)
    dc0 = None
    if attrs.mode == "lstm":
        dc0 = filled(scratch(xp, "dc", (batch, hidden), dtype), dc_last)
        _lstm_backward(xp, res, w, gw, dy, c0, dh, dc0, d_gates, tmp, tmp2, order, reverse,
                       scratch)
        d_gates_h = d_gates
    elif attrs.mode == "gru":
        d_gates_h = scratch(xp, "d_gates_h", (steps, batch, gh), dtype)
        fused = backend.elementwise(xp, _fused.GRU_STEP_GRAD)
        if fused is not None:
            _fused.gru_backward(xp, fused, res, hs, w["wh"], dy, h0, dh, d_gates, d_gates_h,
                                tmp, order, reverse)
        else:
            _gru_backward(xp, res, hs, w["wh"], dy, h0, dh, d_gates, d_gates_h, tmp, tmp2,
                          order, reverse)
    else:
        fused = backend.elementwise(xp, _fused.VANILLA_STEP_GRAD[attrs.mode])
        if fused is not None:
            _fused.vanilla_backward(xp, fused, hs, w["wh"], dy, dh, d_gates, order)
        else:
            _vanilla_backward(xp, attrs.mode == "rnn_relu", hs, w["wh"], dy, dh, d_gates,
                              order)
        d_gates_h = d_gates
    weight_grads(xp, x, hs, w, gw, h0, d_gates, d_gates_h, dx, reverse, scratch)
    return dh, dc0


def _lstm_backward(xp, res, w, gw, dy, c0, dh, dc, d_gates, tmp, tmp2, order, reverse,
                   scratch) -> None:
    """The lstm pass's step loop backward; with a projection, also dW_r into gw."""
    if "wr" in w:  # the projected states' gradients per step, then dW_r = sum_t dr_t^T h_t
        proj = (w["wr"], scratch(xp, "dr", dy.shape, dy.dtype),
                scratch(xp, "dh_h", dc.shape, dc.dtype))
        _lstm_backward_unfused(xp, res, w["wh"], dy, c0, dh, dc, d_gates, tmp, tmp2, order,
                               reverse, proj)
        backend.matmul(xp, proj[1].reshape(-1, dh.shape[-1]).T,
                       res["h"].reshape(-1, dc.shape[-1]), out=gw["wr"])
        return
    fused = None if "clip" in res else backend.elementwise(xp, _fused.LSTM_STEP_GRAD)
    if fused is not None:
        _fused.lstm_backward(xp, fused, res, w["wh"], dy, c0, dh, dc, d_gates, order, reverse)
    else:
        _lstm_backward_unfused(xp, res, w["wh"], dy, c0, dh, dc, d_gates, tmp, tmp2, order,
                               reverse)


def _lstm_backward_unfused(xp, res, wh, dy, c0, dh, dc, d_gates, tmp, tmp2, order,
                           reverse, proj=None) -> None:
    """dh carries the gradient of the state the steps read: with a projection (proj = W_r,
    dr (T, N, R) to fill, a work array (N, H)) the projected one, taken through W_r to h."""
    cs, clip_mask = res["c"], res.get("clip")
    carry = dh
    for t in reversed(order):
        carry += dy[t]
        if proj is not None:
            proj[1][t] = carry
            dh = backend.matmul(xp, carry, proj[0], out=proj[2])
        _lstm_step_grad(xp, res["gates"][t], res["tanh_c"][t], prev_state(cs, c0, t, reverse),
                        dh, dc, d_gates[t], tmp, tmp2,
                        None if clip_mask is None else clip_mask[t])
        backend.matmul(xp, d_gates[t], wh, out=carry)


def _lstm_step_grad(xp, g, tc, c_prev, dh, dc, da, tmp, tmp2, clip) -> None:
    """One step backward: the gate gradients `da` from dh and the carried dc (which becomes
    the previous step's); g the activated gates, tc tanh(c), clip the step's clip mask."""
    hidden = dc.shape[-1]
    one = _const(xp, 1, dh.dtype)
    i_g, f_g = g[:, :hidden], g[:, hidden:2 * hidden]
    c_g, o_g = g[:, 2 * hidden:3 * hidden], g[:, 3 * hidden:]
    # dc += dh * o * (1 - tanh(c)^2)
    xp.multiply(tc, tc, out=tmp)
    xp.subtract(one, tmp, out=tmp)
    tmp *= o_g
    tmp *= dh
    dc += tmp
    if clip is not None:
        dc *= clip
    da_o = da[:, 3 * hidden:]
    xp.multiply(dh, tc, out=da_o)
    _dsigmoid_into(xp, o_g, tmp2)
    da_o *= tmp2
    da_i = da[:, :hidden]
    xp.multiply(dc, c_g, out=da_i)
    _dsigmoid_into(xp, i_g, tmp2)
    da_i *= tmp2
    da_f = da[:, hidden:2 * hidden]
    xp.multiply(dc, c_prev, out=da_f)
    _dsigmoid_into(xp, f_g, tmp2)
    da_f *= tmp2
    da_c = da[:, 2 * hidden:3 * hidden]
    xp.multiply(dc, i_g, out=da_c)
    xp.multiply(c_g, c_g, out=tmp2)
    xp.subtract(one, tmp2, out=tmp2)
    da_c *= tmp2
    dc *= f_g


def _gru_backward(xp, res, hs, wh, dy, h0, dh, d_gates, d_gates_h, tmp, tmp2, order,
                  reverse) -> None:
    """d_gates gets the gradients of the input-side pre-activations, d_gates_h those of the
    recurrent side (which differ in the candidate block, scaled by r there)."""
    gates, hns = res["gates"], res["hn"]
    hidden = dh.shape[-1]
    one = _const(xp, 1, dh.dtype)
    for t in reversed(order):
        dh += dy[t]
        g = gates[t]
        r_g, z_g, n_g = g[:, :hidden], g[:, hidden:2 * hidden], g[:, 2 * hidden:]
        dax = d_gates[t]
        dah = d_gates_h[t]
        da_n = dax[:, 2 * hidden:]
        xp.subtract(one, z_g, out=tmp2)
        xp.multiply(dh, tmp2, out=da_n)
        xp.multiply(n_g, n_g, out=tmp2)
        xp.subtract(one, tmp2, out=tmp2)
        da_n *= tmp2
        xp.multiply(da_n, r_g, out=dah[:, 2 * hidden:])
        da_r = dax[:, :hidden]
        xp.multiply(da_n, hns[t], out=da_r)
        _dsigmoid_into(xp, r_g, tmp2)
        da_r *= tmp2
        da_z = dax[:, hidden:2 * hidden]
        xp.subtract(prev_state(hs, h0, t, reverse), n_g, out=da_z)
        da_z *= dh
        _dsigmoid_into(xp, z_g, tmp2)
        da_z *= tmp2
        dah[:, :2 * hidden] = dax[:, :2 * hidden]
        dh *= z_g
        backend.matmul(xp, dah, wh, out=tmp)
        dh += tmp


def _vanilla_backward(xp, relu: bool, hs, wh, dy, dh, d_gates, order) -> None:
    zero, one = _const(xp, 0, dh.dtype), _const(xp, 1, dh.dtype)
    for t in reversed(order):
        dh += dy[t]
        da = d_gates[t]
        h = hs[t]
        if relu:
            xp.greater(h, zero, out=da)  # the mask as 1.0 / 0.0
            da *= dh
        else:
            xp.multiply(h, h, out=da)
            xp.subtract(one, da, out=da)
            da *= dh
        backend.matmul(xp, da, wh, out=dh)


def weight_grads(xp, x, hs, w, gw, h0, d_gates, d_gates_h, dx, reverse, scratch) -> None:
    """dW_x, dW_h, the biases and dx of one pass, each one product over all steps."""
    steps, batch, hidden = hs.shape
    gh = d_gates.shape[-1]
    dtype = hs.dtype
    flat_x = d_gates.reshape(steps * batch, gh)
    backend.matmul(xp, flat_x.T, x.reshape(steps * batch, -1), out=gw["wx"])
    # dW_h = sum_t da_h[t]^T h_prev[t]: the steps whose h_prev is a hidden state of this
    # pass in one product, plus the step that started from h0
    first, rest, prev = (steps - 1, slice(0, steps - 1), slice(1, steps)) if reverse \
        else (0, slice(1, steps), slice(0, steps - 1))
    backend.matmul(xp, d_gates_h[rest].reshape(-1, gh).T, hs[prev].reshape(-1, hidden),
              out=gw["wh"])
    first_wh = scratch(xp, "first_wh", gw["wh"].shape, dtype)
    gw["wh"] += backend.matmul(xp, d_gates_h[first].T, h0, out=first_wh)
    _sum(xp, flat_x, 0, gw["bx"])
    if d_gates_h is d_gates:  # lstm and rnn_*: b_h's gradient is b_x's, the same sum
        xp.copyto(gw["bh"], gw["bx"])
    else:
        _sum(xp, d_gates_h.reshape(steps * batch, gh), 0, gw["bh"])
    if dx is not None:
        dx_step = scratch(xp, "dx_step", (steps * batch, x.shape[-1]), dtype)
        dx += backend.matmul(xp, flat_x, w["wx"], out=dx_step).reshape(dx.shape)
