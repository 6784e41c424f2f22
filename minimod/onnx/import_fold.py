"""Import-time evaluation of ONNX nodes whose inputs are all constants.

Exported models compute shapes at run time (Shape -> Gather -> Unsqueeze -> Concat ->
Reshape); with the input shapes fixed those chains are constants, and folding them here lets
the translators see a plain target shape. `Shape` folds whenever its input's shape is known,
constant or not. A folder returns the node's output values, or None to leave the node to the
translators.
"""
from __future__ import annotations

import numpy as np

__all__ = ["FOLDERS"]

FOLDERS: dict = {}


def folds(*op_types: str):
    def wrap(fn):
        for op_type in op_types:
            FOLDERS[op_type] = fn
        return fn
    return wrap


def _axes(values, rank: int) -> list:
    return sorted(int(a) % rank for a in values)


@folds("Constant")
def _constant(ctx, node, inputs, attrs):
    if "value" in attrs:
        return [ctx.numpy_helper.to_array(attrs["value"])]
    for key, dtype in (("value_float", np.float32), ("value_int", np.int64)):
        if key in attrs:
            return [np.array(attrs[key], dtype)]
    for key, dtype in (("value_floats", np.float32), ("value_ints", np.int64)):
        if key in attrs:
            return [np.array(list(attrs[key]), dtype)]
    return None


@folds("Identity")
def _identity(ctx, node, inputs, attrs):
    return [inputs[0]]


@folds("Cast")
def _cast(ctx, node, inputs, attrs):
    from onnx import helper
    return [inputs[0].astype(helper.tensor_dtype_to_np_dtype(attrs["to"]))]


@folds("Gather")
def _gather(ctx, node, inputs, attrs):
    return [np.take(inputs[0], inputs[1].astype(np.int64), axis=attrs.get("axis", 0))]


@folds("Unsqueeze")
def _unsqueeze(ctx, node, inputs, attrs):
    axes = attrs["axes"] if "axes" in attrs else inputs[1]
    rank = inputs[0].ndim + len(axes)
    return [np.expand_dims(inputs[0], tuple(_axes(axes, rank)))]


@folds("Squeeze")
def _squeeze(ctx, node, inputs, attrs):
    axes = attrs.get("axes") if len(inputs) < 2 else inputs[1]
    if axes is None:
        return [np.squeeze(inputs[0])]
    return [np.squeeze(inputs[0], tuple(_axes(axes, inputs[0].ndim)))]


@folds("Concat")
def _concat(ctx, node, inputs, attrs):
    return [np.concatenate(inputs, axis=attrs["axis"])]


@folds("Slice")
def _slice(ctx, node, inputs, attrs):
    data = inputs[0]
    starts, ends = inputs[1], inputs[2]
    axes = inputs[3] if len(inputs) > 3 and inputs[3] is not None else range(len(starts))
    steps = inputs[4] if len(inputs) > 4 and inputs[4] is not None else [1] * len(starts)
    index = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        index[int(axis)] = slice(int(start), int(end), int(step))
    return [data[tuple(index)]]


@folds("Reshape")
def _reshape(ctx, node, inputs, attrs):
    target = [int(d) for d in inputs[1]]
    target = [inputs[0].shape[i] if d == 0 and not attrs.get("allowzero") else d
              for i, d in enumerate(target)]
    return [inputs[0].reshape(target)]


@folds("Transpose")
def _transpose(ctx, node, inputs, attrs):
    return [np.transpose(inputs[0], attrs.get("perm"))]


@folds("ConstantOfShape")
def _constant_of_shape(ctx, node, inputs, attrs):
    fill = ctx.numpy_helper.to_array(attrs["value"]) if "value" in attrs \
        else np.zeros(1, np.float32)
    return [np.full([int(d) for d in inputs[0]], fill.reshape(-1)[0], fill.dtype)]


@folds("Range")
def _range(ctx, node, inputs, attrs):
    start, limit, delta = (v.reshape(()) for v in inputs)
    return [np.arange(start, limit, delta, dtype=inputs[0].dtype)]


_ARITH = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Equal": np.equal,
          "Less": np.less, "Greater": np.greater, "Max": np.maximum, "Min": np.minimum,
          "And": np.logical_and, "Or": np.logical_or}


@folds(*_ARITH)
def _arith(ctx, node, inputs, attrs):
    fn = _ARITH[node.op_type]
    result = inputs[0]
    for other in inputs[1:]:
        result = fn(result, other)
    return [result.astype(inputs[0].dtype) if fn in (np.add, np.subtract, np.multiply)
            else result]


@folds("Div")
def _div(ctx, node, inputs, attrs):
    a, b = inputs
    if np.issubdtype(a.dtype, np.integer):
        return [np.trunc(a / b).astype(a.dtype)]  # ONNX divides integers toward zero
    return [(a / b).astype(a.dtype)]


@folds("Neg", "Abs", "Sqrt", "Floor", "Ceil", "Not")
def _unary(ctx, node, inputs, attrs):
    fn = {"Neg": np.negative, "Abs": np.abs, "Sqrt": np.sqrt, "Floor": np.floor,
          "Ceil": np.ceil, "Not": np.logical_not}[node.op_type]
    return [fn(inputs[0])]


@folds("Where")
def _where(ctx, node, inputs, attrs):
    return [np.where(inputs[0], inputs[1], inputs[2])]


@folds("Expand")
def _expand(ctx, node, inputs, attrs):
    shape = np.broadcast_shapes(inputs[0].shape, tuple(int(d) for d in inputs[1]))
    return [np.broadcast_to(inputs[0], shape).copy()]


@folds("ReduceProd")
def _reduce_prod(ctx, node, inputs, attrs):
    axes = attrs.get("axes")
    keep = bool(attrs.get("keepdims", 1))
    return [np.prod(inputs[0], axis=None if axes is None else tuple(axes), keepdims=keep)]


def shape_of(ctx, node):
    """Shape's value when its input's static shape is known (constant or not)."""
    shape = np.array(ctx.shape(node.input[0]), np.int64)
    start, end = node_range(node, len(shape))
    return [shape[start:end]]


def node_range(node, rank: int) -> tuple:
    start, end = 0, rank
    for attr in node.attribute:  # opset 15 lets Shape take a slice of the dims
        if attr.name == "start":
            start = attr.i
        elif attr.name == "end":
            end = attr.i
    return start, end
