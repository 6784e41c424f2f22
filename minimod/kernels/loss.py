"""SoftmaxOutput's host steps: its bound softmax, and the index-label gradient written
straight into the gradient array.

`SoftmaxOutput.backward` builds the one-hot matrix of the labels, which reads the same on every
device and never waits for a GPU. On NumPy it is cheaper to copy the probabilities once and
touch only the N labelled entries (and ignored rows): `index_grad_into`, bound for NumPy
arrays, with the same numbers. Its common case (one class index per row of 2-D data, no
ignoring, smoothing or 'valid' normalisation) binds with every array and scale resolved, and
checks the labels' range on every call.

On CuPy the index-label gradient is one fused kernel (`SOFTMAX_OUTPUT_GRAD`, see
`_bind_fused`) instead of the op's chain of one-hot, subtract, mask, scale and copy passes,
and the forward softmax of rows one kernel (`softmax_rows.py`) instead of five passes.
"""
from __future__ import annotations

import contextlib

import numpy as np

from .. import backend
from ..backend import const
from ..context import gpu
from ..ops.loss import SoftmaxOutput, data_grad, softmax_into
from ..ops.scratch import _row_starts
from .registry import fast_path, plain_numpy
from .softmax_rows import ROWS

__all__ = ["index_grad_into", "SOFTMAX_OUTPUT_GRAD"]

# dx = (p - t) * keep * scale for index labels, one element of p per thread: t is `on` where
# the element's class (cls) equals its row's label and `off` elsewhere (1 and 0 unsmoothed);
# keep is 0 where use_ignore is 1 and the label is `ignore`. The labels come in truncated and
# broadcast along the class axis, cls as a broadcast arange: the kernel body has no integer
# casts and no element index. Each of hit, miss and keep is exactly 0 or 1, so every product
# below equals the op's (p - t) * keep * scale bit for bit.
SOFTMAX_OUTPUT_GRAD = backend.ElementwiseSpec(
    "softmax_output_grad", "T p, T label, T cls, T on, T off, T ignore, T use_ignore, T scale",
    "T dx",
    "T hit = (T)(cls == label);"
    "T miss = (T)(cls != label);"
    "T keep = (T)1 - use_ignore * (T)(label == ignore);"
    "dx = (p - (hit * on + miss * off)) * keep * scale;")


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
    if xp is not np:
        return _bind_row_kernel(op, xp, x, y)
    if not _bound_case(op, inputs[1], y, x, xp):
        return None
    red = xp.empty((y.shape[0], 1), y.dtype)  # the row maxima, then the row sums

    def run(xp, is_train):
        softmax_into(xp, x, 1, y, red=red)
    return run


def _bind_row_kernel(op, xp, x, y):
    """On CuPy, the softmax of 'flat' and 'preserve' modes (rows of contiguous data) as one
    kernel (`softmax_rows`), where that kernel serves the dtype on this GPU; else None."""
    if (op.mode == "multi" or x.dtype != y.dtype or not x.flags.c_contiguous
            or not y.flags.c_contiguous or x.ndim < 2):
        return None
    cols = x.shape[-1] if op.mode == "preserve" else int(np.prod(x.shape[1:]))
    if not cols or not ROWS.serves(xp, x.device.id, x.dtype, _reference(xp)):
        return None
    x2, y2 = x.reshape(-1, cols), y.reshape(-1, cols)

    def run_rows(xp, is_train):
        ROWS.run(xp, x2, y2)
    return run_rows


def _reference(xp):
    """The op's softmax passes over the rows of a 2-D array: what the kernel is checked
    against."""
    def passes(x, y):
        softmax_into(xp, x, 1, y, red=xp.empty((x.shape[0], 1), x.dtype))
    return passes


@fast_path(SoftmaxOutput, stage="backward")
def bind_backward(op, xp, out_grads, inputs, outputs, in_grads, aux):
    g, out, label = in_grads[0], outputs[0], inputs[1]
    fused = _bind_fused(op, xp, out, label, in_grads)
    if fused is not None:
        return fused
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


