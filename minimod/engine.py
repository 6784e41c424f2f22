"""`mx.engine`: MXNet's bulk execution settings, `set_bulk_size(size)` and `with bulk(size):`.

MXNet's engine can bundle up to `size` consecutive imperative operators into one scheduled
task; the numbers do not change, only the scheduling. minimod runs every operator when it is
called (there is no asynchronous engine to bundle for), so the size is recorded and returned
as MXNet returns it, and has no other effect.
"""
from __future__ import annotations

__all__ = ["set_bulk_size", "bulk"]

_bulk_size = 0  # MXNet's initial imperative bulk size


def set_bulk_size(size: int) -> int:
    """Set the bulk size; returns the previous one."""
    global _bulk_size
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ValueError("set_bulk_size: size must be a non-negative int, got %r" % (size,))
    previous, _bulk_size = _bulk_size, size
    return previous


class _BulkScope:
    """`with bulk(size):` sets the bulk size inside the block and restores it after."""

    def __init__(self, size: int):
        self._size = size
        self._old_size = None

    def __enter__(self):
        self._old_size = set_bulk_size(self._size)
        return self

    def __exit__(self, *exc):
        set_bulk_size(self._old_size)


def bulk(size: int) -> _BulkScope:
    """A scope in which the bulk size is `size`."""
    return _BulkScope(size)
