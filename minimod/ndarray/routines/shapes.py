"""Routines that move values between shapes: joining and splitting (concat, stack, split,
split_v2), axis moves and copies with a new shape (transpose, swapaxes, moveaxis, reshape,
flatten, expand_dims, squeeze, broadcast_to), slice_axis, tile, repeat, flip, zeros_like and
ones_like. Every result is a new array, never a view.
"""
from __future__ import annotations

import numbers
from collections.abc import Sequence

from ...base import MXNetError, ShapeError
from ...ops.tiling import check_reps
from ..core import NDArray, as_backend_operand, device_scope, wrap
from ..imperative import invoke
from ..sparse.creation import zeros as sparse_zeros
from .common import _at_least_1d, _result, recorded


@recorded("Concat", variadic=True)
def concat(*data: NDArray, dim: int = 1, out: NDArray | None = None, **_ignored) -> NDArray:
    """The arrays joined along axis `dim` (they must agree in every other dim)."""
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = tuple(data[0])
    first = data[0]
    parts = [as_backend_operand(d, first.context) for d in data]
    try:
        with device_scope(first.context):
            result = first._xp.concatenate(parts, axis=dim)
    except ValueError as err:
        raise ShapeError(f"concat along dim {dim}: shapes {[d.shape for d in data]} "
                         "do not fit") from err
    return _result(result, first, out)


def concatenate(arrays: Sequence[NDArray], axis: int = 0, always_copy: bool = True) -> NDArray:
    """The arrays joined along `axis`; one array is returned as is unless always_copy."""
    if not arrays:
        raise MXNetError("concatenate needs at least one array")
    if len(arrays) == 1 and not always_copy:
        return arrays[0]
    return concat(*arrays, dim=axis)


@recorded("stack", variadic=True)
def stack(*data: NDArray, axis: int = 0, out: NDArray | None = None, **_ignored) -> NDArray:
    """The arrays (one shape) joined along a new axis."""
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = tuple(data[0])
    first = data[0]
    parts = [as_backend_operand(d, first.context) for d in data]
    with device_scope(first.context):
        return _result(first._xp.stack(parts, axis=axis), first, out)


@recorded("SliceChannel")
def split(data: NDArray, num_outputs: int, axis: int = 1,
          squeeze_axis: bool = False) -> NDArray | list[NDArray]:
    """`num_outputs` equal parts along `axis` (a single NDArray when num_outputs is 1)."""
    with device_scope(data.context):
        if data.shape[axis] % num_outputs:
            raise ShapeError(f"split: dim {axis} of shape {data.shape} is not divisible by "
                             f"num_outputs={num_outputs}")
        parts = data._xp.split(data._data, num_outputs, axis=axis)
        if squeeze_axis:
            parts = [p.squeeze(axis) for p in parts]
        outs = [wrap(p.copy(), data.context) for p in parts]
        return outs[0] if num_outputs == 1 else outs


