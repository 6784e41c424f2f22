"""The fused optimizer step: the parameters of one flat buffer updated in a few vectorised
passes, with the numbers of a per-parameter update.

The optimizer's per-parameter arithmetic runs once per run of consecutive parameters sharing
learning rate, weight decay and update count (usually the weights, then the biases), over
views of the flat arrays, so every element sees the very operations and scalars of a
per-parameter update: the results are bit-identical. Splitting a run in two would not change a
bit; merging keys with different hyperparameters would.

The optimizer state of a buffer is one flat state (`FlatState`, kept in `Updater.flat_states`),
and each key's entry of `Updater.states` is a view of it, so `get_states`/`set_states` still see
one state per key; states set from outside are copied into the flat arrays on the next step.
The step reads the optimizer through the hooks its own update uses (`_flat_step`, `_mult`,
`_count_distinct_updates`, `_base_lr`, `_set_current_context`). Only optimizers the Updater
calls `flat_capable` come here.

On a GPU, where every run's step is `capturable` (SGD's kernel and Adam's passes, reading
their scalars from device memory: `minimod.optimizer.flat_runs`), the kernels of a buffer's
runs are recorded as one CUDA graph after a warm-up (`minimod.executor.graphs.StepGraphs`, as
the executors' steps are) and replayed each step. The host's share stays in Python every
step: the update counts, and the scalars, copied to the device only when they change, so a
new learning rate needs no new capture.
`update_graph_status(updater)` says how each buffer's update ran.
"""
from __future__ import annotations

import itertools

from .. import backend
from ..base import MXNetError
from ..executor.graphs import StepGraphs
from ..ndarray.ndarray import NDArray

__all__ = ["FlatState", "fused_update", "update_graph_status"]

_MISSING = object()
_xp = backend.array_module_of


def fused_update(updater, keys: tuple, flat) -> None:
    """Update every parameter of the FlatParams `flat` (with Updater keys `keys`, in buffer
    order) from its gradient buffer, as `updater(keys, grads, weights)` would, counting one
    update of each key on `flat`'s device. Run it on that device (`with flat.scope:`)."""
    opt = updater.optimizer
    opt._set_current_context(flat.ctx.device_id)
    state = _flat_state(updater, keys, flat)
    counts = opt._count_distinct_updates(keys)
    if not state.mults_current(opt):
        state.remake_runs(opt)
    runs = state.runs
    if counts is not None:
        # keys updated unequally often (some also outside this buffer): Adam's bias
        # correction sees each key's own count, so runs split there too
        runs = state.make_runs(opt, counts)
    # the products _get_lrs/_get_wds form, for the first key of each run
    lr, wd = opt._base_lr(), opt.wd
    graphs = state.graphs
    if counts is not None or not graphs.active:
        for step, lr_mult, wd_mult in runs:
            step(lr * lr_mult, wd * wd_mult)
        return
    # the scalars go to device memory here; the kernels run as one CUDA graph, captured
    # once per form of the runs' kernels (whether each clips)
    forms = tuple(step.prepare(lr * lr_mult, wd * wd_mult) for step, lr_mult, wd_mult in runs)
    graphs.run(("update", forms), state.launch)


def update_graph_status(updater) -> dict:
    """How the update of each flat buffer `updater` steps runs on a GPU: 'graph', 'eager
    (warming up)' or 'eager: <why>' (StepGraphs.status), keyed by (the buffer's parameter
    names, its device, the graph's key): ('update', whether each run's kernel clips), or
    'all' where nothing of the buffer may be captured."""
    return {(tuple(state.flat.names), str(state.flat.ctx), key): how
            for state in updater.flat_states.values()
            for key, how in state.graphs.status().items()}


def _flat_state(updater, keys: tuple, flat) -> FlatState:
    """The FlatState of `flat` in `updater.flat_states` (made on first use, and again for
    another optimizer), with every key's entry of `updater.states` its view."""
    flat_states = updater.flat_states
    state = flat_states.get(id(flat))
    if (state is None or state.flat is not flat or state.keys != keys
            or state.optimizer is not updater.optimizer):
        # these keys may have moved from another buffer (a module rebound with its optimizer
        # kept): their states move over in adopt_states, and the old buffer's FlatState
        # would only hold its memory
        for stale in [k for k, s in flat_states.items() if s.keys == keys]:
            del flat_states[stale]
        state = flat_states[id(flat)] = FlatState(updater.optimizer, keys, flat)
    per_key = updater.states
    for key, view in zip(keys, state.view_list):
        if per_key.get(key, _MISSING) is not view:
            state.adopt_states(updater)
            break
    return state


