"""Optimizers and the Updater (`mx.optimizer`, also reachable as `mx.optimizer.optimizer`).

What MXNet 1.9.1 does, number for number:

* `Optimizer` keeps MXNet's fields and rules: the learning rate comes from the scheduler (called
  with `num_update`) or `lr`; per-parameter multipliers are looked up in `param_dict`, then
  `lr_mult[index]`, then `lr_mult[idx2name[index]]` (the same for wd); parameters whose name ends
  neither in `_weight` nor in `_gamma` get wd_mult 0, decided once at construction; update counts
  are kept per device (`_set_current_context`) so `num_update` grows once per batch.
* The built-in optimizers reproduce the arithmetic of MXNet's kernels in the same order and in
  the same precision (products of two hyperparameters are float32, as in the C++ kernels), so
  float32 results agree with MXNet to the last bit in the golden tests. Notable orders: SGD clips
  the rescaled gradient and adds weight decay after the clip; Adam, RMSProp, Adamax and Nadam add
  weight decay before the clip; AdaDelta ignores the learning rate and, like MXNet, scales the
  caller's gradient array in place.
* Updates happen in place on `weight._data` with ufuncs writing into `out=` arrays; the few
  temporaries an update needs come from a per-optimizer scratch pool, so the steady state
  allocates nothing. Every built-in optimizer accepts lists of indices, weights, gradients and
  states in one call, and the Updater hands it a whole batch at once.

States (`Updater.get_states` / `set_states`):

* minimod's own format contains no pickle. It is a `.params`-format NDArray file: each state
  array is stored under `"<key>:<slot>"` (slots number the arrays of a state in flattening order),
  plus one uint8 array under `"__minimod_states__"` holding a UTF-8 JSON header: format version,
  each key with its type (int or str) and the shape of its state (None, an array slot, or a
  tuple/list of those), and the optimizer's update counters. `mx.nd.load` reads it as well.
* MXNet's `.states` files are pickles. `set_states` reads them through `SafeStatesUnpickler`,
  which admits only the NDArray class (`mxnet.ndarray.ndarray.NDArray`, decoded from its binary
  record) and a few inert builtins; anything else raises `UnsafeStatesError` naming the global,
  before any of it runs. `dump_states_mxnet(states)` writes a pickle MXNet 1.9.1 accepts, without
  importing MXNet.
* Keys: without a kvstore, Module keys parameter i on device k as `i * num_device + k`; with
  update on kvstore the key is the parameter name. `Updater.states_by_name(idx2name)` and
  `Updater.load_states_by_name(by_name, idx2name)` translate between the two, so a checkpoint
  survives a change of device count or kvstore mode; `dump_states_by_name` /
  `set_states_by_name` do the same through bytes.

Bends from MXNet, each deliberate: `set_states` never runs pickled code (a `dump_optimizer=True`
MXNet file is refused since it pickles an Optimizer object); in the native format the update
counters are saved, and `set_states(data, restore_counters=True)` restores them (off by default,
so a resumed run matches MXNet, which restarts the counts); a user subclass that overrides
`update` of a built-in optimizer always gets its `update` called, one parameter at a time.
"""
from __future__ import annotations

import functools
import io
import itertools
import json
import math
import os
import pickle
import struct
import sys
import types
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import backend
from .base import MXNetError
from .lr_scheduler import LRScheduler
from .ndarray import serialization
from .ndarray.ndarray import NDArray, wrap, zeros

__all__ = [
    "AdaDelta", "AdaGrad", "Adam", "Adamax", "Ftrl", "NAG", "Nadam", "Optimizer", "RMSProp",
    "SGD", "Signum", "Test", "Updater", "ccSGD", "create", "get_updater", "register",
    "SafeStatesUnpickler", "UnsafeStatesError", "dump_states_mxnet", "load_states",
]

State = Any


def _f32(value: float) -> np.float32:
    return np.float32(value)


def _clip_on(clip_gradient: float | None) -> bool:
    """Kernel-style clipping: MXNet passes clip_gradient only when truthy, and the kernel
    clips only when it is >= 0."""
    return bool(clip_gradient) and clip_gradient >= 0


_HYPER: dict = {}


def _hyper(xp, ct, *factors: float):
    """The product of float32-rounded hyperparameters in the weight's type `ct`, as MXNet's
    kernels form it; under NumPy a cached read-only 0-d array, since a scalar argument (even
    making the NumPy scalar) would cost a fresh 0-d array on every call."""
    key = (xp is np, ct, factors)
    value = _HYPER.get(key)
    if value is None:
        value = ct(_f32(factors[0]))
        for factor in factors[1:]:
            value = value * ct(_f32(factor))
        if xp is np:
            value = np.array(value)
            value.flags.writeable = False
        if len(_HYPER) > 1024:
            _HYPER.clear()
        _HYPER[key] = value
    return value


def _as_lists(index, weight, grad, state) -> tuple[list, list, list, list]:
    if isinstance(index, (list, tuple)):
        return list(index), list(weight), list(grad), list(state)
    return [index], [weight], [grad], [state]


def _empty_like(arr, dtype=None):
    xp = backend.array_module_of(arr)
    if xp is np:
        return np.empty(arr.shape, dtype=dtype or arr.dtype)
    with arr.device:
        return xp.empty(arr.shape, dtype=dtype or arr.dtype)


