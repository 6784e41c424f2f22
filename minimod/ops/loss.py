"""Loss heads: SoftmaxOutput, the regression outputs, MakeLoss, and softmax_cross_entropy.

A loss head's forward is a prediction (softmax, sigmoid, identity) while its backward is the
gradient of an implied loss, computed from the prediction and the label: the head gradient is
ignored (`needs_out_grad = False`), so `Executor.backward()` needs no `out_grads`. The label is
the second argument, which the symbol layer auto-names `<name>_label`; it gets a zero gradient.

softmax_cross_entropy is an ordinary op (scalar loss, normal backward with the head gradient).
"""
from __future__ import annotations

import dataclasses
from typing import Literal

from ..base import ShapeError
from .registry import Op, fmt_shape, merge_shape, register, shape_is_known
from .scratch import _const, _max, _plain_numpy, _row_starts, _ScratchMixin, _sum

__all__ = [
    "SoftmaxOutput", "LinearRegressionOutput", "LogisticRegressionOutput",
    "MAERegressionOutput", "MakeLoss", "SoftmaxCrossEntropy",
]

Normalization = Literal["null", "batch", "valid"]


def _softmax(xp, x, axis: int, out, op=None, red=None) -> None:
    """Numerically stable softmax of x along `axis`, written into `out` (same shape).

    The row maxima and sums go into `red` when given (shaped like x with `axis` of size 1),
    else, with `op` (a scratch owner), into a reused array of its own."""
    if red is None and op is not None:
        shape = list(x.shape)
        shape[axis] = 1
        red = op._scratch(xp, "softmax_red", shape, out.dtype)
    xp.subtract(x, _max(xp, x, axis, red, keepdims=True), out=out)
    xp.exp(out, out=out)
    out /= _sum(xp, out, axis, red, keepdims=True)


def _data_grad(in_grads: list):
    """A loss head's data gradient slot (None when nobody asked for it), after setting the
    label's gradient, when asked for, to 0: labels get none."""
    if len(in_grads) > 1 and in_grads[1] is not None:
        in_grads[1].fill(0)
    return in_grads[0]


