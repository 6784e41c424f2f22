"""Indexing by an array of indices: one_hot, take, pick, gather_nd, scatter_nd.

Index inputs are float arrays holding integers (MXNet's convention), truncated toward zero;
they keep their own dtype and get a zero gradient. For take, pick and gather_nd the data's
gradient accumulates the head gradient at every position read (repeats add up, through
`backend.scatter_add`); scatter_nd's gathers it back; one_hot has no data input.
"""
from __future__ import annotations

import dataclasses
from typing import Literal, Optional

from .. import backend
from ..base import MXNetError, OpParamError, ShapeError
from .helpers import DTypeName, data_axis, dtype_of, zero_grads
from .reductions import reduced_shape
from .registry import Op, fmt_shape, register

__all__ = ["OneHotOp", "TakeOp", "PickOp", "GatherNdOp", "ScatterNdOp"]


class _IndexTypes(Op):
    """Outputs take the dtype of the first (data) input; the index input keeps its own."""

    def infer_type(self, in_types, out_types):
        head, outs = super().infer_type(list(in_types[:1]), list(out_types))
        return list(head) + list(in_types[1:]), outs


@dataclasses.dataclass(frozen=True)
class OneHotAttrs:
    depth: int
    on_value: float = 1.0
    off_value: float = 0.0
    dtype: DTypeName = "float32"


@register
class OneHotOp(Op):
    """out[..., j] = on_value if int(indices[...]) == j else off_value, j < depth.

    out has indices' shape plus (depth,) and dtype `dtype`; indices outside [0, depth) give a row
    of off_value. No gradient.
    """

    name = "one_hot"
    ARGUMENTS = ("indices",)
    Attrs = OneHotAttrs
    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.depth < 1:
            raise OpParamError("operator one_hot: depth must be >= 1, got %d" % self.attrs.depth)

    def infer_shape(self, in_shapes, out_shapes):
        if in_shapes[0] is not None:
            self.set_out(out_shapes, 0, tuple(in_shapes[0]) + (self.attrs.depth,))
        if out_shapes[0] is not None:
            self.set_in(in_shapes, 0, tuple(out_shapes[0][:-1]))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        return list(in_types), [dtype_of(self.attrs.dtype)]

    def forward(self, xp, inputs, aux, out, is_train):
        idx = inputs[0].astype("int64")[..., None]
        hit = idx == xp.arange(self.attrs.depth)
        xp.copyto(out[0], xp.where(hit, self.attrs.on_value, self.attrs.off_value),
                  casting="unsafe")

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        zero_grads(in_grads)


def _fix_indices(xp, indices, size: int, mode: str):
    idx = indices.astype("int64")
    if mode == "clip":
        xp.clip(idx, 0, size - 1, out=idx)
    elif mode == "wrap":
        xp.mod(idx, size, out=idx)
    elif bool(((idx < 0) | (idx >= size)).any()):
        # mode='raise' must raise before the op returns, so it reads the check on the host: the
        # one deliberate GPU round trip among the ops ('clip', the default, and 'wrap' have none)
        raise MXNetError("take: indices out of bounds for an axis of size %d (mode='raise')"
                         % size)
    return idx


@dataclasses.dataclass(frozen=True)
class TakeAttrs:
    axis: int = 0
    mode: Literal["clip", "raise", "wrap"] = "clip"


