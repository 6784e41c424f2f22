"""MXNet's standalone quantization operators, with the numbers MXNet 1.9.1's CPU build gives
(its oneDNN kernels), not the formulas of its docs: `_contrib_quantize`, `_contrib_quantize_v2`,
`_contrib_dequantize` and `_contrib_requantize`.

With r = max(|min|, |max|) of the range in play:

- quantize to int8: ``clip(rint(x * (127 / r)), -128, 127)``, reporting (-r, r); to uint8:
  ``clip(rint(x * (255 / r)), 0, 255)`` (negative values saturate at 0), reporting the range
  it was given;
- quantize_v2: the range is the calibration range when given, else the data's own minimum and
  maximum; int8 ``clip(rint(x * (127.5 / r)), -128, 127)`` reporting (-r, r), uint8
  ``clip(rint(x * (255.5 / r)), 0, 255)`` reporting the range; 'auto' is uint8 only for a
  calibration range that starts at 0 or above;
- dequantize int8: ``q * (r / 127.5)``; uint8: ``q * (r / 255.5)``;
- requantize: int32 codes of the range (min_range, max_range) are the values
  ``q * (r / (2**31 - 1))``, requantized by the calibration range, else by their own largest
  magnitude m: int8 ``clip(rint(v * (127 / m)), -128, 127)`` reporting (-m, m), uint8
  ``clip(rint(v * (255 / m)), 0, 255)`` reporting (0, m); 'auto' as quantize_v2's;

all in float32, `rint` rounding halves to even. (MXNet's documentation describes an offset
by min_range for uint8 and a 127 divisor for int8; its build computes the above, and the
goldens in tests/data/contrib were written by it.) None has a gradient: MXNet gives the data a
zero one, and so does minimod. The quantized layers (quantized_conv ...) are not here.
"""
from __future__ import annotations

import dataclasses
from typing import Literal, Optional

from ...base import DTypeError, OpParamError
from ..helpers import dtype_of, zero_grads
from ..registry import Op, register


def _range(xp, lo, hi):
    """r = max(|min_range|, |max_range|) as a float32 scalar array."""
    return xp.maximum(xp.abs(lo.astype("float32")), xp.abs(hi.astype("float32"))).reshape(())


def _encode(xp, values, r, levels: float, kind: str, out) -> None:
    """Write ``clip(rint(values * (levels / r)))`` into `out`, clipped to `kind`'s codes."""
    low, high = (-128, 127) if kind == "int8" else (0, 255)
    xp.copyto(out, xp.clip(xp.rint(values * (xp.float32(levels) / r)), low, high),
              casting="unsafe")


class _RangedOp(Op):
    """An 8-bit conversion with a (1,) min and max range beside its data."""

    ARGUMENTS = ("data", "min_range", "max_range")
    backward_inputs = ()
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        self.same_shape(in_shapes, out_shapes, in_idx=(0,), out_idx=(0,))
        for slot in (1, 2):
            self.set_in(in_shapes, slot, (1,), "a (1,) range")
        for slot in range(1, len(out_shapes)):
            self.set_out(out_shapes, slot, (1,))
        return in_shapes, out_shapes

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        """Zero for every input, as MXNet's gradient of these ops."""
        zero_grads(in_grads)


@register
class Quantize(_RangedOp):
    """float32 data to int8 or uint8 (out_type, default uint8) by the range [min_range,
    max_range]; outputs the codes and the range they stand for (see the module docstring)."""

    name = "_contrib_quantize"
    OUTPUTS = ("output", "min_output", "max_output")

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        out_type: Literal["int8", "uint8"] = "uint8"

    def infer_type(self, in_types, out_types):
        if in_types[0] is not None and in_types[0] != dtype_of("float32"):
            raise DTypeError("%s: input 'data' must be float32, got %s" % (self.name, in_types[0]))
        f32 = dtype_of("float32")
        return [f32] * 3, [dtype_of(self.attrs.out_type), f32, f32]

    def forward(self, xp, inputs, aux, out, is_train):
        data, lo, hi = inputs
        r = _range(xp, lo, hi)
        kind = self.attrs.out_type
        _encode(xp, data, r, 127 if kind == "int8" else 255, kind, out[0])
        out[1][...], out[2][...] = (-r, r) if kind == "int8" else (lo, hi)


