"""MXNet 1.9.1's contrib optimizer kernels: AdamW (`mx.nd.contrib.adamw_update`,
`mp_adamw_update`, `multi_adamw_update`, `multi_mp_adamw_update`), the multi-tensor LAMB
(`mx.nd.contrib.multi_lamb_update`, `multi_mp_lamb_update`), and the row-wise AdaGrad of
GroupAdaGrad (`mx.nd.contrib.group_adagrad_update`), with the private operator names
MXNet's contrib functions call (`mx.nd._internal._adamw_update` ...).

The arithmetic and the array conventions are those of `update_kernels.py` (bit for bit with
MXNet; states in place; `out`). AdamW's rescale_grad is an array (or a number) read on the
host: when it is NaN, infinite or 0 the whole call is skipped, weights and states untouched,
as in MXNet (which then leaves a separate `out` unwritten; minimod copies the weight there).
As MXNet's, the single-weight float32 kernel leaves the scaled, clipped gradient in the
caller's grad array, and the multi-tensor kernels form the moments as b (m - g) + g; the
multi-tensor LAMB forms its direction in double precision (MXNet calls the double sqrt there).
"""
from __future__ import annotations

import math

import numpy as np

from .. import backend
from ..base import MXNetError
from . import update_rows
from .ndarray import NDArray
from .update_kernels import _SCRATCH, F32, _c, _check, _clipped, _master, _write
from .update_kernels_multi import _groups, _per_weight, _sum_sq, _write_many
from .update_steps_adaptive import group_adagrad

__all__ = ["CONTRIB_KERNELS", "INTERNAL_KERNELS"]


# ============================================================================ AdamW

def _scale(rescale_grad) -> float | None:
    """rescale_grad as a float, or None when MXNet skips the update (NaN, inf or 0)."""
    value = float(rescale_grad.asnumpy().reshape(-1)[0]) if isinstance(
        rescale_grad, NDArray) else float(rescale_grad)
    return value if math.isfinite(value) and value != 0 else None


def _adamw_arith(xp, w, grad, mean, var, lr, eta, beta1, beta2, epsilon, wd, rescale,
                 clip_gradient, ct, multi: bool):
    """g = clip(rescale grad); mean = b1 mean + (1-b1) g, var = b2 var + (1-b2) (g g) (in
    place); returns w - eta (lr mean / (sqrt(var) + eps) + wd w). MXNet's multi-tensor kernel
    forms the moments as b1 (mean - g) + g and b2 (var - g g) + g g instead."""
    g = _clipped(xp, grad.astype(ct, copy=False) * _c(ct, rescale), clip_gradient, ct)
    b1, b2 = _c(ct, beta1), _c(ct, beta2)
    if multi:
        square = g * g
        mean[...] = (mean - g) * b1 + g
        var[...] = (var - square) * b2 + square
    else:
        mean[...] = mean * b1 + (ct(1) - b1) * g
        var[...] = var * b2 + (ct(1) - b2) * (g * g)
    step = (mean * _c(ct, lr)) / (xp.sqrt(var) + _c(ct, epsilon)) + w * _c(ct, wd)
    return w - step * _c(ct, eta)


def _adamw(fn, weight, grad, mean, var, weight32, rescale_grad, lr, eta, beta1, beta2, epsilon,
           wd, clip_gradient, out):
    if eta is None:
        raise MXNetError("mx.nd.%s: eta (the learning rate multiplier) is required" % fn)
    if weight32 is None:
        _check(fn, weight.shape, weight=weight, grad=grad, mean=mean, var=var)
    else:
        _master(fn, weight, weight32, grad=grad, mean=mean, var=var)
    scale = _scale(rescale_grad)
    if scale is None:
        return _write(fn, weight, weight._data, out)
    master = weight._data if weight32 is None else weight32._data
    ct = master.dtype.type
    with backend.device_scope(weight.context):
        new = _adamw_arith(weight._xp, master, grad._data, mean._data, var._data, lr, eta, beta1,
                           beta2, epsilon, wd, scale, clip_gradient, ct, multi=False)
        if weight32 is None:
            # the single-weight float32 kernel leaves the scaled, clipped gradient in grad
            grad._data[...] = _clipped(weight._xp, grad._data * _c(ct, scale), clip_gradient,
                                       ct)
        if weight32 is not None:
            master[...] = new
        return _write(fn, weight, new, out)


