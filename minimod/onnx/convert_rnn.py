"""ONNX conversion of the fused RNN operator: one ONNX LSTM, GRU or RNN node per layer.

MXNet keeps every weight and bias in one flat vector (ops/rnn_layout.py); ONNX wants per layer
W (directions, gates*H, inputs), R (directions, gates*H, H) and B (directions, 2*gates*H),
with its own gate order: LSTM i, o, f, c where MXNet has i, f, g, o; GRU z, r, h where MXNet
has r, z, n. The vector is cut and reordered at export time, so the parameters must be given
(not graph inputs). MXNet's GRU applies the reset gate after the recurrent product, which is
ONNX's linear_before_reset=1. Layers above the first read the previous layer's output, its
directions side by side: (T, D, N, H) transposed and reshaped to (T, N, D*H). With
use_sequence_length the lengths go to every layer's node as ONNX's sequence_lens.
"""
from __future__ import annotations

import numpy as np

from ..ops.rnn_layout import GATES, rnn_param_slices, view
from .builder import Site, converts

_OP_TYPE = {"lstm": "LSTM", "gru": "GRU", "rnn_tanh": "RNN", "rnn_relu": "RNN"}
_INT32 = 6  # ONNX's TensorProto.INT32, the type of sequence_lens
# for each ONNX gate, the MXNet gate block it comes from
_GATE_ORDER = {"lstm": [0, 3, 1, 2], "gru": [1, 0, 2], "rnn_tanh": [0], "rnn_relu": [0]}


def _reorder(mode: str, array: np.ndarray, hidden: int) -> np.ndarray:
    blocks = array.reshape((GATES[mode], hidden) + array.shape[1:])
    return blocks[_GATE_ORDER[mode]].reshape(array.shape)


def _layer_weights(site: Site, flat: np.ndarray, pieces: list) -> tuple:
    mode, hidden = site.attrs.mode, site.attrs.state_size
    w = np.stack([_reorder(mode, view(flat, p["wx"]), hidden) for p in pieces])
    r = np.stack([_reorder(mode, view(flat, p["wh"]), hidden) for p in pieces])
    bias = np.stack([np.concatenate([_reorder(mode, view(flat, p["bx"]), hidden),
                                     _reorder(mode, view(flat, p["bh"]), hidden)])
                     for p in pieces])
    return w, r, bias


def _node_attrs(mode: str, hidden: int, dirs: int) -> dict:
    attrs = dict(hidden_size=hidden, direction="bidirectional" if dirs == 2 else "forward")
    if mode == "gru":
        attrs["linear_before_reset"] = 1
    elif mode == "rnn_relu":
        attrs["activations"] = ["Relu"] * dirs
    return attrs


@converts("RNN")
def _rnn(site: Site) -> None:
    a, b = site.attrs, site.b
    if a.projection_size or a.lstm_state_clip_min is not None \
            or a.lstm_state_clip_max is not None:
        raise site.refuse("projection_size and the LSTM state clip have no ONNX equivalent")
    flat = site.param(1)
    if flat is None:
        raise site.refuse("its 'parameters' must be given in params: the flat vector is cut "
                          "into ONNX's per-layer weights at export time")
    dirs = 2 if a.bidirectional else 1
    pieces = rnn_param_slices(a.mode, site.in_shapes[0][2], a.state_size, a.num_layers,
                              a.bidirectional)
    attrs = _node_attrs(a.mode, a.state_size, dirs)
    is_lstm = a.mode == "lstm"
    x, finals = site.ins[0], ([], [])
    lengths = ""  # ONNX's sequence_lens: each sequence runs for its own length, as minimod's
    if a.use_sequence_length:
        lengths = b.add("Cast", [site.ins[-1]], hint=site.name + "_lengths", to=_INT32)
    for layer in range(a.num_layers):
        tag = "%s_l%d" % (site.name, layer)
        w, r, bias = _layer_weights(site, flat, pieces[layer * dirs:(layer + 1) * dirs])
        rows = (b.ints([layer * dirs], tag + "_from"), b.ints([(layer + 1) * dirs], tag + "_to"),
                b.ints([0], tag + "_axis"))
        inputs = [x, b.const(w, tag + "_W"), b.const(r, tag + "_R"), b.const(bias, tag + "_B"),
                  lengths, b.add("Slice", [site.ins[2], *rows], hint=tag + "_h0")]
        if is_lstm:
            inputs.append(b.add("Slice", [site.ins[3], *rows], hint=tag + "_c0"))
        outs = b.add(_OP_TYPE[a.mode], inputs, hint=tag, num_outputs=3 if is_lstm else 2,
                     **attrs)
        finals[0].append(outs[1])
        if is_lstm:
            finals[1].append(outs[2])
        sides = b.add("Transpose", [outs[0]], hint=tag + "_tnd", perm=[0, 2, 1, 3])
        last = layer == a.num_layers - 1
        x = b.reshape(sides, [0, 0, -1], out=site.outs[0] if last else None, hint=tag + "_y")
    if a.state_outputs:
        for states, out in zip(finals, site.outs[1:]):
            b.add("Concat", states, out=out, axis=0)
