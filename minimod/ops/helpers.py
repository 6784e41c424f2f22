"""Small helpers that several operator families share: dtype names, partial-shape arithmetic,
axis normalisation, parameter checks of the layers, gradient writing, and the factory that
turns a row of a family table into a registered op class.

Shapes here follow the registry contract: a tuple whose dims may be None (unknown), or None
when even the rank is unknown.
"""
from __future__ import annotations

from typing import Literal, Optional

from .. import backend
from ..base import OpParamError, ShapeError
from .registry import Op, fmt_shape, register

__all__ = [
    "DTYPE_NAMES", "DTypeName", "dtype_of", "is_integral", "broadcast_shape", "reduce_to_shape",
    "like_infer_type", "zero_grads", "prod_or_none", "axis_index", "data_axis", "legacy_shape",
    "define_op", "param_error", "spatial_tuple", "check_rank", "bias_view", "reduce_axes",
    "write_grad", "erf", "same_dtype_types", "cast_into", "cast",
]

DTYPE_NAMES = ("float16", "float32", "float64", "uint8", "int8", "int32", "int64", "bool")
DTypeName = Literal["float16", "float32", "float64", "uint8", "int8", "int32", "int64", "bool"]


def dtype_of(name: str):
    """The NumPy dtype object called `name`.

    The passes describe the types of every backend with NumPy dtype objects (CuPy uses the same
    ones), so this is the one place an op touches NumPy itself; it makes no arrays.
    """
    import numpy  # noqa: PLC0415  (dtype objects only, see above)
    return numpy.dtype(name)


def is_integral(dtype) -> bool:
    """True for integer and boolean dtypes."""
    return dtype.kind in "iub"


#: the integer dtypes `cast_into` gives x86-64's float-to-integer results (MXNet has no others
#: but int16/uint16, which behave alike); how each is reached: through int32 or int64
_X86_VIA = {"int8": "int32", "uint8": "int32", "int16": "int32", "uint16": "int32",
            "int32": "int32", "int64": "int64"}


def cast_into(xp, dst, src) -> None:
    """dst[...] = src, cast unsafely, with the float-to-integer results of MXNet's CPU build
    on every device and machine.

    On x86-64, where MXNet's numbers (and the golden files) come from, a float becomes an
    integer through a truncating conversion to int32 (to int64 for int64), which gives that
    type's minimum for NaN and for values out of its range; the result is then wrapped to
    the destination's width (so NaN cast to int32 is -2147483648 and 300.7 cast to
    int8 is 44). CUDA's conversions saturate instead (and NaN gives 0), Arm's too, so the
    rule is spelled out here rather than left to the array module. Other casts (and uint32
    and uint64, which MXNet does not have) are the module's own `copyto`.
    """
    kind = getattr(src, "dtype", None)
    via = _X86_VIA.get(dst.dtype.name)
    if kind is None or kind.kind != "f" or via is None:
        xp.copyto(dst, src, casting="unsafe")
        return
    low = -(2.0 ** 63) if via == "int64" else -(2.0 ** 31)
    if src.dtype.itemsize < 4:  # float16 has no -2**31 to compare with
        src = src.astype("float32")
    whole = xp.trunc(src)
    bad = ~((whole >= low) & (whole < -low))  # NaN compares false: bad too
    whole = xp.where(bad, 0, whole).astype(via)  # in range: the same conversion everywhere
    # the minimum as a kernel's scalar argument: no array made on the host, capture-safe
    xp.copyto(dst, xp.where(bad, int(low), whole), casting="unsafe")


def cast(xp, x, dtype):
    """A new array of `dtype` holding `x`, cast as `cast_into` casts (`x.astype(dtype)` with
    MXNet's CPU float-to-integer results)."""
    out = xp.empty(x.shape, dtype)
    cast_into(xp, out, x)
    return out


# ----------------------------------------------------------------------------- shapes

def prod_or_none(dims) -> Optional[int]:
    """Product of dims, None when any is unknown."""
    p = 1
    for d in dims:
        if d is None:
            return None
        p *= d
    return p


def broadcast_shape(lhs, rhs, what: str = "operands"):
    """NumPy broadcasting of two partial shapes (ranks left-padded with 1, as MXNet 1.9.1 does).

    A dim unknown on one side takes the other side's dim unless that one is 1; returns None while
    either rank is unknown. Raises ShapeError for dims that cannot broadcast.
    """
    if lhs is None or rhs is None:
        return None
    ndim = max(len(lhs), len(rhs))
    lhs = (1,) * (ndim - len(lhs)) + tuple(lhs)
    rhs = (1,) * (ndim - len(rhs)) + tuple(rhs)
    out = []
    for a, b in zip(lhs, rhs):
        if a == 1:
            out.append(b)
        elif b == 1 or b is None or a == b:
            out.append(a)
        elif a is None:
            out.append(b)
        else:
            raise ShapeError("%s could not be broadcast together with shapes %s %s"
                             % (what, fmt_shape(lhs), fmt_shape(rhs)))
    return tuple(out)


def legacy_shape(shape: tuple):
    """MXNet's legacy shape: () is an unknown shape and a 0 (or -1) dim is an unknown dim."""
    if not shape:
        return None
    return tuple(None if d <= 0 else d for d in shape)


def axis_index(axis: int, ndim: int, what: str = "axis", extra: int = 0) -> int:
    """Normalise a possibly negative axis into [0, ndim + extra) (extra=1: an axis to insert)."""
    bound = ndim + extra
    if not -bound <= axis < bound:
        raise ShapeError("%s=%d is out of range for an input of rank %d" % (what, axis, ndim))
    return axis + bound if axis < 0 else axis


