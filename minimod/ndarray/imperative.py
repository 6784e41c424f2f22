"""`mx.nd.<Operator>(...)`: any registered operator, run once on NDArrays.

MXNet's NDArray frontend has one function per operator (`mx.nd.Activation`,
`mx.nd.FullyConnected`, `mx.nd.broadcast_equal` ...), as its symbol frontend has. minimod
builds them on first use from the operator registry, so an imperative call computes exactly
what the same node computes in a bound graph:

1. the arguments are sorted as `mx.sym.<op>` sorts them (`ops.registry.call_arguments`):
   inputs by position or name, parameters after them, `clip(x, 0, 1)`;
2. the op infers its output shapes and dtypes from the inputs' (a mismatch names the input and
   both shapes); in MXNet's legacy shape semantics an input with a 0 dim is refused, as its
   shape counts as unknown (`minimod.shape_semantics`);
3. the outputs are allocated on the inputs' device (all inputs must share one), or `out=`
   receives the result;
4. the op's forward runs in training mode only under `autograd.record()` (or
   `autograd.train_mode()`), as MXNet's imperative calls do: otherwise Dropout passes its input
   through and BatchNorm normalizes with the moving statistics;
5. under `autograd.record()`, a call with an input that carries a gradient goes on the tape
   (`tape.py`) with the op's own backward.

A single visible output comes back as an NDArray, several as a list (SliceChannel). The
hand-written routines of `routines/` (`mx.nd.sum`, `mx.nd.dot` ...) keep their names; this
module serves every other operator. Ops are cached per (name, parameters), so a call in a loop
parses its parameters once.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from .. import backend
from ..base import BindError, MXNetError, ShapeError, mxnet_error_from
from ..context import Context, current_context
from ..kernels import device_variant
from ..ops.helpers import empty_result
from ..ops.registry import (
    VariadicOp,
    call_arguments,
    call_params,
    fmt_shape,
    get_op_class,
    merge_shape,
)
from ..profiler import RECORDER, operator_span
from ..shape_semantics import is_np_shape, legacy_zero_size_error
from . import tape
from .core import NDArray, device_scope, wrap

__all__ = ["invoke", "run_op", "op_function", "refuse_zero_size", "FLUENT"]

#: MXNet's NDArray methods that are operators without a routine here (`x.log10()` is
#: `mx.nd.log10(x)`); routines.METHODS has the others
FLUENT = frozenset((
    "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "argmax_channel",
    "broadcast_axes", "broadcast_like", "cbrt", "cosh", "degrees", "depth_to_space", "diag",
    "fix", "log10", "log2", "nanprod", "pad", "radians", "rcbrt", "reshape_like", "rint",
    "shape_array", "sinh", "size_array", "slice", "slice_like", "softmin", "space_to_depth",
    "tan", "trunc"))


@functools.lru_cache(maxsize=512)
def _op(name: str, params: tuple):
    return get_op_class(name)(dict(params))


def _is_input(value) -> bool:
    return isinstance(value, NDArray)


def _device(name: str, arrays: list, ctx_param) -> Context:
    if arrays:
        ctx = arrays[0].context
        for a in arrays[1:]:
            if a.context != ctx:
                raise BindError("mx.nd.%s: inputs live on %s and %s; copy them to one "
                                "device first (as_in_context)" % (name, ctx, a.context))
        return ctx
    if isinstance(ctx_param, Context):
        return ctx_param
    if isinstance(ctx_param, str) and ctx_param:
        kind, _, rest = ctx_param.partition("(")
        return Context(kind, int(rest.rstrip(")") or 0))
    return current_context()


def invoke(name: str, args: tuple, kwargs: dict):
    """Run operator `name` once on NDArrays: `mx.nd.<name>(*args, **kwargs)`."""
    cls = get_op_class(name)
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    kwargs.pop("name", None)  # MXNet accepts and ignores a name on imperative calls
    positional, named = call_arguments(cls, args, kwargs, _is_input)
    ctx_param = named.get("ctx")
    params = call_params(cls, named, _is_input)
    if issubclass(cls, VariadicOp) and "num_args" not in params:
        params["num_args"] = str(len(positional))
    op = _op(name, tuple(sorted(params.items())))
    slots = op.arguments() + op.aux_states()
    if positional:
        if len(positional) != len(slots):
            raise BindError("mx.nd.%s: %d inputs given, the operator takes %d (%s)"
                            % (name, len(positional), len(slots), ", ".join(slots)))
        arrays = list(positional)
    else:
        unknown = [k for k, v in named.items() if isinstance(v, NDArray) and k not in slots]
        if unknown:
            raise TypeError("mx.nd.%s has no input named '%s' (inputs: %s)"
                            % (name, unknown[0], ", ".join(slots) or "none"))
        missing = [s for s in slots if not isinstance(named.get(s), NDArray)]
        if missing:
            raise BindError("mx.nd.%s: input '%s' is required (inputs: %s)"
                            % (name, missing[0], ", ".join(slots)))
        arrays = [named[s] for s in slots]
    return run_op(name, op, arrays, out, ctx_param)


def run_op(name: str, op, arrays: list, out=None, ctx_param=None):
    """Run operator instance `op` once on NDArrays `arrays` (its arguments, then its aux
    states); `name` names the call in errors and on the autograd tape."""
    if (op.keeps_sparse and out is None and len(arrays) == 1
            and arrays[0].stype != "default" and not tape.tracked(*arrays)):
        return arrays[0]._map_values(lambda values: run_op(name, op, [values]))
    ctx = _device(name, arrays, ctx_param)
    if not is_np_shape():
        refuse_zero_size(name, arrays, op.arguments() + op.aux_states())
    data = [a._data for a in arrays]
    n_args = len(op.arguments())
    # a sparse aux state (ops update aux states) is computed on as a dense copy, written back
    sparse_aux = [k for k in range(n_args, len(arrays)) if arrays[k].stype != "default"]
    for k in sparse_aux:
        data[k] = data[k].copy()
    xp = backend.xp_for(ctx)
    kernel = op
    start = RECORDER.now() if RECORDER.on and RECORDER.imperative else None
    with np.errstate(all="ignore"), device_scope(ctx):  # MXNet is silent about NaN and inf
        if op.dynamic_shape:  # the output shapes depend on the values: the op allocates
            outs = _run(name, lambda: op.forward_dynamic(xp, data[:n_args]))
        else:
            outs = _allocate(name, op, arrays, ctx)
            kernel = device_variant(op, ctx, data[0].dtype if data else None)
            if not empty_result(op, outs):  # a zero-size batch has nothing to compute
                _run(name, lambda: kernel.forward(xp, data[:n_args], data[n_args:], outs,
                                                  tape.is_training()))
    if start is not None:
        operator_span(op.name, start, ctx)
    for k in sparse_aux:
        wrap(data[k], ctx).copyto(arrays[k])  # kept in its storage type
    results = [wrap(o, ctx) for o in outs[:op.num_visible_outputs()]]
    if tape.tracked(*arrays):
        tape.record_op(name, kernel, arrays, results, outs, xp)
    if out is not None:
        return _write_out(name, results, out)
    return results[0] if len(results) == 1 else results


def refuse_zero_size(name: str, arrays, slots=None) -> None:
    """In the legacy shape semantics a 0 dim means "unknown", and MXNet refuses an input with
    one: so does `mx.nd.<name>` (naming the input's slot when `slots` gives them)."""
    for k, array in enumerate(arrays):
        if 0 in array.shape:
            what = "input '%s'" % slots[k] if slots else "an input"
            raise ShapeError(legacy_zero_size_error("mx.nd.%s: %s" % (name, what),
                                                    array.shape))


def _run(name: str, compute: Callable[[], Any]) -> Any:
    """compute(), with a failure inside the op (a singular matrix in a LAPACK call, an index
    out of range) raised as an MXNetError naming the call, as MXNet raises them."""
    try:
        return compute()
    except MXNetError:
        raise
    except Exception as err:
        raise mxnet_error_from(err, "mx.nd.%s: %s: %s" % (name, type(err).__name__, err)) \
            from err


def _allocate(name: str, op, arrays: list, ctx: Context) -> list:
    """Fresh outputs of the shapes and dtypes the op infers from its inputs'."""
    specs = _output_specs(name, op, tuple(tuple(a.shape) for a in arrays),
                          tuple(np.dtype(a.dtype) for a in arrays))
    xp = backend.xp_for(ctx)
    with device_scope(ctx):
        return [xp.empty(shape, dtype=dtype) for shape, dtype in specs]


@functools.lru_cache(maxsize=1024)
def _output_specs(name: str, op, given: tuple, dtypes: tuple) -> tuple:
    """((shape, dtype) per output) of `op` on inputs of shapes `given` and `dtypes`, checked
    (a mismatch names the input and both shapes); remembered, as a loop calls one op on the
    same shapes again and again (ops are cached per parameters, so `op` identifies them)."""
    n_out = op.num_outputs()
    try:
        in_shapes, out_shapes = op.infer_shape(list(given), [None] * n_out)
        _, out_types = op.infer_type(list(dtypes), [None] * n_out)
    except MXNetError as err:
        raise type(err)("mx.nd.%s: %s" % (name, err)) from None
    for slot, have, want in zip(op.arguments() + op.aux_states(), given, in_shapes):
        try:
            merge_shape(have, want)
        except ValueError:
            raise ShapeError("mx.nd.%s: input '%s' has shape %s but the operator needs %s"
                             % (name, slot, fmt_shape(have), fmt_shape(want))) from None
    specs = []
    for slot, shape, dtype in zip(op.outputs(), out_shapes, out_types):
        if shape is None or any(d is None for d in shape):
            raise ShapeError("mx.nd.%s: the shape of output '%s' cannot be inferred from "
                             "the inputs (%s)" % (name, slot, fmt_shape(shape)))
        specs.append((tuple(shape), dtype or np.dtype(np.float32)))
    return tuple(specs)


def _write_out(name: str, results: list, out):
    targets = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(targets) != len(results):
        raise BindError("mx.nd.%s gives %d outputs but out= holds %d"
                        % (name, len(results), len(targets)))
    for target, result in zip(targets, results):
        if tuple(target.shape) != tuple(result.shape):
            raise ShapeError("mx.nd.%s: out= has shape %s but the result is %s"
                             % (name, fmt_shape(tuple(target.shape)),
                                fmt_shape(tuple(result.shape))))
        target._check_writable()
        if target.stype != "default":  # a sparse `out` stores the result in its own type
            result.copyto(target)
        else:
            backend.copy_into(target._data, result._data)
        target._ag = result._ag
    return out


def op_function(name: str) -> Callable[..., Any]:
    """The `mx.nd.<name>` function of a registered operator."""
    def call(*args, **kwargs):
        return invoke(name, args, kwargs)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = ("Run operator %s once on NDArrays (minimod.ndarray.imperative); its "
                    "arguments are those of mx.sym.%s." % (name, name))
    return call