@register
class Dequantize(_RangedOp):
    """int8 or uint8 codes back to float32 by the range they stand for."""

    name = "_contrib_dequantize"

    @dataclasses.dataclass(frozen=True)
    class Attrs:
        out_type: Literal["float32"] = "float32"

    def infer_type(self, in_types, out_types):
        if in_types[0] is not None and in_types[0] not in (dtype_of("int8"), dtype_of("uint8")):
            raise DTypeError("%s: input 'data' must be int8 or uint8, got %s"
                             % (self.name, in_types[0]))
        f32 = dtype_of("float32")
        return [in_types[0], f32, f32], [f32]

    def forward(self, xp, inputs, aux, out, is_train):
        data, lo, hi = inputs
        levels = xp.float32(127.5 if data.dtype == dtype_of("int8") else 255.5)
        xp.multiply(data.astype("float32"), _range(xp, lo, hi) / levels, out=out[0])


@dataclasses.dataclass(frozen=True)
class _CalibratedAttrs:
    out_type: Literal["auto", "int8", "uint8"] = "int8"
    min_calib_range: Optional[float] = None
    max_calib_range: Optional[float] = None


def _calibrated_kind(attrs) -> str:
    """The code type `out_type` names; 'auto': uint8 for a calibration range starting at 0
    or above, else int8 (MXNet's choice, uncalibrated data included)."""
    if attrs.out_type != "auto":
        return attrs.out_type
    low = attrs.min_calib_range
    return "uint8" if low is not None and low >= 0 else "int8"


def _calibration(attrs):
    if (attrs.min_calib_range is None) != (attrs.max_calib_range is None):
        raise OpParamError("min_calib_range and max_calib_range go together")
    return attrs.min_calib_range, attrs.max_calib_range


@register
class QuantizeV2(Op):
    """float32 data to int8 or uint8 by a calibration range or the data's own (see the module
    docstring); outputs the codes and the range they stand for."""

    name = "_contrib_quantize_v2"
    Attrs = _CalibratedAttrs
    OUTPUTS = ("output", "min_output", "max_output")
    backward_inputs = ()
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        self.same_shape(in_shapes, out_shapes, in_idx=(0,), out_idx=(0,))
        self.set_out(out_shapes, 1, (1,))
        self.set_out(out_shapes, 2, (1,))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        if in_types[0] is not None and in_types[0] != dtype_of("float32"):
            raise DTypeError("%s: input 'data' must be float32, got %s" % (self.name, in_types[0]))
        f32 = dtype_of("float32")
        return [f32], [dtype_of(_calibrated_kind(self.attrs)), f32, f32]

    def forward(self, xp, inputs, aux, out, is_train):
        data = inputs[0]
        low, high = _calibration(self.attrs)
        if low is None:
            low, high = (data.min(), data.max()) if data.size else (0.0, 0.0)
        low, high = xp.asarray(low, dtype="float32"), xp.asarray(high, dtype="float32")
        r = xp.maximum(xp.abs(low), xp.abs(high))
        kind = _calibrated_kind(self.attrs)
        _encode(xp, data, r, 127.5 if kind == "int8" else 255.5, kind, out[0])
        out[1][...], out[2][...] = (-r, r) if kind == "int8" else (low, high)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        """Zero, as MXNet's gradient of this op."""
        zero_grads(in_grads)


@register
class Requantize(_RangedOp):
    """int32 codes (of a (1,) min and max range) to int8 or uint8 (see the module docstring)."""

    name = "_contrib_requantize"
    Attrs = _CalibratedAttrs
    OUTPUTS = ("output", "min_output", "max_output")

    def infer_type(self, in_types, out_types):
        if in_types[0] is not None and in_types[0] != dtype_of("int32"):
            raise DTypeError("%s: input 'data' must be int32, got %s" % (self.name, in_types[0]))
        f32 = dtype_of("float32")
        return [dtype_of("int32"), f32, f32], [dtype_of(_calibrated_kind(self.attrs)), f32, f32]

    def forward(self, xp, inputs, aux, out, is_train):
        data, lo, hi = inputs
        values = data.astype("float32") * (_range(xp, lo, hi) / xp.float32(2 ** 31 - 1))
        low, high = _calibration(self.attrs)
        if low is None:
            m = xp.abs(values).max() if values.size else xp.asarray(0, dtype="float32")
        else:
            m = xp.asarray(max(abs(low), abs(high)), dtype="float32")
        kind = _calibrated_kind(self.attrs)
        _encode(xp, values, m, 127 if kind == "int8" else 255, kind, out[0])
        out[1][...], out[2][...] = (-m, m) if kind == "int8" else (0, m)