class FlatState:
    """What an Updater keeps for one flat parameter buffer: the optimizer state of the whole
    buffer (each key's state a view of it) and the prepared update runs, with the multipliers
    they were made with."""

    __slots__ = ("flat", "keys", "optimizer", "state", "views", "view_list", "runs", "mults",
                 "graphs")

    def __init__(self, opt, keys: tuple, flat) -> None:
        self.flat = flat
        self.keys = keys
        self.optimizer = opt
        self.state = opt.create_state(keys[0], NDArray(flat.weight, flat.ctx))
        self.views = {key: _state_slice(self.state, lo, hi, shape) for key, lo, hi, shape in
                      zip(keys, flat.offsets, flat.offsets[1:], flat.shapes)}
        self.view_list = [self.views[key] for key in keys]
        self.remake_runs(opt)

    def adopt_states(self, updater) -> None:
        """Make every key's entry of `updater.states` its view of the flat state again,
        moving the values of states loaded or made elsewhere into the flat arrays."""
        states, views = updater.states, self.views
        for key in self.keys:
            have = states.get(key, _MISSING)
            if have is views[key]:
                continue
            if have is not _MISSING and have is not None:
                _fill_state(views[key], updater.sync_state_context(have, self.flat.ctx))
            states[key] = views[key]
            updater.states_synced[key] = True

    def mults_current(self, opt) -> bool:
        """Whether the optimizer's lr_mult, wd_mult and idx2name (and whether wd is 0)
        still compare equal to the copies the runs were made with (dict comparisons run in
        C; an edit in place shows up as a difference). With a param_dict (Gluon parameters
        carry their own mults) the runs are remade every time."""
        kept = self.mults
        return (not opt.param_dict and kept[0] == opt.lr_mult and kept[1] == opt.wd_mult
                and kept[2] == opt.idx2name and kept[3] == (opt.wd == 0))

    def remake_runs(self, opt) -> None:
        """Make the runs again from the optimizer's multipliers of now, and keep copies of
        those."""
        self.mults = (dict(opt.lr_mult), dict(opt.wd_mult), dict(opt.idx2name), opt.wd == 0)
        self.runs = self.make_runs(opt)
        self.graphs = StepGraphs(_xp(self.flat.weight), self.flat.ctx, placed=False)
        if self.graphs.active and not all(getattr(step, "capturable", False)
                                          for step, _, _ in self.runs):
            self.graphs.why_not = ("%s's update takes its scalars as numbers"
                                   % type(opt).__name__)

    def launch(self) -> None:
        """Launch the kernels of every run, with the scalars their `prepare` wrote (what a
        buffer's CUDA graph holds)."""
        for step, _, _ in self.runs:
            step.launch()

    def make_runs(self, opt, counts=None) -> list:
        """(step, lr_mult, wd_mult) for each run of consecutive parameters with equal
        multipliers (and equal update counts, when `counts` is given), `step(lr, wd)` being the
        optimizer's `_flat_step` over the run's views of the flat arrays."""
        keys, flat = self.keys, self.flat
        no_wd = opt.wd == 0  # then every wd product is 0 and weights and biases run as one
        hyper = list(zip([opt._mult(k, opt.lr_mult, "lr_mult") for k in keys],
                         [0.0 if no_wd else opt._mult(k, opt.wd_mult, "wd_mult") for k in keys],
                         counts if counts is not None else itertools.repeat(0)))
        starts = [i for i in range(len(keys)) if i == 0 or hyper[i] != hyper[i - 1]]
        runs = []
        bounds = flat.offsets
        for start, stop in zip(starts, starts[1:] + [len(keys)]):
            lo, hi = bounds[start], bounds[stop]
            step = opt._flat_step(keys[start], flat.weight[lo:hi], flat.grad[lo:hi],
                                  _state_slice(self.state, lo, hi, (hi - lo,)))
            runs.append((step, hyper[start][0], hyper[start][1]))
        return runs


def _state_slice(state, lo: int, hi: int, shape: tuple):
    """The part [lo:hi] of a flat state (an NDArray, None, or tuples/lists of them), shaped."""
    if state is None:
        return None
    if isinstance(state, NDArray):
        return NDArray(state._data[lo:hi].reshape(shape), state.context)
    return type(state)(_state_slice(s, lo, hi, shape) for s in state)


def _fill_state(dst, src) -> None:
    """Copy the values of state `src` into the state views `dst` of the same layout."""
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
