"""MXNet's module path `mx.nd.ndarray`: the NDArray class, the creation helpers and the
functions MXNet defines beside them.

The class is in core.py (on array_base.py's NDArrayBase), MXNet's dtype and shape rules in
rules.py, the creation helpers in creation.py, the broadcasting arithmetic and comparisons in
routines/, DLPack in dlpack.py; this module gathers the public names MXNet's ndarray.py has
(and its dtype code tables), as user code written for MXNet imports them from here. Not here:
`imdecode`, MXNet's deprecated decoder, which 1.9.1 itself cannot run (its output shape is
never inferred); `mx.image.imdecode` decodes.
"""
from __future__ import annotations

import numpy as np

from . import imperative
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
from .dlpack import from_dlpack, to_dlpack_for_read, to_dlpack_for_write
from .routines.elementwise import (
    add,
    divide,
    equal,
    greater,
    greater_equal,
    lesser,
    lesser_equal,
    logical_and,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    modulo,
    multiply,
    not_equal,
    power,
    subtract,
    true_divide,
)
from .routines.reductions import histogram
from .routines.shapes import concatenate, moveaxis, split_v2
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
    "onehot_encode",
    "add", "subtract", "multiply", "divide", "true_divide", "modulo", "power", "maximum",
    "minimum", "equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal",
    "logical_and", "logical_or", "logical_xor", "concatenate", "moveaxis", "split_v2",
    "histogram", "from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write",
]

#: MXNet's dtype codes (the numbers its files and C API use), keyed as MXNet keys them: by
#: NumPy scalar type, None for "not given" (-1)
_DTYPE_MX_TO_NP = {-1: None, 0: np.float32, 1: np.float64, 2: np.float16, 3: np.uint8,
                   4: np.int32, 5: np.int8, 6: np.int64, 7: np.bool_}
_DTYPE_NP_TO_MX = {t: code for code, t in _DTYPE_MX_TO_NP.items()}
#: MXNet's grad_req codes
_GRAD_REQ_MAP = {"null": 0, "write": 1, "add": 3}

#: Python's own slice (MXNet's ndarray module keeps this name for it, where `slice` is an
#: operator)
py_slice = slice


def onehot_encode(indices: NDArray, out: NDArray) -> NDArray:
    """One-hot rows of `indices` written into `out` (N, C) and returned (MXNet's deprecated
    form of `one_hot`; an index outside [0, C) gives a row of zeros)."""
    return imperative.invoke("_onehot_encode", (indices, out), {"out": out})
