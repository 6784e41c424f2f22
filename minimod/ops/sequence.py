"""The sequence operators, over time-major data with optional per-sequence lengths:
SequenceMask (steps past a sequence's length set to a value), SequenceLast (each sequence's
last valid step) and SequenceReverse (each sequence's valid steps reversed)."""
from __future__ import annotations

import dataclasses

from ..base import OpParamError, ShapeError
from .registry import Op, fmt_shape, register

__all__ = ["SequenceMask", "SequenceLast", "SequenceReverse"]


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