@register
class TakeOp(_IndexTypes):
    """out = a indexed along `axis` by int(indices): shape a[:axis] + indices.shape +
    a[axis+1:]. Out-of-range indices are clipped, wrapped, or rejected per `mode`.

    The gradient of `a` accumulates the head at every index taken (repeats add up); indices get
    none.
    """

    name = "take"
    ARGUMENTS = ("a", "indices")
    Attrs = TakeAttrs
    backward_inputs = (1,)
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        a, idx = in_shapes
        if a is not None and idx is not None:
            axis = data_axis(self.attrs.axis, len(a), a)
            self.set_out(out_shapes, 0, a[:axis] + tuple(idx) + a[axis + 1:])
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        a, indices = inputs
        axis = self.attrs.axis % a.ndim
        idx = _fix_indices(xp, indices, a.shape[axis], self.attrs.mode)
        xp.take(a, idx, axis=axis, out=out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        da, d_indices = in_grads
        if d_indices is not None:
            d_indices.fill(0)
        if da is None:
            return
        indices = inputs[1]
        axis = self.attrs.axis % da.ndim
        idx = _fix_indices(xp, indices, da.shape[axis], self.attrs.mode)
        dy = out_grads[0]
        if axis:
            dy = xp.moveaxis(dy, tuple(range(axis, axis + idx.ndim)), tuple(range(idx.ndim)))
        da.fill(0)
        backend.scatter_add(xp, xp.moveaxis(da, axis, 0), idx, dy)


@dataclasses.dataclass(frozen=True)
class PickAttrs:
    axis: Optional[int] = -1
    keepdims: bool = False
    mode: Literal["clip", "wrap"] = "clip"


@register
class PickOp(_IndexTypes):
    """out[i..., j...] = data[i..., int(index[i..., j...]), j...] along `axis`.

    out and index have data's shape without `axis` (with 1 there when keepdims); out-of-range
    indices are clipped or wrapped per `mode`. data's gradient gets the head at the picked
    positions; index gets none.
    """

    name = "pick"
    aliases = ("choose_element_0index",)  # MXNet's older name of pick along axis -1
    ARGUMENTS = ("data", "index")
    Attrs = PickAttrs
    backward_inputs = (1,)
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.axis is None:
            raise OpParamError("operator pick: axis=None is not supported; give an axis")

    def infer_shape(self, in_shapes, out_shapes):
        data, index = in_shapes[0], in_shapes[1]
        keepdims = self.attrs.keepdims
        if not keepdims:
            self.same_shape(in_shapes, out_shapes, in_idx=(1,), out_idx=(0,))
        if data is not None:
            axis = data_axis(self.attrs.axis, len(data), data)
            why = "picking along axis %d of %s" % (axis, fmt_shape(data))
            self.set_out(out_shapes, 0, reduced_shape(data, (axis,), keepdims), why)
            flat = reduced_shape(data, (axis,), False)
            # with keepdims MXNet takes the index with or without the kept axis
            if not (keepdims and index is not None and len(index) == len(data)):
                self.set_in(in_shapes, 1, flat, why)
            else:
                self.set_in(in_shapes, 1, out_shapes[0], why)
        elif out_shapes[0] is not None:
            out = tuple(out_shapes[0])
            ndim = len(out) if self.attrs.keepdims else len(out) + 1
            axis = self.attrs.axis % ndim
            if self.attrs.keepdims:
                guess = out[:axis] + (None,) + out[axis + 1:]
            else:
                guess = out[:axis] + (None,) + out[axis:]
            self.set_in(in_shapes, 0, guess)
        return in_shapes, out_shapes

    def _layout(self, xp, shape, index):
        axis = self.attrs.axis % len(shape)
        pre, post = 1, 1
        for d in shape[:axis]:
            pre *= d
        for d in shape[axis + 1:]:
            post *= d
        size = shape[axis]
        idx = _fix_indices(xp, index, size, self.attrs.mode).reshape(pre, post)
        rows = xp.arange(pre).reshape(pre, 1)
        cols = xp.arange(post).reshape(1, post)
        return (pre, size, post), (rows, idx, cols)

    def forward(self, xp, inputs, aux, out, is_train):
        data, index = inputs
        shape3, where = self._layout(xp, data.shape, index)
        xp.copyto(out[0], data.reshape(shape3)[where].reshape(out[0].shape))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx, d_index = in_grads
        if d_index is not None:
            d_index.fill(0)
        if dx is None:
            return
        shape3, where = self._layout(xp, dx.shape, inputs[1])
        dx.fill(0)
        backend.scatter_add(xp, dx.reshape(shape3), where,
                             out_grads[0].reshape(shape3[0], shape3[2]))


# ============================================================================ gather / scatter

@register
class GatherNdOp(_IndexTypes):
    """out[y...] = data[indices[0, y...], ..., indices[M-1, y...]]: indices (M, Y...) picks
    along data's first M axes, so out is Y... + data.shape[M:]. The gradient adds the head at
    every picked position (repeats add up); indices get none."""

    name = "gather_nd"
    ARGUMENTS = ("data", "indices")
    backward_inputs = (1,)
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        data, indices = in_shapes
        if data is None or indices is None or None in data or None in indices:
            return in_shapes, out_shapes
        if not indices or indices[0] > len(data):
            raise ShapeError("input 'indices' has shape %s but gather_nd needs (M, ...) with M "
                             "<= %d, the rank of data %s" % (fmt_shape(indices), len(data),
                                                              fmt_shape(data)))
        self.set_out(out_shapes, 0, tuple(indices[1:]) + tuple(data[indices[0]:]))
        return in_shapes, out_shapes

    @staticmethod
    def _where(indices) -> tuple:
        return tuple(indices.astype("int64"))

    def forward(self, xp, inputs, aux, out, is_train):
        data, indices = inputs
        where = self._where(indices)
        if xp.__name__ != "numpy":
            _check_bounds(xp, where, data.shape)
        out[0][...] = data[where]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx, d_indices = in_grads
        if d_indices is not None:
            d_indices.fill(0)
        if dx is not None:
            dx.fill(0)
            backend.scatter_add(xp, dx, self._where(inputs[1]), out_grads[0])


def _check_bounds(xp, where: tuple, shape: tuple) -> None:
    """The IndexError NumPy raises for an index outside [-size, size) of its axis, on CuPy,
    whose indexing wraps such an index silently. As MXNet's GPU kernel, this reads one flag
    on the host (so a step holding gather_nd is not captured as a CUDA graph)."""
    outside = [(w >= size) | (w < -size) for w, size in zip(where, shape)]
    if not bool(xp.any(xp.stack(outside))):
        return
    for axis, (w, bad) in enumerate(zip(where, outside)):
        wrong = backend.asnumpy(w[bad])
        if wrong.size:
            raise IndexError("gather_nd: index %d is out of bounds for axis %d with size %d"
                             % (wrong[0], axis, shape[axis]))


@dataclasses.dataclass(frozen=True)
class ScatterNdAttrs:
    shape: tuple[int, ...]


@register
class ScatterNdOp(_IndexTypes):
    """out = zeros(shape) with out[indices[0, y...], ..., indices[M-1, y...]] = data[y...]:
    the inverse of gather_nd (a position named twice keeps one of the values, as in MXNet,
    where the winner is unspecified). data's gradient gathers the head back."""

    name = "scatter_nd"
    ARGUMENTS = ("data", "indices")
    Attrs = ScatterNdAttrs
    backward_inputs = (1,)
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        self.set_out(out_shapes, 0, tuple(self.attrs.shape), "its shape parameter")
        indices = in_shapes[1]
        if indices is not None and None not in indices:
            self.set_in(in_shapes, 0, tuple(indices[1:]) + tuple(self.attrs.shape[indices[0]:]),
                        "indices %s and shape %s" % (fmt_shape(indices), self.attrs.shape))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        data, indices = inputs
        out[0].fill(0)
        out[0][GatherNdOp._where(indices)] = data

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx, d_indices = in_grads
        if d_indices is not None:
            d_indices.fill(0)
        if dx is not None:
            dx[...] = out_grads[0][GatherNdOp._where(inputs[1])]
