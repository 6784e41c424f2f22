"""Likelihood and loss metrics: Perplexity, CrossEntropy, NegativeLogLikelihood, and Loss (with
its plugin-named twins Torch and Caffe) for MakeLoss heads.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as _numpy

from ..ndarray import NDArray
from .base import EvalMetric, _as_f64, _paired, _raw, check_label_shapes


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
