"""The other loss heads: the regression outputs (linear, logistic, absolute error), MakeLoss
and SVMOutput (see loss.py for what a loss head is)."""
from __future__ import annotations

import dataclasses

from ..backend import const
from ..base import ShapeError
from .loss import Normalization, batch_from_label, data_grad
from .registry import Op, fmt_shape, register, shape_is_known

__all__ = ["LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput",
           "MakeLoss", "SVMOutput"]


class _RegressionOutput(Op):
    """Shared parts of the regression heads.

    out = f(data); grad = d(out, label) * grad_scale / num_output, where num_output =
    label.size / N. The label has the data's size and batch dim: it defaults to the data's
    shape, or (N,) for data (N, 1). The head gradient is ignored.
    """

    ARGUMENTS = ("data", "label")
    needs_out_grad = False
    backward_inputs = (1,)
    backward_outputs = (0,)

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        grad_scale: float = 1.0

    def infer_shape(self, in_shapes, out_shapes):
        if in_shapes[0] is None:  # as MXNet: nothing is deduced before the data's rank is known
            return in_shapes, out_shapes
        self.same_shape(in_shapes, out_shapes, in_idx=(0,))
        data, label = in_shapes[0], in_shapes[1]
        if data is not None and len(data) == 0:
            raise ShapeError("input 'data' is a scalar (); %s needs a batch dim" % self.name)
        if data is not None and label is None:
            default = (data[0],) if len(data) == 2 and data[1] == 1 else tuple(data)
            self.set_in(in_shapes, 1, default, "data %s" % fmt_shape(data))
        elif data is not None:
            if len(label) == 0 or (label[0] is not None and data[0] is not None
                                   and label[0] != data[0]) \
                    or (shape_is_known(label) and shape_is_known(data)
                        and _size(label) != _size(data)):
                raise ShapeError("input 'label' has shape %s but data %s needs the same batch "
                                 "size and number of values" % (fmt_shape(label),
                                                                fmt_shape(data)))
            batch_from_label(self, in_shapes)
            self.same_shape(in_shapes, out_shapes, in_idx=(0,))
        return in_shapes, out_shapes

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = data_grad(in_grads)
        if g is None:
            return
        out, label = outputs[0], inputs[1]
        scale = self.attrs.grad_scale * label.shape[0] / label.size
        self._grad(xp, out, label.reshape(out.shape), g)
        g *= const(xp, scale, g.dtype)

    def _grad(self, xp, out, label, g) -> None:
        xp.subtract(out, label, out=g)


def _size(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


@register
class LinearRegressionOutput(_RegressionOutput):
    """out = data; grad = (out - label) * grad_scale / num_output (squared-error gradient)."""

    name = "LinearRegressionOutput"

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0])


@register
class LogisticRegressionOutput(_RegressionOutput):
    """out = sigmoid(data); grad = (out - label) * grad_scale / num_output (logistic loss)."""

    name = "LogisticRegressionOutput"

    def forward(self, xp, inputs, aux, out, is_train):
        o = out[0]
        xp.negative(inputs[0], out=o)
        xp.exp(o, out=o)
        o += const(xp, 1, o.dtype)
        xp.reciprocal(o, out=o)


@register
class MAERegressionOutput(_RegressionOutput):
    """out = data; grad = sign(out - label) * grad_scale / num_output (absolute-error gradient)."""

    name = "MAERegressionOutput"

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0])

    def _grad(self, xp, out, label, g) -> None:
        xp.subtract(out, label, out=g)
        xp.sign(g, out=g)


@register
class MakeLoss(Op):
    """Turn any value into a loss head: out = data, backward ignores the head gradient.

    grad = grad_scale ('null'), grad_scale / N ('batch', N = data.shape[0]), or grad_scale / max(1,
    #(data > valid_thresh)) ('valid'), the same value everywhere.
    """

    name = "MakeLoss"
    aliases = ("make_loss",)
    needs_out_grad = False
    inplace = ((0, 0),)
    backward_inputs = ()
    backward_outputs = ()

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        grad_scale: float = 1.0
        valid_thresh: float = 0.0
        normalization: Normalization = "null"

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.normalization == "valid":
            self.backward_outputs = (0,)

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = in_grads[0]
        if g is None:
            return
        a = self.attrs
        if a.normalization == "valid":
            valid = (outputs[0] > a.valid_thresh).sum()
            g[...] = a.grad_scale / xp.maximum(valid, 1).astype(g.dtype)
        elif a.normalization == "batch":
            g.fill(a.grad_scale / g.shape[0])
        else:
            g.fill(a.grad_scale)


# ----------------------------------------------------------------------------- SVMOutput

@dataclasses.dataclass(frozen=True)
class SVMOutputAttrs:
    margin: float = 1.0
    regularization_coefficient: float = 1.0
    use_linear: bool = False


@register
class SVMOutput(Op):
    """A multi-class hinge-loss head: out = data (N, K, or (N, ...) taken as (N, K)); label
    (N,) holds class indices. The gradient, with m = margin and c =
    regularization_coefficient, for the label's class y: -c where x_y < m (use_linear, the
    L1-SVM) or -2c (m - x_y) there (the L2-SVM); for every other class j: c where x_j > -m,
    or 2c (m + x_j) there; 0 elsewhere. Neither batch size nor head gradient scales it."""

    name = "SVMOutput"
    Attrs = SVMOutputAttrs
    ARGUMENTS = ("data", "label")
    needs_out_grad = False
    backward_inputs = (1,)
    backward_outputs = (0,)

    def infer_shape(self, in_shapes, out_shapes):
        self.same_shape(in_shapes, out_shapes, in_idx=(0,))
        data = in_shapes[0]
        if data is not None:
            if len(data) < 2:
                raise ShapeError("input 'data' has shape %s but SVMOutput needs (N, K)"
                                 % fmt_shape(data))
            self.set_in(in_shapes, 1, (data[0],), "data %s" % fmt_shape(data))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = data_grad(in_grads)
        if g is None:
            return
        x = outputs[0].reshape(outputs[0].shape[0], -1)
        g2 = g.reshape(x.shape)
        t = g.dtype.type
        m, c = t(self.attrs.margin), t(self.attrs.regularization_coefficient)
        label = inputs[1].reshape(-1).astype("int64")
        if label.size and (int(label.min()) < 0 or int(label.max()) >= x.shape[1]):
            raise ShapeError("SVMOutput: labels must lie in [0, %d), got %s to %s"
                             % (x.shape[1], label.min(), label.max()))
        rows = xp.arange(x.shape[0])
        target = x[rows, label]
        # every class as "other" first, then the label's own entry
        if self.attrs.use_linear:
            xp.multiply(x > -m, c, out=g2)
            g2[rows, label] = -c * (target < m)
        else:
            xp.add(x, m, out=g2)
            g2 *= t(2) * c
            g2 *= x > -m
            g2[rows, label] = -(t(2) * c) * (m - target) * (target < m)
