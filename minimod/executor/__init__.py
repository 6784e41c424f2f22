"""Executors: a compiled Plan bound to arrays on one device (executor.py), and the
data-parallel group of executors over several devices (group.py)."""
from .executor import Executor, MemoryPool, bind, simple_bind  # noqa: F401
