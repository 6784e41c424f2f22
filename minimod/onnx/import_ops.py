"""ONNX operators translated into minimod's: elementwise math, comparisons, shapes, slices,
reductions, gathering and top-k. (Layers and the matrix products: import_nn.py; indexing and
sequences: import_index.py; recurrent layers: import_rnn.py.)

A translator gets the import context, the ONNX node and its attributes, and returns the
symbols of the node's outputs. Each minimod node is named after the ONNX node's first output,
which the format keeps unique.
"""
from __future__ import annotations

import numpy as np

from .. import symbol as sym
from .builder import ONNXImportError

__all__ = ["IMPORTERS", "imports", "refuse"]

IMPORTERS: dict = {}
_BIG = np.iinfo(np.int64).max // 2


def imports(*op_types: str):
    def wrap(fn):
        for op_type in op_types:
            IMPORTERS[op_type] = fn
        return fn
    return wrap


def refuse(node, why: str) -> ONNXImportError:
    return ONNXImportError("node %r (%s): %s" % (node.name or node.output[0], node.op_type, why))


def name_of(node) -> str:
    return node.output[0]


def const_input(ctx, node, index: int, what: str) -> np.ndarray:
    value = ctx.const(node.input[index]) if index < len(node.input) else None
    if value is None:
        raise refuse(node, "its %s must be a constant" % what)
    return value


def _scalar_of(value):
    """The Python number of a one-element constant, else None."""
    if value is not None and value.size == 1 and value.ndim <= 1:
        return value.reshape(()).item()
    return None


_UNARY = {"Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Abs": "abs", "Neg": "negative",
          "Reciprocal": "reciprocal", "Floor": "floor", "Ceil": "ceil", "Sign": "sign",
          "Erf": "erf", "Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "arcsin",
          "Acos": "arccos", "Atan": "arctan", "Sinh": "sinh", "Cosh": "cosh",
          "Asinh": "arcsinh", "Acosh": "arccosh", "Atanh": "arctanh", "Softsign": "softsign",
          "Not": "logical_not"}
_ACTIVATION = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Softplus": "softrelu"}


@imports(*_UNARY)
def _unary(ctx, node, attrs):
    return [getattr(sym, _UNARY[node.op_type])(ctx.symbol(node.input[0]), name=name_of(node))]


@imports(*_ACTIVATION)
def _activation(ctx, node, attrs):
    return [sym.Activation(ctx.symbol(node.input[0]), act_type=_ACTIVATION[node.op_type],
                           name=name_of(node))]


@imports("Identity", "Dropout")
def _identity(ctx, node, attrs):
    if node.op_type == "Dropout" and len(node.output) > 1 and node.output[1]:
        raise refuse(node, "its mask output is not imported")
    return [sym.identity(ctx.symbol(node.input[0]), name=name_of(node))]


# binary op -> (broadcast op, scalar op, scalar op with the scalar on the left)
_BINARY = {
    "Add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
    "Sub": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
    "Mul": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
    "Div": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
    "Pow": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
    "Max": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar"),
    "Min": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar"),
    "Equal": ("broadcast_equal", "_equal_scalar", "_equal_scalar"),
    "Greater": ("broadcast_greater", "_greater_scalar", "_lesser_scalar"),
    "Less": ("broadcast_lesser", "_lesser_scalar", "_greater_scalar"),
    "GreaterOrEqual": ("broadcast_greater_equal", "_greater_equal_scalar",
                       "_lesser_equal_scalar"),
    "LessOrEqual": ("broadcast_lesser_equal", "_lesser_equal_scalar",
                    "_greater_equal_scalar"),
    "And": ("broadcast_logical_and", None, None),
    "Or": ("broadcast_logical_or", None, None),
    "Xor": ("broadcast_logical_xor", None, None),
}


def _binary_pair(ctx, node, lhs_name: str, rhs_name: str, name: str):
    full, scalar_op, left_op = _BINARY[node.op_type]
    lhs, rhs = ctx.const(lhs_name), ctx.const(rhs_name)
    if scalar_op is not None and _scalar_of(rhs) is not None and lhs is None:
        return getattr(sym, scalar_op)(ctx.symbol(lhs_name), scalar=_scalar_of(rhs), name=name)
    if left_op is not None and _scalar_of(lhs) is not None and rhs is None:
        return getattr(sym, left_op)(ctx.symbol(rhs_name), scalar=_scalar_of(lhs), name=name)
    return getattr(sym, full)(ctx.symbol(lhs_name), ctx.symbol(rhs_name), name=name)


@imports(*_BINARY)
def _binary(ctx, node, attrs):
    if len(node.input) == 2:
        return [_binary_pair(ctx, node, node.input[0], node.input[1], name_of(node))]
    out = ctx.symbol(node.input[0])  # variadic Max / Min
    full = getattr(sym, _BINARY[node.op_type][0])
    for k, other in enumerate(node.input[1:]):
        last = k == len(node.input) - 2
        out = full(out, ctx.symbol(other), name=name_of(node) if last else None)
    return [out]


