"""Fused operators: one op standing for a pattern of ordinary ones, with the same numbers.

No symbol names these ops. The graph compiler (`minimod.passes.fuse`) puts one in place of the
nodes it stands for, in a plan's graph only, where the pattern allows it; the user's symbol, its
JSON and its node names stay as written. They live beside the other kernels, not in
`minimod.ops`, because they exist for speed alone: each computes what its pattern computes.

`ActivationMaxPooling` stands for Activation (tanh or relu) followed by max Pooling over windows
that do not overlap (LeNet's conv-tanh-pool, VGG's conv-relu-pool). Both activations never
decrease, so the largest activation in a window is (nearly always exactly) the activation of
the window's largest input: pooling first runs the activation, forward and backward, on one
element per window instead of every element (a quarter of them under 2x2 pooling), and the
activation's full-size output is never made.

"Nearly always": float32 tanh is rounded, so two different inputs can map to one value, and
NumPy's tanh is not monotone everywhere (float32 tanh(1.4999999) > tanh(1.5) by one unit in
the last place). Where that matters, the pooled-first result could name a different winner
(which decides where the gradient goes) or even a different maximum. So every window whose
runner-up input lies close enough below its maximum for their activations to coincide is
recomputed the unfused way (activation of each entry, first maximum). Close enough is bounded
from tanh's slope. Say the computed tanh is within d of the true one, for d = 5 units in the
last place of values in [0.5, 1) (libm's and NumPy's float32 tanh are within 1-3). If x1 < x2
and tanh(x1) >= tanh(x2) = y as computed, the true values differ by at most 2d and lie within
3d of y, where tanh's slope 1 - t^2 is at least 1 - (|y| + 3d)^2; so x2 - x1 is at most
2d / (1 - (|y| + 3d)^2). The op takes u = 16 such units (over 3d), flags every window with an
entry in [x2 - 1.25 u / (1 - y^2 - 2u - u^2), x2), and takes a window at or near saturation
(denominator <= 0) as flagged whenever it has any entry below its maximum.
relu, max(x, 0), is exact and monotone: its only ties are windows with no positive entry,
where every entry maps to 0 and the first one wins.

One difference is left: in a window holding a NaN the output and mask are the unfused ones
(NaN, last offset), but the gradient is NaN at every entry of the window, where the unfused
nodes put NaN at the NaN entries only. A NaN has already spoilt that step's gradients either
way (`mx.numerics.nan_guard` stops at the first one).
"""
from __future__ import annotations

import math

import numpy as np

from ..backend import const
from ..ops.activation import Activation
from ..ops.pool_windows import backward_disjoint, disjoint, first_max, window_panel
from ..ops.pooling import Pooling
from ..ops.registry import Op
from ..ops.scratch import _ScratchMixin
from .layout import BatchLast, form_of, from_batch_last, to_batch_last

__all__ = ["ActivationMaxPooling", "BatchLastActivationMaxPooling"]

#: activations that never decrease, with ties handled below
FUSIBLE_ACTIVATIONS = ("relu", "tanh")

#: units in the last place (of values in [0.5, 1)) in the tie bound: 3 x 5, rounded up
_TANH_ULPS = 16

#: beyond this fraction of flagged windows, recompute the whole layer the unfused way
_RECOMPUTE_ALL = 0.125


