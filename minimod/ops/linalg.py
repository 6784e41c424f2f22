"""MXNet's `linalg` operators, part one: matrix products (gemm, gemm2, syrk), triangular multiply
and solve (trmm, trsm), and moving diagonals and triangles into and out of matrices
(sumlogdiag, extractdiag, makediag, extracttrian, maketrian). The factorisations (potrf, potri,
gelqf, syevd, inverse, det, slogdet) are in linalg_factor.py.

Every operator takes a batch of matrices: the last two axes of an input are one matrix
(rows, columns), the leading axes index the batch, and all inputs of one call have the same
batch axes (no broadcasting, as in MXNet). gemm and gemm2 may put the rows on another axis
(`axis`); the columns stay last. Batches run through NumPy/CuPy's batched routines (`matmul`,
`linalg.solve`), never a Python loop over the batch. Only float32 and float64 are accepted, as
in MXNet.

MXNet's names are `_linalg_<name>` with the alias `linalg_<name>` (there is no `linalg_syevd`
alias in MXNet 1.9.1, so none here); `mx.sym.linalg.X` / `mx.nd.linalg.X` reach them.

Triangular solves (trsm, and potrf's backward) call `xp.linalg.solve` (batched LU with partial
pivoting) on the triangular matrix with its unused triangle zeroed: neither NumPy nor CuPy has
a batched triangular solve, and solving keeps the rounding of a substitution where an explicit
inverse followed by a product would add a second rounding step through a possibly
ill-conditioned inverse. The one difference from MXNet's BLAS trsm: an exactly singular
triangular matrix raises LinAlgError where MXNet writes inf and NaN.
"""
from __future__ import annotations

import dataclasses
import math

from ..backend import matmul
from ..base import DTypeError, ShapeError
from .registry import Op, fmt_shape, register, shape_is_known

__all__ = [
    "LinalgOp", "Gemm", "Gemm2", "Trmm", "Trsm", "Syrk", "SumLogDiag", "ExtractDiag",
    "MakeDiag", "ExtractTrian", "MakeTrian", "swap_last", "triangle", "symmetric_from",
    "square_batch",
]

_FLOAT_TYPES = ("float32", "float64")


# ----------------------------------------------------------------------------- helpers

def swap_last(xp, x):
    """The transposes of a batch of matrices (a view)."""
    return xp.swapaxes(x, -1, -2)


def triangle(xp, x, lower: bool, k: int = 0):
    """The lower (`tril`) or upper (`triu`) triangle of each matrix, the rest zero."""
    return xp.tril(x, k) if lower else xp.triu(x, k)


def symmetric_from(xp, x, lower: bool):
    """The symmetric matrices whose lower (upper) triangle is x's; MXNet's `copyltu` for
    lower=True."""
    return triangle(xp, x, lower) + swap_last(xp, triangle(xp, x, lower, -1 if lower else 1))


def square_batch(shape, arg: str = "A"):
    """n for a known shape (..., n, n); raises ShapeError for anything else. None while the
    shape is unknown."""
    if not shape_is_known(shape):
        return None
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ShapeError("input '%s' has shape %s but needs square matrices (..., n, n)"
                         % (arg, fmt_shape(shape)))
    return shape[-1]


def _matrix_batch(shape, arg: str, rank: int = 2) -> bool:
    """True for a known shape of at least `rank` dims; raises for fewer."""
    if not shape_is_known(shape):
        return False
    if len(shape) < rank:
        raise ShapeError("input '%s' has shape %s but needs %s"
                         % (arg, fmt_shape(shape), "matrices (..., rows, columns)" if rank == 2
                            else "vectors (..., n)"))
    return True


def _batch_only(shape) -> tuple:
    """The output shape of a per-matrix scalar: the batch axes, (1,) for a single matrix."""
    return tuple(shape[:-2]) or (1,)


def _same_batch(a, b, skip: tuple, names=("A", "B")) -> None:
    if len(a) != len(b) or any(x != y for i, (x, y) in enumerate(zip(a, b)) if i not in skip):
        raise ShapeError("inputs '%s' %s and '%s' %s must have the same batch axes"
                         % (names[0], fmt_shape(a), names[1], fmt_shape(b)))


def _diag_index(xp, size: int, offset: int) -> tuple:
    """(rows, columns) of the offset-th diagonal of a size x size matrix."""
    i = xp.arange(size - abs(offset))
    return i - min(offset, 0), i + max(offset, 0)


