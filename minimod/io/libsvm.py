"""LibSVMIter: batches of a LibSVM text file as CSR arrays, MXNet's `mx.io.LibSVMIter`.

A line is `label index:value index:value ...` with 0-based feature indices (blank lines are
skipped, a line with the label alone is an empty row). The file is parsed whole, without a
Python loop over its entries: the tokens of the file are split at once, a token without ':'
starts a row, and the `index:value` pairs convert as arrays. Rows keep their entries in the
file's order, as MXNet's CSR batches do.

`num_parts` / `part_index` split a file as MXNet's text reader does: by bytes, into parts of
ceil(size / num_parts) bytes, a line belonging to the part that holds the byte before it (the
newline ending the previous line); the label file is split the same way by its own bytes.

Differences from MXNet, each where MXNet would give wrong numbers or fail later: a feature
index outside `data_shape` (MXNet writes it into the next row) and a batch larger than the
file's rows (MXNet fails on the second epoch) are refused with the file named.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

from ..context import cpu
from ..ndarray import NDArray
from ..ndarray import array as nd_array
from ..ndarray.sparse import codec
from ..ndarray.sparse.arrays import make_sparse
from .base import DataDesc, DataIterError
from .file_iters import OneArrayBatches, RoundBatches, _read_file

__all__ = ["LibSVMIter"]


def _part_of(raw: bytes, num_parts: int, part_index: int) -> bytes:
    """The lines of `raw` that MXNet's reader gives part `part_index` of `num_parts`."""
    if num_parts == 1:
        return raw
    step = max(1, math.ceil(len(raw) / num_parts))
    ends = np.flatnonzero(np.frombuffer(raw, np.uint8) == ord("\n"))
    starts = np.concatenate([[0], ends + 1])
    starts = starts[starts < len(raw)]
    owner = np.where(starts == 0, 0, (starts - 1) // step)
    mine = starts[owner == part_index]
    if not mine.size:
        return b""
    after = starts[starts > mine[-1]]
    return raw[mine[0]:after[0] if after.size else len(raw)]


def _parse(raw: bytes, width: int, what: str, path: str):
    """(labels float32 (rows,), values float32, indptr int64, column indices int64) of the
    LibSVM text `raw`, every column checked against `width`."""
    tokens = np.array(raw.decode("utf-8", errors="replace").split())
    if not tokens.size:
        raise DataIterError("%s: '%s' holds no rows" % (what, path))
    is_pair = np.char.find(tokens, ":") >= 0
    if is_pair[0]:
        raise DataIterError("%s: '%s' starts with '%s', not a label" % (what, path, tokens[0]))
    row_of = np.cumsum(~is_pair)[is_pair] - 1
    index, _, value = (np.char.partition(tokens[is_pair], ":").T if is_pair.any()
                       else (np.array([], str),) * 3)
    try:
        labels = tokens[~is_pair].astype(np.float32)
        cols, values = index.astype(np.int64), value.astype(np.float32)
    except ValueError as err:
        raise DataIterError("%s: '%s' is not LibSVM text (0-based 'label index:value ...' "
                            "lines): %s" % (what, path, err)) from None
    bad = np.flatnonzero((cols < 0) | (cols >= width))
    if bad.size:
        raise DataIterError("%s: row %d of '%s' has feature index %d, outside the shape's "
                            "[0, %d)" % (what, row_of[bad[0]], path, cols[bad[0]], width))
    indptr = np.zeros(len(labels) + 1, np.int64)
    np.cumsum(np.bincount(row_of, minlength=len(labels)), out=indptr[1:])
    return labels, values, indptr, cols


class LibSVMIter(OneArrayBatches):
    """Batches of `batch_size` rows of the LibSVM file `data_libsvm` as CSRNDArrays of shape
    (batch_size,) + `data_shape` (see the module docstring). The labels are each line's
    first number, shape (batch_size,); with `label_libsvm`, a second LibSVM file whose rows
    (their own leading numbers ignored) are CSR labels of shape (batch_size,) + `label_shape`.
    The last batch of an epoch is completed with the first rows (`pad` says how many) and the
    next epoch starts after them, as in MXNet, which has no `round_batch=False` here either.
    `getindex()` gives the rows' numbers in the part. `prefetch_buffer` and `ctx` (where
    MXNet's reader thread prefetches) change nothing here; any other keyword is refused."""

    def __init__(self, data_libsvm: str, data_shape: Sequence[int],
                 label_libsvm: Optional[str] = None, label_shape: Sequence[int] = (1,),
                 num_parts: int = 1, part_index: int = 0, batch_size: int = 1,
                 round_batch: bool = True, data_name: str = "data",
                 label_name: str = "softmax_label", prefetch_buffer: int = 4,
                 ctx: Any = None, dtype: Any = None):
        super().__init__(int(batch_size))
        if dtype not in (None, "float32", np.float32):
            raise DataIterError("LibSVMIter: dtype=%r: the batches are float32" % (dtype,))
        data_shape, label_shape = tuple(data_shape), tuple(label_shape)
        if len(data_shape) != 1 or (label_libsvm and len(label_shape) != 1):
            raise DataIterError("LibSVMIter: data_shape %s and label_shape %s must be 1-D (the "
                                "number of features)" % (data_shape, label_shape))
        if not round_batch:
            raise DataIterError("LibSVMIter: round_batch=False is not supported (MXNet's "
                                "sparse batch loader refuses it too)")
        if label_libsvm is None and label_shape != (1,):
            raise DataIterError("LibSVMIter: label_shape must be (1,) without label_libsvm, "
                                "got %s" % (label_shape,))
        if not 0 <= int(part_index) < int(num_parts):
            raise DataIterError("LibSVMIter: part_index=%r is not in [0, num_parts=%r)"
                                % (part_index, num_parts))
        self._data = self._load(data_libsvm, data_shape[0], num_parts, part_index, "data")
        rows = len(self._data[0])
        self._label = None
        if label_libsvm is not None:
            self._label = self._load(label_libsvm, label_shape[0], num_parts, part_index,
                                     "label")
            if len(self._label[0]) != rows:
                raise DataIterError("LibSVMIter: '%s' has %d rows but '%s' has %d" % (
                    label_libsvm, len(self._label[0]), data_libsvm, rows))
        if rows < self.batch_size:
            raise DataIterError("LibSVMIter: '%s' has %d rows (in part %d of %d), fewer than "
                                "batch_size=%d" % (data_libsvm, rows, part_index, num_parts,
                                                   self.batch_size))
        self._shapes = ((self.batch_size,) + data_shape, (self.batch_size,) + label_shape
                        if label_libsvm else (self.batch_size,))
        self.provide_data = [DataDesc(data_name, self._shapes[0], np.float32)]
        self.provide_label = [DataDesc(label_name, self._shapes[1], np.float32)]
        self._batches, self._rows = RoundBatches(rows, self.batch_size, True), None

    @staticmethod
    def _load(path, width, num_parts, part_index, which):
        what = "LibSVMIter %s_libsvm" % which
        return _parse(_part_of(_read_file(path, what), int(num_parts), int(part_index)),
                      int(width), what, path)

    def reset(self) -> None:
        self._batches.reset()

    def iter_next(self) -> bool:
        batch = self._batches.advance()
        if batch is None:
            return False
        start, stop, wrapped = batch
        self._rows = np.concatenate([np.arange(start, stop), np.arange(wrapped)])
        self._pad = self._batches.pad
        return True

    def _csr(self, parts, shape) -> NDArray:
        _, values, indptr, cols = parts
        values, indptr, cols = codec.csr_take_rows(np, values, indptr, cols, self._rows)
        return make_sparse("csr", values, (indptr, cols), shape, cpu())

    def getdata(self) -> NDArray:
        return self._csr(self._data, self._shapes[0])

    def getlabel(self) -> NDArray:
        if self._label is not None:
            return self._csr(self._label, self._shapes[1])
        return nd_array(self._data[0][self._rows], dtype=np.float32)

    def getindex(self) -> np.ndarray:
        return self._rows.astype(np.uint64)
