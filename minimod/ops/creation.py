"""Operators that make new values instead of transforming their input: constants of a given
shape (_zeros, _ones, _full), of data's shape (zeros_like, ones_like), ranges (_arange,
_contrib_arange_like, _linspace), the identity matrix (_eye), and facts about data's shape
(shape_array, size_array). None of them passes a gradient: an input, when there is one, only
lends its shape (and dtype) and gets a zero gradient.

The constants of a given shape take MXNet's legacy shape (a 0 dim is unknown), so a consumer
can fill in what the parameter leaves open (`mx.sym.zeros((0, 10))` before a batch of unknown
size).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

from ..base import OpParamError, ShapeError
from .helpers import DTypeName, dtype_of, legacy_shape, zero_grads
from .registry import Op, fmt_shape, register

__all__ = ["ZerosOp", "OnesOp", "FullOp", "ZerosLikeOp", "OnesLikeOp", "ArangeOp",
           "ArangeLikeOp", "LinspaceOp", "EyeOp", "ShapeArray", "SizeArray"]


# ----------------------------------------------------------------------------- constants

@dataclasses.dataclass(frozen=True)
class InitAttrs:
    shape: tuple[int, ...] = ()
    ctx: str = ""
    dtype: DTypeName = "float32"


@dataclasses.dataclass(frozen=True)
class FullAttrs:
    value: float
    shape: tuple[int, ...] = ()
    ctx: str = ""
    dtype: DTypeName = "float32"


class _Fill(Op):
    """Base of the input-less creation ops: out (of `shape`, 0 = unknown dim) filled with a
    constant; unknown dims are inferred backwards from the consumer."""

    ARGUMENTS = ()
    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True
    fill_value: float = 0.0

    def infer_shape(self, in_shapes, out_shapes):
        self.set_out(out_shapes, 0, legacy_shape(self.attrs.shape), "its shape parameter")
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        return list(in_types), [dtype_of(self.attrs.dtype)]

    def forward(self, xp, inputs, aux, out, is_train):
        out[0].fill(self.fill_value)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        pass


@register
class ZerosOp(_Fill):
    """out = 0 of `shape` and `dtype`."""

    name = "_zeros"
    Attrs = InitAttrs


@register
class OnesOp(_Fill):
    """out = 1 of `shape` and `dtype`."""

    name = "_ones"
    Attrs = InitAttrs
    fill_value = 1.0


@register
class FullOp(_Fill):
    """out = `value` of `shape` and `dtype`."""

    name = "_full"
    PARAM_ORDER = ("shape", "ctx", "dtype", "value")
    Attrs = FullAttrs

    def __init__(self, attrs=None):
        super().__init__(attrs)
        self.fill_value = self.attrs.value


class _FillLike(Op):
    """Base of zeros_like / ones_like: out has data's shape and dtype; no gradient."""

    positional_inputs = True  # MXNet's monitor: input0, input1 ...

    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True
    fill_value: float = 0.0

    def forward(self, xp, inputs, aux, out, is_train):
        out[0].fill(self.fill_value)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        zero_grads(in_grads)


@register
class ZerosLikeOp(_FillLike):
    """out = 0 with data's shape and dtype."""

    name = "zeros_like"


@register
class OnesLikeOp(_FillLike):
    """out = 1 with data's shape and dtype."""

    name = "ones_like"
    fill_value = 1.0


# ----------------------------------------------------------------------------- ranges

class _Sequence(Op):
    """Base of the input-less, gradient-less value generators (_arange, _linspace, _eye):
    out has the op's own shape and `dtype`."""

    ARGUMENTS = ()
    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True

    def infer_type(self, in_types, out_types):
        return list(in_types), [dtype_of(self.attrs.dtype)]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        pass


@dataclasses.dataclass(frozen=True)
class ArangeAttrs:
    start: float
    stop: Optional[float] = None
    step: float = 1.0
    repeat: int = 1
    infer_range: bool = False
    ctx: str = ""
    dtype: DTypeName = "float32"


@register
class ArangeOp(_Sequence):
    """out = start, start + step, ... up to (excluding) stop, each value repeated `repeat` times
    (stop None: the range is [0, start)). With infer_range the length comes from the consumer."""

    name = "_arange"
    Attrs = ArangeAttrs

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        if a.step == 0 or a.repeat < 1:
            raise OpParamError("operator _arange: step must be non-zero and repeat >= 1, got "
                               "step=%r repeat=%r" % (a.step, a.repeat))
        start, stop = (0.0, a.start) if a.stop is None else (a.start, a.stop)
        self.start = start
        count = max(0, math.ceil((stop - start) / a.step))
        self.length = None if a.infer_range else count * a.repeat

    def infer_shape(self, in_shapes, out_shapes):
        self.set_out(out_shapes, 0, (self.length,), "its range")
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        _fill_range(xp, out[0], self.start, self.attrs.step, self.attrs.repeat)