def data_axis(axis: int, ndim: int, shape) -> int:
    """Normalise a possibly negative axis of input 'data' (of `shape`) into [0, ndim)."""
    if not -ndim <= axis < ndim:
        raise ShapeError("axis %d is out of range for input 'data' of shape %s"
                         % (axis, fmt_shape(shape)))
    return axis % ndim


def attr_axis(op: Op, ndim: int) -> int:
    """`op.attrs.axis` (BatchNorm, LayerNorm, softmax ...) of input 'data' of rank `ndim`,
    normalised into [0, ndim)."""
    axis = op.attrs.axis + ndim if op.attrs.axis < 0 else op.attrs.axis
    if not 0 <= axis < ndim:
        raise ShapeError("input 'data' has %d dims but %s has axis=%d"
                         % (ndim, op.name, op.attrs.axis))
    return axis


def check_rank(shape, rank: int, what: str) -> None:
    """A ShapeError unless the data `shape` (None: rank unknown) has `rank` dims."""
    if shape is not None and len(shape) != rank:
        raise ShapeError("input 'data' has shape %s but %s needs %d dims"
                         % (fmt_shape(shape), what, rank))


def bias_view(bias, ndim: int, axis: int = 1):
    """A per-channel vector as a view that broadcasts along `axis` of an ndim-D array."""
    shape = [1] * ndim
    shape[axis] = -1
    return bias.reshape(shape)


def reduce_axes(ndim: int, keep: int) -> tuple:
    """Every axis of an ndim-D array but `keep`."""
    return tuple(i for i in range(ndim) if i != keep)


# ----------------------------------------------------------------------------- parameters

def param_error(op: str, text: str) -> OpParamError:
    return OpParamError("operator %s: %s" % (op, text))


def spatial_tuple(op: str, name: str, value: tuple, ndim: int, default: int) -> tuple:
    """A per-spatial-dim parameter: () means `default` everywhere, otherwise one value per dim."""
    if not value:
        return (default,) * ndim
    if len(value) != ndim:
        raise param_error(op, "%s=%s has %d value(s) but kernel has %d"
                          % (name, value, len(value), ndim))
    return tuple(value)


# ----------------------------------------------------------------------------- gradients, types

def write_grad(dst, value) -> None:
    """dst[...] = value, a no-op when dst is None (a gradient nobody needs)."""
    if dst is not None:
        dst[...] = value


def erf(xp, x):
    """erf with relative error below 1.2e-7 (Chebyshev fit of erfc), for NumPy and CuPy alike."""
    z = xp.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (
        0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (
            1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    erfc = t * xp.exp(poly)
    return xp.where(x >= 0, 1.0 - erfc, erfc - 1.0)


def same_dtype_types(op: Op, in_types: list, out_types: list, slots: tuple):
    """Unify the dtypes of the given input slots and every output; leave the others alone."""
    known = next((in_types[i] for i in slots if in_types[i] is not None), None)
    if known is None:
        known = next((t for t in out_types if t is not None), None)
    if known is None:
        return in_types, out_types
    sub_in = [in_types[i] for i in slots]
    sub_in, out_types = Op.infer_type(op, sub_in, list(out_types))
    in_types = list(in_types)
    for i, t in zip(slots, sub_in):
        in_types[i] = t
    return in_types, out_types


def reduce_to_shape(xp, grad, shape, out) -> None:
    """Write into `out` (of `shape`) the sum of `grad` over the axes that broadcasting added."""
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and grad.shape[lead + i] != 1)
    if not axes:
        xp.copyto(out, grad)
    elif out.flags.c_contiguous:  # summed straight into out, seen with grad's rank
        backend.sum_into(xp, grad, axes, out.reshape((1,) * lead + tuple(shape)),
                         keepdims=True)
    else:
        xp.copyto(out, grad.sum(axis=axes).reshape(shape))


def zero_grads(grads) -> None:
    """Fill every requested gradient (the slots that are not None) with 0."""
    for g in grads:
        if g is not None:
            g.fill(0)


def like_infer_type(op: Op, in_types: list, out_types: list):
    """dtype inference of the `*_like` ops (broadcast_like, reshape_like, slice_like): the
    output takes the first input's dtype; the second input only lends its shape, so its dtype
    is free (and not inferred)."""
    head, outs = Op.infer_type(op, list(in_types[:1]), list(out_types))
    return list(head) + list(in_types[1:]), outs


# ----------------------------------------------------------------------------- table-driven ops

def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_") if part)


def define_op(namespace: dict, base, name: str, aliases: tuple, doc: str, members: dict):
    """Create and register one op class (a row of a family table) and export it from the
    module whose `globals()` is `namespace`, under the CamelCase of `name` plus "Op"."""
    cls = type(_camel(name) + "Op", (base,), dict(members, name=name, aliases=aliases,
                                                  __doc__=doc,
                                                  __module__=namespace["__name__"]))
    register(cls)
    namespace[cls.__name__] = cls
    return cls


def empty_result(op, outputs) -> bool:
    """True when every visible output of `op` holds no element (a zero-size batch, which
    `mx.np_shape(True)` allows): there is nothing to compute, and every input's gradient is
    zero, since no output depends on it. The executor and the imperative calls then run no
    kernel (`zero_grads` stands in for the backward), so ops need no zero-size special case.
    `outputs` may be the outputs or their gradients; slots left None are not looked at."""
    seen = False
    for out in outputs[:op.num_visible_outputs()]:
        if out is not None:
            if out.size:  # the common case answers at the first output
                return False
            seen = True
    return seen

