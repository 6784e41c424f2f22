"""Initializers for recurrent layers: LSTMBias (the forget-gate bias) and FusedRNN (the flat
parameter vector of the fused RNN operator, piece by piece, as `rnn_param_layout` lays it out).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..base import ShapeError
from ..ndarray import NDArray
from ..ndarray.ndarray import wrap
from .base import InitDesc, InitError, Initializer, create, register


@register
class LSTMBias(Initializer):
    """An LSTM bias of 4 gates: all 0 except the forget gate (the second quarter)."""

    def __init__(self, forget_bias: float = 1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, _: str, arr: Any) -> None:
        arr[:] = 0.0
        num_hidden = int(arr.shape[0] / 4)
        arr[num_hidden:2 * num_hidden] = self.forget_bias


_RNN_GATES = {"rnn_relu": ("",), "rnn_tanh": ("",), "lstm": ("_i", "_f", "_c", "_o"),
              "gru": ("_r", "_z", "_o")}


def rnn_param_layout(size: int, num_hidden: int, num_layers: int, mode: str,
                     bidirectional: bool = False) -> list[tuple[str, int, tuple]]:
    """The pieces of the flat parameter vector of MXNet's fused RNN operator.

    Returns `(name, offset, shape)` per piece, in storage order: first all weights, layer by
    layer, direction by direction ('l', then 'r'), the i2h gate matrices then the h2h ones;
    then all biases in the same order. Names are like 'l0_i2h_f_weight'. The input size is
    worked out from `size`.
    """
    if mode not in _RNN_GATES:
        raise InitError(f"RNN mode must be one of {sorted(_RNN_GATES)}, got {mode!r}")
    gates = _RNN_GATES[mode]
    directions = ("l", "r") if bidirectional else ("l",)
    dirs, ngates, hidden = len(directions), len(gates), num_hidden
    per_input = dirs * ngates * hidden
    rest = size - (num_layers - 1) * per_input * (hidden + dirs * hidden + 2) \
        - per_input * (hidden + 2)
    if hidden <= 0 or num_layers <= 0 or rest <= 0 or rest % per_input:
        raise ShapeError(f"a fused {mode} parameter vector of {size} values does not fit "
                         f"num_hidden={num_hidden}, num_layers={num_layers}, "
                         f"bidirectional={bidirectional}")
    num_input = rest // per_input
    pieces, offset = [], 0
    for layer in range(num_layers):
        layer_input = num_input if layer == 0 else dirs * hidden
        for direction in directions:
            for kind, cols in (("i2h", layer_input), ("h2h", hidden)):
                for gate in gates:
                    name = "%s%d_%s%s_weight" % (direction, layer, kind, gate)
                    pieces.append((name, offset, (hidden, cols)))
                    offset += hidden * cols
    for layer in range(num_layers):
        for direction in directions:
            for kind in ("i2h", "h2h"):
                for gate in gates:
                    pieces.append(("%s%d_%s%s_bias" % (direction, layer, kind, gate), offset,
                                   (hidden,)))
                    offset += hidden
    return pieces


@register
class FusedRNN(Initializer):
    """Initialise the flat parameter vector of a fused RNN operator piece by piece.

    Each gate matrix and bias (see `rnn_param_layout`) is initialised by `init` (or by the
    global initializer when `init` is None) under its own name, so weights get `init`'s
    distribution and biases 0; LSTM forget-gate biases get `forget_bias`.
    """

    def __init__(self, init: Optional[Initializer | str], num_hidden: int, num_layers: int,
                 mode: str, bidirectional: bool = False, forget_bias: float = 1.0):
        if isinstance(init, str):
            init = create(init)
        if mode not in _RNN_GATES:
            raise InitError(f"FusedRNN: mode must be one of {sorted(_RNN_GATES)}, got {mode!r}")
        super().__init__(init=init.dumps() if init is not None else None,
                         num_hidden=num_hidden, num_layers=num_layers, mode=mode,
                         bidirectional=bidirectional, forget_bias=forget_bias)
        self._init = init
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._forget_bias = forget_bias

    def _init_weight(self, desc: str, arr: Any) -> None:
        fallback = getattr(desc, "global_init", None)
        init = self._init if self._init is not None else fallback
        if init is None:
            raise InitError(f"FusedRNN for {desc!r} has init=None and no global initializer to "
                            "fall back on; pass init=mx.init.Xavier() (for example)")
        data = arr._data if isinstance(arr, NDArray) else arr
        flat = data.reshape(-1)
        if not data.flags.c_contiguous:
            raise InitError(f"FusedRNN: parameter {desc!r} must be a contiguous array")
        pieces = rnn_param_layout(int(flat.size), self._num_hidden, self._num_layers,
                                  self._mode, self._bidirectional)
        ctx = arr.context if isinstance(arr, NDArray) else None
        for name, offset, shape in pieces:
            size = int(np.prod(shape))
            view = flat[offset:offset + size].reshape(shape)
            piece = wrap(view, ctx) if ctx is not None else view
            if self._mode == "lstm" and name.endswith("_f_bias"):
                piece[:] = self._forget_bias
            else:
                init(InitDesc(name, global_init=fallback), piece)
