"""The Updater (`mx.optimizer.Updater`, `get_updater`): applies an optimizer to keyed
parameters and owns their states; and the flat-buffer update, where every parameter of one
`FlatParams` buffer is updated in a few vectorised passes (`Updater.update_flat`,
`_FlatRecord`), with results identical to per-parameter updates.

States move in and out as bytes through `states.py` (minimod's pickle-free format, MXNet's
pickles read safely), keyed by update index or, portable across device counts, by name.
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from .adaptive import FTML, AdaDelta, AdaGrad, Adam, Adamax, Ftrl, RMSProp
from .base import Optimizer, State, _Builtin, create
from .sgd import DCASGD, NAG, SGD, Signum, ccSGD
from .states import _decode_states, _encode_native, _restore_counters, dump_states_mxnet

__all__ = ["Updater", "get_updater"]


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
