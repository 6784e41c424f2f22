"""MXNet's module path `mx.nd.ndarray`: the NDArray class and the creation helpers.

The class is in core.py (on array_base.py's NDArrayBase), MXNet's dtype and shape rules in
rules.py, the creation helpers in creation.py; this module gathers their public names, as user
code written for MXNet imports them from here.
"""
from __future__ import annotations

from .core import NDArray, NDArrayHandle, as_backend_operand, wrap
from .creation import (
    arange,
    array,
    empty,
    eye,
    from_numpy,
    full,
    linspace,
    ones,
    waitall,
    zeros,
)
from .rules import normalize_dtype

__all__ = [
    "NDArray",
    "arange",
    "array",
    "as_backend_operand",
    "empty",
    "eye",
    "from_numpy",
    "full",
    "linspace",
    "normalize_dtype",
    "ones",
    "waitall",
    "wrap",
    "zeros",
    "py_slice",
    "NDArrayHandle",
]

#: Python's own slice (MXNet's ndarray module keeps this name for it, where `slice` is an
#: operator)
py_slice = slice
