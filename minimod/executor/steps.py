"""The steps of a bound plan: the `Step` record, and `bind_steps`, the one place where the code
that runs each node is chosen.

Every op node of a plan's graph becomes one Step over the arrays the executor gave its entries:
its inputs, its outputs and `run(xp, is_train)`, a function of nothing else. `run` is the fast
path that `minimod.kernels` binds for the op's class and these arrays when it has one, else
the op's reference `forward` (for a gradient node, its forward op's `backward`). The choice is
made here, once per memory plan; the op is never asked which way to go, and running a step
costs one call. A step whose outputs the memory plan put where their values already lie (a
reshape's output in its input's bytes, a leading-axis split's parts inside its input, a join
whose inputs were written into their places: `MemoryPlan.idle_nodes`) runs nothing, and so does
a node whose outputs hold no element (a zero-size batch; its gradient step writes zeros).

In a plan placed over several devices (`Plan.devices`), each step runs with the array module
of its own device, inside that device's scope where it differs from the executor's (a GPU
other than the executor's, or the host beside a GPU); the executor's own steps stay plain.

The monitor (`executor.monitoring`) and the NaN guard (`minimod.numerics`) wrap steps: a
wrapped step is the same record with another `run`, so the executor's loop stays the same
plain loop whatever is switched on.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, NamedTuple

from .. import backend, kernels
from ..graph import Node
from ..ops.helpers import empty_result, zero_grads

__all__ = ["Step", "StepLists", "bind_steps"]


@dataclasses.dataclass(frozen=True)
class Step:
    """One op node of a plan, bound to its arrays.

    `nid` is the node's id in the plan's graph and `node` the node (its name and op, for error
    messages, the monitor and the guard); `forward` tells a forward node from a gradient node;
    `inputs` and `outputs` are the arrays it reads and writes, in slot order; `run(xp,
    is_train)` computes the outputs from the inputs.
    """

    __slots__ = ("nid", "node", "forward", "inputs", "outputs", "run")

    nid: int
    node: Node
    forward: bool
    inputs: tuple
    outputs: tuple
    run: Callable


class StepLists(NamedTuple):
    """A plan's steps as the executor runs them: `forward`, `backward`, and `train` (both, in
    order: `forward_backward` runs them as one list)."""

    forward: tuple
    backward: tuple
    train: tuple

    def rewrapped(self, wrap: Callable) -> "StepLists":
        """These lists with every step replaced by `wrap(step)` (each step wrapped once)."""
        forward = tuple(map(wrap, self.forward))
        backward = tuple(map(wrap, self.backward))
        return StepLists(forward, backward, forward + backward)


def bind_steps(plan, arrays: list, xp, ctx=None) -> StepLists:
    """The steps of `plan` (a `passes.Plan`) over `arrays`, the array of each entry id; `xp`
    and `ctx` are the executor's array module and Context."""
    graph = plan.graph
    steps = []
    for nid, node in enumerate(graph.nodes):
        if node.op is None:
            continue
        ins = [arrays[e] for e in graph.input_eids[nid]]
        outs = [arrays[e] for e in range(graph.row_ptr[nid], graph.row_ptr[nid + 1])]
        if nid in plan.memory.idle_nodes:
            run = _nothing_to_do
        elif plan.devices is None:
            run = bind_run(xp, node.op, ins, outs)
        else:
            run = _bind_run_on(plan.devices[graph.row_ptr[nid]], xp, ctx, node.op, ins, outs)
        steps.append(Step(nid, node, nid < plan.num_forward_nodes, tuple(ins), tuple(outs),
                          run))
    forward = tuple(s for s in steps if s.forward)
    backward = tuple(s for s in steps if not s.forward)
    return StepLists(forward, backward, forward + backward)


def _nothing_to_do(xp, is_train) -> None:
    """The run of a step whose outputs the memory plan put where their values already are
    (`MemoryPlan.idle_nodes`)."""


def bind_run(xp, op, ins: list, outs: list) -> Callable:
    """`run(xp, is_train)` running `op` on these arrays: the kernel fast path registered for
    the op's class when it has one for them, else the op's reference code."""
    if op.is_backward:
        fwd = op.fwd_op
        arrays = op.split_arrays(ins, outs)
        # no output element (seen in the head gradients, or in the outputs of a loss head
        # that takes none): every gradient is 0
        if empty_result(fwd, arrays[0]) or empty_result(fwd, arrays[2]):
            return lambda xp, is_train: zero_grads(arrays[3])
        fast = kernels.bind_backward(xp, fwd, *arrays)
        if fast is not None:
            return fast
        backward = fwd.backward
        out_grads, inputs, outputs, in_grads, aux = arrays

        def run_backward(xp, is_train):
            backward(xp, out_grads, inputs, outputs, in_grads, aux)
        return run_backward
    n_args = len(op.arguments())
    args, aux = ins[:n_args], ins[n_args:]
    if empty_result(op, outs):  # a zero-size batch: nothing to compute
        return _nothing_to_do
    fast = kernels.bind_forward(xp, op, args, aux, outs)
    if fast is not None:
        return fast
    forward = op.forward

    def run(xp, is_train):
        forward(xp, args, aux, outs, is_train)
    return run


def _bind_run_on(device, xp, ctx, op, ins: list, outs: list) -> Callable:
    """`run` for a node placed on `device` by an executor on `ctx` (array module `xp`): bound
    with `device`'s array module, and run in `device`'s scope where that is not the
    executor's."""
    device_xp = backend.xp_for(device)
    run = bind_run(device_xp, op, ins, outs)
    if device_xp is xp and (device.device_type != "gpu" or device == ctx):
        return run
    scope = backend.device_scope(device)

    def run_there(_xp, is_train):
        with scope:
            run(device_xp, is_train)
    return run_there
