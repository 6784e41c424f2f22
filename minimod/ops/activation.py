"""Elementwise activations: Activation (relu, sigmoid, tanh, softrelu, softsign) and
LeakyReLU (leaky, prelu, rrelu, elu, selu, gelu)."""
from __future__ import annotations

import dataclasses
import math
from typing import Literal

from .. import backend
from ..backend import const
from ..base import ShapeError
from .helpers import bias_view, erf, reduce_axes, write_grad
from .registry import Op, fmt_shape, register

__all__ = ["Activation", "LeakyReLU"]


@dataclasses.dataclass(frozen=True)
class ActivationAttrs:
    act_type: Literal["relu", "sigmoid", "tanh", "softrelu", "softsign"]


@register
class Activation(Op):
    """Elementwise activation, out has the shape of data.

    relu max(x, 0); sigmoid 1/(1+e^-x); tanh; softrelu log(1+e^x); softsign x/(1+|x|).
    The gradients are MXNet's definitions, which matter when a user changes the output in
    place between forward and backward (stochastic depth adds into it): relu's is the mask
    (y > 0), sigmoid's y(1-y), tanh's 1-y^2 and softrelu's 1-e^-y, all of the output y, so
    the output may overwrite the input; softsign's is 1/(1+|x|)^2, of the input x, which it
    then keeps. Its bound steps, fused GPU kernels and batch-last form live in
    `minimod.kernels.activation`.
    """

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "Activation"
    Attrs = ActivationAttrs
    inplace = ((0, 0),)
    backward_inputs = ()
    backward_outputs = (0,)

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.act_type == "softsign":  # MXNet differentiates softsign from its input
            self.inplace = ()
            self.backward_inputs = (0,)
            self.backward_outputs = ()

    def forward(self, xp, inputs, aux, out, is_train):
        x, y = inputs[0], out[0]
        act = self.attrs.act_type
        if act == "relu":
            xp.maximum(x, const(xp, 0, y.dtype), out=y)
        elif act == "sigmoid":  # as tanh(x / 2) / 2 + 1/2, which never overflows
            half = const(xp, 0.5, y.dtype)
            xp.multiply(x, half, out=y)
            xp.tanh(y, out=y)
            y *= half
            y += half
        elif act == "tanh":
            xp.tanh(x, out=y)
        elif act == "softrelu":
            tail = xp.log1p(xp.exp(-xp.abs(x)))
            xp.maximum(x, 0, out=y)
            y += tail
        else:
            xp.divide(x, 1 + xp.abs(x), out=y)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is None:
            return
        g, y = out_grads[0], outputs[0]
        act = self.attrs.act_type
        # dx never shares storage with g or y (backward declares no in-place pair), so the
        # local derivative can be built in dx itself without temporaries
        if act == "tanh":
            xp.multiply(y, y, out=dx)
            xp.subtract(const(xp, 1, dx.dtype), dx, out=dx)
            dx *= g
            return
        if act == "sigmoid":
            xp.subtract(const(xp, 1, dx.dtype), y, out=dx)
            dx *= y
            dx *= g
            return
        if act == "relu":  # the mask (y > 0), built in dx itself
            xp.greater(y, const(xp, 0, y.dtype), out=dx)
            dx *= g
            return
        if act == "softrelu":
            local = -xp.expm1(-y)
        else:
            local = 1 / (1 + xp.abs(inputs[0])) ** 2
        xp.multiply(g, local, out=dx)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_LAMBDA = 1.0507009873554804934193349852946


def _slopes(xp, lower: float, upper: float, shape: tuple):
    """RReLU's random slopes, uniform in [lower, upper): on a GPU from the device's generator
    (`backend.uniform`, so a training step with RReLU can be captured as a CUDA graph), on
    the CPU from `backend.rng` as before."""
    if backend.draws_on_device(xp):
        return lower + (upper - lower) * backend.uniform(xp, shape)
    return backend.rng(xp).uniform(lower, upper, shape)


@dataclasses.dataclass(frozen=True)
class LeakyReLUAttrs:
    act_type: Literal["leaky", "prelu", "rrelu", "elu", "selu", "gelu"] = "leaky"
    slope: float = 0.25
    lower_bound: float = 0.125
    upper_bound: float = 0.334


