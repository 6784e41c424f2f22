"""Iterators over data files: CSVIter (rows of comma-separated numbers) and MNISTIter (the IDX
image and label files), both read whole into host memory and batched into fixed buffers.
"""
from __future__ import annotations

import gzip
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

from ..base import MXNetError
from ..ndarray import NDArray
from ..ndarray import array as nd_array
from ..ndarray.serialization import read_file
from .base import DataBatch, DataDesc, DataIterError, MXDataIter


class OneArrayBatches(MXDataIter):
    """The base of MXNet's file iterators (CSVIter, MNISTIter, LibSVMIter): one data and one
    label input, each given as one NDArray by `getdata()` / `getlabel()` (where NDArrayIter
    gives lists); the batches `next` makes hold them in lists, as MXNet's do."""

    _pad = 0

    def next(self) -> DataBatch:
        if self.iter_next():
            return DataBatch(data=[self.getdata()], label=[self.getlabel()], pad=self.getpad(),
                             index=self.getindex())
        raise StopIteration

    def getpad(self) -> int:
        return self._pad


class RoundBatches:
    """Which rows each batch of `count` rows takes, as MXNet's C++ batch loader takes them
    (CSVIter, LibSVMIter): in order; with `round_batch` the last batch of an epoch is completed
    with the first rows (`pad` says how many) and the next epoch then starts after them."""

    def __init__(self, count: int, batch_size: int, round_batch: bool):
        self.count, self.batch_size, self.round_batch = count, batch_size, round_batch
        self.cursor = self.next_start = self.pad = 0

    def reset(self) -> None:
        self.cursor, self.next_start = self.next_start, 0

    def advance(self):
        """(start, stop, wrapped) of the next batch: rows start..stop-1, then rows
        0..wrapped-1; None at the end of the epoch."""
        if self.cursor >= self.count:
            return None
        start = self.cursor
        self.cursor = min(self.count, start + self.batch_size)
        self.pad = self.batch_size - (self.cursor - start)
        wrapped = self.pad if self.round_batch else 0  # pad < batch <= count
        if wrapped:
            self.next_start = wrapped
        return start, self.cursor, wrapped


class _FileBatches(OneArrayBatches):
    """Batches of in-memory rows read from files (CSVIter, MNISTIter), copied batch by batch
    into persistent host buffers."""

    def __init__(self, data: np.ndarray, label: np.ndarray, batch_size: int, data_name: str,
                 label_name: str):
        super().__init__(batch_size)
        if batch_size < 1:
            raise DataIterError("batch_size must be >= 1, got %r" % (batch_size,))
        self._data, self._label = data, label
        self._buf_data = np.zeros((batch_size,) + data.shape[1:], data.dtype)
        self._buf_label = np.zeros((batch_size,) + label.shape[1:], label.dtype)
        self.provide_data = [DataDesc(data_name, self._buf_data.shape, data.dtype.type)]
        self.provide_label = [DataDesc(label_name, self._buf_label.shape, label.dtype.type)]
        self._cursor = 0

    def getdata(self) -> NDArray:
        return nd_array(self._buf_data, dtype=self._buf_data.dtype)

    def getlabel(self) -> NDArray:
        return nd_array(self._buf_label, dtype=self._buf_label.dtype)


def _read_file(path: str, what: str) -> bytes:
    """The bytes of `path` (gunzipped when it is gzip data), or a DataIterError naming it."""
    try:
        raw = read_file(path, what)
    except MXNetError as err:
        raise DataIterError(str(err)) from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as err:
            raise DataIterError("%s: '%s' is damaged gzip data: %s" % (what, path, err)) from None
    return raw


def _read_csv(path: str, row_shape: tuple, dtype, what: str) -> np.ndarray:
    """Rows of comma-separated numbers, each reshaped to `row_shape`."""
    text = _read_file(path, what).decode("utf-8", errors="replace")
    try:
        rows = np.loadtxt(text.splitlines(), delimiter=",", dtype=dtype, ndmin=2)
    except ValueError as err:
        raise DataIterError("%s: '%s' is not a CSV file of numbers: %s" % (what, path, err)) \
            from None
    width = int(np.prod(row_shape))
    if rows.shape[1] != width:
        raise DataIterError("%s: the rows of '%s' have %d values but the shape %s needs %d"
                            % (what, path, rows.shape[1], tuple(row_shape), width))
    return rows.reshape((rows.shape[0],) + tuple(row_shape))


