"""What an executor does differently when its plan spans several devices (a model-parallel
bind, `group2ctx`; see `minimod.passes.placement`).

Such a plan gives every entry a device (`Plan.devices`): the bind allocates each argument,
gradient and aux state on its variable's device, the memory pool each block on its device,
and the executor reads the device of an entry here. A one-device plan (`devices` None) answers
the executor's own Context for every entry, so these helpers cost an ungrouped bind nothing
at run time.
"""
from __future__ import annotations

from typing import Optional

from .. import backend
from ..context import Context

__all__ = ["context_of", "step_context", "head_grad_arrays", "grad_copies",
           "variable_contexts"]


def context_of(plan, eid: int, ctx: Context) -> Context:
    """The device of entry `eid` of `plan`, for an executor on `ctx`."""
    return ctx if plan.devices is None else plan.devices[eid]


def step_context(plan, step, ctx: Context) -> Context:
    """The device a Step runs on: that of its node's first output."""
    return context_of(plan, plan.graph.row_ptr[step.nid], ctx)


def head_grad_arrays(plan, ctx: Context) -> dict:
    """Per output index that takes a head gradient, the zero array it is copied into, on
    that output's device."""
    arrays = {}
    for i, eid in enumerate(plan.head_grad_eids):
        if eid is None:
            continue
        device = context_of(plan, eid, ctx)
        with backend.device_scope(device):
            arrays[i] = backend.xp_for(device).zeros(plan.shapes[eid], dtype=plan.dtypes[eid])
    return arrays


def grad_copies(plan, grad_arrays: list, grad_req: dict, arrays: list, ctx: Context) -> list:
    """The gradients the executor copies (or adds) into the user's arrays after backward,
    those not written there directly, by device: [(context, [(user's gradient, req, planned
    gradient)])] (one group for a one-device plan), each group run in its device's scope."""
    groups: dict = {}
    for name, grad in zip(plan.arg_names, grad_arrays):
        if grad is None or name not in plan.grad_eids or name in plan.direct_grads:
            continue
        eid = plan.grad_eids[name]
        groups.setdefault(context_of(plan, eid, ctx), []).append(
            (grad._data, grad_req[name], arrays[eid]))
    return list(groups.items())


def variable_contexts(plan, ctx: Context) -> Optional[dict]:
    """{argument or aux state name: its device} for a placed plan, None for a one-device
    plan (every array on `ctx`)."""
    if plan.devices is None:
        return None
    names = plan.arg_names + plan.aux_names
    return {n: plan.devices[e] for n, e in zip(names, plan.arg_eids + plan.aux_eids)}