def split_v2(ary: NDArray, indices_or_sections: int | tuple, axis: int = 0,
             squeeze_axis: bool = False) -> NDArray | list[NDArray]:
    """Split `ary` along `axis` into N equal parts (indices_or_sections=N, which must divide
    the axis: ValueError otherwise) or at the sorted boundaries of a tuple ((2, 3) gives
    ary[:2], ary[2:3], ary[3:]), through the `_split_v2` operator. With squeeze_axis the parts
    (of size 1 along the axis) lose that axis. One part comes back as an NDArray."""
    if isinstance(indices_or_sections, bool):
        raise ValueError("indices_or_sections must be an int or a tuple of ints")
    if isinstance(indices_or_sections, numbers.Integral):
        sections = int(indices_or_sections)
        size = ary.shape[axis]
        if sections < 1 or size % sections:
            raise ValueError(f"split_v2: {sections} sections do not divide axis {axis} of "
                             f"shape {ary.shape} equally")
        indices = tuple(range(0, size, size // sections)) if size else (0,) * sections
    elif isinstance(indices_or_sections, tuple):
        indices = (0,) + tuple(int(i) for i in indices_or_sections)
    else:
        raise ValueError("indices_or_sections must be an int or a tuple of ints, got "
                         f"{type(indices_or_sections).__name__}")
    return invoke("_split_v2", (ary,),
                  dict(indices=indices, axis=axis, squeeze_axis=squeeze_axis))


def moveaxis(tensor: NDArray, source: int | Sequence[int],
             destination: int | Sequence[int]) -> NDArray:
    """A copy of `tensor` with the axes at `source` moved to `destination` (ints or sequences
    of one length; negatives count from the end) and the other axes kept in order. Axes out
    of range or repeated raise ValueError."""
    ndim = tensor.ndim

    def normalize(axes, what):
        axes = [axes] if isinstance(axes, numbers.Integral) else list(axes)
        out = []
        for a in axes:
            if not -ndim <= int(a) < ndim:
                raise ValueError(f"moveaxis: {what} axis {a} is out of range for an array "
                                 f"of {ndim} dimensions")
            out.append(int(a) % ndim)
        if len(set(out)) != len(out):
            raise ValueError(f"moveaxis: repeated axis in {what} {axes}")
        return out

    src, dst = normalize(source, "source"), normalize(destination, "destination")
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination need the same number of axes, got "
                         f"{len(src)} and {len(dst)}")
    order = [a for a in range(ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(tensor, axes=order)


@recorded("slice_axis")
def slice_axis(data: NDArray, axis: int, begin: int, end: int | None,
               out: NDArray | None = None) -> NDArray:
    """A copy of data[begin:end] along `axis` (negative begin/end count from the end)."""
    with device_scope(data.context):
        axis = int(axis) % data.ndim
        key = (slice(None),) * axis + (slice(begin, end),)
        return _result(data._data[key].copy(), data, out)


@recorded("tile")
def tile(data: NDArray, reps: Sequence[int], out: NDArray | None = None) -> NDArray:
    check_reps(tuple(reps))
    with device_scope(data.context):
        return _result(data._xp.tile(data._data, tuple(reps)), data, out)


@recorded("repeat")
def repeat(data: NDArray, repeats: int, axis: int | None = None,
           out: NDArray | None = None) -> NDArray:
    with device_scope(data.context):
        return _result(data._xp.repeat(data._data, int(repeats), axis=axis), data, out)


@recorded("reverse")
def flip(data: NDArray, axis: int | Sequence[int],
         out: NDArray | None = None) -> NDArray:
    with device_scope(data.context):
        return _result(data._xp.flip(data._data, axis=axis).copy(), data, out)



@recorded("transpose")
def transpose(data: NDArray, axes: Sequence[int] | None = None,
              out: NDArray | None = None) -> NDArray:
    """A copy with axes permuted (reversed by default or for axes=())."""
    with device_scope(data.context):
        axes = tuple(axes) if axes else None
        return _result(data._data.transpose(axes).copy(), data, out)


@recorded("SwapAxis")
def swapaxes(data: NDArray, dim1: int = 0, dim2: int = 0,
             out: NDArray | None = None) -> NDArray:
    with device_scope(data.context):
        return _result(data._xp.swapaxes(data._data, dim1, dim2).copy(), data, out)


@recorded("expand_dims")
def expand_dims(data: NDArray, axis: int, out: NDArray | None = None) -> NDArray:
    with device_scope(data.context):
        return _result(data._xp.expand_dims(data._data, int(axis)).copy(), data, out)


@recorded("squeeze")
def squeeze(data: NDArray, axis: int | Sequence[int] | None = None,
            out: NDArray | None = None) -> NDArray:
    with device_scope(data.context):
        axis = tuple(axis) if isinstance(axis, (list, tuple)) else axis
        return _result(_at_least_1d(data._data.squeeze(axis)).copy(), data, out)


@recorded("Flatten")
def flatten(data: NDArray, out: NDArray | None = None) -> NDArray:
    """A copy of shape (dim0, product of the other dims)."""
    with device_scope(data.context):
        n = data.shape[0] if data.ndim else 1
        return _result(data._data.reshape((n, -1)).copy(), data, out)


@recorded("Reshape")
def reshape(data: NDArray, shape: Sequence[int], reverse: bool = False,
            out: NDArray | None = None, **_ignored) -> NDArray:
    """A copy with a new shape (MXNet's 0/-1/-2/-3/-4 codes allowed)."""
    with device_scope(data.context):
        result = data.reshape(shape=shape, reverse=reverse)._data.copy()
        return _result(result, data, out)


@recorded("broadcast_to")
def broadcast_to(data: NDArray, shape: Sequence[int], out: NDArray | None = None) -> NDArray:
    """A copy broadcast to `shape`; a 0 in `shape` keeps that input dim."""
    with device_scope(data.context):
        target = tuple(d if t == 0 else t for t, d in zip(shape, data.shape))
        try:
            result = data._xp.broadcast_to(data._data, target).copy()
        except ValueError as err:
            raise ShapeError(f"broadcast_to: cannot broadcast {data.shape} to {target}") from err
        return _result(result, data, out)



def zeros_like(data: NDArray, out: NDArray | None = None, name: str | None = None) -> NDArray:
    """Zeros of data's shape and dtype; of its storage type too, for a sparse one (as MXNet)."""
    if out is None and data.stype != "default":
        return sparse_zeros(data.stype, data.shape, data.context, data.dtype)
    with device_scope(data.context):
        return _result(data._xp.zeros_like(data._data), data, out)


def ones_like(data: NDArray, out: NDArray | None = None, name: str | None = None) -> NDArray:
    with device_scope(data.context):
        return _result(data._xp.ones_like(data._data), data, out)
