"""Row-sparse values in a KVStore, as MXNet's stores treat them.

* A value pushed as row-sparse arrays (every device's) is summed into one row-sparse array on
  the union of their rows, so that the optimizer on the store updates only those rows (MXNet's
  lazy update, `minimod.optimizer.sparse_update`); a mix of storage types sums densely.
* `pull` writes dense arrays; a row-sparse `out` is skipped unless `ignore_sparse=False`.
* `row_sparse_pull` writes the rows `row_ids` names of a row-sparse stored value into
  row-sparse `out` arrays only.
"""
from __future__ import annotations

import numpy as np

from .. import backend
from ..base import MXNetError
from ..ndarray.sparse import RowSparseNDArray

__all__ = ["all_row_sparse", "sum_row_sparse", "pull_rows", "check_row_sparse_out"]


def all_row_sparse(values) -> bool:
    return all(isinstance(v, RowSparseNDArray) for v in values)


def sum_row_sparse(values: list, home) -> RowSparseNDArray:
    """The sum of row-sparse `values` on `home`, stored row-sparse on the union of their rows."""
    total = values[0].copyto(home)
    for value in values[1:]:
        total += value.as_in_context(home)
    return total


def check_row_sparse_out(key, target) -> None:
    if not isinstance(target, RowSparseNDArray):
        raise MXNetError("row_sparse_pull of key %r: out must be a RowSparseNDArray, not "
                         "%s storage (use pull for dense arrays)" % (key, target.stype))


def pull_rows(key, stored, target: RowSparseNDArray, rows) -> None:
    """Write the rows `rows` (an NDArray of row numbers, repeats allowed) of the row-sparse
    stored value into row-sparse `target`, which then stores exactly those rows."""
    if not isinstance(stored, RowSparseNDArray):
        raise MXNetError("row_sparse_pull of key %r: the stored value is dense; init the key "
                         "with a row_sparse array (or pull it whole with pull)" % (key,))
    index = np.unique(backend.asnumpy(rows._data).astype(np.int64).ravel())
    if index.size and (index[0] < 0 or index[-1] >= stored.shape[0]):
        raise MXNetError("row_sparse_pull of key %r: a row id is outside [0, %d)"
                         % (key, stored.shape[0]))
    stored.retain(index).copyto(target)
