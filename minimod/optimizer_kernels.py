"""MXNet 1.9.1's optimizer kernels beyond those `minimod.optimizer` runs: FTML, the
multi-precision SGD/NAG kernels, LAMB's two phases, the multi-tensor SGD kernels (with
hyperparameters as tuples or, `preloaded_`, as arrays), the LARS helpers (`multi_sum_sq`,
`multi_lars`), `reset_arrays` and `multi_all_finite`. `mx.nd.<name>` serves `KERNELS`;
contrib's AdamW and multi-tensor LAMB are in `minimod.optimizer_contrib_kernels`.

Each kernel computes what MXNet's does, to the bit for float32 and the float16/float32 mixes
(tests/test_optimizer_kernels.py against tests/data/optimizer/kernels_golden.npz): the same
operations in the same order, in the weight's type (float32 for the `mp_` kernels, which keep
a float32 master `weight32` of a float16 weight), with hyperparameters rounded to float32 as
MXNet's parameter structs hold them. Clipping is on when clip_gradient >= 0, as in MXNet's
kernels (0 clips every gradient to 0).

Arrays behave as MXNet's: states (momenta, moments, masters) are updated in place; the new
weight goes to `out` (the weight itself when out=weight, the usual call), or, without out, to a
new array while the weight is left alone; the multi-tensor kernels take and return lists.
MXNet's quirks are kept where they are its contract: mp_lamb_update_phase2 leaves weight32 as
it was; multi_sum_sq accumulates each sum in float32, one element after another; the
multi-tensor LAMB forms its direction in double precision (MXNet calls the double sqrt there).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import backend
from .base import MXNetError, ShapeError
from .ndarray.ndarray import NDArray, wrap

__all__ = ["KERNELS"]

F32 = np.float32


def _c(ct, value) -> Any:
    """A float hyperparameter as MXNet's kernels see it: rounded to float32 (the parameter
    struct's type), then converted to the compute type `ct`."""
    return ct(F32(value))


def _check(fn: str, shape, **arrays) -> None:
    for label, arr in arrays.items():
        if not isinstance(arr, NDArray):
            raise TypeError("mx.nd.%s: %s must be an NDArray, got %s"
                            % (fn, label, type(arr).__name__))
        if shape is not None and arr.shape != shape:
            raise ShapeError("mx.nd.%s: %s has shape %s but the weight %s"
                             % (fn, label, arr.shape, shape))


def _clipped(xp, g, clip, ct):
    """clip(g) to [-clip, clip] when clip >= 0 (MXNet's kernels test >= 0)."""
    if clip is None or clip < 0:
        return g
    bound = _c(ct, clip)
    return xp.clip(g, -bound, bound)


def _write(fn: str, weight: NDArray, new, out):
    """Put the new weight values where MXNet's kernel writes them (see the module doc)."""
    if out is None:
        return wrap(new.astype(weight.dtype), weight.context)
    if not isinstance(out, NDArray):
        raise TypeError("mx.nd.%s: out must be an NDArray, got %s" % (fn, type(out).__name__))
    if out.shape != weight.shape:
        raise ShapeError("mx.nd.%s: out has shape %s but the weight %s"
                         % (fn, out.shape, weight.shape))
    out._data[...] = new
    return out


# ============================================================================ one weight

