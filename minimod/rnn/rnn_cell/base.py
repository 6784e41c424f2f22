"""The cell base: RNNParams (shared variables), BaseRNNCell (naming, begin states, unroll,
per-gate weight packing) and the sequence helpers every cell uses.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

from ... import ndarray
from ... import symbol as _sym
from ...symbol.symbol import Symbol, make_op_symbol

SymbolSeq = Union[Symbol, Sequence[Symbol]]


def _plus(lhs: Symbol, rhs: Symbol, name: str) -> Symbol:
    # MXNet's cells call the internal `_plus`/`_mul` by name; both store as elemwise_add/mul.
    return make_op_symbol("_plus", [lhs, rhs], {"name": name}, hint="_plus")


def _mul(lhs: Symbol, rhs: Symbol, name: str) -> Symbol:
    return make_op_symbol("_mul", [lhs, rhs], {"name": name}, hint="_mul")



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
