"""`RowSparseNDArray` and `CSRNDArray`: NDArrays kept in MXNet's sparse storage formats.

A sparse array holds its components (codec.py) and its shape; it is an NDArray, so every
routine and operator takes it. The operators with `keeps_sparse` map its stored values
(`_map_values`); the others read its dense view (`_data`, built on each read), as MXNet falls
back to dense storage, and return dense arrays. The dense view of
a row-sparse array that holds every row is its values array itself, so in-place updates of a
weight (the optimizers) write it; any other dense view is a fresh array, read-only where the
backend allows (NumPy), so that a write meant for the sparse array fails instead of vanishing.

Writes into a sparse array go through its own methods (`x[:] = v`, `copyto`, `+=` ...), which
store the result in the array's storage type. What MXNet restricts is restricted the same way:
csr arrays are 2-D, indexing takes rows (`csr[i]`, `csr[a:b]`), a row-sparse array only `[:]`.
"""
from __future__ import annotations

import numbers

import numpy as np

from ... import backend
from ...base import MXNetError, ShapeError
from ...context import Context
from ..core import NDArray, as_backend_operand, device_scope, wrap
from ..rules import normalize_dtype
from . import codec, math

__all__ = ["BaseSparseNDArray", "RowSparseNDArray", "CSRNDArray", "make_sparse", "encode",
           "cast_to"]


def _arithmetic(name: str, reflected: bool = False):
    """The operator method `self <name> other` (or `other <name> self`), by math.binary."""
    def method(self, other):
        return math.binary(name, other, self) if reflected else math.binary(name, self, other)
    return method


