"""MXNet's `linalg` operators, part two: factorisations and what is computed from them (potrf,
potri, gelqf, syevd, inverse, det, slogdet). Conventions (batches of matrices on the last two
axes, float32/float64, `_linalg_<name>` with alias `linalg_<name>`) are those of linalg.py.

The backward formulas are the matrix-calculus identities MXNet uses (Seeger et al., "Auto-
differentiating linear algebra"), written as batched `matmul` and `linalg.solve` calls; a
triangular solve is an `xp.linalg.solve` on the triangular matrix (why: linalg.py).
"""
from __future__ import annotations

import dataclasses

from ..base import ShapeError
from .linalg import LinalgOp, square_batch, swap_last, symmetric_from, triangle
from .registry import fmt_shape, register, shape_is_known

__all__ = ["Potrf", "Potri", "Gelqf", "Syevd", "Inverse", "Det", "SlogDet"]


@dataclasses.dataclass(frozen=True)
class CholeskyAttrs:
    lower: bool = True


class _SquareSameShape(LinalgOp):
    """A (..., n, n) in, one matrix of the same shape out."""

    def infer_shape(self, in_shapes, out_shapes):
        self.same_shape(in_shapes, out_shapes)
        square_batch(in_shapes[0])
        return in_shapes, out_shapes


@register
class Potrf(_SquareSameShape):
    """Cholesky factor of symmetric positive definite matrices: out = L with A = L L^T
    (lower), or U with A = U^T U (lower=False); only A's lower (upper) triangle is read.

    Backward (symmetric, as MXNet's): with L the lower factor and dL its gradient,
    dA = 0.5 * L^-T copyltu(L^T dL) L^-1, copyltu(M) = the symmetric matrix with M's lower
    triangle."""

    name = "_linalg_potrf"
    aliases = ("linalg_potrf",)
    Attrs = CholeskyAttrs
    PARAM_ORDER = ()  # MXNet's frontend lists no parameter; `lower` comes by keyword
    backward_inputs = ()
    backward_outputs = (0,)

    def forward(self, xp, inputs, aux, out, is_train):
        lower = self.attrs.lower
        factor = xp.linalg.cholesky(symmetric_from(xp, inputs[0], lower))
        out[0][...] = factor if lower else swap_last(xp, factor)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is None:
            return
        lower = self.attrs.lower
        chol, g = outputs[0], out_grads[0]
        if not lower:
            chol, g = swap_last(xp, chol), swap_last(xp, g)
        chol_t = swap_last(xp, chol)
        inner = symmetric_from(xp, xp.matmul(chol_t, g), True)
        left = xp.linalg.solve(chol_t, inner)                          # L^-T P
        both = swap_last(xp, xp.linalg.solve(chol_t, swap_last(xp, left)))  # L^-T P L^-1
        in_grads[0][...] = 0.5 * both


@register
class Potri(_SquareSameShape):
    """Inverse from a Cholesky factor: out = (L L^T)^-1 with L = A's lower triangle, or
    (U^T U)^-1 with U = A's upper triangle (lower=False).

    Backward: dL = -out (g + g^T) out L, dU = -U out (g + g^T) out, each restricted to the
    triangle the forward read."""

    name = "_linalg_potri"
    aliases = ("linalg_potri",)
    Attrs = CholeskyAttrs
    PARAM_ORDER = ()
    backward_inputs = (0,)
    backward_outputs = (0,)

    def forward(self, xp, inputs, aux, out, is_train):
        lower = self.attrs.lower
        inv = xp.linalg.inv(triangle(xp, inputs[0], lower))
        inv_t = swap_last(xp, inv)
        out[0][...] = xp.matmul(inv_t, inv) if lower else xp.matmul(inv, inv_t)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is None:
            return
        lower = self.attrs.lower
        tri, inv, g = triangle(xp, inputs[0], lower), outputs[0], out_grads[0]
        core = xp.matmul(xp.matmul(inv, g + swap_last(xp, g)), inv)
        grad = xp.matmul(core, tri) if lower else xp.matmul(tri, core)
        in_grads[0][...] = -triangle(xp, grad, lower)


