"""Data parallelism: one Executor per device, each fed a slice of every batch.

`DataParallelExecutorGroup` keeps MXNet's contract, which user subclasses of Module reach into:
`param_arrays[i][k]` / `grad_arrays[i][k]` are parameter i on device k (the executors' own
arrays), `aux_arrays` likewise, `data_arrays[j][k]` is `(slice, array)` for input j on device k,
`slices[k]` the share of the batch device k gets (`split_batch`), `get_params` averages the
devices' copies. CPU contexts `cpu(0)`, `cpu(1)` ... are separate devices with separate arrays,
so every multi-device path runs on a CPU-only machine.
"""
from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Optional, Sequence

import numpy as np

from .. import backend
from ..base import MXNetError, ShapeError
from ..ndarray import ndarray as nd
from ..ndarray.ndarray import NDArray
from .batches import DeviceBatch, _as_nd, _load_general, split_batch

__all__ = ["DataParallelExecutorGroup", "_merge_multi_context", "_prepare_group2ctxs"]


def _prepare_group2ctxs(group2ctxs, ctx_len: int) -> list:
    """group2ctxs as a list (one per device) of {group: context} dicts or None."""
    if group2ctxs is None:
        return [None] * ctx_len
    if isinstance(group2ctxs, list):
        if len(group2ctxs) != ctx_len:
            raise ValueError("length of group2ctxs should be %d" % ctx_len)
        return group2ctxs
    if isinstance(group2ctxs, dict):
        per_device = [{} for _ in range(ctx_len)]
        for group, ctxs in group2ctxs.items():
            ctxs = ctxs if isinstance(ctxs, (list, tuple)) else [ctxs]
            if len(ctxs) not in (1, ctx_len):
                raise ValueError("length of group2ctxs[%s] should be %d or 1" % (group, ctx_len))
            for k in range(ctx_len):
                per_device[k][group] = ctxs[k if len(ctxs) > 1 else 0]
        return per_device
    raise ValueError("group2ctxs should be a list of dicts or a dict")


def _merge_multi_context(outputs: list, major_axis: Sequence[int]) -> list:
    """Per output, the per-device arrays joined along the batch axis (one device: as is)."""
    merged = []
    for tensors, axis in zip(outputs, major_axis):
        if len(tensors) == 1:
            merged.append(tensors[0])
        elif axis >= 0:
            ctx = tensors[0].context  # joined on the first device, as MXNet
            with backend.device_scope(ctx):
                merged.append(nd.NDArray(
                    backend.xp_for(ctx).concatenate(
                        [backend.to_context(t._data, ctx) for t in tensors], axis=axis), ctx))
        else:
            merged.append(tensors[0])
    return merged


def _devices(contexts, workload) -> tuple:
    """(the contexts as a list, the work load of each)."""
    contexts = list(contexts) if isinstance(contexts, (list, tuple)) else [contexts]
    workload = list(workload) if workload is not None else [1] * len(contexts)
    if len(workload) != len(contexts):
        raise ValueError("work_load_list has %d entries for %d contexts"
                         % (len(workload), len(contexts)))
    return contexts, workload


def _batch_axis(layout) -> int:
    from ..io import DataDesc
    return DataDesc.get_batch_axis(layout)


