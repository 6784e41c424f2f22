"""Joining and splitting: Concat and stack join arrays along an axis, SliceChannel (split)
and _split_v2 cut one into parts. Each part's gradient is a slice of the joined gradient, and
the other way round; none reads an input value in backward."""
from __future__ import annotations

import dataclasses

from ..base import OpParamError, ShapeError
from .helpers import axis_index, prod_or_none
from .registry import Op, VariadicOp, fmt_shape, merge_shape, register, shape_is_known

__all__ = ["Concat", "Stack", "SliceChannel", "SplitV2"]


def _runs(whole, axis: int, sizes: list):
    """Where each piece of `whole` starts, in elements, when whole is cut (or joined) along
    `axis` and every dim before `axis` is 1, so that each piece is one run of its elements:
    the sizes of the pieces before it. `sizes` are the pieces' sizes, None for equal parts.
    None where `whole` is not known or not cut along a leading axis."""
    if whole is None or not shape_is_known(whole):
        return None
    if prod_or_none(whole[:axis_index(axis, len(whole), "axis")]) != 1:
        return None
    if None in sizes:
        sizes = [prod_or_none(whole) // len(sizes)] * len(sizes)
    return tuple(sum(sizes[:i]) for i in range(len(sizes)))


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
        dim = axis_index(self.attrs.dim, ndim, "dim")
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
        dim = axis_index(self.attrs.dim, og.ndim, "dim")
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

    def join_offsets(self, in_shapes: list, out_shapes: list):
        """Joined along the leading axis (every dim before `dim` is 1), each input is one run
        of the output: its offset is the sizes of the inputs before it."""
        if not all(map(shape_is_known, in_shapes)):
            return None
        return _runs(out_shapes[0], self.attrs.dim, [prod_or_none(s) for s in in_shapes])

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
            ax = axis_index(self.attrs.axis, len(out) - 1, extra=1)
            self.set_out(out_shapes, 0, out[:ax] + (self.attrs.num_args,) + out[ax + 1:])
            for i in range(len(in_shapes)):
                self.set_in(in_shapes, i, out[:ax] + out[ax + 1:], "output %s" % fmt_shape(out))
        self.same_shape(in_shapes, out_shapes, out_idx=())
        data = in_shapes[0]
        if data is not None:
            ax = axis_index(self.attrs.axis, len(data), extra=1)
            self.set_out(out_shapes, 0, data[:ax] + (self.attrs.num_args,) + data[ax:])
        return in_shapes, out_shapes

    def join_offsets(self, in_shapes: list, out_shapes: list):
        """Stacked along a leading axis (every dim before `axis` is 1), input i is the i-th
        run of the output."""
        return _runs(out_shapes[0], self.attrs.axis, [None] * self.attrs.num_args)

    def forward(self, xp, inputs, aux, out, is_train):
        xp.stack(inputs, axis=self.attrs.axis, out=out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        og = out_grads[0]
        ax = axis_index(self.attrs.axis, og.ndim)
        lead = (slice(None),) * ax
        for i, g in enumerate(in_grads):
            if g is not None:
                xp.copyto(g, og[lead + (i,)])


class _Split(Op):
    """A split of input 'data' into parts: output i is data[self._parts(shape)[i]], and the
    gradient writes each head gradient back into its part (a missing one counts as zero)."""

    backward_inputs = ()
    backward_outputs = ()

    def _parts(self, shape: tuple) -> list:
        raise NotImplementedError

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


@register
class SliceChannel(_Split):
    """Split along `axis` into `num_outputs` equal parts (outputs output0, output1, ...).

    With `squeeze_axis` the split axis must have size `num_outputs` and is dropped from each
    output. A missing head gradient counts as zero.
    """

    name = "SliceChannel"
    aliases = ("split",)

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
            ax = axis_index(self.attrs.axis, ndim)
            along = n if squeeze else None if known[ax] is None else known[ax] * n
            self.set_in(in_shapes, 0, known[:ax] + (along,) + known[ax + (not squeeze):],
                        "output %s" % fmt_shape(known))
            data = in_shapes[0]
        ax = axis_index(self.attrs.axis, len(data))
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

    def part_offsets(self, in_shapes: list, out_shapes: list):
        """Split along the leading axis (every dim before `axis` is 1), each output is one
        run of the input, the k-th starting k outputs' sizes in."""
        return _runs(in_shapes[0], self.attrs.axis, [None] * self.attrs.num_outputs)

    def _parts(self, shape: tuple) -> list:
        parts = self._slicers.get(shape)
        if parts is None:
            n = self.attrs.num_outputs
            ax = axis_index(self.attrs.axis, len(shape))
            lead = (slice(None),) * ax
            step = shape[ax] // n
            if self.attrs.squeeze_axis:
                parts = [lead + (i,) for i in range(n)]
            else:
                parts = [lead + (slice(i * step, (i + 1) * step),) for i in range(n)]
            self._slicers[shape] = parts
        return parts


@register
class SplitV2(_Split):
    """Split along `axis` at given boundaries (MXNet's `_split_v2`, behind `split_v2`).

    With sections > 0 the axis (size n) is cut into `sections` consecutive parts, the first
    n % sections of them one longer (NumPy's array_split); otherwise part i is
    data[indices[i]:indices[i + 1]] along the axis (the last runs to the end), where
    `indices` starts at 0 and never decreases. With squeeze_axis every part must have
    size 1 along the axis, which is then dropped. The gradient is the head gradients joined
    back along the axis (a missing one counts as zero).
    """

    name = "_split_v2"

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
            ax = axis_index(self.attrs.axis, len(known) + squeeze)
            sizes = [None if s is None else s[ax] for s in out_shapes]
            along = len(out_shapes) if squeeze else None if None in sizes else sum(sizes)
            self.set_in(in_shapes, 0, known[:ax] + (along,) + known[ax + (not squeeze):],
                        "output %s" % fmt_shape(known))
            data = in_shapes[0]
        ax = axis_index(self.attrs.axis, len(data))
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
        ax = axis_index(self.attrs.axis, len(shape))
        lead = (slice(None),) * ax
        if self.attrs.squeeze_axis:
            return [lead + (begin,) for begin, _ in self._bounds(shape[ax])]
        return [lead + (slice(begin, end),) for begin, end in self._bounds(shape[ax])]
