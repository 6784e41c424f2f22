"""Tests of the layer ops (dense, convolution, pooling, activation, normalisation ... in
minimod/ops/): the case table, MXNet golden values, parameter and shape errors."""
from __future__ import annotations

import itertools
import json
import math
import os

import numpy as np
import pytest

import minimod as mx
from minimod import backend
from minimod.base import OpParamError, ShapeError
from minimod.ops import conv_helpers
from minimod.ops.registry import create_op
from tests.ops.harness import Case, check_case, infer, run_backward, run_forward

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "data", "ops", "nn_golden.npz")
_RS = np.random.RandomState(0)


def r(*shape, positive=False):
    a = _RS.randn(*shape).astype(np.float32)
    return np.abs(a) + 0.5 if positive else a


def distinct(*shape):
    """Values with no ties (max pooling's gradient is only defined without ties)."""
    a = _RS.permutation(int(np.prod(shape))).astype(np.float32) / 7.0
    return a.reshape(shape)


# ----------------------------------------------------------------------------- references

def ref_fc(flatten=True):
    def ref(x, w, b=None):
        x2 = x.reshape(x.shape[0], -1) if flatten else x
        y = x2.astype(np.float64) @ w.T
        return [y if b is None else y + b]
    return ref


def ref_conv(stride, dilate, pad, groups=1):
    def ref(x, w, b=None):
        nd = x.ndim - 2
        kernel = w.shape[2:]
        xpad = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(p, p) for p in pad])
        out_sp = [(n + 2 * p - d * (k - 1) - 1) // s + 1
                  for n, k, s, d, p in zip(x.shape[2:], kernel, stride, dilate, pad)]
        cg, fg = x.shape[1] // groups, w.shape[0] // groups
        y = np.zeros((x.shape[0], w.shape[0]) + tuple(out_sp))
        axes = list(range(1, nd + 2))
        for pos in np.ndindex(*out_sp):
            sl = tuple(slice(o * s, o * s + d * (k - 1) + 1, d)
                       for o, s, d, k in zip(pos, stride, dilate, kernel))
            patch = xpad[(slice(None), slice(None)) + sl]
            for g in range(groups):
                y[(slice(None), slice(g * fg, (g + 1) * fg)) + pos] = np.tensordot(
                    patch[:, g * cg:(g + 1) * cg], w[g * fg:(g + 1) * fg], axes=(axes, axes))
        if b is not None:
            y += b.reshape((1, -1) + (1,) * nd)
        return [y]
    return ref


def ref_deconv(stride, dilate, pad, adj, groups=1):
    def ref(x, w, b=None):
        nd = x.ndim - 2
        kernel = w.shape[2:]
        cg, fg = x.shape[1] // groups, w.shape[1]
        full = [s * (n - 1) + d * (k - 1) + 1 + a
                for n, k, s, d, a in zip(x.shape[2:], kernel, stride, dilate, adj)]
        y = np.zeros((x.shape[0], fg * groups) + tuple(full))
        for pos in np.ndindex(*x.shape[2:]):
            for tap in np.ndindex(*kernel):
                opos = tuple(i * s + t * d for i, t, s, d in zip(pos, tap, stride, dilate))
                for g in range(groups):
                    y[(slice(None), slice(g * fg, (g + 1) * fg)) + opos] += (
                        x[(slice(None), slice(g * cg, (g + 1) * cg)) + pos].astype(np.float64)
                        @ w[(slice(g * cg, (g + 1) * cg), slice(None)) + tap])
        y = y[(Ellipsis,) + tuple(slice(p, f - p) for p, f in zip(pad, full))]
        if b is not None:
            y = y + b.reshape((1, -1) + (1,) * nd)
        return [y]
    return ref


def ref_pool(kernel=(), stride=None, pad=None, pool_type="max", convention="valid",
             include_pad=True, p_value=None, global_pool=False):
    def ref(x):
        sp = x.shape[2:]
        k = sp if global_pool else kernel
        s = (1,) * len(sp) if global_pool or stride is None else stride
        p = (0,) * len(sp) if global_pool or pad is None else pad
        rounding = math.floor if convention == "valid" else math.ceil
        out_sp = [rounding((n + 2 * pp - kk) / ss) + 1 for n, kk, ss, pp in zip(sp, k, s, p)]
        y = np.zeros(x.shape[:2] + tuple(out_sp))
        for pos in np.ndindex(*out_sp):
            start = [o * ss - pp for o, ss, pp in zip(pos, s, p)]
            end_pad = [min(st + kk, n + pp) for st, kk, n, pp in zip(start, k, sp, p)]
            lo = [max(st, 0) for st in start]
            hi = [min(st + kk, n) for st, kk, n in zip(start, k, sp)]
            win = x[(slice(None), slice(None)) + tuple(slice(a, b) for a, b in zip(lo, hi))]
            win = win.reshape(x.shape[:2] + (-1,)).astype(np.float64)
            if pool_type == "max":
                val = win.max(-1)
            elif pool_type == "sum":
                val = win.sum(-1)
            elif pool_type == "avg":
                count = np.prod([b - a for a, b in zip(start, end_pad)] if include_pad
                                else [b - a for a, b in zip(lo, hi)])
                val = win.sum(-1) / count
            else:
                total = (win ** p_value).sum(-1)
                val = np.cbrt(total) if p_value == 3 else total ** (1.0 / p_value)
            y[(slice(None), slice(None)) + pos] = val
        return [y]
    return ref


def _bn_ref(x, gamma, beta, mm, mv, axis=1, eps=1e-3, fix_gamma=True, train=True,
            output_mean_var=False):
    axis = axis % x.ndim
    axes = tuple(i for i in range(x.ndim) if i != axis)
    shape = [1] * x.ndim
    shape[axis] = -1
    x = x.astype(np.float64)
    mean, var = (x.mean(axes), x.var(axes)) if train else (mm, mv)
    g = np.ones_like(gamma) if fix_gamma else gamma
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * g.reshape(shape) \
        + beta.reshape(shape)
    return [y, mean, 1 / np.sqrt(var + eps)] if output_mean_var else [y]


def ref_bn(**kw):
    def ref(x, gamma, beta, mm, mv):
        return _bn_ref(x, gamma, beta, mm, mv, **kw)
    return ref


def ref_softmax(axis=-1, temperature=1.0, log=False):
    def ref(x, length=None):
        z = x.astype(np.float64) / temperature
        if length is not None:
            pos = np.arange(x.shape[axis]).reshape((-1,) + (1,) * (x.ndim - axis % x.ndim - 1))
            keep = pos < np.expand_dims(length, axis)
            z = np.where(keep, z, -np.inf)
        e = np.exp(z - z.max(axis=axis, keepdims=True))
        y = e / e.sum(axis=axis, keepdims=True)
        return [np.log(y) if log else y]
    return ref


