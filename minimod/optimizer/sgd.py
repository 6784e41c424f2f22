"""The SGD family: SGD (and its alias ccSGD), NAG, LARS, LBSGD, Signum, SGLD, DCASGD, and
Test.

SGD, NAG and Signum run the arithmetic of MXNet's `sgd(_mom)_update`, `nag_mom_update` and
`signum(sgd)_update` kernels (`minimod/ndarray/update_steps.py`, shared with `mx.nd`), SGD's
through one CuPy kernel or, under NumPy, block by block through a scratch that stays in the
cache. What SGD adds here is its flat-buffer path: the block views and the hyperparameter
products of a flat parameter buffer are prepared once and reused every step (`_flat_step`).
"""
from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from .. import backend
from ..ndarray.ndarray import NDArray, zeros
from ..ndarray.update_steps import (
    f32,
    nag_mom,
    sgd_block_views,
    sgd_mom,
    sgd_plain,
    signsgd,
    signum,
)
from .base import State, _as_lists, _Builtin, _xp, register
from .flat_runs import SGDRun

__all__ = ["DCASGD", "LARS", "LBSGD", "NAG", "SGD", "SGLD", "Signum", "Test", "ccSGD"]


@register
class SGD(_Builtin):
    """SGD with optional momentum: `g = clip(rescale * grad)`; `m = mu * m - lr * (g + wd * w)`,
    `w += m` (without momentum `w -= lr * (g + wd * w)`). Multi-precision states are
    `(momentum or None, float32 master)`."""

    _direct_multi_precision = True  # see _Builtin: a replaced `update` is never called

    _master_slot = 1

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update
        self.aggregate_num = int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "4"))

    def create_state_multi_precision(self, index: Any, weight: NDArray) -> State:
        if self.multi_precision and weight.dtype == np.float16:
            master = weight.astype(np.float32)
            return (self.create_state(index, master), master)
        self._warn_float16(weight)
        return self.create_state(index, weight)

    def create_state(self, index: Any, weight: NDArray) -> State:
        return self._zeros(weight) if self.momentum != 0.0 else None

    def _sparse_form(self, wd: float, weight_stype: str = "default") -> str:
        if not self.lazy_update:
            return ""
        if type(self) not in (SGD, ccSGD):
            return "%s scales its lazy step by norms of the whole table" % type(self).__name__
        return "rows" if self.momentum or wd else ""  # else lazy and dense agree

    def _step(self, index, w, g, state, lr, wd):
        mom = state._data if isinstance(state, NDArray) else None
        sgd_mom(w, g, mom, lr, wd, self.momentum, self.rescale_grad, self.clip_gradient,
                self._scratch)

    def _flat_step(self, index, w, g, state):
        """SGD's update of one run of a flat buffer, prepared (`flat_runs.SGDRun`)."""
        if type(self)._step is not SGD._step:  # a subclass with its own arithmetic
            return super()._flat_step(index, w, g, state)
        return SGDRun(self, w, g, state._data if isinstance(state, NDArray) else None)

    def _blocks(self, w, g, mom, scratches: int) -> list:
        """SGD's block views of these arrays, kept in the scratch pool
        (`update_steps.sgd_block_views`)."""
        return sgd_block_views(self._scratch, w, g, mom, scratches)


@register
class ccSGD(SGD):
    """Alias of SGD kept for old scripts."""


