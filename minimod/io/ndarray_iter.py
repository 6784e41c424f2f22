"""NDArrayIter: batches over in-memory arrays, with MXNet's three ways to end an epoch ('pad',
'discard', 'roll_over'), and `shard_positions`, the strided split of samples across workers.

CSR data (a CSRNDArray or a SciPy sparse matrix) gives CSR batches, with 'discard' only, as in
MXNet.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Optional

import numpy as np

from ..base import MXNetError
from ..ndarray import NDArray, sparse
from ..ndarray import array as nd_array
from ..ndarray.core import device_scope, wrap
from .base import DataBatch, DataDesc, DataIter, DataIterError, DataTypeError

_LAST_BATCH_HANDLES = ("pad", "discard", "roll_over")


def _init_data(data: Any, allow_empty: bool, default_name: str,
               what: str) -> list[tuple[str, NDArray]]:
    """Normalise iterator input to `[(name, NDArray), ...]` sorted by name.

    An array becomes `[(default_name, array)]`; a list of one array likewise; a longer list is
    named `_0_<default_name>`, `_1_<default_name>` ...; a dict keeps its keys. Anything but an
    NDArray is converted with `mx.nd.array` (so NumPy float64/int64 become float32).
    """
    if data is None:
        data = []
    if isinstance(data, (np.ndarray, NDArray)) or _is_scipy(data):
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
        if _is_scipy(value):
            value = sparse.array(value)
        elif not isinstance(value, NDArray):
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


def _count_samples(data: list, label: list, last_batch_handle: str) -> int:
    """The number of samples (the first axis of the first data array), once every input is
    checked to have as many and csr inputs to come with 'discard' (MXNet's rule)."""
    inputs = data + label
    if last_batch_handle != "discard" and any(arr.stype == "csr" for _, arr in inputs):
        raise NotImplementedError("NDArrayIter: csr data takes last_batch_handle='discard' "
                                  "only, got %r" % last_batch_handle)
    first, count = data[0][0], int(data[0][1].shape[0])
    if count == 0:
        raise DataIterError(f"NDArrayIter: data {first!r} has no samples "
                            f"(shape {data[0][1].shape})")
    for name, arr in inputs:
        if arr.shape[0] < count:
            raise DataIterError(f"NDArrayIter: {name!r} has {arr.shape[0]} samples but "
                                f"{first!r} has {count}; every input needs as many")
    return count


def _is_scipy(value) -> bool:
    return type(value).__module__.startswith("scipy.sparse")


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
    if isinstance(arr, sparse.CSRNDArray):  # rows of a csr array stay csr
        if isinstance(positions, slice):
            return arr[positions]
        return arr.take_rows(positions)
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
        self.num_data = _count_samples(self.data, self.label, last_batch_handle)
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
        if isinstance(arr, sparse.CSRNDArray):
            return _take(arr, 0, self.idx).astype(np.float32, copy=False)
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
