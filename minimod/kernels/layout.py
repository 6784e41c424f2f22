"""Batch-last storage: an op's data input or output held as (C, *spatial, N) instead of
MXNet's (N, C, *spatial), or as (features, N) instead of (N, features).

Convolution computes in a batch-last work layout (one GEMM over every pixel of every sample at
once), a max pooling window there is a run of N contiguous values, and FullyConnected runs its
GEMMs on the transposed operands. Between two such ops the data need not go back to (N, C, ...)
at all: the layout pass (`minimod.passes.layout`) replaces the ops on either side of such an
edge by their batch-last forms, op classes registered here (`form_of`) with `data_last` /
`out_last` set, in a plan's graph only. They live beside the fast paths, not in `minimod.ops`,
because no symbol names them and they compute nothing the reference ops do not: they are the
same math on other strides, chosen for speed.

Shapes are inferred for the layout the arrays have, so an array on a batch-last edge is what
its shape says; the gradient of that edge, which the backward pass sizes from it, is batch-last
too. The monitor, which reports what MXNet would, sees the arrays through `as_written`.
"""
from __future__ import annotations

from typing import Optional

from ..ops.reshape import Flatten
from .registry import recast

__all__ = ["BatchLast", "BatchLastFlatten", "to_batch_last", "from_batch_last", "form_of",
           "batch_last_class", "batch_last_form"]

_FORMS: dict = {}


def to_batch_last(shape):
    """(N, C, *spatial) as (C, *spatial, N); None (rank unknown) stays None."""
    return None if shape is None else tuple(shape[1:]) + (shape[0],)


def from_batch_last(shape):
    """(C, *spatial, N) as (N, C, *spatial)."""
    return None if shape is None else (shape[-1],) + tuple(shape[:-1])


def form_of(op_class: type):
    """Register the decorated class as the batch-last form of `op_class` (exact type)."""
    def register(form: type) -> type:
        _FORMS[op_class] = form
        return form
    return register


def batch_last_class(op) -> Optional[type]:
    """The batch-last form registered for type(op), or None."""
    return _FORMS.get(type(op))


def batch_last_form(op, data_last: bool, out_last: bool):
    """`op` as its batch-last form, with its input 0 and output 0 stored as given."""
    form = recast(op, _FORMS[type(op)])
    form.data_last, form.out_last = bool(data_last), bool(out_last)
    return form


class BatchLast:
    """Flags and shape rules of a batch-last form: input 0 (`data_last`) or output 0
    (`out_last`) stored batch-last. A form subclasses this mixin and the op it stands for,
    whose `infer_shape` states the rules for MXNet's layout; the mixin translates around it."""

    #: input 0 is stored batch-last
    data_last = False
    #: output 0 is stored batch-last
    out_last = False
    #: hidden outputs stored in input 0's layout (max pooling's mask, read by backward only)
    follows_data: tuple = ()
    #: the op runs on batch-last data as it is, storing data and output alike (elementwise
    #: ops, Flatten); the layout pass passes a batch-last edge through it
    transparent = False

    @staticmethod
    def applies(op) -> bool:
        """Whether `op`'s attributes allow the batch-last storage at all."""
        return True

    def _output_last(self, i: int) -> bool:
        return self.out_last if i == 0 else (self.data_last and i in self.follows_data)

    def infer_shape(self, in_shapes: list, out_shapes: list):
        last = [self._output_last(i) for i in range(len(out_shapes))]
        ins = list(in_shapes)
        if self.data_last:
            ins[0] = from_batch_last(ins[0])
        outs = [from_batch_last(s) if b else s for s, b in zip(out_shapes, last)]
        ins, outs = super().infer_shape(ins, outs)
        ins = list(ins)
        if self.data_last:
            ins[0] = to_batch_last(ins[0])
        return ins, [to_batch_last(s) if b else s for s, b in zip(outs, last)]

    def as_written(self, xp, inputs: list, outputs: list):
        """`inputs` and `outputs` as views in MXNet's layout (for the monitor)."""
        ins = list(inputs)
        if self.data_last:
            ins[0] = xp.moveaxis(ins[0], -1, 0)
        outs = [xp.moveaxis(a, -1, 0) if self._output_last(i) else a
                for i, a in enumerate(outputs)]
        return ins, outs

    def layout_note(self) -> str:
        """'' or a note for plan listings, such as ' [batch-last in, out]'."""
        sides = [s for s, on in (("in", self.data_last), ("out", self.out_last)) if on]
        return " [batch-last %s]" % ", ".join(sides) if sides else ""


@form_of(Flatten)
class BatchLastFlatten(BatchLast, Flatten):
    """Flatten with data and output stored batch-last: data (d1, ..., dk, d0) becomes
    (d1*...*dk, d0) by Flatten's own reshape, so only the shape rules differ."""

    transparent = True