class CSVIter(_FileBatches):
    """Batches of the rows of CSV files, MXNet's `mx.io.CSVIter`.

    Each row of `data_csv` (comma-separated numbers) is one sample of shape `data_shape`; each
    row of `label_csv` one label of shape `label_shape` (the default (1,) gives labels of shape
    (batch,)); without a label file the labels are 0. At the end of the data, with
    `round_batch` (the default) the last batch is completed with the first rows (`pad` says
    how many) and the next epoch starts after them, as in MXNet; without it the batch's
    remaining rows keep what the previous batch held. The files are read whole at construction
    (MXNet streams them). `prefetch_buffer` and `ctx` (where MXNet's reader thread prefetches)
    change nothing here; any other keyword is refused.
    """

    def __init__(self, data_csv: str, data_shape: Sequence[int], label_csv: Optional[str] = None,
                 label_shape: Sequence[int] = (1,), batch_size: int = 1,
                 round_batch: bool = True, dtype: Any = None, data_name: str = "data",
                 label_name: str = "softmax_label", prefetch_buffer: int = 4, ctx: Any = None):
        kind = np.dtype(dtype or np.float32)
        data = _read_csv(data_csv, tuple(data_shape), kind, "CSVIter data_csv")
        label_shape = tuple(label_shape)
        if label_csv is None:
            label = np.zeros((len(data),) + label_shape, kind)
        else:
            label = _read_csv(label_csv, label_shape, kind, "CSVIter label_csv")
            if len(label) != len(data):
                raise DataIterError("CSVIter: '%s' has %d rows but '%s' has %d"
                                    % (label_csv, len(label), data_csv, len(data)))
        if label_shape == (1,):
            label = label.reshape(len(label))
        if len(data) < int(batch_size):
            raise DataIterError("CSVIter: '%s' has %d rows, fewer than batch_size=%d (MXNet "
                                "refuses this too)" % (data_csv, len(data), batch_size))
        super().__init__(data, label, int(batch_size), data_name, label_name)
        self.round_batch = bool(round_batch)
        self._rows = RoundBatches(len(data), self.batch_size, self.round_batch)

    def reset(self) -> None:
        self._rows.reset()

    def iter_next(self) -> bool:
        batch = self._rows.advance()
        if batch is None:
            return False
        start, stop, wrapped = batch
        take = stop - start
        self._buf_data[:take], self._buf_label[:take] = self._data[start:stop], \
            self._label[start:stop]
        if wrapped:  # the next epoch's first rows
            self._buf_data[take:], self._buf_label[take:] = self._data[:wrapped], \
                self._label[:wrapped]
        self._pad = self._rows.pad
        return True


def _read_idx(path: str, ndim: int, what: str) -> np.ndarray:
    """An unsigned-byte array in the IDX format of the MNIST files (gzipped or not)."""
    raw = _read_file(path, what)
    magic = 0x800 + ndim
    head = 4 * (1 + ndim)
    if len(raw) < head or int.from_bytes(raw[:4], "big") != magic:
        raise DataIterError("%s: '%s' is not an IDX file of %d-D unsigned bytes (magic %d)"
                            % (what, path, ndim, magic))
    dims = [int.from_bytes(raw[4 * (1 + i):4 * (2 + i)], "big") for i in range(ndim)]
    if len(raw) - head != int(np.prod(dims)):
        raise DataIterError("%s: '%s' holds %d bytes of data, its header promises %s"
                            % (what, path, len(raw) - head, dims))
    return np.frombuffer(raw, np.uint8, offset=head).reshape(dims)


class MNISTIter(_FileBatches):
    """Batches of the MNIST image and label files (the IDX format, raw or gzipped), MXNet's
    `mx.io.MNISTIter`: images scaled to [0, 1) (pixel / 256, as MXNet scales them), shaped
    (batch, 1, rows, cols) or, with `flat`, (batch, rows * cols); labels (batch,). The last
    incomplete batch is dropped. `shuffle` permutes the samples once, with a generator seeded
    by `seed` (minimod's own: the order differs from MXNet's); `num_parts`/`part_index` take
    the part_index-th of num_parts contiguous shares, as MXNet does. `prefetch_buffer` and
    `ctx` change nothing here; any other keyword is refused.
    """

    def __init__(self, image: str = "./train-images-idx3-ubyte",
                 label: str = "./train-labels-idx1-ubyte", batch_size: int = 128,
                 shuffle: bool = True, flat: bool = False, seed: int = 0, silent: bool = False,
                 num_parts: int = 1, part_index: int = 0, data_name: str = "data",
                 label_name: str = "softmax_label", prefetch_buffer: int = 4, ctx: Any = None,
                 dtype: Any = None):
        if dtype not in (None, "float32", np.float32):
            raise DataIterError("MNISTIter: dtype=%r: the images are float32" % (dtype,))
        images = _read_idx(image, 3, "MNISTIter image")
        labels = _read_idx(label, 1, "MNISTIter label")
        if len(images) != len(labels):
            raise DataIterError("MNISTIter: '%s' has %d images but '%s' has %d labels"
                                % (image, len(images), label, len(labels)))
        if not 0 <= part_index < num_parts:
            raise DataIterError("MNISTIter: part_index=%r must lie in [0, num_parts=%r)"
                                % (part_index, num_parts))
        n = len(images)
        order = np.arange(n * part_index // num_parts, n * (part_index + 1) // num_parts)
        if shuffle:
            np.random.RandomState(seed).shuffle(order)
        data = images[order].astype(np.float32) * np.float32(1.0 / 256)
        data = data.reshape(len(order), -1) if flat else data[:, None]
        super().__init__(data, labels[order].astype(np.float32), int(batch_size), data_name,
                         label_name)

    def reset(self) -> None:
        self._cursor = 0

    def iter_next(self) -> bool:
        end = self._cursor + self.batch_size
        if end > len(self._data):
            return False
        self._buf_data[...] = self._data[self._cursor:end]
        self._buf_label[...] = self._label[self._cursor:end]
        self._cursor = end
        return True
