"""`mx.io`: data descriptions, batches and the pure-Python data iterators of MXNet 1.9.1.

`DataDesc` names one input (name, shape, dtype, layout); `DataBatch` carries one batch;
`DataIter` is the protocol every iterator follows (`next()` returns a DataBatch or raises
StopIteration, `reset()` starts a new epoch). The iterators:

* `NDArrayIter` walks in-memory arrays batch by batch, with MXNet's three ways to end an epoch
  whose size is not a multiple of the batch ('pad', 'discard', 'roll_over'), reproduced batch
  for batch, cursor for cursor (tests compare against batches MXNet 1.9.1 produced).
* `ResizeIter` gives a fixed number of batches per epoch, restarting its inner iterator.
* `PrefetchingIter` reads the next batch of several iterators in background threads.
* `ImageRecordIter` (with `ImageRecordUInt8Iter`, its raw-pixel form, `ImageRecordInt8Iter`,
  its mean-subtracted int8 form, and the older `_v1` names) decodes and augments the
  images of a RecordIO file (OpenCV, the `image` extra), batch for batch as MXNet's C++
  iterator, and `ImageDetRecordIter` those of a detection file with their boxes; `CSVIter` and
  `MNISTIter` read their files as MXNet's do, and `LibSVMIter` gives a LibSVM file's rows as
  CSR batches. They derive from `MXDataIter`, the base of MXNet's C++ iterators.

The package: base.py (DataDesc, DataBatch, DataIter, MXDataIter, the errors), ndarray_iter.py
(NDArrayIter, shard_positions), file_iters.py (CSVIter, MNISTIter), libsvm.py (LibSVMIter),
image_record.py (ImageRecordIter), image_record_variants.py (its UInt8, Int8 and _v1 forms),
image_det_record.py (ImageDetRecordIter), image_files.py (records, image lists and the image
iterators' parameters), image_colour.py, image_windows.py and det_samplers.py (the random
augmentations), wrappers.py (ResizeIter, PrefetchingIter).

Where minimod bends MXNet:

* An NDArrayIter over zero samples, or with no data, raises DataIterError (MXNet yields empty
  epochs or fails on an assert); an input with fewer samples than the first one is an error
  naming it (MXNet returns short batches that fail later).
* `ResizeIter.next()` and `PrefetchingIter.next()` keep the inner batch's `bucket_key`
  (MXNet drops it, which breaks BucketingModule behind them).
* `PrefetchingIter` renames plain (name, shape) tuples too and keeps each DataDesc's layout
  (MXNet resets it to 'NCHW'); an exception inside a prefetch thread is re-raised by `next()`
  instead of hanging; its threads stop when the iterator is garbage collected.
* `ImageRecordIter` without `round_batch` pads its last batch with zeros and counts them in
  `pad` (MXNet leaves uninitialised memory and reports 0); see image_record.py for the
  augmentations it refuses.
"""
from __future__ import annotations

from .base import DataBatch, DataDesc, DataIter, DataIterError, DataTypeError, MXDataIter
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
from .ndarray_iter import NDArrayIter, shard_positions
from .wrappers import PrefetchingIter, ResizeIter

__all__ = [
    "CSVIter", "DataBatch", "DataDesc", "DataIter", "DataIterError", "DataTypeError",
    "ImageDetRecordIter", "ImageRecordIter", "ImageRecordUInt8Iter", "ImageRecordInt8Iter",
    "ImageRecordIter_v1", "ImageRecordUInt8Iter_v1", "LibSVMIter", "MNISTIter", "MXDataIter",
    "NDArrayIter", "PrefetchingIter", "ResizeIter", "shard_positions",
]