@register
class Gelqf(LinalgOp):
    """LQ factorisation A = L Q of A (..., m, n), m <= n: Q (..., m, n) with orthonormal rows,
    L (..., m, m) lower triangular. Computed as the QR factorisation of A^T (LAPACK's
    Householder reflections, so the signs of L's diagonal are LAPACK's, as MXNet's are).

    Backward: with M = L^T dL - dQ Q^T, dA = L^-T (dQ + copyltu(M) Q)."""

    name = "_linalg_gelqf"
    aliases = ("linalg_gelqf",)
    OUTPUTS = ("output0", "output1")
    backward_inputs = ()
    backward_outputs = (0, 1)

    def infer_shape(self, in_shapes, out_shapes):
        self.same_shape(in_shapes, out_shapes, in_idx=[0], out_idx=[0])
        a = in_shapes[0]
        if shape_is_known(a):
            if len(a) < 2 or a[-2] > a[-1]:
                raise ShapeError("input 'A' has shape %s but gelqf needs matrices (..., m, n) "
                                 "with m <= n" % fmt_shape(a))
            self.set_out(out_shapes, 1, tuple(a[:-1]) + (a[-2],))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        q, r = xp.linalg.qr(swap_last(xp, inputs[0]))
        out[0][...] = swap_last(xp, q)
        out[1][...] = swap_last(xp, r)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is None:
            return
        q, low = outputs
        dq, dlow = out_grads
        m = xp.matmul(swap_last(xp, low), dlow) - xp.matmul(dq, swap_last(xp, q))
        rhs = dq + xp.matmul(symmetric_from(xp, m, True), q)
        in_grads[0][...] = xp.linalg.solve(swap_last(xp, low), rhs)


@register
class Syevd(LinalgOp):
    """Eigendecomposition of symmetric matrices, A = U^T diag(L) U: U (..., n, n) has the
    eigenvectors as rows, L (..., n) the eigenvalues in ascending order. Only A's lower
    triangle is read. Each row of U is signed so that its entry of largest magnitude (the
    first such) is positive, as MXNet does, which makes U a function of A.

    Backward (eigenvalues must be distinct): with T = dU U^T,
    dA = U^T S U, S_ii = dL_i, S_ij = (T_ij - T_ji) / (2 (L_i - L_j)) for i != j."""

    name = "_linalg_syevd"
    OUTPUTS = ("output0", "output1")
    backward_inputs = ()
    backward_outputs = (0, 1)

    def infer_shape(self, in_shapes, out_shapes):
        self.same_shape(in_shapes, out_shapes, in_idx=[0], out_idx=[0])
        if square_batch(in_shapes[0]) is not None:
            self.set_out(out_shapes, 1, tuple(in_shapes[0][:-1]))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        values, vectors = xp.linalg.eigh(inputs[0], UPLO="L")
        rows = swap_last(xp, vectors)
        peak = xp.argmax(xp.abs(rows), axis=-1)[..., None]
        out[0][...] = rows * xp.sign(xp.take_along_axis(rows, peak, axis=-1))
        out[1][...] = values

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is None:
            return
        u, values = outputs
        du, dvalues = out_grads
        t = xp.matmul(du, swap_last(xp, u))
        eye = xp.eye(u.shape[-1], dtype=bool)
        gap = 2 * (values[..., :, None] - values[..., None, :])
        off = (t - swap_last(xp, t)) / xp.where(eye, 1, gap)
        s = xp.where(eye, dvalues[..., None] * eye, off)
        in_grads[0][...] = xp.matmul(xp.matmul(swap_last(xp, u), s), u)


