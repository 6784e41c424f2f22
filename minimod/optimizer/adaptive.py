"""The adaptive optimizers: Adam, Adamax, Nadam, LAMB and FTML (moment estimates), AdaGrad,
GroupAdaGrad, AdaDelta and RMSProp (accumulated squares), and Ftrl.

Adam, RMSProp and Ftrl run the arithmetic of MXNet's `adam_update`, `rmsprop(alex)_update` and
`ftrl_update` kernels (`minimod/ndarray/update_steps_adaptive.py`, shared with `mx.nd`); the
others write theirs here, in the order and precision of MXNet's code for them (C++ kernels or
Python).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base import MXNetError
from ..ndarray.ndarray import NDArray, zeros
from ..ndarray.update_steps import clip_on, f32, kernel_grad
from ..ndarray.update_steps_adaptive import adam, ftrl, group_adagrad, rmsprop, rmspropalex
from .base import State, _Builtin, _xp, register
from .flat_runs import AdamRun

__all__ = ["AdaDelta", "AdaGrad", "Adam", "Adamax", "FTML", "Ftrl", "GroupAdaGrad", "LAMB",
           "Nadam", "RMSProp"]


@register
class Adam(_Builtin):
    """Adam: `g = clip(rescale * grad + wd * w)`, `m = b1 m + (1-b1) g`,
    `v = b2 v + (1-b2) g^2`, `w -= lr_t m / (sqrt(v) + eps)` with
    `lr_t = lr sqrt(1 - b2^t) / (1 - b1^t)` and t the parameter's update count."""

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, lazy_update: bool = True, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index: Any, weight: NDArray) -> State:
        return (self._zeros(weight), self._zeros(weight))

    def _sparse_form(self, wd: float, weight_stype: str = "default") -> str:
        return "rows" if self.lazy_update and type(self) is Adam else ""

    def _step(self, index, w, g, state, lr, wd):
        t = self._index_update_count[index]
        lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        adam(w, g, state[0]._data, state[1]._data, lr, wd, self.beta1, self.beta2,
             self.epsilon, self.rescale_grad, self.clip_gradient, self._scratch)

    def _flat_step(self, index, w, g, state):
        """Adam's update of one run of a flat buffer, prepared (`flat_runs.AdamRun`)."""
        if type(self)._step is not Adam._step:  # a subclass with its own arithmetic
            return super()._flat_step(index, w, g, state)
        return AdamRun(self, index, w, g, state[0]._data, state[1]._data)


@register
class AdaGrad(_Builtin):
    """AdaGrad: `h += g^2`, `w -= lr * (g / sqrt(h + eps) + wd * w)`, g = clip(rescale*grad)."""

    def __init__(self, eps: float = 1e-7, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index: Any, weight: NDArray) -> State:
        return self._zeros(weight, np.float32)

    def _sparse_form(self, wd: float, weight_stype: str = "default") -> str:
        # lazy, but with wd = 0 the dense update leaves a row without gradient as it is
        return "" if not wd else ("MXNet's AdaGrad takes no weight decay with a row_sparse "
                                  "gradient; set wd=0 or pass a dense gradient")

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp(w)
        ct = w.dtype.type
        history = state._data
        grad, tmp = self._tmp(w, 2)
        xp.multiply(g, ct(self.rescale_grad), out=grad)
        if self.clip_gradient is not None:
            xp.clip(grad, ct(-self.clip_gradient), ct(self.clip_gradient), out=grad)
        xp.multiply(grad, grad, out=tmp)
        history += tmp
        xp.add(history, ct(self.float_stable_eps), out=tmp)
        xp.sqrt(tmp, out=tmp)
        xp.divide(grad, tmp, out=grad)
        xp.multiply(w, ct(wd), out=tmp)
        grad += tmp
        grad *= ct(-lr)
        w += grad


