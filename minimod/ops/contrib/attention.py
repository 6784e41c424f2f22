"""The interleaved multi-head attention products of MXNet's transformer support:
interleaved_matmul_selfatt_qk, interleaved_matmul_selfatt_valatt, interleaved_matmul_encdec_qk
and interleaved_matmul_encdec_valatt.

The projections arrive time-major and interleaved per head, as one FullyConnected layer makes
them:
- self-attention: qkv (L, B, H * 3 * D), viewed as (L, B, H, 3, D): the query, key and value
  of head h are qkv[:, :, h, 0], [.., 1] and [.., 2];
- encoder-decoder: queries (Lq, B, H * D) viewed as (Lq, B, H, D), and keys_values
  (Lk, B, H * 2 * D) viewed as (Lk, B, H, 2, D) with the key first, then the value.
Attention scores are batched over (batch, head) pairs, b * H + h, as (B * H, Lq, Lk); the
weighted values go back to (Lq, B, H * D), the layout the output projection reads.

Each op is bilinear in its two operands (or in two slices of one), so its backward is two more
batched products; a slice of the interleaved input that the op does not read gets zero
gradient.
"""
from __future__ import annotations

import dataclasses
import math

from ...backend import matmul
from ...base import OpParamError, ShapeError
from ..registry import Op, fmt_shape, register

__all__ = ["InterleavedSelfAttQK", "InterleavedSelfAttValAtt", "InterleavedEncDecQK",
           "InterleavedEncDecValAtt"]


@dataclasses.dataclass(frozen=True)
class HeadsAttrs:
    heads: int


