"""The data records and the iterator protocol: DataDesc (one input's name, shape, dtype and
layout), DataBatch (one batch), DataIter (what every iterator implements), and the errors
iterators raise.
"""
from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

from ..base import MXNetError
from ..ndarray import NDArray


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


class MXDataIter(DataIter):
    """The base of the iterators MXNet implements in C++ (ImageRecordIter and its variants,
    ImageDetRecordIter, CSVIter, MNISTIter), so that `isinstance(it, mx.io.MXDataIter)` holds
    for them as in MXNet. MXNet builds one from a C handle; here each subclass is a Python
    iterator, and this class is not created directly."""

    def __init__(self, batch_size: int = 0):
        if type(self) is MXDataIter:
            raise TypeError("MXDataIter wraps a C++ iterator in MXNet and is not created "
                            "directly: use ImageRecordIter, CSVIter, MNISTIter ...")
        super().__init__(batch_size)
