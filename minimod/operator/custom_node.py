"""`Custom`: an operator whose work is Python code the user registered with `mx.operator`.

MXNet lets a script define an operator as a pair of classes: a `CustomOpProp` that declares
the slots, shapes and dtypes, and a `CustomOp` whose forward and backward compute on NDArrays
(usually through NumPy). `mx.operator.register("name")` files the prop class under an op_type;
`mx.sym.Custom(data, op_type="name", **params)` makes a node of it, and the node's parameters
(strings, as MXNet passes them) go to the prop's constructor.

This module is that node's operator. It asks the prop for everything the registry contract
needs (`arguments`, `outputs`, `aux_states`, `infer_shape`, `infer_type`, `needs_out_grad`
from `need_top_grad`), creates the user's operator once per device, shapes and dtypes
(`create_operator`), and calls its forward/backward with NDArrays that are views of the
executor's planned arrays, so `self.assign(out_data[0], req[0], value)` writes in place.

It is the one op that hands NDArrays to user code, so it lives here, in `minimod.operator`
(which sits above `minimod.ndarray`), not among the reference ops of `minimod.ops`, which never
see an NDArray. `import minimod` imports this package, so the op is registered whenever a graph
can be built or loaded. The prop classes live in `PROPS`, filled by
`minimod.operator.register`.
"""
from __future__ import annotations

import contextlib
from typing import Any, Mapping

import numpy as np

from .. import backend
from ..base import MXNetError, OpParamError, mxnet_error_from
from ..context import cpu, gpu
from ..ndarray.ndarray import wrap
from ..ops.registry import NoAttrs, Op, register, shape_is_known

__all__ = ["Custom", "PROPS"]

#: op_type -> CustomOpProp subclass (see minimod.operator.register)
PROPS: dict[str, type] = {}


