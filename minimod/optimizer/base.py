"""The Optimizer base class (`mx.optimizer.Optimizer`): hyperparameters, the registry,
learning-rate and weight-decay lookup, update counting and the float32 master copies; and
`_Builtin`, the driver every built-in optimizer shares.

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
  caller's gradient array in place. The optimizers MXNet runs through an `mx.nd.*_update`
  kernel (SGD, NAG, Adam, RMSProp, Signum, Ftrl) run that kernel's arithmetic, from
  `minimod/ndarray/update_steps*.py`.
* Updates happen in place on `weight._data` with ufuncs writing into `out=` arrays; the few
  temporaries an update needs come from a per-optimizer scratch pool, so the steady state
  allocates nothing. Every built-in optimizer accepts lists of indices, weights, gradients and
  states in one call, and the Updater hands it a whole batch at once.

A user's subclass is called as MXNet 1.9.1 calls it (see `_Builtin`): SGD, NAG, LARS and LAMB
never call a replaced `update`; the others call it one index at a time; a replaced
`update_multi_precision` gets MXNet's aggregated lists (tests/test_optimizer_subclass_calls.py).
"""
from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import backend
from ..lr_scheduler import LRScheduler
from ..ndarray.ndarray import NDArray, zeros
from ..ndarray.update_steps import clip_on, scratch_arrays
from . import sparse_update

__all__ = ["Optimizer", "State", "create", "register"]

State = Any


def _as_lists(index, weight, grad, state) -> tuple[list, list, list, list]:
    if isinstance(index, (list, tuple)):
        return list(index), list(weight), list(grad), list(state)
    return [index], [weight], [grad], [state]


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

    @staticmethod
    def decays_by_default(name: str) -> bool:
        """Whether parameter `name` gets weight decay when no multiplier says otherwise: names
        ending in `_weight` or `_gamma` do, the others (biases, betas) get wd_mult 0."""
        return name.endswith(("_weight", "_gamma"))

    def set_wd_mult(self, args_wd_mult: dict) -> None:
        """Weight-decay multipliers: 0 for every idx2name name the optimizer does not decay by
        default (`decays_by_default`), then the symbol's `__wd_mult__` attributes, then this
        dict."""
        self.wd_mult = {name: 0.0 for name in self.idx2name.values()
                        if not self.decays_by_default(name)}
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
        return scratch_arrays(self._scratch, like, count, dtype)


register = Optimizer.register
create = Optimizer.create_optimizer


_xp = backend.array_module_of  # the array module (NumPy or CuPy) of an array


class _Builtin(Optimizer):
    """Shared driver of the built-in optimizers: lists of parameters in one call, counting,
    lr/wd lookup, and the float32 master copy; subclasses define `_step` on backend arrays.

    How a user's subclass is called follows MXNet 1.9.1. SGD, NAG, LARS and LAMB have an
    `update_multi_precision` of their own that goes straight to their kernels
    (`_direct_multi_precision`): a subclass that replaces only `update` is never called
    through the Updater (MXNet's dense-sparse-dense example relies on that, knowingly or
    not). The others reach `update` through the base `update_multi_precision`, one index at a
    time. Whether a class replaces `update` or `update_multi_precision` is decided once, when
    the class is made (`__init_subclass__`)."""

    # Where a float16 weight's float32 master copy sits in a multi-precision state.
    _master_slot = 0
    #: MXNet's own update_multi_precision of this optimizer never calls `update`
    _direct_multi_precision = False
    #: whether the class replaces `update` / `update_multi_precision` of the built-ins
    replaces_update = False
    replaces_update_multi_precision = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.replaces_update = cls.update is not _Builtin.update
        cls.replaces_update_multi_precision = (
            cls.update_multi_precision is not _Builtin.update_multi_precision)

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: State) -> None:
        if sparse_update.has_sparse(weight, grad, state):
            sparse_update.update(self, index, weight, grad, state)
            return
        indices, weights, grads, states = _as_lists(index, weight, grad, state)
        self._update_count(indices)
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        for idx, w, g, s, lr, wd in zip(indices, weights, grads, states, lrs, wds):
            self._step(idx, w._data, g._data, s, lr, wd)

    def update_multi_precision(self, index: Any, weight: NDArray, grad: NDArray,
                               state: State) -> None:
        if self.replaces_update and not self._direct_multi_precision:
            Optimizer.update_multi_precision(self, index, weight, grad, state)
            return
        if sparse_update.has_sparse(weight, grad, state):
            sparse_update.update(self, index, weight, grad, state)
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

    def _sparse_form(self, wd: float, weight_stype: str = "default") -> str:
        """How MXNet's update with a row_sparse gradient differs from the dense one
        (sparse_update.py): "" (it does not), "rows" (the dense formula on the gradient's
        rows only), or why minimod cannot give it, with what to change."""
        return ""

    def _flat_step(self, index, w, g, state):
        """`step(lr, wd)` updating one run of a flat buffer (weight, gradient and state are
        views of the flat arrays, `index` the run's first key), called every step by
        `minimod.flat.step.fused_update`. An optimizer may prepare what does not change between
        steps here; by default each call is `_step`."""
        return functools.partial(self._step, index, w, g, state)

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
        if (clip is not None) if python_clip else clip_on(clip):
            np_.clip(out, dt(-clip), dt(clip), out=out)
        return out
