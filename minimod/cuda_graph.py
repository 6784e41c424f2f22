"""Whole steps as CUDA graphs: the kernels of a step captured once, then replayed.

A bound executor's arrays never move (the memory plan fixes every buffer at bind time), so
after a warm-up run its forward, backward or training step can be recorded as one CUDA graph
and replayed with a single launch instead of hundreds of kernel launches from Python.

`capture(xp, device_id, run)` records what `run()` enqueues:
- on a private non-blocking stream (CuPy refuses capture on the default stream); the graph is
  then launched on the current stream, so it stays ordered with the data copies before it
  and the update after it, with no host synchronisation anywhere;
- with a private memory pool as CuPy's allocator, so the temporaries a step allocates are
  addresses the graph owns for as long as it lives: the default pool never sees them, and
  freeing its cached blocks (`backend.empty_cache`, CuPy's retry on out-of-memory) cannot pull
  memory from under a graph;
- with `capturing()` true, so the few places that would bake a value into the graph or wait
  for the GPU refuse with a `CaptureError` (`forbid_in_capture`): drawing random numbers
  (the generator's offset would be frozen), reading device values on the host, copying host
  data in, and products CuPy sends through its own cuBLAS wrapper (`minimod.gemm`).

A refused capture is not an error: the executor keeps that step eager and says why
(`Executor.graph_status`). MINIMOD_CUDA_GRAPHS=0 turns graphs off. This module imports no
CuPy: the caller passes its array module.
"""
from __future__ import annotations

import os

from .base import MXNetError

__all__ = ["CaptureError", "StepGraph", "capture", "capturing", "forbid_in_capture",
           "graphs_enabled", "supports_graphs"]

_CAPTURING = [False]


class CaptureError(MXNetError):
    """A step did something a CUDA graph cannot hold; the step then runs eagerly."""


def graphs_enabled() -> bool:
    """False when the environment sets MINIMOD_CUDA_GRAPHS=0."""
    return os.environ.get("MINIMOD_CUDA_GRAPHS", "1") != "0"


def supports_graphs(xp) -> bool:
    """Whether array module `xp` can capture streams (CuPy; not NumPy)."""
    stream = getattr(getattr(xp, "cuda", None), "Stream", None)
    return stream is not None and hasattr(stream, "begin_capture")


def capturing() -> bool:
    """True while `capture` records a step."""
    return _CAPTURING[0]


def forbid_in_capture(what: str) -> None:
    """Raise CaptureError naming `what` if a capture is recording now."""
    if _CAPTURING[0]:
        raise CaptureError("%s cannot be part of a CUDA graph" % what)


class StepGraph:
    """One captured step: `replay()` launches it on the current stream."""

    __slots__ = ("xp", "graph", "stream", "pool", "device_id")

    def __init__(self, xp, graph, stream, pool, device_id: int):
        self.xp, self.graph, self.stream, self.pool = xp, graph, stream, pool
        self.device_id = device_id

    def replay(self) -> None:
        self.graph.launch(self.xp.cuda.get_current_stream())


def capture(xp, device_id: int, run) -> StepGraph:
    """Record what `run()` enqueues on GPU `device_id` as a StepGraph (see the module
    docstring). Nothing runs while it records: replay the graph for the step's results.
    Whatever `run()` raises ends the capture and is raised again."""
    cuda = xp.cuda
    with cuda.Device(device_id):
        stream = cuda.Stream(non_blocking=True)
        pool = cuda.MemoryPool()
        with stream, cuda.using_allocator(pool.malloc):
            stream.begin_capture()
            _CAPTURING[0] = True
            try:
                run()
            except BaseException:
                try:
                    stream.end_capture()
                except Exception:  # an invalidated capture may also fail to end
                    pass
                raise
            finally:
                _CAPTURING[0] = False
            graph = stream.end_capture()
    return StepGraph(xp, graph, stream, pool, device_id)
