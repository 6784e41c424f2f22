"""The work layouts of convolution: im2col and col2im with one GEMM per direction, shared by
Convolution, Deconvolution, the im2col op and the batch-last convolution of
`minimod.kernels.convolution`.

Convolution and deconvolution use im2col in a work layout: batch-last (C, *spatial, N), where
every kernel offset's window is a run of contiguous (W_out * N) blocks, or, for convolutions
with wide outputs, channels-batch (C, N, *spatial), whose conversions to and from NCHW move
whole feature maps (see `cn_layout`). The input is copied once into the work layout (padding
included), all windows are copied in one strided copy into a column buffer
(C, K, *work(out)), and ONE GEMM per direction (batched over groups) does the arithmetic, its
result landing in the work layout; only the op's boundaries convert to and from NCHW. Work
arrays come from the process-wide scratch cache (`minimod.ops.scratch`), so repeated calls do
not page-fault fresh buffers; `op` below is their owner.
"""
from __future__ import annotations

import itertools
import math
from typing import Literal, Optional

from ..backend import matmul
from .helpers import param_error

__all__ = [
    "Layout", "CudnnTune", "check_layout", "is_channels_last", "conv_out_dim", "window",
    "offsets", "padded",
    "cn_layout", "interior", "work_shape", "to_work", "from_work", "tap_index", "im2col",
    "col2im", "row_sums", "gemm", "weight_rows", "data_panel", "transposed", "write_reshaped",
]

_CHANNEL_FIRST = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
Layout = Optional[Literal["NCW", "NCHW", "NCDHW", "NWC", "NHWC", "NDHWC"]]
CudnnTune = Optional[Literal["off", "limited_workspace", "fastest"]]


_CHANNEL_LAST = {1: "NWC", 2: "NHWC", 3: "NDHWC"}


def check_layout(op: str, layout: Optional[str], ndim: int,
                 channels_last: bool = False) -> None:
    """An OpParamError unless `layout` is unset or the channels-first one of ndim-D data (or,
    where the op takes them, the channels-last one)."""
    allowed = {_CHANNEL_FIRST.get(ndim)} | ({_CHANNEL_LAST.get(ndim)} if channels_last else set())
    if layout is not None and layout not in allowed:
        raise param_error(op, "layout=%s is not supported for %d-D data (only %s)"
                          % (layout, ndim, " or ".join(sorted(a for a in allowed if a))))


def is_channels_last(layout: Optional[str]) -> bool:
    """Whether `layout` puts the channels last (NWC, NHWC, NDHWC)."""
    return layout in _CHANNEL_LAST.values()


def conv_out_dim(x, k, s, d, p):
    if x is None:
        return None
    return (x + 2 * p - d * (k - 1) - 1) // s + 1


def window(offset: int, stride: int, dilate: int, count: int) -> slice:
    """Positions read by kernel tap `offset` for `count` outputs."""
    start = offset * dilate
    return slice(start, start + stride * (count - 1) + 1, stride)


def offsets(kernel: tuple):
    return itertools.product(*(range(k) for k in kernel))


def padded(xp, x, pad_lo: tuple, pad_hi: tuple, fill=0.0):
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
CN_MIN_WIDTH = 16


def cn_layout(out_spatial: tuple) -> bool:
    """Whether a convolution with this output size works channels-batch (see above)."""
    return out_spatial[-1] >= CN_MIN_WIDTH


def interior(pad_lo: tuple, spatial: tuple, cn: bool = False) -> tuple:
    """Index of the unpadded part of a work array: (C, N, *padded) if cn else (C, *padded, N)."""
    inner = tuple(slice(lo, lo + n) for lo, n in zip(pad_lo, spatial))
    return (slice(None),) * 2 + inner if cn else (slice(None),) + inner + (slice(None),)


def work_shape(c: int, n: int, spatial: tuple, cn: bool) -> tuple:
    return (c, n) + tuple(spatial) if cn else (c,) + tuple(spatial) + (n,)


def to_work(op, xp, role: str, x, pad: tuple, cn: bool, copy: bool = True, last: bool = False):
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
    shape = work_shape(c, n, tuple(m + 2 * p for m, p in zip(spatial, pad)), cn)
    buf = op._scratch(xp, "%s%s%s" % (role, pad, "cn" if cn else "bl"), shape, x.dtype,
                      zero=any(pad))
    buf[interior(pad, spatial, cn)] = src
    return buf