def _trian_index(xp, size: int, offset: int, lower: bool) -> tuple:
    """(rows, columns) of MXNet's packed triangle of a size x size matrix: the lower triangle
    (offset < 0, or 0 with lower=True) row by row, the upper one column by column."""
    if offset < 0 or (offset == 0 and lower):
        return xp.tril_indices(size, offset)
    cols, rows = xp.tril_indices(size, -offset)
    return rows, cols


class LinalgOp(Op):
    """Base of the linalg operators: inputs named A, B, C; float32 or float64 only."""

    ARGUMENTS = ("A",)

    def infer_type(self, in_types, out_types):
        for i, t in enumerate(in_types):
            name = None if t is None else getattr(t, "name", getattr(t, "__name__", str(t)))
            if name is not None and name not in _FLOAT_TYPES:
                raise DTypeError("input '%s' has dtype %s but %s takes float32 or float64"
                                 % (self._in_name(i), name, self.name))
        return super().infer_type(in_types, out_types)


# ----------------------------------------------------------------------------- products

@dataclasses.dataclass(frozen=True)
class GemmAttrs:
    transpose_a: bool = False
    transpose_b: bool = False
    alpha: float = 1.0
    beta: float = 1.0
    axis: int = -2


@dataclasses.dataclass(frozen=True)
class Gemm2Attrs:
    transpose_a: bool = False
    transpose_b: bool = False
    alpha: float = 1.0
    axis: int = -2


class _Product(LinalgOp):
    """Shared math of gemm and gemm2: P = alpha * op(A) op(B), op(X) = X or X^T, the matrix
    rows on axis `axis` and the columns on the last axis of every input and of the output."""

    def _row_axis(self, ndim: int) -> int:
        axis = self.attrs.axis + ndim if self.attrs.axis < 0 else self.attrs.axis
        if not 0 <= axis < ndim - 1:
            raise ShapeError("axis=%d does not name a row axis of %d-D matrices (the columns "
                             "are the last axis)" % (self.attrs.axis, ndim))
        return axis

    def _product_shape(self, a, b):
        if not (_matrix_batch(a, "A") and _matrix_batch(b, "B")):
            return None
        axis = self._row_axis(len(a))
        _same_batch(a, b, (axis, len(a) - 1))
        ta, tb = self.attrs.transpose_a, self.attrs.transpose_b
        m, k = (a[-1], a[axis]) if ta else (a[axis], a[-1])
        k2, n = (b[-1], b[axis]) if tb else (b[axis], b[-1])
        if k != k2:
            raise ShapeError("inputs 'A' %s and 'B' %s do not chain (transpose_a=%s, "
                             "transpose_b=%s, axis=%d): %d columns against %d rows"
                             % (fmt_shape(a), fmt_shape(b), ta, tb, self.attrs.axis, k, k2))
        out = list(a)
        out[axis], out[-1] = m, n
        return tuple(out)

    def _rows_last(self, xp, x):
        axis = self._row_axis(x.ndim)
        return x if axis == x.ndim - 2 else xp.moveaxis(x, axis, -2)

    def _operands(self, xp, a, b):
        a, b = self._rows_last(xp, a), self._rows_last(xp, b)
        return (swap_last(xp, a) if self.attrs.transpose_a else a,
                swap_last(xp, b) if self.attrs.transpose_b else b)

    def _product_backward(self, xp, g, a, b, da, db) -> None:
        """dA, dB of sum(g * alpha op(A) op(B)), written in the inputs' own layout."""
        alpha = self.attrs.alpha
        g = self._rows_last(xp, g)
        op_a, op_b = self._operands(xp, a, b)
        if da is not None:
            self._rows_last(xp, da)[...] = alpha * (
                matmul(xp, op_b, swap_last(xp, g)) if self.attrs.transpose_a
                else matmul(xp, g, swap_last(xp, op_b)))
        if db is not None:
            self._rows_last(xp, db)[...] = alpha * (
                matmul(xp, swap_last(xp, g), op_a) if self.attrs.transpose_b
                else matmul(xp, swap_last(xp, op_a), g))


