"""`mx.kv.KVStoreBase`: the interface every key-value store offers Module (`broadcast`,
`pushpull`, `is_capable`, the optimizer calls, `type`, `rank`, `num_workers`), and the
registry through which a store written in Python joins `mx.kv.create`:

    @mx.kv.KVStoreBase.register
    class MyStore(mx.kv.KVStoreBase):
        ...
    kv = mx.kv.create("mystore")    # the class name in lower case

minimod's own stores (local.py, dist.py) derive from it. `TestStore` ('teststore', MXNet's
store for such tests) sums and copies within one process and has no optimizer, so Module
updates on the devices with it. A registered store that has no `init` gets its parameters
from `broadcast` (module/updates.py).
"""
from __future__ import annotations

from ..base import MXNetError

__all__ = ["KVStoreBase", "TestStore"]


class KVStoreBase:
    """What a key-value store must do; see the module docstring."""

    OPTIMIZER = "optimizer"
    kv_registry: dict = {}

    def broadcast(self, key, value, out, priority: int = 0) -> None:
        """Copy `value` (rank 0's) into every array of `out`, on every worker."""
        raise NotImplementedError()

    def pushpull(self, key, value, out=None, priority: int = 0) -> None:
        """Sum the arrays of `value` (over devices and workers) into `out`, or back into
        `value` when out is None."""
        raise NotImplementedError()

    def set_optimizer(self, optimizer) -> None:
        raise NotImplementedError()

    def is_capable(self, capability: str) -> bool:
        """Whether the store supports `capability` (KVStoreBase.OPTIMIZER: updating with an
        optimizer of its own)."""
        raise NotImplementedError()

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        raise NotImplementedError()

    def load_optimizer_states(self, fname: str) -> None:
        raise NotImplementedError()

    @property
    def type(self) -> str:
        raise NotImplementedError()

    @property
    def rank(self) -> int:
        raise NotImplementedError()

    @property
    def num_workers(self) -> int:
        raise NotImplementedError()

    @staticmethod
    def register(klass):
        """Register a KVStoreBase subclass under its lower-case class name (a class decorator);
        `mx.kv.create(name)` then makes one."""
        if not (isinstance(klass, type) and issubclass(klass, KVStoreBase)):
            raise MXNetError("KVStoreBase.register takes a KVStoreBase subclass, got %r"
                             % (klass,))
        name = klass.__name__.lower()
        if name in KVStoreBase.kv_registry:
            raise MXNetError("a kvstore named %r is already registered (%s.%s)"
                             % (name, KVStoreBase.kv_registry[name].__module__,
                                KVStoreBase.kv_registry[name].__name__))
        KVStoreBase.kv_registry[name] = klass
        return klass


def _per_key(key, value, out):
    """(key, values, outs) triples, for one key or a list of keys."""
    if isinstance(key, (list, tuple)):
        outs = out if out is not None else [None] * len(key)
        return list(zip(key, value, outs))
    return [(key, value, out)]


def _as_list(arrays) -> list:
    return list(arrays) if isinstance(arrays, (list, tuple)) else [arrays]


@KVStoreBase.register
class TestStore(KVStoreBase):
    """A store for tests: one process, sums and copies with NDArray arithmetic, no
    optimizer."""

    def broadcast(self, key, value, out, priority: int = 0) -> None:
        for _, val, outs in _per_key(key, value, out):
            for o in _as_list(outs):
                o[:] = val

    def pushpull(self, key, value, out=None, priority: int = 0) -> None:
        for _, vals, outs in _per_key(key, value, out):
            vals = _as_list(vals)
            total = vals[0].copy()
            for v in vals[1:]:
                total += v.as_in_context(total.context)
            for o in _as_list(outs) if outs is not None else vals:
                o[:] = total.as_in_context(o.context)

    @staticmethod
    def is_capable(capability: str) -> bool:
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError("Unknown capability: %s" % capability)

    @property
    def type(self) -> str:
        return "teststore"

    @property
    def rank(self) -> int:
        return 0

    @property
    def num_workers(self) -> int:
        return 1
