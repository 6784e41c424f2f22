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

`flatten`, `expand_dims` and `squeeze` return copies, or with `inplace=True` views sharing the
memory.

The class is built in two layers: array_base.py's NDArrayBase holds the state and what only
reads it (attributes, host copies, pickling); NDArray here adds what makes new arrays (views,
copies, indexing, arithmetic). MXNet's rules (dtypes, scalar casts, reshape codes) are pure
functions in rules.py; the creation helpers (`array`, `zeros` ...) are in creation.py, the math
routines in routines/, and ndarray.py gathers MXNet's `mx.nd.ndarray` names.
"""
from __future__ import annotations

import ctypes
import numbers
from collections.abc import Iterator, Sequence

import numpy as np

from .. import backend
from ..base import DTypeError, MXNetError, ShapeError
from ..context import Context
from ..ops.helpers import cast
from ..profiler import RECORDER
from ..shape_semantics import is_np_shape
from . import recorded, tape
from .array_base import NDArrayBase, _is_backend_array
from .differentiable import Differentiable
from .rules import (
    _BINARY,
    DTypeLike,
    _infer_reshape,
    _int_key_as_slices,
    _normalize_shape,
    _scalar_as,
    basic_slice_is_contiguous,
    normalize_dtype,
)


class _NoScope:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NO_SCOPE = _NoScope()


def device_scope(ctx: Context):
    """A `with` block that allocates new backend arrays on `ctx` (no cost on CPU)."""
    return backend.device_scope(ctx) if ctx.device_typeid == 2 else _NO_SCOPE


def wrap(data, ctx: Context) -> NDArray:
    """An NDArray around backend array `data` on `ctx` (no copy, no checks)."""
    out = NDArray.__new__(NDArray)
    out._data = data
    out._ctx = ctx
    out._writable = True
    out._ag = None
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
            data = cast(backend.xp_for(ctx), data, dtype)
    return data


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
    if tape.tracked(lhs, rhs):
        result = recorded.binary(name, lhs, rhs, out)
        if result is not None:
            return result
    if RECORDER.on and RECORDER.imperative:
        return recorded.profiled_call(recorded.binary_op_name(name, lhs_nd, rhs_nd),
                                      _binary_arrays, (fn, name, lhs, rhs, ref, out), {})
    return _binary_arrays(fn, name, lhs, rhs, ref, out)


def _binary_arrays(fn, name: str, lhs, rhs, ref: NDArray, out: NDArray | None):
    """binary_op's arithmetic, its operands checked; `ref` is an array operand."""
    lhs_nd, rhs_nd = isinstance(lhs, NDArray), isinstance(rhs, NDArray)
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
            result = cast(xp, result, dtype)
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


def _assign(data, index, value) -> None:
    """data[index] = value. An element of an NDArray is a (1,) array (a[0] of a vector), so
    MXNet writes a one-element value there; NumPy 2 refuses an array for an element, and
    gets the value's scalar instead."""
    try:
        data[index] = value
    except ValueError:
        if getattr(value, "size", 0) != 1:
            raise
        data[index] = value.reshape(())


#: MXNet's ctypes type of an NDArray handle
NDArrayHandle = ctypes.c_void_p


