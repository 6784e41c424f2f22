"""MXNet's fluent methods: `sym.reshape(...)`, `sym.sum(...)` ... apply an operator to the
symbol. `FLUENT_METHODS` maps each method name to its operator; `Symbol.__getattr__` makes the
method on first use."""

__all__ = ["FLUENT_METHODS"]

FLUENT_METHODS = {
    "reshape": "Reshape", "flatten": "Flatten", "transpose": "transpose",
    "expand_dims": "expand_dims", "squeeze": "squeeze", "swapaxes": "SwapAxis",
    "split": "SliceChannel", "slice_axis": "slice_axis", "slice": "slice", "sum": "sum",
    "mean": "mean", "max": "max", "min": "min", "prod": "prod", "norm": "norm",
    "argmax": "argmax", "argmin": "argmin", "softmax": "softmax", "log_softmax": "log_softmax",
    "exp": "exp", "log": "log", "sqrt": "sqrt", "square": "square", "abs": "abs",
    "sigmoid": "sigmoid", "tanh": "tanh", "relu": "relu", "clip": "clip", "tile": "tile",
    "repeat": "repeat", "one_hot": "one_hot", "take": "take", "pick": "pick",
    "broadcast_to": "broadcast_to", "reshape_like": "reshape_like", "zeros_like": "zeros_like",
    "ones_like": "ones_like", "sign": "sign", "round": "round", "floor": "floor", "ceil": "ceil",
    "reciprocal": "reciprocal", "dot": "dot",
}
# MXNet's other fluent methods, each the operator of the same name
FLUENT_METHODS.update((name, name) for name in (
    "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "argmax_channel",
    "broadcast_axes", "broadcast_like", "cbrt", "cos", "cosh", "degrees", "expm1", "fix", "flip",
    "log10", "log1p", "log2", "nanprod", "nansum", "pad", "radians", "rint", "rsqrt", "sin",
    "sinh", "tan", "topk", "trunc", "argsort", "sort", "softmin", "rcbrt", "shape_array",
    "size_array", "slice_like", "diag", "depth_to_space", "space_to_depth"))