def ftml_update(weight, grad, d, v, z, lr, beta1=0.6, beta2=0.999, epsilon=1e-8, t=None,
                wd=0.0, rescale_grad=1.0, clip_grad=-1.0, out=None, name=None):
    """FTML (Zheng & Kwok, 2017) at step t: g = clip(rescale grad + wd w);
    v = b2 v + (1-b2) g^2; d_t = (1 - b1^t) / lr (sqrt(v / (1 - b2^t)) + eps);
    z = b1 z + (1-b1) g - (d_t - b1 d) w; d = d_t; w = -z / d_t. d, v, z change in place."""
    _check("ftml_update", weight.shape, weight=weight, grad=grad, d=d, v=v, z=z)
    if t is None:
        raise MXNetError("mx.nd.ftml_update: t (the update count) is required")
    w, xp, ct = weight._data, weight._xp, weight._data.dtype.type
    b1, b2, step = _c(ct, beta1), _c(ct, beta2), ct(t)
    one = ct(1)
    with backend.device_scope(weight.context):
        g = _clipped(xp, grad._data * _c(ct, rescale_grad) + w * _c(ct, wd), clip_grad, ct)
        v._data[...] = v._data * b2 + (one - b2) * (g * g)
        d_t = ((one - b1 ** step) / _c(ct, lr)) * (
            xp.sqrt(v._data / (one - b2 ** step)) + ct(epsilon))
        z._data[...] = (z._data * b1 + (one - b1) * g) - (d_t - d._data * b1) * w
        d._data[...] = d_t
        return _write("ftml_update", weight, -z._data / d_t, out)


def _master(fn: str, weight: NDArray, weight32: NDArray, **arrays) -> None:
    _check(fn, weight.shape, weight=weight, weight32=weight32, **arrays)
    if weight32.dtype != np.float32:
        raise MXNetError("mx.nd.%s: weight32 must be float32, got %s" % (fn, weight32.dtype))


def _sgd_arith(xp, w, g, mom, lr, wd, momentum, rescale, clip_gradient, ct):
    """MXNet's (multi-)SGD arithmetic in type ct, hyperparameters given in ct (or as
    1-element arrays): m = mu m - (lr wd) w - lr clip(rescale g), the last term (lr rescale) g
    without clipping; returns w + m, storing m when mom is given (without: w - (lr wd) w - ...,
    which is what MXNet's kernel computes from a zero momentum)."""
    decay = w * (lr * wd)
    if clip_gradient is None or clip_gradient < 0:
        push = g * (lr * rescale)
    else:
        push = _clipped(xp, g * rescale, clip_gradient, ct) * lr
    if mom is None:
        return w - (decay + push)
    mom[...] = (mom * momentum - decay) - push
    return w + mom


def _sgd_plain(xp, w, g, lr, wd, rescale_grad, clip_gradient, ct):
    """MXNet's single-array SGD: (1 - lr wd) w - lr clip(rescale g), or, without clipping,
    (1 - lr wd) w - (lr rescale) g."""
    lr_c = _c(ct, lr)
    keep = ct(F32(1) - F32(lr) * F32(wd))
    if clip_gradient is None or clip_gradient < 0:
        return w * keep - g * (lr_c * _c(ct, rescale_grad))
    return w * keep - _clipped(xp, g * _c(ct, rescale_grad), clip_gradient, ct) * lr_c


def mp_sgd_update(weight, grad, weight32, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                  lazy_update=True, out=None, name=None):
    """sgd_update on the float32 master weight32 (updated in place); the weight gets its
    value in the weight's type."""
    _master("mp_sgd_update", weight, weight32, grad=grad)
    with backend.device_scope(weight.context):
        g = grad._data.astype(F32)
        new = _sgd_plain(weight._xp, weight32._data, g, lr, wd, rescale_grad, clip_gradient, F32)
        weight32._data[...] = new
        return _write("mp_sgd_update", weight, new, out)


def mp_sgd_mom_update(weight, grad, mom, weight32, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                      clip_gradient=-1.0, lazy_update=True, out=None, name=None):
    """sgd_mom_update on the float32 master weight32 with a float32 momentum (both in place)."""
    _master("mp_sgd_mom_update", weight, weight32, grad=grad, mom=mom)
    with backend.device_scope(weight.context):
        new = _sgd_arith(weight._xp, weight32._data, grad._data.astype(F32), mom._data, F32(lr),
                         F32(wd), F32(momentum), F32(rescale_grad), clip_gradient, F32)
        weight32._data[...] = new
        return _write("mp_sgd_mom_update", weight, new, out)


