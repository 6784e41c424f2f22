"""Random test data and the default context and dtype of tests.

`default_context()` is the context tests run on (the current context unless
`set_default_context` chose one); `set_default_context(ctx)` also makes `ctx` the current
context, as in MXNet, so arrays created without a `ctx` land there. Random data comes from
NumPy's global generator (seed it, or use MXNet's `@with_seed()`), in the order MXNet's
helpers draw it, so a seeded test sees MXNet's numbers.
"""
from __future__ import annotations

import numpy as np

from .. import backend
from ..base import MXNetError
from ..context import Context, current_context
from ..ndarray import sparse
from ..ndarray.ndarray import NDArray
from ..ndarray.ndarray import array as nd_array
from ..ndarray.sparse import codec

__all__ = ["default_context", "set_default_context", "default_dtype", "rand_shape_2d",
           "rand_shape_3d", "rand_shape_nd", "rand_coord_2d", "rand_ndarray",
           "rand_sparse_ndarray", "create_sparse_array", "create_sparse_array_zd",
           "shuffle_csr_column_indices", "random_arrays", "random_uniform_arrays", "random_sample",
           "np_reduce", "collapse_sum_like", "new_matrix_with_real_eigvals_nd",
           "new_sym_matrix_with_real_eigvals_nd", "list_gpus"]


def default_context() -> Context:
    """The context tests run on: the current context (cpu(0) unless changed)."""
    return current_context()


def set_default_context(ctx: Context) -> None:
    """Make `ctx` the default context of tests and of array creation in this thread."""
    if not isinstance(ctx, Context):
        raise TypeError("set_default_context takes a Context, got %s" % type(ctx).__name__)
    Context._default.value = ctx


def default_dtype() -> type:
    """The dtype of test data: float32."""
    return np.float32


def _low(allow_zero_size: bool) -> int:
    return 0 if allow_zero_size else 1


def rand_shape_2d(dim0: int = 10, dim1: int = 10, allow_zero_size: bool = False) -> tuple:
    """A random (d0, d1) with 1 <= d0 <= dim0, 1 <= d1 <= dim1 (0 allowed on request)."""
    low = _low(allow_zero_size)
    return np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1)


def rand_shape_3d(dim0: int = 10, dim1: int = 10, dim2: int = 10,
                  allow_zero_size: bool = False) -> tuple:
    low = _low(allow_zero_size)
    return (np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1),
            np.random.randint(low, dim2 + 1))


def rand_shape_nd(num_dim: int, dim: int = 10, allow_zero_size: bool = False) -> tuple:
    """A random shape of `num_dim` dims, each in [1, dim] (or [0, dim])."""
    return tuple(np.random.randint(_low(allow_zero_size), dim + 1, size=num_dim))


def rand_coord_2d(x_low: int, x_high: int, y_low: int, y_high: int) -> tuple:
    """A random integer point with x_low <= x < x_high and y_low <= y < y_high."""
    return np.random.randint(x_low, x_high), np.random.randint(y_low, y_high)


