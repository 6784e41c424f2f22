"""Subclass compatibility (issue #4): code written against MXNet's Module internals runs as is.

Detection and segmentation projects subclass MXNet's modules and reach into private helpers:
a `BaseModule` subclass that re-implements Module (to freeze parameters by partial name), and
`Module` subclasses overriding `bind`/`init_params` the pre-1.0 way. The two classes below are
written here for these tests, against the same internals, imported from the same module paths
MXNet code uses (only `mxnet` -> `minimod` changed). They are trained next to a plain
`mx.mod.Module` on one and on two CPU devices, with kvstore 'local', 'device' and None, and must
agree with it exactly: outputs, gradients, updated parameters, metrics; frozen parameters must
not move; fit/score/predict/save_checkpoint/load must work through the subclasses.
"""
import json
import logging
import os
import time
import warnings

import numpy as np
import pytest

import minimod as mx
import minimod as mxnet  # user code writes `import mxnet` and checks mxnet.__version__
from minimod import context as ctx
from minimod import metric
from minimod import ndarray as nd
from minimod import optimizer as opt
from minimod.base import _as_list as base_as_list
from minimod.executor_manager import _split_input_slice
from minimod.initializer import InitDesc, Uniform
from minimod.io import DataDesc
from minimod.model import (
    BatchEndParam,
    _create_kvstore,
    _initialize_kvstore,
    _update_params,
    _update_params_on_kvstore,
    load_checkpoint,
)
from minimod.module import Module
from minimod.module.base_module import BaseModule, _as_list, _check_input_names, _parse_data_desc
from minimod.module.executor_group import DataParallelExecutorGroup
from minimod.ndarray import zeros

BATCH = 8


# ================================================================================ subclasses
def names_matching(arg_names, fixed=None, excluded=None):
    """Arguments whose name contains one of `fixed` and none of `excluded` (partial names)."""
    picked = [n for n in arg_names if any(part in n for part in (fixed or ()))]
    return [n for n in picked if not any(part in n for part in (excluded or ()))]


