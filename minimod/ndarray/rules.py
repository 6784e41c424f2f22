"""MXNet's array rules as pure functions on backend arrays (NumPy or CuPy; no NDArray here).

The dtypes an NDArray may hold, how a Python scalar operand is cast (to the array's dtype, as a
C cast), integer division (truncating toward zero) and power, the table of elementwise binary
operations, MXNet's reshape codes (0, -1, -2, -3, -4), integer keys as views, and when a basic
slice is one contiguous block. core.py's NDArray applies them.
"""
from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any, Union

import numpy as np

from ..base import DTypeError, ShapeError
from ..ops.helpers import cast

DTypeLike = Any
ShapeLike = Union[int, Sequence[int]]


_MX_DTYPES = (np.float32, np.float64, np.float16, np.uint8, np.int32, np.int8, np.int64, np.bool_)


def normalize_dtype(dtype: DTypeLike, default: type = np.float32) -> type:
    """The NumPy scalar type (e.g. `np.float32`) for a dtype given as str, type or np.dtype.

    None gives `default`. Types MXNet 1.9.1 cannot hold (complex, int16, strings ...) raise
    DTypeError.
    """
    if dtype is None:
        return default
    try:
        kind = np.dtype(dtype).type
    except TypeError as err:
        raise DTypeError(f"unknown dtype {dtype!r}") from err
    if kind not in _MX_DTYPES:
        held = ", ".join(np.dtype(t).name for t in _MX_DTYPES)
        raise DTypeError(f"dtype {np.dtype(kind).name} is not supported; MXNet arrays hold {held}")
    return kind


def _normalize_shape(shape: ShapeLike) -> tuple:
    if isinstance(shape, numbers.Integral):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def _scalar_as(xp, value, dtype):
    """A Python scalar cast to `dtype` the way MXNet casts scalar operands (C cast), as a NumPy
    scalar: both backends take it without a device transfer and keep the array's dtype."""
    with np.errstate(all="ignore"):
        return np.array(value).astype(dtype)[()]


def _true_divide(xp, a, b):
    if np.issubdtype(a.dtype, np.integer):
        quotient = xp.floor_divide(a, b)
        inexact = xp.remainder(a, b) != 0
        quotient += (inexact & ((a < 0) ^ (b < 0))).astype(quotient.dtype)
        return quotient
    return xp.true_divide(a, b)


def _power(xp, a, b):
    if np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer):
        return cast(xp, xp.power(a.astype(np.float64), b), a.dtype)
    return xp.power(a, b)


_BINARY = {
    "add": lambda xp, a, b: xp.add(a, b),
    "subtract": lambda xp, a, b: xp.subtract(a, b),
    "multiply": lambda xp, a, b: xp.multiply(a, b),
    "divide": _true_divide,
    "mod": lambda xp, a, b: xp.remainder(a, b),
    "power": _power,
    "equal": lambda xp, a, b: xp.equal(a, b),
    "not_equal": lambda xp, a, b: xp.not_equal(a, b),
    "greater": lambda xp, a, b: xp.greater(a, b),
    "greater_equal": lambda xp, a, b: xp.greater_equal(a, b),
    "lesser": lambda xp, a, b: xp.less(a, b),
    "lesser_equal": lambda xp, a, b: xp.less_equal(a, b),
    "maximum": lambda xp, a, b: xp.maximum(a, b),
    "minimum": lambda xp, a, b: xp.minimum(a, b),
    "logical_and": lambda xp, a, b: xp.logical_and(a, b),
    "logical_or": lambda xp, a, b: xp.logical_or(a, b),
    "logical_xor": lambda xp, a, b: xp.logical_xor(a, b),
}


def _int_key_as_slices(key, shape):
    """A key of one int per axis as one-element slices (so indexing stays a view), or None."""
    keys = key if isinstance(key, tuple) else (key,)
    if len(keys) != len(shape) or not all(isinstance(k, numbers.Integral) for k in keys):
        return None
    slices = []
    for k, dim in zip(keys, shape):
        k = int(k)
        if not -dim <= k < dim:
            raise IndexError(f"index {k} is out of bounds for axis of size {dim}")
        k = k + dim if k < 0 else k
        slices.append(slice(k, k + 1))
    return tuple(slices)