@register
class Gemm(_Product):
    """out = alpha * op(A) op(B) + beta * C for each matrix of the batch.

    A (..., m, k) (or (..., k, m) with transpose_a), B (..., k, n) (or (..., n, k)),
    C and out (..., m, n); with `axis` the rows sit on that axis instead of the second to last.
    Gradients: dA = alpha * g op(B)^T (transposed back), dB = alpha * op(A)^T g, dC = beta * g.
    """

    name = "_linalg_gemm"
    aliases = ("linalg_gemm",)
    Attrs = GemmAttrs
    ARGUMENTS = ("A", "B", "C")
    backward_inputs = (0, 1)
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        out = self._product_shape(in_shapes[0], in_shapes[1])
        if out is not None:
            self.set_out(out_shapes, 0, out, "op(A) op(B)")
        return self.same_shape(in_shapes, out_shapes, in_idx=[2], out_idx=[0])

    def forward(self, xp, inputs, aux, out, is_train):
        op_a, op_b = self._operands(xp, inputs[0], inputs[1])
        self._rows_last(xp, out[0])[...] = (self.attrs.alpha * matmul(xp, op_a, op_b)
                                            + self.attrs.beta * self._rows_last(xp, inputs[2]))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = out_grads[0]
        self._product_backward(xp, g, inputs[0], inputs[1], in_grads[0], in_grads[1])
        if in_grads[2] is not None:
            in_grads[2][...] = self.attrs.beta * g


@register
class Gemm2(_Product):
    """out = alpha * op(A) op(B) for each matrix of the batch: gemm without C (see Gemm)."""

    name = "_linalg_gemm2"
    aliases = ("linalg_gemm2",)
    Attrs = Gemm2Attrs
    ARGUMENTS = ("A", "B")
    backward_inputs = (0, 1)
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        out = self._product_shape(in_shapes[0], in_shapes[1])
        if out is not None:
            self.set_out(out_shapes, 0, out, "op(A) op(B)")
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        op_a, op_b = self._operands(xp, inputs[0], inputs[1])
        self._rows_last(xp, out[0])[...] = self.attrs.alpha * matmul(xp, op_a, op_b)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        self._product_backward(xp, out_grads[0], inputs[0], inputs[1], in_grads[0], in_grads[1])


@dataclasses.dataclass(frozen=True)
class SyrkAttrs:
    transpose: bool = False
    alpha: float = 1.0


@register
class Syrk(LinalgOp):
    """out = alpha * A A^T ((..., m, m) from A (..., m, n)), or alpha * A^T A ((..., n, n))
    with transpose. Gradient: alpha (g + g^T) A, or alpha A (g + g^T)."""

    name = "_linalg_syrk"
    aliases = ("linalg_syrk",)
    Attrs = SyrkAttrs
    backward_inputs = (0,)
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        a = in_shapes[0]
        if _matrix_batch(a, "A"):
            side = a[-1] if self.attrs.transpose else a[-2]
            self.set_out(out_shapes, 0, tuple(a[:-2]) + (side, side))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        a = inputs[0]
        at = swap_last(xp, a)
        out[0][...] = self.attrs.alpha * (matmul(xp, at, a) if self.attrs.transpose
                                          else matmul(xp, a, at))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is None:
            return
        g = out_grads[0]
        sym = g + swap_last(xp, g)
        a = inputs[0]
        in_grads[0][...] = self.attrs.alpha * (matmul(xp, a, sym) if self.attrs.transpose
                                               else matmul(xp, sym, a))


# ----------------------------------------------------------------------------- triangular

@dataclasses.dataclass(frozen=True)
class TriangularAttrs:
    transpose: bool = False
    rightside: bool = False
    lower: bool = True
    alpha: float = 1.0


class _Triangular(LinalgOp):
    """Shared shapes of trmm and trsm: A (..., n, n) triangular (only its `lower` or upper
    triangle is read), B and out (..., n, k), or (..., k, n) with rightside."""

    Attrs = TriangularAttrs
    ARGUMENTS = ("A", "B")

    def infer_shape(self, in_shapes, out_shapes):
        self.same_shape(in_shapes, out_shapes, in_idx=[1], out_idx=[0])
        a, b = in_shapes
        square_batch(a)
        if _matrix_batch(b, "B"):
            side = b[-1] if self.attrs.rightside else b[-2]
            self.set_in(in_shapes, 0, tuple(b[:-2]) + (side, side),
                        "B %s with rightside=%s" % (fmt_shape(b), self.attrs.rightside))
        return in_shapes, out_shapes

    def _op_a(self, xp, a):
        t = triangle(xp, a, self.attrs.lower)
        return swap_last(xp, t) if self.attrs.transpose else t

    def _grad_a(self, xp, d_op_a, da) -> None:
        """dA from the gradient of op(A): transposed back, the unread triangle zero."""
        if self.attrs.transpose:
            d_op_a = swap_last(xp, d_op_a)
        da[...] = triangle(xp, d_op_a, self.attrs.lower)


