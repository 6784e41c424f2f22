"""The convolutional cells (ConvRNNCell, ConvLSTMCell, ConvGRUCell): the plain cells with their
FullyConnected layers turned into convolutions.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ... import symbol as _sym
from ...symbol.symbol import Symbol
from .base import BaseRNNCell, RNNParams
from .basic import _gru_combine, _lstm_combine


def _leaky(inputs: Symbol, **kwargs: Any) -> Symbol:
    """MXNet's default activation of the convolutional cells: LeakyReLU with slope 0.2."""
    return _sym.LeakyReLU(inputs, act_type="leaky", slope=0.2, **kwargs)


class BaseConvRNNCell(BaseRNNCell):
    """Base of the convolutional cells (Shi et al., 2015): the cell's FullyConnected layers
    become convolutions, input-to-hidden with the given kernel, stride, pad and dilation, and
    hidden-to-hidden with a 'same' padding (odd h2h kernels), so the state keeps the spatial
    size the i2h convolution gives `input_shape` (N, C, H, W, N unused)."""

    _gates = 1  # i2h and h2h filters per hidden channel
    _num_states = 1

    def __init__(self, input_shape: Sequence[int], num_hidden: int, h2h_kernel=(3, 3),
                 h2h_dilate=(1, 1), i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1),
                 i2h_dilate=(1, 1), i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 activation: Any = _leaky, prefix: str = "ConvRNN_",
                 params: Optional[RNNParams] = None, conv_layout: str = "NCHW"):
        super().__init__(prefix=prefix, params=params)
        if any(k % 2 == 0 for k in h2h_kernel):
            raise ValueError("h2h_kernel must have odd sizes (a 'same' padding), got %s"
                             % (tuple(h2h_kernel),))
        self._num_hidden = num_hidden
        self._activation = activation
        self._layout = conv_layout
        self._channel_axis = conv_layout.find("C")
        self._i2h = dict(kernel=tuple(i2h_kernel), stride=tuple(i2h_stride),
                         pad=tuple(i2h_pad), dilate=tuple(i2h_dilate))
        self._h2h = dict(kernel=tuple(h2h_kernel), stride=(1,) * len(h2h_kernel),
                         pad=tuple(d * (k - 1) // 2 for d, k in zip(h2h_dilate, h2h_kernel)),
                         dilate=tuple(h2h_dilate))
        probe = _sym.Convolution(_sym.Variable("data"), num_filter=num_hidden,
                                 layout=conv_layout, **self._i2h)
        shape = list(probe.infer_shape(data=tuple(input_shape))[1][0])
        shape[0] = 0
        self._state_shape = tuple(shape)
        self._iW = self.params.get("i2h_weight", init=i2h_weight_initializer)
        self._hW = self.params.get("h2h_weight", init=h2h_weight_initializer)
        self._iB = self.params.get("i2h_bias", init=i2h_bias_initializer)
        self._hB = self.params.get("h2h_bias", init=h2h_bias_initializer)

    @property
    def state_info(self) -> list:
        return [{"shape": self._state_shape, "__layout__": self._layout}
                for _ in range(self._num_states)]

    def _convolutions(self, inputs: Symbol, state: Symbol, step: str) -> tuple:
        filters = self._num_hidden * self._gates
        i2h = _sym.Convolution(inputs, self._iW, self._iB, num_filter=filters,
                               layout=self._layout, name="%si2h" % step, **self._i2h)
        h2h = _sym.Convolution(state, self._hW, self._hB, num_filter=filters,
                               layout=self._layout, name="%sh2h" % step, **self._h2h)
        return i2h, h2h


class ConvRNNCell(BaseConvRNNCell):
    """h' = act(conv_i(x) + conv_h(h))."""

    def __call__(self, inputs: Symbol, states: list) -> tuple:
        self._counter += 1
        step = "%st%d_" % (self._prefix, self._counter)
        i2h, h2h = self._convolutions(inputs, states[0], step)
        output = self._get_activation(i2h + h2h, self._activation, name="%sout" % step)
        return output, [output]


class ConvLSTMCell(BaseConvRNNCell):
    """LSTMCell with convolutions; gates (i, f, c, o) along the channel axis, the candidate
    and the output through `activation`."""

    _gates = 4
    _num_states = 2  # h and c

    def __init__(self, input_shape: Sequence[int], num_hidden: int, *args: Any,
                 prefix: str = "ConvLSTM_", **kwargs: Any):
        super().__init__(input_shape, num_hidden, *args, prefix=prefix, **kwargs)

    @property
    def _gate_names(self) -> Sequence[str]:
        return ["_i", "_f", "_c", "_o"]

    def __call__(self, inputs: Symbol, states: list) -> tuple:
        self._counter += 1
        step = "%st%d_" % (self._prefix, self._counter)
        i2h, h2h = self._convolutions(inputs, states[0], step)
        next_h, next_c = _lstm_combine(self, i2h + h2h, states[1], step, self._activation,
                                       axis=self._channel_axis)
        return next_h, [next_h, next_c]


class ConvGRUCell(BaseConvRNNCell):
    """GRUCell with convolutions: h' = (1 - z) * act(x_o + r * h_o) + z * h."""

    _gates = 3

    def __init__(self, input_shape: Sequence[int], num_hidden: int, *args: Any,
                 prefix: str = "ConvGRU_", **kwargs: Any):
        super().__init__(input_shape, num_hidden, *args, prefix=prefix, **kwargs)

    @property
    def _gate_names(self) -> Sequence[str]:
        return ["_r", "_z", "_o"]

    def __call__(self, inputs: Symbol, states: list) -> tuple:
        self._counter += 1
        step = "%st%d_" % (self._prefix, self._counter)
        prev_h = states[0]
        i2h, h2h = self._convolutions(inputs, prev_h, step)
        next_h = _gru_combine(self, i2h, h2h, prev_h, step, self._activation)
        return next_h, [next_h]
