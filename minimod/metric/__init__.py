"""`mx.metric`: evaluation metrics with MXNet 1.9.1's names, defaults and numbers.

Every metric keeps a local pair (`sum_metric`, `num_inst`), reset by `reset_local` (what
Speedometer calls), and a global pair (`global_sum_metric`, `global_num_inst`), reset only by
`reset`. `get()` is `sum_metric / num_inst` (NaN with no instances), except where a metric says
otherwise (Perplexity takes the exponential; F1, MCC and PCC derive it from counts).

The package: base.py (EvalMetric, the registry, shared array helpers), classification.py
(Accuracy, TopKAccuracy, F1, MCC), regression.py (MAE, MSE, RMSE), loss.py (Perplexity,
CrossEntropy, NegativeLogLikelihood, Loss), correlation.py (PearsonCorrelation, PCC) and
composite.py (CompositeEvalMetric, CustomMetric, `np`, `create`).

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

from .base import EvalMetric, alias, check_label_shapes, register
from .classification import F1, MCC, Accuracy, TopKAccuracy
from .composite import CompositeEvalMetric, CustomMetric, create, np
from .correlation import PCC, PearsonCorrelation
from .loss import Caffe, CrossEntropy, Loss, NegativeLogLikelihood, Perplexity, Torch
from .regression import MAE, MSE, RMSE

__all__ = [
    "EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "MCC", "Perplexity",
    "MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood", "PearsonCorrelation", "PCC",
    "Loss", "Torch", "Caffe", "CustomMetric", "np", "create", "register", "alias",
    "check_label_shapes",
]

for _klass, _aliases in [
        (CompositeEvalMetric, ("composite",)), (Accuracy, ("acc",)),
        (TopKAccuracy, ("top_k_accuracy", "top_k_acc")), (F1, ()), (MCC, ()), (Perplexity, ()),
        (MAE, ()), (MSE, ()), (RMSE, ()), (CrossEntropy, ("ce",)),
        (NegativeLogLikelihood, ("nll_loss",)), (PearsonCorrelation, ("pearsonr",)), (PCC, ()),
        (Loss, ()), (Torch, ()), (Caffe, ()), (CustomMetric, ())]:
    register(_klass)
    alias(*_aliases)(_klass)
del _klass, _aliases