@imports("Sum")
def _sum(ctx, node, attrs):
    out = ctx.symbol(node.input[0])
    for k, other in enumerate(node.input[1:]):
        last = k == len(node.input) - 2
        out = sym.broadcast_add(out, ctx.symbol(other), name=name_of(node) if last else None)
    return [out]


@imports("Clip")
def _clip(ctx, node, attrs):
    low = attrs.get("min", -np.finfo(np.float32).max)
    high = attrs.get("max", np.finfo(np.float32).max)
    if len(node.input) > 1 and node.input[1]:
        low = _scalar_of(const_input(ctx, node, 1, "min"))
    if len(node.input) > 2 and node.input[2]:
        high = _scalar_of(const_input(ctx, node, 2, "max"))
    return [sym.clip(ctx.symbol(node.input[0]), float(low), float(high), name=name_of(node))]


@imports("Cast")
def _cast(ctx, node, attrs):
    from onnx import helper
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(attrs["to"]))
    if dtype == np.bool_:
        dtype = np.dtype(np.float32)  # minimod's comparisons give 0/1 in a float dtype
    return [sym.Cast(ctx.symbol(node.input[0]), dtype=dtype.name, name=name_of(node))]


@imports("Where")
def _where(ctx, node, attrs):
    shapes = [ctx.shape(n) for n in node.input]
    target = np.broadcast_shapes(*shapes)
    parts = []
    for n, shape in zip(node.input, shapes):
        value = ctx.symbol(n)
        if shape != target:
            lifted = sym.reshape(value, shape=(1,) * (len(target) - len(shape)) + shape)
            value = sym.broadcast_to(lifted, shape=target)
        parts.append(value)
    return [sym.where(*parts, name=name_of(node))]


@imports("Shape")
def _shape(ctx, node, attrs):
    return [sym.Cast(sym.shape_array(ctx.symbol(node.input[0])), dtype="int64",
                     name=name_of(node))]


def _normalized(axes, rank: int) -> tuple:
    return tuple(sorted(int(a) % rank for a in axes))


@imports("Flatten")
def _flatten(ctx, node, attrs):
    axis = attrs.get("axis", 1)
    x = ctx.symbol(node.input[0])
    if axis == 1:
        return [sym.Flatten(x, name=name_of(node))]
    shape = ctx.shape(node.input[0])
    axis %= len(shape)
    return [sym.reshape(x, shape=(int(np.prod(shape[:axis])), -1), name=name_of(node))]


@imports("Reshape")
def _reshape(ctx, node, attrs):
    target = [int(d) for d in const_input(ctx, node, 1, "target shape")]
    if attrs.get("allowzero") and 0 in target:
        raise refuse(node, "allowzero=1 with a zero in the target shape is not imported")
    if node.input[1] in ctx.derived and target and target[0] > 0:
        if target[0] == ctx.shape(node.input[0])[0]:
            target[0] = 0  # computed from the input's own shape: keep the batch free
    return [sym.reshape(ctx.symbol(node.input[0]), shape=tuple(target), name=name_of(node))]


@imports("Transpose")
def _transpose(ctx, node, attrs):
    perm = attrs.get("perm")
    x = ctx.symbol(node.input[0])
    if perm is None:
        return [sym.transpose(x, name=name_of(node))]
    return [sym.transpose(x, axes=tuple(perm), name=name_of(node))]


@imports("Concat")
def _concat(ctx, node, attrs):
    parts = [ctx.symbol(n) for n in node.input if n]
    return [sym.Concat(*parts, dim=attrs["axis"], num_args=len(parts), name=name_of(node))]


@imports("Split")
def _split(ctx, node, attrs):
    x = ctx.symbol(node.input[0])
    axis = attrs.get("axis", 0)
    count = len(node.output)
    sizes = attrs.get("split")
    if len(node.input) > 1 and node.input[1]:
        sizes = [int(s) for s in const_input(ctx, node, 1, "split sizes")]
    if sizes is None or len(set(sizes)) == 1:
        parts = sym.SliceChannel(x, num_outputs=count, axis=axis, name=name_of(node))
        return [parts[i] for i in range(count)] if count > 1 else [parts]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return [sym.slice_axis(x, axis=axis, begin=int(b), end=int(b + s), name=out)
            for b, s, out in zip(starts, sizes, node.output)]


def _axes_of(ctx, node, attrs, index: int = 1):
    """The axes of Squeeze, Unsqueeze and the reductions: an attribute before opset 13 (18
    for most reductions), then an optional input."""
    if "axes" in attrs:
        return list(attrs["axes"])
    if len(node.input) > index and node.input[index]:
        return [int(a) for a in const_input(ctx, node, index, "axes")]
    return None


@imports("Squeeze")
def _squeeze(ctx, node, attrs):
    axes = _axes_of(ctx, node, attrs)
    x = ctx.symbol(node.input[0])
    if axes is None:
        return [sym.squeeze(x, name=name_of(node))]
    return [sym.squeeze(x, axis=tuple(axes), name=name_of(node))]


