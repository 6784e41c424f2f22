"""Batches on their way into a group's executors: which device gets which samples, and the
copy of each input into the executors' bound arrays.

A batch comes in one of two forms, as in MXNet: one DataBatch, which the group slices over its
devices (`split_batch`), or a list of one DataBatch per device, already sliced. `DeviceBatch.of`
tells the two apart, once, where a batch enters a module or a group; everything after reads the
record's fields (`pre_sliced`, `sources`, `data_shapes` ...) instead of testing the form again.
"""
from __future__ import annotations

from typing import NamedTuple, Optional, Sequence

from .. import backend
from ..base import ShapeError
from ..ndarray import ndarray as nd
from ..ndarray.ndarray import NDArray

__all__ = ["DeviceBatch", "split_batch", "_split_input_slice", "_load_general", "_load_data",
           "_load_label"]


def split_batch(batch_size: int, work_load_list: Sequence[float]) -> list:
    """Contiguous slices of range(batch_size), sized in proportion to the work loads.

    Each device gets round(w * B / sum(w)) samples (Python's rounding, as MXNet); any shortfall
    goes to the last device. An empty slice is an error.
    """
    total = sum(work_load_list)
    counts = [round(w * batch_size / total) for w in work_load_list]
    shortfall = batch_size - sum(counts)
    if shortfall > 0:
        counts[-1] += shortfall
    slices = []
    end = 0
    for count in counts:
        begin = min(end, batch_size)
        end = min(begin + count, batch_size)
        if begin >= end:
            raise ValueError("Too many slices. Some splits are empty.")
        slices.append(slice(begin, end))
    return slices


_split_input_slice = split_batch


class DeviceBatch(NamedTuple):
    """A batch in the form it came: `batches` is [one DataBatch] the group slices over its
    devices (`pre_sliced` False), or MXNet's list of one DataBatch per device (True)."""

    batches: list
    pre_sliced: bool

    @classmethod
    def of(cls, data_batch) -> "DeviceBatch":
        """The record of `data_batch` (a DataBatch, a per-device list, or a record already)."""
        if isinstance(data_batch, DeviceBatch):
            return data_batch
        if isinstance(data_batch, list):
            return cls(data_batch, True)
        return cls([data_batch], False)

    @property
    def first(self):
        """The batch, or the first device's share of it."""
        return self.batches[0]

    def sources(self, field: str) -> list:
        """Per input of `field` ('data' or 'label'): the batch's array, or, pre-sliced, the
        list of the devices' arrays (what `_load_general` copies from)."""
        if self.pre_sliced:
            return _per_device(self.batches, field)
        return getattr(self.first, field)

    def data_shapes(self) -> list:
        """The shape of each data input of the whole batch (pre-sliced: the devices' shares
        end to end along axis 0)."""
        first = self.first
        if not self.pre_sliced:
            return [d.shape for d in first.data]
        return [(sum(b.data[i].shape[0] for b in self.batches),) + tuple(x.shape[1:])
                for i, x in enumerate(first.data)]

    def provided(self, field: str):
        """The batch's `provide_data` / `provide_label` descriptors, or None (a pre-sliced
        list: each batch describes one device's share only)."""
        return None if self.pre_sliced else getattr(self.first, field, None)

    def metric_labels(self) -> list:
        """The labels as `update_metric` takes them with `pre_sliced=self.pre_sliced`."""
        if self.pre_sliced:
            return [b.label for b in self.batches]
        return self.first.label


def _copy_slice(src: NDArray, dst: NDArray, islice: Optional[slice], axis: int) -> None:
    data, target = src._data, dst._data
    if data.shape == target.shape and (islice is None or not islice.start):
        backend.copy_into(target, data)  # the whole batch to one device
        return
    if islice is not None and axis >= 0 and (islice.start != 0 or data.shape[axis] != islice.stop):
        index = [slice(None)] * data.ndim
        index[axis] = islice
        data = data[tuple(index)]
    if data.shape != target.shape:
        raise ShapeError("a batch input of shape %s does not fit the bound shape %s "
                         "(slice %s of the batch)" % (tuple(src.shape), dst.shape, islice))
    backend.copy_into(target, data)  # host -> device (or device -> device) transfer


def _as_nd(value) -> NDArray:
    return value if isinstance(value, NDArray) else nd.array(value)


def _load_general(data, targets, major_axis) -> None:
    """Copy each source into its per-device targets, slicing along the batch axis."""
    for d_src, d_targets, axis in zip(data, targets, major_axis):
        if isinstance(d_targets, NDArray):
            _copy_slice(_as_nd(d_src), d_targets, None, -1)
        elif isinstance(d_src, NDArray):  # the usual case: one batch, sliced per device
            for islice, dst in d_targets:
                _copy_slice(d_src, dst, islice, axis)
        elif isinstance(d_src, (list, tuple)):  # pre-sliced: one source per device
            for src, dst in zip(d_src, d_targets):
                dst = dst[1] if isinstance(dst, tuple) else dst
                _copy_slice(_as_nd(src), dst, None, -1)
        else:
            src = nd.array(d_src)
            for islice, dst in d_targets:
                _copy_slice(src, dst, islice, axis)


def _per_device(batches: list, field: str) -> list:
    """From a list of per-device batches, per input the list of per-device arrays."""
    n_inputs = len(getattr(batches[0], field))
    return [[getattr(b, field)[i] for b in batches] for i in range(n_inputs)]


def _load_data(batch, targets, major_axis) -> None:
    """MXNet's helper: copy a batch's data (either form) into the targets."""
    _load_general(DeviceBatch.of(batch).sources("data"), targets, major_axis)


def _load_label(batch, targets, major_axis) -> None:
    """MXNet's helper: copy a batch's labels (either form) into the targets."""
    _load_general(DeviceBatch.of(batch).sources("label"), targets, major_axis)
