"""MXNet's `executor_manager`: the data-parallel executors of the pre-Module training loop.

Before `mx.mod.Module`, MXNet trained through `DataParallelExecutorManager`: one executor per
device, each bound for its slice of the batch (`_split_input_slice`), the devices sharing
nothing but the parameters' values, which the caller keeps in step (a kvstore or its own
updater over `param_arrays` / `grad_arrays`). With `sym_gen` (bucketing) the manager binds one
executor group per bucket key, each reading the default bucket's parameter, gradient and
auxiliary arrays, and reusing its data buffers where they are large enough.

minimod's `Module` runs on `minimod.executor.group.DataParallelExecutorGroup` instead; this
module serves code that drives the old classes directly. Their executors are ordinary bound
executors (`Symbol.bind`), so everything an executor does (monitors, memory planning, the
device passes) applies to them too.
"""
from __future__ import annotations

import collections
import logging
import math

from . import ndarray as nd
from .base import MXNetError, ShapeError
from .context import cpu
from .executor.batches import _load_general as _load_sliced
from .executor.batches import _split_input_slice, split_batch

__all__ = ["DataParallelExecutorGroup", "DataParallelExecutorManager", "_bind_exec",
           "_check_arguments", "_load_data", "_load_general", "_load_label",
           "_split_input_slice", "split_batch"]


def _check_arguments(symbol) -> None:
    """Raise ValueError when two arguments, or two auxiliary states, of `symbol` share a name
    (the executors find their arrays by name)."""
    for kind, names in (("argument", symbol.list_arguments()),
                        ("auxiliary state", symbol.list_auxiliary_states())):
        repeated = sorted(n for n, k in collections.Counter(names).items() if k > 1)
        if repeated:
            raise ValueError("symbol has more than one %s named %s: every %s needs its own "
                             "name" % (kind, ", ".join(repr(n) for n in repeated), kind))


def _load_general(data, targets) -> None:
    """Copy each source array into its targets: one array, or (slice of the batch, array)
    pairs, one per device, sliced along axis 0; the slices must cover the whole batch."""
    for src, dst in zip(data, targets):
        if not isinstance(dst, nd.NDArray) and dst and dst[-1][0].stop != src.shape[0]:
            raise ShapeError("a batch of %d rows does not fit the executors, bound for %d "
                             "(source shape %s)" % (src.shape[0], dst[-1][0].stop,
                                                    tuple(src.shape)))
    _load_sliced(data, targets, [0] * len(targets))


def _load_data(batch, targets) -> None:
    """Copy `batch.data` into the sliced targets (see `_load_general`)."""
    _load_general(batch.data, targets)


def _load_label(batch, targets) -> None:
    """Copy `batch.label` into the sliced targets (see `_load_general`)."""
    _load_general(batch.label, targets)


def _data_array(name, shape, dtype, ctx, shared_data_arrays, logger):
    """An input buffer: the shared one of that name, reshaped, when it holds enough elements,
    else a new one (which replaces it in `shared_data_arrays`)."""
    if shared_data_arrays is not None and name in shared_data_arrays:
        have, size = shared_data_arrays[name], math.prod(shape)
        if have.size >= size:
            if have.dtype != dtype:
                raise MXNetError("input %r: the shared buffer holds %s, this executor needs %s"
                                 % (name, have.dtype, dtype))
            # the first elements of the buffer, as a view (MXNet 1.9.1's reshape refuses a
            # smaller size here, so its bucketing fails after a larger default bucket)
            return have.reshape((-1,))[:size].reshape(shape)
        logger.warning("bucketing: input %r has shape %s, larger than the %s already "
                       "allocated; allocating again (making the largest bucket the default "
                       "one avoids this)", name, shape, have.shape)
    array = nd.zeros(shape, ctx, dtype=dtype)
    if shared_data_arrays is not None:
        shared_data_arrays[name] = array
    return array


