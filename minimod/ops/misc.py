"""Operators outside MXNet's big families that training scripts still reach: the mixed-precision
helpers (all_finite, multi_all_finite, amp_cast, amp_multicast), `_histogram` (behind
mx.nd.histogram / mx.sym.histogram), `_ravel_multi_index` / `_unravel_index` (aliases
ravel_multi_index / unravel_index) and `_image_normalize` (mx.nd.image.normalize).

Only the casts and the normalisation pass gradients; the others are facts about their inputs
(flags, counts, index arithmetic) and are marked `no_gradient`, so their inputs get zero
gradients, as MXNet's zero-gradient registrations give them.
"""
from __future__ import annotations

import dataclasses
from typing import Literal, Optional

import numpy as np

from ..base import DTypeError, OpParamError, ShapeError
from .helpers import cast_into, dtype_of, zero_grads
from .registry import Op, fmt_shape, register

__all__ = ["AllFinite", "MultiAllFinite", "AmpCast", "AmpMultiCast", "Histogram",
           "RavelMultiIndex", "UnravelIndex", "ImageNormalize"]


def _is_float(t) -> bool:
    return t is not None and t.kind == "f"


# ----------------------------------------------------------------------------- finiteness

@dataclasses.dataclass(frozen=True)
class AllFiniteAttrs:
    init_output: bool = True


@dataclasses.dataclass(frozen=True)
class MultiAllFiniteAttrs:
    num_arrays: int = 1
    init_output: bool = True


class _Finite(Op):
    """Base: out (1,) float32 = 1 when every input element is finite, else 0. With
    init_output=False the output is not reset to 1 first, so a 0 already there stays (MXNet
    chains the check over several calls that way)."""

    no_gradient = True
    backward_inputs = ()
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        self.set_out(out_shapes, 0, (1,))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        for i, t in enumerate(in_types):
            if t is not None and not _is_float(t):
                raise DTypeError("%s: input '%s' is %s but the operator takes floating point "
                                 "only" % (self.name, self._in_name(i), t))
        return list(in_types), [dtype_of("float32")]

    def forward(self, xp, inputs, aux, out, is_train):
        y = out[0]
        if self.attrs.init_output:
            y.fill(1)
        for x in inputs:
            y[...] = xp.where(xp.all(xp.isfinite(x)), y, 0)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        zero_grads(in_grads)


@register
class AllFinite(_Finite):
    name = "all_finite"
    Attrs = AllFiniteAttrs


@register
class MultiAllFinite(_Finite):
    """all_finite over num_arrays inputs array_0, array_1, ... (of any shapes)."""

    name = "multi_all_finite"
    Attrs = MultiAllFiniteAttrs
    VARIADIC_CALL = True

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.num_arrays < 1:
            raise OpParamError("operator %s: num_arrays must be >= 1, got %d"
                               % (self.name, self.attrs.num_arrays))

    def arguments(self):
        return ["array_%d" % i for i in range(self.attrs.num_arrays)]


# ----------------------------------------------------------------------------- AMP casts

AmpDType = Literal["bfloat16", "float16", "float32", "float64", "int32", "int64", "int8",
                   "uint8"]


@dataclasses.dataclass(frozen=True)
class AmpCastAttrs:
    dtype: AmpDType


@register
class AmpCast(Op):
    """out = data converted to `dtype` when data is floating point; other data passes through
    with its own dtype. The gradient is converted back to data's dtype."""

    name = "amp_cast"
    Attrs = AmpCastAttrs
    backward_inputs = ()
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.dtype == "bfloat16":
            raise OpParamError("operator %s: dtype bfloat16 is not supported (NumPy and CuPy "
                               "have no bfloat16 arrays)" % self.name)

    def infer_type(self, in_types, out_types):
        t = in_types[0]
        if t is None:
            return list(in_types), list(out_types)
        return list(in_types), [dtype_of(self.attrs.dtype) if _is_float(t) else t]

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0], casting="unsafe")

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            xp.copyto(in_grads[0], out_grads[0], casting="unsafe")


@dataclasses.dataclass(frozen=True)
class AmpMultiCastAttrs:
    num_outputs: int
    cast_narrow: bool = False


@register
class AmpMultiCast(Op):
    """num_outputs inputs data_0, data_1, ... -> as many outputs of the same shapes. The float16
    and float32 inputs all become the widest of their dtypes (float32 if any is float32), or
    the narrowest with cast_narrow; every other input passes through unchanged. Each gradient
    is converted back to its input's dtype."""

    name = "amp_multicast"
    Attrs = AmpMultiCastAttrs
    VARIADIC_CALL = True
    backward_inputs = ()
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.num_outputs < 1:
            raise OpParamError("operator %s: num_outputs must be >= 1, got %d"
                               % (self.name, self.attrs.num_outputs))

    def arguments(self):
        return ["data_%d" % i for i in range(self.attrs.num_outputs)]

    def outputs(self):
        return ["output%d" % i for i in range(self.attrs.num_outputs)]

    def infer_shape(self, in_shapes, out_shapes):
        for i in range(len(in_shapes)):
            self.same_shape(in_shapes, out_shapes, in_idx=[i], out_idx=[i])
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        mixed = [t for t in in_types if t is not None and t.name in ("float16", "float32")]
        if not mixed:
            return list(in_types), [t if t is not None else o
                                    for t, o in zip(in_types, out_types)]
        pick = min if self.attrs.cast_narrow else max
        target = pick(mixed, key=lambda t: t.itemsize)
        return list(in_types), [target if t is not None and t in mixed else t
                                for t in in_types]

    def forward(self, xp, inputs, aux, out, is_train):
        for x, y in zip(inputs, out):
            xp.copyto(y, x, casting="unsafe")

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        for g, dx in zip(out_grads, in_grads):
            if dx is not None:
                xp.copyto(dx, g, casting="unsafe")


