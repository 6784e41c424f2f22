"""Shape operators: reshaping, axis permutation, joining, splitting, slicing, tiling, padding and
the time-major sequence operators.

Most of these move values without arithmetic, so their backward needs only the head gradient and
the input's shape, which the gradient array itself carries (`in_grads[i].shape`): they declare
`backward_inputs = ()` and `backward_outputs = ()` so that the memory planner may free their
inputs right after the forward step.

Shapes follow the registry contract: a tuple whose dims may be None (unknown), or None when even
the rank is unknown. Inference runs both ways wherever the math allows it (an output shape plus
an input with a single unknown dim gives that dim), which the legacy MXNet frontends rely on
(batch size 0 = unknown in `mx.rnn` begin states).
"""
from __future__ import annotations

import dataclasses
from typing import Literal, Optional

from ..base import OpParamError, ShapeError
from .elemwise import like_infer_type
from .layout import BatchLastMixin
from .registry import Op, Shape, VariadicOp, fmt_shape, merge_shape, register, shape_is_known

__all__ = [
    "Flatten", "Reshape", "Transpose", "ExpandDims", "Squeeze", "SwapAxis", "Concat",
    "SliceChannel", "SliceAxis", "Slice", "Stack", "Tile", "Repeat", "ReshapeLike", "Pad",
    "SequenceMask", "SequenceLast", "SequenceReverse", "infer_reshape", "SplitV2",
]


# ----------------------------------------------------------------------------- helpers

def _prod(dims) -> Optional[int]:
    """Product of dims, None when any is unknown."""
    p = 1
    for d in dims:
        if d is None:
            return None
        p *= d
    return p


def _axis(axis: int, ndim: int, what: str = "axis", extra: int = 0) -> int:
    """Normalise a possibly negative axis into [0, ndim + extra)."""
    bound = ndim + extra
    if not -bound <= axis < bound:
        raise ShapeError("%s=%d is out of range for an input of rank %d" % (what, axis, ndim))
    return axis + bound if axis < 0 else axis


def _fill_one_unknown(shape: tuple, size: int) -> Optional[tuple]:
    """If `shape` has exactly one unknown dim, fill it so that the total size is `size`."""
    unknown = [i for i, d in enumerate(shape) if d is None]
    if len(unknown) != 1:
        return None
    known = _prod(d for d in shape if d is not None)
    if known == 0 or size % known:
        return None
    filled = list(shape)
    filled[unknown[0]] = size // known
    return tuple(filled)


def _reverse_fill_input(op: Op, in_shapes: list, out_shape: Shape) -> None:
    """Size-preserving ops: a known output fills the one unknown dim of the input."""
    if in_shapes[0] is None or not shape_is_known(out_shape):
        return
    filled = _fill_one_unknown(in_shapes[0], _prod(out_shape))
    if filled is not None:
        op.set_in(in_shapes, 0, filled, "output %s" % fmt_shape(out_shape))


def _check_size(op: Op, in_shape: Shape, out_shape: Shape) -> None:
    if shape_is_known(in_shape) and shape_is_known(out_shape) \
            and _prod(in_shape) != _prod(out_shape):
        raise ShapeError("input '%s' has shape %s (size %d) but the output %s has size %d"
                         % (op.arguments()[0], fmt_shape(in_shape), _prod(in_shape),
                            fmt_shape(out_shape), _prod(out_shape)))


# ----------------------------------------------------------------------------- Flatten

class _Relabel(Op):
    """Base of ops that only give data another shape (Flatten, Reshape, expand_dims ...).

    Forward copies the input into the output under the output's shape (the planner may let the
    output share the input's storage; the copy is then onto itself); backward reshapes the head
    gradient back. Neither reads any input or output value.
    """

    inplace = ((0, 0),)
    backward_inputs = ()
    backward_outputs = ()

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0].reshape(out[0].shape))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            xp.copyto(in_grads[0], out_grads[0].reshape(in_grads[0].shape))


