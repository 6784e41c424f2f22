"""ONNX conversions of the operators that move or reduce elements: reshapes, transposes,
joins and splits, slices and crops, padding, tiling and repeats, broadcasts, reductions and
the matrix products. (Selecting by index, sorting and the sequence ops: convert_index.py.)

Shapes that MXNet decides from special codes (Reshape's 0/-1/-2/-3/-4, broadcast_to's 0)
are written as the inferred result, so those conversions need fixed shapes; Reshape keeps its
codes when they mean the same in ONNX, and then also exports with dynamic shapes.
"""
from __future__ import annotations

import numpy as np

from .builder import Site, converts

_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min


def _axes(site: Site, axis, rank: int) -> list:
    """A reduction's axes, normalized and sorted; None means all of them."""
    if axis is None:
        return list(range(rank))
    axis = (axis,) if isinstance(axis, int) else tuple(axis)
    picked = sorted(a % rank for a in axis)
    if getattr(site.attrs, "exclude", False):
        picked = [a for a in range(rank) if a not in picked]
    return picked


@converts("Flatten")
def _flatten(site: Site) -> None:
    site.b.add("Flatten", [site.ins[0]], out=site.outs[0], axis=1)


@converts("Reshape")
def _reshape(site: Site) -> None:
    a, b = site.attrs, site.b
    codes = tuple(a.shape)
    if codes and not a.reverse and all(c >= -1 for c in codes) and codes.count(-1) <= 1:
        target = list(codes)  # positive sizes, 0 = copy this dim, -1 = the rest: as in ONNX
    else:
        target = list(site.fixed_shape(0, "output"))
    b.reshape(site.ins[0], target, out=site.outs[0], hint=site.name)


@converts("transpose")
def _transpose(site: Site) -> None:
    rank = site.rank(0)
    perm = [p % rank for p in site.attrs.axes] if site.attrs.axes else \
        list(reversed(range(rank)))
    site.b.add("Transpose", [site.ins[0]], out=site.outs[0], perm=perm)


@converts("SwapAxis")
def _swap_axis(site: Site) -> None:
    rank = site.rank(0)
    perm = list(range(rank))
    i, j = site.attrs.dim1 % rank, site.attrs.dim2 % rank
    perm[i], perm[j] = perm[j], perm[i]
    site.b.add("Transpose", [site.ins[0]], out=site.outs[0], perm=perm)


@converts("expand_dims")
def _expand_dims(site: Site) -> None:
    axis = site.attrs.axis % (site.rank(0) + 1)
    site.b.unsqueeze(site.ins[0], [axis], out=site.outs[0], hint=site.name)


@converts("squeeze")
def _squeeze(site: Site) -> None:
    in_shape, out_shape = site.in_shapes[0], site.out_shapes[0]
    if site.attrs.axis is None:
        axes = [i for i, d in enumerate(in_shape) if d == 1]
    else:
        axis = site.attrs.axis
        axes = sorted(a % len(in_shape) for a in ((axis,) if isinstance(axis, int) else axis))
    if len(in_shape) - len(axes) != len(out_shape):  # MXNet keeps one axis of an all-ones shape
        axes = axes[1:]
    site.b.squeeze(site.ins[0], axes, out=site.outs[0], hint=site.name)


@converts("Concat")
def _concat(site: Site) -> None:
    site.b.add("Concat", site.ins, out=site.outs[0], axis=site.attrs.dim % site.rank(0))


@converts("stack")
def _stack(site: Site) -> None:
    b = site.b
    axis = site.attrs.axis % (site.rank(0) + 1)
    parts = [b.unsqueeze(x, [axis], hint=site.name + "_part") for x in site.ins]
    b.add("Concat", parts, out=site.outs[0], axis=axis)


