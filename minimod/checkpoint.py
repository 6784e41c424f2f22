"""Checkpoint files in MXNet's formats, in one place.

A checkpoint of `prefix` at `epoch` is `prefix-symbol.json` (the graph) and `prefix-%04d.params`
(the parameters; Module adds `prefix-%04d.states` for the optimizer). A `.params` file is an
NDArray dict (ndarray/serialization.py writes the bytes) whose keys say what each array is:
`arg:NAME` for an argument (weight, bias ...), `aux:NAME` for an auxiliary state (BatchNorm's
moving mean ...). Files MXNet wrote load here and the other way round.

The functions `save_checkpoint`, `load_checkpoint` and `load_params` keep MXNet's names and
contracts; `mx.model` re-exports them (MXNet's module path). Module's `save_params` /
`load_params`, the checkpoint callbacks and the RNN checkpoint helpers use this module.
"""
from __future__ import annotations

import logging
import os

from . import ndarray as nd
from . import symbol as sym
from .base import FileFormatError
from .context import cpu

__all__ = ["save_checkpoint", "load_checkpoint", "load_params", "save_params", "split_params",
           "unprefixed", "symbol_file", "params_file", "states_file"]

_KINDS = ("arg", "aux")


def symbol_file(prefix: str) -> str:
    return "%s-symbol.json" % prefix


def params_file(prefix: str, epoch: int) -> str:
    return "%s-%04d.params" % (prefix, epoch)


def states_file(prefix: str, epoch: int) -> str:
    return "%s-%04d.states" % (prefix, epoch)


def unprefixed(key: str) -> str:
    """A `.params` key without its `arg:`/`aux:` prefix (other keys unchanged)."""
    kind, sep, name = key.partition(":")
    return name if sep and kind in _KINDS else key


def split_params(save_dict: dict, fname: str, strict: bool = False) -> tuple:
    """(arg_params, aux_params) from the NDArray dict of a `.params` file.

    A key with neither prefix is skipped, or with `strict` a ValueError naming the file (what
    Module.load_params does, as in MXNet).
    """
    arg_params, aux_params = {}, {}
    for key, value in save_dict.items():
        kind, _, name = key.partition(":")
        if kind == "arg":
            arg_params[name] = value
        elif kind == "aux":
            aux_params[name] = value
        elif strict:
            raise ValueError("Invalid param file %s: key %r has no arg:/aux: prefix"
                             % (fname, key))
    return arg_params, aux_params


def save_params(fname: str, arg_params: dict, aux_params: dict) -> None:
    """Write parameters as MXNet does: CPU copies under `arg:NAME` and `aux:NAME` keys."""
    save_dict = {"arg:%s" % k: v.as_in_context(cpu()) for k, v in arg_params.items()}
    save_dict.update({"aux:%s" % k: v.as_in_context(cpu()) for k, v in aux_params.items()})
    nd.save(fname, save_dict)


def save_checkpoint(prefix: str, epoch: int, symbol, arg_params: dict, aux_params: dict,
                    remove_amp_cast: bool = True) -> None:
    """Write `prefix-symbol.json` (if symbol is given) and `prefix-%04d.params`.

    Each file is written to a temporary file in the same folder, flushed, fsynced and renamed
    over its target, so a crash at any moment leaves every file either the previous version or
    the new one, never a mix (tests/test_crash_safety.py kills a saving process to show it).
    """
    if symbol is not None:
        symbol.save(symbol_file(prefix), remove_amp_cast=remove_amp_cast)
    param_name = params_file(prefix, epoch)
    save_params(param_name, arg_params, aux_params)
    logging.info('Saved checkpoint to "%s"', param_name)


def load_params(prefix: str, epoch: int):
    """(arg_params, aux_params) from `prefix-%04d.params`."""
    fname = params_file(prefix, epoch)
    if not os.path.exists(fname):
        raise FileFormatError("checkpoint parameters %r not found (was the checkpoint of epoch "
                              "%d saved under prefix %r?)" % (fname, epoch, prefix))
    save_dict = nd.load(fname)
    if not save_dict:
        logging.warning("Params file '%s' is empty", fname)
        return {}, {}
    if isinstance(save_dict, list):
        raise FileFormatError("%r holds an unnamed list of arrays, not named parameters "
                              "('arg:NAME'/'aux:NAME' keys)" % fname)
    return split_params(save_dict, fname)


def load_checkpoint(prefix: str, epoch: int):
    """(symbol, arg_params, aux_params) from a checkpoint written by MXNet or minimod."""
    symbol = sym.load(symbol_file(prefix))
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params
