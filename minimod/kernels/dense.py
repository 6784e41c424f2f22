"""FullyConnected's bound steps and its batch-last form.

The bound steps are the GEMMs of `FullyConnected.forward` / `backward` with every reshape,
transpose and `out=` target resolved at bind time, for plain NumPy arrays. The batch-last form
stores data (d1, d2, ..., N), read as its (k, N) view, and output (num_hidden, N): the GEMMs
then run on the transposed operands, out^T = weight . data^T, which OpenBLAS runs in about
0.75x the time of the batch-first product at the MLP's sizes; an output stored so is the
GEMM's result, the bias added along its rows.
"""
from __future__ import annotations

import math

from ..backend import sum_into
from ..ops.dense import FullyConnected
from .layout import BatchLast, form_of
from .registry import fast_path, plain_numpy

__all__ = ["BatchLastFullyConnected"]


def _layout(op) -> tuple:
    """(data_last, out_last) of a FullyConnected or of its batch-last form."""
    return (op.data_last, op.out_last) if isinstance(op, BatchLast) else (False, False)


def _cols(op, x, data_last: bool):
    """The data as (k, N), features by samples: a view, whichever way it is stored."""
    return x.reshape(math.prod(x.shape[:-1]), x.shape[-1]) if data_last else op._as_2d(x).T


@form_of(FullyConnected)
class BatchLastFullyConnected(BatchLast, FullyConnected):
    """FullyConnected with its data, its output or both stored batch-last (flatten=True only:
    the other form has no one batch axis to move)."""

    @staticmethod
    def applies(op) -> bool:
        return op.attrs.flatten

    def forward(self, xp, inputs, aux, out, is_train):
        cols, weight, y = _cols(self, inputs[0], self.data_last), inputs[1], out[0]
        if self.out_last:  # y (num_hidden, N) = weight . cols
            y[...] = xp.matmul(weight, cols)
            if not self.attrs.no_bias:
                y += inputs[2][:, None]
        else:
            y[...] = xp.matmul(cols.T, weight.T)
            if not self.attrs.no_bias:
                y += inputs[2]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, weight, g = inputs[0], inputs[1], out_grads[0]
        dx, dw = in_grads[0], in_grads[1]
        db = None if self.attrs.no_bias else in_grads[2]
        g_t = g if self.out_last else g.T  # (num_hidden, N)
        if dx is not None:
            if self.data_last:
                dx[...] = xp.matmul(weight.T, g_t).reshape(dx.shape)
            else:
                dx[...] = xp.matmul(g_t.T, weight).reshape(dx.shape)
        if dw is not None:
            dw[...] = xp.matmul(g_t, _cols(self, x, self.data_last).T)
        if db is not None:  # as the bound step sums it
            if self.out_last:
                db[...] = xp.matmul(g, xp.ones(g.shape[1], dtype=g.dtype))
            else:
                sum_into(xp, g, 0, db)


@fast_path(FullyConnected, BatchLastFullyConnected, stage="forward")
def bind_forward(op, xp, inputs, aux, out):
    x, weight, y = inputs[0], inputs[1], out[0]
    if not plain_numpy(xp, x, weight, y, *inputs[2:]):
        return None
    data_last, out_last = _layout(op)
    if out_last:  # y^T = weight . data^T, written where it is stored
        a, b, y2 = weight, _cols(op, x, data_last), y
        bias = None if op.attrs.no_bias else inputs[2][:, None]
    else:
        a, b = _cols(op, x, data_last).T, weight.T  # (N, k) . (k, num_hidden)
        y2 = y.reshape(a.shape[0], b.shape[1])  # sizes spelt out: a zero-size batch too
        bias = None if op.attrs.no_bias else inputs[2]
    if bias is None:
        def run(xp, is_train):
            xp.matmul(a, b, out=y2)
        return run

    def run_bias(xp, is_train):
        xp.matmul(a, b, out=y2)
        xp.add(y2, bias, out=y2)
    return run_bias


@fast_path(FullyConnected, BatchLastFullyConnected, stage="backward")
def bind_backward(op, xp, out_grads, inputs, outputs, in_grads, aux):
    x, weight, g = inputs[0], inputs[1], out_grads[0]
    grads = [a for a in in_grads if a is not None]
    if not plain_numpy(xp, g, x, weight, *grads):
        return None
    data_last, out_last = _layout(op)
    dx, dw = in_grads[0], in_grads[1]
    db = None if op.attrs.no_bias else in_grads[2]
    g_t = g if out_last else g.reshape(-1, op.attrs.num_hidden).T  # (num_hidden, N)
    cols_t = _cols(op, x, data_last).T  # (N, k)
    if dx is None:
        dx_a = dx_b = dx2 = None
    elif data_last:  # dx^T = weight^T . g^T, stored (k, N)
        dx_a, dx_b, dx2 = weight.T, g_t, dx.reshape(-1, dx.shape[-1])
    else:
        dx_a, dx_b, dx2 = g_t.T, weight, dx.reshape(g_t.shape[1], weight.shape[1])
    # the bias gradient: a matrix-vector product along the rows of a batch-last g
    ones = xp.ones(g.shape[1], dtype=g.dtype) if db is not None and out_last else None

    def run(xp, is_train):
        if dx2 is not None:
            xp.matmul(dx_a, dx_b, out=dx2)
        if dw is not None:
            xp.matmul(g_t, cols_t, out=dw)
        if ones is not None:
            xp.matmul(g, ones, out=db)
        elif db is not None:
            xp.add.reduce(g_t.T, axis=0, out=db)  # `sum_into` on NumPy
    return run
