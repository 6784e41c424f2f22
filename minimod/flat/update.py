"""`update_params`: Module.update through the flat buffers of an `UpdatePlan` (the one call
Module makes into the fast path), and the kvstore's flat copies of its stored weights."""
from __future__ import annotations

from dataclasses import dataclass

from .. import backend
from ..executor.flat_params import FlatParams
from ..kvstore import KVStore
from ..ndarray.ndarray import NDArray
from ..optimizer import Updater
from .plan import SharedBuffer, UpdatePlan
from .step import fused_update

__all__ = ["StoreCopy", "update_params"]

# the kinds of store that sum a whole buffer with the additions of per-key pushes ('nccl' adds
# in its own order; gradient compression works key by key)
_WHOLE_BUFFER_KINDS = ("local", "device", "dist_sync", "dist_device_sync")


def update_params(plan: UpdatePlan, kvstore, updater, update_on_kvstore: bool) -> bool:
    """Module.update over the buffers of `plan`, giving the numbers of MXNet's two ways
    (`_update_params_on_kvstore`, `_update_params`) bit for bit:

    - update on the kvstore: per buffer, the store sums the devices' gradients into its flat
      copy, its updater steps the copy's weights, and every device gets the new weights;
    - otherwise: per buffer, the store (if any) sums the gradients and gives every device the
      sum, then `updater` steps each device's buffer.

    Returns False, having done nothing, when the plan has no buffers, the store cannot sum
    whole buffers, or the optimizer is not one the fused step serves exactly
    (`Updater.flat_capable`).
    """
    if not plan.buffers:
        return False
    if kvstore is not None:
        if not (isinstance(kvstore, KVStore) and kvstore.kind in _WHOLE_BUFFER_KINDS
                and kvstore.compression is None):
            return False
        if update_on_kvstore:
            updater = kvstore.updater
    elif update_on_kvstore:
        return False
    if not isinstance(updater, Updater) or not updater.flat_capable(plan.float16):
        return False
    if update_on_kvstore:
        for buffer in plan.buffers:
            _pushpull(kvstore, updater, buffer)
        return True
    if kvstore is not None:
        for buffer in plan.buffers:
            kvstore.allreduce(buffer.names, buffer.grads)
    for part in plan.device_buffers:
        with part.flat.scope:  # the step runs on the buffer's device
            fused_update(updater, part.keys, part.flat)
    return True


@dataclass(frozen=True, eq=False)
class StoreCopy:
    """A kvstore's flat copy of one buffer's weights, what an update on the kvstore steps:
    the stored value of each of its names is a view of `flat`."""

    flat: FlatParams    # on the store's home device
    grad: NDArray       # flat.grad as an NDArray: where the devices' gradients are summed


def _pushpull(kvstore: KVStore, updater, buffer: SharedBuffer) -> None:
    """`kvstore.pushpull(names, grads, out=weights)` for every parameter of `buffer`, as whole
    buffers: one sum, one fused step of the store's copy, one copy back per device."""
    copy = _store_copy(kvstore, buffer)
    kvstore.sum_into(buffer.names, buffer.grads, copy.grad)
    with copy.flat.scope:
        fused_update(updater, buffer.names, copy.flat)
    for flat in buffer.copies:
        backend.copy_into(flat.weight, copy.flat.weight)


def _store_copy(kvstore: KVStore, buffer: SharedBuffer) -> StoreCopy:
    """The store's flat copy of `buffer`, made on first use and kept in
    `kvstore.flat_copies` (so the modules sharing a store, as buckets do, share it), with the
    stored value of every name a view of it (values stored before are moved in)."""
    like = buffer.copies[0]
    home = kvstore.home_of(like.ctx)
    key = (buffer.names, like.dtype.str, str(home))
    copy = kvstore.flat_copies.get(key)
    if copy is None:
        flat = FlatParams(buffer.names, like.shapes, like.dtype, home,
                          [True] * len(buffer.names))
        copy = kvstore.flat_copies[key] = StoreCopy(flat, NDArray(flat.grad, home))
    weights = copy.flat.weights
    for name in buffer.names:
        if kvstore.stored(name) is not weights[name]:
            kvstore.keep_in(name, weights[name])
    return copy
