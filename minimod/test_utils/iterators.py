"""Data iterators for tests: a fixed batch, and MNIST from local files."""
from __future__ import annotations

from .. import io
from .datasets import get_mnist_ubyte

__all__ = ["DummyIter", "get_mnist_iterator"]


class DummyIter(io.DataIter):
    """An endless iterator that returns the first batch of `real_iter` every time (to time
    a model without the cost of reading data)."""

    def __init__(self, real_iter):
        super().__init__(real_iter.batch_size)
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.the_batch = next(real_iter)

    def __iter__(self):
        return self

    def next(self):
        return self.the_batch


def get_mnist_iterator(batch_size: int, input_shape, num_parts: int = 1, part_index: int = 0):
    """(train, val) MNISTIter over the IDX files in ./data, as MXNet's helper builds them."""
    get_mnist_ubyte()
    flat = len(input_shape) == 1
    common = dict(input_shape=input_shape, batch_size=batch_size, flat=flat,
                  num_parts=num_parts, part_index=part_index)
    train = io.MNISTIter(image="data/train-images-idx3-ubyte",
                         label="data/train-labels-idx1-ubyte", shuffle=True, **common)
    val = io.MNISTIter(image="data/t10k-images-idx3-ubyte",
                       label="data/t10k-labels-idx1-ubyte", **common)
    return train, val
