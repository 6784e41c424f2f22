"""Matrix products: dot (one product of two arrays seen as matrices) and batch_dot (one
product per batch index), whose backward is two more products each, written into the
gradients; khatri_rao, the column-wise Kronecker product, which has no gradient in MXNet."""
from __future__ import annotations

import dataclasses
import math
from typing import Literal, Optional

from ..backend import matmul
from ..base import ShapeError
from .legacy import _NoGradient
from .registry import Op, VariadicOp, fmt_shape, register

__all__ = ["DotOp", "BatchDotOp", "DotAttrs", "KhatriRao"]


@dataclasses.dataclass(frozen=True)
class DotAttrs:
    transpose_a: bool = False
    transpose_b: bool = False
    forward_stype: Optional[Literal["csr", "default", "row_sparse"]] = None


@register
class DotOp(Op):
    """out = lhs . rhs, contracting lhs's last axis (its first when transpose_a) with rhs's
    first axis (its last when transpose_b).

    Shapes: lhs (*A, K) or with transpose_a (K, *A); rhs (K, *B) or with transpose_b (*B, K);
    out (*A, *B), or (1,) when both are vectors. The work is one matrix product of lhs seen as
    (prod A, K) and rhs as (K, prod B).
    """

    name = "dot"
    ARGUMENTS = ("lhs", "rhs")
    Attrs = DotAttrs
    backward_inputs = (0, 1)
    backward_outputs = ()

    def _split(self, lhs, rhs):
        ta, tb = self.attrs.transpose_a, self.attrs.transpose_b
        if (ta and len(lhs) == 1) or (tb and len(rhs) == 1):
            raise ShapeError("dot cannot transpose a vector (lhs %s, rhs %s)"
                             % (fmt_shape(lhs), fmt_shape(rhs)))
        k_lhs, rest_lhs = (lhs[0], lhs[1:]) if ta else (lhs[-1], lhs[:-1])
        k_rhs, rest_rhs = (rhs[-1], rhs[:-1]) if tb else (rhs[0], rhs[1:])
        return k_lhs, rest_lhs, k_rhs, rest_rhs

    def infer_shape(self, in_shapes, out_shapes):
        lhs, rhs = in_shapes
        if lhs is None or rhs is None:
            return in_shapes, out_shapes
        k_lhs, rest_lhs, k_rhs, rest_rhs = self._split(lhs, rhs)
        if k_lhs is not None and k_rhs is not None and k_lhs != k_rhs:
            raise ShapeError("input 'lhs' has shape %s and input 'rhs' has %s: the contracted "
                             "dims %d and %d differ (transpose_a=%s, transpose_b=%s)"
                             % (fmt_shape(lhs), fmt_shape(rhs), k_lhs, k_rhs,
                                self.attrs.transpose_a, self.attrs.transpose_b))
        k = k_lhs if k_lhs is not None else k_rhs
        if k is not None:
            ta, tb = self.attrs.transpose_a, self.attrs.transpose_b
            self.set_in(in_shapes, 0, ((k,) + rest_lhs) if ta else (rest_lhs + (k,)))
            self.set_in(in_shapes, 1, (rest_rhs + (k,)) if tb else ((k,) + rest_rhs))
        self.set_out(out_shapes, 0, (rest_lhs + rest_rhs) or (1,))
        return in_shapes, out_shapes

    def _matrices(self, lhs, rhs):
        k = lhs.shape[0] if self.attrs.transpose_a else lhs.shape[-1]
        m, n = lhs.size // k, rhs.size // k
        a = lhs.reshape(k, m).T if self.attrs.transpose_a else lhs.reshape(m, k)
        b = rhs.reshape(n, k).T if self.attrs.transpose_b else rhs.reshape(k, n)
        return a, b, k, m, n

    def forward(self, xp, inputs, aux, out, is_train):
        a, b, _, m, n = self._matrices(inputs[0], inputs[1])
        matmul(xp, a, b, out=out[0].reshape(m, n))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        a, b, k, m, n = self._matrices(inputs[0], inputs[1])
        dy = out_grads[0].reshape(m, n)
        da, db = in_grads
        if da is not None:
            if self.attrs.transpose_a:
                matmul(xp, b, dy.T, out=da.reshape(k, m))
            else:
                matmul(xp, dy, b.T, out=da.reshape(m, k))
        if db is not None:
            if self.attrs.transpose_b:
                matmul(xp, dy.T, a, out=db.reshape(n, k))
            else:
                matmul(xp, a.T, dy, out=db.reshape(k, n))


