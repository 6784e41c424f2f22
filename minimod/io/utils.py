"""`mxnet.io.utils`: the helpers MXNet's iterators share, under MXNet's names, for iterators
written against them (`_init_data`, `_has_instance`, `_getdata_by_idx`)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ndarray import NDArray
from ..ndarray import array as nd_array
from .ndarray_iter import _init_data as _init_named

__all__ = ["_init_data", "_has_instance", "_getdata_by_idx"]


def _init_data(data: Any, allow_empty: bool, default_name: str) -> list:
    """`data` (an array, a list of them or a dict) as `[(name, NDArray)]` sorted by name, as
    NDArrayIter takes it (see `minimod.io.ndarray_iter._init_data`)."""
    return _init_named(data, allow_empty, default_name, default_name)


def _has_instance(data: list, dtype: type) -> bool:
    """Whether an array of `[(name, array)]` is an instance of `dtype`."""
    return any(isinstance(arr, dtype) for _, arr in data)


def _getdata_by_idx(data: list, idx) -> list:
    """`[(name, array[idx])]`: each array's rows in the order of `idx` (a permutation), as new
    arrays on the same device; anything else (an h5py dataset) is kept as it is."""
    order = np.asarray(idx)
    out = []
    for name, arr in data:
        if isinstance(arr, NDArray):
            arr = nd_array(arr.asnumpy()[order], ctx=arr.context, dtype=arr.dtype)
        out.append((name, arr))
    return out
