"""The softmax family: softmax, log_softmax, softmin and SoftmaxActivation. (SoftmaxOutput,
the softmax loss head, is in loss.py.)"""
from __future__ import annotations

import dataclasses
from typing import Literal, Optional

from ..base import OpParamError, ShapeError
from .helpers import attr_axis, same_dtype_types, write_grad
from .registry import Op, fmt_shape, register

__all__ = ["Softmax", "LogSoftmax", "Softmin", "SoftmaxActivation"]

FloatName = Literal["float16", "float32", "float64"]


def _softmax_into(xp, z, axis: int, y) -> None:
    """y = softmax(z) along axis (z may be y's own storage)."""
    shifted = z - z.max(axis=axis, keepdims=True)
    xp.exp(shifted, out=y)
    y /= y.sum(axis=axis, keepdims=True)


@dataclasses.dataclass(frozen=True)
class SoftmaxAttrs:
    axis: int = -1
    temperature: Optional[float] = None
    dtype: Optional[FloatName] = None
    use_length: Optional[bool] = False


@register
class Softmax(Op):
    """softmax(x / temperature) along `axis`; out has the shape of data.

    With use_length, a second input `length` (data's shape without `axis`, integers) keeps only
    the first length[...] entries along axis; the rest are 0. `dtype` sets the output's dtype.
    """

    name = "softmax"
    SIGNATURE_INPUTS = ("data", "length")
    Attrs = SoftmaxAttrs
    backward_inputs = ()
    backward_outputs = (0,)

    def arguments(self) -> list:
        return ["data", "length"] if self.attrs.use_length else ["data"]

    def _axis(self, ndim: int) -> int:
        return attr_axis(self, ndim)

    def infer_shape(self, in_shapes: list, out_shapes: list):
        self.same_shape(in_shapes, out_shapes, in_idx=[0])
        data = in_shapes[0]
        if self.attrs.use_length and data is not None:
            axis = self._axis(len(data))
            self.set_in(in_shapes, 1, tuple(data[:axis]) + tuple(data[axis + 1:]),
                        "data %s with axis=%d" % (fmt_shape(data), self.attrs.axis))
        return in_shapes, out_shapes

    def infer_type(self, in_types: list, out_types: list):
        if self.attrs.dtype is not None:
            out_types = [None] * len(out_types)
        in_types, out_types = same_dtype_types(self, in_types, out_types, (0,))
        if self.attrs.dtype is not None:
            out_types = [self.attrs.dtype] * len(out_types)
        if self.attrs.use_length and in_types[1] is None:
            in_types[1] = "int32"
        return in_types, out_types

    def _scaled(self, x):
        t = self.attrs.temperature
        return x if t is None or t == 1 else x / t

    def forward(self, xp, inputs, aux, out, is_train):
        x, y = inputs[0], out[0]
        axis = self._axis(x.ndim)
        z = self._scaled(x)
        if self.attrs.use_length:
            pos = xp.arange(x.shape[axis]).reshape((-1,) + (1,) * (x.ndim - axis - 1))
            keep = pos < xp.expand_dims(inputs[1], axis)
            z = xp.where(keep, z, -xp.inf)
            z = xp.where(keep.any(axis=axis, keepdims=True), z, 0)
            _softmax_into(xp, z, axis, y)
            y *= keep
            return
        _softmax_into(xp, z, axis, y)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        y, g = outputs[0], out_grads[0]
        axis = self._axis(y.ndim)
        if in_grads[0] is not None:
            in_grads[0][...] = self._scaled(y * (g - (g * y).sum(axis=axis, keepdims=True)))
        if self.attrs.use_length:
            write_grad(in_grads[1], 0)


@dataclasses.dataclass(frozen=True)
class LogSoftmaxAttrs:
    axis: int = -1
    temperature: Optional[float] = None
    dtype: Optional[FloatName] = None
    use_length: Optional[bool] = False  # MXNet's parameter; True is refused (see LogSoftmax)


@register
class LogSoftmax(Softmax):
    """log(softmax(x / temperature)) along `axis`; out has the shape of data."""

    name = "log_softmax"
    SIGNATURE_INPUTS = ("data",)
    PARAM_ORDER = ("axis", "temperature", "dtype", "use_length")
    Attrs = LogSoftmaxAttrs

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.use_length:
            raise OpParamError("operator log_softmax: use_length=True needs a length input, "
                               "which MXNet 1.9.1's log_softmax does not have (it fails the "
                               "same way); take the log of softmax(data, length, "
                               "use_length=True) instead")

    def arguments(self) -> list:
        return ["data"]

    def infer_shape(self, in_shapes: list, out_shapes: list):
        return self.same_shape(in_shapes, out_shapes)

    def infer_type(self, in_types: list, out_types: list):
        in_types, out_types = Op.infer_type(self, in_types, [None] * len(out_types))
        if self.attrs.dtype is not None:
            out_types = [self.attrs.dtype] * len(out_types)
        return in_types, out_types

    def forward(self, xp, inputs, aux, out, is_train):
        x, y = inputs[0], out[0]
        axis = self._axis(x.ndim)
        z = self._scaled(x)
        shifted = z - z.max(axis=axis, keepdims=True)
        y[...] = shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        y, g = outputs[0], out_grads[0]
        axis = self._axis(y.ndim)
        if in_grads[0] is not None:
            in_grads[0][...] = self._scaled(g - xp.exp(y) * g.sum(axis=axis, keepdims=True))


@dataclasses.dataclass(frozen=True)
class SoftmaxActivationAttrs:
    mode: Literal["instance", "channel"] = "instance"


@register
class SoftmaxActivation(Op):
    """Softmax over the last axis (mode='instance') or over axis 1 (mode='channel')."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "SoftmaxActivation"
    Attrs = SoftmaxActivationAttrs
    backward_inputs = ()
    backward_outputs = (0,)

    def _axis(self, ndim: int) -> int:
        return 1 if self.attrs.mode == "channel" else ndim - 1

    def infer_shape(self, in_shapes: list, out_shapes: list):
        if self.attrs.mode == "channel" and in_shapes[0] is not None and len(in_shapes[0]) < 2:
            raise ShapeError("input 'data' has shape %s but mode='channel' needs an axis 1"
                             % fmt_shape(in_shapes[0]))
        return self.same_shape(in_shapes, out_shapes)

    def forward(self, xp, inputs, aux, out, is_train):
        _softmax_into(xp, inputs[0], self._axis(inputs[0].ndim), out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        y, g = outputs[0], out_grads[0]
        if in_grads[0] is not None:
            in_grads[0][...] = y * (g - (g * y).sum(axis=self._axis(y.ndim), keepdims=True))


@register
class Softmin(Softmax):
    """softmax(-x / temperature) along `axis` (the smallest entries weigh most); out has the
    shape of data. With use_length, as softmax."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "softmin"
    SIGNATURE_INPUTS = ("data",)  # MXNet's frontend names no length input for softmin

    def _scaled(self, x):
        t = self.attrs.temperature
        return -x if t is None or t == 1 else x / -t


