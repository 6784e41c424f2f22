"""MXNet's module path `mx.nd.utils`: the storage-aware creation helpers and save/load.

They are `mx.nd.zeros`, `empty`, `array`, `load`, `save` and `load_frombuffer` (the first three
make sparse arrays too, from `stype=` or a sparse source), gathered here for code that imports
them from MXNet's `ndarray.utils`.
"""
from .creation import array, empty, zeros
from .serialization import load, load_frombuffer, save

__all__ = ["zeros", "empty", "array", "load", "save", "load_frombuffer"]
