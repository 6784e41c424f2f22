"""Arg-reductions, top-k and sorting: argmax, argmin, argmax_channel, topk, sort, argsort.

As in MXNet 1.9.1, indices come back as floats in the input's dtype (argmax/argmin) or in
`dtype` (topk, argsort); ties keep the lower index first. Only the values of topk and sort
carry a gradient, which goes back to the positions they came from.
"""
from __future__ import annotations

import dataclasses
from typing import Literal, Optional

from ..base import OpParamError, ShapeError
from .helpers import data_axis, dtype_of, prod_or_none, zero_grads
from .reductions import reduced_shape
from .registry import NoAttrs, Op, fmt_shape, register

__all__ = ["ArgmaxOp", "ArgminOp", "ArgmaxChannelOp", "TopkOp", "SortOp", "ArgsortOp"]


@dataclasses.dataclass(frozen=True)
class ArgReduceAttrs:
    axis: Optional[int] = None
    keepdims: bool = False


class _ArgReduce(Op):
    """Base of argmax/argmin: the index of the extreme along `axis` (None: of the flattened
    data, shape (1,) or all-1s with keepdims), as a float in data's dtype; first index on ties;
    no gradient."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    Attrs = ArgReduceAttrs
    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is not None:
            axis = self.attrs.axis
            axes = (tuple(range(len(data))) if axis is None
                    else (data_axis(axis, len(data), data),))
            self.set_out(out_shapes, 0, reduced_shape(data, axes, self.attrs.keepdims))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        x, o = inputs[0], out[0]
        if self.attrs.axis is None:
            o[...] = self.arg(x.reshape(-1), 0)
        else:
            o[...] = self.arg(x, self.attrs.axis).reshape(o.shape)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        zero_grads(in_grads)


@register
class ArgmaxOp(_ArgReduce):
    name = "argmax"
    __doc__ = _ArgReduce.__doc__.replace("the extreme", "the maximum")

    @staticmethod
    def arg(x, axis):
        return x.argmax(axis=axis)


@register
class ArgminOp(_ArgReduce):
    name = "argmin"
    __doc__ = _ArgReduce.__doc__.replace("the extreme", "the minimum")

    @staticmethod
    def arg(x, axis):
        return x.argmin(axis=axis)


@register
class ArgmaxChannelOp(_ArgReduce):
    """out = argmax of data along axis 1 (the channel axis), as a float in data's dtype."""

    name = "argmax_channel"
    Attrs = NoAttrs

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is not None:
            axis = data_axis(1, len(data), data)
            self.set_out(out_shapes, 0, reduced_shape(data, (axis,), False))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        out[0][...] = inputs[0].argmax(axis=1).reshape(out[0].shape)


@dataclasses.dataclass(frozen=True)
class TopkAttrs:
    axis: Optional[int] = -1
    k: int = 1
    ret_typ: Literal["both", "indices", "mask", "value"] = "indices"
    is_ascend: bool = False
    dtype: Literal["float16", "float32", "float64", "int32", "int64", "uint8"] = "float32"


@register
class TopkOp(Op):
    """The k largest (is_ascend: smallest) entries along `axis` (None: of the flattened data).

    ret_typ 'value': the entries, sorted; 'indices': their positions (in `dtype`); 'both': the
    two outputs (value, indices); 'mask': data's shape, 1 at the chosen positions. The axis
    dim becomes k. Ties keep the lower index first. Only 'value' and 'both' carry a gradient,
    which goes back to the chosen positions.
    """

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "topk"
    Attrs = TopkAttrs
    backward_inputs = ()
    backward_outputs = (1,)

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.k < 1:
            raise OpParamError("operator topk: k must be >= 1, got %d" % self.attrs.k)
        kind = self.attrs.ret_typ
        self.no_gradient = kind in ("indices", "mask")
        # value and indices are both computed; 'value' alone keeps indices as a hidden output
        self._outputs = ["output0", "output1"] if kind in ("both", "value") else ["output"]
        self._visible = 2 if kind == "both" else 1
        if kind != "both" and kind != "value":
            self.backward_outputs = ()

    def outputs(self) -> list:
        return list(self._outputs)

    def num_visible_outputs(self) -> int:
        return self._visible

    def output_names(self, node_name: str) -> list:
        # MXNet names the lone visible output of ret_typ='value' `<name>_output0`
        if self.attrs.ret_typ == "value":
            return ["%s_output0" % node_name]
        return super().output_names(node_name)

    def _axis(self, shape) -> Optional[int]:
        return None if self.attrs.axis is None else data_axis(self.attrs.axis, len(shape),
                                                                    shape)

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, out_shapes
        axis = self._axis(data)
        if self.attrs.ret_typ == "mask":
            self.set_out(out_shapes, 0, data)
            return in_shapes, out_shapes
        if axis is None:
            picked = (self.attrs.k,)
        else:
            if data[axis] is not None and data[axis] < self.attrs.k:
                raise ShapeError("input 'data' has shape %s but topk needs k=%d entries along "
                                 "axis %d" % (fmt_shape(data), self.attrs.k, axis))
            picked = data[:axis] + (self.attrs.k,) + data[axis + 1:]
        for i in range(len(out_shapes)):
            self.set_out(out_shapes, i, picked)
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        data = in_types[0]
        index = dtype_of(self.attrs.dtype)
        kind = self.attrs.ret_typ
        if kind == "indices":
            return list(in_types), [index]
        if kind == "mask":
            return list(in_types), [data]
        return list(in_types), [data, index]

    def _select(self, xp, x):
        """(x, or x flattened when axis is None; the axis; the index tuple of the k chosen)."""
        axis = self._axis(x.shape)
        if axis is None:
            x, axis = x.reshape(-1), 0
        keys = x if self.attrs.is_ascend else -x
        order = xp.argsort(keys, axis=axis, kind="stable")
        idx = xp.take(order, xp.arange(self.attrs.k), axis=axis)
        return x, _along_axis(xp, idx, axis)

    def forward(self, xp, inputs, aux, out, is_train):
        flat, where = self._select(xp, inputs[0])
        kind = self.attrs.ret_typ
        if kind == "mask":
            out[0].fill(0)
            target = out[0].reshape(-1) if self.attrs.axis is None else out[0]
            target[where] = 1
            return
        axis = 0 if self.attrs.axis is None else self._axis(flat.shape)
        positions = where[axis]
        if kind == "indices":
            xp.copyto(out[0], positions.reshape(out[0].shape), casting="unsafe")
            return
        xp.copyto(out[0], flat[where].reshape(out[0].shape))
        xp.copyto(out[1], positions.reshape(out[1].shape), casting="unsafe")

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is None:
            return
        dx.fill(0)
        if self.no_gradient:
            return
        axis = self._axis(dx.shape)
        if axis is None:
            target, axis = dx.reshape(-1), 0
            positions = outputs[1].reshape(-1).astype("int64")
        else:
            target, positions = dx, outputs[1].astype("int64")
        where = _along_axis(xp, positions, axis)
        target[where] = out_grads[0].reshape(positions.shape)


