"""BatchNorm's bound steps: the statistics as matrix products, a few full passes per step.

For data (N, C, *spatial) with the channel axis 1, read as (N * C, R) rows (R the spatial
size): every row sum is one GEMV against ones and every sum of squares or of products one
stacked dot product (BLAS), and the N partial sums of a channel are added in float64. What is
left are elementwise passes with per-channel constants, written into the output (or gradient)
itself, so a step allocates nothing:

  forward (training)  d = x - mean; var = mean of d^2 (centred, so no cancellation);
                      out = d * scale + beta                         3 passes, 2 reductions
  backward            d = x - mean into dx; dbeta = sum g; dgamma = sum g d * invstd;
                      dx = d * B + g * A + C0 with per-channel A = scale,
                      B = -scale invstd dgamma / count, C0 = -scale dbeta / count
                                                                      5 passes, 2 reductions
against the reference op's 9 and 11 passes and their temporaries. The moving statistics,
the `mean` / `var` outputs and fix_gamma follow the reference op exactly; sums are taken in
another order, so results can differ from it in the last bits.

Applies on NumPy to float32 / float64 data whose parameters and statistics share its dtype,
with the channel axis 1 and at least one spatial axis. On CuPy the steps are
kernels/batchnorm_gpu.py's, one kernel each way.
"""
from __future__ import annotations

import numpy as np

from ..backend import const
from ..ops.normalization import BatchNorm
from ..ops.scratch import _ScratchMixin
from . import batchnorm_gpu
from .registry import fast_path, plain_numpy

__all__ = []


class _Scratch(_ScratchMixin):
    """The owner of this path's work arrays in the shared scratch cache."""


_SCRATCH = _Scratch()


def _applies(op, xp, x, *arrays) -> bool:
    present = [a for a in arrays if a is not None]
    return (x.ndim >= 3 and op._axis(x.ndim) == 1 and x.dtype.name in ("float32", "float64")
            and plain_numpy(xp, x, *present))


class _ChannelSums:
    """Per-channel sums over (N, C, R) data: `plain(a)` of a, `dot(a, b)` of a * b, each into a
    float64 (C,) array, from one BLAS call over the N * C rows and a float64 sum over N."""

    def __init__(self, xp, shape, dtype, role: str):
        n, c, r = shape
        self.n, self.c = n, c
        self.ones = _SCRATCH._scratch(xp, "bn_ones", (r,), dtype)
        self.ones.fill(1)
        self.rows = _SCRATCH._scratch(xp, "bn_rows_" + role, (n * c,), dtype)
        self.dots = self.rows.reshape(n * c, 1, 1)
        self.total = _SCRATCH._scratch(xp, "bn_total_" + role, (c,), "float64")

    def plain(self, xp, a2):
        xp.matmul(a2, self.ones, out=self.rows)
        return xp.add.reduce(self.rows.reshape(self.n, self.c), axis=0, dtype="float64",
                             out=self.total)

    def dot(self, xp, a2, b2):
        xp.matmul(a2[:, None, :], b2[:, :, None], out=self.dots)
        return xp.add.reduce(self.rows.reshape(self.n, self.c), axis=0, dtype="float64",
                             out=self.total)


def _as_rows(a):
    """(N, C, *spatial) as (N, C, R) and (N * C, R) views."""
    three = a.reshape(a.shape[0], a.shape[1], -1)
    return three, three.reshape(-1, three.shape[2])


@fast_path(BatchNorm, stage="forward")
def bind_forward(op, xp, inputs, aux, out):
    if xp is not np:  # CuPy: one kernel (kernels/batchnorm_gpu.py)
        return batchnorm_gpu.bind_forward(op, xp, inputs, aux, out)
    return _bind_numpy_forward(op, xp, inputs, aux, out)


@fast_path(BatchNorm, stage="backward")
def bind_backward(op, xp, out_grads, inputs, outputs, in_grads, aux):
    if xp is not np:
        return batchnorm_gpu.bind_backward(op, xp, out_grads, inputs, outputs, in_grads, aux)
    return _bind_numpy_backward(op, xp, out_grads, inputs, outputs, in_grads, aux)


def _bind_numpy_forward(op, xp, inputs, aux, out):
    x, gamma, beta = inputs
    y, mean, invstd = out
    if not _applies(op, xp, x, y, gamma, beta, mean, invstd, *aux):
        return None
    a = op.attrs
    x3, x2 = _as_rows(x)
    y3, y2 = _as_rows(y)
    count = x.size // x.shape[1]
    sums = _ChannelSums(xp, x3.shape, x.dtype, "fwd")
    scale = _SCRATCH._scratch(xp, "bn_scale", gamma.shape, x.dtype)
    eps, one = const(xp, a.eps, x.dtype), const(xp, 1, x.dtype)
    inv_count = const(xp, 1.0 / count, "float64")
    col = (slice(None), None)
    batch_stats = not a.use_global_stats
    moving_mean, moving_var = aux

    def run(xp, is_train):
        if is_train and a.fix_gamma:
            gamma.fill(1)  # as the reference: a training pass writes the fixed gamma back
        if is_train and batch_stats:
            xp.multiply(sums.plain(xp, x2), inv_count, out=sums.total)
            xp.copyto(mean, sums.total)
            xp.subtract(x3, mean[col], out=y3)
            xp.multiply(sums.dot(xp, y2, y2), inv_count, out=sums.total)
            xp.copyto(invstd, sums.total)  # the variance, as the reference's dtype holds it
        else:
            xp.copyto(mean, moving_mean)
            xp.copyto(invstd, moving_var)
            xp.subtract(x3, mean[col], out=y3)
        xp.add(invstd, eps, out=invstd)
        xp.sqrt(invstd, out=invstd)
        xp.divide(one, invstd, out=invstd)
        if a.fix_gamma:
            xp.copyto(scale, invstd)
        else:
            xp.multiply(invstd, gamma, out=scale)
        xp.multiply(y3, scale[col], out=y3)
        xp.add(y3, beta[col], out=y3)
    return run