class NDArray(NDArrayBase, Differentiable):
    """An n-dimensional array on one Context (MXNet's `mx.nd.NDArray`).

    `NDArray(data, ctx)` wraps the backend array `data` (NumPy for CPU, CuPy for GPU) without
    copying; `ctx` defaults to where `data` lives. Use `mx.nd.array` to build one from Python
    data. `NDArray(None)` is the empty placeholder pickling fills in through `__setstate__`.
    """

    __slots__ = ()  # the state is NDArrayBase's; no per-instance __dict__
    # Make NumPy defer to our reflected operators (np.float32(2) * nd -> NDArray).
    __array_priority__ = 1000.0

    # ------------------------------------------------------------------ views and copies
    @property
    def T(self) -> NDArray:
        """A transposed copy (axes reversed)."""
        if tape.tracked(self):
            return recorded.call("transpose", self)
        with device_scope(self._ctx):
            return wrap(self._data.transpose().copy(), self._ctx)

    def copy(self) -> NDArray:
        """A deep copy on the same context."""
        if tape.tracked(self):
            return recorded.call("_copy", self)
        with device_scope(self._ctx):
            return wrap(self._data.copy(), self._ctx)

    def copyto(self, other: NDArray | Context) -> NDArray:
        """Copy into NDArray `other` (same shape; dtype is converted) or to a new array on a
        Context. Returns the destination. Any pair of devices works: cpu <-> gpu is one host
        transfer, gpu(i) -> gpu(j) a peer copy."""
        if isinstance(other, Context):
            result = wrap(backend.to_context(self._data, other, copy=True), other)
            if tape.tracked(self):
                recorded.record_copy(self, result)
            return result
        if not isinstance(other, NDArray):
            raise TypeError(f"copyto does not support type {type(other).__name__}")
        if other is self:
            return other
        recorded.refuse_inplace(other)  # a write into an array on the tape
        if other.shape != self.shape:
            raise ShapeError(f"copyto: source shape {self.shape} does not match destination "
                             f"shape {other.shape}")
        other._check_writable()
        if other.stype != "default":  # a sparse destination keeps its storage type
            other._store_dense(backend.to_context(self._data, other._ctx))
            return other
        backend.copy_into(other._data, self._data)
        if tape.tracked(self):
            recorded.record_copy(self, other)  # MXNet records the copy: `other` joins the tape
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
        if tape.tracked(self):
            return recorded.call("Cast", self, dtype=np.dtype(kind).name)
        with device_scope(self._ctx):
            return wrap(cast(self._xp, self._data, kind), self._ctx)

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
        if tape.tracked(self):
            return recorded.call("Reshape", self, shape=target)
        return wrap(self._data.reshape(target), self._ctx)

    def flatten(self, inplace: bool = False) -> NDArray:
        """(d0, d1, ..., dk) -> (d0, d1*...*dk): a copy, or with inplace=True a view sharing
        this array's memory (writes through either show in both), as MXNet."""
        n = self.shape[0] if self.ndim else 1
        rest = int(np.prod(self.shape[1:], dtype=np.int64))
        if tape.tracked(self):
            return recorded.call("Reshape", self, shape=(n, rest))
        return self._relabel(self._data.reshape((n, rest)), inplace)

    def expand_dims(self, axis: int, inplace: bool = False) -> NDArray:
        """A new axis of size 1 at `axis` (in [-ndim-1, ndim]): a copy, or with inplace=True a
        view sharing this array's memory."""
        axis = int(axis)
        if not -self.ndim - 1 <= axis <= self.ndim:
            raise ShapeError(f"expand_dims: axis {axis} is out of range for an array of "
                             f"shape {self.shape}")
        if tape.tracked(self):
            return recorded.call("expand_dims", self, axis=axis)
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
        if tape.tracked(self):
            return recorded.call("Reshape", self, shape=squeezed.shape or (1,))
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

    # ------------------------------------------------------------------ indexing
    def __iter__(self) -> Iterator[NDArray]:
        for i in range(len(self)):
            yield self[i]

    def __getitem__(self, key) -> NDArray:
        data = self._data
        index = _int_key_as_slices(key, data.shape)  # one int per axis: a one-element view
        one_element = index is not None
        with device_scope(self._ctx):
            if index is None:
                index = _index_to_backend(key, self._xp, self._ctx)
            result = data[index]
            view_shape = tuple(result.shape) if _is_backend_array(result) else ()
            if one_element or not view_shape:  # a scalar: shape (1,), or () under np_shape
                result = self._xp.asarray(result).reshape(() if is_np_shape() else (1,))
        out = wrap(result, self._ctx)
        if tape.tracked(self):
            recorded.record_getitem(self, index, view_shape, out)
        return out

    def __setitem__(self, key, value) -> None:
        self._check_writable()
        if isinstance(key, slice) and key == slice(None) and not self._data.ndim:
            key = Ellipsis  # x[:] = v on a 0-d array (np_shape) writes its one element
        if (key is None or key is Ellipsis) and isinstance(value, NDArray) \
                and value.shape == self.shape:
            value.copyto(self)  # x[...] = v is v.copyto(x), which the tape may record
            return
        recorded.refuse_inplace(self, value)
        if isinstance(value, (numbers.Number, np.generic)):
            operand = _scalar_as(self._xp, value, self._data.dtype)
        else:
            operand = as_backend_operand(value, self._ctx)
        try:
            with device_scope(self._ctx):
                _assign(self._data, _index_to_backend(key, self._xp, self._ctx), operand)
        except ValueError as err:
            raise ShapeError(f"cannot assign a value of shape {tuple(operand.shape)} to index "
                             f"{key!r} of an array of "
                             f"shape {self.shape}") from err

    # MXNet's private name for it, which its tests call
    _basic_indexing_slice_is_contiguous = staticmethod(basic_slice_is_contiguous)

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
        if tape.tracked(self):
            return recorded.call("negative", self)
        with device_scope(self._ctx):
            return wrap(-self._data, self._ctx)

    def __pos__(self):
        return self

    def __abs__(self):
        if tape.tracked(self):
            return recorded.call("abs", self)
        with device_scope(self._ctx):
            return wrap(self._xp.abs(self._data), self._ctx)

    def _inplace(self, name, other):
        self._check_writable()
        recorded.refuse_inplace(self, other)
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

    # ------------------------------------------------------------------ copying, pickling
    def __copy__(self) -> NDArray:
        return self.copy()

    def __deepcopy__(self, memo) -> NDArray:
        return self.copy()

    def __reduce__(self):
        return (NDArray, (None,), self.__getstate__())


# Pickles and reprs name MXNet's module path, where ndarray.py re-exports the class.
NDArray.__module__ = "minimod.ndarray.ndarray"
