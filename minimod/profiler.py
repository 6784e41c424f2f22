"""`mx.profiler`: MXNet's profiler API, accepted so that code calling it runs -- it records nothing.

MXNet's profiler instruments its C++ engine (operator timings, memory, API calls) and writes a
Chrome trace on `dump()`. minimod runs operators as plain NumPy/CuPy calls and has no engine to
instrument, so this module only keeps the calls legal:

- `set_config`, `set_state`, `pause`, `resume` check their arguments as MXNet does and remember
  the configuration and state (see `get_config`, `get_state`), nothing more;
- `dump` writes **no file** (MXNet would write `filename`, default `profile.json`): there is no
  trace to write, and an empty file would pretend otherwise;
- `dumps` returns a one-line text saying that nothing was recorded.

Switching the profiler to `'run'` warns once (a `UserWarning`), so a user who expects a trace
learns why none appears. To time minimod, use Python's own tools (`cProfile`, `time.perf_counter`
around `forward`/`backward`/`update`, or CuPy's profiler on a GPU).

`start()`/`stop()` are minimod shorthands for `set_state('run')`/`set_state('stop')`; the
deprecated MXNet 1.x names `profiler_set_config`, `profiler_set_state` and `dump_profile` are
accepted too.
"""
from __future__ import annotations

import warnings

from .base import MXNetError

__all__ = ["set_config", "set_state", "get_config", "get_state", "start", "stop", "pause",
           "resume", "dump", "dumps", "profiler_set_config", "profiler_set_state",
           "dump_profile"]

# the keys MXNet 1.9.1's ProfileConfig accepts (an unknown key is an error there too)
_CONFIG_KEYS = frozenset([
    "profile_all", "profile_symbolic", "profile_imperative", "profile_memory", "profile_api",
    "filename", "continuous_dump", "dump_period", "aggregate_stats", "profile_process",
])
_STATES = ("stop", "run")
_PROCESSES = ("worker", "server")

_config: dict = {"filename": "profile.json"}
_state = {"worker": "stop", "server": "stop"}
_paused = {"worker": False, "server": False}
_warned = [False]

NOTHING_RECORDED = ("minimod profiler: nothing was recorded (minimod has no engine to "
                    "instrument; use cProfile or time.perf_counter to time it)")


def _check_process(profile_process: str) -> None:
    if profile_process not in _PROCESSES:
        raise MXNetError("profile_process must be 'worker' or 'server', not %r"
                         % (profile_process,))


def set_config(**kwargs) -> None:
    """Remember a profiler configuration (MXNet's keys; e.g. `filename`, `profile_all`).

    Nothing is configured: minimod records nothing, whatever the settings.
    Unknown keys raise `MXNetError`, as in MXNet.
    """
    unknown = sorted(set(kwargs) - _CONFIG_KEYS)
    if unknown:
        raise MXNetError("profiler.set_config: unknown option(s) %s; known: %s"
                         % (", ".join(unknown), ", ".join(sorted(_CONFIG_KEYS))))
    if "profile_process" in kwargs:
        _check_process(kwargs["profile_process"])
    _config.update(kwargs)


def get_config() -> dict:
    """A copy of the configuration last given to `set_config` (minimod only)."""
    return dict(_config)


def set_state(state: str = "stop", profile_process: str = "worker") -> None:
    """Set the profiler state, 'run' or 'stop'. Nothing is recorded in either state.

    The first switch to 'run' warns once that minimod's profiler records nothing.
    """
    _switch(state, profile_process, stacklevel=3)


def _switch(state: str, profile_process: str, stacklevel: int) -> None:
    if state not in _STATES:
        raise MXNetError("profiler state must be 'run' or 'stop', not %r" % (state,))
    _check_process(profile_process)
    if state == "run" and not _warned[0]:
        _warned[0] = True
        warnings.warn(NOTHING_RECORDED, UserWarning, stacklevel=stacklevel)
    _state[profile_process] = state


def get_state(profile_process: str = "worker") -> str:
    """The state last set with `set_state` ('run' or 'stop'; minimod only)."""
    _check_process(profile_process)
    return _state[profile_process]


def start(profile_process: str = "worker") -> None:
    """minimod shorthand for `set_state('run')` (records nothing)."""
    _switch("run", profile_process, stacklevel=3)


def stop(profile_process: str = "worker") -> None:
    """minimod shorthand for `set_state('stop')`."""
    set_state("stop", profile_process)


def pause(profile_process: str = "worker") -> None:
    """Pause profiling (there is nothing to pause: minimod records nothing)."""
    _check_process(profile_process)
    _paused[profile_process] = True


def resume(profile_process: str = "worker") -> None:
    """Resume profiling after `pause` (minimod records nothing)."""
    _check_process(profile_process)
    _paused[profile_process] = False


def dump(finished: bool = True, profile_process: str = "worker") -> None:
    """MXNet writes the trace to the configured filename; minimod writes **nothing**.

    No file is created, because no trace was recorded.
    """
    _check_process(profile_process)


def dumps(reset: bool = False, format: str = "table", sort_by: str = "total",
          ascending: bool = False) -> str:
    """MXNet returns aggregate statistics; minimod returns a line saying nothing was recorded."""
    if format not in ("table", "json"):
        raise MXNetError("profiler.dumps: format must be 'table' or 'json', not %r" % (format,))
    if format == "json":
        return "{}"
    return NOTHING_RECORDED


def profiler_set_config(mode: str = "symbolic", filename: str = "profile.json") -> None:
    """Deprecated MXNet name: `set_config(profile_symbolic=..., profile_all=..., filename=...)`."""
    if mode not in ("symbolic", "all"):
        raise MXNetError("profiler mode must be 'symbolic' or 'all', not %r" % (mode,))
    set_config(profile_symbolic=True, profile_all=(mode == "all"), filename=filename)


def profiler_set_state(state: str = "stop") -> None:
    """Deprecated MXNet name for `set_state`."""
    _switch(state, "worker", stacklevel=3)


def dump_profile() -> None:
    """Deprecated MXNet name for `dump` (writes nothing)."""
    dump(True)
