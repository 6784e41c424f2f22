"""The metric base: EvalMetric with its local and global counters, the registry behind
`create(name)`, and the array helpers every built-in metric shares (see the package docstring
for where minimod bends MXNet).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as _numpy

from .. import backend, registry
from ..ndarray import NDArray


# ---------------------------------------------------------------------- array helpers
def _raw(array) -> Any:
    """The backend array behind an NDArray (NumPy input passes through)."""
    return array._data if isinstance(array, NDArray) else _numpy.asarray(array)


def _paired(label, pred) -> tuple:
    """(xp, label, pred) as backend arrays on the prediction's device."""
    pred_raw = _raw(pred)
    xp = backend.array_module_of(pred_raw)
    label_raw = _raw(label)
    if backend.array_module_of(label_raw) is not xp or (
            xp is not _numpy and label_raw.device != pred_raw.device):
        label_raw = backend.to_context(label_raw, pred.context)
    return xp, label_raw, pred_raw


def _as_f64(value) -> Any:
    """`value` widened to float64, staying on its device (a Python number stays a number)."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None and dtype.kind in "fiub" and dtype != _numpy.float64:
        return value.astype(_numpy.float64)
    return value


def _to_host(value) -> Any:
    """A device scalar as a NumPy scalar; anything else unchanged."""
    if backend.is_gpu_array(value):
        value = backend.asnumpy(value)
    if isinstance(value, _numpy.ndarray) and value.ndim == 0:
        return value[()]
    return value


def _ratio(total, count) -> Any:
    value = _to_host(total) / _to_host(count)
    if isinstance(value, (_numpy.generic, _numpy.ndarray)) and _numpy.size(value) == 1:
        return float(value)
    return value


def check_label_shapes(labels, preds, wrap: bool = False, shape: bool = False) -> tuple:
    """Raise ValueError unless `labels` and `preds` have the same length (or shape).

    With `wrap`, a single NDArray on either side is returned wrapped in a list.
    """
    if shape:
        label_shape, pred_shape = labels.shape, preds.shape
    else:
        label_shape, pred_shape = len(labels), len(preds)
    if label_shape != pred_shape:
        raise ValueError("Shape of labels {} does not match shape of predictions {}".format(
            label_shape, pred_shape))
    if wrap:
        if isinstance(labels, NDArray):
            labels = [labels]
        if isinstance(preds, NDArray):
            preds = [preds]
    return labels, preds



# ---------------------------------------------------------------------- base class
class EvalMetric:
    """Base of all metrics: subclasses implement `update(labels, preds)`."""

    def __init__(self, name: str, output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None, **kwargs: Any):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    # The four counters may hold 0-d device arrays; reading one brings it to the host.
    @property
    def sum_metric(self) -> Any:
        return _to_host(self._sum_metric)

    @sum_metric.setter
    def sum_metric(self, value: Any) -> None:
        self._sum_metric = value

    @property
    def num_inst(self) -> Any:
        return _to_host(self._num_inst)

    @num_inst.setter
    def num_inst(self, value: Any) -> None:
        self._num_inst = value

    @property
    def global_sum_metric(self) -> Any:
        return _to_host(self._global_sum_metric)

    @global_sum_metric.setter
    def global_sum_metric(self, value: Any) -> None:
        self._global_sum_metric = value

    @property
    def global_num_inst(self) -> Any:
        return _to_host(self._global_num_inst)

    @global_num_inst.setter
    def global_num_inst(self, value: Any) -> None:
        self._global_num_inst = value

    def _add_local(self, value, count) -> None:
        self._sum_metric = self._sum_metric + _as_f64(value)
        self._num_inst = self._num_inst + count

    def _add_global(self, value, count) -> None:
        self._global_sum_metric = self._global_sum_metric + _as_f64(value)
        self._global_num_inst = self._global_num_inst + count

    def _add(self, value, count) -> None:
        self._add_local(value, count)
        self._add_global(value, count)

    def __str__(self) -> str:
        return "EvalMetric: {}".format(dict(self.get_name_value()))

    def get_config(self) -> dict:
        """The constructor arguments; `create(config)` rebuilds the metric."""
        config = self._kwargs.copy()
        config.update({"metric": self.__class__.__name__, "name": self.name,
                       "output_names": self.output_names, "label_names": self.label_names})
        return config

    def update_dict(self, label: dict, pred: dict) -> None:
        """Update from name->array dicts, keeping only `output_names`/`label_names` if set."""
        pred_names = list(pred) if self.output_names is None else list(self.output_names)
        label_names = list(label) if self.label_names is None else list(self.label_names)
        preds = [pred[name] for name in pred_names]
        labels = [label[name] for name in label_names]
        try:
            self.update(labels, preds)
        except ValueError as err:
            if not str(err).startswith("Shape of labels"):
                raise
            raise ValueError(_pairing_message(self, err, label_names, pred_names)) from err

    def update(self, labels: Sequence[NDArray], preds: Sequence[NDArray]) -> None:
        """Add one batch: `labels[i]` is the label of output `preds[i]`."""
        raise NotImplementedError()

    def reset(self) -> None:
        """Clear the local and the global counters."""
        self._sum_metric = 0.0
        self._num_inst = 0
        self._global_sum_metric = 0.0
        self._global_num_inst = 0

    def reset_local(self) -> None:
        """Clear the local counters only."""
        self._sum_metric = 0.0
        self._num_inst = 0

    def get(self) -> tuple:
        """(name, value) over the updates since the last reset_local."""
        num = self.num_inst
        if num == 0:
            return (self.name, float("nan"))
        return (self.name, _ratio(self.sum_metric, num))

    def get_global(self) -> tuple:
        """(name, value) over the updates since the last reset."""
        if not self._has_global_stats:
            return self.get()
        num = self.global_num_inst
        if num == 0:
            return (self.name, float("nan"))
        return (self.name, _ratio(self.global_sum_metric, num))

    def get_name_value(self) -> list:
        return _zip_name_value(*self.get())

    def get_global_name_value(self) -> list:
        if not self._has_global_stats:
            return self.get_name_value()
        return _zip_name_value(*self.get_global())


# ---------------------------------------------------------------------- registry
register = registry.get_register_func(EvalMetric, "metric")
alias = registry.get_alias_func(EvalMetric, "metric")
#: a metric from a registered name, a config (JSON text or dict) or an instance
_create_registered = registry.get_create_func(EvalMetric, "metric")


def _zip_name_value(name, value) -> list:
    names = name if isinstance(name, list) else [name]
    values = value if isinstance(value, list) else [value]
    return list(zip(names, values))


def _pairing_message(metric: EvalMetric, err: Exception, label_names: list,
                     pred_names: list) -> str:
    pairs = ", ".join("%s<->%s" % pair for pair in zip(label_names, pred_names)) or "none"
    return ("%s. Metric '%s' pairs labels with outputs in order: labels %s, outputs %s "
            "(paired: %s). Pass output_names=[...] and label_names=[...] to the metric to "
            "choose which outputs it scores (e.g. leave out a BlockGrad head)."
            % (err, metric.name, label_names, pred_names, pairs))
