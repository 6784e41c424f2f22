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
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Optional, Sequence, Union

from .. import ndarray
from .. import symbol as _sym
from ..symbol.symbol import Symbol, make_op_symbol

__all__ = [
    "RNNParams", "BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell", "FusedRNNCell",
    "SequentialRNNCell", "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell",
    "BidirectionalCell", "BaseConvRNNCell", "ConvRNNCell", "ConvLSTMCell", "ConvGRUCell",
]

SymbolSeq = Union[Symbol, Sequence[Symbol]]


def _initializer_module():
    from .. import initializer
    return initializer


def _plus(lhs: Symbol, rhs: Symbol, name: str) -> Symbol:
    # MXNet's cells call the internal `_plus`/`_mul` by name; both store as elemwise_add/mul.
    return make_op_symbol("_plus", [lhs, rhs], {"name": name}, hint="_plus")


def _mul(lhs: Symbol, rhs: Symbol, name: str) -> Symbol:
    return make_op_symbol("_mul", [lhs, rhs], {"name": name}, hint="_mul")


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


def _normalize_sequence(length: Optional[int], inputs: SymbolSeq, layout: str,
                        merge: Optional[bool]) -> tuple:
    """Bring `inputs` into the form `merge` asks for: a list of per-step symbols (False), one
    symbol with a T axis (True) or whatever it already is (None). Returns (inputs, T axis)."""
    if inputs is None:
        raise ValueError("unroll needs input symbols; create them before calling unroll")
    axis = layout.find("T")
    if isinstance(inputs, Symbol):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise ValueError("unroll takes one symbol or a list of symbols, not a group; "
                                 "pass list(inputs) to unroll step by step")
            inputs = list(_sym.split(inputs, axis=axis, num_outputs=length, squeeze_axis=1))
    else:
        if length is not None and len(inputs) != length:
            raise ValueError("unroll(length=%d) got %d input symbols" % (length, len(inputs)))
        if merge is True:
            steps = [_sym.expand_dims(step, axis=axis) for step in inputs]
            inputs = _sym.Concat(*steps, dim=axis)
    return inputs, axis


def _cells_state_info(cells: Sequence["BaseRNNCell"]) -> list:
    return [info for cell in cells for info in cell.state_info]


def _cells_begin_state(cells: Sequence["BaseRNNCell"], **kwargs: Any) -> list:
    return [state for cell in cells for state in cell.begin_state(**kwargs)]


def _cells_unpack_weights(cells: Sequence["BaseRNNCell"], args: dict) -> dict:
    for cell in cells:
        args = cell.unpack_weights(args)
    return args


def _cells_pack_weights(cells: Sequence["BaseRNNCell"], args: dict) -> dict:
    for cell in cells:
        args = cell.pack_weights(args)
    return args


class RNNParams:
    """The variables of one or more cells, created on first request under `prefix + name`, so
    that cells given the same RNNParams share weights."""

    def __init__(self, prefix: str = ""):
        self._prefix = prefix
        self._params: dict = {}

    def get(self, name: str, **kwargs: Any) -> Symbol:
        """The variable `prefix + name`; `kwargs` go to `sym.Variable` when it is created."""
        full = self._prefix + name
        if full not in self._params:
            self._params[full] = _sym.Variable(full, **kwargs)
        return self._params[full]


