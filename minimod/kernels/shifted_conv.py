"""Convolution's bound steps for stride-1 2-D convolutions: im2col over shifted rows, in chunks.

In the padded channels-batch work layout (C, N, Hp, Wp) read as one flat row per channel, the
output at flat position s of a stride-1 convolution reads the input at s + kh*dh*Wp + kw*dw for
each tap (kh, kw): take the output grid to be the whole padded grid (its last rows and columns
hold junk, computed and dropped) and the columns of a run of positions are, per (channel, tap),
ONE contiguous run of the flat data. So im2col is a copy of long rows, and it is done a chunk of
positions at a time, each chunk's columns consumed by the GEMM while they are still in cache
(the reference op writes the columns of the whole batch, tens of MB, to memory and reads them
back, and its col2im adds scattered windows).

Backward: the weight gradient sums columns @ g^T chunk by chunk; the data gradient is the
adjoint of the forward, the same construction run on the output gradient (zero on the junk
positions and on a margin before the first) with the kernel flipped and transposed.

The hidden `columns` output, where the reference op keeps its columns for its backward, holds
the padded data here, and the backward rebuilds each chunk's columns from it. The forward and
backward paths are therefore bound together: both take the same decision (`_geometry`) from
what both see, the op, the output shape, the weight and the columns, so a backward bound here
always reads what a forward bound here wrote. Applies on NumPy, to float32 / float64, stride 1,
one group, where the junk grid adds at most a quarter to the work (`MAX_WASTE`).

The products run in other blocks than the reference's, and the weight and bias gradients are
summed chunk by chunk, so results can differ from the reference op's in the last bits.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from ..ops.convolution import Convolution
from ..ops.scratch import _ScratchMixin
from .registry import fast_path, plain_numpy

__all__ = ["MAX_WASTE", "CHUNK_BYTES"]

#: the padded grid may hold at most this many times the output positions
MAX_WASTE = 1.25
#: target size of one chunk's columns: a few MB, which stay in the last-level cache
CHUNK_BYTES = 3 << 20


@dataclasses.dataclass(frozen=True)
class _Geometry:
    """Sizes of one stride-1 convolution in the flat padded layout."""

    n: int
    c: int
    f: int
    kh: int
    kw: int
    dh: int
    dw: int
    ph: int
    pw: int
    ho: int
    wo: int
    chunk: int

    @property
    def hp(self) -> int:
        return self.ho + self.dh * (self.kh - 1)

    @property
    def wp(self) -> int:
        return self.wo + self.dw * (self.kw - 1)

    @property
    def size(self) -> int:
        """Positions of the padded grid of the whole batch."""
        return self.n * self.hp * self.wp

    @property
    def margin(self) -> int:
        """The largest tap offset: the zeros after the data (before the gradient)."""
        return self.dh * (self.kh - 1) * self.wp + self.dw * (self.kw - 1)

    def spans(self) -> list:
        return [(s, min(self.chunk, self.size - s)) for s in range(0, self.size, self.chunk)]


def _geometry(op, xp, out_shape, weight, columns) -> Optional[_Geometry]:
    """The geometry of the shifted-rows path, or None where it does not apply."""
    a = op.attrs
    if (len(op.kernel) != 2 or op.stride != (1, 1) or a.num_group != 1 or len(out_shape) != 4
            or not plain_numpy(xp, weight, columns) or columns.ndim != 1
            or weight.dtype.name not in ("float32", "float64")):
        return None
    (kh, kw), (dh, dw), (ph, pw) = op.kernel, op.dilate, op.pad
    n, f, ho, wo = out_shape
    c = weight.shape[1]
    taps = kh * kw
    hp, wp = ho + dh * (kh - 1), wo + dw * (kw - 1)
    if taps == 1 or hp < 2 * ph + 1 or wp < 2 * pw + 1 or hp * wp > MAX_WASTE * ho * wo:
        return None
    chunk = max(256, CHUNK_BYTES // (c * taps * weight.itemsize) // 64 * 64)
    geo = _Geometry(n, c, f, kh, kw, dh, dw, ph, pw, ho, wo, chunk)
    if columns.size < c * (geo.size + geo.margin):
        return None
    return geo


def _grid(flat, geo: _Geometry, start: int):
    """Rows (K, size) of `flat` (K, >= start + size) from `start`, as (K, N, Hp, Wp)."""
    return flat[:, start:start + geo.size].reshape(flat.shape[0], geo.n, geo.hp, geo.wp)


def _zero_outside(xp, grid, rows: slice, cols: slice) -> list:
    """Views of the parts of `grid` (K, N, Hp, Wp) outside [rows, cols] (for zeroing)."""
    return [grid[:, :, :rows.start], grid[:, :, rows.stop:],
            grid[:, :, rows, :cols.start], grid[:, :, rows, cols.stop:]]


def _chunks(xp, flat, base: int, geo: _Geometry, cols):
    """[(taps view, its columns)] per chunk: the columns of positions [s, s + L) of rows of
    `flat` (K, ...) start at base + s and read base + s + each tap's offset."""
    k = flat.shape[0]
    item = flat.itemsize
    out = []
    for s, length in geo.spans():
        taps = xp.lib.stride_tricks.as_strided(
            flat[:, base + s:], (k, geo.kh, geo.kw, length),
            (flat.strides[0], geo.dh * geo.wp * item, geo.dw * item, item))
        out.append((taps, cols[:, :length].reshape(taps.shape), cols[:, :length]))
    return out


