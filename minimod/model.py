"""MXNet's `mx.model`: the legacy `FeedForward` API on top of Module, and MXNet's names for
checkpoints and Module's update helpers, which live elsewhere and are re-exported here because
user code imports them from this path:

- `save_checkpoint`, `load_checkpoint`, `load_params` (checkpoint.py: MXNet's files,
  `prefix-symbol.json` and `prefix-%04d.params` with `arg:`/`aux:` keys);
- `BatchEndParam` (callback.py: what batch-end callbacks receive);
- `_create_kvstore`, `_initialize_kvstore`, `_update_params_on_kvstore`, `_update_params`
  (module/updates.py: user subclasses of Module call them directly).
"""
from __future__ import annotations

import logging
import time
import warnings

import numpy as np

from . import callback, io, metric
from . import ndarray as nd
from .callback import (
    BatchEndParam,
    LogValidationMetricsCallback,  # noqa: F401 - MXNet's mx.model has it
)
from .checkpoint import load_checkpoint, load_params, save_checkpoint
from .context import Context, cpu  # noqa: F401
from .initializer import InitDesc, Uniform
from .io import DataDesc  # noqa: F401 - MXNet's mx.model has it
from .module import Module
from .module.updates import (
    _create_kvstore,
    _initialize_kvstore,
    _update_params,
    _update_params_on_kvstore,
)
from .optimizer import get_updater  # noqa: F401 - MXNet's mx.model has it

__all__ = ["BatchEndParam", "FeedForward", "save_checkpoint", "load_checkpoint", "load_params",
           "_create_kvstore", "_initialize_kvstore", "_update_params_on_kvstore",
           "_update_params"]


# ----------------------------------------------------------------------------- FeedForward