def _fused_case(op, out, label, g) -> bool:
    """Whether `_bind_fused` reproduces the op's backward exactly for these arrays: index
    labels, no head gradient, float32/64 p and g of one dtype, these and the labels
    C-contiguous (so every reshape bound here is a view), and class counts and ignore_label
    the dtype holds exactly."""
    a = op.attrs
    if (g is None or label.shape == out.shape or a.out_grad or out.dtype != g.dtype
            or out.dtype not in (np.float32, np.float64) or label.dtype.kind not in "fiu"
            or not (g.flags.c_contiguous and out.flags.c_contiguous
                    and label.flags.c_contiguous)):
        return False
    exact = 2 ** np.finfo(out.dtype).nmant
    classes = op._views(out)[0].shape[1]
    return classes <= exact and abs(op.ignore) < exact and not (a.smooth_alpha
                                                                and classes == 1)


def _bind_fused(op, xp, out, label, in_grads):
    """SoftmaxOutput's index-label backward as the one kernel SOFTMAX_OUTPUT_GRAD (CuPy, or
    NumPy under `backend.emulate_fused_kernels`), or None. Per call, besides the kernel: the
    labels truncated into a T array (one value per row: N, or N * positions), and for
    'valid' the scale made from their count on the device (`_valid_scale`)."""
    g = in_grads[0]
    kernel = backend.elementwise(xp, SOFTMAX_OUTPUT_GRAD) if _fused_case(op, out, label, g) \
        else None
    if kernel is None:
        return None
    a, dtype = op.attrs, out.dtype
    p = op._views(out)[0]
    gv = g.reshape(p.shape)
    labels = op._labels(p, label)
    classes = p.shape[1]
    on, off = op.targets(classes)
    c = [const(xp, v, dtype) for v in (on, off, float(op.ignore), float(a.use_ignore))]
    truncate = label.dtype.kind == "f"
    label_grad = in_grads[1] if len(in_grads) > 1 else None
    # binding runs outside the executor's device scope: the work arrays go on out's GPU
    with _scope_of(out):
        lab = xp.empty(labels.shape, dtype)
        cls = xp.arange(classes, dtype=dtype).reshape(1, -1, *(1,) * (p.ndim - 2))
        scale, refresh_scale = _valid_scale(op, xp, lab, c[2]) if a.normalization == "valid" \
            else (const(xp, op._label_scale(label.size, out.shape[0], p.shape[0]), dtype), None)
    lab_b = lab.reshape(p.shape[0], 1, *p.shape[2:])  # broadcast along the class axis

    def run(xp, is_train):
        if truncate:
            xp.trunc(labels, out=lab)  # toward zero, as the op's astype(int64)
        else:
            xp.copyto(lab, labels, casting="unsafe")
        if refresh_scale is not None:
            refresh_scale(xp)
        if label_grad is not None:
            label_grad.fill(0)
        kernel(p, lab_b, cls, *c, scale, gv)
    return run


def _valid_scale(op, xp, lab, ignore) -> tuple:
    """'valid' normalization's factor as a 0-d array of lab's dtype, and `refresh(xp)`, which
    sets it to grad_scale / max(number of labels in `lab` other than `ignore`, 1) without
    leaving the device. Each step rounds as the op's backward does."""
    kept = xp.empty(lab.shape, bool)
    count = xp.empty((), "int64")
    scale = xp.empty((), lab.dtype)
    grad_scale, one = const(xp, op.attrs.grad_scale, lab.dtype), const(xp, 1, lab.dtype)

    def refresh(xp):
        xp.not_equal(lab, ignore, out=kept)
        backend.sum_into(xp, kept, None, count)
        xp.copyto(scale, count, casting="unsafe")
        xp.maximum(scale, one, out=scale)
        xp.divide(grad_scale, scale, out=scale)
    return scale, refresh


def _scope_of(arr):
    """A `with` block making the GPU that holds `arr` current; a no-op for a host array."""
    if backend.is_gpu_array(arr):
        return backend.device_scope(gpu(backend.device_of(arr)))
    return contextlib.nullcontext()
