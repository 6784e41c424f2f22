"""Recurrent operators: MXNet's fused `RNN` (rnn_relu, rnn_tanh, lstm, gru; stacked layers,
bidirectional, dropout between layers) and `reverse`, which `mx.rnn.BidirectionalCell` needs.

`RNN` shape contract (T time steps, N batch, C input features, H = state_size, L = num_layers,
D = 2 if bidirectional else 1, G gates: 1 for rnn_*, 4 for lstm, 3 for gru):

    data        (T, N, C)                    time major
    parameters  (P,)                         one flat vector, layout below
    state       (L*D, N, H)                  initial hidden state, row = layer * D + direction
    state_cell  (L*D, N, H)                  lstm only
    output      (T, N, D*H)                  last layer's hidden states, forward then backward
    [state_output, statecell_output]         final states (state_outputs=True), like the inputs
    reserve     (R,)                         hidden: what backward reads (below)

`parameters` layout, the one MXNet's CPU and cuDNN kernels read (checked against MXNet 1.9.1
numbers in tests/ops/test_rnn_op.py): first every weight matrix, layer by layer, direction by
direction: W_x (G*H, in_l) then W_h (G*H, H), row-major, rows grouped by gate; then every bias in
the same order: b_x (G*H,) then b_h (G*H,). in_0 = C and in_l = D*H above, so

    P = D*G*H*(C + H + 2) + (L - 1) * D*G*H*(D*H + H + 2).

Gate order: lstm i, f, c (candidate), o; gru r, z, n. The math per step (h, c the previous
states, x the layer input, a_* = W_x* x + b_x* + W_h* h + b_h*):

    rnn:  h' = act(a)
    lstm: c' = sigmoid(a_f) * c + sigmoid(a_i) * tanh(a_c); h' = sigmoid(a_o) * tanh(c')
          (c' clipped to [lstm_state_clip_min, lstm_state_clip_max] when both are set)
    gru:  r, z = sigmoid(a_r), sigmoid(a_z); n = tanh(W_xn x + b_xn + r * (W_hn h + b_hn));
          h' = (1 - z) * n + z * h

With p > 0, training applies inverted dropout to the input of every layer after the first.

Execution: per layer and direction, the input projection of all T steps is ONE matrix product,
the T recurrent products run back to back, and the gate math works on whole (N, G*H) blocks.
Backward mirrors it: the step loop only propagates dh (and dc) and collects the gate gradients
of all steps, then dW_x, dW_h, the biases and dx are each one product over all steps.

What backward needs is kept in hidden outputs that the memory plan allocates, so the op holds no
state of its own: after MXNet's visible outputs comes `reserve`, one flat vector of the data's
dtype holding, per (layer, direction), the activated gates (lstm, gru), the cell states and
their tanh and the clipping mask (lstm), the recurrent candidate term W_hn h + b_hn (gru), and
per layer the hidden states of every layer but the last (whose hidden states are `output`
itself) and the dropout mask of its input (p > 0). Its length depends on T, N and the attrs
only (`rnn_reserve_size`). Forward always writes it, in inference too (a dropout mask of ones),
so a backward after any forward differentiates exactly that forward; backward only reads it,
and reads nothing else but data, parameters, the initial states and `output`. MXNet keeps the
same values in per-executor operator state ("reserve space"), and its symbol JSON counts only
the visible outputs (1, or 2/3 with state_outputs), which `num_json_outputs` reports so that
node_row_ptr stays MXNet's.

`projection_size` is accepted for shape inference only; like MXNet on CPU, it cannot run.
`lstm_state_clip_min/max` clip the cell state as documented (cuDNN's behaviour, gradient zero
where clipped); MXNet 1.9.1's CPU kernel silently ignores them (verified), so CPU numbers with
clipping differ from MXNet's CPU numbers by design. `use_sequence_length=True` is accepted for
graphs and shapes but not run yet.
"""
from __future__ import annotations

import dataclasses
from typing import Literal, Optional

