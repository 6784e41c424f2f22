"""`BucketingModule`: one Module per input length (bucket), all sharing one set of parameters.

`sym_gen(bucket_key) -> (symbol, data_names, label_names)` builds the network for a bucket;
it is always called inside a fresh `NameManager`, so every bucket gets the same auto-generated
names. The default bucket's Module is bound first and owns the parameters, gradients and
optimizer; every other bucket is bound with `shared_module=<default>` and borrows them.

Memory (MXNet pain point #1): MXNet reused the default bucket's buffers only when the default
was the largest bucket, and otherwise allocated again per bucket. Here every bucket's executor
draws on one memory pool per device, whose blocks grow to the largest plan seen and are then
reused by all buckets, and the data/label arrays come from one shared buffer per input that
also grows to the largest shape. So the memory held does not depend on which key is the
default. `memory_report()` gives the bytes held.
"""
from __future__ import annotations

import logging
import warnings

import numpy as np

from .. import context as ctx
from .. import ndarray as nd
from .. import symbol as sym
from ..base import MXNetError
from ..checkpoint import load_params, params_file
from ..initializer import Uniform
from ..symbol.naming import NameManager
from .base_module import BaseModule, _call_accepting, _check_input_names, _require
from .module import Module

__all__ = ["BucketingModule"]


