"""`mx.kv`: key-value stores that aggregate gradients: 'local', 'device' (one process) and
'dist_sync'/'dist_device_sync' (several processes over MPI, in `dist.py`; start them with
`python -m minimod.launch`). `create(name)` makes any of them."""
from .local import KVStore, create  # noqa: F401

__all__ = ["KVStore", "create"]
