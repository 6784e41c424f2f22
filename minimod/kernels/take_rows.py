"""`take` along axis 0 in 'clip' mode on CuPy, through Embedding's kernels (embedding.py):
the lookup as one kernel, and the gradient of `a` summed in a fixed order.

`take(a, indices)` along the first axis is an embedding lookup with `a` as the table (its
rows flattened to `cols` columns), and its gradient the same row sums. The op's CuPy path
adds the rows with atomic scatter-adds, whose order changes from run to run where an index
repeats; the kernels add each row's gradients in position order, NumPy's `add.at` sums bit
for bit, so the GPU's gradient is the CPU's and a step repeats itself exactly.

The rows are the same as the op's: the op truncates the index to an integer and clips it to
[0, rows - 1]; the kernels clip in the index's type and then truncate, which gives the same
row for every index (the clip bounds are whole numbers), NaN included (row 0). Only indices
at or past 2^63 and +inf differ between devices, and there the kernels take the last row as
the op does on a GPU, whose conversion saturates (on x86 the op's truncation gives row 0).
'wrap' and 'raise' modes, other axes, float16 and larger batches keep the op's path. The
kernels check themselves once per GPU and dtype (embedding.TableKernels) before they serve.
"""
from __future__ import annotations

from ..ops.indexing import TakeOp
from .embedding import lookup_step, row_sums_step
from .registry import fast_path

__all__ = ["bind_backward", "bind_forward"]


def _table_view(op, a):
    """`a` as a (rows, cols) table when `op` takes its rows in 'clip' mode, else None."""
    if op.attrs.mode != "clip" or a.ndim == 0 or a.size == 0 or op.attrs.axis % a.ndim != 0:
        return None
    return a.reshape(a.shape[0], -1) if a.flags.c_contiguous else None


@fast_path(TakeOp, stage="forward")
def bind_forward(op, xp, inputs, aux, out):
    (a, indices), y = inputs, out[0]
    table = _table_view(op, a)
    return None if table is None else lookup_step(xp, indices, table, y)


@fast_path(TakeOp, stage="backward")
def bind_backward(op, xp, out_grads, inputs, outputs, in_grads, aux):
    da, dindices = in_grads
    table = None if da is None else _table_view(op, da)
    return None if table is None else row_sums_step(xp, inputs[1], out_grads[0], table,
                                                    dindices)
