"""`SVRGModule`: a Module trained with stochastic variance-reduced gradients (SVRG).

SVRG (Johnson & Zhang, 2013) keeps a snapshot w~ of the parameters and the average gradient
mu = (1/n) sum_i grad f_i(w~) over the whole training set, refreshed every `update_freq`
epochs. Each mini-batch step then uses, in place of the plain gradient,

    g = grad f_B(w) - grad f_B(w~) + mu

which is unbiased and whose variance shrinks as w approaches w~. The module holds a second
Module (`_mod_aux`) over the same symbol that carries the snapshot w~: every training forward
and backward runs on both, and `update()` rewrites the main module's gradient arrays with the
rule above before the optimizer (an `_SVRGOptimizer` wrapping the one asked for) takes its
step.

Behaviour kept from MXNet 1.9.1, so that trajectories agree with it number for number:

- `update_full_grads` adds each batch's (unscaled, summed over the batch) gradient into the
  per-device snapshot dictionary `_param_dict` and then divides by the number of batches, where
  a padded last batch counts as the fraction of it that is real data. The dictionary is zeroed
  only by `init_optimizer`, so a later refresh starts from the previous average (MXNet does the
  same: with `update_freq` smaller than the run, the later snapshots carry a share of the older
  ones).
- With several devices and a kvstore, the per-device averages are pushed to the store under
  `<name>_full`, assigned there, pulled back and divided by the device count. On those keys
  `init_optimizer` also pulls the store's zeros into the device parameters (when the store
  updates), so the first step's gradients are taken at zero weights, as in MXNet; the store's
  own copy of the weights is unaffected, so training goes on from the initial values.
- `forward` runs the snapshot module only when called with `is_train=True` explicitly;
  `backward` runs it whenever it is bound.
"""
from __future__ import annotations

import logging
import time

from ... import context as ctx
from ... import metric
from ... import ndarray as nd
from ...base import _as_list
from ...initializer import Uniform
from ...model import BatchEndParam, _create_kvstore
from ...module import Module
from .svrg_optimizer import _SVRGOptimizer

__all__ = ["SVRGModule"]


