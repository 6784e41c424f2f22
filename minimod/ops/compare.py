"""Comparisons and logic: ==, !=, >, >=, <, <=, and, or, xor, between two arrays of one
shape (_equal ...), with broadcasting (broadcast_equal ...) and with a scalar (_equal_scalar
...). Each gives 0/1 in the input's dtype and carries no gradient (its inputs get zeros).

The rows plug into the table machinery of binary.py and scalar.py; logical_not, a unary op, is
a row of unary.py.
"""
from __future__ import annotations

from .binary import BinaryMath, define_broadcast, define_same_shape
from .scalar import ScalarMath, define_scalar

__all__: list = []

# (same-shape name, its aliases, broadcast name, math)
_BINARY = (
    ("_equal", ("_Equal",), "broadcast_equal",
     BinaryMath("lhs == rhs", lambda xp, a, b, o: xp.equal(a, b, out=o))),
    ("_not_equal", ("_Not_Equal",), "broadcast_not_equal",
     BinaryMath("lhs != rhs", lambda xp, a, b, o: xp.not_equal(a, b, out=o))),
    ("_greater", ("_Greater",), "broadcast_greater",
     BinaryMath("lhs > rhs", lambda xp, a, b, o: xp.greater(a, b, out=o))),
    ("_greater_equal", ("_Greater_Equal",), "broadcast_greater_equal",
     BinaryMath("lhs >= rhs", lambda xp, a, b, o: xp.greater_equal(a, b, out=o))),
    ("_lesser", ("_Lesser",), "broadcast_lesser",
     BinaryMath("lhs < rhs", lambda xp, a, b, o: xp.less(a, b, out=o))),
    ("_lesser_equal", ("_Lesser_Equal",), "broadcast_lesser_equal",
     BinaryMath("lhs <= rhs", lambda xp, a, b, o: xp.less_equal(a, b, out=o))),
    ("_logical_and", ("_Logical_And",), "broadcast_logical_and",
     BinaryMath("lhs != 0 and rhs != 0", lambda xp, a, b, o: xp.logical_and(a, b, out=o))),
    ("_logical_or", ("_Logical_Or",), "broadcast_logical_or",
     BinaryMath("lhs != 0 or rhs != 0", lambda xp, a, b, o: xp.logical_or(a, b, out=o))),
    ("_logical_xor", ("_Logical_Xor",), "broadcast_logical_xor",
     BinaryMath("(lhs != 0) xor (rhs != 0)", lambda xp, a, b, o: xp.logical_xor(a, b, out=o))),
)

for _same, _aliases, _bcast, _math in _BINARY:
    define_same_shape(globals(), _same, _aliases, _math)
    define_broadcast(globals(), _bcast, (), _math)

_SCALAR = {
    "_equal_scalar": (("_EqualScalar",), ScalarMath(
        "data == scalar", lambda xp, x, s, o: xp.equal(x, s, out=o))),
    "_not_equal_scalar": (("_NotEqualScalar",), ScalarMath(
        "data != scalar", lambda xp, x, s, o: xp.not_equal(x, s, out=o))),
    "_greater_scalar": (("_GreaterScalar",), ScalarMath(
        "data > scalar", lambda xp, x, s, o: xp.greater(x, s, out=o))),
    "_greater_equal_scalar": (("_GreaterEqualScalar",), ScalarMath(
        "data >= scalar", lambda xp, x, s, o: xp.greater_equal(x, s, out=o))),
    "_lesser_scalar": (("_LesserScalar",), ScalarMath(
        "data < scalar", lambda xp, x, s, o: xp.less(x, s, out=o))),
    "_lesser_equal_scalar": (("_LesserEqualScalar",), ScalarMath(
        "data <= scalar", lambda xp, x, s, o: xp.less_equal(x, s, out=o))),
    "_logical_and_scalar": (("_LogicalAndScalar",), ScalarMath(
        "data != 0 and scalar != 0", lambda xp, x, s, o: xp.logical_and(x, s, out=o))),
    "_logical_or_scalar": (("_LogicalOrScalar",), ScalarMath(
        "data != 0 or scalar != 0", lambda xp, x, s, o: xp.logical_or(x, s, out=o))),
    "_logical_xor_scalar": (("_LogicalXorScalar",), ScalarMath(
        "(data != 0) xor (scalar != 0)", lambda xp, x, s, o: xp.logical_xor(x, s, out=o))),
}

for _name, (_aliases, _sm) in _SCALAR.items():
    define_scalar(globals(), _name, _aliases, _sm)