class DetLikeModule(BaseModule):
    """Module's job re-done on BaseModule (as detection code does), freezing by partial name."""

    profile_after = 2  # batches before fit(profile=True) dumps the profile

    def __init__(self, symbol, data_names=None, label_names=None, logger=logging,
                 context=ctx.cpu(), fixed_param=None, excluded_param=None):
        super().__init__(logger=logger)
        self._context = [context] if isinstance(context, ctx.Context) else list(context)
        self._work_load_list = [1] * len(self._context)
        self._group2ctxs = None
        self._symbol = symbol
        self._data_names = list(data_names) if data_names is not None else []
        self._label_names = list(label_names) if label_names is not None else []
        self._state_names = []
        self._fixed_param_names = names_matching(symbol.list_arguments(), fixed_param,
                                                 excluded_param)
        logger.info("fixed parameters: %s", self._fixed_param_names)
        for names, kind, throw in ((self._data_names, "data", True),
                                   (self._label_names, "label", False),
                                   (self._state_names, "state", True),
                                   (self._fixed_param_names, "fixed_param", True)):
            _check_input_names(symbol, names, kind, throw)
        inputs = set(self._data_names + self._label_names + self._state_names)
        self._param_names = [n for n in symbol.list_arguments() if n not in inputs]
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._compression_params = None
        self._optimizer = None
        self._kvstore = None
        self._update_on_kvstore = None
        self._updater = None
        self._preload_opt_states = None
        self._grad_req = None
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    # ---------------------------------------------------------------- checkpoints
    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        symbol, args, auxs = load_checkpoint(prefix, epoch)
        mod = DetLikeModule(symbol=symbol, **kwargs)
        mod._arg_params, mod._aux_params = args, auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = "%s-%04d.states" % (prefix, epoch)
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False):
        self._symbol.save("%s-symbol.json" % prefix)
        self.save_params("%s-%04d.params" % (prefix, epoch))
        if save_optimizer_states:
            self.save_optimizer_states("%s-%04d.states" % (prefix, epoch))

    def save_optimizer_states(self, fname):
        assert self.optimizer_initialized
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            with open(fname, "wb") as fout:
                fout.write(self._updater.get_states())

    def load_optimizer_states(self, fname):
        assert self.optimizer_initialized
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
        else:
            with open(fname, "rb") as fin:
                self._updater.set_states(fin.read())

    # ---------------------------------------------------------------- properties
    def _reset_bind(self):
        self.binded = False
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

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
        assert self.binded
        return self._data_shapes

    @property
    def label_shapes(self):
        assert self.binded
        return self._label_shapes

    @property
    def output_shapes(self):
        assert self.binded
        return self._exec_group.get_output_shapes()

    # ---------------------------------------------------------------- parameters
    def get_params(self):
        assert self.binded and self.params_initialized
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "init_params call ignored.", stacklevel=2)
            return
        assert self.binded, "call bind before initializing the parameters"
        attrs = self._symbol.attr_dict()
        for own, given in ((self._arg_params, arg_params), (self._aux_params, aux_params)):
            for name in sorted(own):
                target = own[name]
                if given is not None and name in given:
                    if given[name] is not target:
                        given[name].copyto(target)
                elif given is not None and not allow_missing:
                    raise RuntimeError("%s is not presented" % name)
                elif initializer is not None:
                    initializer(InitDesc(name, attrs.get(name, None)), target)
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=False, force_init=force_init,
                             allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            return
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def _sync_params_from_devices(self):
        self._exec_group.get_params(self._arg_params, self._aux_params)
        if self._kvstore and self._update_on_kvstore:
            for name, value in sorted(self._arg_params.items()):
                if value.stype == "row_sparse":
                    row_ids = nd.arange(0, value.shape[0], dtype="int64")
                    self._kvstore.row_sparse_pull(name, value, row_ids=row_ids)
        self._params_dirty = False

    # ---------------------------------------------------------------- binding
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        assert for_training or not inputs_need_grad
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        label_names = self.label_names if label_shapes is not None else []
        self._data_shapes, self._label_shapes = _parse_data_desc(
            self.data_names, label_names, data_shapes, label_shapes)
        shared_group = None
        if shared_module is not None:
            assert shared_module.binded and shared_module.params_initialized
            shared_group = shared_module._exec_group
        # the first nine arguments positionally, the rest by keyword, as MXNet code does
        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, self._data_shapes,
            self._label_shapes, self._param_names, for_training, inputs_need_grad,
            shared_group, logger=self.logger, fixed_param_names=self._fixed_param_names,
            grad_req=grad_req, group2ctxs=self._group2ctxs, state_names=self._state_names)
        self._total_exec_bytes = self._exec_group._total_exec_bytes
        self.binded = True
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            self._exec_group.set_params(self._arg_params, self._aux_params)
        else:
            group = self._exec_group
            self._arg_params = {
                name: zeros(shape=block[0].shape, dtype=block[0].dtype, stype=block[0].stype)
                for name, block in zip(self._param_names, group.param_arrays)}
            self._aux_params = {name: zeros(block[0].shape, dtype=block[0].dtype)
                                for name, block in zip(self._aux_names, group.aux_arrays)}

    def reshape(self, data_shapes, label_shapes=None):
        assert self.binded
        label_names = self.label_names if label_shapes is not None else []
        self._data_shapes, self._label_shapes = _parse_data_desc(
            self.data_names, label_names, data_shapes, label_shapes)
        self._exec_group.reshape(self._data_shapes, self._label_shapes)

    # ---------------------------------------------------------------- optimizer
    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        assert self.binded and self.params_initialized
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        kv, update_on_kv = _create_kvstore(kvstore, len(self._context), self._arg_params)
        batch_size = self._exec_group.batch_size
        if kv and "dist" in kv.type and "_sync" in kv.type:
            batch_size *= kv.num_workers
        ndev = len(self._context)
        names = self._exec_group.param_names
        if update_on_kv:
            idx2name = dict(enumerate(names))
        else:
            idx2name = {i * ndev + k: n for i, n in enumerate(names) for k in range(ndev)}
        if isinstance(optimizer, str):
            params = dict(optimizer_params)
            params.setdefault("rescale_grad", 1.0 / batch_size)
            optimizer = opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name,
                                   **params)
        else:
            assert isinstance(optimizer, opt.Optimizer)
        self._optimizer = optimizer
        self._kvstore = kv
        self._update_on_kvstore = update_on_kv
        self._updater = None
        if kv:
            # the pre-1.5 order: parameters into the store first, then the optimizer
            _initialize_kvstore(kvstore=kv, param_arrays=self._exec_group.param_arrays,
                                arg_params=self._arg_params, param_names=self._param_names,
                                update_on_kvstore=update_on_kv)
        if update_on_kv:
            kv.set_optimizer(self._optimizer)
        else:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module):
        assert shared_module.optimizer_initialized
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    # ---------------------------------------------------------------- computation
    def forward(self, data_batch, is_train=None):
        assert self.binded and self.params_initialized
        new_shapes = [tuple(arr.shape) for arr in data_batch.data]
        if new_shapes != [tuple(desc.shape) for desc in self._data_shapes]:
            data_descs = [DataDesc(d.name, s, d.dtype, d.layout)
                          for d, s in zip(self._data_shapes, new_shapes)]
            label_descs = None
            if data_batch.label and self._label_shapes:
                label_descs = [DataDesc(d.name, lab.shape, d.dtype, d.layout)
                               for d, lab in zip(self._label_shapes, data_batch.label)]
            self.reshape(data_descs, label_descs)
        self._exec_group.forward(data_batch, is_train)

    def backward(self, out_grads=None):
        assert self.binded and self.params_initialized
        self._exec_group.backward(out_grads=out_grads)

    def update(self):
        assert self.binded and self.params_initialized and self.optimizer_initialized
        self._params_dirty = True
        group = self._exec_group
        if self._update_on_kvstore:
            _update_params_on_kvstore(group.param_arrays, group.grad_arrays, self._kvstore,
                                      group.param_names)
        else:
            _update_params(group.param_arrays, group.grad_arrays, updater=self._updater,
                           num_device=len(self._context), kvstore=self._kvstore,
                           param_names=group.param_names)

    def get_outputs(self, merge_multi_context=True):
        assert self.binded and self.params_initialized
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        assert self.binded and self.params_initialized and self.inputs_need_grad
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        assert self.binded and self.params_initialized
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        assert self.binded and self.params_initialized
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        if mxnet.__version__ >= "1.3.0":
            self._exec_group.update_metric(eval_metric, labels, pre_sliced)
        else:
            self._exec_group.update_metric(eval_metric, labels)

    def install_monitor(self, mon):
        assert self.binded
        self._exec_group.install_monitor(mon)

    # ---------------------------------------------------------------- training loop
    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None, profile=False):
        assert num_epoch is not None, "please specify number of epochs"
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        validation_metric = validation_metric or eval_metric
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        if profile:
            mx.profiler.set_config(profile_all=True, filename="det-profile.json")
            mx.profiler.set_state("run")
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            batches = iter(train_data)
            batch = next(batches)
            nbatch, last = 0, False
            while not last:
                self.forward_backward(batch)
                self.update()
                self.update_metric(eval_metric, batch.label)
                try:
                    batch = next(batches)
                    self.prepare(batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    last = True
                if last:
                    name_values = eval_metric.get_name_value()
                if batch_end_callback is not None:
                    params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                           locals=locals())
                    for callback in _as_list(batch_end_callback):
                        callback(params)
                nbatch += 1
                if profile and nbatch == self.profile_after:
                    mx.profiler.set_state("stop")
                    mx.profiler.dump()
            for name, value in name_values:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, value)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            arg_params, aux_params = self.get_params()
            self.set_params(arg_params, aux_params)
            # only worker 0 writes checkpoints; no kvstore (one device) means a single worker
            if epoch_end_callback is not None and (self._kvstore is None
                                                   or self._kvstore.rank == 0):
                for callback in _as_list(epoch_end_callback):
                    callback(epoch, self.symbol, arg_params, aux_params)
            if eval_data:
                for name, value in self.score(eval_data, validation_metric,
                                              score_end_callback=eval_end_callback,
                                              batch_end_callback=eval_batch_end_callback,
                                              epoch=epoch):
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, value)
            train_data.reset()