class _Scratch(_ScratchMixin):
    """The owner of this path's work arrays in the shared scratch cache."""


_SCRATCH = _Scratch()


@fast_path(Convolution, stage="forward")
def bind_forward(op, xp, inputs, aux, out):
    x, weight, y, columns = inputs[0], inputs[1], out[0], out[1]
    geo = _geometry(op, xp, y.shape, weight, columns)
    if geo is None:
        return None
    g = geo
    data = columns[:g.c * (g.size + g.margin)].reshape(g.c, g.size + g.margin)
    grid = _grid(data, g, 0)
    inner = (slice(g.ph, g.hp - g.ph), slice(g.pw, g.wp - g.pw))
    zeros = _zero_outside(xp, grid, *inner) + [data[:, g.size:]]
    interior = grid[:, :, inner[0], inner[1]]
    dtype = weight.dtype
    cols = _SCRATCH._scratch(xp, "shift_cols", (g.c * g.kh * g.kw, g.chunk), dtype)
    res = _SCRATCH._scratch(xp, "shift_y", (g.f, g.size), dtype)
    steps = [(taps, dst, panel, res[:, s:s + length])
             for (taps, dst, panel), (s, length) in zip(_chunks(xp, data, 0, g, cols),
                                                        g.spans())]
    w_rows = weight.reshape(g.f, -1)
    y_work = _grid(res, g, 0)[:, :, :g.ho, :g.wo].swapaxes(0, 1)
    bias = None if op.attrs.no_bias else inputs[2].reshape(-1, 1, 1)
    src = x.swapaxes(0, 1)

    def run(xp, is_train):
        for part in zeros:
            part.fill(0)
        xp.copyto(interior, src)
        for taps, dst, panel, res_part in steps:
            xp.copyto(dst, taps)
            xp.matmul(w_rows, panel, out=res_part)
        if bias is None:
            xp.copyto(y, y_work)
        else:
            xp.add(y_work, bias, out=y)
    return run


@fast_path(Convolution, stage="backward")
def bind_backward(op, xp, out_grads, inputs, outputs, in_grads, aux):
    gy, weight, columns = out_grads[0], inputs[1], outputs[1]
    geo = _geometry(op, xp, gy.shape, weight, columns)
    if geo is None:
        return None
    g = geo
    dx, dw = in_grads[0], in_grads[1]
    db = None if op.attrs.no_bias else in_grads[2]
    dtype = weight.dtype
    data = columns[:g.c * (g.size + g.margin)].reshape(g.c, g.size + g.margin)
    # the output gradient on the padded grid, after a margin of zeros; junk positions zero
    grad = _SCRATCH._scratch(xp, "shift_g", (g.f, g.margin + g.size), dtype)
    ggrid = _grid(grad, g, g.margin)
    zeros = _zero_outside(xp, ggrid, slice(0, g.ho), slice(0, g.wo)) + [grad[:, :g.margin]]
    g_inner = ggrid[:, :, :g.ho, :g.wo]
    gy_src = gy.swapaxes(0, 1)
    run_dw = _bind_weight_grad(xp, g, data, grad, dw, dtype)
    run_db = _bind_bias_grad(xp, g, grad, db, dtype)
    run_dx = _bind_data_grad(xp, g, weight, grad, dx, dtype)

    def run(xp, is_train):
        for part in zeros:
            part.fill(0)
        xp.copyto(g_inner, gy_src)
        run_dw(xp)
        run_db(xp)
        run_dx(xp)
    return run


