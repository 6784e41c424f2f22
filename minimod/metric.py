"""`mx.metric`: evaluation metrics with MXNet 1.9.1's names, defaults and numbers.

Every metric keeps a local pair (`sum_metric`, `num_inst`), reset by `reset_local` (what
Speedometer calls), and a global pair (`global_sum_metric`, `global_num_inst`), reset only by
`reset`. `get()` is `sum_metric / num_inst` (NaN with no instances), except where a metric says
otherwise (Perplexity takes the exponential; F1, MCC and PCC derive it from counts).

Where minimod bends MXNet (and why):

- Lazy sync. MXNet copies every prediction to the host in `update` (a device sync per batch is
  the bulk of its `fit` overhead). The built-in metrics here compute on the array module that
  holds the prediction (NumPy or CuPy) and add into 0-d device arrays; the host sees a number only
  when `get()` or one of the `sum_metric`/`num_inst` attributes is read. The attributes are
  properties, so subclasses written for MXNet (`self.sum_metric += x`) keep working. F1, MCC
  and PCC still read a little back per update: F1/MCC must reject non-binary labels at update
  time, and PCC must know the largest class to size its confusion matrix. CustomMetric hands NumPy
  arrays to the user's function, as in MXNet.
- Accumulation is in float64, as MXNet's does under NumPy 1.x (a float32 batch result added to
  a Python float became float64). Per-batch reductions keep the input dtype, as MXNet's do.
- When labels and outputs do not pair up, `update_dict` keeps MXNet's message and adds which
  label names were paired with which output names (pain point #8: a Group with a BlockGrad head).
"""
from __future__ import annotations

import json
import math
import warnings
from collections import OrderedDict
from typing import Any, Callable, Optional, Sequence

import numpy as _numpy

from . import backend
from .ndarray import NDArray

__all__ = [
    "EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "MCC", "Perplexity",
    "MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood", "PearsonCorrelation", "PCC",
    "Loss", "Torch", "Caffe", "CustomMetric", "np", "create", "register", "alias",
    "check_label_shapes",
]

_NUMERIC = (float, int, _numpy.generic)
_REGISTRY: dict = {}


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


# ---------------------------------------------------------------------- registry
def register(klass: type, name: Optional[str] = None) -> type:
    """Make `klass` creatable as `create(name)` (the class name, lowercased, by default)."""
    if not (isinstance(klass, type) and issubclass(klass, EvalMetric)):
        raise AssertionError("Can only register subclass of EvalMetric")
    key = (klass.__name__ if name is None else name).lower()
    if key in _REGISTRY:
        old = _REGISTRY[key]
        warnings.warn("New metric %s.%s registered with name %s is overriding existing metric "
                      "%s.%s" % (klass.__module__, klass.__name__, key, old.__module__,
                                 old.__name__), UserWarning, stacklevel=2)
    _REGISTRY[key] = klass
    return klass


def alias(*aliases: str) -> Callable[[type], type]:
    """Class decorator registering the class under each of `aliases` as well."""
    def decorate(klass: type) -> type:
        for name in aliases:
            register(klass, name)
        return klass
    return decorate


def _create_registered(metric, *args, **kwargs) -> "EvalMetric":
    if isinstance(metric, EvalMetric):
        if args or kwargs:
            raise AssertionError(
                "metric is already an instance. Additional arguments are invalid")
        return metric
    if isinstance(metric, dict):
        config = dict(metric)
        return _create_registered(config.pop("metric"), **config)
    if not isinstance(metric, str):
        raise AssertionError("metric must be of string type")
    if metric.lstrip().startswith("{"):  # a config, as json.dumps(metric.get_config()) writes
        try:
            config = json.loads(metric)
        except ValueError as err:
            raise ValueError("metric config %r is not valid JSON: %s" % (metric, err)) from None
        return _create_registered(config, *args, **kwargs)
    key = metric.lower()
    if key not in _REGISTRY:
        raise AssertionError(
            "%s is not registered. Please register with metric.register first" % key)
    return _REGISTRY[key](*args, **kwargs)


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