class Optimizer:
    """Base class of the optimizers: hyperparameters, learning-rate and weight-decay lookup,
    update counting and the registry (`Optimizer.register`, `create`)."""

    opt_registry: dict[str, type] = {}

    def __init__(self, rescale_grad: float = 1., param_idx2name: dict | None = None,
                 wd: float = 0., clip_gradient: float | None = None,
                 learning_rate: float | None = None, lr_scheduler: LRScheduler | None = None,
                 sym: Any = None, begin_num_update: int = 0, multi_precision: bool = False,
                 param_dict: dict | None = None, **kwargs: Any) -> None:
        if kwargs:
            raise TypeError(f"{type(self).__name__} got unexpected arguments {sorted(kwargs)}")
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if lr_scheduler is not None and learning_rate is not None:
            if lr_scheduler.base_lr != learning_rate:
                # MXNet prints (not warns) this message.
                print(UserWarning("learning rate from ``lr_scheduler`` has been overwritten by "
                                  "``learning_rate`` in optimizer."))
                lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.lr_mult: dict = {}
        self.wd_mult: dict = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts: dict = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise TypeError("param_idx2name must be a dict from parameter index to name, got "
                            f"{type(param_idx2name).__name__}")
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.allow_np_array = False
        self._scratch: dict = {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    # ------------------------------------------------------------------ registry
    @staticmethod
    def register(klass: type) -> type:
        """Class decorator: make `klass` creatable by its lower-cased name."""
        if not isinstance(klass, type):
            raise TypeError(f"register expects a class, got {type(klass).__name__}")
        name = klass.__name__.lower()
        previous = Optimizer.opt_registry.get(name)
        if previous is not None and previous is not klass:
            warnings.warn(f"WARNING: New optimizer {klass.__module__}.{klass.__name__} is "
                          f"overriding existing optimizer {previous.__module__}."
                          f"{previous.__name__}")
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name: str, **kwargs: Any) -> Optimizer:
        """An instance of the optimizer registered as `name` (case-insensitive)."""
        klass = Optimizer.opt_registry.get(name.lower())
        if klass is None:
            raise ValueError(f"Cannot find optimizer {name}; registered: "
                             f"{', '.join(sorted(Optimizer.opt_registry))}")
        return klass(**kwargs)

    # ------------------------------------------------------------------ learning rate
    @property
    def learning_rate(self) -> float:
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr: float) -> None:
        """Set the base rate; refused (UserWarning raised, as MXNet) when a scheduler is set."""
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been defined. Note that "
                              "set_learning_rate can mutate the value of the learning rate of "
                              "the optimizer only when the LRScheduler of the optimizer is "
                              "undefined.")
        self.lr = lr

    def set_lr_scale(self, args_lrscale: dict) -> None:
        raise DeprecationWarning("set_lr_scale is gone; use set_lr_mult")

    def set_lr_mult(self, args_lr_mult: dict) -> None:
        """Learning-rate multipliers: the symbol's `__lr_mult__` attributes, then this dict
        (keys are parameter names or update indices)."""
        self.lr_mult = self._symbol_mults("__lr_mult__")
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult: dict) -> None:
        """Weight-decay multipliers: 0 for every idx2name name not ending in `_weight` or
        `_gamma` (biases and betas are not decayed), then the symbol's `__wd_mult__` attributes,
        then this dict."""
        self.wd_mult = {name: 0.0 for name in self.idx2name.values()
                        if not (name.endswith("_weight") or name.endswith("_gamma"))}
        self.wd_mult.update(self._symbol_mults("__wd_mult__"))
        self.wd_mult.update(args_wd_mult)

    def _symbol_mults(self, attr_key: str) -> dict:
        if not self.sym_info:
            return {}
        attrs, arg_names = self.sym_info
        return {name: float(attrs[name][attr_key]) for name in arg_names
                if name in attrs and attr_key in attrs[name]}

    # ------------------------------------------------------------------ counting
    def _set_current_context(self, device_id: int) -> None:
        """Count updates of the following calls under device `device_id`."""
        counts = self._all_index_update_counts.get(device_id)
        if counts is None:
            counts = self._all_index_update_counts[device_id] = {}
        self._index_update_count = counts

    def _update_count(self, index: Any) -> None:
        """Count one update of `index` (or of each index of a list) on the current device;
        `num_update` is the largest count seen."""
        counts = self._index_update_count
        for idx in index if isinstance(index, (list, tuple)) else (index,):
            count = counts.get(idx, self.begin_num_update) + 1
            counts[idx] = count
            if count > self.num_update:
                self.num_update = count

    def _count_distinct_updates(self, indices: Sequence):
        """`_update_count(indices)` for keys that are all different (a flat buffer's keys,
        every step). Returns None when their new counts are all equal (the usual case: they
        are updated together), else the new counts in order."""
        counts = self._index_update_count
        begin = self.begin_num_update
        new = []
        for idx in indices:
            count = counts[idx] = counts.get(idx, begin) + 1
            new.append(count)
        top = max(new)
        if top > self.num_update:
            self.num_update = top
        return None if new.count(top) == len(new) else new

    def _base_lr(self) -> float:
        """The learning rate before lr_mult: the scheduler's at num_update, else `lr`."""
        return self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr

    def _get_lrs(self, indices: Sequence) -> list[float]:
        lr = self._base_lr()
        return [lr * self._mult(index, self.lr_mult, "lr_mult") for index in indices]

    def _get_lr(self, index: Any) -> float:
        return self._get_lrs([index])[0]

    def _get_wds(self, indices: Sequence) -> list[float]:
        return [self.wd * self._mult(index, self.wd_mult, "wd_mult") for index in indices]

    def _get_wd(self, index: Any) -> float:
        return self._get_wds([index])[0]

    def _mult(self, index: Any, table: dict, attr: str) -> float:
        if index in self.param_dict:
            return getattr(self.param_dict[index], attr)
        if index in table:
            return table[index]
        if index in self.idx2name:
            return table.get(self.idx2name[index], 1.0)
        return 1.0

    # ------------------------------------------------------------------ states and updates
    def create_state(self, index: Any, weight: NDArray) -> State:
        """The auxiliary state of one parameter (None when the optimizer keeps none)."""
        return None

    def create_state_multi_precision(self, index: Any, weight: NDArray) -> State:
        """`create_state`, plus a float32 master copy of a float16 weight when multi_precision
        is on: the state is then `(master, inner_state)`."""
        if self.multi_precision and weight.dtype == np.float16:
            master = weight.astype(np.float32)
            return (master, self.create_state(index, master))
        self._warn_float16(weight)
        return self.create_state(index, weight)

    def _warn_float16(self, weight: NDArray) -> None:
        if weight.dtype == np.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or "
                          "slow convergence. Consider using multi_precision=True option of the "
                          f"{type(self).__name__} optimizer")

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: State) -> None:
        """Update `weight` in place from `grad` (and `state`)."""
        raise NotImplementedError(f"{type(self).__name__} does not define update()")

    def update_multi_precision(self, index: Any, weight: NDArray, grad: NDArray,
                               state: State) -> None:
        """`update`, through the float32 master copy for float16 weights with
        multi_precision on."""
        if isinstance(index, (list, tuple)):
            for args in zip(index, weight, grad, state):
                self.update_multi_precision(*args)
            return
        if self.multi_precision and weight.dtype == np.float16:
            master, inner = state
            self.update(index, master, grad.astype(np.float32), inner)
            weight._data[...] = master._data
            return
        self.update(index, weight, grad, state)

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("param_dict", None)
        state.pop("_scratch", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__ = state
        self.param_dict = {}
        self._scratch = {}

    # ------------------------------------------------------------------ scratch memory
    def _tmp(self, like, count: int, dtype=None) -> list:
        """`count` scratch arrays shaped like `like`, reused across calls."""
        dtype = like.dtype if dtype is None else np.dtype(dtype)
        device = getattr(getattr(like, "device", None), "id", -1)
        key = (like.shape, dtype.str, device)
        pool = self._scratch.get(key)
        if pool is None:
            pool = self._scratch[key] = []
        while len(pool) < count:
            pool.append(_empty_like(like, dtype))
        return pool[:count]


register = Optimizer.register
create = Optimizer.create_optimizer


_xp = backend.array_module_of  # the array module (NumPy or CuPy) of an array


class _Builtin(Optimizer):
    """Shared driver of the built-in optimizers: lists of parameters in one call, counting,
    lr/wd lookup, and the float32 master copy; subclasses define `_step` on backend arrays."""

    # Where a float16 weight's float32 master copy sits in a multi-precision state.
    _master_slot = 0

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: State) -> None:
        indices, weights, grads, states = _as_lists(index, weight, grad, state)
        self._update_count(indices)
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        for idx, w, g, s, lr, wd in zip(indices, weights, grads, states, lrs, wds):
            self._step(idx, w._data, g._data, s, lr, wd)

    def update_multi_precision(self, index: Any, weight: NDArray, grad: NDArray,
                               state: State) -> None:
        if type(self).update is not _Builtin.update:
            Optimizer.update_multi_precision(self, index, weight, grad, state)
            return
        indices, weights, grads, states = _as_lists(index, weight, grad, state)
        self._update_count(indices)
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        for idx, w, g, s, lr, wd in zip(indices, weights, grads, states, lrs, wds):
            if self.multi_precision and w.dtype == np.float16 and isinstance(s, (tuple, list)):
                master = s[self._master_slot]
                inner = s[1 - self._master_slot]
                g32 = self._tmp(g._data, 1, np.float32)[0]
                g32[...] = g._data
                self._step(idx, master._data, g32, inner, lr, wd)
                w._data[...] = master._data
            else:
                self._step(idx, w._data, g._data, s, lr, wd)

    def _step(self, index, w, g, state, lr: float, wd: float) -> None:
        raise NotImplementedError

    def _flat_step(self, index, w, g, state):
        """`step(lr, wd)` updating one run of a flat buffer (weight, gradient and state are
        views of the flat arrays, `index` the run's first key), called every step by
        `Updater.update_flat_buffer`. An optimizer may prepare what does not change between
        steps here; by default each call is `_step`."""
        return functools.partial(self._step, index, w, g, state)

    def _kernel(self, w, g, state, lr: float, wd: float) -> None:
        """The update of one array as MXNet's `<name>_update` kernel does it: `_step`
        without the per-index bookkeeping (Adam overrides it to skip its bias correction)."""
        self._step(None, w, g, state, lr, wd)

    def _zeros(self, weight: NDArray, dtype=None) -> NDArray:
        return zeros(weight.shape, weight.context, dtype=dtype or weight.dtype)

    def _grad_clipped(self, g, out, wd: float = 0.0, w=None, python_clip: bool = False):
        """out = rescale * g (+ wd * w), clipped as MXNet clips at that point."""
        dt = out.dtype.type
        np_ = _xp(out)
        np_.multiply(g, dt(self.rescale_grad), out=out)
        if w is not None:
            tmp = self._tmp(out, 4)[3]
            np_.multiply(w, dt(wd), out=tmp)
            np_.add(out, tmp, out=out)
        clip = self.clip_gradient
        if (clip is not None) if python_clip else _clip_on(clip):
            np_.clip(out, dt(-clip), dt(clip), out=out)
        return out

    def _kernel_grad(self, xp, g, w, wd: float, out, tmp):
        """out = clip(rescale * g + wd * w) as MXNet's C++ kernels form it (Adam, RMSProp, FTML):
        float32 hyperparameters in the weight's type; tmp is scratch."""
        ct = w.dtype.type
        xp.multiply(g, ct(_f32(self.rescale_grad)), out=out)
        xp.multiply(w, ct(_f32(wd)), out=tmp)
        out += tmp
        if _clip_on(self.clip_gradient):
            bound = ct(_f32(self.clip_gradient))
            xp.clip(out, -bound, bound, out=out)
        return out


# ============================================================================ SGD family