class OldStyleModule(Module):
    """A Module subclass written for MXNet <= 1.0: its own `bind`, and an `init_params`
    without the `allow_extra` keyword added in 1.1 (pain point #6)."""

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        self.binded = True  # the old code marks the module bound before building anything
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        self._data_shapes, self._label_shapes = _parse_data_desc(
            self.data_names, self.label_names if label_shapes else [], data_shapes,
            label_shapes)
        shared_group = shared_module._exec_group if shared_module is not None else None
        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, self._data_shapes,
            self._label_shapes, self._param_names, for_training, inputs_need_grad,
            shared_group, logger=self.logger, fixed_param_names=self._fixed_param_names,
            grad_req=grad_req, state_names=self._state_names)
        self._total_exec_bytes = self._exec_group._total_exec_bytes
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            self._exec_group.set_params(self._arg_params, self._aux_params)
        else:
            group = self._exec_group
            self._arg_params = {name: nd.zeros(block[0].shape, dtype=block[0].dtype)
                                for name, block in zip(self._param_names, group.param_arrays)}
            self._aux_params = {name: nd.zeros(block[0].shape, dtype=block[0].dtype)
                                for name, block in zip(self._aux_names, group.aux_arrays)}

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False):
        if self.params_initialized and not force_init:
            return
        assert self.binded
        for own, given in ((self._arg_params, arg_params), (self._aux_params, aux_params)):
            for name, target in sorted(own.items()):
                if given is not None and name in given:
                    given[name].copyto(target)
                elif given is not None and not allow_missing:
                    raise RuntimeError("%s is not presented" % name)
                elif initializer is not None:
                    initializer(name, target)
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params)