def _bind_moving_update(xp, op, mean, invstd, aux):
    """The reference's update of the moving statistics from the saved mean and 1/std."""
    a = op.attrs
    moving_mean, moving_var = aux
    tmp = _SCRATCH._scratch(xp, "bn_moving", mean.shape, mean.dtype)
    momentum = const(xp, a.momentum, mean.dtype)
    rest = const(xp, 1 - a.momentum, mean.dtype)
    eps, one = const(xp, a.eps, mean.dtype), const(xp, 1, mean.dtype)

    def run(xp):
        xp.multiply(moving_mean, momentum, out=moving_mean)
        xp.multiply(mean, rest, out=tmp)
        xp.add(moving_mean, tmp, out=moving_mean)
        xp.multiply(moving_var, momentum, out=moving_var)
        xp.multiply(invstd, invstd, out=tmp)
        xp.divide(one, tmp, out=tmp)
        xp.subtract(tmp, eps, out=tmp)
        xp.multiply(tmp, rest, out=tmp)
        xp.add(moving_var, tmp, out=moving_var)
    return run


def _bind_numpy_backward(op, xp, out_grads, inputs, outputs, in_grads, aux):
    x, gamma, g = inputs[0], inputs[1], out_grads[0]
    mean, invstd = outputs[1], outputs[2]
    dx, dgamma, dbeta = in_grads
    if not _applies(op, xp, x, g, gamma, mean, invstd, dx, dgamma, dbeta, *aux):
        return None
    a = op.attrs
    x3, _ = _as_rows(x)
    g3, g2 = _as_rows(g)
    count = x.size // x.shape[1]
    centred = dx if dx is not None else _SCRATCH._scratch(xp, "bn_centred", x.shape, x.dtype)
    d3, d2 = _as_rows(centred)
    sums = _ChannelSums(xp, x3.shape, x.dtype, "bwd")
    coef = _SCRATCH._scratch(xp, "bn_coef", (6,) + mean.shape, "float64")
    coef_x = _SCRATCH._scratch(xp, "bn_coef_x", (3,) + mean.shape, x.dtype)
    ab, ag, ac = coef_x[0], coef_x[1], coef_x[2]  # per channel: B, A, C0
    tmp = _SCRATCH._scratch(xp, "bn_tmp", x.shape, x.dtype) if dx is not None else None
    tmp3 = None if tmp is None else _as_rows(tmp)[0]
    update_moving = None if a.use_global_stats else _bind_moving_update(xp, op, mean, invstd,
                                                                        aux)
    col = (slice(None), None)
    zero = const(xp, 0, x.dtype)
    minus_inv_count = const(xp, -1.0 / count, "float64")

    def run(xp, is_train):
        if update_moving is not None:
            update_moving(xp)
        xp.subtract(x3, mean[col], out=d3)
        sum_g, sum_gd, scale, scratch = coef[0], coef[1], coef[2], coef[3]
        # 1/std and gamma widened once: a float32 operand of a float64 product would be
        # cast into a fresh array at each call (the same values either way)
        invstd64, gamma64 = coef[4], coef[5]
        xp.copyto(invstd64, invstd)
        xp.copyto(sum_g, sums.plain(xp, g2))
        xp.multiply(sums.dot(xp, g2, d2), invstd64, out=sum_gd)  # dgamma
        if dbeta is not None:
            xp.copyto(dbeta, sum_g)
        if dgamma is not None:
            xp.copyto(dgamma, zero if a.fix_gamma else sum_gd)
        if dx is None:
            return
        xp.copyto(scale, invstd64)
        if not a.fix_gamma:
            xp.copyto(gamma64, gamma)
            xp.multiply(scale, gamma64, out=scale)
        xp.copyto(ag, scale)
        if a.use_global_stats:
            xp.multiply(g3, ag[col], out=dx.reshape(g3.shape))
            return
        xp.multiply(scale, minus_inv_count, out=scratch)      # -scale / count
        xp.multiply(scratch, sum_g, out=sum_g)                  # C0
        xp.copyto(ac, sum_g)
        xp.multiply(scratch, invstd64, out=scratch)
        xp.multiply(scratch, sum_gd, out=scratch)               # B
        xp.copyto(ab, scratch)
        xp.multiply(d3, ab[col], out=d3)
        xp.multiply(g3, ag[col], out=tmp3)
        xp.add(d3, tmp3, out=d3)
        xp.add(d3, ac[col], out=d3)
    return run
