"""Neural-network layers: dense, convolution, pooling, activation, normalisation, dropout, lookup.

Shapes are channels-first (NCW / NCHW / NCDHW) as in MXNet's default layout. Convolution and
deconvolution use im2col in a work layout: batch-last (C, *spatial, N), where every kernel
offset's window is a run of contiguous (W_out * N) blocks, or, for convolutions with wide outputs,
channels-batch (C, N, *spatial), whose conversions to and from NCHW move whole feature maps (see
`_cn_layout`). The input is copied once into the work layout (padding included), all windows are
copied in one strided copy into a column buffer (C, K, *work(out)), and ONE GEMM per direction
(batched over groups) does the arithmetic, its result landing in the work layout; only the op's
boundaries convert to and from NCHW. Convolution keeps its columns as a hidden output for its
backward. Deconvolution is the transpose of the same steps. Work arrays come from a small
process-wide scratch cache (`_ScratchMixin`), so repeated calls do not page-fault fresh buffers.
On GPUs with CuPy's cuDNN wrapper, `for_device` swaps in CudnnConvolution, CudnnDeconvolution
and CudnnPooling, which call cuDNN instead and read the data (not columns or masks) in backward.

Where MXNet 1.9.1 on CPU and on GPU disagree, we follow the documented or GPU behaviour and say so
in the op's docstring (BatchNorm's moving statistics).
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Literal, Optional

from .. import backend
from ..base import OpParamError, ShapeError
from .layout import BatchLastMixin
from .registry import Op, VariadicOp, fmt_shape, register
from .scratch import _arange, _const, _plain_numpy, _ScratchMixin, _sum

__all__ = [
    "LRN",
    "Activation",
    "BatchNorm",
    "Convolution",
    "Deconvolution",
    "Dropout",
    "Embedding",
    "FullyConnected",
    "InstanceNorm",
    "LayerNorm",
    "LeakyReLU",
    "LogSoftmax",
    "Pooling",
    "Softmax",
    "SoftmaxActivation",
]

_CHANNEL_FIRST = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
Layout = Optional[Literal["NCW", "NCHW", "NCDHW", "NWC", "NHWC", "NDHWC"]]
CudnnTune = Optional[Literal["off", "limited_workspace", "fastest"]]
FloatName = Literal["float16", "float32", "float64"]


# ----------------------------------------------------------------------------- helpers

def _prod(dims) -> Optional[int]:
    """Product of dims, None when one is unknown."""
    if any(d is None for d in dims):
        return None
    return math.prod(dims)


def _param_error(op: str, text: str) -> OpParamError:
    return OpParamError("operator %s: %s" % (op, text))


def _spatial_tuple(op: str, name: str, value: tuple, ndim: int, default: int) -> tuple:
    """A per-spatial-dim parameter: () means `default` everywhere, otherwise one value per dim."""
    if not value:
        return (default,) * ndim
    if len(value) != ndim:
        raise _param_error(op, "%s=%s has %d value(s) but kernel has %d"
                           % (name, value, len(value), ndim))
    return tuple(value)


def _check_layout(op: str, layout: Optional[str], ndim: int) -> None:
    if layout is not None and layout != _CHANNEL_FIRST.get(ndim):
        raise _param_error(op, "layout=%s is not supported for %d-D data (only %s)"
                           % (layout, ndim, _CHANNEL_FIRST.get(ndim)))


def _check_rank(op: Op, shape, rank: int, what: str) -> None:
    if shape is not None and len(shape) != rank:
        raise ShapeError("input 'data' has shape %s but %s needs %d dims"
                         % (fmt_shape(shape), what, rank))


def _conv_out_dim(x, k, s, d, p):
    if x is None:
        return None
    return (x + 2 * p - d * (k - 1) - 1) // s + 1


def _window(offset: int, stride: int, dilate: int, count: int) -> slice:
    """Positions read by kernel tap `offset` for `count` outputs."""
    start = offset * dilate
    return slice(start, start + stride * (count - 1) + 1, stride)


def _offsets(kernel: tuple):
    return itertools.product(*(range(k) for k in kernel))


def _padded(xp, x, pad_lo: tuple, pad_hi: tuple, fill=0.0):
    """x (N, C, *spatial) inside a new array filled with `fill` around it."""
    spatial = x.shape[2:]
    shape = x.shape[:2] + tuple(n + lo + hi for n, lo, hi in zip(spatial, pad_lo, pad_hi))
    if not any(pad_lo) and not any(pad_hi):
        return x
    out = xp.full(shape, fill, dtype=x.dtype)
    out[(Ellipsis,) + tuple(slice(lo, lo + n) for lo, n in zip(pad_lo, spatial))] = x
    return out


#: Convolutions whose output rows are at least this wide work in the channels-batch layout
#: (C, N, *spatial): their im2col copies rows of the NCHW data as they are and the conversions
#: to and from NCHW move whole feature maps. Narrower outputs work batch-last (C, *spatial, N),
#: where every im2col copy is a run of (width * N) values but the conversions to and from NCHW
#: are elementwise transposes (about 5 GB/s with NumPy, which is costly on big maps).
_CN_MIN_WIDTH = 16


def _cn_layout(out_spatial: tuple) -> bool:
    return out_spatial[-1] >= _CN_MIN_WIDTH


def _interior(pad_lo: tuple, spatial: tuple, cn: bool = False) -> tuple:
    """Index of the unpadded part of a work array: (C, N, *padded) if cn else (C, *padded, N)."""
    inner = tuple(slice(lo, lo + n) for lo, n in zip(pad_lo, spatial))
    return (slice(None),) * 2 + inner if cn else (slice(None),) + inner + (slice(None),)


def _work_shape(c: int, n: int, spatial: tuple, cn: bool) -> tuple:
    return (c, n) + tuple(spatial) if cn else (c,) + tuple(spatial) + (n,)


def _to_work(op, xp, role: str, x, pad: tuple, cn: bool, copy: bool = True, last: bool = False):
    """x (N, C, *sp), or (C, *sp, N) when `last`, as a work array (C, N, *(sp + 2 pad)) if cn
    else (C, *(sp + 2 pad), N).

    The copy is a scratch with a zero border. Unpadded data that is only read through views
    (copy=False) needs no copy when it is batch-last already (`last`, which implies not cn), or
    channels-batch: x with its first two axes swapped is returned.
    """
    if last:
        if not copy and not any(pad):
            return x
        c, n, spatial, src = x.shape[0], x.shape[-1], x.shape[1:-1], x
    else:
        if cn and not copy and not any(pad):
            return x.swapaxes(0, 1)
        c, n, spatial = x.shape[1], x.shape[0], x.shape[2:]
        src = x.swapaxes(0, 1) if cn else xp.moveaxis(x, 0, -1)
    shape = _work_shape(c, n, tuple(m + 2 * p for m, p in zip(spatial, pad)), cn)
    buf = op._scratch(xp, "%s%s%s" % (role, pad, "cn" if cn else "bl"), shape, x.dtype,
                      zero=any(pad))
    buf[_interior(pad, spatial, cn)] = src
    return buf


def _from_work(xp, a, cn: bool):
    """A work array (C, N, *sp) or (C, *sp, N) as an (N, C, *sp) view."""
    return a.swapaxes(0, 1) if cn else xp.moveaxis(a, -1, 0)


def _tap_index(offs, stride, dilate, out_spatial, cn: bool = False) -> tuple:
    win = tuple(_window(o, s, d, m) for o, s, d, m in zip(offs, stride, dilate, out_spatial))
    return (slice(None),) * 2 + win if cn else (slice(None),) + win + (slice(None),)


def _im2col(op, xp, xw, kernel, stride, dilate, out_spatial, cn: bool = False, into=None):
    """Columns (C, prod(kernel), *work(out)) of a padded work array xw (see `_to_work`).

    Batch innermost makes every tap's copy a run of contiguous (W_out * N) blocks; channels-batch
    makes it rows of W_out values. The columns go into `into` (a contiguous array of their size)
    when given, else into a scratch array.
    """
    c, n = xw.shape[0], xw.shape[1] if cn else xw.shape[-1]
    shape = (c, math.prod(kernel)) + _work_shape(1, n, out_spatial, cn)[1:]
    direct = into is not None and into.flags.c_contiguous
    cols = into.reshape(shape) if direct else op._scratch(xp, "cols" + ("cn" if cn else ""),
                                                          shape, xw.dtype)
    # every tap's window at once: a strided view (C, *kernel, *work(out)) of xw, copied in one
    # call (as many calls as taps cost more in Python than the copy itself at LeNet's sizes)
    st = xw.strides
    sp_st = st[2:] if cn else st[1:-1]
    n_st = st[1] if cn else st[-1]
    taps = tuple(s * d for s, d in zip(sp_st, dilate))
    steps = tuple(s * t for s, t in zip(sp_st, stride))
    view = xp.lib.stride_tricks.as_strided(
        xw, (c,) + tuple(kernel) + _work_shape(1, n, out_spatial, cn)[1:],
        (st[0],) + taps + ((n_st,) + steps if cn else steps + (n_st,)))
    cols.reshape(view.shape)[...] = view
    if into is not None and not direct:
        into[...] = cols.reshape(into.shape)
    return cols


def _col2im(op, xp, cols, spatial, kernel, stride, dilate, pad, out_spatial, cn: bool = False,
            groups: Optional[int] = None):
    """Adjoint of _im2col: sums cols (C, K, *work(out)) into a scratch work array (padded).

    With `groups` the columns are tap-major instead, (groups, K, C / groups, *work(out)): each
    tap's block is then contiguous (per group), which NumPy sums markedly faster than the
    (C, 1, ...) slices of channel-major columns. Returns the view of the unpadded part.
    """
    if groups is None:
        c, n = cols.shape[0], cols.shape[2] if cn else cols.shape[-1]
    else:
        c, n = groups * cols.shape[2], cols.shape[3] if cn else cols.shape[-1]
    shape = _work_shape(c, n, tuple(m + 2 * p for m, p in zip(spatial, pad)), cn)
    acc = op._scratch(xp, "col2im" + ("cn" if cn else ""), shape, cols.dtype)
    acc.fill(0)
    for tap, offs in enumerate(_offsets(kernel)):
        idx = _tap_index(offs, stride, dilate, out_spatial, cn)
        if groups is None:
            acc[idx] += cols[:, tap]
        else:
            acc.reshape((groups, c // groups) + shape[1:])[(slice(None),) + idx] += cols[:, tap]
    return acc[_interior(pad, spatial, cn)]


def _row_sums(op, xp, a, out=None):
    """Row sums of a 2-D array as one matrix-vector product (several times faster than
    NumPy's sum along rows at these sizes), into `out` when it is a contiguous vector."""
    ones = op._scratch(xp, "ones", (a.shape[1],), a.dtype)
    ones.fill(1)
    if out is not None and out.flags.c_contiguous and out.dtype == a.dtype:
        return xp.matmul(a, ones, out=out.reshape(a.shape[0]))
    return xp.matmul(a, ones)


def _gemm(op, xp, role: str, a, b, into=None):
    """a @ b (2-D, or batched over groups) into a scratch array, or into `into` (a contiguous
    array of the product's size) when given."""
    shape = a.shape[:-1] + b.shape[-1:]
    res = op._scratch(xp, role, shape, b.dtype) if into is None else into.reshape(shape)
    xp.matmul(a, b, out=res)
    return res


def _groups(a, g: int):
    """A weight (g * m, ...) as GEMM rows: (m, k) for one group, (g, m / g, k) for several."""
    return a.reshape(a.shape[0], -1) if g == 1 else a.reshape(g, a.shape[0] // g, -1)


def _panel(a, g: int, p: int):
    """Batch-last data or columns (g * m, ..., P) as a GEMM operand (m, P) or (g, m / g, P)."""
    return a.reshape(-1, p) if g == 1 else a.reshape(g, -1, p)


def _t(a):
    """Transpose of the last two axes (a view; BLAS reads it without a copy)."""
    return a.T if a.ndim == 2 else a.transpose(0, 2, 1)


def _write_grad(xp, dst, value) -> None:
    """dst[...] = value where dst may be None; value may be a scratch view."""
    if dst is not None:
        dst[...] = value.reshape(dst.shape)


def _bias_view(bias, ndim: int, axis: int = 1):
    shape = [1] * ndim
    shape[axis] = -1
    return bias.reshape(shape)


def _reduce_axes(ndim: int, keep: int) -> tuple:
    return tuple(i for i in range(ndim) if i != keep)


def _write(xp, dst, value) -> None:
    """dst[...] = value, a no-op when dst is None (a gradient nobody needs)."""
    if dst is not None:
        dst[...] = value


def _erf(xp, x):
    """erf with relative error below 1.2e-7 (Chebyshev fit of erfc), for NumPy and CuPy alike."""
    z = xp.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (
        0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (
            1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    erfc = t * xp.exp(poly)
    return xp.where(x >= 0, 1.0 - erfc, erfc - 1.0)


def _same_dtype_types(op: Op, in_types: list, out_types: list, slots: tuple):
    """Unify the dtypes of the given input slots and every output; leave the others alone."""
    known = next((in_types[i] for i in slots if in_types[i] is not None), None)
    if known is None:
        known = next((t for t in out_types if t is not None), None)
    if known is None:
        return in_types, out_types
    sub_in = [in_types[i] for i in slots]
    sub_in, out_types = Op.infer_type(op, sub_in, list(out_types))
    in_types = list(in_types)
    for i, t in zip(slots, sub_in):
        in_types[i] = t
    return in_types, out_types


# ----------------------------------------------------------------------------- FullyConnected

@dataclasses.dataclass(frozen=True)
class FullyConnectedAttrs:
    num_hidden: int
    no_bias: bool = False
    flatten: bool = True


@register
class FullyConnected(BatchLastMixin, Op):
    """Dense layer: out = data . weight^T + bias.

    flatten=True: data (N, d1, d2, ...) is read as (N, d1*d2*...) and out is (N, num_hidden).
    flatten=False: the product runs over the last axis only, (..., k) -> (..., num_hidden).
    weight is (num_hidden, k), bias (num_hidden,) unless no_bias.

    With flatten=True, data and output may each be stored batch-last (`BatchLastMixin`): data
    (d1, d2, ..., N), read as its (k, N) view, and output (num_hidden, N). The GEMMs then run
    on the transposed operands, out^T = weight . data^T, which OpenBLAS runs in about 0.75x the
    time of the batch-first product at the MLP's sizes; an output stored so is the GEMM's
    result, the bias added along its rows.
    """

    name = "FullyConnected"
    SIGNATURE_INPUTS = ("data", "weight", "bias")
    Attrs = FullyConnectedAttrs
    backward_inputs = (0, 1)  # data and weight; the bias gradient needs neither
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.num_hidden <= 0:
            raise _param_error(self.name, "num_hidden must be positive, got %d"
                               % self.attrs.num_hidden)

    def arguments(self) -> list:
        return ["data", "weight"] if self.attrs.no_bias else ["data", "weight", "bias"]

    def can_batch_last(self) -> bool:
        """Only the flattening form has one batch axis to move last."""
        return self.attrs.flatten

    def infer_batch_first(self, in_shapes: list, out_shapes: list):
        a = self.attrs
        data = in_shapes[0]
        if data is None:  # as MXNet: weights are deduced from the data, never the other way
            return in_shapes, out_shapes
        if a.flatten:
            if data is not None and len(data) < 1:
                raise ShapeError("input 'data' has shape () but FullyConnected needs a batch axis")
            k = None if data is None else _prod(data[1:])
            if k is None and in_shapes[1] is not None and len(in_shapes[1]) == 2:
                k = in_shapes[1][1]
                if data is not None and len(data) == 2:
                    self.set_in(in_shapes, 0, (data[0], k))
            batch = None if data is None else data[0]
            out = (batch, a.num_hidden)
        else:
            k = None if data is None or not data else data[-1]
            if data is not None and k is None and in_shapes[1] is not None:
                k = in_shapes[1][1]
                self.set_in(in_shapes, 0, tuple(data[:-1]) + (k,))
            out = None if data is None else tuple(data[:-1]) + (a.num_hidden,)
        why = "num_hidden=%d and data %s" % (a.num_hidden, fmt_shape(in_shapes[0]))
        self.set_in(in_shapes, 1, (a.num_hidden, k), why)
        if not a.no_bias:
            self.set_in(in_shapes, 2, (a.num_hidden,), "num_hidden=%d" % a.num_hidden)
        if out is not None:
            self.set_out(out_shapes, 0, out)
        elif a.flatten:
            self.set_out(out_shapes, 0, (None, a.num_hidden))
        if in_shapes[0] is not None and out_shapes[0] is not None:
            if a.flatten:
                self.set_in(in_shapes, 0, (out_shapes[0][0],) + (None,) * (len(in_shapes[0]) - 1))
            else:
                self.set_in(in_shapes, 0, tuple(out_shapes[0][:-1]) + (None,))
        return in_shapes, out_shapes

    def _as_2d(self, x):
        return x.reshape(x.shape[0], -1) if self.attrs.flatten else x.reshape(-1, x.shape[-1])

    def _cols(self, x):
        """The data as (k, N), features by samples: a view, whichever way it is stored."""
        return x.reshape(-1, x.shape[-1]) if self.data_last else self._as_2d(x).T

    def forward(self, xp, inputs, aux, out, is_train):
        if self.data_last or self.out_last:
            self._forward_last(xp, inputs, out[0])
            return
        x2 = self._as_2d(inputs[0])
        y = out[0]
        if y.flags.c_contiguous and y.dtype == x2.dtype:
            y2 = y.reshape(x2.shape[0], -1)  # a view: the GEMM writes straight into out
            xp.matmul(x2, inputs[1].T, out=y2)
        else:
            y2 = xp.matmul(x2, inputs[1].T)
        if not self.attrs.no_bias:
            y2 += inputs[2]
        if not y.flags.c_contiguous or y.dtype != x2.dtype:
            y[...] = y2.reshape(y.shape)

    def _forward_last(self, xp, inputs, y):
        cols, weight = self._cols(inputs[0]), inputs[1]
        if self.out_last:  # y (num_hidden, N) = weight . cols
            y[...] = xp.matmul(weight, cols)
            if not self.attrs.no_bias:
                y += inputs[2][:, None]
        else:
            y[...] = xp.matmul(cols.T, weight.T)
            if not self.attrs.no_bias:
                y += inputs[2]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, weight = inputs[0], inputs[1]
        dx, dw = in_grads[0], in_grads[1]
        db = None if self.attrs.no_bias else in_grads[2]
        if self.data_last or self.out_last:
            g = out_grads[0]
            g_t = g if self.out_last else g.T  # (num_hidden, N)
            if dx is not None:
                if self.data_last:
                    dx[...] = xp.matmul(weight.T, g_t).reshape(dx.shape)
                else:
                    dx[...] = xp.matmul(g_t.T, weight).reshape(dx.shape)
            if dw is not None:
                dw[...] = xp.matmul(g_t, self._cols(x).T)
            if db is not None:  # as bind_backward sums it
                if self.out_last:
                    db[...] = xp.matmul(g, xp.ones(g.shape[1], dtype=g.dtype))
                else:
                    _sum(xp, g, 0, db)
            return
        g2 = out_grads[0].reshape(-1, self.attrs.num_hidden)
        if dx is not None:
            if dx.flags.c_contiguous and dx.dtype == g2.dtype:  # the GEMM writes in place
                xp.matmul(g2, weight, out=dx.reshape(g2.shape[0], -1))
            else:
                dx[...] = xp.matmul(g2, weight).reshape(x.shape)
        if dw is not None:
            if dw.flags.c_contiguous and dw.dtype == g2.dtype:
                xp.matmul(g2.T, self._as_2d(x), out=dw)
            else:
                dw[...] = xp.matmul(g2.T, self._as_2d(x))
        if db is not None:
            if db.flags.c_contiguous and db.dtype == g2.dtype:
                _sum(xp, g2, 0, db)
            else:
                db[...] = g2.sum(axis=0)

    def bind_forward(self, xp, inputs, aux, out):
        x, weight, y = inputs[0], inputs[1], out[0]
        if not _plain_numpy(xp, x, weight, y, *inputs[2:]):
            return None
        if self.out_last:  # y^T = weight . data^T, written where it is stored
            a, b, y2 = weight, self._cols(x), y
            bias = None if self.attrs.no_bias else inputs[2][:, None]
        else:
            a, b = self._cols(x).T, weight.T  # (N, k) . (k, num_hidden)
            y2 = y.reshape(a.shape[0], -1)
            bias = None if self.attrs.no_bias else inputs[2]
        if bias is None:
            def run(xp, is_train):
                xp.matmul(a, b, out=y2)
            return run

        def run_bias(xp, is_train):
            xp.matmul(a, b, out=y2)
            xp.add(y2, bias, out=y2)
        return run_bias

    def bind_backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, weight, g = inputs[0], inputs[1], out_grads[0]
        grads = [a for a in in_grads if a is not None]
        if not _plain_numpy(xp, g, x, weight, *grads):
            return None
        dx, dw = in_grads[0], in_grads[1]
        db = None if self.attrs.no_bias else in_grads[2]
        g_t = g if self.out_last else g.reshape(-1, self.attrs.num_hidden).T  # (num_hidden, N)
        cols_t = self._cols(x).T  # (N, k)
        if dx is None:
            dx_a = dx_b = dx2 = None
        elif self.data_last:  # dx^T = weight^T . g^T, stored (k, N)
            dx_a, dx_b, dx2 = weight.T, g_t, dx.reshape(-1, dx.shape[-1])
        else:
            dx_a, dx_b, dx2 = g_t.T, weight, dx.reshape(g_t.shape[1], -1)
        # the bias gradient: a matrix-vector product along the rows of a batch-last g
        ones = xp.ones(g.shape[1], dtype=g.dtype) if db is not None and self.out_last else None

        def run(xp, is_train):
            if dx2 is not None:
                xp.matmul(dx_a, dx_b, out=dx2)
            if dw is not None:
                xp.matmul(g_t, cols_t, out=dw)
            if ones is not None:
                xp.matmul(g, ones, out=db)
            elif db is not None:
                xp.add.reduce(g_t.T, axis=0, out=db)  # `_sum` on NumPy
        return run


# ----------------------------------------------------------------------------- Convolution

@dataclasses.dataclass(frozen=True)
class ConvolutionAttrs:
    kernel: tuple[int, ...]
    num_filter: int
    stride: tuple[int, ...] = ()
    dilate: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()
    num_group: int = 1
    workspace: int = 1024
    no_bias: bool = False
    cudnn_tune: CudnnTune = None
    cudnn_off: bool = False
    layout: Layout = None


class _ConvBase(_ScratchMixin, Op):
    """Shared parameter checks of Convolution and Deconvolution.

    Both keep scratch arrays between calls (see `_ScratchMixin`: the work-layout copies, the
    columns and the GEMM results, keyed by shape and dtype; results never depend on them).
    """

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        nd = len(a.kernel)
        if nd not in (1, 2, 3):
            raise _param_error(self.name, "kernel=%s must have 1, 2 or 3 dims" % (a.kernel,))
        if any(k <= 0 for k in a.kernel):
            raise _param_error(self.name, "kernel=%s must be positive" % (a.kernel,))
        self.kernel = tuple(a.kernel)
        self.stride = _spatial_tuple(self.name, "stride", a.stride, nd, 1)
        self.dilate = _spatial_tuple(self.name, "dilate", a.dilate, nd, 1)
        self.pad = _spatial_tuple(self.name, "pad", a.pad, nd, 0)
        if any(s <= 0 for s in self.stride) or any(d <= 0 for d in self.dilate):
            raise _param_error(self.name, "stride and dilate must be positive")
        if any(p < 0 for p in self.pad):
            raise _param_error(self.name, "pad=%s must not be negative" % (a.pad,))
        if a.num_filter <= 0 or a.num_group <= 0:
            raise _param_error(self.name, "num_filter and num_group must be positive")
        if a.num_filter % a.num_group:
            raise _param_error(self.name, "num_filter=%d is not a multiple of num_group=%d"
                               % (a.num_filter, a.num_group))
        _check_layout(self.name, a.layout, nd)

    def arguments(self) -> list:
        return ["data", "weight"] if self.attrs.no_bias else ["data", "weight", "bias"]

    def _channels(self, in_shapes: list, from_weight) -> Optional[int]:
        """Input channels, from data or else from the weight; checks divisibility by num_group."""
        data = in_shapes[0]
        g = self.attrs.num_group
        channels = None if data is None else data[1]
        if channels is None and in_shapes[1] is not None:
            channels = from_weight(in_shapes[1])
        if channels is not None and channels % g:
            raise ShapeError("input 'data' has %d channels, not a multiple of num_group=%d"
                             % (channels, g))
        return channels


@register
class Convolution(BatchLastMixin, _ConvBase):
    """N-D convolution (cross-correlation) over channels-first data, 1-D, 2-D or 3-D.

    data (N, C, *x), weight (F, C/g, *k), bias (F,), out (N, F, *y) with
    y = floor((x + 2p - d(k-1) - 1) / s) + 1; channel group i of the output sees only channel
    group i of the input (g = num_group).
    Forward: columns (C*K, P) of the input in a work layout (see `_cn_layout`),
    out = W (F, C*K) @ columns, with P = prod(y) * N. Backward: dW = g_out (F, P) @ columns^T,
    d columns = W^T @ g_out summed back over the windows (col2im), bias gradient = row sums of
    g_out.

    The columns are a hidden second output, `columns` (C*K*P,), which MXNet's JSON does not
    count (`num_json_outputs`): the memory plan holds them from the forward to the backward,
    which reads them instead of the data, so backward never rebuilds them.
    """

    name = "Convolution"
    SIGNATURE_INPUTS = ("data", "weight", "bias")
    PARAM_ORDER = ("kernel", "stride", "dilate", "pad", "num_filter", "num_group",
                   "workspace", "no_bias", "cudnn_tune", "cudnn_off", "layout")
    Attrs = ConvolutionAttrs
    backward_inputs = (1,)
    backward_outputs = (1,)

    def outputs(self) -> list:
        return ["output", "columns"]

    def num_visible_outputs(self) -> int:
        return 1

    def num_json_outputs(self) -> int:
        return 1

    def infer_batch_first(self, in_shapes: list, out_shapes: list):
        a = self.attrs
        nd = len(self.kernel)
        _check_rank(self, in_shapes[0], nd + 2, "kernel %s" % (a.kernel,))
        g = a.num_group
        channels = self._channels(in_shapes, lambda w: None if w[1] is None else w[1] * g)
        why = "num_filter=%d, num_group=%d and data %s" % (a.num_filter, g,
                                                          fmt_shape(in_shapes[0]))
        self.set_in(in_shapes, 1, (a.num_filter, None if channels is None else channels // g)
                    + self.kernel, why)
        if not a.no_bias:
            self.set_in(in_shapes, 2, (a.num_filter,), "num_filter=%d" % a.num_filter)
        data = in_shapes[0]
        if data is None:
            if channels is not None:
                in_shapes[0] = (None, channels) + (None,) * nd
            return in_shapes, out_shapes
        self.set_in(in_shapes, 0, (None, channels) + (None,) * nd)
        spatial = tuple(_conv_out_dim(x, k, s, d, p) for x, k, s, d, p in zip(
            data[2:], self.kernel, self.stride, self.dilate, self.pad))
        if any(y is not None and y <= 0 for y in spatial):
            raise ShapeError("input 'data' has shape %s, too small for kernel %s with dilate %s "
                             "and pad %s" % (fmt_shape(data), self.kernel, self.dilate, self.pad))
        self.set_out(out_shapes, 0, (data[0], a.num_filter) + spatial)
        out = out_shapes[0]
        # with stride 1 an input dim follows from the output's, as MXNet infers it backwards
        back = tuple(y + d * (k - 1) - 2 * p if x is None and y is not None and s == 1 else None
                     for x, y, k, s, d, p in zip(data[2:], out[2:], self.kernel, self.stride,
                                                 self.dilate, self.pad))
        self.set_in(in_shapes, 0, (out[0], None) + back)
        spatial = tuple(y for y in out[2:])
        size = _prod((in_shapes[0][0], channels) + self.kernel + spatial)
        if size is not None:
            self.set_out(out_shapes, 1, self._columns_shape(size))
        return in_shapes, out_shapes

    def _columns_shape(self, size: int) -> tuple:
        return (size,)

    def for_device(self, ctx, dtype):
        return _cudnn_variant(self, CudnnConvolution, ctx, dtype)

    def _cn(self, out_spatial: tuple) -> bool:
        """Whether to work channels-batch (see `_cn_layout`): never next to batch-last data."""
        return _cn_layout(out_spatial) and not (self.data_last or self.out_last)

    def forward(self, xp, inputs, aux, out, is_train):
        x, weight = inputs[0], inputs[1]
        y = out[0]
        g, nf = self.attrs.num_group, self.attrs.num_filter
        n = x.shape[-1] if self.data_last else x.shape[0]
        out_spatial = y.shape[1:-1] if self.out_last else y.shape[2:]
        cn = self._cn(out_spatial)
        xw = _to_work(self, xp, "x", x, self.pad, cn, copy=False, last=self.data_last)
        cols = _im2col(self, xp, xw, self.kernel, self.stride, self.dilate, out_spatial, cn,
                       into=out[1])
        npix = math.prod(out_spatial) * n
        # a batch-last output is the GEMM's result as it stands: written in place
        direct = self.out_last and y.flags.c_contiguous
        res = _gemm(self, xp, "y", _groups(weight, g), _panel(cols, g, npix),
                    into=y if direct else None).reshape(nf, npix)
        if not self.attrs.no_bias:
            res += inputs[2][:, None]  # along contiguous rows, before the layout change
        if direct:
            return
        work = res.reshape(_work_shape(nf, n, out_spatial, cn))
        y[...] = work if self.out_last else _from_work(xp, work, cn)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        weight, gy = inputs[1], out_grads[0]
        g, nf = self.attrs.num_group, self.attrs.num_filter
        n = gy.shape[-1] if self.out_last else gy.shape[0]
        out_spatial = gy.shape[1:-1] if self.out_last else gy.shape[2:]
        cn = self._cn(out_spatial)
        gw = _to_work(self, xp, "gy", gy, (0,) * len(out_spatial), cn,
                      copy=not (self.out_last and gy.flags.c_contiguous), last=self.out_last)
        npix = math.prod(out_spatial) * n
        g_gemm = _panel(gw, g, npix)
        if in_grads[1] is not None:
            # as dW^T = columns @ g_out^T: OpenBLAS runs this orientation 20-40% faster at
            # LeNet's shapes (long inner dimension P, short outputs)
            _write_grad(xp, in_grads[1], _t(_gemm(self, xp, "dwt", _panel(outputs[1], g, npix),
                                                  _t(g_gemm))))
        if in_grads[0] is not None:
            dx = in_grads[0]
            channels, spatial = (dx.shape[0], dx.shape[1:-1]) if self.data_last else (
                dx.shape[1], dx.shape[2:])
            cg, k = channels // g, math.prod(self.kernel)
            # W^T with its rows in (group, tap, channel) order: d columns come out tap-major
            wt = self._scratch(xp, "wt", (g, k * cg, nf // g), weight.dtype)
            wt.reshape(g, k, cg, nf // g)[...] = weight.reshape(g, nf // g, cg, k).transpose(
                0, 3, 2, 1)
            dcols = _gemm(self, xp, "dcols", wt[0] if g == 1 else wt, g_gemm)
            dcols = dcols.reshape((g, k, cg) + _work_shape(1, n, out_spatial, cn)[1:])
            dxw = _col2im(self, xp, dcols, spatial, self.kernel, self.stride, self.dilate,
                          self.pad, out_spatial, cn, groups=g)
            dx[...] = dxw if self.data_last else _from_work(xp, dxw, cn)
        if not self.attrs.no_bias:
            db = in_grads[2]
            if db is not None:
                sums = _row_sums(self, xp, gw.reshape(nf, npix), out=db)
                if sums.base is not db and sums is not db:
                    db[...] = sums


def _cudnn_variant(op, cls, ctx, dtype):
    """`op` as its cuDNN variant `cls` (a subclass of type(op)) where cuDNN serves `ctx` and
    computes in `dtype` (half, single and double floats), unless op sets cudnn_off; else op."""
    if (type(op) is cls or op.attrs.cudnn_off
            or str(dtype) not in ("float16", "float32", "float64")):
        return op
    cudnn = backend.cudnn_for(ctx)
    if cudnn is None:
        return op
    variant = object.__new__(cls)
    variant.__dict__.update(op.__dict__)
    # what backward reads is the variant's own (class-level) choice, not op's per-instance one
    variant.__dict__.pop("backward_inputs", None)
    variant.__dict__.pop("backward_outputs", None)
    variant.cudnn = cudnn
    return variant


class CudnnConvolution(Convolution):
    """Convolution through cuDNN (`backend.CudnnOps`), the variant `for_device` picks on a GPU
    where CuPy's cuDNN wrapper loads, unless cudnn_off.

    Same name, slots, attrs and JSON as Convolution; what differs is the memory contract.
    cuDNN's filter gradient reads the input data, so backward declares the data (with the
    weight) as an input, and the hidden `columns` output shrinks to one element that nothing
    writes: the plan keeps the data alive to the backward instead of the C*K-times larger
    columns.
    """

    backward_inputs = (0, 1)
    backward_outputs = ()

    def _columns_shape(self, size: int) -> tuple:
        return (1,)

    def forward(self, xp, inputs, aux, out, is_train):
        bias = None if self.attrs.no_bias else inputs[2]
        self.cudnn.conv_forward(inputs[0], inputs[1], bias, out[0], self.pad, self.stride,
                                self.dilate, self.attrs.num_group)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        gy = out_grads[0]
        geometry = (self.pad, self.stride, self.dilate, self.attrs.num_group)
        if in_grads[1] is not None:
            self.cudnn.conv_backward_filter(inputs[0], gy, in_grads[1], *geometry)
        if in_grads[0] is not None:
            self.cudnn.conv_backward_data(inputs[1], gy, in_grads[0], *geometry)
        if not self.attrs.no_bias and in_grads[2] is not None:
            xp.sum(gy, axis=(0,) + tuple(range(2, gy.ndim)), out=in_grads[2])


# ----------------------------------------------------------------------------- Deconvolution

@dataclasses.dataclass(frozen=True)
class DeconvolutionAttrs:
    kernel: tuple[int, ...]
    num_filter: int
    stride: tuple[int, ...] = ()
    dilate: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()
    adj: tuple[int, ...] = ()
    target_shape: tuple[int, ...] = ()
    num_group: int = 1
    workspace: int = 512
    no_bias: bool = True
    cudnn_tune: CudnnTune = None
    cudnn_off: bool = False
    layout: Layout = None


@register
class Deconvolution(_ConvBase):
    """Transposed convolution: the gradient of Convolution with respect to its data.

    data (N, C, *x), weight (C, F/g, *k), bias (F,) unless no_bias (the default), out (N, F, *y)
    with y = s(x-1) + d(k-1) + 1 - 2p + adj. Given target_shape, pad and adj are chosen per
    dim so that y equals it: t = s(x-1) + d(k-1) + 1 - target, adj = t % 2, pad = ceil(t / 2)
    (the adj and pad given are ignored then, as in MXNet).
    """

    name = "Deconvolution"
    SIGNATURE_INPUTS = ("data", "weight", "bias")
    PARAM_ORDER = ("kernel", "stride", "dilate", "pad", "adj", "target_shape", "num_filter",
                   "num_group", "workspace", "no_bias", "cudnn_tune", "cudnn_off", "layout")
    Attrs = DeconvolutionAttrs
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        nd = len(self.kernel)
        target = self.attrs.target_shape
        self.target = _spatial_tuple(self.name, "target_shape", target, nd, 0) if any(
            target) else None
        # a target_shape decides adj (and pad) itself: MXNet ignores the adj given with it
        self.adj = (0,) * nd if self.target else _spatial_tuple(
            self.name, "adj", self.attrs.adj, nd, 0)
        if any(a >= s for a, s in zip(self.adj, self.stride)):
            raise _param_error(self.name, "adj=%s must be smaller than stride=%s"
                               % (self.adj, self.stride))

    def _pad_adj(self, spatial: tuple):
        """(pad, adj) per spatial dim; None entries where the input size is unknown."""
        if self.target is None:
            return self.pad, self.adj
        pad, adj = [], []
        for x, k, s, d, t in zip(spatial, self.kernel, self.stride, self.dilate, self.target):
            if x is None:
                pad.append(None)
                adj.append(None)
                continue
            full = s * (x - 1) + d * (k - 1) + 1
            if full < t:
                raise ShapeError("input 'data' of spatial size %s is too small for "
                                 "target_shape=%s (at most %d)" % (spatial, self.target, full))
            pad.append((full - t + 1) // 2)
            adj.append((full - t) % 2)
        return tuple(pad), tuple(adj)

    def _out_spatial(self, spatial: tuple) -> tuple:
        pad, adj = self._pad_adj(spatial)
        return tuple(None if x is None else s * (x - 1) + d * (k - 1) + 1 - 2 * p + a
                     for x, k, s, d, p, a in zip(spatial, self.kernel, self.stride,
                                                 self.dilate, pad, adj))

    def infer_shape(self, in_shapes: list, out_shapes: list):
        a = self.attrs
        nd = len(self.kernel)
        _check_rank(self, in_shapes[0], nd + 2, "kernel %s" % (a.kernel,))
        g = a.num_group
        channels = self._channels(in_shapes, lambda w: w[0])
        why = "num_filter=%d, num_group=%d and data %s" % (a.num_filter, g,
                                                          fmt_shape(in_shapes[0]))
        self.set_in(in_shapes, 1, (channels, a.num_filter // g) + self.kernel, why)
        if not a.no_bias:
            self.set_in(in_shapes, 2, (a.num_filter,), "num_filter=%d" % a.num_filter)
        data = in_shapes[0]
        if data is None:
            if channels is not None:
                in_shapes[0] = (None, channels) + (None,) * nd
            return in_shapes, out_shapes
        self.set_in(in_shapes, 0, (None, channels) + (None,) * nd)
        spatial = self._out_spatial(tuple(data[2:]))
        if any(y is not None and y <= 0 for y in spatial):
            raise ShapeError("input 'data' has shape %s, too small for pad %s"
                             % (fmt_shape(data), self.pad))
        self.set_out(out_shapes, 0, (data[0], a.num_filter) + spatial)
        self.set_in(in_shapes, 0, (out_shapes[0][0],) + (None,) * (nd + 1))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        x, weight = inputs[0], inputs[1]
        y = out[0]
        g = self.attrs.num_group
        spatial = x.shape[2:]
        pad, _ = self._pad_adj(spatial)
        xbl = _to_work(self, xp, "x", x, (0,) * len(spatial), False)
        npix = math.prod(spatial) * x.shape[0]
        cols = _gemm(self, xp, "cols_t", _t(_groups(weight, g)), _panel(xbl, g, npix))
        cols = cols.reshape((y.shape[1], math.prod(self.kernel)) + spatial + (x.shape[0],))
        ybl = _col2im(self, xp, cols, y.shape[2:], self.kernel, self.stride, self.dilate, pad,
                      spatial)
        y[...] = xp.moveaxis(ybl, -1, 0)
        if not self.attrs.no_bias:
            y += _bias_view(inputs[2], y.ndim)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, weight = inputs[0], inputs[1]
        gy = out_grads[0]
        g = self.attrs.num_group
        spatial = x.shape[2:]
        pad, _ = self._pad_adj(spatial)
        gbl = _to_work(self, xp, "gy", gy, pad, False)
        npix = math.prod(spatial) * x.shape[0]
        cols = _panel(_im2col(self, xp, gbl, self.kernel, self.stride, self.dilate, spatial), g,
                      npix)
        if in_grads[0] is not None:
            res = _gemm(self, xp, "dx", _groups(weight, g), cols)
            in_grads[0][...] = xp.moveaxis(res.reshape((x.shape[1],) + spatial + (x.shape[0],)),
                                           -1, 0)
        if in_grads[1] is not None:
            xbl = _to_work(self, xp, "x", x, (0,) * len(spatial), False)
            _write_grad(xp, in_grads[1], xp.matmul(_panel(xbl, g, npix), _t(cols)))
        if not self.attrs.no_bias:
            _write(xp, in_grads[2], gy.sum(axis=_reduce_axes(gy.ndim, 1)))

    def for_device(self, ctx, dtype):
        return _cudnn_variant(self, CudnnDeconvolution, ctx, dtype)


class CudnnDeconvolution(Deconvolution):
    """Deconvolution through cuDNN, picked by `for_device` as CudnnConvolution is. A
    deconvolution is the data gradient of the convolution from its output's space to its
    input's: forward is cuDNN's backward-data, the data gradient is cuDNN's forward, and the
    weight gradient is cuDNN's filter gradient with the roles of data and output gradient
    swapped. Backward reads the data and weight, as Deconvolution's does."""

    def forward(self, xp, inputs, aux, out, is_train):
        x, y = inputs[0], out[0]
        pad, _ = self._pad_adj(x.shape[2:])
        self.cudnn.conv_backward_data(inputs[1], x, y, pad, self.stride, self.dilate,
                                      self.attrs.num_group)
        if not self.attrs.no_bias:
            y += _bias_view(inputs[2], y.ndim)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, gy = inputs[0], out_grads[0]
        pad, _ = self._pad_adj(x.shape[2:])
        geometry = (pad, self.stride, self.dilate, self.attrs.num_group)
        if in_grads[0] is not None:
            self.cudnn.conv_forward(gy, inputs[1], None, in_grads[0], *geometry)
        if in_grads[1] is not None:
            self.cudnn.conv_backward_filter(gy, x, in_grads[1], *geometry)
        if not self.attrs.no_bias and in_grads[2] is not None:
            xp.sum(gy, axis=(0,) + tuple(range(2, gy.ndim)), out=in_grads[2])


# ----------------------------------------------------------------------------- Pooling

@dataclasses.dataclass(frozen=True)
class PoolingAttrs:
    kernel: tuple[int, ...] = ()
    pool_type: Literal["max", "avg", "sum", "lp"] = "max"
    global_pool: bool = False
    cudnn_off: bool = False
    pooling_convention: Literal["valid", "full", "same"] = "valid"
    stride: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()
    p_value: Optional[int] = None
    count_include_pad: Optional[bool] = None
    layout: Layout = None


@register
class Pooling(_ScratchMixin, Op):
    """Max / average / sum / Lp pooling over the spatial dims of channels-first data.

    Per spatial dim, with kernel k, stride s (default 1), pad p: 'valid' gives
    floor((x + 2p - k) / s) + 1 outputs, 'full' gives ceil(...) + 1 (the last window may run past
    the padding), 'same' gives ceil(x / s) windows starting at 0, s, 2s ... of which the last
    ones run past the end (MXNet's placement; pad must be zeros, and avg divides by the real
    elements). MXNet allows 'same' for 1-D data only; minimod takes 2-D and 3-D too.
    global_pool pools each whole map to size 1. Max ignores padding; avg divides by the window
    size clipped to the padded input when count_include_pad (the default) and by the number of
    real elements otherwise; lp computes (sum x^p)^(1/p) for p_value in 1, 2, 3.
    Max's gradient goes to the first maximum of each window in row-major order.

    Windows that do not overlap (stride == kernel, or one window per dim, as in most 2x2 / 2
    pools and global pooling) take a fast path: the windows are copied once into a scratch
    (window size, outputs) panel and reduced in one call, and backward writes each kernel
    offset's gradient in one pass. Overlapping windows loop over the kernel offsets. The panel,
    the mask comparison and the padded gradient are per-instance scratch arrays (see
    `_ScratchMixin`), rewritten in full on every call.
    """

    name = "Pooling"
    Attrs = PoolingAttrs
    backward_inputs = (0,)
    backward_outputs = (0,)

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        if not a.global_pool:
            if not a.kernel:
                raise _param_error(self.name, "kernel is required unless global_pool=True")
            nd = len(a.kernel)
            if nd not in (1, 2, 3) or any(k <= 0 for k in a.kernel):
                raise _param_error(self.name, "kernel=%s must have 1, 2 or 3 positive dims"
                                   % (a.kernel,))
            stride = _spatial_tuple(self.name, "stride", a.stride, nd, 1)
            if a.pooling_convention == "same":
                # MXNet takes no padding with 'same' (it places the windows itself) and reads
                # a pad of any length, (0, 0, 0) in its own tests, as long as it is all zeros
                if any(a.pad):
                    raise _param_error(self.name, "pooling_convention='same' places the "
                                       "windows itself: pad=%s must be zeros" % (a.pad,))
                pad = (0,) * nd
            else:
                pad = _spatial_tuple(self.name, "pad", a.pad, nd, 0)
            if any(s <= 0 for s in stride) or any(p < 0 for p in pad):
                raise _param_error(self.name, "stride must be positive and pad non-negative")
            _check_layout(self.name, a.layout, nd)
        if a.pool_type == "lp" and a.p_value not in (1, 2, 3):
            raise _param_error(self.name, "pool_type='lp' needs p_value 1, 2 or 3, got %s"
                               % a.p_value)
        # avg and sum gradients need neither the input nor the output values; max reads only
        # its hidden 'mask' output (the winning kernel offset of every window), which is also
        # why MXNet's JSON counts two outputs for max pooling
        if a.pool_type in ("avg", "sum"):
            self.backward_inputs = ()
            self.backward_outputs = ()
        elif a.pool_type == "max":
            self.backward_inputs = ()
            self.backward_outputs = (1,)

    def outputs(self) -> list:
        return ["output", "mask"] if self.attrs.pool_type == "max" else ["output"]

    def num_visible_outputs(self) -> int:
        return 1

    def _geometry(self, spatial: tuple):
        """kernel, stride, pad before, pad after (to cover every window), output size per dim."""
        a = self.attrs
        nd = len(spatial)
        if a.global_pool:
            return (tuple(spatial), (1,) * nd, (0,) * nd, (0,) * nd, (1,) * nd)
        kernel = tuple(a.kernel)
        stride = _spatial_tuple(self.name, "stride", a.stride, nd, 1)
        same = a.pooling_convention == "same"
        pad = (0,) * nd if same else _spatial_tuple(self.name, "pad", a.pad, nd, 0)
        pad_lo, pad_hi, out = [], [], []
        for x, k, s, p in zip(spatial, kernel, stride, pad):
            if same:
                y = -(-x // s)
                lo = 0
            else:
                span = x + 2 * p - k
                y = (span // s if a.pooling_convention == "valid" else -(-span // s)) + 1
                lo = p
            pad_lo.append(lo)
            pad_hi.append(max((y - 1) * s + k - x - lo, 0))
            out.append(y)
        return kernel, stride, tuple(pad_lo), tuple(pad_hi), tuple(out)

    def infer_shape(self, in_shapes: list, out_shapes: list):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        a = self.attrs
        nd = len(data) - 2
        if a.global_pool:
            if nd < 1:
                raise ShapeError("input 'data' has shape %s but Pooling needs (N, C, ...)"
                                 % fmt_shape(data))
            self.set_out(out_shapes, 0, tuple(data[:2]) + (1,) * nd)
            if len(out_shapes) > 1:
                self.set_out(out_shapes, 1, self._mask_shape(out_shapes[0]))
            return in_shapes, out_shapes
        _check_rank(self, data, len(a.kernel) + 2, "kernel %s" % (a.kernel,))
        if any(x is None for x in data[2:]):
            out = (None,) * nd
        else:
            kernel, _, _, _, out = self._geometry(tuple(data[2:]))
            pad = (0,) * nd if a.pooling_convention == "same" else (a.pad or (0,) * nd)
            if any(y <= 0 for y in out) or (a.pooling_convention != "same" and any(
                    x + 2 * p < k for x, p, k in zip(data[2:], pad, kernel))):
                raise ShapeError("input 'data' has shape %s, smaller than kernel %s"
                                 % (fmt_shape(data), kernel))
        self.set_out(out_shapes, 0, tuple(data[:2]) + tuple(out))
        if len(out_shapes) > 1:
            self.set_out(out_shapes, 1, self._mask_shape(out_shapes[0]))
        return in_shapes, out_shapes

    def _mask_shape(self, out_shape):
        return out_shape

    def for_device(self, ctx, dtype):
        a = self.attrs
        if a.pool_type not in ("max", "avg") or not (a.global_pool
                                                     or a.pooling_convention == "valid"):
            return self  # cuDNN's windows are 'valid' ones: 'full' and 'same' stay ours
        return _cudnn_variant(self, CudnnPooling, ctx, dtype)

    def _divisor(self, xp, spatial, kernel, stride, pad_lo, out, dtype):
        """Per-output element count of an avg window, broadcastable to (N, C, *out)."""
        same = self.attrs.pooling_convention == "same"
        include = self.attrs.count_include_pad is not False and not same
        pad = (0,) * len(spatial) if self.attrs.global_pool or same else _spatial_tuple(
            self.name, "pad", self.attrs.pad, len(spatial), 0)
        total = None
        for axis, (x, k, s, lo, y, p) in enumerate(zip(spatial, kernel, stride, pad_lo, out,
                                                       pad)):
            start = xp.arange(y) * s - lo
            end = xp.minimum(start + k, x + p)
            if not include:
                start = xp.maximum(start, 0)
                end = xp.minimum(end, x)
            count = (end - start).astype(dtype)
            shape = [1] * len(spatial)
            shape[axis] = y
            count = count.reshape(shape)
            total = count if total is None else total * count
        return total

    @staticmethod
    def _disjoint(kernel, stride, out_spatial) -> bool:
        return all(s == k or y == 1 for k, s, y in zip(kernel, stride, out_spatial))

    @staticmethod
    def _tiles(xpad, kernel, out_spatial, last: bool = False):
        """The disjoint windows of xpad (N, C, *sp) as a view (*kernel, N, C, *out_spatial);
        of a batch-last xpad (C, *sp, N) (`last`), as a view (*kernel, C, *out_spatial, N)."""
        nd = len(kernel)
        crop = tuple(slice(0, y * k) for k, y in zip(kernel, out_spatial))
        split = tuple(itertools.chain.from_iterable(zip(out_spatial, kernel)))
        if last:
            v = xpad[(slice(None),) + crop].reshape(xpad.shape[:1] + split + xpad.shape[-1:])
            return v.transpose(tuple(2 + 2 * i for i in range(nd)) + (0,)
                               + tuple(1 + 2 * i for i in range(nd)) + (2 * nd + 1,))
        v = xpad[(Ellipsis,) + crop]
        v = v.reshape(v.shape[:2] + split)
        return v.transpose(tuple(3 + 2 * i for i in range(nd)) + (0, 1)
                           + tuple(2 + 2 * i for i in range(nd)))

    def _flat(self, xp, role: str, arr):
        """arr as a 1-D view, or a scratch stand-in to copy back when arr is not contiguous."""
        if arr.flags.c_contiguous:
            return arr.reshape(-1)
        return self._scratch(xp, role, (arr.size,), arr.dtype)

    def _window_panel(self, xp, xpad, kernel, out_spatial, dtype, last: bool = False):
        """The disjoint windows of xpad copied into a (K, M) scratch panel: row k holds kernel
        offset k of every window, in the output's order, batch-last if xpad is (`last`)
        (valid until the next Pooling call)."""
        tiles = self._tiles(xpad, kernel, out_spatial, last)
        panel = self._scratch(xp, "panel", (math.prod(kernel), math.prod(tiles.shape[len(
            kernel):])), dtype)
        panel.reshape(tiles.shape)[...] = tiles
        return panel

    def _forward_disjoint(self, xp, xpad, kernel, out_spatial, y, mask):
        """Disjoint windows: one copy into a (K, M) panel, one reduction; mask = first argmax."""
        panel = self._window_panel(xp, xpad, kernel, out_spatial, y.dtype)
        yf = self._flat(xp, "y", y)
        if mask is None:
            _sum(xp, panel, 0, yf)
        else:
            xp.max(panel, axis=0, out=yf)
            mf = self._flat(xp, "mask", mask)
            self._first_max(xp, panel, yf, mf)
            if not mask.flags.c_contiguous:
                mask[...] = mf.reshape(mask.shape)
        if not y.flags.c_contiguous:
            y[...] = yf.reshape(y.shape)

    def _first_max(self, xp, panel, yf, mf, ne=None) -> None:
        """mf = the offset of the first entry of each panel column equal to its maximum yf
        (the last offset for a NaN column, where no entry equals it). `ne`, when given, holds
        panel[:-1] != yf already (and is overwritten)."""
        nk = panel.shape[0]
        if nk == 1:
            mf.fill(0)
            return
        # the first maximum's offset = how many leading entries differ from the max
        if ne is None:
            ne = self._scratch(xp, "ne", (nk - 1, yf.size), bool)
            xp.not_equal(panel[:nk - 1], yf, out=ne)
        # counted in small integers (bool + uint8 adds are several times faster than
        # bool + float), converted once
        count = self._scratch(xp, "count", (yf.size,), "uint8" if nk <= 256 else "int32")
        count[...] = ne[0]
        # bools read as the uint8 0/1 they are: no cast (and no cast buffer) per add
        ne8 = ne.view("uint8") if count.dtype == xp.uint8 else ne
        for k in range(1, nk - 1):
            xp.logical_and(ne[k - 1], ne[k], out=ne[k])
            xp.add(count, ne8[k], out=count)
        mf[...] = count

    def _backward_disjoint(self, xp, gy, mask, dx, kernel, pad_lo, pad_hi, out_spatial,
                           last: bool = False):
        """Disjoint windows: every kernel offset's gradient written in one pass. With `last`,
        dx, gy and the mask are all batch-last."""
        spatial = dx.shape[1:-1] if last else dx.shape[2:]
        exact = not any(pad_lo) and not any(pad_hi) and all(
            y * k == n for y, k, n in zip(out_spatial, kernel, spatial))
        if exact and dx.flags.c_contiguous:
            target = dx
        else:
            padded = tuple(n + lo + hi for n, lo, hi in zip(spatial, pad_lo, pad_hi))
            target = self._scratch(xp, "gpad", dx.shape[:1] + padded + dx.shape[-1:] if last
                                   else dx.shape[:2] + padded, dx.dtype)
            target.fill(0)
        tiles = self._tiles(target, kernel, out_spatial, last)
        if mask is None:
            for offs in _offsets(kernel):
                tiles[offs] = gy
        else:
            # every kernel offset at once (two calls): offset k's gradient is gy where mask == k
            offsets = _arange(xp, math.prod(kernel), mask.dtype).reshape(
                tuple(kernel) + (1,) * mask.ndim)
            eq = self._scratch(xp, "eq", tiles.shape, bool)
            xp.equal(mask, offsets, out=eq)
            xp.multiply(gy, eq, out=tiles)
        if target is not dx:
            inner = tuple(slice(lo, lo + n) for lo, n in zip(pad_lo, spatial))
            dx[...] = target[(slice(None),) + inner if last else (Ellipsis,) + inner]

    def _pool_sum(self, xp, xpad, kernel, stride, out_spatial, y):
        first = True
        for offs in _offsets(kernel):
            win = xpad[(Ellipsis,) + tuple(_window(o, s, 1, m)
                                           for o, s, m in zip(offs, stride, out_spatial))]
            if first:
                y[...] = win
                first = False
            elif self.attrs.pool_type == "max":
                xp.maximum(y, win, out=y)
            else:
                y += win

    def _pool_max(self, xp, xpad, kernel, stride, out_spatial, y, mask):
        """y = window maxima; mask = offset index of each window's first maximum."""
        for k, offs in enumerate(_offsets(kernel)):
            win = xpad[(Ellipsis,) + tuple(_window(o, s, 1, m)
                                           for o, s, m in zip(offs, stride, out_spatial))]
            if k == 0:
                y[...] = win
                mask[...] = 0
            else:
                better = win > y
                xp.copyto(y, win, where=better)
                xp.copyto(mask, k, where=better)

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        y = out[0]
        a = self.attrs
        kernel, stride, pad_lo, pad_hi, out_spatial = self._geometry(x.shape[2:])
        fill = -xp.inf if a.pool_type == "max" else 0
        src = x
        if a.pool_type == "lp" and a.p_value > 1:
            src = x ** a.p_value
        xpad = _padded(xp, src, pad_lo, pad_hi, fill)
        if self._disjoint(kernel, stride, out_spatial):
            self._forward_disjoint(xp, xpad, kernel, out_spatial, y,
                                   out[1] if a.pool_type == "max" else None)
            if a.pool_type == "max":
                return
        elif a.pool_type == "max":
            self._pool_max(xp, xpad, kernel, stride, out_spatial, y, out[1])
            return
        else:
            self._pool_sum(xp, xpad, kernel, stride, out_spatial, y)
        if a.pool_type == "avg":
            y /= self._divisor(xp, x.shape[2:], kernel, stride, pad_lo, out_spatial, y.dtype)
        elif a.pool_type == "lp" and a.p_value == 2:
            xp.sqrt(y, out=y)
        elif a.pool_type == "lp" and a.p_value == 3:
            xp.cbrt(y, out=y)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is None:
            return
        a = self.attrs
        gy = out_grads[0]
        kernel, stride, pad_lo, pad_hi, out_spatial = self._geometry(dx.shape[2:])
        if a.pool_type == "avg":
            gy = gy / self._divisor(xp, dx.shape[2:], kernel, stride, pad_lo, out_spatial,
                                    gy.dtype)
        elif a.pool_type == "lp" and a.p_value > 1:
            y = outputs[0]
            safe = xp.where(y == 0, 1, y)
            gy = xp.where(y == 0, 0, gy / safe ** (a.p_value - 1))
        if a.pool_type != "lp" and self._disjoint(kernel, stride, out_spatial):
            self._backward_disjoint(xp, gy, outputs[1] if a.pool_type == "max" else None, dx,
                                    kernel, pad_lo, pad_hi, out_spatial)
            return
        xpad = None
        if a.pool_type == "lp":
            xpad = _padded(xp, inputs[0], pad_lo, pad_hi, 0)
        gpad = xp.zeros(dx.shape[:2] + tuple(n + lo + hi for n, lo, hi in zip(
            dx.shape[2:], pad_lo, pad_hi)), dtype=dx.dtype)
        for k, offs in enumerate(_offsets(kernel)):
            sl = (Ellipsis,) + tuple(_window(o, s, 1, m)
                                     for o, s, m in zip(offs, stride, out_spatial))
            if a.pool_type == "max":
                gpad[sl] += gy * (outputs[1] == k)
            elif a.pool_type == "lp" and a.p_value > 1:
                gpad[sl] += gy * xpad[sl] ** (a.p_value - 1)
            else:
                gpad[sl] += gy
        dx[...] = gpad[(Ellipsis,) + tuple(slice(lo, lo + n)
                                           for lo, n in zip(pad_lo, dx.shape[2:]))]


class CudnnPooling(Pooling):
    """Max and average pooling through cuDNN (`backend.CudnnOps`), the variant `for_device`
    picks on a GPU where CuPy's cuDNN wrapper loads, for 'valid' windows (or global_pool)
    unless cudnn_off.

    cuDNN's backward reads the input and the output, so both are declared for backward; max
    pooling's hidden `mask` output shrinks to one element that nothing writes. Average pooling
    divides by the whole window, or with count_include_pad=False by its real elements, as the
    NumPy path does; max pooling's gradient follows cuDNN's deterministic max (MXNet on GPUs
    also pools through cuDNN).
    """

    backward_inputs = (0,)
    backward_outputs = (0,)

    def _mask_shape(self, out_shape):
        return (1,)

    def _cudnn_args(self, spatial):
        kernel, stride, pad_lo, _, _ = self._geometry(spatial)
        a = self.attrs
        mode = a.pool_type if a.pool_type == "max" or a.count_include_pad is not False else (
            "avg_exclude_pad")
        return kernel, stride, pad_lo, mode

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        self.cudnn.pool_forward(x, out[0], *self._cudnn_args(x.shape[2:]))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is None:
            return
        x = inputs[0]
        self.cudnn.pool_backward(x, outputs[0], out_grads[0], in_grads[0],
                                 *self._cudnn_args(x.shape[2:]))


# ----------------------------------------------------------------------------- activations

# On CuPy each of these is one kernel in place of the 2-4 ufunc passes of the NumPy code below
# them (same arithmetic in the same order); NumPy runs the passes (backend.elementwise).
_SIGMOID = backend.ElementwiseSpec(
    "sigmoid", "T x", "T y", "y = tanh(x * (T)0.5) * (T)0.5 + (T)0.5;")
_ACTIVATION_GRADS = {
    "tanh": backend.ElementwiseSpec("tanh_grad", "T g, T y", "T dx",
                                    "dx = ((T)1 - y * y) * g;"),
    "sigmoid": backend.ElementwiseSpec("sigmoid_grad", "T g, T y", "T dx",
                                       "dx = ((T)1 - y) * y * g;"),
    "relu": backend.ElementwiseSpec("relu_grad", "T g, T y", "T dx",
                                    "dx = (y > (T)0) * g;"),
}


@dataclasses.dataclass(frozen=True)
class ActivationAttrs:
    act_type: Literal["relu", "sigmoid", "tanh", "softrelu", "softsign"]


@register
class Activation(BatchLastMixin, Op):
    """Elementwise activation, out has the shape of data.

    relu max(x, 0); sigmoid 1/(1+e^-x); tanh; softrelu log(1+e^x); softsign x/(1+|x|).
    Every gradient is written in terms of the output, so the output may overwrite the input.
    Being elementwise, it runs on batch-last data as it is (the layout pass stores its data
    and output alike, `BatchLastMixin`).
    """

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "Activation"
    Attrs = ActivationAttrs
    inplace = ((0, 0),)
    backward_inputs = ()
    backward_outputs = (0,)

    def infer_batch_first(self, in_shapes: list, out_shapes: list):
        return self.same_shape(in_shapes, out_shapes)

    def forward(self, xp, inputs, aux, out, is_train):
        x, y = inputs[0], out[0]
        act = self.attrs.act_type
        fused = backend.elementwise(xp, _SIGMOID) if act == "sigmoid" else None
        if fused is not None:
            fused(x, y)
            return
        if act == "relu":
            xp.maximum(x, _const(xp, 0, y.dtype), out=y)
        elif act == "sigmoid":
            half = _const(xp, 0.5, y.dtype)
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
        spec = _ACTIVATION_GRADS.get(act)
        fused = None if spec is None else backend.elementwise(xp, spec)
        if fused is not None:
            fused(g, y, dx)
            return
        # dx never shares storage with g or y (backward declares no in-place pair), so the
        # local derivative can be built in dx itself without temporaries
        if act == "tanh":
            xp.multiply(y, y, out=dx)
            xp.subtract(_const(xp, 1, dx.dtype), dx, out=dx)
            dx *= g
            return
        if act == "sigmoid":
            xp.subtract(_const(xp, 1, dx.dtype), y, out=dx)
            dx *= y
            dx *= g
            return
        if act == "relu":
            # y = max(x, 0) >= 0, so sign(y) is exactly the 0/1 mask, built in dx itself
            xp.sign(y, out=dx)
            dx *= g
            return
        if act == "softrelu":
            local = -xp.expm1(-y)
        else:
            local = (1 - xp.abs(y)) ** 2
        xp.multiply(g, local, out=dx)

    def bind_forward(self, xp, inputs, aux, out):
        x, y = inputs[0], out[0]
        act = self.attrs.act_type
        if act not in ("relu", "tanh") or not _plain_numpy(xp, x, y):
            return None
        if act == "tanh":
            def run_tanh(xp, is_train):
                xp.tanh(x, out=y)
            return run_tanh
        zero = _const(xp, 0, y.dtype)

        def run_relu(xp, is_train):
            xp.maximum(x, zero, out=y)
        return run_relu

    def bind_backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx, g, y = in_grads[0], out_grads[0], outputs[0]
        act = self.attrs.act_type
        if dx is None or act not in ("relu", "tanh") or not _plain_numpy(xp, dx, g, y):
            return None
        if act == "tanh":
            one = _const(xp, 1, dx.dtype)

            def run_tanh(xp, is_train):
                xp.multiply(y, y, out=dx)
                xp.subtract(one, dx, out=dx)
                xp.multiply(dx, g, out=dx)
            return run_tanh

        def run_relu(xp, is_train):
            # y = max(x, 0) >= 0, so sign(y) is exactly the 0/1 mask
            xp.sign(y, out=dx)
            xp.multiply(dx, g, out=dx)
        return run_relu


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_LAMBDA = 1.0507009873554804934193349852946


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
    broadcast on axis 1, or of 2+ dims lined up with data's leading dims ((N, C) for NCHW).  rrelu: the slope is drawn uniformly from [lower_bound, upper_bound] per
    element in training and is (lower_bound+upper_bound)/2 in inference; its second output `mask`
    holds the drawn slopes (zeros in inference).  elu: x > 0 ? x : slope*(e^x - 1).
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
        return _bias_view(gamma, x.ndim)

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
                out[1][...] = backend.rng(xp).uniform(a.lower_bound, a.upper_bound, x.shape)
                y[...] = xp.where(x > 0, x, out[1] * x)
            else:
                out[1][...] = 0
                y[...] = xp.where(x > 0, x, x * ((a.lower_bound + a.upper_bound) / 2))
        elif act == "elu":
            y[...] = xp.where(x > 0, x, a.slope * xp.expm1(xp.minimum(x, 0)))
        elif act == "selu":
            y[...] = _SELU_LAMBDA * xp.where(x > 0, x, _SELU_ALPHA * xp.expm1(xp.minimum(x, 0)))
        else:
            y[...] = 0.5 * x * (1 + _erf(xp, x * (1 / math.sqrt(2))))

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
                    dg[...] = part.sum(axis=_reduce_axes(x.ndim, 1))
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
            cdf = 0.5 * (1 + _erf(xp, x * (1 / math.sqrt(2))))
            local = cdf + x * xp.exp(-0.5 * x * x) * (1 / math.sqrt(2 * math.pi))
        _write(xp, in_grads[0], g * local)


# ----------------------------------------------------------------------------- BatchNorm

@dataclasses.dataclass(frozen=True)
class BatchNormAttrs:
    eps: float = 1e-3
    momentum: float = 0.9
    fix_gamma: bool = True
    use_global_stats: bool = False
    output_mean_var: bool = False
    axis: int = 1
    cudnn_off: bool = False
    min_calib_range: Optional[float] = None
    max_calib_range: Optional[float] = None


@register
class BatchNorm(Op):
    """Batch normalisation over every axis but `axis` (the channel axis, default 1).

    data (.., C, ..), gamma, beta, moving_mean, moving_var and the outputs `mean`, `var` are (C,).
    Training (is_train and not use_global_stats): with the batch mean m and biased variance v,
    out = (x - m) / sqrt(v + eps) * gamma + beta. Otherwise the moving statistics stand in for m
    and v. fix_gamma treats gamma as 1 (its gradient is 0). The `mean` output holds the mean used
    and `var` holds 1/sqrt(v + eps) (as MXNet's do); they are visible only with output_mean_var.

    The moving statistics are updated in place by backward, as MXNet 1.9.1 does on the CPU:
    mm = momentum*mm + (1-momentum)*m, mv = momentum*mv + (1-momentum)*v, with v recovered from
    the saved 1/sqrt(v + eps). A training forward that is not followed by a backward leaves them
    alone, exactly as in MXNet, so results agree number for number.
    """

    input_var_attrs = {"moving_mean": {"__init__": '["zero", {}]'},
                       "moving_var": {"__init__": '["one", {}]'}}

    name = "BatchNorm"
    Attrs = BatchNormAttrs
    ARGUMENTS = ("data", "gamma", "beta")
    OUTPUTS = ("output", "mean", "var")
    AUX = ("moving_mean", "moving_var")
    backward_inputs = (0, 1)
    backward_outputs = (1, 2)

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.eps <= 0:
            raise _param_error(self.name, "eps must be positive, got %g" % self.attrs.eps)

    def num_visible_outputs(self) -> int:
        return 3 if self.attrs.output_mean_var else 1

    def _axis(self, ndim: int) -> int:
        axis = self.attrs.axis + ndim if self.attrs.axis < 0 else self.attrs.axis
        if not 0 <= axis < ndim:
            raise ShapeError("input 'data' has %d dims but BatchNorm has axis=%d"
                             % (ndim, self.attrs.axis))
        return axis

    def infer_shape(self, in_shapes: list, out_shapes: list):
        if in_shapes[0] is None:  # as MXNet: nothing is deduced before the data's rank is known
            return in_shapes, out_shapes
        self.same_shape(in_shapes, out_shapes, in_idx=[0], out_idx=[0])
        data = in_shapes[0]
        channels = data[self._axis(len(data))]
        why = "data %s with axis=%d" % (fmt_shape(data), self.attrs.axis)
        for i in range(1, 5):
            self.set_in(in_shapes, i, (channels,), why)
        for i in (1, 2):
            self.set_out(out_shapes, i, (channels,), why)
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        x, gamma, beta = inputs
        moving_mean, moving_var = aux
        a = self.attrs
        axis = self._axis(x.ndim)
        axes = _reduce_axes(x.ndim, axis)
        if is_train and a.fix_gamma:
            gamma[...] = 1  # as MXNet: a training pass writes the fixed gamma back as ones
        if is_train and not a.use_global_stats:
            mean = x.mean(axis=axes)
            var = x.var(axis=axes)
        else:
            mean, var = moving_mean, moving_var
        out[1][...] = mean
        out[2][...] = 1 / xp.sqrt(var + a.eps)
        scale = out[2] if a.fix_gamma else out[2] * gamma
        out[0][...] = (x - _bias_view(out[1], x.ndim, axis)) * _bias_view(scale, x.ndim, axis) \
            + _bias_view(beta, x.ndim, axis)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, gamma = inputs[0], inputs[1]
        g = out_grads[0]
        a = self.attrs
        axis = self._axis(x.ndim)
        axes = _reduce_axes(x.ndim, axis)
        mean, invstd = outputs[1], outputs[2]
        if not a.use_global_stats:
            moving_mean, moving_var = aux
            moving_mean *= a.momentum
            moving_mean += (1 - a.momentum) * mean
            moving_var *= a.momentum
            moving_var += (1 - a.momentum) * (1 / (invstd * invstd) - a.eps)
        xhat = (x - _bias_view(mean, x.ndim, axis)) * _bias_view(invstd, x.ndim, axis)
        dbeta = g.sum(axis=axes)
        dgamma = (g * xhat).sum(axis=axes)
        _write(xp, in_grads[2], dbeta)
        if in_grads[1] is not None:
            in_grads[1][...] = 0 if a.fix_gamma else dgamma
        if in_grads[0] is None:
            return
        scale = invstd if a.fix_gamma else invstd * gamma
        scale = _bias_view(scale, x.ndim, axis)
        if a.use_global_stats:
            in_grads[0][...] = g * scale
            return
        count = x.size // x.shape[axis]
        in_grads[0][...] = scale * (g - (_bias_view(dbeta, x.ndim, axis)
                                         + xhat * _bias_view(dgamma, x.ndim, axis)) / count)


# ----------------------------------------------------------------------------- Dropout

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
            raise _param_error(self.name, "p=%g must lie in [0, 1]" % self.attrs.p)

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
        keep = backend.rng(xp).uniform(0, 1, tuple(draw_shape)) < 1 - p
        mask[...] = keep * (1 / (1 - p)) if p < 1 else 0
        xp.multiply(x, mask, out=y)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            xp.multiply(out_grads[0], outputs[1], out=in_grads[0])


# ----------------------------------------------------------------------------- Embedding

@dataclasses.dataclass(frozen=True)
class EmbeddingAttrs:
    input_dim: int
    output_dim: int
    dtype: Literal["float16", "float32", "float64", "uint8", "int8", "int32", "int64"] = "float32"
    sparse_grad: bool = False


@register
class Embedding(_ScratchMixin, Op):
    """Row lookup: out[i...] = weight[index(data[i...])], out is data.shape + (output_dim,).

    data holds indices as numbers; they are truncated to integers and clipped to
    [0, input_dim - 1]. weight is (input_dim, output_dim). Repeated indices accumulate their
    gradients; data gets a zero gradient.
    """

    name = "Embedding"
    Attrs = EmbeddingAttrs
    ARGUMENTS = ("data", "weight")
    backward_inputs = (0,)
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.input_dim <= 0 or self.attrs.output_dim <= 0:
            raise _param_error(self.name, "input_dim and output_dim must be positive")

    def infer_shape(self, in_shapes: list, out_shapes: list):
        a = self.attrs
        self.set_in(in_shapes, 1, (a.input_dim, a.output_dim),
                    "input_dim=%d and output_dim=%d" % (a.input_dim, a.output_dim))
        if in_shapes[0] is not None:
            self.set_out(out_shapes, 0, tuple(in_shapes[0]) + (a.output_dim,))
        if out_shapes[0] is not None and len(out_shapes[0]) >= 1:
            self.set_in(in_shapes, 0, tuple(out_shapes[0][:-1]))
        return in_shapes, out_shapes

    def infer_type(self, in_types: list, out_types: list):
        in_types, out_types = list(in_types), list(out_types)
        dtype = next((t for t in (in_types[1], out_types[0]) if t is not None),
                     self.attrs.dtype)
        in_types[1] = dtype
        out_types[0] = dtype
        return in_types, out_types

    def _indices(self, xp, data):
        """data as int64 row numbers clipped to the table, in a reused scratch array."""
        idx = self._scratch(xp, "idx", data.shape, "int64")
        if xp.__name__ != "numpy":  # CuPy's clip takes no casting: clip, then cast
            xp.copyto(idx, xp.clip(data, 0, self.attrs.input_dim - 1), casting="unsafe")
            return idx
        xp.clip(data, _const(xp, 0, data.dtype), _const(xp, self.attrs.input_dim - 1, data.dtype),
                out=idx, casting="unsafe")
        return idx

    def forward(self, xp, inputs, aux, out, is_train):
        y = out[0]
        rows = self._indices(xp, inputs[0]).reshape(-1)
        if y.flags.c_contiguous and xp.__name__ != "numpy":  # rows are clipped already
            xp.take(inputs[1], rows, axis=0, out=y.reshape(rows.shape[0], -1))
        elif y.flags.c_contiguous:
            xp.take(inputs[1], rows, axis=0, out=y.reshape(rows.shape[0], -1), mode="clip")
        else:
            y[...] = inputs[1][rows].reshape(y.shape)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        _write(xp, in_grads[0], 0)
        dw = in_grads[1]
        if dw is None:
            return
        dw.fill(0)
        d = self.attrs.output_dim
        rows = self._indices(xp, inputs[0]).reshape(-1)
        grad = out_grads[0].reshape(-1, d)
        if xp.__name__ == "numpy" and dw.flags.c_contiguous and grad.flags.c_contiguous:
            # one flat index per element: NumPy's add.at is an order of magnitude faster on a
            # 1-D index than on whole rows, and sums repeated rows in the same order
            flat = self._scratch(xp, "flat", grad.shape, "int64")
            xp.multiply(rows[:, None], _const(xp, d, flat.dtype), out=flat)
            flat += _arange(xp, d)
            xp.add.at(dw.reshape(-1), flat.reshape(-1), grad.reshape(-1))
        else:
            backend.scatter_add(xp, dw, rows, grad)


# ----------------------------------------------------------------------------- softmax family

def _softmax_into(xp, z, axis: int, y) -> None:
    """y = softmax(z) along axis (z may be y's own storage)."""
    shifted = z - z.max(axis=axis, keepdims=True)
    xp.exp(shifted, out=y)
    y /= y.sum(axis=axis, keepdims=True)


@dataclasses.dataclass(frozen=True)
class SoftmaxAttrs:
    axis: int = -1
    temperature: Optional[float] = None
    dtype: Optional[FloatName] = None
    use_length: Optional[bool] = False


@register
class Softmax(Op):
    """softmax(x / temperature) along `axis`; out has the shape of data.

    With use_length, a second input `length` (data's shape without `axis`, integers) keeps only
    the first length[...] entries along axis; the rest are 0. `dtype` sets the output's dtype.
    """

    name = "softmax"
    SIGNATURE_INPUTS = ("data", "length")
    Attrs = SoftmaxAttrs
    backward_inputs = ()
    backward_outputs = (0,)

    def arguments(self) -> list:
        return ["data", "length"] if self.attrs.use_length else ["data"]

    def _axis(self, ndim: int) -> int:
        axis = self.attrs.axis + ndim if self.attrs.axis < 0 else self.attrs.axis
        if not 0 <= axis < ndim:
            raise ShapeError("input 'data' has %d dims but %s has axis=%d"
                             % (ndim, self.name, self.attrs.axis))
        return axis

    def infer_shape(self, in_shapes: list, out_shapes: list):
        self.same_shape(in_shapes, out_shapes, in_idx=[0])
        data = in_shapes[0]
        if self.attrs.use_length and data is not None:
            axis = self._axis(len(data))
            self.set_in(in_shapes, 1, tuple(data[:axis]) + tuple(data[axis + 1:]),
                        "data %s with axis=%d" % (fmt_shape(data), self.attrs.axis))
        return in_shapes, out_shapes

    def infer_type(self, in_types: list, out_types: list):
        if self.attrs.dtype is not None:
            out_types = [None] * len(out_types)
        in_types, out_types = _same_dtype_types(self, in_types, out_types, (0,))
        if self.attrs.dtype is not None:
            out_types = [self.attrs.dtype] * len(out_types)
        if self.attrs.use_length and in_types[1] is None:
            in_types[1] = "int32"
        return in_types, out_types

    def _scaled(self, x):
        t = self.attrs.temperature
        return x if t is None or t == 1 else x / t

    def forward(self, xp, inputs, aux, out, is_train):
        x, y = inputs[0], out[0]
        axis = self._axis(x.ndim)
        z = self._scaled(x)
        if self.attrs.use_length:
            pos = xp.arange(x.shape[axis]).reshape((-1,) + (1,) * (x.ndim - axis - 1))
            keep = pos < xp.expand_dims(inputs[1], axis)
            z = xp.where(keep, z, -xp.inf)
            z = xp.where(keep.any(axis=axis, keepdims=True), z, 0)
            _softmax_into(xp, z, axis, y)
            y *= keep
            return
        _softmax_into(xp, z, axis, y)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        y, g = outputs[0], out_grads[0]
        axis = self._axis(y.ndim)
        if in_grads[0] is not None:
            in_grads[0][...] = self._scaled(y * (g - (g * y).sum(axis=axis, keepdims=True)))
        if self.attrs.use_length:
            _write(xp, in_grads[1], 0)


@dataclasses.dataclass(frozen=True)
class LogSoftmaxAttrs:
    axis: int = -1
    temperature: Optional[float] = None
    dtype: Optional[FloatName] = None


@register
class LogSoftmax(Softmax):
    """log(softmax(x / temperature)) along `axis`; out has the shape of data."""

    name = "log_softmax"
    SIGNATURE_INPUTS = ("data",)
    PARAM_ORDER = ("axis", "temperature", "dtype", "use_length")  # MXNet's (no use_length here)
    Attrs = LogSoftmaxAttrs

    def arguments(self) -> list:
        return ["data"]

    def infer_shape(self, in_shapes: list, out_shapes: list):
        return self.same_shape(in_shapes, out_shapes)

    def infer_type(self, in_types: list, out_types: list):
        in_types, out_types = Op.infer_type(self, in_types, [None] * len(out_types))
        if self.attrs.dtype is not None:
            out_types = [self.attrs.dtype] * len(out_types)
        return in_types, out_types

    def forward(self, xp, inputs, aux, out, is_train):
        x, y = inputs[0], out[0]
        axis = self._axis(x.ndim)
        z = self._scaled(x)
        shifted = z - z.max(axis=axis, keepdims=True)
        y[...] = shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        y, g = outputs[0], out_grads[0]
        axis = self._axis(y.ndim)
        if in_grads[0] is not None:
            in_grads[0][...] = self._scaled(g - xp.exp(y) * g.sum(axis=axis, keepdims=True))


@dataclasses.dataclass(frozen=True)
class SoftmaxActivationAttrs:
    mode: Literal["instance", "channel"] = "instance"


@register
class SoftmaxActivation(Op):
    """Softmax over the last axis (mode='instance') or over axis 1 (mode='channel')."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "SoftmaxActivation"
    Attrs = SoftmaxActivationAttrs
    backward_inputs = ()
    backward_outputs = (0,)

    def _axis(self, ndim: int) -> int:
        return 1 if self.attrs.mode == "channel" else ndim - 1

    def infer_shape(self, in_shapes: list, out_shapes: list):
        if self.attrs.mode == "channel" and in_shapes[0] is not None and len(in_shapes[0]) < 2:
            raise ShapeError("input 'data' has shape %s but mode='channel' needs an axis 1"
                             % fmt_shape(in_shapes[0]))
        return self.same_shape(in_shapes, out_shapes)

    def forward(self, xp, inputs, aux, out, is_train):
        _softmax_into(xp, inputs[0], self._axis(inputs[0].ndim), out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        y, g = outputs[0], out_grads[0]
        if in_grads[0] is not None:
            in_grads[0][...] = y * (g - (g * y).sum(axis=self._axis(y.ndim), keepdims=True))


# ----------------------------------------------------------------------------- LRN

@dataclasses.dataclass(frozen=True)
class LRNAttrs:
    nsize: int
    alpha: float = 1e-4
    beta: float = 0.75
    knorm: float = 2.0


@register
class LRN(Op):
    """Local response normalisation across channels (axis 1).

    scale_c = knorm + alpha/nsize * sum of x_j^2 over channels j within nsize//2 of c,
    out = x * scale^-beta. The hidden output `tmp_norm` keeps scale for the backward.
    """

    name = "LRN"
    PARAM_ORDER = ("alpha", "beta", "knorm", "nsize")
    Attrs = LRNAttrs
    OUTPUTS = ("output", "tmp_norm")
    backward_inputs = (0,)
    backward_outputs = (1,)

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.nsize <= 0 or self.attrs.nsize % 2 == 0:
            raise _param_error(self.name, "nsize=%d must be odd and positive" % self.attrs.nsize)

    def num_visible_outputs(self) -> int:
        return 1

    def infer_shape(self, in_shapes: list, out_shapes: list):
        if in_shapes[0] is not None and len(in_shapes[0]) < 2:
            raise ShapeError("input 'data' has shape %s but LRN needs (N, C, ...)"
                             % fmt_shape(in_shapes[0]))
        return self.same_shape(in_shapes, out_shapes)

    def _channel_window_sum(self, xp, v):
        half = self.attrs.nsize // 2
        channels = v.shape[1]
        padded = xp.zeros((v.shape[0], channels + 2 * half) + v.shape[2:], dtype=v.dtype)
        padded[:, half:half + channels] = v
        total = xp.zeros_like(v)
        for offset in range(self.attrs.nsize):
            total += padded[:, offset:offset + channels]
        return total

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        a = self.attrs
        scale = out[1]
        scale[...] = self._channel_window_sum(xp, x * x)
        scale *= a.alpha / a.nsize
        scale += a.knorm
        out[0][...] = x * scale ** -a.beta

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is None:
            return
        x, g, scale = inputs[0], out_grads[0], outputs[1]
        a = self.attrs
        scaled = scale ** -a.beta
        inner = self._channel_window_sum(xp, g * x * scaled / scale)
        in_grads[0][...] = g * scaled - (2 * a.alpha * a.beta / a.nsize) * x * inner


# ----------------------------------------------------------------------------- LayerNorm

def _normalise_backward(xp, g, xhat, invstd, axes):
    """Gradient of xhat = (x - mean(x)) * invstd w.r.t. x, the statistics taken over `axes`."""
    count = math.prod(g.shape[i] for i in axes)
    mean_g = g.sum(axis=axes, keepdims=True) / count
    mean_gx = (g * xhat).sum(axis=axes, keepdims=True) / count
    return invstd * (g - mean_g - xhat * mean_gx)


@dataclasses.dataclass(frozen=True)
class LayerNormAttrs:
    axis: int = -1
    eps: float = 1e-5
    output_mean_var: bool = False


@register
class LayerNorm(Op):
    """Normalise over `axis` only: out = (x - mean) / sqrt(var + eps) * gamma + beta.

    gamma and beta are (data.shape[axis],). The outputs `mean` and `std` (= sqrt(var + eps)) have
    data's shape with axis reduced to 1; they are visible only with output_mean_var.
    """

    name = "LayerNorm"
    Attrs = LayerNormAttrs
    ARGUMENTS = ("data", "gamma", "beta")
    OUTPUTS = ("output", "mean", "std")
    backward_inputs = (0, 1)
    backward_outputs = (1, 2)

    def num_visible_outputs(self) -> int:
        return 3 if self.attrs.output_mean_var else 1

    def _axis(self, ndim: int) -> int:
        axis = self.attrs.axis + ndim if self.attrs.axis < 0 else self.attrs.axis
        if not 0 <= axis < ndim:
            raise ShapeError("input 'data' has %d dims but LayerNorm has axis=%d"
                             % (ndim, self.attrs.axis))
        return axis

    def infer_shape(self, in_shapes: list, out_shapes: list):
        self.same_shape(in_shapes, out_shapes, in_idx=[0], out_idx=[0])
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        axis = self._axis(len(data))
        why = "data %s with axis=%d" % (fmt_shape(data), self.attrs.axis)
        self.set_in(in_shapes, 1, (data[axis],), why)
        self.set_in(in_shapes, 2, (data[axis],), why)
        reduced = tuple(1 if i == axis else d for i, d in enumerate(data))
        self.set_out(out_shapes, 1, reduced, why)
        self.set_out(out_shapes, 2, reduced, why)
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        x, gamma, beta = inputs
        axis = self._axis(x.ndim)
        out[1][...] = x.mean(axis=axis, keepdims=True)
        out[2][...] = xp.sqrt(x.var(axis=axis, keepdims=True) + self.attrs.eps)
        out[0][...] = (x - out[1]) / out[2] * _bias_view(gamma, x.ndim, axis) \
            + _bias_view(beta, x.ndim, axis)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, gamma = inputs[0], inputs[1]
        g = out_grads[0]
        axis = self._axis(x.ndim)
        xhat = (x - outputs[1]) / outputs[2]
        others = _reduce_axes(x.ndim, axis)
        _write(xp, in_grads[1], (g * xhat).sum(axis=others))
        _write(xp, in_grads[2], g.sum(axis=others))
        if in_grads[0] is not None:
            in_grads[0][...] = _normalise_backward(
                xp, g * _bias_view(gamma, x.ndim, axis), xhat, 1 / outputs[2], (axis,))


@dataclasses.dataclass(frozen=True)
class InstanceNormAttrs:
    eps: float = 1e-3


@register
class InstanceNorm(Op):
    """Normalise each (sample, channel) map over its spatial dims, then scale and shift per channel.

    data (N, C, *spatial), gamma and beta (C,). The hidden outputs `mean` and `var` are
    (N, C, 1, ...) and hold the mean and 1/sqrt(variance + eps).
    """

    name = "InstanceNorm"
    Attrs = InstanceNormAttrs
    ARGUMENTS = ("data", "gamma", "beta")
    OUTPUTS = ("output", "mean", "var")
    backward_inputs = (0, 1)
    backward_outputs = (1, 2)

    def num_visible_outputs(self) -> int:
        return 1

    def infer_shape(self, in_shapes: list, out_shapes: list):
        self.same_shape(in_shapes, out_shapes, in_idx=[0], out_idx=[0])
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        if len(data) < 3:
            raise ShapeError("input 'data' has shape %s but InstanceNorm needs (N, C, ...)"
                             % fmt_shape(data))
        why = "data %s" % fmt_shape(data)
        self.set_in(in_shapes, 1, (data[1],), why)
        self.set_in(in_shapes, 2, (data[1],), why)
        stats = tuple(data[:2]) + (1,) * (len(data) - 2)
        self.set_out(out_shapes, 1, stats, why)
        self.set_out(out_shapes, 2, stats, why)
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        x, gamma, beta = inputs
        axes = tuple(range(2, x.ndim))
        out[1][...] = x.mean(axis=axes, keepdims=True)
        out[2][...] = 1 / xp.sqrt(x.var(axis=axes, keepdims=True) + self.attrs.eps)
        out[0][...] = (x - out[1]) * out[2] * _bias_view(gamma, x.ndim) + _bias_view(beta, x.ndim)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, gamma = inputs[0], inputs[1]
        g = out_grads[0]
        axes = tuple(range(2, x.ndim))
        xhat = (x - outputs[1]) * outputs[2]
        others = _reduce_axes(x.ndim, 1)
        _write(xp, in_grads[1], (g * xhat).sum(axis=others))
        _write(xp, in_grads[2], g.sum(axis=others))
        if in_grads[0] is not None:
            in_grads[0][...] = _normalise_backward(xp, g * _bias_view(gamma, x.ndim), xhat,
                                                   outputs[2], axes)


@register
class Softmin(Softmax):
    """softmax(-x / temperature) along `axis` (the smallest entries weigh most); out has the
    shape of data. With use_length, as softmax."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "softmin"
    SIGNATURE_INPUTS = ("data",)  # MXNet's frontend names no length input for softmin

    def _scaled(self, x):
        t = self.attrs.temperature
        return -x if t is None or t == 1 else x / -t


# ----------------------------------------------------------------------------- L2Normalization

@dataclasses.dataclass(frozen=True)
class L2NormalizationAttrs:
    eps: float = 1e-10
    mode: Literal["instance", "channel", "spatial"] = "instance"


@register
class L2Normalization(Op):
    """out = x / sqrt(sum(x**2) + eps), the sum taken per sample over every other axis
    ('instance'), over the channels at each position ('channel') or over each channel's
    positions ('spatial'). The hidden output `norm` holds the divisor: (N,), data's shape
    without the channel axis, or (N, C)."""

    name = "L2Normalization"
    Attrs = L2NormalizationAttrs
    OUTPUTS = ("output", "norm")
    backward_inputs = ()
    backward_outputs = (0, 1)

    def num_visible_outputs(self) -> int:
        return 1

    def _axes(self, ndim: int) -> tuple:
        mode = self.attrs.mode
        if mode == "instance":
            return tuple(range(1, ndim))
        return (1,) if mode == "channel" else tuple(range(2, ndim))

    def infer_shape(self, in_shapes: list, out_shapes: list):
        self.same_shape(in_shapes, out_shapes, in_idx=[0], out_idx=[0])
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        need = 2 if self.attrs.mode == "instance" else 3
        if len(data) < need:
            raise ShapeError("input 'data' has shape %s but L2Normalization mode='%s' needs "
                             "%d or more dims" % (fmt_shape(data), self.attrs.mode, need))
        axes = self._axes(len(data))
        self.set_out(out_shapes, 1, tuple(d for i, d in enumerate(data) if i not in axes),
                     "data %s" % fmt_shape(data))
        return in_shapes, out_shapes

    def _kept(self, norm, ndim: int):
        """norm with the reduced axes back as 1s, to broadcast against data."""
        axes, dims = self._axes(ndim), iter(norm.shape)
        return norm.reshape([1 if i in axes else next(dims) for i in range(ndim)])

    def forward(self, xp, inputs, aux, out, is_train):
        x, y, norm = inputs[0], out[0], out[1]
        axes = self._axes(x.ndim)
        kept = self._kept(norm, x.ndim)
        xp.sum(x * x, axis=axes, keepdims=True, out=kept)
        kept += kept.dtype.type(self.attrs.eps)
        xp.sqrt(kept, out=kept)
        xp.divide(x, kept, out=y)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is None:
            return
        y, g = outputs[0], out_grads[0]
        axes = self._axes(y.ndim)
        dot = (g * y).sum(axis=axes, keepdims=True)
        xp.multiply(y, dot, out=dx)
        xp.subtract(g, dx, out=dx)
        dx /= self._kept(outputs[1], y.ndim)


# ----------------------------------------------------------------------------- GroupNorm

@dataclasses.dataclass(frozen=True)
class GroupNormAttrs:
    num_groups: int = 1
    eps: float = 1e-5
    output_mean_var: bool = False


@register
class GroupNorm(Op):
    """Normalise each group of num_groups channel groups per sample over its channels and
    positions, then scale and shift per group: data (N, C, ...), gamma and beta
    (num_groups,), as in MXNet 1.9.1. The outputs `mean` and `std` (= sqrt(var + eps)) are
    (N, num_groups) and visible only with output_mean_var."""

    name = "GroupNorm"
    Attrs = GroupNormAttrs
    ARGUMENTS = ("data", "gamma", "beta")
    OUTPUTS = ("output", "mean", "std")
    backward_inputs = (0, 1)
    backward_outputs = (1, 2)

    def num_visible_outputs(self) -> int:
        return 3 if self.attrs.output_mean_var else 1

    def infer_shape(self, in_shapes: list, out_shapes: list):
        self.same_shape(in_shapes, out_shapes, in_idx=[0], out_idx=[0])
        data, groups = in_shapes[0], self.attrs.num_groups
        if data is None:
            return in_shapes, out_shapes
        if len(data) < 2 or (data[1] is not None and data[1] % groups):
            raise ShapeError("input 'data' has shape %s but GroupNorm needs (N, C, ...) with C "
                             "divisible by num_groups=%d" % (fmt_shape(data), groups))
        why = "num_groups=%d" % groups
        self.set_in(in_shapes, 1, (groups,), why)
        self.set_in(in_shapes, 2, (groups,), why)
        self.set_out(out_shapes, 1, (data[0], groups), why)
        self.set_out(out_shapes, 2, (data[0], groups), why)
        return in_shapes, out_shapes

    def _grouped(self, x):
        return x.reshape(x.shape[0], self.attrs.num_groups, -1)

    def forward(self, xp, inputs, aux, out, is_train):
        x, gamma, beta = inputs
        xg, mean, std = self._grouped(x), out[1], out[2]
        mean[...] = xg.mean(axis=2)
        std[...] = xp.sqrt(xg.var(axis=2) + self.attrs.eps)
        y = self._grouped(out[0])
        xp.subtract(xg, mean[:, :, None], out=y)
        y /= std[:, :, None]
        y *= gamma[:, None]
        y += beta[:, None]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, gamma = inputs[0], inputs[1]
        g = self._grouped(out_grads[0])
        mean, std = outputs[1][:, :, None], outputs[2][:, :, None]
        xhat = (self._grouped(x) - mean) / std
        _write(xp, in_grads[1], (g * xhat).sum(axis=(0, 2)))
        _write(xp, in_grads[2], g.sum(axis=(0, 2)))
        if in_grads[0] is not None:
            self._grouped(in_grads[0])[...] = _normalise_backward(
                xp, g * gamma[:, None], xhat, 1 / std, (2,))


# ----------------------------------------------------------------------------- UpSampling

@dataclasses.dataclass(frozen=True)
class UpSamplingAttrs:
    scale: int
    sample_type: Literal["nearest", "bilinear"]  # required, as in MXNet
    num_filter: int = 0
    multi_input_mode: Literal["concat", "sum"] = "concat"
    num_args: int = 1
    workspace: int = 512


@register
class UpSampling(VariadicOp):
    """Enlarge NCHW feature maps by an integer `scale`.

    'nearest': each of the num_args inputs (arg0, arg1, ...) is repeated up to arg0's size
    times scale (so input i needs an integer factor scale * H0 / Hi), and the results are
    concatenated along the channels or summed ('multi_input_mode'); the gradient sums each
    block back. 'bilinear': one input `data` and a learnt `weight` of shape (C, 1, k, k),
    k = 2 * scale - scale % 2 (initialise it with mx.init.Bilinear): the per-channel
    transposed convolution MXNet runs for it, stride scale, pad ceil((scale - 1) / 2),
    num_filter = num_group = C.
    """

    name = "UpSampling"
    Attrs = UpSamplingAttrs

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        if a.scale < 1:
            raise OpParamError("operator UpSampling: scale must be >= 1, got %d" % a.scale)
        self._deconv = None
        if a.sample_type == "bilinear":
            if a.num_filter < 1:
                raise OpParamError("operator UpSampling: sample_type='bilinear' needs "
                                   "num_filter (the channels)")
            k = 2 * a.scale - a.scale % 2
            pad = math.ceil((a.scale - 1) / 2)
            self._deconv = Deconvolution(dict(
                kernel=(k, k), stride=(a.scale, a.scale), pad=(pad, pad),
                num_filter=a.num_filter, num_group=a.num_filter, no_bias=True))
            self._args = ["data", "weight"]
            self.backward_inputs = self._deconv.backward_inputs
            self.backward_outputs = self._deconv.backward_outputs
        else:
            self.backward_outputs = ()

    def infer_shape(self, in_shapes: list, out_shapes: list):
        if self._deconv is not None:
            return self._deconv.infer_shape(in_shapes, out_shapes)
        first, scale = in_shapes[0], self.attrs.scale
        if first is None or any(s is None for s in in_shapes):
            return in_shapes, out_shapes
        for i, shape in enumerate(in_shapes):
            if len(shape) != 4 or shape[0] != first[0] or (first[2] * scale) % shape[2] or \
                    (first[3] * scale) % shape[3] or first[2] * shape[3] != first[3] * shape[2]:
                raise ShapeError("input 'arg%d' has shape %s but UpSampling needs NCHW inputs "
                                 "that integer factors enlarge to arg0's %s times scale=%d"
                                 % (i, fmt_shape(shape), fmt_shape(first), scale))
        channels = [shape[1] for shape in in_shapes]
        if self.attrs.multi_input_mode == "sum" and len(set(channels)) > 1:
            raise ShapeError("UpSampling multi_input_mode='sum' needs inputs with one channel "
                             "count, got %s" % channels)
        c = channels[0] if self.attrs.multi_input_mode == "sum" else sum(channels)
        self.set_out(out_shapes, 0, (first[0], c, first[2] * scale, first[3] * scale))
        return in_shapes, out_shapes

    @staticmethod
    def _blocks(part, shape):
        """`part` of the output (a view) as (N, C, H, f, W, f) over an input of `shape`."""
        f = part.shape[2] // shape[2]
        return part.reshape(shape[0], shape[1], shape[2], f, shape[3], f)

    def _parts(self, out, inputs):
        """Per input, the part of the output it fills (its channels in 'concat' mode)."""
        if self.attrs.multi_input_mode == "sum":
            return [out] * len(inputs)
        bounds = list(itertools.accumulate(x.shape[1] for x in inputs))
        return [out[:, hi - x.shape[1]:hi] for x, hi in zip(inputs, bounds)]

    def forward(self, xp, inputs, aux, out, is_train):
        if self._deconv is not None:
            self._deconv.forward(xp, inputs, aux, out, is_train)
            return
        summing = self.attrs.multi_input_mode == "sum" and len(inputs) > 1
        if summing:
            out[0].fill(0)
        for x, part in zip(inputs, self._parts(out[0], inputs)):
            blocks = self._blocks(part, x.shape)
            if summing:
                blocks += x[:, :, :, None, :, None]
            else:
                blocks[...] = x[:, :, :, None, :, None]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if self._deconv is not None:
            self._deconv.backward(xp, out_grads, inputs, outputs, in_grads, aux)
            return
        for x, part, dx in zip(inputs, self._parts(out_grads[0], inputs), in_grads):
            if dx is not None:
                xp.sum(self._blocks(part, x.shape), axis=(3, 5), out=dx)


# ----------------------------------------------------------------------------- ROIPooling

@dataclasses.dataclass(frozen=True)
class ROIPoolingAttrs:
    pooled_size: tuple[int, ...]
    spatial_scale: float


@register
class ROIPooling(Op):
    """Max pooling of regions of interest (Fast R-CNN): each row of `rois`, (batch index, x1,
    y1, x2, y2) in input pixels, is scaled by spatial_scale and rounded to the feature map,
    split into pooled_size bins (floor/ceil edges, as MXNet forms them in the data's type),
    and each bin's maximum taken per channel; an empty bin (outside the map) gives 0. Out
    (R, C, ph, pw); the hidden output `maxidx` holds each maximum's flat position in data
    (-1 for empty bins), as MXNet's does, and the data's gradient goes back to it; rois get
    none.

    The bins are gathered ROI chunk by ROI chunk into padded windows, so memory stays
    bounded whatever the number of ROIs."""

    name = "ROIPooling"
    Attrs = ROIPoolingAttrs
    ARGUMENTS = ("data", "rois")
    OUTPUTS = ("output", "maxidx")
    backward_inputs = ()
    backward_outputs = (1,)
    _CHUNK_ELEMENTS = 1 << 22  # gathered values per chunk of ROIs

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if len(self.attrs.pooled_size) != 2 or min(self.attrs.pooled_size) < 1:
            raise OpParamError("operator ROIPooling: pooled_size must be two sizes >= 1, got %s"
                               % (self.attrs.pooled_size,))

    def num_visible_outputs(self) -> int:
        return 1

    def infer_type(self, in_types, out_types):
        in_types, outs = super().infer_type(in_types, [None])
        return in_types, [outs[0], "int32"]  # maxidx is int32, as in MXNet

    def infer_shape(self, in_shapes, out_shapes):
        data, rois = in_shapes
        if data is not None and len(data) != 4:
            raise ShapeError("input 'data' has shape %s but ROIPooling needs NCHW"
                             % fmt_shape(data))
        if rois is not None and (len(rois) != 2 or rois[1] not in (None, 5)):
            raise ShapeError("input 'rois' has shape %s but ROIPooling needs (R, 5) rows of "
                             "(batch index, x1, y1, x2, y2)" % fmt_shape(rois))
        if data is not None and rois is not None:
            shape = (rois[0], data[1]) + tuple(self.attrs.pooled_size)
            self.set_out(out_shapes, 0, shape)
            self.set_out(out_shapes, 1, shape)
        return in_shapes, out_shapes

    def _bins(self, xp, rois, height: int, width: int, dtype):
        """Per ROI: batch index and the (start, end) rows and columns of every bin."""
        t = dtype.type
        scaled = rois[:, 1:5].astype(dtype) * t(self.attrs.spatial_scale)
        coords = (xp.floor(xp.abs(scaled) + t(0.5)) * xp.sign(scaled)).astype("int64")
        x1, y1, x2, y2 = coords.T
        ph, pw = self.attrs.pooled_size

        def edges(start, end, bins, limit):
            size = xp.maximum(end - start + 1, 1).astype(dtype) / t(bins)
            steps = xp.arange(bins, dtype=dtype)
            lo = xp.floor(steps[None, :] * size[:, None]).astype("int64") + start[:, None]
            hi = xp.ceil((steps[None, :] + t(1)) * size[:, None]).astype("int64") \
                + start[:, None]
            return xp.clip(lo, 0, limit), xp.clip(hi, 0, limit)

        return (rois[:, 0].astype("int64"), edges(y1, y2, ph, height),
                edges(x1, x2, pw, width))

    def forward(self, xp, inputs, aux, out, is_train):
        data, rois = inputs
        _, c, height, width = data.shape
        batch, (h_lo, h_hi), (w_lo, w_hi) = self._bins(xp, rois, height, width, data.dtype)
        kh = int(xp.max(h_hi - h_lo)) if h_lo.size else 0
        kw = int(xp.max(w_hi - w_lo)) if w_lo.size else 0
        ph, pw = self.attrs.pooled_size
        out[0].fill(0)
        out[1].fill(-1)
        if not rois.shape[0] or kh <= 0 or kw <= 0:
            return
        chunk = max(1, self._CHUNK_ELEMENTS // max(1, c * ph * pw * kh * kw))
        for lo in range(0, rois.shape[0], chunk):
            sel = slice(lo, lo + chunk)
            rows = h_lo[sel][:, :, None] + xp.arange(kh)  # (r, ph, kh)
            cols = w_lo[sel][:, :, None] + xp.arange(kw)  # (r, pw, kw)
            valid = ((rows < h_hi[sel][:, :, None])[:, :, :, None, None]
                     & (cols < w_hi[sel][:, :, None])[:, None, None, :, :])
            window = data[batch[sel][:, None, None, None, None], :,
                          xp.minimum(rows, height - 1)[:, :, :, None, None],
                          xp.minimum(cols, width - 1)[:, None, None, :, :]]
            # window: (r, ph, kh, pw, kw, C) -> (r, C, ph, pw, kh * kw)
            window = xp.where(valid[..., None], window, -xp.inf).transpose(0, 5, 1, 3, 2, 4)
            window = window.reshape(window.shape[:4] + (kh * kw,))
            best = xp.argmax(window, axis=-1)  # (r, C, ph, pw), first maximum in the bin
            value = xp.take_along_axis(window, best[..., None], axis=-1)[..., 0]
            empty = ~valid.any(axis=(2, 4))[:, None, :, :]  # (r, 1, ph, pw)
            r_ix = xp.arange(rows.shape[0])[:, None, None, None]
            at_h = rows[r_ix, xp.arange(ph)[None, None, :, None], best // kw]
            at_w = cols[r_ix, xp.arange(pw)[None, None, None, :], best % kw]
            plane = batch[sel][:, None, None, None] * c + xp.arange(c)[None, :, None, None]
            out[0][sel] = xp.where(empty, 0, value)
            out[1][sel] = xp.where(empty, -1, (plane * height + at_h) * width + at_w)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx, d_rois = in_grads
        if d_rois is not None:
            d_rois.fill(0)
        if dx is None:
            return
        maxidx, g = outputs[1], out_grads[0]
        dx.fill(0)
        hit = maxidx >= 0
        backend.scatter_add(xp, dx.reshape(-1), maxidx[hit].astype("int64"), g[hit])
