"""`NDArray`: one backend array (NumPy on CPU contexts, CuPy on GPU contexts) and its Context.

An NDArray is the API boundary of minimod: users, metrics, initializers and optimizers see
NDArrays, the executor sees the backend arrays inside them. The wrapper is deliberately thin:

* `NDArray(data, ctx)` wraps `data` without copying. The executor wraps views of its planned
  memory this way, so every method that writes (`x[:] = v`, `+=`, `copyto`) writes into `_data`
  in place and never rebinds it.
* Arithmetic follows MXNet 1.9.1, not NumPy, where the two differ: results keep the dtype of the
  array operand (a Python scalar is cast to it, so `int32_array * 1.5` multiplies by 1), integer
  `/` truncates toward zero, comparisons return 0/1 in the input dtype, two arrays of different
  dtypes or contexts are an error, and full reductions return shape (1,).
* Indexing returns views for basic indices (ints and slices), like NumPy. This bends MXNet
  slightly: MXNet copies a slice that is not contiguous (`x[:, 1:2]`), minimod returns a view of
  it. An index that selects one element returns shape (1,), as MXNet does.

Module-level creation helpers (`array`, `zeros`, `ones`, `empty`, `full`, `arange`, `linspace`,
`eye`, `from_numpy`) live here; the math routines live in `routines.py`. `flatten`,
`expand_dims` and `squeeze` return copies, or with `inplace=True` views sharing the memory.
"""
from __future__ import annotations

import ctypes
import numbers
import weakref
from collections.abc import Iterator, Sequence
from typing import Any, Union

import numpy as np

from .. import backend
from ..base import DTypeError, MXNetError, ShapeError
from ..context import Context, current_context

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


def _ctx_of_data(data) -> Context:
    if backend.is_gpu_array(data):
        return Context("gpu", data.device.id)
    return Context("cpu", 0)


def _is_backend_array(obj) -> bool:
    return isinstance(obj, np.ndarray) or backend.is_gpu_array(obj)


class _NoScope:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NO_SCOPE = _NoScope()


def device_scope(ctx: Context):
    """A `with` block that allocates new backend arrays on `ctx` (no cost on CPU)."""
    return backend.device_scope(ctx) if ctx.device_typeid == 2 else _NO_SCOPE


def _normalize_shape(shape: ShapeLike) -> tuple:
    if isinstance(shape, numbers.Integral):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def wrap(data, ctx: Context) -> NDArray:
    """An NDArray around backend array `data` on `ctx` (no copy, no checks)."""
    out = NDArray.__new__(NDArray)
    out._data = data
    out._ctx = ctx
    out._writable = True
    return out


def as_backend_operand(value, ctx: Context, dtype: type | None = None):
    """`value` (NDArray, NumPy/CuPy array, list or scalar) as a backend array of `ctx`.

    NDArrays on another context are copied over; `dtype`, when given, casts without copying
    when the dtype already matches.
    """
    if isinstance(value, NDArray):
        data = value._data
        if value._ctx != ctx:
            data = backend.to_context(data, ctx)
    elif _is_backend_array(value):
        data = backend.to_context(value, ctx)
    else:
        with device_scope(ctx):
            data = backend.xp_for(ctx).asarray(np.asarray(value))
    if dtype is not None and data.dtype != dtype:
        with device_scope(ctx):  # the cast runs on ctx's GPU, where the data now lives
            data = data.astype(dtype)
    return data


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
        return xp.power(a.astype(np.float64), b).astype(a.dtype)
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


