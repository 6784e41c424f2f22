"""SoftmaxOutput's host steps: its bound softmax, and the index-label gradient written
straight into the gradient array.

`SoftmaxOutput.backward` builds the one-hot matrix of the labels, which reads the same on every
device and never waits for a GPU. On NumPy it is cheaper to copy the probabilities once and
touch only the N labelled entries (and ignored rows): `index_grad_into`, bound for NumPy
arrays, with the same numbers. Its common case (one class index per row of 2-D data, no
ignoring, smoothing or 'valid' normalisation) binds with every array and scale resolved, and
checks the labels' range on every call.
"""
from __future__ import annotations

from ..backend import const
from ..ops.loss import SoftmaxOutput, data_grad, softmax_into
from ..ops.scratch import _row_starts
from .registry import fast_path, plain_numpy

__all__ = ["index_grad_into"]


def _bound_case(op, label, out, other, xp) -> bool:
    """Whether the bound rows path applies: flat mode on 2-D data with index labels, and
    plain NumPy arrays `out` and `other` (the data for forward, the gradient for backward)."""
    a = op.attrs
    return (op.mode == "flat" and out.ndim == 2 and label.shape != out.shape
            and not a.smooth_alpha and not a.out_grad and not a.use_ignore
            and a.normalization != "valid" and plain_numpy(xp, out, other))


@fast_path(SoftmaxOutput, stage="forward")
def bind_forward(op, xp, inputs, aux, out):
    x, y = inputs[0], out[0]
    if not _bound_case(op, inputs[1], y, x, xp):
        return None
    red = xp.empty((y.shape[0], 1), y.dtype)  # the row maxima, then the row sums

    def run(xp, is_train):
        softmax_into(xp, x, 1, y, red=red)
    return run


@fast_path(SoftmaxOutput, stage="backward")
def bind_backward(op, xp, out_grads, inputs, outputs, in_grads, aux):
    g, out, label = in_grads[0], outputs[0], inputs[1]
    a = op.attrs
    if (g is None or xp.__name__ != "numpy" or label.shape == out.shape or a.smooth_alpha
            or a.out_grad or not g.flags.c_contiguous):
        return None
    if _bound_case(op, label, out, g, xp):
        return _bind_rows(op, xp, out, label, in_grads)

    def run(xp, is_train):
        _host_backward(op, xp, in_grads, out, label)
    return run


def _host_backward(op, xp, in_grads, out, label) -> None:
    """SoftmaxOutput.backward for index labels, by `index_grad_into`."""
    g = data_grad(in_grads)
    if g is not None:
        index_grad_into(op, xp, out, label, g)


def _bind_rows(op, xp, out, label, in_grads):
    """`_index_grad_rows` with its arrays and scale fixed: copy p, subtract 1 at each row's
    label, scale. Out-of-range labels (checked every call, in one reduction over the labels
    read as unsigned, where a negative one is huge) take `index_grad_into`'s general form."""
    g = in_grads[0]
    rows, classes = out.shape
    lab = label.reshape(-1)[:rows]
    at = xp.empty(rows, "int64")
    at_unsigned, bound = at.view("uint64"), xp.empty((), "uint64")
    starts = _row_starts(xp, rows, classes)
    gv, gv_flat = g.reshape(out.shape), g.reshape(-1)
    label_grad = in_grads[1] if len(in_grads) > 1 else None
    scale = op._label_scale(label.size, rows, rows)
    scale = None if scale == 1.0 else const(xp, scale, g.dtype)
    one = const(xp, 1, g.dtype)

    def run(xp, is_train):
        xp.copyto(at, lab, casting="unsafe")  # truncation toward zero, like astype
        if rows and int(xp.maximum.reduce(at_unsigned, out=bound)) >= classes:
            _host_backward(op, xp, in_grads, out, label)
            return
        if label_grad is not None:
            label_grad.fill(0)
        xp.copyto(gv, out)
        xp.add(at, starts, out=at)
        xp.subtract.at(gv_flat, at, one)  # one index per row: no two updates collide
        if scale is not None:
            xp.multiply(gv, scale, out=gv)
    return run


def index_grad_into(op, xp, out, label, g) -> None:
    """The p - onehot(label) gradient of SoftmaxOutput `op` written straight into g (NumPy):
    one copy of p, then only the labelled entries (and ignored rows) are touched, instead of
    building the one-hot matrix. Same numbers as `SoftmaxOutput._index_grad`."""
    a = op.attrs
    p, axis = op._views(out)
    gv = g.reshape(p.shape)
    xp.copyto(gv, p)
    if (p.ndim == 2 and not a.use_ignore and a.normalization != "valid"
            and _index_grad_rows(op, xp, label, gv)):
        return
    lab = op._labels(p, label).astype(xp.int64)
    classes = p.shape[axis]
    # positions of every sample (and, for multi_output, every spatial slot)
    where = xp.indices(lab.shape)
    hit = (lab >= 0) & (lab < classes)
    if p.ndim == 2:
        gv[where[0][hit], lab[hit]] -= 1
    else:
        gv[where[0][hit], lab[hit], where[1][hit]] -= 1
    keep = lab != op.ignore
    if a.use_ignore:
        drop = ~keep
        if p.ndim == 2:
            gv[where[0][drop]] = 0
        else:
            gv[where[0][drop], :, where[1][drop]] = 0
    if a.normalization == "valid":
        gv *= a.grad_scale / xp.maximum(keep.sum(), 1).astype(p.dtype)
        return
    scale = op._label_scale(label.size, out.shape[0], p.shape[0])
    if scale != 1.0:
        gv *= scale


def _index_grad_rows(op, xp, label, gv) -> bool:
    """The common case of `index_grad_into` (one class index per row of the 2-D gv, every
    label in range) without temporaries: gv (holding p) gets 1 subtracted at each row's
    label and is scaled. False, with gv untouched, when a label is out of range."""
    rows, classes = gv.shape
    lab = label.reshape(-1)[:rows] if op.mode == "flat" else label.reshape(-1)
    flat = op._scratch(xp, "label_at", (rows,), "int64")
    xp.copyto(flat, lab, casting="unsafe")  # truncation toward zero, like astype
    if rows:
        bound = op._scratch(xp, "label_bound", (), "int64")
        if int(xp.min(flat, out=bound)) < 0 or int(xp.max(flat, out=bound)) >= classes:
            return False
    flat += _row_starts(xp, rows, classes)
    xp.subtract.at(gv.reshape(-1), flat, const(xp, 1, gv.dtype))
    scale = op._label_scale(label.size, rows, rows)
    if scale != 1.0:
        gv *= scale
    return True
