"""`mx.kv`: key-value stores that aggregate gradients ('local', 'device', 'dist_sync')."""
from .local import KVStore, create  # noqa: F401

__all__ = ["KVStore", "create"]