@register
class SGD(_Builtin):
    """SGD with optional momentum: `g = clip(rescale * grad)`; `m = mu * m - lr * (g + wd * w)`,
    `w += m` (without momentum `w -= lr * (g + wd * w)`). Multi-precision states are
    `(momentum or None, float32 master)`."""

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

    def _kernel(self, w, g, state, lr, wd):
        """mx.nd.sgd_update rounds as MXNet's single-array kernel (`_sgd_plain`);
        sgd_mom_update as the step below."""
        if isinstance(state, NDArray):
            self._step(None, w, g, state, lr, wd)
        else:
            _sgd_plain(self, _xp(w), w, g, lr, wd)

    def _step(self, index, w, g, state, lr, wd):
        self._sgd(w, g, state, lr, wd, self.momentum)

    def _sgd(self, w, g, state, lr, wd, momentum):
        xp = _xp(w)
        mom = state._data if isinstance(state, NDArray) else None
        scalars = _sgd_scalars(self, xp, w.dtype.type, lr, wd, momentum)
        if not _sgd_fused(xp, w, g, mom, scalars):
            _sgd_passes(xp, w, mom, self._blocks(w, g, mom, 2 if wd else 1), scalars)

    def _flat_step(self, index, w, g, state):
        """SGD's update of one run of a flat buffer, prepared: the block views are made once
        and the hyperparameter products are formed again only when one of their inputs
        changes, so a step costs its ufunc calls and a tuple comparison."""
        if type(self)._step is not SGD._step:  # a subclass with its own arithmetic
            return super()._flat_step(index, w, g, state)
        xp, ct = _xp(w), w.dtype.type
        mom = state._data if isinstance(state, NDArray) else None
        blocks: dict = {}  # scratch count -> block views
        last = [None, None]  # the inputs of the last step's scalars, and those scalars

        def step(lr, wd):
            inputs = (lr, wd, self.momentum, self.rescale_grad, self.clip_gradient)
            if inputs != last[0]:
                last[:] = inputs, _sgd_scalars(self, xp, ct, lr, wd, self.momentum)
            if _sgd_fused(xp, w, g, mom, last[1]):
                return
            scratches = 2 if wd else 1
            views = blocks.get(scratches)
            if views is None:
                views = blocks[scratches] = self._blocks(w, g, mom, scratches)
            _sgd_passes(xp, w, mom, views, last[1])
        return step

    def _blocks(self, w, g, mom, scratches: int) -> list:
        """[(w, g, mom, step scratch, decay scratch or None)] block by block.

        The step lr * clip(rescale * g) (+ lr * wd * w) goes through a scratch small enough to
        stay in the cache, one block of a large contiguous buffer at a time: a scratch the size
        of the parameters would stream them through memory twice more, about a third of the
        update's time inside a training step (benchmarks/RESULTS.md). The gradient stays
        untouched, as MXNet leaves it, and every element sees the operations of one
        whole-buffer pass in the same order. Small or strided arrays are one block.

        A flat parameter buffer comes back with the same arrays every step, so its list of
        block views is made once and kept (`_BlockViews`): slicing five arrays per block cost
        about as much Python time as the block's two ufunc calls. Small arrays keep their
        one-block lists too (the `_BlockViews.SMALL` most recent), which spares the scratch
        lookup in every step of a small model."""
        small = w.size <= _SGD_BLOCK
        if not small and not (w.flags.c_contiguous and g.flags.c_contiguous
                              and (mom is None or mom.flags.c_contiguous)):
            tmp = self._tmp(w, scratches)  # large and strided: one block, not kept
            return [(w, g, mom, tmp[0], tmp[1] if scratches > 1 else None)]
        kind = _SMALL_VIEWS if small else _BlockViews
        cache = self._scratch.get(kind)
        if cache is None:
            cache = self._scratch[kind] = _BlockViews(
                _BlockViews.SMALL if small else _BlockViews.LARGE)
        views = cache.get(w, g, mom, scratches)
        if views is None:
            if small:
                tmp = self._tmp(w, scratches)
                views = [(w, g, mom, tmp[0], tmp[1] if scratches > 1 else None)]
            else:
                flat_w, flat_g = w.reshape(-1), g.reshape(-1)
                flat_m = None if mom is None else mom.reshape(-1)
                tmp = self._tmp(flat_w[:_SGD_BLOCK], scratches)
                views = []
                for lo in range(0, w.size, _SGD_BLOCK):
                    hi = min(lo + _SGD_BLOCK, w.size)
                    views.append((flat_w[lo:hi], flat_g[lo:hi],
                                  None if mom is None else flat_m[lo:hi], tmp[0][:hi - lo],
                                  tmp[1][:hi - lo] if scratches > 1 else None))
            cache.put(w, g, mom, scratches, views)
        return views


class _BlockViews:
    """SGD's block views of the last few (weight, gradient, momentum) buffers it updated,
    found again by the identity of those arrays. The views keep their buffers alive, so only
    the `size` most recently made lists are kept: a module's flat buffers come back every
    step, and an old module's are let go after a few new ones."""

    LARGE = 4  # lists of large buffers (their views keep megabytes alive)
    SMALL = 64  # one-block lists of small arrays (a small model's parameters, one by one)

    def __init__(self, size: int):
        self.size = size
        self._entries: dict = {}

    def get(self, w, g, mom, scratches: int):
        entry = self._entries.get((id(w), id(g), id(mom), scratches))
        if entry is None or entry[0] is not w or entry[1] is not g or entry[2] is not mom:
            return None
        return entry[3]

    def put(self, w, g, mom, scratches: int, views: list) -> None:
        entries = self._entries
        key = (id(w), id(g), id(mom), scratches)
        entries.pop(key, None)
        while len(entries) >= self.size:
            del entries[next(iter(entries))]
        entries[key] = (w, g, mom, views)


# Elements per block of SGD's NumPy update: 128 KB of float32, well inside a core's L2.
_SGD_BLOCK = 32768
# the scratch-pool key of the one-block lists of small arrays (_BlockViews is the large ones')
_SMALL_VIEWS = "small block views"


# SGD's update as one CuPy kernel per (momentum?, clipping?) case, with the NumPy passes'
# arithmetic in their order (backend.elementwise); lr_wd is 0 without weight decay.
_SGD_KERNELS = {
    (True, False): backend.ElementwiseSpec(
        "sgd_mom", "T g, T lr_rescale, T lr_wd, T mu", "T w, T mom",
        "mom = mom * mu - w * lr_wd - g * lr_rescale; w = w + mom;"),
    (True, True): backend.ElementwiseSpec(
        "sgd_mom_clip", "T g, T rescale, T clip, T lr, T lr_wd, T mu", "T w, T mom",
        "T step = min(max(g * rescale, -clip), clip) * lr;"
        "mom = mom * mu - w * lr_wd - step; w = w + mom;"),
    (False, False): backend.ElementwiseSpec(
        "sgd", "T g, T lr_rescale, T lr_wd", "T w",
        "w = w - (g * lr_rescale + w * lr_wd);"),
    (False, True): backend.ElementwiseSpec(
        "sgd_clip", "T g, T rescale, T clip, T lr, T lr_wd", "T w",
        "w = w - (min(max(g * rescale, -clip), clip) * lr + w * lr_wd);"),
}


def _sgd_scalars(opt, xp, ct, lr, wd, momentum) -> tuple:
    """The hyperparameters of MXNet's multi_sgd kernel for weights of type `ct`: float32
    values converted to `ct`, every product of two rounded to `ct` (`_hyper`).
    (clip?, lr * rescale (rescale when clipping), -clip, clip, lr (the last three only when
    clipping), lr * wd (None without weight decay), momentum (0 without))."""
    clip = _clip_on(opt.clip_gradient)
    lr_wd = _hyper(xp, ct, lr, wd) if wd else None
    mu = _hyper(xp, ct, momentum if momentum > 0 else 0.0)
    if clip:
        return (True, _hyper(xp, ct, opt.rescale_grad), _hyper(xp, ct, -opt.clip_gradient),
                _hyper(xp, ct, opt.clip_gradient), _hyper(xp, ct, lr), lr_wd, mu)
    return False, _hyper(xp, ct, lr, opt.rescale_grad), None, None, None, lr_wd, mu


def _sgd_fused(xp, w, g, mom, scalars: tuple) -> bool:
    """SGD's update as one CuPy kernel (`_SGD_KERNELS`); False, doing nothing, under NumPy
    or when the gradient's type differs from the weight's."""
    clip, rescaled, _, bound, lr, lr_wd, mu = scalars
    fused = backend.elementwise(xp, _SGD_KERNELS[mom is not None, clip]) if (
        g.dtype == w.dtype) else None
    if fused is None:
        return False
    lr_wd = w.dtype.type(0) if lr_wd is None else lr_wd
    args = (rescaled, bound, lr, lr_wd) if clip else (rescaled, lr_wd)
    if mom is not None:
        fused(g, *args, mu, w, mom)
    else:
        fused(g, *args, w)
    return True


def _sgd_passes(xp, w, mom, blocks: list, scalars: tuple) -> None:
    """SGD's update as in-place ufunc passes, block by block (`SGD._blocks`), in the order of
    MXNet's kernel: step = lr * clip(rescale * g); m = mu * m - lr * wd * w - step,
    w += m (without momentum w -= step + lr * wd * w)."""
    clip, rescaled, lo, hi, lr, lr_wd, mu = scalars
    if mom is not None:
        mom *= mu
    for w_, g_, m_, t, d in blocks:
        xp.multiply(g_, rescaled, out=t)
        if clip:
            xp.clip(t, lo, hi, out=t)
            t *= lr
        if d is not None:
            xp.multiply(w_, lr_wd, out=d)
        if m_ is not None:
            if d is not None:
                m_ -= d
            m_ -= t
        else:
            if d is not None:
                t += d
            w_ -= t
    if mom is not None:
        w += mom


@register
class ccSGD(SGD):
    """Alias of SGD kept for old scripts."""


