"""`mx.profiler`: MXNet's profiler, recording what minimod runs.

    mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename="profile.json")
    mx.profiler.set_state("run")
    ... train ...
    mx.profiler.set_state("stop")
    print(mx.profiler.dumps())     # per-operator count, total, min, max and mean time
    mx.profiler.dump()             # profile.json: a Chrome trace (chrome://tracing, Perfetto)

While the state is 'run' (and not paused) it records, as MXNet's configuration asks:

- `profile_symbolic`: every step a bound executor runs, under the operator that ran it
  (`FullyConnected`, `_backward_FullyConnected`, or a fused kernel such as
  `ActivationMaxPooling` where a rewrite pass fused nodes), one trace process per device;
- `profile_imperative`: every imperative operator call (`mx.nd.<op>`, and the routines and
  arithmetic under the operator name MXNet gives them: `x * 2` is `_mul_scalar`);
- `profile_api`: the executor calls (`Executor.forward`, `Executor.backward`,
  `Executor.forward_backward`), under the category `api`: minimod has no C API to time;
- `profile_memory`: the executor memory pool's size per device each time it grows
  (`Memory: cpu/0`; the bound parameter arrays are outside the pool);
- always: the user's `Task`, `Frame`, `Event`, `Counter` and `Marker` objects.

`profile_all` turns all of these on; each of the four defaults to on, as in MXNet.
`aggregate_stats=True` keeps the statistics `dumps()` prints. On a GPU, a profiled step waits
for the device after each operator so that its time is the operator's own (and the executor's
CUDA graphs are not replayed while profiling): a profile shows where time goes, not how fast
an unprofiled step is. `continuous_dump` with `dump_period` (seconds) writes the file
again whenever that much time has passed at a recorded event.

minimod's distributed kvstore runs over MPI without server processes, so
`profile_process='server'` is refused. `start()`/`stop()` are minimod shorthands for
`set_state('run')`/`set_state('stop')`; the deprecated 1.x names `profiler_set_config`,
`profiler_set_state` and `dump_profile` work too.
"""
from __future__ import annotations

import os
import time

from .. import backend
from ..base import MXNetError
from .recorder import RECORDER, SORT_KEYS

__all__ = ["set_config", "set_state", "get_config", "get_state", "start", "stop", "pause",
           "resume", "dump", "dumps", "profiler_set_config", "profiler_set_state",
           "dump_profile", "Domain", "Task", "Frame", "Event", "Counter", "Marker", "RECORDER",
           "device_name", "operator_span"]

# the keys MXNet 1.9.1's ProfileConfig accepts (an unknown key is an error there too)
_CONFIG_KEYS = frozenset([
    "profile_all", "profile_symbolic", "profile_imperative", "profile_memory", "profile_api",
    "filename", "continuous_dump", "dump_period", "aggregate_stats", "profile_process",
])
_STATES = ("stop", "run")

_config: dict = {"filename": "profile.json"}
_status = {"state": "stop", "paused": False, "last_dump": 0.0}


def _check_process(profile_process: str) -> None:
    if profile_process == "server":
        raise MXNetError("profile_process='server': minimod's distributed kvstore runs over MPI "
                         "without server processes; profile each worker instead")
    if profile_process != "worker":
        raise MXNetError("profile_process must be 'worker' or 'server', not %r"
                         % (profile_process,))


def _apply() -> None:
    RECORDER.configure(_config, _status["state"] == "run" and not _status["paused"])


def set_config(**kwargs) -> None:
    """Configure the profiler with MXNet's keys (`profile_all`, `profile_symbolic`,
    `profile_imperative`, `profile_memory`, `profile_api`, `aggregate_stats`, `filename`,
    `continuous_dump`, `dump_period`, `profile_process`). Unknown keys raise MXNetError."""
    unknown = sorted(set(kwargs) - _CONFIG_KEYS)
    if unknown:
        raise MXNetError("profiler.set_config: unknown option(s) %s; known: %s"
                         % (", ".join(unknown), ", ".join(sorted(_CONFIG_KEYS))))
    _check_process(kwargs.get("profile_process", "worker"))
    _config.update(kwargs)
    _apply()


def get_config() -> dict:
    """A copy of the configuration given to `set_config` (minimod only)."""
    return dict(_config)


def set_state(state: str = "stop", profile_process: str = "worker") -> None:
    """'run' starts recording, 'stop' stops it (what was recorded stays until `dump`)."""
    if state not in _STATES:
        raise MXNetError("profiler state must be 'run' or 'stop', not %r" % (state,))
    _check_process(profile_process)
    _status["state"] = state
    _apply()


def get_state(profile_process: str = "worker") -> str:
    """The state set with `set_state` ('run' or 'stop'; minimod only)."""
    _check_process(profile_process)
    return _status["state"]


def start(profile_process: str = "worker") -> None:
    """minimod shorthand for `set_state('run')`."""
    set_state("run", profile_process)


def stop(profile_process: str = "worker") -> None:
    """minimod shorthand for `set_state('stop')`."""
    set_state("stop", profile_process)


def pause(profile_process: str = "worker") -> None:
    """Stop recording until `resume()`, keeping the state 'run'."""
    _check_process(profile_process)
    _status["paused"] = True
    _apply()


def resume(profile_process: str = "worker") -> None:
    """Record again after `pause()`."""
    _check_process(profile_process)
    _status["paused"] = False
    _apply()