class BaseRNNCell:
    """A recurrent cell: a prefix for its node names, its parameters, its state layout.

    `_counter` numbers the steps of the current unroll (names `t0`, `t1` ...) and
    `_init_counter` the begin states; `reset()` restarts both and must run before a cell builds
    a second graph (`unroll` does it).
    """

    def __init__(self, prefix: str = "", params: Optional[RNNParams] = None):
        self._own_params = params is None
        self._prefix = prefix
        self._params = RNNParams(prefix) if params is None else params
        self._modified = False
        self._init_counter = -1
        self._counter = -1
        self.reset()

    def reset(self) -> None:
        """Restart step and begin-state numbering (for this cell and the cells it holds)."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, "_cells", ()):
            cell.reset()

    def __call__(self, inputs: Symbol, states: list) -> tuple:
        """One step: (output symbol, new state symbols)."""
        raise NotImplementedError

    @property
    def params(self) -> RNNParams:
        """The cell's parameter container (asking for it gives up ownership, as in MXNet)."""
        self._own_params = False
        return self._params

    @property
    def state_info(self) -> list:
        """One dict per state: `shape` (0 = batch, unknown) and `__layout__`."""
        raise NotImplementedError

    @property
    def state_shape(self) -> list:
        return [info["shape"] for info in self.state_info]

    @property
    def _gate_names(self) -> Sequence[str]:
        return ()

    def begin_state(self, func: Callable[..., Symbol] = _sym.zeros, **kwargs: Any) -> list:
        """Initial state symbols, made by `func(name=..., **state_info, **kwargs)`."""
        if self._modified:
            raise RuntimeError("this cell is wrapped by a modifier cell (DropoutCell, "
                               "ZoneoutCell ...); ask the modifier for begin states")
        states = []
        for info in self.state_info:
            self._init_counter += 1
            if info is not None:
                kwargs.update(info)
            name = "%sbegin_state_%d" % (self._prefix, self._init_counter)
            states.append(func(name=name, **kwargs))
        return states

    def unpack_weights(self, args: dict) -> dict:
        """Split each fused i2h/h2h weight and bias into one array per gate
        (`<prefix>i2h_f_weight` ...). Returns a new dict; `args` is not changed."""
        args = dict(args)
        if not self._gate_names:
            return args
        hidden = self._num_hidden
        for group in ("i2h", "h2h"):
            weight = args.pop("%s%s_weight" % (self._prefix, group))
            bias = args.pop("%s%s_bias" % (self._prefix, group))
            for j, gate in enumerate(self._gate_names):
                rows = slice(j * hidden, (j + 1) * hidden)
                args["%s%s%s_weight" % (self._prefix, group, gate)] = weight[rows].copy()
                args["%s%s%s_bias" % (self._prefix, group, gate)] = bias[rows].copy()
        return args

    def pack_weights(self, args: dict) -> dict:
        """Inverse of `unpack_weights`: join the per-gate arrays into fused ones."""
        args = dict(args)
        if not self._gate_names:
            return args
        for group in ("i2h", "h2h"):
            weights = [args.pop("%s%s%s_weight" % (self._prefix, group, gate))
                       for gate in self._gate_names]
            biases = [args.pop("%s%s%s_bias" % (self._prefix, group, gate))
                      for gate in self._gate_names]
            args["%s%s_weight" % (self._prefix, group)] = ndarray.concatenate(weights)
            args["%s%s_bias" % (self._prefix, group)] = ndarray.concatenate(biases)
        return args

    def unroll(self, length: int, inputs: SymbolSeq, begin_state: Optional[list] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None) -> tuple:
        """Apply the cell `length` times.

        `inputs` is one symbol laid out as `layout` (NTC or TNC) or a list of `length` (N, C)
        symbols. Returns (outputs, final states); outputs is one symbol in `layout` when
        `merge_outputs` is True, a list of per-step symbols when False, and whichever form is
        at hand when None.
        """
        self.reset()
        steps, _ = _normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        outputs = []
        for t in range(length):
            output, states = self(steps[t], states)
            outputs.append(output)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, inputs: Symbol, activation: Any, **kwargs: Any) -> Symbol:
        if isinstance(activation, str):
            return _sym.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)


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
            "i2h_bias", init=_initializer_module().LSTMBias(forget_bias=forget_bias))
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
        initializer = _initializer_module().FusedRNN(None, num_hidden, num_layers, mode,
                                                     bidirectional, forget_bias)
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


