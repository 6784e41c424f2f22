"""Classification metrics: Accuracy, TopKAccuracy, and the binary F1 and MCC built on shared
true/false positive/negative counts.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as _numpy

from .. import backend
from .base import EvalMetric, _paired, check_label_shapes


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