# ---------------------------------------------------------------------- classification
class Accuracy(EvalMetric):
    """Fraction of positions where argmax(pred, axis) equals the label (both cast to int32).

    A prediction with the label's shape is taken as class ids already.
    """

    def __init__(self, axis: int = 1, name: str = "accuracy",
                 output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            xp, label, pred = _paired(label, pred)
            if pred.shape != label.shape:
                pred = xp.argmax(pred, axis=self.axis)
            pred = pred.astype(_numpy.int32).ravel()
            label = label.astype(_numpy.int32).ravel()
            check_label_shapes(label, pred)
            self._add(xp.count_nonzero(pred == label), pred.size)


class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the `top_k` highest scores (top_k > 1)."""

    def __init__(self, top_k: int = 1, name: str = "top_k_accuracy",
                 output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None):
        super().__init__(name, top_k=top_k, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.top_k = top_k
        if not self.top_k > 1:
            raise AssertionError("Please use Accuracy if top_k is no more than 1")
        self.name += "_%d" % self.top_k

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            if len(pred.shape) > 2:
                raise AssertionError("Predictions should be no more than 2 dims")
            xp, label, pred = _paired(label, pred)
            ranked = xp.argpartition(pred.astype(_numpy.float32), -self.top_k)
            label = label.astype(_numpy.int32)
            check_label_shapes(label, ranked)
            num_samples = ranked.shape[0]
            if ranked.ndim == 1:
                # MXNet compares the partition order itself here and leaves the global sum.
                self._add_local(xp.count_nonzero(ranked.ravel() == label.ravel()), num_samples)
                self._add_global(0, num_samples)
            else:
                num_classes = ranked.shape[1]
                top_k = min(num_classes, self.top_k)
                hits = xp.count_nonzero(ranked[:, num_classes - top_k:]
                                        == label.reshape(-1, 1))
                self._add(hits, num_samples)


class _BinaryClassificationMetrics:
    """True/false positive/negative counts of a two-class problem, local and global."""

    def __init__(self):
        self.reset_stats()

    def update_binary_stats(self, label, pred) -> None:
        xp, label, pred = _paired(label, pred)
        label = label.astype(_numpy.int32)
        pred_label = xp.argmax(pred, axis=1)
        check_label_shapes(label, pred)
        if xp.unique(label).size > 2:
            raise ValueError("%s currently only supports binary classification."
                             % self.__class__.__name__)
        pred_true = pred_label == 1
        label_true = label == 1
        counts = xp.stack([
            xp.count_nonzero(pred_true & label_true), xp.count_nonzero(pred_true & ~label_true),
            xp.count_nonzero(~pred_true & label_true), xp.count_nonzero(~pred_true & ~label_true)])
        true_pos, false_pos, false_neg, true_neg = (int(c) for c in backend.asnumpy(counts))
        self.true_positives += true_pos
        self.global_true_positives += true_pos
        self.false_positives += false_pos
        self.global_false_positives += false_pos
        self.false_negatives += false_neg
        self.global_false_negatives += false_neg
        self.true_negatives += true_neg
        self.global_true_negatives += true_neg

    @staticmethod
    def _share(hits: int, misses: int) -> float:
        return float(hits) / (hits + misses) if hits + misses > 0 else 0.0

    @property
    def precision(self) -> float:
        return self._share(self.true_positives, self.false_positives)

    @property
    def global_precision(self) -> float:
        return self._share(self.global_true_positives, self.global_false_positives)

    @property
    def recall(self) -> float:
        return self._share(self.true_positives, self.false_negatives)

    @property
    def global_recall(self) -> float:
        return self._share(self.global_true_positives, self.global_false_negatives)

    @staticmethod
    def _harmonic(precision: float, recall: float) -> float:
        if precision + recall > 0:
            return 2 * precision * recall / (precision + recall)
        return 0.0

    @property
    def fscore(self) -> float:
        return self._harmonic(self.precision, self.recall)

    @property
    def global_fscore(self) -> float:
        return self._harmonic(self.global_precision, self.global_recall)

    def matthewscc(self, use_global: bool = False) -> float:
        if use_global:
            if not self.global_total_examples:
                return 0.0
            tp, fp = float(self.global_true_positives), float(self.global_false_positives)
            fn, tn = float(self.global_false_negatives), float(self.global_true_negatives)
        else:
            if not self.total_examples:
                return 0.0
            tp, fp = float(self.true_positives), float(self.false_positives)
            fn, tn = float(self.false_negatives), float(self.true_negatives)
        denom = 1.0
        for term in (tp + fp, tp + fn, tn + fp, tn + fn):
            if term != 0.0:  # a zero margin counts as 1, so MCC is 0 rather than NaN
                denom *= term
        return (tp * tn - fp * fn) / math.sqrt(denom)

    @property
    def total_examples(self) -> int:
        return (self.false_negatives + self.false_positives + self.true_negatives
                + self.true_positives)

    @property
    def global_total_examples(self) -> int:
        return (self.global_false_negatives + self.global_false_positives
                + self.global_true_negatives + self.global_true_positives)

    def local_reset_stats(self) -> None:
        self.false_positives = self.false_negatives = 0
        self.true_positives = self.true_negatives = 0

    def reset_stats(self) -> None:
        self.local_reset_stats()
        self.global_false_positives = self.global_false_negatives = 0
        self.global_true_positives = self.global_true_negatives = 0


class F1(EvalMetric):
    """Binary F1 of class 1. 'macro': mean of per-update F1; 'micro': F1 of pooled counts."""

    def __init__(self, name: str = "f1", output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None, average: str = "macro"):
        self.average = average
        self.metrics = _BinaryClassificationMetrics()
        super().__init__(name=name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self.metrics.update_binary_stats(label, pred)
        stats = self.metrics
        if self.average == "macro":
            self.sum_metric += stats.fscore
            self.global_sum_metric += stats.global_fscore
            self.num_inst += 1
            self.global_num_inst += 1
            # MXNet clears the global counts here too, so 'macro' global F1 is per update.
            stats.reset_stats()
        else:
            self.sum_metric = stats.fscore * stats.total_examples
            self.global_sum_metric = stats.global_fscore * stats.global_total_examples
            self.num_inst = stats.total_examples
            self.global_num_inst = stats.global_total_examples

    def reset(self) -> None:
        super().reset()
        self.metrics.reset_stats()

    def reset_local(self) -> None:
        super().reset_local()
        self.metrics.local_reset_stats()


class MCC(EvalMetric):
    """Binary Matthews correlation coefficient; 'macro' / 'micro' as for F1."""

    def __init__(self, name: str = "mcc", output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None, average: str = "macro"):
        self._average = average
        self._metrics = _BinaryClassificationMetrics()
        super().__init__(name=name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self._metrics.update_binary_stats(label, pred)
        stats = self._metrics
        if self._average == "macro":
            self.sum_metric += stats.matthewscc()
            self.global_sum_metric += stats.matthewscc(use_global=True)
            self.num_inst += 1
            self.global_num_inst += 1
            stats.reset_stats()
        else:
            self.sum_metric = stats.matthewscc() * stats.total_examples
            self.global_sum_metric = (stats.matthewscc(use_global=True)
                                      * stats.global_total_examples)
            self.num_inst = stats.total_examples
            self.global_num_inst = stats.global_total_examples

    def reset(self) -> None:
        self.sum_metric = 0.0
        self.num_inst = 0.0
        self.global_sum_metric = 0.0
        self.global_num_inst = 0.0
        self._metrics.reset_stats()

    def reset_local(self) -> None:
        self.sum_metric = 0.0
        self.num_inst = 0.0
        self._metrics.local_reset_stats()


class Perplexity(EvalMetric):
    """exp(-mean log p[label]) over positions whose label is not `ignore_label`."""

    def __init__(self, ignore_label: Optional[int], axis: int = -1, name: str = "perplexity",
                 output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds) -> None:
        if len(labels) != len(preds):
            raise AssertionError(
                "Perplexity: %d labels for %d predictions" % (len(labels), len(preds)))
        loss = 0.0
        num = 0
        for label, pred in zip(labels, preds):
            if label.size != pred.size / pred.shape[-1]:
                raise AssertionError("shape mismatch: %s vs. %s" % (label.shape, pred.shape))
            xp, label, pred = _paired(label, pred)
            label = label.reshape((label.size,))
            axis = self.axis % pred.ndim
            index = xp.clip(label.astype(_numpy.int32), 0, pred.shape[axis] - 1)
            index = index.reshape(pred.shape[:axis] + pred.shape[axis + 1:])
            prob = xp.take_along_axis(pred, xp.expand_dims(index, axis), axis=axis)
            prob = prob.squeeze(axis)
            if self.ignore_label is not None:
                ignore = (label == self.ignore_label).astype(prob.dtype)
                num = num - _as_f64(ignore.sum())
                prob = prob * (1 - ignore) + ignore
            floor = prob.dtype.type(1e-10)
            loss = loss - _as_f64(xp.log(xp.maximum(prob, floor)).sum())
            num = num + prob.size
        self._add(loss, num)

    def get(self) -> tuple:
        num = self.num_inst
        if num == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.sum_metric / num))

    def get_global(self) -> tuple:
        num = self.global_num_inst
        if num == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.global_sum_metric / num))


# ---------------------------------------------------------------------- regression
class _PerBatchMean(EvalMetric):
    """Adds one instance per (label, pred) pair: the batch mean of `_reduce(label - pred)`."""

    def __init__(self, name: str, output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    @staticmethod
    def _reduce(xp, diff) -> Any:
        raise NotImplementedError()

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            xp, label, pred = _paired(label, pred)
            if label.ndim == 1:
                label = label.reshape(label.shape[0], 1)
            if pred.ndim == 1:
                pred = pred.reshape(pred.shape[0], 1)
            self._add(self._reduce(xp, label - pred), 1)


class MAE(_PerBatchMean):
    """Mean absolute error, averaged over update calls (one instance per label/pred pair)."""

    def __init__(self, name: str = "mae", output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _reduce(xp, diff) -> Any:
        return xp.abs(diff).mean()


class MSE(_PerBatchMean):
    """Mean squared error, averaged over update calls (one instance per label/pred pair)."""

    def __init__(self, name: str = "mse", output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _reduce(xp, diff) -> Any:
        return (diff ** 2.0).mean()


class RMSE(_PerBatchMean):
    """Root mean squared error per pair, averaged over update calls (not the RMSE of all)."""

    def __init__(self, name: str = "rmse", output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _reduce(xp, diff) -> Any:
        return xp.sqrt((diff ** 2.0).mean())


# ---------------------------------------------------------------------- likelihood
class CrossEntropy(EvalMetric):
    """Mean over samples of -log(pred[i, label[i]] + eps)."""

    def __init__(self, eps: float = 1e-12, name: str = "cross-entropy",
                 output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def _check(self, label, pred) -> None:
        if label.shape[0] != pred.shape[0]:
            raise AssertionError("%s: %d labels for %d predictions"
                                 % (self.name, label.shape[0], pred.shape[0]))

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            xp, label, pred = _paired(label, pred)
            label = label.ravel()
            self._check(label, pred)
            num = label.shape[0]
            prob = pred[xp.arange(num), label.astype(_numpy.int64)]
            self._add((-xp.log(prob + self.eps)).sum(), num)


class NegativeLogLikelihood(CrossEntropy):
    """Mean over samples of -log(pred[i, label[i]] + eps) (CrossEntropy under another name)."""

    def __init__(self, eps: float = 1e-12, name: str = "nll-loss",
                 output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None):
        super().__init__(eps=eps, name=name, output_names=output_names,
                         label_names=label_names)

    def _check(self, label, pred) -> None:
        if label.shape[0] != pred.shape[0]:
            raise AssertionError((label.shape[0], pred.shape[0]))


# ---------------------------------------------------------------------- correlation
class PearsonCorrelation(EvalMetric):
    """Pearson r of flattened label and pred: 'macro' averages per-pair r, 'micro' pools all.

    As in MXNet, in 'micro' mode the global value stays 0 and reset_local keeps the pooled sums.
    """

    def __init__(self, name: str = "pearsonr", output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None, average: str = "macro"):
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def reset_micro(self) -> None:
        self._sse_p = self._mean_p = self._sse_l = self._mean_l = 0
        self._pred_nums = self._label_nums = 0
        self._conv = 0

    def reset(self) -> None:
        super().reset()
        if self.average == "micro":
            self.reset_micro()

    @staticmethod
    def _welford(xp, values, count, mean, m_2) -> tuple:
        count += values.size
        delta = values - mean
        mean = mean + xp.sum(delta / count)
        m_2 = m_2 + xp.sum(delta * (values - mean))
        return count, mean, m_2

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            check_label_shapes(label, pred, False, True)
            xp, label, pred = _paired(label, pred)
            label = label.ravel().astype(_numpy.float64)
            pred = pred.ravel().astype(_numpy.float64)
            if self.average == "macro":
                self._add(xp.corrcoef(pred, label)[0, 1], 1)
                continue
            self._num_inst = self._num_inst + 1
            self._global_num_inst = self._global_num_inst + 1
            self._label_nums, self._mean_l, self._sse_l = self._welford(
                xp, label, self._label_nums, self._mean_l, self._sse_l)
            self._conv = self._conv + xp.sum((label - self._mean_l) * (pred - self._mean_p))
            self._pred_nums, self._mean_p, self._sse_p = self._welford(
                xp, pred, self._pred_nums, self._mean_p, self._sse_p)

    def get(self) -> tuple:
        if self.num_inst == 0:
            return (self.name, float("nan"))
        if self.average == "macro":
            return (self.name, _ratio(self.sum_metric, self.num_inst))
        n = self._label_nums
        conv, sse_p, sse_l = (float(_to_host(v)) for v in (self._conv, self._sse_p, self._sse_l))
        return (self.name, conv / ((n - 1) * math.sqrt(sse_p / (n - 1))
                                   * math.sqrt(sse_l / (n - 1))))


class PCC(EvalMetric):
    """Multi-class Matthews correlation from a confusion matrix that grows with the classes."""

    def __init__(self, name: str = "pcc", output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None, has_global_stats: bool = True):
        self.k = 2
        self.lcm = self.gcm = _numpy.zeros((2, 2))
        super().__init__(name=name, output_names=output_names, label_names=label_names,
                         has_global_stats=has_global_stats)

    def _grow(self, xp, inc: int) -> None:
        pad = ((0, inc), (0, inc))
        self.lcm = xp.pad(xp.asarray(self.lcm), pad, "constant", constant_values=0)
        self.gcm = xp.pad(xp.asarray(self.gcm), pad, "constant", constant_values=0)
        self.k += inc

    @staticmethod
    def _calc_mcc(cmat) -> float:
        cmat = backend.asnumpy(cmat)
        n = cmat.sum()
        x = cmat.sum(axis=1)
        y = cmat.sum(axis=0)
        cov_xx = _numpy.sum(x * (n - x))
        cov_yy = _numpy.sum(y * (n - y))
        if cov_xx == 0 or cov_yy == 0:
            return float("nan")
        cov_xy = _numpy.sum(cmat.diagonal() * n - x * y)
        return cov_xy / (cov_xx * cov_yy) ** 0.5

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            xp, label, pred = _paired(label, pred)
            label = label.astype(_numpy.int32)
            if pred.shape != label.shape:
                pred = pred.argmax(axis=1)
            pred = pred.astype(_numpy.int32).ravel()
            label = label.ravel()
            # The matrix must be sized before counting: one scalar comes to the host.
            n = int(xp.maximum(pred.max(), label.max()))
            if n >= self.k:
                self._grow(xp, n + 1 - self.k)
            counts = xp.bincount(pred * self.k + label, minlength=self.k * self.k)
            counts = counts.reshape(self.k, self.k).astype(_numpy.float64)
            self.lcm = xp.asarray(self.lcm) + counts
            self.gcm = xp.asarray(self.gcm) + counts
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self) -> Any:  # type: ignore[override]
        return self._calc_mcc(self.lcm) * self.num_inst

    @sum_metric.setter
    def sum_metric(self, value: Any) -> None:
        raise AttributeError("PCC derives sum_metric from its confusion matrix")

    @property
    def global_sum_metric(self) -> Any:  # type: ignore[override]
        return self._calc_mcc(self.gcm) * self.global_num_inst

    @global_sum_metric.setter
    def global_sum_metric(self, value: Any) -> None:
        raise AttributeError("PCC derives global_sum_metric from its confusion matrix")

    def reset(self) -> None:
        self.global_num_inst = 0.0
        self.gcm = _numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self) -> None:
        self.num_inst = 0.0
        self.lcm = _numpy.zeros((self.k, self.k))


# ---------------------------------------------------------------------- loss heads
class Loss(EvalMetric):
    """Mean of the output values, labels ignored (for MakeLoss heads)."""

    def __init__(self, name: str = "loss", output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _, preds) -> None:
        if isinstance(preds, NDArray):
            preds = [preds]
        for pred in preds:
            raw = _raw(pred)
            self._add(raw.sum(), raw.size)


class Torch(Loss):
    """Loss under the name 'torch' (kept for MXNet's torch plugin)."""

    def __init__(self, name: str = "torch", output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None):
        super().__init__(name, output_names=output_names, label_names=label_names)


class Caffe(Loss):
    """Loss under the name 'caffe' (kept for MXNet's caffe plugin)."""

    def __init__(self, name: str = "caffe", output_names: Optional[Sequence[str]] = None,
                 label_names: Optional[Sequence[str]] = None):
        super().__init__(name, output_names=output_names, label_names=label_names)


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


for _klass, _aliases in [
        (CompositeEvalMetric, ("composite",)), (Accuracy, ("acc",)),
        (TopKAccuracy, ("top_k_accuracy", "top_k_acc")), (F1, ()), (MCC, ()), (Perplexity, ()),
        (MAE, ()), (MSE, ()), (RMSE, ()), (CrossEntropy, ("ce",)),
        (NegativeLogLikelihood, ("nll_loss",)), (PearsonCorrelation, ("pearsonr",)), (PCC, ()),
        (Loss, ()), (Torch, ()), (Caffe, ()), (CustomMetric, ())]:
    register(_klass)
    alias(*_aliases)(_klass)
del _klass, _aliases