@register
class Trmm(_Triangular):
    """out = alpha * op(A) B, or alpha * B op(A) with rightside; op(A) = A or A^T
    (transpose), A triangular. Gradients: dB = alpha op(A)^T g (alpha g op(A)^T), d op(A) =
    alpha g B^T (alpha B^T g), restricted to A's triangle."""

    name = "_linalg_trmm"
    aliases = ("linalg_trmm",)
    backward_inputs = (0, 1)
    backward_outputs = ()

    def forward(self, xp, inputs, aux, out, is_train):
        op_a, b = self._op_a(xp, inputs[0]), inputs[1]
        out[0][...] = self.attrs.alpha * (matmul(xp, b, op_a) if self.attrs.rightside
                                          else matmul(xp, op_a, b))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g, b, alpha = out_grads[0], inputs[1], self.attrs.alpha
        op_a = self._op_a(xp, inputs[0])
        right = self.attrs.rightside
        if in_grads[1] is not None:
            in_grads[1][...] = alpha * (matmul(xp, g, swap_last(xp, op_a)) if right
                                        else matmul(xp, swap_last(xp, op_a), g))
        if in_grads[0] is not None:
            d_op_a = alpha * (matmul(xp, swap_last(xp, b), g) if right
                              else matmul(xp, g, swap_last(xp, b)))
            self._grad_a(xp, d_op_a, in_grads[0])


@register
class Trsm(_Triangular):
    """out = alpha * op(A)^-1 B, or alpha * B op(A)^-1 with rightside (A triangular, see the
    module docstring for how the solve is done). With W = op(A)^-T g (g op(A)^-T):
    dB = alpha W, d op(A) = -W out^T (-out^T W), restricted to A's triangle."""

    name = "_linalg_trsm"
    aliases = ("linalg_trsm",)
    backward_inputs = (0,)
    backward_outputs = (0,)

    def forward(self, xp, inputs, aux, out, is_train):
        op_a, b = self._op_a(xp, inputs[0]), inputs[1]
        if self.attrs.rightside:
            x = swap_last(xp, xp.linalg.solve(swap_last(xp, op_a), swap_last(xp, b)))
        else:
            x = xp.linalg.solve(op_a, b)
        out[0][...] = self.attrs.alpha * x

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g, x = out_grads[0], outputs[0]
        op_a = self._op_a(xp, inputs[0])
        if self.attrs.rightside:
            w = swap_last(xp, xp.linalg.solve(op_a, swap_last(xp, g)))
        else:
            w = xp.linalg.solve(swap_last(xp, op_a), g)
        if in_grads[1] is not None:
            in_grads[1][...] = self.attrs.alpha * w
        if in_grads[0] is not None:
            d_op_a = -(matmul(xp, swap_last(xp, x), w) if self.attrs.rightside
                       else matmul(xp, w, swap_last(xp, x)))
            self._grad_a(xp, d_op_a, in_grads[0])


# ----------------------------------------------------------------------------- diagonals

@register
class SumLogDiag(LinalgOp):
    """out = sum_i log A_ii per matrix: A (..., n, n) gives the batch shape, (1,) for a
    single matrix. Gradient: g / A_ii on the diagonal, zero elsewhere."""

    name = "_linalg_sumlogdiag"
    aliases = ("linalg_sumlogdiag",)
    backward_inputs = (0,)
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        if square_batch(in_shapes[0]) is not None:
            self.set_out(out_shapes, 0, _batch_only(in_shapes[0]))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        diag = xp.diagonal(inputs[0], 0, -2, -1)
        out[0][...] = xp.reshape(xp.sum(xp.log(diag), axis=-1), out[0].shape)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        da = in_grads[0]
        if da is None:
            return
        a = inputs[0]
        g = xp.reshape(out_grads[0], a.shape[:-2] + (1,))
        rows, cols = _diag_index(xp, a.shape[-1], 0)
        da.fill(0)
        da[..., rows, cols] = g / a[..., rows, cols]


@dataclasses.dataclass(frozen=True)
class OffsetAttrs:
    offset: int = 0


@dataclasses.dataclass(frozen=True)
class TrianAttrs:
    offset: int = 0
    lower: bool = True


def _check_offset(op: Op, n: int) -> None:
    if abs(op.attrs.offset) >= n:
        raise ShapeError("offset=%d is outside %d x %d matrices" % (op.attrs.offset, n, n))


