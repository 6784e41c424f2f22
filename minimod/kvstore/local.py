"""The single-process KVStore: 'local' (reduce on the CPU), 'device' (on the first device, by
peer copies between GPUs) and 'nccl' (NCCL all-reduce over the GPUs when it loads, else as
'device'; see `nccl.py`).

MXNet's per-key API: `init`, `push` (a list of values per key is summed; without an updater the
stored value is replaced by the sum, with one it is `updater(key, sum, stored)`), `pull`
(broadcast into one or many arrays), `pushpull`, `broadcast`, `set_optimizer` (updates happen
on the store), `set_gradient_compression` ('device' only, like MXNet), optimizer state I/O.
"""
from __future__ import annotations

from .. import backend
from ..base import MXNetError, atomic_write
from ..context import cpu
from ..ndarray.ndarray import NDArray
from .compression import create_compression

__all__ = ["KVStore"]


def _key_list(key, value):
    """Normalise (key, value) to parallel lists; a single key may take a list of values."""
    if isinstance(key, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(key):
            raise MXNetError("a list of %d keys needs a list of %d values" % (len(key), len(key)))
        keys, values = list(key), list(value)
    else:
        keys, values = [key], [value]
    kinds = {type(k) for k in keys}
    if len(kinds) > 1:
        raise MXNetError("inconsistent types of keys detected.")
    if not kinds <= {int, str} and not all(isinstance(k, (int, str)) for k in keys):
        raise MXNetError("kvstore keys must be int or str, got %r" % (keys,))
    return keys, [v if isinstance(v, (list, tuple)) else [v] for v in values]


class KVStore:
    """A key-value store that sums what is pushed and broadcasts what is pulled."""

    OPTIMIZER = "optimizer"

    def __init__(self, kv_type: str = "local", name: str = ""):
        self._type = kv_type
        self._name = name or kv_type
        self._store: dict = {}
        self._updater = None
        self._compression = None

    # ------------------------------------------------------------------ properties
    @property
    def type(self) -> str:
        """The type name the store was created with (`create('local_allreduce_cpu').type` is
        'local_allreduce_cpu', as in MXNet); `kind` says how it behaves."""
        return self._name

    @property
    def kind(self) -> str:
        """How the store sums: 'local' (on the CPU), 'device' (on the devices), 'nccl', or
        for several processes 'dist_sync' / 'dist_device_sync'."""
        return self._type

    @property
    def rank(self) -> int:
        return 0

    @property
    def num_workers(self) -> int:
        return 1

    def is_capable(self, capability: str) -> bool:
        if capability.lower() == KVStore.OPTIMIZER:
            return True
        raise ValueError("Unknown capability: %s" % capability)

    # ------------------------------------------------------------------ data
    def _home(self, value: NDArray):
        return cpu() if self._type == "local" else value.context

    def _nccl_reducer(self, contexts):
        """The NCCL reducer for these contexts when this is an 'nccl' store and NCCL fits them,
        else None (the copy-based path)."""
        if self._type != "nccl":
            return None
        from . import nccl
        if nccl.reduce_method(contexts) != "nccl":
            return None
        return nccl.get_reducer(contexts)

    def init(self, key, value) -> None:
        keys, values = _key_list(key, value)
        for k, vals in zip(keys, values):
            if k in self._store:
                raise MXNetError("duplicate init of key %r" % (k,))
            src = vals[0]
            home = self._home(src)
            self._store[k] = NDArray(backend.to_context(src._data, home, copy=True), home)

    def _stored(self, key) -> NDArray:
        try:
            return self._store[key]
        except KeyError:
            raise MXNetError("key %r has not been initialized in the kvstore" % (key,)) from None

    def _reduce(self, key, values: list) -> NDArray:
        stored = self._stored(key)
        home = stored.context
        xp = backend.xp_for(home)
        with backend.device_scope(home):  # every addition runs on the home device
            parts = [backend.to_context(v._data, home) for v in values]
            if self._compression is not None and len(parts) > 1:
                parts = [self._compression.compress(xp, key, i, p) for i, p in enumerate(parts)]
            total = xp.array(parts[0], copy=True)
            for part in parts[1:]:
                total += part
        return NDArray(total, home)

    def reduce_flat(self, flats: list) -> None:
        """Sum the gradient buffers of `FlatParams` laid out alike (one per device) and write
        the sum back into each: a whole model's gradients in one reduction per device, with
        the additions in the order per-key pushes make them. The per-key stored values are
        not touched (Module reduces this way only when the optimizer runs outside the store).
        """
        first = flats[0]
        reducer = self._nccl_reducer([flat.ctx for flat in flats])
        if reducer is not None:
            reducer.allreduce([flat.grad for flat in flats])
            return
        home = cpu() if self._type == "local" else first.ctx
        xp = backend.xp_for(home)
        key = (str(home), first.grad.shape, first.grad.dtype.str)
        sums = self.__dict__.setdefault("_flat_sums", {})
        total = sums.get(key)
        with backend.device_scope(home):
            if total is None:
                total = sums[key] = xp.empty(first.grad.shape, dtype=first.grad.dtype)
            backend.copy_into(total, first.grad)
            for flat in flats[1:]:
                total += backend.to_context(flat.grad, home)
        for flat in flats:
            backend.copy_into(flat.grad, total)

    def pushpull_flat(self, names: list, flats: list) -> None:
        """`pushpull(name, grads, out=weights)` for every parameter of `FlatParams` buffers laid
        out alike (one per device), as whole buffers: one reduction, one optimizer pass over
        the store's own flat copy of the weights, one copy back per device.

        The stored value of each name becomes a view of that flat copy (values already stored
        are moved into it), so `pull` and the optimizer states keep working per key.
        """
        first = flats[0]
        home = cpu() if self._type == "local" else first.ctx
        store = self._flat_store(names, first, home)
        total = store.grad
        reducer = self._nccl_reducer([flat.ctx for flat in flats])
        if reducer is not None:  # every device's gradient becomes the sum, on the GPUs
            reducer.allreduce([flat.grad for flat in flats])
        with backend.device_scope(home):
            backend.copy_into(total, first.grad)
            if reducer is None:
                for flat in flats[1:]:
                    total += backend.to_context(flat.grad, home)
            if self._updater is not None:
                self._updater.update_flat(names, store, [store.grads[n] for n in names],
                                          [store.weights[n] for n in names])
            else:
                store.weight[...] = total
        for flat in flats:
            backend.copy_into(flat.weight, store.weight)

    def _flat_store(self, names: list, like, home):
        from ..executor.executor import FlatParams  # a layout type only; no executor runs here
        stores = self.__dict__.setdefault("_flat_stores", {})
        key = (tuple(names), like.dtype.str, str(home))
        store = stores.get(key)
        if store is None:
            store = stores[key] = FlatParams(names, like.shapes, like.dtype, home,
                                             [True] * len(names))
            if store.names != list(names):
                raise MXNetError("pushpull_flat: names must come in FlatParams order")
        for name in names:
            view = store.weights[name]
            if self._stored(name) is not view:
                backend.copy_into(view._data, self._store[name]._data)
                self._store[name] = view
        return store

    def push(self, key, value, priority: int = 0) -> None:
        keys, values = _key_list(key, value)
        for k, vals in zip(keys, values):
            merged = self._reduce(k, vals)
            stored = self._store[k]
            with backend.device_scope(stored.context):
                if self._updater is not None:
                    self._updater(k, merged, stored)
                else:
                    stored._data[...] = merged._data

    def pull(self, key, out=None, priority: int = 0, ignore_sparse: bool = True) -> None:
        if out is None:
            raise MXNetError("pull needs `out` arrays to write into")
        keys, outs = _key_list(key, out)
        for k, targets in zip(keys, outs):
            stored = self._stored(k)
            for target in targets:
                if target.shape != stored.shape:
                    raise MXNetError("pull of key %r: out has shape %s, stored value %s"
                                     % (k, target.shape, stored.shape))
                backend.copy_into(target._data, stored._data)

    def pushpull(self, key, value, out=None, priority: int = 0) -> None:
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key, value, out, priority: int = 0) -> None:
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key, out=None, priority: int = 0, row_ids=None) -> None:
        self.pull(key, out, priority)

    # ------------------------------------------------------------------ updates
    def set_optimizer(self, optimizer) -> None:
        from ..optimizer import get_updater
        self._updater = get_updater(optimizer)

    def _set_updater(self, updater) -> None:
        self._updater = updater

    def set_gradient_compression(self, compression_params) -> None:
        if self._type == "local":
            raise MXNetError("Gradient compression is not supported for this type of kvstore")
        self._compression = create_compression(compression_params)

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        if self._updater is None:
            raise MXNetError("Cannot save states for distributed training" if "dist" in
                             self._type else "the kvstore has no optimizer to save states of")
        atomic_write(fname, self._updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname: str) -> None:
        if self._updater is None:
            raise MXNetError("the kvstore has no optimizer to load states into")
        from ..ndarray import serialization
        data = serialization.read_file(fname, "optimizer states")
        with serialization.naming_file(fname):
            self._updater.set_states(data)

    def _barrier(self) -> None:
        """All workers wait here (a no-op with one process)."""
