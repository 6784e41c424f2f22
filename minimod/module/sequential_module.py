"""`SequentialModule`: a chain of modules, the outputs of each one feeding the next.

Each added module keeps its own parameters and optimizer; the chain binds them one after the
other (module i+1 is bound to the output shapes of module i), runs forward front to back and
backward back to front, handing the input gradients of module i+1 to module i as its head
gradients. Two pieces of meta information may be given to `add`:

- `take_labels=True`: the module receives the batch's labels (at bind, forward and metric time);
  any module in the chain may take them, all get the same labels.
- `auto_wiring=True`: the outputs of the previous module are renamed to this module's data names
  (otherwise the names must already agree).

Differences from MXNet 1.9.1, all in the user's favour:
- `bind` records `for_training` and `inputs_need_grad`, so `get_input_grads` works on a chain
  bound with `inputs_need_grad=True` (MXNet's never records them, and always refuses).
- `forward` gives `provide_label` only to the modules that take labels, and with auto-wiring
  names the intermediate `provide_data` after the next module's data names, so a batch of a new
  size re-shapes every module instead of failing on a name or label mismatch.
- Calls out of order, an unknown meta key, a shared module, an empty chain, duplicated parameter
  names and mismatched wiring are errors that say what is wrong (MXNet asserts).
"""
from __future__ import annotations

import copy
import logging

from ..base import MXNetError
from ..initializer import Uniform
from .base_module import BaseModule, _call_accepting, _require

__all__ = ["SequentialModule"]


