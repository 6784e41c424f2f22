"""ONNX conversions of the layers: dense, convolution, pooling, activations, the softmax
family and the output heads (in their inference form), upsampling.
(Normalization layers: convert_norm.py.)

Each converter writes the ONNX nodes that compute what the MXNet node's forward computes with
is_train=False; where ONNX has no one op for it, the arithmetic is spelled out (GELU).
"""
from __future__ import annotations

import math

import numpy as np

from .builder import Site, converts

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_CHANNEL_FIRST = (None, "NCW", "NCHW", "NCDHW")


def _spatial(site: Site, values, default: int) -> list:
    n = site.rank(0) - 2
    values = tuple(values)
    return list(values) if values else [default] * n


def _check_layout(site: Site) -> None:
    if site.attrs.layout not in _CHANNEL_FIRST:
        raise site.refuse("layout %s: only channel-first layouts (NCW, NCHW, NCDHW) are "
                          "exported" % site.attrs.layout)


@converts("FullyConnected")
def _fully_connected(site: Site) -> None:
    a, b = site.attrs, site.b
    x = site.ins[0]
    bias = [] if a.no_bias else [site.ins[2]]
    if site.rank(0) < 2:
        raise site.refuse("its input has rank %d; rank 2 or more is exported" % site.rank(0))
    if a.flatten:
        if site.rank(0) > 2:
            x = b.add("Flatten", [x], hint=site.name + "_flat", axis=1)
        b.add("Gemm", [x, site.ins[1]] + bias, out=site.outs[0], transB=1)
        return
    weight_t = b.add("Transpose", [site.ins[1]], hint=site.name + "_weight_t", perm=[1, 0])
    if a.no_bias:
        b.add("MatMul", [x, weight_t], out=site.outs[0])
    else:
        y = b.add("MatMul", [x, weight_t], hint=site.name + "_matmul")
        b.add("Add", [y] + bias, out=site.outs[0])


def _conv_attrs(site: Site) -> dict:
    a = site.attrs
    _check_layout(site)
    pad = _spatial(site, a.pad, 0)
    return dict(kernel_shape=list(a.kernel), strides=_spatial(site, a.stride, 1),
                dilations=_spatial(site, a.dilate, 1), pads=pad + pad, group=a.num_group)


@converts("Convolution")
def _convolution(site: Site) -> None:
    inputs = site.ins[:2] if site.attrs.no_bias else site.ins[:3]
    site.b.add("Conv", inputs, out=site.outs[0], **_conv_attrs(site))