class DataParallelExecutorGroup:
    """Executors of one symbol on several devices, with MXNet's attribute layout."""

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names,
                 for_training, inputs_need_grad, shared_group=None, logger=logging,
                 fixed_param_names=None, grad_req="write", state_names=None, group2ctxs=None):
        self.param_names = list(param_names)
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.symbol = symbol
        self.contexts, self.workload = _devices(contexts, workload)
        self.group2ctxs = _prepare_group2ctxs(group2ctxs, len(self.contexts))
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self.fixed_param_names = list(fixed_param_names or [])
        self.state_names = list(state_names or [])
        self.execs: list = []
        self._default_execs = None
        # what bind_exec fills in: MXNet's per-device array lists, shapes, names and slices
        self.data_arrays = self.label_arrays = self.param_arrays = self.state_arrays = None
        self.grad_arrays = self.aux_arrays = self.input_grad_arrays = None
        self.data_shapes = self.label_shapes = self.data_names = self.label_names = None
        self.data_layouts = self.label_layouts = self.batch_size = self.slices = None
        self._total_exec_bytes = 0
        # the input buffers bucketing executors share, one dict per device
        self.shared_data_arrays = (shared_group.shared_data_arrays if shared_group is not None
                                   else [{} for _ in self.contexts])
        self.output_names = self.symbol.list_outputs()
        self.num_outputs = len(self.output_names)
        self.output_layouts = [_batch_axis(self.symbol[i].attr("__layout__"))
                               for i in range(self.num_outputs)]
        self.grad_req = self._normalize_grad_req(grad_req, data_shapes)
        self.bind_exec(data_shapes, label_shapes, shared_group)

    def _normalize_grad_req(self, grad_req, data_shapes) -> dict:
        data_names = [d[0] for d in data_shapes]
        if not self.for_training:
            return {k: "null" for k in self.arg_names}

        def default(req: str) -> dict:
            reqs = {}
            for name in self.arg_names:
                if name in self.param_names:
                    reqs[name] = "null" if name in self.fixed_param_names else req
                elif name in data_names:
                    reqs[name] = req if self.inputs_need_grad else "null"
                else:
                    reqs[name] = "null"
            return reqs
        if isinstance(grad_req, str):
            return default(grad_req)
        if isinstance(grad_req, (list, tuple)):
            if len(grad_req) != len(self.arg_names):
                raise ValueError("grad_req list has %d entries for %d arguments"
                                 % (len(grad_req), len(self.arg_names)))
            return dict(zip(self.arg_names, grad_req))
        if isinstance(grad_req, dict):
            reqs = default("write")
            reqs.update(grad_req)
            return reqs
        raise ValueError("grad_req must be one of str, list, tuple, or dict.")

    # ------------------------------------------------------------------ binding
    def decide_slices(self, data_shapes) -> list:
        """Batch axes of the inputs; sets batch_size and slices from the first batched input."""
        major_axis = [_batch_axis(getattr(d, "layout", None)) for d in data_shapes]
        for desc, axis in zip(data_shapes, major_axis):
            if axis == -1:
                continue
            batch_size = desc[1][axis]
            if self.batch_size is None:
                self.batch_size = batch_size
                self.slices = split_batch(batch_size, self.workload)
            elif batch_size != self.batch_size:
                raise ShapeError("all data must have the same batch size: batch_size = %d, "
                                 "but %s has shape %s" % (self.batch_size, desc[0], desc[1]))
        return major_axis

    def _sliced_shape(self, shapes, i: int, major_axis) -> list:
        from ..io import DataDesc
        sliced = []
        for desc, axis in zip(shapes, major_axis):
            shape = list(desc[1])
            if axis >= 0:
                shape[axis] = self.slices[i].stop - self.slices[i].start
            sliced.append(DataDesc(desc[0], tuple(shape), getattr(desc, "dtype", np.float32),
                                   getattr(desc, "layout", "NCHW")))
        return sliced

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape: bool = False):
        """Bind (or, with reshape=True, re-shape) one executor per device."""
        if not reshape and self.execs:
            raise MXNetError("executors are already bound; use reshape")
        self.batch_size = None
        self.data_layouts = self.decide_slices(data_shapes)
        if label_shapes is not None:
            self.label_layouts = self.decide_slices(label_shapes)
        for i in range(len(self.contexts)):
            data_i = self._sliced_shape(data_shapes, i, self.data_layouts)
            label_i = (self._sliced_shape(label_shapes, i, self.label_layouts)
                       if label_shapes is not None else [])
            if reshape:
                shapes = {d.name: d.shape for d in data_i + label_i}
                shapes.update(self._implied_label_shapes(shapes))
                self.execs[i] = self._default_execs[i].reshape(allow_up_sizing=True, **shapes)
            else:
                self.execs.append(self._bind_ith_exec(i, data_i, label_i or None, shared_group))
        self.data_shapes = data_shapes
        self.label_shapes = label_shapes
        self.data_names = [d[0] for d in data_shapes]
        if label_shapes is not None:
            self.label_names = [d[0] for d in label_shapes]
        self._collect_arrays()

    def _implied_label_shapes(self, shapes: dict) -> dict:
        """Shapes of bound inputs (labels, states) not given, deduced from the given ones.

        This is what lets `forward` take a batch of a new size without labels (MXNet fails
        there with "Shape of unspecified arg ... changed").
        """
        arg_shapes, _, _ = self.symbol.infer_shape_partial(**shapes)
        implied = {}
        for name, shape in zip(self.arg_names, arg_shapes):
            if name in shapes or name in self.param_names or not shape or 0 in shape:
                continue
            implied[name] = tuple(shape)
        return implied

    def _bind_ith_exec(self, i: int, data_shapes, label_shapes, shared_group):
        """simple_bind on device i, sharing parameters and buffers with shared_group's exec."""
        shared_exec = None if shared_group is None else shared_group.execs[i]
        inputs = list(data_shapes) + list(label_shapes or [])
        input_shapes = {d.name: d.shape for d in inputs}
        input_types = {d.name: d.dtype for d in inputs}
        executor = self.symbol.simple_bind(
            ctx=self.contexts[i], grad_req=self.grad_req, type_dict=input_types,
            shared_arg_names=self.param_names, shared_exec=shared_exec,
            group2ctx=self.group2ctxs[i], shared_buffer=self.shared_data_arrays[i],
            **input_shapes)
        # MXNet sums each executor's "Total N MB allocated": the planned bytes, in whole MB
        self._total_exec_bytes += executor._plan.memory.planned_bytes >> 20
        return executor

    def _collect_arrays(self) -> None:
        self.data_arrays = [[(self.slices[i], e.arg_dict[name]) for i, e in enumerate(self.execs)]
                            for name, _ in self.data_shapes]
        self.state_arrays = [[e.arg_dict[name] for e in self.execs] for name in self.state_names]
        if self.label_shapes is not None:
            self.label_arrays = [[(self.slices[i], e.arg_dict[name])
                                  for i, e in enumerate(self.execs)]
                                 for name, _ in self.label_shapes]
        else:
            self.label_arrays = None
        param_idx = [i for i, name in enumerate(self.arg_names) if name in self.param_names]
        self.param_arrays = [[e.arg_arrays[i] for e in self.execs] for i in param_idx]
        if self.for_training:
            self.grad_arrays = [[e.grad_arrays[i] for e in self.execs] for i in param_idx]
        else:
            self.grad_arrays = None
        if self.inputs_need_grad:
            self.input_grad_arrays = [[e.grad_arrays[self.arg_names.index(name)]
                                       for e in self.execs]
                                      for name in self.data_names if name in self.arg_names]
        else:
            self.input_grad_arrays = None
        self.aux_arrays = [[e.aux_arrays[i] for e in self.execs]
                           for i in range(len(self.aux_names))]

    def reshape(self, data_shapes, label_shapes) -> None:
        """Re-shape the executors for new input shapes (a no-op when they are unchanged)."""
        if data_shapes == self.data_shapes and label_shapes == self.label_shapes:
            return
        if self._default_execs is None:
            self._default_execs = list(self.execs)
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    # ------------------------------------------------------------------ parameters
    def set_params(self, arg_params, aux_params, allow_extra: bool = False) -> None:
        for exe in self.execs:
            exe.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params: dict, aux_params: dict) -> None:
        """Average every parameter and aux state over the devices into the given dicts."""
        for name, block in zip(self.param_names, self.param_arrays):
            _average_into(block, arg_params[name])
        for name, block in zip(self.aux_names, self.aux_arrays):
            _average_into(block, aux_params[name])

    # ------------------------------------------------------------------ running
    def forward(self, data_batch, is_train: Optional[bool] = None) -> None:
        self._load(data_batch)
        if is_train is None:
            is_train = self.for_training
        for exe in self.execs:
            exe.forward(is_train=is_train)

    def forward_backward(self, data_batch) -> None:
        """forward(data_batch, is_train=True) then backward(): the training step, one run
        over each executor's steps (`Executor.forward_backward`)."""
        if not self.for_training:
            raise MXNetError("re-bind with for_training=True to run backward")
        self._load(data_batch)
        for exe in self.execs:
            exe.forward_backward()

    def _load(self, data_batch) -> None:
        """Copy the batch's data, and its labels when it has them, into the executors."""
        batch = DeviceBatch.of(data_batch)
        _load_general(batch.sources("data"), self.data_arrays, self.data_layouts)
        if self.label_arrays is not None and batch.first.label:
            _load_general(batch.sources("label"), self.label_arrays, self.label_layouts)

    def get_output_shapes(self) -> list:
        shapes = []
        for name, out, axis in zip(self.symbol.list_outputs(), self.execs[0].outputs,
                                   self.output_layouts):
            shape = list(out.shape)
            if axis >= 0:
                shape[axis] = self.batch_size
            shapes.append((name, tuple(shape)))
        return shapes

    def get_outputs(self, merge_multi_context: bool = True, begin: int = 0,
                    end: Optional[int] = None) -> list:
        end = self.num_outputs if end is None else end
        outputs = [[exe.outputs[i] for exe in self.execs] for i in range(begin, end)]
        if merge_multi_context:
            outputs = _merge_multi_context(outputs, self.output_layouts[begin:end])
        return outputs

    def get_states(self, merge_multi_context: bool = True) -> list:
        if merge_multi_context:
            raise MXNetError("merge_multi_context=True is not supported for get_states")
        return self.state_arrays

    def set_states(self, states=None, value=None) -> None:
        if states is not None:
            if value is not None:
                raise ValueError("Only one of states & value can be specified.")
            _load_general(states, self.state_arrays, (0,) * len(states))
        else:
            if value is None:
                raise ValueError("At least one of states & value must be specified.")
            for block in self.state_arrays:
                for arr in block:
                    arr[:] = value

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        if not self.inputs_need_grad:
            raise MXNetError("bind with inputs_need_grad=True to get input gradients")
        if merge_multi_context:
            return _merge_multi_context(self.input_grad_arrays, self.data_layouts)
        return self.input_grad_arrays

    def backward(self, out_grads=None) -> None:
        if not self.for_training:
            raise MXNetError("re-bind with for_training=True to run backward")
        out_grads = [] if out_grads is None else (
            out_grads if isinstance(out_grads, (list, tuple)) else [out_grads])
        for i, (exe, islice) in enumerate(zip(self.execs, self.slices)):
            sliced = []
            for grad, axis in zip(out_grads, self.output_layouts):
                grad = _as_nd(grad)
                data = grad._data
                if axis >= 0:
                    index = [slice(None)] * data.ndim
                    index[axis] = islice
                    data = data[tuple(index)]
                sliced.append(NDArray(backend.to_context(data, self.contexts[i]),
                                      self.contexts[i]))
            exe.backward(out_grads=sliced or None)

    def update_metric(self, eval_metric, labels, pre_sliced: bool = False) -> None:
        """Update the metric on every device's outputs with that device's share of the labels."""
        layouts = self.label_layouts or [0] * len(labels)
        for k, (exe, islice) in enumerate(zip(self.execs, self.slices)):
            if pre_sliced:
                labels_slice = labels[k]
            else:
                labels_slice = []
                for label, axis in zip(labels, layouts):
                    label = _as_nd(label)
                    if axis >= 0 and len(self.execs) > 1:
                        index = [slice(None)] * label.ndim
                        index[axis] = islice
                        labels_slice.append(NDArray(label._data[tuple(index)], label.context))
                    else:
                        labels_slice.append(label)
            eval_metric.update_dict(OrderedDict(zip(self.label_names or [], labels_slice)),
                                    OrderedDict(zip(self.output_names, exe.outputs)))

    def install_monitor(self, mon) -> None:
        for exe in self.execs:
            mon.install(exe)


def _average_into(block: Sequence[NDArray], dst: NDArray) -> None:
    """dst = the mean of the devices' copies (summed on the CPU, in device order)."""
    if len(block) == 1:  # one device: a straight copy, with no temporary to fault in
        backend.copy_into(dst._data, block[0]._data)
        return
    total = np.array(backend.asnumpy(block[0]._data), copy=True)
    for arr in block[1:]:
        total += backend.asnumpy(arr._data)
    if len(block) > 1:
        total /= len(block)
    backend.copy_into(dst._data, total.astype(dst._data.dtype, copy=False))

