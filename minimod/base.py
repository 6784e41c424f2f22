"""Errors and small helpers shared by every layer.

Every error minimod raises on bad input is a subclass of `MXNetError`, so code written for MXNet
(`except mx.base.MXNetError`) keeps working, and each subclass says which stage objected.
"""
from __future__ import annotations

from typing import Any

__all__ = [
    "MXNetError", "ShapeError", "DTypeError", "OpParamError", "BindError", "GraphError",
    "_as_list", "string_types", "numeric_types", "integer_types",
]

string_types = (str,)
integer_types = (int,)
numeric_types = (float, int)


class MXNetError(Exception):
    """Base class of every error minimod raises for bad input or misuse."""


class ShapeError(MXNetError, ValueError):
    """Shapes that contradict each other, or a shape that cannot be decided."""


class DTypeError(MXNetError, TypeError):
    """Data types that contradict each other."""


class OpParamError(MXNetError, ValueError):
    """An operator parameter that is unknown, missing or malformed."""


class BindError(MXNetError, ValueError):
    """Arrays handed to bind/simple_bind that do not fit the symbol."""


class GraphError(MXNetError, ValueError):
    """A symbol graph that is malformed (bad JSON, unknown operator, bad composition)."""


def _as_list(obj: Any) -> list:
    """Return `obj` as a list: lists and tuples as a list of their items, anything else wrapped."""
    if isinstance(obj, (list, tuple)):
        return list(obj)
    return [obj]
