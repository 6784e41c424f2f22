"""Row-sparse values in a 'dist_sync' store (minimod/kvstore/dist.py), as MXNet's servers keep
them.

`init` of a row-sparse value takes rank 0's rows and values (one broadcast). A push whose
values are all row-sparse sums each worker's devices (`sparse_values.sum_row_sparse`), then
sums across the workers on the union of their rows: one allgather of the row ids
(`DistKVStore.row_union`) and one allreduce of those rows' values, zeros where a worker has
no such row. Every replica's optimizer then updates exactly those rows (the lazy update
MXNet's servers run), and `pull` / `row_sparse_pull` read the replica as in a local store.
CSR values, which MXNet's stores do not take either, are refused.
"""
from __future__ import annotations

import numpy as np

from .. import backend
from ..base import MXNetError
from ..ndarray.sparse import RowSparseNDArray, codec
from .sparse_values import all_row_sparse, sum_row_sparse

__all__ = ["refuse_csr", "init_row_sparse", "push_row_sparse", "broadcast_rows", "sum_rows"]


def refuse_csr(what: str, values) -> None:
    """A dist store's refusal of CSR values (lists of values per key)."""
    if any(v.stype == "csr" for group in values for v in group):
        raise MXNetError("%s: a kvstore takes dense or row_sparse values, not csr (MXNet's "
                         "neither); convert with tostype('default')" % what)


def broadcast_rows(store, value: RowSparseNDArray) -> None:
    """Make the stored row-sparse `value` rank 0's on every rank (its rows and values)."""
    parts = None
    if store.rank == 0:
        parts = (backend.asnumpy(value._values), backend.asnumpy(value._aux[0]))
    store.stats["bcast_calls"] += 1
    values, rows = store._collective("bcast(row_sparse)", store._comm.bcast, parts, 0)
    ctx = value.context
    with backend.device_scope(ctx):
        value._set_components(backend.to_context(values, ctx),
                              (backend.to_context(rows, ctx),), value.shape)


def sum_rows(store, local: RowSparseNDArray) -> RowSparseNDArray:
    """The sum over every worker of their row-sparse `local` sums, on the union of their rows
    (see the module docstring)."""
    if store.num_workers == 1:
        return local
    rows = store.row_union(backend.asnumpy(local._aux[0]).astype(codec.INDEX))
    ctx, xp = local.context, local._xp
    with backend.device_scope(ctx):
        part = codec.rsp_gather(xp, local._values, local._aux[0], backend.to_context(rows, ctx),
                                local.shape[1:])
    host = np.ascontiguousarray(backend.asnumpy(part))
    store._allreduce(host, "allreduce(rows)")
    with backend.device_scope(ctx):
        return local._like(backend.to_context(host, ctx), (backend.to_context(rows, ctx),))


def init_row_sparse(store, keys: list) -> list:
    """After a local init of `keys`: the row-sparse ones made rank 0's on every rank; returns
    the others."""
    sparse = [k for k in keys if store.stored(k).stype == "row_sparse"]
    store._agree("row_sparse keys of init", sparse)
    for k in sparse:
        broadcast_rows(store, store.stored(k))
    return [k for k in keys if k not in sparse]


def push_row_sparse(store, keys: list, values: list) -> tuple:
    """Push the keys whose values are all row-sparse (`sum_rows`, then `_store_sum`, as a local
    push); returns the other keys and their values."""
    sparse = [i for i, vals in enumerate(values) if all_row_sparse(vals)]
    store._agree("row_sparse keys of push", [keys[i] for i in sparse])
    if sparse and store.compression is not None:
        raise MXNetError("push: gradient compression takes dense values, not row_sparse")
    for i in sparse:
        home = store.stored(keys[i]).context
        store._store_sum(keys[i], sum_rows(store, sum_row_sparse(values[i], home)))
    rest = [i for i in range(len(keys)) if i not in sparse]
    return [keys[i] for i in rest], [values[i] for i in rest]
