"""What every routine shares: `_result` (wrap a backend array, or write it into `out=`),
`_at_least_1d` (MXNet gives reductions over every axis shape (1,), never ()) and `recorded`
(under `autograd.record()`, the routine runs as its operator, which records itself; so does
a call with a keyword the routine does not take, which the operator then takes if it is one
of its parameters and refuses, naming them, if not: a misspelt `keepdims` is an error, as in
MXNet, not silently dropped).
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable

from ...profiler import RECORDER
from ...shape_semantics import is_np_shape
from .. import tape
from ..core import NDArray, wrap
from ..imperative import invoke, refuse_zero_size
from ..recorded import profiled_call


def recorded(op_name: str, variadic: bool = False) -> Callable:
    """Decorate a routine so that, while `autograd.record()` is on and an input carries a
    gradient, or when a keyword is not one of the routine's own, it runs as
    `mx.nd.<op_name>` (same arguments, same numbers; the operator records itself, and takes
    or refuses the keyword); otherwise the routine runs as written. `variadic`: the routine
    also takes its arrays as one list (`concat([a, b])`)."""
    def decorate(routine: Callable) -> Callable:
        known = {p.name for p in inspect.signature(routine).parameters.values()
                 if p.kind is not p.VAR_KEYWORD}

        @functools.wraps(routine)
        def call(*args, **kwargs):
            kwargs.pop("name", None)  # MXNet's imperative operators take a name and drop it
            if tape.tracked(*args, *kwargs.values()) or not known.issuperset(kwargs):
                if variadic and len(args) == 1 and isinstance(args[0], (list, tuple)):
                    args = tuple(args[0])
                return invoke(op_name, args, kwargs)
            if not is_np_shape():
                refuse_zero_size(op_name, _arrays_in(args, kwargs))
            if RECORDER.on and RECORDER.imperative:
                return profiled_call(op_name, routine, args, kwargs)
            return routine(*args, **kwargs)
        return call
    return decorate


def _arrays_in(args: tuple, kwargs: dict) -> list:
    """The NDArrays a routine was given, those inside a list argument included."""
    found = []
    for value in (*args, *kwargs.values()):
        items = value if isinstance(value, (list, tuple)) else (value,)
        found.extend(item for item in items if isinstance(item, NDArray))
    return found


def _result(data, like: NDArray, out: NDArray | None) -> NDArray:
    """Wrap backend array `data` on `like`'s context, or copy it into `out`."""
    if out is not None:
        out[:] = wrap(data, like.context)
        return out
    return wrap(data, like.context)


def _at_least_1d(data):
    return data.reshape((1,)) if data.ndim == 0 else data
