"""The optimizer kernels (`mx.nd.sgd_update` ...) on row-sparse and CSR arrays, as MXNet 1.9.1
runs them, and the row gathering that the optimizers' lazy updates share.

A kernel given a sparse array works on writable dense buffers: a dense array is its own, a
row-sparse one stores all its rows first (`store_all_rows`, as MXNet requires of a row-sparse
weight or state) and its values array is the buffer, a csr one is densified and re-encoded
after. A lazy update (`lazy` below: the kernel's rule, checked against MXNet 1.9.1 in
tests/test_update_kernels_sparse.py) runs the kernel's dense step on the gradient's stored rows
of weight, gradient and states, gathered and written back (`rows_of` / `put_rows`); the other
rows keep their values and states and get no weight decay. Otherwise the step runs on the
whole buffers, the gradient's dense view included. The arrays are told apart by their
`stype`, so this module needs none of the sparse classes.
"""
from __future__ import annotations

from .. import backend
from .ndarray import NDArray, wrap

__all__ = ["rows_of", "put_rows", "dense_buffer", "run_sparse", "lazy_rows"]


def rows_of(state, rows):
    """A copy of rows `rows` (backend int64) of every array in `state` (an NDArray, a tuple or
    list of them, or None)."""
    if isinstance(state, NDArray):
        with backend.device_scope(state.context):  # take: faster than fancy indexing
            return NDArray(backend.array_module_of(state._data).take(state._data, rows, axis=0),
                           state.context)
    if isinstance(state, (tuple, list)):
        return type(state)(rows_of(item, rows) for item in state)
    return state


def put_rows(state, part, rows) -> None:
    """Write the rows `rows_of` took back into `state`."""
    if isinstance(state, NDArray):
        with backend.device_scope(state.context):
            state._data[rows] = part._data
    elif isinstance(state, (tuple, list)):
        for item, item_part in zip(state, part):
            put_rows(item, item_part, rows)


def lazy_rows(rule: str, weight, grad, states, lazy_update: bool) -> bool:
    """Whether MXNet's kernel updates only the gradient's rows, by the kernel's `rule`:
    "grad" (sgd_update, sparse adagrad_update) when the gradient is row-sparse and
    lazy_update; "states" (sgd_mom_update, adam_update) when besides the states have the
    weight's storage type; "all" (ftrl_update) when weight, gradient and states are all
    row-sparse, whatever lazy_update."""
    if grad.stype != "row_sparse":
        return False
    if rule == "all":
        return all(a.stype == "row_sparse" for a in (weight,) + tuple(states))
    if not lazy_update:
        return False
    return rule == "grad" or (weight.stype in ("default", "row_sparse")
                              and all(s.stype == weight.stype for s in states))


def dense_buffer(array, writebacks: list):
    """A writable dense NDArray standing for `array` (see the module docstring); tuples and
    lists of arrays (an optimizer's state) give the same of buffers, None stays None."""
    if isinstance(array, (tuple, list)):
        return type(array)(dense_buffer(item, writebacks) for item in array)
    stype = getattr(array, "stype", "default")
    if stype == "row_sparse":
        return wrap(array.store_all_rows(), array.context)
    if stype == "csr":  # a fresh dense array, re-encoded after
        dense = wrap(array._to_dense(), array.context)
        writebacks.append((array, dense))
        return dense
    return array


def run_sparse(weight, grad, states, lazy: bool, step) -> None:
    """`step(w, g, states)` (NDArrays; w and states change in place) on the buffers of
    `weight`, `grad` and `states` (an array, a tuple or list of them, or None), on the
    gradient's rows when `lazy` (see the module docstring)."""
    writebacks: list = []
    w_buf, s_buf = dense_buffer(weight, writebacks), dense_buffer(states, writebacks)
    if lazy:
        rows = grad._aux[0]
        part_w, part_s = rows_of(w_buf, rows), rows_of(s_buf, rows)
        step(part_w, wrap(grad._values, grad.context), part_s)
        put_rows(w_buf, part_w, rows)
        put_rows(s_buf, part_s, rows)
    else:
        step(w_buf, grad if grad.stype == "default" else wrap(grad._data, grad.context), s_buf)
    for array, dense in writebacks:
        array[:] = dense