@register
class NAG(_Builtin):
    """Nesterov momentum: `g = clip(rescale * grad) + wd * w`; `w += mu * m_new - lr * g` with
    `m_new = mu * m - lr * g`. MXNet's kernel writes the weight before the momentum, so the
    stored momentum decays with the new weight (reproduced). Without momentum it is plain SGD."""

    _master_slot = 1

    def __init__(self, momentum: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state_multi_precision(self, index: Any, weight: NDArray) -> State:
        return SGD.create_state_multi_precision(self, index, weight)  # type: ignore[arg-type]

    def create_state(self, index: Any, weight: NDArray) -> State:
        return self._zeros(weight) if self.momentum != 0.0 else None

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp(w)
        ct = w.dtype.type
        if not isinstance(state, NDArray):
            _sgd_plain(self, xp, w, g, lr, wd)
            return
        mom = state._data
        rescaled, grad, step = self._tmp(w, 3)
        xp.multiply(g, ct(_f32(self.rescale_grad)), out=rescaled)
        if _clip_on(self.clip_gradient):
            clip = ct(_f32(self.clip_gradient))
            xp.clip(rescaled, -clip, clip, out=rescaled)
        lr_c, wd_c = ct(_f32(lr)), ct(_f32(wd))
        mu = ct(_f32(self.momentum)) if self.momentum > 0 else ct(0)
        mom *= mu
        # MXNet's kernel: w_new = (w - mu m) + (mu + 1) (mu m - lr (g + wd w)). It writes the
        # weight in place first, so the new momentum decays with the *new* weight:
        # m_new = mu m - lr (g + wd w_new).
        xp.multiply(w, wd_c, out=grad)
        grad += rescaled
        grad *= lr_c
        xp.subtract(mom, grad, out=step)
        step *= mu + ct(1)
        w -= mom
        w += step
        xp.multiply(w, wd_c, out=grad)
        grad += rescaled
        grad *= lr_c
        mom -= grad


def _sgd_plain(opt: Optimizer, xp, w, g, lr, wd) -> None:
    """MXNet's single-array sgd_update kernel: `(1 - lr*wd) * w - lr * clip(rescale * g)`."""
    ct = w.dtype.type
    lr32 = _f32(lr)
    tmp = opt._tmp(w, 1)[0]
    if _clip_on(opt.clip_gradient):
        clip = ct(_f32(opt.clip_gradient))
        xp.multiply(g, ct(_f32(opt.rescale_grad)), out=tmp)
        xp.clip(tmp, -clip, clip, out=tmp)
        tmp *= ct(lr32)
    else:
        xp.multiply(g, ct(lr32 * _f32(opt.rescale_grad)), out=tmp)
    w *= ct(_f32(1.0) - lr32 * _f32(wd))
    w -= tmp


# ============================================================================ adaptive

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

    def _step(self, index, w, g, state, lr, wd):
        t = self._index_update_count[index]
        lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        self._kernel(w, g, state, lr, wd)

    def _kernel(self, w, g, state, lr, wd):
        """MXNet's adam_update kernel (no bias correction: `_step` folds it into lr)."""
        xp = _xp(w)
        ct = w.dtype.type
        mean, var = state[0]._data, state[1]._data
        grad, tmp = self._tmp(w, 2)
        self._kernel_grad(xp, g, w, wd, grad, tmp)
        b1, b2 = _f32(self.beta1), _f32(self.beta2)
        mean *= ct(b1)
        xp.multiply(grad, ct(_f32(1.0) - b1), out=tmp)
        mean += tmp
        var *= ct(b2)
        xp.multiply(grad, ct(_f32(1.0) - b2), out=tmp)
        tmp *= grad
        var += tmp
        xp.sqrt(var, out=tmp)
        tmp += ct(_f32(self.epsilon))
        xp.multiply(mean, ct(_f32(lr)), out=grad)
        grad /= tmp
        w -= grad


@register
class AdaGrad(_Builtin):
    """AdaGrad: `h += g^2`, `w -= lr * (g / sqrt(h + eps) + wd * w)`, g = clip(rescale*grad)."""

    def __init__(self, eps: float = 1e-7, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index: Any, weight: NDArray) -> State:
        return self._zeros(weight, np.float32)

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
        xp = _xp(w)
        ct = w.dtype.type
        grad, tmp = self._tmp(w, 2)
        self._kernel_grad(xp, g, w, wd, grad, tmp)
        g1 = _f32(self.gamma1)
        keep = ct(_f32(1.0) - g1)
        n = state[0]._data
        xp.multiply(grad, grad, out=tmp)
        if self.centered:  # the two MXNet kernels round (1-g1) g g differently
            xp.multiply(grad, keep, out=tmp)
            tmp *= grad
        else:
            tmp *= keep
        n *= ct(g1)
        n += tmp
        eps = ct(_f32(self.epsilon))
        if self.centered:
            mean, delta = state[1]._data, state[2]._data
            xp.multiply(grad, keep, out=tmp)
            mean *= ct(g1)
            mean += tmp
            xp.multiply(mean, mean, out=tmp)
            xp.subtract(n, tmp, out=tmp)
        else:
            tmp[...] = n
        tmp += eps
        xp.sqrt(tmp, out=tmp)
        if self.centered:
            grad *= ct(_f32(lr))
            grad /= tmp
        else:
            grad /= tmp
            grad *= ct(_f32(lr))
        if self.centered:
            delta *= ct(_f32(self.gamma2))
            delta -= grad
            w += delta
        else:
            w -= grad
        if _clip_on(self.clip_weights):
            bound = ct(_f32(self.clip_weights))
            xp.clip(w, -bound, bound, out=w)


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
        xp = _xp(w)
        ct = w.dtype.type
        lr32 = _f32(lr)
        grad, tmp = self._tmp(w, 2)
        clip = _clip_on(self.clip_gradient)
        if not isinstance(state, NDArray):
            xp.multiply(g, ct(_f32(self.rescale_grad)), out=grad)
            if clip:
                xp.clip(grad, ct(-_f32(self.clip_gradient)), ct(_f32(self.clip_gradient)),
                        out=grad)
            xp.sign(grad, out=grad)
            grad *= ct(lr32)
            w *= ct(_f32(1.0) - lr32 * _f32(wd))
            w -= grad
            return
        mom = state._data
        mu = _f32(self.momentum) if self.momentum > 0 else _f32(0.0)
        keep = _f32(1.0) - mu
        if clip:
            bound = ct(_f32(self.clip_gradient))
            xp.multiply(g, ct(_f32(self.rescale_grad)), out=grad)
            xp.clip(grad, -bound, bound, out=grad)
            grad *= ct(keep)
        else:
            xp.multiply(g, ct(keep * _f32(self.rescale_grad)), out=grad)
        mom *= ct(mu)
        xp.multiply(w, ct(keep * _f32(wd)), out=tmp)
        mom -= tmp
        mom -= grad
        xp.sign(mom, out=tmp)
        tmp *= ct(lr32)
        if self.wd_lh:
            w *= ct(_f32(1.0) - lr32 * _f32(self.wd_lh))
        w += tmp


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

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp(w)
        ct = w.dtype.type
        z, n = state[0]._data, state[1]._data
        grad, tmp, sq = self._tmp(w, 3)
        xp.multiply(g, ct(_f32(self.rescale_grad)), out=grad)
        if _clip_on(self.clip_gradient):
            bound = ct(_f32(self.clip_gradient))
            xp.clip(grad, -bound, bound, out=grad)
        lr_ = ct(_f32(lr))
        xp.multiply(grad, grad, out=sq)
        xp.add(n, sq, out=tmp)
        xp.sqrt(tmp, out=tmp)
        root_n = self._tmp(w, 4)[3]
        xp.sqrt(n, out=root_n)
        tmp -= root_n
        tmp *= w
        tmp /= lr_
        xp.subtract(grad, tmp, out=tmp)
        z += tmp
        n += sq
        lam = ct(_f32(self.lamda1))
        xp.sign(z, out=tmp)
        tmp *= lam
        tmp -= z
        xp.sqrt(n, out=sq)
        sq += ct(_f32(self.beta))
        sq /= lr_
        sq += ct(_f32(wd))
        tmp /= sq
        xp.abs(z, out=sq)
        xp.greater(sq, lam, out=grad, casting="unsafe")
        xp.multiply(tmp, grad, out=w)


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
        b1, b2 = ct(_f32(self.beta1)), ct(_f32(self.beta2))
        d_prev, v, z = (s._data for s in state)
        grad, d, tmp = self._tmp(w, 3)
        self._kernel_grad(xp, g, w, wd, grad, tmp)
        v *= b2
        xp.multiply(grad, grad, out=tmp)
        tmp *= ct(1) - b2
        v += tmp
        xp.divide(v, ct(1) - b2 ** t, out=d)
        xp.sqrt(d, out=d)
        d += ct(_f32(self.epsilon))
        d *= (ct(1) - b1 ** t) / ct(_f32(lr))
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
        xp = _xp(w)
        ct = w.dtype.type
        history = state._data
        grad, tmp = self._tmp(w, 2)
        xp.multiply(g, ct(_f32(self.rescale_grad)), out=grad)
        if _clip_on(self.clip_gradient):
            bound = ct(_f32(self.clip_gradient))
            xp.clip(grad, -bound, bound, out=grad)
        xp.multiply(grad, grad, out=tmp)
        history += tmp.mean(axis=1, keepdims=True, dtype=ct)
        root = xp.sqrt(history + ct(_f32(self.float_stable_eps)))
        grad *= ct(_f32(lr))  # MXNet's kernel: (lr g) / root
        xp.divide(grad, root, out=grad)
        w -= grad


@register
class LAMB(_Builtin):
    """LAMB (You et al., 2019), Adam's direction scaled per parameter by a trust ratio: with
    g = clip(rescale * grad), `m = b1 m + (1-b1) g`, `v = b2 v + (1-b2) g^2`,
    `u = m' / (sqrt(v') + eps) + wd w` (m', v' bias-corrected with the update count t unless
    bias_correction is off), `r1 = ||w||` bounded to [lower_bound, upper_bound] where given,
    `r2 = ||u||`, `w -= lr (r1 / r2) u` (ratio 1 where either norm is 0). State (m, v). The
    norms make it a per-parameter update (no flat buffer)."""

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
        b1, b2 = ct(_f32(self.beta1)), ct(_f32(self.beta2))
        mean, var = state[0]._data, state[1]._data
        grad, step, tmp = self._tmp(w, 3)
        xp.multiply(g, ct(_f32(self.rescale_grad)), out=grad)
        if _clip_on(self.clip_gradient):
            bound = ct(_f32(self.clip_gradient))
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
        tmp += ct(_f32(self.epsilon))
        step /= tmp
        xp.multiply(w, ct(_f32(wd)), out=tmp)
        step += tmp
        r1 = float(xp.sqrt(xp.vdot(w, w)))
        r2 = float(xp.sqrt(xp.vdot(step, step)))
        if self.lower_bound is not None:
            r1 = max(r1, self.lower_bound)
        if self.upper_bound is not None:
            r1 = min(r1, self.upper_bound)
        ratio = r1 / r2 if r1 > 0 and r2 > 0 else 1.0
        step *= ct(_f32(lr)) * ct(_f32(ratio))
        w -= step


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
                lr = float(ct(_f32(lr)) * ct(_f32(self.eta)) * w_norm / (
                    g_norm + ct(_f32(wd)) * w_norm + ct(_f32(self.eps))))
        self._sgd(w, g, state, lr, wd, self._momentum_now())


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


# ============================================================================ Updater

class UnsafeStatesError(MXNetError, pickle.UnpicklingError):
    """A pickled `.states` payload referenced something other than NDArray records."""


def _safe_bytearray(*args):
    if args and not isinstance(args[0], (bytes, bytearray, str)):
        raise UnsafeStatesError("refused global builtins.bytearray called with a "
                                f"{type(args[0]).__name__} (only bytes are accepted)")
    return bytearray(*args)


def _safe_bytes(*args):
    if args and not isinstance(args[0], (bytes, bytearray, str)):
        # bytes(n) would allocate n bytes named by the file
        raise UnsafeStatesError("refused global builtins.bytes called with a "
                                f"{type(args[0]).__name__} (only bytes are accepted)")
    return bytes(*args)


def _safe_codecs_encode(text, encoding="utf-8"):
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise UnsafeStatesError("refused global _codecs.encode with arguments other than "
                                "(str, 'latin1')")
    return text.encode("latin1")


_ALLOWED_GLOBALS: dict[tuple[str, str], Any] = {
    ("mxnet.ndarray.ndarray", "NDArray"): NDArray,
    ("minimod.ndarray.ndarray", "NDArray"): NDArray,
    ("builtins", "bytearray"): _safe_bytearray,
    ("__builtin__", "bytearray"): _safe_bytearray,
    ("builtins", "bytes"): _safe_bytes,
    ("builtins", "tuple"): tuple,
    ("builtins", "list"): list,
    ("builtins", "dict"): dict,
    ("builtins", "set"): set,
    ("_codecs", "encode"): _safe_codecs_encode,
}


class SafeStatesUnpickler(pickle.Unpickler):
    """An unpickler for MXNet `.states` payloads that only admits NDArray records and inert
    builtins; any other global raises UnsafeStatesError before it can be called."""

    def find_class(self, module: str, name: str) -> Any:
        target = _ALLOWED_GLOBALS.get((module, name))
        if target is None:
            hint = (" (an Optimizer object: MXNet wrote this file with dump_optimizer=True, "
                    "which minimod does not load)" if "optimizer" in module else "")
            raise UnsafeStatesError(f"refused global {module}.{name} in a pickled optimizer "
                                    f"states payload: only NDArray records are accepted{hint}")
        return target

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafeStatesError("refused persistent id in a pickled optimizer states payload")


def load_states(data: bytes) -> dict:
    """Decode a states payload: minimod's native format or MXNet's pickle (read safely).

    Returns {key: None | NDArray | tuple of NDArrays}. Raises UnsafeStatesError for a pickle
    that references anything but NDArray records, MXNetError for malformed input.
    """
    states, _header = _decode_states(data)
    return states


_NATIVE_HEADER_KEY = "__minimod_states__"
_NATIVE_FORMAT = "minimod-optimizer-states"
_LIST_PREFIX = struct.pack("<Q", serialization.LIST_MAGIC)


def _decode_states(data: bytes) -> tuple[dict, dict | None]:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"optimizer states must be bytes, got {type(data).__name__}")
    data = bytes(data)
    if data[:8] == _LIST_PREFIX:
        return _decode_native(data)
    try:
        _check_pickle_sizes(data)
        loaded = SafeStatesUnpickler(io.BytesIO(data)).load()
    except UnsafeStatesError:
        raise
    except MXNetError:
        raise
    except Exception as err:
        raise MXNetError(f"cannot read optimizer states: not minimod's format and not a "
                         f"readable MXNet pickle ({type(err).__name__}: {err})") from None
    if isinstance(loaded, tuple) and len(loaded) == 2:
        loaded = loaded[0]
    if not isinstance(loaded, dict):
        raise MXNetError(f"MXNet optimizer states must pickle a dict, got "
                         f"{type(loaded).__name__}")
    for key, state in loaded.items():
        _check_state(key, state)
    return loaded, None


