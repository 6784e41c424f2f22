"""`_contrib_quantize` and `_contrib_dequantize`: float32 to 8-bit integers and back, with
the numbers MXNet 1.9.1's CPU build gives (its oneDNN kernels), not the formulas of its docs.

With r = max(|min_range|, |max_range|):

- quantize to int8: ``clip(rint(x * (127 / r)), -128, 127)``, reporting the range (-r, r);
- quantize to uint8: ``clip(rint(x * (255 / r)), 0, 255)`` (negative values saturate at 0),
  reporting the range it was given;
- dequantize int8: ``q * (r / 127.5)``; uint8: ``q * (r / 255.5)``;

all in float32, `rint` rounding halves to even. (MXNet's documentation describes an offset
by min_range for uint8 and a 127 divisor for int8; its build computes the above, and the
goldens in tests/data/contrib were written by it.) Neither op has a gradient: MXNet gives the
data a zero one, and so does minimod. quantize_v2 and requantize are not here.
"""
from __future__ import annotations

import dataclasses
from typing import Literal

from ...base import DTypeError
from ..helpers import dtype_of
from ..registry import Op, register


def _range(xp, lo, hi):
    """r = max(|min_range|, |max_range|) as a float32 scalar array."""
    return xp.maximum(xp.abs(lo.astype("float32")), xp.abs(hi.astype("float32"))).reshape(())


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
        for grad in in_grads:
            if grad is not None:
                grad.fill(0)


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
        if self.attrs.out_type == "int8":
            codes = xp.rint(data * (xp.float32(127) / r))
            xp.copyto(out[0], xp.clip(codes, -128, 127), casting="unsafe")
            out[1][...], out[2][...] = -r, r
        else:
            codes = xp.rint(data * (xp.float32(255) / r))
            xp.copyto(out[0], xp.clip(codes, 0, 255), casting="unsafe")
            out[1][...], out[2][...] = lo, hi


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
