"""ONNX layers translated into minimod's: the matrix products (Gemm and MatMul with a constant
weight become FullyConnected), convolution and its transpose, pooling,
normalization, the parametric activations, softmax, padding, nearest resizing and the
depth/space shuffles.

MXNet pads both ends of a spatial axis alike; where an ONNX node pads them differently, an
explicit Pad node comes first (with -inf before a max pooling, zeros elsewhere). ONNX's
average pooling leaves the padding out of the divisor by default, MXNet counts it: the
imported node says which. ONNX's `ceil_mode` drops a last window that would start in the
padding, MXNet's 'full' convention keeps it; where that would change the output size, the
node is refused.
"""
from __future__ import annotations

import math

import numpy as np

from .. import symbol as sym
from .import_ops import const_input, imports, name_of, refuse


def _pads(ctx, node, attrs, kernel, strides, dilations) -> tuple:
    """(begin, end) padding per spatial axis, auto_pad resolved from the input's shape."""
    n = len(kernel)
    mode = attrs.get("auto_pad", "NOTSET")
    if mode in ("NOTSET", "VALID"):
        pads = list(attrs.get("pads", [0] * 2 * n)) if mode == "NOTSET" else [0] * 2 * n
        return pads[:n], pads[n:]
    spatial = ctx.shape(node.input[0])[2:]
    begin, end = [], []
    for size, k, s, d in zip(spatial, kernel, strides, dilations):
        total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
        low = total // 2 if mode == "SAME_UPPER" else total - total // 2
        begin.append(low)
        end.append(total - low)
    return begin, end


def _padded(ctx, node, x, begin, end, value: float):
    """x with explicit padding where the two ends differ; returns (x, symmetric pad)."""
    if begin == end:
        return x, tuple(begin)
    widths = [0, 0, 0, 0]
    for b, e in zip(begin, end):
        widths += [b, e]
    return sym.Pad(x, mode="constant", pad_width=tuple(widths), constant_value=value), \
        (0,) * len(begin)


def _window(ctx, node, attrs, kernel):
    n = len(kernel)
    strides = list(attrs.get("strides", [1] * n))
    dilations = list(attrs.get("dilations", [1] * n))
    return strides, dilations, _pads(ctx, node, attrs, kernel, strides, dilations)


@imports("Conv")
def _conv(ctx, node, attrs):
    wshape = ctx.shape(node.input[1])
    kernel = list(attrs.get("kernel_shape", wshape[2:]))
    strides, dilations, (begin, end) = _window(ctx, node, attrs, kernel)
    x, pad = _padded(ctx, node, ctx.symbol(node.input[0]), begin, end, 0.0)
    inputs = [x, ctx.symbol(node.input[1])]
    if len(node.input) > 2 and node.input[2]:
        inputs.append(ctx.symbol(node.input[2]))
    return [sym.Convolution(*inputs, kernel=tuple(kernel), stride=tuple(strides),
                            dilate=tuple(dilations), pad=pad, num_filter=wshape[0],
                            num_group=attrs.get("group", 1), no_bias=len(inputs) == 2,
                            name=name_of(node))]


@imports("ConvTranspose")
def _conv_transpose(ctx, node, attrs):
    wshape = ctx.shape(node.input[1])
    kernel = list(attrs.get("kernel_shape", wshape[2:]))
    strides, dilations, (begin, end) = _window(ctx, node, attrs, kernel)
    group = attrs.get("group", 1)
    inputs = [ctx.symbol(node.input[0]), ctx.symbol(node.input[1])]
    if len(node.input) > 2 and node.input[2]:
        inputs.append(ctx.symbol(node.input[2]))
    extra = {}
    if "output_shape" in attrs:
        extra["target_shape"] = tuple(attrs["output_shape"][-len(kernel):])
    uneven = begin != end and not extra
    full = sym.Deconvolution(*inputs, kernel=tuple(kernel), stride=tuple(strides),
                             dilate=tuple(dilations), pad=(0,) * len(kernel) if uneven
                             else tuple(begin),
                             adj=tuple(attrs.get("output_padding", [0] * len(kernel))),
                             num_filter=wshape[1] * group, num_group=group,
                             no_bias=len(inputs) == 2,
                             name=name_of(node) + "_full" if uneven else name_of(node),
                             **extra)
    if not uneven:
        return [full]
    # padding that differs at the two ends crops the full output: a slice of it
    ends = tuple(-e if e else None for e in end)
    return [sym.slice(full, begin=(None, None) + tuple(begin), end=(None, None) + ends,
                      name=name_of(node))]


