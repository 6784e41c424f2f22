"""The spatial transformer family, GridGenerator, BilinearSampler and SpatialTransformer, with
MXNet 1.9.1's parameters, conventions and numbers (Correlation lives in correlation.py).

Normalised coordinates: a sampling grid holds source positions in [-1, 1], -1 the centre of
the first pixel and +1 the centre of the last, so a source of size S maps g to the pixel
coordinate (g + 1) * (S - 1) / 2. Sampling is bilinear over the four neighbouring pixels, and a
neighbour outside the input contributes zero (zero padding): a point half a pixel beyond the
edge gets half the edge value. Target positions are the inverse map, x_t = -1 + 2 j / (W - 1);
as in MXNet, a target size of 1 divides by zero there and yields NaN (or inf) coordinates.

Each op keeps MXNet's hidden outputs, so a monitor sees what it sees in MXNet and the JSON row
counts agree: GridGenerator's `grid_dst` (the target grid), BilinearSampler's `tmp` (zeros),
SpatialTransformer's `grid_dst` and `grid_src`. Backward never reads them; it rebuilds what it
needs from its inputs, so the memory planner may free them straight after the forward step.

Arithmetic runs in float32 for float16 data and in the data's own type otherwise.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Literal, Optional

from ..base import OpParamError, ShapeError
from .registry import Op, fmt_shape, register

__all__ = ["GridGenerator", "BilinearSampler", "SpatialTransformer"]


# ----------------------------------------------------------------------------- helpers

def _work_dtype(xp, dtype):
    """The type arithmetic runs in: at least float32 (float16 accumulates badly)."""
    return xp.promote_types(dtype, xp.float32)


def _check_rank(shapes: list, i: int, name: str, rank: int, layout: str) -> None:
    shape = shapes[i]
    if shape is not None and len(shape) != rank:
        raise ShapeError("input '%s' has shape %s but must be %d-D (%s)"
                         % (name, fmt_shape(shape), rank, layout))


def _step(size: int) -> float:
    """2 / (size - 1): the normalised distance between neighbouring pixels (inf for a size of
    1, MXNet's division by zero)."""
    return 2.0 / (size - 1) if size > 1 else math.inf


def _scaled(xp, values, step: float):
    """values * step, where 0 * inf gives NaN as MXNet's 0 / 0 does, without a warning."""
    if math.isinf(step):
        return xp.where(values == 0, math.nan, xp.copysign(math.inf, values))
    return values * step


def _pixel_grid(xp, height: int, width: int, dtype):
    """(2, H, W): each target pixel's column index x (channel 0) and row index y (channel 1)."""
    grid = xp.empty((2, height, width), dtype)
    grid[0] = xp.arange(width, dtype=dtype)
    grid[1] = xp.arange(height, dtype=dtype)[:, None]
    return grid


def _affine_grid(xp, height: int, width: int, dtype):
    """(3, H*W): each target pixel's normalised (x, y, 1), row-major over the target."""
    pixels = _pixel_grid(xp, height, width, dtype).reshape(2, -1)
    grid = xp.ones((3, height * width), dtype)
    grid[0] = _scaled(xp, pixels[0], _step(width)) - 1
    grid[1] = _scaled(xp, pixels[1], _step(height)) - 1
    return grid


def _target_shape(op: Op) -> tuple:
    shape = tuple(op.attrs.target_shape)
    if len(shape) != 2 or any(d is None or d <= 0 for d in shape):
        raise OpParamError("target_shape=%s: transform_type='affine' needs the output size "
                           "(H, W), both > 0" % (shape,))
    return shape


class _Bilinear:
    """The four neighbours of every sampling point and their weights.

    gx, gy (N, P): normalised source positions for an input of spatial size (height, width).
    `index` (4, N, P): flat pixel index (y * W + x, clipped into the input) of the neighbours
    (y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1) with x0 = floor(x);
    `weight` (4, N, P): their bilinear weights, zero for a neighbour outside the input;
    `d_dx`, `d_dy` (4, N, P): the weights' derivatives along x and y in pixel units.
    """

    def __init__(self, xp, gx, gy, height: int, width: int):
        x = (gx + 1) * ((width - 1) / 2)
        y = (gy + 1) * ((height - 1) / 2)
        x0, y0 = xp.floor(x), xp.floor(y)
        fx, fy = x - x0, y - y0
        xs, ys = (x0, x0 + 1), (y0, y0 + 1)
        wx, wy = (1 - fx, fx), (1 - fy, fy)
        in_x = [(c >= 0) & (c <= width - 1) for c in xs]
        in_y = [(c >= 0) & (c <= height - 1) for c in ys]
        col = [xp.clip(c, 0, width - 1).astype(xp.int64) for c in xs]
        row = [xp.clip(c, 0, height - 1).astype(xp.int64) for c in ys]
        corners = [(a, b) for a in (0, 1) for b in (0, 1)]
        self.index = xp.stack([row[a] * width + col[b] for a, b in corners])
        inside = [in_y[a] & in_x[b] for a, b in corners]
        zero = xp.zeros((), x.dtype)
        self.weight = xp.stack([xp.where(ok, wy[a] * wx[b], zero)
                                for ok, (a, b) in zip(inside, corners)])
        # d wx[0] / dx = -1, d wx[1] / dx = +1, likewise along y
        self.d_dx = xp.stack([xp.where(ok, wy[a] if b else -wy[a], zero)
                              for ok, (a, b) in zip(inside, corners)])
        self.d_dy = xp.stack([xp.where(ok, wx[b] if a else -wx[b], zero)
                              for ok, (a, b) in zip(inside, corners)])

    def gather(self, xp, data):
        """data (N, C, H*W) at the four neighbours: (4, N, C, P)."""
        n, c = data.shape[:2]
        batch = xp.arange(n)[None, :, None, None]
        channel = xp.arange(c)[None, None, :, None]
        return data[batch, channel, self.index[:, :, None, :]]


def _sample(xp, data, gx, gy, dtype):
    """Bilinear samples of data (N, C, H, W) at normalised points gx, gy (N, P): (N, C, P)."""
    n, c, h, w = data.shape
    corners = _Bilinear(xp, gx, gy, h, w)
    values = corners.gather(xp, data.reshape(n, c, h * w).astype(dtype, copy=False))
    return (corners.weight[:, :, None, :] * values).sum(axis=0)


def _sample_backward(xp, data, gx, gy, head, d_data, dtype):
    """Gradients of sum(head * _sample(data, gx, gy)) (head (N, C, P)).

    Writes d_data (N, C, H, W) when it is not None (a scatter-add of the head into the
    neighbours, by weight); returns (d_gx, d_gy), each (N, P).
    """
    n, c, h, w = data.shape
    corners = _Bilinear(xp, gx, gy, h, w)
    head = head.astype(dtype, copy=False)
    if d_data is not None:
        contrib = corners.weight[:, :, None, :] * head  # (4, N, C, P)
        plane = (xp.arange(n * c, dtype=xp.int64) * (h * w)).reshape(1, n, c, 1)
        target = corners.index[:, :, None, :] + plane
        # the scatter-add as one weighted bincount: NumPy and CuPy spell it alike, it sums
        # in float64, and on NumPy it is far faster than add.at over repeated indices
        sums = xp.bincount(target.reshape(-1), weights=contrib.reshape(-1),
                           minlength=n * c * h * w)
        d_data[...] = sums.reshape(d_data.shape)
    values = corners.gather(xp, data.reshape(n, c, h * w).astype(dtype, copy=False))
    d_x = ((corners.d_dx[:, :, None, :] * values).sum(axis=0) * head).sum(axis=1)
    d_y = ((corners.d_dy[:, :, None, :] * values).sum(axis=0) * head).sum(axis=1)
    return d_x * ((w - 1) / 2), d_y * ((h - 1) / 2)


# ----------------------------------------------------------------------------- GridGenerator

@dataclasses.dataclass(frozen=True)
class GridGeneratorAttrs:
    transform_type: Literal["affine", "warp"]
    target_shape: tuple[int, ...] = (0, 0)


@register
class GridGenerator(Op):
    """A sampling grid for BilinearSampler: output (N, 2, H, W), channel 0 the normalised
    source x and channel 1 the source y of every target pixel.

    affine: data (N, 6) is theta, a 2x3 matrix row-major per sample; target_shape = (H, W);
      output[n, :, i, j] = theta_n @ (x_j, y_i, 1) with x_j = -1 + 2 j / (W - 1),
      y_i = -1 + 2 i / (H - 1). Gradient: d theta_n = d output_n (2, H*W) @ grid^T.
    warp: data (N, 2, H, W) is an optical flow in pixels (x then y), target_shape ignored;
      output[:, 0] = (flow_x + j) * 2 / (W - 1) - 1, output[:, 1] = (flow_y + i) * 2 / (H - 1)
      - 1. Gradient: the head times 2 / (W - 1) and 2 / (H - 1).

    Hidden output `grid_dst`: the target grid, (3, H*W) rows (x, y, 1) for affine, (2, H, W)
    pixel indices (x, y) for warp.
    """

    name = "GridGenerator"
    Attrs = GridGeneratorAttrs
    OUTPUTS = ("output", "grid_dst")
    backward_inputs = ()
    backward_outputs = ()

    def num_visible_outputs(self) -> int:
        return 1

    def infer_shape(self, in_shapes, out_shapes):
        if self.attrs.transform_type == "affine":
            height, width = _target_shape(self)
            _check_rank(in_shapes, 0, "data", 2, "batch, 6 affine parameters")
            batch = None if in_shapes[0] is None else in_shapes[0][0]
            if out_shapes[0] is not None and batch is None:
                batch = out_shapes[0][0]
            self.set_in(in_shapes, 0, (batch, 6), "transform_type='affine'")
            self.set_out(out_shapes, 0, (batch, 2, height, width),
                         "target_shape=%s" % (self.attrs.target_shape,))
            self.set_out(out_shapes, 1, (3, height * width))
            return in_shapes, out_shapes
        _check_rank(in_shapes, 0, "data", 4, "batch, 2, y, x optical flow")
        self.set_in(in_shapes, 0, (None, 2, None, None), "transform_type='warp'")
        in_shapes, out_shapes = self.same_shape(in_shapes, out_shapes, [0], [0])
        flow = in_shapes[0]
        if flow is not None:
            self.set_out(out_shapes, 1, (2,) + tuple(flow[2:]))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        data, result = inputs[0], out[0]
        dtype = _work_dtype(xp, data.dtype)
        n, _, height, width = result.shape
        if self.attrs.transform_type == "affine":
            grid = _affine_grid(xp, height, width, dtype)
            theta = data.reshape(n, 2, 3).astype(dtype, copy=False)
            result[...] = xp.matmul(theta, grid).reshape(result.shape)
        else:
            grid = _pixel_grid(xp, height, width, dtype)
            moved = data.astype(dtype) + grid
            result[:, 0] = _scaled(xp, moved[:, 0], _step(width)) - 1
            result[:, 1] = _scaled(xp, moved[:, 1], _step(height)) - 1
        out[1][...] = grid

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        d_data, head = in_grads[0], out_grads[0]
        if d_data is None:
            return
        dtype = _work_dtype(xp, head.dtype)
        n, _, height, width = head.shape
        head = head.astype(dtype, copy=False)
        if self.attrs.transform_type == "affine":
            grid = _affine_grid(xp, height, width, dtype)
            d_data[...] = xp.matmul(head.reshape(n, 2, -1), grid.T).reshape(n, 6)
        else:
            d_data[:, 0] = _scaled(xp, head[:, 0], _step(width))
            d_data[:, 1] = _scaled(xp, head[:, 1], _step(height))


# ----------------------------------------------------------------------------- BilinearSampler

@dataclasses.dataclass(frozen=True)
class BilinearSamplerAttrs:
    cudnn_off: Optional[bool] = None  # accepted; there is one implementation


@register
class BilinearSampler(Op):
    """Bilinear sampling of data (N, C, H, W) at grid (N, 2, Ho, Wo), which holds normalised
    source positions (channel 0: x, channel 1: y; see the module docstring): output
    (N, C, Ho, Wo) = sum over the four neighbours of weight * data, a neighbour outside the
    input counting as zero. Gradients: data receives the head scattered back by weight; the
    grid the weights' derivatives times the neighbours' values, times (W - 1) / 2 for x and
    (H - 1) / 2 for y.

    Hidden output `tmp` (N, Ho, Wo, 2), zeros, as MXNet leaves it on CPUs.
    """

    name = "BilinearSampler"
    Attrs = BilinearSamplerAttrs
    ARGUMENTS = ("data", "grid")
    OUTPUTS = ("output", "tmp")
    backward_inputs = (0, 1)
    backward_outputs = ()

    def num_visible_outputs(self) -> int:
        return 1

    def infer_shape(self, in_shapes, out_shapes):
        _check_rank(in_shapes, 0, "data", 4, "batch, channel, y, x")
        _check_rank(in_shapes, 1, "grid", 4, "batch, 2, y, x")
        data = in_shapes[0] or (None,) * 4
        grid = in_shapes[1] or (None,) * 4
        out = out_shapes[0] or (None,) * 4
        self.set_in(in_shapes, 1, (data[0], 2, out[2], out[3]), "data %s and output %s"
                    % (fmt_shape(in_shapes[0]), fmt_shape(out_shapes[0])))
        grid = in_shapes[1]
        self.set_in(in_shapes, 0, (grid[0], out[1], None, None), "grid %s" % fmt_shape(grid))
        data = in_shapes[0]
        self.set_out(out_shapes, 0, (data[0], data[1], grid[2], grid[3]))
        self.set_out(out_shapes, 1, (grid[0], grid[2], grid[3], 2))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        data, grid = inputs
        n, _, out_h, out_w = grid.shape
        dtype = _work_dtype(xp, data.dtype)
        flat = grid.reshape(n, 2, out_h * out_w).astype(dtype, copy=False)
        out[0][...] = _sample(xp, data, flat[:, 0], flat[:, 1], dtype).reshape(out[0].shape)
        out[1].fill(0)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        data, grid = inputs
        d_data, d_grid = in_grads
        if d_data is None and d_grid is None:
            return
        n, c, out_h, out_w = out_grads[0].shape
        dtype = _work_dtype(xp, data.dtype)
        flat = grid.reshape(n, 2, out_h * out_w).astype(dtype, copy=False)
        head = out_grads[0].reshape(n, c, out_h * out_w)
        d_x, d_y = _sample_backward(xp, data, flat[:, 0], flat[:, 1], head, d_data, dtype)
        if d_grid is not None:
            d_grid[:, 0] = d_x.reshape(n, out_h, out_w)
            d_grid[:, 1] = d_y.reshape(n, out_h, out_w)


# ----------------------------------------------------------------------------- SpatialTransformer

@dataclasses.dataclass(frozen=True)
class SpatialTransformerAttrs:
    transform_type: Literal["affine"]
    sampler_type: Literal["bilinear"]
    target_shape: tuple[int, ...] = (0, 0)
    cudnn_off: Optional[bool] = None  # accepted; there is one implementation


@register
class SpatialTransformer(Op):
    """GridGenerator (affine) and BilinearSampler in one: data (N, C, H, W) and loc (N, 6),
    theta row-major 2x3 per sample; output (N, C, Ht, Wt) for target_shape (Ht, Wt) samples
    data at theta_n @ (x, y, 1) over the normalised target grid. Gradients: data as
    BilinearSampler's; loc = d grid_src (N, 2, Ht*Wt) @ grid_dst^T.

    Hidden outputs: `grid_dst` (3, Ht*Wt), the target grid, and `grid_src` (N, 2, Ht*Wt), the
    source positions.
    """

    name = "SpatialTransformer"
    Attrs = SpatialTransformerAttrs
    ARGUMENTS = ("data", "loc")
    OUTPUTS = ("output", "grid_dst", "grid_src")
    PARAM_ORDER = ("target_shape", "transform_type", "sampler_type", "cudnn_off")
    backward_inputs = (0, 1)
    backward_outputs = ()

    def num_visible_outputs(self) -> int:
        return 1

    def infer_shape(self, in_shapes, out_shapes):
        height, width = _target_shape(self)
        _check_rank(in_shapes, 0, "data", 4, "batch, channel, y, x")
        _check_rank(in_shapes, 1, "loc", 2, "batch, 6 affine parameters")
        batch = next((s[0] for s in (in_shapes[0], in_shapes[1], out_shapes[0])
                      if s is not None and s[0] is not None), None)
        channels = next((s[1] for s in (in_shapes[0], out_shapes[0])
                         if s is not None and s[1] is not None), None)
        self.set_in(in_shapes, 0, (batch, channels, None, None))
        self.set_in(in_shapes, 1, (batch, 6), "data %s" % fmt_shape(in_shapes[0]))
        self.set_out(out_shapes, 0, (batch, channels, height, width),
                     "target_shape=%s" % (self.attrs.target_shape,))
        self.set_out(out_shapes, 1, (3, height * width))
        self.set_out(out_shapes, 2, (batch, 2, height * width))
        return in_shapes, out_shapes

    def _source_grid(self, xp, loc, dtype):
        height, width = _target_shape(self)
        grid_dst = _affine_grid(xp, height, width, dtype)
        theta = loc.reshape(-1, 2, 3).astype(dtype, copy=False)
        return grid_dst, xp.matmul(theta, grid_dst)

    def forward(self, xp, inputs, aux, out, is_train):
        data, loc = inputs
        dtype = _work_dtype(xp, data.dtype)
        grid_dst, grid_src = self._source_grid(xp, loc, dtype)
        sampled = _sample(xp, data, grid_src[:, 0], grid_src[:, 1], dtype)
        out[0][...] = sampled.reshape(out[0].shape)
        out[1][...] = grid_dst
        out[2][...] = grid_src

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        data, loc = inputs
        d_data, d_loc = in_grads
        if d_data is None and d_loc is None:
            return
        dtype = _work_dtype(xp, data.dtype)
        grid_dst, grid_src = self._source_grid(xp, loc, dtype)
        n, c = out_grads[0].shape[:2]
        head = out_grads[0].reshape(n, c, -1)
        d_x, d_y = _sample_backward(xp, data, grid_src[:, 0], grid_src[:, 1], head, d_data,
                                    dtype)
        if d_loc is not None:
            d_src = xp.stack([d_x, d_y], axis=1)  # (N, 2, P)
            d_loc[...] = xp.matmul(d_src, grid_dst.T).reshape(n, 6)