def binary_op(name: str, lhs, rhs, out: NDArray | None = None):
    """MXNet's elementwise binary op `name` on NDArrays and/or scalars, with broadcasting.

    The result has the dtype of the array operand(s). Two arrays must agree in dtype and
    context (DTypeError / MXNetError otherwise). Two scalars give a Python scalar (1 or 0 for
    comparisons and logical ops, as MXNet).
    """
    fn = _BINARY[name]
    lhs_nd, rhs_nd = isinstance(lhs, NDArray), isinstance(rhs, NDArray)
    if not lhs_nd and not rhs_nd:
        value = fn(np, np.asarray(lhs), np.asarray(rhs)).item()
        return int(value) if isinstance(value, bool) else value
    if lhs_nd and rhs_nd:
        if lhs.dtype != rhs.dtype:
            raise DTypeError(f"{name}: operands have different dtypes {np.dtype(lhs.dtype).name} "
                             f"and {np.dtype(rhs.dtype).name} (cast one with astype)")
        if lhs._ctx != rhs._ctx:
            raise MXNetError(f"{name}: operands live on different contexts {lhs._ctx} and "
                             f"{rhs._ctx} (move one with as_in_context)")
        ref = lhs
    else:
        ref = lhs if lhs_nd else rhs
    for operand in (lhs, rhs):
        if not isinstance(operand, (NDArray, numbers.Number, np.generic)):
            raise TypeError(f"type {type(operand)} not supported")
    xp, dtype = ref._xp, ref._data.dtype
    a = lhs._data if lhs_nd else _scalar_as(xp, lhs, dtype)
    b = rhs._data if rhs_nd else _scalar_as(xp, rhs, dtype)
    with np.errstate(all="ignore"), device_scope(ref._ctx):
        try:
            result = fn(xp, a, b)
        except ValueError as err:
            raise ShapeError(f"{name}: shapes {tuple(a.shape)} and {tuple(b.shape)} "
                             "do not broadcast") from err
        if result.dtype != dtype:
            result = result.astype(dtype)
    if out is not None:
        out[:] = wrap(result, ref._ctx)
        return out
    return wrap(result, ref._ctx)


def _index_to_backend(key, xp, ctx: Context | None = None):
    """An index with NDArrays replaced by integer backend arrays (advanced indexing) of the
    indexed array's device (`ctx`): an index array from another device is copied over."""
    if isinstance(key, NDArray):
        data = key._data
        if ctx is not None and key._ctx != ctx:
            data = backend.to_context(data, ctx)
        return data.astype(np.int64)
    if isinstance(key, tuple):
        return tuple(_index_to_backend(k, xp, ctx) for k in key)
    if isinstance(key, list):
        return xp.asarray(np.asarray(key, dtype=np.int64))
    return key


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
            first, second = spec[i + 1], spec[i + 2]
            dim = src[src_i]
            if first == -1:
                first = dim // second
            if second == -1:
                second = dim // first
            out.extend([first, second])
            src_i += 1
            i += 2
        elif code > 0:
            out.append(code)
            src_i += 1
        else:
            raise ShapeError(f"reshape {tuple(spec)}: invalid code {code}")
        i += 1
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


#: id -> NDArray for the arrays whose handle was taken (see NDArray.handle)
_HANDLES: "weakref.WeakValueDictionary[int, NDArray]" = weakref.WeakValueDictionary()

#: MXNet's ctypes type of an NDArray handle
NDArrayHandle = ctypes.c_void_p