class BaseSparseNDArray(NDArray):
    """What the two sparse formats share: components, shape, dense view, copies and casts."""

    __slots__ = ("_values", "_aux", "_shape")
    _stype = ""

    # ------------------------------------------------------------------ state
    @property
    def _data(self):
        """The dense view (see the module docstring)."""
        dense = self._to_dense()
        if dense is not self._values:
            backend.read_only(self._xp, dense)
        return dense

    @_data.setter
    def _data(self, dense) -> None:
        # NDArrayBase.__init__ and unpickling store a dense array: keep it in this format
        self._store_dense(dense)

    @property
    def _xp(self):
        return backend.array_module_of(self._values)

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def dtype(self) -> type:
        return self._values.dtype.type

    @property
    def size(self) -> int:
        return int(np.prod(self._shape))

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def stype(self) -> str:
        return self._stype

    def __len__(self) -> int:
        return self._shape[0]

    def _set_components(self, values, aux: tuple, shape: tuple) -> None:
        self._values, self._aux, self._shape = values, tuple(aux), tuple(int(d) for d in shape)

    def _like(self, values, aux, shape=None) -> BaseSparseNDArray:
        """A new array of this storage type and context over backend components."""
        return make_sparse(self._stype, values, aux, shape or self._shape, self._ctx)

    def _encode(self, dense) -> BaseSparseNDArray:
        """A new array of this storage type and context holding the dense backend array."""
        return encode(self._stype, dense, self._ctx)

    def _map_values(self, fn) -> BaseSparseNDArray:
        """A new array of this storage type with the same indices and `fn` (NDArray ->
        NDArray, elementwise with f(0) = 0) of the stored values."""
        with device_scope(self._ctx):
            values = (self._values.copy() if self._values.size == 0
                      else fn(wrap(self._values, self._ctx))._data)
            return self._like(values, [a.copy() for a in self._aux])

    def _wrap_component(self, arr) -> NDArray:
        with device_scope(self._ctx):
            return wrap(arr.copy(), self._ctx)

    # ------------------------------------------------------------------ MXNet's accessors
    @property
    def data(self) -> NDArray:
        """A copy of the stored values."""
        return self._wrap_component(self._values)

    def _aux_data(self, i: int) -> NDArray:
        """A copy of auxiliary array `i` (row-sparse: 0 indices; csr: 0 indptr, 1 indices)."""
        return self._wrap_component(self._aux[i])

    @property
    def _num_aux(self) -> int:
        return len(self._aux)

    def asnumpy(self) -> np.ndarray:
        return np.array(backend.asnumpy(self._to_dense()), copy=True)

    def __repr__(self) -> str:
        return "\n<%s %s @%s>" % (type(self).__name__, "x".join(map(str, self._shape)),
                                  self._ctx)

    # ------------------------------------------------------------------ conversions
    def tostype(self, stype: str) -> NDArray:
        """A copy stored as `stype` ('default', 'row_sparse' or 'csr')."""
        return cast_to(self, stype)

    def copy(self) -> NDArray:
        return make_sparse(self._stype, self._values.copy(), [a.copy() for a in self._aux],
                           self._shape, self._ctx)

    def copyto(self, other):
        """Copy into `other` (an NDArray of the same shape, which keeps its own storage type)
        or to a new array of this storage type on a Context."""
        if isinstance(other, Context):
            return make_sparse(self._stype, backend.to_context(self._values, other, copy=True),
                               [backend.to_context(a, other, copy=True) for a in self._aux],
                               self._shape, other)
        if not isinstance(other, NDArray):
            raise TypeError("copyto does not support type %s" % type(other).__name__)
        if other is self:
            return other
        if other.shape != self.shape:
            raise ShapeError("copyto: source shape %s does not match destination shape %s"
                             % (self.shape, other.shape))
        other._check_writable()
        if isinstance(other, BaseSparseNDArray):
            if other._stype == self._stype:
                with device_scope(other._ctx):
                    other._set_components(
                        backend.to_context(self._values, other._ctx, copy=True).astype(
                            other.dtype, copy=False),
                        [backend.to_context(a, other._ctx, copy=True) for a in self._aux],
                        self._shape)
            else:
                other._store_dense(backend.to_context(self._to_dense(), other._ctx))
            return other
        backend.copy_into(other._data, self._to_dense())
        return other

    def as_in_context(self, context: Context) -> NDArray:
        return self if self._ctx == context else self.copyto(context)

    def astype(self, dtype, copy: bool = True) -> NDArray:
        kind = normalize_dtype(dtype)
        if not copy and kind == self.dtype:
            return self
        with device_scope(self._ctx):
            return make_sparse(self._stype, self._values.astype(kind),
                               [a.copy() for a in self._aux], self._shape, self._ctx)

    def check_format(self, full_check: bool = True) -> None:
        """Raise MXNetError when the components do not form a valid array of this format."""
        why = self._format_error(full_check)
        if why:
            raise MXNetError("%s of shape %s: %s" % (type(self).__name__, self._shape, why))

    # ------------------------------------------------------------------ writes
    def _store_dense(self, dense) -> None:
        """Keep the dense backend array `dense` (this array's shape) in this format."""
        raise NotImplementedError

    def __setitem__(self, key, value) -> None:
        self._check_writable()
        if not (isinstance(key, slice) and key == slice(None)) and key is not Ellipsis:
            raise MXNetError("%s supports assignment to [:] only, not %r"
                             % (type(self).__name__, key))
        if isinstance(value, NDArray):
            if value.shape != self.shape:
                raise ShapeError("cannot assign an array of shape %s to a %s of shape %s"
                                 % (value.shape, type(self).__name__, self.shape))
            value.copyto(self)
            return
        xp = self._xp
        with device_scope(self._ctx):
            if isinstance(value, (numbers.Number, np.generic)):
                dense = xp.full(self._shape, value, dtype=self.dtype)
            else:
                dense = as_backend_operand(value, self._ctx, self.dtype)
                if tuple(dense.shape) != self._shape:
                    dense = xp.broadcast_to(dense, self._shape)
            self._store_dense(dense)

    # ------------------------------------------------------------------ arithmetic (math.py)
    __add__, __radd__ = _arithmetic("add"), _arithmetic("add", reflected=True)
    __sub__, __rsub__ = _arithmetic("subtract"), _arithmetic("subtract", reflected=True)
    __mul__, __rmul__ = _arithmetic("multiply"), _arithmetic("multiply", reflected=True)
    __truediv__ = _arithmetic("divide")
    # comparisons with a scalar keep the storage type where MXNet's do (math.py)
    __eq__, __ne__ = _arithmetic("equal"), _arithmetic("not_equal")  # type: ignore[assignment]
    __gt__, __ge__ = _arithmetic("greater"), _arithmetic("greater_equal")
    __lt__, __le__ = _arithmetic("lesser"), _arithmetic("lesser_equal")
    __hash__ = NDArray.__hash__

    def __neg__(self):
        return math.negative(self)

    def _inplace(self, name, other):
        return math.inplace(self, name, other)

    def __getitem__(self, key):
        raise MXNetError("%s does not support indexing by %r" % (type(self).__name__, key))

    def __reduce__(self):
        return (_rebuild, (self._stype, backend.asnumpy(self._values),
                           [backend.asnumpy(a) for a in self._aux], self._shape,
                           self._ctx.device_type, self._ctx.device_id))