def _adamw_update(weight, grad, mean, var, rescale_grad, lr, beta1=0.9, beta2=0.999,
                  epsilon=1e-8, wd=0.0, eta=None, clip_gradient=-1.0, out=None, name=None):
    """AdamW (Loshchilov & Hutter): Adam's moments without bias correction, weight decay
    applied to the weight outside the adaptive step, everything scaled by eta."""
    return _adamw("_adamw_update", weight, grad, mean, var, None, rescale_grad, lr, eta, beta1,
                  beta2, epsilon, wd, clip_gradient, out)


def _mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr, beta1=0.9,
                     beta2=0.999, epsilon=1e-8, wd=0.0, eta=None, clip_gradient=-1.0, out=None,
                     name=None):
    """_adamw_update in float32 on the master weight32 (in place)."""
    return _adamw("_mp_adamw_update", weight, grad, mean, var, weight32, rescale_grad, lr, eta,
                  beta1, beta2, epsilon, wd, clip_gradient, out)


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, wd=0.0, clip_gradient=-1.0, out=None, name=None):
    """`mx.nd.contrib.adamw_update`: _adamw_update in MXNet's contrib calling order."""
    return _adamw("adamw_update", weight, grad, mean, var, None, rescale_grad, lr, eta, beta1,
                  beta2, epsilon, wd, clip_gradient, out)


def mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr, eta, beta1=0.9,
                    beta2=0.999, epsilon=1e-8, wd=0.0, clip_gradient=-1.0, out=None, name=None):
    """`mx.nd.contrib.mp_adamw_update`: _mp_adamw_update in the contrib calling order."""
    return _adamw("mp_adamw_update", weight, grad, mean, var, weight32, rescale_grad, lr, eta,
                  beta1, beta2, epsilon, wd, clip_gradient, out)


def _multi_adamw(fn, data, mixed, lrs, wds, etas, beta1, beta2, epsilon, clip_gradient,
                 num_weights, out, rescale_grad=None):
    """The multi-tensor AdamW; rescale_grad is the last array of data unless given."""
    per = 5 if mixed else 4
    if rescale_grad is None:
        groups, (rescale_grad,) = _groups(fn, data, per, num_weights, 1)
    else:
        groups, _ = _groups(fn, data, per, num_weights)
    lrs = _per_weight(fn, lrs, num_weights, "lrs")
    wds = _per_weight(fn, wds, num_weights, "wds")
    etas = _per_weight(fn, etas, num_weights, "etas")
    weights = [g[0] for g in groups]
    scale = _scale(rescale_grad)
    if scale is None:
        return _write_many(fn, weights, [w._data for w in weights], out)
    news = []
    with backend.device_scope(weights[0].context):
        for group, lr, wd, eta in zip(groups, lrs, wds, etas):
            weight, grad, mean, var = group[:4]
            master = group[4]._data if mixed else weight._data
            ct = master.dtype.type
            new = _adamw_arith(weight._xp, master, grad._data, mean._data, var._data, lr,
                               eta, beta1, beta2, epsilon, wd, scale, clip_gradient, ct,
                               multi=True)
            if mixed:
                master[...] = new
            news.append(new)
    return _write_many(fn, weights, news, out)


def _multi_adamw_update(*data, lrs, wds, etas, beta1=0.9, beta2=0.999, epsilon=1e-8,
                        clip_gradient=-1.0, num_weights=1, out=None, name=None):
    """_adamw_update of many weights: data = w0, g0, mean0, var0, w1, ..., rescale_grad."""
    return _multi_adamw("_multi_adamw_update", data, False, lrs, wds, etas, beta1, beta2,
                        epsilon, clip_gradient, num_weights, out)


def _multi_mp_adamw_update(*data, lrs, wds, etas, beta1=0.9, beta2=0.999, epsilon=1e-8,
                           clip_gradient=-1.0, num_weights=1, out=None, name=None):
    """_mp_adamw_update of many weights: data = w0, g0, mean0, var0, w0_32, ..., rescale."""
    return _multi_adamw("_multi_mp_adamw_update", data, True, lrs, wds, etas, beta1, beta2,
                        epsilon, clip_gradient, num_weights, out)


def _interleave(*lists) -> list:
    return [a for group in zip(*lists) for a in group]


