"""`mx.sym`: build symbol graphs.

Every registered operator is available as a constructor under its MXNet name and aliases
(`mx.sym.FullyConnected`, `mx.sym.flatten`, ...), created on first use from the op registry.
"""
from __future__ import annotations

from numbers import Integral, Number

from . import contrib, image, linalg, op, random, sparse
from .naming import AttrScope, NameManager, Prefix
from .symbol import Group, Symbol, Variable, load, load_json, make_op_symbol, var

__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json", "NameManager", "Prefix",
           "random", "contrib", "linalg", "image", "sparse", "op",
           "AttrScope", "zeros", "ones", "full", "arange", "linspace", "eye", "split_v2",
           "histogram", "maximum",
           "minimum", "pow", "power", "hypot"]


def _constructor(op_name: str):
    def create(*args, **kwargs):
        return make_op_symbol(op_name, args, kwargs, hint=op_name.lower())
    create.__name__ = op_name
    create.__qualname__ = op_name
    create.__doc__ = "Apply operator %s (see minimod.ops)." % op_name
    return create


def __getattr__(name: str):
    from ..ops.registry import list_ops
    if name in list_ops():
        fn = _constructor(name)
        globals()[name] = fn
        return fn
    raise AttributeError("module 'minimod.symbol' has no attribute '%s'" % name)


class _InternalNamespace:
    """`mx.sym._internal`: MXNet's private constructor names (`_plus`, `_mul`, `_PlusScalar`)."""

    def __getattr__(self, name: str):
        from ..ops.registry import list_ops
        if name in list_ops():
            return _constructor(name)
        raise AttributeError("mx.sym._internal has no operator '%s'" % name)


_internal = _InternalNamespace()


def zeros(shape, dtype="float32", **kwargs) -> Symbol:
    return make_op_symbol("_zeros", [], dict(kwargs, shape=shape, dtype=dtype), hint="_zeros")


def ones(shape, dtype="float32", **kwargs) -> Symbol:
    return make_op_symbol("_ones", [], dict(kwargs, shape=shape, dtype=dtype), hint="_ones")


def full(shape, val, dtype="float32", **kwargs) -> Symbol:
    return make_op_symbol("_full", [], dict(kwargs, shape=shape, value=val, dtype=dtype),
                          hint="_full")


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None):
    """start, start + step, ... below stop (MXNet's `mx.sym.arange`; `_arange` node)."""
    return make_op_symbol("_arange", [], dict(
        start=start, stop=stop, step=step, repeat=repeat, infer_range=infer_range, name=name,
        dtype=dtype or "float32"), hint="_arange")


def linspace(start, stop, num, endpoint=True, name=None, dtype=None):
    """`num` evenly spaced values from start to stop (`_linspace` node)."""
    return make_op_symbol("_linspace", [], dict(
        start=start, stop=stop, num=num, endpoint=endpoint, name=name,
        dtype=dtype or "float32"), hint="_linspace")


def eye(N, M=0, k=0, dtype=None, **kwargs):
    """An N x M identity-like matrix with ones on the k-th diagonal (`_eye` node)."""
    return make_op_symbol("_eye", [], dict(kwargs, N=N, M=M, k=k, dtype=dtype or "float32"),
                          hint="_eye")


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False, name=None):
    """Split `ary` along `axis` into `indices_or_sections` equal parts (an int) or at the
    given indices (a tuple); a `_split_v2` node, with MXNet's attributes (indices=() and
    sections=N, or indices=(0,) + indices and sections=0)."""
    if isinstance(indices_or_sections, bool):
        raise ValueError("split_v2: indices_or_sections must be an int or a tuple of ints")
    if isinstance(indices_or_sections, int):
        params = dict(indices=(), sections=indices_or_sections)
    elif isinstance(indices_or_sections, tuple):
        params = dict(indices=(0,) + tuple(indices_or_sections), sections=0)
    else:
        raise ValueError("split_v2: indices_or_sections must be an int or a tuple of ints, "
                         "got %s" % type(indices_or_sections).__name__)
    return make_op_symbol("_split_v2", [ary], dict(params, axis=axis,
                                                   squeeze_axis=squeeze_axis, name=name),
                          hint="_split_v2")


def histogram(a, bins=10, range=None, **kwargs):  # noqa: A002 (MXNet's parameter name)
    """A `_histogram` node: counts and bin edges of `a`, over the edges given by the Symbol
    `bins`, or over `bins` equal bins spanning `range` (a symbol cannot compute the range
    from the data, so an integer `bins` needs it)."""
    if isinstance(bins, Symbol):
        return make_op_symbol("_histogram", [a, bins], dict(kwargs), hint="_histogram")
    if isinstance(bins, Integral) and not isinstance(bins, bool):
        if range is None:
            raise ValueError("histogram: null range is not supported in symbol mode")
        return make_op_symbol("_histogram", [a], dict(kwargs, bin_cnt=bins, range=range),
                              hint="_histogram")
    raise ValueError("histogram: bins must be an integer or a Symbol, got %s"
                     % type(bins).__name__)


def _binary(name: str, scalar_name: str, rscalar_name: str):
    def apply(left, right):
        if isinstance(left, Symbol) and isinstance(right, Symbol):
            return make_op_symbol(name, [left, right], {}, hint=name)
        if isinstance(left, Symbol) and isinstance(right, Number):
            return make_op_symbol(scalar_name, [left], {"scalar": right},
                                  hint=scalar_name.replace("_scalar", "scalar"))
        if isinstance(right, Symbol) and isinstance(left, Number):
            return make_op_symbol(rscalar_name, [right], {"scalar": left},
                                  hint=rscalar_name.replace("_scalar", "scalar"))
        raise TypeError("%s needs at least one Symbol, got %r and %r"
                        % (name, type(left).__name__, type(right).__name__))
    apply.__name__ = name.strip("_")
    return apply


maximum = _binary("_maximum", "_maximum_scalar", "_maximum_scalar")
minimum = _binary("_minimum", "_minimum_scalar", "_minimum_scalar")
power = _binary("_power", "_power_scalar", "_rpower_scalar")
pow = power  # noqa: A001 (MXNet's name)
hypot = _binary("_hypot", "_hypot_scalar", "_hypot_scalar")