@register
class LeakyReLU(Op):
    """Leaky rectifiers and friends, elementwise; out has the shape of data.

    leaky: x > 0 ? x : slope*x.  prelu: the slope is the learned `gamma`, shape (C,) (or (1,))
    broadcast on axis 1, or of 2+ dims lined up with data's leading dims ((N, C) for NCHW).
    rrelu: the slope is drawn uniformly from [lower_bound, upper_bound] per element in training
    and is (lower_bound+upper_bound)/2 in inference; its second output `mask` holds the drawn
    slopes (zeros in inference).  elu: x > 0 ? x : slope*(e^x - 1).
    selu: lambda * (x > 0 ? x : alpha*(e^x - 1)) with alpha 1.6732632..., lambda 1.0507009....
    gelu: x * Phi(x), Phi the standard normal CDF (the exact erf form).
    """

    name = "LeakyReLU"
    deterministic = False  # rrelu draws its slopes at random: never merged by CSE
    SIGNATURE_INPUTS = ("data", "gamma")
    Attrs = LeakyReLUAttrs
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.act_type == "rrelu":
            self.backward_inputs = (0,)
            self.backward_outputs = (1,)
        elif self.attrs.act_type == "prelu":
            self.input_var_attrs = {"gamma": {"__init__": '["Constant", {"value": 0.25}]'}}
        else:
            self.backward_inputs = (0,)

    def arguments(self) -> list:
        return ["data", "gamma"] if self.attrs.act_type == "prelu" else ["data"]

    def outputs(self) -> list:
        return ["output", "mask"] if self.attrs.act_type == "rrelu" else ["output"]

    def infer_shape(self, in_shapes: list, out_shapes: list):
        self.same_shape(in_shapes, out_shapes, in_idx=[0])
        if self.attrs.act_type == "prelu" and in_shapes[0] is not None:
            data, gamma = in_shapes[0], in_shapes[1]
            if gamma is not None and len(gamma) >= 2:
                self._check_broadcast_gamma(data, gamma)
                return in_shapes, out_shapes
            channels = data[1] if len(data) >= 2 else 1
            if gamma != (1,):
                self.set_in(in_shapes, 1, (channels,),
                            "data %s (one slope per channel, axis 1)" % fmt_shape(data))
        return in_shapes, out_shapes

    def _check_broadcast_gamma(self, data, gamma) -> None:
        """A gamma of 2 or more dims lines up with data's leading dims (trailing dims 1)."""
        if len(gamma) > len(data) or any(
                g is not None and d is not None and g not in (1, d)
                for g, d in zip(gamma, data)):
            raise ShapeError("input 'gamma' has shape %s, which does not broadcast over the "
                             "leading dims of data %s" % (fmt_shape(gamma), fmt_shape(data)))

    def _gamma(self, x, gamma):
        """gamma as an array that broadcasts against x: a scalar slope, one per channel
        (axis 1) for 1-D gamma, or gamma's dims lined up with x's leading dims."""
        if gamma.ndim >= 2:
            return gamma.reshape(gamma.shape + (1,) * (x.ndim - gamma.ndim))
        if gamma.shape[0] == 1 or x.ndim < 2:
            return gamma.reshape((1,) * x.ndim) if x.ndim else gamma[0]
        return bias_view(gamma, x.ndim)

    def forward(self, xp, inputs, aux, out, is_train):
        x, y = inputs[0], out[0]
        a = self.attrs
        act = a.act_type
        if act == "leaky":
            xp.multiply(x, xp.where(x > 0, 1, a.slope).astype(x.dtype), out=y)
        elif act == "prelu":
            y[...] = xp.where(x > 0, x, self._gamma(x, inputs[1]) * x)
        elif act == "rrelu":
            if is_train:
                out[1][...] = _slopes(xp, a.lower_bound, a.upper_bound, x.shape)
                y[...] = xp.where(x > 0, x, out[1] * x)
            else:
                out[1][...] = 0
                y[...] = xp.where(x > 0, x, x * ((a.lower_bound + a.upper_bound) / 2))
        elif act == "elu":
            y[...] = xp.where(x > 0, x, a.slope * xp.expm1(xp.minimum(x, 0)))
        elif act == "selu":
            y[...] = _SELU_LAMBDA * xp.where(x > 0, x, _SELU_ALPHA * xp.expm1(xp.minimum(x, 0)))
        else:
            y[...] = 0.5 * x * (1 + erf(xp, x * (1 / math.sqrt(2))))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, g = inputs[0], out_grads[0]
        a = self.attrs
        act = a.act_type
        if act == "prelu":
            gamma = self._gamma(x, inputs[1])
            if in_grads[1] is not None:
                part = g * xp.where(x > 0, 0, x)
                dg = in_grads[1]
                if dg.ndim >= 2:  # sum over the dims gamma broadcasts along
                    axes = tuple(i for i in range(x.ndim) if i >= dg.ndim or dg.shape[i] == 1)
                    dg[...] = part.sum(axis=axes, keepdims=True).reshape(dg.shape)
                elif dg.shape[0] == 1 or x.ndim < 2:
                    dg[...] = part.sum()
                else:
                    dg[...] = part.sum(axis=reduce_axes(x.ndim, 1))
            local = xp.where(x > 0, 1, gamma)
        elif act == "leaky":
            local = xp.where(x > 0, 1, a.slope)
        elif act == "rrelu":
            local = xp.where(x > 0, 1, outputs[1])
        elif act == "elu":
            local = xp.where(x > 0, 1, a.slope * xp.exp(xp.minimum(x, 0)))
        elif act == "selu":
            local = _SELU_LAMBDA * xp.where(x > 0, 1, _SELU_ALPHA * xp.exp(xp.minimum(x, 0)))
        else:
            cdf = 0.5 * (1 + erf(xp, x * (1 / math.sqrt(2))))
            local = cdf + x * xp.exp(-0.5 * x * x) * (1 / math.sqrt(2 * math.pi))
        write_grad(in_grads[0], g * local)