@register
class BatchDotOp(Op):
    """out[b] = lhs[b] . rhs[b] for every batch index b.

    Shapes: lhs (*B, M, K) (transpose_a: (*B, K, M)), rhs (*B, K, N) (transpose_b: (*B, N, K)),
    out (*B, M, N); lhs and rhs have one rank >= 3 and the same batch dims *B.
    """

    name = "batch_dot"
    ARGUMENTS = ("lhs", "rhs")
    Attrs = DotAttrs
    backward_inputs = (0, 1)
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        lhs, rhs = in_shapes
        if lhs is None or rhs is None:
            return in_shapes, out_shapes
        if len(lhs) < 3 or len(lhs) != len(rhs):
            raise ShapeError("batch_dot needs lhs and rhs of one rank >= 3, got %s and %s"
                             % (fmt_shape(lhs), fmt_shape(rhs)))
        m, k_lhs = (lhs[-1], lhs[-2]) if self.attrs.transpose_a else (lhs[-2], lhs[-1])
        k_rhs, n = (rhs[-1], rhs[-2]) if self.attrs.transpose_b else (rhs[-2], rhs[-1])
        batch = []
        for i, (p, q) in enumerate(zip(lhs[:-2], rhs[:-2])):
            if p is not None and q is not None and p != q:
                raise ShapeError("input 'lhs' has shape %s and input 'rhs' has %s: batch dim %d "
                                 "differs" % (fmt_shape(lhs), fmt_shape(rhs), i))
            batch.append(p if p is not None else q)
        if k_lhs is not None and k_rhs is not None and k_lhs != k_rhs:
            raise ShapeError("input 'lhs' has shape %s and input 'rhs' has %s: the contracted "
                             "dims %d and %d differ" % (fmt_shape(lhs), fmt_shape(rhs),
                                                        k_lhs, k_rhs))
        if k_lhs is None or k_rhs is None:  # as MXNet: no output until both k are known
            return in_shapes, out_shapes
        self.set_out(out_shapes, 0, tuple(batch) + (m, n))
        return in_shapes, out_shapes

    def _operands(self, xp, lhs, rhs):
        a = xp.swapaxes(lhs, -1, -2) if self.attrs.transpose_a else lhs
        b = xp.swapaxes(rhs, -1, -2) if self.attrs.transpose_b else rhs
        return a, b

    def forward(self, xp, inputs, aux, out, is_train):
        a, b = self._operands(xp, inputs[0], inputs[1])
        matmul(xp, a, b, out=out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        a, b = self._operands(xp, inputs[0], inputs[1])
        dy = out_grads[0]
        dy_t = xp.swapaxes(dy, -1, -2)
        da, db = in_grads
        if da is not None:
            if self.attrs.transpose_a:
                matmul(xp, b, dy_t, out=da)
            else:
                matmul(xp, dy, xp.swapaxes(b, -1, -2), out=da)
        if db is not None:
            if self.attrs.transpose_b:
                matmul(xp, dy_t, a, out=db)
            else:
                matmul(xp, xp.swapaxes(a, -1, -2), dy, out=db)


@dataclasses.dataclass(frozen=True)
class KhatriRaoAttrs:
    num_args: int


@register
class KhatriRao(_NoGradient, VariadicOp):
    """The column-wise Kronecker product of matrices (M_i, N) with one column count N: out
    (M_0 M_1 ..., N), out[(i_0 M_1 + i_1) M_2 + ..., n] = arg0[i_0, n] arg1[i_1, n] ....
    One matrix is itself. No gradient (MXNet registers none)."""

    name = "khatri_rao"
    Attrs = KhatriRaoAttrs

    def infer_shape(self, in_shapes, out_shapes):
        if any(s is None for s in in_shapes):
            return in_shapes, out_shapes
        columns = in_shapes[0][-1] if len(in_shapes[0]) == 2 else None
        for i, shape in enumerate(in_shapes):
            if len(shape) != 2 or shape[1] != columns:
                raise ShapeError("khatri_rao: input '%s' has shape %s but every input must be "
                                 "a matrix with the %s columns of '%s' %s"
                                 % (self._in_name(i), fmt_shape(shape), columns,
                                    self._in_name(0), fmt_shape(in_shapes[0])))
        self.set_out(out_shapes, 0, (math.prod(s[0] for s in in_shapes), columns))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        product = inputs[0]
        for factor in inputs[1:]:
            product = (product[:, None, :] * factor[None, :, :]).reshape(-1, factor.shape[1])
        xp.copyto(out[0], product)
