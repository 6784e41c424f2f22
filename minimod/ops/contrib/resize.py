"""Spatial resampling of NCHW images: AdaptiveAvgPooling2D and BilinearResize2D.

Both are linear and separable: out = A_h . data . A_w^T for one (out, in) matrix per spatial
axis, applied to every (n, c) plane by a broadcast matmul; the gradient is the transpose,
data_grad = A_h^T . head . A_w. The matrices depend only on the shapes and attrs, and are
small (output size x input size), so building them is cheap next to the products; each output
row of A has at most two non-zeros for bilinear interpolation and one window of 1/k for the
pooling.

Both take floating-point data only (as MXNet does); float16 is computed in float32.
"""
from __future__ import annotations

import dataclasses
import struct
from typing import Literal, Optional

from ...base import DTypeError, OpParamError, ShapeError
from ..registry import Op, fmt_shape, register

__all__ = ["AdaptiveAvgPooling2D", "BilinearResize2D"]


def _check_nchw(op: Op, shape, name: str = "data") -> None:
    if shape is not None and len(shape) != 4:
        raise ShapeError("%s: input '%s' has shape %s but must be 4-D (N, C, H, W)"
                         % (op.name, name, fmt_shape(shape)))


def _float_types(op: Op, in_types, out_types, n_data: int = 1):
    """The first n_data inputs and the output share a floating-point dtype; the others keep
    theirs."""
    head, outs = Op.infer_type(op, list(in_types[:n_data]), list(out_types))
    t = outs[0]
    if t is not None and t.kind != "f":
        raise DTypeError("%s: input 'data' is %s but the operator takes floating point only"
                         % (op.name, t))
    return list(head) + list(in_types[n_data:]), outs


def _work(xp, x):
    """float16 planes are resampled in float32 (half-precision sums lose too much)."""
    return x.astype("float32") if x.dtype.itemsize < 4 else x


def _apply(xp, a_h, plane, a_w):
    """a_h . plane . a_w^T over the last two axes of plane."""
    return xp.matmul(xp.matmul(a_h, plane), a_w.T)


class _Separable(Op):
    """Base: subclasses give `_matrix(xp, n_in, n_out, dtype)`."""

    def _matrix(self, xp, n_in: int, n_out: int, dtype):
        raise NotImplementedError

    def _matrices(self, xp, in_hw, out_hw, dtype):
        return (self._matrix(xp, in_hw[0], out_hw[0], dtype),
                self._matrix(xp, in_hw[1], out_hw[1], dtype))

    def forward(self, xp, inputs, aux, out, is_train):
        x = _work(xp, inputs[0])
        a_h, a_w = self._matrices(xp, x.shape[2:], out[0].shape[2:], x.dtype)
        xp.copyto(out[0], _apply(xp, a_h, x, a_w), casting="same_kind")

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is not None:
            g = _work(xp, out_grads[0])
            a_h, a_w = self._matrices(xp, dx.shape[2:], g.shape[2:], g.dtype)
            xp.copyto(dx, _apply(xp, a_h.T, g, a_w.T), casting="same_kind")
        for other in in_grads[1:]:
            if other is not None:
                other.fill(0)


# ----------------------------------------------------------------------------- adaptive pool

@dataclasses.dataclass(frozen=True)
class AdaptiveAvgPoolingAttrs:
    output_size: tuple[int, ...] = ()


@register
class AdaptiveAvgPooling2D(_Separable):
    """Average pooling of (N, C, H, W) to (N, C, oh, ow) with windows chosen by the sizes:
    output row o averages input rows floor(o H / oh) .. ceil((o + 1) H / oh) - 1 (likewise for
    columns), so windows may overlap or differ in size by one. output_size () is 1 x 1, (k,)
    is k x k, (oh, ow) as given."""

    name = "_contrib_AdaptiveAvgPooling2D"
    Attrs = AdaptiveAvgPoolingAttrs
    backward_inputs = ()
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        size = self.attrs.output_size
        if len(size) > 2 or any(s is None or s < 1 for s in size):
            raise OpParamError("operator %s: output_size must be (), (k,) or (height, width) "
                               "of positive sizes, got %s" % (self.name, size))
        self.out_hw = (1, 1) if not size else (size[0], size[-1])

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        _check_nchw(self, data)
        if data is not None:
            self.set_out(out_shapes, 0, tuple(data[:2]) + self.out_hw)
        elif out_shapes[0] is not None:
            self.set_in(in_shapes, 0, tuple(out_shapes[0][:2]) + (None, None))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        return _float_types(self, in_types, out_types)

    def _matrix(self, xp, n_in, n_out, dtype):
        o = xp.arange(n_out)[:, None]
        start = (o * n_in) // n_out
        end = ((o + 1) * n_in + n_out - 1) // n_out
        i = xp.arange(n_in)[None, :]
        inside = (i >= start) & (i < end)
        return (inside / (end - start)).astype(dtype)