def _check_pickle_sizes(data: bytes) -> None:
    """Walk the pickle's opcodes (pickletools runs nothing) so that a forged length is caught
    before the unpickler allocates a buffer of that length."""
    import pickletools
    try:
        for opcode, arg, pos in pickletools.genops(data):
            # the unpickler grows its memo table to the index it is given: a forged index
            # would allocate gigabytes, while a real pickle never indexes past its own length
            if opcode.name in _MEMO_OPCODES and not 0 <= int(arg) <= len(data):
                raise ValueError(f"memo index {arg} at byte {pos} is out of range")
    except Exception as err:
        raise MXNetError(f"cannot read optimizer states: not minimod's format and not a "
                         f"readable MXNet pickle ({err})") from None


_MEMO_OPCODES = frozenset(["PUT", "BINPUT", "LONG_BINPUT", "GET", "BINGET", "LONG_BINGET"])


def _check_state(key, state) -> None:
    if state is None or isinstance(state, NDArray):
        return
    if isinstance(state, (tuple, list)):
        for item in state:
            _check_state(key, item)
        return
    raise MXNetError(f"optimizer state of key {key!r} holds a {type(state).__name__}; "
                     "only NDArrays, None and tuples of them are accepted")


def _flatten(state, arrays: list) -> Any:
    """The structure descriptor of `state`, appending its arrays to `arrays`."""
    if state is None:
        return None
    if isinstance(state, NDArray):
        arrays.append(state)
        return len(arrays) - 1
    if isinstance(state, (tuple, list)):
        return {"tuple" if isinstance(state, tuple) else "list":
                [_flatten(item, arrays) for item in state]}
    raise MXNetError(f"cannot save an optimizer state of type {type(state).__name__}")


def _unflatten(desc, arrays: list, key) -> Any:
    if desc is None:
        return None
    if isinstance(desc, int):
        if not 0 <= desc < len(arrays) or arrays[desc] is None:
            raise MXNetError(f"optimizer states: key {key!r} refers to a missing array "
                             f"slot {desc}")
        return arrays[desc]
    if isinstance(desc, dict) and len(desc) == 1:
        kind, items = next(iter(desc.items()))
        if kind in ("tuple", "list") and isinstance(items, list):
            built = [_unflatten(item, arrays, key) for item in items]
            return tuple(built) if kind == "tuple" else built
    raise MXNetError(f"optimizer states: malformed structure for key {key!r}: {desc!r}")


def _encode_native(states: Mapping, optimizer: Optimizer | None,
                   dump_optimizer: bool = False, name_counts: Mapping | None = None) -> bytes:
    named: dict[str, NDArray] = {}
    entries = []
    seen: dict[str, Any] = {}
    for key, state in states.items():
        if not isinstance(key, (int, str)) or isinstance(key, bool):
            raise MXNetError(f"optimizer state key {key!r} must be an int or a str")
        label = str(key)
        if label in seen:
            raise MXNetError(f"optimizer state keys {seen[label]!r} and {key!r} collide")
        seen[label] = key
        arrays: list = []
        desc = _flatten(state, arrays)
        for slot, arr in enumerate(arrays):
            named[f"{label}:{slot}"] = arr
        entries.append({"key": key, "type": "int" if isinstance(key, int) else "str",
                        "state": desc})
    header: dict[str, Any] = {"format": _NATIVE_FORMAT, "version": 1, "keys": entries}
    if optimizer is not None:
        header["counters"] = {
            "num_update": optimizer.num_update,
            "begin_num_update": optimizer.begin_num_update,
            "index_update_counts": [
                [device, [[k, c] for k, c in counts.items()]]
                for device, counts in optimizer._all_index_update_counts.items()],
        }
        if dump_optimizer:
            header["optimizer"] = {"class": type(optimizer).__name__.lower(),
                                   "attrs": _simple_attrs(optimizer)}
    if name_counts is not None:
        header["name_counts"] = dict(name_counts)
    blob = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8).copy()
    named[_NATIVE_HEADER_KEY] = wrap(blob, _cpu())
    return serialization.save_to_bytes(named)


def _cpu():
    from .context import cpu
    return cpu(0)


def _simple_attrs(optimizer: Optimizer) -> dict:
    out = {}
    for name, value in optimizer.__dict__.items():
        if name.startswith("_") or name in ("param_dict", "sym_info", "lr_scheduler"):
            continue
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            continue
        if isinstance(value, dict) and any(not isinstance(k, str) for k in value):
            continue
        out[name] = value
    return out


def _decode_native(data: bytes) -> tuple[dict, dict]:
    try:
        return _decode_native_unchecked(data)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as err:
        if isinstance(err, MXNetError):
            raise
        raise MXNetError(f"optimizer states: malformed header ({type(err).__name__}: "
                         f"{err})") from None


