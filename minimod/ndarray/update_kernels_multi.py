"""MXNet 1.9.1's multi-tensor optimizer kernels (`mx.nd.<name>`): SGD over many weights in one
call (`multi_sgd_update`, `multi_sgd_mom_update`, their `mp_` forms with float32 masters, and
the `preloaded_` forms that take the learning rates and weight decays as arrays), the LARS
helpers (`multi_sum_sq`, `multi_lars`), `reset_arrays` and `multi_all_finite`.

The arithmetic and the array conventions are those of `update_kernels.py` (bit for bit with
MXNet; states in place; `out`), applied weight by weight; the data come as one flat argument
list with each weight's companions after it, as MXNet's optimizers interleave them, and the
kernels take and return lists. MXNet's quirk is kept where it is its contract: multi_sum_sq
accumulates each sum in float32, one element after another.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .. import backend
from ..base import MXNetError
from .ndarray import wrap
from .update_kernels import F32, _c, _check, _sgd_arith, _write

__all__ = ["KERNELS"]

# ============================================================================ many weights

def _flat(data: Sequence) -> list:
    items = []
    for d in data:
        items.extend(d if isinstance(d, (list, tuple)) else [d])
    return items


def _groups(fn: str, data: Sequence, per: int, count: int, tail: int = 0) -> tuple:
    """The flattened arrays of a multi-tensor call as `count` groups of `per` (weight first,
    its companions after it, as MXNet's optimizers interleave them) plus `tail` arrays."""
    data = _flat(data)
    if len(data) != per * count + tail:
        raise MXNetError("mx.nd.%s: %d arrays given, but %d weight(s) of %d arrays each%s "
                         "need %d" % (fn, len(data), count, per,
                                      " plus %d" % tail if tail else "", per * count + tail))
    groups = [data[i * per:(i + 1) * per] for i in range(count)]
    for i, group in enumerate(groups):
        _check(fn, group[0].shape, **{"array %d" % (i * per + k): a for k, a in enumerate(group)})
    for k, extra in enumerate(data[per * count:]):
        _check(fn, None, **{"array %d" % (per * count + k): extra})
    return groups, data[per * count:]


def _write_many(fn: str, weights: list, news: list, out):
    if out is None:
        return [wrap(new.astype(w.dtype), w.context) for w, new in zip(weights, news)]
    targets = out if isinstance(out, (list, tuple)) else [out]
    if len(targets) != len(weights):
        raise MXNetError("mx.nd.%s: out= holds %d arrays for %d weights"
                         % (fn, len(targets), len(weights)))
    for w, new, target in zip(weights, news, targets):
        _write(fn, w, new, target)
    return out


def _per_weight(fn: str, values, count: int, what: str) -> list:
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    if len(values) != count:
        raise MXNetError("mx.nd.%s: %s has %d values for %d weights"
                         % (fn, what, len(values), count))
    return values


def _multi_sgd(fn, data, num_weights, lrs, wds, momentum, rescale_grad, clip_gradient, out,
               has_mom: bool, mixed: bool, preloaded: bool):
    per = 2 + has_mom + mixed
    groups, tail = _groups(fn, data, per, num_weights, 2 if preloaded else 0)
    if preloaded:
        lr_arr, wd_arr = (t._data.astype(F32).reshape(-1) for t in tail)
        lrs = [lr_arr[i:i + 1] for i in range(num_weights)]
        wds = [wd_arr[i:i + 1] for i in range(num_weights)]
    else:
        lrs = [F32(v) for v in _per_weight(fn, lrs, num_weights, "lrs")]
        wds = [F32(v) for v in _per_weight(fn, wds, num_weights, "wds")]
    news = []
    with backend.device_scope(groups[0][0].context):
        for group, lr, wd in zip(groups, lrs, wds):
            weight, grad = group[0], group[1]
            mom = group[2]._data if has_mom else None
            master = group[-1]._data if mixed else weight._data
            ct = F32 if mixed else master.dtype.type
            g = grad._data.astype(ct, copy=False)
            new = _sgd_arith(weight._xp, master, g, mom, ct(lr) if not preloaded else lr,
                             ct(wd) if not preloaded else wd, _c(ct, momentum),
                             _c(ct, rescale_grad), clip_gradient, ct)
            if mixed:
                master[...] = new
            news.append(new)
    return _write_many(fn, [g[0] for g in groups], news, out)


def multi_sgd_update(*data, lrs, wds, rescale_grad=1.0, clip_gradient=-1.0, num_weights=1,
                     out=None, name=None):
    """sgd_update of num_weights weights in one call: data = w0, g0, w1, g1, ...; lrs and wds
    one per weight."""
    return _multi_sgd("multi_sgd_update", data, num_weights, lrs, wds, 0.0, rescale_grad,
                      clip_gradient, out, has_mom=False, mixed=False, preloaded=False)


def multi_sgd_mom_update(*data, lrs, wds, momentum=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                         num_weights=1, out=None, name=None):
    """sgd_mom_update of many weights: data = w0, g0, mom0, w1, ..."""
    return _multi_sgd("multi_sgd_mom_update", data, num_weights, lrs, wds, momentum,
                      rescale_grad, clip_gradient, out, has_mom=True, mixed=False,
                      preloaded=False)


def multi_mp_sgd_update(*data, lrs, wds, rescale_grad=1.0, clip_gradient=-1.0, num_weights=1,
                        out=None, name=None):
    """mp_sgd_update of many weights: data = w0, g0, w0_32, w1, ..."""
    return _multi_sgd("multi_mp_sgd_update", data, num_weights, lrs, wds, 0.0, rescale_grad,
                      clip_gradient, out, has_mom=False, mixed=True, preloaded=False)


def multi_mp_sgd_mom_update(*data, lrs, wds, momentum=0.0, rescale_grad=1.0,
                            clip_gradient=-1.0, num_weights=1, out=None, name=None):
    """mp_sgd_mom_update of many weights: data = w0, g0, mom0, w0_32, w1, ..."""
    return _multi_sgd("multi_mp_sgd_mom_update", data, num_weights, lrs, wds, momentum,
                      rescale_grad, clip_gradient, out, has_mom=True, mixed=True,
                      preloaded=False)


def preloaded_multi_sgd_update(*data, rescale_grad=1.0, clip_gradient=-1.0, num_weights=1,
                               out=None, name=None):
    """multi_sgd_update with the learning rates and weight decays as the last two inputs,
    float32 arrays of num_weights values (read on the device)."""
    return _multi_sgd("preloaded_multi_sgd_update", data, num_weights, None, None, 0.0,
                      rescale_grad, clip_gradient, out, has_mom=False, mixed=False,
                      preloaded=True)


def preloaded_multi_sgd_mom_update(*data, momentum=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                                   num_weights=1, out=None, name=None):
    """multi_sgd_mom_update with lrs and wds as the last two inputs."""
    return _multi_sgd("preloaded_multi_sgd_mom_update", data, num_weights, None, None,
                      momentum, rescale_grad, clip_gradient, out, has_mom=True, mixed=False,
                      preloaded=True)


def preloaded_multi_mp_sgd_update(*data, rescale_grad=1.0, clip_gradient=-1.0, num_weights=1,
                                  out=None, name=None):
    """multi_mp_sgd_update with lrs and wds as the last two inputs."""
    return _multi_sgd("preloaded_multi_mp_sgd_update", data, num_weights, None, None, 0.0,
                      rescale_grad, clip_gradient, out, has_mom=False, mixed=True,
                      preloaded=True)


def preloaded_multi_mp_sgd_mom_update(*data, momentum=0.0, rescale_grad=1.0,
                                      clip_gradient=-1.0, num_weights=1, out=None, name=None):
    """multi_mp_sgd_mom_update with lrs and wds as the last two inputs."""
    return _multi_sgd("preloaded_multi_mp_sgd_mom_update", data, num_weights, None, None,
                      momentum, rescale_grad, clip_gradient, out, has_mom=True, mixed=True,
                      preloaded=True)


# ============================================================================ LARS helpers

def _sum_sq(xp, x):
    """sum(x * x) as MXNet's CPU kernel forms it: squares in x's type, accumulated one after
    another in float32."""
    squares = (x * x).astype(F32, copy=False).reshape(-1)
    if squares.size == 0:
        return xp.zeros((1,), dtype=F32)
    return xp.cumsum(squares, dtype=F32)[-1:]


def multi_sum_sq(*data, num_arrays=None, out=None, name=None):
    """The sum of squares of each array, as a float32 array of num_arrays values (the arrays
    share one type, as MXNet requires)."""
    arrays = _flat(data)
    if num_arrays is not None and num_arrays != len(arrays):
        raise MXNetError("mx.nd.multi_sum_sq: num_arrays=%d but %d arrays given"
                         % (num_arrays, len(arrays)))
    _check("multi_sum_sq", None, **{"array %d" % i: a for i, a in enumerate(arrays)})
    if len({a.dtype for a in arrays}) > 1:
        raise MXNetError("mx.nd.multi_sum_sq: the arrays must share one type, got %s"
                         % sorted({str(np.dtype(a.dtype)) for a in arrays}))
    xp = arrays[0]._xp
    with backend.device_scope(arrays[0].context):
        sums = xp.concatenate([_sum_sq(xp, a._data) for a in arrays])
        result = wrap(sums, arrays[0].context)
        return result if out is None else _write("multi_sum_sq", result, sums, out)


def multi_lars(lrs, weights_sum_sq, grads_sum_sq, wds, eta, eps, rescale_grad=1.0, out=None,
               name=None):
    """LARS learning rates: lr eta ||w|| / (||g|| + wd ||w|| + eps) (formed in that order)
    with ||w||, ||g|| the roots of the given sums of squares (||g|| times rescale_grad), or lr
    where either norm is 0; float32 arrays of one value per weight."""
    _check("multi_lars", lrs.shape, lrs=lrs, weights_sum_sq=weights_sum_sq,
           grads_sum_sq=grads_sum_sq, wds=wds)
    xp = lrs._xp
    with backend.device_scope(lrs.context):
        w_norm = xp.sqrt(weights_sum_sq._data.astype(F32))
        g_sq = grads_sum_sq._data.astype(F32)
        g_norm = xp.sqrt(g_sq) * F32(rescale_grad)
        valid = (w_norm > 0) & (g_sq > 0)
        lr = lrs._data.astype(F32)
        scaled = (lr * F32(eta)) * w_norm / ((g_norm + wds._data.astype(F32) * w_norm)
                                             + F32(eps))
        rates = xp.where(valid, scaled, lr)
        return _write("multi_lars", lrs, rates, out) if out is not None else wrap(
            rates, lrs.context)


def reset_arrays(*data, num_arrays=None, out=None, name=None):
    """Set every array to 0, in place; returns an empty list, as MXNet does."""
    arrays = _flat(data)
    if num_arrays is not None and num_arrays != len(arrays):
        raise MXNetError("mx.nd.reset_arrays: num_arrays=%d but %d arrays given"
                         % (num_arrays, len(arrays)))
    _check("reset_arrays", None, **{"array %d" % i: a for i, a in enumerate(arrays)})
    for a in arrays:
        with backend.device_scope(a.context):
            a._data.fill(0)
    return []


def multi_all_finite(*data, num_arrays=1, init_output=True, out=None, name=None):
    """A float32 array [1.] when every value of every array is finite, else [0.]. With
    init_output=False and out given, a finite result leaves out as it was (MXNet's use:
    accumulate over several calls)."""
    arrays = _flat(data)
    _check("multi_all_finite", None, **{"array %d" % i: a for i, a in enumerate(arrays)})
    xp = arrays[0]._xp
    with backend.device_scope(arrays[0].context):
        finite = xp.ones((1,), dtype=F32)
        for a in arrays:
            finite *= xp.isfinite(a._data).all()
        if out is None:
            return wrap(finite, arrays[0].context)
        if init_output:
            out._data[...] = finite
        else:
            out._data[...] = xp.where(finite == 0, F32(0), out._data)
        return out

#: `mx.nd.<name>`
KERNELS: dict[str, Callable] = {f.__name__: f for f in (
    multi_sgd_update, multi_sgd_mom_update, multi_mp_sgd_update, multi_mp_sgd_mom_update,
    preloaded_multi_sgd_update, preloaded_multi_sgd_mom_update, preloaded_multi_mp_sgd_update,
    preloaded_multi_mp_sgd_mom_update, multi_sum_sq, multi_lars, reset_arrays,
    multi_all_finite)}
