"""Checkpoint helpers for models built from RNN cells (MXNet's `mx.rnn.rnn`).

Saving unpacks each cell's fused weights into per-gate arrays (`lstm_l0_i2h_f_weight` ...),
loading packs them back, so a checkpoint written from a FusedRNNCell model loads into the
equivalent unfused model and the other way round.
"""
from __future__ import annotations

import warnings
from typing import Callable, Optional, Sequence, Union

from ..checkpoint import load_checkpoint, save_checkpoint
from .rnn_cell import BaseRNNCell

__all__ = ["rnn_unroll", "save_rnn_checkpoint", "load_rnn_checkpoint", "do_rnn_checkpoint"]

Cells = Union[BaseRNNCell, Sequence[BaseRNNCell]]


def _as_cells(cells: Cells) -> list:
    return [cells] if isinstance(cells, BaseRNNCell) else list(cells)


def rnn_unroll(cell: BaseRNNCell, length: int, inputs=None, begin_state=None,
               input_prefix: str = "", layout: str = "NTC") -> tuple:
    """Deprecated spelling of `cell.unroll` (`input_prefix` is ignored)."""
    warnings.warn("rnn_unroll is deprecated. Please call cell.unroll directly.",
                  DeprecationWarning, stacklevel=2)
    return cell.unroll(length=length, inputs=inputs, begin_state=begin_state, layout=layout)


def save_rnn_checkpoint(cells: Cells, prefix: str, epoch: int, symbol, arg_params: dict,
                        aux_params: dict) -> None:
    """`model.save_checkpoint` after unpacking the cells' fused weights."""
    for cell in _as_cells(cells):
        arg_params = cell.unpack_weights(arg_params)
    save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)


def load_rnn_checkpoint(cells: Cells, prefix: str, epoch: int) -> tuple:
    """`model.load_checkpoint`, then pack the cells' weights: (symbol, arg_params, aux)."""
    symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
    for cell in _as_cells(cells):
        arg_params = cell.pack_weights(arg_params)
    return symbol, arg_params, aux_params


def do_rnn_checkpoint(cells: Cells, prefix: str, period: int = 1) -> Callable:
    """An epoch-end callback saving an RNN checkpoint every `period` epochs."""
    period = int(max(1, period))

    def _callback(iter_no: int, sym=None, arg: Optional[dict] = None,
                  aux: Optional[dict] = None) -> None:
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)
    return _callback