@register
class Flatten(BatchLastMixin, _Relabel):
    """Collapse every axis after the first: (d0, d1, ..., dk) -> (d0, d1*...*dk).

    A 1-D input (n,) gives (n, 1). Backward reshapes the head gradient to the input shape.
    Stored batch-last (`BatchLastMixin`; the layout pass sets data and output alike), data
    (d1, ..., dk, d0) becomes (d1*...*dk, d0) by the same reshape.
    """

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "Flatten"
    aliases = ("flatten",)

    def infer_batch_first(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is not None:
            if len(data) == 0:
                raise ShapeError("input 'data' is a scalar (); Flatten needs rank >= 1")
            self.set_out(out_shapes, 0, (data[0], _prod(data[1:])))
        out = out_shapes[0]
        if out is not None:
            if len(out) != 2:
                raise ShapeError("output 'output' has shape %s but Flatten gives rank 2"
                                 % fmt_shape(out))
            if data is not None:
                self.set_in(in_shapes, 0, (out[0],) + tuple(data[1:]), "output %s"
                            % fmt_shape(out))
                rest = _fill_one_unknown(in_shapes[0][1:], out[1]) if out[1] is not None \
                    else None
                if rest is not None:
                    self.set_in(in_shapes, 0, (in_shapes[0][0],) + rest)
        return in_shapes, out_shapes


# ----------------------------------------------------------------------------- Reshape

def infer_reshape(codes: tuple, dshape: tuple, reverse: bool = False) -> tuple:
    """The output shape MXNet's Reshape gives for `codes` applied to `dshape`.

    Codes: d > 0 is a new dim; 0 copies the input dim; -1 is inferred from the total size (one
    at most); -2 copies every remaining input dim; -3 merges the next two input dims; -4 splits
    the next input dim into the two codes that follow (either may be -1). Every code except -2
    and -4's two operands consumes one input dim, as in MXNet (so `(6, 0)` on (2, 3, 4) copies
    the 3). With `reverse`, both lists are read right to left.

    Unknown input dims (None) propagate; -1 is still inferred when every unknown input dim is
    copied unchanged to the output (batch size unknown, `(0, -1)`). Raises ShapeError.
    """
    codes = list(codes)
    src = list(dshape)
    if reverse:
        codes.reverse()
        src.reverse()
    out: list = []
    copied_unknown = 0
    infer_at = -1
    i = 0
    k = 0
    n_src = len(src)
    n_codes = len(codes)
    while i < n_codes:
        code = codes[i]
        if code == 0:
            if k >= n_src:
                raise ShapeError("code 0 at position %d copies an input dim, but the input %s "
                                 "has only %d dims" % (i, fmt_shape(dshape), n_src))
            out.append(src[k])
            copied_unknown += src[k] is None
            k += 1
        elif code == -1:
            if infer_at >= 0:
                raise ShapeError("shape %s: only one dim can be inferred (-1)" % (tuple(codes),))
            infer_at = len(out)
            out.append(1)
            k += 1
        elif code == -2:
            while k < n_src:
                out.append(src[k])
                copied_unknown += src[k] is None
                k += 1
        elif code == -3:
            if k + 1 >= n_src:
                raise ShapeError("code -3 at position %d merges two input dims, but the input "
                                 "%s has no dims %d and %d" % (i, fmt_shape(dshape), k, k + 1))
            a, b = src[k], src[k + 1]
            out.append(None if a is None or b is None else a * b)
            k += 2
        elif code == -4:
            if i + 2 >= n_codes:
                raise ShapeError("code -4 at position %d needs two codes after it in %s"
                                 % (i, tuple(codes)))
            if k >= n_src:
                raise ShapeError("code -4 at position %d splits an input dim, but the input %s "
                                 "has only %d dims" % (i, fmt_shape(dshape), n_src))
            d0 = src[k]
            k += 1
            d1, d2 = codes[i + 1], codes[i + 2]
            i += 2
            if d1 == -1 and d2 == -1:
                raise ShapeError("code -4: the two split dims cannot both be -1")
            if d1 < -1 or d2 < -1 or d1 == 0 or d2 == 0:
                raise ShapeError("code -4: split dims must be positive or -1, got %d, %d"
                                 % (d1, d2))
            if d0 is not None:
                if d1 == -1:
                    d1 = d0 // d2
                if d2 == -1:
                    d2 = d0 // d1
                if d1 * d2 != d0:
                    raise ShapeError("code -4: split dims %d, %d do not multiply to the input "
                                     "dim %d" % (d1, d2, d0))
            out.append(None if d1 == -1 else d1)
            out.append(None if d2 == -1 else d2)
        elif code > 0:
            out.append(code)
            k += 1
        else:
            raise ShapeError("shape %s: unknown code %d" % (tuple(codes), code))
        i += 1
    if infer_at >= 0:
        out[infer_at] = None
        n_unknown_in = sum(d is None for d in src)
        if n_unknown_in == copied_unknown and sum(d is None for d in out) == 1 + copied_unknown:
            total = _prod(d for d in src if d is not None)
            rest = _prod(d for j, d in enumerate(out) if d is not None and j != infer_at)
            if rest == 0 or total % rest:
                raise ShapeError("cannot infer the -1 dim: input %s has size %d, not a multiple "
                                 "of %d" % (fmt_shape(dshape), total, rest))
            out[infer_at] = total // rest
    if reverse:
        out.reverse()
    return tuple(out)


@register
class Reshape(_Relabel):
    """Reshape without moving data; the output has the input's size.

    `shape` uses MXNet's special codes (see `infer_reshape`); the deprecated `target_shape`
    (0 = infer, `keep_highest` keeps dim 0) is honoured when `shape` is empty. With neither, the
    output shape must come from elsewhere (backward inference). A known output and an input with
    one unknown dim give that dim.
    """

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "Reshape"
    aliases = ("reshape",)

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        shape: tuple[int, ...] = ()
        reverse: bool = False
        target_shape: tuple[int, ...] = ()
        keep_highest: bool = False

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        codes = a.shape
        if not codes and a.target_shape:
            legacy = [-1 if d == 0 else d for d in a.target_shape]
            if a.keep_highest:
                legacy[0] = 0
            codes = tuple(legacy)
        for c in codes:
            if c is None or c < -4:
                raise OpParamError("operator Reshape: shape=%s has an invalid code %r"
                                   % (a.shape, c))
        self.codes = tuple(codes)
        self.reverse = a.reverse
        # all positive codes: the output is known even when the input is not
        self.fixed = self.codes if self.codes and all(c > 0 for c in self.codes) else None

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if self.codes:
            if data is not None:
                oshape = infer_reshape(self.codes, data, self.reverse)
                _check_size(self, data, oshape)
                self.set_out(out_shapes, 0, oshape)
            elif self.fixed is not None:
                self.set_out(out_shapes, 0, self.fixed)
        _reverse_fill_input(self, in_shapes, out_shapes[0])
        _check_size(self, in_shapes[0], out_shapes[0])
        return in_shapes, out_shapes


@register
class ReshapeLike(_Relabel):
    """Reshape `lhs` to (part of) the shape of `rhs`.

    out.shape = lhs.shape[:lhs_begin] + rhs.shape[rhs_begin:rhs_end] + lhs.shape[lhs_end:]
    (None bounds mean the whole range; negative bounds count from the end). Sizes must match.
    `rhs` only lends its shape: its gradient is zero and its dtype is free (out has lhs's).
    """

    name = "reshape_like"
    ARGUMENTS = ("lhs", "rhs")

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        lhs_begin: Optional[int] = None
        lhs_end: Optional[int] = None
        rhs_begin: Optional[int] = None
        rhs_end: Optional[int] = None

    @staticmethod
    def _range(begin, end, ndim, side):
        b = 0 if begin is None else begin + ndim if begin < 0 else begin
        e = ndim if end is None else end + ndim if end < 0 else end
        if not 0 <= b <= e <= ndim:
            raise ShapeError("reshape_like: %s_begin/%s_end = %s/%s are out of range for rank %d"
                             % (side, side, begin, end, ndim))
        return b, e

    def infer_type(self, in_types, out_types):
        return like_infer_type(self, in_types, out_types)

    def infer_shape(self, in_shapes, out_shapes):
        lhs, rhs = in_shapes
        a = self.attrs
        if lhs is not None and rhs is not None:
            lb, le = self._range(a.lhs_begin, a.lhs_end, len(lhs), "lhs")
            rb, re_ = self._range(a.rhs_begin, a.rhs_end, len(rhs), "rhs")
            oshape = tuple(lhs[:lb]) + tuple(rhs[rb:re_]) + tuple(lhs[le:])
            _check_size(self, lhs, oshape)
            self.set_out(out_shapes, 0, oshape)
        _reverse_fill_input(self, in_shapes, out_shapes[0])
        return in_shapes, out_shapes

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        super().backward(xp, out_grads, inputs, outputs, in_grads, aux)
        if in_grads[1] is not None:
            in_grads[1].fill(0)


# ----------------------------------------------------------------------------- axis permutations

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
                d1 = _axis(self.attrs.dim1, len(shape), "dim1")
                d2 = _axis(self.attrs.dim2, len(shape), "dim2")
                swapped = list(shape)
                swapped[d1], swapped[d2] = swapped[d2], swapped[d1]
                setter(dst, 0, tuple(swapped))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], inputs[0].swapaxes(self.attrs.dim1, self.attrs.dim2))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            xp.copyto(in_grads[0], out_grads[0].swapaxes(self.attrs.dim1, self.attrs.dim2))


