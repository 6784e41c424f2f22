"""The RNN operator with `use_sequence_length=True`: every sequence of the batch runs for its
own length, as cuDNN runs MXNet's op on a GPU.

Sample n steps through t < len[n] only: its outputs past its length are zero, its final states
are those after step len[n] - 1, and the backward direction of a bidirectional layer starts
at step len[n] - 1. (MXNet 1.9.1's CPU kernel ignores the lengths and runs every sequence for
all T steps; minimod gives the GPU's results on every device.)

The samples are grouped by length (the lengths are read on the host once per call, so such a
step is not captured as a CUDA graph), and each group runs through the op without lengths
(`drive_forward` / `drive_backward` of `op.without_lengths`) on its first L steps: nothing of
the cell kernels changes. Each group's reserve is a piece of the op's reserve, which holds
them all, since a group of n sequences of L <= T steps needs L * n / (T * N) of it; backward
regroups the same way and sums the groups' parameter gradients.
"""
from __future__ import annotations

import numpy as np

from .. import backend
from ..base import ShapeError

__all__ = ["forward_by_length", "backward_by_length"]


def _groups(xp, lengths, steps: int) -> list:
    """[(L, sample indices)] for each distinct length, after checking 1 <= L <= steps."""
    values = np.rint(backend.asnumpy(lengths)).astype(np.int64).reshape(-1)
    bad = values[(values < 1) | (values > steps)]
    if bad.size:
        raise ShapeError("operator RNN: sequence_length holds %s, outside [1, %d] (the data's "
                         "time steps)" % (bad.tolist(), steps))
    return [(int(length), xp.asarray(np.flatnonzero(values == length)))
            for length in np.unique(values)]


def _pieces(op, groups: list):
    """Each group's (offset, size) in the op's reserve, in group order."""
    offset, out = 0, []
    for length, idx in groups:
        size = op.without_lengths._layout(length, int(idx.shape[0]))[0]
        out.append((offset, size))
        offset += size
    return out


def forward_by_length(op, xp, inputs, out, is_train, direction) -> None:
    """RNN.drive_forward when the op takes sequence lengths (see the module docstring)."""
    data = inputs[0]
    states = inputs[2:4] if op.attrs.mode == "lstm" else inputs[2:3]
    groups = _groups(xp, inputs[-1], data.shape[0])
    reserve = out[len(op._visible)]
    visible = len(op._visible)
    out[0][...] = 0
    for (length, idx), (offset, size) in zip(groups, _pieces(op, groups)):
        n = int(idx.shape[0])
        group_in = [data[:length][:, idx], inputs[1]] + [s[:, idx] for s in states]
        y = xp.empty((length, n, out[0].shape[2]), dtype=out[0].dtype)
        finals = [xp.empty((o.shape[0], n, o.shape[2]), dtype=o.dtype)
                  for o in out[1:visible]]
        op.without_lengths.drive_forward(
            xp, group_in, [y] + finals + [reserve[offset:offset + size]], is_train, direction)
        out[0][:length, idx] = y
        for whole, part in zip(out[1:visible], finals):
            whole[:, idx] = part


def backward_by_length(op, xp, out_grads, inputs, outputs, in_grads, direction) -> None:
    """RNN.drive_backward when the op takes sequence lengths: each group's backward through
    the op without lengths, its input and state gradients scattered back, its weight
    gradients summed."""
    data, params = inputs[0], inputs[1]
    n_states = 2 if op.attrs.mode == "lstm" else 1
    groups = _groups(xp, inputs[-1], data.shape[0])
    reserve = outputs[len(op._visible)]
    visible = len(op._visible)
    if in_grads[0] is not None:
        in_grads[0][...] = 0
    if in_grads[1] is not None:
        in_grads[1][...] = 0
    for (length, idx), (offset, size) in zip(groups, _pieces(op, groups)):
        group_in = [data[:length][:, idx], params] + [s[:, idx] for s in inputs[2:2 + n_states]]
        group_out = [outputs[0][:length][:, idx]] + [None] * (visible - 1) \
            + [reserve[offset:offset + size]]
        dy = out_grads[0][:length][:, idx] if out_grads[0] is not None else None
        d_final = [None if g is None else g[:, idx] for g in out_grads[1:visible]]
        grads = [None if in_grads[0] is None else xp.empty_like(group_in[0]),
                 None if in_grads[1] is None else xp.empty_like(params)]
        grads += [None if g is None else xp.empty_like(s)
                  for g, s in zip(in_grads[2:2 + n_states], group_in[2:])]
        op.without_lengths.drive_backward(xp, [dy] + d_final, group_in, group_out, grads, direction)
        if grads[0] is not None:
            in_grads[0][:length, idx] = grads[0]
        if grads[1] is not None:
            in_grads[1] += grads[1]
        for whole, part in zip(in_grads[2:2 + n_states], grads[2:]):
            if whole is not None:
                whole[:, idx] = part
    if len(in_grads) > 2 + n_states and in_grads[-1] is not None:
        in_grads[-1][...] = 0  # the lengths get no gradient