def mp_nag_mom_update(weight, grad, mom, weight32, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                      clip_gradient=-1.0, out=None, name=None):
    """Nesterov momentum on the float32 master: m = mu m; w = (w - m) + (mu + 1)(m - lr (g +
    wd w)); then m -= lr (g + wd w) with the new w (MXNet's order); g = clip(rescale grad)."""
    _master("mp_nag_mom_update", weight, weight32, grad=grad, mom=mom)
    xp, m, w32 = weight._xp, mom._data, weight32._data
    lr_c, wd_c, mu = F32(lr), F32(wd), F32(momentum)
    with backend.device_scope(weight.context):
        g = _clipped(xp, grad._data.astype(F32) * F32(rescale_grad), clip_gradient, F32)
        m *= mu
        w32[...] = (w32 - m) + (mu + F32(1)) * (m - (g + w32 * wd_c) * lr_c)
        m -= (g + w32 * wd_c) * lr_c
        return _write("mp_nag_mom_update", weight, w32, out)


# ============================================================================ LAMB

def _lamb_moments(xp, g, mean, var, beta1, beta2, ct):
    """mean = b1 mean + (1-b1) g; var = b2 var + (1-b2) g g (in place, MXNet's order)."""
    b1, b2 = _c(ct, beta1), _c(ct, beta2)
    mean[...] = mean * b1 + (ct(1) - b1) * g
    var[...] = var * b2 + ((ct(1) - b2) * g) * g


def _lamb_direction(xp, w, mean, var, beta1, beta2, epsilon, t, bias_correction, wd, ct):
    """mean_hat / (sqrt(var_hat) + eps) + wd w, the hats bias-corrected at step t. MXNet forms
    beta^t in double precision and divides the mean by (1 - beta1^t) in double."""
    eps = _c(ct, epsilon)
    if not bias_correction:
        return mean / (xp.sqrt(var) + eps) + w * _c(ct, wd)
    beta1_t = ct(np.float64(F32(beta1)) ** int(t))
    beta2_t = ct(np.float64(F32(beta2)) ** int(t))
    mean_hat = (mean.astype(np.float64) / (1.0 - np.float64(beta1_t))).astype(ct)
    var_hat = var / (ct(1) - beta2_t)
    return mean_hat / (xp.sqrt(var_hat) + eps) + w * _c(ct, wd)


def lamb_update_phase1(weight, grad, mean, var, beta1=0.9, beta2=0.999, epsilon=1e-6, t=None,
                       bias_correction=True, wd=None, rescale_grad=1.0, clip_gradient=-1.0,
                       out=None, name=None):
    """LAMB's direction g (returned; `out` takes it) with g = clip(rescale grad):
    moments updated in place, then mean_hat / (sqrt(var_hat) + eps) + wd w."""
    _check("lamb_update_phase1", weight.shape, weight=weight, grad=grad, mean=mean, var=var)
    if t is None or wd is None:
        raise MXNetError("mx.nd.lamb_update_phase1: t and wd are required")
    xp, ct = weight._xp, weight._data.dtype.type
    with backend.device_scope(weight.context):
        g = _clipped(xp, grad._data * _c(ct, rescale_grad), clip_gradient, ct)
        _lamb_moments(xp, g, mean._data, var._data, beta1, beta2, ct)
        direction = _lamb_direction(xp, weight._data, mean._data, var._data, beta1, beta2,
                                    epsilon, t, bias_correction, wd, ct)
        return _write("lamb_update_phase1", weight, direction, out)