def _full_fits(ctx, node, kernel, strides, pads) -> bool:
    """Whether MXNet's 'full' convention gives ONNX's ceil_mode output size."""
    spatial = ctx.shape(node.input[0])[2:]
    for size, k, s, p in zip(spatial, kernel, strides, pads):
        out = 1 + -(-(size + 2 * p - k) // s)
        if (out - 1) * s >= size + p:
            return False
    return True


@imports("MaxPool", "AveragePool", "LpPool")
def _pool(ctx, node, attrs):
    if len(node.output) > 1 and node.output[1]:
        raise refuse(node, "its indices output is not imported")
    kernel = list(attrs["kernel_shape"])
    strides, dilations, (begin, end) = _window(ctx, node, attrs, kernel)
    if any(d != 1 for d in dilations):
        raise refuse(node, "dilated pooling is not imported")
    pool_type = {"MaxPool": "max", "AveragePool": "avg", "LpPool": "lp"}[node.op_type]
    include = bool(attrs.get("count_include_pad", 0))
    if begin != end and pool_type == "avg" and not include:
        raise refuse(node, "uneven padding left out of the average is not imported")
    fill = float(np.finfo(np.float32).min) if pool_type == "max" else 0.0
    x, pad = _padded(ctx, node, ctx.symbol(node.input[0]), begin, end, fill)
    convention = "valid"
    if attrs.get("ceil_mode"):
        if not _full_fits(ctx, node, kernel, strides, pad):
            raise refuse(node, "ceil_mode drops a last window that starts in the padding, "
                               "which MXNet's 'full' pooling keeps")
        convention = "full"
    extra = {"p_value": attrs.get("p", 2)} if pool_type == "lp" else {}
    if pool_type == "avg":
        extra["count_include_pad"] = include
    return [sym.Pooling(x, kernel=tuple(kernel), stride=tuple(strides), pad=pad,
                        pool_type=pool_type, pooling_convention=convention,
                        name=name_of(node), **extra)]


@imports("GlobalMaxPool", "GlobalAveragePool", "GlobalLpPool")
def _global_pool(ctx, node, attrs):
    pool_type = {"GlobalMaxPool": "max", "GlobalAveragePool": "avg",
                 "GlobalLpPool": "lp"}[node.op_type]
    rank = len(ctx.shape(node.input[0]))
    extra = {"p_value": attrs.get("p", 2)} if pool_type == "lp" else {}
    return [sym.Pooling(ctx.symbol(node.input[0]), kernel=(1,) * (rank - 2), global_pool=True,
                        pool_type=pool_type, name=name_of(node), **extra)]


@imports("BatchNormalization")
def _batch_norm(ctx, node, attrs):
    if attrs.get("training_mode") or (len(node.output) > 1 and any(node.output[1:])):
        raise refuse(node, "training-mode outputs are not imported")
    parts = [ctx.symbol(n) for n in node.input[:5]]
    return [sym.BatchNorm(*parts, eps=attrs.get("epsilon", 1e-5),
                          momentum=attrs.get("momentum", 0.9), fix_gamma=False,
                          name=name_of(node))]


@imports("InstanceNormalization")
def _instance_norm(ctx, node, attrs):
    parts = [ctx.symbol(n) for n in node.input[:3]]
    return [sym.InstanceNorm(*parts, eps=attrs.get("epsilon", 1e-5), name=name_of(node))]


@imports("LRN")
def _lrn(ctx, node, attrs):
    return [sym.LRN(ctx.symbol(node.input[0]), nsize=attrs["size"],
                    alpha=attrs.get("alpha", 1e-4), beta=attrs.get("beta", 0.75),
                    knorm=attrs.get("bias", 1.0), name=name_of(node))]


@imports("LeakyRelu", "Elu", "Selu", "PRelu", "HardSigmoid")
def _leaky(ctx, node, attrs):
    x, name = ctx.symbol(node.input[0]), name_of(node)
    if node.op_type == "LeakyRelu":
        return [sym.LeakyReLU(x, act_type="leaky", slope=attrs.get("alpha", 0.01), name=name)]
    if node.op_type == "Elu":
        return [sym.LeakyReLU(x, act_type="elu", slope=attrs.get("alpha", 1.0), name=name)]
    if node.op_type == "HardSigmoid":
        return [sym.hard_sigmoid(x, alpha=attrs.get("alpha", 0.2),
                                 beta=attrs.get("beta", 0.5), name=name)]
    if node.op_type == "Selu":
        if not (math.isclose(attrs.get("alpha", 1.67326), 1.67326, rel_tol=1e-4)
                and math.isclose(attrs.get("gamma", 1.0507), 1.0507, rel_tol=1e-4)):
            raise refuse(node, "only SELU's standard alpha and gamma are imported")
        return [sym.LeakyReLU(x, act_type="selu", name=name)]
    slope = const_input(ctx, node, 1, "slope")
    flat = ctx.new_param(node.input[1] + "_flat", np.ascontiguousarray(slope.reshape(-1)))
    return [sym.LeakyReLU(x, ctx.symbol(flat), act_type="prelu", name=name)]


@imports("Softmax", "LogSoftmax")
def _softmax(ctx, node, attrs):
    fn = sym.softmax if node.op_type == "Softmax" else sym.log_softmax
    x = ctx.symbol(node.input[0])
    if ctx.opset >= 13:
        return [fn(x, axis=attrs.get("axis", -1), name=name_of(node))]
    rank = len(ctx.shape(node.input[0]))  # before opset 13: over every axis from `axis` on
    axis = attrs.get("axis", 1) % rank
    if axis == rank - 1:
        return [fn(x, axis=-1, name=name_of(node))]
    flat = sym.reshape(x, shape=(0,) * axis + (-1,))
    return [sym.reshape_like(fn(flat, axis=-1), x, name=name_of(node))]


@imports("Pad")
def _pad(ctx, node, attrs):
    pads = attrs.get("pads")
    if pads is None:
        pads = [int(p) for p in const_input(ctx, node, 1, "pads")]
    value = attrs.get("value", 0.0)
    if len(node.input) > 2 and node.input[2]:
        value = float(const_input(ctx, node, 2, "constant value").reshape(-1)[0])
    if not np.isfinite(value):  # minimod's Pad takes finite values: the dtype's extremes
        value = float(np.sign(value) * np.finfo(np.float32).max)
    n = len(pads) // 2
    widths = []
    for b, e in zip(pads[:n], pads[n:]):
        widths += [int(b), int(e)]
    return [sym.Pad(ctx.symbol(node.input[0]), mode=attrs.get("mode", "constant"),
                    pad_width=tuple(widths), constant_value=value, name=name_of(node))]


@imports("Resize", "Upsample")
def _resize(ctx, node, attrs):
    if attrs.get("mode", "nearest") != "nearest":
        raise refuse(node, "only nearest resizing is imported")
    if attrs.get("coordinate_transformation_mode", "asymmetric") != "asymmetric":
        raise refuse(node, "only the 'asymmetric' coordinate transformation is imported")
    index = 1 if node.op_type == "Upsample" else 2
    scales = attrs.get("scales")
    if scales is None:
        scales = const_input(ctx, node, index, "scales")
    scales = [float(s) for s in scales]
    spatial = set(scales[2:])
    if scales[:2] != [1.0, 1.0] or len(spatial) != 1 or not float(next(iter(spatial))) \
            .is_integer():
        raise refuse(node, "scales %s: only one whole factor over the spatial axes is "
                           "imported" % scales)
    return [sym.UpSampling(ctx.symbol(node.input[0]), scale=int(scales[2]),
                           sample_type="nearest", num_args=1, name=name_of(node))]


@imports("DepthToSpace", "SpaceToDepth")
def _depth_space(ctx, node, attrs):
    if attrs.get("mode", "DCR") != "DCR":
        raise refuse(node, "only the DCR ordering is imported")
    fn = sym.depth_to_space if node.op_type == "DepthToSpace" else sym.space_to_depth
    return [fn(ctx.symbol(node.input[0]), block_size=attrs["blocksize"], name=name_of(node))]


@imports("MatMul")
def _matmul(ctx, node, attrs):
    weight = ctx.const(node.input[1])
    if weight is not None and weight.ndim == 2:  # a dense layer without bias
        name = ctx.new_param(node.input[1] + "_t", np.ascontiguousarray(weight.T))
        return [sym.FullyConnected(ctx.symbol(node.input[0]), ctx.symbol(name), no_bias=True,
                                   flatten=False, num_hidden=weight.shape[1],
                                   name=name_of(node))]
    ranks = [len(ctx.shape(n)) for n in node.input]
    lhs, rhs = ctx.symbol(node.input[0]), ctx.symbol(node.input[1])
    if ranks[1] <= 2:  # MXNet's dot: (..., K) times (K,) or (K, M); two vectors give (1,)
        return [sym.dot(lhs, rhs, name=name_of(node))]
    if ranks[0] == ranks[1] == 3:
        return [sym.batch_dot(lhs, rhs, name=name_of(node))]
    raise refuse(node, "a product of ranks %s is not imported" % ranks)


@imports("Gemm")
def _gemm(ctx, node, attrs):
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    x = ctx.symbol(node.input[0])
    if attrs.get("transA"):
        x = sym.transpose(x)
    weight = ctx.const(node.input[1])
    bias = ctx.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    if weight is None:
        raise refuse(node, "its B input must be a constant (the layer's weight)")
    if not attrs.get("transB"):
        weight = weight.T
    rows = weight.shape[0]
    inputs = [x, ctx.symbol(_scaled(ctx, node.input[1], weight, alpha,
                                    not attrs.get("transB")))]
    if bias is not None and bias.size == rows:
        inputs.append(ctx.symbol(_scaled(ctx, node.input[2], bias.reshape(rows), beta, False)))
    out = sym.FullyConnected(*inputs, num_hidden=rows, no_bias=len(inputs) == 2,
                             name=name_of(node))
    if len(node.input) > 2 and node.input[2] and (bias is None or bias.size != rows):
        extra = ctx.symbol(node.input[2])
        out = sym.broadcast_add(out, extra if beta == 1 else extra * beta)
    return [out]


def _scaled(ctx, name: str, value: np.ndarray, factor: float, changed: bool) -> str:
    """The name of `value` * factor as a parameter: the original when nothing changed."""
    if factor == 1 and not changed and ctx.consts[name].shape == value.shape:
        return name
    return ctx.new_param(name + "_scaled" if factor != 1 else name + "_t",
                         np.ascontiguousarray(value * np.asarray(factor, value.dtype)))


@imports("LayerNormalization")
def _layer_norm(ctx, node, attrs):
    """ONNX normalizes over `axis` and every axis after it, MXNet's LayerNorm over one axis:
    trailing axes are merged into one (a Reshape keeping the leading dims, with the scale and
    bias flattened to match), normalized, and shaped back. The optional Mean and InvStdDev
    outputs come from LayerNorm's mean and std (InvStdDev = 1 / std), shaped as ONNX keeps
    them: the leading dims, then ones."""
    rank = len(ctx.shape(node.input[0]))
    axis = attrs.get("axis", -1) % rank
    x = ctx.symbol(node.input[0])
    gamma = ctx.symbol(node.input[1])
    if len(node.input) > 2 and node.input[2]:
        beta = ctx.symbol(node.input[2])
    else:
        beta = ctx.symbol(ctx.new_param(name_of(node) + "_beta",
                                        np.zeros(ctx.shape(node.input[1]), np.float32)))
    name = name_of(node)
    merged = axis < rank - 1
    if merged:
        x_in = sym.Reshape(x, shape=(0,) * axis + (-1,), name=name + "_merge")
        gamma = sym.Reshape(gamma, shape=(-1,), name=name + "_scale_flat")
        beta = sym.Reshape(beta, shape=(-1,), name=name + "_bias_flat")
    else:
        x_in = x
    wanted = [bool(o) for o in node.output[1:]]
    norm = sym.LayerNorm(x_in, gamma, beta, axis=-1, eps=attrs.get("epsilon", 1e-5),
                         output_mean_var=any(wanted), name=name)
    if not any(wanted):
        return [sym.reshape_like(norm, x, name=name + "_unmerge") if merged else norm]
    out, mean, std = norm[0], norm[1], norm[2]
    stats_shape = (0,) * axis + (1,) * (rank - axis)
    results = [sym.reshape_like(out, x, name=name + "_unmerge") if merged else out,
               sym.Reshape(mean, shape=stats_shape, name=name + "_mean"),
               sym.Reshape(sym.reciprocal(std, name=name + "_inv"), shape=stats_shape,
                           name=name + "_invstd")]
    return results[:len(node.output)]


@imports("Gelu")
def _gelu(ctx, node, attrs):
    x = ctx.symbol(node.input[0])
    if attrs.get("approximate", "none") == "none":
        return [sym.LeakyReLU(x, act_type="gelu", name=name_of(node))]
    inner = (x + 0.044715 * x * x * x) * math.sqrt(2 / math.pi)  # the tanh approximation
    return [sym.broadcast_mul(x * 0.5, sym.tanh(inner) + 1, name=name_of(node))]
