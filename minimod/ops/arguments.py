"""An operator's arguments described as MXNet's registry describes them (what
`mx.operator.get_operator_arguments` returns): the inputs, then the parameters, each with a
type text such as "int, required", "boolean, optional, default=0",
"{'relu', 'sigmoid'}, required" or "Shape(tuple), optional, default=[]". The texts are read
from the op's `Attrs` dataclass (types and defaults)."""
from __future__ import annotations

import dataclasses
import typing
from typing import Any, Literal, Union

from .registry import NoAttrs, _attrs_fields, get_op_class

__all__ = ["describe_arguments"]

_INPUT = "NDArray-or-Symbol"


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, tuple):
        return "[" + ",".join(str(v) for v in value) + "]"
    if isinstance(value, str):
        return "'%s'" % value
    return str(value)


def _choices_text(choices: tuple, optional: bool) -> str:
    names = sorted(str(c) for c in choices)
    items = (["None"] if optional else []) + ["'%s'" % c for c in names]
    return "{" + ", ".join(items) + "}"


def _type_text(tp) -> tuple:
    """(type text, whether None is allowed) of one Attrs annotation."""
    optional = False
    if typing.get_origin(tp) is Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional = len(args) < len(typing.get_args(tp))
        tp = args[0] if len(args) == 1 else Any
    origin = typing.get_origin(tp)
    if origin is Literal:
        return _choices_text(typing.get_args(tp), optional), optional
    if origin is tuple:
        return "Shape(tuple)", optional
    names = {bool: "boolean", int: "int", float: "float", str: "string"}
    return names.get(tp, "any"), optional


def _param_text(field: dataclasses.Field, tp) -> str:
    text, optional = _type_text(tp)
    if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
        return text + ", required"
    default = field.default if field.default is not dataclasses.MISSING \
        else field.default_factory()
    shown = "'None'" if default is None else _value_text(default)
    separator = "," if text.startswith("{") and optional else ", "
    return "%s%soptional, default=%s" % (text, separator, shown)


def describe_arguments(op_name: str) -> tuple:
    """(names, type texts) of operator `op_name`'s inputs and parameters, in the order its
    `mx.sym.<op>` takes them positionally."""
    cls = get_op_class(op_name)
    inputs, params = cls.call_signature()
    if cls.VARIADIC_CALL:
        names, types = ["data"], [_INPUT + "[]"]
    else:
        names, types = list(inputs), [_INPUT] * len(inputs)
    if cls.Attrs is not NoAttrs:
        hints = _attrs_fields(cls.Attrs)
        fields = {f.name: f for f in dataclasses.fields(cls.Attrs)}
        for name in params:
            if name in fields and not (cls.VARIADIC_CALL and name == "num_args"):
                names.append(name)
                types.append(_param_text(fields[name], hints[name]))
    return names, types
