"""Array and matrix makers of MXNet's `test_utils` (used by tests of large tensors and of the
linear-algebra operators), elementwise helpers and a graph-structure comparison."""
from __future__ import annotations

import json
import platform

import numpy as np

from .. import ndarray as nd

__all__ = ["assign_each", "assign_each2", "create_2d_tensor", "create_vector",
           "get_identity_mat", "get_identity_mat_batch", "new_matrix_with_real_eigvals_2d",
           "new_matrix_with_real_eigvals_nd", "new_orthonormal_matrix_2d",
           "new_sym_matrix_with_real_eigvals_2d", "new_sym_matrix_with_real_eigvals_nd",
           "same_symbol_structure", "checkShapes", "is_aarch64_run"]


def assign_each(the_input, function):
    """function applied to every element (float64), or a copy when function is None."""
    if function is None:
        return np.array(the_input)
    return np.vectorize(function, otypes=[np.float64])(the_input)


def assign_each2(input1, input2, function):
    """function applied to every pair of elements of two arrays of one shape (float64)."""
    if function is None:
        return np.array(input1)
    if np.shape(input1) != np.shape(input2):
        raise ValueError("assign_each2: shapes %s and %s differ"
                         % (np.shape(input1), np.shape(input2)))
    return np.vectorize(function, otypes=[np.float64])(input1, input2)


def create_2d_tensor(rows: int, columns: int, dtype=np.int64):
    """(rows, columns) NDArray whose row i is all i."""
    return nd.broadcast_to(nd.arange(0, rows, dtype=dtype).reshape(rows, 1),
                           shape=(rows, columns))


def create_vector(size: int, dtype=np.int64):
    """0, 1, ..., size - 1 as an NDArray."""
    return nd.arange(0, size, dtype=dtype)


def get_identity_mat(size: int):
    return nd.array(np.eye(size, dtype=np.float32))


def get_identity_mat_batch(size: int):
    """Two identity matrices, (2, size, size)."""
    return nd.array(np.stack([np.eye(size, dtype=np.float32)] * 2))


def new_orthonormal_matrix_2d(n: int) -> np.ndarray:
    """A random orthonormal (n, n) matrix (Q of a QR factorization)."""
    x = np.random.randn(n, n)
    return np.linalg.qr(x.T @ x)[0]


def new_matrix_with_real_eigvals_2d(n: int) -> np.ndarray:
    """A random (n, n) matrix similar to a diagonal one with eigenvalues in (-10, 10), through a
    well-conditioned (condition number below 3) change of basis."""
    while True:
        v = np.random.uniform(-1.0, 1.0, (n, 1))
        v /= np.linalg.norm(v)
        basis = (np.eye(n) - 2 * v @ v.T) @ np.diag(np.random.uniform(-1.0, 1.0, n))
        if np.linalg.cond(basis, 2) < 3:
            break
    return np.linalg.inv(basis) @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ basis


def new_sym_matrix_with_real_eigvals_2d(n: int) -> np.ndarray:
    """A random symmetric (n, n) matrix with eigenvalues in (-10, 10)."""
    q = new_orthonormal_matrix_2d(n)
    return q.T @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ q


def _batched(make, shape) -> np.ndarray:
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([make(shape[-1]) for _ in range(count)]).reshape(shape)


def new_matrix_with_real_eigvals_nd(shape) -> np.ndarray:
    return _batched(new_matrix_with_real_eigvals_2d, shape)


def new_sym_matrix_with_real_eigvals_nd(shape) -> np.ndarray:
    return _batched(new_sym_matrix_with_real_eigvals_2d, shape)


def same_symbol_structure(sym1, sym2) -> bool:
    """Whether the two graphs have the same operator at every node position."""
    nodes1 = json.loads(sym1.tojson())["nodes"]
    nodes2 = json.loads(sym2.tojson())["nodes"]
    return all(a["op"] == b["op"] for a, b in zip(nodes1, nodes2))


def checkShapes(a, b) -> None:  # noqa: N802 - MXNet's name
    if a.shape != b.shape:
        raise AssertionError("a.shape = %s and b.shape = %s are not equal"
                             % (a.shape, b.shape))


def is_aarch64_run() -> bool:
    return platform.machine() == "aarch64"