def _elementwise(f):
    """A case reference applying f in float64."""
    return lambda x: [f(x.astype(np.float64))]


def _erf(v):
    return np.vectorize(math.erf)(v)


LEAKY_REFS = {
    "leaky": lambda x: np.where(x > 0, x, 0.1 * x),
    "elu": lambda x: np.where(x > 0, x, 0.1 * np.expm1(np.minimum(x, 0))),
    "selu": lambda x: 1.0507009873554805 * np.where(
        x > 0, x, 1.6732632423543772 * np.expm1(np.minimum(x, 0))),
    "gelu": lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))),
}

ACT_REFS = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "softrelu": lambda x: np.log1p(np.exp(x)),
    "softsign": lambda x: x / (1 + np.abs(x)),
}


def ref_lrn(nsize, alpha, beta, knorm):
    def ref(x):
        x = x.astype(np.float64)
        half = nsize // 2
        acc = np.zeros_like(x)
        for c in range(x.shape[1]):
            acc[:, c] = (x[:, max(0, c - half):c + half + 1] ** 2).sum(1)
        return [x / (knorm + alpha / nsize * acc) ** beta]
    return ref


def ref_layer_norm(axis, eps, output_mean_var=False):
    def ref(x, gamma, beta):
        shape = [1] * x.ndim
        shape[axis] = -1
        mean = x.mean(axis, keepdims=True)
        std = np.sqrt(x.var(axis, keepdims=True) + eps)
        y = (x - mean) / std * gamma.reshape(shape) + beta.reshape(shape)
        return [y, mean, std] if output_mean_var else [y]
    return ref


def ref_instance_norm(eps):
    def ref(x, gamma, beta):
        axes = tuple(range(2, x.ndim))
        shape = (1, -1) + (1,) * (x.ndim - 2)
        y = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
        return [y * gamma.reshape(shape) + beta.reshape(shape)]
    return ref


def ref_dropout_train(p, axes=()):
    def ref(x):
        shape = list(x.shape)
        for ax in axes:
            shape[ax] = 1
        backend.seed(0)
        keep = backend.rng(np).uniform(0, 1, tuple(shape)) < 1 - p
        return [x * keep / (1 - p)]
    return ref


# ----------------------------------------------------------------------------- the case table

