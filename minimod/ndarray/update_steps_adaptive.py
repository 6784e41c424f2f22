"""The arithmetic of MXNet's adam_update, rmsprop_update, rmspropalex_update, ftrl_update and
contrib group_adagrad_update kernels, in place on backend arrays: what `mx.nd.adam_update`
(update_kernels.py) and the built-in Adam, RMSProp, Ftrl and GroupAdaGrad optimizers run. The
conventions (float32 hyperparameters in the weight's type, states in place, temporaries from
`pool`) are `update_steps.py`'s.
"""
from __future__ import annotations

from .update_steps import array_module_of, clip_on, f32, kernel_grad, scratch_arrays

__all__ = ["adam", "adam_passes", "adam_scalars", "ftrl", "group_adagrad", "rmsprop",
           "rmspropalex"]


def adam(w, g, mean, var, lr: float, wd: float, beta1: float, beta2: float, epsilon: float,
         rescale_grad: float, clip_gradient, pool: dict) -> None:
    """MXNet's adam_update kernel, without bias correction (Adam folds it into lr):
    `g = clip(rescale * grad + wd * w)`, `m = b1 m + (1-b1) g`, `v = b2 v + (1-b2) g^2`,
    `w -= lr m / (sqrt(v) + eps)`."""
    scalars = adam_scalars(w.dtype.type, lr, wd, beta1, beta2, epsilon, rescale_grad,
                           clip_gradient)
    adam_passes(array_module_of(w), w, g, mean, var, scalars, *scratch_arrays(pool, w, 2))


def adam_scalars(ct, lr: float, wd: float, beta1: float, beta2: float, epsilon: float,
                 rescale_grad: float, clip_gradient) -> tuple:
    """Adam's scalars in the weight's type `ct`, in the order `adam_passes` reads them:
    rescale, wd, b1, 1 - b1, b2, 1 - b2, eps, lr, then -clip and clip when clipping."""
    b1, b2 = f32(beta1), f32(beta2)
    values = (ct(f32(rescale_grad)), ct(f32(wd)), ct(b1), ct(f32(1.0) - b1), ct(b2),
              ct(f32(1.0) - b2), ct(f32(epsilon)), ct(f32(lr)))
    if clip_on(clip_gradient):
        bound = ct(f32(clip_gradient))
        values += (-bound, bound)
    return values


def adam_passes(xp, w, g, mean, var, scalars: tuple, grad, tmp) -> None:
    """Adam's update over `scalars` (`adam_scalars`: numbers, or 0-d device arrays that a
    CUDA graph reads at each replay), with scratch arrays `grad` and `tmp` shaped like w."""
    rescale, wd, b1, one_b1, b2, one_b2, eps, lr = scalars[:8]
    xp.multiply(g, rescale, out=grad)
    xp.multiply(w, wd, out=tmp)
    grad += tmp
    if len(scalars) > 8:
        xp.clip(grad, scalars[8], scalars[9], out=grad)
    mean *= b1
    xp.multiply(grad, one_b1, out=tmp)
    mean += tmp
    var *= b2
    xp.multiply(grad, one_b2, out=tmp)
    tmp *= grad
    var += tmp
    xp.sqrt(var, out=tmp)
    tmp += eps
    xp.multiply(mean, lr, out=grad)
    grad /= tmp
    w -= grad


def rmsprop(w, g, n, lr: float, wd: float, gamma1: float, epsilon: float, clip_weights,
            rescale_grad: float, clip_gradient, pool: dict) -> None:
    """MXNet's rmsprop_update kernel (Tieleman & Hinton): `g = clip(rescale * grad + wd * w)`,
    `n = (1-g1) g^2 + g1 n`, `w -= lr * g / sqrt(n + eps)`; clip_weights bounds the weights."""
    xp, ct = array_module_of(w), w.dtype.type
    grad, tmp = scratch_arrays(pool, w, 2)
    kernel_grad(xp, g, w, wd, grad, tmp, rescale_grad, clip_gradient)
    g1 = f32(gamma1)
    xp.multiply(grad, grad, out=tmp)
    tmp *= ct(f32(1.0) - g1)
    n *= ct(g1)
    n += tmp
    tmp[...] = n  # in the weight's type, n's may be wider
    tmp += ct(f32(epsilon))
    xp.sqrt(tmp, out=tmp)
    grad /= tmp
    grad *= ct(f32(lr))
    w -= grad
    if clip_on(clip_weights):
        bound = ct(f32(clip_weights))
        xp.clip(w, -bound, bound, out=w)