@register
class Custom(Op):
    """A node running a registered `CustomOp` (see the module docstring)."""

    name = "Custom"
    deterministic = False  # user code may keep state or draw: never merged by CSE
    VARIADIC_CALL = True  # MXNet's `Custom(*data, **kwargs)`: positional arguments are inputs

    def __init__(self, attrs: Mapping[str, Any] | None = None):
        self.raw_attrs = dict(attrs or {})
        params = {k: str(v) for k, v in self.raw_attrs.items()
                  if not (k.startswith("__") and k.endswith("__"))}
        op_type = params.pop("op_type", None)
        if op_type is None:
            raise OpParamError("operator Custom: required parameter op_type not given")
        prop_cls = PROPS.get(op_type)
        if prop_cls is None:
            raise OpParamError(
                "operator Custom: op_type '%s' is not registered; decorate its CustomOpProp "
                "with @mx.operator.register('%s') before building or loading the graph "
                "(mx.operator.get_registered() lists the registered ones)" % (op_type, op_type))
        try:
            self.prop = prop_cls(**params)
        except TypeError as err:
            raise OpParamError("operator Custom: %s(**%s) failed for op_type '%s': %s"
                               % (prop_cls.__name__, params, op_type, err)) from None
        self.op_type = op_type
        self.attrs = NoAttrs()  # the parameters belong to the prop
        self.needs_out_grad = bool(getattr(self.prop, "need_top_grad_", True))
        self._operators: dict = {}

    # --- slots
    def arguments(self) -> list:
        return list(self.prop.list_arguments())

    def outputs(self) -> list:
        return list(self.prop.list_outputs())

    def aux_states(self) -> list:
        return list(self.prop.list_auxiliary_states())

    # --- inference
    def infer_shape(self, in_shapes: list, out_shapes: list):
        n_args = len(self.arguments())
        if in_shapes and not shape_is_known(in_shapes[0]):  # an op may have no inputs
            return in_shapes, out_shapes
        given = [list(s) if shape_is_known(s) else [] for s in in_shapes[:n_args]]
        try:
            shapes = self.prop.infer_shape(given)
        except Exception as err:
            raise MXNetError("Custom op_type '%s': infer_shape(%s) raised %s: %s"
                             % (self.op_type, given, type(err).__name__, err)) from err
        # MXNet takes (argument shapes, output shapes) too, without the aux list
        if not isinstance(shapes, (list, tuple)) or len(shapes) not in (2, 3):
            raise MXNetError("Custom op_type '%s': infer_shape must return (argument shapes, "
                             "output shapes[, aux shapes]), got %r" % (self.op_type, shapes))
        args, outs = shapes[0], shapes[1]
        aux = shapes[2] if len(shapes) == 3 else []
        for i, shape in enumerate(list(args) + list(aux)):
            self.set_in(in_shapes, i, tuple(int(d) for d in shape),
                        "op_type '%s''s infer_shape" % self.op_type)
        for i, shape in enumerate(outs):
            self.set_out(out_shapes, i, tuple(int(d) for d in shape),
                         "op_type '%s''s infer_shape" % self.op_type)
        return in_shapes, out_shapes

    def infer_type(self, in_types: list, out_types: list):
        n_args = len(self.arguments())
        if in_types and in_types[0] is None:
            return in_types, out_types
        given = [None if t is None else np.dtype(t).type for t in in_types[:n_args]]
        types = self.prop.infer_type(given)
        args, outs = types[0], types[1]
        aux = types[2] if len(types) == 3 else []  # (args, outs) without aux, as in MXNet
        return ([np.dtype(t) for t in list(args) + list(aux)],
                [np.dtype(t) for t in outs])

    # --- execution
    def _context(self, arr):
        return gpu(backend.device_of(arr)) if backend.is_gpu_array(arr) else cpu(0)

    def _operator(self, ctx, arrays: list):
        """The user's CustomOp for this device, shapes and dtypes (created once)."""
        shapes = [list(a.shape) for a in arrays]
        dtypes = [a.dtype.type for a in arrays]
        key = (ctx, tuple(map(tuple, shapes)), tuple(dtypes))
        operator = self._operators.get(key)
        if operator is None:
            operator = self._operators[key] = self.prop.create_operator(ctx, shapes, dtypes)
        return operator

    def forward(self, xp, inputs, aux, out, is_train):
        ctx = self._context(out[0])
        operator = self._operator(ctx, list(inputs) + list(aux))
        with self._user_code("forward"):
            operator.forward(is_train=is_train, req=["write"] * len(out),
                             in_data=[wrap(a, ctx) for a in inputs],
                             out_data=[wrap(a, ctx) for a in out],
                             aux=[wrap(a, ctx) for a in aux])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        ctx = self._context(outputs[0])
        operator = self._operator(ctx, list(inputs) + list(aux))
        # slots nobody reads still get arrays, as in MXNet: zeros for head gradients a loss
        # does not take, scratch for input gradients not asked for (req 'null')
        heads = [g if g is not None else xp.zeros_like(o) for g, o in zip(out_grads, outputs)]
        grads = [g if g is not None else xp.zeros_like(x) for g, x in zip(in_grads, inputs)]
        with self._user_code("backward"):
            operator.backward(req=["null" if g is None else "write" for g in in_grads],
                              out_grad=[wrap(a, ctx) for a in heads],
                              in_data=[wrap(a, ctx) for a in inputs],
                              out_data=[wrap(a, ctx) for a in outputs],
                              in_grad=[wrap(a, ctx) for a in grads],
                              aux=[wrap(a, ctx) for a in aux])

    @contextlib.contextmanager
    def _user_code(self, what: str):
        """An exception in the user's forward/backward surfaces as an MXNetError naming the
        op_type (as MXNet reports errors raised inside custom operators)."""
        try:
            yield
        except MXNetError:
            raise
        except Exception as err:
            raise mxnet_error_from(err, "Custom op_type '%s': %s raised %s: %s"
                                   % (self.op_type, what, type(err).__name__, err)) from err

    def __repr__(self):
        return "Custom(op_type=%r)" % self.op_type
