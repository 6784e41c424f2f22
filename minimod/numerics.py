"""`mx.numerics`: an opt-in guard that stops at the first NaN or infinity.

A NaN in training usually shows up epochs later as a loss of `nan`, long after the step that
made it. With the guard on, every executor checks, step by step:

* before forward, every bound argument and aux state (bad input data, or weights an update
  already broke, are named as such);
* after every forward step, the node's visible outputs;
* after every backward step, the gradients it wrote.

The first array holding a NaN or an infinity raises `NonFiniteError` (an MXNetError) naming
the node, its operator, the array, how many values are bad and the device; under
`BaseModule.fit` the message also gives the epoch and the batch. Only floating-point arrays
are checked, and hidden outputs (workspaces an op may leave unwritten) are not.

Switch it on with `mx.numerics.nan_guard(True)` (process-wide), `with mx.numerics.nan_guard():`
(for a block), or the environment variable `MINIMOD_NAN_GUARD=1`. Off, it costs the executor
one attribute test per forward or backward call; on, one `isfinite` pass over every value
each step writes (and a device sync per step on a GPU), so use it to hunt a NaN, not to train.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Optional

import numpy as np

from . import backend
from .base import NonFiniteError

__all__ = ["nan_guard", "is_enabled", "NonFiniteError", "guarded", "at_batch"]


class _GuardState:
    """The process-wide switch the executor reads before each run of its steps (one
    attribute, so the check is cheap); on, it runs its steps wrapped by `guarded`."""

    __slots__ = ("enabled",)

    def __init__(self, enabled: bool):
        self.enabled = enabled


GUARD = _GuardState(os.environ.get("MINIMOD_NAN_GUARD", "0").strip().lower()
                    not in ("", "0", "false", "no", "off"))


class nan_guard:  # noqa: N801 - used like a function: mx.numerics.nan_guard(True)
    """Switch the guard on (default) or off. Called, the setting stays; used as a context
    manager (`with nan_guard():`), the previous setting comes back at the end of the block."""

    def __init__(self, enabled: bool = True):
        self.previous = GUARD.enabled
        GUARD.enabled = bool(enabled)

    def __enter__(self) -> "nan_guard":
        return self

    def __exit__(self, *exc) -> None:
        GUARD.enabled = self.previous


def is_enabled() -> bool:
    """Whether the guard is on."""
    return GUARD.enabled


def _bad_counts(xp, array) -> Optional[tuple]:
    """(NaN count, inf count, size) when `array` is floating point and not all finite."""
    if array is None or np.dtype(array.dtype).kind not in "fc":
        return None
    if bool(xp.isfinite(array).all()):
        return None
    nans = int(xp.isnan(array).sum())
    return nans, int(array.size) - nans - int(xp.isfinite(array).sum()), int(array.size)


def _counts_text(counts: tuple) -> str:
    nans, infs, size = counts
    return "%d NaN and %d infinite values (of %d)" % (nans, infs, size)


def _check_inputs(inputs: list, xp, ctx) -> None:
    """Each bound NDArray of `inputs` checked on its own device (a model-parallel executor's
    arrays live on several)."""
    for name, array in inputs:
        counts = _bad_counts(backend.array_module_of(array._data), array._data)
        if counts is not None:
            raise NonFiniteError(
                "NaN guard: argument '%s' holds %s before forward on %s (bad input data, or an "
                "earlier update made the parameter non-finite)"
                % (name, _counts_text(counts), array.context))


def _describe(graph, num_forward_nodes: int, nid: int, eid: int, counts: tuple) -> str:
    """The node that wrote the non-finite entry `eid`, and what the entry is."""
    node = graph.nodes[nid]
    entry = graph.entry_name(eid)
    bad = _counts_text(counts)
    if nid < num_forward_nodes:
        return "node '%s' (%s) wrote %s to its output '%s' in forward" % (
            node.name, node.op.name, bad, entry)
    if node.op.is_backward and node.name.endswith("_backward"):
        fwd_op = node.op.fwd_op
        fwd_name = node.name[:-len("_backward")]
        fwd_ids = [i for i in range(num_forward_nodes) if graph.nodes[i].name == fwd_name]
        if fwd_ids:
            fwd_node = graph.nodes[fwd_ids[-1]]
            slot = node.op.wanted[eid - graph.row_ptr[nid]]
            source = fwd_node.inputs[slot]
            src_eid = graph.row_ptr[graph.node_id[id(source.node)]] + source.index
            return ("node '%s' (%s) wrote %s to the gradient '%s' with respect to its input "
                    "'%s' (%s) in backward" % (fwd_node.name, fwd_op.name, bad, entry,
                                               fwd_op.arguments()[slot],
                                               graph.entry_name(src_eid)))
    return "node '%s' (%s) wrote %s to the gradient '%s' in backward" % (
        node.name, node.op.name, bad, entry)


def guarded(step, plan, xp, ctx, inputs: Optional[list] = None):
    """`step` (an executor's Step) checking the values it wrote once it ran: a forward node's
    visible outputs, a gradient node's every output. With `inputs`, [(name, NDArray)] of the
    bound arguments and aux states, it checks those first (the executor passes them with the
    first forward step). `plan` is the executor's Plan, `xp` and `ctx` its array module and
    Context."""
    graph = plan.graph
    count = step.node.op.num_visible_outputs() if step.forward else len(step.outputs)
    checked = list(zip(range(graph.row_ptr[step.nid], graph.row_ptr[step.nid] + count),
                       step.outputs))
    inner = step.run

    def run(xp_, is_train):
        if inputs is not None:
            _check_inputs(inputs, xp, ctx)
        inner(xp_, is_train)
        for eid, array in checked:
            counts = _bad_counts(xp, array)
            if counts is not None:
                raise NonFiniteError("NaN guard: %s on %s" % (
                    _describe(graph, plan.num_forward_nodes, step.nid, eid, counts), ctx))
    return dataclasses.replace(step, run=run)


def at_batch(err: NonFiniteError, epoch: int, nbatch: int) -> NonFiniteError:
    """`err` with the epoch and batch in front (BaseModule.fit uses it)."""
    return NonFiniteError("epoch %d, batch %d: %s" % (epoch, nbatch, err))
