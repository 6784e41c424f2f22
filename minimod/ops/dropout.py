"""Dropout: inverted dropout in training, the identity otherwise."""
from __future__ import annotations

import dataclasses
from typing import Literal

from .. import backend
from .helpers import param_error
from .registry import Op, register

__all__ = ["Dropout"]


@dataclasses.dataclass(frozen=True)
class DropoutAttrs:
    p: float = 0.5
    mode: Literal["training", "always"] = "training"
    axes: tuple[int, ...] = ()
    cudnn_off: bool = False


@register
class Dropout(Op):
    """Inverted dropout: out = x * mask, mask = keep / (1 - p) with keep ~ Bernoulli(1 - p).

    Active in training (or always, with mode='always'), identity otherwise (mask all ones).
    Along the dims in `axes` one mask value is shared (the mask is drawn with size 1 there). The
    hidden output `mask` has the shape of data and holds the scaled mask.
    """

    name = "Dropout"
    deterministic = False  # draws a new mask at every run: never merged by CSE
    Attrs = DropoutAttrs
    OUTPUTS = ("output", "mask")
    inplace = ((0, 0),)
    backward_inputs = ()
    backward_outputs = (1,)

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if not 0 <= self.attrs.p <= 1:
            raise param_error(self.name, "p=%g must lie in [0, 1]" % self.attrs.p)

    def num_visible_outputs(self) -> int:
        return 1

    def infer_shape(self, in_shapes: list, out_shapes: list):
        return self.same_shape(in_shapes, out_shapes)

    def forward(self, xp, inputs, aux, out, is_train):
        x, y, mask = inputs[0], out[0], out[1]
        p = self.attrs.p
        if not (is_train or self.attrs.mode == "always") or p == 0:
            mask[...] = 1
            y[...] = x
            return
        draw_shape = list(x.shape)
        for ax in self.attrs.axes:
            draw_shape[ax] = 1
        keep = backend.uniform(xp, tuple(draw_shape)) < 1 - p
        mask[...] = keep * (1 / (1 - p)) if p < 1 else 0
        xp.multiply(x, mask, out=y)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            xp.multiply(out_grads[0], outputs[1], out=in_grads[0])