def dump(finished: bool = True, profile_process: str = "worker") -> None:
    """Write the trace recorded so far to the configured `filename` (written whole, then
    moved into place). With `finished`, the events are dropped after writing, so the next
    dump holds only what comes after; the statistics stay until `dumps(reset=True)`."""
    _check_process(profile_process)
    path = os.path.abspath(_config.get("filename") or "profile.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(RECORDER.trace())
    os.replace(tmp, path)
    _status["last_dump"] = time.monotonic()
    if finished:
        RECORDER.clear_events()


def dumps(reset: bool = False, format: str = "table", sort_by: str = "total",  # noqa: A002
          ascending: bool = False) -> str:
    """The aggregate statistics (`aggregate_stats=True` keeps them; '' otherwise), as MXNet's
    table or as JSON; `reset` clears them afterwards."""
    if format not in ("table", "json"):
        raise MXNetError("profiler.dumps: format must be 'table' or 'json', not %r" % (format,))
    if sort_by not in SORT_KEYS:
        raise MXNetError("profiler.dumps: invalid sort_by %r; use one of %s"
                         % (sort_by, ", ".join(repr(k) for k in SORT_KEYS)))
    if not _config.get("aggregate_stats"):
        return ""
    text = (RECORDER.table(sort_by, bool(ascending)) if format == "table"
            else RECORDER.stats(sort_by, bool(ascending)))
    if reset:
        RECORDER.clear_stats()
    return text


def device_name(ctx) -> str:
    """A Context as the trace names its process: 'cpu/0', 'gpu/1'."""
    return "%s/%d" % (ctx.device_type, ctx.device_id)


def operator_span(name: str, start: int, ctx) -> None:
    """Record operator `name`, started at `start` (`RECORDER.now()`), as run on `ctx`: on a
    GPU after waiting for the device, so that the span is the kernels' time, not their
    launch's."""
    if ctx.device_type == "gpu":
        backend.synchronize(ctx)
    RECORDER.span("operator", name, start, RECORDER.now(), device_name(ctx))


def maybe_dump() -> None:
    """With `continuous_dump`, write the file again once `dump_period` seconds have passed."""
    if _config.get("continuous_dump") and \
            time.monotonic() - _status["last_dump"] >= float(_config.get("dump_period", 1.0)):
        dump(finished=False)


def profiler_set_config(mode: str = "symbolic", filename: str = "profile.json") -> None:
    """Deprecated MXNet name: `set_config(profile_symbolic=..., profile_all=..., filename=...)`."""
    if mode not in ("symbolic", "all"):
        raise MXNetError("profiler mode must be 'symbolic' or 'all', not %r" % (mode,))
    set_config(profile_symbolic=True, profile_all=(mode == "all"), filename=filename)


def profiler_set_state(state: str = "stop") -> None:
    """Deprecated MXNet name for `set_state`."""
    set_state(state)


def dump_profile() -> None:
    """Deprecated MXNet name for `dump`."""
    dump(True)


# ------------------------------------------------------------------------ the user's objects
class Domain:
    """A name that groups Tasks, Frames, Counters and Markers (their trace category)."""

    def __init__(self, name: str):
        self.name = str(name)

    def new_task(self, name: str) -> "Task":
        return Task(self, name)

    def new_frame(self, name: str) -> "Frame":
        return Frame(self, name)

    def new_counter(self, name: str, value=None) -> "Counter":
        return Counter(self, name, value)

    def new_marker(self, name: str) -> "Marker":
        return Marker(self, name)

    def __str__(self) -> str:
        return self.name


class _Span:
    """start() ... stop() recorded as one span of `category` while the profiler runs."""

    def __init__(self, category: str, name: str):
        self.category, self.name = category, str(name)
        self._start = None

    def start(self) -> None:
        self._start = RECORDER.now()

    def stop(self) -> None:
        if self._start is None:
            raise MXNetError("profiler: %s '%s' stopped before it started"
                             % (type(self).__name__, self.name))
        if RECORDER.on:
            RECORDER.span(self.category, self.name, self._start, RECORDER.now())
            maybe_dump()
        self._start = None

    def __str__(self) -> str:
        return self.name


class Task(_Span):
    """A named span of work in `domain`."""

    def __init__(self, domain: Domain, name: str):
        super().__init__(domain.name, name)
        self.domain = domain


class Frame(_Span):
    """A named span in `domain`, shown apart from its Tasks (category '<domain>,frame')."""

    def __init__(self, domain: Domain, name: str):
        super().__init__("%s,frame" % domain.name, name)
        self.domain = domain


class Event(_Span):
    """A named span outside any domain (category 'event')."""

    def __init__(self, name: str):
        super().__init__("event", name)


class Counter:
    """A named value in `domain`, recorded at each change while the profiler runs."""

    def __init__(self, domain: Domain, name: str, value=None):
        self.domain, self.name = domain, str(name)
        self.value = 0
        if value is not None:
            self.set_value(value)

    def set_value(self, value) -> None:
        self.value = value
        if RECORDER.on:
            RECORDER.counter(self.domain.name, self.name, value)

    def increment(self, delta=1) -> None:
        self.set_value(self.value + delta)

    def decrement(self, delta=1) -> None:
        self.set_value(self.value - delta)

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self) -> str:
        return self.name


class Marker:
    """A named instant in `domain`."""

    _SCOPES = {"global": "g", "process": "p", "thread": "t", "task": "t", "marker": "t"}

    def __init__(self, domain: Domain, name: str):
        self.domain, self.name = domain, str(name)

    def mark(self, scope: str = "process") -> None:
        if scope not in self._SCOPES:
            raise MXNetError("Marker.mark: scope must be one of %s, not %r"
                             % (", ".join(self._SCOPES), scope))
        if RECORDER.on:
            RECORDER.instant("%s,instant_marker" % self.domain.name, self.name,
                             self._SCOPES[scope])

