"""The parameter-update helpers Module is built from, with MXNet's `mx.model` names and
contracts (user subclasses of Module call them directly; model.py re-exports them):

- `_create_kvstore` picks the kvstore (or none) and whether it runs the optimizer;
- `_initialize_kvstore` puts every parameter in it (and broadcasts rank 0's values);
- a step then updates one of two ways: `_update_params_on_kvstore` (push gradients, the store
  updates, pull weights) or `_update_params` (sum gradients in the store, if any, and run the
  updater on each device).
"""
from __future__ import annotations

import os

import numpy as np

from .. import backend
from ..kvstore import KVStoreBase
from ..kvstore import create as create_kvstore


def _create_kvstore(kvstore, num_device: int, arg_params: dict):
    """(kvstore or None, update_on_kvstore) for Module's kvstore argument.

    A kvstore name on a single device gives no kvstore at all (nothing to aggregate), as in
    MXNet; 'local' with a parameter over 16M elements updates on the devices instead.
    """
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, KVStoreBase) or hasattr(kvstore, "pushpull"):
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
        update_on_kvstore &= kv.is_capable(KVStoreBase.OPTIMIZER)
    return kv, update_on_kvstore


def _initialize_kvstore(kvstore, param_arrays, arg_params, param_names, update_on_kvstore):
    """Put every parameter in the store; with update_on_kvstore (or several workers, which
    must all start from rank 0's values) also pull it back to the devices. One call for all
    keys, so a dist store broadcasts the whole model at once."""
    names = [param_names[idx] for idx in range(len(param_arrays))]
    if not names:
        return
    if not hasattr(kvstore, "init"):  # a KVStoreBase written in Python: rank 0's values
        for name, devs in zip(names, param_arrays):
            kvstore.broadcast(name, arg_params[name], out=list(devs))
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
    call `updater(indices, grads, weights)`, or, where its parameters are spread over several
    devices (model parallelism, `group2ctx`), one call per device they live on.
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
        by_context: dict = {}
        for update in dev_updates:
            by_context.setdefault(update[2].context, []).append(update)
        for ctx, members in by_context.items():
            indices, grads, weights = zip(*members)
            with backend.device_scope(ctx):  # kernels on the weights' device
                updater(list(indices), list(grads), list(weights))
