"""Softmax loss heads: SoftmaxOutput and softmax_cross_entropy, and what the loss heads share.

A loss head's forward is a prediction (softmax, sigmoid, identity) while its backward is the
gradient of an implied loss, computed from the prediction and the label: the head gradient is
ignored (`needs_out_grad = False`), so `Executor.backward()` needs no `out_grads`. The label is
the second argument, which the symbol layer auto-names `<name>_label`; it gets a zero gradient.
The other heads are in regression.py; SoftmaxOutput's bound steps and its host form of the
index-label gradient are in `minimod.kernels.loss`.

softmax_cross_entropy is an ordinary op (scalar loss, normal backward with the head gradient).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Literal

from ..backend import max_into, sum_into
from ..base import ShapeError
from .registry import Op, fmt_shape, merge_shape, register
from .scratch import _ScratchMixin

__all__ = ["SoftmaxOutput", "SoftmaxCrossEntropy", "softmax_into", "data_grad",
           "batch_from_label"]

Normalization = Literal["null", "batch", "valid"]


def softmax_into(xp, x, axis: int, out, op=None, red=None) -> None:
    """Numerically stable softmax of x along `axis`, written into `out` (same shape).

    The row maxima and sums go into `red` when given (shaped like x with `axis` of size 1),
    else, with `op` (a scratch owner), into a reused array of its own."""
    if red is None and op is not None:
        shape = list(x.shape)
        shape[axis] = 1
        red = op._scratch(xp, "softmax_red", shape, out.dtype)
    xp.subtract(x, max_into(xp, x, axis, red, keepdims=True), out=out)
    xp.exp(out, out=out)
    out /= sum_into(xp, out, axis, red, keepdims=True)


def data_grad(in_grads: list):
    """A loss head's data gradient slot (None when nobody asked for it), after setting the
    label's gradient, when asked for, to 0: labels get none."""
    if len(in_grads) > 1 and in_grads[1] is not None:
        in_grads[1].fill(0)
    return in_grads[0]


def batch_from_label(op: Op, in_shapes: list) -> None:
    """A label of known batch size fills the data's unknown batch dim."""
    data, label = in_shapes[0], in_shapes[1]
    if data is not None and len(data) and data[0] is None and label is not None \
            and len(label) and label[0] is not None:
        op.set_in(in_shapes, 0, (label[0],) + tuple(data[1:]), "label %s" % fmt_shape(label))