class RowSparseNDArray(BaseSparseNDArray):
    """An array that stores some of its rows (MXNet's 'row_sparse'): `data` holds the rows
    `indices` names, every other row is zero."""

    __slots__ = ()
    _stype = "row_sparse"

    @property
    def indices(self) -> NDArray:
        """A copy of the sorted row numbers that are stored."""
        return self._wrap_component(self._aux[0])

    def holds_all_rows(self) -> bool:
        """Whether every row is stored, in order (the values array is then the dense array)."""
        return int(self._aux[0].shape[0]) == self._shape[0]

    def _to_dense(self):
        if self.holds_all_rows():
            return self._values
        with device_scope(self._ctx):
            return codec.rsp_to_dense(self._xp, self._values, self._aux[0], self._shape)

    def _store_dense(self, dense) -> None:
        with device_scope(self._ctx):
            values, indices = codec.rsp_from_dense(backend.array_module_of(dense), dense)
        self._set_components(values.astype(dense.dtype, copy=False), (indices,), dense.shape)

    def store_all_rows(self):
        """Store every row (zeros where none was) and return the values array, which is then
        the dense array; what in-place updates of a row-sparse weight write into."""
        if not self.holds_all_rows():
            xp = self._xp
            with device_scope(self._ctx):
                dense = codec.rsp_to_dense(xp, self._values, self._aux[0], self._shape)
                self._set_components(dense, (xp.arange(self._shape[0], dtype=codec.INDEX),),
                                     self._shape)
        return self._values

    def _format_error(self, full_check: bool):
        indices = self._aux[0]
        if self._values.shape[0] != indices.shape[0]:
            return "%d rows of values for %d indices" % (self._values.shape[0], indices.shape[0])
        if tuple(self._values.shape[1:]) != self._shape[1:]:
            return "rows of shape %s, not %s" % (tuple(self._values.shape[1:]), self._shape[1:])
        return codec.check_rsp(self._xp, indices, self._shape, full_check)

    def __getitem__(self, key):
        if isinstance(key, slice) and key == slice(None):
            return self
        return super().__getitem__(key)

    def retain(self, indices) -> RowSparseNDArray:
        """The rows `indices` (an NDArray or array of row numbers) names, as a new row-sparse
        array storing exactly those rows (zeros for the ones this array does not store, as
        MXNet's `retain`)."""
        xp = self._xp
        raw = indices._data if isinstance(indices, NDArray) else np.asarray(indices)
        with device_scope(self._ctx):
            wanted = xp.unique(backend.to_context(raw, self._ctx).astype(codec.INDEX).ravel())
            if wanted.size and (int(wanted[0]) < 0 or int(wanted[-1]) >= self._shape[0]):
                raise MXNetError("retain: a row index is outside [0, %d)" % self._shape[0])
            values = codec.rsp_gather(xp, self._values, self._aux[0], wanted, self._shape[1:])
        return self._like(values, (wanted,))


