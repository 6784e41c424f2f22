"""An executor's CUDA graphs: one per step list and training flag, captured after a warm-up.

`StepGraphs.run(key, run_eager)` runs one of the executor's step lists ('forward',
'backward' or 'train', with is_train): eagerly for the first `WARMUP` calls (kernels compile,
caches and the cuBLAS handle are made), then it captures the list once
(`minimod.cuda_graph.capture`) and replays the graph from then on. A capture that fails
leaves that key eager for good and keeps the reason (`status`). The graphs are dropped when
the executor's arrays change (its memory pool grew). Buckets and reshaped executors are
executors of their own, so each keeps its own graphs.

Not captured: CPU executors, model-parallel plans (their steps span devices), and steps
while a monitor or the NaN guard wraps them (those read values on the host).

The optimizer's update over a flat parameter buffer keeps its graphs in a StepGraphs too
(`minimod.flat.step.FlatState`), under the key ('update', the form of its kernels).
"""
from __future__ import annotations

from .. import cuda_graph

__all__ = ["StepGraphs", "WARMUP"]

#: eager runs of a step list before it is captured
WARMUP = 1


class StepGraphs:
    """The captured graphs of one executor, or of one flat buffer's update (see the module
    docstring)."""

    __slots__ = ("xp", "device_id", "why_not", "graphs", "runs", "failed")

    def __init__(self, xp, ctx, placed: bool):
        self.xp, self.device_id = xp, ctx.device_id
        self.why_not = ""  # why this executor captures nothing, or "" when it may
        if ctx.device_typeid != 2 or not cuda_graph.supports_graphs(xp):
            self.why_not = "not on a GPU"
        elif not cuda_graph.graphs_enabled():
            self.why_not = "MINIMOD_CUDA_GRAPHS=0"
        elif placed:
            self.why_not = "a model-parallel plan spans devices"
        self.graphs: dict = {}   # key -> StepGraph
        self.runs: dict = {}     # key -> eager runs so far
        self.failed: dict = {}   # key -> why its capture failed

    @property
    def active(self) -> bool:
        return not self.why_not

    def reset(self) -> None:
        """Forget every graph (the arrays they were captured over are gone)."""
        self.graphs.clear()
        self.runs.clear()
        self.failed.clear()

    def run(self, key, run_eager) -> None:
        graph = self.graphs.get(key)
        if graph is not None:
            graph.replay()
            return
        if key in self.failed:
            run_eager()
            return
        runs = self.runs[key] = self.runs.get(key, 0) + 1
        if runs <= WARMUP:
            run_eager()
            return
        try:
            graph = cuda_graph.capture(self.xp, self.device_id, run_eager)
        except Exception as err:  # noqa: BLE001 - any failure keeps the step eager
            self.failed[key] = "%s: %s" % (type(err).__name__, err)
            run_eager()
            return
        self.graphs[key] = graph
        graph.replay()

    def status(self) -> dict:
        """Per step key: 'graph', 'eager (warming up)' or 'eager: <why>'."""
        if self.why_not:
            return {"all": "eager: " + self.why_not}
        out = {key: "graph" for key in self.graphs}
        out.update({key: "eager: " + why for key, why in self.failed.items()})
        for key in self.runs:
            out.setdefault(key, "eager (warming up)")
        return out
