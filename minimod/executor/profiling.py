"""The profiler around the steps: each step timed under the operator that ran it.

While `mx.profiler` records with `profile_symbolic` on, the executor runs its steps wrapped by
`profiled` (and the plain ones again once it stops, so profiling costs nothing when off). A
step's span is named by its op (`FullyConnected`, `_backward_FullyConnected`, or the fused op a
rewrite made) and shown under its device's trace process (`cpu/0`). On a GPU the step waits
for the device before its clock stops, so the span is the kernels' time, not their launch's.
"""
from __future__ import annotations

import dataclasses

from ..profiler import RECORDER, operator_span
from .steps import Step

__all__ = ["profiled", "api_span"]


def profiled(step: Step, ctx) -> Step:
    """`step` recording its span while it runs on `ctx`."""
    inner, name, now = step.run, step.node.op.name, RECORDER.now

    def run(xp, is_train):
        start = now()
        inner(xp, is_train)
        operator_span(name, start, ctx)
    return dataclasses.replace(step, run=run)


class api_span:
    """`with api_span("Executor.forward"):` records the call when `profile_api` is on."""

    __slots__ = ("name", "start")

    def __init__(self, name: str):
        self.name = name
        self.start = RECORDER.now() if RECORDER.on and RECORDER.api else None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.start is not None:
            RECORDER.span("api", self.name, self.start, RECORDER.now())
