"""Regression metrics: MAE, MSE and RMSE, each a per-batch mean averaged over update calls."""
from __future__ import annotations

from typing import Any, Optional, Sequence

from .base import EvalMetric, _paired, check_label_shapes


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