@register
class SoftmaxOutput(_ScratchMixin, Op):
    """Softmax prediction whose backward is the cross-entropy gradient (p - onehot(label)).

    Forward, by mode, for data of shape (N, ...):
    - default: softmax over all non-batch dims flattened, (N, prod(rest)); label (N,).
      MXNet infers label = data.shape[:-1] (the same for 2-D data) and reads the first N label
      values; both label shapes are accepted.
    - multi_output: softmax over axis 1 of (N, C, d2, ...); label (N, d2*...*dk), also accepted
      as (N, d2, ..., dk) or (N, 1, d2, ..., dk).
    - preserve_shape: softmax over the last axis; label = data.shape[:-1].
    A label of the data's own shape is a probability distribution: grad = (p - label) *
    grad_scale, with no normalisation, smoothing or ignoring (as MXNet).

    Backward for index labels (truncated to int): g = p - t, where t is onehot(label), or with
    smooth_alpha = a, 1 - a on the label class and a / (C - 1) elsewhere. With use_ignore, rows
    whose label equals ignore_label get 0. Then g *= grad_scale / n, where n is the number of
    labels != ignore_label, at least 1, for 'valid' (counted whether or not use_ignore is set);
    otherwise n = R for 'null' and R * N for 'batch', where R = label.size / N is the number of
    labels per sample (1 for 2-D data; MXNet's values) and, for preserve_shape, N is the number
    of rows softmaxed. With out_grad the result is multiplied by the head gradient, which is
    otherwise ignored (MXNet 1.9.1 multiplies by the softmax output instead, a bug not copied).
    """

    name = "SoftmaxOutput"
    aliases = ("Softmax",)
    ARGUMENTS = ("data", "label")
    needs_out_grad = False
    backward_inputs = (1,)
    backward_outputs = (0,)

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        grad_scale: float = 1.0
        ignore_label: float = -1.0
        multi_output: bool = False
        use_ignore: bool = False
        preserve_shape: bool = False
        normalization: Normalization = "null"
        out_grad: bool = False
        smooth_alpha: float = 0.0

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        self.needs_out_grad = a.out_grad
        self.mode = "multi" if a.multi_output else "preserve" if a.preserve_shape else "flat"
        self.ignore = int(a.ignore_label)

    # --- shapes
    def _label_shapes(self, data: tuple) -> list:
        """Label shapes accepted for `data`, the one MXNet infers first."""
        n = data[0]
        if self.mode == "multi":
            if len(data) < 2:
                raise ShapeError("input 'data' has shape %s but multi_output needs rank >= 2"
                                 % fmt_shape(data))
            rest = data[2:]
            size = 1
            for d in rest:
                size = None if size is None or d is None else size * d
            return [(n, size), (n,) + tuple(rest), (n, 1) + tuple(rest), tuple(data)]
        shapes = [tuple(data[:-1]), tuple(data)]
        if self.mode == "flat" and len(data) > 2:
            shapes.append((n,))
        return shapes

    def infer_shape(self, in_shapes, out_shapes):
        if in_shapes[0] is None:  # as MXNet: nothing is deduced before the data's rank is known
            return in_shapes, out_shapes
        self.same_shape(in_shapes, out_shapes, in_idx=(0,))
        data = in_shapes[0]
        if data is not None:
            if len(data) < 1 or (self.mode == "flat" and len(data) < 2):
                raise ShapeError("input 'data' has shape %s; SoftmaxOutput needs rank >= 2"
                                 % fmt_shape(data))
            label = in_shapes[1]
            candidates = self._label_shapes(data)
            if label is None:
                in_shapes[1] = candidates[0]
            else:
                for cand in candidates:
                    try:
                        in_shapes[1] = merge_shape(label, cand)
                        break
                    except ValueError:
                        continue
                else:
                    raise ShapeError("input 'label' has shape %s but data %s needs %s"
                                     % (fmt_shape(label), fmt_shape(data),
                                        " or ".join(fmt_shape(c) for c in candidates)))
            batch_from_label(self, in_shapes)
            self.same_shape(in_shapes, out_shapes, in_idx=(0,))
        return in_shapes, out_shapes

    # --- compute
    def _views(self, out):
        """(probabilities, class axis) in the 2-D or 3-D layout the mode computes in."""
        if self.mode == "flat":
            return out.reshape(out.shape[0], math.prod(out.shape[1:])), 1
        if self.mode == "preserve":
            return out.reshape(math.prod(out.shape[:-1]), out.shape[-1]), 1
        return out.reshape(out.shape[0], out.shape[1], math.prod(out.shape[2:])), 1

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        if self.mode == "multi":
            softmax_into(xp, x, 1, out[0], self)
        elif self.mode == "preserve":
            softmax_into(xp, x, -1, out[0], self)
        else:
            flat = (x.shape[0], math.prod(x.shape[1:]))  # sizes spelt out: a zero-size batch too
            softmax_into(xp, x.reshape(flat), 1, out[0].reshape(flat), self)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = data_grad(in_grads)
        if g is None:
            return
        a = self.attrs
        out, label = outputs[0], inputs[1]
        if label.shape == out.shape:
            grad = (out - label) * a.grad_scale
        else:
            grad = self._index_grad(xp, out, label)
        if a.out_grad:
            grad *= out_grads[0]
        xp.copyto(g, grad.reshape(g.shape))

    def _labels(self, p, label):
        """The label values the probabilities p (in `_views` layout) are scored against: one
        per row of p, or per (row, position) for multi_output."""
        if self.mode == "flat":
            return label.reshape(-1)[:p.shape[0]]
        if self.mode == "preserve":
            return label.reshape(-1)
        return label.reshape(-1)[:p.shape[0] * p.shape[2]].reshape(p.shape[0], p.shape[2])

    def _index_grad(self, xp, out, label):
        """p - onehot(label) (smoothed, ignored and scaled as the attributes say)."""
        a = self.attrs
        p, axis = self._views(out)
        lab = xp.expand_dims(self._labels(p, label).astype(xp.int64), axis)
        classes = p.shape[axis]
        cls = xp.arange(classes).reshape((1, classes) + (1,) * (p.ndim - 2))
        hit = cls == lab
        if a.smooth_alpha:
            on, off = self.targets(classes)
            grad = p - xp.where(hit, on, off).astype(p.dtype)
        else:
            grad = p - hit
        keep = lab != self.ignore
        if a.use_ignore:
            grad *= keep
        if a.normalization == "valid":
            grad *= a.grad_scale / xp.maximum(keep.sum(), 1).astype(p.dtype)
            return grad
        scale = self._label_scale(label.size, out.shape[0], p.shape[0])
        if scale != 1.0:
            grad *= scale
        return grad

    def targets(self, classes: int) -> tuple:
        """(on, off): the target of the label class and of each other class, 1 and 0, or
        smoothed: 1 - a and a / (C - 1) (0 where the label class is the only one)."""
        a = self.attrs.smooth_alpha
        if not a:
            return 1.0, 0.0
        return 1.0 - a, a / (classes - 1) if classes > 1 else 0.0

    def _label_scale(self, label_size: int, batch: int, rows: int) -> float:
        """The factor of an index-label gradient (normalization other than 'valid'):
        grad_scale, divided by the label values per sample (label_size // batch) in the
        default and multi_output modes, as MXNet does, and by the rows softmaxed for
        'batch'."""
        scale = self.attrs.grad_scale
        if self.mode != "preserve":
            scale /= label_size // batch
        if self.attrs.normalization == "batch":
            scale /= rows
        return scale


