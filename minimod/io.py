"""`mx.io`: data descriptions, batches and the pure-Python data iterators of MXNet 1.9.1.

`DataDesc` names one input (name, shape, dtype, layout); `DataBatch` carries one batch;
`DataIter` is the protocol every iterator follows (`next()` returns a DataBatch or raises
StopIteration, `reset()` starts a new epoch). The iterators:

* `NDArrayIter` walks in-memory arrays batch by batch, with MXNet's three ways to end an epoch
  whose size is not a multiple of the batch ('pad', 'discard', 'roll_over'), reproduced batch
  for batch, cursor for cursor (tests compare against batches MXNet 1.9.1 produced).
* `ResizeIter` gives a fixed number of batches per epoch, restarting its inner iterator.
* `PrefetchingIter` reads the next batch of several iterators in background threads.

MXNet's C++ iterators (`MXDataIter`, `ImageRecordIter`, `CSVIter` ...) are not provided.

Where minimod bends MXNet:

* An NDArrayIter over zero samples, or with no data, raises DataIterError (MXNet yields empty
  epochs or fails on an assert); an input with fewer samples than the first one is an error
  naming it (MXNet returns short batches that fail later).
* `ResizeIter.next()` and `PrefetchingIter.next()` keep the inner batch's `bucket_key`
  (MXNet drops it, which breaks BucketingModule behind them).
* `PrefetchingIter` renames plain (name, shape) tuples too and keeps each DataDesc's layout
  (MXNet resets it to 'NCHW'); an exception inside a prefetch thread is re-raised by `next()`
  instead of hanging; its threads stop when the iterator is garbage collected.
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

from .base import MXNetError
from .ndarray import NDArray
from .ndarray import array as nd_array
from .ndarray.ndarray import device_scope, wrap

__all__ = [
    "CSVIter", "DataBatch", "DataDesc", "DataIter", "DataIterError", "DataTypeError",
    "MNISTIter", "NDArrayIter", "PrefetchingIter", "ResizeIter",
]

_LAST_BATCH_HANDLES = ("pad", "discard", "roll_over")


class DataIterError(MXNetError, ValueError):
    """A data iterator given inputs or arguments it cannot work with."""


class DataTypeError(MXNetError, TypeError):
    """A data iterator or batch given an object of the wrong type."""


# ---------------------------------------------------------------------------------- records

class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """The name and shape of one input, plus its `dtype` and `layout`.

    A `(name, shape)` namedtuple, so it unpacks, indexes and compares like the tuple: dtype and
    layout take no part in equality or hashing. `layout` says what each axis of `shape` means
    ('NCHW', 'NTC' ...); its 'N' marks the batch axis.
    """

    def __new__(cls, name: str, shape: Sequence[int], dtype: Any = np.float32,
                layout: str = "NCHW") -> DataDesc:
        desc = super().__new__(cls, name, shape)
        desc.dtype = dtype
        desc.layout = layout
        return desc

    def __repr__(self) -> str:
        return "DataDesc[%s,%s,%s,%s]" % (self.name, self.shape, self.dtype, self.layout)

    def __getnewargs__(self) -> tuple:
        return (self.name, self.shape, self.dtype, self.layout)

    @staticmethod
    def get_batch_axis(layout: Optional[str]) -> int:
        """The batch axis of `layout`: 0 for None, else the position of 'N' (-1 if absent,
        meaning the input is not split across devices)."""
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(shapes: Sequence[tuple], types: Optional[Sequence[tuple]]) -> list[DataDesc]:
        """DataDescs from `[(name, shape), ...]` and optional `[(name, dtype), ...]`."""
        if types is None:
            return [DataDesc(name, shape) for name, shape in shapes]
        dtype_of = dict(types)
        return [DataDesc(name, shape, dtype_of[name]) for name, shape in shapes]


class DataBatch:
    """One batch: lists of data and label NDArrays plus bookkeeping.

    `pad` counts the samples at the end of the batch that only fill it up (ignore them in
    predictions); `index` holds the sample indices when the iterator knows them; `bucket_key`,
    `provide_data` and `provide_label` are set by iterators feeding a BucketingModule.
    """

    def __init__(self, data: Optional[Sequence[NDArray]], label: Optional[Sequence[NDArray]] = None,
                 pad: Optional[int] = None, index: Any = None, bucket_key: Any = None,
                 provide_data: Optional[list] = None, provide_label: Optional[list] = None):
        for what, value in (("data", data), ("label", label)):
            if value is not None and not isinstance(value, (list, tuple)):
                raise DataTypeError(f"DataBatch {what} must be a list (or tuple) of NDArrays, "
                                    f"got {type(value).__name__}; wrap a single array "
                                    f"as [{what}]")
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self) -> str:
        data_shapes = [d.shape for d in self.data]
        label_shapes = [lbl.shape for lbl in self.label] if self.label else None
        return "%s: data shapes: %s label shapes: %s" % (type(self).__name__, data_shapes,
                                                         label_shapes)


# ---------------------------------------------------------------------------------- protocol

class DataIter:
    """Base class of data iterators.

    Subclasses either override `next()`, or implement `iter_next()` (advance; False at the end
    of the epoch) with `getdata()`, `getlabel()`, `getpad()` and `getindex()` describing the
    current batch, from which the default `next()` builds a DataBatch. `reset()` starts a new
    epoch. Iterating with `for batch in it` runs one epoch.
    """

    def __init__(self, batch_size: int = 0):
        self.batch_size = batch_size

    def __iter__(self) -> DataIter:
        return self

    def reset(self) -> None:
        """Go back to the start of the data."""

    def next(self) -> DataBatch:
        """The next batch; StopIteration at the end of the epoch."""
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(),
                             index=self.getindex())
        raise StopIteration

    def __next__(self) -> DataBatch:
        return self.next()

    def iter_next(self) -> Optional[bool]:
        """Advance to the next batch; whether there was one."""
        return None

    def getdata(self) -> Optional[list]:
        """The data arrays of the current batch."""
        return None

    def getlabel(self) -> Optional[list]:
        """The label arrays of the current batch."""
        return None

    def getindex(self) -> Any:
        """The sample indices of the current batch, or None when unknown."""
        return None

    def getpad(self) -> Optional[int]:
        """How many samples at the end of the current batch are filler."""
        return None


# ---------------------------------------------------------------------------------- NDArrayIter

def _init_data(data: Any, allow_empty: bool, default_name: str,
               what: str) -> list[tuple[str, NDArray]]:
    """Normalise iterator input to `[(name, NDArray), ...]` sorted by name.

    An array becomes `[(default_name, array)]`; a list of one array likewise; a longer list is
    named `_0_<default_name>`, `_1_<default_name>` ...; a dict keeps its keys. Anything but an
    NDArray is converted with `mx.nd.array` (so NumPy float64/int64 become float32).
    """
    if data is None:
        data = []
    if isinstance(data, (np.ndarray, NDArray)):
        data = [data]
    if isinstance(data, list):
        if len(data) == 1:
            data = OrderedDict([(default_name, data[0])])
        else:
            data = OrderedDict(("_%d_%s" % (i, default_name), d) for i, d in enumerate(data))
    if not isinstance(data, Mapping):
        raise DataTypeError(f"NDArrayIter {what} must be an NDArray, a numpy.ndarray, a list of "
                            f"them or a dict with them as values, got {type(data).__name__}")
    if not data and not allow_empty:
        raise DataIterError(f"NDArrayIter needs at least one {what} array, got none")
    named = []
    for name, value in data.items():
        if not isinstance(value, NDArray):
            try:
                value = nd_array(value)
            except (TypeError, ValueError, MXNetError) as err:
                raise DataTypeError(f"NDArrayIter {what} {name!r}: cannot convert "
                                    f"{type(value).__name__} to an NDArray ({err})") from err
        if value.ndim == 0:
            raise DataIterError(f"NDArrayIter {what} {name!r} is a scalar; it needs a sample "
                                "axis")
        named.append((name, value))
    return sorted(named, key=lambda item: item[0])


def shard_positions(num_data: int, num_parts: int, part_index: int) -> np.ndarray:
    """The sample positions of part `part_index` of `num_parts` (strided, equal sizes).

    Part k takes samples k, k + P, k + 2P, ... Every part gets ceil(n / P) samples, the last
    parts wrapping around to the first samples when P does not divide n, so that every worker
    runs the same number of batches (workers running different numbers would wait forever in
    the gradient allreduce). Striding makes P workers with batch size b see, step for step,
    exactly the samples one process with batch size P * b sees (no shuffle, n a multiple of
    P * b), so distributed training reproduces single-process training.
    """
    per_part = -(-num_data // num_parts)
    return (part_index + num_parts * np.arange(per_part)) % num_data


def _check_part(num_parts: Any, part_index: Any, num_data: int) -> tuple[int, int]:
    try:
        parts, index = int(num_parts), int(part_index)
    except (TypeError, ValueError):
        raise DataIterError(f"NDArrayIter: num_parts and part_index must be integers, got "
                            f"{num_parts!r} and {part_index!r}") from None
    if parts < 1:
        raise DataIterError(f"NDArrayIter: num_parts must be at least 1, got {parts}")
    if not 0 <= index < parts:
        raise DataIterError(f"NDArrayIter: part_index must be in [0, {parts}) for "
                            f"num_parts={parts}, got {index}")
    if parts > num_data:
        raise DataIterError(f"NDArrayIter: num_parts={parts} is more than the {num_data} "
                            f"samples; every part needs at least one")
    return parts, index


def _take(arr: NDArray, axis: int, positions: Any) -> NDArray:
    """A copy of `arr` at sample `positions` along `axis` (a slice or an index array)."""
    data = arr._data
    with device_scope(arr.context):
        if isinstance(positions, slice):
            index = (slice(None),) * (axis % data.ndim) + (positions,)
            return wrap(data[index].copy(), arr.context)
        xp = arr._xp
        return wrap(xp.take(data, xp.asarray(positions), axis=axis), arr.context)


def _join(first: list[NDArray], second: list[NDArray], axis: int) -> list[NDArray]:
    """Concatenate two lists of arrays pairwise along `axis`."""
    if not first or not second:
        return first if first else second
    joined = []
    for head, tail in zip(first, second):
        with device_scope(head.context):
            joined.append(wrap(head._xp.concatenate([head._data, tail._data], axis=axis),
                               head.context))
    return joined


class NDArrayIter(DataIter):
    """Batches over in-memory arrays (NDArray or NumPy), MXNet 1.9.1's `mx.io.NDArrayIter`.

    `data` and `label` are an array, a list of arrays (named `_0_data`, `_1_data` ... after
    `data_name`/`label_name`; a one-element list takes the plain name) or a dict name -> array.
    Inputs are ordered by name. The number of samples is the first axis of the first input.

    At the end of an epoch whose sample count is not a multiple of `batch_size`:

    * 'pad': the last batch is filled up with samples from the start (`batch.pad` says how
      many); the next epoch starts from the beginning again.
    * 'discard': the incomplete last batch is dropped.
    * 'roll_over': the incomplete last batch is kept back and, after `reset()`, completed with
      the first samples of the next epoch (that batch reports `pad` = the number of samples
      carried over, as MXNet does); the epoch then continues from there. `hard_reset()` drops
      the carried samples and starts from the beginning.

    With `shuffle=True` the samples are permuted with NumPy's global `np.random` at
    construction and at every `reset()`; like MXNet, the permuted copy is made with
    `mx.nd.array`, so shuffled inputs become float32.

    `num_parts`/`part_index` (MXNet has them on its C++ iterators; an extension here) make the
    iterator walk only its worker's shard, for distributed training (`kv.num_workers`,
    `kv.rank`): see `shard_positions`. Shuffling then permutes the shard.
    """

    def __init__(self, data: Any, label: Any = None, batch_size: int = 1, shuffle: bool = False,
                 last_batch_handle: str = "pad", data_name: str = "data",
                 label_name: str = "softmax_label", layout: str = "NCHW",
                 num_parts: int = 1, part_index: int = 0):
        super().__init__(batch_size)
        if last_batch_handle not in _LAST_BATCH_HANDLES:
            raise DataIterError(f"NDArrayIter: last_batch_handle must be one of "
                                f"{_LAST_BATCH_HANDLES}, got {last_batch_handle!r}")
        if int(batch_size) < 1:
            raise DataIterError(f"NDArrayIter: batch_size must be positive, got {batch_size}")
        self.data = _init_data(data, allow_empty=False, default_name=data_name, what="data")
        self.label = _init_data(label, allow_empty=True, default_name=label_name, what="label")
        self.num_data = int(self.data[0][1].shape[0])
        if self.num_data == 0:
            raise DataIterError(f"NDArrayIter: data {self.data[0][0]!r} has no samples "
                                f"(shape {self.data[0][1].shape})")
        for name, arr in self.data + self.label:
            if arr.shape[0] < self.num_data:
                raise DataIterError(
                    f"NDArrayIter: {name!r} has {arr.shape[0]} samples but "
                    f"{self.data[0][0]!r} has {self.num_data}; every input needs as many")
        self.num_parts, self.part_index = _check_part(num_parts, part_index, self.num_data)
        if self.num_parts > 1:
            positions = shard_positions(self.num_data, self.num_parts, self.part_index)
            axis = max(layout.find("N"), 0)
            self.data = [(name, _take(arr, axis, positions)) for name, arr in self.data]
            self.label = [(name, _take(arr, axis, positions)) for name, arr in self.label]
            self.num_data = len(positions)
        self.idx = np.arange(self.num_data)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.batch_size = int(batch_size)
        self.layout = layout
        self.cursor = -self.batch_size
        self._cache_data: Optional[list] = None
        self._cache_label: Optional[list] = None
        self.reset()
        self.data_list = [arr for _, arr in self.data] + [arr for _, arr in self.label]
        self.num_source = len(self.data_list)

    # ------------------------------------------------------------------ descriptions
    def _describe(self, sources: list[tuple[str, NDArray]]) -> list[DataDesc]:
        axis = self.layout.find("N")
        return [DataDesc(name, tuple(list(arr.shape[:axis]) + [self.batch_size]
                                     + list(arr.shape[axis + 1:])), arr.dtype, layout=self.layout)
                for name, arr in sources]

    @property
    def provide_data(self) -> list[DataDesc]:
        """One DataDesc per data input, with the batch size on the layout's batch axis."""
        return self._describe(self.data)

    @property
    def provide_label(self) -> list[DataDesc]:
        """One DataDesc per label input, with the batch size on the layout's batch axis."""
        return self._describe(self.label)

    # ------------------------------------------------------------------ epochs
    def hard_reset(self) -> None:
        """Start from the first sample, dropping any samples kept back by 'roll_over'."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_data = None
        self._cache_label = None

    def reset(self) -> None:
        """Start a new epoch (after the samples kept back by 'roll_over', if any)."""
        if self.shuffle:
            self._shuffle_data()
        if (self.last_batch_handle == "roll_over"
                and self.num_data - self.batch_size < self.cursor < self.num_data):
            # Step back by the number of kept-back samples so the first batch makes room for
            # them: the cursor lands on -(kept back) after the next iter_next.
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def _shuffle_data(self) -> None:
        # MXNet shuffles `idx` in place and permutes the already permuted arrays with it.
        np.random.shuffle(self.idx)
        self.data = [(name, self._permuted(arr)) for name, arr in self.data]
        self.label = [(name, self._permuted(arr)) for name, arr in self.label]

    def _permuted(self, arr: NDArray) -> NDArray:
        with device_scope(arr.context):
            rows = arr._xp.take(arr._data, arr._xp.asarray(self.idx), axis=0)
        return wrap(rows.astype(np.float32, copy=False), arr.context)

    def iter_next(self) -> bool:
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self) -> DataBatch:
        if not self.iter_next():
            raise StopIteration
        data = self.getdata()
        label = self.getlabel()
        if data[0].shape[self.layout.find("N")] != self.batch_size:
            # An incomplete last batch ('discard', 'roll_over'): keep it for roll_over's reset.
            self._cache_data = data
            self._cache_label = label
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    # ------------------------------------------------------------------ batches
    def _batchify(self, sources: list[tuple[str, NDArray]], cache_attr: str) -> list[NDArray]:
        if self.cursor >= self.num_data:
            raise DataIterError("NDArrayIter: the epoch is over; call reset() first")
        axis = self.layout.find("N")
        arrays = [arr for _, arr in sources]
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            cached = getattr(self, cache_attr)
            if cached is None:
                raise DataIterError("NDArrayIter: no kept-back samples to roll over; the "
                                    "previous epoch was not iterated to its end")
            setattr(self, cache_attr, None)
            head = [_take(arr, axis, slice(0, self.cursor + self.batch_size)) for arr in arrays]
            return _join(cached, head, axis)
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            positions = np.arange(self.cursor, self.cursor + self.batch_size) % self.num_data
            return [_take(arr, axis, positions) for arr in arrays]
        end = min(self.cursor + self.batch_size, self.num_data)
        return [_take(arr, axis, slice(self.cursor, end)) for arr in arrays]

    def getdata(self) -> list[NDArray]:
        """The data arrays of the current batch (copies)."""
        return self._batchify(self.data, "_cache_data")

    def getlabel(self) -> list[NDArray]:
        """The label arrays of the current batch (copies)."""
        return self._batchify(self.label, "_cache_label")

    def getpad(self) -> int:
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0


# ---------------------------------------------------------------------------------- ResizeIter

class _FileBatches(DataIter):
    """Batches of in-memory rows read from files (CSVIter, MNISTIter): one data and one label
    input, copied batch by batch into persistent host buffers."""

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
        self._cursor, self._pad = 0, 0

    def next(self) -> DataBatch:
        if self.iter_next():
            return DataBatch(data=[self.getdata()], label=[self.getlabel()], pad=self.getpad(),
                             index=self.getindex())
        raise StopIteration

    # MXNet's file iterators (its C++ MXDataIter) have one data and one label input and
    # give each as one NDArray here, where NDArrayIter gives lists
    def getdata(self) -> NDArray:
        return nd_array(self._buf_data, dtype=self._buf_data.dtype)

    def getlabel(self) -> NDArray:
        return nd_array(self._buf_label, dtype=self._buf_label.dtype)

    def getpad(self) -> int:
        return self._pad


def _read_file(path: str, what: str) -> bytes:
    """The bytes of `path` (gunzipped when it is gzip data), or a DataIterError naming it."""
    import gzip

    from .ndarray.serialization import read_file
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
    (MXNet streams them). `prefetch_buffer`, `ctx` and the other C++ options are accepted and
    ignored.
    """

    def __init__(self, data_csv: str, data_shape: Sequence[int], label_csv: Optional[str] = None,
                 label_shape: Sequence[int] = (1,), batch_size: int = 1,
                 round_batch: bool = True, dtype: Any = None, data_name: str = "data",
                 label_name: str = "softmax_label", **_ignored: Any):
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
        self._next_start = 0

    def reset(self) -> None:
        self._cursor, self._next_start = self._next_start, 0

    def iter_next(self) -> bool:
        n = len(self._data)
        if self._cursor >= n:
            return False
        take = min(self.batch_size, n - self._cursor)
        rows = slice(self._cursor, self._cursor + take)
        self._buf_data[:take], self._buf_label[:take] = self._data[rows], self._label[rows]
        self._pad = self.batch_size - take
        if self._pad and self.round_batch:
            head = slice(0, self._pad)  # the next epoch's first rows (pad < batch <= n)
            self._buf_data[take:], self._buf_label[take:] = self._data[head], self._label[head]
            self._next_start = self._pad
        self._cursor += take
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
    the part_index-th of num_parts contiguous shares, as MXNet does.
    """

    def __init__(self, image: str = "./train-images-idx3-ubyte",
                 label: str = "./train-labels-idx1-ubyte", batch_size: int = 128,
                 shuffle: bool = True, flat: bool = False, seed: int = 0, silent: bool = False,
                 num_parts: int = 1, part_index: int = 0, data_name: str = "data",
                 label_name: str = "softmax_label", **_ignored: Any):
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


class ResizeIter(DataIter):
    """`size` batches per epoch from `data_iter`, restarting it whenever it runs out.

    `reset()` resets the inner iterator too unless `reset_internal` is False (then the next
    epoch continues where the inner iterator stopped).
    """

    def __init__(self, data_iter: DataIter, size: int, reset_internal: bool = True):
        super().__init__()
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch: Optional[DataBatch] = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self) -> None:
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self) -> bool:
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True

    def next(self) -> DataBatch:
        if not self.iter_next():
            raise StopIteration
        inner = self.current_batch
        return DataBatch(data=inner.data, label=inner.label, pad=inner.pad, index=inner.index,
                         bucket_key=getattr(inner, "bucket_key", None),
                         provide_data=getattr(inner, "provide_data", None),
                         provide_label=getattr(inner, "provide_label", None))

    def getdata(self) -> list:
        return self.current_batch.data

    def getlabel(self) -> list:
        return self.current_batch.label

    def getindex(self) -> Any:
        return self.current_batch.index

    def getpad(self) -> Optional[int]:
        return self.current_batch.pad


# ---------------------------------------------------------------------------------- prefetching

class _Prefetcher:
    """A daemon thread that keeps the next batch of one iterator ready.

    `taken` is set when the consumer wants a new batch; the thread then fetches it (None at the
    end of the epoch, `error` when the iterator raised) and sets `ready`. The thread holds no
    reference to the PrefetchingIter, so dropping that iterator lets its finalizer stop us.
    """

    def __init__(self, data_iter: DataIter, number: int):
        self.data_iter = data_iter
        self.ready = threading.Event()
        self.taken = threading.Event()
        self.taken.set()
        self.running = True
        self.batch: Optional[DataBatch] = None
        self.error: Optional[BaseException] = None
        self.thread = threading.Thread(target=self._loop, daemon=True,
                                       name="minimod-prefetch-%d" % number)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            self.taken.wait()
            if not self.running:
                return
            try:
                self.batch, self.error = self.data_iter.next(), None
            except StopIteration:
                self.batch, self.error = None, None
            except BaseException as err:  # handed to the consumer thread, raised there
                self.batch, self.error = None, err
            self.taken.clear()
            if not self.running:
                return
            self.ready.set()

    def wait(self) -> None:
        self.ready.wait()

    def request(self) -> None:
        self.ready.clear()
        self.taken.set()

    def stop(self) -> None:
        self.running = False
        self.taken.set()
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout=10)


def _stop_prefetchers(prefetchers: list[_Prefetcher]) -> None:
    for prefetcher in prefetchers:
        prefetcher.stop()


def _renamed(descs: list, renames: Optional[Mapping[str, str]], what: str) -> list:
    if renames is None:
        return list(descs)
    out = []
    for desc in descs:
        if not isinstance(desc, DataDesc):
            desc = DataDesc(*desc)
        if desc.name not in renames:
            raise DataIterError(f"PrefetchingIter: {what} {desc.name!r} has no entry in its "
                                f"rename dict {dict(renames)}")
        out.append(DataDesc(renames[desc.name], desc.shape, desc.dtype, desc.layout))
    return out


class PrefetchingIter(DataIter):
    """Reads ahead from one or more iterators, one background thread each.

    Each batch concatenates the data lists (and label lists) of the inner iterators' batches,
    in order. `rename_data` / `rename_label` are lists with one dict per iterator mapping its
    input names to new names (every name of that iterator must appear). The inner iterators
    must yield the same number of batches with the same pad.
    """

    def __init__(self, iters: DataIter | list[DataIter],
                 rename_data: Optional[list[Mapping[str, str]]] = None,
                 rename_label: Optional[list[Mapping[str, str]]] = None):
        super().__init__()
        if not isinstance(iters, list):
            iters = [iters]
        if not iters:
            raise DataIterError("PrefetchingIter needs at least one iterator")
        for what, renames in (("rename_data", rename_data), ("rename_label", rename_label)):
            if renames is not None and len(renames) != len(iters):
                raise DataIterError(f"PrefetchingIter: {what} needs one dict per iterator "
                                    f"({len(iters)}), got {len(renames)}")
        self.n_iter = len(iters)
        self.iters = iters
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0][1][0]
        self.current_batch: Optional[DataBatch] = None
        self._prefetchers = [_Prefetcher(it, i) for i, it in enumerate(iters)]
        self._finalizer = weakref.finalize(self, _stop_prefetchers, self._prefetchers)

    @property
    def prefetch_threads(self) -> list[threading.Thread]:
        return [p.thread for p in self._prefetchers]

    def _combined(self, attr: str, renames: Optional[list], what: str) -> list:
        descs = []
        for i, it in enumerate(self.iters):
            descs += _renamed(getattr(it, attr), None if renames is None else renames[i], what)
        return descs

    @property
    def provide_data(self) -> list[DataDesc]:
        return self._combined("provide_data", self.rename_data, "data")

    @property
    def provide_label(self) -> list[DataDesc]:
        return self._combined("provide_label", self.rename_label, "label")

    def reset(self) -> None:
        for prefetcher in self._prefetchers:
            prefetcher.wait()
        for it in self.iters:
            it.reset()
        for prefetcher in self._prefetchers:
            prefetcher.request()

    def iter_next(self) -> bool:
        for prefetcher in self._prefetchers:
            prefetcher.wait()
        for i, prefetcher in enumerate(self._prefetchers):
            if prefetcher.error is not None:
                error, prefetcher.error = prefetcher.error, None
                raise DataIterError(f"PrefetchingIter: iterator {i} failed while prefetching: "
                                    f"{error!r}") from error
        batches = [p.batch for p in self._prefetchers]
        if batches[0] is None:
            if any(batch is not None for batch in batches):
                raise DataIterError("PrefetchingIter: the inner iterators have different "
                                    "numbers of batches")
            return False
        if any(batch is None or batch.pad != batches[0].pad for batch in batches):
            raise DataIterError("PrefetchingIter: the inner iterators are out of step "
                                "(different numbers of samples or pads)")
        first = batches[0]
        self.current_batch = DataBatch(
            sum((list(b.data) for b in batches), []),
            sum((list(b.label or []) for b in batches), []),
            first.pad, first.index, bucket_key=getattr(first, "bucket_key", None),
            provide_data=self.provide_data, provide_label=self.provide_label)
        for prefetcher in self._prefetchers:
            prefetcher.request()
        return True

    def next(self) -> DataBatch:
        if self.iter_next():
            return self.current_batch
        raise StopIteration

    def getdata(self) -> list:
        return self.current_batch.data

    def getlabel(self) -> list:
        return self.current_batch.label

    def getindex(self) -> Any:
        return self.current_batch.index

    def getpad(self) -> Optional[int]:
        return self.current_batch.pad