# ================================================================================ helpers
def _net():
    with mx.name.NameManager():
        net = mx.sym.Variable("data")
        net = mx.sym.FullyConnected(net, num_hidden=10, name="fc1")
        net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn1")
        net = mx.sym.Activation(net, act_type="relu")
        net = mx.sym.FullyConnected(net, num_hidden=4, name="fc2")
        return mx.sym.SoftmaxOutput(net, name="softmax")


def _data(n=48, seed=0):
    rng = np.random.RandomState(seed)
    return (rng.uniform(-1, 1, (n, 6)).astype(np.float32),
            rng.randint(0, 4, n).astype(np.float32))


def _batch(x, y, i):
    sl = slice(i * BATCH, (i + 1) * BATCH)
    return mx.io.DataBatch([nd.array(x[sl])], [nd.array(y[sl])])


def _iter(x, y):
    return mx.io.NDArrayIter(x, y, batch_size=BATCH, label_name="softmax_label")


def _initial_params(seed=7):
    ref = Module(_net(), context=mx.cpu())
    ref.bind(data_shapes=[("data", (BATCH, 6))], label_shapes=[("softmax_label", (BATCH,))])
    mx.random.seed(seed)
    ref.init_params(mx.init.Xavier(magnitude=2.0))
    arg, aux = ref.get_params()
    return ({k: v.copy() for k, v in arg.items()}, {k: v.copy() for k, v in aux.items()})


def _numpy(params):
    arg, aux = params
    return {k: v.asnumpy().copy() for k, v in list(arg.items()) + list(aux.items())}


def _contexts(ndev):
    return [mx.cpu(i) for i in range(ndev)]


FIXED = dict(fixed_param=["fc1"], excluded_param=["bias"])  # freezes fc1_weight only
FIXED_NAMES = ["fc1_weight"]

# kvstore modes: None, 'local' and 'device' (each updating on the kvstore), and 'local' with
# MXNET_UPDATE_ON_KVSTORE=0 (gradients summed in the store, updated on the devices)
KVSTORES = [None, "local", "device", "local-no-update"]


def _kvstore(mode, monkeypatch):
    if mode == "local-no-update":
        monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
        return "local"
    return mode


def _bound(mod, params):
    mod.bind(data_shapes=[("data", (BATCH, 6))], label_shapes=[("softmax_label", (BATCH,))])
    mod.init_params(arg_params=params[0], aux_params=params[1])
    return mod


def _assert_same_step(got, want):
    """Outputs, gradients (None for frozen parameters) of two modules after one batch."""
    for a, b in zip(got.get_outputs(), want.get_outputs()):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    g_got, g_want = got._exec_group, want._exec_group
    assert g_got.param_names == g_want.param_names
    for name, dev_got, dev_want in zip(g_got.param_names, g_got.grad_arrays,
                                       g_want.grad_arrays):
        assert len(dev_got) == len(dev_want) == len(got._context)
        for a, b in zip(dev_got, dev_want):
            if name in FIXED_NAMES:
                assert a is None and b is None, name
            else:
                np.testing.assert_array_equal(a.asnumpy(), b.asnumpy(), err_msg=name)


