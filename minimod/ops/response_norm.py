"""Normalisation by the norm of neighbouring values, with nothing learnt: L2Normalization and
LRN (local response normalisation across channels)."""
from __future__ import annotations

import dataclasses
from typing import Literal

from ..base import ShapeError
from .helpers import param_error
from .registry import Op, fmt_shape, register

__all__ = ["L2Normalization", "LRN"]


@dataclasses.dataclass(frozen=True)
class L2NormalizationAttrs:
    eps: float = 1e-10
    mode: Literal["instance", "channel", "spatial"] = "instance"


@register
class L2Normalization(Op):
    """out = x / sqrt(sum(x**2) + eps), the sum taken per sample over every other axis
    ('instance'), over the channels at each position ('channel') or over each channel's
    positions ('spatial'). The hidden output `norm` holds the divisor: (N,), data's shape
    without the channel axis, or (N, C)."""

    name = "L2Normalization"
    Attrs = L2NormalizationAttrs
    OUTPUTS = ("output", "norm")
    backward_inputs = ()
    backward_outputs = (0, 1)

    def num_visible_outputs(self) -> int:
        return 1

    def _axes(self, ndim: int) -> tuple:
        mode = self.attrs.mode
        if mode == "instance":
            return tuple(range(1, ndim))
        return (1,) if mode == "channel" else tuple(range(2, ndim))

    def infer_shape(self, in_shapes: list, out_shapes: list):
        self.same_shape(in_shapes, out_shapes, in_idx=[0], out_idx=[0])
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        need = 2 if self.attrs.mode == "instance" else 3
        if len(data) < need:
            raise ShapeError("input 'data' has shape %s but L2Normalization mode='%s' needs "
                             "%d or more dims" % (fmt_shape(data), self.attrs.mode, need))
        axes = self._axes(len(data))
        self.set_out(out_shapes, 1, tuple(d for i, d in enumerate(data) if i not in axes),
                     "data %s" % fmt_shape(data))
        return in_shapes, out_shapes

    def _kept(self, norm, ndim: int):
        """norm with the reduced axes back as 1s, to broadcast against data."""
        axes, dims = self._axes(ndim), iter(norm.shape)
        return norm.reshape([1 if i in axes else next(dims) for i in range(ndim)])

    def forward(self, xp, inputs, aux, out, is_train):
        x, y, norm = inputs[0], out[0], out[1]
        axes = self._axes(x.ndim)
        kept = self._kept(norm, x.ndim)
        xp.sum(x * x, axis=axes, keepdims=True, out=kept)
        kept += kept.dtype.type(self.attrs.eps)
        xp.sqrt(kept, out=kept)
        xp.divide(x, kept, out=y)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is None:
            return
        y, g = outputs[0], out_grads[0]
        axes = self._axes(y.ndim)
        dot = (g * y).sum(axis=axes, keepdims=True)
        xp.multiply(y, dot, out=dx)
        xp.subtract(g, dx, out=dx)
        dx /= self._kept(outputs[1], y.ndim)


# ----------------------------------------------------------------------------- LRN

@dataclasses.dataclass(frozen=True)
class LRNAttrs:
    nsize: int
    alpha: float = 1e-4
    beta: float = 0.75
    knorm: float = 2.0


@register
class LRN(Op):
    """Local response normalisation across channels (axis 1).

    scale_c = knorm + alpha/nsize * sum of x_j^2 over channels j within nsize//2 of c,
    out = x * scale^-beta. The hidden output `tmp_norm` keeps scale for the backward.
    """

    name = "LRN"
    PARAM_ORDER = ("alpha", "beta", "knorm", "nsize")
    Attrs = LRNAttrs
    OUTPUTS = ("output", "tmp_norm")
    backward_inputs = (0,)
    backward_outputs = (1,)

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.nsize <= 0 or self.attrs.nsize % 2 == 0:
            raise param_error(self.name, "nsize=%d must be odd and positive" % self.attrs.nsize)

    def num_visible_outputs(self) -> int:
        return 1

    def infer_shape(self, in_shapes: list, out_shapes: list):
        if in_shapes[0] is not None and len(in_shapes[0]) < 2:
            raise ShapeError("input 'data' has shape %s but LRN needs (N, C, ...)"
                             % fmt_shape(in_shapes[0]))
        return self.same_shape(in_shapes, out_shapes)

    def _channel_window_sum(self, xp, v):
        half = self.attrs.nsize // 2
        channels = v.shape[1]
        padded = xp.zeros((v.shape[0], channels + 2 * half) + v.shape[2:], dtype=v.dtype)
        padded[:, half:half + channels] = v
        total = xp.zeros_like(v)
        for offset in range(self.attrs.nsize):
            total += padded[:, offset:offset + channels]
        return total

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        a = self.attrs
        scale = out[1]
        scale[...] = self._channel_window_sum(xp, x * x)
        scale *= a.alpha / a.nsize
        scale += a.knorm
        out[0][...] = x * scale ** -a.beta

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is None:
            return
        x, g, scale = inputs[0], out_grads[0], outputs[1]
        a = self.attrs
        scaled = scale ** -a.beta
        inner = self._channel_window_sum(xp, g * x * scaled / scale)
        in_grads[0][...] = g * scaled - (2 * a.alpha * a.beta / a.nsize) * x * inner