@dataclasses.dataclass(frozen=True)
class SortAttrs:
    axis: Optional[int] = -1
    is_ascend: bool = True


@register
class SortOp(Op):
    """data sorted along `axis` (None: the flattened data), ascending or descending; equal
    entries keep their order. The hidden output holds the positions the values came from,
    and the gradient goes back to them."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    name = "sort"
    Attrs = SortAttrs
    OUTPUTS = ("output0", "output1")
    backward_inputs = ()
    backward_outputs = (1,)

    def num_visible_outputs(self) -> int:
        return 1

    def output_names(self, node_name: str) -> list:
        return ["%s_output0" % node_name]  # MXNet's name for the lone visible output

    def _axis(self, shape) -> Optional[int]:
        return None if self.attrs.axis is None else data_axis(self.attrs.axis, len(shape),
                                                                    shape)

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        if data is not None:
            shape = (prod_or_none(data),) if self.attrs.axis is None else data
            if self.attrs.axis is not None:
                self._axis(data)
            self.set_out(out_shapes, 0, shape)
            self.set_out(out_shapes, 1, shape)
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        return list(in_types), [in_types[0], dtype_of("float32")]

    def _order(self, xp, x):
        """(x, flattened when axis is None; the axis; the sorting positions along it)."""
        axis = self._axis(x.shape)
        if axis is None:
            x, axis = x.reshape(-1), 0
        keys = x if self.attrs.is_ascend else -x
        return x, axis, xp.argsort(keys, axis=axis, kind="stable")

    def forward(self, xp, inputs, aux, out, is_train):
        x, axis, order = self._order(xp, inputs[0])
        out[0][...] = x[_along_axis(xp, order, axis)].reshape(out[0].shape)
        xp.copyto(out[1], order.reshape(out[1].shape), casting="unsafe")

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        dx = in_grads[0]
        if dx is None:
            return
        axis = self._axis(dx.shape)
        target = dx.reshape(-1) if axis is None else dx
        positions = outputs[1].astype("int64")
        dx.fill(0)
        target[_along_axis(xp, positions, 0 if axis is None else axis)] = out_grads[0]


@dataclasses.dataclass(frozen=True)
class ArgsortAttrs:
    axis: Optional[int] = -1
    is_ascend: bool = True
    dtype: Literal["float16", "float32", "float64", "int32", "int64", "uint8"] = "float32"


@register
class ArgsortOp(SortOp):
    """The positions that sort data along `axis` (None: the flattened data), in `dtype`;
    equal entries keep their order. No gradient."""

    name = "argsort"
    Attrs = ArgsortAttrs
    OUTPUTS = ("output",)
    backward_outputs = ()
    no_gradient = True

    def output_names(self, node_name: str) -> list:
        return ["%s_output" % node_name]

    def infer_shape(self, in_shapes, out_shapes):
        in_shapes, out_shapes = super().infer_shape(in_shapes, out_shapes + [None])
        return in_shapes, out_shapes[:1]

    def infer_type(self, in_types, out_types):
        return list(in_types), [dtype_of(self.attrs.dtype)]

    def forward(self, xp, inputs, aux, out, is_train):
        _, _, order = self._order(xp, inputs[0])
        xp.copyto(out[0], order.reshape(out[0].shape), casting="unsafe")

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            in_grads[0].fill(0)


def _along_axis(xp, idx, axis: int) -> tuple:
    """The fancy index that picks, along `axis`, position idx[..., j, ...] (others in place)."""
    parts = []
    for d, size in enumerate(idx.shape):
        if d == axis:
            parts.append(idx)
        else:
            shape = [1] * idx.ndim
            shape[d] = size
            parts.append(xp.arange(size).reshape(shape))
    return tuple(parts)
