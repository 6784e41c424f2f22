"""Executors: a compiled Plan bound to arrays on one device, and the data-parallel group.

- binding.py: `simple_bind` and `bind`, from a symbol to an Executor;
- executor.py: `Executor`, the run loop, forward/backward, reshape, `debug_str`;
- steps.py: the `Step` record and `bind_steps`, where each node's code is chosen;
- monitoring.py: the monitor callback around the steps; listing.py: the plan as text;
- pool.py: `MemoryPool`, the blocks the plan's entries are views into;
- flat_params.py: the flat parameter buffers a bind allocates;
- group.py: `DataParallelExecutorGroup`, one executor per device.
"""
from .binding import bind, simple_bind
from .executor import Executor, assign
from .pool import MemoryPool

__all__ = ["Executor", "MemoryPool", "bind", "simple_bind", "assign"]