@register
class RMSProp(_Builtin):
    """RMSProp (Tieleman & Hinton) or, with centered=True, Graves' centered variant.
    `g = clip(rescale * grad + wd * w)`; plain: `n = (1-g1) g^2 + g1 n`,
    `w -= lr * g / sqrt(n + eps)`; centered: also `m = (1-g1) g + g1 m`,
    `d = g2 d - lr * g / sqrt(n - m^2 + eps)`, `w += d`. clip_weights bounds the weights."""

    def __init__(self, learning_rate: float = 0.001, gamma1: float = 0.9, gamma2: float = 0.9,
                 epsilon: float = 1e-8, centered: bool = False,
                 clip_weights: float | None = None, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index: Any, weight: NDArray) -> State:
        count = 3 if self.centered else 1
        return tuple(self._zeros(weight, np.float32) for _ in range(count))

    def _step(self, index, w, g, state, lr, wd):
        if self.centered:
            rmspropalex(w, g, state[0]._data, state[1]._data, state[2]._data, lr, wd,
                        self.gamma1, self.gamma2, self.epsilon, self.clip_weights,
                        self.rescale_grad, self.clip_gradient, self._scratch)
        else:
            rmsprop(w, g, state[0]._data, lr, wd, self.gamma1, self.epsilon, self.clip_weights,
                    self.rescale_grad, self.clip_gradient, self._scratch)