@converts("Deconvolution")
def _deconvolution(site: Site) -> None:
    a = site.attrs
    attrs = _conv_attrs(site)
    inputs = site.ins[:2] if a.no_bias else site.ins[:3]
    if a.target_shape and any(a.target_shape):
        # MXNet crops the full output to the target: ceil(excess/2) before, the rest after
        spatial = site.fixed_shape(0)[2:]
        begin, end = [], []
        for n, k, s, d, t in zip(spatial, a.kernel, attrs["strides"], attrs["dilations"],
                                 a.target_shape):
            excess = s * (n - 1) + d * (k - 1) + 1 - t
            begin.append((excess + 1) // 2)
            end.append(excess // 2)
        attrs["pads"] = begin + end
    else:
        attrs["output_padding"] = _spatial(site, a.adj, 0)
    site.b.add("ConvTranspose", inputs, out=site.outs[0], **attrs)


def _full_convention(site: Site, stride: list, pad: list) -> tuple:
    """(pads, ceil_mode) for MXNet's 'full' convention. ONNX's ceil_mode drops a last window
    that would start in the end padding, MXNet keeps it; where that happens, max pooling pads
    the input with -inf first (ceil_mode None), and the averages are
    refused."""
    kernel = site.attrs.kernel
    if all(p == 0 and k >= s for k, s, p in zip(kernel, stride, pad)):
        return pad + pad, 1  # no window can start past the input: the two agree
    spatial = site.fixed_shape(0)[2:]
    ends, same = [], True
    for n, k, s, p in zip(spatial, kernel, stride, pad):
        out = 1 + -(-(n + 2 * p - k) // s)
        same &= (out - 1) * s < n + p
        ends.append((out - 1) * s + k - n - p)
    if same:
        return pad + pad, 1
    if site.attrs.pool_type != "max":
        raise site.refuse("with pooling_convention 'full', its last window starts in the "
                          "padding, which ONNX's %s pooling drops" % site.attrs.pool_type)
    return pad + ends, None


@converts("Pooling")
def _pooling(site: Site) -> None:
    a, b = site.attrs, site.b
    _check_layout(site)
    out, x = site.outs[0], site.ins[0]
    if a.pool_type == "sum":  # an average over whole windows, times the window's size
        out = b.reserve(site.name + "_mean")
    if a.global_pool:
        op = {"max": "GlobalMaxPool", "avg": "GlobalAveragePool", "sum": "GlobalAveragePool",
              "lp": "GlobalLpPool"}[a.pool_type]
        b.add(op, [x], out=out, **({"p": a.p_value or 2} if a.pool_type == "lp" else {}))
        window = int(np.prod(site.fixed_shape(0)[2:])) if a.pool_type == "sum" else 1
    else:
        if a.pooling_convention == "same":
            raise site.refuse("pooling_convention 'same' has no ONNX equivalent")
        stride, pad = _spatial(site, a.stride, 1), _spatial(site, a.pad, 0)
        pads, ceil = pad + pad, 0
        if a.pooling_convention == "full":
            pads, ceil = _full_convention(site, stride, pad)
        attrs = dict(kernel_shape=list(a.kernel), strides=stride, pads=pads)
        if ceil is None:  # explicit padding, which ONNX's pools do not allow beyond a kernel
            lowest = -np.inf  # a window wholly in the padding gives -inf, as in MXNet
            widths = [0, 0] + pads[:len(pad)] + [0, 0] + pads[len(pad):]
            x = b.add("Pad", [x, b.ints(widths, site.name + "_pads"),
                              b.const(lowest, site.name + "_lowest", site.in_dtypes[0])],
                      hint=site.name + "_padded", mode="constant")
            attrs["pads"], ceil = [0] * len(pads), 0
        if a.pool_type == "max":
            b.add("MaxPool", [x], out=out, ceil_mode=ceil, **attrs)
        elif a.pool_type == "lp":
            if ceil:
                raise site.refuse("ONNX's LpPool has no 'full' pooling convention")
            b.add("LpPool", [x], out=out, p=a.p_value or 2, **attrs)
        else:
            include = a.count_include_pad is not False or a.pool_type == "sum"
            b.add("AveragePool", [x], out=out, ceil_mode=ceil, count_include_pad=int(include),
                  **attrs)
        window = int(np.prod(a.kernel))
    if a.pool_type == "sum":
        b.add("Mul", [out, b.const(window, site.name + "_window", site.out_dtypes[0])],
              out=site.outs[0])


_ACTIVATIONS = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus",
                "softsign": "Softsign"}


@converts("Activation")
def _activation(site: Site) -> None:
    site.b.add(_ACTIVATIONS[site.attrs.act_type], [site.ins[0]], out=site.outs[0])


@converts("LeakyReLU")
def _leaky_relu(site: Site) -> None:
    a, b = site.attrs, site.b
    x, out = site.ins[0], site.outs[0]
    if a.act_type == "leaky":
        b.add("LeakyRelu", [x], out=out, alpha=a.slope)
    elif a.act_type == "rrelu":  # inference: the middle of the slopes' range, a zero mask
        b.add("LeakyRelu", [x], out=out, alpha=(a.lower_bound + a.upper_bound) / 2)
        zero = b.helper.make_tensor("value", b.helper.np_dtype_to_tensor_dtype(
            site.out_dtypes[1]), [1], [0])
        b.add("ConstantOfShape", [b.add("Shape", [x], hint=site.name + "_shape")],
              out=site.outs[1], value=zero)
    elif a.act_type == "elu":
        b.add("Elu", [x], out=out, alpha=a.slope)
    elif a.act_type == "selu":
        b.add("Selu", [x], out=out, alpha=_SELU_ALPHA, gamma=_SELU_SCALE)
    elif a.act_type == "gelu":  # x * (1 + erf(x / sqrt 2)) / 2
        dtype = site.in_dtypes[0]
        scaled = b.add("Mul", [x, b.const(1 / math.sqrt(2), site.name + "_rsqrt2", dtype)])
        one_plus = b.add("Add", [b.add("Erf", [scaled]), b.const(1, site.name + "_one", dtype)])
        half_x = b.add("Mul", [x, b.const(0.5, site.name + "_half", dtype)])
        b.add("Mul", [half_x, one_plus], out=out)
    else:  # prelu: gamma has one slope per channel (axis 1), or one for all
        slope = site.ins[1]
        if site.in_shapes[1] != (1,) and site.rank(0) > 2:
            slope = b.along(slope, 1, site.rank(0), site.name + "_gamma_b")
        b.add("PRelu", [x, slope], out=out)


@converts("Dropout")
def _dropout(site: Site) -> None:
    if site.attrs.mode == "always" and site.attrs.p > 0:
        raise site.refuse("mode='always' drops units at inference too, which ONNX inference "
                          "graphs do not do")
    site.b.add("Identity", [site.ins[0]], out=site.outs[0])


def _instance_softmax(site: Site, x: str) -> None:
    """Softmax over all axes but the first, as SoftmaxOutput does by default."""
    b = site.b
    if site.rank(0) == 2:
        b.add("Softmax", [x], out=site.outs[0], axis=1)
        return
    flat = b.add("Flatten", [x], hint=site.name + "_flat", axis=1)
    y = b.add("Softmax", [flat], hint=site.name + "_softmax", axis=1)
    b.add("Reshape", [y, b.add("Shape", [x], hint=site.name + "_shape")], out=site.outs[0])


@converts("SoftmaxOutput")
def _softmax_output(site: Site) -> None:
    a = site.attrs
    if a.preserve_shape:
        site.b.add("Softmax", [site.ins[0]], out=site.outs[0], axis=-1)
    elif a.multi_output:
        site.b.add("Softmax", [site.ins[0]], out=site.outs[0], axis=1)
    else:
        _instance_softmax(site, site.ins[0])


@converts("SoftmaxActivation")
def _softmax_activation(site: Site) -> None:
    axis = 1 if site.attrs.mode == "channel" else -1
    site.b.add("Softmax", [site.ins[0]], out=site.outs[0], axis=axis)


def _softmax_along(site: Site, op_type: str, x: str) -> None:
    a, b = site.attrs, site.b
    if getattr(a, "use_length", False):
        raise site.refuse("use_length=True is not exported")
    if a.temperature is not None and a.temperature != 1.0:
        x = b.add("Div", [x, b.const(a.temperature, site.name + "_t", site.in_dtypes[0])])
    cast = site.out_dtypes[0] != site.in_dtypes[0]
    y = b.add(op_type, [x], out=None if cast else site.outs[0], hint=site.name + "_sm",
              axis=a.axis)
    if cast:
        b.add("Cast", [y], out=site.outs[0], to=b.helper.np_dtype_to_tensor_dtype(
            site.out_dtypes[0]))


@converts("softmax")
def _softmax(site: Site) -> None:
    _softmax_along(site, "Softmax", site.ins[0])


@converts("log_softmax")
def _log_softmax(site: Site) -> None:
    _softmax_along(site, "LogSoftmax", site.ins[0])


@converts("softmin")
def _softmin(site: Site) -> None:
    _softmax_along(site, "Softmax", site.b.add("Neg", [site.ins[0]], hint=site.name + "_neg"))


@converts("LinearRegressionOutput", "MAERegressionOutput", "SVMOutput", "MakeLoss",
          "BlockGrad")
def _identity_head(site: Site) -> None:
    site.b.add("Identity", [site.ins[0]], out=site.outs[0])


@converts("LogisticRegressionOutput")
def _logistic_head(site: Site) -> None:
    site.b.add("Sigmoid", [site.ins[0]], out=site.outs[0])


@converts("UpSampling")
def _upsampling(site: Site) -> None:
    a, b = site.attrs, site.b
    if a.sample_type != "nearest" or a.num_args != 1:
        raise site.refuse("only nearest upsampling of one input is exported (bilinear "
                          "UpSampling is a learned deconvolution)")
    scales = b.const([1.0, 1.0] + [float(a.scale)] * (site.rank(0) - 2),
                     site.name + "_scales", np.float32)
    b.add("Resize", [site.ins[0], "", scales], out=site.outs[0], mode="nearest",
          coordinate_transformation_mode="asymmetric", nearest_mode="floor")
