"""Binary arithmetic: `lhs (op) rhs` on two arrays of one shape (elemwise_add, _power ...),
the same with NumPy broadcasting (broadcast_add ...), and add_n over any number of arrays.

The family is table-driven: one row per math key gives the forward (array code writing into a
preallocated output), the two gradients, and which inputs/outputs the gradients read (that
declaration drives liveness and in-place planning, so it is exact). Each row is registered
twice, under its same-shape and its broadcast name; comparisons and logical ops are rows of the
same kind, kept in compare.py.

Conventions shared by the elementwise families (binary, compare, scalar, unary):

- `forward` may be handed `out[0] is inputs[i]` for the declared `inplace` pairs; every forward
  reads an input element before it writes the same output element, or finishes reading the
  input before the first write.
- `backward` writes into `in_grads` (a None slot is skipped) and assumes the gradient arrays do
  not share storage with `out_grads` (no op here declares backward in-place pairs).
- Outputs are C-contiguous (views of the executor's flat blocks), so `o.reshape(...)` is a view
  that may be passed as `out=`.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional

from .helpers import broadcast_shape, define_op, is_integral, reduce_to_shape, zero_grads
from .registry import Op, VariadicOp, fmt_shape, register
from .scratch import _ScratchMixin

__all__ = ["BinaryMath", "define_same_shape", "define_broadcast", "grad_mod_lhs",
           "grad_mod_rhs", "AddNOp"]


# ============================================================================ binary math table
# A gradient function is g(xp, dy, lhs, rhs, y, out) -> array: the gradient with respect to one
# operand before any broadcast reduction, written into `out` when it is given (None: a new array).

def _g_same(xp, dy, lhs, rhs, y, out):
    if out is None:
        return dy
    xp.copyto(out, dy)
    return out


def _g_neg(xp, dy, lhs, rhs, y, out):
    return xp.negative(dy, out=out)


def _g_mul_l(xp, dy, lhs, rhs, y, out):
    return xp.multiply(dy, rhs, out=out)


def _g_mul_r(xp, dy, lhs, rhs, y, out):
    return xp.multiply(dy, lhs, out=out)


def _g_div_l(xp, dy, lhs, rhs, y, out):
    return xp.divide(dy, rhs, out=out)


def _g_div_r(xp, dy, lhs, rhs, y, out):
    res = xp.multiply(dy, lhs, out=out)
    res /= rhs
    res /= rhs
    return xp.negative(res, out=res)


def _g_pow_l(xp, dy, lhs, rhs, y, out):
    res = xp.multiply(dy, rhs * xp.power(lhs, rhs - 1), out=out)
    return res


def _g_pow_r(xp, dy, lhs, rhs, y, out):
    return xp.multiply(dy, y * xp.log(lhs), out=out)


def _g_ge(xp, dy, lhs, rhs, y, out):
    return xp.multiply(dy, lhs >= rhs, out=out)


def _g_lt(xp, dy, lhs, rhs, y, out):
    return xp.multiply(dy, lhs < rhs, out=out)


def _g_le(xp, dy, lhs, rhs, y, out):
    return xp.multiply(dy, lhs <= rhs, out=out)


def _g_gt(xp, dy, lhs, rhs, y, out):
    return xp.multiply(dy, lhs > rhs, out=out)


def _g_hypot_l(xp, dy, lhs, rhs, y, out):
    return xp.multiply(dy, lhs / y, out=out)


def _g_hypot_r(xp, dy, lhs, rhs, y, out):
    return xp.multiply(dy, rhs / y, out=out)


def grad_mod_lhs(xp, dy, lhs, rhs, y, out):
    """d(lhs mod rhs)/d lhs times dy (also _mod_scalar's gradient)."""
    # MXNet gives integer mod no gradient at all (its gradient kernels are float-only)
    if is_integral(dy.dtype):
        return _g_zero(xp, dy, out)
    return _g_same(xp, dy, lhs, rhs, y, out)


def grad_mod_rhs(xp, dy, lhs, rhs, y, out):
    """d(lhs mod rhs)/d rhs times dy (also _rmod_scalar's gradient)."""
    if is_integral(dy.dtype):
        return _g_zero(xp, dy, out)
    return xp.multiply(dy, -xp.floor(lhs / rhs), out=out)


def _g_zero(xp, dy, out):
    if out is None:
        return xp.zeros_like(dy)
    out.fill(0)
    return out


@dataclasses.dataclass(frozen=True)
class BinaryMath:
    """One row of the binary table: forward, the two gradients, what the gradients read."""

    doc: str
    fwd: Callable
    grad_lhs: Optional[Callable] = None     # None: zero gradient (comparisons)
    grad_rhs: Optional[Callable] = None
    reads_inputs: tuple = ()
    reads_output: bool = False


_ARITHMETIC = {
    "add": BinaryMath("lhs + rhs", lambda xp, a, b, o: xp.add(a, b, out=o), _g_same, _g_same),
    "sub": BinaryMath("lhs - rhs", lambda xp, a, b, o: xp.subtract(a, b, out=o),
                       _g_same, _g_neg),
    "mul": BinaryMath("lhs * rhs", lambda xp, a, b, o: xp.multiply(a, b, out=o),
                       _g_mul_l, _g_mul_r, (0, 1)),
    "div": BinaryMath("lhs / rhs", lambda xp, a, b, o: xp.divide(a, b, out=o),
                       _g_div_l, _g_div_r, (0, 1)),
    "power": BinaryMath("lhs ** rhs (rhs gradient y * log(lhs), NaN for lhs <= 0 as in MXNet)",
                         lambda xp, a, b, o: xp.power(a, b, out=o),
                         _g_pow_l, _g_pow_r, (0, 1), True),
    "maximum": BinaryMath("max(lhs, rhs); on ties the gradient goes to lhs",
                           lambda xp, a, b, o: xp.maximum(a, b, out=o), _g_ge, _g_lt, (0, 1)),
    "minimum": BinaryMath("min(lhs, rhs); on ties the gradient goes to lhs",
                           lambda xp, a, b, o: xp.minimum(a, b, out=o), _g_le, _g_gt, (0, 1)),
    "hypot": BinaryMath("sqrt(lhs**2 + rhs**2)", lambda xp, a, b, o: xp.hypot(a, b, out=o),
                         _g_hypot_l, _g_hypot_r, (0, 1), True),
    "mod": BinaryMath("lhs mod rhs with the divisor's sign (Python's %); gradients 1 and "
                       "-floor(lhs / rhs) (none for integer dtypes, as in MXNet)",
                       lambda xp, a, b, o: xp.mod(a, b, out=o), grad_mod_lhs, grad_mod_rhs,
                       (0, 1)),
}


# ============================================================================ same-shape binary

class _Binary(_ScratchMixin, Op):
    """Base of `lhs (op) rhs` (its math in `spec`). A gradient of another shape than the
    output's (an input that was broadcast) is the elementwise gradient summed back to it."""

    ARGUMENTS = ("lhs", "rhs")
    spec: Optional[BinaryMath] = None

    def forward(self, xp, inputs, aux, out, is_train):
        self.spec.fwd(xp, inputs[0], inputs[1], out[0])

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        m = self.spec
        if m.grad_lhs is None:
            zero_grads(in_grads)
            return
        dy, lhs, rhs, y = out_grads[0], inputs[0], inputs[1], outputs[0]
        for grad_fn, dx in ((m.grad_lhs, in_grads[0]), (m.grad_rhs, in_grads[1])):
            if dx is None:
                continue
            if dx.shape == dy.shape:
                grad_fn(xp, dy, lhs, rhs, y, dx)
            else:
                full = None if grad_fn is _g_same else self._scratch(xp, "grad", dy.shape,
                                                                       dy.dtype)
                reduce_to_shape(xp, grad_fn(xp, dy, lhs, rhs, y, full), dx.shape, dx)


class _SameShapeBinary(_Binary):
    """Base of `lhs (op) rhs` on two arrays of one shape (output shape = that shape)."""

    inplace = ((0, 0), (1, 0))


def _binary_members(m: BinaryMath) -> dict:
    return dict(spec=m, no_gradient=m.grad_lhs is None, backward_inputs=m.reads_inputs,
                backward_outputs=(0,) if m.reads_output else ())


def define_same_shape(namespace: dict, name: str, aliases: tuple, m: BinaryMath):
    """Register `name`: out = lhs (m) rhs on two arrays of one shape."""
    return define_op(namespace, _SameShapeBinary, name, aliases,
                     "out = %s, elementwise. lhs, rhs and out have one shape (inferred both "
                     "ways)." % m.doc, _binary_members(m))


# ============================================================================ broadcast binary

class _BroadcastBinary(_Binary):
    """Base of `lhs (op) rhs` with NumPy broadcasting; gradients are summed back to each shape."""

    def infer_shape(self, in_shapes, out_shapes):
        self.set_out(out_shapes, 0, broadcast_shape(in_shapes[0], in_shapes[1]),
                     "broadcasting lhs %s with rhs %s" % (fmt_shape(in_shapes[0]),
                                                         fmt_shape(in_shapes[1])))
        return in_shapes, out_shapes


def define_broadcast(namespace: dict, name: str, aliases: tuple, m: BinaryMath):
    """Register `name`: out = lhs (m) rhs with NumPy broadcasting."""
    return define_op(namespace, _BroadcastBinary, name, aliases,
                     "out = %s with NumPy broadcasting (the shorter shape is left-padded with "
                     "1s)." % m.doc, _binary_members(m))


# math key: (same-shape name, its aliases), (broadcast name, its aliases)
_NAMES = {
    "add": (("elemwise_add", ("_Plus", "_plus", "_add")), ("broadcast_add", ("broadcast_plus",))),
    "sub": (("elemwise_sub", ("_Minus", "_minus", "_sub")),
            ("broadcast_sub", ("broadcast_minus",))),
    "mul": (("elemwise_mul", ("_Mul", "_mul")), ("broadcast_mul", ())),
    "div": (("elemwise_div", ("_Div", "_div")), ("broadcast_div", ())),
    "power": (("_power", ("_Power",)), ("broadcast_power", ())),
    "maximum": (("_maximum", ("_Maximum",)), ("broadcast_maximum", ())),
    "minimum": (("_minimum", ("_Minimum",)), ("broadcast_minimum", ())),
    "hypot": (("_hypot", ("_Hypot",)), ("broadcast_hypot", ())),
    "mod": (("_mod", ("_Mod",)), ("broadcast_mod", ())),
}

for _key, ((_same, _same_aliases), (_bcast, _bcast_aliases)) in _NAMES.items():
    define_same_shape(globals(), _same, _same_aliases, _ARITHMETIC[_key])
    define_broadcast(globals(), _bcast, _bcast_aliases, _ARITHMETIC[_key])

define_op(globals(), _SameShapeBinary, "_grad_add", (),
          "out = lhs + rhs (the gradient-accumulation twin of elemwise_add).",
          _binary_members(_ARITHMETIC["add"]))


@dataclasses.dataclass(frozen=True)
class AddNAttrs:
    num_args: int


@register
class AddNOp(VariadicOp):
    """out = arg0 + arg1 + ... (num_args arrays of one shape); each gradient is the head's."""

    name = "add_n"
    aliases = ("ElementWiseSum",)
    Attrs = AddNAttrs
    inplace = ((0, 0),)
    backward_inputs = ()
    backward_outputs = ()

    def forward(self, xp, inputs, aux, out, is_train):
        o = out[0]
        if len(inputs) == 1:
            if o is not inputs[0]:
                xp.copyto(o, inputs[0])
            return
        # out may share storage with arg0 only, which is read by the first addition
        xp.add(inputs[0], inputs[1], out=o)
        for x in inputs[2:]:
            o += x

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        for g in in_grads:
            if g is not None:
                xp.copyto(g, out_grads[0])
