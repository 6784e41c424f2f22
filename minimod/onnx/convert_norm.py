"""ONNX conversions of the normalization layers: BatchNorm (with its moving statistics, as in
inference), InstanceNorm, LayerNorm, GroupNorm, L2Normalization, LRN, and `moments`.

ONNX opset 13 has BatchNormalization, InstanceNormalization and LRN; the others are spelled
out with reductions, keeping MXNet's formulas: the variance is the mean of the squared
deviations, and eps is added to it under the square root.
"""
from __future__ import annotations

import numpy as np

from .builder import Site, converts


@converts("BatchNorm")
def _batch_norm(site: Site) -> None:
    a, b = site.attrs, site.b
    if a.output_mean_var:
        raise site.refuse("output_mean_var=True: the batch statistics are training outputs")
    x, gamma, beta, mean, var = site.ins[:5]
    channels = site.in_shapes[1][0]
    if a.fix_gamma:
        gamma = b.const(np.ones(channels, site.in_dtypes[1]), site.name + "_gamma_fixed")
    rank = site.rank(0)
    axis = a.axis % rank
    if axis == 1:
        b.add("BatchNormalization", [x, gamma, beta, mean, var], out=site.outs[0],
              epsilon=a.eps)
        return
    eps = b.const(a.eps, site.name + "_eps", site.in_dtypes[4])
    inv_std = b.add("Reciprocal", [b.add("Sqrt", [b.add("Add", [var, eps])])])
    scale = b.add("Mul", [gamma, inv_std], hint=site.name + "_scale")
    shift = b.add("Sub", [beta, b.add("Mul", [mean, scale])], hint=site.name + "_shift")
    y = b.add("Mul", [x, b.along(scale, axis, rank, site.name + "_scale_b")])
    b.add("Add", [y, b.along(shift, axis, rank, site.name + "_shift_b")], out=site.outs[0])


@converts("InstanceNorm")
def _instance_norm(site: Site) -> None:
    site.b.add("InstanceNormalization", site.ins[:3], out=site.outs[0],
               epsilon=site.attrs.eps)


def _normalize(site: Site, x: str, axes: list, eps: float, hint: str) -> str:
    """(x - mean) / sqrt(var + eps) over `axes`."""
    b = site.b
    mean = b.reduce("ReduceMean", x, axes, True, hint=hint + "_mean")
    centred = b.add("Sub", [x, mean], hint=hint + "_centred")
    var = b.reduce("ReduceMean", b.add("Mul", [centred, centred]), axes, True,
                   hint=hint + "_var")
    eps = b.const(eps, hint + "_eps", site.in_dtypes[0])
    return b.add("Div", [centred, b.add("Sqrt", [b.add("Add", [var, eps])])],
                 hint=hint + "_normed")


@converts("LayerNorm")
def _layer_norm(site: Site) -> None:
    a, b = site.attrs, site.b
    if a.output_mean_var:
        raise site.refuse("output_mean_var=True is not exported")
    x, gamma, beta = site.ins[:3]
    rank = site.rank(0)
    axis = a.axis % rank
    normed = _normalize(site, x, [axis], a.eps, site.name)
    y = b.add("Mul", [normed, b.along(gamma, axis, rank, site.name + "_gamma_b")])
    b.add("Add", [y, b.along(beta, axis, rank, site.name + "_beta_b")], out=site.outs[0])


@converts("L2Normalization")
def _l2_normalization(site: Site) -> None:
    a, b = site.attrs, site.b
    rank = site.rank(0)
    axes = {"instance": list(range(1, rank)), "channel": [1],
            "spatial": list(range(2, rank))}[a.mode]
    total = b.reduce("ReduceSumSquare", site.ins[0], axes, True, hint=site.name + "_sumsq")
    eps = b.const(a.eps, site.name + "_eps", site.in_dtypes[0])
    norm = b.add("Sqrt", [b.add("Add", [total, eps])], hint=site.name + "_norm")
    b.add("Div", [site.ins[0], norm], out=site.outs[0])


@converts("LRN")
def _lrn(site: Site) -> None:
    a = site.attrs
    site.b.add("LRN", [site.ins[0]], out=site.outs[0], alpha=a.alpha, beta=a.beta,
               bias=a.knorm, size=a.nsize)


@converts("GroupNorm")
def _group_norm(site: Site) -> None:
    """MXNet's GroupNorm has one gamma and one beta per group (shape (num_groups,))."""
    a, b = site.attrs, site.b
    if a.output_mean_var:
        raise site.refuse("output_mean_var=True is not exported")
    x, gamma, beta = site.ins[:3]
    grouped = b.reshape(x, [0, a.num_groups, -1], hint=site.name + "_grouped")
    normed = _normalize(site, grouped, [2], a.eps, site.name)
    y = b.add("Mul", [normed, b.along(gamma, 1, 3, site.name + "_gamma_b")])
    y = b.add("Add", [y, b.along(beta, 1, 3, site.name + "_beta_b")])
    b.add("Reshape", [y, b.add("Shape", [x], hint=site.name + "_shape")], out=site.outs[0])


@converts("moments")
def _moments(site: Site) -> None:
    a, b = site.attrs, site.b
    rank = site.rank(0)
    axes = list(range(rank)) if a.axes is None else sorted(x % rank for x in a.axes)
    x = site.ins[0]
    mean = b.reduce("ReduceMean", x, axes, True, hint=site.name + "_mean")
    centred = b.add("Sub", [x, mean], hint=site.name + "_centred")
    keep = bool(a.keepdims)
    b.reduce("ReduceMean", b.add("Mul", [centred, centred]), axes, keep, out=site.outs[1],
             hint=site.name + "_var")
    if keep:
        b.add("Identity", [mean], out=site.outs[0])
    else:
        b.squeeze(mean, axes, out=site.outs[0], hint=site.name)
