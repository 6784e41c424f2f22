"""Iterators that wrap other iterators: ResizeIter (a fixed number of batches per epoch) and
PrefetchingIter (reads ahead in background threads, one per inner iterator).
"""
from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from typing import Any, Optional

from .base import DataBatch, DataDesc, DataIter, DataIterError


class _FromCurrentBatch:
    """The accessors of an iterator that keeps its batch in `current_batch`: each reads it."""

    def getdata(self) -> list:
        return self.current_batch.data

    def getlabel(self) -> list:
        return self.current_batch.label

    def getindex(self) -> Any:
        return self.current_batch.index

    def getpad(self) -> Optional[int]:
        return self.current_batch.pad


class ResizeIter(_FromCurrentBatch, DataIter):
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


class PrefetchingIter(_FromCurrentBatch, DataIter):
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
