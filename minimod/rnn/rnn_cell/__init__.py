"""Recurrent cells (MXNet path `mx.rnn.rnn_cell`).

A cell turns one time step's input symbol and its state symbols into an output symbol and new
states (`cell(inputs, states)`); `unroll(length, inputs)` applies it `length` times. Every cell
builds exactly the graph MXNet 1.9.1 builds, because symbol JSON, argument lists and checkpoints
must be interchangeable:

- node names: step t of a cell with prefix `p` is named `p t<t>_<part>` (`lstm_t0_i2h`,
  `lstm_t0_slice`, `lstm_t0_state`, `lstm_t0_out`; GRU doubles the underscore, `gru_t0__i2h`,
  as MXNet does), the anonymous arithmetic in between takes auto names (`_mul0`, `activation0`);
- parameters: `<prefix>i2h_weight`, `i2h_bias`, `h2h_weight`, `h2h_bias`, shared through
  `RNNParams`; the LSTM's `i2h_bias` carries the `LSTMBias` initializer;
- begin states: `sym.zeros(shape=(0, H))` named `<prefix>begin_state_<k>`, whose batch dim (0 =
  unknown) shape inference fills in backwards from the graph;
- sequences: a single input symbol is cut into steps with SliceChannel (squeeze_axis=1) along
  the layout's T axis, and `merge_outputs=True` joins steps with expand_dims + Concat.

Gate order inside the fused i2h/h2h matrices: LSTM i, f, c (the candidate), o; GRU r, z, o (the
candidate); `unpack_weights` / `pack_weights` split and join them under the names
`<prefix>i2h_i_weight` and so on.

The package: base.py (RNNParams, BaseRNNCell), basic.py (RNNCell, LSTMCell, GRUCell),
modifiers.py (SequentialRNNCell, BidirectionalCell, DropoutCell, ModifierCell, ResidualCell),
zoneout.py (ZoneoutCell), fused.py (FusedRNNCell) and conv.py (the convolutional cells).
"""
from __future__ import annotations

from .base import BaseRNNCell, RNNParams
from .basic import GRUCell, LSTMCell, RNNCell
from .conv import BaseConvRNNCell, ConvGRUCell, ConvLSTMCell, ConvRNNCell
from .fused import FusedRNNCell
from .modifiers import (
    BidirectionalCell,
    DropoutCell,
    ModifierCell,
    ResidualCell,
    SequentialRNNCell,
)
from .zoneout import ZoneoutCell

__all__ = [
    "RNNParams", "BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell", "FusedRNNCell",
    "SequentialRNNCell", "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell",
    "BidirectionalCell", "BaseConvRNNCell", "ConvRNNCell", "ConvLSTMCell", "ConvGRUCell",
]
