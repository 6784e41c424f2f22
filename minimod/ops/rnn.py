"""MXNet's fused recurrent operator `RNN` (rnn_relu, rnn_tanh, lstm, gru; stacked layers,
bidirectional, dropout between layers). The layout of its flat parameters and of its hidden
`reserve` output is in rnn_layout.py, the per-direction cell kernels in rnn_cells.py (their
fused GPU form in rnn_fused.py; kernels/lstm_host.py binds a faster host form of the LSTM's
through `drive_forward` / `drive_backward`).

`RNN` shape contract (T time steps, N batch, C input features, H = state_size, L = num_layers,
D = 2 if bidirectional else 1, G gates: 1 for rnn_*, 4 for lstm, 3 for gru):

    data        (T, N, C)                    time major
    parameters  (P,)                         one flat vector (rnn_layout.py)
    state       (L*D, N, H)                  initial hidden state, row = layer * D + direction
    state_cell  (L*D, N, H)                  lstm only
    output      (T, N, D*H)                  last layer's hidden states, forward then backward
    [state_output, statecell_output]         final states (state_outputs=True), like the inputs
    reserve     (R,)                         hidden: what backward reads (below)

Gate order: lstm i, f, c (candidate), o; gru r, z, n. The math per step (h, c the previous
states, x the layer input, a_* = W_x* x + b_x* + W_h* h + b_h*):

    rnn:  h' = act(a)
    lstm: c' = sigmoid(a_f) * c + sigmoid(a_i) * tanh(a_c); h' = sigmoid(a_o) * tanh(c')
          (c' clipped to [lstm_state_clip_min, lstm_state_clip_max] when both are set)
    gru:  r, z = sigmoid(a_r), sigmoid(a_z); n = tanh(W_xn x + b_xn + r * (W_hn h + b_hn));
          h' = (1 - z) * n + z * h

With p > 0, training applies inverted dropout to the input of every layer after the first.

What backward needs is kept in hidden outputs that the memory plan allocates, so the op holds no
state of its own: after MXNet's visible outputs comes `reserve` (`rnn_reserve_size` long).
Forward always writes it, in inference too (a dropout mask of ones), so a backward after any
forward differentiates exactly that forward; backward only reads it, and reads nothing else but
data, parameters, the initial states and `output`. MXNet keeps the same values in per-executor
operator state ("reserve space"), and its symbol JSON counts only the visible outputs (1, or 2/3
with state_outputs), which `num_json_outputs` reports so that node_row_ptr stays MXNet's.

`projection_size` R (lstm only) gives cuDNN's LSTMP: the hidden state is projected after each
step, r = W_r h (no bias), r is what the next step and the next layer read and what `output`
and `state_output` hold (R wide), the cell state stays H wide. MXNet runs it only with cuDNN;
minimod on every device (rnn_cells.py, the LSTM's own passes).
`lstm_state_clip_min/max` clip the cell state as documented (cuDNN's behaviour, gradient zero
where clipped); MXNet 1.9.1's CPU kernel silently ignores them (verified), so CPU numbers with
clipping differ from MXNet's CPU numbers by design. `use_sequence_length=True` runs each
sequence for its own length, as cuDNN does (rnn_lengths.py); MXNet 1.9.1's CPU kernel ignores
the lengths.
"""
from __future__ import annotations

import dataclasses
from typing import Literal, Optional

from .. import backend
from ..base import OpParamError, ShapeError
from .registry import Op, fmt_shape, register
from .rnn_cells import backward_direction, forward_direction
from .rnn_layout import rnn_param_size, rnn_param_slices, rnn_reserve_layout, view
from .rnn_lengths import backward_by_length, forward_by_length
from .scratch import _ScratchMixin

__all__ = ["RNN", "RNNAttrs"]


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


