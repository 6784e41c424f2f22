"""NDArray's own arithmetic, indexing and copies under `autograd.record()`.

Outside `record()` (or on arrays that carry no gradient) NDArray computes on its backend array
directly, and nothing here runs. On an array that carries a gradient, each such call goes on the
tape (`tape.py`) instead: the arithmetic as the operator MXNet records for it (`x * 2` is
`_mul_scalar`, `x + y` is `broadcast_add`, `x.reshape(...)` is `Reshape`), so it computes and
differentiates exactly as that operator does in a bound graph; indexing and device copies, which
MXNet records as many different operators, as one node each whose backward scatters (or copies)
the head gradient back.

Writing into an array that is on the tape (`x += 1`, `x[:] = y` while recording) is refused, as
MXNet refuses it: the tape holds the values the recorded calls read, and an in-place write
would change them under it. A whole copy into a fresh array (`y.copyto(z)`, `z[...] = y`) is
recorded instead, as MXNet records it: `z` joins the tape.
"""
from __future__ import annotations

import numpy as np

from .. import backend
from ..base import MXNetError
from ..context import Context
from ..profiler import RECORDER, operator_span
from . import tape

#: MXNet's error text for a write in place while recording (its tests look for it)
INPLACE_ERROR = ("Inplace operations (+=, -=, x[:]=, etc) are not supported when recording with "
                 "autograd: compute a new array instead (y = x + 1)")

#: binary arithmetic on two arrays, and on an array and a scalar: (array op scalar,
#: scalar op array)
_ON_ARRAYS = {"add": "broadcast_add", "subtract": "broadcast_sub",
              "multiply": "broadcast_mul", "divide": "broadcast_div", "mod": "broadcast_mod",
              "power": "broadcast_power", "maximum": "broadcast_maximum",
              "minimum": "broadcast_minimum"}
_ON_SCALAR = {"add": ("_plus_scalar", "_plus_scalar"),
              "subtract": ("_minus_scalar", "_rminus_scalar"),
              "multiply": ("_mul_scalar", "_mul_scalar"),
              "divide": ("_div_scalar", "_rdiv_scalar"),
              "mod": ("_mod_scalar", "_rmod_scalar"),
              "power": ("_power_scalar", "_rpower_scalar"),
              "maximum": ("_maximum_scalar", "_maximum_scalar"),
              "minimum": ("_minimum_scalar", "_minimum_scalar")}


def binary_op_name(name: str, lhs_array: bool, rhs_array: bool) -> str:
    """The operator MXNet runs for `lhs <name> rhs` (for the profiler's records)."""
    if lhs_array and rhs_array:
        return _ON_ARRAYS.get(name, "broadcast_" + name)
    pair = _ON_SCALAR.get(name, ("_%s_scalar" % name,) * 2)
    return pair[0 if lhs_array else 1]


def profiled_call(op_name: str, routine, args: tuple, kwargs: dict):
    """routine(*args, **kwargs) recorded by the profiler as a call of operator `op_name`."""
    start = RECORDER.now()
    result = routine(*args, **kwargs)
    first = result[0] if isinstance(result, (list, tuple)) else result
    operator_span(op_name, start, getattr(first, "context", None) or Context("cpu", 0))
    return result


def refuse_inplace(*values) -> None:
    """Raise MXNet's error when recording and one of `values` is on the tape."""
    if tape.tracked(*values):
        raise MXNetError(INPLACE_ERROR)


def binary(name: str, lhs, rhs, out=None):
    """`lhs <name> rhs` recorded as MXNet's operator for it; None for the comparisons and
    logical ops, whose gradient is zero (they run unrecorded, their results are constants)."""
    from .imperative import invoke
    if name not in _ON_ARRAYS:
        return None
    lhs_array = hasattr(lhs, "_data")
    if lhs_array and hasattr(rhs, "_data"):
        return invoke(_ON_ARRAYS[name], (lhs, rhs), {"out": out})
    array, scalar = (lhs, rhs) if lhs_array else (rhs, lhs)
    op = _ON_SCALAR[name][0 if lhs_array else 1]
    return invoke(op, (array,), {"scalar": float(scalar), "out": out})


def call(op_name: str, data, **params):
    """`mx.nd.<op_name>(data, **params)`, which records itself."""
    from .imperative import invoke
    return invoke(op_name, (data,), params)


def record_getitem(source, index, view_shape: tuple, result) -> None:
    """Record `result = source[index]` (`view_shape`: the indexed shape before a one-element
    result became shape (1,)). Backward adds the head gradient into zeros at `index`, summing
    where an advanced index repeats an element."""
    shape, dtype = source._data.shape, source._data.dtype
    xp = backend.array_module_of(source._data)
    basic = not _has_arrays(index)

    def run(out_grads, wanted, targets):
        grad = xp.zeros(shape, dtype)
        head = out_grads[0].reshape(view_shape)
        if basic:
            grad[index] = head
        else:
            backend.scatter_add(xp, grad, index, head)
        return [grad]
    tape.record_call("getitem", [source], [result], run)


def _has_arrays(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return any(not isinstance(k, (int, np.integer, slice, type(None), type(Ellipsis)))
               for k in items)


def record_copy(source, result) -> None:
    """Record `result`, a copy of `source` (on its device or another): backward hands the
    head gradient back, copied to `source`'s device."""
    home = source.context

    def run(out_grads, wanted, targets):
        return [backend.to_context(out_grads[0], home, copy=True)]
    tape.record_call("_copyto", [source], [result], run)