@register
class SoftmaxCrossEntropy(Op):
    """Summed cross-entropy of softmax(data) against integer labels: a (1,) output.

    data (N, C), label (N,): out = -sum_n log softmax(data)[n, label[n]]. Backward (normal,
    with head gradient h): d data = h * (softmax(data) - onehot(label)); the label gets zero.
    """

    name = "softmax_cross_entropy"
    ARGUMENTS = ("data", "label")
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        data, label = in_shapes
        if data is not None and len(data) != 2:
            raise ShapeError("input 'data' has shape %s; softmax_cross_entropy needs (N, C)"
                             % fmt_shape(data))
        if label is not None and len(label) != 1:
            raise ShapeError("input 'label' has shape %s; softmax_cross_entropy needs (N,)"
                             % fmt_shape(label))
        if data is not None:
            self.set_in(in_shapes, 1, (data[0],), "data %s" % fmt_shape(data))
        if in_shapes[1] is not None and data is not None:
            self.set_in(in_shapes, 0, (in_shapes[1][0], data[1]),
                        "label %s" % fmt_shape(in_shapes[1]))
        self.set_out(out_shapes, 0, (1,))
        return in_shapes, out_shapes

    @staticmethod
    def _logsoftmax_into(xp, x):
        shifted = x - x.max(axis=1, keepdims=True)
        return shifted - xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))

    def forward(self, xp, inputs, aux, out, is_train):
        x, label = inputs
        logp = self._logsoftmax_into(xp, x)
        picked = logp[xp.arange(x.shape[0]), label.astype(xp.int64)]
        out[0][...] = -picked.sum()

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, label = inputs
        g = data_grad(in_grads)
        if g is None:
            return
        xp.exp(self._logsoftmax_into(xp, x), out=g)
        g[xp.arange(x.shape[0]), label.astype(xp.int64)] -= 1
        g *= out_grads[0].reshape(())