# ================================================================================ inventory
def test_internals_seed_code_uses_resolve_with_mxnet_names():
    """Every import and private helper DetModule/OldModule-style code touches exists."""
    assert _as_list is base_as_list and _as_list((1, 2)) == [1, 2] and _as_list(3) == [3]
    assert mxnet.__version__ >= "1.3.0"  # string comparison, as user code does it
    assert mx.MXNetError is mx.base.MXNetError
    assert ctx.cpu() == mx.cpu() and isinstance(ctx.cpu(1), ctx.Context)
    assert mx.name.NameManager and mx.name.Prefix and mx.attribute.AttrScope
    assert mx.context is ctx and mx.executor_manager._split_input_slice is _split_input_slice
    assert _split_input_slice(5, [1, 1]) == [slice(0, 2), slice(2, 5)]
    for attr in ("create", "get_updater", "Optimizer", "Updater", "register"):
        assert callable(getattr(opt, attr)), attr
    assert isinstance(Uniform(0.01), mx.init.Initializer)
    assert InitDesc("fc1_weight", {"a": "b"}) == "fc1_weight"
    a = zeros(shape=(2, 3), dtype="float32", stype="default")
    assert a.shape == (2, 3) and a.stype == "default" and a.dtype == np.float32
    b = nd.zeros((2,), dtype=np.float64)
    assert b.dtype == np.float64
    r = nd.arange(0, 4, dtype="int64")
    assert r.dtype == np.int64 and r.asnumpy().tolist() == [0, 1, 2, 3]
    m = metric.create("acc")
    assert m.get_name_value() and isinstance(m.get_name_value()[0], tuple)
    p = BatchEndParam(epoch=1, nbatch=2, eval_metric=m, locals=locals())
    assert (p.epoch, p.nbatch, p.eval_metric) == (1, 2, m) and "m" in p.locals
    # kvstore as seen by user code: one device and a name -> no kvstore at all (as in MXNet)
    assert _create_kvstore("local", 1, {}) == (None, False)
    kv, update_on_kv = _create_kvstore("device", 2, {"w": nd.ones((2, 2))})
    assert update_on_kv and kv.type == "device" and kv.rank == 0 and kv.num_workers == 1
    for attr in ("set_optimizer", "set_gradient_compression", "save_optimizer_states",
                 "load_optimizer_states", "row_sparse_pull", "pushpull", "broadcast", "init"):
        assert callable(getattr(kv, attr)), attr
    kv.init("w", (nd.ones((3, 2)) * 2).tostype("row_sparse"))
    out = nd.zeros((3, 2), stype="row_sparse")
    kv.row_sparse_pull("w", out, row_ids=nd.arange(0, 3, dtype="int64"))
    np.testing.assert_array_equal(out.asnumpy(), np.full((3, 2), 2.0))


def test_exec_group_attributes_and_methods_subclasses_touch():
    mod = _bound(DetLikeModule(_net(), ["data"], ["softmax_label"], context=_contexts(2),
                               **FIXED), _initial_params())
    group = mod._exec_group
    assert group.batch_size == BATCH and group.slices == [slice(0, 4), slice(4, 8)]
    assert group.param_names == mod._param_names and len(group.execs) == 2
    assert [len(block) for block in group.param_arrays] == [2] * len(mod._param_names)
    assert group.grad_arrays[mod._param_names.index("fc1_weight")] == [None, None]
    assert [len(block) for block in group.aux_arrays] == [2, 2]
    assert isinstance(mod._total_exec_bytes, int)
    assert group.get_output_shapes() == [("softmax_output", (BATCH, 4))]
    assert mod.output_shapes == [("softmax_output", (BATCH, 4))]
    arg, aux = {}, {}
    for name, block in zip(group.param_names, group.param_arrays):
        arg[name] = nd.zeros(block[0].shape)
    for name, block in zip(mod._aux_names, group.aux_arrays):
        aux[name] = nd.zeros(block[0].shape)
    group.get_params(arg, aux)
    np.testing.assert_array_equal(arg["fc2_weight"].asnumpy(),
                                  mod.get_params()[0]["fc2_weight"].asnumpy())
    group.set_params(dict(arg, extra=nd.ones((1,))), aux, allow_extra=True)
    x, y = _data()
    group.forward(_batch(x, y, 0), is_train=True)
    group.backward()
    assert len(group.get_outputs(merge_multi_context=False)[0]) == 2
    assert group.get_outputs()[0].shape == (BATCH, 4)
    assert group.get_states(merge_multi_context=False) == []
    acc = metric.create("acc")
    group.update_metric(acc, [nd.array(y[:BATCH])], False)
    assert acc.num_inst == BATCH
    group.reshape([DataDesc("data", (6, 6))], [DataDesc("softmax_label", (6,))])
    assert group.batch_size == 6 and group.slices == [slice(0, 3), slice(3, 6)]
    group.forward(mx.io.DataBatch([nd.array(x[:6])], [nd.array(y[:6])]), is_train=False)
    assert group.get_outputs()[0].shape == (6, 4)