class NDArray:
    """An n-dimensional array on one Context (MXNet's `mx.nd.NDArray`).

    `NDArray(data, ctx)` wraps the backend array `data` (NumPy for CPU, CuPy for GPU) without
    copying; `ctx` defaults to where `data` lives. Use `mx.nd.array` to build one from Python
    data. `NDArray(None)` is the empty placeholder pickling fills in through `__setstate__`.
    """

    __slots__ = ("__weakref__", "_ctx", "_data", "_writable")
    # Make NumPy defer to our reflected operators (np.float32(2) * nd -> NDArray).
    __array_priority__ = 1000.0

    def __init__(self, data=None, ctx: Context | None = None, writable: bool = True):
        if isinstance(data, ctypes.c_void_p):  # MXNet's NDArray(handle): the same array
            source = _HANDLES.get(data.value)
            if source is None:
                raise MXNetError("NDArray(handle): %r is not the handle of a live NDArray"
                                 % (data,))
            data, ctx = source._data, source._ctx
        if data is None:
            data = np.zeros((0,), dtype=np.float32)
        elif not _is_backend_array(data):
            raise TypeError("NDArray(data, ctx) wraps a NumPy or CuPy array, got "
                            f"{type(data).__name__}; use "
                            "mx.nd.array to convert other data")
        self._data = data
        self._ctx = _ctx_of_data(data) if ctx is None else ctx
        self._writable = bool(writable)

    # ------------------------------------------------------------------ attributes
    @property
    def _xp(self):
        return backend.array_module_of(self._data)

    @property
    def shape(self) -> tuple:
        return tuple(self._data.shape)

    @property
    def dtype(self) -> type:
        """The element type as a NumPy scalar type (`np.float32`), as MXNet returns it."""
        return self._data.dtype.type

    @property
    def context(self) -> Context:
        return self._ctx

    ctx = context

    @property
    def stype(self) -> str:
        return "default"

    @property
    def size(self) -> int:
        return int(self._data.size)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def handle(self) -> ctypes.c_void_p:
        """An opaque handle, distinct per NDArray object: `NDArray(handle)` is a new NDArray
        over the same array, as in MXNet, for as long as this one lives (monitor callbacks
        written for MXNet receive handles and wrap them so)."""
        _HANDLES[id(self)] = self
        return ctypes.c_void_p(id(self))

    @property
    def _as_parameter_(self) -> ctypes.c_void_p:
        """What ctypes passes for an NDArray (`ctypes.cast(arr, NDArrayHandle)`): its handle."""
        return self.handle

    @property
    def writable(self) -> bool:
        return self._writable

    @property
    def grad(self) -> None:
        """Autograd gradient buffer: minimod has no autograd, so always None."""
        return None

    @property
    def T(self) -> NDArray:
        """A transposed copy (axes reversed)."""
        with device_scope(self._ctx):
            return wrap(self._data.transpose().copy(), self._ctx)

    # ------------------------------------------------------------------ conversion
    def asnumpy(self) -> np.ndarray:
        """A NumPy copy of the values (a new array even on CPU, as MXNet). On a GPU this waits
        for the work queued on the array's device, like MXNet's `asnumpy`."""
        return np.array(backend.asnumpy(self._data), copy=True)

    def asscalar(self):
        """The single value as a NumPy scalar of this dtype; ValueError unless size is 1."""
        if self.size != 1:
            raise ValueError("The current array is not a scalar")
        return backend.asnumpy(self._data.reshape(-1))[0]

    def item(self):
        """The single value as a Python scalar; ValueError unless size is 1."""
        return self.asscalar().item()

    def __array__(self, dtype=None, copy=None):
        data = backend.asnumpy(self._data)
        if dtype is not None:
            data = data.astype(dtype, copy=False)
        return np.array(data, copy=True) if copy else data

    def copy(self) -> NDArray:
        """A deep copy on the same context."""
        with device_scope(self._ctx):
            return wrap(self._data.copy(), self._ctx)

    def copyto(self, other: NDArray | Context) -> NDArray:
        """Copy into NDArray `other` (same shape; dtype is converted) or to a new array on a
        Context. Returns the destination. Any pair of devices works: cpu <-> gpu is one host
        transfer, gpu(i) -> gpu(j) a peer copy."""
        if isinstance(other, Context):
            return wrap(backend.to_context(self._data, other, copy=True), other)
        if not isinstance(other, NDArray):
            raise TypeError(f"copyto does not support type {type(other).__name__}")
        if other is self:
            return other
        if other.shape != self.shape:
            raise ShapeError(f"copyto: source shape {self.shape} does not match destination "
                             f"shape {other.shape}")
        other._check_writable()
        backend.copy_into(other._data, self._data)
        return other

    def as_in_context(self, context: Context) -> NDArray:
        """This array on `context`: `self` when already there, else a copy."""
        if self._ctx == context:
            return self
        return self.copyto(context)

    def astype(self, dtype: DTypeLike, copy: bool = True) -> NDArray:
        """A copy converted to `dtype`; with copy=False, `self` when the dtype already matches."""
        kind = normalize_dtype(dtype)
        if not copy and kind == self.dtype:
            return self
        with device_scope(self._ctx):
            return wrap(self._data.astype(kind), self._ctx)

    def tostype(self, stype: str) -> NDArray:
        """Storage conversion: only 'default' (dense) exists in minimod; returns a copy."""
        if stype != "default":
            raise MXNetError(f"storage type {stype!r} is not supported: minimod arrays are dense")
        return self.copy()

    def reshape(self, *shape, **kwargs) -> NDArray:
        """A view with a new shape: `reshape((2, 3))`, `reshape(2, 3)` or `reshape(shape=...)`.

        MXNet's special codes work: 0 keeps a dim, -1 infers one, -2 keeps the rest, -3 merges
        two dims, -4 splits one; `reverse=True` applies the codes right to left.
        """
        reverse = bool(kwargs.pop("reverse", False))
        if "shape" in kwargs:
            shape = kwargs.pop("shape")
        elif len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
            shape = shape[0]
        if kwargs:
            raise TypeError(f"reshape got unexpected arguments {sorted(kwargs)}")
        target = _infer_reshape(self.shape, _normalize_shape(shape), reverse)
        return wrap(self._data.reshape(target), self._ctx)

    def flatten(self, inplace: bool = False) -> NDArray:
        """(d0, d1, ..., dk) -> (d0, d1*...*dk): a copy, or with inplace=True a view sharing
        this array's memory (writes through either show in both), as MXNet."""
        n = self.shape[0] if self.ndim else 1
        rest = int(np.prod(self.shape[1:], dtype=np.int64))
        return self._relabel(self._data.reshape((n, rest)), inplace)

    def expand_dims(self, axis: int, inplace: bool = False) -> NDArray:
        """A new axis of size 1 at `axis` (in [-ndim-1, ndim]): a copy, or with inplace=True a
        view sharing this array's memory."""
        axis = int(axis)
        if not -self.ndim - 1 <= axis <= self.ndim:
            raise ShapeError(f"expand_dims: axis {axis} is out of range for an array of "
                             f"shape {self.shape}")
        return self._relabel(self._xp.expand_dims(self._data, axis), inplace)

    def squeeze(self, axis: int | Sequence[int] | None = None,
                inplace: bool = False) -> NDArray:
        """The axes of size 1 (all of them, or those in `axis`) removed; a result with no
        axis left has shape (1,), as MXNet. A copy, or with inplace=True a view sharing this
        array's memory."""
        axes = tuple(axis) if isinstance(axis, (list, tuple)) else axis
        try:
            squeezed = self._data.squeeze(axes)
        except ValueError as err:
            raise ShapeError(f"squeeze: axis {axis} of an array of shape {self.shape} must "
                             "have size 1") from err
        return self._relabel(squeezed.reshape((1,)) if squeezed.ndim == 0 else squeezed,
                             inplace)

    def _relabel(self, view, inplace: bool) -> NDArray:
        """`view` (a reshaped view of `_data`) as an NDArray sharing this array's memory when
        `inplace`, else as a fresh copy."""
        if inplace:
            out = wrap(view, self._ctx)
            out._writable = self._writable
            return out
        with device_scope(self._ctx):
            return wrap(view.copy(), self._ctx)

    def slice_assign(self, rhs: NDArray, begin, end, step) -> NDArray:
        """self[begin:end:step] = rhs, in place (MXNet's `_slice_assign` with out=self);
        returns self."""
        from .imperative import invoke
        return invoke("_slice_assign", (self, rhs),
                      dict(begin=begin, end=end, step=step, out=self))

    def slice_assign_scalar(self, value: float, begin, end, step) -> NDArray:
        """self[begin:end:step] = value, in place; returns self."""
        from .imperative import invoke
        return invoke("_slice_assign_scalar", (self,),
                      dict(scalar=value, begin=begin, end=end, step=step, out=self))

    def wait_to_read(self) -> None:
        """Block until the work queued on this array's GPU finishes (immediate with NumPy)."""
        if self._ctx.device_typeid == 2:
            backend.synchronize(self._ctx)

    wait_to_write = wait_to_read

    # ------------------------------------------------------------------ indexing
    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d NDArray")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[NDArray]:
        for i in range(len(self)):
            yield self[i]

    def __getitem__(self, key) -> NDArray:
        data = self._data
        as_slices = _int_key_as_slices(key, data.shape)
        if as_slices is not None:
            return wrap(data[as_slices].reshape((1,)), self._ctx)
        with device_scope(self._ctx):
            result = data[_index_to_backend(key, self._xp, self._ctx)]
            if not _is_backend_array(result) or result.ndim == 0:
                result = self._xp.asarray(result).reshape((1,))
        return wrap(result, self._ctx)

    def __setitem__(self, key, value) -> None:
        self._check_writable()
        if isinstance(value, (numbers.Number, np.generic)):
            operand = _scalar_as(self._xp, value, self._data.dtype)
        else:
            operand = as_backend_operand(value, self._ctx)
        try:
            with device_scope(self._ctx):
                self._data[_index_to_backend(key, self._xp, self._ctx)] = operand
        except ValueError as err:
            raise ShapeError(f"cannot assign a value of shape {tuple(operand.shape)} to index "
                             f"{key!r} of an array of "
                             f"shape {self.shape}") from err

    @staticmethod
    def _basic_indexing_slice_is_contiguous(slc_key, shape: Sequence[int]) -> bool:
        """Whether x[slc_key] is one C-contiguous block of a C-contiguous array x of `shape`.

        `slc_key` is a basic index: a slice or int per leading axis (missing axes take all).
        The result is contiguous when, for every result axis longer than 1, one step along it
        moves through memory by exactly the size of one result row below it; axes of length 1
        never matter (NumPy's `flags.contiguous` agrees), and an empty result is contiguous.
        """
        keys = tuple(slc_key) if isinstance(slc_key, tuple) else (slc_key,)
        keys = keys + (py_slice(None),) * (len(shape) - len(keys))
        lengths, steps = [], []
        for key, dim in zip(keys, shape):
            if isinstance(key, py_slice):
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

    def _check_writable(self):
        if not self._writable:
            raise MXNetError("this NDArray is read-only (writable=False)")

    # ------------------------------------------------------------------ arithmetic
    def __add__(self, other):
        return binary_op("add", self, other)

    def __radd__(self, other):
        return binary_op("add", other, self)

    def __sub__(self, other):
        return binary_op("subtract", self, other)

    def __rsub__(self, other):
        return binary_op("subtract", other, self)

    def __mul__(self, other):
        return binary_op("multiply", self, other)

    def __rmul__(self, other):
        return binary_op("multiply", other, self)

    def __truediv__(self, other):
        return binary_op("divide", self, other)

    def __rtruediv__(self, other):
        return binary_op("divide", other, self)

    def __mod__(self, other):
        return binary_op("mod", self, other)

    def __rmod__(self, other):
        return binary_op("mod", other, self)

    def __pow__(self, other):
        return binary_op("power", self, other)

    def __rpow__(self, other):
        return binary_op("power", other, self)

    def __neg__(self):
        with device_scope(self._ctx):
            return wrap(-self._data, self._ctx)

    def __pos__(self):
        return self

    def __abs__(self):
        with device_scope(self._ctx):
            return wrap(self._xp.abs(self._data), self._ctx)

    def _inplace(self, name, other):
        self._check_writable()
        result = binary_op(name, self, other)
        if result.shape != self.shape:
            raise ShapeError(f"in-place {name} would change shape {self.shape} to {result.shape}")
        with device_scope(self._ctx):
            self._data[...] = result._data
        return self

    def __iadd__(self, other):
        return self._inplace("add", other)

    def __isub__(self, other):
        return self._inplace("subtract", other)

    def __imul__(self, other):
        return self._inplace("multiply", other)

    def __itruediv__(self, other):
        return self._inplace("divide", other)

    def __imod__(self, other):
        return self._inplace("mod", other)

    # ------------------------------------------------------------------ comparisons
    def __eq__(self, other):  # type: ignore[override]
        return binary_op("equal", self, other)

    def __ne__(self, other):  # type: ignore[override]
        return binary_op("not_equal", self, other)

    def __gt__(self, other):
        return binary_op("greater", self, other)

    def __ge__(self, other):
        return binary_op("greater_equal", self, other)

    def __lt__(self, other):
        return binary_op("lesser", self, other)

    def __le__(self, other):
        return binary_op("lesser_equal", self, other)

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        size = self.size
        if size == 0:
            return False
        if size == 1:
            return bool(self.asscalar())
        raise ValueError("The truth value of an NDArray with multiple elements is ambiguous.")

    # ------------------------------------------------------------------ display, pickling
    def __repr__(self) -> str:
        return "\n{}\n<{} {} @{}>".format(str(backend.asnumpy(self._data)), type(self).__name__,
                                      "x".join(str(d) for d in self.shape), self._ctx)

    def __copy__(self) -> NDArray:
        return self.copy()

    def __deepcopy__(self, memo) -> NDArray:
        return self.copy()

    def __reduce__(self):
        return (NDArray, (None,), self.__getstate__())

    def __getstate__(self) -> dict:
        from .serialization import write_record
        return {"handle": bytearray(write_record(self))}

    def __setstate__(self, state: dict) -> None:
        from .serialization import read_record
        raw = state.get("handle") if isinstance(state, dict) else state
        if raw is None:
            return
        if not isinstance(raw, (bytes, bytearray)):  # bytes(n) would allocate n bytes
            raise MXNetError("pickled NDArray state must hold bytes, got %s"
                             % type(raw).__name__)
        loaded, _ = read_record(bytes(raw), 0, source="pickled NDArray")
        if loaded is None:
            raise MXNetError("pickled NDArray holds a 'none' array record")
        self._data, self._ctx, self._writable = loaded._data, loaded._ctx, True

    # ------------------------------------------------------------------ method forms of routines
    def __getattr__(self, name: str):
        # Method forms (x.sum(), x.argmax(axis=1), x.log10() ...) of the routines and
        # operators, as MXNet provides.
        from . import imperative, routines
        fn = routines.METHODS.get(name)
        if fn is None and name in imperative.FLUENT:
            fn = imperative.op_function(name)
        if fn is None:
            raise AttributeError(f"'NDArray' object has no attribute {name!r}")
        return lambda *args, **kwargs: fn(self, *args, **kwargs)


