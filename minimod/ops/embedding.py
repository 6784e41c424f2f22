"""Embedding (and its deprecated contrib twin SparseEmbedding): rows of a learnt table looked
up by index."""
from __future__ import annotations

import dataclasses
import functools
from typing import Literal

from .. import backend
from ..backend import clip_into, const, take_rows
from ..base import GraphError
from .helpers import param_error, write_grad
from .registry import Op, register
from .scratch import _arange, _ScratchMixin

__all__ = ["Embedding", "SparseEmbedding"]


@functools.lru_cache(maxsize=None)
def _rounds_up(dtype, last: int) -> bool:
    """Whether float `dtype` holds row number `last` as a larger number (float32 past 2^24
    rows, float16 past 2^11), so that an index clipped to it in the data's type must be
    clipped again as a row number. Asked once per (dtype, table)."""
    return dtype.kind == "f" and int(dtype.type(last)) > last


@dataclasses.dataclass(frozen=True)
class EmbeddingAttrs:
    input_dim: int
    output_dim: int
    dtype: Literal["float16", "float32", "float64", "uint8", "int8", "int32", "int64"] = "float32"
    sparse_grad: bool = False


@register
class Embedding(_ScratchMixin, Op):
    """Row lookup: out[i...] = weight[index(data[i...])], out is data.shape + (output_dim,).

    data holds indices as numbers; they are truncated to integers and clipped to
    [0, input_dim - 1]. weight is (input_dim, output_dim). Repeated indices accumulate their
    gradients; data gets a zero gradient.
    """

    name = "Embedding"
    Attrs = EmbeddingAttrs
    ARGUMENTS = ("data", "weight")
    backward_inputs = (0,)
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.input_dim <= 0 or self.attrs.output_dim <= 0:
            raise param_error(self.name, "input_dim and output_dim must be positive")

    def infer_shape(self, in_shapes: list, out_shapes: list):
        a = self.attrs
        self.set_in(in_shapes, 1, (a.input_dim, a.output_dim),
                    "input_dim=%d and output_dim=%d" % (a.input_dim, a.output_dim))
        if in_shapes[0] is not None:
            self.set_out(out_shapes, 0, tuple(in_shapes[0]) + (a.output_dim,))
        if out_shapes[0] is not None and len(out_shapes[0]) >= 1:
            self.set_in(in_shapes, 0, tuple(out_shapes[0][:-1]))
        return in_shapes, out_shapes

    def infer_type(self, in_types: list, out_types: list):
        in_types, out_types = list(in_types), list(out_types)
        dtype = next((t for t in (in_types[1], out_types[0]) if t is not None),
                     self.attrs.dtype)
        in_types[1] = dtype
        out_types[0] = dtype
        return in_types, out_types

    def _indices(self, xp, data):
        """data as int64 row numbers clipped to the table, in a reused scratch array."""
        idx = self._scratch(xp, "idx", data.shape, "int64")
        last = self.attrs.input_dim - 1
        clip_into(xp, data, const(xp, 0, data.dtype), const(xp, last, data.dtype), idx)
        if _rounds_up(data.dtype, last):
            xp.minimum(idx, last, out=idx)
        return idx

    def forward(self, xp, inputs, aux, out, is_train):
        y = out[0]
        rows = self._indices(xp, inputs[0]).reshape(-1)
        if y.flags.c_contiguous:
            take_rows(xp, inputs[1], rows, y.reshape(rows.shape[0], inputs[1].shape[1]))
        else:
            y[...] = inputs[1][rows].reshape(y.shape)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        write_grad(in_grads[0], 0)
        dw = in_grads[1]
        if dw is None:
            return
        dw.fill(0)
        d = self.attrs.output_dim
        rows = self._indices(xp, inputs[0]).reshape(-1)
        grad = out_grads[0].reshape(-1, d)
        if not (dw.flags.c_contiguous and grad.flags.c_contiguous):
            backend.scatter_add(xp, dw, rows, grad)
            return
        # one flat index per element: NumPy's add.at is an order of magnitude faster on a
        # 1-D index than on whole rows, and sums repeated rows in the same order
        flat = self._scratch(xp, "flat", grad.shape, "int64")
        xp.multiply(rows[:, None], const(xp, d, flat.dtype), out=flat)
        flat += _arange(xp, d)
        backend.scatter_add(xp, dw.reshape(-1), flat.reshape(-1), grad.reshape(-1))


@register
class SparseEmbedding(Embedding):
    """`mx.sym.contrib.SparseEmbedding`, Embedding's deprecated twin whose weight gradient
    MXNet stores row-sparse: the same lookup and the same gradient values, held dense here (as
    every array of minimod). Like MXNet's, it has no gradient for its data: binding one
    ('write' or 'add' for the indices) fails in backward with a message."""

    name = "_contrib_SparseEmbedding"

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            raise GraphError("SparseEmbedding has no gradient for its data (the indices): "
                             "bind them with grad_req='null'")
        super().backward(xp, out_grads, inputs, outputs, in_grads, aux)
