"""Running sums: `cumsum` (MXNet 1.9.1 registers it as `_np_cumsum`, under `mx.sym.cumsum` and
`mx.nd.cumsum` too).

    out = cumsum(a, axis)    out[..., i, ...] = a[..., 0, ...] + ... + a[..., i, ...]

With `axis` None the sums run over the flattened array and out is (a.size,); otherwise out has
a's shape. `dtype` is out's dtype (default a's: an int32 array sums in int32, as MXNet's does,
where NumPy would widen to int64). Gradient: the head's running sums taken from the far end,
d a[i] = g[i] + g[i + 1] + ... along the axis.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

from ..base import ShapeError
from .helpers import dtype_of
from .registry import Op, fmt_shape, register

__all__ = ["Cumsum"]


@dataclasses.dataclass(frozen=True)
class CumsumAttrs:
    axis: Optional[int] = None
    dtype: Optional[str] = None


@register
class Cumsum(Op):
    """Running sums along `axis` (see the module docstring)."""

    name = "_np_cumsum"
    aliases = ("cumsum",)
    ARGUMENTS = ("a",)
    Attrs = CumsumAttrs
    backward_inputs = ()
    backward_outputs = ()

    def _axis(self, ndim: int) -> Optional[int]:
        axis = self.attrs.axis
        if axis is None:
            return None
        if not -ndim <= axis < ndim:
            raise ShapeError("cumsum: axis=%d is out of range for input 'a' of %d dims"
                             % (axis, ndim))
        return axis % ndim

    def infer_shape(self, in_shapes, out_shapes):
        a = in_shapes[0]
        if a is not None:
            axis = self._axis(len(a))
            self.set_out(out_shapes, 0, tuple(a) if axis is not None else (math.prod(a),),
                         "input 'a' %s with axis=%s" % (fmt_shape(a), self.attrs.axis))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        if in_types[0] is None:
            return in_types, out_types
        out = dtype_of(self.attrs.dtype) if self.attrs.dtype else in_types[0]
        return in_types, [out]

    def forward(self, xp, inputs, aux, out, is_train):
        o, a = out[0], inputs[0]
        axis = self._axis(a.ndim)
        if axis is None:  # flattened first: CuPy's cumsum(axis=None, out=) copies a unflattened
            a, axis = a.reshape(-1), 0
        xp.cumsum(a, axis=axis, dtype=o.dtype, out=o)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        da = in_grads[0]
        if da is None:
            return
        axis = self._axis(da.ndim)
        g = out_grads[0] if axis is not None else out_grads[0].reshape(-1)
        along = 0 if axis is None else axis
        from_end = xp.flip(xp.cumsum(xp.flip(g, along), axis=along), along)
        xp.copyto(da, from_end.reshape(da.shape), casting="unsafe")
