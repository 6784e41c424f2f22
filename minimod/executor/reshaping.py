"""`Executor.reshape`'s work: a new executor for new input shapes over the old one's arrays.

An argument, gradient or aux state keeps its array where its shape stays, becomes a view of
the first elements where it shrinks, and a new array where it grows (only with
`allow_up_sizing`), as in MXNet (`_resized`). The new plan is compiled with the old plan's
options and placement, and the new executor draws on the same memory pool.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..base import BindError
from ..ndarray.ndarray import NDArray
from ..passes import compile_graph, infer_graph_shapes
from .pool import zeros

__all__ = ["reshaped"]


def reshaped(exe, partial_shaping: bool, allow_up_sizing: bool, **kwargs):
    """A new executor of `exe`'s class for new input shapes, sharing its arrays and memory
    pool (the rules are `Executor.reshape`'s), its plan compiled with `exe`'s options."""
    plan = exe._plan
    unknown = [k for k in kwargs if k not in plan.arg_names]
    if unknown:
        raise BindError("reshape: %s are not arguments (arguments: %s)"
                        % (unknown, ", ".join(plan.arg_names)))
    fwd = exe._symbol._graph
    inferred = infer_graph_shapes(fwd, {k: tuple(v) for k, v in kwargs.items()})

    def resized(name, arr, nid, what, named):
        return _resized(name, arr, inferred[fwd.row_ptr[nid]], what,
                        named or partial_shaping, allow_up_sizing)

    args, grads = [], []
    for name, arr, grad, nid in zip(plan.arg_names, exe.arg_arrays, exe.grad_arrays,
                                    fwd.argument_ids()):
        args.append(resized(name, arr, nid, "argument", name in kwargs))
        grads.append(resized(name, grad, nid, "argument", name in kwargs))
    aux = [resized(name, arr, nid, "aux state", False)
           for name, arr, nid in zip(plan.aux_names, exe.aux_arrays, fwd.aux_ids())]
    shapes = {n: a.shape for n, a in zip(plan.arg_names + plan.aux_names, args + aux)}
    types = {n: a.dtype for n, a in zip(plan.arg_names + plan.aux_names, args + aux)}
    new_plan = compile_graph(fwd, shapes, types, plan.grad_req, plan.options, ctx=exe._ctx,
                             placement=plan.placement)
    new = type(exe)(exe._symbol, new_plan, exe._ctx, args, grads, aux, pool=exe._pool)
    new.flat_params = exe.flat_params
    return new


def _resized(name: str, arr, shape, what: str, may_change: bool,
             allow_up_sizing: bool) -> Optional[NDArray]:
    """`arr` itself, a view of it, or a new array for `shape` (see `Executor.reshape`)."""
    if arr is None or shape is None or None in shape or tuple(shape) == arr.shape:
        return arr
    if not may_change:
        raise BindError(
            "reshape: the shape of unspecified %s '%s' changed from %s to %s; pass "
            "partial_shaping=True if this is intended" % (what, name, arr.shape, tuple(shape)))
    size = int(np.prod(shape, dtype=np.int64))
    if size <= arr.size:
        return NDArray(arr._data.reshape(-1)[:size].reshape(shape), arr.context)
    if not allow_up_sizing:
        raise BindError(
            "reshape: new shape %s of %s '%s' is larger than %s; making the largest executor "
            "first and shrinking it is cheaper; pass allow_up_sizing=True to allocate new "
            "arrays" % (tuple(shape), what, name, arr.shape))
    return zeros(tuple(shape), arr.dtype, arr.context)
