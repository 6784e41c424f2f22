"""Creating NDArrays: `array` (from Python, NumPy or CuPy data), `zeros`, `ones`, `empty`,
`full`, the operator-computed ranges `arange`, `linspace`, `eye`, `from_numpy` (sharing a NumPy
array's memory) and `waitall`.
"""
from __future__ import annotations

import weakref

import numpy as np

from .. import backend
from ..base import MXNetError, ShapeError
from ..context import Context, current_context
from ..ops.helpers import cast
from ..shape_semantics import is_np_shape, legacy_zero_size_error
from .array_base import _is_backend_array
from .core import NDArray, as_backend_operand, device_scope, wrap
from .imperative import invoke
from .rules import _MX_DTYPES, DTypeLike, ShapeLike, _normalize_shape, normalize_dtype
from .sparse import BaseSparseNDArray
from .sparse import array as sparse_array
from .sparse import zeros as sparse_zeros


def _resolve_ctx(ctx: Context | None) -> Context:
    return current_context() if ctx is None else ctx


def array(source_array, ctx: Context | None = None, dtype: DTypeLike = None) -> NDArray:
    """A new NDArray with a copy of `source_array` (NDArray, NumPy/CuPy array, list, scalar).

    dtype defaults to the source's dtype for an NDArray and to float32 for anything else
    (NumPy float64/int64 become float32, as in MXNet). ctx defaults to the current context.
    """
    if isinstance(source_array, BaseSparseNDArray) \
            or type(source_array).__module__.startswith("scipy.sparse"):
        return sparse_array(source_array, ctx, dtype)  # as MXNet: sparse in, sparse out
    ctx = _resolve_ctx(ctx)
    if isinstance(source_array, NDArray):
        kind = normalize_dtype(dtype, default=source_array.dtype)
        data = as_backend_operand(source_array, ctx)
    else:
        kind = normalize_dtype(dtype)
        if _is_backend_array(source_array):
            data = backend.to_context(source_array, ctx)
        else:
            try:
                host = np.asarray(source_array)
            except (TypeError, ValueError) as err:
                raise TypeError("source_array must be array like object") from err
            if host.dtype == object:
                raise TypeError("source_array must be array like object, got "
                                f"{type(source_array).__name__!r}")
            data = backend.to_context(host, ctx)
    with device_scope(ctx):
        return wrap(cast(backend.xp_for(ctx), data, kind), ctx)


def _filled(shape: ShapeLike, ctx, dtype, fill, stype=None, out=None,
            name: str = "") -> NDArray:
    """An array of `fill`; `name` (zeros, ones) refuses zero-size and 0-d shapes in MXNet's
    legacy shape semantics, as MXNet's operators do (`empty` and `full` take them)."""
    if stype not in (None, "default"):
        if fill != 0:
            raise MXNetError(f"mx.nd.{name or 'full'}: storage type {stype!r} is for zeros and "
                             "empty only; make a dense array and convert it with tostype")
        if out is not None:
            raise MXNetError("mx.nd.zeros: out= takes dense arrays only (stype=%r)" % stype)
        return sparse_zeros(stype, shape, ctx, dtype)
    shape = _normalize_shape(shape)
    if name and (0 in shape or not shape) and not is_np_shape():
        raise ShapeError(legacy_zero_size_error("mx.nd.%s: the requested array" % name, shape))
    if out is not None:
        out[:] = fill
        return out
    ctx = _resolve_ctx(ctx)
    with device_scope(ctx):
        data = backend.xp_for(ctx).full(shape, fill, dtype=normalize_dtype(dtype))
    return wrap(data, ctx)


def zeros(shape: ShapeLike, ctx: Context | None = None, dtype: DTypeLike = None,
          stype: str | None = None, **kwargs) -> NDArray:
    """A new array of zeros (dtype default float32, ctx default current context)."""
    return _filled(shape, ctx, dtype, 0, stype, kwargs.get("out"), name="zeros")


def ones(shape: ShapeLike, ctx: Context | None = None, dtype: DTypeLike = None,
         stype: str | None = None, **kwargs) -> NDArray:
    """A new array of ones (dtype default float32, ctx default current context)."""
    return _filled(shape, ctx, dtype, 1, stype, kwargs.get("out"), name="ones")


def empty(shape: ShapeLike, ctx: Context | None = None, dtype: DTypeLike = None,
          stype: str | None = None, **kwargs) -> NDArray:
    """A new array whose values are unspecified (minimod zero-fills: deterministic runs)."""
    return _filled(shape, ctx, dtype, 0, stype, kwargs.get("out"))