def from_work(xp, a, cn: bool):
    """A work array (C, N, *sp) or (C, *sp, N) as an (N, C, *sp) view."""
    return a.swapaxes(0, 1) if cn else xp.moveaxis(a, -1, 0)


def tap_index(offs, stride, dilate, out_spatial, cn: bool = False) -> tuple:
    win = tuple(window(o, s, d, m) for o, s, d, m in zip(offs, stride, dilate, out_spatial))
    return (slice(None),) * 2 + win if cn else (slice(None),) + win + (slice(None),)


def im2col(op, xp, xw, kernel, stride, dilate, out_spatial, cn: bool = False, into=None):
    """Columns (C, prod(kernel), *work(out)) of a padded work array xw (see `to_work`).

    Batch innermost makes every tap's copy a run of contiguous (W_out * N) blocks; channels-batch
    makes it rows of W_out values. The columns go into `into` (a contiguous array of their size)
    when given, else into a scratch array.
    """
    c, n = xw.shape[0], xw.shape[1] if cn else xw.shape[-1]
    shape = (c, math.prod(kernel)) + work_shape(1, n, out_spatial, cn)[1:]
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
        xw, (c,) + tuple(kernel) + work_shape(1, n, out_spatial, cn)[1:],
        (st[0],) + taps + ((n_st,) + steps if cn else steps + (n_st,)))
    cols.reshape(view.shape)[...] = view
    if into is not None and not direct:
        into[...] = cols.reshape(into.shape)
    return cols


def col2im(op, xp, cols, spatial, kernel, stride, dilate, pad, out_spatial, cn: bool = False,
            groups: Optional[int] = None):
    """Adjoint of im2col: sums cols (C, K, *work(out)) into a scratch work array (padded).

    With `groups` the columns are tap-major instead, (groups, K, C / groups, *work(out)): each
    tap's block is then contiguous (per group), which NumPy sums markedly faster than the
    (C, 1, ...) slices of channel-major columns. Returns the view of the unpadded part.
    """
    if groups is None:
        c, n = cols.shape[0], cols.shape[2] if cn else cols.shape[-1]
    else:
        c, n = groups * cols.shape[2], cols.shape[3] if cn else cols.shape[-1]
    shape = work_shape(c, n, tuple(m + 2 * p for m, p in zip(spatial, pad)), cn)
    acc = op._scratch(xp, "col2im" + ("cn" if cn else ""), shape, cols.dtype)
    acc.fill(0)
    for tap, offs in enumerate(offsets(kernel)):
        idx = tap_index(offs, stride, dilate, out_spatial, cn)
        if groups is None:
            acc[idx] += cols[:, tap]
        else:
            acc.reshape((groups, c // groups) + shape[1:])[(slice(None),) + idx] += cols[:, tap]
    return acc[interior(pad, spatial, cn)]


def row_sums(op, xp, a, out=None):
    """Row sums of a 2-D array as one matrix-vector product (several times faster than
    NumPy's sum along rows at these sizes), into `out` when it is a contiguous vector."""
    ones = op._scratch(xp, "ones", (a.shape[1],), a.dtype)
    ones.fill(1)
    if out is not None and out.flags.c_contiguous and out.dtype == a.dtype:
        return matmul(xp, a, ones, out=out.reshape(a.shape[0]))
    return matmul(xp, a, ones)


def gemm(op, xp, role: str, a, b, into=None):
    """a @ b (2-D, or batched over groups) into a scratch array, or into `into` (a contiguous
    array of the product's size) when given."""
    shape = a.shape[:-1] + b.shape[-1:]
    res = op._scratch(xp, role, shape, b.dtype) if into is None else into.reshape(shape)
    matmul(xp, a, b, out=res)
    return res


def weight_rows(a, g: int):
    """A weight (g * m, ...) as GEMM rows: (m, k) for one group, (g, m / g, k) for several."""
    return a.reshape(a.shape[0], -1) if g == 1 else a.reshape(g, a.shape[0] // g, -1)


def data_panel(a, g: int, p: int):
    """Batch-last data or columns (g * m, ..., P) as a GEMM operand (m, P) or (g, m / g, P)."""
    return a.reshape(-1, p) if g == 1 else a.reshape(g, -1, p)


def transposed(a):
    """Transpose of the last two axes (a view; BLAS reads it without a copy)."""
    return a.T if a.ndim == 2 else a.transpose(0, 2, 1)


def write_reshaped(xp, dst, value) -> None:
    """dst[...] = value where dst may be None; value may be a scratch view."""
    if dst is not None:
        dst[...] = value.reshape(dst.shape)
