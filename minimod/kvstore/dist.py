"""'dist_sync': synchronous data parallelism across processes (and machines) over MPI.

Start one process per worker, e.g. `python -m minimod.launch -n 2 -- python train.py` (or
`mpiexec -n 2 python -m mpi4py train.py`); each process trains on its own shard of the data
with `kvstore='dist_sync'`. Needs the `dist` extra (`pip install minimod[dist]`: mpi4py and an
MPI from PyPI).

MXNet runs parameter servers: workers push gradients, a server sums them, updates the weight
and workers pull it. Here every worker keeps a replica of the store instead: a push sums the
worker's devices, then sums across workers with MPI allreduce, and the optimizer runs on every
replica with identical inputs, so the replicas stay identical without a server. `init` takes
rank 0's value, as MXNet's servers do. Module scales `rescale_grad` by
`1 / (batch_size * num_workers)` for dist_sync stores, as MXNet does.

A push (or pushpull) of a list of keys, which is what Module does once per step, packs every
gradient into one preallocated flat buffer per dtype and runs one allreduce per buffer; the
optimizer then updates every key in one batched call. Module's fast update (`minimod.flat`)
hands over buffers already flat: `sum_into` and `allreduce` sum a worker's devices, then run
one allreduce of the buffer. 'dist_device_sync' reduces a worker's devices on the first device
and stages the flat buffer through host memory for MPI, unless the MPI is CUDA-aware
(`MPI.Query_cuda_support()`, or `MINIMOD_MPI_CUDA_AWARE=1` to force it).

Every collective a store runs is counted in `stats` (calls, bytes, seconds) and recorded in
`PROGRESS`, which `python -m minimod.launch` reports when it has to end a stalled job.
"""
from __future__ import annotations

import os
import time
from collections.abc import Sequence

import numpy as np

from .. import backend
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from . import dist_sparse
from .agreement import describe_difference, optimizer_settings
from .local import KVStore, _key_list

__all__ = ["DistKVStore", "create_dist", "worker_rank", "PROGRESS"]

_SYNC_TYPES = ("dist_sync", "dist_device_sync")
_WORLD = {"rank": 0, "size": 1}



class _Progress:
    """Which kvstore collective this process is in (or last finished), for the launcher."""

    __slots__ = ("count", "op", "entered", "done")

    def __init__(self) -> None:
        self.count = 0          # collectives started so far
        self.op = None          # name of the last one started
        self.entered = None     # time.time() it was entered, None once it finished
        self.done = None        # time.time() the last one finished

    def snapshot(self) -> dict:
        return {"count": self.count, "op": self.op, "entered": self.entered, "done": self.done}


PROGRESS = _Progress()


def worker_rank() -> int:
    """The rank of this process in the last dist kvstore created here (0 if none was).

    Epoch-end checkpoint callbacks write only where this is 0.
    """
    return _WORLD["rank"]


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError:
        raise MXNetError("kvstore 'dist_sync' needs mpi4py: pip install minimod[dist]") from None
    return MPI


def _cuda_aware(mpi) -> bool:
    forced = os.environ.get("MINIMOD_MPI_CUDA_AWARE")
    if forced is not None:
        return forced.strip().lower() in ("1", "true", "yes", "on")
    query = getattr(mpi, "Query_cuda_support", None)
    if query is None:
        return False
    try:
        return bool(query())
    except Exception:  # an MPI without the MPIX extension
        return False


class _Group:
    """The keys of one (dtype, home device) inside a packing plan, and their flat buffers."""

    def __init__(self, dtype, ctx, staged: bool) -> None:
        self.dtype = np.dtype(dtype)
        self.ctx = ctx
        self.keys: list = []
        self.slices: list = []     # (start, stop, shape) per key
        self.size = 0
        self.staged = staged
        self.flat = None           # on ctx (NumPy for CPU homes)
        self.host = None           # the host copy MPI works on when staged

    def add(self, key, shape) -> None:
        n = int(np.prod(shape, dtype=np.int64))
        self.keys.append(key)
        self.slices.append((self.size, self.size + n, tuple(shape)))
        self.size += n

    def allocate(self) -> None:
        xp = backend.xp_for(self.ctx)
        with backend.device_scope(self.ctx):
            self.flat = xp.empty((max(self.size, 1),), dtype=self.dtype)
        if self.staged:
            self.host = np.empty((max(self.size, 1),), dtype=self.dtype)

    def view(self, i: int):
        start, stop, shape = self.slices[i]
        return self.flat[start:stop].reshape(shape)