# ================================================================================ DetLikeModule
@pytest.mark.parametrize("ndev", [1, 2])
@pytest.mark.parametrize("kvmode", KVSTORES)
def test_detlike_module_trains_exactly_like_module(ndev, kvmode, monkeypatch):
    kvstore = _kvstore(kvmode, monkeypatch)
    params = _initial_params()
    det = DetLikeModule(_net(), data_names=["data"], label_names=["softmax_label"],
                        context=_contexts(ndev), **FIXED)
    assert det._fixed_param_names == FIXED_NAMES
    ref = Module(_net(), context=_contexts(ndev), fixed_param_names=FIXED_NAMES)
    opt_params = {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}
    for mod in (det, ref):
        _bound(mod, params)
        mod.init_optimizer(kvstore=kvstore, optimizer="sgd", optimizer_params=opt_params)
    assert (det._kvstore is None) == (ref._kvstore is None)
    assert det._update_on_kvstore == ref._update_on_kvstore
    if ndev == 2 and kvmode is not None:
        assert det._kvstore.rank == 0
        assert det._update_on_kvstore == (kvmode != "local-no-update")
    x, y = _data()
    acc_det, acc_ref = metric.create("acc"), metric.create("acc")
    for i in range(4):
        for mod in (det, ref):
            mod.forward_backward(_batch(x, y, i))
        _assert_same_step(det, ref)
        for mod, acc in ((det, acc_det), (ref, acc_ref)):
            mod.update()
            mod.update_metric(acc, _batch(x, y, i).label)
    assert acc_det.get_name_value() == acc_ref.get_name_value()
    got, want = _numpy(det.get_params()), _numpy(ref.get_params())
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    start = _numpy(params)
    np.testing.assert_array_equal(got["fc1_weight"], start["fc1_weight"])
    for moved in ("fc1_bias", "fc2_weight", "fc2_bias", "bn1_gamma"):
        assert not np.array_equal(got[moved], start[moved]), moved


def test_detlike_module_initializer_matches_module():
    det = DetLikeModule(_net(), ["data"], ["softmax_label"], context=_contexts(2))
    ref = Module(_net(), context=_contexts(2))
    for mod in (det, ref):
        mod.bind(data_shapes=[("data", (BATCH, 6))],
                 label_shapes=[("softmax_label", (BATCH,))])
        mx.random.seed(11)
        mod.init_params(mx.init.Xavier(magnitude=2.0))
    got, want = _numpy(det.get_params()), _numpy(ref.get_params())
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


@pytest.mark.parametrize("ndev,kvmode", [(1, "local"), (2, None), (2, "local"), (2, "device"),
                                         (2, "local-no-update")])
