"""Which of MXNet's two shape semantics is on: the legacy one or NumPy's (`mx.np_shape`).

MXNet 1.9.1 reads a shape two ways:

============================  ==========================  ===============================
                              legacy (the default)        NumPy shapes (`np_shape(True)`)
============================  ==========================  ===============================
a 0 dim                       unknown                     zero size: ``(5, 0)`` holds nothing
an unknown dim                0                           -1
an unknown shape              ``()``                      None
``()``                        unknown                     a scalar (0-d array)
``x[i]`` on a 1-d array       shape ``(1,)``              shape ``()``
`mx.nd.zeros((5, 0))`         refused                     a zero-size array
`mx.nd.save`                  record version 2            version 3 (scalars allowed)
============================  ==========================  ===============================

Inside minimod a shape is always NumPy's: None marks an unknown dim or shape and 0 is a real
size. The semantics only change how the API reads the shapes it is given and writes the ones
it reports (`Symbol.infer_shape`, `Variable(shape=...)`, `simple_bind`), and what the legacy
mode refuses. As in MXNet the switch is per thread: `set_np_shape(True)` in one thread leaves
the others in the legacy semantics.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Optional

__all__ = ["is_np_shape", "set_np_shape", "api_shape_in", "api_shape_out", "np_shape",
           "legacy_zero_size_error"]

_STATE = threading.local()


def is_np_shape() -> bool:
    """True while NumPy shape semantics are on in this thread."""
    return getattr(_STATE, "np_shape", False)


def set_np_shape(active: bool) -> bool:
    """Turn NumPy shape semantics on or off in this thread; returns the previous state."""
    previous = is_np_shape()
    _STATE.np_shape = bool(active)
    return previous


@contextlib.contextmanager
def np_shape(active: bool = True):
    """Run the block with NumPy shape semantics on (`active`) or off; the previous state
    comes back after it (`mx.np_shape`)."""
    previous = set_np_shape(active)
    try:
        yield
    finally:
        set_np_shape(previous)


def api_shape_in(shape) -> Optional[tuple]:
    """A shape given through the API as the internal one (None for unknown dims; None for an
    unknown shape). Legacy: 0 and -1 are unknown dims, () an unknown shape. NumPy shapes: -1
    is unknown, 0 a zero size, () a scalar, None an unknown shape."""
    if shape is None:
        return None
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(d) for d in shape)
    if is_np_shape():
        return tuple(None if d < 0 else d for d in shape)
    if not shape:
        return None
    return tuple(None if d <= 0 else d for d in shape)


def api_shape_out(shape) -> Optional[tuple]:
    """An internal shape as the API reports it: legacy 0 for unknown dims and () for an unknown
    shape; NumPy shapes -1 and None."""
    unknown_dim = -1 if is_np_shape() else 0
    if shape is None:
        return None if is_np_shape() else ()
    return tuple(unknown_dim if d is None else int(d) for d in shape)


def legacy_zero_size_error(what: str, shape: tuple) -> str:
    """The message for a zero-size (or 0-d) shape met in the legacy semantics."""
    return ("%s has shape %s: in MXNet's legacy shape semantics a 0 dim means unknown and () "
            "an unknown shape, so zero-size and 0-d arrays need NumPy shape semantics (`with "
            "mx.np_shape(True):` or `@mx.use_np_shape`)" % (what, tuple(shape)))
