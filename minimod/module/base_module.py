"""`BaseModule`: the training and inference loops shared by every module.

A module is something that can be bound to shapes, hold parameters, run forward and backward and
update. `fit`, `score`, `predict` and `iter_predict` are written once here in terms of those
abstract steps, with MXNet 1.9.1's control flow, callbacks and log lines, so that user code
(and user subclasses such as detection modules that copy Module) sees the same behaviour.
"""
from __future__ import annotations

import inspect
import logging
import time
import warnings

import numpy as np

from .. import metric
from .. import ndarray as nd
from ..base import MXNetError, NonFiniteError, _as_list
from ..callback import BatchEndParam
from ..checkpoint import save_params, split_params
from ..executor.batches import DeviceBatch
from ..initializer import Uniform
from ..io import DataBatch, DataDesc, DataIter
from ..numerics import at_batch

__all__ = ["BaseModule", "_check_input_names", "_check_names_match", "_parse_data_desc",
           "_as_list"]


def _check_input_names(symbol, names, typename: str, throw: bool) -> None:
    """Every name must be an argument of the symbol; say which ones could have been meant."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(("_weight", "_bias", "_gamma", "_beta"))]
        msg = ("\033[91mYou created Module with Module(..., %s_names=%s) but input with name "
               "'%s' is not found in symbol.list_arguments(). Did you mean one of:\n\t%s\033[0m"
               % (typename, str(names), name, "\n\t".join(candidates)))
        if throw:
            raise ValueError(msg)
        warnings.warn(msg)


def _check_names_match(data_names, data_shapes, name: str, throw: bool) -> None:
    actual = [x[0] for x in data_shapes]
    if sorted(data_names) != sorted(actual):
        msg = "Data provided by %s_shapes don't match names specified by %s_names (%s vs. %s)" % (
            name, name, str(data_shapes), str(data_names))
        if throw:
            raise ValueError(msg)
        warnings.warn(msg)


def _parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """data/label shapes as lists of DataDesc, checked against the expected names."""
    data_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in data_shapes]
    _check_names_match(data_names, data_shapes, "data", True)
    if label_shapes is not None:
        label_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in label_shapes]
        _check_names_match(label_names, label_shapes, "label", False)
    else:
        _check_names_match(label_names, [], "label", False)
    return data_shapes, label_shapes


def _call_accepting(fn, *args, **kwargs):
    """Call `fn`, dropping keyword arguments an older override does not accept.

    Subclasses written for older MXNet override `init_params` without `allow_extra`; MXNet
    itself then crashes with a TypeError (pain point #6). Passing only what the override
    takes keeps them working.
    """
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn(*args, **kwargs)
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return fn(*args, **kwargs)
    return fn(*args, **{k: v for k, v in kwargs.items() if k in params})


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise MXNetError(message)


class BaseModule:
    """The interface and the high-level loops of a module (see the module docstring)."""

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    # ------------------------------------------------------------------ high level
    def forward_backward(self, data_batch) -> None:
        """forward(is_train=True) then backward()."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None,
              score_end_callback=None, reset=True, epoch=0, sparse_row_id_fn=None):
        """Run the model over eval_data and return the metric's (name, value) pairs.

        As in MXNet, padded samples of the last batch are counted.
        """
        _require(self.binded and self.params_initialized,
                 "score: bind the module and initialise its parameters first")
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            batch = DeviceBatch.of(eval_batch)
            self.update_metric(eval_metric, batch.metric_labels(), pre_sliced=batch.pre_sliced)
            if batch_end_callback is not None:
                params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                       locals=locals())
                for callback in _as_list(batch_end_callback):
                    callback(params)
            actual_num_batch += 1
        if score_end_callback:
            params = BatchEndParam(epoch=epoch, nbatch=actual_num_batch, eval_metric=eval_metric,
                                   locals=locals())
            for callback in _as_list(score_end_callback):
                callback(params)
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yield (outputs without padding, batch index, batch) for each batch."""
        _require(self.binded and self.params_initialized,
                 "iter_predict: bind the module and initialise its parameters first")
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            outputs = [out[0:out.shape[0] - pad] for out in self.get_outputs()]
            yield outputs, nbatch, eval_batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True,
                always_output_list=False, sparse_row_id_fn=None):
        """Outputs over a DataIter (padding trimmed, batches joined), or for one array."""
        _require(self.binded and self.params_initialized,
                 "predict: bind the module and initialise its parameters first")
        if isinstance(eval_data, (nd.NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = nd.array(eval_data)
            self.forward(DataBatch([eval_data]), is_train=False)
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter) and not hasattr(eval_data, "reset"):
            raise ValueError("eval_data must be of type NDArray or DataIter")
        if reset:
            eval_data.reset()
        output_list = []
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            output_list.append([out[0:out.shape[0] - pad].copy() for out in self.get_outputs()])
        if not output_list:
            return output_list
        if merge_batches:
            num_outputs = len(output_list[0])
            for out in output_list:
                if len(out) != num_outputs:
                    raise MXNetError("Cannot merge batches, as num of outputs is not the same "
                                     "in mini-batches. Maybe bucketing is used?")
            merged = [nd.concatenate([out[i] for out in output_list])
                      for i in range(num_outputs)]
            if num_outputs == 1 and not always_output_list:
                return merged[0]
            return merged
        return output_list

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None):
        """Train: bind, initialise, then per epoch run every batch, callbacks and validation."""
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
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            data_iter = iter(train_data)
            end_of_batch = False
            try:
                next_data_batch = next(data_iter)
            except StopIteration:
                raise MXNetError("fit: the training iterator yielded no batch in epoch %d "
                                 "(is it empty, or was it not reset?)" % epoch) from None
            eval_name_vals = []
            while not end_of_batch:
                data_batch = next_data_batch
                if monitor is not None:
                    monitor.tic()
                try:
                    self.forward_backward(data_batch)
                    self.update()
                except NonFiniteError as err:  # the opt-in NaN guard: say where in training
                    raise at_batch(err, epoch, nbatch) from None
                batch = DeviceBatch.of(data_batch)
                self.update_metric(eval_metric, batch.metric_labels(),
                                   pre_sliced=batch.pre_sliced)
                try:
                    next_data_batch = next(data_iter)
                    self.prepare(next_data_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if end_of_batch:
                    eval_name_vals = eval_metric.get_global_name_value()
                if batch_end_callback is not None:
                    params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                           locals=locals())
                    for callback in _as_list(batch_end_callback):
                        callback(params)
                nbatch += 1
            for name, val in eval_name_vals:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            toc = time.time()
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, toc - tic)
            arg_params, aux_params = self._fit_epoch_end_params()
            if epoch_end_callback is not None:
                for callback in _as_list(epoch_end_callback):
                    callback(epoch, self.symbol, arg_params, aux_params)
            if eval_data:
                res = self.score(eval_data, validation_metric,
                                 score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            train_data.reset()

    # ------------------------------------------------------------------ symbol info
    @property
    def data_names(self):
        raise NotImplementedError()

    @property
    def output_names(self):
        raise NotImplementedError()

    @property
    def data_shapes(self):
        raise NotImplementedError()

    @property
    def label_shapes(self):
        raise NotImplementedError()

    @property
    def output_shapes(self):
        raise NotImplementedError()

    @property
    def symbol(self):
        return self._symbol

    # ------------------------------------------------------------------ parameters
    def _fit_epoch_end_params(self):
        """fit's end of epoch: get the parameters and set them straight back, which makes every
        device hold their average (as MXNet's fit does); returns what get_params gave, for the
        epoch_end_callback."""
        arg_params, aux_params = self.get_params()
        self.set_params(arg_params, aux_params)
        return arg_params, aux_params

    def get_params(self):
        raise NotImplementedError()

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        raise NotImplementedError()

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Assign parameter values (through init_params, as MXNet does)."""
        _call_accepting(self.init_params, initializer=None, arg_params=arg_params,
                        aux_params=aux_params, allow_missing=allow_missing,
                        force_init=force_init, allow_extra=allow_extra)

    def save_params(self, fname: str) -> None:
        """Save the parameters in MXNet's .params format (`arg:`/`aux:` keys)."""
        arg_params, aux_params = self.get_params()
        save_params(fname, arg_params, aux_params)

    def load_params(self, fname: str) -> None:
        """Load parameters saved by save_params (MXNet's or minimod's)."""
        arg_params, aux_params = split_params(nd.load(fname), fname, strict=True)
        self.set_params(arg_params, aux_params)

    def get_states(self, merge_multi_context=True):
        _require(self.binded and self.params_initialized, "get_states: bind first")
        if merge_multi_context:
            return []
        return []

    def set_states(self, states=None, value=None):
        _require(self.binded and self.params_initialized, "set_states: bind first")
        if states or value is not None:
            raise MXNetError("this module has no states")

    def install_monitor(self, mon):
        raise NotImplementedError()

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Get ready for a batch: nothing here; a module with row_sparse parameters on a
        kvstore (Module) calls `sparse_row_id_fn`, this one only warns it does not."""
        if sparse_row_id_fn is not None:
            warnings.warn("prepare: sparse_row_id_fn is not called by %s"
                          % type(self).__name__, UserWarning, stacklevel=2)

    # ------------------------------------------------------------------ computation
    def forward(self, data_batch, is_train=None):
        raise NotImplementedError()

    def backward(self, out_grads=None):
        raise NotImplementedError()

    def get_outputs(self, merge_multi_context=True):
        raise NotImplementedError()

    def get_input_grads(self, merge_multi_context=True):
        raise NotImplementedError()

    def update(self):
        raise NotImplementedError()

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        raise NotImplementedError()

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        raise NotImplementedError()

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        raise NotImplementedError()


