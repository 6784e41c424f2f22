"""Batch normalisation variants of MXNet's contrib namespace, built on `BatchNorm`
(minimod/ops/normalization.py), whose statistics, moving averages and gradients they share:

- `_contrib_SyncBatchNorm`: BatchNorm whose batch statistics MXNet pools across the `ndev`
  devices of one process. One device's normalisation is BatchNorm's; what differs is the
  `var` output (the variance, where BatchNorm gives 1/sqrt(var + eps)) and the parameters.
- `_contrib_BatchNormWithReLU`: BatchNorm followed by relu in one op (MXNet runs it through
  oneDNN only), with BatchNorm's parameters and a hidden fourth output, the relu mask.

Both take MXNet's types: float16 data keeps gamma, beta, the moving statistics and the
mean / var outputs in float32; other data types use the data's type for all of them.
"""
from __future__ import annotations

import dataclasses

from ...base import DTypeError, OpParamError
from ..normalization import BatchNorm
from ..registry import register

__all__ = ["SyncBatchNorm", "BatchNormWithReLU"]


class _BatchNormVariant(BatchNorm):
    """Base of the variants: they run their own forward and backward. (A fast path or device
    variant registered for BatchNorm, which computes BatchNorm's outputs, is not theirs: the
    kernel registry matches exact op classes.)"""

    def infer_type(self, in_types, out_types):
        """MXNet's BatchNorm typing: data and output in the data's type; every parameter,
        aux state and statistic output in float32 for float16 data, else in the data's type."""
        data = in_types[0] if in_types[0] is not None else out_types[0]
        if data is None:
            return in_types, out_types
        param = "float32" if str(data) == "float16" else data
        for i, t in enumerate(in_types[1:], 1):
            if t is not None and str(t) != str(param):
                raise DTypeError("%s: input '%s' is %s but data of type %s needs %s"
                                 % (self.name, self._in_name(i), t, data, param))
        return ([data] + [param] * (len(in_types) - 1),
                [data] + [param] * (len(out_types) - 1))


# ----------------------------------------------------------------------------- SyncBatchNorm

@dataclasses.dataclass(frozen=True)
class SyncBatchNormAttrs:
    key: str
    eps: float = 1e-3
    momentum: float = 0.9
    fix_gamma: bool = True
    use_global_stats: bool = False
    output_mean_var: bool = False
    ndev: int = 1

    @property
    def axis(self) -> int:
        """The channel axis, always 1 (SyncBatchNorm has no axis parameter)."""
        return 1


@register
class SyncBatchNorm(_BatchNormVariant):
    """Synchronised batch normalisation over axis 1, for one device.

    data (N, C, ...), gamma, beta, moving_mean, moving_var, and the outputs `mean` and `var`
    are (C,). Training (is_train and not use_global_stats): out = (x - m) / sqrt(v + eps) *
    gamma + beta with the batch mean m and biased variance v over every axis but 1;
    otherwise the moving statistics stand in for them. `mean` holds m and `var` holds v
    itself (BatchNorm's `var` holds 1/sqrt(v + eps)); they are visible with output_mean_var.
    Outside training they hold the moving statistics (MXNet leaves them unwritten there).
    fix_gamma, the gradients and the moving averages (updated by backward, with v) are
    BatchNorm's.

    MXNet pools the statistics of a training pass across the `ndev` devices that share `key`,
    each running its own executor and waiting at a barrier for the others. minimod runs the
    executors of a device group one after another, so there is no second device to wait for:
    a training pass with ndev > 1 is refused (OpParamError), while inference and
    use_global_stats, which need no statistics from other devices, run for any ndev.
    """

    name = "_contrib_SyncBatchNorm"
    Attrs = SyncBatchNormAttrs
    PARAM_ORDER = ("eps", "momentum", "fix_gamma", "use_global_stats", "output_mean_var",
                   "ndev", "key")

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.ndev < 1:
            raise OpParamError("operator %s: ndev=%d must be >= 1"
                               % (self.name, self.attrs.ndev))

    def forward(self, xp, inputs, aux, out, is_train):
        a = self.attrs
        training = is_train and not a.use_global_stats
        if training and a.ndev > 1:
            raise OpParamError(
                "operator %s (key=%r): ndev=%d asks for batch statistics shared across "
                "devices, which minimod does not implement (its executors run one after "
                "another); train with ndev=1 (each device's own batch), use BatchNorm, or "
                "set use_global_stats" % (self.name, a.key, a.ndev))
        invstd = xp.empty_like(out[2])
        super().forward(xp, inputs, aux, [out[0], out[1], invstd], is_train)
        if training:
            # v from BatchNorm's 1/sqrt(v + eps): off by a few ulps of v + eps, no more
            xp.copyto(out[2], 1 / (invstd * invstd) - a.eps)
        else:
            xp.copyto(out[2], aux[1])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        invstd = 1 / xp.sqrt(outputs[2] + self.attrs.eps)
        super().backward(xp, out_grads, inputs, [outputs[0], outputs[1], invstd], in_grads,
                         aux)


# ----------------------------------------------------------------------------- BatchNormWithReLU

@register
class BatchNormWithReLU(_BatchNormVariant):
    """relu(BatchNorm(data)), with BatchNorm's parameters, outputs and moving averages.

    The hidden fourth output `workspace` (data's shape, the statistics' type) holds the relu
    mask, 1 where the normalised value is positive and 0 elsewhere; backward passes the head
    gradient through it and then back through BatchNorm.

    MXNet 1.9.1 has this op's kernel in oneDNN only, which takes 4-D float32 data with
    axis=1 on CPUs; the same math runs here for any rank, axis and float type, on any device.
    """

    name = "_contrib_BatchNormWithReLU"
    OUTPUTS = ("output", "mean", "var", "workspace")
    backward_inputs = (0, 1)
    backward_outputs = (1, 2, 3)

    def infer_shape(self, in_shapes, out_shapes):
        in_shapes, out_shapes = super().infer_shape(in_shapes, out_shapes)
        if in_shapes[0] is not None:
            self.set_out(out_shapes, 3, in_shapes[0])
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        super().forward(xp, inputs, aux, out[:3], is_train)
        xp.greater(out[0], 0, out=out[3])
        xp.maximum(out[0], 0, out=out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        head = out_grads[0] * outputs[3]
        super().backward(xp, [head, None, None], inputs, outputs[:3], in_grads, aux)
