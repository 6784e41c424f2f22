"""MXNet's imperative control flow, `mx.nd.contrib.foreach`, `while_loop` and `cond`: Python
loops and branches over NDArrays that collect the per-step outputs as MXNet does.

- foreach(body, data, init_states): calls `out, states = body(data[i], states)` for each i
  along axis 0 of `data` (an NDArray, or a list whose members are sliced together) and
  returns (the outputs stacked along a new axis 0, the last states).
- while_loop(cond, func, loop_vars, max_iterations): while `cond(*loop_vars)` is true and
  fewer than max_iterations steps ran, `step_output, loop_vars = func(*loop_vars)`; returns
  (the step outputs stacked along axis 0 and padded to max_iterations rows, the last loop
  variables). MXNet leaves the padding rows uninitialised; here they are zeros.
- cond(pred, then_func, else_func): then_func() when the scalar `pred` is true, else
  else_func().

Outputs and states may be NDArrays or nested lists of them; results come back in the
structure `body`/`func` gave them. The symbolic `foreach` is minimod/symbol/control_flow.py,
the symbolic `while_loop` and `cond` minimod/symbol/control_flow_masked.py.
"""
from __future__ import annotations

from typing import Any, Callable

from ..base import MXNetError, flatten_nested
from ..base import regroup_nested as _regroup
from . import creation
from .ndarray import NDArray
from .routines.shapes import concat, stack

__all__ = ["foreach", "while_loop", "cond"]


def _flatten(value: Any, what: str) -> tuple:
    return flatten_nested(value, NDArray, what)


def _scalar(value: Any, kind: type, what: str):
    if isinstance(value, NDArray):
        if value.size != 1:
            raise MXNetError("%s must be a scalar, got an NDArray of shape %s"
                             % (what, value.shape))
        value = value.asscalar()
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ValueError("%s (%r) cannot be read as a Python %s"
                         % (what, value, kind.__name__)) from None


def _add_step(per_step: list, value, fn: str, what: str, error: type) -> list:
    """The NDArrays of one step's outputs (`what` of loop `fn`), appended as (flat, layout)
    to `per_step` after checking they are laid out as step 0's."""
    flat, layout = _flatten(value, "%s's %s" % (fn, what))
    if per_step and (layout != per_step[0][1] or len(flat) != len(per_step[0][0])):
        raise error("%s: step %d returned %d outputs where step 0 returned %d"
                    % (fn, len(per_step), len(flat), len(per_step[0][0])))
    per_step.append((flat, layout))
    return flat


def foreach(body: Callable, data, init_states):
    """Run `body` over axis 0 of `data`; see the module docstring."""
    _flatten(init_states, "foreach's init_states")
    slices, data_layout = _flatten(data, "foreach's data")
    steps = slices[0].shape[0]
    if any(d.shape[0] != steps for d in slices):
        raise MXNetError("foreach: the data arrays differ in length along axis 0: %s"
                         % [d.shape for d in slices])
    if steps == 0:
        raise MXNetError("foreach: data has no step along axis 0 (shape %s)"
                         % (slices[0].shape,))
    states, per_step = init_states, []
    for i in range(steps):
        out, states = body(_regroup([d[i] for d in slices], data_layout), states)
        _add_step(per_step, out, "foreach", "body output", MXNetError)
    stacked = [stack(*column, axis=0) for column in zip(*(flat for flat, _ in per_step))]
    return _regroup(stacked, per_step[0][1]), states


def while_loop(cond: Callable, func: Callable, loop_vars, max_iterations=None):
    """Run `func` while `cond` holds, at most max_iterations times; see the module
    docstring."""
    if max_iterations is None:
        raise ValueError("while_loop: max_iterations is required")
    max_iterations = _scalar(max_iterations, int, "while_loop's max_iterations")
    single = isinstance(loop_vars, NDArray)
    loop_vars = [loop_vars] if single else list(loop_vars)
    if not loop_vars:
        raise ValueError("while_loop: loop_vars must hold at least one NDArray")
    per_step: list = []
    while len(per_step) < max_iterations and _scalar(cond(*loop_vars), bool,
                                                      "the value of while_loop's cond"):
        step_output, new_vars = func(*loop_vars)
        step_output = [] if step_output is None else step_output
        new_vars = [] if new_vars is None else new_vars
        new_vars = [new_vars] if isinstance(new_vars, NDArray) else list(new_vars)
        if len(new_vars) != len(loop_vars):
            raise ValueError("while_loop: func returned %d loop variables for %d"
                             % (len(new_vars), len(loop_vars)))
        _add_step(per_step, step_output, "while_loop", "step output", ValueError)
        loop_vars = new_vars
    stacked = []
    for k, column in enumerate(zip(*(flat for flat, _ in per_step))):
        rows = [x.expand_dims(0) for x in column]
        if any(r.shape != rows[0].shape for r in rows):
            raise ValueError("while_loop: step output %d changes shape between steps: %s"
                             % (k, [x.shape for x in column]))
        if len(rows) < max_iterations:
            rows.append(creation.zeros((max_iterations - len(rows),) + rows[0].shape[1:],
                                       ctx=rows[0].context, dtype=rows[0].dtype))
        stacked.append(concat(*rows, dim=0))
    outputs = _regroup(stacked, per_step[0][1]) if per_step else []
    return outputs, (loop_vars[0] if single else loop_vars)


def cond(pred, then_func: Callable, else_func: Callable):
    """then_func() if the scalar `pred` is true, else else_func()."""
    return then_func() if _scalar(pred, bool, "cond's pred") else else_func()
