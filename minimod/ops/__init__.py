"""Operators: one class per MXNet operator, grouped by family, registered by name."""
from .registry import Op, create_op, get_op_class, list_ops, register  # noqa: F401
