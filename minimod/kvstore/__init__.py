"""`mx.kv`: key-value stores that aggregate gradients: 'local', 'device' (one process) and
'dist_sync'/'dist_device_sync' (several processes over MPI, in `dist.py`; start them with
`python -m minimod.launch`). `create(name)` makes any of them, or a store registered with
`KVStoreBase.register` (base.py)."""
from __future__ import annotations

from ..base import MXNetError
from .base import KVStoreBase, TestStore
from .dist import create_dist
from .local import KVStore

__all__ = ["KVStore", "KVStoreBase", "TestStore", "create"]


def create(name: str = "local") -> KVStore:
    """A KVStore of type `name`: 'local', 'device' or 'nccl' (dist_* need the `dist` extra).

    'nccl' sums gradients of several GPUs with NCCL when CuPy's NCCL bindings load and
    behaves as 'device' otherwise (CPU contexts, mixed contexts, no NCCL)."""
    if not isinstance(name, str):
        raise TypeError("name must be a string")
    kind = name.lower()
    if kind in KVStoreBase.kv_registry:  # a store written in Python (KVStoreBase.register)
        return KVStoreBase.kv_registry[kind]()
    if kind in ("local", "local_update_cpu", "local_allreduce_cpu"):
        return KVStore("local", name)
    if kind in ("device", "local_allreduce_device"):
        return KVStore("device", name)
    if kind == "nccl":
        return KVStore("nccl", name)
    if kind.startswith("dist"):
        return create_dist(kind)
    raise MXNetError("unknown kvstore type %r (use 'local', 'device' or 'dist_sync')" % name)