def _cases():
    c = []
    # FullyConnected
    c.append(Case("FullyConnected", dict(num_hidden=4), [r(2, 3, 5), r(4, 15), r(4)],
                  ref_fc(), infer_from=[0], id="fc_flatten"))
    c.append(Case("FullyConnected", dict(num_hidden=4, no_bias=True, flatten=False),
                  [r(2, 3, 5), r(4, 5)], ref_fc(False), infer_from=[0], id="fc_no_flatten"))
    # Convolution
    c.append(Case("Convolution", dict(kernel=(3,), num_filter=4), [r(2, 3, 7), r(4, 3, 3),
                                                                  r(4)],
                  ref_conv((1,), (1,), (0,)), infer_from=[0], id="conv1d"))
    c.append(Case("Convolution", dict(kernel=(3,), num_filter=2, stride=(2,), pad=(2,),
                                      dilate=(2,), no_bias=True),
                  [r(2, 3, 8), r(2, 3, 3)], ref_conv((2,), (2,), (2,)), infer_from=[0],
                  id="conv1d_stride_pad_dilate"))
    c.append(Case("Convolution", dict(kernel=(3, 2), num_filter=4, pad=(1, 0), stride=(2, 1)),
                  [r(2, 3, 5, 4), r(4, 3, 3, 2), r(4)],
                  ref_conv((2, 1), (1, 1), (1, 0)), infer_from=[0], id="conv2d"))
    c.append(Case("Convolution", dict(kernel=(2, 3), num_filter=6, num_group=2, dilate=(2, 1),
                                      pad=(1, 1)),
                  [r(1, 4, 5, 4), r(6, 2, 2, 3), r(6)],
                  ref_conv((1, 1), (2, 1), (1, 1), 2), infer_from=[0], id="conv2d_groups"))
    c.append(Case("Convolution", dict(kernel=(2, 2, 1), num_filter=2, stride=(1, 2, 1)),
                  [r(1, 2, 3, 4, 2), r(2, 2, 2, 2, 1), r(2)],
                  ref_conv((1, 2, 1), (1, 1, 1), (0, 0, 0)), infer_from=[0], id="conv3d"))
    # Deconvolution
    c.append(Case("Deconvolution", dict(kernel=(3,), num_filter=3, stride=(2,)),
                  [r(2, 2, 4), r(2, 3, 3)], ref_deconv((2,), (1,), (0,), (0,)),
                  infer_from=[0], id="deconv1d"))
    c.append(Case("Deconvolution", dict(kernel=(4,), num_filter=2, stride=(2,), pad=(1,),
                                        dilate=(2,), adj=(1,), no_bias=False),
                  [r(1, 3, 5), r(3, 2, 4), r(2)], ref_deconv((2,), (2,), (1,), (1,)),
                  infer_from=[0], id="deconv1d_pad_adj_dilate_bias"))
    c.append(Case("Deconvolution", dict(kernel=(3, 2), num_filter=4, num_group=2,
                                        stride=(2, 1), pad=(1, 0)),
                  [r(2, 4, 3, 2), r(4, 2, 3, 2)], ref_deconv((2, 1), (1, 1), (1, 0), (0, 0), 2),
                  infer_from=[0], id="deconv2d_groups"))
    c.append(Case("Deconvolution", dict(kernel=(3,), num_filter=2, stride=(2,),
                                        target_shape=(8,)),
                  [r(1, 2, 4), r(2, 2, 3)], ref_deconv((2,), (1,), (1,), (1,)),
                  infer_from=[0], id="deconv1d_target_shape"))
    # Pooling
    x2 = distinct(2, 3, 7, 6)
    c.append(Case("Pooling", dict(kernel=(3, 2), stride=(2, 2), pad=(1, 1)), [x2],
                  ref_pool((3, 2), (2, 2), (1, 1)), id="pool_max_pad"))
    c.append(Case("Pooling", dict(kernel=(3, 2)), [x2], ref_pool((3, 2)),
                  id="pool_max_stride1_default"))
    c.append(Case("Pooling", dict(kernel=(3, 2), stride=(2, 2), pad=(1, 0),
                                  pooling_convention="full"), [distinct(1, 2, 8, 5)],
                  ref_pool((3, 2), (2, 2), (1, 0), convention="full"), id="pool_max_full"))
    for conv, incl in itertools.product(("valid", "full"), (None, False)):
        attrs = dict(kernel=(3, 2), stride=(2, 2), pad=(1, 0), pool_type="avg",
                     pooling_convention=conv)
        if incl is not None:
            attrs["count_include_pad"] = incl
        c.append(Case("Pooling", attrs, [r(1, 2, 8, 5)],
                      ref_pool((3, 2), (2, 2), (1, 0), "avg", conv, incl is not False),
                      id="pool_avg_%s_incl%s" % (conv, incl)))
    c.append(Case("Pooling", dict(kernel=(3,), stride=(2,), pad=(1,), pool_type="sum"),
                  [r(2, 3, 9)], ref_pool((3,), (2,), (1,), "sum"), id="pool1d_sum"))
    c.append(Case("Pooling", dict(kernel=(2,), stride=(2,), pool_type="max",
                                  pooling_convention="full"), [distinct(2, 3, 7)],
                  ref_pool((2,), (2,), (0,), convention="full"), id="pool1d_max_full"))
    for pv in (1, 2, 3):
        c.append(Case("Pooling", dict(kernel=(2,), stride=(2,), pool_type="lp", p_value=pv),
                      [r(2, 2, 6, positive=True)], ref_pool((2,), (2,), (0,), "lp",
                                                            p_value=pv),
                      id="pool1d_lp%d" % pv))
    for pt in ("max", "avg", "sum"):
        x = distinct(2, 3, 4, 5)
        c.append(Case("Pooling", dict(global_pool=True, pool_type=pt), [x],
                      ref_pool(pool_type=pt, global_pool=True), id="pool_global_" + pt))
    c.append(Case("Pooling", dict(kernel=(2, 2), global_pool=True, pool_type="avg",
                                  stride=(2, 2), pad=(1, 1)), [r(2, 3, 5)[..., None]],
                  ref_pool(pool_type="avg", global_pool=True), id="pool_global_ignores_kernel"))
    # activations
    for act, ref in ACT_REFS.items():
        c.append(Case("Activation", dict(act_type=act), [r(2, 3, 5)],
                      _elementwise(ref), id="act_" + act))
    for act, ref in LEAKY_REFS.items():
        c.append(Case("LeakyReLU", dict(act_type=act, slope=0.1), [r(2, 3, 5)],
                      _elementwise(ref), id="leaky_" + act))
    c.append(Case("LeakyReLU", dict(act_type="prelu"), [r(2, 3, 5), r(3)],
                  lambda x, g: [np.where(x > 0, x, g.reshape(1, 3, 1) * x)], infer_from=[0],
                  id="prelu"))
    c.append(Case("LeakyReLU", dict(act_type="prelu"), [r(2, 3, 5), r(1)],
                  lambda x, g: [np.where(x > 0, x, g * x)], id="prelu_scalar_gamma"))

    def rrelu_train(x):
        backend.seed(0)
        slope = backend.rng(np).uniform(0.125, 0.334, x.shape)
        return [np.where(x > 0, x, slope * x), slope]
    c.append(Case("LeakyReLU", dict(act_type="rrelu"), [r(2, 3, 5)], rrelu_train,
                  id="rrelu_train"))
    c.append(Case("LeakyReLU", dict(act_type="rrelu"), [r(2, 3, 5)],
                  lambda x: [np.where(x > 0, x, x * (0.125 + 0.334) / 2), np.zeros(x.shape)],
                  is_train=False, check_grad=False, id="rrelu_inference"))
    # BatchNorm (inputs: data, gamma, beta, moving_mean, moving_var)

    def bn_inputs(*shape, axis=1):
        ch = shape[axis]
        return [r(*shape), r(ch, positive=True), r(ch), r(ch), r(ch, positive=True)]
    c.append(Case("BatchNorm", dict(fix_gamma=False), bn_inputs(4, 3, 2, 5),
                  ref_bn(fix_gamma=False), infer_from=[0], grad_wrt=[0, 1, 2], id="bn_train"))
    c.append(Case("BatchNorm", {}, bn_inputs(4, 3, 5), ref_bn(), infer_from=[0],
                  grad_wrt=[0, 1, 2], id="bn_train_fix_gamma"))
    c.append(Case("BatchNorm", dict(axis=-1, fix_gamma=False, eps=1e-2), bn_inputs(5, 2, 3,
                                                                                   axis=2),
                  ref_bn(axis=-1, fix_gamma=False, eps=1e-2), infer_from=[0],
                  grad_wrt=[0, 1, 2], id="bn_train_axis_last"))
    c.append(Case("BatchNorm", dict(fix_gamma=False), bn_inputs(4, 3, 5),
                  ref_bn(fix_gamma=False, train=False), is_train=False, check_grad=False,
                  id="bn_inference"))
    c.append(Case("BatchNorm", dict(fix_gamma=False, use_global_stats=True), bn_inputs(4, 3, 5),
                  ref_bn(fix_gamma=False, train=False), grad_wrt=[0, 1, 2],
                  id="bn_use_global_stats"))
    c.append(Case("BatchNorm", dict(fix_gamma=False, output_mean_var=True), bn_inputs(4, 3, 5),
                  ref_bn(fix_gamma=False, output_mean_var=True), check_grad=False,
                  id="bn_output_mean_var"))
    # Dropout
    c.append(Case("Dropout", dict(p=0.3), [r(4, 3, 5)], ref_dropout_train(0.3),
                  id="dropout_train"))
    c.append(Case("Dropout", dict(p=0.5, axes=(1,)), [r(4, 3, 5)],
                  ref_dropout_train(0.5, (1,)), id="dropout_train_axes"))
    c.append(Case("Dropout", dict(p=0.3), [r(4, 3, 5)], lambda x: [x], is_train=False,
                  id="dropout_inference"))
    c.append(Case("Dropout", dict(p=0.3, mode="always"), [r(4, 3, 5)], ref_dropout_train(0.3),
                  is_train=False, id="dropout_always"))
    # Embedding
    idx = np.array([[0, 3, 1], [3, 3, 2]], dtype=np.float32)
    c.append(Case("Embedding", dict(input_dim=4, output_dim=5), [idx, r(4, 5)],
                  lambda d, w: [w[d.astype(int)]], infer_from=[0], grad_wrt=[1],
                  id="embedding"))
    # softmax family
    c.append(Case("softmax", {}, [r(2, 3, 5)], ref_softmax(), id="softmax"))
    c.append(Case("softmax", dict(axis=1, temperature=2.5), [r(2, 3, 5)],
                  ref_softmax(1, 2.5), id="softmax_axis_temperature"))
    length = np.array([[1, 4, 2], [3, 2, 4]], dtype=np.int32)
    c.append(Case("softmax", dict(axis=1, use_length=True), [r(2, 4, 3), length],
                  lambda x, n: [np.nan_to_num(ref_softmax(1)(x, n)[0])], infer_from=[0],
                  grad_wrt=[0], id="softmax_length"))
    c.append(Case("log_softmax", dict(axis=0, temperature=0.5), [r(3, 4)],
                  ref_softmax(0, 0.5, log=True), id="log_softmax"))
    c.append(Case("SoftmaxActivation", {}, [r(2, 3, 4)], ref_softmax(-1),
                  id="softmax_activation_instance"))
    c.append(Case("SoftmaxActivation", dict(mode="channel"), [r(2, 3, 4)], ref_softmax(1),
                  id="softmax_activation_channel"))
    # LRN, LayerNorm, InstanceNorm
    c.append(Case("LRN", dict(nsize=3, alpha=0.1), [r(2, 5, 3, 2)], ref_lrn(3, 0.1, 0.75, 2.0),
                  id="lrn"))
    c.append(Case("LayerNorm", {}, [r(2, 3, 4), r(4), r(4)], ref_layer_norm(-1, 1e-5),
                  infer_from=[0], id="layer_norm"))
    c.append(Case("LayerNorm", dict(axis=1, output_mean_var=True), [r(2, 3, 4), r(3), r(3)],
                  ref_layer_norm(1, 1e-5, True), check_grad=False, id="layer_norm_mean_std"))
    c.append(Case("InstanceNorm", {}, [r(2, 3, 4, 2), r(3), r(3)], ref_instance_norm(1e-3),
                  infer_from=[0], id="instance_norm"))
    c += _fast_path_cases()
    return c