# ----------------------------------------------------------------------------- histogram

@dataclasses.dataclass(frozen=True)
class HistogramAttrs:
    bin_cnt: Optional[int] = None
    range: Optional[tuple[float, ...]] = None


@register
class Histogram(Op):
    """Counts of the flattened data per bin: output0 (n,) int64 counts, output1 (n + 1,) the
    bin edges in data's dtype. Bins are either the 1-D input `bins` (n + 1 ascending edges) or,
    with bin_cnt=n and range=(lo, hi), n equal bins over [lo, hi] (hi == lo widens the range to
    lo - 0.5 .. hi + 0.5, as NumPy does; integer data truncates the edges). Bin i holds
    edge[i] <= x < edge[i + 1], the last bin also x == edge[n]; values outside the range and
    NaN are not counted. No gradient."""

    name = "_histogram"
    Attrs = HistogramAttrs
    SIGNATURE_INPUTS = ("data", "bins")
    OUTPUTS = ("output0", "output1")
    no_gradient = True
    backward_inputs = ()
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        p = self.attrs
        if (p.bin_cnt is None) != (p.range is None):
            raise OpParamError("operator %s: give bin_cnt and range together (or a bins input "
                               "and neither)" % self.name)
        if p.bin_cnt is not None:
            if p.bin_cnt < 1:
                raise OpParamError("operator %s: bin_cnt must be >= 1, got %d"
                                   % (self.name, p.bin_cnt))
            if len(p.range) != 2 or p.range[0] > p.range[1]:
                raise OpParamError("operator %s: range must be (low, high) with low <= high, "
                                   "got %s" % (self.name, p.range))

    def arguments(self):
        return ["data"] if self.attrs.bin_cnt is not None else ["data", "bins"]

    def infer_shape(self, in_shapes, out_shapes):
        if self.attrs.bin_cnt is not None:
            n = self.attrs.bin_cnt
        else:
            bins = in_shapes[1]
            if bins is not None and len(bins) != 1:
                raise ShapeError("%s: input 'bins' has shape %s but must be 1-D (the bin "
                                 "edges)" % (self.name, fmt_shape(bins)))
            if bins is None and out_shapes[1] is not None:
                self.set_in(in_shapes, 1, tuple(out_shapes[1]))
            bins = in_shapes[1]
            n = None if bins is None or bins[0] is None else bins[0] - 1
            if n is not None and n < 1:
                raise ShapeError("%s: input 'bins' needs at least 2 edges, got %s"
                                 % (self.name, fmt_shape(bins)))
        if n is not None:
            self.set_out(out_shapes, 0, (n,))
            self.set_out(out_shapes, 1, (n + 1,))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        types, (_, edge_t) = Op.infer_type(self, list(in_types), [None, out_types[1]])
        return types, [dtype_of("int64"), edge_t]

    def _range(self) -> tuple:
        lo, hi = (float(v) for v in self.attrs.range)
        return (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)

    def forward(self, xp, inputs, aux, out, is_train):
        counts, edges = out
        x = inputs[0].reshape(-1)
        if self.attrs.bin_cnt is not None:
            lo, hi = self._range()
            # NumPy's edges on either device (CuPy's linspace rounds its middle ones apart)
            edges[...] = xp.asarray(np.linspace(lo, hi, edges.size).astype(edges.dtype))
        else:
            xp.copyto(edges, inputs[1])
            lo, hi = edges[0], edges[-1]
        n = counts.size
        x64 = x.astype("float64")
        inside = (x64 >= lo) & (x64 <= hi)
        # a value on the last edge belongs to the last bin, not to a bin past it
        where = xp.minimum(xp.searchsorted(edges, x, side="right") - 1, n - 1)
        where = xp.where(inside, where, n)  # out-of-range and NaN values go to a dropped bin
        counts[...] = xp.bincount(where, minlength=n + 1)[:n]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        zero_grads(in_grads)


# ----------------------------------------------------------------------------- flat indices

@dataclasses.dataclass(frozen=True)
class RavelAttrs:
    shape: Optional[tuple[int, ...]] = None