def _nothing(xp) -> None:
    pass


def _bind_weight_grad(xp, g: _Geometry, data, grad, dw, dtype):
    """dW^T (C*K, F) = sum over chunks of columns @ g^T, written into dw."""
    if dw is None:
        return _nothing
    taps_k = g.c * g.kh * g.kw
    cols = _SCRATCH._scratch(xp, "shift_cols", (taps_k, g.chunk), dtype)
    acc = _SCRATCH._scratch(xp, "shift_dwt", (taps_k, g.f), dtype)
    part = _SCRATCH._scratch(xp, "shift_dwt_part", (taps_k, g.f), dtype)
    steps = [(taps, dst, panel, grad[:, g.margin + s:g.margin + s + length].T)
             for (taps, dst, panel), (s, length) in zip(_chunks(xp, data, 0, g, cols),
                                                        g.spans())]
    dw_view = acc.T.reshape(dw.shape)

    def run(xp):
        for i, (taps, dst, panel, g_t) in enumerate(steps):
            xp.copyto(dst, taps)
            xp.matmul(panel, g_t, out=part if i else acc)
            if i:
                xp.add(acc, part, out=acc)
        xp.copyto(dw, dw_view)
    return run


def _bind_bias_grad(xp, g: _Geometry, grad, db, dtype):
    """db = row sums of the gradient (its junk positions are zero) as one GEMV."""
    if db is None:
        return _nothing
    ones = _SCRATCH._scratch(xp, "shift_ones", (g.size,), dtype)
    ones.fill(1)
    rows = grad[:, g.margin:]
    target = db if db.flags.c_contiguous else _SCRATCH._scratch(xp, "shift_db", db.shape,
                                                                 dtype)

    def run(xp):
        xp.matmul(rows, ones, out=target)
        if target is not db:
            xp.copyto(db, target)
    return run


def _bind_data_grad(xp, g: _Geometry, weight, grad, dx, dtype):
    """dx: the gradient convolved with the flipped, transposed kernel (the forward's adjoint),
    chunk by chunk on the padded grid, its interior written into dx."""
    if dx is None:
        return _nothing
    taps_k = g.f * g.kh * g.kw
    flipped = _SCRATCH._scratch(xp, "shift_wflip", (g.c, g.f, g.kh, g.kw), dtype)
    w_flip_src = weight.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1]
    w_rows = flipped.reshape(g.c, taps_k)
    cols = _SCRATCH._scratch(xp, "shift_gcols", (taps_k, g.chunk), dtype)
    res = _SCRATCH._scratch(xp, "shift_dx", (g.c, g.size), dtype)
    steps = [(taps, dst, panel, res[:, s:s + length])
             for (taps, dst, panel), (s, length) in zip(_chunks(xp, grad, 0, g, cols),
                                                        g.spans())]
    dx_work = _grid(res, g, 0)[:, :, g.ph:g.hp - g.ph, g.pw:g.wp - g.pw].swapaxes(0, 1)
    if dx_work.shape != dx.shape:
        raise AssertionError("shifted convolution: data gradient %s, grid gives %s"
                             % (dx.shape, dx_work.shape))

    def run(xp):
        xp.copyto(flipped, w_flip_src)
        for taps, dst, panel, res_part in steps:
            xp.copyto(dst, taps)
            xp.matmul(w_rows, panel, out=res_part)
        xp.copyto(dx, dx_work)
    return run
