"""ONNX's LSTM, GRU and RNN nodes imported as minimod's fused RNN operator, one layer each.

The reverse of convert_rnn.py: W, R and B go back into MXNet's flat parameter vector (every
weight matrix, then every bias, direction by direction) with MXNet's gate order; the output
Y (T, D, N, H) is the RNN op's (T, N, D*H) output split by direction. Missing initial states
are zeros sized from the data, so the imported symbol binds at any batch size. ONNX's
sequence_lens become the op's sequence lengths (use_sequence_length).
"""
from __future__ import annotations

import numpy as np

from .. import symbol as sym
from .convert_rnn import _GATE_ORDER
from .import_ops import const_input, imports, name_of, refuse

_MODE = {"LSTM": "lstm", "GRU": "gru"}


def _mode(node, attrs) -> str:
    if node.op_type in _MODE:
        return _MODE[node.op_type]
    acts = attrs.get("activations", ["Tanh"])
    if len(set(acts)) != 1 or acts[0] not in ("Tanh", "Relu"):
        raise refuse(node, "activations %s are not imported" % acts)
    return "rnn_tanh" if acts[0] == "Tanh" else "rnn_relu"


def _check(node, attrs, mode: str) -> None:
    if attrs.get("direction", "forward") not in ("forward", "bidirectional"):
        raise refuse(node, "direction 'reverse' is not imported")
    for key in ("clip", "input_forget", "layout"):
        if attrs.get(key):
            raise refuse(node, "attribute %s is not imported" % key)
    if mode == "gru" and not attrs.get("linear_before_reset"):
        raise refuse(node, "linear_before_reset=0 is not MXNet's GRU")
    if mode == "lstm" and "activations" in attrs \
            and attrs["activations"][:3] != ["Sigmoid", "Tanh", "Tanh"]:
        raise refuse(node, "activations %s are not imported" % attrs["activations"])
    if len(node.input) > 7 and node.input[7]:
        raise refuse(node, "peepholes are not imported")


def _mxnet_order(mode: str, array: np.ndarray, hidden: int) -> np.ndarray:
    back = np.argsort(_GATE_ORDER[mode])
    blocks = array.reshape((len(back), hidden) + array.shape[1:])
    return blocks[back].reshape(array.shape)


def _flat_parameters(mode: str, w, r, b, hidden: int) -> np.ndarray:
    dirs = w.shape[0]
    gh = w.shape[1]
    if b is None:
        b = np.zeros((dirs, 2 * gh), w.dtype)
    weights, biases = [], []
    for d in range(dirs):
        weights += [_mxnet_order(mode, w[d], hidden).ravel(),
                    _mxnet_order(mode, r[d], hidden).ravel()]
        biases += [_mxnet_order(mode, b[d][:gh], hidden), _mxnet_order(mode, b[d][gh:], hidden)]
    return np.concatenate(weights + biases).astype(w.dtype)


def _zero_state(x, dirs: int, hidden: int):
    """Zeros of shape (D, N, H), N taken from the data at run time."""
    column = sym.slice_axis(sym.slice_axis(x, axis=0, begin=0, end=1), axis=2, begin=0, end=1)
    return sym.broadcast_axis(sym.zeros_like(column), axis=(0, 2), size=(dirs, hidden))


@imports("LSTM", "GRU", "RNN")
def _rnn(ctx, node, attrs):
    mode = _mode(node, attrs)
    _check(node, attrs, mode)
    hidden = attrs["hidden_size"]
    w = const_input(ctx, node, 1, "W")
    r = const_input(ctx, node, 2, "R")
    b = ctx.const(node.input[3]) if len(node.input) > 3 and node.input[3] else None
    dirs = w.shape[0]
    flat = ctx.new_param(name_of(node) + "_parameters", _flat_parameters(mode, w, r, b, hidden))
    x = ctx.symbol(node.input[0])
    states = []
    for index in ((5, 6) if mode == "lstm" else (5,)):
        given = len(node.input) > index and node.input[index]
        states.append(ctx.symbol(node.input[index]) if given else _zero_state(x, dirs, hidden))
    wanted = [bool(n) for n in node.output]
    lengths = {}
    if len(node.input) > 4 and node.input[4]:  # sequence_lens: the op's own lengths
        lengths = dict(use_sequence_length=True, sequence_length=sym.Cast(
            ctx.symbol(node.input[4]), dtype="float32"))
    out = sym.RNN(x, ctx.symbol(flat), *states, state_size=hidden, num_layers=1, mode=mode,
                  bidirectional=dirs == 2, state_outputs=any(wanted[1:]), name=name_of(node),
                  **lengths)
    y = sym.transpose(sym.reshape(out[0], shape=(0, 0, dirs, -1)), axes=(0, 2, 1, 3))
    results = [y]
    if any(wanted[1:]):
        results += [out[i] for i in range(1, len(node.output))]
    return results
