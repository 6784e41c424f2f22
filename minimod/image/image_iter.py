"""`mx.image.ImageIter`: MXNet's Python image iterator, over a RecordIO file (`path_imgrec`,
with `path_imgidx` for random access), an image list file (`path_imglist`: "index<TAB>
labels...<TAB>path" lines, images under `path_root`) or an in-memory `imglist` of
[labels, path] entries. Each image is decoded (RGB), passed through `aug_list` (default:
`CreateAugmenter(data_shape, **kwargs)`) and transposed to (c, h, w).

Batches follow MXNet's: records in file or list order (`shuffle` reshuffles the keys with
Python's `random` at every reset), `num_parts` equal slices of the keys (the remainder is
dropped), and the last batch of an epoch handled by `last_batch_handle`: 'pad' completes it
from the start of the data (`pad` counts those rows) and ends the epoch, 'discard' drops it,
'roll_over' keeps it to complete with the next epoch's first images. The data is float32 and
`dtype` is the labels' type, as in MXNet 1.9.1. Where minimod bends MXNet: the rolled-over
batch has pad 0 (its rows are all images it trains on; MXNet counts the new epoch's rows as
padding, so a metric leaves them out).
"""
from __future__ import annotations

import logging
import os
import random
from typing import Optional

import numpy as np

from ..base import MXNetError, ShapeError
from ..io.base import DataBatch, DataDesc, DataIter
from ..io.image_files import read_imglist
from ..ndarray import array as nd_array
from ..ndarray import zeros as nd_zeros
from ..ndarray.routines.shapes import transpose
from ..recordio import MXIndexedRecordIO, MXRecordIO, unpack
from .augmenters import CreateAugmenter
from .functions import imdecode

__all__ = ["ImageIter"]


def _read_list(path: str, dtype: str) -> tuple:
    """({key: (labels, image path)}, keys in file order) of an image list file
    (`io.image_files.read_imglist`)."""
    entries = {key: (nd_array(labels, dtype=dtype), image)
               for key, (labels, image) in read_imglist(path).items()}
    return entries, list(entries)


def _from_list(imglist: list, dtype: str) -> tuple:
    """({key: (labels, image path)}, keys) of in-memory [label(s)..., path] entries, keyed
    "1", "2" ... as MXNet keys them."""
    entries = {}
    for index, item in enumerate(imglist, 1):
        if len(item) > 2:
            labels = list(item[:-1])
        elif isinstance(item[0], (int, float, np.number)):
            labels = [item[0]]
        else:
            labels = item[0]
        entries[str(index)] = (nd_array(labels, dtype=dtype), item[-1])
    return entries, list(entries)


def _check(has_source: bool, dtype: str, last_batch_handle: str) -> None:
    if not has_source:
        raise MXNetError("ImageIter needs path_imgrec, path_imglist or an imglist list")
    if dtype not in ("int32", "float32", "int64", "float64"):
        raise MXNetError("ImageIter: dtype must be int32, float32, int64 or float64, got %r"
                         % (dtype,))
    if last_batch_handle not in ("pad", "discard", "roll_over"):
        raise MXNetError("ImageIter: last_batch_handle must be 'pad', 'discard' or "
                         "'roll_over', got %r" % (last_batch_handle,))


