"""`Module`: one symbol, bound over one or more devices, trained with an optimizer.

The private fields (`_exec_group`, `_arg_params`, `_kvstore`, `_updater` ...) keep MXNet's names
and meaning because user subclasses and BucketingModule reach into them; they are all created in
`__init__` and documented in reference section 3.1.

Differences from MXNet, all in the user's favour:
- `forward` takes a batch of any size, with or without labels (MXNet fails on a batch without
  labels once bound with them), and explains a batch whose shape the network cannot take.
- Optimizer states are saved keyed by parameter name, in minimod's pickle-free format, with the
  update counters, so resuming continues exactly (Adam included) and survives a change in the
  number of devices or kvstore mode. MXNet's pickled `.states` load through a restricted
  unpickler.
- Errors for calls out of order are MXNetErrors that say what to call first.
"""
from __future__ import annotations

import logging
import operator
import os
import warnings

from .. import context as ctx
from .. import flat
from .. import ndarray as nd
from .. import optimizer as opt
from ..base import MissingParamError, MXNetError, ShapeError, atomic_write
from ..checkpoint import load_checkpoint, params_file, states_file, symbol_file
from ..executor.batches import DeviceBatch
from ..executor.group import DataParallelExecutorGroup
from ..initializer import InitDesc, Uniform
from ..io import DataDesc
from .base_module import BaseModule, _call_accepting, _check_input_names, _parse_data_desc, _require
from .sparse_grads import declared_stypes, lazy_row_sources, param_array, update_lazily
from .updates import (
    _create_kvstore,
    _initialize_kvstore,
    _update_params,
    _update_params_on_kvstore,
)

__all__ = ["Module"]


_shape_of = operator.attrgetter("shape")