@dataclasses.dataclass(frozen=True)
class _BackwardCall:
    """The arrays of one backward call that every layer reads (see `RNN.backward`), and the
    (layer, direction) pass that runs on them."""

    inputs: list
    outputs: list
    in_grads: list
    reserve: object
    flat_grad: object
    slices: list
    layers: list
    rows: list
    dh_final: object
    dc_final: object
    direction: object


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
        # with lengths, groups of sequences of one length run through the op without them
        self.without_lengths = RNN({k: v for k, v in self.raw_attrs.items()
                                    if k != "use_sequence_length"}) \
            if a.use_sequence_length else None
        visible = ["output"]
        if a.state_outputs:
            visible += ["state_output", "statecell_output"] if a.mode == "lstm" \
                else ["state_output"]
        self._visible = visible
        # backward reads data (layer 0's input), the weights, the initial states, `output`
        # (the last layer's hidden states) and the reserve; never the final states
        self.backward_inputs = (0, 1, 2, 3) if a.mode == "lstm" else (0, 1, 2)
        if a.use_sequence_length:  # and the lengths, to group the sequences again
            self.backward_inputs += (len(self.backward_inputs),)
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
    def _width(self) -> int:
        """Each direction's hidden state width: projection_size where given, else H."""
        return self.attrs.projection_size or self.attrs.state_size

    @property
    def clips_state(self) -> bool:
        """Whether the LSTM cell state is clipped (both clip bounds set)."""
        a = self.attrs
        return a.mode == "lstm" and a.lstm_state_clip_min is not None \
            and a.lstm_state_clip_max is not None

    def _layout(self, steps: int, batch: int):
        a = self.attrs
        return rnn_reserve_layout(a.mode, a.state_size, a.num_layers, a.bidirectional, a.p,
                                  self.clips_state, steps, batch, a.projection_size)

    # ------------------------------------------------------------------ inference
    def _known_dims(self, in_shapes: list, out_shapes: list) -> tuple:
        """(T, N, C) as far as data, the states and the outputs tell them (None: unknown)."""
        data = in_shapes[0]
        if data is not None and len(data) != 3:
            raise ShapeError("input 'data' has shape %s but RNN needs (T, N, C), time major"
                             % fmt_shape(data))
        steps = batch = feat = None
        if data is not None:
            steps, batch, feat = data
        for i in range(2, 4 if self.attrs.mode == "lstm" else 3):
            if in_shapes[i] is not None and len(in_shapes[i]) == 3:
                batch = batch if batch is not None else in_shapes[i][1]
        if out_shapes[0] is not None and len(out_shapes[0]) == 3:
            steps = steps if steps is not None else out_shapes[0][0]
            batch = batch if batch is not None else out_shapes[0][1]
        for shape in out_shapes[1:len(self._visible)]:
            if shape is not None and len(shape) == 3 and batch is None:
                batch = shape[1]
        return steps, batch, feat

    def infer_shape(self, in_shapes: list, out_shapes: list):
        a = self.attrs
        dirs = self._dirs
        rows = a.num_layers * dirs
        out_h = self._width
        steps, batch, feat = self._known_dims(in_shapes, out_shapes)
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
            self.set_out(out_shapes, len(self._visible), (self._layout(steps, batch)[0],),
                         "T=%d, N=%d" % (steps, batch))
        return in_shapes, out_shapes

    # ------------------------------------------------------------------ forward
    def forward(self, xp, inputs, aux, out, is_train):
        """Writes the visible outputs and the whole reserve (in inference too)."""
        self.drive_forward(xp, inputs, out, is_train, forward_direction)

    def drive_forward(self, xp, inputs, out, is_train, direction) -> None:
        """`forward`, with `direction` (rnn_cells.forward_direction's signature) running each
        (layer, direction) pass: a fast path passes its own and keeps the rest of the op."""
        if self.without_lengths is not None:
            forward_by_length(self, xp, inputs, out, is_train, direction)
            return
        a = self.attrs
        data, params, state = inputs[0], inputs[1], inputs[2]
        cell = inputs[3] if a.mode == "lstm" else None
        steps, batch, feat = data.shape
        width = self._width
        dirs = self._dirs
        slices = rnn_param_slices(a.mode, feat, a.state_size, a.num_layers, a.bidirectional,
                                  a.projection_size)
        _, layers, rows = self._layout(steps, batch)
        reserve = out[len(self._visible)]
        h_final = out[1] if a.state_outputs else None
        c_final = out[2] if a.state_outputs and a.mode == "lstm" else None
        layer_in = data
        for layer in range(a.num_layers):
            spec = layers[layer]
            if spec["mask"] is not None:
                layer_in = self._dropout(xp, layer_in, view(reserve, spec["mask"]), is_train)
            y = out[0] if spec["y"] is None else view(reserve, spec["y"])
            for d in range(dirs):
                row = layer * dirs + d
                w = {k: view(params, s) for k, s in slices[row].items()}
                res = {k: view(reserve, s) for k, s in rows[row].items()}
                hs = y[:, :, d * width:(d + 1) * width]
                direction(xp, a, layer_in, w, res, hs, state[row],
                          None if cell is None else cell[row], d == 1, self._scratch)
                last_t = 0 if d == 1 else steps - 1
                if h_final is not None:
                    h_final[row] = hs[last_t]
                if c_final is not None:
                    c_final[row] = res["c"][last_t]
            layer_in = y

    def _dropout(self, xp, layer_in, mask, is_train: bool):
        """layer_in with inverted dropout applied in training, drawing `mask` (the reserve
        keeps it for backward); in inference the mask is ones and layer_in passes as is."""
        if not is_train:
            mask[...] = 1
            return layer_in
        p = self.attrs.p
        keep = backend.uniform(xp, layer_in.shape) < 1 - p
        xp.multiply(keep, 1 / (1 - p), out=mask)
        return layer_in * mask

    # ------------------------------------------------------------------ backward
    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        """Reads data, parameters, the initial states, `output` and the reserve of the forward
        that ran last on these arrays; writes nothing but `in_grads`."""
        self.drive_backward(xp, out_grads, inputs, outputs, in_grads, backward_direction)

    def drive_backward(self, xp, out_grads, inputs, outputs, in_grads, direction) -> None:
        """`backward`, with `direction` (rnn_cells.backward_direction's signature) running
        each (layer, direction) pass, as in `drive_forward`."""
        if self.without_lengths is not None:
            backward_by_length(self, xp, out_grads, inputs, outputs, in_grads, direction)
            return
        a = self.attrs
        data, params = inputs[0], inputs[1]
        steps, batch, feat = data.shape
        _, layers, rows = self._layout(steps, batch)
        dy = out_grads[0]
        if dy is None:
            dy = xp.zeros(outputs[0].shape, dtype=outputs[0].dtype)
        lstm = a.mode == "lstm"
        call = _BackwardCall(
            inputs, outputs, in_grads, outputs[len(self._visible)],
            in_grads[1] if in_grads[1] is not None else xp.empty_like(params),
            rnn_param_slices(a.mode, feat, a.state_size, a.num_layers, a.bidirectional,
                             a.projection_size),
            layers, rows,
            out_grads[1] if a.state_outputs and len(out_grads) > 1 else None,
            out_grads[2] if a.state_outputs and lstm and len(out_grads) > 2 else None,
            direction)
        for layer in range(a.num_layers - 1, -1, -1):
            dy = self._backward_layer(xp, call, layer, dy)
        for i in range(4 if lstm else 3, len(in_grads)):
            if in_grads[i] is not None:
                in_grads[i][...] = 0

    def _backward_layer(self, xp, call: _BackwardCall, layer: int, dy):
        """Backward through one layer, given the gradient dy of its hidden states: the weight
        and initial-state gradients of its rows, and the gradient of its input, returned for
        the layer below (layer 0 writes it into in_grads[0] when asked, and returns None)."""
        data = call.inputs[0]
        spec = call.layers[layer]
        y = call.outputs[0] if spec["y"] is None else view(call.reserve, spec["y"])
        mask = None
        if layer == 0:
            x = data
        else:
            x = view(call.reserve, call.layers[layer - 1]["y"])
            if spec["mask"] is not None:
                mask = view(call.reserve, spec["mask"])
                x = x * mask
        dx = None
        if layer > 0 or call.in_grads[0] is not None:
            dx = self._scratch(xp, "dx%d" % (layer % 2), x.shape, data.dtype)
            dx.fill(0)
        for d in range(self._dirs):
            self._backward_row(xp, call, layer * self._dirs + d, d, x, y, dy, dx)
        if layer > 0:
            if mask is not None:
                dx *= mask
            return dx
        if call.in_grads[0] is not None:
            xp.copyto(call.in_grads[0], dx)
        return None

    def _backward_row(self, xp, call: _BackwardCall, row: int, d: int, x, y, dy, dx) -> None:
        """Backward through the pass of direction d of one layer (state row `row`)."""
        hidden = self._width
        cell = call.inputs[3] if self.attrs.mode == "lstm" else None
        g_state = call.in_grads[2]
        g_cell = call.in_grads[3] if self.attrs.mode == "lstm" else None
        w = {k: view(call.inputs[1], s) for k, s in call.slices[row].items()}
        gw = {k: view(call.flat_grad, s) for k, s in call.slices[row].items()}
        res = {k: view(call.reserve, s) for k, s in call.rows[row].items()}
        cols = slice(d * hidden, (d + 1) * hidden)
        dh0, dc0 = call.direction(
            xp, self.attrs, x, res, y[:, :, cols], w, gw, dy[:, :, cols], call.inputs[2][row],
            None if cell is None else cell[row],
            None if call.dh_final is None else call.dh_final[row],
            None if call.dc_final is None else call.dc_final[row], dx, d == 1, self._scratch)
        if g_state is not None:
            g_state[row] = dh0
        if g_cell is not None:
            g_cell[row] = dc0