def _fast_path_cases():
    """Cases for the batch-last im2col convolution and the disjoint-window pooling paths.

    Kept after the original table so that adding them leaves the earlier cases' inputs alone.
    """
    c = []
    # Convolution: strides, dilation, padding and groups together; 1-D and 2-D
    c.append(Case("Convolution", dict(kernel=(3, 3), num_filter=4, stride=(2, 2), pad=(1, 2),
                                      dilate=(1, 2), num_group=2),
                  [r(3, 4, 7, 8), r(4, 2, 3, 3), r(4)],
                  ref_conv((2, 2), (1, 2), (1, 2), 2), infer_from=[0],
                  id="conv2d_stride_dilate_pad_groups"))
    c.append(Case("Convolution", dict(kernel=(2,), num_filter=6, stride=(3,), num_group=3,
                                      no_bias=True),
                  [r(2, 3, 10), r(6, 1, 2)], ref_conv((3,), (1,), (0,), 3), infer_from=[0],
                  id="conv1d_stride_groups"))
    c.append(Case("Convolution", dict(kernel=(5, 5), num_filter=3),
                  [r(1, 1, 9, 8), r(3, 1, 5, 5), r(3)], ref_conv((1, 1), (1, 1), (0, 0)),
                  infer_from=[0], id="conv2d_lenet_like_batch1"))
    c.append(Case("Convolution", dict(kernel=(1, 1), num_filter=2, stride=(2, 2)),
                  [r(2, 3, 5, 5), r(2, 3, 1, 1), r(2)], ref_conv((2, 2), (1, 1), (0, 0)),
                  infer_from=[0], id="conv2d_1x1_stride"))
    # Deconvolution: 2-D stride, dilation, pad and adj, and 3-D
    c.append(Case("Deconvolution", dict(kernel=(3, 2), num_filter=2, stride=(2, 3),
                                        dilate=(2, 1), pad=(1, 1), adj=(1, 2), no_bias=False),
                  [r(2, 3, 3, 4), r(3, 2, 3, 2), r(2)],
                  ref_deconv((2, 3), (2, 1), (1, 1), (1, 2)), infer_from=[0],
                  id="deconv2d_stride_dilate_pad_adj"))
    c.append(Case("Deconvolution", dict(kernel=(2, 1, 2), num_filter=2, stride=(1, 2, 2)),
                  [r(1, 2, 2, 3, 2), r(2, 2, 2, 1, 2)],
                  ref_deconv((1, 2, 2), (1, 1, 1), (0, 0, 0), (0, 0, 0)), infer_from=[0],
                  id="deconv3d"))
    # Pooling with disjoint windows (stride == kernel): exact cover, leftovers, padding
    c.append(Case("Pooling", dict(kernel=(2, 2), stride=(2, 2)), [distinct(2, 3, 6, 8)],
                  ref_pool((2, 2), (2, 2)), id="pool_max_disjoint_exact"))
    c.append(Case("Pooling", dict(kernel=(2, 3), stride=(2, 3)), [distinct(2, 2, 7, 8)],
                  ref_pool((2, 3), (2, 3)), id="pool_max_disjoint_leftover"))
    c.append(Case("Pooling", dict(kernel=(2, 2), stride=(2, 2), pad=(1, 1)),
                  [distinct(1, 2, 5, 6)], ref_pool((2, 2), (2, 2), (1, 1)),
                  id="pool_max_disjoint_pad"))
    c.append(Case("Pooling", dict(kernel=(2, 2), stride=(2, 2), pooling_convention="full"),
                  [distinct(1, 2, 5, 7)], ref_pool((2, 2), (2, 2), (0, 0), convention="full"),
                  id="pool_max_disjoint_full"))
    c.append(Case("Pooling", dict(kernel=(3, 2), stride=(1, 2)), [distinct(1, 2, 3, 6)],
                  ref_pool((3, 2), (1, 2)), id="pool_max_one_window_rows"))
    c.append(Case("Pooling", dict(kernel=(2, 2, 2), stride=(2, 2, 2)), [distinct(1, 2, 4, 4, 5)],
                  ref_pool((2, 2, 2), (2, 2, 2)), id="pool3d_max_disjoint"))
    c.append(Case("Pooling", dict(kernel=(3,), stride=(3,)), [distinct(2, 3, 10)],
                  ref_pool((3,), (3,)), id="pool1d_max_disjoint"))
    for incl in (None, False):
        attrs = dict(kernel=(2, 2), stride=(2, 2), pad=(1, 1), pool_type="avg")
        if incl is not None:
            attrs["count_include_pad"] = incl
        c.append(Case("Pooling", attrs, [r(2, 2, 5, 6)],
                      ref_pool((2, 2), (2, 2), (1, 1), "avg", include_pad=incl is not False),
                      id="pool_avg_disjoint_pad_incl%s" % incl))
    c.append(Case("Pooling", dict(kernel=(2, 2), stride=(2, 2), pool_type="sum"),
                  [r(2, 2, 4, 6)], ref_pool((2, 2), (2, 2), (0, 0), "sum"),
                  id="pool_sum_disjoint_exact"))
    c.append(Case("Pooling", dict(kernel=(2, 2), stride=(2, 2), pool_type="lp", p_value=2),
                  [r(1, 2, 4, 5, positive=True)], ref_pool((2, 2), (2, 2), (0, 0), "lp",
                                                          p_value=2),
                  id="pool_lp2_disjoint"))
    return c


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_case(case, ctx):
    check_case(case, ctx)