class SequentialModule(BaseModule):
    """A container of modules run one after another (see the module docstring)."""

    META_TAKE_LABELS = "take_labels"
    META_AUTO_WIRING = "auto_wiring"

    def __init__(self, logger=logging):
        super().__init__(logger=logger)
        self._modules = []
        self._metas = []
        self._label_shapes = None
        self._data_shapes = None
        self._meta_keys = {self.META_TAKE_LABELS, self.META_AUTO_WIRING}

    def add(self, module: BaseModule, **kwargs) -> SequentialModule:
        """Append `module` to the chain with its meta information; returns self for chaining.

        Adding a module invalidates the chain's binding, parameters and optimizer: bind and
        initialise again.
        """
        unknown = sorted(key for key in kwargs if key not in self._meta_keys)
        if unknown:
            raise ValueError("SequentialModule.add: unknown meta %s (a typo?); the known meta "
                             "keys are %s" % (", ".join(repr(k) for k in unknown),
                                              sorted(self._meta_keys)))
        self._modules.append(module)
        self._metas.append(dict(kwargs))
        self.binded = False
        self.params_initialized = False
        self.optimizer_initialized = False
        return self

    def _takes_labels(self, i_layer: int) -> bool:
        return bool(self._metas[i_layer].get(self.META_TAKE_LABELS, False))

    def _auto_wired(self, i_layer: int) -> bool:
        return bool(self._metas[i_layer].get(self.META_AUTO_WIRING, False))

    # ------------------------------------------------------------------ properties
    @property
    def data_names(self):
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self):
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self):
        _require(self.binded, "data_shapes: the SequentialModule is not bound")
        return self._modules[0].data_shapes

    @property
    def label_shapes(self):
        """The label shapes given to bind, or None when no module takes labels."""
        _require(self.binded, "label_shapes: the SequentialModule is not bound")
        return self._label_shapes

    @property
    def output_shapes(self):
        _require(self.binded, "output_shapes: the SequentialModule is not bound")
        return self._modules[-1].output_shapes

    # ------------------------------------------------------------------ parameters
    def get_params(self):
        """The union of every module's (arg_params, aux_params), as new dicts."""
        _require(self.binded and self.params_initialized,
                 "get_params: bind the SequentialModule and call init_params first")
        arg_params, aux_params = {}, {}
        for module in self._modules:
            args, auxs = module.get_params()
            arg_params.update(args)
            aux_params.update(auxs)
        return arg_params, aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False) -> None:
        """Initialise every module from the same arguments; parameter names must be unique."""
        if self.params_initialized and not force_init:
            return
        _require(self.binded, "init_params: call bind on the SequentialModule first")
        for module in self._modules:
            _call_accepting(module.init_params, initializer=initializer, arg_params=arg_params,
                            aux_params=aux_params, allow_missing=allow_missing,
                            force_init=force_init, allow_extra=allow_extra)
        owners = ({}, {})
        duplicates = []
        for i_layer, module in enumerate(self._modules):
            for kind, params, owner in zip(("arg", "aux"), module.get_params(), owners):
                for name in params:
                    if name in owner:
                        duplicates.append("%s '%s' of layer %d (%s) is already used in layer "
                                          "%d (%s)" % (kind, name, i_layer,
                                                       type(module).__name__, owner[name],
                                                       type(self._modules[owner[name]]).__name__))
                    else:
                        owner[name] = i_layer
        if duplicates:
            raise MXNetError("SequentialModule: duplicated parameter names: %s; give the "
                             "layers' symbols distinct names" % "; ".join(duplicates))
        self.params_initialized = True

    # ------------------------------------------------------------------ binding
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write") -> None:
        """Bind every module in turn, each to the output shapes of the one before it.

        Modules after the first are bound with inputs_need_grad=True when training, since
        backward needs the gradient of their inputs.
        """
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise MXNetError("inputs_need_grad=True needs for_training=True")
        if shared_module is not None:
            raise MXNetError("SequentialModule.bind: shared_module is not supported")
        _require(len(self._modules) > 0, "bind: the SequentialModule is empty; add modules "
                 "first")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        layer_data_shapes = list(data_shapes)
        anybody_takes_labels = False
        for i_layer, module in enumerate(self._modules):
            takes_labels = self._takes_labels(i_layer)
            anybody_takes_labels = anybody_takes_labels or takes_labels
            if self._auto_wired(i_layer):
                names = list(module.data_names)
                if len(names) != len(layer_data_shapes):
                    raise MXNetError(
                        "SequentialModule: layer %d (%s) takes %d data inputs %s but gets %d %s"
                        % (i_layer, type(module).__name__, len(names), names,
                           len(layer_data_shapes), [x[0] for x in layer_data_shapes]))
                layer_data_shapes = [(name, desc[1])
                                     for name, desc in zip(names, layer_data_shapes)]
            elif i_layer > 0:
                given = [x[0] for x in layer_data_shapes]
                if sorted(given) != sorted(module.data_names):
                    raise MXNetError(
                        "SequentialModule: layer %d (%s) has data names %s but layer %d outputs "
                        "%s; add it with auto_wiring=True to rename the outputs"
                        % (i_layer, type(module).__name__, list(module.data_names),
                           i_layer - 1, given))
            module.bind(data_shapes=layer_data_shapes,
                        label_shapes=label_shapes if takes_labels else None,
                        for_training=for_training,
                        inputs_need_grad=bool(inputs_need_grad or (for_training and i_layer > 0)),
                        force_rebind=force_rebind, shared_module=None, grad_req=grad_req)
            layer_data_shapes = list(module.output_shapes)
        self._label_shapes = label_shapes if anybody_takes_labels else None
        self.binded = True

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False) -> None:
        """Give every module its own optimizer, created from the same arguments."""
        _require(self.binded and self.params_initialized,
                 "init_optimizer: call bind and init_params first")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        for module in self._modules:
            module.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                                  optimizer_params=optimizer_params, force_init=force_init)
        self.optimizer_initialized = True

    # ------------------------------------------------------------------ computation
    def forward(self, data_batch, is_train=None) -> None:
        """Run the modules in order; each one's outputs become the next one's data."""
        _require(self.binded and self.params_initialized,
                 "forward: call bind and init_params first")
        if isinstance(data_batch, (list, tuple)):
            raise MXNetError("SequentialModule.forward takes one DataBatch, not a list of "
                             "pre-sliced batches")
        batch = copy.copy(data_batch)
        provide_label = getattr(data_batch, "provide_label", None)
        last = len(self._modules) - 1
        for i_layer, module in enumerate(self._modules):
            # every module sees the labels (a loss module may read them without take_labels),
            # but one bound without labels must not be asked to re-shape them
            if provide_label is not None:
                batch.provide_label = provide_label if self._takes_labels(i_layer) else None
            module.forward(batch, is_train=is_train)
            if i_layer == last:
                break
            batch.data = module.get_outputs()
            if self._auto_wired(i_layer + 1):
                names = list(self._modules[i_layer + 1].data_names)
            else:
                names = [x[0] for x in module.output_shapes]
            if len(names) != len(batch.data):
                raise MXNetError("SequentialModule: layer %d produced %d outputs for %d names %s"
                                 % (i_layer, len(batch.data), len(names), names))
            batch.provide_data = [(name, out.shape) for name, out in zip(names, batch.data)]

    def backward(self, out_grads=None) -> None:
        """Run backward from the last module to the first, chaining the input gradients."""
        _require(self.binded and self.params_initialized,
                 "backward: call bind and init_params first")
        for i_layer in range(len(self._modules) - 1, -1, -1):
            module = self._modules[i_layer]
            module.backward(out_grads=out_grads)
            if i_layer > 0:
                out_grads = module.get_input_grads()

    def update(self) -> None:
        _require(self.binded and self.params_initialized and self.optimizer_initialized,
                 "update: call init_optimizer before update")
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last module."""
        _require(self.binded and self.params_initialized,
                 "get_outputs: call bind and init_params first")
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """The gradients with respect to the first module's data."""
        _require(self.binded and self.params_initialized and self.inputs_need_grad,
                 "get_input_grads: bind the SequentialModule with inputs_need_grad=True")
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False) -> None:
        """Update the metric from every module that takes labels."""
        _require(self.binded and self.params_initialized,
                 "update_metric: call bind and init_params first")
        for i_layer, module in enumerate(self._modules):
            if self._takes_labels(i_layer):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon) -> None:
        _require(self.binded, "install_monitor: call bind first")
        for module in self._modules:
            module.install_monitor(mon)