def mp_lamb_update_phase1(weight, grad, mean, var, weight32, beta1=0.9, beta2=0.999,
                          epsilon=1e-6, t=None, bias_correction=True, wd=None, rescale_grad=1.0,
                          clip_gradient=-1.0, out=None, name=None):
    """lamb_update_phase1 in float32 on the master weight32; g comes back in float32."""
    _master("mp_lamb_update_phase1", weight, weight32, grad=grad, mean=mean, var=var)
    if t is None or wd is None:
        raise MXNetError("mx.nd.mp_lamb_update_phase1: t and wd are required")
    xp = weight._xp
    with backend.device_scope(weight.context):
        g = _clipped(xp, grad._data.astype(F32) * F32(rescale_grad), clip_gradient, F32)
        _lamb_moments(xp, g, mean._data, var._data, beta1, beta2, F32)
        direction = _lamb_direction(xp, weight32._data, mean._data, var._data, beta1, beta2,
                                    epsilon, t, bias_correction, wd, F32)
        if out is None:
            return wrap(direction, weight.context)
        return _write("mp_lamb_update_phase1", weight32, direction, out)


def _trust_lr(xp, r1, r2, lr, lower_bound, upper_bound, ct):
    """lr * r1 / r2 as a 1-element array (lr itself where r1 or r2 is 0), r1 bounded to
    [lower_bound, upper_bound] where those are >= 0; read on the device, no host sync."""
    norm = r1.astype(ct).reshape(1)
    if lower_bound is not None and lower_bound >= 0:
        norm = xp.maximum(norm, _c(ct, lower_bound))
    if upper_bound is not None and upper_bound >= 0:
        norm = xp.minimum(norm, _c(ct, upper_bound))
    other = r2.astype(ct).reshape(1)
    lr_c = _c(ct, lr)
    ratio_lr = (lr_c * norm) / xp.where(other == 0, ct(1), other)
    return xp.where((norm == 0) | (other == 0), lr_c, ratio_lr)


def lamb_update_phase2(weight, g, r1, r2, lr, lower_bound=-1.0, upper_bound=-1.0, out=None,
                       name=None):
    """w - lr (r1 / r2) g, with r1 = ||w|| and r2 = ||g|| given as 1-element arrays."""
    _check("lamb_update_phase2", weight.shape, weight=weight, g=g)
    _check("lamb_update_phase2", None, r1=r1, r2=r2)
    xp, ct = weight._xp, weight._data.dtype.type
    with backend.device_scope(weight.context):
        step = _trust_lr(xp, r1._data, r2._data, lr, lower_bound, upper_bound, ct)
        return _write("lamb_update_phase2", weight, weight._data - step * g._data, out)


def mp_lamb_update_phase2(weight, g, r1, r2, weight32, lr, lower_bound=-1.0, upper_bound=-1.0,
                          out=None, name=None):
    """lamb_update_phase2 from the float32 master: the weight gets weight32 - lr (r1 / r2) g.
    MXNet 1.9.1's kernel leaves weight32 itself unchanged (kept: it is MXNet's contract, and
    its LAMB optimizer's float16 path inherits it)."""
    _master("mp_lamb_update_phase2", weight, weight32, g=g)
    _check("mp_lamb_update_phase2", None, r1=r1, r2=r2)
    xp = weight._xp
    with backend.device_scope(weight.context):
        step = _trust_lr(xp, r1._data, r2._data, lr, lower_bound, upper_bound, F32)
        new = weight32._data - step * g._data.astype(F32)
        return _write("mp_lamb_update_phase2", weight, new, out)


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


#: `mx.nd.<name>` (minimod.optimizer.UPDATE_KERNELS has the kernels the optimizers run)
KERNELS: dict[str, Callable] = {f.__name__: f for f in (
    ftml_update, mp_sgd_update, mp_sgd_mom_update, mp_nag_mom_update, lamb_update_phase1,
    lamb_update_phase2, mp_lamb_update_phase1, mp_lamb_update_phase2, multi_sgd_update,
    multi_sgd_mom_update, multi_mp_sgd_update, multi_mp_sgd_mom_update,
    preloaded_multi_sgd_update, preloaded_multi_sgd_mom_update, preloaded_multi_mp_sgd_update,
    preloaded_multi_mp_sgd_mom_update, multi_sum_sq, multi_lars, reset_arrays,
    multi_all_finite)}
