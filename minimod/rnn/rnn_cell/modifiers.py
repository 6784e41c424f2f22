"""Cells built from other cells: SequentialRNNCell (a stack), BidirectionalCell, DropoutCell,
and the modifiers ModifierCell and ResidualCell (ZoneoutCell is in zoneout.py).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from ... import symbol as _sym
from ...symbol.symbol import Symbol
from .base import (
    BaseRNNCell,
    RNNParams,
    SymbolSeq,
    _cells_begin_state,
    _cells_pack_weights,
    _cells_state_info,
    _cells_unpack_weights,
    _normalize_sequence,
)


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
