"""'dist_sync': synchronous data parallelism across processes (and machines) over MPI.

Start one process per worker with `mpiexec -n N python train.py`; each process trains on its
own shard of the data with `kvstore='dist_sync'`. Needs the `dist` extra (`pip install
minimod[dist]`: mpi4py and an MPI from PyPI).

MXNet runs parameter servers: workers push gradients, a server sums them, updates the weight
and workers pull it. Here every worker keeps a replica of the store instead: a push sums the
worker's devices, then sums across workers with one MPI allreduce, and the optimizer runs on
every replica with identical inputs, so replicas stay identical without a server. `init` takes
rank 0's value, as MXNet's servers do. Module already scales `rescale_grad` by
`1 / (batch_size * num_workers)` for dist_sync stores.
"""
from __future__ import annotations

import numpy as np

from .. import backend
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from .local import KVStore, _key_list

__all__ = ["DistKVStore", "create_dist"]

_SYNC_TYPES = ("dist_sync", "dist_device_sync", "dist_sync_device")


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError:
        raise MXNetError("kvstore 'dist_sync' needs mpi4py: pip install minimod[dist]") from None
    return MPI


class DistKVStore(KVStore):
    """A KVStore replicated on every MPI rank; pushes are summed across ranks (see above)."""

    def __init__(self, kv_type: str, comm=None):
        super().__init__("local" if kv_type == "dist_sync" else "device")
        self._dist_type = kv_type
        mpi = _mpi()
        self._mpi = mpi
        self._comm = comm if comm is not None else mpi.COMM_WORLD

    @property
    def type(self) -> str:
        return self._dist_type

    @property
    def rank(self) -> int:
        return self._comm.Get_rank()

    @property
    def num_workers(self) -> int:
        return self._comm.Get_size()

    def init(self, key, value) -> None:
        super().init(key, value)
        keys, _ = _key_list(key, value)
        for k in keys:  # every replica starts from rank 0's value
            self._allreduce(self._store[k], root_only=True)

    def _allreduce(self, arr: NDArray, root_only: bool = False) -> None:
        """Sum `arr` over all ranks in place (or, with root_only, replace it by rank 0's)."""
        if self.num_workers == 1:
            return
        host = np.ascontiguousarray(backend.asnumpy(arr._data))
        if root_only:
            self._comm.Bcast(host, root=0)
            total = host
        else:
            total = np.empty_like(host)
            self._comm.Allreduce(host, total, op=self._mpi.SUM)
        arr._data[...] = backend.to_context(total, arr.context)

    def push(self, key, value, priority: int = 0) -> None:
        keys, values = _key_list(key, value)
        for k, vals in zip(keys, values):
            merged = self._reduce(k, vals)
            self._allreduce(merged)
            stored = self._store[k]
            if self._updater is not None:
                self._updater(k, merged, stored)
            else:
                stored._data[...] = merged._data

    def _barrier(self) -> None:
        self._comm.Barrier()

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Every replica holds the same states; rank 0 writes them."""
        if self.rank == 0:
            super().save_optimizer_states(fname, dump_optimizer)
        self._barrier()


def create_dist(kind: str) -> DistKVStore:
    if kind not in _SYNC_TYPES:
        raise MXNetError("kvstore %r is not supported: minimod runs synchronous training "
                         "('dist_sync' or 'dist_device_sync')" % kind)
    return DistKVStore(kind)
