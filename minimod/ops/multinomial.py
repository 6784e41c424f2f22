"""Sampling from categorical distributions: `_sample_multinomial` (also `sample_multinomial`).

    data (..., K)      each row a distribution over K classes (its probabilities)
    out0 (...) + shape  the sampled class indices, `dtype` (int32 by default)
    out1 (...) + shape  with get_prob: log data[..., k] of each sampled k (data's dtype)

A sample is the first class whose running sum of probabilities exceeds a uniform draw u in
[0, 1), as in MXNet: rows are not renormalised (a row summing to more than 1 never reaches its
last classes; a draw past a row's total takes the last class). A 1-D data with no `shape`
gives one sample, out (1,). The draws come from `backend.uniform` (the host generator on the
CPU, minimod.device_rng on a GPU): a seed reproduces minimod's samples, not MXNet's.

Gradient (get_prob only, for score-function estimators): the head of out1 divided by the
sampled probability, summed into data at the sampled classes; out0 carries none.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Literal

from .. import backend
from ..base import ShapeError
from .helpers import dtype_of
from .registry import Op, fmt_shape, register

__all__ = ["SampleMultinomial"]


@dataclasses.dataclass(frozen=True)
class SampleMultinomialAttrs:
    shape: tuple[int, ...] = ()
    get_prob: bool = False
    dtype: Literal["uint8", "int32", "float16", "float32", "float64"] = "int32"


@register
class SampleMultinomial(Op):
    """Samples of the categorical distributions in data's last axis (module docstring)."""

    name = "_sample_multinomial"
    aliases = ("sample_multinomial",)
    Attrs = SampleMultinomialAttrs
    deterministic = False  # draws new samples at every run: never merged by CSE
    backward_inputs = (0,)
    backward_outputs = (0,)

    def outputs(self) -> list:
        return ["output0", "output1"] if self.attrs.get_prob else ["output"]

    def _out_shape(self, data: tuple) -> tuple:
        return (tuple(data[:-1]) + tuple(self.attrs.shape)) or (1,)

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is not None:
            if len(data) == 0:
                raise ShapeError("sample_multinomial: input 'data' %s needs a last axis of "
                                 "classes" % fmt_shape(data))
            for i in range(len(out_shapes)):
                self.set_out(out_shapes, i, self._out_shape(data),
                             "data %s with shape=%s" % (fmt_shape(data), self.attrs.shape))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        if in_types[0] is None:
            return in_types, out_types
        return in_types, [dtype_of(self.attrs.dtype)] + [in_types[0]] * (len(out_types) - 1)

    def _rows(self, data) -> tuple:
        """(rows of data as (R, K), samples per row S)."""
        return data.reshape(-1, data.shape[-1]), max(math.prod(self.attrs.shape), 1)

    def forward(self, xp, inputs, aux, out, is_train):
        probs, samples = self._rows(inputs[0])
        classes = probs.shape[1]
        running = xp.cumsum(probs, axis=1, dtype="float64")
        u = backend.uniform(xp, (probs.shape[0], samples))
        # the number of running sums <= u is the index of the first one above it
        picked = (running[:, None, :] <= u[:, :, None]).sum(axis=2)
        picked = xp.minimum(picked, classes - 1)
        xp.copyto(out[0], picked.reshape(out[0].shape), casting="unsafe")
        if self.attrs.get_prob:
            chosen = xp.take_along_axis(probs, picked, axis=1)
            xp.copyto(out[1], xp.log(chosen).reshape(out[1].shape), casting="unsafe")

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dp = in_grads[0]
        if dp is None:
            return
        dp.fill(0)
        if not self.attrs.get_prob or out_grads[1] is None:
            return
        probs, samples = self._rows(inputs[0])
        picked = outputs[0].reshape(probs.shape[0], samples).astype("int64")
        chosen = xp.take_along_axis(probs, picked, axis=1)
        g = out_grads[1].reshape(picked.shape) / chosen
        rows = xp.broadcast_to(xp.arange(probs.shape[0])[:, None], picked.shape)
        backend.scatter_add(xp, dp.reshape(probs.shape), (rows.reshape(-1), picked.reshape(-1)),
                            g.reshape(-1).astype(dp.dtype))