class DistKVStore(KVStore):
    """A KVStore replicated on every MPI rank; pushes are summed across ranks (see above)."""

    def __init__(self, kv_type: str, comm=None):
        super().__init__("local" if kv_type == "dist_sync" else "device")
        self._dist_type = kv_type
        mpi = _mpi()
        self._mpi = mpi
        self._comm = comm if comm is not None else mpi.COMM_WORLD
        self._rank = self._comm.Get_rank()
        self._size = self._comm.Get_size()
        self._cuda_aware_mpi = _cuda_aware(mpi)
        self._plans: dict = {}
        self._staging: dict = {}  # sum_into's host arrays for MPI, by buffer
        self.stats = {"allreduce_calls": 0, "allreduce_bytes": 0, "allreduce_s": 0.0,
                      "bcast_calls": 0, "barrier_calls": 0}
        _WORLD.update(rank=self._rank, size=self._size)

    @property
    def type(self) -> str:
        return self._dist_type

    @property
    def kind(self) -> str:
        return self._dist_type

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def num_workers(self) -> int:
        return self._size

    # ------------------------------------------------------------------ collectives
    def _collective(self, op: str, fn, *args):
        PROGRESS.count += 1
        PROGRESS.op = op
        PROGRESS.entered = time.time()
        try:
            return fn(*args)
        finally:
            PROGRESS.entered = None
            PROGRESS.done = time.time()

    def _agree(self, what: str, mine, hint: str = "the same keys, shapes and dtypes") -> None:
        """Check that every rank passes the same `mine`; all ranks raise the same error if not."""
        if self._size == 1:
            return
        every = self._collective("allgather(%s)" % what, self._comm.allgather, mine)
        for rank, theirs in enumerate(every):
            if theirs != every[0]:
                raise MXNetError(
                    "dist kvstore %s: rank %d passes %s but rank 0 passes %s; every worker "
                    "must make the same calls with %s"
                    % (what, rank, describe_difference(theirs, every[0]),
                       describe_difference(every[0], theirs), hint))

    def _plan(self, keys: list) -> list:
        """The packing plan (list of _Group) for this list of keys, made once and reused."""
        sig = tuple(keys)
        plan = self._plans.get(sig)
        if plan is not None:
            return plan
        if len(set(keys)) != len(keys):
            raise MXNetError("dist kvstore: key list %r names a key twice" % (keys,))
        groups: dict = {}
        layout = []
        for k in keys:
            stored = self.stored(k)
            ctx = stored.context
            dtype = np.dtype(stored.dtype).name
            gkey = (dtype, ctx.device_typeid, ctx.device_id)
            group = groups.get(gkey)
            if group is None:
                staged = self._type == "device" and not (
                    self._cuda_aware_mpi and ctx.device_typeid == 2)
                group = groups[gkey] = _Group(stored.dtype, ctx, staged)
            group.add(k, stored.shape)
            layout.append((k, tuple(stored.shape), dtype))
        self._agree("key layout", layout)
        plan = list(groups.values())
        for group in plan:
            group.allocate()
        self._plans[sig] = plan
        return plan

    def _sum_groups(self, plan: list, bcast: bool = False) -> None:
        """Allreduce (or broadcast from rank 0) every group's flat buffer in place."""
        if self._size == 1:
            return
        for group in plan:
            self._sum_buffer(group.flat, group.ctx, group.host if group.staged else None, bcast)

    def _sum_buffer(self, flat, ctx, host, bcast: bool = False) -> None:
        """Allreduce `flat` (an array on `ctx`) in place over all ranks, through the host
        array `host` when one is given (staging), else directly; or broadcast rank 0's."""
        if host is not None:
            np.copyto(host, backend.asnumpy(flat))
            buf = host
        else:
            if ctx.device_typeid == 2:
                backend.synchronize(ctx)  # CUDA-aware MPI reads device memory
            buf = flat
        if bcast:
            self.stats["bcast_calls"] += 1
            self._collective("bcast", self._comm.Bcast, buf, 0)
        else:
            self._allreduce(buf)
        if host is not None:
            flat[...] = backend.to_context(host, ctx)

    def _allreduce(self, buf, what: str = "allreduce") -> None:
        """Sum `buf` (a host array, or a device one for a CUDA-aware MPI) over every rank in
        place, counted in `stats`."""
        t0 = time.perf_counter()
        self._collective(what, self._comm.Allreduce, self._mpi.IN_PLACE, buf, self._mpi.SUM)
        self.stats["allreduce_s"] += time.perf_counter() - t0
        self.stats["allreduce_calls"] += 1
        self.stats["allreduce_bytes"] += buf.nbytes

    def sum_into(self, keys: Sequence, arrays: Sequence, total: NDArray) -> None:
        """The sum of a worker's devices (`KVStore.sum_into`), then over all workers in one
        allreduce of `total`."""
        super().sum_into(keys, arrays, total)
        if self._size > 1:
            self._sum_buffer(total._data, total.context, self._host_for(keys, total))

    def _host_for(self, keys: Sequence, total: NDArray):
        """The host array MPI sums `total` through, or None when MPI reads it in place; made
        on first sight of a buffer, when every worker checks that it holds the same keys."""
        home, data = total.context, total._data
        sig = (tuple(keys), str(home), data.shape, data.dtype.str)
        host = self._staging.get(sig, False)
        if host is False:
            self._agree("flat buffer layout", [list(keys), data.dtype.name, int(data.size)])
            staged = self._type == "device" and not (
                self._cuda_aware_mpi and home.device_typeid == 2)
            host = np.empty(data.shape, dtype=data.dtype) if staged else None
            self._staging[sig] = host
        return host

    # ------------------------------------------------------------------ data
    def init(self, key, value) -> None:
        keys, values = _key_list(key, value)
        dist_sparse.refuse_csr("init", values)
        for k in keys:
            if k in self._store:
                raise MXNetError("duplicate init of key %r" % (k,))
        super().init(key, value)
        if self._size == 1:
            return
        # every replica starts from rank 0's values: one broadcast per dtype (per key for a
        # row-sparse one)
        keys = dist_sparse.init_row_sparse(self, keys)
        if not keys:
            return
        plan = self._plan(keys)
        for group in plan:
            for i, k in enumerate(group.keys):
                group.view(i)[...] = self._store[k]._data
        self._sum_groups(plan, bcast=True)
        for group in plan:
            for i, k in enumerate(group.keys):
                self._store[k]._data[...] = group.view(i)

    def push(self, key, value, priority: int = 0) -> None:
        keys, values = _key_list(key, value)
        dist_sparse.refuse_csr("push", values)
        if any(self.stored(k).stype == "row_sparse" for k in keys):
            keys, values = dist_sparse.push_row_sparse(self, keys, values)
            if not keys:
                return
        plan = self._plan(keys)
        by_key = dict(zip(keys, values))
        for group in plan:
            for i, k in enumerate(group.keys):
                self._sum_into(group.view(i), k, by_key[k], group.ctx)
        self._sum_groups(plan)
        merged_keys, merged, stored = [], [], []
        for group in plan:
            for i, k in enumerate(group.keys):
                merged_keys.append(k)
                merged.append(NDArray(group.view(i), group.ctx))
                stored.append(self._store[k])
        if self._updater is not None:
            self._updater(merged_keys, merged, stored)  # one batched update on every replica
        else:
            for grad, target in zip(merged, stored):
                target._data[...] = grad._data

    def row_union(self, rows):
        """The sorted union of every worker's `rows` (host int64): one allgather."""
        if self._size == 1:
            return rows
        every = self._collective("allgather(rows)", self._comm.allgather, rows)
        return np.unique(np.concatenate(every))

    def push_rows(self, key, value: list, rows) -> None:
        """A lazy row-sparse update (`minimod.module.sparse_grads`) on every replica: the
        gradients summed across devices and workers as `push` sums them, the updater applied
        to the union of every worker's rows."""
        plan = self._plan([key])
        self._sum_into(plan[0].view(0), key, value, plan[0].ctx)
        self._sum_groups(plan)
        self._update_rows(key, NDArray(plan[0].view(0), plan[0].ctx), self.row_union(rows))

    def _sum_into(self, slot, key, vals: list, home) -> None:
        """Sum this worker's values of `key` (one per device) into `slot` on `home`."""
        shape = self._store[key].shape
        for v in vals:
            if v.shape != shape:
                raise MXNetError("push of key %r: value has shape %s, stored value %s"
                                 % (key, v.shape, shape))
        if self._compression is not None:
            merged = self._reduce(key, vals)._data   # compresses per device when several
            xp = backend.xp_for(home)
            slot[...] = self._compression.compress(xp, key, "worker", merged)
            return
        slot[...] = backend.to_context(vals[0]._data, home)
        for v in vals[1:]:
            slot += backend.to_context(v._data, home)

    # ------------------------------------------------------------------ updates
    def set_optimizer(self, optimizer) -> None:
        """Every replica runs `optimizer`; its settings must be the same on every rank."""
        self._agree("set_optimizer", optimizer_settings(optimizer),
                    "the same optimizer settings")
        super().set_optimizer(optimizer)

    def set_gradient_compression(self, compression_params) -> None:
        """'2bit' compression of each worker's summed gradient (and per device), as MXNet."""
        from .compression import create_compression
        self._compression = create_compression(compression_params)

    def barrier(self) -> None:
        """Every worker waits here until all have arrived."""
        self.stats["barrier_calls"] += 1
        self._collective("barrier", self._comm.Barrier)

    def _barrier(self) -> None:
        self.barrier()

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Collective: every replica holds the same states; rank 0 writes them, all wait."""
        error = None
        if self._rank == 0:
            try:
                super().save_optimizer_states(fname, dump_optimizer)
            except MXNetError as err:
                error = str(err)
        if self._size > 1:
            error = self._collective("bcast(save_optimizer_states)", self._comm.bcast, error, 0)
        if error is not None:
            raise MXNetError(error)


def create_dist(kind: str) -> DistKVStore:
    """The dist store of type `kind` ('dist' and 'dist_sync_device' are MXNet's aliases)."""
    kind = {"dist": "dist_sync", "dist_sync_device": "dist_device_sync"}.get(kind, kind)
    if kind not in _SYNC_TYPES:
        if "async" in kind:
            raise MXNetError("kvstore %r is not supported: minimod trains synchronously over "
                             "MPI; use 'dist_sync' (or 'dist_device_sync' for GPU arrays)" % kind)
        raise MXNetError("unknown kvstore type %r: use 'dist_sync' (or 'dist_device_sync' "
                         "for GPU arrays)" % kind)
    return DistKVStore(kind)