@converts("SliceChannel")
def _slice_channel(site: Site) -> None:
    a, b = site.attrs, site.b
    rank = site.rank(0)
    axis = a.axis % rank
    n = a.num_outputs
    sizes = b.ints([site.in_shapes[0][axis] // n] * n, site.name + "_sizes")
    if not a.squeeze_axis:
        node = b.helper.make_node("Split", [site.ins[0], sizes], site.outs,
                                  name=b.reserve(site.name + "/Split"), axis=axis)
        b.nodes.append(node)
        return
    parts = b.add("Split", [site.ins[0], sizes], hint=site.name + "_part", num_outputs=n,
                  axis=axis)
    for part, out in zip(parts if n > 1 else [parts], site.outs):
        b.squeeze(part, [axis], out=out, hint=site.name)


@converts("slice_axis")
def _slice_axis(site: Site) -> None:
    a, b = site.attrs, site.b
    end = _INT64_MAX if a.end is None else a.end
    b.add("Slice", [site.ins[0], b.ints([a.begin], site.name + "_starts"),
                    b.ints([end], site.name + "_ends"), b.ints([a.axis], site.name + "_axes")],
          out=site.outs[0])


@converts("slice")
def _slice(site: Site) -> None:
    a, b = site.attrs, site.b
    steps = list(a.step) + [None] * (len(a.begin) - len(a.step))
    starts, ends, axes, strides = [], [], [], []
    for axis, (begin, end, step) in enumerate(zip(a.begin, a.end, steps)):
        step = 1 if step is None else step
        if begin is None:
            begin = 0 if step > 0 else _INT64_MAX
        if end is None:
            end = _INT64_MAX if step > 0 else _INT64_MIN
        starts.append(begin)
        ends.append(end)
        axes.append(axis)
        strides.append(step)
    b.add("Slice", [site.ins[0], b.ints(starts, site.name + "_starts"),
                    b.ints(ends, site.name + "_ends"), b.ints(axes, site.name + "_axes"),
                    b.ints(strides, site.name + "_steps")], out=site.outs[0])


@converts("reverse")
def _reverse(site: Site) -> None:
    b, rank = site.b, site.rank(0)
    axis = site.attrs.axis
    axes = sorted(x % rank for x in ((axis,) if isinstance(axis, int) else axis))
    b.add("Slice", [site.ins[0], b.ints([-1] * len(axes), site.name + "_starts"),
                    b.ints([_INT64_MIN] * len(axes), site.name + "_ends"),
                    b.ints(axes, site.name + "_axes"),
                    b.ints([-1] * len(axes), site.name + "_steps")], out=site.outs[0])


@converts("Pad")
def _pad(site: Site) -> None:
    a, b = site.attrs, site.b
    widths = list(a.pad_width)
    pads = widths[0::2] + widths[1::2]
    inputs = [site.ins[0], b.ints(pads, site.name + "_pads")]
    if a.mode == "constant":
        inputs.append(b.const(a.constant_value, site.name + "_value", site.in_dtypes[0]))
    b.add("Pad", inputs, out=site.outs[0], mode=a.mode)


@converts("tile")
def _tile(site: Site) -> None:
    b, reps = site.b, list(site.attrs.reps)
    x, rank = site.ins[0], site.rank(0)
    if len(reps) > rank:
        x = b.unsqueeze(x, list(range(len(reps) - rank)), hint=site.name + "_lifted")
    reps = [1] * (max(rank, len(reps)) - len(reps)) + reps
    b.add("Tile", [x, b.ints(reps, site.name + "_reps")], out=site.outs[0])


@converts("repeat")
def _repeat(site: Site) -> None:
    """Each element repeated along a new axis after `axis`, which is then merged into it."""
    a, b = site.attrs, site.b
    x, rank = site.ins[0], site.rank(0)
    if a.axis is None:
        x, axis, rank = b.reshape(x, [-1], hint=site.name + "_flat"), 0, 1
        target = [-1]
    else:
        axis = a.axis % rank
        target = list(site.fixed_shape(0, "output"))
    lifted = b.unsqueeze(x, [axis + 1], hint=site.name + "_lifted")
    reps = [1] * (rank + 1)
    reps[axis + 1] = a.repeats
    spread = b.add("Expand", [lifted, b.ints(reps, site.name + "_reps")],
                   hint=site.name + "_spread")
    b.reshape(spread, target, out=site.outs[0], hint=site.name)


def _slice_to(site: Site, starts: list, ends: list, axes: list) -> None:
    b = site.b
    b.add("Slice", [site.ins[0], b.ints(starts, site.name + "_starts"),
                    b.ints(ends, site.name + "_ends"), b.ints(axes, site.name + "_axes")],
          out=site.outs[0])


@converts("Crop")
def _crop(site: Site) -> None:
    """A crop of the two spatial axes to the output's size, at `offset` or centred."""
    height, width = site.fixed_shape(0, "output")[2:]
    full_h, full_w = site.in_shapes[0][2:]
    if site.attrs.center_crop:
        top, left = (full_h - height) // 2, (full_w - width) // 2
    else:
        top, left = site.attrs.offset
    _slice_to(site, [top, left], [top + height, left + width], [2, 3])


@converts("slice_like")
def _slice_like(site: Site) -> None:
    out = site.fixed_shape(0, "output")
    axes = [i for i, (d, o) in enumerate(zip(site.in_shapes[0], out)) if d != o]
    if not axes:
        site.b.add("Identity", [site.ins[0]], out=site.outs[0])
        return
    _slice_to(site, [0] * len(axes), [out[i] for i in axes], axes)


@converts("reshape_like")
def _reshape_like(site: Site) -> None:
    a, b = site.attrs, site.b
    if all(v is None for v in (a.lhs_begin, a.lhs_end, a.rhs_begin, a.rhs_end)):
        shape = b.add("Shape", [site.ins[1]], hint=site.name + "_shape")
        b.add("Reshape", [site.ins[0], shape], out=site.outs[0])
        return
    b.reshape(site.ins[0], list(site.fixed_shape(0, "output")), out=site.outs[0],
              hint=site.name)


@converts("broadcast_to", "broadcast_axis")
def _broadcast_to(site: Site) -> None:
    shape = site.fixed_shape(0, "output")
    site.b.add("Expand", [site.ins[0], site.b.ints(shape, site.name + "_shape")],
               out=site.outs[0])


@converts("broadcast_like")
def _broadcast_like(site: Site) -> None:
    if getattr(site.attrs, "lhs_axes", None) or getattr(site.attrs, "rhs_axes", None):
        site.fixed_shape(0, "output")
        _broadcast_to(site)
        return
    b = site.b
    b.add("Expand", [site.ins[0], b.add("Shape", [site.ins[1]], hint=site.name + "_shape")],
          out=site.outs[0])


_REDUCE = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin",
           "prod": "ReduceProd"}


def _reduce_to(site: Site, op_type: str, x: str, axes: list, out: str) -> None:
    """A reduction whose result has the shape MXNet gives: (1,) rather than a scalar."""
    b, rank = site.b, site.rank(0)
    keep = site.attrs.keepdims
    if not axes:
        b.add("Identity", [x], out=out)
    elif not keep and len(axes) == rank:
        whole = b.reduce(op_type, x, axes, True, hint=site.name + "_all")
        b.reshape(whole, [1], out=out, hint=site.name)
    else:
        b.reduce(op_type, x, axes, keep, out=out, hint=site.name)


@converts(*_REDUCE)
def _reduction(site: Site) -> None:
    axes = _axes(site, site.attrs.axis, site.rank(0))
    _reduce_to(site, _REDUCE[site.node.op.name], site.ins[0], axes, site.outs[0])


@converts("norm")
def _norm(site: Site) -> None:
    a = site.attrs
    if a.ord not in (1, 2):
        raise site.refuse("ord=%s: only the L1 and L2 norms are exported" % a.ord)
    op_type = "ReduceL1" if a.ord == 1 else "ReduceL2"
    cast = site.out_dtypes[0] != site.in_dtypes[0]
    out = site.b.reserve(site.name + "_norm") if cast else site.outs[0]
    _reduce_to(site, op_type, site.ins[0], _axes(site, a.axis, site.rank(0)), out)
    if cast:
        site.b.add("Cast", [out], out=site.outs[0],
                   to=site.b.helper.np_dtype_to_tensor_dtype(site.out_dtypes[0]))


def _swap_last(site: Site, x: str, rank: int, hint: str) -> str:
    perm = list(range(rank))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return site.b.add("Transpose", [x], hint=hint, perm=perm)


@converts("dot")
def _dot(site: Site) -> None:
    a, b = site.attrs, site.b
    lhs, rhs = site.ins[:2]
    lrank, rrank = site.rank(0), site.rank(1)
    if rrank > 2 or (lrank > 2 and a.transpose_a) or min(lrank, rrank) < 1:
        raise site.refuse("dot of ranks %d and %d (transpose_a=%s) is not exported; ranks "
                          "up to 2, or an N-D left operand times a matrix, are"
                          % (lrank, rrank, a.transpose_a))
    if a.transpose_a and lrank == 2:
        lhs = _swap_last(site, lhs, 2, site.name + "_lhs_t")
    if a.transpose_b and rrank == 2:
        rhs = _swap_last(site, rhs, 2, site.name + "_rhs_t")
    if lrank == 1 and rrank == 1:  # MXNet gives shape (1,), MatMul a scalar
        product = b.add("MatMul", [lhs, rhs], hint=site.name + "_scalar")
        b.reshape(product, [1], out=site.outs[0], hint=site.name)
        return
    b.add("MatMul", [lhs, rhs], out=site.outs[0])


@converts("batch_dot")
def _batch_dot(site: Site) -> None:
    a = site.attrs
    lhs, rhs = site.ins[:2]
    if a.transpose_a:
        lhs = _swap_last(site, lhs, site.rank(0), site.name + "_lhs_t")
    if a.transpose_b:
        rhs = _swap_last(site, rhs, site.rank(1), site.name + "_rhs_t")
    site.b.add("MatMul", [lhs, rhs], out=site.outs[0])


@converts("shape_array", "size_array")
def _shape_array(site: Site) -> None:
    op_type = "Shape" if site.node.op.name == "shape_array" else "Size"
    b = site.b
    value = b.add(op_type, [site.ins[0]], hint=site.name + "_value")
    if op_type == "Size":
        value = b.reshape(value, [1], hint=site.name)
    b.add("Cast", [value], out=site.outs[0],
          to=b.helper.np_dtype_to_tensor_dtype(site.out_dtypes[0]))


@converts("depth_to_space", "space_to_depth")
def _depth_space(site: Site) -> None:
    op_type = "DepthToSpace" if site.node.op.name == "depth_to_space" else "SpaceToDepth"
    extra = {"mode": "DCR"} if op_type == "DepthToSpace" else {}
    site.b.add(op_type, [site.ins[0]], out=site.outs[0], blocksize=site.attrs.block_size,
               **extra)