class ActivationMaxPooling(_ScratchMixin, Op):
    """Max Pooling (disjoint windows, no padding) of Activation(relu or tanh), pooled first.

    Outputs are Pooling's: 'output' (the pooled activation) and the hidden 'mask' (offset of
    each window's first maximum, which backward reads), equal to what the Activation and
    Pooling nodes write (relu: up to the sign of a zero). The gradient is the activation's
    gradient at the pooled value, sent to the winning offset.

    Its batch-last form (below) may store data and output batch-last; the mask follows the
    data's layout, in which the windows are gathered (the "panel order").
    """

    #: this form's layout (`BatchLastActivationMaxPooling` sets them)
    data_last = False
    out_last = False

    name = "Activation+Pooling"
    Attrs = Pooling.Attrs
    backward_inputs = ()
    backward_outputs = (0, 1)

    def __init__(self, act: Activation, pool: Pooling, act_name: str):
        super().__init__(pool.raw_attrs)
        self.act = act
        self.pool = pool
        #: the name of the Activation node this op absorbed (for the monitor)
        self.act_name = act_name

    @staticmethod
    def applies(act, pool, in_shape, dtype) -> bool:
        """Whether Pooling `pool` over the output (shape `in_shape`, `dtype`) of Activation
        `act` can run as this op."""
        if type(act) is not Activation or type(pool) is not Pooling:
            return False
        a = pool.attrs
        if (act.attrs.act_type not in FUSIBLE_ACTIVATIONS or a.pool_type != "max"
                or (a.layout is not None and not a.layout.startswith("NC"))
                or dtype is None or np.dtype(dtype).kind != "f"
                or in_shape is None or len(in_shape) < 3):
            return False
        kernel, stride, pad_lo, pad_hi, out = pool._geometry(tuple(in_shape[2:]))
        return (not any(pad_lo) and not any(pad_hi) and all(y > 0 for y in out)
                and disjoint(kernel, stride, out))

    def outputs(self) -> list:
        return ["output", "mask"]

    def num_visible_outputs(self) -> int:
        return 1

    def infer_shape(self, in_shapes: list, out_shapes: list):
        return self.pool.infer_shape(in_shapes, out_shapes)

    def infer_type(self, in_types: list, out_types: list):
        return self.pool.infer_type(in_types, out_types)

    # ------------------------------------------------------------------ forward
    def forward(self, xp, inputs, aux, out, is_train):
        x, y, mask = inputs[0], out[0], out[1]
        pool, last = self.pool, self.data_last
        kernel, _, _, _, out_spatial = pool._geometry(x.shape[1:-1] if last else x.shape[2:])
        nk, size = math.prod(kernel), y.size
        panel = window_panel(pool, xp, x, kernel, out_spatial, y.dtype, last)
        xf = self._scratch(xp, "xmax", (size,), y.dtype)
        xp.max(panel, axis=0, out=xf)
        # flat in the panel's order: views of y and mask where they are stored that way,
        # else stand-ins copied over at the end
        yf = self._flat_panel(xp, "y", y, self.out_last)
        mf = self._flat_panel(xp, "mask", mask, last)
        self.act.forward(xp, [xf], [], [yf], is_train)
        if self.act.attrs.act_type == "relu":
            first_max(pool, xp, panel, xf, mf)
            # y == 0: no positive entry, every entry's relu is 0 (or -0), the first one wins
            zero = self._scratch(xp, "zero", (size,), bool)
            xp.equal(yf, const(xp, 0, yf.dtype), out=zero)
            xp.copyto(mf, const(xp, 0, mf.dtype), where=zero)
        else:
            # entries below their window's maximum (all of a NaN window's)
            below = self._scratch(xp, "below", (nk, size), bool)
            xp.not_equal(panel, xf, out=below)
            flagged = self._near_ties(xp, panel, xf, yf, below)
            first_max(pool, xp, panel, xf, mf, ne=below[:nk - 1])
            self._recompute(xp, panel, yf, mf, flagged)
        self._store_panel(xp, yf, y, self.out_last)
        self._store_panel(xp, mf, mask, last)

    def _in_panel_order(self, arr, last: bool) -> bool:
        """Whether arr, stored batch-last if `last`, is a contiguous array in panel order."""
        return last == self.data_last and arr.flags.c_contiguous

    def _flat_panel(self, xp, role: str, arr, last: bool):
        """arr as a flat array in panel order: a view, or a scratch for `_store_panel`."""
        if self._in_panel_order(arr, last):
            return arr.reshape(-1)
        return self._scratch(xp, role, (arr.size,), arr.dtype)

    def _store_panel(self, xp, flat, arr, last: bool) -> None:
        """Copy `flat` (from `_flat_panel`) into arr unless it is a view of it."""
        if self._in_panel_order(arr, last):
            return
        arr[...] = self._panel_view(xp, flat, arr.shape, last)

    def _panel_view(self, xp, flat, shape, last: bool):
        """`flat` (panel order) seen as an array of `shape`, stored batch-last if `last`."""
        if last == self.data_last:
            return flat.reshape(shape)
        if self.data_last:  # panel batch-last, target (N, C, ...)
            return xp.moveaxis(flat.reshape(to_batch_last(shape)), -1, 0)
        return xp.moveaxis(flat.reshape(from_batch_last(shape)), 0, -1)

    def _near_ties(self, xp, panel, xf, yf, below):
        """Windows (bool per window) with an entry below the maximum xf whose tanh may equal
        tanh(xf) = yf: one at or above xf - slack, the slack of the module docstring."""
        dtype = yf.dtype
        eps = float(np.finfo(dtype).eps)
        u = _TANH_ULPS * eps / 2  # 16 units in the last place of values in [0.5, 1)
        slack = self._scratch(xp, "slack", yf.shape, dtype)
        # 1 - (|y| + u)^2 >= 1 - y^2 - (2u + u^2) for |y| <= 1: two passes fewer than abs
        xp.multiply(yf, yf, out=slack)
        xp.subtract(const(xp, 1 - 2 * u - u * u, dtype), slack, out=slack)
        xp.maximum(slack, const(xp, 0, dtype), out=slack)
        # the factor 1.25 also covers the rounding of the passes here and of lo below
        # (a slack is at least 5 units in the last place of any |x| at which tanh is not
        # yet 1); a window at or past saturation gets an infinite slack
        with np.errstate(divide="ignore"):
            xp.divide(const(xp, 1.25 * u, dtype), slack, out=slack)
        lo = self._scratch(xp, "lo", yf.shape, dtype)
        # +inf - inf would be NaN and flag nothing: start from the largest finite value
        xp.minimum(xf, const(xp, float(np.finfo(dtype).max), dtype), out=lo)
        xp.subtract(lo, slack, out=lo)
        near = self._scratch(xp, "near", panel.shape, bool)
        xp.greater_equal(panel, lo, out=near)  # False throughout a NaN window
        xp.logical_and(near, below, out=near)
        flagged = self._scratch(xp, "flagged", yf.shape, bool)
        xp.logical_or.reduce(near, axis=0, out=flagged)
        return flagged

    def _recompute(self, xp, panel, yf, mf, flagged) -> None:
        """The unfused results (activation of every entry, then the first maximum) for the
        flagged windows; for all windows when many are flagged."""
        count = int(xp.count_nonzero(flagged))
        if count == 0:
            return
        if count > _RECOMPUTE_ALL * yf.size:
            self.act.forward(xp, [panel], [], [panel], True)
            xp.max(panel, axis=0, out=yf)
            first_max(self.pool, xp, panel, yf, mf)
            return
        idx = xp.flatnonzero(flagged)
        sub = panel[:, idx]
        self.act.forward(xp, [sub], [], [sub], True)
        best = sub.max(axis=0)
        yf[idx] = best
        mf[idx] = (sub == best).argmax(axis=0)  # best is one of the column's entries

    # ------------------------------------------------------------------ backward
    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is None:
            return
        g, y, mask = out_grads[0], outputs[0], outputs[1]
        last = self.data_last
        # the activation's gradient at the pooled values, as Activation computes it at the
        # winners (in the output's layout), then Pooling's routing of it to the winning
        # offsets (in the data's)
        gact = self._scratch(xp, "gact", g.shape, g.dtype)
        self.act.backward(xp, [g], [None], [y], [gact], [])
        if self.out_last != last:
            moved = self._scratch(xp, "gact_moved", mask.shape, g.dtype)
            moved[...] = xp.moveaxis(gact, 0, -1) if last else xp.moveaxis(gact, -1, 0)
            gact = moved
        pool = self.pool
        kernel, _, pad_lo, pad_hi, out_spatial = pool._geometry(
            dx.shape[1:-1] if last else dx.shape[2:])
        backward_disjoint(pool, xp, gact, mask, dx, kernel, pad_lo, pad_hi, out_spatial, last)

    # ------------------------------------------------------------------ monitor
    def unfused_nodes(self, xp, node_name: str, inputs, outputs) -> list:
        """The two nodes this op stands for, as (name, op, inputs, outputs) with their arrays,
        for the monitor to report as it would: the activation's output is computed here from
        the input, which this op never overwrites (so before or after it runs alike)."""
        x = inputs[0]
        act_out = xp.empty_like(x)
        self.act.forward(xp, [x], [], [act_out], False)
        return [(self.act_name, self.act, [x], [act_out]),
                (node_name, self.pool, [act_out], list(outputs))]


@form_of(ActivationMaxPooling)
class BatchLastActivationMaxPooling(BatchLast, ActivationMaxPooling):
    """ActivationMaxPooling with its data (and so its mask), its output or both stored
    batch-last."""

    follows_data = (1,)
