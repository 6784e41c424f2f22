"""`mxnet.io.io`: MXNet's module path of the data iterators, for code that imports them from
it (`from mxnet.io.io import DataIter`). The classes live in this package's other files."""
from __future__ import annotations

from .base import DataBatch, DataDesc, DataIter, MXDataIter
from .file_iters import CSVIter, MNISTIter
from .image_det_record import ImageDetRecordIter
from .image_record import ImageRecordIter
from .image_record_variants import (
    ImageRecordInt8Iter,
    ImageRecordIter_v1,
    ImageRecordUInt8Iter,
    ImageRecordUInt8Iter_v1,
)
from .libsvm import LibSVMIter
from .ndarray_iter import NDArrayIter
from .wrappers import PrefetchingIter, ResizeIter

__all__ = ["CSVIter", "DataBatch", "DataDesc", "DataIter", "ImageDetRecordIter",
           "ImageRecordInt8Iter", "ImageRecordIter", "ImageRecordIter_v1",
           "ImageRecordUInt8Iter", "ImageRecordUInt8Iter_v1", "LibSVMIter", "MNISTIter",
           "MXDataIter", "NDArrayIter", "PrefetchingIter", "ResizeIter"]
