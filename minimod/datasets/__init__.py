"""Small real data sets shipped with the install, so examples run without network access."""
from __future__ import annotations

import os

import numpy as np

__all__ = ["load_digits", "data_path"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def data_path(name: str) -> str:
    return os.path.join(_HERE, name)


def load_digits(test_fraction: float = 0.2, seed: int = 0):
    """((train_x, train_y), (test_x, test_y)) of the UCI handwritten digits (see README.md).

    Images are float32 in [0, 1] with shape (N, 1, 8, 8); labels are float32 class ids. The
    split is a fixed stratified shuffle, so every run sees the same test set.
    """
    with np.load(data_path("digits.npz")) as f:
        images, labels = f["images"], f["labels"]
    rng = np.random.RandomState(seed)
    test_idx = []
    for digit in range(10):
        members = np.flatnonzero(labels == digit)
        rng.shuffle(members)
        test_idx.extend(members[:int(round(len(members) * test_fraction))])
    test_mask = np.zeros(len(labels), dtype=bool)
    test_mask[test_idx] = True
    x = (images.astype(np.float32) / 16.0)[:, None, :, :]
    y = labels.astype(np.float32)
    train = np.flatnonzero(~test_mask)
    rng.shuffle(train)
    return (x[train], y[train]), (x[test_mask], y[test_mask])