class FeedForward:
    """MXNet's legacy training API (deprecated in MXNet too, in favour of `mx.mod.Module`),
    kept so that old scripts run: `FeedForward(symbol, num_epoch=..., learning_rate=...)`
    `.fit(X, y)`, `.predict(X)`, `.score(X)`, `.save(prefix)`, `FeedForward.load(prefix,
    epoch)` and `FeedForward.create(...)`.

    It runs on a Module. As in MXNet: NumPy inputs become an NDArrayIter of `numpy_batch_size`
    samples, shuffled and rolled over for training (an (X, y) eval pair too); parameters not
    in `arg_params` are initialised in the symbol's argument order; keyword arguments left
    over are the optimizer's, which gets rescale_grad = 1 / batch size; `epoch_size` cuts
    epochs to that many batches, the data carrying on across epochs. predict returns NumPy
    arrays without the padding.
    """

    def __init__(self, symbol, ctx=None, num_epoch=None, epoch_size=None, optimizer="sgd",
                 initializer=None, numpy_batch_size=128, arg_params=None, aux_params=None,
                 allow_extra_params=False, begin_epoch=0, **kwargs):
        warnings.warn("mxnet.model.FeedForward has been deprecated. Please use "
                      "mxnet.mod.Module instead.", DeprecationWarning, stacklevel=2)
        self.symbol = symbol
        self.ctx = [cpu()] if ctx is None else (list(ctx) if isinstance(ctx, (list, tuple))
                                                else [ctx])
        self.num_epoch = num_epoch
        self.epoch_size = epoch_size
        self.optimizer = optimizer
        self.initializer = Uniform(0.01) if initializer is None else initializer
        self.numpy_batch_size = numpy_batch_size
        self.arg_params = arg_params
        self.aux_params = aux_params
        self.allow_extra_params = allow_extra_params
        self.begin_epoch = begin_epoch
        self.kwargs = dict(kwargs)
        self._module = None
        self._predictor = None

    # ------------------------------------------------------------------ inputs
    def _init_iter(self, X, y, is_train: bool):
        if not isinstance(X, (np.ndarray, nd.NDArray)):
            if y is not None:
                raise ValueError("y must be None when X is a data iterator")
            return X
        if y is None:
            if is_train:
                raise ValueError("y must be specified when X is numpy.ndarray")
            y = np.zeros(X.shape[0])
        if not isinstance(y, (np.ndarray, nd.NDArray)):
            raise TypeError("y must be ndarray when X is numpy.ndarray")
        if X.shape[0] != y.shape[0]:
            raise ValueError("The numbers of data points and labels not equal")
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.reshape(-1)
        if y.ndim != 1:
            raise ValueError("Label must be 1D or 2D (with 2nd dimension being 1)")
        batch = min(X.shape[0], self.numpy_batch_size)
        if is_train:
            return io.NDArrayIter(X, y, batch, shuffle=True, last_batch_handle="roll_over")
        return io.NDArrayIter(X, y, batch, shuffle=False)

    def _init_eval_iter(self, eval_data):
        """An (X, y) pair becomes an iterator made as the training one is (shuffled, rolled
        over: MXNet does so, and its shuffle draws from np.random before training starts)."""
        if eval_data is None or not isinstance(eval_data, (list, tuple)):
            return eval_data
        if len(eval_data) != 2:
            raise ValueError("eval_data must be a data iterator or a pair (X, y)")
        X, y = (np.asarray(v) if isinstance(v, list) else v for v in eval_data)
        if y is None and not isinstance(X, (np.ndarray, nd.NDArray)):
            return X
        return self._init_iter(X, y, is_train=True)

    def _initial_params(self, data) -> tuple:
        """(arg_params, aux_params) for every parameter: the given ones, the rest made by the
        initializer in the symbol's argument order (MXNet's draw order)."""
        inputs = {d[0]: d[1] for d in list(data.provide_data) + list(data.provide_label or [])}
        arg_shapes, _, aux_shapes = self.symbol.infer_shape(**inputs)
        attrs = self.symbol.attr_dict()
        given_args, given_aux = self.arg_params or {}, self.aux_params or {}
        args, aux = {}, {}
        for name, shape in zip(self.symbol.list_arguments(), arg_shapes):
            if name in inputs:
                continue
            args[name] = nd.zeros(shape)
            if name in given_args:
                given_args[name].copyto(args[name])
            else:
                self.initializer(InitDesc(name, attrs.get(name)), args[name])
        for name, shape in zip(self.symbol.list_auxiliary_states(), aux_shapes):
            aux[name] = nd.zeros(shape)
            if name in given_aux:
                given_aux[name].copyto(aux[name])
            else:
                self.initializer(InitDesc(name, attrs.get(name)), aux[name])
        return args, aux

    # ------------------------------------------------------------------ training
    def fit(self, X, y=None, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", logger=None, work_load_list=None,
            monitor=None, eval_end_callback=callback.LogValidationMetricsCallback(),
            eval_batch_end_callback=None):
        """Train for num_epoch epochs. The loop is MXNet's FeedForward loop, step for step
        (the training iterator is reset first and at the end of each pass over it, an epoch
        of epoch_size batches may span passes, epoch_end_callback runs before evaluation), so
        shuffled NumPy inputs see the same np.random draws as in MXNet."""
        if self.num_epoch is None:
            raise ValueError("FeedForward.fit needs num_epoch (give it to the constructor)")
        logger = logger or logging
        data = self._init_iter(X, y, is_train=True)
        eval_data = self._init_eval_iter(eval_data)
        args, aux = self._initial_params(data)
        module = Module(self.symbol, data_names=[d[0] for d in data.provide_data],
                        label_names=[d[0] for d in data.provide_label or []],
                        context=self.ctx, work_load_list=work_load_list, logger=logger)
        module.bind(data_shapes=data.provide_data, label_shapes=data.provide_label)
        module.init_params(arg_params=args, aux_params=aux)
        module.init_optimizer(kvstore=kvstore, optimizer=self.optimizer,
                              optimizer_params=dict(self.kwargs))
        if monitor is not None:
            module.install_monitor(monitor)
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        data.reset()
        for epoch in range(self.begin_epoch, self.num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            while True:
                finished_pass = True
                for batch in data:
                    if monitor is not None:
                        monitor.tic()
                    module.forward_backward(batch)
                    module.update()
                    module.update_metric(eval_metric, batch.label)
                    if monitor is not None:
                        monitor.toc_print()
                    nbatch += 1
                    _call_each(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric,
                                                                 locals()))
                    if self.epoch_size is not None and nbatch >= self.epoch_size:
                        finished_pass = False
                        break
                if finished_pass:
                    logger.info("Epoch[%d] Resetting Data Iterator", epoch)
                    data.reset()
                if self.epoch_size is None or nbatch >= self.epoch_size:
                    break
            for name, value in eval_metric.get_name_value():
                logger.info("Epoch[%d] Train-%s=%f", epoch, name, value)
            logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            self.arg_params, self.aux_params = module.get_params()
            for cb in _as_list(epoch_end_callback):
                cb(epoch, self.symbol, self.arg_params, self.aux_params)
            if eval_data is not None:
                eval_metric.reset()
                eval_data.reset()
                for i, batch in enumerate(eval_data):
                    module.forward(batch, is_train=False)
                    module.update_metric(eval_metric, batch.label)
                    _call_each(eval_batch_end_callback,
                               BatchEndParam(epoch, i, eval_metric, locals()))
                _call_each(eval_end_callback, BatchEndParam(epoch, i, eval_metric, locals()))
                eval_data.reset()  # MXNet resets after evaluating too (a shuffle draws again)
        self._module, self._predictor = module, None

    # ------------------------------------------------------------------ inference
    def _predict_module(self, data):
        if self.arg_params is None:
            raise ValueError("FeedForward: no parameters yet; fit or load the model first")
        labels = list(data.provide_label or [])
        shapes = (tuple(map(tuple, data.provide_data)), tuple(map(tuple, labels)))
        if self._predictor is None or self._predictor[0] != shapes:
            data_names = [d[0] for d in data.provide_data]
            # the symbol's other inputs are labels, not parameters (scored when given)
            label_names = [n for n in self.symbol.list_arguments()
                           if n not in data_names and n not in self.arg_params]
            labels = [d for d in labels if d[0] in label_names]
            module = Module(self.symbol, data_names=data_names, label_names=label_names,
                            context=self.ctx)
            module.bind(data_shapes=data.provide_data, label_shapes=labels or None,
                        for_training=False)
            module.set_params(self.arg_params, self.aux_params or {}, allow_extra=True)
            self._predictor = (shapes, module)
        return self._predictor[1]

    def predict(self, X, num_batch=None, return_data=False, reset=True):
        """The outputs (one NumPy array, or a list for several) over the data, without the
        padded samples; with return_data also (outputs, data, label)."""
        data = self._init_iter(X, None, is_train=False)
        if reset:
            data.reset()
        module = self._predict_module(data)
        outputs, datas, labels = [], [], []
        for nbatch, batch in enumerate(data):
            if num_batch is not None and nbatch == num_batch:
                break
            module.forward(batch, is_train=False)
            keep = batch.data[0].shape[0] - (batch.pad or 0)
            outputs.append([o.asnumpy()[:keep] for o in module.get_outputs()])
            if return_data:
                datas.append(batch.data[0].asnumpy()[:keep])
                labels.append(batch.label[0].asnumpy()[:keep] if batch.label else None)
        merged = [np.concatenate(parts) for parts in zip(*outputs)]
        result = merged[0] if len(merged) == 1 else merged
        if return_data:
            label = None if not labels or labels[0] is None else np.concatenate(labels)
            return result, np.concatenate(datas), label
        return result

    def score(self, X, eval_metric="acc", num_batch=None, batch_end_callback=None,
              reset=True):
        """The value of `eval_metric` over the data."""
        data = self._init_iter(X, None, is_train=False)
        if reset:
            data.reset()
        module = self._predict_module(data)
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        eval_metric.reset()
        for nbatch, batch in enumerate(data):
            if num_batch is not None and nbatch == num_batch:
                break
            module.forward(batch, is_train=False)
            module.update_metric(eval_metric, batch.label)
            _call_each(batch_end_callback, BatchEndParam(0, nbatch, eval_metric, locals()))
        return eval_metric.get()[1]

    # ------------------------------------------------------------------ files
    def save(self, prefix, epoch=None, remove_amp_cast=True):
        """`prefix-symbol.json` and `prefix-%04d.params` (epoch defaults to num_epoch)."""
        epoch = self.num_epoch if epoch is None else epoch
        save_checkpoint(prefix, epoch, self.symbol, self.arg_params or {},
                        self.aux_params or {}, remove_amp_cast=remove_amp_cast)

    @staticmethod
    def load(prefix, epoch, ctx=None, **kwargs):
        """A FeedForward of the checkpoint `prefix`, `epoch`, ready to predict or fit on."""
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        return FeedForward(symbol, ctx=ctx, arg_params=arg_params, aux_params=aux_params,
                           begin_epoch=epoch, **kwargs)

    @staticmethod
    def create(symbol, X, y=None, ctx=None, num_epoch=None, epoch_size=None, optimizer="sgd",
               initializer=None, eval_data=None, eval_metric="acc", epoch_end_callback=None,
               batch_end_callback=None, kvstore="local", logger=None, work_load_list=None,
               eval_end_callback=callback.LogValidationMetricsCallback(),
               eval_batch_end_callback=None, **kwargs):
        """A FeedForward made and fitted in one call."""
        model = FeedForward(symbol, ctx=ctx, num_epoch=num_epoch, epoch_size=epoch_size,
                            optimizer=optimizer, initializer=initializer, **kwargs)
        model.fit(X, y, eval_data=eval_data, eval_metric=eval_metric,
                  epoch_end_callback=epoch_end_callback, batch_end_callback=batch_end_callback,
                  kvstore=kvstore, logger=logger, work_load_list=work_load_list,
                  eval_end_callback=eval_end_callback,
                  eval_batch_end_callback=eval_batch_end_callback)
        return model


def _as_list(callbacks) -> list:
    if callbacks is None:
        return []
    return list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]


def _call_each(callbacks, param: BatchEndParam) -> None:
    for cb in _as_list(callbacks):
        cb(param)
