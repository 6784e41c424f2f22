"""MXNet 1.9.1's optimizer kernels as `mx.nd` functions on NDArrays, one weight per call:
the nine the built-in optimizers run (`sgd_update`, `sgd_mom_update`, `nag_mom_update`,
`adam_update`, `rmsprop_update`, `rmspropalex_update`, `signsgd_update`, `signum_update`,
`ftrl_update`: `UPDATE_KERNELS`, whose arithmetic is in `update_steps*.py`), and FTML, the
multi-precision SGD/NAG kernels and LAMB's two phases (`KERNELS`), all served as
`mx.nd.<name>`; the multi-tensor kernels are in `update_kernels_multi.py`, contrib's AdamW and
multi-tensor LAMB in `update_kernels_contrib.py`. Custom Optimizer subclasses call these
from `update`, as MXNet's own optimizers do.

Each kernel computes what MXNet's does, to the bit for float32 and the float16/float32 mixes
(tests/test_update_kernels.py and tests/test_optimizer_kernels.py against golden files MXNet
wrote): the same operations in the same order, in the weight's type (float32 for the `mp_`
kernels, which keep a float32 master `weight32` of a float16 weight), with hyperparameters
rounded to float32 as MXNet's parameter structs hold them. Clipping is on when clip_gradient
>= 0, as in MXNet's kernels (0 clips every gradient to 0); the nine of `UPDATE_KERNELS` follow
their optimizers' rule instead (`update_steps.clip_on`: on when clip_gradient > 0).

Arrays behave as MXNet's: states (momenta, moments, masters) are updated in place; the new
weight goes to `out` (the weight itself when out=weight, the usual call), or, without out, to a
new array while the weight is left alone. MXNet's quirk is kept where it is its contract:
mp_lamb_update_phase2 leaves weight32 as it was.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import backend
from ..base import MXNetError, ShapeError
from . import update_rows
from . import update_steps as steps
from . import update_steps_adaptive as adaptive_steps
from .ndarray import NDArray, wrap

__all__ = ["KERNELS", "UPDATE_KERNELS"]

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


# ======================================================= the kernels the optimizers run

# The kernels' scratch pool (`update_steps.scratch_arrays`), kept between calls: a custom
# optimizer calls a kernel for every parameter on every step. Emptied past 64 entries.
_SCRATCH: dict = {}


def _run(name: str, weight: NDArray, grad: NDArray, states: tuple, out: NDArray | None,
         step, *hyper, rows_rule: str = "", lazy_update: bool = True) -> NDArray:
    """`step(w, g, *states, *hyper, pool)` (an `update_steps` function) on the arrays of
    these NDArrays, with MXNet's conventions: the states change in place; the new weight goes
    to `out` (the weight itself when out=weight), or, without out, to a new array while the
    weight is left alone. Sparse arrays go through `update_rows.run_sparse`, on the
    gradient's rows where `update_rows.lazy_rows(rows_rule, ...)` says MXNet's kernel does."""
    for label, arr in (("weight", weight), ("grad", grad)) + tuple(
            ("state %d" % i, s) for i, s in enumerate(states)):
        if not isinstance(arr, NDArray):
            raise TypeError("mx.nd.%s: %s must be an NDArray, got %s"
                            % (name, label, type(arr).__name__))
        if arr.shape != weight.shape:
            raise MXNetError("mx.nd.%s: %s has shape %s but the weight %s"
                             % (name, label, arr.shape, weight.shape))
    target = out if out is weight else weight.copy()
    if len(_SCRATCH) > 64:
        _SCRATCH.clear()
    with backend.device_scope(weight.context):
        if any(a.stype != "default" for a in (target, grad) + tuple(states)):
            lazy = bool(rows_rule) and update_rows.lazy_rows(rows_rule, target, grad, states,
                                                             lazy_update)
            update_rows.run_sparse(target, grad, states, lazy, lambda w, g, st: step(
                w._data, g._data, *(x._data for x in st), *hyper, _SCRATCH))
        else:
            step(target._data, grad._data, *(s._data for s in states), *hyper, _SCRATCH)
    if out is None or out is weight:
        return target
    out[:] = target
    return out


def sgd_update(weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
               lazy_update=True, out=None, name=None):
    """w = (1 - lr wd) w - lr clip(rescale_grad grad)."""
    return _run("sgd_update", weight, grad, (), out, steps.sgd_plain, lr, wd, rescale_grad,
                clip_gradient, rows_rule="grad", lazy_update=lazy_update)


def sgd_mom_update(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                   clip_gradient=-1.0, lazy_update=True, out=None, name=None):
    """mom = momentum mom - lr (clip(rescale_grad grad) + wd w); w += mom."""
    return _run("sgd_mom_update", weight, grad, (mom,), out, steps.sgd_mom, lr, wd, momentum,
                rescale_grad, clip_gradient, rows_rule="states", lazy_update=lazy_update)


def nag_mom_update(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                   clip_gradient=-1.0, out=None, name=None):
    """Nesterov momentum (see NAG)."""
    return _run("nag_mom_update", weight, grad, (mom,), out, steps.nag_mom, lr, wd, momentum,
                rescale_grad, clip_gradient)


def adam_update(weight, grad, mean, var, lr, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.0,
                rescale_grad=1.0, clip_gradient=-1.0, lazy_update=True, out=None, name=None):
    """Adam's moments and step without bias correction (Adam folds that into lr)."""
    return _run("adam_update", weight, grad, (mean, var), out, adaptive_steps.adam, lr, wd,
                beta1, beta2, epsilon, rescale_grad, clip_gradient, rows_rule="states",
                lazy_update=lazy_update)