@register
class ExpandDims(_Relabel):
    """Insert a size-1 axis at position `axis` (in [-ndim-1, ndim])."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "expand_dims"

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        axis: int

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is not None:
            ax = _axis(self.attrs.axis, len(data), extra=1)
            self.set_out(out_shapes, 0, tuple(data[:ax]) + (1,) + tuple(data[ax:]))
        out = out_shapes[0]
        if out is not None:
            if len(out) == 0:
                raise ShapeError("output 'output' has shape () but expand_dims gives rank >= 1")
            ax = _axis(self.attrs.axis, len(out) - 1, extra=1)
            self.set_out(out_shapes, 0, tuple(out[:ax]) + (1,) + tuple(out[ax + 1:]))
            self.set_in(in_shapes, 0, tuple(out[:ax]) + tuple(out[ax + 1:]),
                        "output %s" % fmt_shape(out))
        return in_shapes, out_shapes


@register
class Squeeze(_Relabel):
    """Remove size-1 axes: all of them (axis=None) or the listed ones, which must have size 1.

    Removing every axis gives shape (1,), as in MXNet.
    """

    name = "squeeze"

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        axis: Optional[tuple[int, ...]] = None

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        axis = self.attrs.axis
        if axis is None:
            if any(d is None for d in data):
                return in_shapes, out_shapes
            drop = {i for i, d in enumerate(data) if d == 1}
        else:
            drop = {_axis(a, len(data)) for a in axis}
            if len(drop) != len(axis):
                raise ShapeError("squeeze: axis=%s names an axis twice" % (axis,))
            for i in drop:
                if data[i] not in (None, 1):
                    raise ShapeError("input 'data' has shape %s but squeeze axis %d needs "
                                     "size 1" % (fmt_shape(data), i))
            self.set_in(in_shapes, 0, tuple(1 if i in drop else d for i, d in enumerate(data)))
            data = in_shapes[0]
        kept = tuple(d for i, d in enumerate(data) if i not in drop)
        self.set_out(out_shapes, 0, kept or (1,))
        return in_shapes, out_shapes


# ----------------------------------------------------------------------------- join and split

@register
class Concat(VariadicOp):
    """Join `num_args` arrays along `dim`; every other dim must agree.

    Inference fills the non-concat dims of any input from its siblings and the output, and the
    concat dim of a single unknown input from the output. Backward hands each input its slice
    of the head gradient; offsets come from the gradient arrays' shapes (see `backward`).
    """

    name = "Concat"
    aliases = ("concat",)
    backward_inputs = ()
    grads_all_inputs = True  # a gradient slot is placed by the widths of all slots
    backward_outputs = ()

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        num_args: int
        dim: int = 1

    def infer_shape(self, in_shapes, out_shapes):
        slots = [(in_shapes[i], "input '%s'" % name) for i, name in enumerate(self._args)]
        slots.append((out_shapes[0], "output 'output'"))
        ndim = next((len(s) for s, _ in slots if s is not None), None)
        if ndim is None:
            return in_shapes, out_shapes
        dim = _axis(self.attrs.dim, ndim, "dim")
        # every slot shares the dims other than `dim`
        common: tuple = (None,) * ndim
        source = ""
        for shape, what in slots:
            if shape is None:
                continue
            masked = tuple(None if j == dim else d for j, d in enumerate(shape))
            try:
                common = merge_shape(common, masked)
            except ValueError:
                raise ShapeError("%s has shape %s but %s has %s (Concat on dim %d)"
                                 % (what, fmt_shape(shape), source, fmt_shape(common),
                                    dim)) from None
            source = source or what
        for i, shape in enumerate(in_shapes):
            along = None if shape is None else shape[dim]
            self.set_in(in_shapes, i, common[:dim] + (along,) + common[dim + 1:])
        sizes = [s[dim] for s in in_shapes]
        total = None if None in sizes else sum(sizes)
        self.set_out(out_shapes, 0, common[:dim] + (total,) + common[dim + 1:],
                     "inputs %s on dim %d" % (", ".join(fmt_shape(s) for s in in_shapes), dim))
        out_along = out_shapes[0][dim]
        missing = [i for i, d in enumerate(sizes) if d is None]
        if out_along is not None and len(missing) == 1:
            rest = sum(d for d in sizes if d is not None)
            i = missing[0]
            if rest >= out_along:
                raise ShapeError("input '%s' would have size %d along dim %d: the output has %d "
                                 "and the other inputs %d" % (self._args[i], out_along - rest,
                                                              dim, out_along, rest))
            self.set_in(in_shapes, i, common[:dim] + (out_along - rest,) + common[dim + 1:])
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        xp.concatenate(inputs, axis=self.attrs.dim, out=out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        og = out_grads[0]
        dim = _axis(self.attrs.dim, og.ndim, "dim")
        lead = (slice(None),) * dim
        sizes = [None if g is None else g.shape[dim] for g in in_grads]
        if None not in sizes:
            start = 0
            for g, n in zip(in_grads, sizes):
                xp.copyto(g, og[lead + (slice(start, start + n),)])
                start += n
            return
        for i, g in enumerate(in_grads):
            if g is not None:
                start = self._offset(sizes, i, og.shape[dim])
                xp.copyto(g, og[lead + (slice(start, start + sizes[i]),)])

    def _offset(self, sizes: list, i: int, total: int) -> int:
        """Offset of needed slice i when some gradients are skipped (None).

        Backward reads no input, so a skipped input's size is only known from the others: the
        offset is found from the left when every earlier size is known, from the right when
        every later one is, or from the total when a single size is unknown.
        """
        before, after = sizes[:i], sizes[i + 1:]
        if None not in before:
            return sum(before)
        if None not in after:
            return total - sum(after) - sizes[i]
        raise ShapeError("Concat backward: the gradient of input '%s' cannot be located, the "
                         "inputs on both sides of it need no gradient (%s); this op reads no "
                         "input shapes in backward" % (self._args[i], [
                             a for a, n in zip(self._args, sizes) if n is None]))


@register
class Stack(VariadicOp):
    """Join `num_args` arrays of one shape along a new axis `axis` (in [-ndim-1, ndim])."""

    name = "stack"
    backward_inputs = ()
    backward_outputs = ()

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        num_args: int
        axis: int = 0

    def infer_shape(self, in_shapes, out_shapes):
        out = out_shapes[0]
        if out is not None:
            ax = _axis(self.attrs.axis, len(out) - 1, extra=1)
            self.set_out(out_shapes, 0, out[:ax] + (self.attrs.num_args,) + out[ax + 1:])
            for i in range(len(in_shapes)):
                self.set_in(in_shapes, i, out[:ax] + out[ax + 1:], "output %s" % fmt_shape(out))
        self.same_shape(in_shapes, out_shapes, out_idx=())
        data = in_shapes[0]
        if data is not None:
            ax = _axis(self.attrs.axis, len(data), extra=1)
            self.set_out(out_shapes, 0, data[:ax] + (self.attrs.num_args,) + data[ax:])
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        xp.stack(inputs, axis=self.attrs.axis, out=out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        og = out_grads[0]
        ax = _axis(self.attrs.axis, og.ndim)
        lead = (slice(None),) * ax
        for i, g in enumerate(in_grads):
            if g is not None:
                xp.copyto(g, og[lead + (i,)])


@register
class SliceChannel(Op):
    """Split along `axis` into `num_outputs` equal parts (outputs output0, output1, ...).

    With `squeeze_axis` the split axis must have size `num_outputs` and is dropped from each
    output. A missing head gradient counts as zero.
    """

    name = "SliceChannel"
    aliases = ("split",)
    backward_inputs = ()
    backward_outputs = ()

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        num_outputs: int
        axis: int = 1
        squeeze_axis: bool = False

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.num_outputs < 1:
            raise OpParamError("operator SliceChannel: num_outputs must be >= 1, got %d"
                               % self.attrs.num_outputs)
        self._outs = ["output%d" % i for i in range(self.attrs.num_outputs)]
        self._slicers: dict = {}

    def outputs(self) -> list:
        return list(self._outs)

    def infer_shape(self, in_shapes, out_shapes):
        n = self.attrs.num_outputs
        squeeze = self.attrs.squeeze_axis
        data = in_shapes[0]
        if data is None:
            known = next((s for s in out_shapes if s is not None), None)
            if known is None:
                return in_shapes, out_shapes
            ndim = len(known) + squeeze
            ax = _axis(self.attrs.axis, ndim)
            along = n if squeeze else None if known[ax] is None else known[ax] * n
            self.set_in(in_shapes, 0, known[:ax] + (along,) + known[ax + (not squeeze):],
                        "output %s" % fmt_shape(known))
            data = in_shapes[0]
        ax = _axis(self.attrs.axis, len(data))
        along = data[ax]
        if along is not None:
            if along % n:
                raise ShapeError("input 'data' has shape %s: dim %d (%d) is not divisible by "
                                 "num_outputs=%d" % (fmt_shape(data), ax, along, n))
            if squeeze and along != n:
                raise ShapeError("input 'data' has shape %s but squeeze_axis needs dim %d to "
                                 "equal num_outputs=%d" % (fmt_shape(data), ax, n))
        part = None if along is None else along // n
        each = data[:ax] + data[ax + 1:] if squeeze else data[:ax] + (part,) + data[ax + 1:]
        for i in range(n):
            self.set_out(out_shapes, i, each)
        # the outputs share every dim: merge what they know back into the input
        merged = self.same_shape([], out_shapes)[1][0]
        if merged is not None:
            back = merged[:ax] + (n,) + merged[ax:] if squeeze else \
                merged[:ax] + (None if merged[ax] is None else merged[ax] * n,) + merged[ax + 1:]
            self.set_in(in_shapes, 0, back, "outputs %s" % fmt_shape(merged))
        return in_shapes, out_shapes

    def _parts(self, shape: tuple) -> list:
        parts = self._slicers.get(shape)
        if parts is None:
            n = self.attrs.num_outputs
            ax = _axis(self.attrs.axis, len(shape))
            lead = (slice(None),) * ax
            step = shape[ax] // n
            if self.attrs.squeeze_axis:
                parts = [lead + (i,) for i in range(n)]
            else:
                parts = [lead + (slice(i * step, (i + 1) * step),) for i in range(n)]
            self._slicers[shape] = parts
        return parts

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        for o, part in zip(out, self._parts(x.shape)):
            xp.copyto(o, x[part])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = in_grads[0]
        if g is None:
            return
        for og, part in zip(out_grads, self._parts(g.shape)):
            if og is None:
                g[part] = 0
            else:
                g[part] = og


@register
class SplitV2(Op):
    """Split along `axis` at given boundaries (MXNet's `_split_v2`, behind `split_v2`).

    With sections > 0 the axis (size n) is cut into `sections` consecutive parts, the first
    n % sections of them one longer (NumPy's array_split); otherwise part i is
    data[indices[i]:indices[i + 1]] along the axis (the last runs to the end), where
    `indices` starts at 0 and never decreases. With squeeze_axis every part must have
    size 1 along the axis, which is then dropped. The gradient is the head gradients joined
    back along the axis (a missing one counts as zero).
    """

    name = "_split_v2"
    backward_inputs = ()
    backward_outputs = ()

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        indices: tuple[int, ...]
        axis: int = 1
        squeeze_axis: bool = False
        sections: int = 0

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        count = a.sections if a.sections > 0 else len(a.indices)
        if count < 1:
            raise OpParamError("operator _split_v2: give sections >= 1 or at least one index, "
                               "got indices=%s sections=%d" % (a.indices, a.sections))
        if a.sections <= 0:
            if a.indices[0] != 0:
                raise OpParamError("operator _split_v2: indices must start at 0 (the parts "
                                   "cover the whole axis), got %s" % (a.indices,))
            if any(b < e for e, b in zip(a.indices, a.indices[1:])):
                raise OpParamError("operator _split_v2: indices %s must not decrease"
                                   % (a.indices,))
        self._outs = ["output%d" % i for i in range(count)]

    def outputs(self) -> list:
        return list(self._outs)

    def _bounds(self, size: int) -> list:
        """(begin, end) of each part along an axis of `size`."""
        a = self.attrs
        if a.sections > 0:
            step, extra = divmod(size, a.sections)
            ends = [(i + 1) * step + min(i + 1, extra) for i in range(a.sections)]
            return list(zip([0] + ends[:-1], ends))
        if a.indices[-1] > size:
            raise ShapeError("input 'data' has size %d along axis %d but _split_v2 cuts at %d"
                             % (size, a.axis, a.indices[-1]))
        return list(zip(a.indices, a.indices[1:] + (size,)))

    def infer_shape(self, in_shapes, out_shapes):
        squeeze = self.attrs.squeeze_axis
        data = in_shapes[0]
        if data is None:
            known = next((s for s in out_shapes if s is not None), None)
            if known is None:
                return in_shapes, out_shapes
            ax = _axis(self.attrs.axis, len(known) + squeeze)
            sizes = [None if s is None else s[ax] for s in out_shapes]
            along = len(out_shapes) if squeeze else None if None in sizes else sum(sizes)
            self.set_in(in_shapes, 0, known[:ax] + (along,) + known[ax + (not squeeze):],
                        "output %s" % fmt_shape(known))
            data = in_shapes[0]
        ax = _axis(self.attrs.axis, len(data))
        if data[ax] is None:
            return in_shapes, out_shapes
        for i, (begin, end) in enumerate(self._bounds(data[ax])):
            if squeeze:
                if end - begin != 1:
                    raise ShapeError("input 'data' has shape %s but squeeze_axis needs parts "
                                     "of size 1 along axis %d (part %d has %d)"
                                     % (fmt_shape(data), ax, i, end - begin))
                self.set_out(out_shapes, i, data[:ax] + data[ax + 1:])
            else:
                self.set_out(out_shapes, i, data[:ax] + (end - begin,) + data[ax + 1:])
        return in_shapes, out_shapes

    def _parts(self, shape: tuple) -> list:
        ax = _axis(self.attrs.axis, len(shape))
        lead = (slice(None),) * ax
        if self.attrs.squeeze_axis:
            return [lead + (begin,) for begin, _ in self._bounds(shape[ax])]
        return [lead + (slice(begin, end),) for begin, end in self._bounds(shape[ax])]

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        for o, part in zip(out, self._parts(x.shape)):
            xp.copyto(o, x[part])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = in_grads[0]
        if g is None:
            return
        for og, part in zip(out_grads, self._parts(g.shape)):
            g[part] = 0 if og is None else og


# ----------------------------------------------------------------------------- slicing

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
        ax = _axis(self.attrs.axis, ndim)
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
        ax = _axis(self.attrs.axis, len(shape))
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


# ----------------------------------------------------------------------------- tile / repeat

@register
class Tile(Op):
    """Repeat the whole array `reps[i]` times along axis i (NumPy's tile).

    When reps and data differ in rank, the shorter one is padded with leading 1s. Backward sums
    the head gradient over the copies.
    """

    name = "tile"
    backward_inputs = ()
    backward_outputs = ()

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        reps: tuple[int, ...]

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if any(r is None or r < 1 for r in self.attrs.reps):
            raise OpParamError("operator tile: reps=%s must be positive" % (self.attrs.reps,))

    def _aligned(self, ndim: int) -> tuple:
        reps = self.attrs.reps
        rank = max(ndim, len(reps))
        return rank, (1,) * (rank - len(reps)) + tuple(reps)

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        rank, reps = self._aligned(len(data))
        padded = (1,) * (rank - len(data)) + tuple(data)
        self.set_out(out_shapes, 0, tuple(None if d is None else d * r
                                          for d, r in zip(padded, reps)))
        out = out_shapes[0]
        back = tuple(None if o is None else o // r for o, r in zip(out, reps))
        self.set_in(in_shapes, 0, back[rank - len(data):], "output %s" % fmt_shape(out))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], xp.tile(inputs[0], self.attrs.reps))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = in_grads[0]
        if g is None:
            return
        rank, reps = self._aligned(g.ndim)
        padded = (1,) * (rank - g.ndim) + g.shape
        split = []
        for r, d in zip(reps, padded):
            split += [r, d]
        summed = out_grads[0].reshape(split).sum(axis=tuple(range(0, 2 * rank, 2)))
        xp.copyto(g, summed.reshape(g.shape))


@register
class Repeat(Op):
    """Repeat each element `repeats` times along `axis`; axis=None flattens first (1-D out)."""

    name = "repeat"
    backward_inputs = ()
    backward_outputs = ()

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        repeats: int
        axis: Optional[int] = None

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.repeats < 0:
            raise OpParamError("operator repeat: repeats=%d must be >= 0" % self.attrs.repeats)

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        r = self.attrs.repeats
        if self.attrs.axis is None:
            size = _prod(data)
            self.set_out(out_shapes, 0, (None if size is None else size * r,))
            return in_shapes, out_shapes
        ax = _axis(self.attrs.axis, len(data))
        along = None if data[ax] is None else data[ax] * r
        self.set_out(out_shapes, 0, data[:ax] + (along,) + data[ax + 1:])
        out = out_shapes[0]
        self.set_in(in_shapes, 0, out[:ax] + (data[ax],) + out[ax + 1:],
                    "output %s" % fmt_shape(out))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], xp.repeat(inputs[0], self.attrs.repeats, axis=self.attrs.axis))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = in_grads[0]
        if g is None:
            return
        r = self.attrs.repeats
        if self.attrs.axis is None:
            xp.copyto(g, out_grads[0].reshape(-1, r).sum(axis=1).reshape(g.shape))
            return
        ax = _axis(self.attrs.axis, g.ndim)
        split = g.shape[:ax] + (g.shape[ax], r) + g.shape[ax + 1:]
        xp.copyto(g, out_grads[0].reshape(split).sum(axis=ax + 1))


# ----------------------------------------------------------------------------- Pad

@register
class Pad(Op):
    """Pad every axis i with pad_width[2i] entries before and pad_width[2i+1] after.

    Modes: 'constant' (fill with constant_value), 'edge' (repeat the border value), 'reflect'
    (mirror without repeating the border; each pad must be smaller than its axis). MXNet only
    pads the spatial axes of 4-D/5-D data; here any rank is accepted. Backward folds the
    gradient of the padding back onto the values it copies.
    """

    name = "Pad"
    aliases = ("pad",)
    backward_inputs = ()
    backward_outputs = ()

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        mode: Literal["constant", "edge", "reflect"]
        pad_width: tuple[int, ...]
        constant_value: float = 0.0

    def __init__(self, attrs=None):
        super().__init__(attrs)
        pw = self.attrs.pad_width
        if len(pw) % 2 or any(p is None or p < 0 for p in pw):
            raise OpParamError("operator Pad: pad_width=%s must be non-negative (before, after) "
                               "pairs" % (pw,))
        self._pairs = tuple((pw[i], pw[i + 1]) for i in range(0, len(pw), 2))
        self._np_mode = {"constant": "constant", "edge": "edge", "reflect": "reflect"}[
            self.attrs.mode]

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        if len(data) != len(self._pairs):
            raise ShapeError("input 'data' has rank %d but pad_width=%s covers %d axes"
                             % (len(data), self.attrs.pad_width, len(self._pairs)))
        if self.attrs.mode == "reflect":
            for ax, (d, (b, a)) in enumerate(zip(data, self._pairs)):
                if d is not None and max(b, a) >= d:
                    raise ShapeError("input 'data' has shape %s: reflect padding of axis %d "
                                     "needs pads < %d, got %s" % (fmt_shape(data), ax, d, (b, a)))
        self.set_out(out_shapes, 0, tuple(None if d is None else d + b + a
                                          for d, (b, a) in zip(data, self._pairs)))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        if self._np_mode == "constant":
            res = xp.pad(inputs[0], self._pairs, mode="constant",
                         constant_values=self.attrs.constant_value)
        else:
            res = xp.pad(inputs[0], self._pairs, mode=self._np_mode)
        xp.copyto(out[0], res)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = in_grads[0]
        if g is None:
            return
        acc = out_grads[0]
        mode = self.attrs.mode
        for ax in range(g.ndim - 1, -1, -1):
            b, a = self._pairs[ax]
            if b == 0 and a == 0:
                continue
            d = g.shape[ax]
            lead = (slice(None),) * ax
            core = acc[lead + (slice(b, b + d),)]
            if mode != "constant":
                core = core.copy()
                before = acc[lead + (slice(0, b),)]
                after = acc[lead + (slice(b + d, b + d + a),)]
                if mode == "edge":
                    if b:
                        core[lead + (slice(0, 1),)] += before.sum(axis=ax, keepdims=True)
                    if a:
                        core[lead + (slice(d - 1, d),)] += after.sum(axis=ax, keepdims=True)
                else:
                    if b:
                        core[lead + (slice(1, b + 1),)] += xp.flip(before, axis=ax)
                    if a:
                        core[lead + (slice(d - 1 - a, d - 1),)] += xp.flip(after, axis=ax)
            acc = core
        xp.copyto(g, acc)


# ----------------------------------------------------------------------------- sequences

class _SequenceOp(Op):
    """Shared parts of the sequence operators.

    data is time-major along `axis` (0: (T, N, ...), 1: (N, T, ...)); with use_sequence_length
    a second input `sequence_length` (N,) gives each sequence's length (values truncated to
    int). The lengths may have any dtype (int32 lengths with float data; data's dtype when
    not given) and get no gradient.
    """

    backward_outputs = ()

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        use_sequence_length: bool = False
        axis: int = 0

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.axis not in (0, 1):
            raise OpParamError("operator %s: axis must be 0 or 1, got %d"
                               % (self.name, self.attrs.axis))
        self._args = ["data", "sequence_length"] if self.attrs.use_sequence_length \
            else ["data"]
        self.backward_inputs = (1,) if self.attrs.use_sequence_length else ()

    def arguments(self) -> list:
        return list(self._args)

    def infer_type(self, in_types, out_types):
        head, outs = super().infer_type(list(in_types[:1]), list(out_types))
        if not self.attrs.use_sequence_length:
            return head, outs
        lengths = in_types[1] if in_types[1] is not None else head[0]
        return list(head) + [lengths], outs

    def _infer_lengths(self, in_shapes) -> None:
        if not self.attrs.use_sequence_length:
            return
        batch_axis = 1 - self.attrs.axis
        data = in_shapes[0]
        if data is not None:
            if len(data) < 2:
                raise ShapeError("input 'data' has shape %s; %s needs rank >= 2"
                                 % (fmt_shape(data), self.name))
            self.set_in(in_shapes, 1, (data[batch_axis],), "data %s" % fmt_shape(data))
        lengths = in_shapes[1]
        if data is not None and lengths is not None:
            fill = list(data)
            fill[batch_axis] = lengths[0]
            self.set_in(in_shapes, 0, tuple(fill), "sequence_length %s" % fmt_shape(lengths))

    def _time_major(self, x):
        return x if self.attrs.axis == 0 else x.swapaxes(0, 1)

    def _lengths(self, xp, inputs, steps: int, batch: int):
        if self.attrs.use_sequence_length:
            return inputs[1].astype(xp.int64)
        return xp.full((batch,), steps, dtype=xp.int64)


@register
class SequenceMask(_SequenceOp):
    """out[t, n] = data[t, n] for t < length[n], else `value` (time-major view)."""

    name = "SequenceMask"
    SIGNATURE_INPUTS = ("data", "sequence_length")
    PARAM_ORDER = ("use_sequence_length", "value", "axis")

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        use_sequence_length: bool = False
        axis: int = 0
        value: float = 0.0

    def infer_shape(self, in_shapes, out_shapes):
        self._infer_lengths(in_shapes)
        self.same_shape(in_shapes, out_shapes, in_idx=(0,))
        self._infer_lengths(in_shapes)
        return in_shapes, out_shapes

    def _mask(self, xp, inputs, x_tm):
        steps, batch = x_tm.shape[:2]
        lengths = self._lengths(xp, inputs, steps, batch)
        mask = xp.arange(steps)[:, None] < lengths[None, :]
        return mask.reshape(mask.shape + (1,) * (x_tm.ndim - 2))

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        if not self.attrs.use_sequence_length:
            xp.copyto(out[0], x)
            return
        x_tm = self._time_major(x)
        mask = self._mask(xp, inputs, x_tm)
        xp.copyto(self._time_major(out[0]),
                  xp.where(mask, x_tm, x.dtype.type(self.attrs.value)))  # no host transfer

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = in_grads[0]
        if g is not None:
            if self.attrs.use_sequence_length:
                og_tm = self._time_major(out_grads[0])
                xp.copyto(self._time_major(g), og_tm * self._mask(xp, inputs, og_tm))
            else:
                xp.copyto(g, out_grads[0])
        if len(in_grads) > 1 and in_grads[1] is not None:
            in_grads[1].fill(0)


@register
class SequenceLast(_SequenceOp):
    """out[n] = data[length[n] - 1, n] (time-major view); the time axis is dropped.

    Without lengths, the last step. A length of 0 reads step 0, as MXNet does.
    """

    name = "SequenceLast"
    SIGNATURE_INPUTS = ("data", "sequence_length")

    def infer_shape(self, in_shapes, out_shapes):
        self._infer_lengths(in_shapes)
        ax = self.attrs.axis
        data = in_shapes[0]
        if data is not None:
            self.set_out(out_shapes, 0, data[:ax] + data[ax + 1:])
        out = out_shapes[0]
        if out is not None:
            self.set_in(in_shapes, 0, out[:ax] + (None if data is None else data[ax],)
                        + out[ax:], "output %s" % fmt_shape(out))
        self._infer_lengths(in_shapes)
        return in_shapes, out_shapes

    def _steps(self, xp, inputs, steps: int, batch: int):
        last = self._lengths(xp, inputs, steps, batch) - 1
        return xp.clip(last, 0, steps - 1), xp.arange(batch)

    def forward(self, xp, inputs, aux, out, is_train):
        x_tm = self._time_major(inputs[0])
        t, n = self._steps(xp, inputs, *x_tm.shape[:2])
        xp.copyto(out[0], x_tm[t, n])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = in_grads[0]
        if g is not None:
            g.fill(0)
            g_tm = self._time_major(g)
            t, n = self._steps(xp, inputs, *g_tm.shape[:2])
            g_tm[t, n] = out_grads[0]
        if len(in_grads) > 1 and in_grads[1] is not None:
            in_grads[1].fill(0)


@register
class SequenceReverse(_SequenceOp):
    """Reverse the first length[n] steps of each sequence n; later steps stay in place.

    MXNet supports only axis=0; axis=1 works here too.
    """

    name = "SequenceReverse"
    SIGNATURE_INPUTS = ("data", "sequence_length")

    def infer_shape(self, in_shapes, out_shapes):
        self._infer_lengths(in_shapes)
        self.same_shape(in_shapes, out_shapes, in_idx=(0,))
        self._infer_lengths(in_shapes)
        return in_shapes, out_shapes

    def _gather(self, xp, inputs, x_tm):
        steps, batch = x_tm.shape[:2]
        lengths = xp.minimum(self._lengths(xp, inputs, steps, batch), steps)
        t = xp.arange(steps)[:, None]
        src = xp.where(t < lengths[None, :], lengths[None, :] - 1 - t, t)
        return x_tm[src, xp.arange(batch)[None, :]]

    def forward(self, xp, inputs, aux, out, is_train):
        x_tm = self._time_major(inputs[0])
        xp.copyto(self._time_major(out[0]), self._gather(xp, inputs, x_tm))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = in_grads[0]
        if g is not None:
            # the permutation is its own inverse
            og_tm = self._time_major(out_grads[0])
            xp.copyto(self._time_major(g), self._gather(xp, inputs, og_tm))
        if len(in_grads) > 1 and in_grads[1] is not None:
            in_grads[1].fill(0)



# ----------------------------------------------------------------------------- Crop, slice_like

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


class _ShapeInfo(Op):
    """Base of shape_array / size_array: int64 facts about data's shape; no gradient."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...
    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True

    def infer_type(self, in_types, out_types):
        return list(in_types), ["int64"]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            in_grads[0].fill(0)


@register
class ShapeArray(_ShapeInfo):
    """out = data's shape as a 1-D int64 array."""

    name = "shape_array"

    def infer_shape(self, in_shapes, out_shapes):
        if in_shapes[0] is not None:
            self.set_out(out_shapes, 0, (len(in_shapes[0]),))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        out[0][...] = xp.asarray(inputs[0].shape, dtype=out[0].dtype)


@register
class SizeArray(_ShapeInfo):
    """out = data's element count as a (1,) int64 array."""

    name = "size_array"

    def infer_shape(self, in_shapes, out_shapes):
        self.set_out(out_shapes, 0, (1,))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        out[0].fill(inputs[0].size)


# ----------------------------------------------------------------------------- depth/space, diag

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
