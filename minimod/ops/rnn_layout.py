"""Where the RNN operator keeps its numbers: the layout of the flat `parameters` vector and of
the hidden `reserve` output (see rnn.py for the op).

`parameters` layout, the one MXNet's CPU and cuDNN kernels read (checked against MXNet 1.9.1
numbers in tests/ops/test_rnn_op.py): first every weight matrix, layer by layer, direction by
direction: W_x (G*H, in_l) then W_h (G*H, H), row-major, rows grouped by gate; then every bias in
the same order: b_x (G*H,) then b_h (G*H,). in_0 = C and in_l = D*H above, so

    P = D*G*H*(C + H + 2) + (L - 1) * D*G*H*(D*H + H + 2).

An LSTM with `projection_size` R (LSTMP, cuDNN's) has W_h (4H, R) and after it W_r (R, H), the
projection, in each (layer, direction); in_l = D*R; the biases are as above (the order MXNet's
Gluon LSTM packs them in).

(T time steps, N batch, C input features, H = state_size, L = num_layers, D = 2 if
bidirectional else 1, G gates: 1 for rnn_*, 4 for lstm, 3 for gru.)

`reserve` is one flat vector of the data's dtype holding what backward reads: per (layer,
direction) the activated gates (lstm, gru), the cell states and their tanh and the clipping
mask (lstm), the recurrent candidate term W_hn h + b_hn (gru), and per layer the hidden states
of every layer but the last (whose hidden states are `output` itself) and the dropout mask of
its input (p > 0). Its length depends on T, N and the attrs only.
"""
from __future__ import annotations

from typing import Optional

__all__ = ["GATES", "prev_state", "rnn_param_size", "rnn_param_slices",
           "rnn_reserve_layout", "rnn_reserve_size", "view"]

#: gates per mode (G above)
GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def rnn_param_size(mode: str, input_size: int, state_size: int, num_layers: int,
                   bidirectional: bool = False, projection_size: Optional[int] = None) -> int:
    """Length of the flat `parameters` vector of an RNN op."""
    dirs = 2 if bidirectional else 1
    gates = GATES[mode]
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
                     bidirectional: bool = False, projection_size: Optional[int] = None) -> list:
    """Per (layer, direction), in row order layer * D + direction: a dict of
    (offset, shape) for 'wx', 'wh', 'bx', 'bh' in the flat vector, and with a projection
    'wr' (P, H), after W_h: the LSTM's W_h is then (4H, P) and in_l = D*P."""
    dirs = 2 if bidirectional else 1
    gh = GATES[mode] * state_size
    out_h = projection_size or state_size
    pieces = []
    pos = 0
    for layer in range(num_layers):
        cols = input_size if layer == 0 else dirs * out_h
        for _ in range(dirs):
            pieces.append({"wx": (pos, (gh, cols)), "wh": (pos + gh * cols, (gh, out_h))})
            pos += gh * (cols + out_h)
            if projection_size:
                pieces[-1]["wr"] = (pos, (out_h, state_size))
                pos += out_h * state_size
    for piece in pieces:
        piece["bx"] = (pos, (gh,))
        piece["bh"] = (pos + gh, (gh,))
        pos += 2 * gh
    return pieces


class _Cursor:
    """Hands out consecutive (offset, shape) pieces of a flat vector."""

    def __init__(self):
        self.pos = 0

    def take(self, shape: tuple) -> tuple:
        spec = (self.pos, shape)
        self.pos += shape[0] * shape[1] * shape[2]
        return spec


def rnn_reserve_layout(mode: str, state_size: int, num_layers: int, bidirectional: bool,
                       p: float, clip: bool, steps: int, batch: int,
                       projection_size: Optional[int] = None):
    """Where the hidden `reserve` output keeps what backward reads, as (offset, shape) pairs.

    Returns (size, layers, rows). layers[l] has 'y', the hidden states (T, N, D*H) of layer l
    (None for the last layer, whose hidden states are the visible `output`), and 'mask', the
    scaled dropout mask (T, N, D*H) applied to layer l's input (None for layer 0 or p = 0).
    rows[layer * D + d] has, for lstm 'gates' (T, N, 4H) activated, 'c' and 'tanh_c' (T, N, H)
    and with clipping 'clip' (1 where c was not clipped); for gru 'gates' (T, N, 3H) and 'hn'
    (T, N, H), W_hn h + b_hn; nothing for rnn_* (backward reads their gates off the hidden
    states). With a projection (lstm), the hidden states are the projected ones (P wide) and
    each row also keeps 'h' (T, N, H), the states before the projection.
    """
    dirs = 2 if bidirectional else 1
    cursor = _Cursor()
    layer_seq = (steps, batch, dirs * (projection_size or state_size))
    layers, rows = [], []
    for layer in range(num_layers):
        layers.append({
            "y": cursor.take(layer_seq) if layer < num_layers - 1 else None,
            "mask": cursor.take(layer_seq) if layer > 0 and p > 0 else None})
        for _ in range(dirs):
            rows.append(_reserve_row(cursor, mode, state_size, clip, steps, batch))
            if projection_size:
                rows[-1]["h"] = cursor.take((steps, batch, state_size))
    return cursor.pos, layers, rows


def _reserve_row(cursor: _Cursor, mode: str, hidden: int, clip: bool, steps: int,
                 batch: int) -> dict:
    """The reserve pieces of one (layer, direction) pass."""
    seq = (steps, batch, hidden)
    row = {}
    if mode in ("lstm", "gru"):
        row["gates"] = cursor.take((steps, batch, GATES[mode] * hidden))
    if mode == "lstm":
        row["c"] = cursor.take(seq)
        row["tanh_c"] = cursor.take(seq)
        if clip:
            row["clip"] = cursor.take(seq)
    elif mode == "gru":
        row["hn"] = cursor.take(seq)
    return row


def rnn_reserve_size(mode: str, state_size: int, num_layers: int, bidirectional: bool = False,
                     p: float = 0.0, clip: bool = False, steps: int = 1, batch: int = 1,
                     projection_size: Optional[int] = None) -> int:
    """Length of the hidden `reserve` output of an RNN op (see `rnn_reserve_layout`)."""
    return rnn_reserve_layout(mode, state_size, num_layers, bidirectional, p, clip, steps,
                              batch, projection_size)[0]


def view(flat, spec):
    """The piece `spec` = (offset, shape) of the flat vector `flat`, as a view of that shape."""
    offset, shape = spec
    size = 1
    for d in shape:
        size *= d
    return flat[offset:offset + size].reshape(shape)


def prev_state(seq, start, t: int, reverse: bool):
    """The state before step t of a pass over `seq` (T, ...) that began from `start`: the
    neighbouring step's entry, or `start` at the pass's first step."""
    if reverse:
        return seq[t + 1] if t + 1 < seq.shape[0] else start
    return seq[t - 1] if t > 0 else start