def _decode_native_unchecked(data: bytes) -> tuple[dict, dict]:
    loaded = serialization.load_from_bytes(data, source="optimizer states")
    if not isinstance(loaded, dict) or _NATIVE_HEADER_KEY not in loaded:
        raise MXNetError("optimizer states: an NDArray file without the minimod states header "
                         f"{_NATIVE_HEADER_KEY!r} (a .params file?)")
    raw = loaded.pop(_NATIVE_HEADER_KEY)
    try:
        header = json.loads(backend.asnumpy(raw._data).astype(np.uint8).tobytes().decode())
    except (UnicodeDecodeError, ValueError) as err:
        raise MXNetError(f"optimizer states: unreadable header ({err})") from None
    if not isinstance(header, dict) or (header.get("format"), header.get("version")) != (
            _NATIVE_FORMAT, 1):
        found = header if not isinstance(header, dict) else (header.get("format"),
                                                             header.get("version"))
        raise MXNetError(f"optimizer states: unknown header {found!r} (expected format "
                         f"{_NATIVE_FORMAT!r} version 1)")
    _check_native_header(header)
    slots_per_label: dict = {}
    for name in loaded:
        label = name.rpartition(":")[0]
        slots_per_label[label] = slots_per_label.get(label, 0) + 1
    states = {}
    for entry in header["keys"]:
        key = entry["key"]
        key = int(key) if entry["type"] == "int" else str(key)
        label = str(key)
        arrays = [loaded.get(f"{label}:{slot}") for slot in range(slots_per_label.get(label, 0))]
        states[key] = _unflatten(entry["state"], arrays, key)
    return states, header


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _header_error(what: str) -> MXNetError:
    return MXNetError(f"optimizer states: malformed header: {what}")


def _check_native_header(header: dict) -> None:
    """Check every field later code reads, so a forged header fails here, by name."""
    keys = header.get("keys")
    if not isinstance(keys, list):
        raise _header_error("'keys' must be a list")
    for entry in keys:
        if not isinstance(entry, dict) or entry.get("type") not in ("int", "str") or not (
                _is_int(entry.get("key")) or isinstance(entry.get("key"), str)):
            raise _header_error(f"bad key entry {entry!r:.80}")
    counters = header.get("counters", {})
    if not isinstance(counters, dict) or not all(
            _is_int(counters.get(k, 0)) for k in ("num_update", "begin_num_update")):
        raise _header_error("'counters' must hold integer update counts")
    per_device = counters.get("index_update_counts", [])
    if not isinstance(per_device, list) or not all(
            isinstance(item, list) and len(item) == 2 and _is_int(item[0])
            and isinstance(item[1], list)
            and all(isinstance(kc, list) and len(kc) == 2 and _is_int(kc[1])
                    and (_is_int(kc[0]) or isinstance(kc[0], str)) for kc in item[1])
            for item in per_device):
        raise _header_error("'index_update_counts' must be [[device, [[key, count] ...]] ...]")
    name_counts = header.get("name_counts", {})
    if not isinstance(name_counts, dict) or not all(_is_int(c) for c in name_counts.values()):
        raise _header_error("'name_counts' must map names to integer counts")
    record = header.get("optimizer", {})
    if not isinstance(record, dict) or not isinstance(record.get("class", ""), str) or \
            not isinstance(record.get("attrs", {}), dict):
        raise _header_error("'optimizer' must be {'class': str, 'attrs': {...}}")


def _restore_counters(optimizer: Optimizer, counters: dict) -> None:
    optimizer.num_update = max(optimizer.num_update, int(counters.get("num_update", 0)))
    for device, counts in counters.get("index_update_counts", []):
        table = optimizer._all_index_update_counts.setdefault(device, {})
        for key, count in counts:
            table[key] = count
    optimizer._index_update_count = optimizer._all_index_update_counts.setdefault(0, {})


# ---------------------------------------------------------------------------- MXNet pickle