@register
class NAG(_Builtin):
    """Nesterov momentum: `g = clip(rescale * grad) + wd * w`; `w += mu * m_new - lr * g` with
    `m_new = mu * m - lr * g`. MXNet's kernel writes the weight before the momentum, so the
    stored momentum decays with the new weight (reproduced). Without momentum it is plain SGD."""

    _direct_multi_precision = True  # see _Builtin: a replaced `update` is never called

    _master_slot = 1

    def __init__(self, momentum: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state_multi_precision(self, index: Any, weight: NDArray) -> State:
        return SGD.create_state_multi_precision(self, index, weight)  # type: ignore[arg-type]

    def create_state(self, index: Any, weight: NDArray) -> State:
        return self._zeros(weight) if self.momentum != 0.0 else None

    def _step(self, index, w, g, state, lr, wd):
        if isinstance(state, NDArray):
            nag_mom(w, g, state._data, lr, wd, self.momentum, self.rescale_grad,
                    self.clip_gradient, self._scratch)
        else:
            sgd_plain(w, g, lr, wd, self.rescale_grad, self.clip_gradient, self._scratch)


@register
class LARS(SGD):
    """SGD with momentum whose learning rate is scaled per layer (You et al., 2017):
    `lr * eta * ||w|| / (||rescale * grad|| + wd ||w|| + eps)` where both norms are positive,
    except for parameters named ...bias, ...gamma or ...beta, which keep lr; the step is SGD's.
    With momentum_correction the momentum is multiplied by lr_t / lr_(t-1) when a scheduler
    changes the rate (Goyal et al., 2017), once per step (MXNet applies it once per batched
    call). The norms make it a per-parameter update (no flat buffer)."""

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, eta: float = 0.001,
                 eps: float = 0, momentum_correction: bool = True, **kwargs: Any) -> None:
        super().__init__(momentum=momentum, lazy_update=lazy_update, **kwargs)
        self.eta = eta
        self.eps = eps
        self.momentum_correction = momentum_correction
        self._correction = (None, None, 1.0)  # (num_update, base lr, momentum factor)

    def _momentum_now(self) -> float:
        """The step's momentum: corrected once per num_update by the change of base rate."""
        step, last_lr, factor = self._correction
        if step != self.num_update:
            lr = self._base_lr()
            factor = lr / last_lr if self.momentum_correction and last_lr else 1.0
            self._correction = (self.num_update, lr, factor)
        return self.momentum * factor

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp(w)
        ct = w.dtype.type
        name = str(self.idx2name.get(index, index))
        if not name.endswith(("bias", "gamma", "beta")):
            # the trust ratio in the weight's type, as MXNet's multi_lars kernel forms it
            grad = self._tmp(w, 1)[0]
            xp.multiply(g, ct(self.rescale_grad), out=grad)
            w_norm, g_norm = ct(xp.sqrt(xp.vdot(w, w))), ct(xp.sqrt(xp.vdot(grad, grad)))
            if w_norm > 0 and g_norm > 0:
                lr = float(ct(f32(lr)) * ct(f32(self.eta)) * w_norm / (
                    g_norm + ct(f32(wd)) * w_norm + ct(f32(self.eps))))
        mom = state._data if isinstance(state, NDArray) else None
        sgd_mom(w, g, mom, lr, wd, self._momentum_now(), self.rescale_grad, self.clip_gradient,
                self._scratch)


@register
class Signum(_Builtin):
    """Signum (momentum > 0): `m = mu m - (1-mu) (wd w + clip(rescale grad))`,
    `w = (1 - lr wd_lh) w + lr sign(m)`; signSGD (momentum 0):
    `w = (1 - lr wd) w - lr sign(clip(rescale grad))`."""

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.9, wd_lh: float = 0.0,
                 **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index: Any, weight: NDArray) -> State:
        return self._zeros(weight) if self.momentum != 0.0 else None

    def _step(self, index, w, g, state, lr, wd):
        if isinstance(state, NDArray):
            signum(w, g, state._data, lr, wd, self.momentum, self.wd_lh, self.rescale_grad,
                   self.clip_gradient, self._scratch)
        else:
            signsgd(w, g, lr, wd, self.rescale_grad, self.clip_gradient, self._scratch)


@register
class SGLD(_Builtin):
    """Stochastic gradient Langevin dynamics (Welling & Teh, 2011): with g = clip(rescale *
    grad), `w += -lr / 2 (g + wd w) + N(0, lr)` noise from mx.random's generator (so its
    numbers are minimod's, not MXNet's)."""

    def create_state(self, index: Any, weight: NDArray) -> State:
        return None

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp(w)
        ct = w.dtype.type
        grad = self._grad_clipped(g, self._tmp(w, 1)[0], python_clip=True)
        grad += w * ct(wd)
        grad *= ct(-lr / 2)
        noise = backend.rng(xp).normal(0.0, math.sqrt(lr), w.shape)
        w += grad
        w += noise.astype(w.dtype, copy=False)