CONV_CASES = [c for c in CASES if c.op == "Convolution"]


@pytest.mark.parametrize("case", CONV_CASES, ids=str)
@pytest.mark.parametrize("min_width", [1, 10 ** 9], ids=["channels_batch", "batch_last"])
def test_convolution_case_in_each_work_layout(case, min_width, monkeypatch, ctx):
    """Convolution picks its work layout by output width; both must give the same results."""
    monkeypatch.setattr(conv_helpers, "CN_MIN_WIDTH", min_width)
    check_case(case, ctx)


# ----------------------------------------------------------------------------- MXNet golden

def _golden():
    data = np.load(GOLDEN)
    names = sorted({k.split("/")[0] for k in data.files})
    return data, names


GOLDEN_DATA, GOLDEN_NAMES = _golden()

# Gradients where MXNet 1.9.1 is wrong and minimod is right (the numeric checks above prove ours).
MXNET_GRADIENT_BUGS = {
    # for x < 0 MXNet returns lambda*(y + alpha) instead of y + lambda*alpha
    "selu": "selu gradient off by a factor lambda on the negative side",
    # the forward normalises the last axis, MXNet's backward normalises axis 1
    "softmax_activation": "instance-mode backward on >2-D data uses axis 1",
}


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_matches_mxnet(name):
    data = GOLDEN_DATA
    meta = json.loads(str(data[name + "/meta"]))
    op = create_op(meta["op"], meta["attrs"])
    n_in, n_aux = meta["n_in"], meta["n_aux"]
    inputs = [data["%s/in%d" % (name, i)] for i in range(n_in + n_aux)]
    args, aux, outs = run_forward(op, inputs, meta["train"])
    assert op.num_visible_outputs() == meta["n_out"]
    for i in range(meta["n_compare"]):
        np.testing.assert_allclose(outs[i], data["%s/out%d" % (name, i)], rtol=1e-4, atol=1e-5,
                                   err_msg="%s output %d" % (name, i))
    if not meta["wrt"] or name in MXNET_GRADIENT_BUGS:
        return
    heads = [data[name + "/head"]] + [np.zeros_like(o) for o in outs[1:]]
    grads = run_backward(op, args, aux, outs, heads, meta["wrt"])
    for i in meta["wrt"]:
        np.testing.assert_allclose(grads[i], data["%s/grad%d" % (name, i)], rtol=1e-4,
                                   atol=1e-5, err_msg="%s grad %d" % (name, i))
    for i in range(n_aux):
        np.testing.assert_allclose(aux[i], data["%s/aux%d" % (name, i)], rtol=1e-5, atol=1e-6,
                                   err_msg="%s aux %d" % (name, i))


# ----------------------------------------------------------------------------- behaviour

def test_batchnorm_updates_moving_stats_in_training_only():
    x = r(6, 3, 4)
    gamma, beta, mm, mv = r(3), r(3), r(3), r(3, positive=True)
    op = create_op("BatchNorm", dict(momentum=0.7))
    args, aux, outs = run_forward(op, [x, gamma, beta, mm, mv], is_train=True)
    # as MXNet on the CPU: forward leaves the moving statistics alone, backward moves them
    np.testing.assert_array_equal(aux[0], mm)
    run_backward(op, args, aux, outs, [np.ones_like(o) for o in outs], [0])
    np.testing.assert_allclose(aux[0], 0.7 * mm + 0.3 * x.mean((0, 2)), rtol=1e-5)
    np.testing.assert_allclose(aux[1], 0.7 * mv + 0.3 * x.var((0, 2)), rtol=1e-5)
    for attrs, train in (({}, False), (dict(use_global_stats=True), True)):
        _, aux, _ = run_forward(create_op("BatchNorm", attrs), [x, gamma, beta, mm, mv], train)
        np.testing.assert_array_equal(aux[0], mm)
        np.testing.assert_array_equal(aux[1], mv)


def test_batchnorm_fix_gamma_gives_zero_gamma_grad_and_ignores_gamma():
    x, gamma, beta, mm, mv = r(4, 3, 2), r(3), r(3), r(3), r(3, positive=True)
    op = create_op("BatchNorm", {})
    args, aux, outs = run_forward(op, [x, gamma, beta, mm, mv])
    _, _, outs_one = run_forward(op, [x, np.ones(3, np.float32), beta, mm, mv])
    np.testing.assert_allclose(outs[0], outs_one[0])
    grads = run_backward(op, args, aux, outs, [np.ones_like(o) for o in outs], [0, 1, 2])
    np.testing.assert_array_equal(grads[1], 0)


def test_batchnorm_slots():
    op = create_op("BatchNorm", {})
    assert op.arguments() == ["data", "gamma", "beta"]
    assert op.aux_states() == ["moving_mean", "moving_var"]
    assert op.outputs() == ["output", "mean", "var"]
    assert op.num_visible_outputs() == 1
    assert create_op("BatchNorm", dict(output_mean_var="True")).num_visible_outputs() == 3


def test_dropout_mask_scaling_and_rate():
    x = np.ones((200, 50), np.float32)
    op = create_op("Dropout", dict(p=0.25))
    _, _, (y, mask) = run_forward(op, [x])
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((y == 0).mean() - 0.25) < 0.02
    np.testing.assert_array_equal(y, x * mask)
    _, _, (y, mask) = run_forward(op, [x], is_train=False)
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(mask, 1)


def test_dropout_axes_share_one_mask_value():
    op = create_op("Dropout", dict(p=0.5, axes=(0, 2)))
    _, _, (_, mask) = run_forward(op, [np.ones((4, 30, 3), np.float32)])
    assert mask.shape == (4, 30, 3)
    assert (mask == mask[:1, :, :1]).all()
    assert 0 < (mask[0, :, 0] == 0).sum() < 30


def test_dropout_inplace_output_is_input():
    op = create_op("Dropout", dict(p=0.5))
    assert op.inplace == ((0, 0),)
    x = r(10, 8)
    data = x.copy()
    mask = np.empty_like(x)
    backend.seed(3)
    op.forward(np, [data], [], [data, mask], True)
    np.testing.assert_allclose(data, x * mask)


