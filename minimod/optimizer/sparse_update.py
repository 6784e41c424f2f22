"""The built-in optimizers on sparse weights, gradients and states, as MXNet 1.9.1 runs them.

MXNet's rule for a row-sparse gradient (each optimizer's `_sparse_form`; the cases checked
against MXNet in tests/optimizer/test_sparse_update.py): SGD and ccSGD with
`lazy_update=True` (their default) and Adam with `lazy_update=True` update only the rows the
gradient stores (the other rows keep their values and states, and get no weight decay);
AdaGrad does too, and takes no weight decay then (MXNet has no such kernel: refused here with
what to change); FTRL does when the weight is row-sparse as well. Every other case is the
dense update of the dense views.

The arrays are made writable dense buffers first: a dense array is its own, a row-sparse
one stores all its rows (`store_all_rows`, as MXNet requires of a row-sparse weight) and its
values array is the buffer, a csr one is densified and re-encoded after the update. A lazy
update is the optimizer's own dense update on the gathered rows of weight, gradient and
state, written back (`rows_of` / `put_rows`, which `Updater.update_rows` uses too).
"""
from __future__ import annotations

from typing import Any

from ..base import MXNetError
from ..ndarray.ndarray import NDArray, wrap
from ..ndarray.sparse import BaseSparseNDArray, RowSparseNDArray
from ..ndarray.update_rows import dense_buffer, put_rows, rows_of

__all__ = ["has_sparse", "update"]


def has_sparse(*items) -> bool:
    """Whether any array in `items` (arrays, or tuples and lists of them) is sparse."""
    for item in items:
        if isinstance(item, BaseSparseNDArray):
            return True
        if isinstance(item, (tuple, list)) and has_sparse(*item):
            return True
    return False


def _buffer(array, writebacks: list):
    """A writable dense NDArray standing for `array`, tuples and lists of them too (see the
    module docstring and `minimod.ndarray.update_rows`)."""
    if isinstance(array, (tuple, list)):
        return type(array)(_buffer(item, writebacks) for item in array)
    return dense_buffer(array, writebacks) if isinstance(array, NDArray) else array


def update(optimizer, index: Any, weight, grad, state) -> None:
    """`optimizer.update_multi_precision(index, weight, grad, state)` where some array is
    sparse (lists of indices as well)."""
    if isinstance(index, (list, tuple)):
        for args in zip(index, weight, grad, state):
            update(optimizer, *args)
        return
    writebacks: list = []
    w_buf, s_buf = _buffer(weight, writebacks), _buffer(state, writebacks)
    form = ""
    if isinstance(grad, RowSparseNDArray):
        optimizer._set_current_context(weight.context.device_id)
        form = optimizer._sparse_form(optimizer._get_wd(index), weight.stype)
        if form not in ("", "rows"):
            hint = "; pass lazy_update=False" if getattr(optimizer, "lazy_update", False) else ""
            raise MXNetError("%s on a row_sparse gradient: %s%s"
                             % (type(optimizer).__name__, form, hint))
    if form == "rows":
        rows = grad._aux[0]
        part_w, part_s = rows_of(w_buf, rows), rows_of(s_buf, rows)
        optimizer.update_multi_precision(index, part_w, wrap(grad._values, grad.context),
                                         part_s)
        put_rows(w_buf, part_w, rows)
        put_rows(s_buf, part_s, rows)
    else:
        dense_grad = wrap(grad._data, grad.context) if isinstance(grad, BaseSparseNDArray) \
            else grad
        optimizer.update_multi_precision(index, w_buf, dense_grad, s_buf)
    for array, dense in writebacks:
        array[:] = dense
