"""Operators that move values to new positions without arithmetic: transpose, SwapAxis,
reverse (flip), depth_to_space and space_to_depth. Each is a permutation, so its gradient is
the inverse permutation of the head gradient; none reads an input value in backward.
"""
from __future__ import annotations

import dataclasses

from ..base import OpParamError, ShapeError
from .helpers import axis_index
from .registry import Op, fmt_shape, register

__all__ = ["Transpose", "SwapAxis", "Reverse", "DepthToSpace", "SpaceToDepth"]


# ----------------------------------------------------------------------------- axes

@register
class Transpose(Op):
    """Permute axes: out.shape[i] = data.shape[axes[i]]; empty `axes` reverses them all.

    Backward applies the inverse permutation to the head gradient.
    """

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "transpose"
    backward_inputs = ()
    backward_outputs = ()

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        axes: tuple[int, ...] = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        axes = self.attrs.axes
        ndim = len(axes)
        perm = tuple(a + ndim if a is not None and a < 0 else a for a in axes)
        if sorted(perm, key=lambda a: -1 if a is None else a) != list(range(ndim)):
            raise OpParamError("operator transpose: axes=%s is not a permutation" % (axes,))
        self.perm = perm
        inverse = [0] * ndim
        for i, p in enumerate(perm):
            inverse[p] = i
        self.inverse = tuple(inverse)

    def infer_shape(self, in_shapes, out_shapes):
        data, out = in_shapes[0], out_shapes[0]
        ndim = len(data) if data is not None else len(out) if out is not None else None
        if ndim is None:
            return in_shapes, out_shapes
        perm = self.perm or tuple(range(ndim - 1, -1, -1))
        if len(perm) != ndim:
            raise ShapeError("input 'data' has rank %d but axes=%s has %d entries"
                             % (ndim, self.attrs.axes, len(perm)))
        if data is not None:
            self.set_out(out_shapes, 0, tuple(data[p] for p in perm))
        out = out_shapes[0]
        back = [None] * ndim
        for i, p in enumerate(perm):
            back[p] = out[i]
        self.set_in(in_shapes, 0, tuple(back), "output %s" % fmt_shape(out))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        xp.copyto(out[0], x.transpose(self.perm) if self.perm else x.T)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = in_grads[0]
        if g is not None:
            og = out_grads[0]
            xp.copyto(g, og.transpose(self.inverse) if self.perm else og.T)


@register
class SwapAxis(Op):
    """Exchange two axes (negative axes count from the end); backward swaps them back."""

    name = "SwapAxis"
    aliases = ("swapaxes",)
    backward_inputs = ()
    backward_outputs = ()

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        dim1: int = 0
        dim2: int = 0

    def infer_shape(self, in_shapes, out_shapes):
        for src, dst, setter in ((in_shapes, out_shapes, self.set_out),
                                 (out_shapes, in_shapes, self.set_in)):
            shape = src[0]
            if shape is not None:
                d1 = axis_index(self.attrs.dim1, len(shape), "dim1")
                d2 = axis_index(self.attrs.dim2, len(shape), "dim2")
                swapped = list(shape)
                swapped[d1], swapped[d2] = swapped[d2], swapped[d1]
                setter(dst, 0, tuple(swapped))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0].swapaxes(self.attrs.dim1, self.attrs.dim2))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            xp.copyto(in_grads[0], out_grads[0].swapaxes(self.attrs.dim1, self.attrs.dim2))


@dataclasses.dataclass(frozen=True)
class ReverseAttrs:
    axis: tuple[int, ...]


@register
class Reverse(Op):
    """Reverse the order of elements along `axis` (one or more axes); same shape out.
    Backward reverses the head gradient the same way."""

    name = "reverse"
    aliases = ("flip",)
    Attrs = ReverseAttrs
    backward_inputs = ()
    backward_outputs = ()

    def _index(self, ndim: int) -> tuple:
        index = [slice(None)] * ndim
        for ax in self.attrs.axis:
            if not -ndim <= ax < ndim:
                raise ShapeError("axis=%d is out of range for an input of rank %d" % (ax, ndim))
            index[ax] = slice(None, None, -1)
        return tuple(index)

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0][self._index(inputs[0].ndim)])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            xp.copyto(in_grads[0], out_grads[0][self._index(out_grads[0].ndim)])


# ----------------------------------------------------------------------------- depth <-> space

@dataclasses.dataclass(frozen=True)
class BlockSizeAttrs:
    block_size: int


class _BlockMove(Op):
    """Base of depth_to_space / space_to_depth: NCHW values moved between the channels and
    b x b spatial blocks, a pure permutation (its gradient is the inverse permutation)."""

    backward_inputs = ()
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.block_size < 1:
            raise OpParamError("operator %s: block_size must be >= 1, got %d"
                               % (self.name, self.attrs.block_size))

    def _check(self, data) -> None:
        raise NotImplementedError

    def _out_shape(self, data) -> tuple:
        raise NotImplementedError

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is not None and None not in data:
            if len(data) != 4 or 0 in data:
                raise ShapeError("input 'data' has shape %s but %s needs NCHW data without "
                                 "empty dims" % (fmt_shape(data), self.name))
            self._check(data)
            self.set_out(out_shapes, 0, self._out_shape(data))
        return in_shapes, out_shapes

    @staticmethod
    def _to_space(xp, x, y, b):
        """y (N, C/b^2, H b, W b) from x (N, C, H, W), channel blocks outermost."""
        n, c, h, w = x.shape
        y.reshape(n, c // (b * b), h, b, w, b)[...] = x.reshape(
            n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)

    @staticmethod
    def _to_depth(xp, y, x, b):
        """x (N, C, H, W) from y (N, C/b^2, H b, W b): the inverse of _to_space."""
        n, c, h, w = x.shape
        x.reshape(n, b, b, c // (b * b), h, w)[...] = y.reshape(
            n, c // (b * b), h, b, w, b).transpose(0, 3, 5, 1, 2, 4)


@register
class DepthToSpace(_BlockMove):
    """(N, C, H, W) -> (N, C / b^2, H b, W b): each b x b output block takes b^2 channels."""

    name = "depth_to_space"
    Attrs = BlockSizeAttrs

    def _check(self, data):
        b = self.attrs.block_size
        if data[1] % (b * b):
            raise ShapeError("input 'data' has %d channels, not a multiple of block_size^2=%d"
                             % (data[1], b * b))

    def _out_shape(self, data):
        b = self.attrs.block_size
        return (data[0], data[1] // (b * b), data[2] * b, data[3] * b)

    def forward(self, xp, inputs, aux, out, is_train):
        self._to_space(xp, inputs[0], out[0], self.attrs.block_size)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            self._to_depth(xp, out_grads[0], in_grads[0], self.attrs.block_size)


@register
class SpaceToDepth(_BlockMove):
    """(N, C, H, W) -> (N, C b^2, H / b, W / b): the inverse of depth_to_space."""

    name = "space_to_depth"
    Attrs = BlockSizeAttrs

    def _check(self, data):
        b = self.attrs.block_size
        if data[2] % b or data[3] % b:
            raise ShapeError("input 'data' has spatial size %dx%d, not a multiple of "
                             "block_size=%d" % (data[2], data[3], b))

    def _out_shape(self, data):
        b = self.attrs.block_size
        return (data[0], data[1] * b * b, data[2] // b, data[3] // b)

    def forward(self, xp, inputs, aux, out, is_train):
        self._to_depth(xp, inputs[0], out[0], self.attrs.block_size)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            self._to_space(xp, out_grads[0], in_grads[0], self.attrs.block_size)
