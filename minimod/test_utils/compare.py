"""Comparing arrays the way MXNet's test code expects.

Tolerances default per dtype, as MXNet 1.9.1's `mx.test_utils` sets them (the less precise of
the two arrays decides): float16 rtol 1e-2 / atol 1e-1, float32 1e-4 / 1e-3, float64 1e-5 /
1e-20, integers and booleans exact. `rtol`/`atol` may be a number or a dict dtype -> number
that overrides the defaults for some dtypes. Arrays may be NumPy arrays, NDArrays, or numbers.
"""
from __future__ import annotations

import numbers
from typing import Optional

import numpy as np

from ..ndarray.ndarray import NDArray

__all__ = ["default_rtols", "default_atols", "default_numeric_eps", "effective_dtype",
           "get_rtol", "get_atol", "get_etol", "get_tolerance", "get_tols", "same",
           "same_array", "reldiff", "almost_equal", "assert_almost_equal",
           "assert_almost_equal_with_err", "almost_equal_ignore_nan",
           "assert_almost_equal_ignore_nan", "assert_allclose", "assert_exception",
           "compare_ndarray_tuple", "as_numpy"]

_FLOAT_RTOL = {np.float16: 1e-2, np.float32: 1e-4, np.float64: 1e-5}
_FLOAT_ATOL = {np.float16: 1e-1, np.float32: 1e-3, np.float64: 1e-20}
_EXACT = (np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64)


def _table(floats: dict) -> dict:
    table = {np.dtype(t): v for t, v in floats.items()}
    table.update({np.dtype(t): 0 for t in _EXACT})
    return table


def default_rtols() -> dict:
    """dtype -> the relative tolerance used when none is given."""
    return _table(_FLOAT_RTOL)


def default_atols() -> dict:
    """dtype -> the absolute tolerance used when none is given."""
    return _table(_FLOAT_ATOL)


def default_numeric_eps() -> dict:
    """dtype -> the finite-difference step of `check_numeric_gradient` (powers of two, so
    x + eps/2 and x - eps/2 are exact in the dtype for |x| around 1)."""
    return {np.dtype(np.float16): 2.0 ** -6, np.dtype(np.float32): 2.0 ** -9,
            np.dtype(np.float64): 2.0 ** -14}


def get_rtol(rtol=None, dtype=np.dtype(np.float64)) -> float:
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_atol(atol=None, dtype=np.dtype(np.float64)) -> float:
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def get_etol(etol=None) -> float:
    """The share of elements allowed outside the tolerance (`assert_almost_equal_with_err`)."""
    return 0 if etol is None else etol


def as_numpy(value) -> np.ndarray:
    """A NumPy array of `value` (an NDArray is copied to the host)."""
    if isinstance(value, NDArray):
        return value.asnumpy()
    if hasattr(value, "asnumpy"):
        return value.asnumpy()
    return np.asarray(value)


def effective_dtype(data) -> np.dtype:
    """The dtype whose tolerances apply to `data`. minimod never computes float32 as TF32,
    so this is the array's own dtype (MXNet lowers it to float16 on TF32 GPUs)."""
    return np.dtype(getattr(data, "dtype", np.asarray(data).dtype))