def _pickle_key(key) -> bytes:
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise MXNetError(f"optimizer state key {key!r} must be an int or a str")
    if isinstance(key, str):
        raw = key.encode("utf-8")
        return b"X" + struct.pack("<I", len(raw)) + raw          # BINUNICODE
    if -2 ** 31 <= key < 2 ** 31:
        return b"J" + struct.pack("<i", key)                      # BININT
    raw = key.to_bytes((key.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw                      # LONG1


def _pickle_state(state) -> bytes:
    if state is None:
        return b"N"
    if isinstance(state, NDArray):
        record = serialization.write_record(state)
        return (b"cmxnet.ndarray.ndarray\nNDArray\n" + b"N\x85R"           # NDArray(None)
                + b"}X\x06\x00\x00\x00handle"                              # {'handle':
                + b"cbuiltins\nbytearray\n" + b"B" + struct.pack("<I", len(record)) + record
                + b"\x85Rs" + b"b")                                        # bytearray(..)}
    if isinstance(state, (tuple, list)):
        body = b"".join(_pickle_state(item) for item in state)
        if isinstance(state, list):
            return b"](" + body + b"e"
        return b"(" + body + b"t"
    raise MXNetError(f"cannot write an optimizer state of type {type(state).__name__} "
                     "for MXNet")


def dump_states_mxnet(states: Mapping) -> bytes:
    """`states` ({key: None | NDArray | tuple}) as the pickle MXNet 1.9.1's
    `Updater.set_states` / `Module.load_optimizer_states` read.

    Written opcode by opcode (protocol 3: no memo, GLOBAL references to
    `mxnet.ndarray.ndarray.NDArray` and `builtins.bytearray`), so MXNet is not imported.
    """
    parts = [b"\x80\x03}("]                                   # PROTO 3, EMPTY_DICT, MARK
    for key, state in states.items():
        parts.append(_pickle_key(key))
        parts.append(_pickle_state(state))
    parts.append(b"u.")                                        # SETITEMS, STOP
    return b"".join(parts)


# ---------------------------------------------------------------------------- Updater

def _decode_key(key):
    return key.decode("utf-8") if isinstance(key, bytes) else key


def _rehome(state, context):
    if isinstance(state, NDArray):
        return state.as_in_context(context)
    if isinstance(state, tuple):
        return tuple(_rehome(item, context) for item in state)
    if isinstance(state, list):
        return [_rehome(item, context) for item in state]
    return state


def _copy_state(state):
    if isinstance(state, NDArray):
        return state.copy()
    if isinstance(state, tuple):
        return tuple(_copy_state(item) for item in state)
    if isinstance(state, list):
        return [_copy_state(item) for item in state]
    return state


class _FlatRecord:
    """What an Updater keeps for one flat parameter buffer: the optimizer state of the whole
    buffer (each key's state a view of it) and the prepared update runs, with the multipliers
    they were made with."""

    __slots__ = ("flat", "keys", "state", "views", "view_list", "runs", "mults")

    def __init__(self, opt: Optimizer, indices: list, flat) -> None:
        self.flat = flat
        self.keys = list(indices)
        self.state = opt.create_state(indices[0], NDArray(flat.weight, flat.ctx))
        self.views = {idx: _state_slice(self.state, lo, hi, shape) for idx, lo, hi, shape in
                      zip(indices, flat.offsets, flat.offsets[1:], flat.shapes)}
        self.view_list = [self.views[idx] for idx in indices]
        self.runs = None  # [(step(lr, wd), lr_mult, wd_mult)], made by make_runs
        self.mults = None

    def adopt_states(self, updater: Updater) -> None:
        """Make every key's state its view of the flat state again, moving the values of
        states loaded or made elsewhere into the flat arrays."""
        states, views = updater.states, self.views
        for idx in self.keys:
            have = states.get(idx, _MISSING)
            if have is views[idx]:
                continue
            if have is not _MISSING and have is not None:
                _fill_state(views[idx], _rehome(have, self.flat.ctx))
            states[idx] = views[idx]
            updater.states_synced[idx] = True
            self.runs = None

    def mults_current(self, opt: Optimizer) -> bool:
        """Whether the optimizer's lr_mult, wd_mult and idx2name (and whether wd is 0)
        still compare equal to the copies the runs were made with (dict comparisons run in
        C; an edit in place shows up as a difference). With a param_dict (Gluon parameters
        carry their own mults) the runs are remade every time."""
        kept = self.mults
        return (not opt.param_dict and kept is not None and kept[0] == opt.lr_mult
                and kept[1] == opt.wd_mult and kept[2] == opt.idx2name
                and kept[3] == (opt.wd == 0))

    def make_runs(self, opt: Optimizer, counts=None) -> list:
        """(step, lr_mult, wd_mult) for each run of consecutive parameters with equal
        multipliers (and equal update counts, when `counts` is given), `step` being the
        optimizer's `_flat_step` over the run's views of the flat arrays. Splitting a run in
        two would not change a bit (every element sees the same operations and scalars);
        merging keys with different hyperparameters would. Records the multipliers."""
        indices, flat = self.keys, self.flat
        no_wd = opt.wd == 0  # then every wd product is 0 and weights and biases run as one
        self.mults = (dict(opt.lr_mult), dict(opt.wd_mult), dict(opt.idx2name), no_wd)
        hyper = list(zip([opt._mult(i, opt.lr_mult, "lr_mult") for i in indices],
                         [0.0 if no_wd else opt._mult(i, opt.wd_mult, "wd_mult")
                          for i in indices],
                         counts if counts is not None else itertools.repeat(0)))
        starts = [i for i in range(len(indices)) if i == 0 or hyper[i] != hyper[i - 1]]
        runs = []
        bounds = flat.offsets
        for start, stop in zip(starts, starts[1:] + [len(indices)]):
            lo, hi = bounds[start], bounds[stop]
            step = opt._flat_step(indices[start], flat.weight[lo:hi], flat.grad[lo:hi],
                                  _state_slice(self.state, lo, hi, (hi - lo,)))
            runs.append((step, hyper[start][0], hyper[start][1]))
        return runs


class Updater:
    """Applies an optimizer to keyed parameters and owns their states (`mx.optimizer.Updater`).

    `updater(index, grad, weight)` (note: gradient before weight) takes one key or lists of
    keys, gradients and weights; states are created on first sight of a key.
    """

    def __init__(self, optimizer: Optimizer) -> None:
        self.optimizer = optimizer
        self.states: dict = {}
        self.states_synced: dict = {}
        self.aggregate_updates = optimizer.aggregate_num > 0

    def __call__(self, index: Any, grad: Any, weight: Any) -> None:
        if isinstance(index, (list, tuple)):
            indices, grads, weights = [_decode_key(i) for i in index], list(grad), list(weight)
        else:
            indices, grads, weights = [_decode_key(index)], [grad], [weight]
        if not indices:
            return
        opt = self.optimizer
        opt._set_current_context(weights[0].context.device_id)
        states = self.states
        for idx, w in zip(indices, weights):
            if idx not in states:
                states[idx] = opt.create_state_multi_precision(idx, w)
                self.states_synced[idx] = True
            elif not self.states_synced[idx]:
                states[idx] = _rehome(states[idx], w.context)
                self.states_synced[idx] = True
        kind = type(opt)
        if (isinstance(opt, _Builtin) and kind.update is _Builtin.update
                and kind.update_multi_precision is _Builtin.update_multi_precision
                and not (opt.aggregate_num > 0 and len({w.dtype for w in weights}) > 1)):
            opt.update_multi_precision(indices, weights, grads, [states[i] for i in indices])
        elif self.aggregate_updates:
            self._aggregated(indices, grads, weights)
        else:
            for idx, g, w in zip(indices, grads, weights):
                opt.update_multi_precision(idx, w, g, states[idx])

    # ------------------------------------------------------------------ flat updates
    def update_flat(self, indices: Sequence, flat, grads: Sequence, weights: Sequence) -> None:
        """Update parameters that live end to end in one `FlatParams` buffer (`flat`), given in
        its order with their keys, in a few vectorised passes over the whole buffer.

        The optimizer's per-parameter arithmetic runs once per run of consecutive parameters
        sharing learning rate, weight decay and update count (usually the weights, then the
        biases), so every element sees the very operations and scalars of a per-parameter
        update: the results are bit-identical. The states are views of flat state arrays, so
        `get_states`/`set_states` still see one state per key; states set from outside are
        copied into the flat arrays on the next update. Optimizers whose arithmetic is not
        elementwise-independent of how parameters are grouped (Nadam's per-call schedule, a
        user's own `update`, float16 master copies) take the per-parameter path instead.
        """
        if not self.flat_capable(weights):
            # the per-parameter path, in the callers' parameter order (Nadam's schedule moves
            # with every call)
            order = sorted(range(len(indices)), key=lambda i: indices[i])
            self([indices[i] for i in order], [grads[i] for i in order],
                 [weights[i] for i in order])
            return
        self.update_flat_buffer(indices, flat)

    def update_flat_buffer(self, indices: Sequence, flat) -> None:
        """The vectorised pass of `update_flat`, for a caller that has checked
        `flat_capable` (Module, once per update)."""
        opt = self.optimizer
        opt._set_current_context(flat.ctx.device_id)
        record = self._flat_record(indices, flat)
        counts = opt._count_distinct_updates(indices)
        runs = record.runs
        if runs is None or not record.mults_current(opt):
            runs = record.runs = record.make_runs(opt)
        if counts is not None:
            # keys updated unequally often (some also outside this buffer): Adam's bias
            # correction sees each key's own count, so runs split there too
            runs = record.make_runs(opt, counts)
        # the products _get_lrs/_get_wds form, for the first key of each run
        lr, wd = opt._base_lr(), opt.wd
        for step, lr_mult, wd_mult in runs:
            step(lr * lr_mult, wd * wd_mult)

    # the optimizers whose update is elementwise and the same for any grouping of parameters
    _FLAT_SAFE = frozenset((SGD, ccSGD, NAG, Adam, AdaGrad, RMSProp, AdaDelta, Adamax, Signum,
                            Ftrl, FTML, DCASGD))

    def flat_capable(self, weights) -> bool:
        """Whether `update_flat` runs vectorised for this optimizer and these weights: a
        built-in optimizer of `_FLAT_SAFE` itself (a subclass may change the arithmetic), its
        update methods not replaced, and no float16 master copies."""
        opt = self.optimizer
        kind = type(opt)
        return (kind in self._FLAT_SAFE and kind.update is _Builtin.update
                and kind.update_multi_precision is _Builtin.update_multi_precision
                and not (opt.multi_precision and weights and weights[0].dtype == np.float16))

    def _flat_record(self, indices: list, flat) -> _FlatRecord:
        """The flat states of this buffer (made on first use), with every key's state a view."""
        records = self.__dict__.get("_flat_records")
        if records is None:
            records = self._flat_records = {}
        record = records.get(id(flat))
        if record is None or record.flat is not flat or record.keys != indices:
            # these keys may have moved from another buffer (a module rebound with its
            # optimizer kept): their states move over in adopt_states, and the old buffer's
            # record would only hold its memory
            for stale in [k for k, r in records.items() if r.keys == indices]:
                del records[stale]
            record = records[id(flat)] = _FlatRecord(self.optimizer, indices, flat)
        states = self.states
        for idx, view in zip(indices, record.view_list):
            if states.get(idx, _MISSING) is not view:
                record.adopt_states(self)
                break
        return record

    def _aggregated(self, indices, grads, weights) -> None:
        # MXNet's grouping: by dtype (first-seen order), chunks of aggregate_num.
        groups: dict = {}
        for idx, g, w in zip(indices, grads, weights):
            groups.setdefault(w.dtype, []).append((idx, g, w))
        size = self.optimizer.aggregate_num
        for members in groups.values():
            for start in range(0, len(members), size):
                chunk = members[start:start + size]
                keys = [m[0] for m in chunk]
                self.optimizer.update_multi_precision(
                    keys, [m[2] for m in chunk], [m[1] for m in chunk],
                    [self.states[k] for k in keys])

    def sync_state_context(self, state: State, context) -> State:
        """`state` with every array moved to `context`."""
        return _rehome(state, context)

    # ------------------------------------------------------------------ states as bytes
    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """The states in minimod's format (no pickle; see the module docstring). With
        dump_optimizer, the optimizer's plain hyperparameters are recorded too."""
        return _encode_native(self.states, self.optimizer, dump_optimizer)

    def get_states_mxnet(self) -> bytes:
        """The states as the pickle MXNet 1.9.1 reads (`dump_states_mxnet`)."""
        return dump_states_mxnet(self.states)

    def set_states(self, states: bytes, restore_counters: bool = False) -> None:
        """Load states written by `get_states` or an MXNet `.states` pickle (read through
        SafeStatesUnpickler). Arrays move to each weight's context on first use. With
        restore_counters, the saved update counts of a native payload are restored."""
        loaded, header = _decode_states(states)
        if header is not None:
            if restore_counters and "counters" in header:
                _restore_counters(self.optimizer, header["counters"])
            if "optimizer" in header:
                self._apply_optimizer_attrs(header["optimizer"])
        self.states = loaded
        self.states_synced = dict.fromkeys(loaded, False)

    def _apply_optimizer_attrs(self, record: dict) -> None:
        name = record.get("class", "")
        if type(self.optimizer).__name__.lower() != name:
            if name not in Optimizer.opt_registry:
                raise MXNetError(f"optimizer states name an unknown optimizer {name!r}")
            self.optimizer = create(name)
            self.aggregate_updates = self.optimizer.aggregate_num > 0
        for attr, value in record.get("attrs", {}).items():
            # only plain hyperparameters the optimizer already has (what get_states wrote)
            if attr.startswith("_") or not hasattr(self.optimizer, attr) or callable(
                    getattr(self.optimizer, attr)):
                continue
            setattr(self.optimizer, attr, value)

    # ------------------------------------------------------------------ keyed by name
    def states_by_name(self, idx2name: Mapping) -> dict:
        """The states keyed by parameter name: int keys are named through `idx2name`
        (Module's `{i * num_device + k: name}`; the lowest key of a name wins, i.e. device 0,
        whose copy equals the others), str keys are names already."""
        by_name: dict = {}
        for key in sorted(self.states, key=lambda k: (isinstance(k, str), k)):
            name = key if isinstance(key, str) else idx2name.get(key)
            if name is None:
                raise MXNetError(f"optimizer state key {key} has no name in idx2name")
            by_name.setdefault(name, self.states[key])
        return by_name

    def load_states_by_name(self, by_name: Mapping, idx2name: Mapping) -> None:
        """Install name-keyed states under this run's keys: each key of `idx2name` (an int
        `i * num_device + k`, or a name for update-on-kvstore) gets its own copy of its name's
        state. Names without a state are left to be created on first use."""
        states, synced = {}, {}
        for key, name in idx2name.items():
            if name in by_name:
                states[key] = _copy_state(by_name[name])
                synced[key] = False
        self.states = states
        self.states_synced = synced

    def name_counts(self, idx2name: Mapping) -> dict:
        """Update count per parameter name (the highest over its keys and devices)."""
        counts: dict = {}
        for table in self.optimizer._all_index_update_counts.values():
            for key, count in table.items():
                name = key if isinstance(key, str) else idx2name.get(key)
                if name is not None:
                    counts[name] = max(counts.get(name, 0), int(count))
        return counts

    def dump_states_by_name(self, idx2name: Mapping) -> bytes:
        """`get_states`, keyed by parameter name (portable across device counts), with the
        update count of every name so that a resumed run continues its schedule exactly."""
        return _encode_native(self.states_by_name(idx2name), self.optimizer,
                              name_counts=self.name_counts(idx2name))

    def set_states_by_name(self, data: bytes, idx2name: Mapping,
                           saved_idx2name: Mapping | None = None,
                           key_devices: Mapping | None = None) -> None:
        """Load a payload keyed by names (or by int keys named through `saved_idx2name`, the
        idx2name of the run that saved it) into this run's keys `idx2name`.

        With `key_devices` (this run's key -> device id) the saved per-name update counts are
        restored too, so bias corrections (Adam) and lr schedules continue where they were.
        """
        loaded, header = _decode_states(data)
        if key_devices is not None and header is not None and "name_counts" in header:
            opt = self.optimizer
            counts = header["name_counts"]
            for key, name in idx2name.items():
                if name in counts and key in key_devices:
                    table = opt._all_index_update_counts.setdefault(key_devices[key], {})
                    table[key] = int(counts[name])
            saved = header.get("counters", {})
            opt.num_update = max(opt.num_update, int(saved.get("num_update", 0)),
                                 max(counts.values(), default=0))
            opt._index_update_count = opt._all_index_update_counts.setdefault(0, {})
        by_name: dict = {}
        for key in sorted(loaded, key=lambda k: (isinstance(k, str), k)):
            if isinstance(key, str):
                name = key
            elif saved_idx2name is not None and key in saved_idx2name:
                name = saved_idx2name[key]
            else:
                raise MXNetError(f"optimizer states use int key {key}; pass saved_idx2name to "
                                 "name it")
            by_name.setdefault(name, loaded[key])
        self.load_states_by_name(by_name, idx2name)


_MISSING = object()


def _state_slice(state: State, lo: int, hi: int, shape: tuple) -> State:
    """The part [lo:hi] of a flat state (an NDArray, None, or tuples/lists of them), shaped."""
    if state is None:
        return None
    if isinstance(state, NDArray):
        return NDArray(state._data[lo:hi].reshape(shape), state.context)
    return type(state)(_state_slice(s, lo, hi, shape) for s in state)


def _fill_state(dst: State, src: State) -> None:
    if dst is None:
        return
    if isinstance(dst, NDArray):
        if not isinstance(src, NDArray) or src.shape != dst.shape:
            raise MXNetError("optimizer state of shape %s does not fit a parameter of shape %s"
                             % (getattr(src, "shape", type(src).__name__), dst.shape))
        dst._data[...] = src._data
        return
    if not isinstance(src, (tuple, list)) or len(src) != len(dst):
        raise MXNetError("optimizer state %r does not match the optimizer's state layout"
                         % (type(src).__name__,))
    for d, s_ in zip(dst, src):
        _fill_state(d, s_)


def get_updater(optimizer: Optimizer) -> Updater:
    """An Updater applying `optimizer` (what Module uses without update on kvstore)."""
    return Updater(optimizer)


# ============================================================================ update kernels
# MXNet exposes its optimizers' kernels as NDArray functions (`mx.nd.sgd_mom_update(weight,
# grad, mom, lr=..., out=weight)`), which custom Optimizer subclasses call from `update`.
# Each runs the matching built-in optimizer's step on the arrays: the states are updated in
# place, the new weight goes to `out` (the weight itself when out=weight, the usual call), or
# to a new array, leaving the weight alone, when out is not given.

@functools.lru_cache(maxsize=64)
def _kernel_optimizer(cls, hyper: tuple) -> Optimizer:
    """One optimizer object per kernel and hyperparameters (it owns the scratch arrays)."""
    return cls(**dict(hyper))


def _run_kernel(name: str, cls, hyper: dict, weight: NDArray, grad: NDArray, states: tuple,
                lr: float, wd: float, out: NDArray | None, packed: bool = False) -> NDArray:
    """`cls`'s kernel on these arrays; its state is the one NDArray, or a tuple when there are
    several or the optimizer keeps even one in a tuple (`packed`: RMSProp)."""
    for label, arr in (("weight", weight), ("grad", grad)) + tuple(
            ("state %d" % i, s) for i, s in enumerate(states)):
        if not isinstance(arr, NDArray):
            raise TypeError("mx.nd.%s: %s must be an NDArray, got %s"
                            % (name, label, type(arr).__name__))
        if arr.shape != weight.shape:
            raise MXNetError("mx.nd.%s: %s has shape %s but the weight %s"
                             % (name, label, arr.shape, weight.shape))
    clip = hyper.get("clip_gradient")
    hyper = dict(hyper, clip_gradient=None if clip is None or clip < 0 else clip)
    opt = _kernel_optimizer(cls, tuple(sorted(hyper.items())))
    target = out if out is weight else weight.copy()
    state = tuple(states) if packed or len(states) > 1 else (states[0] if states else None)
    with backend.device_scope(weight.context):
        opt._kernel(target._data, grad._data, state, lr, wd)
    if out is None or out is weight:
        return target
    out[:] = target
    return out


def sgd_update(weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
               lazy_update=True, out=None, name=None):
    """w = (1 - lr wd) w - lr clip(rescale_grad grad)."""
    return _run_kernel("sgd_update", SGD, dict(momentum=0.0, rescale_grad=rescale_grad,
                                               clip_gradient=clip_gradient),
                       weight, grad, (), lr, wd, out)


def sgd_mom_update(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                   clip_gradient=-1.0, lazy_update=True, out=None, name=None):
    """mom = momentum mom - lr (clip(rescale_grad grad) + wd w); w += mom."""
    return _run_kernel("sgd_mom_update", SGD, dict(momentum=momentum, rescale_grad=rescale_grad,
                                                   clip_gradient=clip_gradient),
                       weight, grad, (mom,), lr, wd, out)


def nag_mom_update(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                   clip_gradient=-1.0, out=None, name=None):
    """Nesterov momentum (see NAG)."""
    return _run_kernel("nag_mom_update", NAG, dict(momentum=momentum, rescale_grad=rescale_grad,
                                                   clip_gradient=clip_gradient),
                       weight, grad, (mom,), lr, wd, out)


def adam_update(weight, grad, mean, var, lr, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.0,
                rescale_grad=1.0, clip_gradient=-1.0, lazy_update=True, out=None, name=None):
    """Adam's moments and step without bias correction (Adam folds that into lr)."""
    return _run_kernel("adam_update", Adam, dict(beta1=beta1, beta2=beta2, epsilon=epsilon,
                                                 rescale_grad=rescale_grad,
                                                 clip_gradient=clip_gradient),
                       weight, grad, (mean, var), lr, wd, out)


def rmsprop_update(weight, grad, n, lr, gamma1=0.95, epsilon=1e-8, wd=0.0, rescale_grad=1.0,
                   clip_gradient=-1.0, clip_weights=-1.0, out=None, name=None):
    """Tieleman and Hinton's RMSProp (see RMSProp)."""
    return _run_kernel("rmsprop_update", RMSProp, dict(
        gamma1=gamma1, epsilon=epsilon, rescale_grad=rescale_grad, clip_gradient=clip_gradient,
        clip_weights=None if clip_weights < 0 else clip_weights), weight, grad, (n,), lr, wd, out,
        packed=True)


def rmspropalex_update(weight, grad, n, g, delta, lr, gamma1=0.95, gamma2=0.9, epsilon=1e-8,
                       wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, clip_weights=-1.0,
                       out=None, name=None):
    """Graves' centered RMSProp (see RMSProp with centered=True)."""
    return _run_kernel("rmspropalex_update", RMSProp, dict(
        gamma1=gamma1, gamma2=gamma2, epsilon=epsilon, centered=True,
        rescale_grad=rescale_grad, clip_gradient=clip_gradient,
        clip_weights=None if clip_weights < 0 else clip_weights),
        weight, grad, (n, g, delta), lr, wd, out)


def signsgd_update(weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, out=None,
                   name=None):
    """w = (1 - lr wd) w - lr sign(clip(rescale_grad grad))."""
    return _run_kernel("signsgd_update", Signum, dict(momentum=0.0, rescale_grad=rescale_grad,
                                                      clip_gradient=clip_gradient),
                       weight, grad, (), lr, wd, out)


def signum_update(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                  clip_gradient=-1.0, wd_lh=0.0, out=None, name=None):
    """Signum (see Signum)."""
    return _run_kernel("signum_update", Signum, dict(momentum=momentum, wd_lh=wd_lh,
                                                     rescale_grad=rescale_grad,
                                                     clip_gradient=clip_gradient),
                       weight, grad, (mom,), lr, wd, out)


def ftrl_update(weight, grad, z, n, lr, lamda1=0.01, beta=1.0, wd=0.0, rescale_grad=1.0,
                clip_gradient=-1.0, out=None, name=None):
    """FTRL-proximal (see Ftrl)."""
    return _run_kernel("ftrl_update", Ftrl, dict(lamda1=lamda1, beta=beta,
                                                 rescale_grad=rescale_grad,
                                                 clip_gradient=clip_gradient),
                       weight, grad, (z, n), lr, wd, out)


#: the kernels `mx.nd` serves under their MXNet names
UPDATE_KERNELS = {f.__name__: f for f in (
    sgd_update, sgd_mom_update, nag_mom_update, adam_update, rmsprop_update,
    rmspropalex_update, signsgd_update, signum_update, ftrl_update)}


# MXNet keeps GroupAdaGrad in `mx.optimizer.contrib`
contrib = types.SimpleNamespace(GroupAdaGrad=GroupAdaGrad)

# MXNet code imports `mx.optimizer.optimizer`; one module serves both names.
optimizer = sys.modules[__name__]
