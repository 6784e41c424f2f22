"""The two sparse storage formats as backend arrays, and the conversions between them.

MXNet's formats, which minimod keeps (they are also its file format's, serialization.py):

* row_sparse: `values` of shape (k,) + shape[1:] holding the rows `indices` (k sorted, unique
  int64 row numbers) of an array of `shape`; every other row is zero.
* csr (2-D only): `values` (nnz,) and `indices` (nnz,) the column of each value, `indptr`
  (rows + 1,) where row r's values are values[indptr[r]:indptr[r + 1]], columns ascending.

Every function takes and returns backend arrays of one array module `xp` (NumPy or CuPy), so the
same code runs on either device; none loops over elements in Python.
"""
from __future__ import annotations

INDEX = "int64"  #: MXNet's dtype for indices and indptr


def rsp_from_dense(xp, dense):
    """(values, indices) of `dense` kept row-sparse: the rows with a nonzero value."""
    flat = dense.reshape(dense.shape[0], -1) if dense.ndim > 1 else dense.reshape(-1, 1)
    indices = xp.nonzero((flat != 0).any(axis=1))[0].astype(INDEX)
    return xp.take(dense, indices, axis=0), indices


def rsp_to_dense(xp, values, indices, shape):
    """The dense array of `shape` whose rows `indices` are `values`, zeros elsewhere."""
    out = xp.zeros(shape, dtype=values.dtype)
    if indices.size:
        out[indices] = values
    return out


def csr_from_dense(xp, dense):
    """(values, indptr, indices) of the 2-D `dense` in CSR: its nonzero values row by row."""
    if dense.ndim != 2:
        raise ValueError("csr storage holds 2-D arrays, not shape %s" % (tuple(dense.shape),))
    mask = dense != 0
    rows, cols = xp.nonzero(mask)
    indptr = xp.zeros(dense.shape[0] + 1, dtype=INDEX)
    xp.cumsum(mask.sum(axis=1), out=indptr[1:])
    return dense[rows, cols], indptr, cols.astype(INDEX)


def csr_rows(xp, indptr):
    """The row number of each stored value of a CSR array (expanded from `indptr`)."""
    counts = xp.diff(indptr)
    return xp.repeat(xp.arange(counts.shape[0], dtype=INDEX), counts)


def csr_to_dense(xp, values, indptr, indices, shape):
    """The dense array of the (canonical: no repeated column in a row) CSR components."""
    out = xp.zeros(shape, dtype=values.dtype)
    if values.size:
        out[csr_rows(xp, indptr), indices] = values
    return out


def csr_take_rows(xp, values, indptr, indices, rows):
    """The CSR components of rows `rows` (an int array, any order, repeats allowed)."""
    counts = xp.diff(indptr)[rows]
    new_indptr = xp.zeros(rows.shape[0] + 1, dtype=INDEX)
    xp.cumsum(counts, out=new_indptr[1:])
    # each picked value's position in the source: its row's start + its place in the row
    shift = xp.repeat(indptr[rows] - new_indptr[:-1], counts)
    source = shift + xp.arange(int(new_indptr[-1]), dtype=INDEX)
    return values[source], new_indptr, indices[source]


def row_union(xp, *index_arrays):
    """The sorted union of row index arrays."""
    parts = [i for i in index_arrays if i.size]
    if not parts:
        return xp.zeros((0,), dtype=INDEX)
    return xp.unique(xp.concatenate(parts)).astype(INDEX)


def rsp_gather(xp, values, indices, rows, row_shape):
    """The rows `rows` (sorted) of a row-sparse array, zeros where it holds no such row."""
    out = xp.zeros((rows.shape[0],) + tuple(row_shape), dtype=values.dtype)
    if indices.size and rows.size:
        pos = xp.searchsorted(indices, rows)
        pos_c = xp.minimum(pos, indices.shape[0] - 1)
        hit = indices[pos_c] == rows
        out[hit] = values[pos_c[hit]]
    return out


def check_rsp(xp, indices, shape, full: bool) -> str | None:
    """Why `indices` are not valid row-sparse indices of `shape`, or None; `full` also
    checks that they are sorted and unique."""
    if indices.size == 0:
        return None
    if int(indices.min()) < 0 or int(indices.max()) >= shape[0]:
        return "an index is outside [0, %d)" % shape[0]
    if full and bool((indices[1:] <= indices[:-1]).any()):
        return "indices are not sorted and unique"
    return None


def check_csr(xp, indptr, indices, shape, full: bool) -> str | None:
    """Why (indptr, indices) are not valid CSR components of `shape`, or None; `full` also
    checks that the columns of each row are sorted and unique."""
    if indptr.shape[0] != shape[0] + 1:
        return "indptr has %d entries for %d rows" % (indptr.shape[0], shape[0])
    if int(indptr[0]) != 0 or int(indptr[-1]) != indices.shape[0]:
        return "indptr does not run from 0 to the number of values (%d)" % indices.shape[0]
    if bool((xp.diff(indptr) < 0).any()):
        return "indptr decreases"
    if indices.size:
        if int(indices.min()) < 0 or int(indices.max()) >= shape[1]:
            return "a column index is outside [0, %d)" % shape[1]
        rows = csr_rows(xp, indptr)
        same_row = rows[1:] == rows[:-1]
        if full and bool((same_row & (indices[1:] <= indices[:-1])).any()):
            return "the column indices of a row are not sorted and unique"
    return None