def get_tolerance(data, tol, default_tol: dict) -> float:
    """`tol` itself when it is a number; else its entry (or the default) for data's dtype."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = effective_dtype(data)
    tol = tol or {}
    if dtype in tol:
        return tol[dtype]
    return default_tol.get(dtype, 0)


def get_tols(a, b, rtol, atol) -> tuple:
    """(rtol, atol) for comparing a and b: the looser default of their two dtypes."""
    a = np.asarray(a) if isinstance(a, numbers.Number) else a
    b = np.asarray(b) if isinstance(b, numbers.Number) else b
    return (max(get_tolerance(a, rtol, default_rtols()), get_tolerance(b, rtol, default_rtols())),
            max(get_tolerance(a, atol, default_atols()), get_tolerance(b, atol, default_atols())))


def same(a, b) -> bool:
    """True when a and b have equal shapes and equal elements."""
    return np.array_equal(as_numpy(a), as_numpy(b))


def same_array(array1: NDArray, array2: NDArray) -> bool:
    """True when two NDArrays share memory: a change made through one shows in the other."""
    array1 += 1
    try:
        return same(array1, array2)
    finally:
        array1 -= 1


def reldiff(a, b) -> float:
    """sum|a - b| / (sum|a| + sum|b|): 0 for equal arrays, 1 for a = -b; 0 when both are 0."""
    a, b = as_numpy(a).astype(np.float64), as_numpy(b).astype(np.float64)
    total = np.abs(a).sum() + np.abs(b).sum()
    return 0.0 if total == 0 else float(np.abs(a - b).sum() / total)


def _check_shapes(a, b, use_broadcast: bool) -> None:
    if not use_broadcast and np.shape(a) != np.shape(b):
        raise AssertionError("shapes differ: %s and %s" % (np.shape(a), np.shape(b)))


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True) -> bool:
    """True when |a - b| <= atol + rtol * |b| everywhere (NumPy's allclose), with the
    per-dtype default tolerances."""
    _check_shapes(a, b, use_broadcast)
    rtol, atol = get_tols(a, b, rtol, atol)
    return bool(np.allclose(as_numpy(a), as_numpy(b), rtol=rtol, atol=atol,
                            equal_nan=equal_nan))


def _violation(a: np.ndarray, b: np.ndarray, rtol: float, atol: float, equal_nan: bool):
    """(index of the worst element, its error in units of the tolerance, share of elements
    outside the tolerance). The error is |a - b| / (atol + rtol * |b|)."""
    a64, b64 = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        err = np.abs(a64 - b64) / (atol + rtol * np.abs(b64))
    err = np.where(np.isnan(err), np.inf, err)
    if equal_nan:
        err = np.where(np.isnan(a64) & np.isnan(b64), 0.0, err)
    if err.size == 0:
        return (), 0.0, 0.0
    flat = int(np.argmax(err))
    return np.unravel_index(flat, err.shape), float(err.reshape(-1)[flat]), \
        float(np.mean(err > 1))


def _message(a, b, rtol, atol, names, index, error, share, what="") -> str:
    a_b = np.broadcast_arrays(a, b)
    here = ", ".join(str(i) for i in index)
    lines = ["%s and %s differ%s: %.4g%% of %d elements outside rtol=%g, atol=%g"
             % (names[0], names[1], what, 100 * share, a_b[0].size, rtol, atol),
             "worst element at (%s): %s=%r, %s=%r (error %.4g times the tolerance)"
             % (here, names[0], a_b[0][index], names[1], a_b[1][index], error)]
    with np.printoptions(threshold=20, edgeitems=3, suppress=True):
        lines.append("%s: %s" % (names[0], a))
        lines.append("%s: %s" % (names[1], b))
    return "\n".join(lines)


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)) -> None:
    """Raise AssertionError unless |a - b| <= atol + rtol * |b| everywhere.

    The message names both arrays (`names`), the share of elements outside the tolerance and
    the worst element: its index, both values and its error in units of the tolerance.
    Boolean arrays must be equal. `mismatches` is accepted for MXNet's signature; the message
    always reports the one worst element."""
    _check_shapes(a, b, use_broadcast)
    rtol, atol = get_tols(a, b, rtol, atol)
    a_np, b_np = as_numpy(a), as_numpy(b)
    if a_np.dtype == np.bool_ and b_np.dtype == np.bool_:
        np.testing.assert_equal(a_np, b_np)
        return
    try:
        np.broadcast_shapes(a_np.shape, b_np.shape)
    except ValueError:
        raise AssertionError("%s has shape %s and %s has %s: they do not broadcast"
                             % (names[0], a_np.shape, names[1], b_np.shape)) from None
    if np.allclose(a_np, b_np, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    index, error, share = _violation(a_np, b_np, rtol, atol, equal_nan)
    raise AssertionError(_message(a_np, b_np, rtol, atol, names, index, error, share))


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=("a", "b"),
                                 equal_nan=False, mismatches=(10, 10)) -> None:
    """Like `assert_almost_equal`, but passes while at most a share `etol` of the elements
    is outside the tolerance."""
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol, atol, names, equal_nan, mismatches=mismatches)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    a_np, b_np = as_numpy(a), as_numpy(b)
    index, error, share = _violation(a_np, b_np, rtol, atol, equal_nan)
    if share > etol:
        raise AssertionError(_message(a_np, b_np, rtol, atol, names, index, error, share,
                                      " beyond etol=%g" % etol))


def _zero_nans(a, b) -> tuple:
    a, b = np.array(as_numpy(a), copy=True), np.array(as_numpy(b), copy=True)
    mask = np.isnan(a) | np.isnan(b)
    a[mask] = 0
    b[mask] = 0
    return a, b


def almost_equal_ignore_nan(a, b, rtol=None, atol=None) -> bool:
    """`almost_equal` where a NaN in either array matches anything."""
    return almost_equal(*_zero_nans(a, b), rtol=rtol, atol=atol)


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=("a", "b")) -> None:
    """`assert_almost_equal` where a NaN in either array matches anything."""
    assert_almost_equal(*_zero_nans(a, b), rtol=rtol, atol=atol, names=names)


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True) -> None:
    """NumPy's assert_allclose on NDArrays or arrays (MXNet's defaults: NaNs compare equal)."""
    np.testing.assert_allclose(as_numpy(a), as_numpy(b), rtol=rtol, atol=atol,
                               equal_nan=equal_nan)


def assert_exception(f, exception_type, *args, **kwargs) -> None:
    """Raise AssertionError unless `f(*args, **kwargs)` raises `exception_type`."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError("%s did not raise %s" % (getattr(f, "__name__", f),
                                                  getattr(exception_type, "__name__",
                                                          exception_type)))


def compare_ndarray_tuple(t1, t2, rtol: Optional[float] = None, atol: Optional[float] = None):
    """assert_almost_equal over two arrays or two (nested) tuples of arrays; None skips."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for x1, x2 in zip(t1, t2):
            compare_ndarray_tuple(x1, x2, rtol, atol)
        return
    assert_almost_equal(t1, t2, rtol=rtol, atol=atol)