from .. import backend
from ..base import OpParamError, ShapeError
from .registry import _REGISTRY, Op, fmt_shape, register
from .scratch import _const, _ScratchMixin, _sum

__all__ = ["RNN", "Reverse", "rnn_param_size", "rnn_param_slices", "rnn_reserve_layout",
           "rnn_reserve_size"]

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def rnn_param_size(mode: str, input_size: int, state_size: int, num_layers: int,
                   bidirectional: bool = False, projection_size: Optional[int] = None) -> int:
    """Length of the flat `parameters` vector of an RNN op."""
    dirs = 2 if bidirectional else 1
    gates = _GATES[mode]
    hidden = state_size
    if projection_size:
        proj = projection_size
        first = dirs * (gates * hidden * (input_size + proj) + 2 * gates * hidden
                        + proj * hidden)
        rest = dirs * (gates * hidden * (dirs * proj + proj) + 2 * gates * hidden
                       + proj * hidden)
        return first + (num_layers - 1) * rest
    return (dirs * gates * hidden * (input_size + hidden + 2)
            + (num_layers - 1) * dirs * gates * hidden * (dirs * hidden + hidden + 2))


def rnn_param_slices(mode: str, input_size: int, state_size: int, num_layers: int,
                     bidirectional: bool = False) -> list:
    """Per (layer, direction), in row order layer * D + direction: a dict of
    (offset, shape) for 'wx', 'wh', 'bx', 'bh' in the flat vector."""
    dirs = 2 if bidirectional else 1
    gh = _GATES[mode] * state_size
    pieces = []
    pos = 0
    for layer in range(num_layers):
        cols = input_size if layer == 0 else dirs * state_size
        for _ in range(dirs):
            pieces.append({"wx": (pos, (gh, cols)), "wh": (pos + gh * cols, (gh, state_size))})
            pos += gh * (cols + state_size)
    for piece in pieces:
        piece["bx"] = (pos, (gh,))
        piece["bh"] = (pos + gh, (gh,))
        pos += 2 * gh
    return pieces


def rnn_reserve_layout(mode: str, state_size: int, num_layers: int, bidirectional: bool,
                       p: float, clip: bool, steps: int, batch: int):
    """Where the hidden `reserve` output keeps what backward reads, as (offset, shape) pairs.

    Returns (size, layers, rows). layers[l] has 'y', the hidden states (T, N, D*H) of layer l
    (None for the last layer, whose hidden states are the visible `output`), and 'mask', the
    scaled dropout mask (T, N, D*H) applied to layer l's input (None for layer 0 or p = 0).
    rows[layer * D + d] has, for lstm 'gates' (T, N, 4H) activated, 'c' and 'tanh_c' (T, N, H)
    and with clipping 'clip' (1 where c was not clipped); for gru 'gates' (T, N, 3H) and 'hn'
    (T, N, H), W_hn h + b_hn; nothing for rnn_* (backward reads their gates off the hidden
    states).
    """
    dirs = 2 if bidirectional else 1
    hidden = state_size
    pos = 0

    def take(shape):
        nonlocal pos
        spec = (pos, shape)
        pos += shape[0] * shape[1] * shape[2]
        return spec

    seq = (steps, batch, hidden)
    layers, rows = [], []
    for layer in range(num_layers):
        layers.append({
            "y": take((steps, batch, dirs * hidden)) if layer < num_layers - 1 else None,
            "mask": take((steps, batch, dirs * hidden)) if layer > 0 and p > 0 else None})
        for _ in range(dirs):
            row = {}
            if mode in ("lstm", "gru"):
                row["gates"] = take((steps, batch, _GATES[mode] * hidden))
            if mode == "lstm":
                row["c"] = take(seq)
                row["tanh_c"] = take(seq)
                if clip:
                    row["clip"] = take(seq)
            elif mode == "gru":
                row["hn"] = take(seq)
            rows.append(row)
    return pos, layers, rows