def rmsprop_update(weight, grad, n, lr, gamma1=0.95, epsilon=1e-8, wd=0.0, rescale_grad=1.0,
                   clip_gradient=-1.0, clip_weights=-1.0, out=None, name=None):
    """Tieleman and Hinton's RMSProp (see RMSProp)."""
    return _run("rmsprop_update", weight, grad, (n,), out, adaptive_steps.rmsprop, lr, wd,
                gamma1, epsilon, clip_weights, rescale_grad, clip_gradient)


def rmspropalex_update(weight, grad, n, g, delta, lr, gamma1=0.95, gamma2=0.9, epsilon=1e-8,
                       wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, clip_weights=-1.0,
                       out=None, name=None):
    """Graves' centered RMSProp (see RMSProp with centered=True)."""
    return _run("rmspropalex_update", weight, grad, (n, g, delta), out,
                adaptive_steps.rmspropalex, lr, wd, gamma1, gamma2, epsilon, clip_weights,
                rescale_grad, clip_gradient)


def signsgd_update(weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, out=None,
                   name=None):
    """w = (1 - lr wd) w - lr sign(clip(rescale_grad grad))."""
    return _run("signsgd_update", weight, grad, (), out, steps.signsgd, lr, wd, rescale_grad,
                clip_gradient)


def signum_update(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                  clip_gradient=-1.0, wd_lh=0.0, out=None, name=None):
    """Signum (see Signum)."""
    return _run("signum_update", weight, grad, (mom,), out, steps.signum, lr, wd, momentum,
                wd_lh, rescale_grad, clip_gradient)


def ftrl_update(weight, grad, z, n, lr, lamda1=0.01, beta=1.0, wd=0.0, rescale_grad=1.0,
                clip_gradient=-1.0, out=None, name=None):
    """FTRL-proximal (see Ftrl)."""
    return _run("ftrl_update", weight, grad, (z, n), out, adaptive_steps.ftrl, lr, wd, lamda1,
                beta, rescale_grad, clip_gradient, rows_rule="all")


def _adagrad(w, g, history, lr, epsilon, rescale_grad, clip_gradient, _pool):
    xp, ct = backend.array_module_of(w), w.dtype.type
    g = _clipped(xp, g * _c(ct, rescale_grad), clip_gradient, ct)
    history += g * g
    w -= _c(ct, lr) * g / xp.sqrt(history + _c(ct, epsilon))


def adagrad_update(weight, grad, history, lr, epsilon=1e-7, wd=0.0, rescale_grad=1.0,
                   clip_gradient=-1.0, out=None, name=None):
    """MXNet's sparse AdaGrad kernel (`mx.nd.sparse.adagrad_update`), on the rows of a
    row-sparse gradient: h += g^2, w -= lr g / sqrt(h + epsilon), g = clip(rescale_grad grad).
    MXNet has it for a row-sparse gradient without weight decay only, and so has minimod."""
    if grad.stype != "row_sparse" or wd:
        raise MXNetError("mx.nd.sparse.adagrad_update takes a row_sparse gradient and wd=0 "
                         "(MXNet's only kernel), got a %s gradient and wd=%r; the AdaGrad "
                         "optimizer updates any other case" % (grad.stype, wd))
    return _run("adagrad_update", weight, grad, (history,), out, _adagrad, lr, epsilon,
                rescale_grad, clip_gradient, rows_rule="grad")


#: the kernels the built-in optimizers run (`minimod.optimizer.UPDATE_KERNELS`)
UPDATE_KERNELS: dict[str, Callable] = {f.__name__: f for f in (
    sgd_update, sgd_mom_update, nag_mom_update, adam_update, rmsprop_update,
    rmspropalex_update, signsgd_update, signum_update, ftrl_update)}


# ============================================================ FTML, mp_ kernels, LAMB

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


#: `mx.nd.<name>`: this module's kernels beyond `UPDATE_KERNELS`
KERNELS: dict[str, Callable] = {f.__name__: f for f in (
    ftml_update, mp_sgd_update, mp_sgd_mom_update, mp_nag_mom_update, lamb_update_phase1,
    lamb_update_phase2, mp_lamb_update_phase1, mp_lamb_update_phase2)}