class SequentialRNNCell(BaseRNNCell):
    """Cells stacked: each cell's output is the next cell's input; states are concatenated."""

    def __init__(self, params: Optional[RNNParams] = None):
        super().__init__(prefix="", params=params)
        self._override_cell_params = params is not None
        self._cells: list = []

    def add(self, cell: BaseRNNCell) -> None:
        """Append `cell` on top of the stack."""
        self._cells.append(cell)
        if self._override_cell_params:
            if not cell._own_params:
                raise ValueError("give params to the SequentialRNNCell or to its cells, "
                                 "not both")
            cell.params._params.update(self.params._params)
        self.params._params.update(cell.params._params)

    @property
    def state_info(self) -> list:
        return _cells_state_info(self._cells)

    def begin_state(self, **kwargs: Any) -> list:
        if self._modified:
            raise RuntimeError("this cell is wrapped by a modifier cell; ask the modifier "
                               "for begin states")
        return _cells_begin_state(self._cells, **kwargs)

    def unpack_weights(self, args: dict) -> dict:
        return _cells_unpack_weights(self._cells, args)

    def pack_weights(self, args: dict) -> dict:
        return _cells_pack_weights(self._cells, args)

    def __call__(self, inputs: Symbol, states: list) -> tuple:
        self._counter += 1
        next_states = []
        pos = 0
        for cell in self._cells:
            if isinstance(cell, BidirectionalCell):
                raise TypeError("a BidirectionalCell cannot be stepped; use unroll")
            count = len(cell.state_info)
            inputs, cell_states = cell(inputs, states[pos:pos + count])
            pos += count
            next_states.extend(cell_states)
        return inputs, next_states

    def unroll(self, length: int, inputs: SymbolSeq, begin_state: Optional[list] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None) -> tuple:
        self.reset()
        if begin_state is None:
            begin_state = self.begin_state()
        pos = 0
        next_states = []
        last = len(self._cells) - 1
        for i, cell in enumerate(self._cells):
            count = len(cell.state_info)
            inputs, states = cell.unroll(length, inputs=inputs,
                                         begin_state=begin_state[pos:pos + count],
                                         layout=layout,
                                         merge_outputs=merge_outputs if i == last else None)
            pos += count
            next_states.extend(states)
        return inputs, next_states


class DropoutCell(BaseRNNCell):
    """Dropout on the input, no state; a whole sequence symbol gets one Dropout node."""

    def __init__(self, dropout: float, prefix: str = "dropout_",
                 params: Optional[RNNParams] = None):
        super().__init__(prefix, params)
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)):
            raise TypeError("dropout probability must be a number, got %r" % (dropout,))
        self.dropout = dropout

    @property
    def state_info(self) -> list:
        return []

    def __call__(self, inputs: Symbol, states: list) -> tuple:
        if self.dropout > 0:
            inputs = _sym.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length: int, inputs: SymbolSeq, begin_state: Optional[list] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None) -> tuple:
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, Symbol):
            return self(inputs, [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs)


class ModifierCell(BaseRNNCell):
    """A cell wrapping `base_cell` to change what it computes; the base cell must then only be
    used through the wrapper."""

    def __init__(self, base_cell: BaseRNNCell):
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self) -> RNNParams:
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self) -> list:
        return self.base_cell.state_info

    def begin_state(self, init_sym: Callable[..., Symbol] = _sym.zeros,
                    **kwargs: Any) -> list:
        if self._modified:
            raise RuntimeError("this cell is wrapped by another modifier cell; ask that one "
                               "for begin states")
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(init_sym, **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args: dict) -> dict:
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args: dict) -> dict:
        return self.base_cell.pack_weights(args)

    def __call__(self, inputs: Symbol, states: list) -> tuple:
        raise NotImplementedError


class ZoneoutCell(ModifierCell):
    """Zoneout: in training, each output / state unit keeps its previous value with
    probability `zoneout_outputs` / `zoneout_states` (masks from Dropout of ones)."""

    def __init__(self, base_cell: BaseRNNCell, zoneout_outputs: float = 0.,
                 zoneout_states: float = 0.):
        if isinstance(base_cell, FusedRNNCell):
            raise TypeError("FusedRNNCell does not support zoneout; unfuse() it first")
        if isinstance(base_cell, BidirectionalCell):
            raise TypeError("BidirectionalCell cannot be stepped, so it cannot take zoneout; "
                            "wrap the cells inside it instead")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self.prev_output: Optional[Symbol] = None

    def reset(self) -> None:
        super().reset()
        self.prev_output = None

    def __call__(self, inputs: Symbol, states: list) -> tuple:
        next_output, next_states = self.base_cell(inputs, states)

        def mask(p: float, like: Symbol) -> Symbol:
            return _sym.Dropout(_sym.ones_like(like), p=p)

        prev_output = self.prev_output if self.prev_output is not None \
            else _sym.zeros((0, 0))
        output = next_output
        if self.zoneout_outputs != 0.:
            output = _sym.where(mask(self.zoneout_outputs, next_output), next_output,
                                prev_output)
        new_states = next_states
        if self.zoneout_states != 0.:
            new_states = [_sym.where(mask(self.zoneout_states, new), new, old)
                          for new, old in zip(next_states, states)]
        self.prev_output = output
        return output, new_states


