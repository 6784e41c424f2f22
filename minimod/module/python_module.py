"""`PythonModule` and `PythonLossModule`: modules whose computation is written in Python.

`PythonModule` is the base for a module without parameters: it keeps the data, label and output
names and shapes, and makes the parameter and optimizer steps do nothing. A subclass supplies
`_compute_output_shapes`, `forward`, `backward`, `get_outputs` and `get_input_grads`.

`PythonLossModule` is the usual subclass: a loss at the end of a SequentialModule. Its output
(`name + '_output'`) is its input, the scores, unchanged; backward computes the gradient of the
scores with `grad_func(scores, labels)` (NDArrays in; an NDArray or a numpy array out).

Differences from MXNet 1.9.1, all in the user's favour:
- `bind` sets `binded = True` (MXNet's never does, so `score`, `predict` and `fit` refused a
  bound PythonModule); `init_params` and `init_optimizer` set their flags, there being nothing
  else to initialise.
- `install_monitor` does nothing (there are no executors to watch) instead of raising, so a
  monitor can be installed on a SequentialModule ending in a loss module.
- Wrong names, grad_req other than 'write', calls out of order and a missing grad_func are
  errors that say what is wrong (MXNet asserts).
"""
from __future__ import annotations

import logging

from .. import ndarray as nd
from ..base import MXNetError
from ..initializer import Uniform
from .base_module import BaseModule, _require

__all__ = ["PythonModule", "PythonLossModule"]


def _names(names, what: str) -> list | None:
    if names is None:
        return None
    if isinstance(names, str):
        raise TypeError("%s must be a list of names, not the string %r" % (what, names))
    return list(names)


class PythonModule(BaseModule):
    """A parameter-free module computed in Python (see the module docstring)."""

    def __init__(self, data_names, label_names, output_names, logger=logging):
        super().__init__(logger=logger)
        self._data_names = _names(data_names, "data_names")
        self._label_names = _names(label_names, "label_names")
        self._output_names = _names(output_names, "output_names")
        self._data_shapes = None
        self._label_shapes = None
        self._output_shapes = None

    # ------------------------------------------------------------------ properties
    @property
    def data_names(self):
        return self._data_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        return self._data_shapes

    @property
    def label_shapes(self):
        """The label shapes given to bind; None when bound without labels."""
        return self._label_shapes

    @property
    def output_shapes(self):
        return self._output_shapes

    # ------------------------------------------------------------------ parameters
    def get_params(self):
        """No parameters: ({}, {})."""
        return {}, {}

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False) -> None:
        """Nothing to initialise; a subclass with parameters overrides this."""
        self.params_initialized = True

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False) -> None:
        """Nothing to optimise; a subclass with parameters overrides this."""
        self.optimizer_initialized = True

    def update(self) -> None:
        """Nothing to update; a subclass with parameters overrides this."""

    def update_metric(self, eval_metric, labels, pre_sliced=False) -> None:
        """Update the metric with the labels and this module's outputs (if bound with labels)."""
        if self._label_shapes is None:
            return
        if pre_sliced:
            raise RuntimeError("PythonModule does not support presliced labels")
        eval_metric.update(labels, self.get_outputs())

    def install_monitor(self, mon) -> None:
        """No executors to monitor."""

    # ------------------------------------------------------------------ binding
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write") -> None:
        """Record the shapes and compute the output shapes."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if grad_req != "write":
            raise MXNetError("%s only supports grad_req='write', got %r"
                             % (type(self).__name__, grad_req))
        given = [x[0] for x in data_shapes]
        if given != self._data_names:
            raise ValueError("%s: data_shapes name %s but the module's data_names are %s"
                             % (type(self).__name__, given, self._data_names))
        if label_shapes is not None:
            given = [x[0] for x in label_shapes]
            if self._label_names is None or given != self._label_names:
                raise ValueError("%s: label_shapes name %s but the module's label_names are %s"
                                 % (type(self).__name__, given, self._label_names))
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._data_shapes = data_shapes
        self._label_shapes = label_shapes
        self._output_shapes = self._compute_output_shapes()
        self.binded = True

    def _compute_output_shapes(self):
        """[(output name, shape)] from self._data_shapes and self._label_shapes (set by bind)."""
        raise NotImplementedError("%s must implement _compute_output_shapes"
                                  % type(self).__name__)


class PythonLossModule(PythonModule):
    """A loss computed in Python: passes its scores through, back-propagates grad_func."""

    def __init__(self, name="pyloss", data_names=("data",), label_names=("softmax_label",),
                 logger=logging, grad_func=None):
        super().__init__(data_names, label_names, [name + "_output"], logger=logger)
        if len(self._data_names) != 1:
            raise ValueError("PythonLossModule takes exactly one data name, got %s"
                             % self._data_names)
        if self._label_names is None or len(self._label_names) != 1:
            raise ValueError("PythonLossModule takes exactly one label name, got %s"
                             % self._label_names)
        if grad_func is not None and not callable(grad_func):
            raise TypeError("grad_func must be callable(scores, labels), got %r" % (grad_func,))
        self._name = name
        self._scores = None
        self._labels = None
        self._scores_grad = None
        self._grad_func = grad_func

    def _compute_output_shapes(self):
        return [(self._name + "_output", tuple(self._data_shapes[0][1]))]

    def forward(self, data_batch, is_train=None) -> None:
        """Keep the scores (and, when training, the labels) for backward."""
        self._scores = data_batch.data[0]
        if is_train is None:
            is_train = self.for_training
        if is_train:
            labels = getattr(data_batch, "label", None)
            if not labels:
                raise MXNetError("%s: forward with is_train=True needs a batch with labels"
                                 % self._name)
            self._labels = labels[0]

    def get_outputs(self, merge_multi_context=True):
        """[the scores of the last forward]."""
        if merge_multi_context is not True:
            raise MXNetError("PythonLossModule computes on one context: use "
                             "merge_multi_context=True")
        _require(self._scores is not None, "get_outputs: call forward first")
        return [self._scores]

    def backward(self, out_grads=None) -> None:
        """Compute the gradient of the scores; a loss takes no out_grads."""
        if out_grads is not None:
            raise MXNetError("%s is a loss: backward takes no out_grads" % self._name)
        _require(self.for_training, "backward: bind with for_training=True")
        _require(self._scores is not None and self._labels is not None,
                 "backward: call forward(is_train=True) first")
        self._backward_impl()

    def _backward_impl(self) -> None:
        """Set self._scores_grad from self._scores and self._labels (override or grad_func)."""
        if self._grad_func is None:
            raise NotImplementedError("PythonLossModule '%s' has no grad_func: pass "
                                      "grad_func=f(scores, labels) or override _backward_impl"
                                      % self._name)
        grad = self._grad_func(self._scores, self._labels)
        if not isinstance(grad, nd.NDArray):
            grad = nd.array(grad)
        self._scores_grad = grad

    def get_input_grads(self, merge_multi_context=True):
        """[the gradient of the scores from the last backward]."""
        if merge_multi_context is not True:
            raise MXNetError("PythonLossModule computes on one context: use "
                             "merge_multi_context=True")
        _require(self._scores_grad is not None, "get_input_grads: call backward first")
        return [self._scores_grad]
