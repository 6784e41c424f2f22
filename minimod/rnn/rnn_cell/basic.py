"""The plain cells: RNNCell (Elman), LSTMCell and GRUCell, with the gate arithmetic the
convolutional cells share (`_lstm_combine`, `_gru_combine`).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ... import symbol as _sym
from ...initializer import LSTMBias
from ...symbol.symbol import Symbol
from .base import BaseRNNCell, RNNParams, _mul, _plus


def _lstm_combine(cell: "BaseRNNCell", gates_sum: Symbol, prev_c: Symbol, step: str,
                  activation: Any, **slice_kwargs: Any) -> tuple:
    """The LSTM gates from i2h + h2h: (next h, next c) with gates (i, f, c, o)."""
    gates = _sym.SliceChannel(gates_sum, num_outputs=4, name="%sslice" % step, **slice_kwargs)
    in_gate = _sym.Activation(gates[0], act_type="sigmoid", name="%si" % step)
    forget_gate = _sym.Activation(gates[1], act_type="sigmoid", name="%sf" % step)
    candidate = cell._get_activation(gates[2], activation, name="%sc" % step)
    out_gate = _sym.Activation(gates[3], act_type="sigmoid", name="%so" % step)
    next_c = _plus(forget_gate * prev_c, in_gate * candidate, name="%sstate" % step)
    next_h = _mul(out_gate, cell._get_activation(next_c, activation), name="%sout" % step)
    return next_h, next_c


def _gru_combine(cell: "BaseRNNCell", i2h: Symbol, h2h: Symbol, prev_h: Symbol, step: str,
                 activation: Any) -> Symbol:
    """The GRU update from i2h and h2h (gates r, z, o): (1 - z) act(x_o + r h_o) + z h."""
    i2h_r, i2h_z, i2h_o = _sym.SliceChannel(i2h, num_outputs=3, name="%s_i2h_slice" % step)
    h2h_r, h2h_z, h2h_o = _sym.SliceChannel(h2h, num_outputs=3, name="%s_h2h_slice" % step)
    reset = _sym.Activation(i2h_r + h2h_r, act_type="sigmoid", name="%s_r_act" % step)
    update = _sym.Activation(i2h_z + h2h_z, act_type="sigmoid", name="%s_z_act" % step)
    candidate = cell._get_activation(i2h_o + reset * h2h_o, activation, name="%s_h_act" % step)
    return _plus((1. - update) * candidate, update * prev_h, name="%sout" % step)



class RNNCell(BaseRNNCell):
    """Elman cell: h' = act(W_i x + b_i + W_h h + b_h)."""

    def __init__(self, num_hidden: int, activation: Any = "tanh", prefix: str = "rnn_",
                 params: Optional[RNNParams] = None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._activation = activation
        self._iW = self.params.get("i2h_weight")
        self._iB = self.params.get("i2h_bias")
        self._hW = self.params.get("h2h_weight")
        self._hB = self.params.get("h2h_bias")

    @property
    def state_info(self) -> list:
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self) -> Sequence[str]:
        return ("",)

    def __call__(self, inputs: Symbol, states: list) -> tuple:
        self._counter += 1
        step = "%st%d_" % (self._prefix, self._counter)
        i2h = _sym.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                  num_hidden=self._num_hidden, name="%si2h" % step)
        h2h = _sym.FullyConnected(data=states[0], weight=self._hW, bias=self._hB,
                                  num_hidden=self._num_hidden, name="%sh2h" % step)
        output = self._get_activation(i2h + h2h, self._activation, name="%sout" % step)
        return output, [output]


class LSTMCell(BaseRNNCell):
    """LSTM cell; gates (i, f, c, o) come from one i2h and one h2h FullyConnected of 4H units.

    c' = sigmoid(f) * c + sigmoid(i) * tanh(c~), h' = sigmoid(o) * tanh(c'). The i2h bias is
    initialised by `LSTMBias(forget_bias)`.
    """

    def __init__(self, num_hidden: int, prefix: str = "lstm_",
                 params: Optional[RNNParams] = None, forget_bias: float = 1.0):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get("i2h_weight")
        self._hW = self.params.get("h2h_weight")
        self._iB = self.params.get(
            "i2h_bias", init=LSTMBias(forget_bias=forget_bias))
        self._hB = self.params.get("h2h_bias")

    @property
    def state_info(self) -> list:
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"},
                {"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self) -> Sequence[str]:
        return ["_i", "_f", "_c", "_o"]

    def __call__(self, inputs: Symbol, states: list) -> tuple:
        self._counter += 1
        step = "%st%d_" % (self._prefix, self._counter)
        hidden4 = self._num_hidden * 4
        i2h = _sym.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                  num_hidden=hidden4, name="%si2h" % step)
        h2h = _sym.FullyConnected(data=states[0], weight=self._hW, bias=self._hB,
                                  num_hidden=hidden4, name="%sh2h" % step)
        next_h, next_c = _lstm_combine(self, i2h + h2h, states[1], step, "tanh")
        return next_h, [next_h, next_c]


class GRUCell(BaseRNNCell):
    """GRU cell in the cuDNN form: the reset gate scales h2h's candidate part after the matrix
    product, h' = (1 - z) * tanh(x_o + r * h_o) + z * h."""

    def __init__(self, num_hidden: int, prefix: str = "gru_",
                 params: Optional[RNNParams] = None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get("i2h_weight")
        self._iB = self.params.get("i2h_bias")
        self._hW = self.params.get("h2h_weight")
        self._hB = self.params.get("h2h_bias")

    @property
    def state_info(self) -> list:
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self) -> Sequence[str]:
        return ["_r", "_z", "_o"]

    def __call__(self, inputs: Symbol, states: list) -> tuple:
        self._counter += 1
        step = "%st%d_" % (self._prefix, self._counter)
        prev_h = states[0]
        hidden3 = self._num_hidden * 3
        i2h = _sym.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                  num_hidden=hidden3, name="%s_i2h" % step)
        h2h = _sym.FullyConnected(data=prev_h, weight=self._hW, bias=self._hB,
                                  num_hidden=hidden3, name="%s_h2h" % step)
        next_h = _gru_combine(self, i2h, h2h, prev_h, step, "tanh")
        return next_h, [next_h]
