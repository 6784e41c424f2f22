"""Pooling over windows that do not overlap (stride == kernel, or one window per dim, as in
most 2x2 pools and global pooling), shared by Pooling and the fused activation-pooling op of
`minimod.kernels.fused`.

The windows are copied once into a scratch (window size, outputs) panel and reduced in one
call, and backward writes each kernel offset's gradient in one pass. The panel, the mask
comparison and the padded gradient are scratch arrays of `owner` (see `_ScratchMixin`),
rewritten in full on every call. `last` says the arrays are stored batch-last, (C, *spatial, N):
the fused op gathers its windows so when the layout pass asks it to.
"""
from __future__ import annotations

import itertools
import math

from ..backend import sum_into
from .conv_helpers import offsets
from .scratch import _arange

__all__ = ["disjoint", "window_tiles", "flat_view", "window_panel", "forward_disjoint", "first_max",
           "backward_disjoint"]


def disjoint(kernel, stride, out_spatial) -> bool:
    """Whether no two windows overlap, so that each input element lies in one window at most."""
    return all(s == k or y == 1 for k, s, y in zip(kernel, stride, out_spatial))


def window_tiles(xpad, kernel, out_spatial, last: bool = False):
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


def flat_view(owner, xp, role: str, arr):
    """arr as a 1-D view, or a scratch stand-in to copy back when arr is not contiguous."""
    if arr.flags.c_contiguous:
        return arr.reshape(-1)
    return owner._scratch(xp, role, (arr.size,), arr.dtype)


def window_panel(owner, xp, xpad, kernel, out_spatial, dtype, last: bool = False):
    """The disjoint windows of xpad copied into a (K, M) scratch panel: row k holds kernel
    offset k of every window, in the output's order, batch-last if xpad is (`last`)
    (valid until the next Pooling call)."""
    tiles = window_tiles(xpad, kernel, out_spatial, last)
    panel = owner._scratch(xp, "panel", (math.prod(kernel), math.prod(tiles.shape[len(
        kernel):])), dtype)
    panel.reshape(tiles.shape)[...] = tiles
    return panel


def forward_disjoint(owner, xp, xpad, kernel, out_spatial, y, mask):
    """Disjoint windows: one copy into a (K, M) panel, one reduction; mask = first argmax."""
    panel = window_panel(owner, xp, xpad, kernel, out_spatial, y.dtype)
    yf = flat_view(owner, xp, "y", y)
    if mask is None:
        sum_into(xp, panel, 0, yf)
    else:
        xp.max(panel, axis=0, out=yf)
        mf = flat_view(owner, xp, "mask", mask)
        first_max(owner, xp, panel, yf, mf)
        if not mask.flags.c_contiguous:
            mask[...] = mf.reshape(mask.shape)
    if not y.flags.c_contiguous:
        y[...] = yf.reshape(y.shape)


def first_max(owner, xp, panel, yf, mf, ne=None) -> None:
    """mf = the offset of the first entry of each panel column equal to its maximum yf
    (the last offset for a NaN column, where no entry equals it). `ne`, when given, holds
    panel[:-1] != yf already (and is overwritten)."""
    nk = panel.shape[0]
    if nk == 1:
        mf.fill(0)
        return
    # the first maximum's offset = how many leading entries differ from the max
    if ne is None:
        ne = owner._scratch(xp, "ne", (nk - 1, yf.size), bool)
        xp.not_equal(panel[:nk - 1], yf, out=ne)
    # counted in small integers (bool + uint8 adds are several times faster than
    # bool + float), converted once
    count = owner._scratch(xp, "count", (yf.size,), "uint8" if nk <= 256 else "int32")
    count[...] = ne[0]
    # bools read as the uint8 0/1 they are: no cast (and no cast buffer) per add
    ne8 = ne.view("uint8") if count.dtype == xp.uint8 else ne
    for k in range(1, nk - 1):
        xp.logical_and(ne[k - 1], ne[k], out=ne[k])
        xp.add(count, ne8[k], out=count)
    mf[...] = count


def backward_disjoint(owner, xp, gy, mask, dx, kernel, pad_lo, pad_hi, out_spatial,
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
        target = owner._scratch(xp, "gpad", dx.shape[:1] + padded + dx.shape[-1:] if last
                                else dx.shape[:2] + padded, dx.dtype)
        target.fill(0)
    tiles = window_tiles(target, kernel, out_spatial, last)
    if mask is None:
        for offs in offsets(kernel):
            tiles[offs] = gy
    else:
        # every kernel offset at once (two calls): offset k's gradient is gy where mask == k
        taps = _arange(xp, math.prod(kernel), mask.dtype).reshape(
            tuple(kernel) + (1,) * mask.ndim)
        eq = owner._scratch(xp, "eq", tiles.shape, bool)
        xp.equal(mask, taps, out=eq)
        xp.multiply(gy, eq, out=tiles)
    if target is not dx:
        inner = tuple(slice(lo, lo + n) for lo, n in zip(pad_lo, spatial))
        dx[...] = target[(slice(None),) + inner if last else (Ellipsis,) + inner]
