"""ONNX's indexing and sequence operators translated into minimod's: GatherND, GatherElements
(where it picks one entry per row), OneHot, Mod, ReverseSequence and Size.

ONNX counts a negative index from the end where MXNet's ops clip or match nothing; the
translations wrap negative indices first where ONNX allows them.
"""
from __future__ import annotations

from .. import symbol as sym
from .import_ops import _scalar_of, const_input, imports, name_of, refuse


@imports("GatherND")
def _gather_nd(ctx, node, attrs):
    data, index = ctx.symbol(node.input[0]), ctx.symbol(node.input[1])
    shape = ctx.shape(node.input[1])
    batch_dims = attrs.get("batch_dims", 0)
    if batch_dims == 1 and len(shape) == 2 and shape[1] == 1:
        # one position per batch row along axis 1: SequenceLast at length position + 1
        lengths = sym.reshape(index, shape=(-1,)) + 1
        return [sym.SequenceLast(data, sym.Cast(lengths, dtype="float32"),
                                 use_sequence_length=True, axis=1, name=name_of(node))]
    if batch_dims:
        raise refuse(node, "batch_dims=%d is not imported" % batch_dims)
    rank = len(shape)  # ONNX: a coordinate per entry of the last axis; MXNet: of the first
    coords = sym.transpose(index, axes=(rank - 1,) + tuple(range(rank - 1))) if rank > 1 \
        else index
    return [sym.gather_nd(data, coords, name=name_of(node))]


@imports("GatherElements")
def _gather_elements(ctx, node, attrs):
    data_shape, index_shape = ctx.shape(node.input[0]), ctx.shape(node.input[1])
    axis = attrs.get("axis", 0) % len(data_shape)
    others = [d for i, d in enumerate(data_shape) if i != axis]
    if index_shape[axis] != 1 or [d for i, d in enumerate(index_shape) if i != axis] != others:
        raise refuse(node, "only one index per row along the axis (MXNet's pick) is imported")
    index = sym.squeeze(ctx.symbol(node.input[1]), axis=axis)
    return [sym.pick(ctx.symbol(node.input[0]), index, axis=axis, keepdims=True, mode="wrap",
                     name=name_of(node))]


@imports("OneHot")
def _one_hot(ctx, node, attrs):
    depth = int(const_input(ctx, node, 1, "depth").reshape(-1)[0])
    values = const_input(ctx, node, 2, "values").reshape(-1)
    axis = attrs.get("axis", -1)
    if axis != -1 and axis != len(ctx.shape(node.input[0])):
        raise refuse(node, "axis=%d: only the last axis is imported" % axis)
    index = ctx.symbol(node.input[0])
    wrapped = sym.where(index < 0, index + depth, index)
    return [sym.one_hot(wrapped, depth=depth, on_value=float(values[1]),
                        off_value=float(values[0]), dtype=values.dtype.name,
                        name=name_of(node))]


@imports("Mod")
def _mod(ctx, node, attrs):
    if attrs.get("fmod"):
        raise refuse(node, "fmod=1 (the dividend's sign) is not imported")
    divisor = _scalar_of(ctx.const(node.input[1]))
    if divisor is not None:
        return [sym._mod_scalar(ctx.symbol(node.input[0]), scalar=divisor, name=name_of(node))]
    return [sym.broadcast_mod(ctx.symbol(node.input[0]), ctx.symbol(node.input[1]),
                              name=name_of(node))]


@imports("ReverseSequence")
def _reverse_sequence(ctx, node, attrs):
    if attrs.get("batch_axis", 1) != 1 or attrs.get("time_axis", 0) != 0:
        raise refuse(node, "only time axis 0 and batch axis 1 are imported")
    lengths = sym.Cast(ctx.symbol(node.input[1]), dtype="float32")
    return [sym.SequenceReverse(ctx.symbol(node.input[0]), lengths, use_sequence_length=True,
                                name=name_of(node))]


@imports("Size")
def _size(ctx, node, attrs):
    return [sym.Cast(sym.size_array(ctx.symbol(node.input[0])), dtype="int64",
                     name=name_of(node))]