def full(shape: ShapeLike, val: float, ctx: Context | None = None, dtype: DTypeLike = None,
         stype: str | None = None, **kwargs) -> NDArray:
    """A new array filled with `val` (cast to dtype, default float32)."""
    return _filled(shape, ctx, dtype, val, stype, kwargs.get("out"))


def _creation_op(name: str, ctx: Context | None, dtype: DTypeLike, **params) -> NDArray:
    kind = np.dtype(normalize_dtype(dtype)).name
    return invoke(name, (), dict(params, ctx=_resolve_ctx(ctx), dtype=kind))


def arange(start: float, stop: float | None = None, step: float = 1.0, repeat: int = 1,
           infer_range: bool | None = None, ctx: Context | None = None,
           dtype: DTypeLike = np.float32) -> NDArray:
    """Evenly spaced values in [start, stop) (or [0, start) without stop), each repeated
    `repeat` times; dtype default float32. The `_arange` operator computes them, so integer
    dtypes get MXNet's values (start and step truncated first: arange(1.3, 5, 1.3,
    dtype='int32') is 1, 2, 3). `infer_range` is deprecated in MXNet and ignored."""
    return _creation_op("_arange", ctx, dtype, start=start, stop=stop, step=step,
                        repeat=repeat, infer_range=False)


def linspace(start: float, stop: float, num: int, endpoint: bool = True,
             ctx: Context | None = None, dtype: DTypeLike = np.float32) -> NDArray:
    """`num` evenly spaced values from start to stop (stop included unless endpoint=False),
    computed in float64 and cast to dtype (integers truncate toward zero)."""
    return _creation_op("_linspace", ctx, dtype, start=start, stop=stop, num=num,
                        endpoint=endpoint)


def eye(N: int, M: int = 0, k: int = 0, ctx: Context | None = None, dtype: DTypeLike = None,
        **kwargs) -> NDArray:
    """An N x M matrix (M = 0: N x N) of zeros with ones on diagonal k (k > 0 above the main
    diagonal, k < 0 below); dtype default float32."""
    return _creation_op("_eye", ctx, dtype, N=N, M=M, k=k, **kwargs)


def from_numpy(ndarray: np.ndarray, zero_copy: bool = True, array_cls=None) -> NDArray:
    """An NDArray on cpu(0) with the values and dtype of NumPy array `ndarray`.

    With zero_copy (the default) the NDArray takes over `ndarray`'s memory instead of copying
    it: writes to the NDArray show in `ndarray`, and `ndarray` itself is made read-only, as in
    MXNet (the NumPy side should no longer be used). Only C-contiguous arrays can be taken
    over (ValueError otherwise). With zero_copy=False the values are copied.
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError("from_numpy needs a numpy.ndarray, got %s" % type(ndarray).__name__)
    if ndarray.dtype.type not in _MX_DTYPES:
        raise ValueError(f"from_numpy: dtype {ndarray.dtype.name} is not supported")
    ctx = Context("cpu", 0)
    if not zero_copy:
        return wrap(np.array(ndarray, copy=True, order="C"), ctx)
    if not ndarray.flags["C_CONTIGUOUS"]:
        raise ValueError("from_numpy: only C-contiguous arrays can be shared without a copy "
                         "(pass zero_copy=False, or np.ascontiguousarray first)")
    if _locked_by_from_numpy(ndarray):
        # shared before: its memory is writable, only NumPy's flag (set by us) says otherwise
        shared = np.asarray(_SharedMemory(ndarray))
    else:
        shared = ndarray.view()  # taken before the lock below, so it stays writable
        if ndarray.flags.writeable:
            ndarray.flags.writeable = False
            _remember_locked(ndarray)
    out = wrap(shared, ctx)
    out._writable = bool(shared.flags.writeable)
    return out


#: id -> weak reference of the NumPy arrays from_numpy made read-only
_LOCKED: dict = {}


def _remember_locked(arr: np.ndarray) -> None:
    key = id(arr)
    _LOCKED[key] = weakref.ref(arr, lambda _ref, key=key: _LOCKED.pop(key, None))


def _locked_by_from_numpy(arr: np.ndarray) -> bool:
    ref = _LOCKED.get(id(arr))
    return ref is not None and ref() is arr and not arr.flags.writeable


class _SharedMemory:
    """A writable window on the memory of an array that from_numpy locked: NumPy turns it into
    an array (`np.asarray`) whose base keeps the original array, and so its memory, alive."""

    def __init__(self, arr: np.ndarray):
        self._owner = arr
        self.__array_interface__ = dict(arr.__array_interface__,
                                        data=(arr.__array_interface__["data"][0], False))


def waitall() -> None:
    """Block until the work queued on every GPU finishes (immediate without GPUs)."""
    backend.synchronize()
