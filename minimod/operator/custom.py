"""`mx.operator`: operators written in Python, as MXNet's CustomOp API defines them.

    class Scale(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * 2)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0] * 2)

    @mx.operator.register("scale")
    class ScaleProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Scale()

    y = mx.sym.Custom(x, op_type="scale")

The prop declares the operator (slots, shapes, dtypes, whether it takes a head gradient); the
op computes on NDArrays that are views of the executor's arrays. Keyword arguments of
`mx.sym.Custom` beyond the inputs and op_type reach the prop's constructor as strings, as in
MXNet, and are kept in the symbol's JSON. The graph node itself is
`minimod.operator.custom_node.Custom`.
"""
from __future__ import annotations

import collections
from typing import Callable

from ..base import MXNetError
from ..ops.arguments import describe_arguments
from ..ops.registry import list_ops
from . import custom_node as _custom

__all__ = ["CustomOp", "CustomOpProp", "register", "get_registered",
           "get_all_registered_operators", "get_operator_arguments", "OperatorArguments"]

#: an operator's arguments: how many, their names, and their type texts
OperatorArguments = collections.namedtuple("OperatorArguments", ["narg", "names", "types"])


def get_all_registered_operators() -> list:
    """The names of every registered operator (aliases included), sorted."""
    return sorted(list_ops())


def get_operator_arguments(op_name: str) -> OperatorArguments:
    """The inputs and parameters of operator `op_name`, with MXNet's type texts
    ("int, required", "boolean, optional, default=0", ...)."""
    names, types = describe_arguments(op_name)
    return OperatorArguments(len(names), names, types)


class CustomOp:
    """The computation of a custom operator: override `forward` and `backward`."""

    def forward(self, is_train, req, in_data, out_data, aux):
        """Write the outputs into `out_data` (NDArrays), honouring `req` (see `assign`)."""
        raise NotImplementedError("%s does not define forward()" % type(self).__name__)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Write the input gradients into `in_grad`, honouring `req`."""
        raise NotImplementedError("%s does not define backward()" % type(self).__name__)

    def assign(self, dst, req: str, src) -> None:
        """Store `src` into `dst` as `req` asks: 'write' or 'inplace' overwrite, 'add'
        accumulates, 'null' leaves dst alone."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] = dst + src
        else:
            raise MXNetError("CustomOp.assign: req must be 'null', 'write', 'inplace' or 'add', "
                             "got %r" % (req,))


class CustomOpProp:
    """The declaration of a custom operator. The defaults: one input `data`, one output
    `output` of data's shape and dtype, no aux states, and a head gradient taken
    (need_top_grad=False makes the operator a loss head, like SoftmaxOutput)."""

    def __init__(self, need_top_grad: bool = True):
        self.need_top_grad_ = need_top_grad

    def list_arguments(self) -> list:
        return ["data"]

    def list_outputs(self) -> list:
        return ["output"]

    def list_auxiliary_states(self) -> list:
        return []

    def infer_shape(self, in_shape: list):
        """(argument shapes, output shapes, aux shapes) from the argument shapes."""
        return in_shape, [in_shape[0]] * len(self.list_outputs()), []

    def infer_type(self, in_type: list):
        """(argument dtypes, output dtypes, aux dtypes): all the first argument's."""
        first = in_type[0]
        return ([first] * len(in_type), [first] * len(self.list_outputs()),
                [first] * len(self.list_auxiliary_states()))

    def infer_storage_type(self, in_stype: list):
        """(argument, output, aux storage types): every one 'default', as MXNet's default.
        minimod runs custom operators on dense arrays (a CSR batch is fed densely), so it
        does not call this itself; it is here for subclasses that call it."""
        _dense_only(self, "in_stype", in_stype)
        return (list(in_stype), ["default"] * len(self.list_outputs()),
                ["default"] * len(self.list_auxiliary_states()))

    def infer_storage_type_backward(self, ograd_stype, in_stype, out_stype, igrad_stype,
                                    aux_stype):
        """The backward pass's storage types, every one 'default' (see infer_storage_type):
        (head gradients, inputs, outputs, input gradients, aux)."""
        for what, stypes in (("ograd_stype", ograd_stype), ("in_stype", in_stype),
                             ("out_stype", out_stype), ("aux_stype", aux_stype)):
            _dense_only(self, what, stypes)
        return (list(ograd_stype), list(in_stype), list(out_stype),
                ["default"] * len(igrad_stype), list(aux_stype))

    def declare_backward_dependency(self, out_grad, in_data, out_data) -> list:
        """What backward reads (MXNet frees the rest early; minimod keeps all of them)."""
        deps = list(out_grad) if self.need_top_grad_ else []
        return deps + list(in_data) + list(out_data)

    def create_operator(self, ctx, in_shapes, in_dtypes) -> CustomOp:
        """The CustomOp to run on `ctx` for inputs of these shapes and dtypes."""
        raise NotImplementedError("%s does not define create_operator()" % type(self).__name__)


def _dense_only(prop, what: str, stypes) -> None:
    for i, stype in enumerate(stypes):
        if stype != "default":
            raise MXNetError("%s: %s[%d] is '%s', but the default storage-type inference "
                             "takes default storage only; override infer_storage_type and "
                             "infer_storage_type_backward for other storage types"
                             % (type(prop).__name__, what, i, stype))


def register(reg_name: str) -> Callable[[type], type]:
    """Class decorator filing a CustomOpProp subclass under op_type `reg_name` (a later
    registration of the same name replaces the earlier, as in MXNet)."""
    def do_register(prop_cls: type) -> type:
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise TypeError("mx.operator.register('%s') decorates a CustomOpProp subclass, got %r"
                            % (reg_name, prop_cls))
        _custom.PROPS[reg_name] = prop_cls
        return prop_cls
    return do_register


def get_registered() -> dict:
    """op_type -> CustomOpProp subclass of every registered custom operator."""
    return dict(_custom.PROPS)