@register
class Inverse(_SquareSameShape):
    """out = A^-1 per matrix. Backward: dA = -out^T g out^T."""

    name = "_linalg_inverse"
    aliases = ("linalg_inverse",)
    backward_inputs = ()
    backward_outputs = (0,)

    def forward(self, xp, inputs, aux, out, is_train):
        out[0][...] = xp.linalg.inv(inputs[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            inv_t = swap_last(xp, outputs[0])
            in_grads[0][...] = -xp.matmul(xp.matmul(inv_t, out_grads[0]), inv_t)


def _inverse_or_zero(xp, a, singular):
    """A^-1 per matrix, zeros where `singular` (a batch-shaped boolean array) holds: those
    matrices are replaced by the identity before the batched inverse, which would otherwise
    fail for the whole batch."""
    mask = singular[..., None, None]
    safe = xp.where(mask, xp.eye(a.shape[-1], dtype=a.dtype), a)
    return xp.where(mask, 0, xp.linalg.inv(safe))


class _Determinant(LinalgOp):
    """Shared slots of det and slogdet. MXNet gives them two hidden outputs after the visible
    ones, the LU factors (shape of A) and LAPACK's int32 pivots (..., n); minimod keeps both
    slots, so the node has MXNet's output count (JSON, monitor names), but NumPy and CuPy expose
    no LU routine: the first holds A^-1 (zeros for a singular matrix), which backward reads,
    and the pivot slot is written with zeros."""

    N_VISIBLE = 1

    def num_visible_outputs(self) -> int:
        return self.N_VISIBLE

    def infer_shape(self, in_shapes, out_shapes):
        nv = self.N_VISIBLE
        self.same_shape(in_shapes, out_shapes, in_idx=[0], out_idx=[nv])
        a = in_shapes[0]
        if square_batch(a) is not None:
            batch = tuple(a[:-2]) or (1,)
            for i in range(nv):
                self.set_out(out_shapes, i, batch)
            self.set_out(out_shapes, nv + 1, tuple(a[:-1]))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        nv = self.N_VISIBLE
        in_types, types = super().infer_type(in_types, list(out_types[:nv + 1]) + [None])
        return in_types, list(types[:nv + 1]) + ["int32"]

    def _hidden(self, xp, a, singular, out) -> None:
        nv = self.N_VISIBLE
        out[nv][...] = _inverse_or_zero(xp, a, singular)
        out[nv + 1].fill(0)


@register
class Det(_Determinant):
    """out = det(A) per matrix: A (..., n, n) gives the batch shape, (1,) for one matrix.
    Backward: dA = g det(A) A^-T, zero for a singular matrix (as MXNet's)."""

    name = "_linalg_det"
    aliases = ("linalg_det",)
    OUTPUTS = ("output0", "output1", "output2")
    backward_inputs = ()
    backward_outputs = (0, 1)

    def output_names(self, node_name: str) -> list:
        return ["%s_output0" % node_name]  # MXNet numbers it: the node has several outputs

    def forward(self, xp, inputs, aux, out, is_train):
        a = inputs[0]
        det = xp.linalg.det(a)
        out[0][...] = xp.reshape(det, out[0].shape)
        self._hidden(xp, a, det == 0, out)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        da = in_grads[0]
        if da is None:
            return
        scale = xp.reshape(out_grads[0] * outputs[0], da.shape[:-2] + (1, 1))
        da[...] = scale * swap_last(xp, outputs[1])


@register
class SlogDet(_Determinant):
    """(sign, log|det|) of each matrix, as NumPy's slogdet (sign 0 and -inf for a singular
    one): A (..., n, n) gives two outputs of the batch shape, (1,) for one matrix.
    Backward: dA = g_logabsdet A^-T (zero for a singular matrix); the sign has no gradient."""

    name = "_linalg_slogdet"
    aliases = ("linalg_slogdet",)
    OUTPUTS = ("output0", "output1", "output2", "output3")
    N_VISIBLE = 2
    backward_inputs = ()
    backward_outputs = (2,)

    def forward(self, xp, inputs, aux, out, is_train):
        a = inputs[0]
        sign, logabs = xp.linalg.slogdet(a)
        out[0][...] = xp.reshape(sign, out[0].shape)
        out[1][...] = xp.reshape(logabs, out[1].shape)
        self._hidden(xp, a, sign == 0, out)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        da = in_grads[0]
        if da is not None:
            scale = xp.reshape(out_grads[1], da.shape[:-2] + (1, 1))
            da[...] = scale * swap_last(xp, outputs[2])