def rnn_reserve_size(mode: str, state_size: int, num_layers: int, bidirectional: bool = False,
                     p: float = 0.0, clip: bool = False, steps: int = 1, batch: int = 1) -> int:
    """Length of the hidden `reserve` output of an RNN op (see `rnn_reserve_layout`)."""
    return rnn_reserve_layout(mode, state_size, num_layers, bidirectional, p, clip, steps,
                              batch)[0]


def _view(flat, spec):
    offset, shape = spec
    size = 1
    for d in shape:
        size *= d
    return flat[offset:offset + size].reshape(shape)


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


# One LSTM step's elementwise work as one CuPy kernel each way (backend.elementwise), the same
# arithmetic in the same order as the NumPy passes in _forward_direction / _backward_direction;
# NumPy runs those passes. Gate order i, f, c (candidate), o; `gi` not `i`, which CuPy's
# kernels reserve for the element index.
_LSTM_STEP = backend.ElementwiseSpec(
    "lstm_step", "T c_prev", "T gi, T gf, T gc, T go, T c, T tc, T h",
    "gi = tanh(gi * (T)0.5) * (T)0.5 + (T)0.5;"
    "gf = tanh(gf * (T)0.5) * (T)0.5 + (T)0.5;"
    "gc = tanh(gc);"
    "go = tanh(go * (T)0.5) * (T)0.5 + (T)0.5;"
    "c = gf * c_prev + gi * gc;"
    "tc = tanh(c);"
    "h = go * tc;")
_LSTM_STEP_GRAD = backend.ElementwiseSpec(
    "lstm_step_grad", "T dh, T gi, T gf, T gc, T go, T tc, T c_prev",
    "T dc, T da_i, T da_f, T da_c, T da_o",
    "dc = dc + ((T)1 - tc * tc) * go * dh;"
    "da_o = dh * tc * (((T)1 - go) * go);"
    "da_i = dc * gc * (((T)1 - gi) * gi);"
    "da_f = dc * c_prev * (((T)1 - gf) * gf);"
    "da_c = dc * gi * ((T)1 - gc * gc);"
    "dc = dc * gf;")


def _prev(seq, start, t: int, reverse: bool):
    """The state before step t of a pass over `seq` (T, ...) that began from `start`."""
    if reverse:
        return seq[t + 1] if t + 1 < seq.shape[0] else start
    return seq[t - 1] if t > 0 else start


@dataclasses.dataclass(frozen=True)
class RNNAttrs:
    state_size: int
    num_layers: int
    mode: Literal["rnn_relu", "rnn_tanh", "lstm", "gru"]
    bidirectional: bool = False
    p: float = 0.0
    state_outputs: bool = False
    projection_size: Optional[int] = None
    lstm_state_clip_min: Optional[float] = None
    lstm_state_clip_max: Optional[float] = None
    lstm_state_clip_nan: bool = False
    use_sequence_length: bool = False