class _Ravel(Op):
    """Base: the `shape` check (a leading -1 is allowed: the first dim never matters)."""

    Attrs = RavelAttrs
    no_gradient = True
    backward_inputs = ()
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        shape = self.attrs.shape
        if not shape or any(d is None or d < 1 for d in shape[1:]) or shape[0] in (None, 0):
            raise OpParamError("operator %s: shape must be a non-empty tuple of positive dims "
                               "(the first may be -1), got %s" % (self.name, shape))

    def _check(self, shape, ndim: int, what: str) -> None:
        if shape is not None and len(shape) != ndim:
            raise ShapeError("%s: input 'data' has shape %s but must be %s"
                             % (self.name, fmt_shape(shape), what))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        zero_grads(in_grads)


@register
class RavelMultiIndex(_Ravel):
    """out[j] = sum_i data[i, j] stride_i: data (ndim, N) holds N coordinate tuples (truncated
    to integers) of an array of `shape`, out (N,) their flat (row-major) positions, in data's
    dtype. Coordinates are not range-checked."""

    name = "_ravel_multi_index"
    aliases = ("ravel_multi_index",)

    def infer_shape(self, in_shapes, out_shapes):
        data, ndim = in_shapes[0], len(self.attrs.shape)
        self._check(data, 2, "2-D (len(shape)=%d, N)" % ndim)
        self.set_in(in_shapes, 0, (ndim, None if out_shapes[0] is None else out_shapes[0][0]),
                    "shape=%s" % (self.attrs.shape,))
        self.set_out(out_shapes, 0, (in_shapes[0][1],))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        dims = self.attrs.shape
        strides = [1] * len(dims)
        for i in range(len(dims) - 2, -1, -1):
            strides[i] = strides[i + 1] * dims[i + 1]
        coords = inputs[0].astype("int64")
        flat = (coords * xp.asarray(strides, dtype="int64")[:, None]).sum(axis=0)
        xp.copyto(out[0], flat, casting="unsafe")


@register
class UnravelIndex(_Ravel):
    """The inverse of ravel_multi_index: data (N,) flat positions (truncated to integers) ->
    out (ndim, N) coordinates in an array of `shape`, in data's dtype. As in MXNet, the first
    coordinate is what remains after the others are taken (so a position past the end gives
    a first coordinate past shape[0]) and negative positions follow C's remainder."""

    name = "_unravel_index"
    aliases = ("unravel_index",)

    def infer_shape(self, in_shapes, out_shapes):
        data, ndim = in_shapes[0], len(self.attrs.shape)
        self._check(data, 1, "1-D (N,)")
        if data is None and out_shapes[0] is not None:
            self.set_in(in_shapes, 0, tuple(out_shapes[0][1:]))
        if in_shapes[0] is not None:
            self.set_out(out_shapes, 0, (ndim,) + tuple(in_shapes[0]))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        rest = inputs[0].astype("int64")
        dims = self.attrs.shape
        for i in range(len(dims) - 1, 0, -1):  # one pass per axis of `shape`
            coord = xp.fmod(rest, dims[i])
            xp.copyto(out[0][i], coord, casting="unsafe")
            rest = (rest - coord) // dims[i]
        xp.copyto(out[0][0], rest, casting="unsafe")


# ----------------------------------------------------------------------------- image

@dataclasses.dataclass(frozen=True)
class ImageNormalizeAttrs:
    mean: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0)
    std: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0)


@register
class ImageNormalize(Op):
    """out[..., c, h, w] = (data[..., c, h, w] - mean[c]) / std[c] for (C, H, W) or
    (N, C, H, W) data with C = 1 or 3; mean and std have 1 (shared) or C entries. data's dtype
    (integers computed in floating point, then truncated). Gradient head / std[c]."""

    name = "_image_normalize"
    Attrs = ImageNormalizeAttrs
    backward_inputs = ()
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is not None:
            if len(data) not in (3, 4):
                raise ShapeError("%s: input 'data' has shape %s but must be (C, H, W) or "
                                 "(N, C, H, W)" % (self.name, fmt_shape(data)))
            channels = data[-3]
            if channels not in (None, 1, 3):
                raise ShapeError("%s: input 'data' %s has %d channels; 1 or 3 are supported"
                                 % (self.name, fmt_shape(data), channels))
            for key in ("mean", "std"):
                values = getattr(self.attrs, key)
                if channels is not None and len(values) not in (1, channels):
                    raise ShapeError("%s: %s=%s must have 1 or %d values for data %s"
                                     % (self.name, key, values, channels, fmt_shape(data)))
        return self.same_shape(in_shapes, out_shapes)

    def _per_channel(self, xp, key: str, channels: int, dtype):
        values = getattr(self.attrs, key)
        values = values * channels if len(values) == 1 else values
        return xp.asarray(values, dtype=dtype).reshape(channels, 1, 1)

    def _work_dtype(self, x):
        return x.dtype if x.dtype.kind == "f" else dtype_of("float64")

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        t, c = self._work_dtype(x), x.shape[-3]
        y = (x.astype(t, copy=False) - self._per_channel(xp, "mean", c, t)) \
            / self._per_channel(xp, "std", c, t)
        cast_into(xp, out[0], y)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is not None:
            g = out_grads[0]
            t = self._work_dtype(g)
            std = self._per_channel(xp, "std", dx.shape[-3], t)
            cast_into(xp, dx, g.astype(t, copy=False) / std)