def multi_adamw_update(weights, grads, mean, var, rescale_grad, lrs, wds, etas, out=None,
                       name=None, size=0, **kwargs):
    """`mx.nd.contrib.multi_adamw_update`: lists of weights, gradients and moments;
    rescale_grad a number or a 1-element array."""
    return _multi_adamw("multi_adamw_update", _interleave(weights, grads, mean, var), False,
                        lrs, wds, etas, kwargs.get("beta1", 0.9), kwargs.get("beta2", 0.999),
                        kwargs.get("epsilon", 1e-8), kwargs.get("clip_gradient", -1.0),
                        size or len(weights), out, rescale_grad)


def multi_mp_adamw_update(weights, grads, mean, var, weights32, rescale_grad, lrs, wds, etas,
                          out=None, name=None, size=0, **kwargs):
    """`mx.nd.contrib.multi_mp_adamw_update`: as multi_adamw_update with float32 masters."""
    return _multi_adamw("multi_mp_adamw_update",
                        _interleave(weights, grads, mean, var, weights32), True, lrs, wds, etas,
                        kwargs.get("beta1", 0.9), kwargs.get("beta2", 0.999),
                        kwargs.get("epsilon", 1e-8), kwargs.get("clip_gradient", -1.0),
                        size or len(weights), out, rescale_grad)


# ============================================================================ multi-tensor LAMB

def _lamb_tensor(xp, w, grad, mean, var, step, lr, wd, beta1, beta2, epsilon, rescale_grad,
                 clip_gradient, bias_correction, lower_bound, upper_bound, norm_of, ct):
    """One tensor of MXNet's multi-tensor LAMB in type ct; returns the new weight. `norm_of`
    is the array whose norm is r1 (the weight in its own type)."""
    g = _clipped(xp, grad * _c(ct, rescale_grad), clip_gradient, ct)
    b1, b2 = _c(ct, beta1), _c(ct, beta2)
    mean[...] = mean * b1 + (ct(1) - b1) * g
    var[...] = var * b2 + ((ct(1) - b2) * g) * g
    if bias_correction:
        mean_hat = mean / (ct(1) - b1 ** ct(step))
        var_hat = var / (ct(1) - b2 ** ct(step))
    else:
        mean_hat, var_hat = mean, var
    # MXNet's kernel calls the double-precision sqrt here, so this line runs in double
    wide = np.float64
    direction = (mean_hat.astype(wide) / (xp.sqrt(var_hat.astype(wide)) + wide(_c(ct, epsilon)))
                 + (w * _c(ct, wd)).astype(wide)).astype(ct)
    r1 = xp.sqrt(_sum_sq(xp, norm_of))
    r2 = xp.sqrt(_sum_sq(xp, direction))
    if lower_bound is not None and lower_bound >= 0:
        r1 = xp.maximum(r1, F32(lower_bound))
    if upper_bound is not None and upper_bound >= 0:
        r1 = xp.minimum(r1, F32(upper_bound))
    ratio = xp.where((r1 != 0) & (r2 != 0), r1 / xp.where(r2 == 0, F32(1), r2), F32(1))
    return w - (_c(ct, lr) * ratio.astype(ct)) * direction


def _multi_lamb(fn, data, mixed, learning_rates, wds, step_count, beta1, beta2, epsilon,
                rescale_grad, lower_bound, upper_bound, clip_gradient, bias_correction,
                num_tensors, out):
    per = 5 if mixed else 4
    groups, _ = _groups(fn, data, per, num_tensors)
    lrs = _per_weight(fn, learning_rates, num_tensors, "learning_rates")
    wds = _per_weight(fn, wds, num_tensors, "wds")
    steps = _per_weight(fn, step_count, num_tensors, "step_count")
    news = []
    with backend.device_scope(groups[0][0].context):
        for group, lr, wd, step in zip(groups, lrs, wds, steps):
            weight, grad, mean, var = group[:4]
            master = group[4]._data if mixed else weight._data
            ct = master.dtype.type
            new = _lamb_tensor(weight._xp, master, grad._data.astype(ct, copy=False),
                               mean._data, var._data, step, lr, wd, beta1, beta2, epsilon,
                               rescale_grad, clip_gradient, bias_correction, lower_bound,
                               upper_bound, weight._data, ct)
            if mixed:
                master[...] = new
            news.append(new)
    return _write_many(fn, [g[0] for g in groups], news, out)


def _lamb_defaults(kwargs: dict) -> tuple:
    return (kwargs.get("beta1", 0.9), kwargs.get("beta2", 0.999), kwargs.get("epsilon", 1e-6),
            kwargs.get("rescale_grad", 1.0), kwargs.get("lower_bound", -1.0),
            kwargs.get("upper_bound", -1.0), kwargs.get("clip_gradient", -1.0),
            kwargs.get("bias_correction", True))


