"""Metrics made of other things: CompositeEvalMetric (several metrics updated together),
CustomMetric (a user's NumPy function), and `create`, which builds either from a name, a
config, a list or a function.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Optional, Sequence

import numpy as _numpy

from .. import backend
from ..ndarray import NDArray
from .base import EvalMetric, _create_registered, _raw, check_label_shapes

_NUMERIC = (float, int, _numpy.generic)


def create(metric: Any, *args: Any, **kwargs: Any) -> "EvalMetric":
    """A metric from a name, a config dict (or its JSON text), an instance, a list of
    those, or a function.

    A callable becomes a CustomMetric, a list a CompositeEvalMetric of its items, a string is
    looked up (case-insensitive) among registered names and aliases.
    """
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    return _create_registered(metric, *args, **kwargs)



# ---------------------------------------------------------------------- composite
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; get() returns ([names], [values])."""

    def __init__(self, metrics: Optional[Sequence[Any]] = None, name: str = "composite",
                 output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None):
        self.metrics = [create(m) for m in (metrics or [])]
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def add(self, metric: Any) -> None:
        self.metrics.append(create(metric))

    def get_metric(self, index: int) -> Any:
        try:
            return self.metrics[index]
        except IndexError:
            # MXNet returns (does not raise) this error; kept for compatibility.
            return ValueError("Metric index {} is out of range 0 and {}".format(
                index, len(self.metrics)))

    def update_dict(self, labels: dict, preds: dict) -> None:
        if self.label_names is not None:
            labels = OrderedDict((k, v) for k, v in labels.items() if k in self.label_names)
        if self.output_names is not None:
            preds = OrderedDict((k, v) for k, v in preds.items() if k in self.output_names)
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels: Sequence[NDArray], preds: Sequence[NDArray]) -> None:
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self) -> None:
        for metric in getattr(self, "metrics", []):
            metric.reset()

    def reset_local(self) -> None:
        for metric in self.metrics:
            metric.reset_local()

    def _collect(self, method: str) -> tuple:
        names, values = [], []
        for metric in self.metrics:
            name, value = getattr(metric, method)()
            names.extend([name] if isinstance(name, str) else name)
            values.extend([value] if isinstance(value, _NUMERIC) else value)
        return (names, values)

    def get(self) -> tuple:
        return self._collect("get")

    def get_global(self) -> tuple:
        return self._collect("get_global")

    def get_config(self) -> dict:
        config = super().get_config()
        config["metrics"] = [m.get_config() for m in self.metrics]
        return config



# ---------------------------------------------------------------------- user functions
class CustomMetric(EvalMetric):
    """A metric from `feval(label, pred)` on NumPy arrays, returning a value or (sum, count).

    A plain value counts as one instance. With `allow_extra_outputs`, surplus outputs
    (more preds than labels) are ignored instead of raising.
    """

    def __init__(self, feval: Callable, name: Optional[str] = None,
                 allow_extra_outputs: bool = False,
                 output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None):
        if name is None:
            name = feval.__name__
            if "<" in name:
                name = "custom(%s)" % name
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds) -> None:
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels):
            result = self._feval(backend.asnumpy(_raw(label)), backend.asnumpy(_raw(pred)))
            if isinstance(result, tuple):
                self._add(result[0], result[1])
            else:
                self._add(result, 1)

    def get_config(self) -> dict:
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval: Callable, name: Optional[str] = None,
       allow_extra_outputs: bool = False) -> CustomMetric:
    """A CustomMetric from a function of NumPy (label, pred) arrays."""
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