def _per_head(x, heads: int, parts: int):
    """(L, B, H * parts * D) -> the view (L, B, H, parts, D)."""
    length, batch, width = x.shape
    return x.reshape(length, batch, heads, parts, width // (heads * parts))


def _batched(t):
    """(L, B, H, D) -> (B * H, L, D), a copy laid out for batched products."""
    length, batch, heads, dim = t.shape
    return t.transpose(1, 2, 0, 3).reshape(batch * heads, length, dim)


def _time_major(y, batch: int):
    """(B * H, L, D) -> the view (L, B, H, D)."""
    bh, length, dim = y.shape
    return y.reshape(batch, bh // batch, length, dim).transpose(2, 0, 1, 3)


def _swap(x):
    return x.transpose(0, 2, 1)


class _Interleaved(Op):
    """Base: the `heads` check, shape helpers and one dtype for every slot."""

    Attrs = HeadsAttrs

    def __init__(self, attrs=None):
        super().__init__(attrs)
        if self.attrs.heads < 1:
            raise OpParamError("operator %s: heads must be >= 1, got %d"
                               % (self.name, self.attrs.heads))

    def _check_proj(self, slot: int, shape, parts: int) -> bool:
        """True when input `slot` is a fully known (L, B, H * parts * D) projection."""
        if shape is None:
            return False
        width = shape[2] if len(shape) == 3 else None
        if len(shape) != 3 or (width is not None and width % (self.attrs.heads * parts)):
            raise ShapeError("%s: input '%s' has shape %s but must be (seq_length, batch, "
                             "heads * %d * head_dim) with heads=%d"
                             % (self.name, self._in_name(slot), fmt_shape(shape), parts,
                                self.attrs.heads))
        return None not in shape

    def _scale(self, dtype, width: int, parts: int):
        """1 / sqrt(head_dim), the score scaling of the query-key products."""
        return dtype.type(1.0 / math.sqrt(width // (self.attrs.heads * parts)))


@register
class InterleavedSelfAttQK(_Interleaved):
    """out[b H + h] = q_bh k_bh^T / sqrt(D): qkv (L, B, H * 3 * D) -> scores (B * H, L, L)."""

    name = "_contrib_interleaved_matmul_selfatt_qk"
    ARGUMENTS = ("queries_keys_values",)
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        qkv = in_shapes[0]
        if self._check_proj(0, qkv, 3):
            self.set_out(out_shapes, 0, (qkv[1] * self.attrs.heads, qkv[0], qkv[0]))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        qkv = _per_head(inputs[0], self.attrs.heads, 3)
        q, k = _batched(qkv[:, :, :, 0]), _batched(qkv[:, :, :, 1])
        matmul(xp, q, _swap(k), out=out[0])
        out[0] *= self._scale(out[0].dtype, inputs[0].shape[2], 3)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        d_qkv = in_grads[0]
        if d_qkv is None:
            return
        qkv = _per_head(inputs[0], self.attrs.heads, 3)
        q, k = _batched(qkv[:, :, :, 0]), _batched(qkv[:, :, :, 1])
        g = out_grads[0] * self._scale(out_grads[0].dtype, inputs[0].shape[2], 3)
        grads = _per_head(d_qkv, self.attrs.heads, 3)
        batch = d_qkv.shape[1]
        grads[:, :, :, 0] = _time_major(matmul(xp, g, k), batch)
        grads[:, :, :, 1] = _time_major(matmul(xp, _swap(g), q), batch)
        grads[:, :, :, 2] = 0


@register
class InterleavedSelfAttValAtt(_Interleaved):
    """out (L, B, H * D): head h of batch b is attention[b H + h] . v_bh, with v the value
    slice of qkv (L, B, H * 3 * D) and attention (B * H, L, L)."""

    name = "_contrib_interleaved_matmul_selfatt_valatt"
    ARGUMENTS = ("queries_keys_values", "attention")
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        qkv = in_shapes[0]
        if self._check_proj(0, qkv, 3):
            length, batch, width = qkv
            self.set_in(in_shapes, 1, (batch * self.attrs.heads, length, length),
                        "queries_keys_values %s" % fmt_shape(qkv))
            self.set_out(out_shapes, 0, (length, batch, width // 3))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        qkv, att = inputs
        v = _batched(_per_head(qkv, self.attrs.heads, 3)[:, :, :, 2])
        length, batch, _ = out[0].shape
        out[0].reshape(length, batch, self.attrs.heads, -1)[...] = _time_major(
            matmul(xp, att, v), batch)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        qkv, att = inputs
        d_qkv, d_att = in_grads
        length, batch, _ = qkv.shape
        g = _batched(out_grads[0].reshape(length, batch, self.attrs.heads, -1))
        if d_att is not None:
            v = _batched(_per_head(qkv, self.attrs.heads, 3)[:, :, :, 2])
            matmul(xp, g, _swap(v), out=d_att)
        if d_qkv is not None:
            grads = _per_head(d_qkv, self.attrs.heads, 3)
            grads[:, :, :, :2] = 0
            grads[:, :, :, 2] = _time_major(matmul(xp, _swap(att), g), batch)


@register
class InterleavedEncDecQK(_Interleaved):
    """out[b H + h] = q_bh k_bh^T / sqrt(D): queries (Lq, B, H * D), keys_values
    (Lk, B, H * 2 * D) -> scores (B * H, Lq, Lk)."""

    name = "_contrib_interleaved_matmul_encdec_qk"
    ARGUMENTS = ("queries", "keys_values")
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        queries, kv = in_shapes
        q_known = self._check_proj(0, queries, 1)
        kv_known = self._check_proj(1, kv, 2)
        if q_known and kv_known:
            if kv[1] != queries[1] or kv[2] != 2 * queries[2]:
                raise ShapeError("%s: input 'keys_values' %s must be (seq_length, %d, %d) for "
                                 "queries %s" % (self.name, fmt_shape(kv), queries[1],
                                                 2 * queries[2], fmt_shape(queries)))
            self.set_out(out_shapes, 0, (queries[1] * self.attrs.heads, queries[0], kv[0]))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        queries, kv = inputs
        heads = self.attrs.heads
        q = _batched(_per_head(queries, heads, 1)[:, :, :, 0])
        k = _batched(_per_head(kv, heads, 2)[:, :, :, 0])
        matmul(xp, q, _swap(k), out=out[0])
        out[0] *= self._scale(out[0].dtype, queries.shape[2], 1)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        queries, kv = inputs
        d_q, d_kv = in_grads
        heads, batch = self.attrs.heads, queries.shape[1]
        g = out_grads[0] * self._scale(out_grads[0].dtype, queries.shape[2], 1)
        if d_q is not None:
            k = _batched(_per_head(kv, heads, 2)[:, :, :, 0])
            _per_head(d_q, heads, 1)[:, :, :, 0] = _time_major(matmul(xp, g, k), batch)
        if d_kv is not None:
            q = _batched(_per_head(queries, heads, 1)[:, :, :, 0])
            grads = _per_head(d_kv, heads, 2)
            grads[:, :, :, 0] = _time_major(matmul(xp, _swap(g), q), batch)
            grads[:, :, :, 1] = 0


@register
class InterleavedEncDecValAtt(_Interleaved):
    """out (Lq, B, H * D): head h of batch b is attention[b H + h] . v_bh, with v the value
    slice of keys_values (Lk, B, H * 2 * D) and attention (B * H, Lq, Lk)."""

    name = "_contrib_interleaved_matmul_encdec_valatt"
    ARGUMENTS = ("keys_values", "attention")
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        kv, att = in_shapes
        if att is not None and len(att) != 3:
            raise ShapeError("%s: input 'attention' has shape %s but must be (batch * heads, "
                             "query_length, key_length)" % (self.name, fmt_shape(att)))
        if self._check_proj(0, kv, 2):
            length, batch, width = kv
            self.set_in(in_shapes, 1, (batch * self.attrs.heads, None, length),
                        "keys_values %s" % fmt_shape(kv))
            q_len = in_shapes[1][1]
            self.set_out(out_shapes, 0, (q_len, batch, width // 2))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        kv, att = inputs
        heads, batch = self.attrs.heads, kv.shape[1]
        v = _batched(_per_head(kv, heads, 2)[:, :, :, 1])
        q_len = out[0].shape[0]
        out[0].reshape(q_len, batch, heads, -1)[...] = _time_major(matmul(xp, att, v), batch)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        kv, att = inputs
        d_kv, d_att = in_grads
        heads, batch = self.attrs.heads, kv.shape[1]
        q_len = out_grads[0].shape[0]
        g = _batched(out_grads[0].reshape(q_len, batch, heads, -1))
        if d_att is not None:
            v = _batched(_per_head(kv, heads, 2)[:, :, :, 1])
            matmul(xp, g, _swap(v), out=d_att)
        if d_kv is not None:
            grads = _per_head(d_kv, heads, 2)
            grads[:, :, :, 0] = 0
            grads[:, :, :, 1] = _time_major(matmul(xp, _swap(att), g), batch)