@pytest.mark.parametrize("act", sorted(a for a in ACT_REFS if a != "softsign"))
def test_activation_inplace_and_backward_from_output(act):
    op = create_op("Activation", dict(act_type=act))
    assert op.inplace == ((0, 0),) and op.backward_inputs == ()
    x = r(3, 4).astype(np.float64)
    buf = x.copy()
    op.forward(np, [buf], [], [buf], True)
    np.testing.assert_allclose(buf, ACT_REFS[act](x), rtol=1e-6, atol=1e-7)
    dx = np.empty_like(x)
    op.backward(np, [np.ones_like(x)], [None], [buf], [dx], [])
    eps = 1e-6
    np.testing.assert_allclose(dx, (ACT_REFS[act](x + eps) - ACT_REFS[act](x - eps)) / (2 * eps),
                               rtol=1e-5, atol=1e-6)


def test_softsign_differentiates_its_input_and_keeps_it():
    """MXNet's softsign gradient is 1/(1+|x|)^2 of the input, so the output cannot take the
    input's memory."""
    op = create_op("Activation", dict(act_type="softsign"))
    assert op.inplace == () and op.backward_inputs == (0,) and op.backward_outputs == ()
    x = r(3, 4).astype(np.float64)
    dx = np.empty_like(x)
    op.backward(np, [np.ones_like(x)], [x], [None], [dx], [])
    np.testing.assert_allclose(dx, 1 / (1 + np.abs(x)) ** 2)


def test_activation_extreme_inputs_are_finite():
    x = np.array([-1e4, -50.0, 0.0, 50.0, 1e4], np.float32)
    for act in ACT_REFS:
        _, _, (y,) = run_forward(create_op("Activation", dict(act_type=act)), [x])
        assert np.isfinite(y).all(), act


def test_embedding_accumulates_repeated_indices_and_clips():
    op = create_op("Embedding", dict(input_dim=3, output_dim=2))
    data = np.array([0, 2, 2, 7, -4, 1.9], np.float32)
    w = r(3, 2)
    args, _, (y,) = run_forward(op, [data, w])
    np.testing.assert_array_equal(y, w[[0, 2, 2, 2, 0, 1]])
    head = np.ones_like(y)
    in_grads = [np.full(data.shape, np.nan, np.float32), np.full(w.shape, np.nan, np.float32)]
    op.backward(np, [head], args, [y], in_grads, [])
    np.testing.assert_array_equal(in_grads[0], 0)
    np.testing.assert_array_equal(in_grads[1], [[2, 2], [1, 1], [3, 3]])


def test_embedding_clips_rows_its_float_data_rounds_past_the_table():
    """float16 holds every second integer past 2048: the last row of a 3000-row table,
    2999, is 3000.0 in float16, so an index clipped to it in the data's type must be clipped
    again as a row number (the backward used to index past the table)."""
    op = create_op("Embedding", dict(input_dim=3000, output_dim=2))
    data = np.array([6e4, 2999, 2998.7, -5], np.float16)
    w = r(3000, 2)
    args, _, (y,) = run_forward(op, [data, w])
    np.testing.assert_array_equal(y, w[[2999, 2999, 2998, 0]])
    dw = np.full(w.shape, np.nan, np.float32)
    op.backward(np, [np.ones_like(y)], args, [y], [None, dw], [])
    assert dw[2999].tolist() == [2, 2] and dw[2998].tolist() == [1, 1] and dw[0].tolist() == [1, 1]
    assert np.count_nonzero(dw) == 6


def test_embedding_types():
    op = create_op("Embedding", dict(input_dim=3, output_dim=2, dtype="float16"))
    in_types, out_types = op.infer_type([np.dtype(np.int32), None], [None])
    assert in_types == [np.dtype(np.int32), "float16"] and out_types == ["float16"]


def test_max_pool_gradient_goes_to_first_maximum():
    op = create_op("Pooling", dict(kernel=(2, 2), stride=(1, 1)))
    x = np.ones((1, 1, 2, 4), np.float32)
    args, aux, outs = run_forward(op, [x])
    grads = run_backward(op, args, aux, outs, [np.ones_like(outs[0])], [0])
    np.testing.assert_array_equal(grads[0], [[[[1, 1, 1, 0], [0, 0, 0, 0]]]])


def test_disjoint_max_pool_gradient_goes_to_first_maximum():
    op = create_op("Pooling", dict(kernel=(2, 2), stride=(2, 2)))
    x = np.array([[[[1, 1, 0, 5], [1, 1, 5, 1]]]], np.float32)
    args, aux, outs = run_forward(op, [x])
    np.testing.assert_array_equal(outs[0], [[[[1, 5]]]])
    np.testing.assert_array_equal(outs[1], [[[[0, 1]]]])
    grads = run_backward(op, args, aux, outs, [np.array([[[[2, 3]]]], np.float32)], [0])
    np.testing.assert_array_equal(grads[0], [[[[2, 0, 0, 3], [0, 0, 0, 0]]]])


@pytest.mark.parametrize("name,attrs", [
    ("Convolution", dict(kernel=(3, 3), num_filter=4, pad=(1, 1), num_group=2)),
    ("Deconvolution", dict(kernel=(3, 3), num_filter=4, stride=(2, 2), pad=(1, 1))),
    ("Pooling", dict(kernel=(2, 2), stride=(2, 2), pad=(1, 1))),
    ("Pooling", dict(kernel=(2, 2), stride=(2, 2), pool_type="avg")),
])
def test_one_instance_reused_across_shapes_and_dtypes(name, attrs):
    """The per-instance scratch arrays must not leak data between calls of other shapes."""
    op = create_op(name, attrs)
    rs = np.random.RandomState(3)
    shapes = [(2, 4, 6, 6), (3, 4, 5, 7), (2, 4, 6, 6), (1, 4, 4, 4)]
    weight = None
    if name != "Pooling":
        weight = rs.randn(4, 2 if name == "Convolution" else 4, 3, 3)
    for i, shape in enumerate(shapes * 2):
        dtype = np.float32 if i < len(shapes) else np.float64
        inputs = [rs.randn(*shape).astype(dtype)]
        if weight is not None:
            inputs += [weight.astype(dtype)] + ([np.zeros(4, dtype)] if name == "Convolution"
                                                else [])
        args, aux, outs = run_forward(op, inputs)
        heads = [rs.randn(*o.shape).astype(dtype) for o in outs]
        grads = run_backward(op, args, aux, outs, heads, list(range(len(args))))
        fresh = create_op(name, attrs)
        args2, aux2, outs2 = run_forward(fresh, inputs)
        grads2 = run_backward(fresh, args2, aux2, outs2, heads, list(range(len(args))))
        np.testing.assert_array_equal(outs[0], outs2[0])
        for g, g2 in zip(grads, grads2):
            np.testing.assert_array_equal(g, g2)