def rmspropalex(w, g, n, mean, delta, lr: float, wd: float, gamma1: float, gamma2: float,
                epsilon: float, clip_weights, rescale_grad: float, clip_gradient,
                pool: dict) -> None:
    """MXNet's rmspropalex_update kernel (Graves' centered RMSProp): `g = clip(rescale * grad
    + wd * w)`, `n = (1-g1) g^2 + g1 n`, `m = (1-g1) g + g1 m`,
    `d = g2 d - lr * g / sqrt(n - m^2 + eps)`, `w += d`; clip_weights bounds the weights."""
    xp, ct = array_module_of(w), w.dtype.type
    grad, tmp = scratch_arrays(pool, w, 2)
    kernel_grad(xp, g, w, wd, grad, tmp, rescale_grad, clip_gradient)
    g1 = f32(gamma1)
    keep = ct(f32(1.0) - g1)
    xp.multiply(grad, keep, out=tmp)  # ((1-g1) g) g: rmsprop_update rounds (g g) (1-g1)
    tmp *= grad
    n *= ct(g1)
    n += tmp
    xp.multiply(grad, keep, out=tmp)
    mean *= ct(g1)
    mean += tmp
    xp.multiply(mean, mean, out=tmp)
    xp.subtract(n, tmp, out=tmp)
    tmp += ct(f32(epsilon))
    xp.sqrt(tmp, out=tmp)
    grad *= ct(f32(lr))
    grad /= tmp
    delta *= ct(f32(gamma2))
    delta -= grad
    w += delta
    if clip_on(clip_weights):
        bound = ct(f32(clip_weights))
        xp.clip(w, -bound, bound, out=w)


def ftrl(w, g, z, n, lr: float, wd: float, lamda1: float, beta: float, rescale_grad: float,
         clip_gradient, pool: dict) -> None:
    """MXNet's ftrl_update kernel (FTRL-proximal): with g = clip(rescale * grad),
    `z += g - (sqrt(n + g^2) - sqrt(n)) * w / lr`, `n += g^2`,
    `w = (sign(z) lamda1 - z) / ((beta + sqrt(n)) / lr + wd)` where `|z| > lamda1`, else 0."""
    xp, ct = array_module_of(w), w.dtype.type
    grad, tmp, sq, root_n = scratch_arrays(pool, w, 4)
    xp.multiply(g, ct(f32(rescale_grad)), out=grad)
    if clip_on(clip_gradient):
        bound = ct(f32(clip_gradient))
        xp.clip(grad, -bound, bound, out=grad)
    lr_ = ct(f32(lr))
    xp.multiply(grad, grad, out=sq)
    xp.add(n, sq, out=tmp)
    xp.sqrt(tmp, out=tmp)
    xp.sqrt(n, out=root_n)
    tmp -= root_n
    tmp *= w
    tmp /= lr_
    xp.subtract(grad, tmp, out=tmp)
    z += tmp
    n += sq
    lam = ct(f32(lamda1))
    xp.sign(z, out=tmp)
    tmp *= lam
    tmp -= z
    xp.sqrt(n, out=sq)
    sq += ct(f32(beta))
    sq /= lr_
    sq += ct(f32(wd))
    tmp /= sq
    xp.abs(z, out=sq)
    xp.greater(sq, lam, out=grad, casting="unsafe")
    xp.multiply(tmp, grad, out=w)


def group_adagrad(w, g, history, lr: float, epsilon: float, rescale_grad: float,
                  clip_gradient, pool: dict) -> None:
    """MXNet's group_adagrad_update kernel, one rate per row (the rows of w run along its
    first axis; history has shape (rows, 1)): `g = clip(rescale * grad)`,
    `h += mean(g^2)` over each row, `w -= (lr g) / sqrt(h + eps)`. No weight decay."""
    xp, ct = array_module_of(w), w.dtype.type
    grad, tmp = scratch_arrays(pool, w, 2)
    xp.multiply(g, ct(f32(rescale_grad)), out=grad)
    if clip_on(clip_gradient):
        bound = ct(f32(clip_gradient))
        xp.clip(grad, -bound, bound, out=grad)
    xp.multiply(grad, grad, out=tmp)
    rows = w.shape[0]
    history += tmp.reshape(rows, -1).mean(axis=1, keepdims=True, dtype=ct).reshape(
        history.shape)
    root = xp.sqrt(history + ct(f32(epsilon))).reshape((rows,) + (1,) * (w.ndim - 1))
    grad *= ct(f32(lr))
    xp.divide(grad, root, out=grad)
    w -= grad
