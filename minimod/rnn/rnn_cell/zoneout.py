"""ZoneoutCell, the modifier that keeps units at their previous value. It has a module of its
own because it refuses FusedRNNCell, which fused.py builds from the other cells' modules.
"""
from __future__ import annotations

from typing import Optional

from ... import symbol as _sym
from ...symbol.symbol import Symbol
from .base import BaseRNNCell
from .fused import FusedRNNCell
from .modifiers import BidirectionalCell, ModifierCell


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
