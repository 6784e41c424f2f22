"""Identity-like operators: the value passes through unchanged (_copy / identity), with its
gradient stopped (BlockGrad / stop_gradient), converted to another dtype (Cast), or moved to
another device (_CrossDeviceCopy, which only the placement pass makes)."""
from __future__ import annotations

import dataclasses

from .. import backend
from .helpers import DTypeName, cast_into, dtype_of, zero_grads
from .registry import Op, register

__all__ = ["CopyOp", "BlockGradOp", "CastOp", "CastAttrs", "CrossDeviceCopyOp"]


@register
class CopyOp(Op):
    """out = data (a copy); the gradient passes through unchanged."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "_copy"
    aliases = ("identity",)
    inplace = ((0, 0),)
    views = ((0, 0),)
    grad_views = ((0, 0),)
    backward_inputs = ()
    backward_outputs = ()

    def forward(self, xp, inputs, aux, out, is_train):
        if out[0] is not inputs[0]:
            xp.copyto(out[0], inputs[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            xp.copyto(in_grads[0], out_grads[0])


@register
class BlockGradOp(Op):
    """out = data; no gradient flows back (the input's gradient is zero)."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "BlockGrad"
    aliases = ("stop_gradient",)
    inplace = ((0, 0),)
    views = ((0, 0),)
    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True

    def forward(self, xp, inputs, aux, out, is_train):
        if out[0] is not inputs[0]:
            xp.copyto(out[0], inputs[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        zero_grads(in_grads)


@dataclasses.dataclass(frozen=True)
class CastAttrs:
    dtype: DTypeName


@register
class CastOp(Op):
    """out = data converted to `dtype` (same shape); the gradient is converted back."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "Cast"
    aliases = ("cast",)
    Attrs = CastAttrs
    backward_inputs = ()
    backward_outputs = ()

    def infer_type(self, in_types, out_types):
        return list(in_types), [dtype_of(self.attrs.dtype)]

    def forward(self, xp, inputs, aux, out, is_train):
        cast_into(xp, out[0], inputs[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            cast_into(xp, in_grads[0], out_grads[0])


class CrossDeviceCopyOp(Op):
    """out = data, moved to another device: MXNet's `_CrossDeviceCopy`, the node the placement
    pass (`minimod.passes.placement`) puts on every edge between two devices of a
    model-parallel graph. Its input lives on one device and its output on the other, so it
    never works in place; its gradient is the same copy the other way. It is not registered:
    as in MXNet, a user builds no such node, it exists only in placed plans."""

    name = "_CrossDeviceCopy"
    positional_inputs = True
    backward_inputs = ()
    backward_outputs = ()

    def forward(self, xp, inputs, aux, out, is_train):
        backend.copy_into(out[0], inputs[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            backend.copy_into(in_grads[0], out_grads[0])