# ----------------------------------------------------------------------------- bilinear

ResizeMode = Literal["size", "odd_scale", "like", "to_even_down", "to_even_up", "to_odd_down",
                     "to_odd_up"]


def _f32(value: float) -> float:
    """value rounded to float32, as MXNet's float parameters and arithmetic hold it."""
    return struct.unpack("f", struct.pack("f", value))[0]


def _scaled(size: int, scale: float) -> int:
    """int(scale * size) in float32 arithmetic, as MXNet sizes its output."""
    return int(_f32(_f32(scale) * size))


@dataclasses.dataclass(frozen=True)
class BilinearResizeAttrs:
    height: int = 1
    width: int = 1
    scale_height: Optional[float] = None
    scale_width: Optional[float] = None
    mode: ResizeMode = "size"
    align_corners: bool = True


@register
class BilinearResize2D(_Separable):
    """Bilinear resampling of (N, C, H, W) to (N, C, oh, ow).

    Output size by mode: "size": (height, width), or (int(scale_height H), int(scale_width W))
    when scale_height is given (scale_width then required); "odd_scale": each side s becomes
    int(s scale) when even, int((s - 1) scale) + 1 when odd; "like": the last two dims of the
    second input `like` (only its shape is read; it gets a zero gradient); "to_even_down",
    "to_even_up", "to_odd_down", "to_odd_up": each side moved by one to the parity asked for.

    Output pixel i samples input coordinate src(i) = r i with r = (in - 1) / (out - 1)
    (align_corners) or max(r (i + 0.5) - 0.5, 0) with r = in / out (otherwise); r = 0 when
    out = 1. It blends pixels floor(src) and the next one (the last pixel alone at the
    border) with weights 1 - frac(src) and frac(src), separately along each axis.
    """

    name = "_contrib_BilinearResize2D"
    Attrs = BilinearResizeAttrs
    SIGNATURE_INPUTS = ("data", "like")
    backward_inputs = ()
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        p = self.attrs
        for key in ("height", "width"):
            if getattr(p, key) < 1:
                raise OpParamError("operator %s: %s must be >= 1, got %d"
                                   % (self.name, key, getattr(p, key)))
        needs_scales = p.mode == "odd_scale" or (p.mode == "size" and p.scale_height is not None)
        if needs_scales and (p.scale_height is None or p.scale_width is None):
            raise OpParamError("operator %s: mode=%s with scales needs both scale_height and "
                               "scale_width" % (self.name, p.mode))

    def arguments(self):
        return ["data", "like"] if self.attrs.mode == "like" else ["data"]

    def _out_hw(self, h: int, w: int, like) -> Optional[tuple]:
        p, mode = self.attrs, self.attrs.mode
        if mode == "like":
            return None if like is None else tuple(like[2:])
        if mode == "size":
            if p.scale_height is None:
                return p.height, p.width
            return _scaled(h, p.scale_height), _scaled(w, p.scale_width)
        if mode == "odd_scale":
            return tuple(_scaled(s, k) if s % 2 == 0 else _scaled(s - 1, k) + 1
                         for s, k in ((h, p.scale_height), (w, p.scale_width)))
        parity = 0 if "even" in mode else 1
        step = -1 if mode.endswith("down") else 1
        return tuple(s if s % 2 == parity else s + step for s in (h, w))

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        like = in_shapes[1] if len(in_shapes) > 1 else None
        _check_nchw(self, data)
        _check_nchw(self, like, "like")
        if data is None:
            return in_shapes, out_shapes
        p = self.attrs
        fixed = p.mode == "like" or (p.mode == "size" and p.scale_height is None)
        out_hw = self._out_hw(data[2], data[3], like) if fixed or None not in data[2:] else None
        self.set_out(out_shapes, 0, tuple(data[:2]) + (out_hw or (None, None)))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        return _float_types(self, in_types, out_types)

    def _matrix(self, xp, n_in, n_out, dtype):
        align = self.attrs.align_corners
        if n_out > 1:
            ratio = (n_in - 1) / (n_out - 1) if align else n_in / n_out
        else:
            ratio = 0.0
        i = xp.arange(n_out, dtype="float64")
        src = ratio * i if align else xp.maximum(ratio * (i + 0.5) - 0.5, 0.0)
        lo = src.astype("int64")
        hi = lo + (lo < n_in - 1)
        frac = src - lo
        rows = xp.arange(n_out)
        a = xp.zeros((n_out, n_in), dtype="float64")
        a[rows, lo] = 1.0 - frac
        a[rows, hi] += frac
        return a.astype(dtype)