@register
class DCASGD(_Builtin):
    """Delay-compensated asynchronous SGD (Zheng et al., 2017): with g = clip(rescale * grad),
    `m = mu m - lr (g + wd w + lamda g^2 (w - w_prev))`, `w_prev = w`, `w += m`. State
    (momentum or None, w_prev). MXNet 1.9.1 raises for momentum > 0 on arrays of more than
    one element (it tests the momentum array's truth value); minimod runs the update."""

    def __init__(self, momentum: float = 0.0, lamda: float = 0.04, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lamda = lamda

    def create_state(self, index: Any, weight: NDArray) -> State:
        mom = self._zeros(weight) if self.momentum != 0.0 else None
        return (mom, weight.copy())

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp(w)
        ct = w.dtype.type
        previous = state[1]._data
        grad, step, tmp = self._tmp(w, 3)
        self._grad_clipped(g, grad, python_clip=True)
        # MXNet computes this in Python on NDArrays, scalars in the weight's type, in the
        # order ((g + wd w) + ((lamda g) g)(w - w_prev))
        xp.multiply(w, ct(wd), out=step)
        step += grad
        xp.multiply(grad, ct(self.lamda), out=tmp)
        tmp *= grad
        tmp *= w - previous
        step += tmp
        step *= ct(-lr)
        if state[0] is not None:
            mom = state[0]._data
            mom *= ct(self.momentum)
            mom += step
            step = mom
        previous[...] = w
        w += step


@register
class Test(_Builtin):
    """The trivial optimizer MXNet uses in its tests: `w += rescale * grad`; the state is a copy
    of the new weight."""

    def create_state(self, index: Any, weight: NDArray) -> State:
        return zeros(weight.shape, weight.context)

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: State) -> None:
        indices, weights, grads, states = _as_lists(index, weight, grad, state)
        for w, g, s in zip(weights, grads, states):
            xp = _xp(w._data)
            ct = w._data.dtype.type
            tmp = self._tmp(w._data, 1)[0]
            xp.multiply(g._data, ct(self.rescale_grad), out=tmp)
            w._data += tmp
            s._data[...] = w._data

    update_multi_precision = update  # type: ignore[assignment]


@register
class LBSGD(SGD):
    """Large-batch SGD: the gradients of `batch_scale` updates of a parameter are summed, and
    every `batch_scale`-th update applies SGD (with momentum, wd, rescale and clip) to their
    mean, with the learning rate times a multiplier; the updates in between leave the weight
    as it is. The multiplier rises from 1 to `batch_scale` over `warmup_epochs` x
    `updates_per_epoch` updates (`warmup_strategy` 'linear', 'power2' or 'sqrt' in the share
    of the warm-up done), or is LARS' trust ratio sqrt(|w|^2 / (|g|^2 + wd |w|^2)), kept in
    [0.01, 100] ('lars'). Updates are counted per parameter from `begin_epoch` x
    `updates_per_epoch` + 1. The summed gradient is a copy (MXNet keeps a reference to the
    first gradient array, so a gradient buffer rewritten in place by the next step would be
    counted twice)."""

    _STRATEGIES = ("linear", "power2", "sqrt", "lars")

    def __init__(self, momentum: float = 0.0, multi_precision: bool = False,
                 warmup_strategy: str = "linear", warmup_epochs: int = 5, batch_scale: int = 1,
                 updates_per_epoch: int = 32, begin_epoch: int = 0, num_epochs: int = 60,
                 **kwargs: Any) -> None:
        super().__init__(momentum=momentum, multi_precision=multi_precision, **kwargs)
        if warmup_strategy not in self._STRATEGIES:
            raise ValueError("LBSGD: warmup_strategy must be one of %s, got %r"
                             % (self._STRATEGIES, warmup_strategy))
        if batch_scale < 1:
            raise ValueError("LBSGD: batch_scale must be at least 1, got %r" % batch_scale)
        self.warmup_strategy, self.warmup_epochs = warmup_strategy, warmup_epochs
        self.batch_scale, self.updates_per_epoch = int(batch_scale), updates_per_epoch
        self.init_updates, self.num_epochs = begin_epoch * updates_per_epoch, num_epochs
        self._sums: dict = {}  # index -> [summed gradient or None, updates counted]

    def _warmup(self, count: int) -> float:
        total = self.warmup_epochs * self.updates_per_epoch
        top = float(self.batch_scale)
        if count >= total:
            return top
        if total <= 1:
            return 1.0
        done = count / total
        shape = {"linear": done, "power2": done * done, "sqrt": math.sqrt(done)}
        return 1.0 + (top - 1) * shape[self.warmup_strategy]

    @staticmethod
    def _trust(w, g, wd: float) -> float:
        w2 = float((w * w).sum())
        g2 = float((g * g).sum())
        return min(100.0, max(0.01, math.sqrt(w2 / (g2 + wd * w2 + 1e-18))))

    def _step(self, index, w, g, state, lr, wd):
        entry = self._sums.setdefault(index, [None, self.init_updates])
        entry[0] = g.copy() if entry[0] is None else entry[0] + g
        entry[1] += 1
        if entry[1] % self.batch_scale:
            return
        mean = entry[0] / w.dtype.type(self.batch_scale)
        entry[0] = None
        if self.warmup_strategy == "lars":
            mult = self._trust(w, mean, wd)
        else:
            mult = self._warmup(entry[1])
        super()._step(index, w, mean, state, lr * mult, wd)