def _multi_lamb_update(*data, learning_rates, wds, step_count, num_tensors=1, out=None,
                       name=None, **kwargs):
    """LAMB over many tensors: data = w0, g0, mean0, var0, w1, ...; per-tensor learning
    rates, weight decays and step counts; beta1, beta2, epsilon, rescale_grad, lower_bound,
    upper_bound, clip_gradient, bias_correction as keywords."""
    return _multi_lamb("_multi_lamb_update", data, False, learning_rates, wds, step_count,
                       *_lamb_defaults(kwargs), num_tensors, out)


def _multi_mp_lamb_update(*data, learning_rates, wds, step_count, num_tensors=1, out=None,
                          name=None, **kwargs):
    """_multi_lamb_update with float32 masters: data = w0, g0, mean0, var0, w0_32, ..."""
    return _multi_lamb("_multi_mp_lamb_update", data, True, learning_rates, wds, step_count,
                       *_lamb_defaults(kwargs), num_tensors, out)


def multi_lamb_update(weights, grads, mean, var, step_count, lrs, wds, out=None, num_tensors=0,
                      **kwargs):
    """`mx.nd.contrib.multi_lamb_update`: lists of weights, gradients and moments."""
    return _multi_lamb("multi_lamb_update", _interleave(weights, grads, mean, var), False, lrs,
                       wds, step_count, *_lamb_defaults(kwargs), num_tensors or len(weights),
                       out)


def multi_mp_lamb_update(weights, grads, mean, var, weights32, step_count, lrs, wds, out=None,
                         num_tensors=0, **kwargs):
    """`mx.nd.contrib.multi_mp_lamb_update`: as multi_lamb_update with float32 masters."""
    return _multi_lamb("multi_mp_lamb_update", _interleave(weights, grads, mean, var, weights32),
                       True, lrs, wds, step_count, *_lamb_defaults(kwargs),
                       num_tensors or len(weights), out)


# ============================================================================ GroupAdaGrad

def group_adagrad_update(weight, grad, history, lr, rescale_grad=1.0, clip_gradient=-1.0,
                         epsilon=1e-5, out=None, name=None):
    """`mx.nd.contrib.group_adagrad_update`: AdaGrad with one rate per row (the
    GroupAdaGrad optimizer's step; `update_steps_adaptive.group_adagrad`); history has
    shape (rows, 1) and changes in place. A row-sparse gradient updates its stored rows only,
    as MXNet's kernel does; a dense one updates every row (MXNet 1.9.1 has no CPU kernel for
    it). The new weight goes to `out` (out=weight: in place, which MXNet requires), or to a
    new array."""
    fn = "contrib.group_adagrad_update"
    _check(fn, None, weight=weight, history=history)
    _check(fn, weight.shape, grad=grad)
    if weight.ndim < 2:
        raise MXNetError("mx.nd.%s: the weight %s must have at least 2 axes (its rows are the "
                         "groups)" % (fn, weight.shape))
    if history.shape != (weight.shape[0], 1):
        raise MXNetError("mx.nd.%s: history has shape %s; for a weight of shape %s it must be "
                         "%s" % (fn, history.shape, weight.shape, (weight.shape[0], 1)))
    target = out if out is weight else weight.copy()
    with backend.device_scope(weight.context):
        update_rows.run_sparse(
            target, grad, history, grad.stype == "row_sparse",
            lambda w, g, h: group_adagrad(w._data, g._data, h._data, lr, epsilon,
                                          rescale_grad, clip_gradient, _SCRATCH))
    if out is None or out is weight:
        return target
    return _write(fn, weight, target._data, out)


#: `mx.nd.contrib.<name>`
CONTRIB_KERNELS = {f.__name__: f for f in (
    adamw_update, mp_adamw_update, multi_adamw_update, multi_mp_adamw_update,
    multi_lamb_update, multi_mp_lamb_update, group_adagrad_update)}

#: `mx.nd._internal.<name>`: the private operators MXNet's contrib functions call
INTERNAL_KERNELS = {f.__name__: f for f in (
    _adamw_update, _mp_adamw_update, _multi_adamw_update, _multi_mp_adamw_update,
    _multi_lamb_update, _multi_mp_lamb_update)}
