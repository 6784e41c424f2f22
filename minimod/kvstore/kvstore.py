"""MXNet's module path `mx.kv.kvstore`: the `KVStore` class (local.py), for code that imports
it from there. `mx.kv.create` makes one of any type."""
from .local import KVStore

__all__ = ["KVStore"]
