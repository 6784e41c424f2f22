"""Helpers shared by the detection operators of `minimod.ops.contrib`.

- `c_round`: C's `round` (halves away from zero), which MXNet's kernels use to snap ROI corners;
  NumPy's `round` sends halves to the even neighbour instead.
- `descending_order`: a stable descending sort, the order `std::stable_sort` with `>` gives
  (ties keep their index order).
- `greedy_nms`: the sequential greedy non-maximum suppression every detection op runs.
- `roi_batch_index`: the batch index column of ROI rows as integers.
- the ROI pooling core (`roi_chunks`, `checked_batch`, `gather_bins`, `scatter_bins`,
  `check_data_rois`): every ROI op writes out[r, c, p] = sum_s weight[r, p, s] *
  data[batch[r], chan[c, p], pos[r, p, s]] and differs only in its positions and weights.
"""
from __future__ import annotations

from typing import Callable

from ... import backend
from ...base import DTypeError, MXNetError, ShapeError
from ..registry import fmt_shape

__all__ = ["c_round", "descending_order", "greedy_nms", "roi_batch_index", "float32_only",
           "roi_chunks", "checked_batch", "gather_bins", "scatter_bins", "check_data_rois"]


def c_round(xp, x):
    """Round halves away from zero, as C's `round` does."""
    return xp.sign(x) * xp.floor(xp.abs(x) + 0.5)


def descending_order(xp, keys, axis: int = -1):
    """Indices sorting `keys` in descending order along `axis`; ties keep index order."""
    return xp.argsort(-keys, axis=axis, kind="stable")


def greedy_nms(xp, count: int, suppresses: Callable, max_keep: int | None = None) -> list:
    """Greedy non-maximum suppression over candidates 0..count-1, already in priority order.

    The first candidate still alive is kept; `suppresses(i, rest)` returns a boolean array over
    the candidate indices `rest` (all after i) telling which of them i suppresses; those leave.
    A suppressed candidate never suppresses others. Stops after `max_keep` kept candidates.
    Returns the kept indices in order.

    The loop runs once per kept candidate (inherently sequential: whether a candidate survives
    depends on which earlier ones survived); each step is one vectorised comparison against the
    candidates still alive, whose set shrinks as they are suppressed.
    """
    alive = xp.arange(count)
    keep: list = []
    limit = count if max_keep is None else max_keep
    while alive.size and len(keep) < limit:
        first = int(alive[0])
        keep.append(first)
        rest = alive[1:]
        if rest.size:
            rest = rest[~suppresses(first, rest)]
        alive = rest
    return keep


def roi_batch_index(xp, rois):
    """The batch index column of `rois` as int64, truncated toward zero as C's cast does."""
    return xp.trunc(rois[:, 0]).astype("int64")


def float32_only(op, in_types: list, out_types: list):
    """Type inference of an op whose MXNet kernels take float32 only (MXNet's legacy operator
    properties): every slot float32, anything else a DTypeError naming the input."""
    for name, t in zip(op.arguments(), in_types):
        if t is not None and str(t) != "float32":
            raise DTypeError("input '%s' is %s but %s supports float32 only" % (name, t, op.name))
    return ["float32"] * len(in_types), ["float32"] * len(out_types)


# ----------------------------------------------------------------------------- ROI pooling

CHUNK_ELEMENTS = 1 << 22  # gathered values per chunk of ROIs


def roi_chunks(count: int, per_roi: int):
    """Slices of ROIs whose gathered samples stay under `CHUNK_ELEMENTS`."""
    step = max(1, CHUNK_ELEMENTS // max(1, per_roi))
    for lo in range(0, count, step):
        yield slice(lo, min(count, lo + step))


def checked_batch(xp, op: str, rois, num_images: int, allow_negative: bool = False):
    """The ROIs' image indices (int64), checked against the data's batch size."""
    batch = roi_batch_index(xp, rois)
    if batch.size:  # both ends in one read on the host
        hi, lo = (int(v) for v in backend.asnumpy(xp.stack([batch.max(), batch.min()])))
        if hi >= num_images or (lo < 0 and not allow_negative):
            raise MXNetError("%s: rois name image %d but data holds images 0..%d"
                             % (op, hi if hi >= num_images else lo, num_images - 1))
    return batch


def gather_bins(xp, data, batch, chan, pos, weight):
    """out[r, c, p] = sum_s weight[r, p, s] * data[batch[r], chan[c, p], pos[r, p, s]].

    chan is (C_out, P) or (R, C_out, P); pos and weight are (R, P, S) or (R, C_out, P, S)."""
    n, c, h, w = data.shape
    plane = data.reshape(n, c, h * w)
    chan = chan if chan.ndim == 3 else chan[None]
    if pos.ndim == 3:
        pos, weight = pos[:, None], weight[:, None]
    values = plane[batch[:, None, None, None], chan[..., None], pos]
    return (values * weight).sum(axis=-1)


def scatter_bins(xp, grad_data, batch, chan, pos, weight, head):
    """The adjoint of `gather_bins`: grad_data[batch, chan, pos] += weight * head[r, c, p]."""
    n, c, h, w = grad_data.shape
    chan = chan if chan.ndim == 3 else chan[None]
    if pos.ndim == 3:
        pos, weight = pos[:, None], weight[:, None]
    index = (batch[:, None, None, None] * c + chan[..., None]) * (h * w) + pos
    values = weight * head[..., None]
    index, values = xp.broadcast_arrays(index, values)
    backend.scatter_add(xp, grad_data.reshape(-1), index.reshape(-1), values.reshape(-1))


def check_data_rois(op, in_shapes: list, rois_cols: int, what: str):
    """Checks data is NCHW and rois (R, rois_cols); returns their (partial) shapes."""
    data, rois = in_shapes[0], in_shapes[1]
    if data is not None and len(data) != 4:
        raise ShapeError("input 'data' has shape %s but %s needs NCHW feature maps"
                         % (fmt_shape(data), op.name))
    if rois is not None and (len(rois) != 2 or rois[1] not in (None, rois_cols)):
        raise ShapeError("input 'rois' has shape %s but %s needs (R, %d) rows of %s"
                         % (fmt_shape(rois), op.name, rois_cols, what))
    return data, rois