def test_detlike_fit_score_predict_checkpoint(tmp_path, ndev, kvmode, monkeypatch):
    kvstore = _kvstore(kvmode, monkeypatch)
    params = _initial_params()
    x, y = _data()
    fit_args = dict(eval_metric="acc", kvstore=kvstore, optimizer="sgd",
                    optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
                    arg_params=params[0], aux_params=params[1], num_epoch=2)
    ref = Module(_net(), context=_contexts(ndev), fixed_param_names=FIXED_NAMES)
    ref.fit(_iter(x, y), **fit_args)
    det = DetLikeModule(_net(), ["data"], ["softmax_label"], context=_contexts(ndev), **FIXED)
    prefix = str(tmp_path / "det")
    seen, epochs = [], []
    det.fit(_iter(x, y), eval_data=_iter(x, y),
            batch_end_callback=lambda p: seen.append((p.epoch, p.nbatch, "self" in p.locals)),
            epoch_end_callback=[mx.callback.module_checkpoint(det, prefix,
                                                              save_optimizer_states=True),
                                lambda epoch, *rest: epochs.append(epoch)],
            **fit_args)
    assert seen == [(e, b, True) for e in range(2) for b in range(len(x) // BATCH)]
    assert epochs == [0, 1]
    got, want = _numpy(det.get_params()), _numpy(ref.get_params())
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    np.testing.assert_array_equal(got["fc1_weight"], params[0]["fc1_weight"].asnumpy())
    assert det.score(_iter(x, y), "acc") == ref.score(_iter(x, y), "acc")
    np.testing.assert_array_equal(det.predict(_iter(x, y)).asnumpy(),
                                  ref.predict(_iter(x, y)).asnumpy())
    # the checkpoint written through the subclass loads back into it, optimizer states too
    assert os.path.exists(prefix + "-0002.params") and os.path.exists(prefix + "-0002.states")
    loaded = DetLikeModule.load(prefix, 2, data_names=["data"], label_names=["softmax_label"],
                                context=_contexts(ndev))
    loaded.bind(data_shapes=[("data", (BATCH, 6))], for_training=False)
    np.testing.assert_array_equal(loaded.predict(_iter(x, y)).asnumpy(),
                                  det.predict(_iter(x, y)).asnumpy())
    five = loaded.predict(x[:5])  # a plain array of another batch size
    np.testing.assert_allclose(five.asnumpy(), det.predict(_iter(x, y)).asnumpy()[:5],
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("ndev,kvmode", [(1, None), (2, "device"), (2, "local-no-update")])
def test_detlike_resume_from_checkpoint_continues_identically(tmp_path, ndev, kvmode,
                                                              monkeypatch):
    """save_checkpoint(save_optimizer_states=True) + load(load_optimizer_states=True)."""
    kvstore = _kvstore(kvmode, monkeypatch)
    with mx.name.NameManager():
        net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, name="fc")
        net = mx.sym.SoftmaxOutput(net, name="softmax")
    x, y = _data()
    opt_params = {"learning_rate": 0.1, "momentum": 0.9}

    def start(mod):
        mod.bind(data_shapes=[("data", (BATCH, 6))],
                 label_shapes=[("softmax_label", (BATCH,))])
        mx.random.seed(5)
        mod.init_params(mx.init.Xavier())
        mod.init_optimizer(kvstore=kvstore, optimizer="sgd", optimizer_params=opt_params)
        return mod

    straight = start(DetLikeModule(net, ["data"], ["softmax_label"], context=_contexts(ndev)))
    for i in range(3):
        straight.forward_backward(_batch(x, y, i))
        straight.update()
    prefix = str(tmp_path / "resume")
    straight.save_checkpoint(prefix, 3, save_optimizer_states=True)
    for i in range(3, 6):
        straight.forward_backward(_batch(x, y, i))
        straight.update()
    resumed = DetLikeModule.load(prefix, 3, load_optimizer_states=True, data_names=["data"],
                                 label_names=["softmax_label"], context=_contexts(ndev))
    resumed.bind(data_shapes=[("data", (BATCH, 6))],
                 label_shapes=[("softmax_label", (BATCH,))])
    resumed.init_optimizer(kvstore=kvstore, optimizer="sgd", optimizer_params=opt_params)
    for i in range(3, 6):
        resumed.forward_backward(_batch(x, y, i))
        resumed.update()
    got, want = _numpy(resumed.get_params()), _numpy(straight.get_params())
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_detlike_fit_with_profile_writes_its_trace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    x, y = _data()
    det = DetLikeModule(_net(), ["data"], ["softmax_label"], context=_contexts(2))
    try:
        det.fit(_iter(x, y), kvstore="device", num_epoch=1, profile=True)
    finally:
        mx.profiler.set_state("stop")
        mx.profiler.set_config(profile_all=False, filename="profile.json")
    assert os.listdir(tmp_path) == ["det-profile.json"]
    events = json.load(open(tmp_path / "det-profile.json"))["traceEvents"]
    names = {e["name"] for e in events if e.get("cat") == "operator"}
    assert {"FullyConnected", "_backward_FullyConnected"} <= names


# ================================================================================ OldStyleModule
@pytest.mark.parametrize("ndev", [1, 2])
@pytest.mark.parametrize("kvmode", KVSTORES)
def test_old_style_module_trains_exactly_like_module(ndev, kvmode, monkeypatch):
    kvstore = _kvstore(kvmode, monkeypatch)
    params = _initial_params()
    old = OldStyleModule(_net(), context=_contexts(ndev), fixed_param_names=FIXED_NAMES)
    ref = Module(_net(), context=_contexts(ndev), fixed_param_names=FIXED_NAMES)
    for mod in (old, ref):
        _bound(mod, params)
        mod.init_optimizer(kvstore=kvstore, optimizer="adam",
                           optimizer_params={"learning_rate": 0.01})
    x, y = _data()
    for i in range(4):
        for mod in (old, ref):
            mod.forward_backward(_batch(x, y, i))
        _assert_same_step(old, ref)
        for mod in (old, ref):
            mod.update()
    got, want = _numpy(old.get_params()), _numpy(ref.get_params())
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    np.testing.assert_array_equal(got["fc1_weight"], params[0]["fc1_weight"].asnumpy())
    assert old.score(_iter(x, y), "acc") == ref.score(_iter(x, y), "acc")
    np.testing.assert_array_equal(old.predict(_iter(x, y)).asnumpy(),
                                  ref.predict(_iter(x, y)).asnumpy())


def test_old_style_init_params_through_base_module_set_params(tmp_path):
    """BaseModule.set_params passes `allow_extra` only to overrides that take it."""
    params = _initial_params()
    old = _bound(OldStyleModule(_net(), context=_contexts(2)), params)
    changed = {k: v + 1 for k, v in params[0].items()}
    BaseModule.set_params(old, changed, params[1], allow_extra=True)
    for name, value in changed.items():
        np.testing.assert_array_equal(old.get_params()[0][name].asnumpy(), value.asnumpy())
        for dev in old._exec_group.param_arrays[old._param_names.index(name)]:
            np.testing.assert_array_equal(dev.asnumpy(), value.asnumpy())
    # its checkpoint (Module.save_checkpoint) reloads with load_checkpoint + old init_params
    prefix = str(tmp_path / "old")
    old.save_checkpoint(prefix, 1)
    _, args, auxs = load_checkpoint(prefix, 1)
    again = OldStyleModule(_net(), context=_contexts(2))
    again.bind(data_shapes=[("data", (BATCH, 6))], label_shapes=[("softmax_label", (BATCH,))])
    again.init_params(arg_params=args, aux_params=auxs)
    x, y = _data()
    np.testing.assert_array_equal(again.predict(_iter(x, y)).asnumpy(),
                                  old.predict(_iter(x, y)).asnumpy())


# Module.set_params (and so fit's epoch end and load_params) call an old-style init_params
# without `allow_extra` defensively, where MXNet raised TypeError (pain point #6).


def test_old_style_module_set_params_and_load_params(tmp_path):
    params = _initial_params()
    old = _bound(OldStyleModule(_net(), context=_contexts(2)), params)
    fname = str(tmp_path / "old.params")
    old.save_params(fname)
    old.load_params(fname)
    old.set_params(*params)


@pytest.mark.parametrize("ndev,kvstore", [(1, "local"), (2, "device")])
def test_old_style_module_fit(ndev, kvstore):
    params = _initial_params()
    x, y = _data()
    old = OldStyleModule(_net(), context=_contexts(ndev), fixed_param_names=FIXED_NAMES)
    old.fit(_iter(x, y), kvstore=kvstore, arg_params=params[0], aux_params=params[1],
            num_epoch=2)
    np.testing.assert_array_equal(old.get_params()[0]["fc1_weight"].asnumpy(),
                                  params[0]["fc1_weight"].asnumpy())