class Module(BaseModule):
    """A module over one Symbol (see the module docstring)."""

    #: whether the class runs Module's own get/set/init_params (a subclass may override any):
    #: only then may fit skip copying the parameters back at the end of an epoch
    _own_param_methods = True
    #: whether the class runs Module's own forward and backward: only then may
    #: forward_backward run the group's one-list training step instead of calling them
    _own_forward_backward = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # decided once per class, when it is defined, not at every call
        cls._own_param_methods = all(getattr(cls, m) is getattr(Module, m)
                                     for m in ("get_params", "set_params", "init_params"))
        cls._own_forward_backward = (cls.forward is Module.forward
                                     and cls.backward is Module.backward)

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",),
                 logger=logging, context=ctx.cpu(), work_load_list=None,
                 fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None):
        super().__init__(logger=logger)
        if isinstance(context, ctx.Context):
            context = [context]
        self._context = list(context)
        if work_load_list is None:
            work_load_list = [1] * len(self._context)
        if len(work_load_list) != len(self._context):
            raise ValueError("work_load_list has %d entries for %d contexts"
                             % (len(work_load_list), len(self._context)))
        self._work_load_list = list(work_load_list)
        self._group2ctxs = group2ctxs
        self._symbol = symbol
        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        _check_input_names(symbol, data_names, "data", True)
        _check_input_names(symbol, label_names, "label", False)
        _check_input_names(symbol, state_names, "state", True)
        _check_input_names(symbol, fixed_param_names, "fixed_param", True)
        arg_names = symbol.list_arguments()
        input_names = data_names + label_names + state_names
        self._param_names = [x for x in arg_names if x not in input_names]
        self._fixed_param_names = fixed_param_names
        self._aux_names = symbol.list_auxiliary_states()
        self._data_names = data_names
        self._label_names = label_names
        self._state_names = state_names
        self._output_names = symbol.list_outputs()
        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._compression_params = compression_params
        self._optimizer = None
        self._kvstore = None
        self._update_on_kvstore = None
        self._updater = None
        self._update_plan = flat.NO_PLAN  # the fast update's plan of the bound executors
        #: weights MXNet updates lazily (row-sparse gradients): `sparse_grads.lazy_row_sources`
        self._lazy_sources: dict = {}
        self._preload_opt_states = None
        self._grad_req = None
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A Module (not bound) with the symbol and parameters of checkpoint prefix/epoch."""
        sym, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = states_file(prefix, epoch)
            if not os.path.exists(mod._preload_opt_states):
                raise MXNetError("optimizer states %s not found (was the checkpoint saved with "
                                 "save_optimizer_states=True?)" % mod._preload_opt_states)
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False, remove_amp_cast=True):
        """Write prefix-symbol.json, prefix-%04d.params and optionally prefix-%04d.states."""
        self._symbol.save(symbol_file(prefix), remove_amp_cast=remove_amp_cast)
        param_name = params_file(prefix, epoch)
        self.save_params(param_name)
        logging.info('Saved checkpoint to "%s"', param_name)
        if save_optimizer_states:
            state_name = states_file(prefix, epoch)
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to "%s"', state_name)

    def _reset_bind(self):
        self.binded = False
        self._exec_group = None
        self._update_plan = flat.NO_PLAN
        self._data_shapes = None
        self._label_shapes = None

    # ------------------------------------------------------------------ properties
    @property
    def data_names(self):
        return self._data_names

    @property
    def label_names(self):
        return self._label_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        _require(self.binded, "data_shapes: the module is not bound")
        return self._data_shapes

    @property
    def label_shapes(self):
        _require(self.binded, "label_shapes: the module is not bound")
        return self._label_shapes

    @property
    def output_shapes(self):
        _require(self.binded, "output_shapes: the module is not bound")
        return self._exec_group.get_output_shapes()

    # ------------------------------------------------------------------ parameters
    def get_params(self):
        _require(self.params_initialized, "get_params: call init_params (or set_params) first")
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "init_params call ignored.", stacklevel=2)
            return
        _require(self.binded, "call bind before initializing the parameters")
        if not allow_missing:
            for cache, own in ((arg_params, self._arg_params), (aux_params, self._aux_params)):
                if cache is None:
                    continue
                missing = sorted(name for name in own if name not in cache)
                if missing:
                    raise MissingParamError(
                        "%s is not presented (parameters missing from the given params: %s; "
                        "pass allow_missing=True to initialize them instead)"
                        % (missing[0], ", ".join(missing)))

        def _impl(name, arr, cache):
            if cache is not None:
                if name in cache:
                    cache_arr = cache[name]
                    if cache_arr is not arr:
                        if tuple(cache_arr.shape) != tuple(arr.shape):
                            raise ShapeError("parameter '%s' is %s in the given params but the "
                                             "symbol needs %s" % (name, tuple(cache_arr.shape),
                                                                   tuple(arr.shape)))
                        cache_arr.copyto(arr)
                    return
                if not allow_missing:
                    raise MissingParamError("%s is not presented" % name)
            if initializer is not None:
                initializer(name, arr)

        attrs = self._symbol.attr_dict()
        for name, arr in sorted(self._arg_params.items()):
            _impl(InitDesc(name, attrs.get(name, None)), arr, arg_params)
        for name, arr in sorted(self._aux_params.items()):
            _impl(InitDesc(name, attrs.get(name, None)), arr, aux_params)
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        if not allow_missing:
            # an older subclass's init_params may not take allow_extra (pain point #6)
            _call_accepting(self.init_params, initializer=None, arg_params=arg_params,
                            aux_params=aux_params, allow_missing=allow_missing,
                            force_init=force_init, allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "set_params call ignored.", stacklevel=2)
            return
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def _fit_epoch_end_params(self):
        # On one device, right after get_params copied the executor's parameters into
        # _arg_params/_aux_params, setting them back would copy every value onto itself: skip
        # that copy (a few hundred us an epoch for a small MLP). Only when this class's own
        # get/set/init_params run, so a subclass that overrides them still sees both calls.
        if self._own_param_methods and self._params_dirty and len(self._exec_group.execs) == 1:
            return self.get_params()
        return super()._fit_epoch_end_params()

    def _sync_params_from_devices(self):
        self._exec_group.get_params(self._arg_params, self._aux_params)
        self._params_dirty = False

    # ------------------------------------------------------------------ binding
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        if not for_training and inputs_need_grad:
            raise MXNetError("inputs_need_grad=True needs for_training=True")
        # an inference bind without labels is normal: don't warn about label names then
        label_names = self.label_names if (for_training or label_shapes) else []
        self._data_shapes, self._label_shapes = _parse_data_desc(
            self.data_names, label_names, data_shapes, label_shapes)
        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, self._data_shapes,
            self._label_shapes, self._param_names, for_training, inputs_need_grad,
            self._shared_group(shared_module), logger=self.logger,
            fixed_param_names=self._fixed_param_names, grad_req=grad_req,
            group2ctxs=self._group2ctxs, state_names=self._state_names)
        self._total_exec_bytes = self._exec_group._total_exec_bytes
        self._adopt_params(shared_module)
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)
        self.binded = True

    def _shared_group(self, shared_module):
        """The executor group of `shared_module` whose memory the new executors share, after
        checking it can lend it; None without one."""
        if shared_module is None:
            return None
        if not (isinstance(shared_module, Module) and shared_module.binded
                and shared_module.params_initialized):
            raise MXNetError("shared_module must be a bound Module with initialized parameters")
        if len(shared_module._exec_group.execs) < len(self._context):
            raise MXNetError("shared_module is bound on fewer devices than this module")
        return shared_module._exec_group

    def _adopt_params(self, shared_module) -> None:
        """The parameters a fresh bind starts from: the shared module's, the ones this module
        already had (pushed to the new executors), or new host arrays shaped by the bind."""
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            self._exec_group.set_params(self._arg_params, self._aux_params)
        else:
            stypes = declared_stypes(self._symbol)
            self._arg_params = {
                name: param_array(block[0].shape, block[0].dtype, stypes.get(name, "default"))
                for name, block in zip(self._param_names, self._exec_group.param_arrays)}
            self._aux_params = {
                name: nd.zeros(block[0].shape, dtype=block[0].dtype)
                for name, block in zip(self._aux_names, self._exec_group.aux_arrays)}

    def reshape(self, data_shapes, label_shapes=None):
        _require(self.binded, "reshape: call bind first")
        label_names = self.label_names if label_shapes is not None else []
        self._data_shapes, self._label_shapes = _parse_data_desc(
            self.data_names, label_names, data_shapes, label_shapes)
        self._exec_group.reshape(self._data_shapes, self._label_shapes)

    # ------------------------------------------------------------------ optimizer
    def _idx2name(self, update_on_kvstore: bool) -> dict:
        names = self._exec_group.param_names
        if update_on_kvstore:
            return dict(enumerate(names))
        n = len(self._context)
        return {i * n + k: name for k in range(n) for i, name in enumerate(names)}

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        _require(self.binded and self.params_initialized,
                 "init_optimizer: call bind and init_params first")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        kvstore, update_on_kvstore = _create_kvstore(kvstore, len(self._context),
                                                     self._arg_params)
        batch_size = self._exec_group.batch_size
        if kvstore and "dist" in kvstore.type and "_sync" in kvstore.type:
            batch_size *= kvstore.num_workers
        optimizer = self._make_optimizer(optimizer, optimizer_params, 1.0 / batch_size,
                                         self._idx2name(update_on_kvstore))
        self._lazy_sources = lazy_row_sources(self.symbol, optimizer, kvstore,
                                              update_on_kvstore)
        self._optimizer = optimizer
        self._kvstore = kvstore
        self._update_on_kvstore = update_on_kvstore
        self._updater = None
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            _initialize_kvstore(kvstore=kvstore, param_arrays=self._exec_group.param_arrays,
                                arg_params=self._arg_params, param_names=self._param_names,
                                update_on_kvstore=update_on_kvstore)
            if getattr(kvstore, "num_workers", 1) > 1:
                self._params_dirty = True  # the devices now hold rank 0's values
        if not update_on_kvstore:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def _make_optimizer(self, optimizer, optimizer_params, rescale_grad: float,
                        idx2name: dict):
        """An optimizer made from a name (gradients rescaled by 1 / batch size unless the
        parameters say otherwise), or the given instance, warned about if its rescale_grad
        is not that (MXNet's warning) and given the index-to-name map it lacks."""
        if isinstance(optimizer, str):
            optimizer_params = dict(optimizer_params)
            optimizer_params.setdefault("rescale_grad", rescale_grad)
            return opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name,
                              **optimizer_params)
        if not isinstance(optimizer, opt.Optimizer):
            raise TypeError("optimizer must be a name or an Optimizer, not %r" % (optimizer,))
        if optimizer.rescale_grad != rescale_grad:
            warnings.warn(
                "Optimizer created manually outside Module but rescale_grad is not "
                "normalized to 1.0/batch_size/num_workers (%s vs. %s). Is this intended?"
                % (optimizer.rescale_grad, rescale_grad), stacklevel=3)
        if not optimizer.idx2name:
            optimizer.idx2name = idx2name.copy()
        return optimizer

    def borrow_optimizer(self, shared_module):
        _require(shared_module.optimizer_initialized,
                 "borrow_optimizer: the shared module has no optimizer yet")
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self._lazy_sources = lazy_row_sources(self.symbol, self._optimizer, self._kvstore,
                                              self._update_on_kvstore)
        self.optimizer_initialized = True

    # ------------------------------------------------------------------ computation
    def forward(self, data_batch, is_train=None):
        """Forward; a batch whose shapes differ from the bound ones re-shapes the executors."""
        _require(self.binded and self.params_initialized,
                 "forward: call bind and init_params first")
        batch = DeviceBatch.of(data_batch)
        self._fit_batch(batch)
        self._exec_group.forward(batch, is_train)

    def forward_backward(self, data_batch) -> None:
        """forward(is_train=True) then backward(), run as one training step by the executor
        group. A subclass that overrides forward or backward has them called instead."""
        if not self._own_forward_backward:
            super().forward_backward(data_batch)
            return
        _require(self.binded and self.params_initialized,
                 "forward: call bind and init_params first")
        batch = DeviceBatch.of(data_batch)
        self._fit_batch(batch)
        self._exec_group.forward_backward(batch)

    def _fit_batch(self, batch: DeviceBatch) -> None:
        """Re-shape the executors when the batch's data shapes differ from the bound ones."""
        curr_data_shapes = list(map(_shape_of, self._data_shapes))
        new_data_shapes = batch.data_shapes()
        if curr_data_shapes == new_data_shapes:
            return
        new_dshape = batch.provided("provide_data") or [
            DataDesc(i.name, shape, i.dtype, i.layout)
            for i, shape in zip(self._data_shapes, new_data_shapes)]
        try:
            self.reshape(new_dshape, self._label_descs(batch))
        except MXNetError as err:
            raise ShapeError("forward: the batch has data shapes %s but the module is "
                             "bound for %s, and the network cannot take them: %s"
                             % (new_data_shapes, curr_data_shapes, err)) from None

    def _label_descs(self, batch: DeviceBatch):
        """The label descriptors for re-shaping to `batch`, or None (a batch without labels)."""
        provided = batch.provided("provide_label")
        if provided:
            return provided
        labels = getattr(batch.first, "label", None)
        if labels and self._label_shapes:
            return [DataDesc(i.name, j.shape, i.dtype, i.layout)
                    for i, j in zip(self._label_shapes, labels)]
        if labels and self._label_names:
            # the module was last reshaped without labels: take them back from the batch
            return [DataDesc(name, j.shape, j.dtype) for name, j in zip(self._label_names,
                                                                         labels)]
        return None

    def backward(self, out_grads=None):
        _require(self.binded and self.params_initialized,
                 "backward: call bind and init_params first")
        self._exec_group.backward(out_grads=out_grads)

    def update(self):
        """Apply the optimizer to the gradients of the last forward_backward.

        MXNet's two ways, on the kvstore or on the devices, unless the executors' flat
        parameter buffers allow the same update in a few vectorised passes (`minimod.flat`,
        tested equal to them bit for bit)."""
        _require(self.binded and self.params_initialized and self.optimizer_initialized,
                 "update: call init_optimizer before update")
        self._params_dirty = True
        group = self._exec_group
        if self._lazy_sources:  # MXNet's row-sparse updates (module/sparse_grads.py)
            update_lazily(group, self._updater, self._kvstore, self._update_on_kvstore,
                          self._lazy_sources)
            return
        if flat.update_params(self._flat_plan(), self._kvstore, self._updater,
                              self._update_on_kvstore):
            return
        if self._update_on_kvstore:
            _update_params_on_kvstore(group.param_arrays, group.grad_arrays, self._kvstore,
                                      group.param_names)
        else:
            _update_params(group.param_arrays, group.grad_arrays, updater=self._updater,
                           num_device=len(self._context), kvstore=self._kvstore,
                           param_names=group.param_names)

    def _flat_plan(self) -> flat.UpdatePlan:
        """The fast update's plan of the bound executors, made again after a bind or reshape
        (which give the group a new param_arrays list)."""
        plan = self._update_plan
        if plan.param_arrays is not self._exec_group.param_arrays:
            plan = self._update_plan = flat.plan_update(self._exec_group)
        return plan

    def get_outputs(self, merge_multi_context=True):
        _require(self.binded and self.params_initialized,
                 "get_outputs: call bind and init_params first")
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        _require(self.binded and self.params_initialized and self.inputs_need_grad,
                 "get_input_grads: bind with inputs_need_grad=True")
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        _require(self.binded and self.params_initialized, "get_states: call bind first")
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        _require(self.binded and self.params_initialized, "set_states: call bind first")
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    # ------------------------------------------------------------------ optimizer states
    def _state_updater_and_keys(self):
        """(updater, its key -> parameter name, its key -> device id of the updated copy)."""
        if self._update_on_kvstore:
            kv = self._kvstore
            keys = {name: name for name in self._param_names}
            devices = {name: kv.stored(name).context.device_id
                       for name in self._param_names if name in kv}
            return kv.updater, keys, devices
        keys = self._idx2name(False)
        n = len(self._context)
        devices = {key: self._context[key % n].device_id for key in keys}
        return self._updater, keys, devices

    def save_optimizer_states(self, fname):
        """Save optimizer states keyed by parameter name (pickle-free; see module docstring)."""
        _require(self.optimizer_initialized, "save_optimizer_states: call init_optimizer first")
        updater, idx2name, _ = self._state_updater_and_keys()
        atomic_write(fname, updater.dump_states_by_name(idx2name))

    def save_optimizer_states_mxnet(self, fname):
        """Save optimizer states as the pickle MXNet 1.9.1 reads: after
        `save_checkpoint(prefix, epoch)`, `mod.save_optimizer_states_mxnet(
        "%s-%04d.states" % (prefix, epoch))` makes a checkpoint that MXNet's
        `Module.load(prefix, epoch, load_optimizer_states=True)` resumes. The states are keyed
        as MXNet's Module keys them for the same devices and kvstore (parameter index times
        device count plus device; the parameter name when the kvstore updates); minimod reads
        this file too (through its restricted unpickler)."""
        _require(self.optimizer_initialized,
                 "save_optimizer_states_mxnet: call init_optimizer first")
        updater, _, _ = self._state_updater_and_keys()
        atomic_write(fname, updater.get_states_mxnet())

    def load_optimizer_states(self, fname):
        """Load states saved by minimod or MXNet (whose pickles are read safely)."""
        _require(self.optimizer_initialized, "load_optimizer_states: call init_optimizer first")
        updater, idx2name, devices = self._state_updater_and_keys()
        data = nd.serialization.read_file(fname, "optimizer states")
        with nd.serialization.naming_file(fname):
            updater.set_states_by_name(data, idx2name, saved_idx2name=self._idx2name(False),
                                       key_devices=devices)

    def install_monitor(self, mon):
        _require(self.binded, "install_monitor: call bind first")
        self._exec_group.install_monitor(mon)

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Get ready for `data_batch`. With the parameters updated on a kvstore,
        `sparse_row_id_fn(data_batch)` gives {parameter name: row ids} for the row_sparse
        parameters the batch reads, as in MXNet; minimod's update already brings every row of
        them back to the devices, so the answer is checked (a dict of this module's
        parameters; a warning for one not declared row_sparse), not pulled. Without updates on
        a kvstore the function is not called and a warning says so, as MXNet's does."""
        _require(self.binded, "prepare: call bind first")
        if sparse_row_id_fn is None:
            return
        if not (self._kvstore and self._update_on_kvstore):
            warnings.warn("prepare: sparse_row_id_fn is not called, the parameters are not "
                          "updated on a kvstore", UserWarning, stacklevel=2)
            return
        row_ids = sparse_row_id_fn(data_batch)
        if not isinstance(row_ids, dict):
            raise MXNetError("prepare: sparse_row_id_fn must return a dict of parameter name "
                             "-> row ids, got %s" % type(row_ids).__name__)
        stypes = declared_stypes(self._symbol)
        for name in row_ids:
            if name not in self._exec_group.param_names:
                raise MXNetError("prepare: sparse_row_id_fn names %r, which is not a parameter "
                                 "of this module (parameters: %s)"
                                 % (name, ", ".join(self._exec_group.param_names)))
            if stypes.get(name) != "row_sparse":
                warnings.warn("prepare: parameter %r is not row_sparse, so it needs no "
                              "row_sparse pull" % name, UserWarning, stacklevel=2)