def _infer_reshape(src: tuple, spec: Sequence[int], reverse: bool = False) -> tuple:
    """The target shape of MXNet's reshape codes: 0 keep, -1 infer, -2 rest, -3 merge, -4 split."""
    if reverse:
        return tuple(reversed(_infer_reshape(tuple(reversed(src)), _reverse_spec(spec))))
    out: list = []
    src_i = 0
    spec = list(spec)
    i = 0
    infer_at = None
    while i < len(spec):
        code = spec[i]
        if code == 0:
            out.append(src[src_i])
            src_i += 1
        elif code == -1:
            if infer_at is not None:
                raise ShapeError(f"reshape {tuple(spec)}: more than one -1")
            infer_at = len(out)
            out.append(-1)
            src_i += 1
        elif code == -2:
            out.extend(src[src_i:])
            src_i = len(src)
        elif code == -3:
            out.append(src[src_i] * src[src_i + 1])
            src_i += 2
        elif code == -4:
            out.extend(_split_dim(src[src_i], spec[i + 1], spec[i + 2]))
            src_i += 1
            i += 2
        elif code > 0:
            out.append(code)
            src_i += 1
        else:
            raise ShapeError(f"reshape {tuple(spec)}: invalid code {code}")
        i += 1
    return _complete_reshape(src, spec, out, infer_at)


def _split_dim(dim: int, first: int, second: int) -> list:
    """The two sizes code -4 splits `dim` into, a -1 among them worked out."""
    if first == -1:
        first = dim // second
    if second == -1:
        second = dim // first
    return [first, second]


def _complete_reshape(src: tuple, spec: list, out: list, infer_at) -> tuple:
    """`out` with its -1 (at `infer_at`, if any) worked out from the size of `src`; a
    ShapeError unless the sizes then agree."""
    total = int(np.prod(src, dtype=np.int64))
    if infer_at is not None:
        known = int(np.prod([d for d in out if d != -1], dtype=np.int64))
        if known == 0 or total % known:
            raise ShapeError(f"cannot reshape {src} into {tuple(spec)}")
        out[infer_at] = total // known
    if int(np.prod(out, dtype=np.int64)) != total:
        size = int(np.prod(out, dtype=np.int64))
        raise ShapeError(f"cannot reshape array of shape {src} into {tuple(out)} "
                         f"(sizes {total} and {size} differ)")
    return tuple(out)


def _reverse_spec(spec):
    # -4 takes two following values; reverse keeping each (-4, a, b) group as (-4, b, a).
    groups, i = [], 0
    while i < len(spec):
        if spec[i] == -4:
            groups.append([-4, spec[i + 2], spec[i + 1]])
            i += 3
        else:
            groups.append([spec[i]])
            i += 1
    return [code for group in reversed(groups) for code in group]


def basic_slice_is_contiguous(slc_key, shape: Sequence[int]) -> bool:
    """Whether x[slc_key] is one C-contiguous block of a C-contiguous array x of `shape`.

    `slc_key` is a basic index: a slice or int per leading axis (missing axes take all).
    The result is contiguous when, for every result axis longer than 1, one step along it
    moves through memory by exactly the size of one result row below it; axes of length 1
    never matter (NumPy's `flags.contiguous` agrees), and an empty result is contiguous.
    """
    keys = tuple(slc_key) if isinstance(slc_key, tuple) else (slc_key,)
    keys = keys + (slice(None),) * (len(shape) - len(keys))
    lengths, steps = [], []
    for key, dim in zip(keys, shape):
        if isinstance(key, slice):
            start, stop, step = key.indices(int(dim))
            lengths.append(len(range(start, stop, step)))
            steps.append(step)
        else:  # an int keeps one element of its axis
            lengths.append(1)
            steps.append(1)
    if 0 in lengths:
        return True
    source_row = result_row = 1  # elements below axis i, in the source and in the result
    for i in reversed(range(len(shape))):
        if lengths[i] > 1 and steps[i] * source_row != result_row:
            return False
        source_row *= int(shape[i])
        result_row *= lengths[i]
    return True
