"""The built-in optimizers on sparse weights, gradients and states, as MXNet 1.9.1 runs them.

MXNet's rule for a row-sparse gradient (each optimizer's `_sparse_form`; the cases checked
against MXNet in tests/kvstore/test_sparse_values.py): SGD and ccSGD with
`lazy_update=True` (their default) and Adam with `lazy_update=True` update only the rows the
gradient stores (the other rows keep their values and states, and get no weight decay);
AdaGrad does too, and takes no weight decay then (MXNet has no such kernel: refused here with
what to change); FTRL does when the weight is row-sparse as well. Every other case is the
dense update of the dense views.

The update runs as `mx.nd`'s sparse kernels run (`minimod.ndarray.update_rows.run_sparse`):
on writable dense buffers of the arrays (a row-sparse one stores all its rows, as MXNet
requires of a row-sparse weight; a csr one is re-encoded after), a lazy update being the
optimizer's own dense update on the gathered rows of weight, gradient and state, written back
(`rows_of` / `put_rows`, which `Updater.update_rows` uses too).
"""
from __future__ import annotations

from typing import Any

from ..base import MXNetError
from ..ndarray.sparse import BaseSparseNDArray, RowSparseNDArray
from ..ndarray.update_rows import run_sparse

__all__ = ["has_sparse", "update"]


def has_sparse(*items) -> bool:
    """Whether any array in `items` (arrays, or tuples and lists of them) is sparse."""
    for item in items:
        if isinstance(item, BaseSparseNDArray):
            return True
        if isinstance(item, (tuple, list)) and has_sparse(*item):
            return True
    return False


def update(optimizer, index: Any, weight, grad, state) -> None:
    """`optimizer.update_multi_precision(index, weight, grad, state)` where some array is
    sparse (lists of indices as well), through `minimod.ndarray.update_rows.run_sparse`."""
    if isinstance(index, (list, tuple)):
        for args in zip(index, weight, grad, state):
            update(optimizer, *args)
        return
    form = ""
    if isinstance(grad, RowSparseNDArray):
        optimizer._set_current_context(weight.context.device_id)
        form = optimizer._sparse_form(optimizer._get_wd(index), weight.stype)
        if form not in ("", "rows"):
            hint = "; pass lazy_update=False" if getattr(optimizer, "lazy_update", False) else ""
            raise MXNetError("%s on a row_sparse gradient: %s%s"
                             % (type(optimizer).__name__, form, hint))
    run_sparse(weight, grad, state, form == "rows",
               lambda w, g, s: optimizer.update_multi_precision(index, w, g, s))
