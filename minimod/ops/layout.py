"""Batch-last storage: an op's data input or output held as (C, *spatial, N) instead of
MXNet's (N, C, *spatial), or as (features, N) instead of (N, features).

Convolution computes in a batch-last work layout (one GEMM over every pixel of every sample at
once), a max pooling window there is a run of N contiguous values, and FullyConnected runs its
GEMMs on the transposed operands. Between two such ops the data need not go back to (N, C, ...)
at all: the layout pass (`minimod.passes.layout`) gives the ops on either side of such an edge
copies of themselves with `data_last` / `out_last` set, in a plan's graph only. Shapes are
inferred for the layout the arrays have, so an array on a batch-last edge is what its shape
says; the gradient of that edge, which the backward pass sizes from it, is batch-last too. The
monitor, which reports what MXNet would, sees the arrays through `as_written`.
"""
from __future__ import annotations

import copy

__all__ = ["BatchLastMixin", "to_batch_last", "from_batch_last"]


def to_batch_last(shape):
    """(N, C, *spatial) as (C, *spatial, N); None (rank unknown) stays None."""
    return None if shape is None else tuple(shape[1:]) + (shape[0],)


def from_batch_last(shape):
    """(C, *spatial, N) as (N, C, *spatial)."""
    return None if shape is None else (shape[-1],) + tuple(shape[:-1])


class BatchLastMixin:
    """Flags and shape rules for an op whose input 0 (`data_last`) or output 0 (`out_last`)
    may be stored batch-last. The op states its shape rules for MXNet's layout in
    `infer_batch_first`; the mixin's `infer_shape` translates around them."""

    #: input 0 is stored batch-last
    data_last = False
    #: output 0 is stored batch-last
    out_last = False
    #: hidden outputs stored in input 0's layout (max pooling's mask, read by backward only)
    follows_data: tuple = ()

    def can_batch_last(self) -> bool:
        """Whether this op's attributes allow the batch-last storage at all."""
        return True

    def with_layout(self, data_last: bool, out_last: bool):
        """A copy of this op with its input 0 and output 0 stored as given."""
        op = copy.copy(self)
        op.data_last, op.out_last = bool(data_last), bool(out_last)
        return op

    def _output_last(self, i: int) -> bool:
        return self.out_last if i == 0 else (self.data_last and i in self.follows_data)

    def infer_batch_first(self, in_shapes: list, out_shapes: list):
        """The op's shape inference with every array in MXNet's layout."""
        raise NotImplementedError(type(self).__name__)

    def infer_shape(self, in_shapes: list, out_shapes: list):
        if not (self.data_last or self.out_last):
            return self.infer_batch_first(in_shapes, out_shapes)
        last = [self._output_last(i) for i in range(len(out_shapes))]
        ins = list(in_shapes)
        if self.data_last:
            ins[0] = from_batch_last(ins[0])
        outs = [from_batch_last(s) if b else s for s, b in zip(out_shapes, last)]
        ins, outs = self.infer_batch_first(ins, outs)
        ins = list(ins)
        if self.data_last:
            ins[0] = to_batch_last(ins[0])
        return ins, [to_batch_last(s) if b else s for s, b in zip(outs, last)]

    def as_written(self, xp, inputs: list, outputs: list):
        """`inputs` and `outputs` as views in MXNet's layout (for the monitor)."""
        if not (self.data_last or self.out_last):
            return inputs, outputs
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