NDArray.__module__ = "minimod.ndarray.ndarray"


# ---------------------------------------------------------------------- creation

def _resolve_ctx(ctx: Context | None) -> Context:
    return current_context() if ctx is None else ctx


def array(source_array, ctx: Context | None = None, dtype: DTypeLike = None) -> NDArray:
    """A new NDArray with a copy of `source_array` (NDArray, NumPy/CuPy array, list, scalar).

    dtype defaults to the source's dtype for an NDArray and to float32 for anything else
    (NumPy float64/int64 become float32, as in MXNet). ctx defaults to the current context.
    """
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
        return wrap(data.astype(kind, copy=True), ctx)


def _filled(shape: ShapeLike, ctx, dtype, fill, stype=None, out=None) -> NDArray:
    if stype not in (None, "default"):
        raise MXNetError(f"storage type {stype!r} is not supported: minimod arrays are dense")
    shape = _normalize_shape(shape)
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
    return _filled(shape, ctx, dtype, 0, stype, kwargs.get("out"))


def ones(shape: ShapeLike, ctx: Context | None = None, dtype: DTypeLike = None,
         stype: str | None = None, **kwargs) -> NDArray:
    """A new array of ones (dtype default float32, ctx default current context)."""
    return _filled(shape, ctx, dtype, 1, stype, kwargs.get("out"))


def empty(shape: ShapeLike, ctx: Context | None = None, dtype: DTypeLike = None,
          stype: str | None = None, **kwargs) -> NDArray:
    """A new array whose values are unspecified (minimod zero-fills: deterministic runs)."""
    return _filled(shape, ctx, dtype, 0, stype, kwargs.get("out"))


def full(shape: ShapeLike, val: float, ctx: Context | None = None, dtype: DTypeLike = None,
         stype: str | None = None, **kwargs) -> NDArray:
    """A new array filled with `val` (cast to dtype, default float32)."""
    return _filled(shape, ctx, dtype, val, stype, kwargs.get("out"))


def _creation_op(name: str, ctx: Context | None, dtype: DTypeLike, **params) -> NDArray:
    from .imperative import invoke  # imperative.py builds on this module
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
