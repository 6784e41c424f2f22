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

import os
from typing import Optional

import numpy as np

from .base import NonFiniteError

__all__ = ["nan_guard", "is_enabled", "NonFiniteError", "run_guarded", "at_batch"]


class _GuardState:
    """The process-wide switch the executor reads (one attribute, so the check is cheap)."""

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


def _check_inputs(executor) -> None:
    plan = executor._plan
    named = list(zip(plan.arg_names, executor.arg_arrays)) + list(
        zip(plan.aux_names, executor.aux_arrays))
    for name, array in named:
        counts = _bad_counts(executor._xp, array._data)
        if counts is not None:
            raise NonFiniteError(
                "NaN guard: argument '%s' holds %s before forward on %s (bad input data, or an "
                "earlier update made the parameter non-finite)"
                % (name, _counts_text(counts), executor._ctx))


def _describe(graph, num_forward_nodes: int, nid: int, eid: int, counts: tuple) -> str:
    """The node that wrote the non-finite entry `eid`, and what the entry is."""
    node = graph.nodes[nid]
    entry = graph.entry_name(eid)
    bad = _counts_text(counts)
    if nid < num_forward_nodes:
        return "node '%s' (%s) wrote %s to its output '%s' in forward" % (
            node.name, node.op.name, bad, entry)
    fwd_op = getattr(node.op, "fwd_op", None)
    if fwd_op is not None and node.name.endswith("_backward"):
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


def _check_step(executor, nid: int) -> None:
    plan = executor._plan
    graph = plan.graph
    node = graph.nodes[nid]
    first = graph.row_ptr[nid]
    if nid < plan.num_forward_nodes:
        count = node.op.num_visible_outputs()
    else:
        count = graph.row_ptr[nid + 1] - first
    for eid in range(first, first + count):
        counts = _bad_counts(executor._xp, executor._arrays[eid])
        if counts is not None:
            raise NonFiniteError("NaN guard: %s on %s" % (
                _describe(graph, plan.num_forward_nodes, nid, eid, counts), executor._ctx))


def run_guarded(executor, steps, is_train: bool) -> None:
    """Run `steps` one at a time through the executor's own loop, checking after each."""
    if steps and steps[0][0] < executor._plan.num_forward_nodes:
        _check_inputs(executor)
    for step in steps:
        executor._run((step,), is_train, False)
        _check_step(executor, step[0])


def at_batch(err: NonFiniteError, epoch: int, nbatch: int) -> NonFiniteError:
    """`err` with the epoch and batch in front (BaseModule.fit uses it)."""
    return NonFiniteError("epoch %d, batch %d: %s" % (epoch, nbatch, err))
