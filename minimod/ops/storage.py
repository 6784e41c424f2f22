"""Storage-type conversion: `cast_storage`.

MXNet keeps arrays dense ('default'), row-sparse or CSR. minimod's NDArrays take all three
(`mx.nd.cast_storage` and `tostype` convert them, minimod.ndarray.sparse), but its executors
keep a graph's arrays dense, so in a graph `cast_storage(data, stype='default')` is a copy (the
gradient passes through) and the sparse storage types are refused with an error that says so,
when the node is made.
"""
from __future__ import annotations

import dataclasses
from typing import Literal

from ..base import OpParamError
from .registry import Op, register

__all__ = ["CastStorage"]


@dataclasses.dataclass(frozen=True)
class CastStorageAttrs:
    stype: Literal["default", "row_sparse", "csr"]


@register
class CastStorage(Op):
    """out = data stored as `stype`: dense to dense is a copy."""

    name = "cast_storage"
    Attrs = CastStorageAttrs
    inplace = ((0, 0),)
    backward_inputs = ()
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.stype != "default":
            raise OpParamError("operator cast_storage: stype=%r is a sparse storage type; "
                               "minimod's executors keep a graph's arrays dense ('default'): "
                               "convert NDArrays with mx.nd.cast_storage or tostype"
                               % self.attrs.stype)

    def forward(self, xp, inputs, aux, out, is_train):
        if out[0] is not inputs[0]:
            xp.copyto(out[0], inputs[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            xp.copyto(in_grads[0], out_grads[0])
