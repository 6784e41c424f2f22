"""Concat's and Stack's bound forward on CuPy: one copy per input into its part of the output.

CuPy joins more than eight small arrays with a single kernel that reads their addresses from a
table it copies from the host on every call. A copy from the host cannot be part of a CUDA
graph, so an unrolled RNN that concatenates its time steps (`merge_outputs=True`) could never
be captured. Here each input is copied into its view of the output instead, the views made
once at bind time: as many kernels as inputs, every one of them capturable. NumPy keeps the
op's own `concatenate` / `stack`.
"""
from __future__ import annotations

from ..ops.helpers import axis_index
from ..ops.join_split import Concat, Stack
from .registry import fast_path

__all__ = ["MANY"]

#: from this many inputs on, CuPy's own join goes through a table copied from the host
MANY = 9


def _copies(pairs: list):
    def run_copies(xp, is_train):
        for dst, src in pairs:
            xp.copyto(dst, src)
    return run_copies


@fast_path(Concat, stage="forward")
def bind_concat(op, xp, inputs, aux, out):
    if xp.__name__ == "numpy" or len(inputs) < MANY:
        return None
    y = out[0]
    dim = axis_index(op.attrs.dim, y.ndim, "dim")
    lead = (slice(None),) * dim
    pairs, start = [], 0
    for x in inputs:
        pairs.append((y[lead + (slice(start, start + x.shape[dim]),)], x))
        start += x.shape[dim]
    return _copies(pairs)


@fast_path(Stack, stage="forward")
def bind_stack(op, xp, inputs, aux, out):
    if xp.__name__ == "numpy" or len(inputs) < MANY:
        return None
    y = out[0]
    lead = (slice(None),) * axis_index(op.attrs.axis, y.ndim)
    return _copies([(y[lead + (i,)], x) for i, x in enumerate(inputs)])