@imports("Unsqueeze")
def _unsqueeze(ctx, node, attrs):
    axes = _axes_of(ctx, node, attrs)
    x = ctx.symbol(node.input[0])
    if any(a < 0 for a in axes):
        axes = _normalized(axes, len(ctx.shape(node.input[0])) + len(axes))
    axes = sorted(axes)
    for k, axis in enumerate(axes):
        x = sym.expand_dims(x, axis=axis, name=name_of(node) if k == len(axes) - 1 else None)
    return [x]


@imports("Slice")
def _slice(ctx, node, attrs):
    starts = [int(v) for v in const_input(ctx, node, 1, "starts")]
    ends = [int(v) for v in const_input(ctx, node, 2, "ends")]
    axes = list(range(len(starts)))
    steps = [1] * len(starts)
    if len(node.input) > 3 and node.input[3]:
        axes = [int(v) for v in const_input(ctx, node, 3, "axes")]
    if len(node.input) > 4 and node.input[4]:
        steps = [int(v) for v in const_input(ctx, node, 4, "steps")]
    if any(a < 0 for a in axes):
        axes = [a % len(ctx.shape(node.input[0])) for a in axes]
    x = ctx.symbol(node.input[0])
    begin, end, step = [None] * (max(axes) + 1), [None] * (max(axes) + 1), \
        [1] * (max(axes) + 1)
    for axis, b, e, s in zip(axes, starts, ends, steps):
        begin[axis] = None if abs(b) >= _BIG else b
        end[axis] = None if abs(e) >= _BIG else e
        step[axis] = s
    return [sym.slice(x, begin=tuple(begin), end=tuple(end), step=tuple(step),
                      name=name_of(node))]


_REDUCE = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min",
           "ReduceProd": "prod"}


@imports(*_REDUCE, "ReduceL1", "ReduceL2", "ReduceSumSquare")
def _reduce(ctx, node, attrs):
    axes = _axes_of(ctx, node, attrs)
    keep = bool(attrs.get("keepdims", 1))
    x = ctx.symbol(node.input[0])
    if axes is None and attrs.get("noop_with_empty_axes"):
        return [sym.identity(x, name=name_of(node))]
    axis = None if axes is None else tuple(axes)
    name = name_of(node)
    if node.op_type in ("ReduceL1", "ReduceL2"):
        ord_ = 1 if node.op_type == "ReduceL1" else 2
        return [sym.norm(x, ord=ord_, axis=axis, keepdims=keep, name=name)]
    if node.op_type == "ReduceSumSquare":
        return [sym.sum(sym.square(x), axis=axis, keepdims=keep, name=name)]
    return [getattr(sym, _REDUCE[node.op_type])(x, axis=axis, keepdims=keep, name=name)]


@imports("ArgMax", "ArgMin")
def _arg_extremum(ctx, node, attrs):
    if attrs.get("select_last_index"):
        raise refuse(node, "select_last_index=1 is not imported")
    fn = sym.argmax if node.op_type == "ArgMax" else sym.argmin
    index = fn(ctx.symbol(node.input[0]), axis=attrs.get("axis", 0),
               keepdims=bool(attrs.get("keepdims", 1)))
    return [sym.Cast(index, dtype="int64", name=name_of(node))]


@imports("Gather")
def _gather(ctx, node, attrs):
    """`take` in wrap mode: a negative index counts from the end, as in ONNX. A constant
    scalar index takes one slice and drops its axis."""
    axis = attrs.get("axis", 0)
    index = ctx.const(node.input[1])
    if index is not None and index.ndim == 0:
        at = int(index)
        one = sym.slice_axis(ctx.symbol(node.input[0]), axis=axis, begin=at,
                             end=at + 1 if at != -1 else None)
        return [sym.squeeze(one, axis=axis, name=name_of(node))]
    return [sym.take(ctx.symbol(node.input[0]), ctx.symbol(node.input[1]), axis=axis,
                     mode="wrap", name=name_of(node))]


@imports("Expand")
def _expand(ctx, node, attrs):
    shape = tuple(int(d) for d in const_input(ctx, node, 1, "shape"))
    own = ctx.shape(node.input[0])
    target = np.broadcast_shapes(own, shape)
    x = ctx.symbol(node.input[0])
    if len(own) < len(target):
        x = sym.reshape(x, shape=(1,) * (len(target) - len(own)) + tuple(own))
    return [sym.broadcast_to(x, shape=tuple(target), name=name_of(node))]


@imports("Tile")
def _tile(ctx, node, attrs):
    reps = tuple(int(r) for r in const_input(ctx, node, 1, "repeats"))
    return [sym.tile(ctx.symbol(node.input[0]), reps=reps, name=name_of(node))]


@imports("TopK")
def _topk(ctx, node, attrs):
    k = int(const_input(ctx, node, 1, "k").reshape(-1)[0])
    both = sym.topk(ctx.symbol(node.input[0]), k=k, axis=attrs.get("axis", -1),
                    ret_typ="both", is_ascend=not attrs.get("largest", 1), name=name_of(node))
    return [both[0], sym.Cast(both[1], dtype="int64")]
