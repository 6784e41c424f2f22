"""The Updater (`mx.optimizer.Updater`, `get_updater`): applies an optimizer to keyed
parameters and owns their states, including the flat state arrays of the fused update of
whole parameter buffers (`flat_states`; the fused step itself is `minimod.flat.step`), and
says which optimizers that step serves exactly (`flat_capable`).

States move in and out as bytes through `states.py` (minimod's pickle-free format, MXNet's
pickles read safely), keyed by update index or, portable across device counts, by name.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from ..ndarray.update_rows import put_rows, rows_of
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
        #: the states of whole flat buffers the fused step keeps (`minimod.flat.step.FlatState`,
        #: by buffer): each key's entry of `states` is then a view of one of them
        self.flat_states: dict = {}

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
            self._ready_state(idx, w)
        if (isinstance(opt, _Builtin) and not opt.replaces_update
                and not opt.replaces_update_multi_precision
                and not (opt.aggregate_num > 0 and len({w.dtype for w in weights}) > 1)):
            opt.update_multi_precision(indices, weights, grads, [states[i] for i in indices])
        elif self.aggregate_updates:
            self._aggregated(indices, grads, weights)
        else:
            for idx, g, w in zip(indices, grads, weights):
                opt.update_multi_precision(idx, w, g, states[idx])

    def _ready_state(self, index: Any, weight: NDArray) -> None:
        """The state of key `index` made on its first sight, or moved to `weight`'s device once
        after states were loaded."""
        if index not in self.states:
            self.states[index] = self.optimizer.create_state_multi_precision(index, weight)
            self.states_synced[index] = True
        elif not self.states_synced[index]:
            self.states[index] = _rehome(self.states[index], weight.context)
            self.states_synced[index] = True

    def update_rows(self, index: Any, grad: NDArray, weight: NDArray, rows) -> None:
        """MXNet's lazy update of a row-sparse gradient: the optimizer's own update applied to
        rows `rows` (sorted backend int64 indices) of the weight, the gradient and the state,
        which are gathered, updated and written back; the other rows keep their values and
        states. The update is counted as any other (one call per step)."""
        self.optimizer._set_current_context(weight.context.device_id)
        self._ready_state(index, weight)
        part_weight, part_state = rows_of(weight, rows), rows_of(self.states[index], rows)
        self.optimizer.update_multi_precision(index, part_weight, rows_of(grad, rows),
                                              part_state)
        put_rows(weight, part_weight, rows)
        put_rows(self.states[index], part_state, rows)

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

    # ------------------------------------------------------------------ fused updates
    # the optimizers whose update is elementwise and the same for any grouping of parameters
    _FLAT_SAFE = frozenset((SGD, ccSGD, NAG, Adam, AdaGrad, RMSProp, AdaDelta, Adamax, Signum,
                            Ftrl, FTML, DCASGD))

    def flat_capable(self, float16: bool) -> bool:
        """Whether the fused step over whole flat buffers (`minimod.flat`) gives this
        updater's per-parameter numbers bit for bit: a built-in optimizer of `_FLAT_SAFE` itself
        (a subclass may change the arithmetic), its update methods not replaced, and no float16
        master copies (`float16`: whether a buffer holds float16 weights).

        Nadam's schedule moves with every per-parameter call, SGLD's noise would be drawn in
        other portions, LAMB's and LARS's trust ratios take per-parameter norms: they are not
        in `_FLAT_SAFE`."""
        opt = self.optimizer
        return (type(opt) in self._FLAT_SAFE and not (opt.multi_precision and float16))

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


def get_updater(optimizer: Optimizer) -> Updater:
    """An Updater applying `optimizer` (what Module uses without update on kvstore)."""
    return Updater(optimizer)