@register
class ExtractDiag(LinalgOp):
    """out[..., i] = A[..., i - min(k, 0), i + max(k, 0)] (k = offset, > 0 above the main
    diagonal): A (..., n, n) gives (..., n - |k|). Gradient: g back on that diagonal."""

    name = "_linalg_extractdiag"
    aliases = ("linalg_extractdiag",)
    Attrs = OffsetAttrs
    backward_inputs = ()
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        n = square_batch(in_shapes[0])
        if n is not None:
            _check_offset(self, n)
            self.set_out(out_shapes, 0, tuple(in_shapes[0][:-2]) + (n - abs(self.attrs.offset),))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        out[0][...] = xp.diagonal(inputs[0], self.attrs.offset, -2, -1)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        da = in_grads[0]
        if da is not None:
            da.fill(0)
            da[(Ellipsis,) + _diag_index(xp, da.shape[-1], self.attrs.offset)] = out_grads[0]


@register
class MakeDiag(LinalgOp):
    """The (..., n + |k|, n + |k|) matrices, zero but for A (..., n) on diagonal k = offset.
    Gradient: that diagonal of g."""

    name = "_linalg_makediag"
    aliases = ("linalg_makediag",)
    Attrs = OffsetAttrs
    backward_inputs = ()
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        a = in_shapes[0]
        if _matrix_batch(a, "A", rank=1):
            side = a[-1] + abs(self.attrs.offset)
            self.set_out(out_shapes, 0, tuple(a[:-1]) + (side, side))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        y = out[0]
        y.fill(0)
        y[(Ellipsis,) + _diag_index(xp, y.shape[-1], self.attrs.offset)] = inputs[0]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            g = out_grads[0]
            in_grads[0][...] = g[(Ellipsis,) + _diag_index(xp, g.shape[-1], self.attrs.offset)]


@register
class ExtractTrian(LinalgOp):
    """A triangle of each matrix packed into a vector: the lower one (offset k < 0, or 0 with
    lower) row by row, the upper one (k > 0, or 0 with lower=False) column by column, starting
    at diagonal k. A (..., n, n) gives (..., m (m + 1) / 2), m = n - |k|. Gradient: g back in
    place, zero elsewhere."""

    name = "_linalg_extracttrian"
    aliases = ("linalg_extracttrian",)
    Attrs = TrianAttrs
    backward_inputs = ()
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        n = square_batch(in_shapes[0])
        if n is not None:
            _check_offset(self, n)
            m = n - abs(self.attrs.offset)
            self.set_out(out_shapes, 0, tuple(in_shapes[0][:-2]) + (m * (m + 1) // 2,))
        return in_shapes, out_shapes

    def _index(self, xp, n: int) -> tuple:
        return (Ellipsis,) + _trian_index(xp, n, self.attrs.offset, self.attrs.lower)

    def forward(self, xp, inputs, aux, out, is_train):
        a = inputs[0]
        out[0][...] = a[self._index(xp, a.shape[-1])]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        da = in_grads[0]
        if da is not None:
            da.fill(0)
            da[self._index(xp, da.shape[-1])] = out_grads[0]


@register
class MakeTrian(LinalgOp):
    """The inverse of extracttrian: A (..., m (m + 1) / 2) unpacked into the triangle of
    (..., m + |k|, m + |k|) matrices, zero elsewhere. Gradient: the triangle of g, packed."""

    name = "_linalg_maketrian"
    aliases = ("linalg_maketrian",)
    Attrs = TrianAttrs
    backward_inputs = ()
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        a = in_shapes[0]
        if _matrix_batch(a, "A", rank=1):
            m = (math.isqrt(8 * a[-1] + 1) - 1) // 2
            if m * (m + 1) // 2 != a[-1] or m == 0:
                raise ShapeError("input 'A' has shape %s but its last axis must hold a "
                                 "triangle, m (m + 1) / 2 values" % fmt_shape(a))
            side = m + abs(self.attrs.offset)
            self.set_out(out_shapes, 0, tuple(a[:-1]) + (side, side))
        return in_shapes, out_shapes

    def _index(self, xp, n: int) -> tuple:
        return (Ellipsis,) + _trian_index(xp, n, self.attrs.offset, self.attrs.lower)

    def forward(self, xp, inputs, aux, out, is_train):
        y = out[0]
        y.fill(0)
        y[self._index(xp, y.shape[-1])] = inputs[0]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            g = out_grads[0]
            in_grads[0][...] = g[self._index(xp, g.shape[-1])]