def _bind_exec(sym, ctx, input_shapes, param_names, need_grad=False, base_exec=None,
               shared_data_arrays=None, input_types=None, logger=logging):
    """An executor of `sym` on `ctx` for `input_shapes` (name -> shape). Parameters come from
    `base_exec` when given (the same arrays, so the executors train one set of weights), else
    are new zeros; other arguments come from `shared_data_arrays` where possible.
    `need_grad`: True (every argument that is not an input), False, or a set of names."""
    arg_shapes, _, aux_shapes = sym.infer_shape(**input_shapes)
    types = input_types or {k: "float32" for k in input_shapes}
    arg_types, _, aux_types = sym.infer_type(**types)
    arg_names = sym.list_arguments()
    if need_grad is True:
        need_grad = set(arg_names) - set(input_shapes)
    elif need_grad is False:
        need_grad = set()
    elif not isinstance(need_grad, set):
        raise MXNetError("_bind_exec: need_grad must be True, False or a set of argument "
                         "names, got %r" % (need_grad,))
    args, grads = [], {}
    for name, shape, dtype in zip(arg_names, arg_shapes, arg_types):
        if name not in param_names:
            args.append(_data_array(name, shape, dtype, ctx, shared_data_arrays, logger))
            continue
        if base_exec is None:
            args.append(nd.zeros(shape, ctx, dtype=dtype))
            if name in need_grad:
                grads[name] = nd.zeros(shape, ctx, dtype=dtype)
            continue
        shared = base_exec.arg_dict[name]
        if shared.shape != tuple(shape) or shared.dtype != dtype:
            raise MXNetError("parameter %r: this executor needs %s %s, the shared executor "
                             "holds %s %s" % (name, tuple(shape), dtype, shared.shape,
                                              shared.dtype))
        args.append(shared)
        if name in need_grad:
            grads[name] = base_exec.grad_dict[name]
    grad_req = {name: "write" if name in need_grad else "null" for name in arg_names}
    return sym.bind(ctx, args, args_grad=grads, grad_req=grad_req,
                    aux_states=_aux_arrays(sym, aux_shapes, aux_types, ctx, base_exec),
                    shared_exec=base_exec)


def _aux_arrays(sym, shapes, dtypes, ctx, base_exec) -> list:
    """New zero auxiliary states, or `base_exec`'s own arrays (checked against `shapes`)."""
    if base_exec is None:
        return [nd.zeros(s, ctx, dtype=t) for s, t in zip(shapes, dtypes)]
    for name, shape, have in zip(sym.list_auxiliary_states(), shapes, base_exec.aux_arrays):
        if have.shape != tuple(shape):
            raise MXNetError("auxiliary state %r: this executor needs %s, the shared executor "
                             "holds %s" % (name, tuple(shape), have.shape))
    return list(base_exec.aux_arrays)


class DataParallelExecutorGroup:
    """One executor per device of `ctx`, each bound for its slice of the batch (`slices`),
    with gradients for `param_names`; with `shared_group`, each reads that group's parameter
    and auxiliary arrays (and its data buffers where large enough).

    `param_arrays` / `grad_arrays` / `aux_arrays`: per parameter (auxiliary state) the list of
    the devices' arrays; `data_arrays` / `label_arrays`: per input the (slice, array) pairs
    `_load_data` fills."""

    def __init__(self, sym, arg_names, param_names, ctx, slices, train_data,
                 shared_group=None):
        _check_arguments(sym)
        self.shared_data_arrays = ([{} for _ in ctx] if shared_group is None
                                   else shared_group.shared_data_arrays)
        self.data_names = [d[0] for d in train_data.provide_data]
        self.label_names = [d[0] for d in train_data.provide_label]
        self.aux_names = sym.list_auxiliary_states()
        self.param_idx = [i for i, name in enumerate(arg_names) if name in param_names]
        self.param_names = [arg_names[i] for i in self.param_idx]
        self.slices = slices
        self.train_execs = []
        for k, device in enumerate(ctx):
            shapes, types = {}, {}
            for desc in list(train_data.provide_data) + list(train_data.provide_label):
                name, shape = desc[0], desc[1]
                shapes[name] = (slices[k].stop - slices[k].start,) + tuple(shape[1:])
                types[name] = getattr(desc, "dtype", "float32")
            base = None if shared_group is None else shared_group.train_execs[k]
            self.train_execs.append(_bind_exec(
                sym, device, shapes, self.param_names, need_grad=True, base_exec=base,
                shared_data_arrays=self.shared_data_arrays[k], input_types=types))
        execs = self.train_execs
        self.data_arrays = [[(slices[k], e.arg_dict[name]) for k, e in enumerate(execs)]
                            for name in self.data_names]
        self.label_arrays = [[(slices[k], e.arg_dict[name]) for k, e in enumerate(execs)]
                             for name in self.label_names]
        self.param_arrays = [[e.arg_arrays[i] for e in execs] for i in self.param_idx]
        self.grad_arrays = [[e.grad_arrays[i] for e in execs] for i in self.param_idx]
        self.aux_arrays = [[e.aux_arrays[i] for e in execs] for i in range(len(self.aux_names))]

    def load_data_batch(self, data_batch) -> None:
        """Copy the batch's data and labels into the devices' slices."""
        _load_data(data_batch, self.data_arrays)
        _load_label(data_batch, self.label_arrays)

    def forward(self, is_train=False) -> None:
        for executor in self.train_execs:
            executor.forward(is_train=is_train)

    def backward(self) -> None:
        for executor in self.train_execs:
            executor.backward()

    def update_metric(self, metric, labels, pre_sliced=False) -> None:
        """Update `metric` with each device's outputs against its share of `labels` (or, with
        `pre_sliced`, against labels[k] for device k)."""
        for k, (executor, islice) in enumerate(zip(self.train_execs, self.slices)):
            share = labels[k] if pre_sliced else [label[islice] for label in labels]
            metric.update(share, executor.outputs)


