"""FusedRNNCell: all layers and steps in one `RNN` operator over a flat parameter vector, with
the weight slicing that maps it to (and from) the equivalent stack of plain cells.
"""
from __future__ import annotations

import warnings
from typing import Any, Optional, Sequence

from ... import ndarray
from ... import symbol as _sym
from ...initializer import FusedRNN
from ...symbol.symbol import Symbol
from .base import BaseRNNCell, RNNParams, SymbolSeq, _normalize_sequence
from .basic import GRUCell, LSTMCell, RNNCell
from .modifiers import BidirectionalCell, DropoutCell, SequentialRNNCell


class FusedRNNCell(BaseRNNCell):
    """All layers and time steps in one `RNN` operator over a flat parameter vector
    `<prefix>parameters` (initialised by `FusedRNN`). `unfuse()` gives the equivalent stack of
    plain cells, whose weights `unpack_weights` produces."""

    def __init__(self, num_hidden: int, num_layers: int = 1, mode: str = "lstm",
                 bidirectional: bool = False, dropout: float = 0., get_next_state: bool = False,
                 forget_bias: float = 1.0, prefix: Optional[str] = None,
                 params: Optional[RNNParams] = None):
        if prefix is None:
            prefix = "%s_" % mode
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._directions = ["l", "r"] if bidirectional else ["l"]
        initializer = FusedRNN(None, num_hidden, num_layers, mode, bidirectional, forget_bias)
        self._parameter = self.params.get("parameters", init=initializer)

    @property
    def state_info(self) -> list:
        directions = self._bidirectional + 1
        count = (self._mode == "lstm") + 1
        return [{"shape": (directions * self._num_layers, 0, self._num_hidden),
                 "__layout__": "LNC"} for _ in range(count)]

    @property
    def _gate_names(self) -> Sequence[str]:
        return {"rnn_relu": [""], "rnn_tanh": [""], "lstm": ["_i", "_f", "_c", "_o"],
                "gru": ["_r", "_z", "_o"]}[self._mode]

    @property
    def _num_gates(self) -> int:
        return len(self._gate_names)

    def _slice_weights(self, arr: Any, num_input: int, hidden: int) -> dict:
        """Views of the flat vector `arr`, one per gate matrix and bias, in the operator's
        storage order: all weights (layer, direction, i2h gates, h2h gates), then all biases
        in the same order."""
        pieces = {}
        gates = self._gate_names
        dirs = len(self._directions)
        pos = 0
        for layer in range(self._num_layers):
            cols = num_input if layer == 0 else dirs * hidden
            for direction in self._directions:
                for group, width in (("i2h", cols), ("h2h", hidden)):
                    for gate in gates:
                        name = "%s%s%d_%s%s_weight" % (self._prefix, direction, layer, group,
                                                       gate)
                        size = hidden * width
                        pieces[name] = arr[pos:pos + size].reshape((hidden, width))
                        pos += size
        for layer in range(self._num_layers):
            for direction in self._directions:
                for group in ("i2h", "h2h"):
                    for gate in gates:
                        name = "%s%s%d_%s%s_bias" % (self._prefix, direction, layer, group, gate)
                        pieces[name] = arr[pos:pos + hidden]
                        pos += hidden
        if pos != arr.size:
            raise ValueError("%sparameters has %d values but num_hidden=%d, num_layers=%d, "
                             "mode=%s need %d" % (self._prefix, arr.size, hidden,
                                                  self._num_layers, self._mode, pos))
        return pieces

    def _total_size(self, num_input: int) -> int:
        dirs = self._bidirectional + 1
        gates = self._num_gates
        hidden = self._num_hidden
        return ((num_input + hidden + 2) * hidden * gates * dirs
                + (self._num_layers - 1) * gates * hidden * (hidden + dirs * hidden + 2) * dirs)

    def unpack_weights(self, args: dict) -> dict:
        args = dict(args)
        arr = args.pop(self._parameter.name)
        dirs = len(self._directions)
        hidden = self._num_hidden
        per_input = dirs * self._num_gates * hidden
        num_input = (arr.size // per_input - (self._num_layers - 1) * (hidden + dirs * hidden + 2)
                     - hidden - 2)
        pieces = self._slice_weights(arr, num_input, hidden)
        args.update({name: piece.copy() for name, piece in pieces.items()})
        return args

    def pack_weights(self, args: dict) -> dict:
        args = dict(args)
        first = args["%sl0_i2h%s_weight" % (self._prefix, self._gate_names[0])]
        num_input = first.shape[1]
        arr = ndarray.zeros((self._total_size(num_input),), ctx=first.context,
                            dtype=first.dtype)
        for name, piece in self._slice_weights(arr, num_input, self._num_hidden).items():
            piece[:] = args.pop(name)
        args[self._parameter.name] = arr
        return args

    def __call__(self, inputs: Symbol, states: list) -> tuple:
        raise NotImplementedError("FusedRNNCell runs whole sequences; use unroll (or unfuse())")

    def unroll(self, length: int, inputs: SymbolSeq, begin_state: Optional[list] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None) -> tuple:
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, True)
        if axis == 1:
            warnings.warn("NTC layout detected. Consider using TNC for FusedRNNCell for "
                          "faster speed", stacklevel=2)
            inputs = _sym.swapaxes(inputs, dim1=0, dim2=1)
        elif axis != 0:
            raise ValueError("FusedRNNCell: unsupported layout %s" % layout)
        states = self.begin_state() if begin_state is None else begin_state
        state_inputs = {"state": states[0]}
        if self._mode == "lstm":
            state_inputs["state_cell"] = states[1]
        rnn = _sym.RNN(data=inputs, parameters=self._parameter, state_size=self._num_hidden,
                       num_layers=self._num_layers, bidirectional=self._bidirectional,
                       p=self._dropout, state_outputs=self._get_next_state, mode=self._mode,
                       name=self._prefix + "rnn", **state_inputs)
        if not self._get_next_state:
            outputs, states = rnn, []
        else:
            count = 2 if self._mode == "lstm" else 1
            for k in range(1, count + 1):
                rnn[k]._set_attr(__layout__="LNC")
            outputs, states = rnn[0], [rnn[k] for k in range(1, count + 1)]
        if axis == 1:
            outputs = _sym.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self) -> "SequentialRNNCell":
        """The same network as a SequentialRNNCell of plain cells (prefixes `<prefix>l0_`,
        `<prefix>r0_` ...), which can be stepped."""
        def make(cell_prefix: str) -> BaseRNNCell:
            if self._mode in ("rnn_relu", "rnn_tanh"):
                return RNNCell(self._num_hidden, activation=self._mode[4:], prefix=cell_prefix)
            if self._mode == "lstm":
                return LSTMCell(self._num_hidden, prefix=cell_prefix)
            return GRUCell(self._num_hidden, prefix=cell_prefix)

        stack = SequentialRNNCell()
        for layer in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(
                    make("%sl%d_" % (self._prefix, layer)),
                    make("%sr%d_" % (self._prefix, layer)),
                    output_prefix="%sbi_l%d_" % (self._prefix, layer)))
            else:
                stack.add(make("%sl%d_" % (self._prefix, layer)))
            if self._dropout > 0 and layer != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout,
                                      prefix="%s_dropout%d_" % (self._prefix, layer)))
        return stack