@register
class AdaDelta(_Builtin):
    """AdaDelta (no learning rate): `E[g^2] = rho E[g^2] + (1-rho) g^2`,
    `d = sqrt(E[dx^2] + eps) / sqrt(E[g^2] + eps) * g`, `E[dx^2] = rho E[dx^2] + (1-rho) d^2`,
    `w -= d + wd * w`. Like MXNet, it multiplies the caller's gradient by rescale_grad in
    place."""

    def __init__(self, rho: float = 0.90, epsilon: float = 1e-5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def create_state(self, index: Any, weight: NDArray) -> State:
        return (self._zeros(weight, np.float32), self._zeros(weight, np.float32))

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp(w)
        ct = w.dtype.type
        g *= ct(self.rescale_grad)
        grad, tmp, delta = self._tmp(w, 3)
        if self.clip_gradient is not None:
            xp.clip(g, ct(-self.clip_gradient), ct(self.clip_gradient), out=grad)
        else:
            grad[...] = g
        acc_g, acc_delta = state[0]._data, state[1]._data
        rho, keep, eps = ct(self.rho), ct(1.0 - self.rho), ct(self.epsilon)
        acc_g *= rho
        xp.multiply(grad, keep, out=tmp)
        tmp *= grad
        acc_g += tmp
        xp.add(acc_delta, eps, out=delta)
        xp.sqrt(delta, out=delta)
        xp.add(acc_g, eps, out=tmp)
        xp.sqrt(tmp, out=tmp)
        delta /= tmp
        delta *= grad
        acc_delta *= rho
        xp.multiply(delta, keep, out=tmp)
        tmp *= delta
        acc_delta += tmp
        xp.multiply(w, ct(wd), out=tmp)
        delta += tmp
        w -= delta


@register
class Adamax(_Builtin):
    """Adamax: `g = clip(rescale * grad + wd * w)`, `m = b1 m + (1-b1) g`,
    `u = max(b2 u, |g|)`, `w -= lr / (1 - b1^t) * m / u`."""

    def __init__(self, learning_rate: float = 0.002, beta1: float = 0.9, beta2: float = 0.999,
                 **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2

    def create_state(self, index: Any, weight: NDArray) -> State:
        return (self._zeros(weight), self._zeros(weight))

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp(w)
        ct = w.dtype.type
        t = self._index_update_count[index]
        lr /= 1.0 - self.beta1 ** t
        grad = self._grad_clipped(g, self._tmp(w, 1)[0], wd, w, python_clip=True)
        tmp = self._tmp(w, 2)[1]
        m, u = state[0]._data, state[1]._data
        m *= ct(self.beta1)
        xp.multiply(grad, ct(1.0 - self.beta1), out=tmp)
        m += tmp
        u *= ct(self.beta2)
        xp.abs(grad, out=tmp)
        xp.maximum(u, tmp, out=u)
        xp.multiply(m, ct(lr), out=tmp)
        tmp /= u
        w -= tmp


@register
class Nadam(_Builtin):
    """Nesterov Adam with the momentum schedule of Dozat (2016); `m_schedule` is one running
    product shared by all parameters, as in MXNet."""

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, schedule_decay: float = 0.004, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.0

    def create_state(self, index: Any, weight: NDArray) -> State:
        return (self._zeros(weight), self._zeros(weight))

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp(w)
        ct = w.dtype.type
        t = self._index_update_count[index]
        grad = self._grad_clipped(g, self._tmp(w, 1)[0], wd, w, python_clip=True)
        tmp, mix = self._tmp(w, 3)[1:]
        mom_t = self.beta1 * (1.0 - 0.5 * pow(0.96, t * self.schedule_decay))
        mom_next = self.beta1 * (1.0 - 0.5 * pow(0.96, (t + 1) * self.schedule_decay))
        self.m_schedule = self.m_schedule * mom_t
        schedule_next = self.m_schedule * mom_next
        m, v = state[0]._data, state[1]._data
        m *= ct(self.beta1)
        xp.multiply(grad, ct(1.0 - self.beta1), out=tmp)
        m += tmp
        v *= ct(self.beta2)
        xp.multiply(grad, ct(1.0 - self.beta2), out=tmp)
        tmp *= grad
        v += tmp
        grad /= ct(1.0 - self.m_schedule)
        grad *= ct(1.0 - mom_t)
        xp.divide(m, ct(1.0 - schedule_next), out=mix)
        mix *= ct(mom_next)
        mix += grad
        xp.divide(v, ct(1.0 - pow(self.beta2, t)), out=tmp)
        xp.sqrt(tmp, out=tmp)
        tmp += ct(self.epsilon)
        mix *= ct(lr)
        mix /= tmp
        w -= mix


@register
class Ftrl(_Builtin):
    """FTRL-proximal (McMahan et al.): with g = clip(rescale * grad),
    `z += g - (sqrt(n + g^2) - sqrt(n)) * w / lr`, `n += g^2`,
    `w = (sign(z) lamda1 - z) / ((beta + sqrt(n)) / lr + wd)` where `|z| > lamda1`, else 0."""

    def __init__(self, lamda1: float = 0.01, learning_rate: float = 0.1, beta: float = 1,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lamda1 = lamda1
        self.beta = beta
        self.lr = learning_rate

    def create_state(self, index: Any, weight: NDArray) -> State:
        return (self._zeros(weight, np.float32), self._zeros(weight, np.float32))

    def _sparse_form(self, wd: float, weight_stype: str = "default") -> str:
        return "rows" if weight_stype == "row_sparse" else ""  # MXNet's lazy FTRL

    def _step(self, index, w, g, state, lr, wd):
        ftrl(w, g, state[0]._data, state[1]._data, lr, wd, self.lamda1, self.beta,
             self.rescale_grad, self.clip_gradient, self._scratch)


@register
class FTML(_Builtin):
    """Follow the Moving Leader (Zheng & Kwok, 2017): with g = clip(rescale * grad + wd * w)
    and t the parameter's update count, `v = b2 v + (1-b2) g^2`,
    `d = (1 - b1^t) / lr * (sqrt(v / (1 - b2^t)) + eps)`,
    `z = b1 z + (1-b1) g - (d - b1 d_prev) w`, `w = -z / d`. State (d_prev, v, z)."""

    def __init__(self, beta1: float = 0.6, beta2: float = 0.999, epsilon: float = 1e-8,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def create_state(self, index: Any, weight: NDArray) -> State:
        return (self._zeros(weight), self._zeros(weight), self._zeros(weight))

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp(w)
        ct = w.dtype.type
        t = self._index_update_count[index]
        b1, b2 = ct(f32(self.beta1)), ct(f32(self.beta2))
        d_prev, v, z = (s._data for s in state)
        grad, d, tmp = self._tmp(w, 3)
        kernel_grad(xp, g, w, wd, grad, tmp, self.rescale_grad, self.clip_gradient)
        v *= b2
        xp.multiply(grad, grad, out=tmp)
        tmp *= ct(1) - b2
        v += tmp
        xp.divide(v, ct(1) - b2 ** t, out=d)
        xp.sqrt(d, out=d)
        d += ct(f32(self.epsilon))
        d *= (ct(1) - b1 ** t) / ct(f32(lr))
        z *= b1
        xp.multiply(grad, ct(1) - b1, out=tmp)
        z += tmp
        xp.multiply(d_prev, b1, out=tmp)
        xp.subtract(d, tmp, out=tmp)
        tmp *= w
        z -= tmp
        xp.divide(z, d, out=w)
        xp.negative(w, out=w)
        d_prev[...] = d


@register
class GroupAdaGrad(_Builtin):
    """AdaGrad with one rate per row of a 2-D weight: with g = clip(rescale * grad),
    `h += mean(g^2, axis=1)`, `w -= lr g / sqrt(h + eps)`; h (rows, 1) starts at 0. No
    weight decay, as in MXNet (mx.optimizer.contrib.GroupAdaGrad)."""

    def __init__(self, eps: float = 1e-5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index: Any, weight: NDArray) -> State:
        if weight.ndim != 2:
            raise MXNetError("GroupAdaGrad updates 2-D weights (one rate per row); parameter "
                             "%r has shape %s" % (self.idx2name.get(index, index), weight.shape))
        return zeros((weight.shape[0], 1), weight.context, dtype=weight.dtype)

    def _step(self, index, w, g, state, lr, wd):
        if wd:
            raise MXNetError("GroupAdaGrad does not support weight decay (wd=%r)" % wd)
        group_adagrad(w, g, state._data, lr, self.float_stable_eps, self.rescale_grad,
                      self.clip_gradient, self._scratch)


@register
class LAMB(_Builtin):
    """LAMB (You et al., 2019), Adam's direction scaled per parameter by a trust ratio: with
    g = clip(rescale * grad), `m = b1 m + (1-b1) g`, `v = b2 v + (1-b2) g^2`,
    `u = m' / (sqrt(v') + eps) + wd w` (m', v' bias-corrected with the update count t unless
    bias_correction is off), `r1 = ||w||` bounded to [lower_bound, upper_bound] where given,
    `r2 = ||u||`, `w -= lr (r1 / r2) u` (ratio 1 where either norm is 0). State (m, v). The
    norms make it a per-parameter update (no flat buffer)."""

    _direct_multi_precision = True  # see _Builtin: a replaced `update` is never called

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-6, lower_bound: float | None = None,
                 upper_bound: float | None = None, bias_correction: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.bias_correction = bias_correction

    def create_state(self, index: Any, weight: NDArray) -> State:
        return (self._zeros(weight), self._zeros(weight))

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp(w)
        ct = w.dtype.type
        t = self._index_update_count[index]
        b1, b2 = ct(f32(self.beta1)), ct(f32(self.beta2))
        mean, var = state[0]._data, state[1]._data
        grad, step, tmp = self._tmp(w, 3)
        xp.multiply(g, ct(f32(self.rescale_grad)), out=grad)
        if clip_on(self.clip_gradient):
            bound = ct(f32(self.clip_gradient))
            xp.clip(grad, -bound, bound, out=grad)
        mean *= b1
        xp.multiply(grad, ct(1) - b1, out=tmp)
        mean += tmp
        var *= b2
        xp.multiply(grad, grad, out=tmp)
        tmp *= ct(1) - b2
        var += tmp
        if self.bias_correction:
            xp.divide(var, ct(1) - b2 ** t, out=tmp)
            xp.divide(mean, ct(1) - b1 ** t, out=step)
        else:
            tmp[...] = var
            step[...] = mean
        xp.sqrt(tmp, out=tmp)
        tmp += ct(f32(self.epsilon))
        step /= tmp
        xp.multiply(w, ct(f32(wd)), out=tmp)
        step += tmp
        r1 = float(xp.sqrt(xp.vdot(w, w)))
        r2 = float(xp.sqrt(xp.vdot(step, step)))
        if self.lower_bound is not None:
            r1 = max(r1, self.lower_bound)
        if self.upper_bound is not None:
            r1 = min(r1, self.upper_bound)
        ratio = r1 / r2 if r1 > 0 and r2 > 0 else 1.0
        step *= ct(f32(lr)) * ct(f32(ratio))
        w -= step