class DataParallelExecutorManager:
    """The old training loop's executors: `symbol` bound on every device of `ctx` for its
    share of `train_data`'s batch (split by `work_load_list`), or with `sym_gen` one group per
    bucket key, made when a batch of that key first loads. `load_data_batch`, `forward`,
    `backward` and `update_metric` act on the group of the batch last loaded."""

    def __init__(self, symbol, ctx, train_data, arg_names, param_names, aux_names,
                 work_load_list=None, logger=None, sym_gen=None):
        logger = logger or logging
        logger.info("Start training with %s", str(ctx))
        if work_load_list is None:
            work_load_list = [1] * len(ctx)
        if not isinstance(work_load_list, list) or len(work_load_list) != len(ctx):
            raise MXNetError("work_load_list must be a list with one number per device "
                             "(%d), got %r" % (len(ctx), work_load_list))
        self.slices = _split_input_slice(train_data.batch_size, work_load_list)
        self.arg_names = arg_names
        self.param_names = param_names
        self.aux_names = aux_names
        self.ctx = ctx
        self.symbol = symbol
        self.sym_gen = sym_gen
        self.execgrp = DataParallelExecutorGroup(symbol, arg_names, param_names, ctx,
                                                 self.slices, train_data)
        self.curr_execgrp = None  # the group of the batch last loaded
        if sym_gen is not None:
            self.execgrp_bucket = {train_data.default_bucket_key: self.execgrp}

    def install_monitor(self, monitor) -> None:
        if self.sym_gen is not None:
            raise NotImplementedError("DataParallelExecutorManager: a monitor cannot watch "
                                      "the executors of every bucket; use BucketingModule")
        for executor in self.execgrp.train_execs:
            monitor.install(executor)

    def set_params(self, arg_params, aux_params) -> None:
        """Copy the values of `arg_params` / `aux_params` (name -> NDArray) to every device."""
        for executor in self.execgrp.train_execs:
            executor.copy_params_from(arg_params, aux_params)

    def copy_to(self, arg_params, aux_params) -> None:
        """Write the devices' mean of each parameter and auxiliary state into the arrays of
        `arg_params` / `aux_params` (name -> NDArray), in their dtypes."""
        for names, blocks, out in ((self.param_names, self.param_arrays, arg_params),
                                   (self.aux_names, self.aux_arrays, aux_params)):
            for name, block in zip(names, blocks):
                mean = sum(w.copyto(cpu()) for w in block) / len(block)
                mean.astype(out[name].dtype).copyto(out[name])

    @property
    def param_arrays(self):
        return self.execgrp.param_arrays

    @property
    def grad_arrays(self):
        return self.execgrp.grad_arrays

    @property
    def aux_arrays(self):
        return self.execgrp.aux_arrays

    def load_data_batch(self, data_batch) -> None:
        """Select (with sym_gen: make, on a new bucket key) the batch's group and load it."""
        if self.sym_gen is None:
            self.curr_execgrp = self.execgrp
        else:
            key = data_batch.bucket_key
            if key not in self.execgrp_bucket:
                self.execgrp_bucket[key] = DataParallelExecutorGroup(
                    self.sym_gen(key), self.arg_names, self.param_names, self.ctx,
                    self.slices, data_batch, shared_group=self.execgrp)
            self.curr_execgrp = self.execgrp_bucket[key]
        self.curr_execgrp.load_data_batch(data_batch)

    def _current(self) -> DataParallelExecutorGroup:
        if self.curr_execgrp is None:
            raise MXNetError("DataParallelExecutorManager: call load_data_batch first")
        return self.curr_execgrp

    def forward(self, is_train=False) -> None:
        self._current().forward(is_train=is_train)

    def backward(self) -> None:
        self._current().backward()

    def update_metric(self, metric, labels, pre_sliced=False) -> None:
        self._current().update_metric(metric, labels, pre_sliced)