class BucketingModule(BaseModule):
    """Modules for several input lengths sharing parameters (see the module docstring)."""

    def __init__(self, sym_gen, default_bucket_key=None, logger=logging, context=ctx.cpu(),
                 work_load_list=None, fixed_param_names=None, state_names=None,
                 group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise ValueError("BucketingModule needs a default_bucket_key")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        _check_input_names(symbol, data_names, "data", True)
        _check_input_names(symbol, label_names, "label", False)
        _check_input_names(symbol, state_names, "state", True)
        _check_input_names(symbol, fixed_param_names, "fixed_param", True)
        self._compression_params = compression_params
        self._fixed_param_names = fixed_param_names
        self._state_names = state_names
        self._context = context
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._buckets: dict = {}
        self._curr_module = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._monitor = None
        self._grad_req = None

    def _call_sym_gen(self, *args, **kwargs):
        with NameManager():
            return self._sym_gen(*args, **kwargs)

    def _new_module(self, symbol, data_names, label_names) -> Module:
        return Module(symbol, data_names, label_names, logger=self.logger,
                      context=self._context, work_load_list=self._work_load_list,
                      fixed_param_names=self._fixed_param_names,
                      state_names=self._state_names, group2ctxs=self._group2ctxs,
                      compression_params=self._compression_params)

    def _reset_bind(self):
        self.binded = False
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    # ------------------------------------------------------------------ properties
    @property
    def data_names(self):
        if self.binded:
            return self._curr_module.data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def output_names(self):
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self):
        _require(self.binded, "data_shapes: the module is not bound")
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        _require(self.binded, "label_shapes: the module is not bound")
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        _require(self.binded, "output_shapes: the module is not bound")
        return self._curr_module.output_shapes

    @property
    def symbol(self):
        _require(self.binded, "symbol: the module is not bound")
        return self._curr_module.symbol

    # ------------------------------------------------------------------ parameters
    def get_params(self):
        _require(self.params_initialized, "get_params: call init_params first")
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        if not allow_missing:
            _call_accepting(self.init_params, initializer=None, arg_params=arg_params,
                            aux_params=aux_params, allow_missing=allow_missing,
                            force_init=force_init, allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "set_params call ignored.", stacklevel=2)
            return
        self._curr_module.set_params(arg_params, aux_params, allow_missing=allow_missing,
                                     force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        if self.params_initialized and not force_init:
            return
        _require(self.binded, "call bind before initializing the parameters")
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params,
                                      aux_params=aux_params, allow_missing=allow_missing,
                                      force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    def get_states(self, merge_multi_context=True):
        _require(self.binded and self.params_initialized, "get_states: call bind first")
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        _require(self.binded and self.params_initialized, "set_states: call bind first")
        self._curr_module.set_states(states, value)

    # ------------------------------------------------------------------ binding
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Bind the default bucket; other buckets are bound when first seen."""
        if self.params_initialized:
            arg_params, aux_params = self.get_params()
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise MXNetError("shared_module for BucketingModule is not supported")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        symbol, data_names, label_names = self._call_sym_gen(self._default_bucket_key)
        module = self._buckets.get(self._default_bucket_key)
        if module is None:
            module = self._new_module(symbol, data_names, label_names)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                    force_rebind=False, shared_module=None, grad_req=self._grad_req)
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        self.binded = True
        if self.params_initialized:
            self.set_params(arg_params, aux_params)

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Make `bucket_key` current, binding its Module (sharing the default's) when new."""
        _require(self.binded, "call bind before switching bucket")
        default = self._buckets[self._default_bucket_key]
        module = self._buckets.get(bucket_key)
        if module is None:
            symbol, data_names, label_names = self._call_sym_gen(bucket_key)
            module = self._new_module(symbol, data_names, label_names)
            self._buckets[bucket_key] = module
        if not module.binded:
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=default, grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
            if default.optimizer_initialized and not module.optimizer_initialized:
                module.borrow_optimizer(default)
        self._curr_module = module
        self._curr_bucket_key = bucket_key

    # ------------------------------------------------------------------ optimizer
    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        _require(self.binded and self.params_initialized,
                 "init_optimizer: call bind and init_params first")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params,
                                         force_init=force_init)
        for mod in self._buckets.values():
            if mod is not self._curr_module and mod.binded:
                mod.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    # ------------------------------------------------------------------ computation
    def prepare(self, data_batch, sparse_row_id_fn=None):
        _require(self.binded and self.params_initialized, "prepare: call bind first")
        original = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original, None, None)

    def forward(self, data_batch, is_train=None):
        """Forward on the bucket named by `data_batch.bucket_key` (with its provide_data)."""
        _require(self.binded and self.params_initialized,
                 "forward: call bind and init_params first")
        for field in ("bucket_key", "provide_data"):
            if getattr(data_batch, field, None) is None:
                raise ValueError("BucketingModule.forward needs batches with %s (and "
                                 "provide_label when training)" % field)
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        _require(self.binded and self.params_initialized, "backward: call bind first")
        self._curr_module.backward(out_grads=out_grads)

    def update(self):
        _require(self.binded and self.params_initialized and self.optimizer_initialized,
                 "update: call init_optimizer before update")
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context=True):
        _require(self.binded and self.params_initialized, "get_outputs: call bind first")
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        _require(self.binded and self.params_initialized and self.inputs_need_grad,
                 "get_input_grads: bind with inputs_need_grad=True")
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        _require(self.binded and self.params_initialized, "update_metric: call bind first")
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        _require(self.binded, "install_monitor: call bind first")
        self._monitor = mon
        for mod in self._buckets.values():
            if mod.binded:
                mod.install_monitor(mon)

    # ------------------------------------------------------------------ memory
    def memory_report(self) -> dict:
        """Bytes held by all buckets together, each buffer counted once.

        `pool` is the planned memory (activations, temporaries), `inputs` the data/label
        buffers, `params` parameters, gradients and aux states, `buckets` the number bound.
        """
        seen: set = set()
        totals = {"pool": 0, "inputs": 0, "params": 0}

        def add(kind, arr):
            base = arr._data
            while getattr(base, "base", None) is not None:
                base = base.base
            if id(base) not in seen:
                seen.add(id(base))
                totals[kind] += int(base.nbytes)
        for mod in self._buckets.values():
            if not mod.binded:
                continue
            group = mod._exec_group
            for exe in group.execs:
                for block in exe._pool.blocks:
                    if id(block) not in seen:
                        seen.add(id(block))
                        totals["pool"] += int(block.nbytes)
                for name, arr in exe.arg_dict.items():
                    add("params" if name in group.param_names else "inputs", arr)
                for arr in exe.grad_arrays + exe.aux_arrays:
                    if arr is not None:
                        add("params", arr)
        totals["total"] = totals["pool"] + totals["inputs"] + totals["params"]
        totals["buckets"] = sum(1 for m in self._buckets.values() if m.binded)
        return totals

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """prefix-%04d.params, one prefix-<key>-symbol.json per bucket, and prefix.buckets."""
        if not self._buckets:
            raise MXNetError("Empty BucketingModule cannot be saved")
        self.save_params(params_file(prefix, epoch))
        for bucket_key in self._buckets:
            symbol, _, _ = self._call_sym_gen(bucket_key)
            symbol.save("%s-%s-symbol.json" % (prefix, bucket_key),
                        remove_amp_cast=remove_amp_cast)
        nd.save("%s.buckets" % prefix, nd.array(list(self._buckets.keys()), dtype=np.int32))
        logging.info('Saved checkpoint to "%s"', params_file(prefix, epoch))

    @staticmethod
    def load(prefix, epoch, sym_gen=None, default_bucket_key=None, **kwargs):
        """A BucketingModule with every saved bucket's symbol and the saved parameters."""
        if sym_gen is None:
            raise ValueError("sym_gen is required for loading BucketingModule")
        if default_bucket_key is None:
            raise ValueError("default_bucket_key is required for loading BucketingModule")
        keys = nd.load("%s.buckets" % prefix)[0].asnumpy().astype("int32").tolist()
        sym_dict = {key: sym.load("%s-%s-symbol.json" % (prefix, key)) for key in keys}
        arg_params, aux_params = load_params(prefix, epoch)
        return BucketingModule.load_dict(sym_dict, sym_gen, default_bucket_key, arg_params,
                                         aux_params, **kwargs)

    @staticmethod
    def load_dict(sym_dict=None, sym_gen=None, default_bucket_key=None, arg_params=None,
                  aux_params=None, **kwargs):
        """A BucketingModule from {bucket_key: symbol} and shared parameters."""
        for value, what in ((sym_dict, "sym_dict"), (arg_params, "arg_params"),
                            (aux_params, "aux_params"),
                            (default_bucket_key, "default_bucket_key")):
            if value is None:
                raise ValueError("%s needs to be provided for BucketingModule.load_dict" % what)
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        for bucket_key, loaded in sym_dict.items():
            _, data_names, label_names = mod._call_sym_gen(bucket_key)
            mod._buckets[bucket_key] = Module(loaded, data_names, label_names, **kwargs)
            if bucket_key == default_bucket_key:
                mod._curr_module = mod._buckets[bucket_key]
        if mod._curr_module is None:
            symbol, data_names, label_names = mod._call_sym_gen(default_bucket_key)
            mod._curr_module = mod._buckets[default_bucket_key] = Module(
                symbol, data_names, label_names, **kwargs)
        mod._curr_module._arg_params = arg_params
        mod._curr_module._aux_params = aux_params
        mod._curr_module.params_initialized = True
        mod.params_initialized = True
        return mod