class CSRNDArray(BaseSparseNDArray):
    """A 2-D array in compressed sparse row format (MXNet's 'csr')."""

    __slots__ = ()
    _stype = "csr"

    @property
    def indptr(self) -> NDArray:
        """A copy of the row pointers (rows + 1 of them)."""
        return self._wrap_component(self._aux[0])

    @property
    def indices(self) -> NDArray:
        """A copy of the column index of each stored value."""
        return self._wrap_component(self._aux[1])

    def _to_dense(self):
        with device_scope(self._ctx):
            return codec.csr_to_dense(self._xp, self._values, self._aux[0], self._aux[1],
                                      self._shape)

    def _store_dense(self, dense) -> None:
        if dense.ndim != 2:
            raise ShapeError("csr storage holds 2-D arrays, not shape %s" % (dense.shape,))
        with device_scope(self._ctx):
            values, indptr, indices = codec.csr_from_dense(backend.array_module_of(dense), dense)
        self._set_components(values.astype(dense.dtype, copy=False), (indptr, indices),
                             dense.shape)

    def _format_error(self, full_check: bool):
        indptr, indices = self._aux
        if self._values.shape != indices.shape:
            return "%d values for %d column indices" % (self._values.shape[0], indices.shape[0])
        return codec.check_csr(self._xp, indptr, indices, self._shape, full_check)

    def __getitem__(self, key):
        """Rows: `csr[i]` (a 1-row csr array, as MXNet) or `csr[a:b]` (step 1)."""
        rows = self._shape[0]
        if isinstance(key, (numbers.Integral, np.integer)):
            if not -rows <= key < rows:
                raise IndexError("index %d is out of bounds for %d rows" % (key, rows))
            key = slice(int(key) % rows, int(key) % rows + 1)
        if isinstance(key, slice) and key.step in (None, 1):
            return self.take_rows(np.arange(*key.indices(rows)))
        return super().__getitem__(key)

    def take_rows(self, rows) -> CSRNDArray:
        """A new csr array of the rows `rows` (row numbers, any order, repeats allowed)."""
        xp = self._xp
        with device_scope(self._ctx):
            picked = backend.to_context(np.asarray(rows, dtype=np.int64), self._ctx)
            values, indptr, indices = codec.csr_take_rows(xp, self._values, *self._aux, picked)
        return self._like(values, (indptr, indices), (int(picked.shape[0]), self._shape[1]))

    def asscipy(self):
        """This array as a `scipy.sparse.csr_matrix` (needs SciPy)."""
        try:
            import scipy.sparse as spsp
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise ImportError("CSRNDArray.asscipy needs SciPy (pip install scipy)") from err
        return spsp.csr_matrix((backend.asnumpy(self._values), backend.asnumpy(self._aux[1]),
                                backend.asnumpy(self._aux[0])), shape=self._shape)


_CLASSES = {"row_sparse": RowSparseNDArray, "csr": CSRNDArray}


def make_sparse(stype: str, values, aux, shape, ctx: Context) -> BaseSparseNDArray:
    """A sparse NDArray of `stype` over backend components (no copy, no checks)."""
    out = _CLASSES[stype].__new__(_CLASSES[stype])
    out._ctx, out._writable, out._ag = ctx, True, None
    out._set_components(values, aux, shape)
    return out


def encode(stype: str, dense, ctx: Context) -> BaseSparseNDArray:
    """A new sparse NDArray of `stype` on `ctx` holding the dense backend array `dense`."""
    out = make_sparse(stype, dense[:0], (), dense.shape, ctx)
    out._store_dense(dense)
    return out


def _rebuild(stype, values, aux, shape, device_type, device_id):
    ctx = Context(device_type, device_id)
    return make_sparse(stype, backend.to_context(values, ctx),
                       [backend.to_context(a, ctx) for a in aux], shape, ctx)


def cast_to(array: NDArray, stype: str) -> NDArray:
    """A copy of `array` stored as `stype`."""
    if stype not in ("default", "row_sparse", "csr"):
        raise MXNetError("unknown storage type %r (default, row_sparse or csr)" % (stype,))
    if array.stype == stype:
        return array.copy()
    ctx = array.context
    with device_scope(ctx):
        dense = array._to_dense() if isinstance(array, BaseSparseNDArray) else array._data
        if stype == "default":
            return wrap(dense.copy(), ctx)
        if stype == "csr" and dense.ndim != 2:
            raise MXNetError("cast_storage to csr needs a 2-D array, not shape %s"
                             % (tuple(dense.shape),))
        return encode(stype, dense, ctx)