class ResidualCell(ModifierCell):
    """Output = base cell output + input (elemwise_add named `<output>_plus_residual`)."""

    def __call__(self, inputs: Symbol, states: list) -> tuple:
        output, states = self.base_cell(inputs, states)
        output = _sym.elemwise_add(output, inputs, name="%s_plus_residual" % output.name)
        return output, states

    def unroll(self, length: int, inputs: SymbolSeq, begin_state: Optional[list] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None) -> tuple:
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs,
                                                    begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, Symbol)
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if merge_outputs:
            outputs = _sym.elemwise_add(outputs, inputs,
                                        name="%s_plus_residual" % outputs.name)
        else:
            outputs = [_sym.elemwise_add(out, inp, name="%s_plus_residual" % out.name)
                       for out, inp in zip(outputs, inputs)]
        return outputs, states


class BidirectionalCell(BaseRNNCell):
    """`l_cell` reads the sequence forwards, `r_cell` backwards; their outputs are
    concatenated per step (`<output_prefix>t<i>`) or as whole sequences
    (`<output_prefix>out`). States: l_cell's then r_cell's (as two lists)."""

    def __init__(self, l_cell: BaseRNNCell, r_cell: BaseRNNCell,
                 params: Optional[RNNParams] = None, output_prefix: str = "bi_"):
        super().__init__("", params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        if self._override_cell_params:
            if not (l_cell._own_params and r_cell._own_params):
                raise ValueError("give params to the BidirectionalCell or to its cells, "
                                 "not both")
            l_cell.params._params.update(self.params._params)
            r_cell.params._params.update(self.params._params)
        self.params._params.update(l_cell.params._params)
        self.params._params.update(r_cell.params._params)
        self._cells = [l_cell, r_cell]

    def unpack_weights(self, args: dict) -> dict:
        return _cells_unpack_weights(self._cells, args)

    def pack_weights(self, args: dict) -> dict:
        return _cells_pack_weights(self._cells, args)

    def __call__(self, inputs: Symbol, states: list) -> tuple:
        raise NotImplementedError("a BidirectionalCell cannot be stepped; use unroll")

    @property
    def state_info(self) -> list:
        return _cells_state_info(self._cells)

    def begin_state(self, **kwargs: Any) -> list:
        if self._modified:
            raise RuntimeError("this cell is wrapped by a modifier cell; ask the modifier "
                               "for begin states")
        return _cells_begin_state(self._cells, **kwargs)

    def unroll(self, length: int, inputs: SymbolSeq, begin_state: Optional[list] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None) -> tuple:
        self.reset()
        steps, axis = _normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        l_cell, r_cell = self._cells
        n_left = len(l_cell.state_info)
        l_outputs, l_states = l_cell.unroll(length, inputs=steps, begin_state=states[:n_left],
                                            layout=layout, merge_outputs=merge_outputs)
        r_outputs, r_states = r_cell.unroll(length, inputs=list(reversed(steps)),
                                            begin_state=states[n_left:], layout=layout,
                                            merge_outputs=merge_outputs)
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, Symbol) and isinstance(r_outputs, Symbol)
            if not merge_outputs:
                if isinstance(l_outputs, Symbol):
                    l_outputs = list(_sym.SliceChannel(l_outputs, axis=axis,
                                                       num_outputs=length, squeeze_axis=1))
                if isinstance(r_outputs, Symbol):
                    r_outputs = list(_sym.SliceChannel(r_outputs, axis=axis,
                                                       num_outputs=length, squeeze_axis=1))
        if merge_outputs:
            outputs = _sym.Concat(l_outputs, _sym.reverse(r_outputs, axis=axis), dim=2,
                                  name="%sout" % self._output_prefix)
        else:
            outputs = [_sym.Concat(left, right, dim=1,
                                   name="%st%d" % (self._output_prefix, t))
                       for t, (left, right) in enumerate(zip(l_outputs,
                                                             reversed(r_outputs)))]
        return outputs, [l_states, r_states]


# ----------------------------------------------------------------------------- convolutional


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
