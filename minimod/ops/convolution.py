"""Convolution and Deconvolution (its transpose), computed by im2col in the work layouts of
`minimod.ops.conv_helpers`.

Shapes are channels-first (NCW / NCHW / NCDHW) as in MXNet's default layout. Convolution keeps
its columns as a hidden output for its backward; Deconvolution is the transpose of the same
steps. Their batch-last form and cuDNN variants live in `minimod.kernels`.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

from ..backend import matmul
from ..base import ShapeError
from .conv_helpers import (
    CudnnTune,
    Layout,
    check_layout,
    cn_layout,
    col2im,
    conv_out_dim,
    data_panel,
    from_work,
    gemm,
    im2col,
    row_sums,
    to_work,
    transposed,
    weight_rows,
    work_shape,
    write_reshaped,
)
from .helpers import (
    bias_view,
    check_rank,
    param_error,
    prod_or_none,
    reduce_axes,
    spatial_tuple,
    write_grad,
)
from .registry import Op, fmt_shape, register
from .scratch import _ScratchMixin

__all__ = ["Convolution", "Deconvolution"]


@dataclasses.dataclass(frozen=True)
class ConvolutionAttrs:
    kernel: tuple[int, ...]
    num_filter: int
    stride: tuple[int, ...] = ()
    dilate: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()
    num_group: int = 1
    workspace: int = 1024
    no_bias: bool = False
    cudnn_tune: CudnnTune = None
    cudnn_off: bool = False
    layout: Layout = None


class _ConvBase(_ScratchMixin, Op):
    """Shared parameter checks of Convolution and Deconvolution.

    Both keep scratch arrays between calls (see `_ScratchMixin`: the work-layout copies, the
    columns and the GEMM results, keyed by shape and dtype; results never depend on them).
    """

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        nd = len(a.kernel)
        if nd not in (1, 2, 3):
            raise param_error(self.name, "kernel=%s must have 1, 2 or 3 dims" % (a.kernel,))
        if any(k <= 0 for k in a.kernel):
            raise param_error(self.name, "kernel=%s must be positive" % (a.kernel,))
        self.kernel = tuple(a.kernel)
        self.stride = spatial_tuple(self.name, "stride", a.stride, nd, 1)
        self.dilate = spatial_tuple(self.name, "dilate", a.dilate, nd, 1)
        self.pad = spatial_tuple(self.name, "pad", a.pad, nd, 0)
        if any(s <= 0 for s in self.stride) or any(d <= 0 for d in self.dilate):
            raise param_error(self.name, "stride and dilate must be positive")
        if any(p < 0 for p in self.pad):
            raise param_error(self.name, "pad=%s must not be negative" % (a.pad,))
        if a.num_filter <= 0 or a.num_group <= 0:
            raise param_error(self.name, "num_filter and num_group must be positive")
        if a.num_filter % a.num_group:
            raise param_error(self.name, "num_filter=%d is not a multiple of num_group=%d"
                              % (a.num_filter, a.num_group))
        check_layout(self.name, a.layout, nd)

    def arguments(self) -> list:
        return ["data", "weight"] if self.attrs.no_bias else ["data", "weight", "bias"]

    def _channels(self, in_shapes: list, from_weight) -> Optional[int]:
        """Input channels, from data or else from the weight; checks divisibility by num_group."""
        data = in_shapes[0]
        g = self.attrs.num_group
        channels = None if data is None else data[1]
        if channels is None and in_shapes[1] is not None:
            channels = from_weight(in_shapes[1])
        if channels is not None and channels % g:
            raise ShapeError("input 'data' has %d channels, not a multiple of num_group=%d"
                             % (channels, g))
        return channels


@register
class Convolution(_ConvBase):
    """N-D convolution (cross-correlation) over channels-first data, 1-D, 2-D or 3-D.

    data (N, C, *x), weight (F, C/g, *k), bias (F,), out (N, F, *y) with
    y = floor((x + 2p - d(k-1) - 1) / s) + 1; channel group i of the output sees only channel
    group i of the input (g = num_group).
    Forward: columns (C*K, P) of the input in a work layout (see `cn_layout`),
    out = W (F, C*K) @ columns, with P = prod(y) * N. Backward: dW = g_out (F, P) @ columns^T,
    d columns = W^T @ g_out summed back over the windows (col2im), bias gradient = row sums of
    g_out.

    The columns are a hidden second output, `columns` (C*K*P,), which MXNet's JSON does not
    count (`num_json_outputs`): the memory plan holds them from the forward to the backward,
    which reads them instead of the data, so backward never rebuilds them.
    """

    name = "Convolution"
    SIGNATURE_INPUTS = ("data", "weight", "bias")
    PARAM_ORDER = ("kernel", "stride", "dilate", "pad", "num_filter", "num_group",
                   "workspace", "no_bias", "cudnn_tune", "cudnn_off", "layout")
    Attrs = ConvolutionAttrs
    backward_inputs = (1,)
    backward_outputs = (1,)

    def outputs(self) -> list:
        return ["output", "columns"]

    def num_visible_outputs(self) -> int:
        return 1

    def num_json_outputs(self) -> int:
        return 1

    def infer_shape(self, in_shapes: list, out_shapes: list):
        a = self.attrs
        nd = len(self.kernel)
        check_rank(in_shapes[0], nd + 2, "kernel %s" % (a.kernel,))
        g = a.num_group
        channels = self._channels(in_shapes, lambda w: None if w[1] is None else w[1] * g)
        why = "num_filter=%d, num_group=%d and data %s" % (a.num_filter, g,
                                                          fmt_shape(in_shapes[0]))
        self.set_in(in_shapes, 1, (a.num_filter, None if channels is None else channels // g)
                    + self.kernel, why)
        if not a.no_bias:
            self.set_in(in_shapes, 2, (a.num_filter,), "num_filter=%d" % a.num_filter)
        data = in_shapes[0]
        if data is None:
            if channels is not None:
                in_shapes[0] = (None, channels) + (None,) * nd
            return in_shapes, out_shapes
        self.set_in(in_shapes, 0, (None, channels) + (None,) * nd)
        self._infer_spatial(in_shapes, out_shapes, data, channels)
        return in_shapes, out_shapes

    def _infer_spatial(self, in_shapes: list, out_shapes: list, data, channels) -> None:
        """The output's shape from the data's, the data's spatial dims back from the output's
        where the stride is 1 (as MXNet infers them), and the columns' size."""
        spatial = tuple(conv_out_dim(x, k, s, d, p) for x, k, s, d, p in zip(
            data[2:], self.kernel, self.stride, self.dilate, self.pad))
        if any(y is not None and y <= 0 for y in spatial):
            raise ShapeError("input 'data' has shape %s, too small for kernel %s with dilate %s "
                             "and pad %s" % (fmt_shape(data), self.kernel, self.dilate, self.pad))
        self.set_out(out_shapes, 0, (data[0], self.attrs.num_filter) + spatial)
        out = out_shapes[0]
        back = tuple(y + d * (k - 1) - 2 * p if x is None and y is not None and s == 1 else None
                     for x, y, k, s, d, p in zip(data[2:], out[2:], self.kernel, self.stride,
                                                 self.dilate, self.pad))
        self.set_in(in_shapes, 0, (out[0], None) + back)
        size = prod_or_none((in_shapes[0][0], channels) + self.kernel + tuple(out[2:]))
        if size is not None:
            self.set_out(out_shapes, 1, self._columns_shape(size))

    def _columns_shape(self, size: int) -> tuple:
        return (size,)

    def forward(self, xp, inputs, aux, out, is_train):
        x, y = inputs[0], out[0]
        out_spatial = y.shape[2:]
        cn = cn_layout(out_spatial)
        xw = to_work(self, xp, "x", x, self.pad, cn, copy=False)
        res = self._columns_gemm(xp, xw, inputs, out[1], out_spatial, x.shape[0], cn)
        y[...] = from_work(xp, res.reshape(work_shape(res.shape[0], x.shape[0], out_spatial,
                                                      cn)), cn)

    def _columns_gemm(self, xp, xw, inputs, columns, out_spatial, n: int, cn: bool, into=None):
        """W @ columns + bias as (F, P), from the padded work array xw; the columns go into
        the hidden output `columns`, the product into `into` when given (else a scratch)."""
        g, nf = self.attrs.num_group, self.attrs.num_filter
        cols = im2col(self, xp, xw, self.kernel, self.stride, self.dilate, out_spatial, cn,
                      into=columns)
        npix = math.prod(out_spatial) * n
        res = gemm(self, xp, "y", weight_rows(inputs[1], g), data_panel(cols, g, npix),
                   into=into).reshape(nf, npix)
        if not self.attrs.no_bias:
            res += inputs[2][:, None]  # along contiguous rows, before the layout change
        return res

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        gy, dx = out_grads[0], in_grads[0]
        out_spatial = gy.shape[2:]
        cn = cn_layout(out_spatial)
        gw = to_work(self, xp, "gy", gy, (0,) * len(out_spatial), cn)
        dxw = self._grads_from_work(xp, gw, inputs[1], outputs[1], in_grads, out_spatial,
                                    gy.shape[0], cn, None if dx is None else dx.shape[2:])
        if dxw is not None:
            dx[...] = from_work(xp, dxw, cn)

    def _grads_from_work(self, xp, gw, weight, columns, in_grads, out_spatial, n: int,
                         cn: bool, spatial):
        """The weight and bias gradients written from gw (the output gradient in the work
        layout); the data gradient returned in the work layout (None when not wanted)."""
        g, nf = self.attrs.num_group, self.attrs.num_filter
        npix = math.prod(out_spatial) * n
        g_gemm = data_panel(gw, g, npix)
        if in_grads[1] is not None:
            # as dW^T = columns @ g_out^T: OpenBLAS runs this orientation 20-40% faster at
            # LeNet's shapes (long inner dimension P, short outputs)
            write_reshaped(xp, in_grads[1], transposed(gemm(
                self, xp, "dwt", data_panel(columns, g, npix), transposed(g_gemm))))
        dxw = None
        if in_grads[0] is not None:
            dxw = self._data_grad_work(xp, weight, g_gemm, spatial, out_spatial, n, cn)
        if not self.attrs.no_bias and in_grads[2] is not None:
            db = in_grads[2]
            sums = row_sums(self, xp, gw.reshape(nf, npix), out=db)
            if sums.base is not db and sums is not db:
                db[...] = sums
        return dxw

    def _data_grad_work(self, xp, weight, g_gemm, spatial, out_spatial, n: int, cn: bool):
        """d columns = W^T @ g_out, summed back over the windows into the work layout."""
        g, nf = self.attrs.num_group, self.attrs.num_filter
        cg, k = weight.shape[1], math.prod(self.kernel)
        # W^T with its rows in (group, tap, channel) order: d columns come out tap-major
        wt = self._scratch(xp, "wt", (g, k * cg, nf // g), weight.dtype)
        wt.reshape(g, k, cg, nf // g)[...] = weight.reshape(g, nf // g, cg, k).transpose(
            0, 3, 2, 1)
        dcols = gemm(self, xp, "dcols", wt[0] if g == 1 else wt, g_gemm)
        dcols = dcols.reshape((g, k, cg) + work_shape(1, n, out_spatial, cn)[1:])
        return col2im(self, xp, dcols, spatial, self.kernel, self.stride, self.dilate,
                      self.pad, out_spatial, cn, groups=g)


# ----------------------------------------------------------------------------- Deconvolution

@dataclasses.dataclass(frozen=True)
class DeconvolutionAttrs:
    kernel: tuple[int, ...]
    num_filter: int
    stride: tuple[int, ...] = ()
    dilate: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()
    adj: tuple[int, ...] = ()
    target_shape: tuple[int, ...] = ()
    num_group: int = 1
    workspace: int = 512
    no_bias: bool = True
    cudnn_tune: CudnnTune = None
    cudnn_off: bool = False
    layout: Layout = None


@register
class Deconvolution(_ConvBase):
    """Transposed convolution: the gradient of Convolution with respect to its data.

    data (N, C, *x), weight (C, F/g, *k), bias (F,) unless no_bias (the default), out (N, F, *y)
    with y = s(x-1) + d(k-1) + 1 - 2p + adj. Given target_shape, pad and adj are chosen per
    dim so that y equals it: t = s(x-1) + d(k-1) + 1 - target, adj = t % 2, pad = ceil(t / 2)
    (the adj and pad given are ignored then, as in MXNet).
    """

    name = "Deconvolution"
    SIGNATURE_INPUTS = ("data", "weight", "bias")
    PARAM_ORDER = ("kernel", "stride", "dilate", "pad", "adj", "target_shape", "num_filter",
                   "num_group", "workspace", "no_bias", "cudnn_tune", "cudnn_off", "layout")
    Attrs = DeconvolutionAttrs
    backward_outputs = ()

    def __init__(self, attrs=None):
        super().__init__(attrs)
        nd = len(self.kernel)
        target = self.attrs.target_shape
        self.target = spatial_tuple(self.name, "target_shape", target, nd, 0) if any(
            target) else None
        # a target_shape decides adj (and pad) itself: MXNet ignores the adj given with it
        self.adj = (0,) * nd if self.target else spatial_tuple(
            self.name, "adj", self.attrs.adj, nd, 0)
        if any(a >= s for a, s in zip(self.adj, self.stride)):
            raise param_error(self.name, "adj=%s must be smaller than stride=%s"
                              % (self.adj, self.stride))

    def _pad_adj(self, spatial: tuple):
        """(pad, adj) per spatial dim; None entries where the input size is unknown."""
        if self.target is None:
            return self.pad, self.adj
        pad, adj = [], []
        for x, k, s, d, t in zip(spatial, self.kernel, self.stride, self.dilate, self.target):
            if x is None:
                pad.append(None)
                adj.append(None)
                continue
            full = s * (x - 1) + d * (k - 1) + 1
            if full < t:
                raise ShapeError("input 'data' of spatial size %s is too small for "
                                 "target_shape=%s (at most %d)" % (spatial, self.target, full))
            pad.append((full - t + 1) // 2)
            adj.append((full - t) % 2)
        return tuple(pad), tuple(adj)

    def _out_spatial(self, spatial: tuple) -> tuple:
        pad, adj = self._pad_adj(spatial)
        return tuple(None if x is None else s * (x - 1) + d * (k - 1) + 1 - 2 * p + a
                     for x, k, s, d, p, a in zip(spatial, self.kernel, self.stride,
                                                 self.dilate, pad, adj))

    def infer_shape(self, in_shapes: list, out_shapes: list):
        a = self.attrs
        nd = len(self.kernel)
        check_rank(in_shapes[0], nd + 2, "kernel %s" % (a.kernel,))
        g = a.num_group
        channels = self._channels(in_shapes, lambda w: w[0])
        why = "num_filter=%d, num_group=%d and data %s" % (a.num_filter, g,
                                                          fmt_shape(in_shapes[0]))
        self.set_in(in_shapes, 1, (channels, a.num_filter // g) + self.kernel, why)
        if not a.no_bias:
            self.set_in(in_shapes, 2, (a.num_filter,), "num_filter=%d" % a.num_filter)
        data = in_shapes[0]
        if data is None:
            if channels is not None:
                in_shapes[0] = (None, channels) + (None,) * nd
            return in_shapes, out_shapes
        self.set_in(in_shapes, 0, (None, channels) + (None,) * nd)
        spatial = self._out_spatial(tuple(data[2:]))
        if any(y is not None and y <= 0 for y in spatial):
            raise ShapeError("input 'data' has shape %s, too small for pad %s"
                             % (fmt_shape(data), self.pad))
        self.set_out(out_shapes, 0, (data[0], a.num_filter) + spatial)
        self.set_in(in_shapes, 0, (out_shapes[0][0],) + (None,) * (nd + 1))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        x, weight = inputs[0], inputs[1]
        y = out[0]
        g = self.attrs.num_group
        spatial = x.shape[2:]
        pad, _ = self._pad_adj(spatial)
        xbl = to_work(self, xp, "x", x, (0,) * len(spatial), False)
        npix = math.prod(spatial) * x.shape[0]
        cols = gemm(self, xp, "cols_t", transposed(weight_rows(weight, g)),
                    data_panel(xbl, g, npix))
        cols = cols.reshape((y.shape[1], math.prod(self.kernel)) + spatial + (x.shape[0],))
        ybl = col2im(self, xp, cols, y.shape[2:], self.kernel, self.stride, self.dilate, pad,
                     spatial)
        y[...] = xp.moveaxis(ybl, -1, 0)
        if not self.attrs.no_bias:
            y += bias_view(inputs[2], y.ndim)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, weight = inputs[0], inputs[1]
        gy = out_grads[0]
        g = self.attrs.num_group
        spatial = x.shape[2:]
        pad, _ = self._pad_adj(spatial)
        gbl = to_work(self, xp, "gy", gy, pad, False)
        npix = math.prod(spatial) * x.shape[0]
        cols = data_panel(im2col(self, xp, gbl, self.kernel, self.stride, self.dilate, spatial),
                          g, npix)
        if in_grads[0] is not None:
            res = gemm(self, xp, "dx", weight_rows(weight, g), cols)
            in_grads[0][...] = xp.moveaxis(res.reshape((x.shape[1],) + spatial + (x.shape[0],)),
                                           -1, 0)
        if in_grads[1] is not None:
            xbl = to_work(self, xp, "x", x, (0,) * len(spatial), False)
            write_reshaped(xp, in_grads[1], matmul(xp, data_panel(xbl, g, npix),
                                                      transposed(cols)))
        if not self.attrs.no_bias:
            write_grad(in_grads[2], gy.sum(axis=reduce_axes(gy.ndim, 1)))