def _fill_range(xp, out, start: float, step: float, repeat: int) -> None:
    """out.flat[j] = start + (j // repeat) * step, computed as MXNet's range kernel does: in the
    output dtype for float32/float64, and with start and step first truncated to integers for
    integer dtypes and (an MXNet quirk kept for equal results) float16; integers wrap around."""
    dtype = out.dtype
    index = xp.arange(out.size, dtype="int64") // repeat
    if dtype.kind in "iub" or dtype.name == "float16":
        values = index * int(step) + int(start)
    else:
        values = index.astype(dtype) * dtype.type(step) + dtype.type(start)
    xp.copyto(out, values.reshape(out.shape), casting="unsafe")


@dataclasses.dataclass(frozen=True)
class ArangeLikeAttrs:
    start: float = 0.0
    step: float = 1.0
    repeat: int = 1
    ctx: str = ""
    axis: Optional[int] = None


@register
class ArangeLikeOp(Op):
    """out = start, start + step, ... (each value repeated `repeat` times) in data's shape, or
    along data's `axis` as a 1-D array of that axis's size; data lends only its shape and dtype
    (MXNet's contrib.arange_like); its gradient is zero."""

    name = "_contrib_arange_like"
    Attrs = ArangeLikeAttrs
    backward_inputs = ()
    backward_outputs = ()
    no_gradient = True

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.repeat < 1:
            raise OpParamError("operator _contrib_arange_like: repeat must be >= 1, got %d"
                               % self.attrs.repeat)

    def infer_shape(self, in_shapes, out_shapes):
        data, axis = in_shapes[0], self.attrs.axis
        if data is None:
            return in_shapes, out_shapes
        if axis is None:
            self.set_out(out_shapes, 0, tuple(data))
        else:
            if not -len(data) <= axis < len(data):
                raise ShapeError("input 'data' has shape %s: axis=%d is out of range"
                                 % (fmt_shape(data), axis))
            self.set_out(out_shapes, 0, (data[axis],))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        a = self.attrs
        _fill_range(xp, out[0], a.start, a.step, a.repeat)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        zero_grads(in_grads)


@dataclasses.dataclass(frozen=True)
class LinspaceAttrs(ArangeAttrs):
    num: int = 50
    endpoint: bool = True


@register
class LinspaceOp(_Sequence):
    """out = `num` evenly spaced values from start to stop (stop itself only with endpoint).
    No inputs, no gradient."""

    name = "_linspace"
    # MXNet's frontend signature shows the range parameters it shares with _arange; num and
    # endpoint come by keyword (mx.sym.linspace passes them)
    PARAM_ORDER = ("start", "stop", "step", "repeat", "infer_range", "ctx", "dtype")
    Attrs = LinspaceAttrs

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.num < 0 or self.attrs.stop is None:
            raise OpParamError("operator _linspace: needs stop and num >= 0, got stop=%r num=%r"
                               % (self.attrs.stop, self.attrs.num))

    def infer_shape(self, in_shapes, out_shapes):
        self.set_out(out_shapes, 0, (self.attrs.num,), "its num")
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        # start + i * step in float64, as MXNet (the last value may differ from stop by an
        # ulp, where NumPy's linspace sets it to stop), then cast (integers truncate)
        a = self.attrs
        intervals = a.num - 1 if a.endpoint else a.num
        step = (a.stop - a.start) / intervals if intervals > 0 else 0.0
        values = xp.arange(a.num, dtype="float64") * step + a.start
        xp.copyto(out[0], values, casting="unsafe")


@dataclasses.dataclass(frozen=True)
class EyeAttrs:
    N: int
    M: int = 0
    k: int = 0
    ctx: str = ""
    dtype: DTypeName = "float32"


@register
class EyeOp(_Sequence):
    """out = an N x M (M = 0: N x N) matrix of zeros with ones on the k-th diagonal (k > 0
    above the main one). No inputs, no gradient."""

    name = "_eye"
    Attrs = EyeAttrs

    def infer_shape(self, in_shapes, out_shapes):
        a = self.attrs
        self.set_out(out_shapes, 0, (a.N, a.M or a.N), "its N and M")
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        a = self.attrs
        xp.copyto(out[0], xp.eye(a.N, a.M or a.N, a.k), casting="unsafe")


# ----------------------------------------------------------------------------- shape facts

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
