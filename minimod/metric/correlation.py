"""Correlation metrics: PearsonCorrelation of label and prediction, and PCC (multi-class
Matthews correlation from a growing confusion matrix).
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as _numpy

from .. import backend
from .base import EvalMetric, _paired, _ratio, _to_host, check_label_shapes


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