def _batch_from_label(op: Op, in_shapes: list) -> None:
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
            _batch_from_label(self, in_shapes)
            self.same_shape(in_shapes, out_shapes, in_idx=(0,))
        return in_shapes, out_shapes

    # --- compute
    def _views(self, out):
        """(probabilities, class axis) in the 2-D or 3-D layout the mode computes in."""
        if self.mode == "flat":
            return out.reshape(out.shape[0], -1), 1
        if self.mode == "preserve":
            return out.reshape(-1, out.shape[-1]), 1
        return out.reshape(out.shape[0], out.shape[1], -1), 1

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        if self.mode == "multi":
            _softmax(xp, x, 1, out[0], self)
        elif self.mode == "preserve":
            _softmax(xp, x, -1, out[0], self)
        else:
            _softmax(xp, x.reshape(x.shape[0], -1), 1, out[0].reshape(x.shape[0], -1), self)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = _data_grad(in_grads)
        if g is None:
            return
        a = self.attrs
        out, label = outputs[0], inputs[1]
        if (label.shape != out.shape and not a.smooth_alpha and not a.out_grad
                and g.flags.c_contiguous):
            self._index_grad_into(xp, out, label, g)
            return
        if label.shape == out.shape:
            grad = (out - label) * a.grad_scale
        else:
            grad = self._index_grad(xp, out, label)
        if a.out_grad:
            grad *= out_grads[0]
        xp.copyto(g, grad.reshape(g.shape))

    def _index_grad_into(self, xp, out, label, g) -> None:
        """The p - onehot(label) gradient written straight into g: one copy of p, then only
        the N labelled entries (and ignored rows) are touched, instead of building the
        one-hot matrix. Same numbers as `_index_grad`."""
        a = self.attrs
        p, axis = self._views(out)
        gv = g.reshape(p.shape)
        xp.copyto(gv, p)
        if p.ndim == 2 and not a.use_ignore and a.normalization != "valid" \
                and self._index_grad_rows(xp, label, gv):
            return
        if xp.__name__ != "numpy":
            # boolean-mask indexing below would wait for the GPU to count the hits: the
            # one-hot form computes the same numbers without leaving the device
            xp.copyto(gv, self._index_grad(xp, out, label).reshape(gv.shape))
            return
        if self.mode == "flat":
            lab = label.reshape(-1)[:p.shape[0]]
        elif self.mode == "preserve":
            lab = label.reshape(-1)
        else:
            lab = label.reshape(-1)[:p.shape[0] * p.shape[2]].reshape(p.shape[0], p.shape[2])
        lab = lab.astype(xp.int64)
        classes = p.shape[axis]
        # positions of every sample (and, for multi_output, every spatial slot)
        where = xp.indices(lab.shape)
        hit = (lab >= 0) & (lab < classes)
        if p.ndim == 2:
            gv[where[0][hit], lab[hit]] -= 1
        else:
            gv[where[0][hit], lab[hit], where[1][hit]] -= 1
        keep = lab != self.ignore
        if a.use_ignore:
            drop = ~keep
            if p.ndim == 2:
                gv[where[0][drop]] = 0
            else:
                gv[where[0][drop], :, where[1][drop]] = 0
        if a.normalization == "valid":
            gv *= a.grad_scale / xp.maximum(keep.sum(), 1).astype(p.dtype)
            return
        scale = self._label_scale(label.size, out.shape[0], p.shape[0])
        if scale != 1.0:
            gv *= scale

    def _index_grad_rows(self, xp, label, gv) -> bool:
        """The common case of `_index_grad_into` (one class index per row of the 2-D gv, every
        label in range) without temporaries: gv (holding p) gets 1 subtracted at each row's
        label and is scaled. False, with gv untouched, when a label is out of range."""
        rows, classes = gv.shape
        lab = label.reshape(-1)[:rows] if self.mode == "flat" else label.reshape(-1)
        flat = self._scratch(xp, "label_at", (rows,), "int64")
        xp.copyto(flat, lab, casting="unsafe")  # truncation toward zero, like astype
        if xp.__name__ != "numpy":
            # no range check on the host (int() of a device value would stall the GPU every
            # step): out-of-range labels subtract nothing, as the general path does, through a
            # 0/1 mask at a clipped index (one index per row, so no two writes collide)
            hit = ((flat >= 0) & (flat < classes)).astype(gv.dtype)
            xp.clip(flat, 0, classes - 1, out=flat)
            flat += _row_starts(xp, rows, classes)
            gv_flat = gv.reshape(-1)
            gv_flat[flat] -= hit
        elif rows:
            bound = self._scratch(xp, "label_bound", (), "int64")
            if int(xp.min(flat, out=bound)) < 0 or int(xp.max(flat, out=bound)) >= classes:
                return False
        if xp.__name__ == "numpy":
            flat += _row_starts(xp, rows, classes)
            xp.subtract.at(gv.reshape(-1), flat, _const(xp, 1, gv.dtype))
        scale = self._label_scale(label.size, rows, rows)
        if scale != 1.0:
            gv *= scale
        return True

    def _bound_case(self, xp, label, out, other) -> bool:
        """Whether the bound fast paths apply: flat mode on 2-D data with index labels, the
        common case of `_index_grad_rows`, and plain NumPy arrays `out` and `other` (the
        data for forward, the gradient for backward)."""
        a = self.attrs
        return (self.mode == "flat" and out.ndim == 2 and label.shape != out.shape
                and not a.smooth_alpha and not a.out_grad and not a.use_ignore
                and a.normalization != "valid" and _plain_numpy(xp, out, other))

    def bind_forward(self, xp, inputs, aux, out):
        x, y = inputs[0], out[0]
        if not self._bound_case(xp, inputs[1], y, x):
            return None
        red = xp.empty((y.shape[0], 1), y.dtype)  # the row maxima, then the row sums

        def run(xp, is_train):
            _softmax(xp, x, 1, y, red=red)
        return run

    def bind_backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        """`_index_grad_rows` with its arrays and scale fixed: copy p, subtract 1 at each
        row's label, scale. Out-of-range labels (checked every call, in one reduction over
        the labels read as unsigned, where a negative one is huge) take the general path."""
        g, out, label = in_grads[0], outputs[0], inputs[1]
        if g is None or not self._bound_case(xp, label, out, g):
            return None
        rows, classes = out.shape
        lab = label.reshape(-1)[:rows]
        at = xp.empty(rows, "int64")
        at_unsigned, bound = at.view("uint64"), xp.empty((), "uint64")
        starts = _row_starts(xp, rows, classes)
        gv, gv_flat = g.reshape(out.shape), g.reshape(-1)
        label_grad = in_grads[1] if len(in_grads) > 1 else None
        scale = self._label_scale(label.size, rows, rows)
        scale = None if scale == 1.0 else _const(xp, scale, g.dtype)
        one = _const(xp, 1, g.dtype)
        general = self.backward

        def run(xp, is_train):
            xp.copyto(at, lab, casting="unsafe")  # truncation toward zero, like astype
            if rows and int(xp.maximum.reduce(at_unsigned, out=bound)) >= classes:
                general(xp, out_grads, inputs, outputs, in_grads, aux)
                return
            if label_grad is not None:
                label_grad.fill(0)
            xp.copyto(gv, out)
            xp.add(at, starts, out=at)
            xp.subtract.at(gv_flat, at, one)  # one index per row: no two updates collide
            if scale is not None:
                xp.multiply(gv, scale, out=gv)
        return run

    def _index_grad(self, xp, out, label):
        a = self.attrs
        p, axis = self._views(out)
        if self.mode == "flat":
            lab = label.reshape(-1)[:p.shape[0]]
        elif self.mode == "preserve":
            lab = label.reshape(-1)
        else:
            lab = label.reshape(-1)[:p.shape[0] * p.shape[2]].reshape(p.shape[0], p.shape[2])
        lab = xp.expand_dims(lab.astype(xp.int64), axis)
        classes = p.shape[axis]
        cls = xp.arange(classes).reshape((1, classes) + (1,) * (p.ndim - 2))
        hit = cls == lab
        if a.smooth_alpha:
            off = a.smooth_alpha / (classes - 1)
            grad = p - xp.where(hit, 1.0 - a.smooth_alpha, off).astype(p.dtype)
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
            _batch_from_label(self, in_shapes)
            self.same_shape(in_shapes, out_shapes, in_idx=(0,))
        return in_shapes, out_shapes

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = _data_grad(in_grads)
        if g is None:
            return
        out, label = outputs[0], inputs[1]
        scale = self.attrs.grad_scale * label.shape[0] / label.size
        self._grad(xp, out, label.reshape(out.shape), g)
        g *= scale

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
        o += 1
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
    def _log_softmax(xp, x):
        shifted = x - x.max(axis=1, keepdims=True)
        return shifted - xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))

    def forward(self, xp, inputs, aux, out, is_train):
        x, label = inputs
        logp = self._log_softmax(xp, x)
        picked = logp[xp.arange(x.shape[0]), label.astype(xp.int64)]
        out[0][...] = -picked.sum()

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, label = inputs
        g = _data_grad(in_grads)
        if g is None:
            return
        xp.exp(self._log_softmax(xp, x), out=g)
        g[xp.arange(x.shape[0]), label.astype(xp.int64)] -= 1
        g *= out_grads[0].reshape(())


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
        g = _data_grad(in_grads)
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
