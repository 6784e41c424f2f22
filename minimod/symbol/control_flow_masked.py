"""`mx.sym.contrib.while_loop` and `mx.sym.contrib.cond`, built as ordinary graphs.

MXNet 1.9.1 builds each as one node holding subgraphs, which its shape inference cannot see
through: `infer_shape` and `simple_bind` fail on them, and they run only when `bind` is
given every array. minimod builds what they compute from ordinary operators, so they infer,
bind (`bind` and `simple_bind`), differentiate and run on every device like any graph:

- `cond(pred, then_func, else_func)`: both branches are built and every output is
  `where(pred, then, else)`, `pred` (one element) broadcast over the output. The gradient
  reaches only the branch `pred` picks, as in MXNet; the other branch is computed too (its
  values are dropped, so a NaN there does not show).
- `while_loop(cond, func, loop_vars, max_iterations)`: `max_iterations` copies of `func`.
  Step t runs while `cond` has held at every step so far ("alive"): its loop variables are
  `where(alive, func's, the step before's)` and its outputs `where(alive, func's, 0)`;
  the outputs are stacked along a new axis 0 of length max_iterations, rows past the last
  step zero (as MXNet's come out). The final loop variables are those of the last step run.

Loop variables and outputs are a Symbol or a flat list of Symbols (MXNet also takes nested
lists). The JSON of such a graph holds those operators, not MXNet's `_while_loop` / `_cond` nodes
(a file MXNet wrote with them does not load here). Imperatively, mx.nd.contrib.while_loop
and cond run as MXNet's do (minimod/ndarray/control_flow.py).
"""
from __future__ import annotations

from typing import Any, Callable

from ..base import MXNetError
from .symbol import Symbol, make_op_symbol

__all__ = ["cond", "while_loop"]


def _op(name: str, *inputs: Symbol, **attrs) -> Symbol:
    return make_op_symbol(name, list(inputs), {k: str(v) for k, v in attrs.items()},
                          hint=name)


def _as_list(value: Any, what: str) -> tuple:
    """(list of single-output Symbols, whether `value` was one Symbol)."""
    single = isinstance(value, Symbol)
    items = [value] if single else list(value or [])
    for item in items:
        if not isinstance(item, Symbol) or len(item._outputs) != 1:
            raise MXNetError("%s: expected Symbols of one output each, got %r" % (what, item))
    return items, single


def _select(pred: Symbol, chosen: Symbol, other: Symbol) -> Symbol:
    """`chosen` where the one-element `pred` is non-zero, else `other` (same shapes)."""
    mask = _op("broadcast_add", _op("zeros_like", chosen), pred)
    return _op("where", mask, chosen, other)


def cond(pred: Symbol, then_func: Callable, else_func: Callable, name: str = "cond"):
    """then_func() where the one-element `pred` is non-zero, else else_func() (see the module
    docstring); both return a Symbol or a list of Symbols of matching shapes."""
    if not isinstance(pred, Symbol) or len(pred._outputs) != 1:
        raise MXNetError("cond: pred must be a Symbol of one output (one element)")
    then_out, single = _as_list(then_func(), "cond: then_func's output")
    else_out, _ = _as_list(else_func(), "cond: else_func's output")
    if len(then_out) != len(else_out):
        raise MXNetError("cond: then_func gives %d outputs but else_func %d"
                         % (len(then_out), len(else_out)))
    picked = [_select(pred, a, b) for a, b in zip(then_out, else_out)]
    return picked[0] if single else picked


def while_loop(cond: Callable, func: Callable, loop_vars, max_iterations=None,
               name: str = "while_loop"):
    """(stacked step outputs, final loop variables) of running `func(*loop_vars)` ->
    (outputs, new loop_vars) while `cond(*loop_vars)` (one element) holds, at most
    `max_iterations` times (see the module docstring)."""
    if max_iterations is None:
        raise MXNetError("while_loop: a symbolic loop needs max_iterations")
    steps = int(max_iterations)
    if steps < 1:
        raise MXNetError("while_loop: max_iterations must be >= 1, got %r" % (max_iterations,))
    variables, single_var = _as_list(loop_vars, "while_loop: loop_vars")
    alive = None
    stacked: list = []
    single_out = False
    for _ in range(steps):
        holds = _op("_not_equal_scalar", cond(*variables), scalar=0)
        alive = holds if alive is None else _op("elemwise_mul", alive, holds)
        result = func(*variables)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise MXNetError("while_loop: func must return (step outputs, new loop_vars)")
        outs, single_out = _as_list(result[0], "while_loop: func's step outputs")
        new_vars, _ = _as_list(result[1], "while_loop: func's new loop_vars")
        if len(new_vars) != len(variables):
            raise MXNetError("while_loop: func gives %d loop variables for %d"
                             % (len(new_vars), len(variables)))
        variables = [_select(alive, new, old) for new, old in zip(new_vars, variables)]
        stacked.append([_select(alive, out, _op("zeros_like", out)) for out in outs])
    outputs = [_op("stack", *[step[k] for step in stacked], axis=0, num_args=steps)
               for k in range(len(stacked[0]))]
    outputs = outputs[0] if single_out and outputs else outputs
    return outputs, (variables[0] if single_var else variables)
