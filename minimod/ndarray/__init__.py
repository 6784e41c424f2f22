"""`mx.nd`: the NDArray class, creation and math routines, save/load and `nd.random`."""
from . import random, routines, serialization
from .ndarray import NDArray, arange, array, empty, full, normalize_dtype, ones, waitall, zeros
from .routines import *  # noqa: F401,F403 - the routine names are mx.nd's public API
from .routines import __all__ as _routine_names
from .serialization import load, load_from_bytes, read_record, save, save_to_bytes, write_record

__all__ = [
    "NDArray", "array", "zeros", "ones", "empty", "full", "arange", "waitall", "save", "load",
    "save_to_bytes", "load_from_bytes", "read_record", "write_record", "random", "routines",
    "serialization", "normalize_dtype",
] + [name for name in _routine_names if name != "METHODS"]
