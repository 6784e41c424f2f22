"""Normalisation layers that learn a scale and a shift: BatchNorm, LayerNorm, InstanceNorm and
GroupNorm.

Where MXNet 1.9.1 on CPU and on GPU disagree, we follow the documented or GPU behaviour and say
so in the op's docstring (BatchNorm's moving statistics).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

from ..base import DTypeError, ShapeError
from .helpers import attr_axis, bias_view, dtype_of, param_error, reduce_axes, write_grad
from .registry import Op, fmt_shape, register

__all__ = ["BatchNorm", "LayerNorm", "InstanceNorm", "GroupNorm"]


@dataclasses.dataclass(frozen=True)
class BatchNormAttrs:
    eps: float = 1e-3
    momentum: float = 0.9
    fix_gamma: bool = True
    use_global_stats: bool = False
    output_mean_var: bool = False
    axis: int = 1
    cudnn_off: bool = False
    min_calib_range: Optional[float] = None
    max_calib_range: Optional[float] = None


@register
class BatchNorm(Op):
    """Batch normalisation over every axis but `axis` (the channel axis, default 1).

    data (.., C, ..), gamma, beta, moving_mean, moving_var and the outputs `mean`, `var` are (C,).
    Training (is_train and not use_global_stats): with the batch mean m and biased variance v,
    out = (x - m) / sqrt(v + eps) * gamma + beta. Otherwise the moving statistics stand in for m
    and v. fix_gamma treats gamma as 1 (its gradient is 0). The `mean` output holds the mean used
    and `var` holds 1/sqrt(v + eps) (as MXNet's do); they are visible only with output_mean_var.

    The moving statistics are updated in place by backward, as MXNet 1.9.1 does on the CPU:
    mm = momentum*mm + (1-momentum)*m, mv = momentum*mv + (1-momentum)*v, with v recovered from
    the saved 1/sqrt(v + eps). A training forward that is not followed by a backward leaves them
    alone, exactly as in MXNet, so results agree number for number.
    """

    input_var_attrs = {"moving_mean": {"__init__": '["zero", {}]'},
                       "moving_var": {"__init__": '["one", {}]'}}

    name = "BatchNorm"
    Attrs = BatchNormAttrs
    ARGUMENTS = ("data", "gamma", "beta")
    OUTPUTS = ("output", "mean", "var")
    AUX = ("moving_mean", "moving_var")
    backward_inputs = (0, 1)
    backward_outputs = (1, 2)

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.eps <= 0:
            raise param_error(self.name, "eps must be positive, got %g" % self.attrs.eps)

    def num_visible_outputs(self) -> int:
        return 3 if self.attrs.output_mean_var else 1

    def _axis(self, ndim: int) -> int:
        return attr_axis(self, ndim)

    def _shape_note(self, data) -> str:
        """How inference names the data in its messages."""
        return "data %s with axis=%d" % (fmt_shape(data), self.attrs.axis)

    def infer_shape(self, in_shapes: list, out_shapes: list):
        if in_shapes[0] is None:  # as MXNet: nothing is deduced before the data's rank is known
            return in_shapes, out_shapes
        self.same_shape(in_shapes, out_shapes, in_idx=[0], out_idx=[0])
        data = in_shapes[0]
        channels = data[self._axis(len(data))]
        why = self._shape_note(data)
        for i in range(1, 5):
            self.set_in(in_shapes, i, (channels,), why)
        for i in (1, 2):
            self.set_out(out_shapes, i, (channels,), why)
        return in_shapes, out_shapes

    def infer_type(self, in_types: list, out_types: list):
        """MXNet's rule: the parameters, moving statistics and mean/var outputs are float32
        for float16 data (the statistics are accumulated in float32), else data's dtype."""
        data = in_types[0] if in_types[0] is not None else out_types[0]
        if data is None:
            return in_types, out_types
        data = dtype_of(data)
        acc = dtype_of("float32") if data == dtype_of("float16") else data
        for i in range(1, len(in_types)):
            if in_types[i] is not None and dtype_of(in_types[i]) != acc:
                raise DTypeError("input '%s' has dtype %s but data of %s needs %s"
                                 % (self._in_name(i), dtype_of(in_types[i]), data, acc))
        return [data] + [acc] * (len(in_types) - 1), [data] + [acc] * (len(out_types) - 1)

    def forward(self, xp, inputs, aux, out, is_train):
        x, gamma, beta = inputs
        moving_mean, moving_var = aux
        a = self.attrs
        axis = self._axis(x.ndim)
        axes = reduce_axes(x.ndim, axis)
        if is_train and a.fix_gamma:
            gamma[...] = 1  # as MXNet: a training pass writes the fixed gamma back as ones
        if is_train and not a.use_global_stats:
            mean = x.mean(axis=axes, dtype=out[1].dtype)
            var = x.var(axis=axes, dtype=out[1].dtype)
        else:
            mean, var = moving_mean, moving_var
        out[1][...] = mean
        out[2][...] = 1 / xp.sqrt(var + a.eps)
        scale = out[2] if a.fix_gamma else out[2] * gamma
        out[0][...] = (x - bias_view(out[1], x.ndim, axis)) * bias_view(scale, x.ndim, axis) \
            + bias_view(beta, x.ndim, axis)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, gamma = inputs[0], inputs[1]
        g = out_grads[0]
        a = self.attrs
        axis = self._axis(x.ndim)
        axes = reduce_axes(x.ndim, axis)
        mean, invstd = outputs[1], outputs[2]
        if not a.use_global_stats:
            moving_mean, moving_var = aux
            moving_mean *= a.momentum
            moving_mean += (1 - a.momentum) * mean
            moving_var *= a.momentum
            moving_var += (1 - a.momentum) * (1 / (invstd * invstd) - a.eps)
        xhat = (x - bias_view(mean, x.ndim, axis)) * bias_view(invstd, x.ndim, axis)
        dbeta = g.sum(axis=axes, dtype=mean.dtype)
        dgamma = (g * xhat).sum(axis=axes, dtype=mean.dtype)
        write_grad(in_grads[2], dbeta)
        if in_grads[1] is not None:
            in_grads[1][...] = 0 if a.fix_gamma else dgamma
        if in_grads[0] is None:
            return
        scale = invstd if a.fix_gamma else invstd * gamma
        scale = bias_view(scale, x.ndim, axis)
        if a.use_global_stats:
            in_grads[0][...] = g * scale
            return
        count = x.size // x.shape[axis]
        in_grads[0][...] = scale * (g - (bias_view(dbeta, x.ndim, axis)
                                         + xhat * bias_view(dgamma, x.ndim, axis)) / count)


# ----------------------------------------------------------------------------- LayerNorm

def _normalise_backward(xp, g, xhat, invstd, axes):
    """Gradient of xhat = (x - mean(x)) * invstd w.r.t. x, the statistics taken over `axes`."""
    count = math.prod(g.shape[i] for i in axes)
    mean_g = g.sum(axis=axes, keepdims=True) / count
    mean_gx = (g * xhat).sum(axis=axes, keepdims=True) / count
    return invstd * (g - mean_g - xhat * mean_gx)


@dataclasses.dataclass(frozen=True)
class LayerNormAttrs:
    axis: int = -1
    eps: float = 1e-5
    output_mean_var: bool = False


@register
class LayerNorm(Op):
    """Normalise over `axis` only: out = (x - mean) / sqrt(var + eps) * gamma + beta.

    gamma and beta are (data.shape[axis],). The outputs `mean` and `std` (= sqrt(var + eps)) have
    data's shape with axis reduced to 1; they are visible only with output_mean_var.
    """

    name = "LayerNorm"
    Attrs = LayerNormAttrs
    ARGUMENTS = ("data", "gamma", "beta")
    OUTPUTS = ("output", "mean", "std")
    backward_inputs = (0, 1)
    backward_outputs = (1, 2)

    def num_visible_outputs(self) -> int:
        return 3 if self.attrs.output_mean_var else 1

    def _axis(self, ndim: int) -> int:
        return attr_axis(self, ndim)

    def infer_shape(self, in_shapes: list, out_shapes: list):
        self.same_shape(in_shapes, out_shapes, in_idx=[0], out_idx=[0])
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        axis = self._axis(len(data))
        why = "data %s with axis=%d" % (fmt_shape(data), self.attrs.axis)
        self.set_in(in_shapes, 1, (data[axis],), why)
        self.set_in(in_shapes, 2, (data[axis],), why)
        reduced = tuple(1 if i == axis else d for i, d in enumerate(data))
        self.set_out(out_shapes, 1, reduced, why)
        self.set_out(out_shapes, 2, reduced, why)
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        x, gamma, beta = inputs
        axis = self._axis(x.ndim)
        out[1][...] = x.mean(axis=axis, keepdims=True)
        out[2][...] = xp.sqrt(x.var(axis=axis, keepdims=True) + self.attrs.eps)
        out[0][...] = (x - out[1]) / out[2] * bias_view(gamma, x.ndim, axis) \
            + bias_view(beta, x.ndim, axis)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, gamma = inputs[0], inputs[1]
        g = out_grads[0]
        axis = self._axis(x.ndim)
        xhat = (x - outputs[1]) / outputs[2]
        others = reduce_axes(x.ndim, axis)
        write_grad(in_grads[1], (g * xhat).sum(axis=others))
        write_grad(in_grads[2], g.sum(axis=others))
        if in_grads[0] is not None:
            in_grads[0][...] = _normalise_backward(
                xp, g * bias_view(gamma, x.ndim, axis), xhat, 1 / outputs[2], (axis,))


@dataclasses.dataclass(frozen=True)
class InstanceNormAttrs:
    eps: float = 1e-3


@register
class InstanceNorm(Op):
    """Normalise each (sample, channel) map over its spatial dims, then scale and shift per channel.

    data (N, C, *spatial), gamma and beta (C,). The hidden outputs `mean` and `var` are
    (N, C, 1, ...) and hold the mean and 1/sqrt(variance + eps).
    """

    name = "InstanceNorm"
    Attrs = InstanceNormAttrs
    ARGUMENTS = ("data", "gamma", "beta")
    OUTPUTS = ("output", "mean", "var")
    backward_inputs = (0, 1)
    backward_outputs = (1, 2)

    def num_visible_outputs(self) -> int:
        return 1

    def infer_shape(self, in_shapes: list, out_shapes: list):
        self.same_shape(in_shapes, out_shapes, in_idx=[0], out_idx=[0])
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        if len(data) < 3:
            raise ShapeError("input 'data' has shape %s but InstanceNorm needs (N, C, ...)"
                             % fmt_shape(data))
        why = "data %s" % fmt_shape(data)
        self.set_in(in_shapes, 1, (data[1],), why)
        self.set_in(in_shapes, 2, (data[1],), why)
        stats = tuple(data[:2]) + (1,) * (len(data) - 2)
        self.set_out(out_shapes, 1, stats, why)
        self.set_out(out_shapes, 2, stats, why)
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        x, gamma, beta = inputs
        axes = tuple(range(2, x.ndim))
        out[1][...] = x.mean(axis=axes, keepdims=True)
        out[2][...] = 1 / xp.sqrt(x.var(axis=axes, keepdims=True) + self.attrs.eps)
        out[0][...] = (x - out[1]) * out[2] * bias_view(gamma, x.ndim) + bias_view(beta, x.ndim)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, gamma = inputs[0], inputs[1]
        g = out_grads[0]
        axes = tuple(range(2, x.ndim))
        xhat = (x - outputs[1]) * outputs[2]
        others = reduce_axes(x.ndim, 1)
        write_grad(in_grads[1], (g * xhat).sum(axis=others))
        write_grad(in_grads[2], g.sum(axis=others))
        if in_grads[0] is not None:
            in_grads[0][...] = _normalise_backward(xp, g * bias_view(gamma, x.ndim), xhat,
                                                   outputs[2], axes)


# ----------------------------------------------------------------------------- GroupNorm

@dataclasses.dataclass(frozen=True)
class GroupNormAttrs:
    num_groups: int = 1
    eps: float = 1e-5
    output_mean_var: bool = False


@register
class GroupNorm(Op):
    """Normalise each group of num_groups channel groups per sample over its channels and
    positions, then scale and shift per group: data (N, C, ...), gamma and beta
    (num_groups,), as in MXNet 1.9.1. The outputs `mean` and `std` (= sqrt(var + eps)) are
    (N, num_groups) and visible only with output_mean_var."""

    name = "GroupNorm"
    Attrs = GroupNormAttrs
    ARGUMENTS = ("data", "gamma", "beta")
    OUTPUTS = ("output", "mean", "std")
    backward_inputs = (0, 1)
    backward_outputs = (1, 2)

    def num_visible_outputs(self) -> int:
        return 3 if self.attrs.output_mean_var else 1

    def infer_shape(self, in_shapes: list, out_shapes: list):
        self.same_shape(in_shapes, out_shapes, in_idx=[0], out_idx=[0])
        data, groups = in_shapes[0], self.attrs.num_groups
        if data is None:
            return in_shapes, out_shapes
        if len(data) < 2 or (data[1] is not None and data[1] % groups):
            raise ShapeError("input 'data' has shape %s but GroupNorm needs (N, C, ...) with C "
                             "divisible by num_groups=%d" % (fmt_shape(data), groups))
        why = "num_groups=%d" % groups
        self.set_in(in_shapes, 1, (groups,), why)
        self.set_in(in_shapes, 2, (groups,), why)
        self.set_out(out_shapes, 1, (data[0], groups), why)
        self.set_out(out_shapes, 2, (data[0], groups), why)
        return in_shapes, out_shapes

    def _grouped(self, x):
        return x.reshape(x.shape[0], self.attrs.num_groups, -1)

    def forward(self, xp, inputs, aux, out, is_train):
        x, gamma, beta = inputs
        xg, mean, std = self._grouped(x), out[1], out[2]
        mean[...] = xg.mean(axis=2)
        std[...] = xp.sqrt(xg.var(axis=2) + self.attrs.eps)
        y = self._grouped(out[0])
        xp.subtract(xg, mean[:, :, None], out=y)
        y /= std[:, :, None]
        y *= gamma[:, None]
        y += beta[:, None]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, gamma = inputs[0], inputs[1]
        g = self._grouped(out_grads[0])
        mean, std = outputs[1][:, :, None], outputs[2][:, :, None]
        xhat = (self._grouped(x) - mean) / std
        write_grad(in_grads[1], (g * xhat).sum(axis=(0, 2)))
        write_grad(in_grads[2], g.sum(axis=(0, 2)))
        if in_grads[0] is not None:
            self._grouped(in_grads[0])[...] = _normalise_backward(
                xp, g * gamma[:, None], xhat, 1 / std, (2,))


