"""`IdentityAttachKLSparseReg`: the identity on the activations of a sigmoid layer, whose
backward adds the gradient of a KL-divergence sparsity penalty (sparse autoencoders).

    out = data                                       data (N, C, ...), values in (0, 1)
    d data = g + penalty * (-t / a + (1 - t) / (1 - a))      t = sparseness_target

where a = `moving_avg` (C,), an aux state, is the running mean activation of each unit along
axis 1 as backward updates it first: a = momentum * a + (1 - momentum) * mean(data over every
axis but 1). A forward leaves it alone; each backward moves it once, as in MXNet 1.9.1.
MXNet's CPU kernel handles 2-D data only (its backward fails for more axes); minimod averages
over every axis but 1.
"""
from __future__ import annotations

import dataclasses

from ..backend import const
from ..base import ShapeError
from .helpers import bias_view, reduce_axes
from .registry import Op, fmt_shape, register

__all__ = ["IdentityAttachKLSparseReg"]


@dataclasses.dataclass(frozen=True)
class KLSparseRegAttrs:
    sparseness_target: float = 0.1
    penalty: float = 0.001
    momentum: float = 0.9


@register
class IdentityAttachKLSparseReg(Op):
    """The identity, with a sparsity penalty's gradient added backward (module docstring)."""

    name = "IdentityAttachKLSparseReg"
    Attrs = KLSparseRegAttrs
    AUX = ("moving_avg",)
    SIGNATURE_INPUTS = ("data",)  # MXNet's frontend takes the aux state by keyword only
    inplace = ((0, 0),)
    backward_inputs = (0,)
    backward_outputs = ()
    input_var_attrs = {"moving_avg": {"__init__": '["zero", {}]'}}

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is not None:
            if len(data) < 2:
                raise ShapeError("IdentityAttachKLSparseReg: input 'data' %s needs an axis 1 "
                                 "of units" % fmt_shape(data))
            self.set_in(in_shapes, 1, (data[1],), "data %s" % fmt_shape(data))
        return self.same_shape(in_shapes, out_shapes, in_idx=(0,))

    def forward(self, xp, inputs, aux, out, is_train):
        if out[0] is not inputs[0]:
            xp.copyto(out[0], inputs[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        a = self.attrs
        x, avg = inputs[0], aux[0]
        mean = x.mean(axis=reduce_axes(x.ndim, 1))
        avg *= const(xp, a.momentum, avg.dtype)
        avg += (1 - a.momentum) * mean
        dx = in_grads[0]
        if dx is not None:
            t = const(xp, a.sparseness_target, avg.dtype)
            penalty = (1 - t) / (1 - avg) - t / avg
            penalty *= const(xp, a.penalty, avg.dtype)
            xp.add(out_grads[0], bias_view(penalty, x.ndim), out=dx)