class SVRGModule(Module):
    """A Module whose `update` applies the SVRG gradient rule (see the module docstring).

    Parameters
    ----------
    symbol, data_names, label_names, logger, context, work_load_list, fixed_param_names,
    state_names, group2ctxs, compression_params
        As for `Module`; the snapshot module is built with the same values.
    update_freq : int
        Refresh the full-gradient snapshot every `update_freq` epochs (in `fit`: at every
        epoch divisible by it). A positive int is required.
    """

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",),
                 logger=logging, context=ctx.cpu(), work_load_list=None,
                 fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None, update_freq=None):
        super().__init__(symbol, data_names=data_names, label_names=label_names, logger=logger,
                         context=context, work_load_list=work_load_list,
                         fixed_param_names=fixed_param_names, state_names=state_names,
                         group2ctxs=group2ctxs, compression_params=compression_params)
        # bool is an int subclass, but update_freq=True is surely a mistake
        if not isinstance(update_freq, int) or isinstance(update_freq, bool):
            raise TypeError("update_freq in SVRGModule must be an integer to represent the "
                            "frequency for calculating full gradients, got %r" % (update_freq,))
        if update_freq <= 0:
            raise ValueError("update_freq in SVRGModule must be a positive integer to "
                             "represent the frequency for calculating full gradients, got %d"
                             % update_freq)
        self.update_freq = update_freq
        self._mod_aux = Module(symbol, data_names, label_names, logger, context,
                               work_load_list, fixed_param_names, state_names, group2ctxs,
                               compression_params)
        self._param_dict = None
        self._ctx_len = len(self._context)

    # ------------------------------------------------------------------ binding
    def _reset_bind(self):
        super()._reset_bind()
        self._mod_aux._reset_bind()

    def reshape(self, data_shapes, label_shapes=None):
        super().reshape(data_shapes, label_shapes=label_shapes)
        self._mod_aux.reshape(data_shapes, label_shapes=label_shapes)

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Bind this module and, for training, the snapshot module with the same shapes."""
        super().bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind,
                     shared_module, grad_req)
        if for_training:
            self._mod_aux.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                               force_rebind, shared_module, grad_req)

    # ------------------------------------------------------------------ optimizer
    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """Install an `_SVRGOptimizer` around `optimizer` and zero the full-gradient
        snapshots; with a kvstore, also create the `<name>_full` keys that sum them over
        devices."""
        self._param_dict = [{name: nd.zeros(shape=value.shape, ctx=self._context[i])
                             for name, value in self.get_params()[0].items()}
                            for i in range(self._ctx_len)]
        svrg_optimizer = self._create_optimizer(_SVRGOptimizer.__name__, default_opt=optimizer,
                                                kvstore=kvstore,
                                                optimizer_params=optimizer_params)
        super().init_optimizer(kvstore=kvstore, optimizer=svrg_optimizer,
                               optimizer_params=optimizer_params, force_init=force_init)
        if self._kvstore:
            group = self._exec_group
            for idx, param_on_devs in enumerate(group.param_arrays):
                name = group.param_names[idx]
                self._kvstore.init(name + "_full",
                                   nd.zeros(shape=self._arg_params[name].shape))
                if self._update_on_kvstore:
                    self._kvstore.pull(name + "_full", param_on_devs, priority=-idx)

    def _create_optimizer(self, optimizer, default_opt, kvstore, optimizer_params):
        """The `_SVRGOptimizer` (registered name `optimizer`) wrapping `default_opt`, with the
        rescale_grad and idx2name that Module.init_optimizer would give a named optimizer, plus
        an index for every `<name>_full` key."""
        batch_size = self._exec_group.batch_size
        kv_store, update_on_kvstore = _create_kvstore(kvstore, self._ctx_len, self._arg_params)
        if kv_store and "dist" in kv_store.type and "_sync" in kv_store.type:
            batch_size *= kv_store.num_workers
        rescale_grad = 1.0 / batch_size

        names = self._exec_group.param_names
        if update_on_kvstore:
            idx2name = dict(enumerate(names))
        else:
            idx2name = {i * self._ctx_len + k: name
                        for k in range(self._ctx_len) for i, name in enumerate(names)}
        for name in self._param_dict[0]:
            idx2name[max(idx2name) + 1] = name + "_full"

        optimizer_params = dict(optimizer_params)
        optimizer_params.setdefault("rescale_grad", rescale_grad)
        optimizer_params["default_optimizer"] = default_opt
        optimizer_params["param_idx2name"] = idx2name
        from ... import optimizer as opt
        return opt.create(optimizer, **optimizer_params)

    # ------------------------------------------------------------------ computation
    def forward(self, data_batch, is_train=None):
        """Forward on this module; with is_train=True also on the snapshot module."""
        super().forward(data_batch, is_train)
        if is_train:
            self._mod_aux.forward(data_batch, is_train)

    def backward(self, out_grads=None):
        """Backward on this module and, when it is bound, on the snapshot module."""
        super().backward(out_grads)
        if self._mod_aux.binded:
            self._mod_aux.backward(out_grads)

    def update(self):
        """Replace the gradients with the SVRG estimate, then let the optimizer step."""
        self._update_svrg_gradients()
        super().update()

    def update_full_grads(self, train_data):
        """Take a snapshot: copy the current parameters into the snapshot module and average
        its gradients over one pass of `train_data` into `_param_dict` (through the kvstore's
        `<name>_full` keys when there is one)."""
        param_names = self._exec_group.param_names
        arg, aux = self.get_params()
        self._mod_aux.set_params(arg_params=arg, aux_params=aux)
        train_data.reset()
        nbatch = 0
        padding = 0
        for batch in train_data:
            self._mod_aux.forward(batch, is_train=True)
            self._mod_aux.backward()
            nbatch += 1
            grads = self._mod_aux._exec_group.grad_arrays
            for k in range(self._ctx_len):
                for index, name in enumerate(param_names):
                    self._param_dict[k][name] = self._param_dict[k][name] + grads[index][k]
            padding = batch.pad or 0  # a batch without `pad` (None) has no padding
        true_num_batch = nbatch - padding / train_data.batch_size
        for name in param_names:
            grad_list = []
            for k in range(self._ctx_len):
                self._param_dict[k][name] /= true_num_batch
                grad_list.append(self._param_dict[k][name])
            if self._kvstore:
                self._accumulate_kvstore(name, grad_list)

    def _accumulate_kvstore(self, key, value):
        """Sum the per-device averages of `key` in the store (all workers), then give each
        device its share."""
        self._kvstore.push(key + "_full", value)
        self._kvstore._barrier()
        self._kvstore.pull(key + "_full", value)
        self._allocate_gradients(key, value)

    def _allocate_gradients(self, key, value):
        for k in range(self._ctx_len):
            self._param_dict[k][key] = value[k] / self._ctx_len

    @staticmethod
    def _svrg_grads_update_rule(g_curr_batch_curr_weight, g_curr_batch_special_weight,
                                g_special_weight_all_batch):
        """g := g - g_snapshot + mu, in place on g (an NDArray, or a list of them), which is
        returned. MXNet walks the rows of the arrays; whole-array operations give the same
        numbers without a Python loop per row."""
        if isinstance(g_curr_batch_curr_weight, (list, tuple)):
            for grad, snap, full in zip(g_curr_batch_curr_weight, g_curr_batch_special_weight,
                                        g_special_weight_all_batch):
                grad -= snap
                grad += full
            return g_curr_batch_curr_weight
        g_curr_batch_curr_weight -= g_curr_batch_special_weight
        g_curr_batch_curr_weight += g_special_weight_all_batch
        return g_curr_batch_curr_weight

    def _update_svrg_gradients(self):
        group = self._exec_group
        aux_grads = self._mod_aux._exec_group.grad_arrays
        for k in range(self._ctx_len):
            for index, name in enumerate(group.param_names):
                g_svrg = self._svrg_grads_update_rule(group.grad_arrays[index][k],
                                                      aux_grads[index][k],
                                                      self._param_dict[k][name])
                group.grad_arrays[index][k] = g_svrg

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Prepare both modules for the next batch."""
        super().prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self._mod_aux.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)

    # ------------------------------------------------------------------ training
    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None):
        """Train as `Module.fit` does, taking a full-gradient snapshot at the start of every
        epoch divisible by `update_freq`."""
        if num_epoch is None:
            raise ValueError("fit: please specify number of epochs (num_epoch)")
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)

        for epoch in range(begin_epoch, num_epoch):
            eval_metric.reset()
            tic = time.time()
            if epoch % self.update_freq == 0:
                self.update_full_grads(train_data)
            train_data.reset()
            # the batch loop stays inline so that a batch_end_callback's `locals` are fit's
            data_iter = iter(train_data)
            end_of_batch = False
            nbatch = 0
            eval_name_vals = []
            next_data_batch = next(data_iter)
            while not end_of_batch:
                data_batch = next_data_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                if isinstance(data_batch, list):
                    self.update_metric(eval_metric, [db.label for db in data_batch],
                                       pre_sliced=True)
                else:
                    self.update_metric(eval_metric, data_batch.label)
                try:
                    next_data_batch = next(data_iter)
                    self.prepare(next_data_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if end_of_batch:
                    eval_name_vals = eval_metric.get_name_value()
                if batch_end_callback is not None:
                    batch_end_params = BatchEndParam(epoch=epoch, nbatch=nbatch,
                                                     eval_metric=eval_metric, locals=locals())
                    for callback in _as_list(batch_end_callback):
                        callback(batch_end_params)
                nbatch += 1
            for name, val in eval_name_vals:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            # as MXNet: bring the devices' parameters (and aux states) into line
            arg_params, aux_params = self.get_params()
            self.set_params(arg_params, aux_params)
            for callback in _as_list(epoch_end_callback or []):
                callback(epoch, self.symbol, arg_params, aux_params)
            if eval_data:
                res = self.score(eval_data, validation_metric,
                                 score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