def test_backward_declarations():
    assert create_op("Pooling", dict(kernel=(2,), pool_type="avg")).backward_inputs == ()
    max_pool = create_op("Pooling", dict(kernel=(2,)))
    assert max_pool.backward_inputs == () and max_pool.backward_outputs == (1,)
    assert max_pool.outputs() == ["output", "mask"] and max_pool.num_visible_outputs() == 1
    assert create_op("BatchNorm", {}).backward_outputs == (1, 2)
    assert create_op("Dropout", {}).backward_inputs == ()
    assert create_op("softmax", {}).backward_inputs == ()
    assert create_op("FullyConnected", dict(num_hidden=2)).backward_outputs == ()


# ----------------------------------------------------------------------------- shape inference

def test_fully_connected_weight_inferred_and_partial_shapes():
    op = create_op("FullyConnected", dict(num_hidden=10))
    ins, outs = infer(op, [(32, 3, 10), None, None])
    assert ins == [(32, 3, 10), (10, 30), (10,)] and outs == [(32, 10)]
    ins, outs = infer(op, [(None, 30), None, None])
    assert ins[1] == (10, 30) and outs == [(None, 10)]
    ins, outs = infer(op, [None, None, None])  # as MXNet: nothing without the data
    assert ins == [None, None, None] and outs == [None]
    ins, _ = infer(op, [(None, None), (10, 30), None])
    assert ins[0] == (None, 30)


def test_convolution_infers_from_partial_shapes():
    op = create_op("Convolution", dict(kernel=(3, 3), num_filter=8, num_group=2))
    ins, outs = infer(op, [(None, 4, None, 9), None, None])
    # the hidden 'columns' output stays unknown until every dim of the data is
    assert ins[1] == (8, 2, 3, 3) and outs == [(None, 8, None, 7), None]
    ins, _ = infer(op, [None, (8, 2, 3, 3), None])
    assert ins[0] == (None, 4, None, None)


def test_deconvolution_weight_and_output_shapes():
    op = create_op("Deconvolution", dict(kernel=(4, 4), stride=(2, 2), pad=(1, 1),
                                         num_filter=6, num_group=3))
    ins, outs = infer(op, [(2, 9, 5, 7), None])
    assert ins[1] == (9, 2, 4, 4) and outs == [(2, 6, 10, 14)]


def test_pooling_conventions_shapes():
    def out_shape(**attrs):
        return infer(create_op("Pooling", attrs), [(1, 1, 5, 8)])[1][0]
    assert out_shape(kernel=(2, 2), stride=(2, 2)) == (1, 1, 2, 4)
    assert out_shape(kernel=(2, 2), stride=(2, 2), pooling_convention="full") == (1, 1, 3, 4)
    assert out_shape(kernel=(3, 3), global_pool=True) == (1, 1, 1, 1)
    assert out_shape(kernel=(2, 3)) == (1, 1, 4, 6)
    assert out_shape(kernel=(3, 3), stride=(2, 3), pooling_convention="same") == (1, 1, 3, 3)


def test_shape_conflicts_name_the_slot():
    op = create_op("FullyConnected", dict(num_hidden=10))
    with pytest.raises(ShapeError, match=r"'weight'.*\(10, 20\).*\(10, 30\)"):
        infer(op, [(32, 30), (10, 20), None])
    with pytest.raises(ShapeError, match="'bias'"):
        infer(op, [(32, 30), None, (9,)])
    conv = create_op("Convolution", dict(kernel=(3, 3), num_filter=4))
    with pytest.raises(ShapeError, match="'weight'"):
        infer(conv, [(2, 3, 8, 8), (4, 2, 3, 3), None])
    with pytest.raises(ShapeError, match="'data'"):
        infer(conv, [(2, 3, 8), None, None])
    with pytest.raises(ShapeError, match="'data'"):
        infer(conv, [(2, 3, 2, 8), None, None])
    with pytest.raises(ShapeError, match="num_group"):
        infer(create_op("Convolution", dict(kernel=(1,), num_filter=4, num_group=2)),
              [(2, 3, 8), None, None])
    with pytest.raises(ShapeError, match="'gamma'"):
        infer(create_op("BatchNorm", {}), [(2, 3, 4), (4,), None, None, None])
    with pytest.raises(ShapeError, match="'moving_var'"):
        infer(create_op("BatchNorm", {}), [(2, 3, 4), None, None, None, (2,)])
    with pytest.raises(ShapeError, match="'weight'"):
        infer(create_op("Embedding", dict(input_dim=5, output_dim=3)), [(2,), (5, 4)])
    with pytest.raises(ShapeError, match="'data'"):
        infer(create_op("Pooling", dict(kernel=(4, 4))), [(1, 1, 3, 8)])
    with pytest.raises(ShapeError, match="target_shape"):
        infer(create_op("Deconvolution", dict(kernel=(3,), num_filter=1, stride=(2,),
                                              target_shape=(12,))), [(1, 1, 5), None])
    with pytest.raises(ShapeError, match="'gamma'"):
        infer(create_op("LeakyReLU", dict(act_type="prelu")), [(2, 3, 4), (4,)])


@pytest.mark.parametrize("op, attrs, match", [
    ("FullyConnected", {}, "num_hidden"),
    ("FullyConnected", dict(num_hidden=0), "num_hidden"),
    ("FullyConnected", dict(num_hidden=3, bogus=1), "bogus"),
    ("Convolution", dict(kernel=(3, 3)), "num_filter"),
    ("Convolution", dict(kernel=(3, 3), num_filter=2, stride=(1,)), "stride"),
    ("Convolution", dict(kernel=(3, 3, 3, 3), num_filter=2), "kernel"),
    ("Convolution", dict(kernel=(3,), num_filter=3, num_group=2), "num_group"),
    ("Convolution", dict(kernel=(3, 3), num_filter=2, layout="NHWC"), "layout"),
    ("Convolution", dict(kernel=(3, 3), num_filter=2, cudnn_tune="slow"), "cudnn_tune"),
    ("Deconvolution", dict(kernel=(3,), num_filter=2, stride=(2,), adj=(2,)), "adj"),
    ("Pooling", {}, "kernel"),
    ("Pooling", dict(kernel=(2,), pool_type="median"), "pool_type"),
    ("Pooling", dict(kernel=(2,), pool_type="lp"), "p_value"),
    ("Pooling", dict(kernel=(2,), pooling_convention="round"), "pooling_convention"),
    ("Activation", {}, "act_type"),
    ("Activation", dict(act_type="swish"), "act_type"),
    ("LeakyReLU", dict(act_type="relu6"), "act_type"),
    ("BatchNorm", dict(momentum="fast"), "momentum"),
    ("Dropout", dict(p=1.5), "p="),
    ("Dropout", dict(mode="sometimes"), "mode"),
    ("Embedding", dict(input_dim=3), "output_dim"),
    ("softmax", dict(dtype="int8"), "dtype"),
    ("log_softmax", dict(use_length=True), "use_length=True needs a length input"),
    ("SoftmaxActivation", dict(mode="spatial"), "mode"),
    ("LRN", dict(nsize=4), "nsize"),
])
def test_bad_params_raise(op, attrs, match):
    with pytest.raises(OpParamError, match=match):
        create_op(op, attrs)


