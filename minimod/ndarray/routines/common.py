"""What every routine shares: `_result` (wrap a backend array, or write it into `out=`) and
`_at_least_1d` (MXNet gives reductions over every axis shape (1,), never ()).
"""
from __future__ import annotations

from ..core import NDArray, wrap


def _result(data, like: NDArray, out: NDArray | None) -> NDArray:
    """Wrap backend array `data` on `like`'s context, or copy it into `out`."""
    if out is not None:
        out[:] = wrap(data, like.context)
        return out
    return wrap(data, like.context)


def _at_least_1d(data):
    return data.reshape((1,)) if data.ndim == 0 else data
