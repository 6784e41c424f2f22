"""The single-process KVStore: 'local' (reduce on the CPU), 'device' (on the first device, by
peer copies between GPUs) and 'nccl' (NCCL all-reduce over the GPUs when it loads, else as
'device'; see `nccl.py`).

MXNet's per-key API: `init`, `push` (a list of values per key is summed; without an updater the
stored value is replaced by the sum, with one it is `updater(key, sum, stored)`), `pull`
(broadcast into one or many arrays), `pushpull`, `broadcast`, `set_optimizer` (updates happen
on the store), `set_gradient_compression` ('device' only, like MXNet), optimizer state I/O.

Beyond MXNet's API, what the fast update (`minimod.flat`) asks of a store: `allreduce` and
`sum_into` sum whole arrays over the devices (and, for a dist store, over the workers), and
`stored`, `keep_in` and `flat_copies` let it keep many keys' stored values in one flat copy.
"""
from __future__ import annotations

from collections.abc import Sequence

from .. import backend
from ..base import MXNetError, atomic_write
from ..context import cpu
from ..ndarray.ndarray import NDArray
from .base import KVStoreBase
from .compression import create_compression
from .sparse_values import all_row_sparse, check_row_sparse_out, pull_rows, sum_row_sparse

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


class KVStore(KVStoreBase):
    """A key-value store that sums what is pushed and broadcasts what is pulled."""

    OPTIMIZER = "optimizer"

    def __init__(self, kv_type: str = "local", name: str = ""):
        self._type = kv_type
        self._name = name or kv_type
        self._store: dict = {}
        self._updater = None
        self._compression = None
        self._sums: dict = {}  # allreduce's totals, by (home, shape, dtype)
        self._key_type = None  # int or str, set by the first key seen
        #: the flat copies of stored values that `minimod.flat` keeps with this store, by
        #: (keys, dtype, home); the stored value of each of their keys is a view of one
        self.flat_copies: dict = {}

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

    @property
    def updater(self):
        """The Updater that pushes run (`set_optimizer`), or None: the store then keeps the
        sum of what is pushed."""
        return self._updater

    @property
    def compression(self):
        """The gradient compression (`set_gradient_compression`), or None."""
        return self._compression

    def is_capable(self, capability: str) -> bool:
        if capability.lower() == KVStore.OPTIMIZER:
            return True
        raise ValueError("Unknown capability: %s" % capability)

    # ------------------------------------------------------------------ data
    def home_of(self, ctx):
        """Where this store keeps and sums the values of arrays that live on `ctx`: the CPU
        for 'local', `ctx` itself otherwise."""
        return cpu() if self._type == "local" else ctx

    def _home(self, value: NDArray):
        return self.home_of(value.context)

    def _nccl_reducer(self, arrays: Sequence):
        """The NCCL reducer for the devices of `arrays` when this is an 'nccl' store and NCCL
        fits them, else None (the copy-based path)."""
        if self._type != "nccl":
            return None
        from . import nccl
        contexts = [a.context for a in arrays]
        if nccl.reduce_method(contexts) != "nccl":
            return None
        return nccl.get_reducer(contexts)

    def _keys(self, key, value):
        """`_key_list`, and MXNet's rule that one store takes int keys or str keys, not both."""
        keys, values = _key_list(key, value)
        kind = type(keys[0]) if keys else None
        if self._key_type is None:
            self._key_type = kind
        elif kind is not None and kind is not self._key_type:
            raise MXNetError("this kvstore has %s keys; %r is a %s (a store takes int keys or "
                             "str keys, not both)" % (self._key_type.__name__, keys[0],
                                                      kind.__name__))
        return keys, values

    def init(self, key, value) -> None:
        keys, values = self._keys(key, value)
        for k, vals in zip(keys, values):
            if k in self._store:
                raise MXNetError("duplicate init of key %r" % (k,))
            self._store[k] = vals[0].copyto(self._home(vals[0]))  # keeps its storage type

    def __contains__(self, key) -> bool:
        """Whether `key` has been initialised in the store."""
        return key in self._store

    def stored(self, key) -> NDArray:
        """The value the store holds for `key` (the array itself, not a copy)."""
        try:
            return self._store[key]
        except KeyError:
            raise MXNetError("key %r has not been initialized in the kvstore" % (key,)) from None

    def keep_in(self, key, array: NDArray) -> None:
        """Hold `key`'s value in `array` from now on (a view into a caller's buffer, of the
        stored shape), its current value copied there first."""
        stored = self.stored(key)
        if array.shape != stored.shape:
            raise MXNetError("keep_in: key %r is stored with shape %s, not %s"
                             % (key, stored.shape, array.shape))
        backend.copy_into(array._data, stored._data)
        self._store[key] = array

    def _reduce(self, key, values: list) -> NDArray:
        stored = self.stored(key)
        home = stored.context
        if all_row_sparse(values):
            return sum_row_sparse(values, home)
        xp = backend.xp_for(home)
        with backend.device_scope(home):  # every addition runs on the home device
            parts = [backend.to_context(v._data, home) for v in values]
            if self._compression is not None and len(parts) > 1:
                parts = [self._compression.compress(xp, key, i, p) for i, p in enumerate(parts)]
            total = xp.array(parts[0], copy=True)
            for part in parts[1:]:
                total += part
        return NDArray(total, home)

    def sum_into(self, keys: Sequence, arrays: Sequence, total: NDArray) -> None:
        """Write the sum of `arrays` into `total`: a whole buffer of keys in one reduction.

        `arrays` are NDArrays of one shape and dtype, one per device, each holding the values
        of `keys` end to end (a dist store checks that every worker names the same keys);
        `total` lives on `home_of` their device. The additions run in the order per-key pushes
        make them. An 'nccl' store whose reducer fits the devices sums with NCCL, and every
        device's array then holds the sum too."""
        first = arrays[0]
        reducer = self._nccl_reducer(arrays)
        if reducer is not None:
            reducer.allreduce([a._data for a in arrays])
            backend.copy_into(total._data, first._data)
            return
        home = total.context
        data = total._data
        with backend.device_scope(home):
            backend.copy_into(data, first._data)
            for array in arrays[1:]:
                data += backend.to_context(array._data, home)

    def allreduce(self, keys: Sequence, arrays: Sequence) -> None:
        """Sum `arrays` as `sum_into` does and write the sum back into every one of them."""
        reducer = self._nccl_reducer(arrays)
        if reducer is not None:
            reducer.allreduce([a._data for a in arrays])
            return
        first = arrays[0]
        home = self.home_of(first.context)
        key = (str(home), first.shape, first.dtype)
        total = self._sums.get(key)
        if total is None:
            xp = backend.xp_for(home)
            with backend.device_scope(home):
                total = NDArray(xp.empty(first.shape, dtype=first.dtype), home)
            self._sums[key] = total
        self.sum_into(keys, arrays, total)
        for array in arrays:
            backend.copy_into(array._data, total._data)

    def push(self, key, value, priority: int = 0) -> None:
        keys, values = self._keys(key, value)
        for k, vals in zip(keys, values):
            self._store_sum(k, self._reduce(k, vals))

    def _store_sum(self, key, merged: NDArray) -> None:
        """Take the summed push `merged` of `key`: the updater updates the stored value with it,
        or, without one, it replaces the stored value."""
        stored = self._store[key]
        with backend.device_scope(stored.context):
            if self._updater is not None:
                self._updater(key, merged, stored)
            else:
                merged.copyto(stored)

    def push_rows(self, key, value: list, rows) -> None:
        """Push the gradients `value` of one key whose update is MXNet's lazy row-sparse one
        (`minimod.module.sparse_grads`): summed as `push` sums them, then the updater updates
        only rows `rows` (host int64 indices) of the stored value."""
        self._update_rows(key, self._reduce(key, value), rows)

    def _update_rows(self, key, merged: NDArray, rows) -> None:
        """Store the summed gradient `merged` of `key`: the updater updates rows `rows` of the
        stored value (without an updater, the sum is stored as push stores it)."""
        stored = self._store[key]
        with backend.device_scope(stored.context):
            if self._updater is None:
                stored._data[...] = merged._data
            else:
                self._updater.update_rows(key, merged, stored,
                                          backend.to_context(rows, stored.context))

    def row_union(self, rows):
        """The rows `rows` (host int64, sorted) together with every other worker's: here, a
        store of one process, `rows` itself."""
        return rows

    def pull(self, key, out=None, priority: int = 0, ignore_sparse: bool = True) -> None:
        if out is None:
            raise MXNetError("pull needs `out` arrays to write into")
        keys, outs = self._keys(key, out)
        for k, targets in zip(keys, outs):
            stored = self.stored(k)
            for target in targets:
                if target.shape != stored.shape:
                    raise MXNetError("pull of key %r: out has shape %s, stored value %s"
                                     % (k, target.shape, stored.shape))
                if target.stype == "default":
                    backend.copy_into(target._data, stored._data)
                elif not ignore_sparse:  # MXNet skips sparse outs unless told otherwise
                    stored.copyto(target)

    def pushpull(self, key, value, out=None, priority: int = 0) -> None:
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key, value, out, priority: int = 0) -> None:
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key, out=None, priority: int = 0, row_ids=None) -> None:
        """Pull only the rows `row_ids` names (an NDArray of row numbers, or one per `out`
        array) into row-sparse `out` arrays (sparse_values.py)."""
        if out is None or row_ids is None:
            raise MXNetError("row_sparse_pull needs `out` arrays and the `row_ids` to pull")
        keys, outs = self._keys(key, out)
        ids = row_ids if isinstance(row_ids, (list, tuple)) else [row_ids]
        ids = [i for group in ids for i in (group if isinstance(group, (list, tuple))
                                             else [group])]
        targets = [t for ts in outs for t in ts]
        if len(ids) == 1:
            ids = ids * len(targets)
        if len(ids) != len(targets):
            raise MXNetError("row_sparse_pull: %d row_ids for %d out arrays"
                             % (len(ids), len(targets)))
        owners = [k for k, ts in zip(keys, outs) for _ in ts]
        for k, target, rows in zip(owners, targets, ids):
            check_row_sparse_out(k, target)
            stored = self.stored(k)
            if target.shape != stored.shape:
                raise MXNetError("row_sparse_pull of key %r: out has shape %s, stored value %s"
                                 % (k, target.shape, stored.shape))
            pull_rows(k, stored, target, rows)

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