def test_log_softmax_takes_mxnets_use_length_false():
    op = create_op("log_softmax", dict(use_length="False"))
    assert op.arguments() == ["data"] and not op.attrs.use_length


def test_string_attrs_parse_like_mxnet_json():
    op = create_op("Convolution", dict(kernel="(3, 3)", num_filter="8", no_bias="True",
                                       cudnn_tune="None", pad="(1, 1)"))
    assert op.arguments() == ["data", "weight"]
    _, outs = infer(op, [(2, 3, 5, 6), None])
    assert outs == [(2, 8, 5, 6), (3 * 9 * 5 * 6 * 2,)]  # the output, the hidden columns
    assert create_op("Pooling", dict(kernel="(2,)", count_include_pad="False"))\
        .attrs.count_include_pad is False


# ----------------------------------------------------------------------------- conv columns

def _conv_net():
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv")
    net = mx.sym.Activation(net, act_type="tanh", name="act")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(net, name="sm")


def test_convolution_columns_are_a_hidden_output_outside_the_json():
    op = create_op("Convolution", dict(kernel=(3, 3), num_filter=4))
    assert op.outputs() == ["output", "columns"]
    assert op.num_visible_outputs() == 1 and op.num_json_outputs() == 1
    # backward reads the columns and the weight, never the data
    assert op.backward_inputs == (1,) and op.backward_outputs == (1,)
    sym = _conv_net()
    row_ptr = json.loads(sym.tojson())["node_row_ptr"]
    assert row_ptr == list(range(len(row_ptr)))  # one entry per node, as in MXNet's JSON
    assert sym.list_outputs() == ["sm_output"]
    assert "conv_output" in sym.get_internals().list_outputs()
    assert not any("columns" in n for n in sym.get_internals().list_outputs())


def test_convolution_columns_live_until_the_backward_step_then_are_freed():
    from minimod.passes import compile_graph, normalize_grad_req
    from minimod.passes.liveness import last_use
    sym = _conv_net()
    for req in ("write", "null"):
        plan = compile_graph(sym._graph, {"data": (2, 3, 6, 20)}, {},
                             normalize_grad_req(req, sym.list_arguments()))
        g = plan.graph
        conv = next(i for i, n in enumerate(g.nodes) if n.name == "conv")
        cols = g.row_ptr[conv] + 1
        assert plan.shapes[cols] == (3 * 9 * 4 * 18 * 2,)
        assert plan.memory.storage[cols] >= 0  # planned, not external
        readers = [i for i, eids in enumerate(g.input_eids) if cols in eids]
        if req == "null":
            # nothing reads them: the planner hands the block back right after the forward step
            assert readers == [] and last_use(g)[cols] == -1
            continue
        # only the convolution's backward step reads them, and it is their last use, after
        # which the planner frees the block; that step no longer reads the data
        assert len(readers) == 1 and readers[0] >= plan.num_forward_nodes
        assert last_use(g)[cols] == readers[0]
        data = g.row_ptr[next(i for i, n in enumerate(g.nodes) if n.name == "data")]
        assert data not in g.input_eids[readers[0]]


@pytest.mark.parametrize("width", [7, 20], ids=["batch_last", "channels_batch"])
def test_convolution_inference_and_training_through_an_executor(width):
    sym = _conv_net()
    rng = np.random.RandomState(5)
    x = rng.randn(2, 3, 6, width).astype(np.float32)
    w = rng.randn(4, 3, 3, 3).astype(np.float32)
    b = rng.randn(4).astype(np.float32)
    fc_w = rng.randn(3, 4 * 4 * (width - 2)).astype(np.float32) * 0.1
    want = ref_conv((1, 1), (1, 1), (0, 0))(x, w, b)[0]
    infer_exe = sym.simple_bind(mx.cpu(), grad_req="null", data=x.shape)
    train_exe = sym.simple_bind(mx.cpu(), grad_req="write", data=x.shape)
    internals = sym.get_internals()["conv_output"].simple_bind(mx.cpu(), grad_req="null",
                                                               data=x.shape)
    for exe in (infer_exe, train_exe, internals):
        for name, val in (("data", x), ("conv_weight", w), ("conv_bias", b), ("fc_weight", fc_w),
                          ("fc_bias", np.zeros(3, np.float32))):
            if name in exe.arg_dict:
                exe.arg_dict[name][:] = val
    # inference: forward only, never a backward
    np.testing.assert_allclose(internals.forward(is_train=False)[0].asnumpy(), want, rtol=1e-4,
                               atol=1e-5)
    probs = infer_exe.forward(is_train=False)[0].asnumpy()
    # training: forward + backward twice; the weight gradient matches the float64 reference
    for _ in range(2):
        train_exe.arg_dict["sm_label"][:] = [0, 2]
        np.testing.assert_allclose(train_exe.forward(is_train=True)[0].asnumpy(), probs,
                                   rtol=1e-5, atol=1e-6)
        train_exe.backward()
    head = (probs - np.eye(3)[[0, 2]]) @ fc_w  # dLoss / d act
    act = np.tanh(want).reshape(2, -1)
    g_conv = (head * (1 - act ** 2)).reshape(want.shape)
    op = create_op("Convolution", dict(kernel=(3, 3), num_filter=4))
    args, aux, outs = run_forward(op, [x, w, b], dtype=np.float64)
    grads = run_backward(op, args, aux, outs, [g_conv.astype(np.float64)], [0, 1, 2])
    np.testing.assert_allclose(train_exe.grad_dict["conv_weight"].asnumpy(), grads[1],
                               rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(train_exe.grad_dict["conv_bias"].asnumpy(), grads[2],
                               rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(train_exe.grad_dict["data"].asnumpy(), grads[0], rtol=1e-3,
                               atol=1e-4)
