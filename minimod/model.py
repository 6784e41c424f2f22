"""Checkpoints and the parameter-update helpers Module is built from (MXNet's `mx.model`).

`save_checkpoint`/`load_checkpoint`/`load_params` read and write MXNet's files
(`prefix-symbol.json`, `prefix-%04d.params` with `arg:`/`aux:` keys). The underscore helpers
keep MXNet's names and contracts because user subclasses of Module call them directly:
`_create_kvstore`, `_initialize_kvstore`, `_update_params_on_kvstore`, `_update_params`.
"""
from __future__ import annotations

import logging
import os
from collections import namedtuple

import numpy as np

from . import backend
from . import ndarray as nd
from . import symbol as sym
from .base import FileFormatError
from .context import cpu
from .kvstore import KVStore
from .kvstore import create as create_kvstore

__all__ = ["BatchEndParam", "save_checkpoint", "load_checkpoint", "load_params",
           "_create_kvstore", "_initialize_kvstore", "_update_params_on_kvstore",
           "_update_params"]

BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])


def _create_kvstore(kvstore, num_device: int, arg_params: dict):
    """(kvstore or None, update_on_kvstore) for Module's kvstore argument.

    A kvstore name on a single device gives no kvstore at all (nothing to aggregate), as in
    MXNet; 'local' with a parameter over 16M elements updates on the devices instead.
    """
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, KVStore) or hasattr(kvstore, "pushpull"):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None
        else:
            kv = create_kvstore(kvstore)
            if kvstore == "local" and arg_params:
                max_size = max(int(np.prod(p.shape)) for p in arg_params.values())
                if max_size > 1024 * 1024 * 16:
                    update_on_kvstore = False
    else:
        raise TypeError("kvstore must be a KVStore, a str or None, not %r" % (kvstore,))
    if kv is None:
        update_on_kvstore = False
    else:
        update_on_kvstore &= kv.is_capable(KVStore.OPTIMIZER)
    return kv, update_on_kvstore


def _initialize_kvstore(kvstore, param_arrays, arg_params, param_names, update_on_kvstore):
    """Put every parameter in the store; with update_on_kvstore (or several workers, which
    must all start from rank 0's values) also pull it back to the devices. One call for all
    keys, so a dist store broadcasts the whole model at once."""
    names = [param_names[idx] for idx in range(len(param_arrays))]
    if not names:
        return
    kvstore.init(names, [arg_params[name] for name in names])
    if update_on_kvstore or getattr(kvstore, "num_workers", 1) > 1:
        kvstore.pull(names, out=[list(devs) for devs in param_arrays])


def _update_params_on_kvstore(param_arrays, grad_arrays, kvstore, param_names):
    """Push every gradient list to the store (which updates) and pull the new weights back,
    all keys in one call (a dist store sends them as one flat buffer per dtype)."""
    keys, grads, outs = [], [], []
    for index, (arg_list, grad_list) in enumerate(zip(param_arrays, grad_arrays)):
        if grad_list[0] is None:
            continue
        keys.append(param_names[index])
        grads.append(grad_list)
        outs.append(arg_list)
    if keys:
        kvstore.pushpull(keys, grads, out=outs)


def _update_params(param_arrays, grad_arrays, updater, num_device, kvstore=None,
                   param_names=None):
    """Update each device's weights with the updater (after summing gradients in the kvstore).

    Updater keys are `index * num_device + device`, and each device is updated in one batched
    call `updater(indices, grads, weights)`.
    """
    updates = [[] for _ in range(num_device)]
    live = [i for i, grads in enumerate(grad_arrays) if grads[0] is not None]
    if kvstore and live:
        # sum, don't average: rescale_grad already divides by the batch size
        kvstore.pushpull([param_names[i] for i in live], [grad_arrays[i] for i in live])
    for index, (arg_list, grad_list) in enumerate(zip(param_arrays, grad_arrays)):
        if grad_list[0] is None:
            continue
        for k, (weight, grad) in enumerate(zip(arg_list, grad_list)):
            updates[k].append((index * num_device + k, grad, weight))
    for dev_updates in updates:
        if dev_updates:
            indices, grads, weights = zip(*dev_updates)
            with backend.device_scope(weights[0].context):  # kernels on the weights' device
                updater(list(indices), list(grads), list(weights))


def save_checkpoint(prefix: str, epoch: int, symbol, arg_params: dict, aux_params: dict,
                    remove_amp_cast: bool = True) -> None:
    """Write `prefix-symbol.json` (if symbol is given) and `prefix-%04d.params`.

    Each file is written to a temporary file in the same folder, flushed, fsynced and renamed
    over its target, so a crash at any moment leaves every file either the previous version or
    the new one, never a mix (tests/test_crash_safety.py kills a saving process to show it).
    """
    if symbol is not None:
        symbol.save("%s-symbol.json" % prefix, remove_amp_cast=remove_amp_cast)
    param_name = "%s-%04d.params" % (prefix, epoch)
    _save_param_dict(param_name, arg_params, aux_params)
    logging.info('Saved checkpoint to "%s"', param_name)


def _save_param_dict(fname: str, arg_params: dict, aux_params: dict) -> None:
    """Write parameters as MXNet does: CPU copies under `arg:NAME` and `aux:NAME` keys."""
    save_dict = {"arg:%s" % k: v.as_in_context(cpu()) for k, v in arg_params.items()}
    save_dict.update({"aux:%s" % k: v.as_in_context(cpu()) for k, v in aux_params.items()})
    nd.save(fname, save_dict)


def load_params(prefix: str, epoch: int):
    """(arg_params, aux_params) from `prefix-%04d.params`."""
    fname = "%s-%04d.params" % (prefix, epoch)
    if not os.path.exists(fname):
        raise FileFormatError("checkpoint parameters %r not found (was the checkpoint of epoch "
                              "%d saved under prefix %r?)" % (fname, epoch, prefix))
    save_dict = nd.load(fname)
    arg_params, aux_params = {}, {}
    if not save_dict:
        logging.warning("Params file '%s' is empty", fname)
        return arg_params, aux_params
    if isinstance(save_dict, list):
        raise FileFormatError("%r holds an unnamed list of arrays, not named parameters "
                              "('arg:NAME'/'aux:NAME' keys)" % fname)
    for key, value in save_dict.items():
        kind, _, name = key.partition(":")
        if kind == "arg":
            arg_params[name] = value
        elif kind == "aux":
            aux_params[name] = value
    return arg_params, aux_params


def load_checkpoint(prefix: str, epoch: int):
    """(symbol, arg_params, aux_params) from a checkpoint written by MXNet or minimod."""
    symbol = sym.load("%s-symbol.json" % prefix)
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params