def random_arrays(*shapes):
    """Standard-normal float32 arrays of the given shapes (one array for one shape; a shape
    of () gives a 0-d array)."""
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0
              else np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes, low: float = 0.0, high: float = 1.0, dtype=None):
    """Uniform [low, high) arrays of the given shapes, as `dtype` (default float32)."""
    dtype = dtype or default_dtype()
    arrays = [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_sample(population, k: int) -> list:
    """k distinct elements of the list `population`, in random order."""
    if not 0 <= k <= len(population):
        raise ValueError("random_sample: k=%d is outside [0, %d]" % (k, len(population)))
    shuffled = list(population)
    np.random.shuffle(shuffled)
    return shuffled[:k]


def rand_ndarray(shape, stype: str = "default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices: bool = False, distribution=None, ctx=None) -> NDArray:
    """A random NDArray on `ctx` (default: the default context): standard-normal values
    when dense; for 'row_sparse' and 'csr', `rand_sparse_ndarray`'s array."""
    if stype != "default":
        return rand_sparse_ndarray(shape, stype, density=density, dtype=dtype,
                                   modifier_func=modifier_func,
                                   shuffle_csr_indices=shuffle_csr_indices,
                                   distribution=distribution, ctx=ctx)[0]
    return nd_array(random_arrays(tuple(shape)), ctx=ctx or default_context(), dtype=dtype)


def rand_sparse_ndarray(shape, stype: str, density=None, dtype=None, distribution=None,
                        data_init=None, rsp_indices=None, modifier_func=None,
                        shuffle_csr_indices: bool = False, ctx=None):
    """A random sparse array and its components, as MXNet's helper returns them.

    'row_sparse': each row is stored with probability `density` (default: a uniform draw),
    or the rows `rsp_indices`; values uniform in [0, 1). Returns (array, (values, indices)).
    'csr' (2-D): each element is stored with probability `density`, values uniform in
    [0, 1); `shuffle_csr_indices` permutes the column indices within each row. Returns
    (array, (indptr, indices, values)). `data_init` sets every stored value, `modifier_func`
    maps each one; distribution='powerlaw' (csr) gives `_powerlaw_csr`'s."""
    density = np.random.rand() if density is None else density
    dtype = dtype or default_dtype()
    ctx = ctx or default_context()
    shape = tuple(shape)
    if distribution not in (None, "uniform"):
        return _powerlaw_array(shape, stype, density, dtype, ctx, distribution)
    if stype == "row_sparse":
        if rsp_indices is not None:
            indices = np.asarray(rsp_indices, dtype=np.int64)
        else:
            indices = np.argwhere(np.random.rand(shape[0]) < density).reshape(-1)
        values = _stored_values(np.random.rand(indices.shape[0], *shape[1:]), dtype,
                                data_init, modifier_func)
        array = sparse.row_sparse_array((values, indices), shape=shape, dtype=dtype, ctx=ctx)
        return array, (values, indices)
    if stype != "csr":
        raise MXNetError("rand_sparse_ndarray: unknown storage type %r" % (stype,))
    if len(shape) != 2:
        raise MXNetError("rand_sparse_ndarray: csr arrays are 2-D, not shape %s" % (shape,))
    mask = np.random.rand(*shape) < density
    rows, cols = np.nonzero(mask)
    values = _stored_values(np.random.rand(rows.shape[0]), dtype, data_init, modifier_func)
    indptr = np.concatenate([[0], np.cumsum(mask.sum(axis=1))]).astype(np.int64)
    if shuffle_csr_indices:
        cols = _shuffled_in_rows(cols, rows)
    array = sparse.csr_matrix((values, cols, indptr), shape=shape, dtype=dtype, ctx=ctx)
    return array, (array.indptr, array.indices, array.data)


def _powerlaw_array(shape: tuple, stype: str, density, dtype, ctx, distribution) -> tuple:
    if distribution != "powerlaw":
        raise MXNetError("rand_sparse_ndarray: distribution %r is not one of 'uniform' and "
                         "'powerlaw'" % (distribution,))
    if stype != "csr" or len(shape) != 2:
        raise MXNetError("rand_sparse_ndarray: the 'powerlaw' distribution makes 2-D csr "
                         "arrays only, not %s of shape %s" % (stype, shape))
    array = sparse.csr_matrix(_powerlaw_csr(shape[0], shape[1], density, dtype), ctx=ctx)
    return array, (array.indptr, array.indices, array.data)


def _powerlaw_csr(rows: int, cols: int, density: float, dtype) -> np.ndarray:
    """MXNet's power-law test matrix (dense here): int(rows * cols * density) stored values,
    each 1 + U(0.001, 2); first column 0 of every row, then row i its columns 1 .. 2**(i+1) - 1
    (a row that reaches the last column while more values are left is stored whole), row
    after row until the count is used. Counts under 2 per row are refused, as MXNet does."""
    total = int(rows * cols * density)
    if not 0 <= density <= 1 or rows <= 0 or cols <= 0 or total < 2 * rows:
        raise ValueError("powerlaw: needs 0 <= density <= 1, rows and columns > 0 and "
                         "rows * cols * density >= 2 * rows; got density %s for shape (%d, %d)"
                         % (density, rows, cols))
    out = np.zeros((rows, cols), dtype=dtype)
    out[:, 0] = 1 + np.random.uniform(0.001, 2, rows)
    left, limit = total - rows, 2
    for row in range(rows):
        width = min(cols, limit)
        if width == cols and left > width:  # the whole row, one value
            out[row] = 1 + np.random.uniform(0.001, 2)
            left -= width - 1
        else:
            count = min(width - 1, left)
            out[row, 1:1 + count] = 1 + np.random.uniform(0.001, 2, count)
            left -= count
            limit *= 2
        if left <= 0:
            return out
    raise ValueError("powerlaw: density %s is too high for shape (%d, %d)"
                     % (density, rows, cols))


def create_sparse_array(shape, stype: str, data_init=None, rsp_indices=None, dtype=None,
                        modifier_func=None, density=0.5, shuffle_csr_indices: bool = False):
    """`rand_sparse_ndarray`'s array alone (density 0.5 by default); a row-sparse array's
    `rsp_indices` are sorted first, so its rows are in canonical order."""
    if stype not in ("row_sparse", "csr"):
        raise AssertionError("Unknown storage type: %s" % (stype,))
    if stype == "row_sparse" and rsp_indices is not None:
        rsp_indices = np.sort(np.asarray(rsp_indices))
    array, _ = rand_sparse_ndarray(shape, stype, density=density, dtype=dtype,
                                   data_init=data_init, modifier_func=modifier_func,
                                   rsp_indices=rsp_indices if stype == "row_sparse" else None,
                                   shuffle_csr_indices=shuffle_csr_indices)
    return array


def create_sparse_array_zd(shape, stype: str, density, data_init=None, rsp_indices=None,
                           dtype=None, modifier_func=None, shuffle_csr_indices: bool = False):
    """`create_sparse_array` where a row-sparse array stores exactly the rows `rsp_indices`
    (none without them: density 0), and a csr one has the given density."""
    if stype == "row_sparse":
        density = 0.0
        if rsp_indices is not None and len(rsp_indices) > shape[0]:
            raise AssertionError("%d row indices for %d rows" % (len(rsp_indices), shape[0]))
    return create_sparse_array(shape, stype, data_init=data_init, rsp_indices=rsp_indices,
                               dtype=dtype, modifier_func=modifier_func, density=density,
                               shuffle_csr_indices=shuffle_csr_indices)


def shuffle_csr_column_indices(csr) -> None:
    """Permute, in place, the column indices within each row of `csr` (a SciPy CSR matrix or
    any object with `indptr` and writable `indices` arrays), as a valid CSR matrix allows."""
    rows = codec.csr_rows(np, np.asarray(csr.indptr))
    csr.indices[:] = _shuffled_in_rows(np.asarray(csr.indices), rows)


def _shuffled_in_rows(cols: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """`cols` (one per stored entry, in row order; `rows` their rows) in a random order
    within each row."""
    return cols[np.lexsort((np.random.rand(cols.shape[0]), rows))]


def _stored_values(values: np.ndarray, dtype, data_init, modifier_func) -> np.ndarray:
    values = values.astype(dtype)
    if data_init is not None:
        values.fill(data_init)
    if modifier_func is not None:
        values = np.vectorize(modifier_func, otypes=[values.dtype])(values) if values.size \
            else values
    return values


def np_reduce(data: np.ndarray, axis, keepdims: bool, numpy_reduce_func) -> np.ndarray:
    """Reduce `data` over `axis` (an int, a sequence, or None for all axes) one axis at a
    time with `numpy_reduce_func(array, axis=i)`, keeping reduced axes as 1 on request."""
    if axis is None:
        axes = list(range(data.ndim))
    elif isinstance(axis, (int, np.integer)):
        axes = [int(axis)]
    else:
        axes = list(axis)
    result = data
    for i in sorted(axes, reverse=True):
        result = numpy_reduce_func(result, axis=i)
    if keepdims:
        shape = list(data.shape)
        for i in axes:
            shape[i] = 1
        result = np.reshape(result, shape)
    return result


def collapse_sum_like(a: np.ndarray, shape) -> np.ndarray:
    """Sum `a` over the axes broadcasting stretched to reach its shape from `shape`."""
    shape = tuple(shape)
    lead = a.ndim - len(shape)
    summed = a.sum(axis=tuple(range(lead))) if lead > 0 else a
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and summed.shape[i] != 1)
    return summed.sum(axis=axes, keepdims=True) if axes else summed


def new_matrix_with_real_eigvals_nd(shape) -> np.ndarray:
    """Well-conditioned square matrices (batched over leading dims) with real eigenvalues
    in [1, 2]: Q diag(lambda) Q^-1 with a random orthogonal Q."""
    n = shape[-1]
    batch = int(np.prod(shape[:-2], dtype=np.int64))
    mats = []
    for _ in range(batch):
        q, _ = np.linalg.qr(np.random.uniform(-1, 1, size=(n, n)))
        mats.append(q @ np.diag(np.random.uniform(1, 2, size=n)) @ np.linalg.inv(q))
    return np.array(mats).reshape(shape)


def new_sym_matrix_with_real_eigvals_nd(shape) -> np.ndarray:
    """Symmetric matrices (batched) with eigenvalues in [1, 2]: Q diag(lambda) Q^T."""
    n = shape[-1]
    batch = int(np.prod(shape[:-2], dtype=np.int64))
    mats = []
    for _ in range(batch):
        q, _ = np.linalg.qr(np.random.uniform(-1, 1, size=(n, n)))
        mats.append(q @ np.diag(np.random.uniform(1, 2, size=n)) @ q.T)
    return np.array(mats).reshape(shape)


def list_gpus() -> list:
    """The ids of the GPUs minimod can use (CuPy's visible devices)."""
    return list(range(backend.gpu_count()))