class ImageIter(DataIter):
    """Batches of augmented images; see the module docstring."""

    def __init__(self, batch_size: int, data_shape: tuple, label_width: int = 1,
                 path_imgrec: Optional[str] = None, path_imglist: Optional[str] = None,
                 path_root: Optional[str] = None, path_imgidx: Optional[str] = None,
                 shuffle: bool = False, part_index: int = 0, num_parts: int = 1,
                 aug_list: Optional[list] = None, imglist: Optional[list] = None,
                 data_name: str = "data", label_name: str = "softmax_label",
                 dtype: str = "float32", last_batch_handle: str = "pad", **kwargs):
        super().__init__(batch_size)
        _check(path_imgrec or path_imglist or isinstance(imglist, list), dtype,
               last_batch_handle)
        self.check_data_shape(data_shape)  # a method, as MXNet's: subclasses may widen it
        self.imgrec = self.imgidx = None
        if path_imgrec and path_imgidx:
            self.imgrec = MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
            self.imgidx = list(self.imgrec.keys)
        elif path_imgrec:
            self.imgrec = MXRecordIO(path_imgrec, "r")
        self.imglist, keys = None, []
        if path_imglist:
            self.imglist, keys = _read_list(path_imglist, dtype)
        elif isinstance(imglist, list):
            self.imglist, keys = _from_list(imglist, dtype)
        self.path_root, self.shuffle = path_root or "", shuffle
        self.data_shape, self.label_width, self.dtype = tuple(data_shape), label_width, dtype
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self.provide_data = [DataDesc(data_name, (batch_size,) + self.data_shape)]
        self.provide_label = [DataDesc(label_name, label_shape)]
        self.seq = self._keys(keys, shuffle, num_parts, part_index)
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.last_batch_handle = last_batch_handle
        self.num_image = None if self.seq is None else len(self.seq)
        self.cur, self._allow_read = 0, True
        self._cache = None  # roll_over: (data, label, rows filled)
        self.reset()

    def _keys(self, keys: list, shuffle: bool, num_parts: int, part_index: int
              ) -> Optional[list]:
        if self.imgrec is None:
            seq = keys
        elif shuffle or num_parts > 1 or self.imgidx is not None:
            if self.imgidx is None:
                raise MXNetError("ImageIter: shuffle and num_parts over a RecordIO file need "
                                 "its index (path_imgidx)")
            seq = list(self.imgidx)
        else:
            return None
        if num_parts > 1:
            size = len(seq) // num_parts
            seq = seq[part_index * size:(part_index + 1) * size]
        return seq

    def reset(self) -> None:
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != "roll_over" or self._cache is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
        self._allow_read = True

    def hard_reset(self) -> None:
        """Back to the start, dropping a rolled-over batch."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.imgrec is not None:
            self.imgrec.reset()
        self.cur, self._cache, self._allow_read = 0, None, True

    def next_sample(self) -> tuple:
        """(label, encoded image) of the next image; StopIteration at the end of the data
        (which goes back to the start unless last_batch_handle is 'discard')."""
        if not self._allow_read:
            raise StopIteration
        if self.seq is None:
            record = self.imgrec.read()
            if record is None:
                if self.last_batch_handle != "discard":
                    self.imgrec.reset()
                raise StopIteration
            header, img = unpack(record)
            return header.label, img
        if self.cur >= self.num_image:
            if self.last_batch_handle != "discard":
                self.cur = 0
            raise StopIteration
        idx = self.seq[self.cur]
        self.cur += 1
        if self.imgrec is not None:
            header, img = unpack(self.imgrec.read_idx(idx))
            return (header.label if self.imglist is None else self.imglist[idx][0]), img
        label, fname = self.imglist[idx]
        return label, self.read_image(fname)

    def _batchify(self, data, label, start: int = 0) -> int:
        """Fill rows start.. of the batch; the number of rows filled (StopIteration when the
        data ends before the first)."""
        i = start
        try:
            while i < self.batch_size:
                lab, raw = self.next_sample()
                image = self.imdecode(raw)
                try:
                    self.check_valid_image(image)
                except RuntimeError as err:
                    logging.debug("Invalid image, skipping: %s", err)
                    continue
                data[i] = self.postprocess_data(self.augmentation_transform(image))
                label[i] = lab
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def next(self) -> DataBatch:
        if self._cache is not None:  # roll_over: the last epoch's short batch, completed
            data, label, filled = self._cache
            self._batchify(data, label, filled)
            self._cache = None
            return DataBatch([data], [label], pad=0)
        data = nd_zeros(self.provide_data[0].shape)
        label = self._empty_label()
        i = self._batchify(data, label)
        pad = self.batch_size - i
        if pad:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache is None:
                self._cache = (data, label, i)
                raise StopIteration
            self._batchify(data, label, i)
            self._allow_read = False
        return DataBatch([data], [label], pad=pad)

    def _empty_label(self):
        """The label array a new batch starts from."""
        return nd_zeros(self.provide_label[0].shape)

    def check_data_shape(self, data_shape: tuple) -> None:
        if len(data_shape) != 3 or data_shape[0] != 3:
            raise ShapeError("ImageIter: data_shape must be (3, height, width), got %r"
                             % (data_shape,))

    def check_valid_image(self, data) -> None:
        if len(data.shape) == 0:
            raise RuntimeError("Data shape is wrong")

    def imdecode(self, s):
        """The encoded image `s` decoded (RGB)."""
        try:
            return imdecode(s)
        except MXNetError as err:
            raise RuntimeError("%s, what: %s" % (err, self._where())) from None

    def _where(self) -> str:
        if self.seq is not None and self.cur:
            return "record %s" % self.seq[self.cur - 1]
        return "the current record"

    def read_image(self, fname: str) -> bytes:
        with open(os.path.join(self.path_root, fname), "rb") as f:
            return f.read()

    def augmentation_transform(self, data):
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        return transpose(datum, axes=(2, 0, 1))
