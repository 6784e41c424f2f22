"""The monitor callback around the steps: what MXNet's executor reports, and in which order.

`Executor.set_monitor_callback(callback, monitor_all)` makes the executor run its steps
wrapped by `monitored` (and the plain steps again once the callback is None), so the
monitor costs nothing when it is off. Each call is `callback(name, NDArray)`:

- a forward node reports its outputs, `<node>_output` (or `<node>_<output name>` for several,
  hidden outputs such as BatchNorm's statistics included), after it ran; with `monitor_all`,
  its inputs first, `<node>_<input name>`, as they were before it ran (an in-place node
  overwrites its input), each after the variable's own name where the input is a variable;
- a node a rewrite changed reports what the node the user wrote would: a batch-last form its
  arrays in MXNet's layout (`Op.as_written`), a fused op each node it absorbed
  (`Op.unfused_nodes`);
- a gradient node `fc_backward` reports the gradients of its forward op's arguments:
  `fc_backward_output<i>`, or `act_backward_output` for an op of one argument. MXNet's gradient
  node computes every argument's gradient; minimod's only the ones asked for, so the others
  read as zeros (MXNet shows whatever its buffer held).
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from .steps import Step

__all__ = ["monitored"]


def monitored(step: Step, plan, ctx, callback: Callable, monitor_all: bool) -> Step:
    """`step` reporting to `callback` as MXNet's monitor sees it (see the module docstring);
    `plan` is the executor's Plan, `ctx` its Context."""
    if step.forward:
        return _forward_step(step, plan, ctx, callback, monitor_all)
    return _gradient_step(step, plan, ctx, callback)


def _forward_step(step: Step, plan, ctx, callback: Callable, monitor_all: bool) -> Step:
    node, inner = step.node, step.run
    op, inputs, outputs = node.op, list(step.inputs), list(step.outputs)
    variables = _variable_names(plan.graph, step.nid)

    def run(xp, is_train):
        # the views and absorbed nodes are made before the step runs; the outputs are
        # read after it
        ins, outs = op.as_written(xp, inputs, outputs)
        parts = op.unfused_nodes(xp, node.name, ins, outs)
        # a later part reading one of the node's variable inputs reports the variable too
        named = {id(arr): name for arr, name in zip(ins, variables) if name is not None}
        if monitor_all and parts:  # a node no user wrote (a rewrite's split) has no parts
            _report_inputs(callback, ctx, *parts[0][:3],
                           _first_names(parts[0][2], ins, variables, named))
        inner(xp, is_train)
        for k, (name, part_op, part_ins, part_outs) in enumerate(parts):
            if k and monitor_all:
                _report_inputs(callback, ctx, name, part_op, part_ins, _named(part_ins, named))
            _report_outputs(callback, ctx, name, part_op, part_outs)
    return dataclasses.replace(step, run=run)


def _report_outputs(callback: Callable, ctx, name: str, op, outs: list) -> None:
    outputs = op.outputs()[:op.num_json_outputs()]
    # like MXNet, hidden outputs are reported too (BatchNorm's bn_mean, bn_var), but not an
    # op's own reserve that MXNet does not count (the RNN op's)
    names = (["%s_output" % name] if len(outputs) == 1
             else ["%s_%s" % (name, o) for o in outputs])
    for out_name, arr in zip(names, outs):
        callback(out_name, NDArray(arr, ctx))


def _report_inputs(callback: Callable, ctx, name: str, op, ins: list, variables=()) -> None:
    """Each input as MXNet reports it: "<node>_<input name>", after the variable's own name
    where the input is a variable (a weight is seen twice: `fc_weight` as the variable, then
    as fc's input "weight")."""
    variables = list(variables) + [None] * (len(ins) - len(variables))
    for slot, arr, variable in zip(op.monitor_input_names(), ins, variables):
        if variable is not None:
            callback(variable, NDArray(arr, ctx))
        callback("%s_%s" % (name, slot), NDArray(arr, ctx))


def _first_names(arrays: list, ins: list, variables: list, named: dict) -> list:
    """The variable names of the first part's inputs: the node's own where the part reads
    the node's input in its place (two arguments bound to one array keep their names), else
    the name `named` gives the very array (a fused node's part reading a weight)."""
    return [variables[k] if k < len(ins) and arr is ins[k] else named.get(id(arr))
            for k, arr in enumerate(arrays)]


def _named(arrays: list, named: dict) -> list:
    """Per array: the variable name `named` gives the very array, or None."""
    return [named.get(id(arr)) for arr in arrays]


def _variable_names(graph, nid: int) -> list:
    """Per input of node `nid`: the name of the variable it is, or None."""
    nodes = [graph.nodes[graph.entry_node(e)] for e in graph.input_eids[nid]]
    return [node.name if node.is_variable else None for node in nodes]


def _gradient_step(step: Step, plan, ctx, callback: Callable) -> Step:
    inner, op = step.run, step.node.op
    if not op.is_backward:  # a sum, a fused gradient step: what the op says it stands for
        inputs, outputs = list(step.inputs), list(step.outputs)

        def run_other(xp, is_train):
            inner(xp, is_train)
            for label, arr in op.gradient_reports(xp, step.node.name, inputs, outputs):
                callback(label, NDArray(arr, ctx))
        return dataclasses.replace(step, run=run_other)
    reports = _gradient_reports(step, plan)

    def run(xp, is_train):
        inner(xp, is_train)
        moved = _moved_gradients(xp, step, reports)
        for i, (label, arr, shape, dtype) in enumerate(reports):
            if arr is None:
                arr = moved[i] if i in moved else xp.zeros(shape, dtype)
            callback(label, NDArray(arr, ctx))
    return dataclasses.replace(step, run=run)


def _moved_gradients(xp, step: Step, reports: list) -> dict:
    """{argument: its gradient} for the arguments whose gradient a rewrite computes outside
    gradient node `step` (`BackwardOp.moved`: a weight's, summed over an RNN's steps by one
    product), computed again from the node's own inputs so that the monitor sees what MXNet's
    node holds."""
    op = step.node.op
    if not op.moved:
        return {}
    out_grads, fwd_inputs, fwd_outputs, _, aux = op.split_arrays(list(step.inputs),
                                                                 list(step.outputs))
    grads = [None] * len(op.fwd_op.arguments())
    for i in op.moved:
        grads[i] = xp.empty(reports[i][2], reports[i][3])
    op.fwd_op.backward(xp, out_grads, fwd_inputs, fwd_outputs, grads, aux)
    return {i: grads[i] for i in op.moved}


def _gradient_reports(step: Step, plan) -> list:
    """(label, array or None, shape and dtype of the zeros reported in its place) per value
    `BackwardOp` node `step` reports."""
    node, op = step.node, step.node.op
    n_args = len(op.fwd_op.gradient_arguments())
    computed = dict(zip(op.wanted, step.outputs))
    inputs = _forward_inputs(plan, op.fwd_op)
    reports = []
    for i in range(n_args):
        label = "%s_output" % node.name if n_args == 1 else "%s_output%d" % (node.name, i)
        arr = computed.get(i)
        reports.append((label, arr, plan.shapes[inputs[i]], plan.dtypes[inputs[i]]))
    return reports


def _forward_inputs(plan, fwd_op) -> list:
    """The input entry ids of the forward node running `fwd_op`."""
    graph = plan.graph
    for nid in range(plan.num_forward_nodes):
        if graph.nodes[nid].op is fwd_op:
            return list(graph.input_eids[nid])
    raise MXNetError("no forward node runs %s" % fwd_op.name)
