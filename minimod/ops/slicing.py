"""Slicing: operators that cut a part out of an array: slice (crop), slice_axis, slice_like,
Crop (a spatial window of NCHW data) and diag (a diagonal, or a matrix built around one).

The gradient is the head gradient written back into the part that was cut, zeros elsewhere;
none reads an input value in backward (the gradient arrays carry the shapes).
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from ..base import OpParamError, ShapeError
from .helpers import axis_index, like_infer_type
from .registry import Op, VariadicOp, fmt_shape, register

__all__ = ["SliceAxis", "Slice", "Crop", "SliceLike", "Diag"]


@register
class SliceAxis(Op):
    """data[begin:end] along `axis`; negative indices count from the end, end=None is the end.

    The range must be non-empty and inside the axis (MXNet rejects anything else). Backward
    scatters the head gradient into zeros.
    """

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "slice_axis"
    backward_inputs = ()
    backward_outputs = ()

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        axis: int
        begin: int
        end: Optional[int]

    def _bounds(self, dim: int) -> tuple:
        a = self.attrs
        begin = a.begin + dim if a.begin < 0 else a.begin
        end = dim if a.end is None else a.end + dim if a.end < 0 else a.end
        if not 0 <= begin < end <= dim:
            raise ShapeError("input 'data' has %d along axis %d but slice_axis begin=%s, end=%s "
                             "is empty or out of range" % (dim, a.axis, a.begin, a.end))
        return begin, end

    def infer_shape(self, in_shapes, out_shapes):
        data, out = in_shapes[0], out_shapes[0]
        if data is None and out is None:
            return in_shapes, out_shapes
        ndim = len(data) if data is not None else len(out)
        ax = axis_index(self.attrs.axis, ndim)
        if out is not None:
            self.set_in(in_shapes, 0, out[:ax] + (None,) + out[ax + 1:],
                        "output %s" % fmt_shape(out))
        data = in_shapes[0]
        along = None
        if data[ax] is not None:
            begin, end = self._bounds(data[ax])
            along = end - begin
        self.set_out(out_shapes, 0, data[:ax] + (along,) + data[ax + 1:])
        return in_shapes, out_shapes

    def _index(self, shape: tuple) -> tuple:
        ax = axis_index(self.attrs.axis, len(shape))
        begin, end = self._bounds(shape[ax])
        return (slice(None),) * ax + (slice(begin, end),)

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        xp.copyto(out[0], x[self._index(x.shape)])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = in_grads[0]
        if g is not None:
            g.fill(0)
            g[self._index(g.shape)] = out_grads[0]


@register
class Slice(Op):
    """Basic slicing data[b0:e0:s0, b1:e1:s1, ...] over the leading len(begin) axes.

    None entries take Python's defaults (and so does a negative step), out-of-range bounds are
    clipped, as in Python. `begin` and `end` have the same length; `step` is empty or as long.
    """

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "slice"
    aliases = ("crop",)
    backward_inputs = ()
    backward_outputs = ()

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        begin: tuple[Optional[int], ...]
        end: tuple[Optional[int], ...]
        step: tuple[Optional[int], ...] = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        if len(a.begin) != len(a.end):
            raise OpParamError("operator slice: begin=%s and end=%s differ in length"
                               % (a.begin, a.end))
        if a.step and len(a.step) != len(a.begin):
            raise OpParamError("operator slice: step=%s must be empty or as long as begin=%s"
                               % (a.step, a.begin))
        steps = a.step or (None,) * len(a.begin)
        if 0 in steps:
            raise OpParamError("operator slice: step=%s has a zero step" % (a.step,))
        self._index = tuple(slice(b, e, s) for b, e, s in zip(a.begin, a.end, steps))

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        if len(data) < len(self._index):
            raise ShapeError("input 'data' has shape %s, fewer axes than begin=%s"
                             % (fmt_shape(data), self.attrs.begin))
        head = tuple(None if d is None else len(range(*s.indices(d)))
                     for s, d in zip(self._index, data))
        n = len(self._index)
        self.set_out(out_shapes, 0, head + tuple(data[n:]))
        out = out_shapes[0]
        self.set_in(in_shapes, 0, tuple(data[:n]) + tuple(out[n:]), "output %s" % fmt_shape(out))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0][self._index])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = in_grads[0]
        if g is not None:
            g.fill(0)
            g[self._index] = out_grads[0]


@dataclasses.dataclass(frozen=True)
class CropAttrs:
    num_args: int
    offset: tuple[int, ...] = (0, 0)
    h_w: tuple[int, ...] = (0, 0)
    center_crop: bool = False


@register
class Crop(VariadicOp):
    """Cut an (h, w) window out of NCHW `arg0`: the size of `arg1`'s last two dims when
    num_args=2, else `h_w`; at `offset` (y, x) or, with center_crop, centred (rounding the
    offsets down). The gradient of arg0 is the head gradient in the window and 0 outside;
    arg1 only gives its shape and gets a zero gradient (FCN's skip connections)."""

    name = "Crop"
    Attrs = CropAttrs
    backward_inputs = ()
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        if a.num_args not in (1, 2) or len(a.offset) != 2 or len(a.h_w) != 2:
            raise OpParamError("operator Crop: num_args must be 1 or 2 and offset, h_w pairs, "
                               "got num_args=%d offset=%s h_w=%s" % (a.num_args, a.offset, a.h_w))

    def _window(self, data, like) -> Optional[tuple]:
        """(y0, x0, h, w), or None while a needed dim is unknown."""
        a = self.attrs
        h, w = (like[2], like[3]) if a.num_args == 2 else a.h_w
        if None in (h, w, data[2], data[3]):
            return None
        if a.center_crop:
            y0, x0 = (data[2] - h) // 2, (data[3] - w) // 2
        else:
            y0, x0 = a.offset
        if h < 1 or w < 1 or y0 < 0 or x0 < 0 or y0 + h > data[2] or x0 + w > data[3]:
            raise ShapeError("input 'arg0' has shape %s, too small for a %dx%d crop at offset "
                             "(%d, %d)" % (fmt_shape(data), h, w, y0, x0))
        return y0, x0, h, w

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        like = in_shapes[1] if self.attrs.num_args == 2 else None
        if data is None or (self.attrs.num_args == 2 and like is None):
            return in_shapes, out_shapes
        for slot, shape in (("arg0", data), ("arg1", like)):
            if shape is not None and len(shape) != 4:
                raise ShapeError("input '%s' has shape %s but Crop needs NCHW" % (slot,
                                                                                 fmt_shape(shape)))
        window = self._window(data, like)
        if window is not None:
            self.set_out(out_shapes, 0, (data[0], data[1], window[2], window[3]))
        return in_shapes, out_shapes

    def _index(self, data_shape, out_shape) -> tuple:
        y0, x0, h, w = self._window(data_shape, out_shape)
        return (slice(None), slice(None), slice(y0, y0 + h), slice(x0, x0 + w))

    def forward(self, xp, inputs, aux, out, is_train):
        out[0][...] = inputs[0][self._index(inputs[0].shape, out[0].shape)]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx, g = in_grads[0], out_grads[0]
        if dx is not None:
            dx.fill(0)
            dx[self._index(dx.shape, g.shape)] = g
        for extra in in_grads[1:]:
            if extra is not None:
                extra.fill(0)


@dataclasses.dataclass(frozen=True)
class SliceLikeAttrs:
    axes: tuple[int, ...] = ()


@register
class SliceLike(Op):
    """data[:n0, :n1, ...] cut to shape_like's size along `axes` (every axis when empty; the
    two inputs then have one rank). Gradient: the head's in the slice, 0 elsewhere; shape_like
    gets 0. shape_like may have any dtype (out has data's)."""

    name = "slice_like"
    Attrs = SliceLikeAttrs
    ARGUMENTS = ("data", "shape_like")
    backward_inputs = ()
    backward_outputs = ()

    def infer_type(self, in_types, out_types):
        return like_infer_type(self, in_types, out_types)

    def _axes(self, data, like) -> tuple:
        if not self.attrs.axes:
            if len(data) != len(like):
                raise ShapeError("inputs 'data' %s and 'shape_like' %s differ in rank; give "
                                 "slice_like the axes to cut" % (fmt_shape(data),
                                                                 fmt_shape(like)))
            return tuple(range(len(data)))
        axes = []
        for axis in self.attrs.axes:
            a = axis + len(data) if axis < 0 else axis
            if not (0 <= a < len(data) and a < len(like)):
                raise ShapeError("slice_like axis %d is out of range for data %s and "
                                 "shape_like %s" % (axis, fmt_shape(data), fmt_shape(like)))
            axes.append(a)
        return tuple(axes)

    def infer_shape(self, in_shapes, out_shapes):
        data, like = in_shapes
        if data is None or like is None:
            return in_shapes, out_shapes
        shape = list(data)
        for a in self._axes(data, like):
            if like[a] is not None and data[a] is not None and like[a] > data[a]:
                raise ShapeError("input 'shape_like' %s is larger than 'data' %s on axis %d"
                                 % (fmt_shape(like), fmt_shape(data), a))
            shape[a] = like[a]
        self.set_out(out_shapes, 0, tuple(shape))
        return in_shapes, out_shapes

    @staticmethod
    def _index(out_shape) -> tuple:
        return tuple(slice(0, n) for n in out_shape)

    def forward(self, xp, inputs, aux, out, is_train):
        out[0][...] = inputs[0][self._index(out[0].shape)]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx, g = in_grads[0], out_grads[0]
        if dx is not None:
            dx.fill(0)
            dx[self._index(g.shape)] = g
        if in_grads[1] is not None:
            in_grads[1].fill(0)


@dataclasses.dataclass(frozen=True)
class DiagAttrs:
    k: int = 0
    axis1: int = 0
    axis2: int = 1


@register
class Diag(Op):
    """1-D data: the square matrix with data on its k-th diagonal (k > 0 above the main one).
    N-D data: the k-th diagonal of the (axis1, axis2) planes, as a new last axis (NumPy's
    diagonal). The gradient moves the values back."""

    name = "diag"
    Attrs = DiagAttrs
    backward_inputs = ()
    backward_outputs = ()

    def _axes(self, ndim: int) -> tuple:
        a1, a2 = (a + ndim if a < 0 else a for a in (self.attrs.axis1, self.attrs.axis2))
        if not (0 <= a1 < ndim and 0 <= a2 < ndim) or a1 == a2:
            raise ShapeError("diag axis1=%d, axis2=%d do not name two axes of a %d-D input"
                             % (self.attrs.axis1, self.attrs.axis2, ndim))
        return a1, a2

    def infer_shape(self, in_shapes, out_shapes):
        data, k = in_shapes[0], self.attrs.k
        if data is None or None in data:
            return in_shapes, out_shapes
        if len(data) == 1:
            side = data[0] + abs(k)
            self.set_out(out_shapes, 0, (side, side))
            return in_shapes, out_shapes
        a1, a2 = self._axes(len(data))
        length = min(data[a1] + min(k, 0), data[a2] - max(k, 0))
        if length < 0:  # MXNet refuses a diagonal that starts past the matrix (0 is empty)
            raise ShapeError("diag: k=%d names no diagonal of the %dx%d planes of input 'data' "
                             "%s" % (k, data[a1], data[a2], fmt_shape(data)))
        rest = tuple(d for i, d in enumerate(data) if i not in (a1, a2))
        self.set_out(out_shapes, 0, rest + (length,))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        x, y = inputs[0], out[0]
        if x.ndim == 1:
            y.fill(0)
            _set_diagonal(xp, y, self.attrs.k, x)
        else:
            y[...] = xp.diagonal(x, self.attrs.k, *self._axes(x.ndim))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx, g = in_grads[0], out_grads[0]
        if dx is None:
            return
        if dx.ndim == 1:
            dx[...] = xp.diagonal(g, self.attrs.k)
        else:
            dx.fill(0)
            _set_diagonal(xp, dx, self.attrs.k, g, *self._axes(dx.ndim))


def _set_diagonal(xp, arr, k: int, value, axis1: int = 0, axis2: int = 1) -> None:
    """arr's k-th diagonal in the (axis1, axis2) planes = value (laid out as NumPy's diagonal
    gives it, positions along the last axis); one indexed write."""
    moved = xp.moveaxis(arr, (axis1, axis2), (-2, -1))  # a view
    rows, cols = moved.shape[-2:]
    i = xp.arange(max(0, min(rows + min(k, 0), cols - max(k, 0))))
    moved[..., i - min(k, 0), i + max(k, 0)] = value