@register
class RNN(_ScratchMixin, Op):
    """MXNet's fused recurrent operator; see the module docstring for the math and layout."""

    name = "RNN"
    deterministic = False  # its dropout draws at every run: never merged by CSE
    SIGNATURE_INPUTS = ("data", "parameters", "state", "state_cell", "sequence_length")
    PARAM_ORDER = ("state_size", "num_layers", "bidirectional", "mode", "p", "state_outputs",
                   "projection_size", "lstm_state_clip_min", "lstm_state_clip_max",
                   "lstm_state_clip_nan", "use_sequence_length")
    Attrs = RNNAttrs

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        if a.state_size <= 0 or a.num_layers <= 0:
            raise OpParamError("operator RNN: state_size=%d and num_layers=%d must be positive"
                               % (a.state_size, a.num_layers))
        if not 0 <= a.p < 1:
            raise OpParamError("operator RNN: p=%g must lie in [0, 1)" % a.p)
        if a.projection_size is not None and a.mode != "lstm":
            raise OpParamError("operator RNN: projection_size needs mode='lstm'")
        visible = ["output"]
        if a.state_outputs:
            visible += ["state_output", "statecell_output"] if a.mode == "lstm" \
                else ["state_output"]
        self._visible = visible
        # backward reads data (layer 0's input), the weights, the initial states, `output`
        # (the last layer's hidden states) and the reserve; never the final states
        self.backward_inputs = (0, 1, 2, 3) if a.mode == "lstm" else (0, 1, 2)
        self.backward_outputs = (0, len(visible))

    # ------------------------------------------------------------------ slots
    def arguments(self) -> list:
        names = ["data", "parameters", "state"]
        if self.attrs.mode == "lstm":
            names.append("state_cell")
        if self.attrs.use_sequence_length:
            names.append("sequence_length")
        return names

    def outputs(self) -> list:
        return self._visible + ["reserve"]

    def num_visible_outputs(self) -> int:
        return len(self._visible)

    def num_json_outputs(self) -> int:
        return len(self._visible)

    @property
    def _dirs(self) -> int:
        return 2 if self.attrs.bidirectional else 1

    @property
    def _clip(self) -> bool:
        a = self.attrs
        return a.mode == "lstm" and a.lstm_state_clip_min is not None \
            and a.lstm_state_clip_max is not None

    def _layout(self, steps: int, batch: int):
        a = self.attrs
        return rnn_reserve_layout(a.mode, a.state_size, a.num_layers, a.bidirectional, a.p,
                                  self._clip, steps, batch)

    # ------------------------------------------------------------------ inference
    def infer_shape(self, in_shapes: list, out_shapes: list):
        a = self.attrs
        dirs = self._dirs
        rows = a.num_layers * dirs
        out_h = a.projection_size or a.state_size
        data = in_shapes[0]
        if data is not None and len(data) != 3:
            raise ShapeError("input 'data' has shape %s but RNN needs (T, N, C), time major"
                             % fmt_shape(data))
        steps = batch = feat = None
        if data is not None:
            steps, batch, feat = data
        for i in range(2, 4 if a.mode == "lstm" else 3):
            if in_shapes[i] is not None and len(in_shapes[i]) == 3:
                batch = batch if batch is not None else in_shapes[i][1]
        if out_shapes[0] is not None and len(out_shapes[0]) == 3:
            steps = steps if steps is not None else out_shapes[0][0]
            batch = batch if batch is not None else out_shapes[0][1]
        nvis = len(self._visible)
        for shape in out_shapes[1:nvis]:
            if shape is not None and len(shape) == 3 and batch is None:
                batch = shape[1]
        self.set_in(in_shapes, 0, (steps, batch, feat))
        if feat is not None:
            size = rnn_param_size(a.mode, feat, a.state_size, a.num_layers, a.bidirectional,
                                  a.projection_size)
            self.set_in(in_shapes, 1, (size,), "data %s with state_size=%d, num_layers=%d, "
                        "mode=%s" % (fmt_shape(in_shapes[0]), a.state_size, a.num_layers,
                                     a.mode))
        self.set_in(in_shapes, 2, (rows, batch, out_h), "num_layers=%d (x%d directions)"
                    % (a.num_layers, dirs))
        if a.mode == "lstm":
            self.set_in(in_shapes, 3, (rows, batch, a.state_size))
        if a.use_sequence_length:
            self.set_in(in_shapes, len(in_shapes) - 1, (batch,))
        self.set_out(out_shapes, 0, (steps, batch, dirs * out_h))
        if a.state_outputs:
            self.set_out(out_shapes, 1, (rows, batch, out_h))
            if a.mode == "lstm":
                self.set_out(out_shapes, 2, (rows, batch, a.state_size))
        if steps is not None and batch is not None:
            self.set_out(out_shapes, nvis, (self._layout(steps, batch)[0],),
                         "T=%d, N=%d" % (steps, batch))
        return in_shapes, out_shapes

    # ------------------------------------------------------------------ forward
    def _check_runnable(self) -> None:
        if self.attrs.projection_size is not None:
            raise OpParamError("operator RNN: projection_size is not supported on this backend "
                               "(MXNet runs it only with cuDNN)")
        if self.attrs.use_sequence_length:
            raise OpParamError("operator RNN: use_sequence_length=True is not supported yet")

    def forward(self, xp, inputs, aux, out, is_train):
        """Writes the visible outputs and the whole reserve (in inference too)."""
        self._check_runnable()
        a = self.attrs
        data, params, state = inputs[0], inputs[1], inputs[2]
        cell = inputs[3] if a.mode == "lstm" else None
        steps, batch, feat = data.shape
        hidden = a.state_size
        dirs = self._dirs
        slices = rnn_param_slices(a.mode, feat, hidden, a.num_layers, a.bidirectional)
        _, layers, rows = self._layout(steps, batch)
        reserve = out[len(self._visible)]
        h_final = out[1] if a.state_outputs else None
        c_final = out[2] if a.state_outputs and a.mode == "lstm" else None
        layer_in = data
        for layer in range(a.num_layers):
            spec = layers[layer]
            if spec["mask"] is not None:
                mask = _view(reserve, spec["mask"])
                if is_train:
                    keep = backend.rng(xp).uniform(0, 1, layer_in.shape) < 1 - a.p
                    xp.multiply(keep, 1 / (1 - a.p), out=mask)
                    layer_in = layer_in * mask
                else:
                    mask[...] = 1
            y = out[0] if spec["y"] is None else _view(reserve, spec["y"])
            for d in range(dirs):
                row = layer * dirs + d
                w = {k: _view(params, s) for k, s in slices[row].items()}
                res = {k: _view(reserve, s) for k, s in rows[row].items()}
                hs = y[:, :, d * hidden:(d + 1) * hidden]
                self._forward_direction(xp, layer_in, w, res, hs, state[row],
                                        None if cell is None else cell[row], reverse=d == 1)
                last_t = 0 if d == 1 else steps - 1
                if h_final is not None:
                    h_final[row] = hs[last_t]
                if c_final is not None:
                    c_final[row] = res["c"][last_t]
            layer_in = y

    def _forward_direction(self, xp, x, w, res, hs, h0, c0, reverse: bool) -> None:
        """One (layer, direction) pass: hidden states into `hs` (T, N, H), possibly a strided
        view of the layer's output, and what backward needs into the reserve views `res`."""
        a = self.attrs
        steps, batch, _ = x.shape
        hidden = a.state_size
        gh = w["wh"].shape[0]
        # the input projection of every step in one product
        x2 = x.reshape(steps * batch, -1)
        if "gates" in res:
            gates = res["gates"]
            xp.matmul(x2, w["wx"].T, out=gates.reshape(steps * batch, gh))
        else:
            gates = xp.matmul(x2, w["wx"].T).reshape(steps, batch, gh)
        gates += w["bx"]
        if a.mode != "gru":
            gates += w["bh"]
        wh_t = w["wh"].T
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        rec_buf = self._scratch(xp, "rec", (batch, gh), x.dtype)
        h_prev = h0
        if a.mode == "lstm":
            cs, tanh_cs, clip_mask = res["c"], res["tanh_c"], res.get("clip")
            c_prev = c0
            fused = None if clip_mask is not None else backend.elementwise(xp, _LSTM_STEP)
            for t in order:
                g = gates[t]
                xp.matmul(h_prev, wh_t, out=rec_buf)
                g += rec_buf
                if fused is not None:
                    fused(c_prev, g[:, :hidden], g[:, hidden:2 * hidden],
                          g[:, 2 * hidden:3 * hidden], g[:, 3 * hidden:], cs[t], tanh_cs[t],
                          hs[t])
                    h_prev, c_prev = hs[t], cs[t]
                    continue
                _sigmoid_(xp, g[:, :2 * hidden])
                xp.tanh(g[:, 2 * hidden:3 * hidden], out=g[:, 2 * hidden:3 * hidden])
                _sigmoid_(xp, g[:, 3 * hidden:])
                c = cs[t]
                xp.multiply(g[:, hidden:2 * hidden], c_prev, out=c)
                ic = rec_buf[:, :hidden]  # free again once added into the gates
                xp.multiply(g[:, :hidden], g[:, 2 * hidden:3 * hidden], out=ic)
                c += ic
                if clip_mask is not None:
                    lo, hi = a.lstm_state_clip_min, a.lstm_state_clip_max
                    if a.lstm_state_clip_nan:
                        c[...] = xp.where(xp.isnan(c), lo, c)
                    clip_mask[t] = (c >= lo) & (c <= hi)
                    xp.clip(c, lo, hi, out=c)
                tc = tanh_cs[t]
                xp.tanh(c, out=tc)
                xp.multiply(g[:, 3 * hidden:], tc, out=hs[t])
                h_prev, c_prev = hs[t], c
        elif a.mode == "gru":
            hns = res["hn"]
            bh = w["bh"]
            for t in order:
                g = gates[t]
                xp.matmul(h_prev, wh_t, out=rec_buf)
                rec_buf += bh
                g[:, :2 * hidden] += rec_buf[:, :2 * hidden]
                _sigmoid_(xp, g[:, :2 * hidden])
                hn = hns[t]
                hn[...] = rec_buf[:, 2 * hidden:]
                n = g[:, 2 * hidden:]
                n += g[:, :hidden] * hn
                xp.tanh(n, out=n)
                z = g[:, hidden:2 * hidden]
                # h' = n + z * (h - n)
                h = hs[t]
                xp.subtract(h_prev, n, out=h)
                h *= z
                h += n
                h_prev = h
        else:
            relu = a.mode == "rnn_relu"
            for t in order:
                xp.matmul(h_prev, wh_t, out=rec_buf)
                h = hs[t]
                xp.add(gates[t], rec_buf, out=h)
                if relu:
                    xp.maximum(h, 0, out=h)
                else:
                    xp.tanh(h, out=h)
                h_prev = h

    # ------------------------------------------------------------------ backward
    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        """Reads data, parameters, the initial states, `output` and the reserve of the forward
        that ran last on these arrays; writes nothing but `in_grads`."""
        a = self.attrs
        data, params, state = inputs[0], inputs[1], inputs[2]
        cell = inputs[3] if a.mode == "lstm" else None
        steps, batch, feat = data.shape
        hidden = a.state_size
        dirs = self._dirs
        slices = rnn_param_slices(a.mode, feat, hidden, a.num_layers, a.bidirectional)
        _, layers, rows = self._layout(steps, batch)
        nvis = len(self._visible)
        reserve = outputs[nvis]
        g_params = in_grads[1]
        g_state = in_grads[2]
        g_cell = in_grads[3] if a.mode == "lstm" else None
        dy = out_grads[0]
        if dy is None:
            dy = xp.zeros(outputs[0].shape, dtype=outputs[0].dtype)
        dh_final = out_grads[1] if a.state_outputs and len(out_grads) > 1 else None
        dc_final = out_grads[2] if a.state_outputs and a.mode == "lstm" \
            and len(out_grads) > 2 else None
        flat_grad = g_params if g_params is not None else xp.empty_like(params)
        for layer in range(a.num_layers - 1, -1, -1):
            spec = layers[layer]
            y = outputs[0] if spec["y"] is None else _view(reserve, spec["y"])
            mask = None
            if layer == 0:
                x = data
            else:
                x = _view(reserve, layers[layer - 1]["y"])
                if spec["mask"] is not None:
                    mask = _view(reserve, spec["mask"])
                    x = x * mask
            need_dx = layer > 0 or in_grads[0] is not None
            dx = None
            if need_dx:
                dx = self._scratch(xp, "dx%d" % (layer % 2), x.shape, data.dtype)
                dx.fill(0)
            for d in range(dirs):
                row = layer * dirs + d
                w = {k: _view(params, s) for k, s in slices[row].items()}
                gw = {k: _view(flat_grad, s) for k, s in slices[row].items()}
                res = {k: _view(reserve, s) for k, s in rows[row].items()}
                dh_last = None if dh_final is None else dh_final[row]
                dc_last = None if dc_final is None else dc_final[row]
                dh0, dc0 = self._backward_direction(
                    xp, x, res, y[:, :, d * hidden:(d + 1) * hidden], w, gw,
                    dy[:, :, d * hidden:(d + 1) * hidden], state[row],
                    None if cell is None else cell[row], dh_last, dc_last, dx, reverse=d == 1)
                if g_state is not None:
                    g_state[row] = dh0
                if g_cell is not None:
                    g_cell[row] = dc0
            if layer > 0:
                if mask is not None:
                    dx *= mask
                dy = dx
            elif in_grads[0] is not None:
                xp.copyto(in_grads[0], dx)
        for i in range(4 if a.mode == "lstm" else 3, len(in_grads)):
            if in_grads[i] is not None:
                in_grads[i][...] = 0

    def _backward_direction(self, xp, x, res, hs, w, gw, dy, h0, c0, dh_last, dc_last, dx,
                            reverse: bool):
        """Gradients of one (layer, direction) pass with input x, reserve views `res` and hidden
        states `hs`: writes gw (weights and biases), adds into dx, returns the gradients of the
        initial states."""
        a = self.attrs
        steps, batch, hidden = hs.shape
        gh = w["wh"].shape[0]
        dtype = hs.dtype
        order = list(range(steps - 1, -1, -1) if reverse else range(steps))
        # the returned initial-state gradients live in scratch too: the caller copies them out
        dh = self._scratch(xp, "dh", (batch, hidden), dtype)
        if dh_last is not None:
            dh[...] = dh_last
        else:
            dh.fill(0)
        d_gates = self._scratch(xp, "d_gates", (steps, batch, gh), dtype)
        wh = w["wh"]
        tmp = self._scratch(xp, "tmp", (batch, hidden), dtype)
        tmp2 = self._scratch(xp, "tmp2", (batch, hidden), dtype)
        one = _const(xp, 1, dtype)
        dc0 = None
        if a.mode == "lstm":
            gates, cs, tanh_cs, clip_mask = res["gates"], res["c"], res["tanh_c"], res.get("clip")
            dc = self._scratch(xp, "dc", (batch, hidden), dtype)
            if dc_last is not None:
                dc[...] = dc_last
            else:
                dc.fill(0)
            fused = None if clip_mask is not None else backend.elementwise(xp, _LSTM_STEP_GRAD)
            for t in reversed(order):
                dh += dy[t]
                g = gates[t]
                i_g, f_g = g[:, :hidden], g[:, hidden:2 * hidden]
                c_g, o_g = g[:, 2 * hidden:3 * hidden], g[:, 3 * hidden:]
                tc = tanh_cs[t]
                da = d_gates[t]
                if fused is not None:
                    fused(dh, i_g, f_g, c_g, o_g, tc, _prev(cs, c0, t, reverse), dc,
                          da[:, :hidden], da[:, hidden:2 * hidden], da[:, 2 * hidden:3 * hidden],
                          da[:, 3 * hidden:])
                    xp.matmul(da, wh, out=dh)
                    continue
                # dc += dh * o * (1 - tanh(c)^2)
                xp.multiply(tc, tc, out=tmp)
                xp.subtract(one, tmp, out=tmp)
                tmp *= o_g
                tmp *= dh
                dc += tmp
                if clip_mask is not None:
                    dc *= clip_mask[t]
                da_o = da[:, 3 * hidden:]
                xp.multiply(dh, tc, out=da_o)
                _dsigmoid_into(xp, o_g, tmp2)
                da_o *= tmp2
                da_i = da[:, :hidden]
                xp.multiply(dc, c_g, out=da_i)
                _dsigmoid_into(xp, i_g, tmp2)
                da_i *= tmp2
                da_f = da[:, hidden:2 * hidden]
                xp.multiply(dc, _prev(cs, c0, t, reverse), out=da_f)
                _dsigmoid_into(xp, f_g, tmp2)
                da_f *= tmp2
                da_c = da[:, 2 * hidden:3 * hidden]
                xp.multiply(dc, i_g, out=da_c)
                xp.multiply(c_g, c_g, out=tmp2)
                xp.subtract(one, tmp2, out=tmp2)
                da_c *= tmp2
                dc *= f_g
                xp.matmul(da, wh, out=dh)
            dc0 = dc
            d_gates_h = d_gates
        elif a.mode == "gru":
            gates, hns = res["gates"], res["hn"]
            d_gates_h = xp.empty_like(d_gates)
            for t in reversed(order):
                dh += dy[t]
                g = gates[t]
                r_g, z_g, n_g = g[:, :hidden], g[:, hidden:2 * hidden], g[:, 2 * hidden:]
                dax = d_gates[t]
                dah = d_gates_h[t]
                da_n = dax[:, 2 * hidden:]
                xp.multiply(dh, 1 - z_g, out=da_n)
                da_n *= 1 - n_g * n_g
                xp.multiply(da_n, r_g, out=dah[:, 2 * hidden:])
                da_r = dax[:, :hidden]
                xp.multiply(da_n, hns[t], out=da_r)
                da_r *= r_g * (1 - r_g)
                da_z = dax[:, hidden:2 * hidden]
                xp.subtract(_prev(hs, h0, t, reverse), n_g, out=da_z)
                da_z *= dh
                da_z *= z_g * (1 - z_g)
                dah[:, :2 * hidden] = dax[:, :2 * hidden]
                dh *= z_g
                xp.matmul(dah, wh, out=tmp)
                dh += tmp
        else:
            relu = a.mode == "rnn_relu"
            for t in reversed(order):
                dh += dy[t]
                da = d_gates[t]
                h = hs[t]
                if relu:
                    xp.multiply(dh, h > 0, out=da)
                else:
                    xp.multiply(h, h, out=da)
                    xp.subtract(1, da, out=da)
                    da *= dh
                xp.matmul(da, wh, out=dh)
            d_gates_h = d_gates
        flat_x = d_gates.reshape(steps * batch, gh)
        xp.matmul(flat_x.T, x.reshape(steps * batch, -1), out=gw["wx"])
        # dW_h = sum_t da_h[t]^T h_prev[t]: the steps whose h_prev is a hidden state of this
        # pass in one product, plus the step that started from h0
        first, rest, prev = (steps - 1, slice(0, steps - 1), slice(1, steps)) if reverse \
            else (0, slice(1, steps), slice(0, steps - 1))
        xp.matmul(d_gates_h[rest].reshape(-1, gh).T, hs[prev].reshape(-1, hidden),
                  out=gw["wh"])
        first_wh = self._scratch(xp, "first_wh", gw["wh"].shape, dtype)
        gw["wh"] += xp.matmul(d_gates_h[first].T, h0, out=first_wh)
        _sum(xp, flat_x, 0, gw["bx"])
        _sum(xp, d_gates_h.reshape(steps * batch, gh), 0, gw["bh"])
        if dx is not None:
            dx_step = self._scratch(xp, "dx_step", (steps * batch, x.shape[-1]), dtype)
            dx += xp.matmul(flat_x, w["wx"], out=dx_step).reshape(dx.shape)
        return dh, dc0


@dataclasses.dataclass(frozen=True)
class ReverseAttrs:
    axis: tuple[int, ...]


class Reverse(Op):
    """Reverse the order of elements along `axis` (one or more axes); same shape out.
    Backward reverses the head gradient the same way."""

    name = "reverse"
    aliases = ("flip",)
    Attrs = ReverseAttrs
    backward_inputs = ()
    backward_outputs = ()

    def _index(self, ndim: int) -> tuple:
        index = [slice(None)] * ndim
        for ax in self.attrs.axis:
            if not -ndim <= ax < ndim:
                raise ShapeError("axis=%d is out of range for an input of rank %d" % (ax, ndim))
            index[ax] = slice(None, None, -1)
        return tuple(index)

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0][self._index(inputs[0].ndim)])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            xp.copyto(in_grads[0], out_grads[0][self._index(out_grads[0].ndim)])


# `reverse` is a shape operator; it lives here until shape.py has one, and steps aside then.
if "reverse" not in _REGISTRY:
    register(Reverse)
